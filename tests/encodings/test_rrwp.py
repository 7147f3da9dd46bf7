"""GRIT's relative random-walk probabilities (``encodings.rrwp``): the matrix powers against an
explicit enumeration of walks, isolated nodes, disconnected and directed graphs, multi-edges,
permutation equivariance, the stored layout, the pairs computed per batch
(``cache_pairs: false``) against the cached ones, the budget check and the registry / config
wiring."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data

from graph_transformers.core.dense import DenseBudgetError, host_num_nodes
from graph_transformers.encodings import AddRRWP, batch_rrwp, relative_random_walk_probabilities
from graph_transformers.models.utils import full_graph_edge_index


def walk_probabilities(edge_index: torch.Tensor, n: int, K: int) -> torch.Tensor:
    """Naive reference: ``P[i, j, k]`` = Σ over the walks ``i = u_0 → u_1 → … → u_k = j`` of the
    product of ``1 / outdeg(u_t)``, each walk enumerated step by step along the edge list (an
    edge listed twice is two ways to step; a node without outgoing edges ends its walks)."""
    out_edges = [[] for _ in range(n)]
    for u, v in edge_index.t().tolist():
        out_edges[u].append(v)
    P = torch.zeros(n, n, K, dtype=torch.float64)

    def walk(start: int, node: int, step: int, prob: float) -> None:
        P[start, node, step] += prob
        if step + 1 == K or not out_edges[node]:
            return
        for nxt in out_edges[node]:
            walk(start, nxt, step + 1, prob / len(out_edges[node]))

    for i in range(n):
        walk(i, i, 0, 1.0)
    return P


def _undirected(pairs, n):
    ei = torch.tensor(pairs, dtype=torch.long).t()
    return torch.cat([ei, ei.flip(0)], 1), n


GRAPHS = {
    "triangle_tail": _undirected([(0, 1), (1, 2), (2, 0), (2, 3)], 4),
    "two_components_and_isolated": _undirected([(0, 1), (1, 2), (3, 4)], 6),  # node 5 isolated
    "directed_with_sink": (torch.tensor([[0, 1, 1, 2, 3], [1, 2, 3, 0, 4]]), 5),  # 4: no out-edge
    "multi_edge_and_self_loop": (torch.tensor([[0, 0, 0, 1, 1, 2], [1, 1, 2, 0, 1, 0]]), 3),
    "single_node": (torch.zeros(2, 0, dtype=torch.long), 1),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_matrix_powers_equal_the_enumerated_walks(name):
    edge_index, n = GRAPHS[name]
    K = 6
    got = relative_random_walk_probabilities(edge_index, n, K)
    assert got.shape == (n, n, K) and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), walk_probabilities(edge_index, n, K),
                               rtol=1e-6, atol=1e-7)


def test_conventions_identity_isolated_nodes_and_components():
    edge_index, n = GRAPHS["two_components_and_isolated"]
    P = relative_random_walk_probabilities(edge_index, n, 5)
    torch.testing.assert_close(P[..., 0], torch.eye(n))                      # k = 0: identity
    assert torch.equal(P[5, 5], torch.tensor([1.0, 0, 0, 0, 0]))            # isolated node
    assert torch.equal(P[5, :5], torch.zeros(5, 5)) and torch.equal(P[:5, 5], torch.zeros(5, 5))
    assert torch.equal(P[:3, 3:5], torch.zeros(3, 2, 5))                    # other component
    # rows of M are distributions: every walk of a node with out-edges is somewhere
    torch.testing.assert_close(P[:5, :, 1:].sum(1), torch.ones(5, 4))
    # directed: P[i, j] follows edge directions (walks leave i along edge_index[0] -> [1])
    d_edges, dn = GRAPHS["directed_with_sink"]
    D = relative_random_walk_probabilities(d_edges, dn, 3)
    assert D[0, 1, 1] == 1.0 and D[1, 0, 1] == 0.0
    assert torch.equal(D[4, :, 1:], torch.zeros(dn, 2))                     # a sink stops


def test_permutation_equivariance():
    edge_index, n = GRAPHS["triangle_tail"]
    perm = torch.tensor([2, 0, 3, 1])       # new id of old node u is perm[u]
    P = relative_random_walk_probabilities(edge_index, n, 7)
    Pp = relative_random_walk_probabilities(perm[edge_index], n, 7)
    inv = torch.argsort(perm)               # old id of new node
    torch.testing.assert_close(Pp, P[inv][:, inv])


def test_transform_stores_diagonal_and_flattened_pairs_in_batch_order():
    graphs = []
    for name in ("triangle_tail", "two_components_and_isolated", "single_node"):
        edge_index, n = GRAPHS[name]
        graphs.append(AddRRWP(4)(Data(edge_index=edge_index, num_nodes=n)))
    for g in graphs:
        n = g.num_nodes
        P = relative_random_walk_probabilities(g.edge_index, n, 4)
        assert torch.equal(g.rrwp, P[torch.arange(n), torch.arange(n)])
        assert torch.equal(g.rrwp_pair, P.reshape(n * n, 4))                 # k = i·n + j
    batch = Batch.from_data_list(graphs)
    assert batch.rrwp.shape == (4 + 6 + 1, 4) and batch.rrwp_pair.shape == (16 + 36 + 1, 4)
    # the pairs of the batch are those of full_graph_edge_index(self_loops=True), in order
    index = full_graph_edge_index(batch.batch, self_loops=True)
    for row, (j, i) in enumerate(index.t().tolist()):
        g = int(batch.batch[i])
        off = int(batch.ptr[g])
        P = relative_random_walk_probabilities(graphs[g].edge_index, graphs[g].num_nodes, 4)
        assert torch.equal(batch.rrwp_pair[row], P[i - off, j - off])
    assert repr(AddRRWP(21)) == "AddRRWP(walk_length=21)"


def _random_graph(gen: torch.Generator, n: int) -> Data:
    m = int(torch.randint(0, 3 * n, (), generator=gen))
    edge_index = torch.randint(0, n, (2, m), generator=gen)  # directed, multi-edges, self-loops
    return Data(edge_index=edge_index, num_nodes=n)


def test_batch_rrwp_equals_the_cached_pairs():
    """The pairs computed per batch on the model's device (``cache_pairs: false``) equal the
    cached ones: on the walk-enumeration graphs and on random directed multigraphs of unequal
    sizes, over all pairs and over a subset of them."""
    gen = torch.Generator().manual_seed(0)
    K = 6
    graphs = [Data(edge_index=ei, num_nodes=n) for ei, n in GRAPHS.values()]
    graphs += [_random_graph(gen, int(torch.randint(1, 15, (), generator=gen))) for _ in range(8)]
    cached = Batch.from_data_list([AddRRWP(K)(g.clone()) for g in graphs])
    bare = Batch.from_data_list([AddRRWP(K, cache_pairs=False)(g.clone()) for g in graphs])
    assert "rrwp_pair" not in bare and torch.equal(bare.rrwp, cached.rrwp)
    sizes = host_num_nodes(bare)
    index = full_graph_edge_index(bare.batch, self_loops=True, host_sizes=sizes)
    node, pair = batch_rrwp(bare.edge_index, bare.batch, sizes, K, index)
    assert node.dtype == pair.dtype == torch.float32
    torch.testing.assert_close(node, cached.rrwp, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(pair, cached.rrwp_pair, rtol=1e-6, atol=1e-7)
    rows = torch.randperm(index.size(1), generator=gen)[:50]          # any pair list
    _, some = batch_rrwp(bare.edge_index, bare.batch, sizes, K, index[:, rows])
    torch.testing.assert_close(some, cached.rrwp_pair[rows], rtol=1e-6, atol=1e-7)
    _, only_identity = batch_rrwp(bare.edge_index, bare.batch, sizes, 1, index)
    assert torch.equal(only_identity[:, 0], (index[0] == index[1]).float())
    with pytest.raises(ValueError, match="walk_length must be >= 1"):
        batch_rrwp(bare.edge_index, bare.batch, sizes, 0, index)


def test_budget_and_argument_errors():
    with pytest.raises(DenseBudgetError, match=r"RRWP over all node pairs .* graphs above ≈"):
        AddRRWP(21, budget_bytes=1e6)(Data(edge_index=torch.zeros(2, 0, dtype=torch.long),
                                           num_nodes=200))
    with pytest.raises(ValueError, match="walk_length must be >= 1"):
        AddRRWP(0)
    with pytest.raises(ValueError, match="node ids in"):
        relative_random_walk_probabilities(torch.tensor([[0], [3]]), 2, 3)


def test_registry_and_config_section():
    from graph_transformers.data.registry import build_pre_transform
    from graph_transformers.training.config import build_config
    from graph_transformers.training.model_sections import EncodingsConfig
    pre = build_pre_transform(EncodingsConfig(rrwp={"walk_length": 8}))
    assert repr(pre) == "AddRRWP(walk_length=8)" and pre.cache_pairs
    pre = build_pre_transform(EncodingsConfig(rrwp={"walk_length": 8, "cache_pairs": False}))
    assert repr(pre) == "AddRRWP(walk_length=8, cache_pairs=False)" and not pre.cache_pairs
    assert EncodingsConfig(rrwp={}).rrwp.walk_length == 21
    cfg = build_config({"model": {"name": "grit"}, "encodings": {"rrwp": {}}})
    assert cfg.model.name == "grit"
    with pytest.raises(ValueError, match="needs encodings.rrwp"):
        build_config({"model": {"name": "grit"}})
