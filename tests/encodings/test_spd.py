"""Shortest-path distance ids and pair edge types (GRPE §Implementation details), cached with the
dataset, and their placement into the dense view."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

from graph_transformers.data.cache import pre_transform_key
from graph_transformers.core.dense import DenseBatch
from graph_transformers.data.registry import build_pre_transform
from graph_transformers.encodings import (AddShortestPaths, pair_edge_types,
                                          shortest_path_distances, spd_ids)
from graph_transformers.encodings.spd import PAIR_NO_EDGE, PAIR_SELF
from graph_transformers.training.model_sections import EncodingsConfig


def _random_graph(n, p, seed, components=1):
    """An undirected random graph as ``edge_index`` (both directions), possibly disconnected."""
    g = nx.disjoint_union_all([nx.gnp_random_graph(n, p, seed=seed + c) for c in
                               range(components)])
    edges = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2).T
    ei = torch.from_numpy(np.concatenate([edges, edges[::-1]], axis=1))
    return g, ei


@pytest.mark.parametrize("seed", range(6))
def test_distances_match_networkx(seed):
    n = 6 + 3 * seed
    g, ei = _random_graph(n, 0.15 + 0.03 * seed, seed, components=1 + seed % 3)
    N = g.number_of_nodes()
    dist = shortest_path_distances(ei, N)
    ref = dict(nx.all_pairs_shortest_path_length(g))
    for i in range(N):
        for j in range(N):
            expected = ref[j].get(i, np.inf)
            assert dist[i, j] == expected
    L = 2
    ids = spd_ids(ei, N, L)
    assert ids.dtype == torch.uint8
    expect = np.where(np.isinf(dist), L + 2, np.minimum(np.nan_to_num(dist, posinf=0), L + 1))
    assert np.array_equal(ids.numpy(), expect)
    assert (ids == L + 2).any() == (nx.number_connected_components(g) > 1)


def test_directed_orientation():
    # 0 -> 1 -> 2 only: node 2 is reached from 0 in two hops; row i = target, column j = source
    ei = torch.tensor([[0, 1], [1, 2]])
    d = shortest_path_distances(ei, 3)
    assert d[2, 0] == 2 and d[1, 0] == 1 and np.isinf(d[0, 2])
    dense = DenseBatch.from_batch(Data(edge_index=ei, num_nodes=3))
    hop = dense.shortest_paths()[0]
    assert hop[2, 0] == 2 and hop[0, 2] == -1  # the same orientation as DenseBatch's BFS


def test_pair_edge_types():
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    types = pair_edge_types(ei, 4, torch.tensor([3, 3, 1, 1]))
    assert types.shape == (4, 4, 1) and types.dtype == torch.int16
    t = types[..., 0]
    assert t[1, 0] == 3 and t[0, 1] == 3 and t[2, 1] == 1
    assert (t.diagonal() == PAIR_SELF).all()
    assert t[0, 2] == PAIR_NO_EDGE and (t[3, :3] == PAIR_NO_EDGE).all()
    multi = pair_edge_types(ei, 3, torch.tensor([[1, 0], [1, 0], [2, 5], [2, 5]]))
    assert multi.shape == (3, 3, 2) and multi[2, 1].tolist() == [2, 5]
    presence = pair_edge_types(ei, 3, torch.rand(4, 2))  # continuous features: presence only
    assert presence[1, 0, 0] == 0 and presence[0, 2, 0] == PAIR_NO_EDGE
    with pytest.raises(ValueError, match="one row per edge"):
        pair_edge_types(ei, 3, torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="node ids"):
        pair_edge_types(ei, 2)
    with pytest.raises(ValueError, match="edge types"):
        pair_edge_types(ei, 3, torch.tensor([-1, 0, 0, 0]))


def test_transform_batches_and_places_back():
    graphs = []
    for seed, n in enumerate([5, 3, 8]):
        g, ei = _random_graph(n, 0.4, seed)
        ea = torch.randint(0, 4, (ei.size(1),))
        graphs.append(AddShortestPaths(3)(Data(x=torch.zeros(n, 1), edge_index=ei,
                                               edge_attr=ea, num_nodes=n)))
    for d in graphs:
        assert d.spd.shape == (d.num_nodes ** 2,) and d.pair_edge.shape == (d.num_nodes ** 2, 1)
    batch = Batch.from_data_list(graphs)
    dense = DenseBatch.from_batch(batch)
    spd = dense.place_pairs(batch.spd, fill=99)
    pe = dense.place_pairs(batch.pair_edge, fill=-9)
    assert spd.shape == (3, 8, 8) and pe.shape == (3, 8, 8, 1)
    for b, d in enumerate(graphs):
        n = d.num_nodes
        assert torch.equal(spd[b, :n, :n], spd_ids(d.edge_index, n, 3))
        assert torch.equal(pe[b, :n, :n], pair_edge_types(d.edge_index, n, d.edge_attr))
        assert (spd[b, n:] == 99).all() and (spd[b, :, n:] == 99).all()
    with pytest.raises(ValueError, match="Σ n²"):
        dense.place_pairs(batch.spd[:-1])


def test_cache_key_follows_max_distance():
    keys = {pre_transform_key(build_pre_transform(EncodingsConfig(spd={"max_distance": L})))
            for L in (3, 5)}
    assert len(keys) == 2
    assert repr(build_pre_transform(EncodingsConfig(spd={"max_distance": 5}))) == \
        "AddShortestPaths(max_distance=5)"


def test_bad_arguments():
    ei = torch.tensor([[0], [1]])
    with pytest.raises(ValueError, match="max_distance"):
        spd_ids(ei, 2, 0)
    with pytest.raises(ValueError, match="max_distance"):
        AddShortestPaths(300)
    with pytest.raises(ValueError, match=r"\[2, num_edges\]"):
        shortest_path_distances(torch.zeros(3, 2, dtype=torch.long), 2)
    assert spd_ids(torch.zeros(2, 0, dtype=torch.long), 0, 5).shape == (0, 0)
