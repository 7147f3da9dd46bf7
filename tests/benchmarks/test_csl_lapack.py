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


def test_work_folder_resumes_finished_conditions(tmp_path, monkeypatch):
    """With ``--work``, a condition whose result is there (same options) is not trained again,
    and one trained with other options is."""
    calls = []

    def fake_worker(cmd, env, check):  # writes what a worker writes, without training
        spec = cmd[-1]
        condition, threads, folds, seeds, epochs, workdir = json.loads(spec)
        calls.append((condition, epochs))
        work = Path(workdir)
        np.save(work / "encodings.npy", np.zeros((2, 3), dtype=np.float32))
        (work / "lapack.json").write_text(json.dumps(["fake"]))
        runs = [{"fold": 0, "seed": 0, "test_accuracy": 0.5, "epochs": epochs}]
        (work / "result.json").write_text(json.dumps(
            {"condition": condition, "threads": threads, "runs": runs, "spec": spec}))

    monkeypatch.setattr(csl_lapack.subprocess, "run", fake_worker)
    args = ["--folds", "1", "--seeds", "1", "--epochs", "1", "--threads", "1",
            "--conditions", "solver", "canonical", "--work", str(tmp_path / "work"),
            "--out", str(tmp_path / "report")]
    csl_lapack.main(args)
    assert calls == [("solver", 1), ("canonical", 1)]
    csl_lapack.main(args)  # everything is there: nothing runs again
    assert len(calls) == 2
    report = json.loads((tmp_path / "report.json").read_text())
    assert [r["condition"] for r in report["results"]] == ["solver", "canonical"]
    assert all("spec" not in r for r in report["results"])
    other = list(args)
    other[args.index("--epochs") + 1] = "2"
    csl_lapack.main(other)
    assert calls[2:] == [("solver", 2), ("canonical", 2)]  # other epochs: trained again
