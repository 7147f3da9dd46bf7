"""``predict`` binds a run to its data as ``evaluate`` does (issue 54, item 2): a node-level
run's data must match the checkpoint's fingerprint (``--allow-data-change`` proceeds), and each
node's ``split`` comes from the run (``node_split.pt``), never from a split drawn again.

Before the fix, editing two labels of the node table made ``predict`` exit 0 with a redrawn
split: 28 of 60 nodes were in another split than in training."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from graph_transformers.cli import main
from graph_transformers.training.binding import NODE_SPLIT_FILE, read_node_split

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "configs/graphs/gt_node_table.yaml"
N = 60


def _files(root: Path, flip: tuple[int, ...] = (), extra_edge: bool = False) -> tuple[Path, Path]:
    """A ring of ``N`` nodes with two classes; ``flip``: nodes whose label is swapped."""
    edges = [f"n{i},n{(i + 1) % N}" for i in range(N)] + (["n0,n30"] if extra_edge else [])
    labels = ["ab"[i % 2] if i not in flip else "ba"[i % 2] for i in range(N)]
    (root / "edges.csv").write_text("src,dst\n" + "\n".join(edges) + "\n")
    (root / "nodes.csv").write_text("id,label,f\n" + "".join(
        f"n{i},{labels[i]},{i % 2 + 0.01 * i:.2f}\n" for i in range(N)))
    return root / "edges.csv", root / "nodes.csv"


def _split_column(path: Path) -> dict[str, str]:
    with open(path, newline="") as f:
        return {r["node_id"]: r["split"] for r in csv.DictReader(f)}


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPH_TRANSFORMERS_CACHE", str(tmp_path / "cache"))
    edges, nodes = _files(tmp_path)
    out = tmp_path / "run"
    assert main(["train", "--config", str(TEMPLATE), "--out", str(out), "--set",
                 f"data.edges={edges}", f"data.nodes={nodes}", "data.split=random:0.6,0.2,0.2",
                 "trainer.max_epochs=1", "trainer.enable_progress_bar=false"]) == 0
    assert main(["predict", str(out), "--out", str(tmp_path / "before.csv")]) == 0
    return tmp_path, out


def test_the_run_stores_its_node_split(run):
    root, out = run
    stored = read_node_split(out)
    assert stored is not None and stored["codes"].shape == (N,)
    assert stored["node_ids"] == [f"n{i}" for i in range(N)]
    counts = torch.bincount(stored["codes"].long(), minlength=4).tolist()
    assert counts[1:] == [36, 12, 12]  # train, val, test of 60 nodes
    trained = _split_column(root / "before.csv")
    names = stored["names"]
    assert trained == {f"n{i}": names[c] for i, c in enumerate(stored["codes"].tolist())}


@pytest.mark.parametrize("edit", ["labels", "edge"])
def test_predict_refuses_changed_data(run, edit, capsys):
    root, out = run
    _files(root, flip=(3, 10) if edit == "labels" else (), extra_edge=edit == "edge")
    capsys.readouterr()
    assert main(["predict", str(out), "--out", str(root / "after.csv")]) == 2
    err = capsys.readouterr().err
    assert "differ from those checkpoint best.ckpt" in err and "--allow-data-change" in err
    assert not (root / "after.csv").exists()


def test_allow_data_change_keeps_the_trained_split(run):
    root, out = run
    _files(root, flip=(3, 10))
    assert main(["predict", str(out), "--out", str(root / "after.csv"),
                 "--allow-data-change"]) == 0
    assert _split_column(root / "after.csv") == _split_column(root / "before.csv")


def test_a_run_without_a_stored_split_refuses_changed_data_even_when_allowed(run, capsys):
    root, out = run
    (out / NODE_SPLIT_FILE).unlink()  # as a run written before node_split.pt existed
    assert main(["predict", str(out), "--out", str(root / "same.csv")]) == 0  # data unchanged
    assert _split_column(root / "same.csv") == _split_column(root / "before.csv")
    _files(root, flip=(3, 10))
    capsys.readouterr()
    assert main(["predict", str(out), "--out", str(root / "after.csv"),
                 "--allow-data-change"]) == 2
    assert "stores no node split" in capsys.readouterr().err


def test_a_corrupt_node_split_is_named(run, capsys):
    root, out = run
    (out / NODE_SPLIT_FILE).write_bytes(b"not a torch file")
    assert main(["predict", str(out), "--out", str(root / "after.csv")]) == 2
    assert f"{NODE_SPLIT_FILE}: the run's node split cannot be read" in capsys.readouterr().err
