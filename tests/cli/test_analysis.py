"""Attention analysis (EGT §4.4): hop-distance weights and the ``analyze`` command."""
from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import from_networkx

from graph_transformers.analysis import attention_by_hop, hop_bins
from graph_transformers.cli import main
from graph_transformers.core.dense import DenseBatch


class NeighbourAttention(torch.nn.Module):
    """Attends uniformly to the 1-hop neighbours (a mean-aggregating GNN) or, with ``hop=0``, to
    itself only: the analysis must put all weight on that hop."""

    def __init__(self, hop: int, layers: int = 2) -> None:
        super().__init__()
        self.hop, self.layers = hop, layers

    def attention_maps(self, data):
        dense = DenseBatch.from_batch(data)
        a = (dense.shortest_paths() == self.hop).double()
        a = a / a.sum(-1, keepdim=True).clamp(min=1)
        return [a] * self.layers, dense.mask


def _batch():
    graphs = [nx.cycle_graph(6), nx.path_graph(4), nx.star_graph(4)]
    return Batch.from_data_list([Data(edge_index=from_networkx(g).edge_index,
                                      num_nodes=g.number_of_nodes()) for g in graphs])


@pytest.mark.parametrize("hop", [0, 1, 2])
def test_hop_weights_of_known_attention(hop):
    data = _batch()
    weights = attention_by_hop(NeighbourAttention(hop), [data, data], max_hops=3)
    assert weights.shape == (2, 6)
    # every node of these graphs has a node at distance `hop` … except the star's centre at 2
    nodes = 6 + 4 + 5
    having = nodes - (1 if hop == 2 else 0)
    expected = np.zeros(6)
    expected[hop] = having / nodes
    np.testing.assert_allclose(weights[0], expected)
    np.testing.assert_allclose(weights[1], expected)


def test_hop_bins():
    d = torch.tensor([[0, 1, 5, -1]])
    assert hop_bins(d, 2).tolist() == [[0, 1, 3, 4]]


def test_model_without_hook_is_a_clear_error():
    with pytest.raises(TypeError, match="attention_maps"):
        attention_by_hop(torch.nn.Linear(2, 2), [_batch()])


def test_analyze_command_on_a_trained_egt(tmp_path):
    out = tmp_path / "run"
    args = ["train", "--config", "src/graph_transformers/configs/csl_gt.yaml", "--out", str(out),
            "--set", "trainer.max_epochs=1", "trainer.enable_progress_bar=false",
            "model={name: egt, hidden_dim: 16, edge_hidden_dim: 4, num_layers: 2, "
            "num_heads: 2, use_edge_features: false, pe: lap}", "data.batch_size=30"]
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    args[2] = str(root / args[2])
    assert main(args) == 0
    assert main(["analyze", str(out), "--num-graphs", "2", "--max-hops", "4"]) == 0
    result = json.loads((out / "analysis/attention.json").read_text())
    assert result["model"] == "egt" and len(result["hop_weights"]) == 2
    assert len(result["hop_weights"]["layer_1"]) == 4 + 3
    assert len(result["samples"]) == 2 and len(result["samples"][0]["attention"]) == 2
    n = result["samples"][0]["num_nodes"]
    assert np.asarray(result["samples"][0]["attention"][0]).shape == (n, n)
    for name in ("attention_maps.png", "hop_weights.png"):
        assert (out / "analysis" / name).stat().st_size > 1000
    assert main(["analyze", str(tmp_path / "nothing")]) == 2


def _featured_batch():
    gen = torch.Generator().manual_seed(0)
    graphs = [nx.cycle_graph(6), nx.path_graph(5), nx.gnp_random_graph(9, 0.3, seed=3)]
    data = []
    for g in graphs:
        ei = from_networkx(g).edge_index
        n = g.number_of_nodes()
        data.append(Data(x=torch.randint(0, 5, (n,), generator=gen), edge_index=ei,
                         edge_attr=torch.randint(0, 3, (ei.size(1),), generator=gen),
                         num_nodes=n))
    return Batch.from_data_list(data)


def test_sparse_gt_attends_to_one_hop_only():
    """GT's attention is restricted to in-neighbours: all its weight is at hop 1."""
    from graph_transformers.models import GraphTransformer
    torch.manual_seed(0)
    model = GraphTransformer(16, 2, 2, 1, num_node_types=5, pe=None).eval()
    data = _featured_batch()
    w = attention_by_hop(model, [data], max_hops=4)
    has_neighbour = 6 + 5 + int((torch.bincount(data.edge_index[1][data.batch[data.edge_index[1]]
                                                                    == 2] - 11, minlength=9)
                                 > 0).sum())
    np.testing.assert_allclose(w[:, 1], has_neighbour / data.num_nodes, atol=1e-6)
    np.testing.assert_allclose(np.delete(w, 1, axis=1), 0.0, atol=1e-7)


@pytest.mark.parametrize("name", ["gps", "egt"])
def test_global_attention_spreads_over_hops(name):
    """Full softmax attention (GPS) gives each node total weight 1 over all hop bins; EGT's gates
    scale it below 1."""
    from graph_transformers.models import EGT, GPS
    torch.manual_seed(0)
    if name == "gps":
        model = GPS(16, 2, 2, 1, num_node_types=5, num_edge_types=3, mpnn="gine", pe=None,
                    attention="full").eval()
    else:
        model = EGT(16, 8, 2, 2, 1, num_node_types=5, num_edge_types=3, pe=None).eval()
    data = _featured_batch()
    w = attention_by_hop(model, [data], max_hops=4)
    total = w.sum(1)
    if name == "gps":
        np.testing.assert_allclose(total, 1.0, atol=1e-5)
    else:
        assert np.all(total < 1.0) and np.all(total > 0.0)
    assert np.all(w[:, 2:5].sum(1) > 0)  # weight beyond the neighbours


def test_plots_leave_the_matplotlib_backend_alone(tmp_path):
    """Library functions do not switch the caller's global backend (issue 14)."""
    import matplotlib
    import numpy as np

    from graph_transformers.analysis import plot_hop_weights
    before = matplotlib.get_backend()
    matplotlib.use("svg")
    try:
        plot_hop_weights(np.random.rand(2, 6), 3, tmp_path / "hops.png")
        assert matplotlib.get_backend() == "svg"
        assert (tmp_path / "hops.png").stat().st_size > 0
    finally:
        matplotlib.use(before)
