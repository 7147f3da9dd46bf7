"""Peptides-func and Peptides-struct (LRGB, issue 57) on small fixtures written here in exactly
LRGB's layout (``DATA_DIR/peptides-functional/raw/peptide_multi_class_dataset.csv.gz`` and the
split pickle beside ``raw/``, the same for ``peptides-structural``): the graphs are OGB's
``smiles2graph``, the labels the CSV's, the splits the pickle's; the Peptides-struct targets are
standardized as LRGB does; missing files, a pickle that would run code and a wrong ``labels``
cell are one-line errors; the metrics are AP / MAE; and the shipped configs train one short
epoch on the fixtures through the CLI. Nothing is downloaded (``conftest.py``)."""
from __future__ import annotations

import csv
import gzip
import json
import logging
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

ogb_utils = pytest.importorskip("ogb.utils")
pytest.importorskip("rdkit")

from graph_transformers.cli import main  # noqa: E402
from graph_transformers.data.cache import DataNotFoundError  # noqa: E402
from graph_transformers.data.registry import get_spec  # noqa: E402
from graph_transformers.datasets.lrgb import peptides  # noqa: E402
from graph_transformers.datasets.lrgb.lrgb_files import LRGB_FILES, read_lrgb_split  # noqa: E402
from graph_transformers.datasets.lrgb.peptides import (  # noqa: E402
    PEPTIDES, PEPTIDES_STRUCT_TARGETS, load_peptides_func, load_peptides_struct, peptide_graph)
