"""RWSE against direct matrix powers of the random-walk matrix D^-1 A."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from graph_transformers.data.registry import build_pre_transform
from graph_transformers.encodings import AddRWSE, random_walk_se
from graph_transformers.training.model_sections import EncodingsConfig


def _random_undirected(n, m, seed, isolated=()):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, m), generator=g)
    ei = ei[:, ei[0] != ei[1]]
    for v in isolated:
        ei = ei[:, (ei[0] != v) & (ei[1] != v)]
    ei = torch.unique(torch.cat([ei, ei.flip(0)], 1), dim=1)
    return ei


def _dense_rw(ei, n):
    a = np.zeros((n, n))
    a[ei[0].numpy(), ei[1].numpy()] = 1.0
    deg = a.sum(1)
    return a / np.clip(deg, 1, None)[:, None]


def test_rwse_matches_dense_matrix_powers():
    n = 30
    ei = _random_undirected(n, 70, seed=0, isolated=(7,))
    p = _dense_rw(ei, n)
    want = np.stack([np.diag(np.linalg.matrix_power(p, t)) for t in range(1, 11)], 1)
    got = random_walk_se(ei, n, 10)
    assert got.shape == (n, 10) and got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    assert torch.all(got[7] == 0)  # an isolated node never returns
    # a closed walk of odd length is impossible in a bipartite graph (a cycle of 6)
    ring = torch.tensor([[i, (i + 1) % 6] for i in range(6)]).T
    ring = torch.cat([ring, ring.flip(0)], 1)
    rw = random_walk_se(ring, 6, 4)
    assert torch.all(rw[:, 0] == 0) and torch.all(rw[:, 2] == 0)
    torch.testing.assert_close(rw[:, 1], torch.full((6,), 0.5))  # back in 2 steps w.p. 1/2


def test_rwse_sparse_path_on_a_larger_graph():
    n = 2100  # above PyG's dense threshold (2,000 nodes): sparse products
    ei = _random_undirected(n, 5000, seed=1)
    adj = sp.coo_matrix((np.ones(ei.size(1)), (ei[0].numpy(), ei[1].numpy())), shape=(n, n)).tocsr()
    deg = np.asarray(adj.sum(1)).ravel()
    p = sp.diags(1.0 / np.clip(deg, 1, None)) @ adj
    want, cur = [], sp.eye(n, format="csr")
    for _ in range(5):
        cur = cur @ p
        want.append(cur.diagonal())
    got = random_walk_se(ei, n, 5)
    np.testing.assert_allclose(got.numpy(), np.stack(want, 1), rtol=1e-5, atol=1e-6)


def test_transform_and_config_wiring():
    ei = _random_undirected(8, 12, seed=2)
    data = AddRWSE(5)(Data(edge_index=ei, num_nodes=8))
    assert data.rwse.shape == (8, 5)
    pre = build_pre_transform(EncodingsConfig(rwse={"walk_length": 3}))
    assert isinstance(pre, AddRWSE) and pre.walk_length == 3 and "walk_length=3" in repr(pre)
    with pytest.raises(ValueError, match="walk_length"):
        AddRWSE(0)
    with pytest.raises(ValueError, match="node ids"):
        random_walk_se(torch.tensor([[0], [5]]), 3, 2)
