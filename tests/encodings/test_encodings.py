"""LapPE and WL-PE: eigen-equations, padding, isolated nodes, disconnected graphs, sign flips."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.utils import from_networkx

from graph_transformers.encodings import (AddLaplacianPE, AddWLPE, laplacian_pe,
                                          normalized_laplacian, random_sign_flip, wl_role_ids)


def _edge_index(g: nx.Graph) -> torch.Tensor:
    return from_networkx(nx.convert_node_labels_to_integers(g)).edge_index


def _dense_laplacian(g: nx.Graph) -> np.ndarray:
    a = nx.to_numpy_array(nx.convert_node_labels_to_integers(g))
    deg = a.sum(1)
    inv = 1.0 / np.sqrt(np.clip(deg, 1, None))
    return np.eye(len(a)) - inv[:, None] * a * inv[None, :]


def test_laplacian_matches_definition():
    g = nx.gnp_random_graph(15, 0.3, seed=1)
    lap = normalized_laplacian(_edge_index(g), 15).toarray()
    np.testing.assert_allclose(lap, _dense_laplacian(g), atol=1e-12)


def test_lappe_are_eigenvectors_of_smallest_nontrivial_eigenvalues():
    g = nx.connected_watts_strogatz_graph(20, 4, 0.3, seed=0)
    pe = laplacian_pe(_edge_index(g), 20, k=5).double().numpy()
    lap = _dense_laplacian(g)
    vals = np.linalg.eigvalsh(lap)
    expected = vals[1:6]  # vals[0] = 0 is the trivial eigenvalue of a connected graph
    for c in range(5):
        v = pe[:, c]
        lam = v @ lap @ v
        np.testing.assert_allclose(lap @ v, lam * v, atol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(v), 1.0, atol=1e-5)
        np.testing.assert_allclose(lam, expected[c], atol=1e-5)


def test_lappe_zero_pads_small_graphs():
    g = nx.path_graph(4)  # 3 non-trivial eigenvectors
    pe = laplacian_pe(_edge_index(g), 4, k=8)
    assert pe.shape == (4, 8)
    assert torch.all(pe[:, 3:] == 0)
    assert torch.all(pe[:, :3].norm(dim=0) > 0.99)


def test_lappe_disconnected_and_isolated_nodes():
    g = nx.disjoint_union(nx.cycle_graph(6), nx.path_graph(5))
    g.add_node(11)  # isolated
    ei = _edge_index(g)
    pe = laplacian_pe(ei, 12, k=6)
    assert torch.isfinite(pe).all()
    lap = _dense_laplacian(g)
    # skipped: the two component indicators (eigenvalue 0); kept eigenvalues are all > 0
    for c in range(6):
        v = pe[:, c].double().numpy()
        lam = v @ lap @ v
        assert lam > 1e-6
        np.testing.assert_allclose(lap @ v, lam * v, atol=1e-5)


def test_lappe_sparse_solver_agrees_with_dense(monkeypatch):
    import graph_transformers.encodings.lappe as lappe
    g = nx.connected_watts_strogatz_graph(300, 6, 0.2, seed=3)
    ei = _edge_index(g)
    dense = laplacian_pe(ei, 300, k=4)
    monkeypatch.setattr(lappe, "DENSE_EIGEN_MAX_NODES", 10)
    sparse = laplacian_pe(ei, 300, k=4)
    # same eigenvectors up to sign (the convention fixes it) for non-degenerate eigenvalues
    torch.testing.assert_close(sparse, dense, atol=1e-3, rtol=0)


def test_lappe_sparse_solver_with_many_components(monkeypatch):
    import graph_transformers.encodings.lappe as lappe
    # 30 disjoint triangles + a long path: the null space has 31 vectors
    g = nx.disjoint_union_all([nx.cycle_graph(3) for _ in range(30)] + [nx.path_graph(60)])
    n = g.number_of_nodes()
    ei = _edge_index(g)
    monkeypatch.setattr(lappe, "DENSE_EIGEN_MAX_NODES", 10)
    pe = laplacian_pe(ei, n, k=4)
    lap = _dense_laplacian(g)
    for c in range(4):
        v = pe[:, c].double().numpy()
        lam = v @ lap @ v
        assert lam > 1e-6 and np.linalg.norm(v) > 0.99
        np.testing.assert_allclose(lap @ v, lam * v, atol=1e-4)


def test_lappe_rejects_bad_input():
    with pytest.raises(ValueError, match="k must be"):
        laplacian_pe(torch.zeros(2, 0, dtype=torch.long), 3, k=0)
    with pytest.raises(ValueError, match="node ids"):
        laplacian_pe(torch.tensor([[0, 5], [5, 0]]), 3, k=2)


def test_sign_flip_per_batch_and_per_graph():
    pe = torch.ones(6, 16)
    batch = torch.tensor([0, 0, 0, 1, 1, 1])
    gen = torch.Generator().manual_seed(0)
    flipped = random_sign_flip(pe, batch, per_graph=False, generator=gen)
    assert torch.all(flipped.abs() == 1)
    assert torch.all(flipped == flipped[0])  # one sign per column for the whole batch
    assert (flipped[0] < 0).any() and (flipped[0] > 0).any()
    per_graph = random_sign_flip(pe, batch, per_graph=True, generator=gen)
    assert torch.all(per_graph[:3] == per_graph[0]) and torch.all(per_graph[3:] == per_graph[3])
    assert not torch.equal(per_graph[0], per_graph[3])


def test_wl_role_ids_are_wl_classes():
    g = nx.path_graph(5)  # roles: ends, next-to-ends, centre
    ids = wl_role_ids(_edge_index(g), 5, iterations=3)
    assert ids[0] == ids[4] and ids[1] == ids[3]
    assert len({int(ids[0]), int(ids[1]), int(ids[2])}) == 3
    # a regular graph: 1-WL cannot split it
    cyc = wl_role_ids(_edge_index(nx.cycle_graph(7)), 7, iterations=3)
    assert torch.all(cyc == 0)
    # relabelling the nodes permutes the ids the same way
    perm = np.random.default_rng(0).permutation(5)
    ids_h = wl_role_ids(torch.as_tensor(perm)[_edge_index(g)], 5, iterations=3)
    assert all(ids_h[perm[i]] == ids[i] for i in range(5))


def test_transforms_store_attributes():
    data = from_networkx(nx.cycle_graph(8))
    data = AddWLPE(2)(AddLaplacianPE(3)(data))
    assert data.lap_pe.shape == (8, 3) and data.wl_pe.shape == (8,)
    assert "k=3" in repr(AddLaplacianPE(3))


@pytest.mark.slow
def test_lappe_sparse_solver_gives_the_same_bits_in_every_process(tmp_path):
    """Regression: without a start vector ARPACK drew its own, so a graph above
    ``DENSE_EIGEN_MAX_NODES`` got encodings differing in their last bits from one process to
    the next (1e-9 on the 100,000-node synthetic graph: runs of the same config trained apart).
    Two fresh processes, same bits (they run the same code on the same machine)."""
    import subprocess
    import sys
    code = ("import sys, torch, networkx as nx\n"
            "from graph_transformers.encodings.lappe import laplacian_pe\n"
            "g = nx.connected_watts_strogatz_graph(2500, 6, 0.2, seed=3)\n"
            "ei = torch.tensor(list(g.edges)).T\n"
            "torch.save(laplacian_pe(torch.cat([ei, ei.flip(0)], 1), 2500, 8), sys.argv[1])\n")
    outs = [tmp_path / f"pe{i}.pt" for i in range(2)]
    for out in outs:
        subprocess.run([sys.executable, "-c", code, str(out)], check=True, timeout=300)
    first, second = (torch.load(o) for o in outs)
    assert first.shape == (2500, 8) and torch.equal(first, second)
