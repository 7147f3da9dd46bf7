"""Tests of the generated TSP edge-classification benchmark
(graph_transformers.datasets.synthetic.tsp), its LKH solver
(graph_transformers.datasets.synthetic.tsp_solver) and its metric
(training.metrics.f1_positive).

The solver is checked against an exact Held-Karp dynamic program on small instances; the k-NN
graphs and labels against brute force. Tests that solve whole splits shrink the instance size
range (``TSP_MAX_NODES``) so that every instance solves in a few hundredths of a second.
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("elkai")

import graph_transformers.datasets.synthetic.tsp as tsp  # noqa: E402
from graph_transformers.datasets.synthetic.tsp import (  # noqa: E402
    TSP,
    TSP_MAX_NODES,
    TSP_MIN_NODES,
    generate_tsp,
    solve_split_tours,
    tsp_graph,
    tsp_instance,
)
from graph_transformers.datasets.synthetic.tsp_solver import (  # noqa: E402
    check_coords,
    distance_matrix,
    solve_tour,
    tour_length,
)
from graph_transformers.training.metrics import f1_positive  # noqa: E402

_HELD_KARP_MAX_NODES = 16


def held_karp(coords) -> tuple[np.ndarray, float]:
    """An exact optimal tour by the Held-Karp dynamic program (checks the LKH solver).

    ``cost[S, j]`` is the length of the shortest path that starts at node 0, visits exactly the
    nodes of ``S`` (a subset of ``1..n-1``) and ends at ``j`` in ``S``. Subsets are processed by
    size, all subsets of one size at once (vectorized NumPy): ``O(2^n n^2)`` time,
    ``O(2^n n)`` memory.

    Args:
        coords: ``[n, 2]`` coordinates with ``1 <= n <= 16``.

    Returns:
        ``(tour, length)``: an optimal tour (int64 permutation starting at node 0) and its
        Euclidean length.

    Raises:
        ValueError: for malformed coordinates or ``n > 16``.
    """
    c = check_coords(coords)
    n = c.shape[0]
    if n > _HELD_KARP_MAX_NODES:
        raise ValueError(f"held_karp is exponential; use at most {_HELD_KARP_MAX_NODES} nodes, "
                         f"got {n}")
    if n <= 3:
        t = np.arange(n, dtype=np.int64)
        return t, tour_length(c, t)
    d = distance_matrix(c)
    m = n - 1  # nodes 1..n-1 are bits 0..m-1
    full = 1 << m
    bit = 1 << np.arange(m)
    member = (np.arange(full)[:, None] & bit[None, :]) != 0  # [2^m, m]
    size = member.sum(1)
    cost = np.full((full, m), np.inf)
    parent = np.full((full, m), -1, dtype=np.int64)
    cost[bit, np.arange(m)] = d[0, 1:]
    inner = d[1:, 1:]  # inner[k, j] = d(k + 1, j + 1)
    for s in range(2, m + 1):
        subsets = np.nonzero(size == s)[0]
        prev = subsets[:, None] ^ bit[None, :]  # [S, j]: subset without j
        cand = cost[prev] + inner.T[None, :, :]  # [S, j, k]: path to k, then k -> j
        best = cand.argmin(2)
        val = np.take_along_axis(cand, best[:, :, None], 2)[:, :, 0]
        inside = member[subsets]
        cost[subsets] = np.where(inside, val, np.inf)
        parent[subsets] = np.where(inside, best, -1)
    closing = cost[full - 1] + d[1:, 0]
    j = int(closing.argmin())
    length = float(closing[j])
    order, subset = [], full - 1
    while j >= 0:
        order.append(j + 1)
        prev_j = int(parent[subset, j])
        subset ^= 1 << j
        j = prev_j if subset else -1
    return np.array([0] + order[::-1], dtype=np.int64), length


@pytest.fixture
def small_instances(monkeypatch):
    """Instances of 50..60 nodes instead of 50..500 (same streams, fast to solve)."""
    monkeypatch.setattr(tsp, "TSP_MAX_NODES", 60)


@pytest.fixture
def count_solves(monkeypatch):
    """Counts calls of the solver (in-process runs only, i.e. ``num_workers=1``)."""
    calls = []
    real = tsp.solve_tour

    def counting(coords):
        calls.append(len(coords))
        return real(coords)

    monkeypatch.setattr(tsp, "solve_tour", counting)
    return calls


def _is_permutation(t, n):
    return t.shape == (n,) and t.dtype == np.int64 and np.array_equal(np.sort(t), np.arange(n))


def _brute_force_length(coords):
    n = coords.shape[0]
    return min(tour_length(coords, np.array((0,) + p)) for p in itertools.permutations(range(1, n)))


# --------------------------------------------------------------------------------------------
# Tours
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 50, 120])
def test_solve_tour_returns_permutation(n):
    coords = np.random.default_rng(n).random((n, 2))
    assert _is_permutation(solve_tour(coords), n)
    assert _is_permutation(solve_tour(torch.from_numpy(coords)), n)


def test_solve_tour_degenerate_points():
    same = np.full((6, 2), 0.3)
    assert _is_permutation(solve_tour(same), 6)
    dup = np.random.default_rng(0).random((20, 2)).repeat(2, axis=0)  # every point twice
    t = solve_tour(dup)
    assert _is_permutation(t, 40)
    # an optimal tour visits the two copies of a point consecutively: length = that of the
    # 20 distinct points
    assert tour_length(dup, t) == pytest.approx(tour_length(dup[::2], solve_tour(dup[::2])))


@pytest.mark.parametrize("bad", [np.zeros((5, 3)), np.zeros(5), np.zeros((0, 2)),
                                 np.array([[0.0, 0.0], [np.nan, 1.0], [1.0, 1.0], [0.5, 0.2]])])
def test_solve_tour_rejects_bad_coords(bad):
    with pytest.raises(ValueError):
        solve_tour(bad)


def test_solve_tour_rejects_invalid_solver_output(monkeypatch):
    import elkai

    class Broken:
        def __init__(self, cities):
            self.n = len(cities)

        def solve_tsp(self, runs=1):
            return [0] + list(range(self.n - 1)) + [0]  # node 0 twice, last node missing

    monkeypatch.setattr(elkai, "Coordinates2D", Broken)
    with pytest.raises(RuntimeError, match="invalid tour"):
        solve_tour(np.random.default_rng(0).random((8, 2)))


def test_solve_tour_runs_argument():
    coords = np.random.default_rng(4).random((60, 2))
    assert _is_permutation(solve_tour(coords, runs=2), 60)
    with pytest.raises(ValueError, match="runs"):
        solve_tour(coords, runs=0)


def test_held_karp_matches_brute_force():
    rng = np.random.default_rng(1)
    for n in range(1, 9):
        coords = rng.random((n, 2))
        t, length = held_karp(coords)
        assert _is_permutation(t, n) and t[0] == 0
        assert tour_length(coords, t) == pytest.approx(length, rel=1e-12)
        if n >= 2:
            assert length == pytest.approx(_brute_force_length(coords), rel=1e-12)
    with pytest.raises(ValueError, match="at most"):
        held_karp(np.zeros((17, 2)))


def test_solver_is_optimal_on_small_instances():
    """LKH vs the exact optimum on 24 random instances with 4..10 nodes (also translated and
    rescaled ones). Measured: optimal on 300/300 instances with n <= 12 (gap <= 4e-16)."""
    rng = np.random.default_rng(2)
    gaps = []
    for trial in range(24):
        n = int(rng.integers(4, 11))
        coords = rng.random((n, 2))
        if trial % 3 == 1:
            coords = coords * 1e4 - 3e3  # scale-free: LKH sees the same rescaled instance
        elif trial % 3 == 2:
            coords = coords * 1e-3 + 0.5
        _, best = held_karp(coords)
        gaps.append(tour_length(coords, solve_tour(coords)) / best - 1.0)
    assert max(gaps) <= 1e-9


def test_solve_tour_is_deterministic():
    coords = np.random.default_rng(3).random((80, 2))
    assert np.array_equal(solve_tour(coords), solve_tour(coords))


# --------------------------------------------------------------------------------------------
# Graph
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n,k", [(2, 25), (10, 25), (26, 25), (27, 25), (60, 25), (40, 5),
                                 (30, 1)])
def test_knn_graph_matches_brute_force(n, k):
    coords = np.random.default_rng(n * 100 + k).random((n, 2))
    tour = np.random.default_rng(0).permutation(n)
    data = tsp_graph(coords, tour, k=k)
    kk = min(k, n - 1)
    row, col = data.edge_index.numpy()
    assert data.edge_index.dtype == torch.long and data.edge_index.shape == (2, n * kk)
    assert data.x.dtype == torch.float32 and torch.equal(data.x, torch.from_numpy(coords).float())
    assert data.edge_attr.dtype == torch.float32 and data.edge_attr.shape == (n * kk, 1)
    assert data.y.dtype == torch.long and data.y.shape == (n * kk,)
    assert data.num_nodes == n
    # sorted by (row, col), no duplicates, no self-loops, out-degree kk everywhere
    key = row * n + col
    assert np.all(np.diff(key) > 0)
    assert not np.any(row == col)
    assert np.array_equal(np.bincount(row, minlength=n), np.full(n, kk))
    # the neighbours are the kk nearest: brute force over all pairs
    dist = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    for i in range(n):
        chosen = col[row == i]
        others = np.setdiff1d(np.delete(np.arange(n), i), chosen)
        expected = np.sort(np.delete(dist[i], i))[:kk]
        np.testing.assert_allclose(np.sort(dist[i, chosen]), expected, rtol=0, atol=0)
        if others.size:
            assert dist[i, chosen].max() <= dist[i, others].min()
    # edge_attr is the Euclidean length
    np.testing.assert_allclose(data.edge_attr[:, 0].numpy(), dist[row, col], rtol=1e-6)
    lengths_from_x = (data.x[data.edge_index[0]] - data.x[data.edge_index[1]]).norm(dim=1)
    torch.testing.assert_close(data.edge_attr[:, 0], lengths_from_x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [5, 30, 60, 150])
@pytest.mark.parametrize("optimal", [True, False])
def test_edge_labels(n, optimal):
    rng = np.random.default_rng(n)
    coords = rng.random((n, 2))
    tour = solve_tour(coords) if optimal else rng.permutation(n)
    data = tsp_graph(coords, tour)
    row, col = data.edge_index.numpy()
    y = data.y.numpy()
    assert set(np.unique(y)) <= {0, 1}
    tour_edges = {frozenset((int(tour[m]), int(tour[(m + 1) % n]))) for m in range(n)}
    assert len(tour_edges) == n  # exactly n undirected tour edges
    expected = np.array([frozenset((int(a), int(b))) in tour_edges for a, b in zip(row, col)])
    assert np.array_equal(y.astype(bool), expected)
    # each node's two tour neighbours are labelled whenever they are among its k nearest
    edges = set(zip(row.tolist(), col.tolist()))
    for m in range(n):
        i, prev_, next_ = int(tour[m]), int(tour[m - 1]), int(tour[(m + 1) % n])
        for j in (prev_, next_):
            if (i, j) in edges:
                assert y[(row == i) & (col == j)][0] == 1
    assert np.bincount(row[y == 1], minlength=n).max() <= 2
    if optimal and n > 25:
        # optimal tours use short edges: here every tour edge is in the k-NN graph both ways
        assert int(y.sum()) == 2 * n


def test_tsp_graph_rejects_bad_input():
    coords = np.random.default_rng(0).random((6, 2))
    with pytest.raises(ValueError, match="permutation"):
        tsp_graph(coords, [0, 1, 2, 3, 4, 4])
    with pytest.raises(ValueError, match="shape"):
        tsp_graph(coords, [0, 1, 2])
    with pytest.raises(ValueError, match="k must be"):
        tsp_graph(coords, np.arange(6), k=0)
    with pytest.raises(ValueError, match="at least 2"):
        tsp_graph(coords[:1], [0])


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------


def test_instances_follow_the_benchmark_distribution():
    sizes = np.array([tsp_instance(0, "train", i).shape[0] for i in range(2000)])
    assert TSP_MIN_NODES == 50 and TSP_MAX_NODES == 500
    assert sizes.min() >= 50 and sizes.max() <= 500
    # uniform on 50..500: mean 275, std 130.2; 5 standard errors
    assert abs(sizes.mean() - 275.0) < 5 * 130.2 / np.sqrt(2000)
    coords = np.concatenate([tsp_instance(0, "val", i) for i in range(20)])
    assert coords.min() >= 0.0 and coords.max() < 1.0
    assert abs(coords.mean() - 0.5) < 0.02


def test_instances_are_seeded_per_split_and_index():
    a = tsp_instance(0, "train", 3)
    assert np.array_equal(a, tsp_instance(0, "train", 3))
    assert not np.array_equal(a[:50], tsp_instance(1, "train", 3)[:50])
    assert not np.array_equal(a[:50], tsp_instance(0, "val", 3)[:50])
    assert not np.array_equal(a[:50], tsp_instance(0, "train", 4)[:50])
    with pytest.raises(ValueError, match="split"):
        tsp_instance(0, "dev", 0)
    with pytest.raises(ValueError, match="seed"):
        tsp_instance(-1, "train", 0)


def test_generate_is_deterministic_and_prefix_stable(small_instances):
    a = generate_tsp((3, 1, 1), seed=5, num_workers=1)
    b = generate_tsp((3, 1, 1), seed=5, num_workers=1)
    c = generate_tsp((2, 0, 2), seed=5, num_workers=1)
    assert [len(a[s]) for s in ("train", "val", "test")] == [3, 1, 1]
    for s in ("train", "val", "test"):
        for g, h in zip(a[s], b[s]):
            for attr in ("x", "edge_index", "edge_attr", "y"):
                assert torch.equal(g[attr], h[attr])
    for g, h in zip(a["train"][:2] + a["test"], c["train"] + c["test"][:1]):
        assert torch.equal(g.x, h.x) and torch.equal(g.y, h.y)
    assert not torch.equal(a["train"][0].x[:50], a["val"][0].x[:50])
    for s in ("train", "val", "test"):
        for g in a[s]:
            assert 50 <= g.num_nodes <= 60 and g.edge_index.shape[1] == 25 * g.num_nodes
            assert int(g.y.sum()) <= 2 * g.num_nodes
    with pytest.raises(ValueError, match="num_graphs"):
        generate_tsp((1, 1), num_workers=1)


def test_multiprocessing_gives_the_same_tours(small_instances, tmp_path):
    one = solve_split_tours("val", 6, seed=2, num_workers=1)
    two = solve_split_tours("val", 6, seed=2, num_workers=2, chunk_dir=tmp_path, chunk_size=4)
    assert len(two) == 6 and all(np.array_equal(p, q) for p, q in zip(one, two))
    assert sorted(p.name for p in (tmp_path / "val").iterdir()) == [
        "chunk_000000-000004.npz", "chunk_000004-000006.npz"]


def test_chunks_resume_an_interrupted_generation(small_instances, count_solves, tmp_path):
    tours = solve_split_tours("train", 5, seed=1, num_workers=1, chunk_dir=tmp_path,
                              chunk_size=2)
    assert len(count_solves) == 5
    files = sorted((tmp_path / "train").iterdir())
    assert [f.name for f in files] == ["chunk_000000-000002.npz", "chunk_000002-000004.npz",
                                       "chunk_000004-000005.npz"]
    assert not list((tmp_path / "train").glob("*.tmp*"))
    # everything cached: nothing is solved again
    again = solve_split_tours("train", 5, seed=1, num_workers=1, chunk_dir=tmp_path,
                              chunk_size=2)
    assert len(count_solves) == 5
    assert all(np.array_equal(p, q) for p, q in zip(tours, again))
    # a lost chunk (interrupted run) and a corrupt one are re-solved, the rest reused
    files[1].unlink()
    files[2].write_bytes(b"not a zip file")
    again = solve_split_tours("train", 5, seed=1, num_workers=1, chunk_dir=tmp_path,
                              chunk_size=2)
    assert len(count_solves) == 5 + 3
    assert all(np.array_equal(p, q) for p, q in zip(tours, again))
    # chunks of another seed are not mistaken for this seed's
    other = tmp_path / "other"
    solve_split_tours("train", 2, seed=9, num_workers=1, chunk_dir=other, chunk_size=2)
    calls = len(count_solves)
    (other / "train" / "chunk_000000-000002.npz").replace(
        tmp_path / "train" / "chunk_000000-000002.npz")
    again = solve_split_tours("train", 5, seed=1, num_workers=1, chunk_dir=tmp_path,
                              chunk_size=2)
    assert len(count_solves) == calls + 2
    assert all(np.array_equal(p, q) for p, q in zip(tours, again))


# --------------------------------------------------------------------------------------------
# Dataset
# --------------------------------------------------------------------------------------------


class _AddOne:
    def __call__(self, data):
        data.extra = torch.ones(1)
        return data

    def __repr__(self):
        return "AddOne()"


def test_dataset_caches_and_reuses_tours(small_instances, count_solves, tmp_path):
    assert (TSP.level, TSP.metric, TSP.num_classes, TSP.node_dim, TSP.edge_dim) == (
        "edge", "f1", 2, 2, 1)
    root = tmp_path / "TSP"
    train = TSP(root, split="train", seed=3, num_graphs=(4, 2, 1), num_workers=1)
    assert len(count_solves) == 7 and len(train) == 4
    assert Path(train.processed_dir).name.endswith("_seed3_n4-2-1")
    assert os.path.isdir(train.tour_dir)
    expected = generate_tsp((4, 2, 1), seed=3, num_workers=1)
    count_solves.clear()
    for split, size in (("train", 4), ("val", 2), ("test", 1)):
        ds = TSP(root, split=split, seed=3, num_graphs=(4, 2, 1))
        assert len(ds) == size
        for i in range(size):
            g, h = ds[i], expected[split][i]
            for attr in ("x", "edge_index", "edge_attr", "y"):
                assert torch.equal(g[attr], h[attr])
    assert count_solves == []  # loaded from the processed files
    # a new pre-transform gets its own processed files but reuses the solved tours
    ds = TSP(root, split="val", seed=3, num_graphs=(4, 2, 1), pre_transform=_AddOne())
    assert count_solves == [] and len(ds) == 2 and "extra" in ds[0]
    ds = TSP(root, split="val", seed=3, num_graphs=(4, 2, 1), force_reload=True)
    assert count_solves == []


def test_dataset_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="split"):
        TSP(tmp_path, split="dev", num_graphs=(1, 1, 1))
    with pytest.raises(ValueError, match="seed"):
        TSP(tmp_path, seed=-1, num_graphs=(1, 1, 1))
    with pytest.raises(ValueError, match="num_graphs"):
        TSP(tmp_path, num_graphs=(1, 1))
    with pytest.raises(ValueError, match="num_workers"):
        TSP(tmp_path, num_graphs=(1, 1, 1), num_workers=0)


# --------------------------------------------------------------------------------------------
# Metric
# --------------------------------------------------------------------------------------------


def test_f1_positive_matches_hand_computation():
    target = torch.tensor([1, 0, 1, 1, 0, 0, 1, 0, 0, 0])
    pred = torch.tensor([1, 1, 0, 1, 0, 0, 1, 1, 0, 0])
    # TP = 3 (0, 3, 6), FP = 2 (1, 7), FN = 1 (2): F1 = 2*3 / (2*3 + 2 + 1) = 6/9
    assert f1_positive(pred, target) == pytest.approx(6 / 9)
    scores = torch.stack([-pred.float(), pred.float()], dim=1)  # argmax = pred
    assert f1_positive(scores, target) == pytest.approx(6 / 9)
    assert f1_positive(target, target) == pytest.approx(1.0)
    assert f1_positive(torch.zeros(4), torch.zeros(4)) == 0.0  # no positives at all
    assert f1_positive(torch.ones(4, dtype=torch.bool), torch.tensor([0, 1, 0, 0])) == \
        pytest.approx(2 / 5)
    rng = np.random.default_rng(0)
    t, p = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    tp, fp, fn = ((p == 1) & (t == 1)).sum(), ((p == 1) & (t == 0)).sum(), \
        ((p == 0) & (t == 1)).sum()
    assert f1_positive(torch.from_numpy(p), torch.from_numpy(t)) == pytest.approx(
        2 * tp / (2 * tp + fp + fn))


def test_f1_positive_rejects_bad_input():
    with pytest.raises(ValueError, match="sizes differ"):
        f1_positive(torch.tensor([0, 1]), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="pred labels must be in 0..1"):
        f1_positive(torch.tensor([0, 2]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="2 columns"):
        f1_positive(torch.zeros(3, 3), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match="at least one"):
        f1_positive(torch.zeros(0), torch.zeros(0))
