"""Splits and labels of a user's data (issue 57): list-valued CSV labels as tasks, the forms of
``data.split`` (``graph_transformers.data.split_rules``) for molecule CSVs, graph files and TU
sets — random, scaffold, a column, ``.npz`` / ``.json`` / LRGB-style ``.pickle`` index files,
fair-comparison and benchmarking-gnns folds — with the exact ids of every set, one error per
bad file, and the record ``metrics.json`` keeps under ``split``."""
from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from graph_transformers.data.registry import resolve_spec
from graph_transformers.data.split_rules import (file_split, parse_split_rule, random_split,
                                                 read_split_file)
from graph_transformers.datasets.molecules.molecule_csv import MoleculeCSV, molecule_csv_spec
from graph_transformers.datasets.molecules.scaffold import murcko_scaffold, split_from_scaffolds
from graph_transformers.datasets.user.graph_list import GraphFile
from graph_transformers.errors import DataError
from graph_transformers.training.config import ConfigError, build_config

pytest.importorskip("rdkit")

#: data rows of the CSV: row 3's SMILES is invalid (skipped), so valid molecule i is row
#: ROWS[i]
SMILES = ["CCO", "CCN", "CCC", "not_a_smiles", "CCCl", "c1ccccc1", "c1ccncc1", "C1CCCCC1",
          "CC(=O)O", "CCOC", "c1ccccc1O", "C1CCNCC1", "CC#N"]
ROWS = [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12]
LABELS = ["[0, 1, 0]", "[1 0 nan]", "", "[1, 1, 1]", "[0,1,1]", "[1, 1, 0]", "[nan, 0, 1]",
          "[0, 0, 1]", "[1, 0, 0]", "[0, 1, 0]", "[1, 1, 1]", "[0, 0, 0]", "[1, 0, 1]"]
PART = ["train", "train", "valid", "test", "test", "Validation", "train", "test", "",
        "train", "test", "val", "train"]


def _csv(path: Path, labels=LABELS, part=PART) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["smiles", "labels", "value", "part"])
        for i, (smi, lab, p) in enumerate(zip(SMILES, labels, part)):
            w.writerow([smi, lab, f"{i * 0.5:g}", p])
    return path


def _rows(path: Path, rule, split, **kw) -> list[int]:
    return MoleculeCSV(root=path.parent / "cache", split=split, path=path,
                       target_columns=["labels"], task="classification", split_rule=rule,
                       **kw).rows


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------ list labels
def test_a_list_column_is_one_task_per_entry(tmp_path):
    path = _csv(tmp_path / "m.csv")
    ds = MoleculeCSV(root=tmp_path / "cache", split="all", path=path,
                     target_columns=["labels", "value"], task="regression")
    assert ds.task_names == ["labels[0]", "labels[1]", "labels[2]", "value"]
    assert ds.num_tasks == 4 and ds.y.shape == (12, 4)
    assert ds.y[0].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert ds.y[1, :2].tolist() == [1.0, 0.0] and math.isnan(ds.y[1, 2])  # "nan": missing
    assert torch.isnan(ds.y[2, :3]).all() and ds.y[2, 3] == 1.0  # a blank cell: all missing
    assert ds.y[3].tolist() == [0.0, 1.0, 1.0, 2.0]  # row 4 (row 3 skipped)
    spec = molecule_csv_spec("binary", ["labels"], path)
    assert spec.out_dim == 3 and spec.targets == ("labels[0]", "labels[1]", "labels[2]")
    assert spec.task == "binary" and molecule_csv_spec("regression", ["value"], path).out_dim == 1


@pytest.mark.parametrize("cell, message", [
    ("[0, 1]", r"line 3, column 'labels': 2 label\(s\), the column's first list has 3"),
    ("1", r"line 3, column 'labels': 1 label\(s\), the column's first list has 3"),
    ("[0, 1, 1", r"line 3, column 'labels': list label .* has no closing"),
    ("[]", r"line 3, column 'labels': an empty list of labels"),
    ("[0, 2, 1]", r"line 3, column 'labels': classification label '2' is not 0 or 1"),
    ("[0, x, 1]", r"line 3, column 'labels': label 'x' is not a number"),
])
def test_bad_list_labels_are_one_line_naming_the_row(tmp_path, cell, message):
    path = _csv(tmp_path / "m.csv", labels=[LABELS[0], cell, *LABELS[2:]])
    with pytest.raises(DataError, match=message):
        MoleculeCSV(root=tmp_path / "cache", split="all", path=path, target_columns=["labels"])


