"""Budgets before allocation (issue 54, item 5): the synthetic large-graph generator and the
all-pairs encodings (RRWP, SPD) check their size before computing anything.

Before the fix, ``data.options.num_nodes=1000000000`` under a memory limit ended in a 56-line
allocator traceback, and GRIT with ``walk_length: 4`` on an 8,000-node graph computed and cached a
1 GB RRWP encoding (peak 7.6 GiB) before the model's memory budget refused the graph."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import erdos_renyi_graph

import graph_transformers as gtr
from graph_transformers.cli import main
from graph_transformers.core.dense import (DenseBudgetError, GraphSizeLimit, check_dense_budget,
                                          pair_size_limit)
from graph_transformers.core.memory import memory_limit
from graph_transformers.datasets.synthetic import large_graph
from graph_transformers.encodings import AddRRWP
from graph_transformers.encodings import rrwp as rrwp_module
from graph_transformers.encodings.spd import AddShortestPaths
from graph_transformers.models import EGT, GRIT, GRPE, Graphormer

REPO = Path(__file__).resolve().parents[2]


def test_memory_limit_follows_ulimit():
    code = ("import resource; from graph_transformers.core.memory import memory_limit; "
            "resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, resource.RLIM_INFINITY)); "
            "print(*memory_limit(), sep='|')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.strip()
    limit, source = out.split("|")
    physical = memory_limit()[0]
    if physical is not None and physical < 3 * 2**30:
        pytest.skip("this machine has less than 3 GiB: the ulimit is not the smallest limit")
    assert int(limit) == 3 * 2**30 and source == "RLIMIT_AS (ulimit)"


def test_generation_estimate_covers_the_measured_peak():
    # measured: 1.1 GB at the peak of make_sbm_graph(10**6) (docstring of the constants)
    need = large_graph.sbm_generation_bytes(10**6, 10.0)
    assert 1.1e9 <= need <= 2.0e9


def test_a_graph_too_large_to_generate_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(large_graph, "memory_limit", lambda: (8 * 2**30, "test limit"))

    def no_allocation(*args, **kwargs):  # the generator's first allocation
        raise AssertionError("allocated before the check")

    monkeypatch.setattr(large_graph.torch, "randint", no_allocation)
    with pytest.raises(ValueError, match=r"1,000,000,000 nodes .* more than the 8\.0 GiB this "
                                         r"process may use \(test limit\)"):
        large_graph.make_sbm_graph(10**9)


def test_cli_refuses_the_billion_node_graph_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GRAPH_TRANSFORMERS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(large_graph, "memory_limit", lambda: (8 * 2**30, "test limit"))
    code = main(["train", "--config", str(REPO / "configs/large/gt_synthetic.yaml"),
                 "--out", str(tmp_path / "run"), "--set", "data.options.num_nodes=1000000000",
                 "trainer.enable_progress_bar=false"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "synthetic_large: generating a graph of 1,000,000,000 nodes" in err[0]
    assert "data.options.num_nodes" in err[0]


def test_rrwp_estimate_covers_the_measured_peaks():
    # measured peaks (computed, collated and saved; one graph of 3,000 nodes): 67 B per pair
    # at K = 4, 187 B at K = 21
    for k, measured in ((4, 67), (21, 187)):
        assert rrwp_module.rrwp_bytes(3000, k) >= measured * 3000**2


@pytest.mark.parametrize("transform", [
    lambda limit: AddRRWP(4, size_limit=limit),
    lambda limit: AddShortestPaths(3, size_limit=limit)])
def test_all_pairs_encodings_refuse_a_graph_over_the_size_limit(transform):
    limit = GraphSizeLimit(10, "a test model's memory budget")
    t = transform(limit)
    ring = torch.tensor([[i for i in range(11)], [(i + 1) % 11 for i in range(11)]])
    with pytest.raises(DenseBudgetError, match="11 nodes is larger than the 10 nodes that a "
                                               "test model's memory budget allows"):
        t(Data(edge_index=ring, num_nodes=11))
    small = t(Data(edge_index=ring[:, :9] % 10, num_nodes=10))
    assert small.num_nodes == 10
    assert "size_limit" not in repr(t)  # not part of the cache key


def _models(budget_gb: float):
    kw = dict(num_node_types=3, num_edge_types=4, memory_budget_gb=budget_gb)
    return {
        "grit": GRIT(16, 2, 2, 1, **kw),
        "egt": EGT(16, 8, 2, 2, 1, num_virtual_nodes=2, **kw),
        "grpe": GRPE(16, 2, 2, 1, **kw),
        "graphormer": Graphormer(16, 2, 2, 1, **kw),
    }


@pytest.mark.parametrize("name", ["grit", "egt", "grpe", "graphormer"])
def test_size_limit_is_exactly_what_the_models_budget_check_refuses(name):
    """The largest graph of ``graph_size_limit`` passes the model's own per-batch check alone,
    in training and evaluation; one more node does not."""
    model = _models(0.01)[name]
    limit = model.graph_size_limit()
    assert limit is not None and limit.max_nodes > 10

    def fits(n: int, training: bool) -> bool:
        model.train(training)
        sizes = torch.tensor([n])
        try:
            if name == "grit":
                model._check_budget(sizes)
            elif name == "egt":
                budget = model.memory_budget_gb * 2**30
                check_dense_budget(sizes, model.bytes_per_pair(), budget,
                                   extra_nodes=model.num_virtual_nodes)
            else:
                rel = model.relations
                check_dense_budget(sizes, rel.bytes_per_pair, rel.budget, extra_nodes=1)
        except DenseBudgetError:
            return False
        return True

    assert all(fits(limit.max_nodes, t) for t in (True, False))
    assert not all(fits(limit.max_nodes + 1, t) for t in (True, False))
    assert _models(1.0)[name].graph_size_limit().max_nodes > limit.max_nodes
    no_budget = {"grit": GRIT, "egt": EGT, "grpe": GRPE, "graphormer": Graphormer}[name]
    args = (16, 8, 2, 2, 1) if name == "egt" else (16, 2, 2, 1)
    assert no_budget(*args, num_node_types=3, num_edge_types=4,
                     memory_budget_gb=None).graph_size_limit() is None


def test_pair_size_limit_arithmetic():
    limit = pair_size_limit(1000.0, 10.0, 1, "M")
    assert limit.max_nodes == 9 and (limit.max_nodes + 1) ** 2 * 10 <= 1000
    assert (limit.max_nodes + 2) ** 2 * 10 > 1000
    assert pair_size_limit(None, 10.0, 0, "M") is None


def test_grit_run_refuses_a_large_graph_before_computing_its_rrwp(monkeypatch):
    computed: list[int] = []
    original = rrwp_module.relative_random_walk_probabilities

    def recording(edge_index, num_nodes, walk_length):
        computed.append(num_nodes)
        return original(edge_index, num_nodes, walk_length)

    monkeypatch.setattr(rrwp_module, "relative_random_walk_probabilities", recording)
    gen = torch.Generator().manual_seed(0)
    graphs = [Data(x=torch.randn(8, 3, generator=gen), edge_index=erdos_renyi_graph(8, 0.4),
                   y=torch.tensor([i % 2])) for i in range(19)]
    graphs.append(Data(x=torch.randn(400, 3), edge_index=erdos_renyi_graph(400, 0.01),
                       y=torch.tensor([1])))
    config = {"model": {"name": "grit", "hidden_dim": 16, "num_layers": 1, "num_heads": 2,
                        "memory_budget_gb": 0.05, "use_edge_features": False},
              "encodings": {"rrwp": {"walk_length": 4}}, "data": {"batch_size": 4},
              "trainer": {"max_epochs": 1, "enable_progress_bar": False}}
    with pytest.raises(DenseBudgetError, match="400 nodes is larger than the 167 nodes that "
                                               "GRIT's memory budget"):
        gtr.train(config, dataset=graphs, out_dir=tempfile.mkdtemp() + "/run")
    assert 400 not in computed
