"""Any TU dataset by its TU name (`data.name: tu:<NAME>`), from a TU-format zip made here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from graph_transformers.cli import main
from graph_transformers.data.download import OFFLINE_ENV
from graph_transformers.data.registry import resolve_spec
from graph_transformers.training.config import build_config
from test_tu_user import _tu_zip as tu_zip


def _tu_zip(folder: Path, name: str, num_graphs: int = 20, node_labels: bool = True) -> Path:
    """Cycles of 4-7 nodes in the TU text format (:func:`test_tu_user._tu_zip`) with edge labels
    and, optionally, node labels."""
    return tu_zip(folder, name, num_graphs, node_labels=node_labels, edge_labels=True)


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv(OFFLINE_ENV, "1")


def test_tu_spec_reads_classes_and_feature_widths(tmp_path, offline):
    _tu_zip(tmp_path / "data", "TOYCYCLES")
    cfg = build_config({"model": {"name": "gt", "pe": None},
                        "data": {"name": "tu:TOYCYCLES", "data_dir": str(tmp_path / "data"),
                                 "cache_dir": str(tmp_path / "cache")}})
    spec = resolve_spec(cfg.data)
    assert (spec.name, spec.level, spec.task, spec.metric) == (
        "tu:TOYCYCLES", "graph", "classification", "accuracy")
    assert (spec.out_dim, spec.node_dim, spec.edge_dim) == (2, 2, 2)


def test_any_tu_dataset_trains_with_folds_and_featureless_sets_get_a_constant(tmp_path, offline,
                                                                                capsys):
    _tu_zip(tmp_path / "data", "TOYPLAIN", node_labels=False)
    out = tmp_path / "run"
    config = Path(__file__).resolve().parents[2] / "src/graph_transformers/configs/csl_gt.yaml"
    assert main(["train", "--config", str(config), "--out", str(out), "--folds", "2", "--set",
                 "data.name=tu:TOYPLAIN", "data.source=auto",
                 f"data.data_dir={tmp_path / 'data'}", f"data.cache_dir={tmp_path / 'cache'}",
                 "model.pe=null", "encodings.lap_pe=null", "model.num_layers=1",
                 "model.hidden_dim=8", "model.num_heads=2", "trainer.max_epochs=1",
                 "trainer.enable_progress_bar=false", "data.batch_size=4"]) == 0
    metrics = json.loads((out / "fold_1" / "metrics.json").read_text())
    assert metrics["dataset"] == "tu:TOYPLAIN" and metrics["num_graphs"]["test"] == 2
    assert 0.0 <= metrics["test"]["accuracy"] <= 1.0
    capsys.readouterr()
    assert main(["train", "--config", str(config), "--set", "data.name=tu:NOSUCHSET",
                 "data.source=auto",
                 f"data.data_dir={tmp_path}",
                 f"data.cache_dir={tmp_path / 'cache'}"]) == 2
    assert "NOSUCHSET" in capsys.readouterr().err


def test_benchmark_folds_pool_folds_in_the_table(tmp_path, offline):
    _tu_zip(tmp_path / "data", "TOYCYCLES")
    config = Path(__file__).resolve().parents[2] / "src/graph_transformers/configs/csl_gt.yaml"
    out = tmp_path / "bench"
    assert main(["benchmark", "--config", str(config), "--folds", "2", "--seeds", "1", "--out",
                 str(out), "--set", "data.name=tu:TOYCYCLES", "data.source=auto",
                 f"data.data_dir={tmp_path / 'data'}", f"data.cache_dir={tmp_path / 'cache'}",
                 "model.pe=null", "encodings.lap_pe=null", "model.num_layers=1",
                 "model.hidden_dim=8", "model.num_heads=2", "trainer.max_epochs=1",
                 "trainer.enable_progress_bar=false", "data.batch_size=4"]) == 0
    rows = json.loads((out / "table.json").read_text())
    assert len(rows) == 1 and len(rows[0]["seeds"]) == 2  # two folds × one seed
