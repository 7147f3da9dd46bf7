"""Neighbour sampling (the pure-PyTorch sampler behind PyG's NodeLoader) and node classification
on Cora by sampled mini-batches; the synthetic large graph."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph

from graph_transformers.data.sampling import UniformNeighborSampler, neighbor_loader
from graph_transformers.datasets.synthetic.large_graph import make_sbm_graph
from graph_transformers.training.config import build_config
from graph_transformers.training.loaders import SeedNodeMask, make_loader


def _graph(n=60, m=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, m), generator=g)
    return Data(x=torch.randn(n, 4, generator=g), edge_index=ei,
                edge_attr=torch.arange(m).float().unsqueeze(1), num_nodes=n)


def test_sampled_edges_exist_and_respect_fanout():
    data = _graph()
    seeds = torch.tensor([3, 17, 42])
    loader = neighbor_loader(data, [4, 2], batch_size=3, input_nodes=seeds)
    batch = next(iter(loader))
    assert batch.batch_size == 3 and torch.equal(batch.n_id[:3], seeds)
    # every sampled edge is an edge of the graph, with its own features
    gsrc, gdst = batch.n_id[batch.edge_index[0]], batch.n_id[batch.edge_index[1]]
    torch.testing.assert_close(torch.stack([gsrc, gdst]), data.edge_index[:, batch.e_id])
    torch.testing.assert_close(batch.edge_attr.view(-1), batch.e_id.float())
    # fan-out: a seed keeps at most 4 incoming edges (all of them when it has fewer)
    in_deg = torch.bincount(data.edge_index[1], minlength=60)
    for i, s in enumerate(seeds.tolist()):
        kept = int((batch.edge_index[1] == i).sum())
        assert kept == min(4, int(in_deg[s]))
    assert batch.num_sampled_nodes[0] == 3 and len(batch.num_sampled_edges) == 2


def test_full_fanout_gives_the_k_hop_neighbourhood():
    data = _graph(seed=1)
    seeds = torch.tensor([0, 5])
    sampler = UniformNeighborSampler(data.edge_index, 60, [-1, -1])
    from torch_geometric.sampler import NodeSamplerInput
    out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=seeds))
    subset, _, _, _ = k_hop_subgraph(seeds, 2, data.edge_index, num_nodes=60)
    assert set(out.node.tolist()) == set(subset.tolist())
    assert out.node.unique().numel() == out.node.numel()


def test_sampling_is_uniform():
    # node 0 has 10 in-neighbours; with fan-out 1 each is drawn about equally often
    ei = torch.stack([torch.arange(1, 11), torch.zeros(10, dtype=torch.long)])
    sampler = UniformNeighborSampler(ei, 11, [1], generator=torch.Generator().manual_seed(0))
    from torch_geometric.sampler import NodeSamplerInput
    counts = torch.zeros(11)
    for _ in range(1000):
        out = sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([0])))
        counts[out.node[1]] += 1
    assert counts[0] == 0 and counts[1:].min() > 60 and counts[1:].max() < 140


def test_cora_node_classification_by_neighbour_sampling(data_dir, monkeypatch):
    """GPS with Performer attention trains on Cora mini-batches; accuracy beats chance."""
    import lightning as L

    from graph_transformers.data.registry import get_spec, load_splits
    from graph_transformers.training.module import GraphTaskModule, evaluate
    from graph_transformers.training.build import make_model
    torch.manual_seed(0)
    cfg = build_config({
        "model": {"name": "gps", "hidden_dim": 32, "num_layers": 1, "num_heads": 2,
                  "mpnn": "gcn", "attention": "performer", "use_edge_features": False,
                  "pe": None, "norm": "layer", "dropout": 0.1, "readout": "mean"},
        "data": {"name": "cora", "data_dir": str(data_dir), "batch_size": 64,
                 "num_neighbors": [5, 5]},
        "optim": {"lr": 1e-2, "scheduler": None}})
    spec = get_spec("cora")
    splits = load_splits(cfg.data, cfg.encodings)
    loaders = {s: make_loader(cfg, ds, s) for s, ds in splits.items()}
    batch = next(iter(loaders["train"]))
    assert int(batch.node_mask.sum()) == 64 and bool(batch.node_mask[:64].all())
    assert batch.num_nodes > 64  # neighbours came along
    model = make_model(cfg, spec, splits["train"])
    module = GraphTaskModule(model, spec, cfg.optim)
    trainer = L.Trainer(max_epochs=20, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, loaders["train"])
    result = evaluate(model, spec, make_loader(cfg, splits["test"], "test"))
    assert result["accuracy"] > 0.5, result  # 7 classes: chance is ~0.3 (largest class)


def test_neighbour_sampling_needs_a_single_graph_with_masks():
    cfg = build_config({"model": {"name": "gt", "pe": None}, "data": {"name": "zinc",
                                                                      "num_neighbors": [5]}})
    with pytest.raises(ValueError, match="single-graph node task"):
        make_loader(cfg, [Data(x=torch.zeros(2, 1)), Data(x=torch.zeros(2, 1))], "train")


def test_synthetic_large_graph_structure():
    data = make_sbm_graph(5000, avg_degree=10, seed=3)
    assert data.x.shape == (5000, 32) and data.y.max() < 10
    deg = data.edge_index.size(1) / 5000
    assert 8.5 < deg < 10.5
    same = (data.y[data.edge_index[0]] == data.y[data.edge_index[1]]).float().mean()
    assert 0.6 < same < 0.8  # p_intra = 0.7 plus chance hits
    masks = data.train_mask.int() + data.val_mask.int() + data.test_mask.int()
    assert torch.all(masks == 1) and int(data.train_mask.sum()) == 3000
    again = make_sbm_graph(5000, avg_degree=10, seed=3)
    assert torch.equal(again.edge_index, data.edge_index)
    seed_mask = SeedNodeMask()(Data(x=torch.zeros(5, 1), batch_size=2, num_nodes=5)).node_mask
    assert seed_mask.tolist() == [True, True, False, False, False]