def test_a_list_in_a_column_of_single_labels_is_refused(tmp_path):
    path = _csv(tmp_path / "m.csv", labels=["1", "[0, 1]", *LABELS[2:]])
    with pytest.raises(DataError, match="line 3, column 'labels': holds a list of labels"):
        MoleculeCSV(root=tmp_path / "cache", split="all", path=path, target_columns=["labels"])


# ------------------------------------------------------------------------ molecule CSV splits
def test_csv_default_is_the_scaffold_split(tmp_path):
    path = _csv(tmp_path / "m.csv")
    parts = {s: MoleculeCSV(root=tmp_path / "c", split=s, path=path, target_columns=["value"],
                            task="regression") for s in ("train", "val", "test")}
    ref = split_from_scaffolds([murcko_scaffold(SMILES[r]) for r in ROWS], (0.8, 0.1, 0.1))
    for s, ds in parts.items():
        assert ds.rows == [ROWS[i] for i in ref[s]]
    assert parts["test"].split_rule == {"rule": "scaffold", "frac": [0.8, 0.1, 0.1],
                                        "sizes": {s: len(v) for s, v in ref.items()}}
    # scaffold:TRAIN,VAL,TEST is the fractions of data.options.frac, written in the rule
    alt = MoleculeCSV(root=tmp_path / "c", split="test", path=path, target_columns=["value"],
                      task="regression", split_rule="scaffold:0.5,0.25,0.25")
    assert alt.rows == [ROWS[i] for i in split_from_scaffolds(
        [murcko_scaffold(SMILES[r]) for r in ROWS], (0.5, 0.25, 0.25))["test"]]
    with pytest.raises(ValueError, match="both give the fractions"):
        MoleculeCSV(root=tmp_path / "c", split="test", path=path, target_columns=["value"],
                    task="regression", split_rule="scaffold:0.5,0.25,0.25", frac=(0.8, 0.1, 0.1))


def test_csv_random_split_is_the_documented_permutation(tmp_path):
    path = _csv(tmp_path / "m.csv")
    order = np.random.default_rng(3).permutation(12)  # the rule, written out: cuts 6 / 9 / 12
    want = {"train": sorted(order[:6]), "val": sorted(order[6:9]), "test": sorted(order[9:])}
    for s in ("train", "val", "test"):
        assert _rows(path, "random:0.5,0.25,0.25", s, seed=3) == [ROWS[i] for i in want[s]]
    ds = MoleculeCSV(root=tmp_path / "cache", split="val", path=path, target_columns=["labels"],
                     task="classification", split_rule="random:0.5,0.25,0.25", seed=3)
    assert ds.split_rule["rule"] == "random:0.5,0.25,0.25 seed 3"
    other = np.random.default_rng(4).permutation(12)  # another data.seed, another split
    assert _rows(path, "random:0.5,0.25,0.25", "train", seed=4) == [
        ROWS[i] for i in sorted(other[:6])] != _rows(path, "random:0.5,0.25,0.25", "train",
                                                     seed=3)
    assert random_split(range(10), (0.5, 0.2, 0.1), 0)["test"] == sorted(
        np.random.default_rng(0).permutation(10)[7:8].tolist())  # fractions below 1: a rest