from graph_transformers.errors import DataError  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: small peptides (di- to pentapeptides, written as SMILES the way SATPdb's are: heavy atoms,
#: stereocentres); Leu-enkephalin last
SMILES = [
    "NCC(=O)NCC(=O)O",                                        # Gly-Gly
    "C[C@H](N)C(=O)N[C@@H](C)C(=O)O",                         # Ala-Ala
    "NCC(=O)N[C@@H](C)C(=O)N[C@@H](CO)C(=O)O",                # Gly-Ala-Ser
    "N[C@@H](Cc1ccccc1)C(=O)NCC(=O)O",                        # Phe-Gly
    "N[C@@H](CS)C(=O)NCC(=O)O",                               # Cys-Gly
    "NCCCC[C@H](N)C(=O)N[C@@H](C)C(=O)O",                     # Lys-Ala
    "N[C@@H](Cc1c[nH]c2ccccc12)C(=O)NCC(=O)O",                # Trp-Gly
    "O=C(NCC(=O)O)[C@@H]1CCCN1",                              # Pro-Gly
    "N[C@@H](CCC(=O)O)C(=O)N[C@@H](CC(=O)O)C(=O)O",           # Glu-Asp
    "CSCC[C@H](N)C(=O)NCC(=O)O",                              # Met-Gly
    "N[C@@H](Cc1c[nH]cn1)C(=O)N[C@@H](C)C(=O)O",              # His-Ala
    "N=C(N)NCCC[C@H](N)C(=O)NCC(=O)O",                        # Arg-Gly
    "CC(C)[C@H](N)C(=O)N[C@@H]([C@@H](C)O)C(=O)O",            # Val-Thr
    "NC(=O)C[C@H](N)C(=O)N[C@@H](CCC(N)=O)C(=O)O",            # Asn-Gln
    "CC[C@H](C)[C@H](N)C(=O)N[C@@H](CO)C(=O)O",               # Ile-Ser
    "CC(C)C[C@@H](C(=O)O)NC(=O)[C@H](Cc1ccccc1)NC(=O)CNC(=O)CNC(=O)[C@@H](N)Cc1ccc(O)cc1",
]
#: the split pickle: rows of the CSV, deliberately not in file order
SPLIT = {"train": np.array([3, 0, 7, 12, 1, 9, 14, 5, 10, 15]), "val": np.array([2, 11, 6]),
         "test": np.array([13, 4, 8])}


def func_labels() -> np.ndarray:
    """``[16, 10]`` labels in {0, 1}; every class has both labels in every split."""
    y = np.random.default_rng(0).integers(0, 2, size=(len(SMILES), 10))
    for rows in SPLIT.values():
        y[rows[0]], y[rows[1]] = 0, 1
    return y


def struct_targets() -> np.ndarray:
    """``[16, 11]`` raw targets on different scales (as LRGB's first release has them)."""
    rng = np.random.default_rng(1)
    return rng.normal(size=(len(SMILES), 11)) * np.arange(1, 12) * 3.0 + np.arange(11) * 10.0


def standardized(y: np.ndarray) -> np.ndarray:
    """LRGB's standardization (pandas: mean and sample s.d. over all rows), by hand."""
    return (y - y.mean(axis=0)) / y.std(axis=0, ddof=1)


def _write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _write_split(path: Path, split=SPLIT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(split, f)  # as LRGB wrote it: a dict of NumPy arrays


def write_func(root: Path, labels: list | None = None, split_in: str = "") -> Path:
    """LRGB's Peptides-func layout under ``root``; ``labels``: the cells of the ``labels``
    column (default: :func:`func_labels` as Python lists); ``split_in``: ``""`` (beside
    ``raw/``, where LRGB's loader keeps it) or ``"raw"``."""
    folder = root / "peptides-functional"
    cells = labels if labels is not None else [str(r) for r in func_labels().tolist()]
    _write_csv(folder / "raw" / "peptide_multi_class_dataset.csv.gz",
               ["smiles", "peptide_seq", "labels"],
               [[s, f"SEQ{i}", cells[i]] for i, s in enumerate(SMILES)])
    _write_split(folder / split_in / "splits_random_stratified_peptide.pickle")
    return root


def write_struct(root: Path, raw_release: bool = False, y: np.ndarray | None = None) -> Path:
    """LRGB's Peptides-struct layout: the standardized file (default) or the first release's
    raw targets (``raw_release``)."""
    folder = root / "peptides-structural"
    if y is None:
        y = struct_targets() if raw_release else standardized(struct_targets())
    name = ("peptide_structure_dataset.csv.gz" if raw_release
            else "peptide_structure_normalized_dataset.csv.gz")
    _write_csv(folder / "raw" / name, ["smiles", "peptide_seq", *PEPTIDES_STRUCT_TARGETS],
               [[s, f"SEQ{i}", *map(repr, y[i].tolist())] for i, s in enumerate(SMILES)])
    _write_split(folder / "splits_random_stratified_peptide_structure.pickle")
    return root


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lrgb-data")
    write_func(root)
    write_struct(root)
    return root


def _same_as_ogb(graph, smiles: str) -> None:
    ref = ogb_utils.smiles2graph(smiles)
    assert torch.equal(graph.x, torch.from_numpy(ref["node_feat"]))
    assert torch.equal(graph.edge_index, torch.from_numpy(ref["edge_index"]))
    assert torch.equal(graph.edge_attr, torch.from_numpy(ref["edge_feat"]))
    assert graph.num_nodes == ref["num_nodes"]
    assert graph.x.dtype == graph.edge_index.dtype == graph.edge_attr.dtype == torch.long


# ------------------------------------------------------------------------------- reading
def test_func_graphs_labels_and_split_are_the_files(data_root, tmp_path, caplog):
    labels = func_labels()
    with caplog.at_level(logging.WARNING, logger="graph_transformers"):
        splits = {s: load_peptides_func(tmp_path, s, data_dir=data_root) for s in SPLIT}
    for split, ds in splits.items():
        assert len(ds) == len(SPLIT[split])
        assert ds.source_ids.tolist() == SPLIT[split].tolist()  # the pickle's rows, its order
        for i, row in enumerate(SPLIT[split]):
            g = ds[i]
            _same_as_ogb(g, SMILES[row])
            assert g.y.shape == (1, 10) and g.y.dtype == torch.float32
            assert g.y[0].tolist() == labels[row].tolist()  # the CSV's list
        assert ds.provenance == {split: "exact"} and ds.skipped == []
    # CACHE/canonical/peptides-functional/processed/<key>/{train,val,test}.pt + meta.json
    rel = Path(splits["val"].processed_dir).relative_to(tmp_path / "canonical")
    assert rel.parts[:2] == ("peptides-functional", "processed")
    assert sorted(p.name for p in Path(splits["val"].processed_dir).glob("*.pt")) == [
        "pre_filter.pt", "pre_transform.pt", "test.pt", "train.pt", "val.pt"]
    # the fixture is not LRGB's release: used, with one WARNING per file at the build
    assert splits["train"].canonical_info["lrgb_release"] is False
    assert len([r for r in caplog.records if "not that of LRGB's release" in r.getMessage()]) == 2


def test_the_split_file_is_also_read_from_raw(tmp_path):
    root = write_func(tmp_path / "data", split_in="raw")
    ds = load_peptides_func(tmp_path / "cache", "test", data_dir=root)
    assert ds.source_ids.tolist() == SPLIT["test"].tolist()
    assert ds.canonical_info["files"][1].endswith("raw/splits_random_stratified_peptide.pickle")


def test_struct_targets_are_standardized_as_lrgb_does(data_root, tmp_path):
    want = standardized(struct_targets())
    ds = load_peptides_struct(tmp_path / "a", "train", data_dir=data_root)
    assert "in the file" in ds.canonical_info["targets"]
    # LRGB's first release: raw targets in the file, standardized over all its rows when read
    raw = write_struct(tmp_path / "raw-release", raw_release=True)
    first = load_peptides_struct(tmp_path / "b", "train", data_dir=raw)
    assert "standardized here" in first.canonical_info["targets"]
    for dataset in (ds, first):
        assert dataset.source_ids.tolist() == SPLIT["train"].tolist()
        for i, row in enumerate(SPLIT["train"]):
            g = dataset[i]
            assert g.y.shape == (1, 11) and g.y.dtype == torch.float32
            np.testing.assert_allclose(g.y[0].numpy(), want[row], rtol=1e-6, atol=1e-6)
        _same_as_ogb(dataset[0], SMILES[SPLIT["train"][0]])


def test_a_second_load_reuses_the_cache_and_encodings_get_their_own(data_root, tmp_path):
    from graph_transformers.encodings.rwse import AddRWSE
    ds = load_peptides_func(tmp_path, "val", data_dir=data_root)
    stamp = Path(ds.processed_paths[1]).stat().st_mtime_ns
    again = load_peptides_func(tmp_path, "val", data_dir=data_root)
    assert Path(again.processed_paths[1]).stat().st_mtime_ns == stamp
    pre = AddRWSE(4)
    enc = load_peptides_func(tmp_path, "val", pre_transform=pre, data_dir=data_root)
    assert enc.processed_dir != ds.processed_dir
    for i, row in enumerate(SPLIT["val"]):
        assert torch.equal(enc[i].rwse, pre(peptide_graph(SMILES[row])).rwse)


def test_feature_vocabularies_are_ogbs():
    from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims
    assert list(peptides.OGB_ATOM_FEATURE_DIMS) == get_atom_feature_dims()
    assert list(peptides.OGB_BOND_FEATURE_DIMS) == get_bond_feature_dims()
    g = peptide_graph(SMILES[-1])
    assert (g.x < torch.tensor(peptides.OGB_ATOM_FEATURE_DIMS)).all()
    assert (g.edge_attr < torch.tensor(peptides.OGB_BOND_FEATURE_DIMS)).all()
    with pytest.raises(ValueError, match="RDKit cannot parse"):
        peptide_graph("C(C)(C)(C)(C)C")  # pentavalent carbon
    with pytest.raises(ValueError, match="empty SMILES"):
        peptide_graph(" ")


def test_a_smiles_rdkit_rejects_is_left_out_with_a_warning(tmp_path, caplog):
    root = write_func(tmp_path / "data")
    bad = list(SMILES)
    bad[SPLIT["train"][1]] = "C(C)(C)(C)(C)C"
    folder = root / "peptides-functional"
    _write_csv(folder / "raw" / "peptide_multi_class_dataset.csv.gz",
               ["smiles", "peptide_seq", "labels"],
               [[s, "X", str(r)] for s, r in zip(bad, func_labels().tolist())])
    with caplog.at_level(logging.WARNING, logger="graph_transformers"):
        ds = load_peptides_func(tmp_path / "cache", "train", data_dir=root)
    assert ds.source_ids.tolist() == [r for r in SPLIT["train"].tolist()
                                      if r != SPLIT["train"][1]]
    assert ds.skipped[0]["row"] == SPLIT["train"][1] and ds.canonical_info["num_skipped"] == 1
    assert [r for r in caplog.records if "RDKit cannot parse" in r.getMessage()]


# ------------------------------------------------------------------------ the task and metric
def test_the_tasks_and_metrics_are_lrgbs():
    from graph_transformers.training.config import build_config
    from graph_transformers.training.fit import _monitor
    from graph_transformers.training.metrics import MultitaskAP
    from graph_transformers.training.tasks import Task

    func, struct = get_spec("peptides-func"), get_spec("peptides-struct")
    assert (func.level, func.task, func.out_dim, func.metric) == ("graph", "binary", 10, "ap")
    assert (struct.level, struct.task, struct.out_dim, struct.metric) == (
        "graph", "regression", 11, "mae")
    assert func.targets == PEPTIDES["peptides-func"].targets and func.targets[-1] == "toxic"
    assert struct.targets[0] == "Inertia_mass_a" and struct.targets[-1] == "Plane_best_fit"
    assert isinstance(Task(func).metrics()["ap"], MultitaskAP)
    # AP as LRGB / GraphGPS compute it (eval_ap): scikit-learn's per class, then the mean
    from sklearn.metrics import average_precision_score
    rng = np.random.default_rng(2)
    y, s = rng.integers(0, 2, (40, 10)), rng.normal(size=(40, 10))
    y[:, 9] = 0  # a class without positives in the split: skipped, as eval_ap skips it
    ap = Task(func).metrics()["ap"]
    ap.update(torch.tensor(s[:25]).float(), torch.tensor(y[:25]).float())
    ap.update(torch.tensor(s[25:]).float(), torch.tensor(y[25:]).float())
    s32 = torch.tensor(s).float().double().numpy()
    want = np.mean([average_precision_score(y[:, k], s32[:, k]) for k in range(9)])
    assert float(ap.compute()) == pytest.approx(want, abs=1e-6)
    config = build_config({"data": {"name": "peptides-func"}, "model": {"name": "gt",
                                                                        "pe": None}})
    assert _monitor(func, config) == ("val/ap", "max")  # the best checkpoint: highest val AP
    assert _monitor(struct, config) == ("val/mae", "min")
    # MAE over the 11 targets = the mean of the per-target MAEs (no missing labels)
    pred, true = torch.randn(7, 11), torch.randn(7, 11)
    metric = Task(struct).metrics()["mae"]
    metric.update(pred, true)
    per_target = (pred - true).abs().mean(0)
    assert float(metric.compute()) == pytest.approx(float(per_target.mean()), abs=1e-6)
    # the loss: BCE over the 10 classes / L1 over the 11 targets
    from torch_geometric.data import Batch, Data
    batch = Batch.from_data_list([Data(y=torch.tensor([[0.0] * 9 + [1.0]])),
                                  Data(y=torch.tensor([[1.0] * 10]))])
    out = torch.randn(2, 10)
    want = torch.nn.functional.binary_cross_entropy_with_logits(out, batch.y)
    assert float(Task(func).loss(out, batch)) == pytest.approx(float(want), abs=1e-6)


def test_data_source_generated_is_refused(data_root):
    from graph_transformers.data.registry import load_splits
    from graph_transformers.training.config import build_config
    config = build_config({"data": {"name": "peptides-func", "source": "generated",
                                    "data_dir": str(data_root)},
                           "model": {"name": "gt", "pe": None}})
    with pytest.raises(ValueError, match="peptides-func has no generator"):
        load_splits(config.data, None)


# --------------------------------------------------------------------------- one-line errors
def test_missing_files_are_one_line_errors_naming_the_path_and_lrgbs_url(data_root, tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        load_peptides_func(tmp_path, "train", data_dir=tmp_path / "empty")
    text = str(err.value)
    assert "\n" not in text
    assert str(tmp_path / "empty" / "peptides-functional" / "raw" /
               "peptide_multi_class_dataset.csv.gz") in text
    assert LRGB_FILES["peptides-func-csv"].url in text
    assert LRGB_FILES["peptides-func-split"].url in text
    with pytest.raises(DataNotFoundError, match="no data directory"):
        load_peptides_struct(tmp_path, "train")
    # only the split file missing: it is the one named, with both places searched
    only_csv = tmp_path / "only-csv"
    write_func(only_csv)
    (only_csv / "peptides-functional" / "splits_random_stratified_peptide.pickle").unlink()
    with pytest.raises(DataNotFoundError) as err:
        load_peptides_func(tmp_path, "val", data_dir=only_csv)
    text = str(err.value)
    assert "\n" not in text and "splits_random_stratified_peptide.pickle not found" in text
    assert "peptide_multi_class_dataset.csv.gz not found" not in text
    assert str(only_csv / "peptides-functional" / "raw") in text  # searched there too
    # Peptides-struct names the standardized file and the first release as its alternative
    with pytest.raises(DataNotFoundError) as err:
        load_peptides_struct(tmp_path, "val", data_dir=tmp_path / "empty")
    text = str(err.value)
    assert "peptide_structure_normalized_dataset.csv.gz or " in text
    assert "peptide_structure_dataset.csv.gz" in text


def test_a_missing_file_through_the_cli_is_one_line_exit_2(tmp_path, capsys):
    code = main(["train", "--config", str(REPO / "configs/lrgb/peptides_func_gps.yaml"),
                 "--data-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "run")])
    assert code == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]
    assert len(lines) == 1 and "peptides-functional/raw/peptide_multi_class_dataset.csv.gz" \
        in lines[0], lines


class _Evil:
    def __reduce__(self):
        return (print, ("unpickled!",))


def test_a_tampered_split_pickle_is_refused_not_run(tmp_path, capsys):
    root = write_func(tmp_path / "data")
    path = root / "peptides-functional" / "splits_random_stratified_peptide.pickle"
    _write_split(path, {"train": _Evil(), "val": SPLIT["val"], "test": SPLIT["test"]})
    with pytest.raises(DataError) as err:
        load_peptides_func(tmp_path / "cache", "train", data_dir=root)
    text = str(err.value)
    assert "\n" not in text and "refusing to load LRGB split file" in text
    assert "builtins.print" in text and str(path) in text
    assert "unpickled!" not in capsys.readouterr().out  # the pickle's code never ran


@pytest.mark.parametrize("split,message", [
    ({"train": np.arange(3), "val": np.arange(3, 5)}, r"no split 'test'"),
    ({"train": np.arange(3), "val": np.arange(2, 5), "test": np.arange(6, 8)}, "shares row 2"),
    ({"train": np.arange(3), "val": np.array([40]), "test": np.arange(6, 8)},
     r"row id 40, outside 0\.\.15"),
    ({"train": np.array([1, 1]), "val": np.arange(3, 5), "test": np.arange(6, 8)}, "twice"),
    ({"train": np.array([0.5]), "val": np.arange(3, 5), "test": np.arange(6, 8)},
     "not a 1-D array of row ids"),
    ([1, 2, 3], "not a dict of split indices"),
])
def test_a_wrong_split_file_is_one_line(tmp_path, split, message):
    path = tmp_path / "split.pickle"
    _write_split(path, split)
    with pytest.raises(DataError, match=message) as err:
        read_lrgb_split(path, len(SMILES))
    assert "\n" not in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("cell,message", [
    ("[0, 1, 0, 0, 0, 0, 0, 0, 0]", r"line 4: labels has 9 entries, expected 10"),
    ("[0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]", r"line 4: labels has 11 entries, expected 10"),
    ("[0, 2, 0, 0, 0, 0, 0, 0, 0, 0]", r"line 4: label 1 \(cell_cell_communication\) is 2"),
    ("0 1 0 0 0 0 0 0 0 0", r"line 4: labels '0 1 0 0 0 0 0 0 0 0' is not a list"),
    ("__import__('os')", r"line 4: labels .* is not a list"),
])
def test_a_wrong_labels_cell_is_one_line(tmp_path, cell, message):
    cells = [str(r) for r in func_labels().tolist()]
    cells[2] = cell  # the third data row: line 4 of the file
    root = write_func(tmp_path / "data", labels=cells)
    with pytest.raises(DataError, match=message) as err:
        load_peptides_func(tmp_path / "cache", "train", data_dir=root)
    assert "\n" not in str(err.value) and "peptide_multi_class_dataset.csv.gz" in str(err.value)


def test_a_wrong_struct_file_is_one_line(tmp_path):
    raw = struct_targets()
    # raw targets under the standardized file's name: refused, not silently mis-scaled
    root = write_struct(tmp_path / "a", y=raw)
    with pytest.raises(DataError, match="target Inertia_mass_a has mean .* LRGB's standardized "
                                        "file has mean 0 and s.d. 1") as err:
        load_peptides_struct(tmp_path / "cache", "train", data_dir=root)
    assert "\n" not in str(err.value)
    path = tmp_path / "b" / "peptides-structural" / "raw" / \
        "peptide_structure_normalized_dataset.csv.gz"
    _write_csv(path, ["smiles", "Inertia_mass_a"], [["CCO", "1.0"]])
    with pytest.raises(DataError, match="lacks the column"):
        peptides.read_peptides_csv(path, PEPTIDES["peptides-struct"])
    _write_csv(path, ["smiles", *PEPTIDES_STRUCT_TARGETS], [["CCO", "x", *["0"] * 10]])
    with pytest.raises(DataError, match="line 2: Inertia_mass_a 'x' is not a number"):
        peptides.read_peptides_csv(path, PEPTIDES["peptides-struct"])
    path.write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="gzip"):
        peptides.read_peptides_csv(path, PEPTIDES["peptides-struct"])


# ------------------------------------------------------------------------- a run (the CLI)
@pytest.mark.parametrize("config,metric", [("peptides_func_gps.yaml", "ap"),
                                           ("peptides_struct_grit.yaml", "mae")])
def test_a_shipped_config_trains_one_step_through_the_cli(config, metric, data_root, tmp_path):
    out = tmp_path / "run"
    code = main(["train", "--config", str(REPO / "configs" / "lrgb" / config), "--data-dir",
                 str(data_root), "--out", str(out), "--set", "trainer.max_epochs=1",
                 "trainer.enable_progress_bar=false", "trainer.threads=1", "model.num_layers=1",
                 "model.hidden_dim=32", "param_budget=null", "data.batch_size=4",
                 "optim.scheduler.warmup_epochs=0"])
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["metric"] == metric and metrics["epochs"] == 1
    assert metrics["num_graphs"] == {s: len(v) for s, v in SPLIT.items()}
    for split in ("train", "val", "test"):
        value = metrics[split][metric]
        assert math.isfinite(value) and value >= 0.0
        if metric == "ap":
            assert value <= 1.0
