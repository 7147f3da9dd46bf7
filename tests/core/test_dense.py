"""DenseBatch (the shared padded view) and size-bucketed batching."""
from __future__ import annotations

import networkx as nx
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import from_networkx

from graph_transformers.core.dense import (UNREACHABLE, DenseBatch, DenseBudgetError,
                                           check_dense_budget)
from graph_transformers.data.sampler import SizeBucketBatchSampler, padding_ratio


def _nx_batch(graphs):
    data = []
    for g in graphs:
        d = from_networkx(g)
        d.num_nodes = g.number_of_nodes()
        data.append(Data(edge_index=d.edge_index, num_nodes=d.num_nodes))
    return Batch.from_data_list(data)


def test_shortest_paths_match_networkx_including_disconnected_and_directed():
    graphs = [nx.gnp_random_graph(n, p, seed=s) for s, (n, p) in
              enumerate([(9, 0.15), (14, 0.12), (6, 0.5), (1, 0.0), (11, 0.08)])]
    graphs.append(nx.gnp_random_graph(10, 0.15, seed=7, directed=True))
    dense = DenseBatch.from_batch(_nx_batch(graphs))
    d = dense.shortest_paths()
    assert d.shape == (6, 14, 14)
    disconnected = 0
    for b, g in enumerate(graphs):
        n = g.number_of_nodes()
        sp = dict(nx.all_pairs_shortest_path_length(g))  # sp[j][i]: path j -> … -> i
        for i in range(n):
            for j in range(n):
                want = sp[j].get(i, UNREACHABLE)
                disconnected += want == UNREACHABLE
                assert int(d[b, i, j]) == want, (b, i, j)
        assert bool((d[b, n:] == UNREACHABLE).all()) and bool((d[b, :, n:] == UNREACHABLE).all())
    assert disconnected > 0
    capped = dense.shortest_paths(max_hops=2)
    assert bool(((d > 2) == (capped == 3)).all())
    assert bool(((d <= 2) & (d >= 0) == (capped <= 2) & (capped >= 0)).all())
    clipped = dense.clipped_distances(2)  # EGT's D^(k): unreachable -> k, padding 0
    real = dense.pair_mask
    assert bool((clipped[real & (d == UNREACHABLE)] == 2).all())
    assert bool((clipped[~real] == 0).all())


def test_dense_round_trips_and_pairs():
    g1 = Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=3)
    g2 = Data(edge_index=torch.tensor([[0, 4], [4, 0]]), num_nodes=5)
    batch = Batch.from_data_list([g1, g2])
    dense = DenseBatch.from_batch(batch)
    assert dense.mask.tolist() == [[True] * 3 + [False] * 2, [True] * 5]
    x = torch.arange(8.0).unsqueeze(-1)
    xd = dense.to_dense(x, fill=-1.0)
    assert xd.shape == (2, 5, 1) and xd[0, 3, 0] == -1 and xd[1, 4, 0] == 7
    torch.testing.assert_close(dense.to_sparse(xd), x)
    vals = torch.arange(1.0, 7.0).unsqueeze(-1)  # one value per edge
    pairs = dense.scatter_edges(vals, fill=torch.tensor([-5.0]))
    # edge j -> i lands at [b, i, j]: edge 0 -> 1 of g1 is at [0, 1, 0]
    assert pairs[0, 1, 0, 0] == 1 and pairs[0, 0, 1, 0] == 2 and pairs[1, 4, 0, 0] == 5
    assert pairs[0, 0, 0, 0] == -5
    torch.testing.assert_close(dense.gather_edges(pairs), vals)
    adj = dense.adjacency()
    assert adj[1].diagonal().all() and not adj[0].diagonal()[3:].any()
    assert adj[1, 0, 4] and adj[1, 4, 0] and not adj[1, 1, 2]


def test_to_dense_reuses_one_index_and_matches_to_dense_batch():
    """``to_dense`` builds its gather index once per view: a second call (another fill, another
    width, as a model's layers make) reads the same index and agrees with PyG's
    ``to_dense_batch``."""
    from torch_geometric.utils import to_dense_batch

    graphs = [Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=n) for n in (4, 1, 6)]
    batch = Batch.from_data_list(graphs)
    dense = DenseBatch.from_batch(batch)
    x = torch.randn(11, 3)
    first = dense.to_dense(x, fill=2.5)
    index = dense.dense_index
    assert index.shape == (3, 6) and index[1, 1:].eq(11).all()  # padding reads the fill row
    want, mask = to_dense_batch(x, batch.batch, fill_value=2.5)
    torch.testing.assert_close(first, want)
    assert torch.equal(dense.mask, mask)
    h = torch.randn(11, 2, 5)
    second = dense.to_dense(h)
    assert dense.dense_index is index  # built once
    torch.testing.assert_close(second, to_dense_batch(h, batch.batch)[0])


def test_from_batch_errors():
    bad = Data(edge_index=torch.tensor([[0], [5]]), num_nodes=3)
    with pytest.raises(ValueError, match="outside the batch"):
        DenseBatch.from_batch(bad)
    batch = Batch.from_data_list([Data(edge_index=torch.zeros(2, 0, dtype=torch.long),
                                       num_nodes=2)] * 2)
    batch.edge_index = torch.tensor([[0], [3]])
    with pytest.raises(ValueError, match="two different graphs"):
        DenseBatch.from_batch(batch)
    with pytest.raises(ValueError, match="max_num_nodes"):
        DenseBatch.from_batch(batch, max_num_nodes=1)


def test_budget_errors_name_the_graph_and_the_size():
    sizes = torch.tensor([10, 300, 20])
    assert check_dense_budget(sizes, 100.0, None) == 3 * 300 * 300 * 100
    with pytest.raises(DenseBudgetError, match=r"graph 1 of the batch has 300 nodes.*8\.6 MiB"):
        check_dense_budget(sizes, 100.0, 2 ** 20)
    with pytest.raises(DenseBudgetError, match=r"batch of 3 graphs padded to 302 nodes"):
        check_dense_budget(sizes, 100.0, 302 ** 2 * 100 * 2, extra_nodes=2)


def test_bucketing_sampler_covers_every_graph_once_and_cuts_padding():
    gen = torch.Generator().manual_seed(0)
    sizes = torch.randint(9, 38, (1000,), generator=gen).tolist()
    sampler = SizeBucketBatchSampler(sizes, batch_size=32, window=8, seed=1)
    batches = list(sampler)
    assert len(batches) == len(sampler)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(1000))
    random_batches = torch.randperm(1000, generator=gen).split(32)
    bucketed, plain = padding_ratio(sizes, batches), padding_ratio(sizes, random_batches)
    assert bucketed < 1.15 < 1.5 < plain
    assert list(sampler) != batches  # a new draw each epoch
    sampler.set_epoch(0)
    assert list(sampler) == batches  # reproducible from the seed
    fixed = SizeBucketBatchSampler(sizes, 32, window=8, shuffle=False, drop_last=True)
    assert all(len(b) == 32 for b in fixed) and len(list(fixed)) == len(fixed)