def test_csv_split_column(tmp_path):
    path = _csv(tmp_path / "m.csv")
    # row 3 (test) has an invalid SMILES: left out; row 8 (blank) is in no set
    assert _rows(path, "part", "train") == [0, 1, 6, 9, 12]
    assert _rows(path, "part", "val") == [2, 5, 11]
    assert _rows(path, "part", "test") == [4, 7, 10]
    ds = MoleculeCSV(root=tmp_path / "cache", split="val", path=path, target_columns=["labels"],
                     task="classification", split_rule="column:part")
    assert ds.split_rule["rule"] == "column part" and ds.split_rule["skipped_rows"]["test"] == 1
    assert ds.split_rule["sizes"] == {"train": 5, "val": 3, "test": 3}
    bad = _csv(tmp_path / "bad.csv", part=["train", "dev", *PART[2:]])
    with pytest.raises(DataError, match=r"line 3, column 'part': split 'dev' is not train"):
        _rows(bad, "part", "train")
    with pytest.raises(DataError, match="no column 'fold'"):
        _rows(path, "fold", "train")
    with pytest.raises(DataError, match="'labels' is a label column"):
        _rows(path, "labels", "train")
    empty = _csv(tmp_path / "noval.csv", part=[p if p.lower() not in ("val", "valid",
                                                                       "validation") else ""
                                               for p in PART])
    with pytest.raises(DataError, match="column 'part'.*: the val set is empty"):
        _rows(empty, "part", "train")


@pytest.mark.parametrize("fmt", ["npz", "json", "pickle", "pickle.gz"])
def test_csv_split_file_ids_are_data_rows(tmp_path, fmt):
    """LRGB ships its splits as a pickle of index arrays; .npz and .json hold the same."""
    path = _csv(tmp_path / "m.csv")
    sets = {"train": np.array([0, 1, 2, 5, 6, 7]), "val": np.array([8, 9, 3]),
            "test": np.array([10, 11, 12])}
    f = tmp_path / f"split.{fmt}"
    if fmt == "npz":
        np.savez(f, train=sets["train"], valid=sets["val"], test=sets["test"])
    elif fmt == "json":
        f.write_text(json.dumps({k: v.tolist() for k, v in sets.items()}))
    else:
        import gzip
        data = pickle.dumps({"train": sets["train"], "val": torch.from_numpy(sets["val"]),
                             "test": sets["test"]})
        f.write_bytes(gzip.compress(data) if fmt.endswith("gz") else data)
    assert _rows(path, str(f), "train") == [0, 1, 2, 5, 6, 7]
    assert _rows(path, str(f), "val") == [8, 9]  # row 3: invalid SMILES, left out
    ds = MoleculeCSV(root=tmp_path / "cache", split="test", path=path, target_columns=["labels"],
                     task="classification", split_rule=str(f))
    assert ds.rows == [10, 11, 12]
    assert ds.split_rule["rule"] == f"file {f}" and ds.split_rule["sha256"] == _sha(f)
    assert ds.split_rule["skipped_rows"] == {"train": 0, "val": 1, "test": 0}


def test_a_pickle_split_file_that_names_a_function_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo never",))
    path = _csv(tmp_path / "m.csv")
    (tmp_path / "evil.pickle").write_bytes(pickle.dumps({"train": Evil(), "val": [1],
                                                         "test": [2]}))
    with pytest.raises(DataError, match="refusing to load split file .*evil.pickle"):
        _rows(path, str(tmp_path / "evil.pickle"), "train")


@pytest.mark.parametrize("sets, message", [
    ({"train": [0, 1, 2], "val": [2, 3], "test": [4]},
     r"split.json: the train and val sets share 1 id\(s\) \(2\)"),
    ({"train": [0, 1], "val": [13], "test": [4]},
     r"split.json: the val set holds id 13, outside 0..12 \(the data has 13 data rows"),
    ({"train": [0, 1, 1], "val": [3], "test": [4]},
     r"split.json: the train set holds id 1 2 times"),
    ({"train": [0, 1], "val": [], "test": [4]}, r"split.json: the val set is empty"),
    ({"train": [0, 1], "test": [4]}, r"split.json: no val set \(keys: \['test', 'train'\]\)"),
    ({"train": [0, 1.5], "val": [3], "test": [4]}, r"split.json: the train set holds 1.5, not"),
    ({"train": [True, False], "val": [3], "test": [4]}, r"the train set holds booleans"),
    ({"train": [0], "val": [3], "validation": [5], "test": [4]}, r"gives the val set twice"),
])
def test_bad_split_files_are_one_line_naming_file_and_set(tmp_path, sets, message):
    path = _csv(tmp_path / "m.csv")
    (tmp_path / "split.json").write_text(json.dumps(sets))
    with pytest.raises(DataError, match=message) as err:
        _rows(path, str(tmp_path / "split.json"), "train")
    assert "\n" not in str(err.value)


