"""``benchmarks/csl_lapack.py`` (issue 57, item 8): its simulated other LAPACK changes the plain
LapPE of CSL and not the canonical one, the same in every call; a one-epoch smoke run writes the
report with every condition."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import graph_transformers.encodings.lappe as lappe
from graph_transformers.datasets.synthetic.csl import generate_csl

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import csl_lapack  # noqa: E402


def _encodings(graphs, basis):
    return np.stack([lappe.laplacian_pe(g.edge_index, g.num_nodes, 20, basis).numpy()
                     for g in graphs])


def test_simulated_other_lapack_moves_the_plain_encoding_only(monkeypatch):
    graphs = generate_csl(0)[::15]  # one graph per class
    plain, canonical = _encodings(graphs, "solver"), _encodings(graphs, "canonical")
    monkeypatch.setattr(lappe, "smallest_eigenpairs", lappe.smallest_eigenpairs)  # restored
    csl_lapack.install_rotated_solver()
    rotated = _encodings(graphs, "solver")
    assert np.abs(rotated - plain).max() > 0.1
    np.testing.assert_allclose(_encodings(graphs, "solver"), rotated, atol=0)  # a fixed rotation
    np.testing.assert_allclose(_encodings(graphs, "canonical"), canonical, atol=1e-6)


@pytest.mark.slow
def test_smoke_run_writes_every_condition(tmp_path):
    out = tmp_path / "csl_lapack"
    csl_lapack.main(["--folds", "1", "--seeds", "1", "--epochs", "1", "--threads", "1",
                     "--conditions", "solver", "canonical", "canonical-rotated",
                     "--out", str(out)])
    report = json.loads(out.with_suffix(".json").read_text())
    assert [(r["condition"], r["threads"]) for r in report["results"]] == [
        ("solver", 1), ("canonical", 1), ("canonical-rotated", 1)]
    assert all(len(r["runs"]) == 1 and 0.0 <= r["runs"][0]["test_accuracy"] <= 1.0
               and r["runs"][0]["epochs"] == 1 for r in report["results"])
    diffs = {d["condition"]: d for d in report["encoding_max_abs_diff"]}
    assert diffs["canonical-rotated"]["vs_canonical_1t"] < 1e-6
    assert diffs["solver"]["vs_canonical_1t"] > 0.1
    text = out.with_suffix(".md").read_text()
    assert "| canonical-rotated | 1 |" in text and "vs_solver_1t" in text
