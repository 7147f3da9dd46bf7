"""``benchmarks/large_graph.py`` (issue 28, item 4) as a smoke run on a tiny graph: every method
trains on the same Cluster-GCN batches in its own capped child process and the reports name them
all, with our fastest method as a ratio to PyG's anchors."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from graph_transformers.data.cluster import metis_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import isolated  # noqa: E402
import large_graph  # noqa: E402

pytestmark = pytest.mark.skipif(metis_backend() is None,
                                reason="no METIS backend (pip install 'graph-transformers[large]')")


@pytest.mark.slow
def test_smoke_run_reports_every_method(tmp_path):
    out = tmp_path / "out"
    results = large_graph.main(["--sizes", "1500", "--epochs", "2", "--threads", "1",
                                "--cluster-size", "150", "--clusters-per-batch", "3",
                                "--mem-gib", "8", "--timeout", "300", "--out", str(out),
                                "--cache", str(tmp_path / "cache")])
    for method in large_graph.METHODS:
        r = results[method]["1500"]
        assert r["status"] == "ok", (method, r)
        assert r["num_parts"] == 10 and len(r["train_loss"]) == 2
        assert 0.0 <= r["test_acc"] <= 1.0 and r["peak_rss_mib"] > r["graph_rss_mib"] > 0
    saved = json.loads((out / "large_graph.json").read_text())
    assert saved["results"] == json.loads(json.dumps(results))
    report = (out / "large_graph.md").read_text()
    for label in large_graph.LABELS.values():
        assert label in report
    assert "of PyG SGFormer" in report and "of PyG Polynormer" in report
    assert (out / "large_graph.png").stat().st_size > 0


def test_points_run_on_two_threads_after_the_caller_ran_parallel_ops(tmp_path):
    """Regression: each point was a fork of the caller, and a fork of a process whose OpenMP pool
    had run (here: a 2-thread matmul, as the partition or an earlier test does) blocked forever
    in its first parallel op, so every point at --threads 2 ended as a timeout."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        a = torch.randn(512, 512)
        (a @ a).sum()  # the pool runs in this process
    finally:
        torch.set_num_threads(threads)
    results = large_graph.main(["--sizes", "1500", "--epochs", "1", "--threads", "2",
                                "--methods", "gps_linear", "--cluster-size", "150",
                                "--clusters-per-batch", "3", "--mem-gib", "8", "--timeout", "120",
                                "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c")])
    r = results["gps_linear"]["1500"]
    assert r["status"] == "ok", r
    assert len(r["load_avg_1min"]) == 2
    # --merge: a re-measured point joins the saved ones, under the same settings only
    common = ["--sizes", "1500", "--epochs", "1", "--cluster-size", "150",
              "--clusters-per-batch", "3", "--mem-gib", "8", "--timeout", "120",
              "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c"), "--merge"]
    merged = large_graph.main(common + ["--threads", "2", "--methods", "sampled_gt"])
    assert list(merged) == ["gps_linear", "sampled_gt"]
    assert merged["gps_linear"]["1500"] == json.loads(json.dumps(r))
    assert merged["sampled_gt"]["1500"]["status"] == "ok"
    assert "GT (cluster batches)" in (tmp_path / "out" / "large_graph.md").read_text()
    with pytest.raises(SystemExit, match="measured under"):
        large_graph.main(common + ["--threads", "1", "--methods", "sampled_gt"])


def _orphan_point(ready) -> None:
    """A point's process whose parent then dies: it must end on its own."""
    import multiprocessing as mp
    import time

    def point() -> None:
        isolated._exit_with_parent(poll_s=0.05)
        time.sleep(60)

    child = mp.get_context("fork").Process(target=point)
    child.start()
    ready.send(child.pid)
    time.sleep(60)  # killed by the test before this ends


def test_a_point_ends_when_its_parent_is_killed():
    """Regression: killing the benchmark left its running point (forked from the forkserver)
    training on both cores, which skewed the next run's timings."""
    import multiprocessing as mp
    import os
    import signal
    import time
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    parent = ctx.Process(target=_orphan_point, args=(send,))
    parent.start()
    pid = recv.recv()
    os.kill(parent.pid, signal.SIGKILL)
    parent.join()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:  # gone, or a zombie not yet reaped by its new parent: it has ended
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("the orphaned point kept running")


def test_the_graph_is_seeded_and_every_method_builds():
    """The methods differ only in the model: the graph is the same at every call (so are the
    partition and the batches, cached and seeded), and each method builds."""
    import torch
    g1, g2 = large_graph.make_graph(600), large_graph.make_graph(600)
    assert torch.equal(g1.edge_index, g2.edge_index) and torch.equal(g1.x, g2.x)
    for method in large_graph.METHODS:
        model, logits, log_probs = large_graph.build(method)
        assert sum(p.numel() for p in model.parameters()) > 0
        assert log_probs == method.startswith("pyg_")