def test_split_values_that_name_nothing_are_refused(tmp_path):
    with pytest.raises(DataError, match=r"data.split must be .*; got 'sideways'"):
        parse_split_rule("sideways", ("random", "file"))
    with pytest.raises(DataError, match="got 'random:0.9,0.2,0.1'"):
        parse_split_rule("random:0.9,0.2,0.1", ("random",))
    (tmp_path / "split.csv").write_text("train,0")
    with pytest.raises(DataError, match="unknown split file type"):
        read_split_file(tmp_path / "split.csv")
    from graph_transformers.data.cache import DataNotFoundError
    with pytest.raises(DataNotFoundError, match="split file not found"):
        read_split_file(tmp_path / "absent.json")


# ---------------------------------------------------------------------------------- folds files
def _fair_comparison(folds: list[tuple[list, list, list]]) -> list[dict]:
    """The fair-comparison format (Errica et al. 2020, gnn-comparison data_splits/*.json)."""
    return [{"test": te, "model_selection": [{"train": tr, "validation": va}]}
            for tr, va, te in folds]


def test_fair_comparison_folds_give_each_fold_its_sets(tmp_path):
    f = tmp_path / "NAME_splits.json"
    folds = [([0, 1, 2, 3, 4, 5], [6, 7], [8, 9]), ([2, 3, 4, 5, 8, 9], [0, 1], [6, 7]),
             ([0, 1, 6, 7, 8, 9], [2, 3], [4, 5])]
    f.write_text(json.dumps(_fair_comparison(folds)))
    found = read_split_file(f)
    assert found.is_folds and found.format == "fair-comparison json" and len(found.folds) == 3
    for k, (tr, va, te) in enumerate(folds):
        ids, record = file_split(str(f), 10, k, "graphs")
        assert ids == {"train": tr, "val": va, "test": te}
        assert record["rule"] == f"folds {f} fold {k}" and record["sha256"] == _sha(f)
        assert record["fold"] == k and record["num_folds"] == 3
    with pytest.raises(DataError, match=r"data.fold 3: .* holds 3 folds \(0..2\)"):
        file_split(str(f), 10, 3)
    # the protocol's folds cover every graph: ids of fewer graphs index another list of graphs
    with pytest.raises(DataError, match="fold 0: its sets hold 10 of the 12 graphs"):
        file_split(str(f), 12, 0, "graphs")
    inner = [{"test": [8, 9], "model_selection": [{"train": [0, 1, 2, 3, 4, 5],
                                                    "validation": [6, 7]},
                                                   {"train": [2, 3, 4, 5, 6, 7],
                                                    "validation": [0, 1]}]}]
    (tmp_path / "inner.json").write_text(json.dumps(inner))
    _, record = file_split(str(tmp_path / "inner.json"), 10, 0)
    assert record["note"] == "model_selection[0] of 2 (the first inner split)"


def test_benchmarking_gnns_index_files_as_folds(tmp_path):
    d = tmp_path / "folds"
    d.mkdir()
    lines = {"train": ["0,1,2,3", "4,5,6,7"], "val": ["4,5", "0,1"], "test": ["6,7", "2,3"]}
    for s, rows in lines.items():
        (d / f"TOY_{s}.index").write_text("\n".join(rows) + "\n")
    for text in (str(d), str(d / "TOY_*.index"), str(d / "TOY_val.index")):
        ids, record = file_split(text, 8, 1, "graphs")
        assert ids == {"train": [4, 5, 6, 7], "val": [0, 1], "test": [2, 3]}
        assert record["format"] == "index files" and record["num_folds"] == 2
        assert record["sha256"] == {f"TOY_{s}.index": _sha(d / f"TOY_{s}.index")
                                    for s in ("train", "val", "test")}
    (d / "TOY_test.index").write_text("6,7\n")
    with pytest.raises(DataError, match="different numbers of lines"):
        file_split(str(d), 8, 0)
    (d / "TOY_test.index").unlink()
    with pytest.raises(DataError, match=r"expected one \*_train.index, one \*_val.index"):
        file_split(str(d), 8, 0)


