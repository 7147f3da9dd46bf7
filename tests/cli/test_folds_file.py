"""``graph-transformers train --folds FILE`` (issue 57): every fold of a folds file (the
fair-comparison JSON of Errica et al. 2020, a folder of benchmarking-gnns ``.index`` files)
trains with that fold's sets and the summary pools them; ``--folds K`` on a split that does not
change with the fold is refused in one line (exit status 2), and each run records its split
(rule and sha256) in ``metrics.json``."""
from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from torch_geometric.data import Data

from graph_transformers.cli import main
from graph_transformers.training.stats import mean_std

pytest.importorskip("rdkit")

SMILES = ["CCO", "CCN", "CCC", "CCCl", "c1ccccc1", "c1ccncc1", "C1CCCCC1", "CC(=O)O", "CCOC",
          "c1ccccc1O", "C1CCNCC1", "CC#N"]
TINY = {"model": {"name": "gt", "hidden_dim": 8, "num_layers": 1, "num_heads": 2, "pe": None},
        "encodings": {"lap_pe": None}, "optim": {"lr": 1e-3},
        "trainer": {"max_epochs": 1, "enable_progress_bar": False, "threads": 1}}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _config(tmp_path: Path, **data) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"name": "folds", **TINY, "data": {"batch_size": 4, **data}}))
    return path


def _molecules(tmp_path: Path) -> Path:
    """12 molecules, a regression target of two entries per row (a list column)."""
    path = tmp_path / "m.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["smiles", "y"])
        for i, smi in enumerate(SMILES):
            w.writerow([smi, f"[{i * 0.1:.1f}, {len(smi)}]"])
    return path


def _graphs(tmp_path: Path, num: int = 16) -> Path:
    ring = torch.tensor([[0, 1, 2, 1, 2, 0], [1, 2, 0, 0, 1, 2]])
    path = tmp_path / "graphs.pt"
    torch.save([Data(x=torch.full((3, 1), float(i % 2)), edge_index=ring,
                     y=torch.tensor([i % 2])) for i in range(num)], path)
    return path


def _runs(out: Path) -> list[dict]:
    return [json.loads((out / f"fold_{k}" / "metrics.json").read_text())
            for k in range(len(list(out.glob("fold_*"))))]


@pytest.mark.slow
def test_a_fair_comparison_file_trains_each_fold_with_its_sets(tmp_path):
    csv_path = _molecules(tmp_path)
    tests = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    folds = []
    for test in tests:
        rest = [i for i in range(12) if i not in test]
        folds.append({"test": test, "model_selection": [{"train": rest[:6],
                                                         "validation": rest[6:]}]})
    fc = tmp_path / "MOLS_splits.json"
    fc.write_text(json.dumps(folds))
    out = tmp_path / "cv"
    assert main(["train", "--config", str(_config(tmp_path, path=str(csv_path),
                                                   target_columns=["y"], task="regression")),
                 "--out", str(out), "--folds", str(fc)]) == 0
    runs = _runs(out)
    assert len(runs) == 3
    from graph_transformers.datasets.molecules.molecule_csv import MoleculeCSV
    for k, run in enumerate(runs):
        assert run["config"]["data"]["split"] == str(fc) and run["config"]["data"]["fold"] == k
        assert run["split"]["rule"] == f"folds {fc} fold {k}"
        assert run["split"]["sha256"] == _sha(fc) and run["split"]["num_folds"] == 3
        assert run["num_graphs"] == {"train": 6, "val": 2, "test": 4}
        assert len(run["test"]) and "rmse" in run["test"]
        ds = MoleculeCSV(root=tmp_path / "check", split="test", path=csv_path,
                         target_columns=["y"], task="regression", split_rule=str(fc), fold=k)
        assert ds.rows == tests[k] and ds.y.shape == (4, 2)  # each fold its own test set
    summary = json.loads((out / "summary.json").read_text())
    assert summary["folds"] == 3
    assert summary["folds_file"] == {"path": str(fc), "format": "fair-comparison json",
                                     "sha256": _sha(fc)}
    mean, std = mean_std([r["test"]["rmse"] for r in runs])  # pooled over the three folds
    assert summary["test"]["rmse"] == {"mean": pytest.approx(mean), "std": pytest.approx(std)}


@pytest.mark.slow
def test_a_folder_of_index_files_gives_the_folds_of_a_graph_file(tmp_path):
    graphs = _graphs(tmp_path)
    folder = tmp_path / "idx"
    folder.mkdir()
    lines = {"train": ["0,1,2,3,4,5,6,7,8,9", "6,7,8,9,10,11,12,13,14,15"],
             "val": ["10,11,12", "0,1,2"], "test": ["13,14,15", "3,4,5"]}
    for s, rows in lines.items():
        (folder / f"TOY_{s}.index").write_text("\n".join(rows) + "\n")
    out = tmp_path / "cv"
    assert main(["train", "--config", str(_config(tmp_path, path=str(graphs))), "--out",
                 str(out), "--folds", str(folder)]) == 0
    runs = _runs(out)
    assert [r["split"]["rule"] for r in runs] == [f"folds {folder} fold {k}" for k in (0, 1)]
    assert runs[1]["split"]["sha256"]["TOY_test.index"] == _sha(folder / "TOY_test.index")
    assert [r["num_graphs"]["test"] for r in runs] == [3, 3]
    assert json.loads((out / "summary.json").read_text())["folds"] == 2


@pytest.mark.slow
def test_a_graph_file_run_records_its_default_split(tmp_path):
    """metrics.json ``split`` was null for a graph file; it is the 10 seeded folds' rule."""
    out = tmp_path / "run"
    assert main(["train", "--config", str(_config(tmp_path, path=str(_graphs(tmp_path, 20)))),
                 "--out", str(out)]) == 0
    split = json.loads((out / "metrics.json").read_text())["split"]
    assert split["rule"].startswith("10 stratified folds of the graphs (seed 0), fold 0 test")
    assert split["sizes"] == {"train": 16, "val": 2, "test": 2}


def _fixed(tmp_path: Path, case: str) -> tuple[list[str], str]:
    """(command line, start of the message) of a ``--folds`` that must be refused."""
    csv_path = str(_molecules(tmp_path))
    mol = {"path": csv_path, "target_columns": ["y"], "task": "regression"}
    np.savez(tmp_path / "one.npz", train=np.arange(8), val=[8, 9], test=[10, 11])
    (tmp_path / "three.json").write_text(json.dumps(
        [{"train": [0, 1], "val": [2], "test": [k + 3]} for k in range(3)]))
    cases = {
        "scaffold": ({**mol}, ["--folds", "3"],
                     "--folds 3: a molecule CSV is split by scaffold (one split), so every fold "
                     "would train the same split; give --folds FILE"),
        "split file": ({**mol, "split": str(tmp_path / "one.npz")}, ["--folds", "2"],
                       f"--folds 2: data.split is the split file {tmp_path / 'one.npz'} (one "
                       "split, not folds)"),
        "random": ({**mol, "split": "random"}, ["--folds", "2"],
                   "--folds 2: data.split is 'random' (one split, not folds)"),
        "split_files": ({"path": str(_graphs(tmp_path)),
                         "split_files": {s: str(tmp_path / f"{s}.txt") for s in
                                         ("train", "val", "test")}}, ["--folds", "2"],
                        "--folds 2: its split is fixed by data.split_files"),
        "zinc": ({"name": "zinc"}, ["--folds", "2"],
                 "--folds 2: zinc has a fixed train/val/test split"),
        "zinc file": ({"name": "zinc"}, ["--folds", str(tmp_path / "three.json")],
                      f"--folds {tmp_path / 'three.json'}: zinc has its own fixed split"),
        "one split": ({**mol}, ["--folds", str(tmp_path / "one.npz")],
                      f"--folds {tmp_path / 'one.npz'}: the file holds one split, not folds"),
        "too many": ({**mol, "split": str(tmp_path / "three.json")}, ["--folds", "5"],
                     f"--folds 5: data.split {tmp_path / 'three.json'} holds 3 folds"),
    }
    data, extra, message = cases[case]
    return ["train", "--config", str(_config(tmp_path, **data)), "--out",
            str(tmp_path / "cv"), *extra], message


@pytest.mark.parametrize("case", ["scaffold", "split file", "random", "split_files", "zinc",
                                  "zinc file", "one split", "too many"])
def test_folds_on_a_split_that_does_not_change_is_refused_in_one_line(tmp_path, capsys, case):
    argv, message = _fixed(tmp_path, case)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"graph-transformers: error: {message}"), err[-1]
    assert not (tmp_path / "cv").exists()  # nothing trained