def test_index_folds_match_the_tu_reader_on_enzymes(data_dir):
    """The reader of a user's .index folds is the TU sets' (datasets/tu_folds)."""
    tu = data_dir / "TU"
    if not (tu / "ENZYMES_train.index").is_file():
        pytest.skip(f"ENZYMES index files not found in {tu}")
    from graph_transformers.datasets.tu_folds import read_benchmark_index
    ids, record = file_split(str(tu / "ENZYMES_*.index"), 600, 4, "graphs")
    for s in ("train", "val", "test"):
        assert ids[s] == sorted(read_benchmark_index(tu / f"ENZYMES_{s}.index")[4])
    assert record["num_folds"] == 10


def test_tu_set_takes_a_folds_file(data_dir, tmp_path):
    if not (data_dir / "TU" / "MUTAG.zip").is_file():
        pytest.skip("MUTAG.zip not in the shared data")
    from graph_transformers.datasets.tu import load_tu
    order = np.random.default_rng(0).permutation(188)
    folds = [(sorted(order[:150].tolist()), sorted(order[150:169].tolist()),
              sorted(order[169:].tolist()))]
    f = tmp_path / "MUTAG_splits.json"
    f.write_text(json.dumps(_fair_comparison(folds)))
    test = load_tu(tmp_path / "cache", "MUTAG", "test", data_dir=data_dir, split_rule=str(f))
    assert test.indices_in_full == folds[0][2]
    assert test.split_rule["rule"] == f"folds {f} fold 0" and test.split_rule["sha256"] == _sha(f)
    with pytest.raises(DataError, match="data.split must be a split file"):
        load_tu(tmp_path / "cache", "MUTAG", "test", data_dir=data_dir, split_rule="random")


# --------------------------------------------------------------------------------- graph files
def _graph_file(tmp_path: Path, num: int = 20) -> Path:
    ring = torch.tensor([[0, 1, 2, 1, 2, 0], [1, 2, 0, 0, 1, 2]])
    graphs = [Data(x=torch.full((3, 1), float(i)), edge_index=ring, y=torch.tensor([i % 2]))
              for i in range(num)]
    path = tmp_path / "graphs.pt"
    torch.save(graphs, path)
    return path


def test_graph_file_split_forms(tmp_path):
    path = _graph_file(tmp_path)

    def ids(rule, split, **kw):
        ds = GraphFile(tmp_path / "cache", split, path=path, split_rule=rule, **kw)
        assert [int(g.x[0, 0]) for g in ds] == ds.split_indices[split]  # the graphs themselves
        return ds.split_indices[split], ds.split_rule

    order = np.random.default_rng(5).permutation(20)
    got, record = ids("random:0.6,0.2,0.2", "val", seed=5)
    assert got == sorted(order[12:16].tolist())
    assert record["rule"] == "random:0.6,0.2,0.2 seed 5"
    np.savez(tmp_path / "s.npz", train=np.arange(10), val=[10, 11], test=[19, 18])
    got, record = ids(str(tmp_path / "s.npz"), "test")
    assert got == [18, 19] and record["sha256"] == _sha(tmp_path / "s.npz")
    (tmp_path / "f.json").write_text(json.dumps([{"train": [0, 1], "val": [2], "test": [3]},
                                                 {"train": [4, 5], "val": [6], "test": [7]}]))
    got, record = ids(str(tmp_path / "f.json"), "train", fold=1)
    assert got == [4, 5] and record["rule"] == f"folds {tmp_path / 'f.json'} fold 1"
    # the default: 10 seeded folds, recorded too (metrics.json split was null for graph files)
    _, record = ids(None, "test")
    assert record["rule"].startswith("10 stratified folds of the graphs (seed 0), fold 0")
    with pytest.raises(DataError, match=r"data.split must be random.*; got 'part'"):
        GraphFile(tmp_path / "cache", "train", path=path, split_rule="part")
    with pytest.raises(DataError, match="the test set holds id 20, outside 0..19"):
        (tmp_path / "big.json").write_text(json.dumps({"train": [0], "val": [1], "test": [20]}))
        GraphFile(tmp_path / "cache", "train", path=path, split_rule=str(tmp_path / "big.json"))


def test_one_graph_file_takes_node_ids(tmp_path):
    n = 12
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    graph = Data(x=torch.randn(n, 2), edge_index=torch.cat([ring, ring.flip(0)], 1),
                 y=torch.arange(n) % 3)
    torch.save([graph], tmp_path / "one.pt")
    (tmp_path / "nodes.json").write_text(json.dumps({"train": [0, 1, 2, 3, 4, 5],
                                                     "val": [6, 7], "test": [8, 9, 10]}))
    ds = GraphFile(tmp_path / "cache", "test", path=tmp_path / "one.pt",
                   split_rule=str(tmp_path / "nodes.json"))
    assert torch.nonzero(ds[0].node_mask).view(-1).tolist() == [8, 9, 10]


def test_the_config_takes_data_split_for_any_user_data(tmp_path):
    model = {"model": {"name": "gt", "pe": None}, "encodings": {"lap_pe": None}}
    cfg = build_config({**model, "data": {"path": "g.pt", "split": "random:0.5,0.25,0.25"}})
    assert cfg.data.split == "random:0.5,0.25,0.25"
    with pytest.raises(ConfigError, match="data.split and data.split_files both give the split"):
        build_config({**model, "data": {"path": "g.pt", "split": "s.json", "split_files": {
            "train": "a", "val": "b", "test": "c"}}})
    zinc = build_config({**model, "data": {"name": "zinc", "split": "random"}})
    with pytest.raises(ValueError, match="zinc has its own fixed split"):
        resolve_spec(zinc.data)


# ------------------------------------------------------------------------ end to end: AP macro
@pytest.mark.slow
def test_list_labels_train_and_report_ap_over_the_tasks_with_both_classes(tmp_path):
    """A binary list column trained end to end (1 epoch, a tiny GT): ``metrics.json`` has the
    split's record, and its test AP is the macro mean over the tasks whose test labels hold both
    classes, as OGB computes it, here by scikit-learn on the predictions of the best
    checkpoint. The test rows (column ``part``): 4 ``[0,1,1]``, 7 ``[0,0,1]``, 10 ``[1,1,1]``:
    task 2 has one class only (skipped), task 0 and 1 count; the training rows hold missing
    entries (``nan``, a blank cell)."""
    sklearn = pytest.importorskip("sklearn.metrics")
    import graph_transformers as gtr
    path = _csv(tmp_path / "m.csv")
    config = {"name": "list-labels",
              "model": {"name": "gt", "hidden_dim": 8, "num_layers": 1, "num_heads": 2,
                        "pe": None},
              "encodings": {"lap_pe": None},
              "data": {"path": str(path), "target_columns": ["labels"], "task": "binary",
                       "metric": "ap", "split": "part", "batch_size": 4},
              "optim": {"lr": 1e-3},
              "trainer": {"max_epochs": 1, "enable_progress_bar": False, "threads": 1}}
    metrics = gtr.train(config, out_dir=tmp_path / "run")
    assert metrics["metric"] == "ap" and metrics["num_graphs"]["test"] == 3
    assert metrics["split"]["rule"] == "column part"
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["split"]["sizes"] == {"train": 5, "val": 3, "test": 3}
    rows = [4, 7, 10]
    y = np.array([[0, 1, 1], [0, 0, 1], [1, 1, 1]], dtype=float)
    test = MoleculeCSV(root=tmp_path / "check", split="test", path=path,
                       target_columns=["labels"], task="classification", split_rule="part")
    assert test.rows == rows and np.array_equal(test.y.numpy(), y)
    pred = gtr.load_run(tmp_path / "run").predict([SMILES[r] for r in rows]).values.numpy()
    tasks = [k for k in range(3) if len(set(y[~np.isnan(y[:, k]), k])) == 2]
    assert tasks == [0, 1]
    want = np.mean([sklearn.average_precision_score(y[~np.isnan(y[:, k]), k],
                                                    pred[~np.isnan(y[:, k]), k]) for k in tasks])
    assert saved["test"]["ap"] == pytest.approx(want, abs=1e-6)
