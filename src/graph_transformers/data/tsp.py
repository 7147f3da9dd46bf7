"""The TSP edge-classification benchmark, generated in code.

TSP was introduced by Dwivedi et al., "Benchmarking Graph Neural Networks" (JMLR 2023,
arXiv:2003.00982) and is used by the Graph Transformer paper (Dwivedi & Bresson, 2021). The
original files (``TSP.pkl``, ``tsp50-500_{train,val,test}.txt``) are not available, so this module
regenerates the dataset with the procedure and parameters of graphdeeplearning/benchmarking-gnns
``data/TSP/generate_TSP.py`` and ``data/TSP.py`` (see ``shared/data/README.md``, section 7).
Where the published files can be had (PyG's ``TSP_v2.pt``), the registry reads those instead
(``data.source``, :mod:`graph_transformers.data.canonical`).

**Instances.** A graph has ``n ~ randint(50, 501)`` nodes (50..500 inclusive) with coordinates
drawn uniformly from the unit square. Its label is an (optimal or near-optimal, see below)
travelling-salesman tour through all nodes under the Euclidean distance.

**Graph.** Every node ``i`` has directed edges ``i -> j`` to its ``k = 25`` nearest other nodes
(itself excluded; all other nodes when ``n <= k``). Edge feature: the Euclidean distance; node
feature: the 2-D coordinates; edge label: 1 if the undirected edge ``{i, j}`` is in the tour
(in either direction), else 0. Metric: F1 score of the positive class (:func:`f1_positive`).

Each generated graph is a :class:`~torch_geometric.data.Data` with

* ``x``: ``FloatTensor [n, 2]``, the coordinates;
* ``edge_index``: ``LongTensor [2, n * k]``, the k-NN edges ``i -> knn(i)`` sorted by
  ``(row, col)``; an edge and its reverse are both present only when each endpoint is among the
  other's ``k`` nearest;
* ``edge_attr``: ``FloatTensor [n * k, 1]``, the edge lengths;
* ``y``: ``LongTensor [n * k]``, the 0/1 edge labels. Each node has at most 2 positive out-edges
  (its tour neighbours, when they are among its ``k`` nearest).

**Solver.** The original used Concorde (pyconcorde), which has no wheel on PyPI. Tours here come
from LKH-3 (3.0.8) through ``elkai`` (PyPI ``elkai==2.0.1``, a self-contained manylinux wheel
with LKH compiled in; nothing is downloaded or compiled at install time), called as
``elkai.Coordinates2D(...).solve_tsp(runs=LKH_RUNS)`` with ``LKH_RUNS = 1``: one LKH run with
LKH's defaults otherwise (``MAX_TRIALS = n``, ``SEED = 1``, 5 alpha-nearest candidates,
5-opt moves), so tours are deterministic. LKH's ``EUC_2D`` distances are rounded to integers, so
the coordinates are translated and scaled to span ``[0, 10^6]`` first (:data:`LKH_SCALE`): tour
lengths are exact up to ``10^-6`` of the instance's extent per edge. Measured on this project's
machine (2 cores, both also running training jobs):

* exact on small instances: on 300 random instances with ``3 <= n <= 12`` the tour is as short
  as the optimum of an exact Held-Karp dynamic program (:func:`held_karp`) every time (largest
  relative difference ``4e-16``);
* near-optimal at benchmark sizes, against the shortest tour found by any of several much longer
  LKH runs on the same instance (``RUNS`` 3-10, ``MAX_TRIALS`` up to ``5n``, up to 10
  candidates, other seeds): for ``50 <= n <= 150`` the single run found that tour on 377 of 393
  instances (95.9%), mean gap ``7e-5``, the other 16 longer by 0.014%-0.59%; for
  ``200 <= n <= 500`` on 31 of 35 instances, mean gap ``5e-5``, max 0.08%. ``LKH_RUNS = 3``
  found it on 280 of 282 instances (``50 <= n <= 500``) but costs about 3x the time;
* time per instance (one LKH run, CPU time of one core): about 0.02-0.04 s at ``n = 50``,
  0.4-0.8 s at ``n = 200``, 2.5-5 s at ``n = 500`` (occasional outliers up to 12 s);
  1.3 s on average over 50 instances drawn from the benchmark's size distribution (wall time
  2.0 s on the loaded machine). Building a graph takes about 8 ms. The full 12,000 instances
  therefore need about 4.3 CPU-hours: **about 2.2 hours with ``num_workers=2`` on 2 idle
  cores**, 3.5-4 hours next to two training runs.

Other PyPI solvers were clearly worse on the same instances (``n = 127..142``, against the same
reference tours): ``ortools==9.15.6755`` routing (path-cheapest-arc start, guided local search)
left gaps of 1.8%-4.9% after 1 s and 1.8%-3.5% after 5 s; ``python-tsp==0.5.0``'s
``solve_tsp_lin_kernighan`` 6.8%-11.6%. Concorde has no PyPI wheel (``pyconcorde``/``concorde``
are not on PyPI).

For comparison, the original passed the unit-square coordinates to Concorde with
``norm="GEO"``, i.e. it optimised TSPLIB's geographical distance, which reads them as
degrees/minutes and rounds every edge to whole kilometres (about 185 km per unit, so edges of a
few km carry rounding errors of up to 1 km). Those tours are optimal only up to many ties: on 8
instances with 85-147 nodes, a GEO-optimal tour had the same GEO cost as the Euclidean-optimal
one but differed from it in 2-11 edges (0.004%-0.13% longer in Euclidean length), on every
instance. The tours here are (near-)optimal for the Euclidean distance that the edge features
carry, and differ from the Euclidean optimum far less often.

**Randomness and caching.** Instance ``i`` of split ``s`` is drawn from its own stream
``numpy.random.default_rng(SeedSequence(seed, spawn_key=(s, i)))`` (:func:`tsp_instance`), so an
instance does not depend on the number of instances, the chunking or the number of worker
processes, and a smaller ``num_graphs`` gives a prefix of the full splits. Solving the full set
takes hours, so :func:`generate_tsp` can write the solved tours to chunk files of
:data:`TSP_CHUNK_SIZE` instances (written atomically, checked against the seed on reload) and
skips the chunks already on disk: an interrupted generation resumes where it stopped. The tours
do not depend on the pre-transform, so datasets with different encodings share them. The seeds of
the original val/test files are not recorded, so these graphs are a fresh draw from the same
distribution, not the published graphs.
"""
from __future__ import annotations

import logging
import multiprocessing as mp
import os
import os.path as osp
import tempfile
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset

from graph_transformers._optional import require
from graph_transformers.data.cache import (CheckedInMemoryDataset, pre_transform_key,
                                           resolve_cache_dir)
from graph_transformers.data.generated import check_seed, check_split_counts

__all__ = [
    "LKH_RUNS",
    "LKH_SCALE",
    "TSP",
    "TSP_CHUNK_SIZE",
    "TSP_MAX_NODES",
    "TSP_MIN_NODES",
    "TSP_NUM_CLASSES",
    "TSP_NUM_GRAPHS",
    "TSP_NUM_NEIGHBORS",
    "TSP_SOLVER_TAG",
    "f1_positive",
    "generate_tsp",
    "held_karp",
    "solve_split_tours",
    "solve_tour",
    "tour_length",
    "tsp_graph",
    "tsp_instance",
]

log = logging.getLogger(__name__)

#: Instances have ``TSP_MIN_NODES .. TSP_MAX_NODES`` nodes (``randint(50, 501)``, inclusive).
TSP_MIN_NODES = 50
TSP_MAX_NODES = 500
#: Out-degree of the k-NN graph.
TSP_NUM_NEIGHBORS = 25
#: Graphs in train / val / test.
TSP_NUM_GRAPHS: tuple[int, int, int] = (10000, 1000, 1000)
TSP_NUM_CLASSES = 2
#: Instances per chunk file of solved tours.
TSP_CHUNK_SIZE = 100
#: Coordinates are mapped to span ``[0, LKH_SCALE]`` before LKH rounds distances to integers.
LKH_SCALE = 1e6
#: LKH runs per instance used for the dataset (see the module docstring for the trade-off).
LKH_RUNS = 1
#: Names the solver and its settings in the chunk directory: tours from other settings are
#: never reused.
TSP_SOLVER_TAG = f"lkh3-elkai-runs{LKH_RUNS}-scale1e6"

_SPLITS = ("train", "val", "test")
_HELD_KARP_MAX_NODES = 16


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def _check_coords(coords: np.ndarray | Tensor | Sequence, min_nodes: int = 1) -> np.ndarray:
    """``coords`` as a float64 array ``[n, 2]`` of finite values with ``n >= min_nodes``."""
    if isinstance(coords, Tensor):
        coords = coords.detach().cpu().numpy()
    c = np.asarray(coords, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] != 2:
        raise ValueError(f"coords must have shape [n, 2], got {c.shape}")
    if c.shape[0] < min_nodes:
        raise ValueError(f"need at least {min_nodes} node(s), got {c.shape[0]}")
    if not np.isfinite(c).all():
        raise ValueError("coords must be finite")
    return c


def _check_tour(tour: np.ndarray | Tensor | Sequence, n: int) -> np.ndarray:
    """``tour`` as an int64 array, checked to be a permutation of ``0..n-1``."""
    if isinstance(tour, Tensor):
        tour = tour.detach().cpu().numpy()
    t = np.asarray(tour)
    if t.ndim != 1 or t.shape[0] != n:
        raise ValueError(f"a tour of {n} nodes must have shape [{n}], got {t.shape}")
    if n and not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"a tour must hold integer node ids, got dtype {t.dtype}")
    t = t.astype(np.int64)
    if n and (t.min() < 0 or t.max() >= n or np.unique(t).shape[0] != n):
        raise ValueError(f"a tour must be a permutation of 0..{n - 1}")
    return t


def _check_split(split: str) -> int:
    if split not in _SPLITS:
        raise ValueError(f"TSP split must be one of {_SPLITS}, got {split!r}")
    return _SPLITS.index(split)


def _distance_matrix(c: np.ndarray) -> np.ndarray:
    diff = c[:, None, :] - c[None, :, :]
    return np.sqrt((diff * diff).sum(-1))


# --------------------------------------------------------------------------------------------
# Tours
# --------------------------------------------------------------------------------------------


def tour_length(coords: np.ndarray | Tensor, tour: np.ndarray | Tensor | Sequence[int]) -> float:
    """Euclidean length of the closed tour ``tour[0] -> tour[1] -> ... -> tour[0]``.

    Args:
        coords: ``[n, 2]`` coordinates.
        tour: permutation of ``0..n-1``.

    Raises:
        ValueError: for malformed coordinates or a tour that is not a permutation.
    """
    c = _check_coords(coords)
    t = _check_tour(tour, c.shape[0])
    return float(np.linalg.norm(c[t] - c[np.roll(t, -1)], axis=1).sum())


def solve_tour(coords: np.ndarray | Tensor | Sequence, runs: int = LKH_RUNS) -> np.ndarray:
    """A (near-)optimal Euclidean TSP tour, computed by LKH-3 (``elkai``).

    ``runs`` deterministic LKH runs (``SEED = 1``), LKH's default settings otherwise; the best
    tour is returned (see the module docstring for the measured optimality gap and run time).
    The coordinates are translated and scaled to span ``[0, LKH_SCALE]`` because LKH rounds
    ``EUC_2D`` distances to integers; this does not change which tours are optimal. With
    ``n <= 3`` nodes (or all points equal) every tour is optimal and ``arange(n)`` is returned
    without calling the solver.

    Args:
        coords: ``[n, 2]`` finite coordinates, ``n >= 1``.
        runs (int): LKH runs (``RUNS``); the time grows about linearly with it.

    Returns:
        int64 array ``[n]``: a permutation of ``0..n-1``, the visiting order (the closing edge
        ``tour[-1] -> tour[0]`` is implied).

    Raises:
        ValueError: for malformed coordinates or ``runs < 1``.
        ImportError: if ``elkai`` is not installed.
        RuntimeError: if the solver does not return a permutation of the nodes.
    """
    c = _check_coords(coords)
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    n = c.shape[0]
    extent = float((c.max(0) - c.min(0)).max()) if n else 0.0
    if n <= 3 or extent == 0.0:  # every tour is optimal
        return np.arange(n, dtype=np.int64)
    elkai = require("elkai", "solving TSP tours (LKH)")
    scaled = (c - c.min(0)) * (LKH_SCALE / extent)
    cities = {i: (float(x), float(y)) for i, (x, y) in enumerate(scaled)}
    route = elkai.Coordinates2D(cities).solve_tsp(runs=int(runs))
    if len(route) == n + 1 and route[0] == route[-1]:
        route = route[:-1]  # elkai repeats the first city at the end
    try:
        return _check_tour(np.asarray(route, dtype=np.int64), n)
    except (ValueError, TypeError) as err:
        raise RuntimeError(f"LKH returned an invalid tour for {n} nodes: {route!r}") from err


def held_karp(coords: np.ndarray | Tensor | Sequence) -> tuple[np.ndarray, float]:
    """An exact optimal tour by the Held-Karp dynamic program (for checking the solver).

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
    c = _check_coords(coords)
    n = c.shape[0]
    if n > _HELD_KARP_MAX_NODES:
        raise ValueError(f"held_karp is exponential; use at most {_HELD_KARP_MAX_NODES} nodes, "
                         f"got {n}")
    if n <= 3:
        t = np.arange(n, dtype=np.int64)
        return t, tour_length(c, t)
    d = _distance_matrix(c)
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


# --------------------------------------------------------------------------------------------
# Graph
# --------------------------------------------------------------------------------------------


def tsp_graph(
    coords: np.ndarray | Tensor | Sequence,
    tour: np.ndarray | Tensor | Sequence[int],
    k: int = TSP_NUM_NEIGHBORS,
) -> Data:
    """The benchmark's k-NN graph of one instance, with tour labels on the edges.

    Args:
        coords: ``[n, 2]`` coordinates, ``n >= 2``.
        tour: the tour, a permutation of ``0..n-1`` (e.g. from :func:`solve_tour`).
        k (int): out-degree; every node gets edges to its ``min(k, n - 1)`` nearest other nodes
            (selected with ``numpy.argpartition``; a tie at the k-th distance, which has
            probability 0 for random coordinates, is broken arbitrarily but deterministically).

    Returns:
        :class:`~torch_geometric.data.Data` with ``x`` FloatTensor ``[n, 2]`` (coordinates),
        ``edge_index`` LongTensor ``[2, n * k']`` (``k' = min(k, n - 1)``, edges ``i -> j`` for
        the ``k'`` nearest ``j != i``, sorted by ``(row, col)``), ``edge_attr`` FloatTensor
        ``[n * k', 1]`` (Euclidean length, computed in float64) and ``y`` LongTensor ``[n * k']``
        (1 when the undirected edge ``{i, j}`` is one of the tour's ``n`` edges).

    Raises:
        ValueError: for malformed coordinates, ``n < 2``, ``k < 1`` or a tour that is not a
            permutation.
    """
    c = _check_coords(coords, min_nodes=2)
    n = c.shape[0]
    t = _check_tour(tour, n)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    kk = min(int(k), n - 1)
    d = _distance_matrix(c)
    np.fill_diagonal(d, np.inf)  # no self-loops
    if kk < n - 1:
        nbr = np.argpartition(d, kk - 1, axis=1)[:, :kk]  # the kk smallest of each row
    else:
        nbr = np.argsort(d, axis=1)[:, :kk]  # all other nodes (the diagonal sorts last)
    nbr = np.sort(nbr, axis=1)
    row = np.repeat(np.arange(n, dtype=np.int64), kk)
    col = nbr.reshape(-1).astype(np.int64)
    succ = np.roll(t, -1)
    tour_keys = np.minimum(t, succ) * n + np.maximum(t, succ)
    edge_keys = np.minimum(row, col) * n + np.maximum(row, col)
    y = np.isin(edge_keys, tour_keys)
    return Data(
        x=torch.from_numpy(c.astype(np.float32)),
        edge_index=torch.from_numpy(np.stack([row, col])),
        edge_attr=torch.from_numpy(d[row, col].astype(np.float32)).view(-1, 1),
        y=torch.from_numpy(y.astype(np.int64)),
        num_nodes=n,
    )


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------


def tsp_instance(seed: int, split: str, index: int) -> np.ndarray:
    """The coordinates of instance ``index`` of ``split``.

    Drawn from ``numpy.random.default_rng(SeedSequence(seed, spawn_key=(s, index)))`` where
    ``s`` is the split's position in ``("train", "val", "test")`` (the stream
    ``SeedSequence(seed).spawn(3)[s].spawn(index + 1)[index]``): first
    ``n = integers(50, 501)``, then ``random((n, 2))``.

    Returns:
        float64 array ``[n, 2]`` in ``[0, 1)^2`` with ``50 <= n <= 500``.

    Raises:
        ValueError: for a negative seed or index, or an unknown split.
    """
    seed = check_seed(seed)
    s = _check_split(split)
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
        raise ValueError(f"index must be a non-negative integer, got {index!r}")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(s, int(index))))
    n = int(rng.integers(TSP_MIN_NODES, TSP_MAX_NODES + 1))
    return rng.random((n, 2))


def _solve_job(job: tuple[int, str, int]) -> tuple[int, np.ndarray]:
    """Worker: ``(seed, split, index) -> (index, tour)``."""
    seed, split, index = job
    return index, solve_tour(tsp_instance(seed, split, index))


def _chunk_ranges(count: int, chunk_size: int) -> list[tuple[int, int]]:
    return [(a, min(a + chunk_size, count)) for a in range(0, count, chunk_size)]


def _chunk_path(chunk_dir: str, split: str, start: int, stop: int) -> str:
    return osp.join(chunk_dir, split, f"chunk_{start:06d}-{stop:06d}.npz")


def _read_chunk(
    path: str, seed: int, split: str, start: int, stop: int
) -> list[np.ndarray] | None:
    """The tours of a chunk file, or ``None`` when it is missing, unreadable or does not match
    the instances of ``seed`` (a stale or foreign file)."""
    if not osp.exists(path):
        return None
    try:
        with np.load(path) as f:
            sizes, coords, tours = f["num_nodes"], f["coords"], f["tours"]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        if sizes.shape[0] != stop - start or offsets[-1] != coords.shape[0]:
            raise ValueError("size mismatch")
        out = []
        for m, i in enumerate(range(start, stop)):
            a, b = offsets[m], offsets[m + 1]
            if not np.array_equal(coords[a:b], tsp_instance(seed, split, i)):
                raise ValueError(f"instance {i} differs from seed {seed}")
            out.append(_check_tour(tours[a:b], int(b - a)))
        return out
    except Exception as err:  # noqa: BLE001 - any bad file is re-solved
        log.warning("ignoring TSP chunk %s (%s); it will be re-solved", path, err)
        return None


def _write_chunk(path: str, seed: int, split: str, start: int, tours: list[np.ndarray]) -> None:
    """Write a chunk atomically (temporary file + rename)."""
    os.makedirs(osp.dirname(path), exist_ok=True)
    coords = [tsp_instance(seed, split, start + m) for m in range(len(tours))]
    fd, tmp = tempfile.mkstemp(dir=osp.dirname(path), suffix=".tmp.npz")
    os.close(fd)
    try:
        np.savez(tmp, num_nodes=np.array([t.shape[0] for t in tours], dtype=np.int64),
                 coords=np.concatenate(coords), tours=np.concatenate(tours))
        os.replace(tmp, path)
    finally:
        if osp.exists(tmp):
            os.unlink(tmp)


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _solve_many(jobs: list[tuple[int, str, int]], num_workers: int) -> Iterator[np.ndarray]:
    """Tours of ``jobs`` in order, solved in ``num_workers`` processes."""
    if num_workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield _solve_job(job)[1]
        return
    # fork: the workers only run NumPy and LKH, and skip re-importing torch (seconds per worker)
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    with ctx.Pool(min(num_workers, len(jobs)), maxtasksperchild=1000) as pool:
        for _, tour in pool.imap(_solve_job, jobs, chunksize=1):
            yield tour


def solve_split_tours(
    split: str,
    count: int,
    seed: int = 0,
    *,
    num_workers: int | None = None,
    chunk_dir: str | os.PathLike | None = None,
    chunk_size: int = TSP_CHUNK_SIZE,
) -> list[np.ndarray]:
    """Solve instances ``0..count-1`` of ``split``; with ``chunk_dir``, resumably.

    Args:
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        count (int): number of instances.
        seed (int): generation seed (see :func:`tsp_instance`).
        num_workers (int, optional): solver processes (default: the CPUs this process may use).
        chunk_dir (str or PathLike, optional): directory of chunk files
            ``<chunk_dir>/<split>/chunk_<start>-<stop>.npz`` (instances ``start..stop-1``: sizes,
            coordinates, tours). Chunks already there are reused (after checking that their
            coordinates are those of ``seed``); each missing chunk is written as soon as it is
            solved.
        chunk_size (int): instances per chunk.

    Returns:
        list of ``count`` int64 tours.
    """
    _check_split(split)
    seed = check_seed(seed)
    workers = _default_workers() if num_workers is None else int(num_workers)
    if workers < 1:
        raise ValueError(f"num_workers must be at least 1, got {num_workers!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or (
        chunk_size < 1
    ):
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if chunk_dir is None:
        return list(_solve_many([(seed, split, i) for i in range(count)], workers))
    chunk_dir = os.fspath(chunk_dir)
    ranges = _chunk_ranges(count, int(chunk_size))
    done: dict[int, list[np.ndarray]] = {}
    for a, b in ranges:
        tours = _read_chunk(_chunk_path(chunk_dir, split, a, b), seed, split, a, b)
        if tours is not None:
            done[a] = tours
    todo = [(a, b) for a, b in ranges if a not in done]
    if todo:
        log.info("TSP %s: solving %d of %d chunks (%d instances) with %d worker(s)", split,
                 len(todo), len(ranges), sum(b - a for a, b in todo), workers)
    jobs = [(seed, split, i) for a, b in todo for i in range(a, b)]
    solved = _solve_many(jobs, workers)
    for a, b in todo:
        tours = [next(solved) for _ in range(a, b)]
        _write_chunk(_chunk_path(chunk_dir, split, a, b), seed, split, a, tours)
        done[a] = tours
        log.info("TSP %s: instances %d..%d solved", split, a, b - 1)
    return [t for a, _ in ranges for t in done[a]]


def generate_tsp(
    num_graphs: Sequence[int] = TSP_NUM_GRAPHS,
    seed: int = 0,
    *,
    num_workers: int | None = None,
    chunk_dir: str | os.PathLike | None = None,
    chunk_size: int = TSP_CHUNK_SIZE,
) -> dict[str, list[Data]]:
    """Generate the TSP splits (see the module docstring for the procedure and the timings).

    Args:
        num_graphs (three ints): graphs in train / val / test (benchmark:
            ``(10000, 1000, 1000)``; about 3 hours on 2 cores).
        seed (int): the same seed gives identical graphs; instance ``i`` of a split does not
            depend on the counts, so smaller counts give prefixes of the full splits.
        num_workers (int, optional): solver processes (default: the CPUs this process may use).
        chunk_dir (str or PathLike, optional): where to keep the solved tours so that an
            interrupted generation resumes (see :func:`solve_split_tours`).
        chunk_size (int): instances per chunk file.

    Returns:
        ``{"train": [...], "val": [...], "test": [...]}`` of :func:`tsp_graph` graphs with
        ``k = 25``.

    Raises:
        ValueError: for counts that are not three non-negative integers, a negative seed,
            ``num_workers < 1`` or ``chunk_size < 1``.
    """
    counts = check_split_counts("num_graphs", num_graphs)
    seed = check_seed(seed)
    out = {}
    for split, count in zip(_SPLITS, counts):
        tours = solve_split_tours(split, count, seed, num_workers=num_workers,
                                  chunk_dir=chunk_dir, chunk_size=chunk_size)
        out[split] = [tsp_graph(tsp_instance(seed, split, i), tour)
                      for i, tour in enumerate(tours)]
    return out


# --------------------------------------------------------------------------------------------
# Metric
# --------------------------------------------------------------------------------------------


def f1_positive(pred: Tensor, target: Tensor) -> float:
    """F1 score of the positive class (label 1), the TSP benchmark's metric.

    ``2 TP / (2 TP + FP + FN)``, computed by ``torchmetrics``' ``BinaryF1Score``; 0 when there
    is no positive among both predictions and targets. This equals the benchmark's
    ``binary_f1_score`` (sklearn ``f1_score(average="binary")`` of the argmax) on the same edges.

    Args:
        pred (Tensor): predicted labels ``[E]`` (0/1, any dtype) or scores/logits ``[E, 2]``
            (the argmax is taken).
        target (Tensor): true labels ``[E]`` in ``{0, 1}``.

    Returns:
        float in ``[0, 1]``.

    Raises:
        ValueError: for empty or mismatched inputs, or labels outside ``{0, 1}``.
    """
    from torchmetrics.classification import BinaryF1Score

    target = torch.as_tensor(target).reshape(-1)
    pred = torch.as_tensor(pred)
    if pred.dim() == 2:
        if pred.shape[1] != 2:
            raise ValueError(f"scores must have 2 columns, got {tuple(pred.shape)}")
        pred = pred.argmax(dim=1)
    pred = pred.reshape(-1)
    if target.numel() == 0:
        raise ValueError("f1_positive needs at least one target")
    if pred.shape != target.shape:
        raise ValueError(f"pred and target sizes differ: {tuple(pred.shape)} vs "
                         f"{tuple(target.shape)}")
    for name, t in (("pred", pred), ("target", target)):
        if not bool(((t == 0) | (t == 1)).all()):
            raise ValueError(f"{name} labels must be 0 or 1")
    metric = BinaryF1Score()
    return float(metric(pred.long().cpu(), target.long().cpu()))


# --------------------------------------------------------------------------------------------
# Dataset
# --------------------------------------------------------------------------------------------


class TSP(CheckedInMemoryDataset):
    r"""The TSP edge-classification benchmark of Dwivedi et al., "Benchmarking Graph Neural
    Networks": predict which k-NN edges (``k = 25``) of a random Euclidean instance with 50..500
    nodes belong to its (near-)optimal tour. 10,000 / 1,000 / 1,000 graphs.

    Generated in code by :func:`generate_tsp`; ``root`` is only a cache. The solved tours are
    kept in ``root/tours/<TSP_SOLVER_TAG>_seed<seed>/<split>/chunk_*.npz`` (shared by all
    pre-transforms; an interrupted generation resumes from them) and each processed split in
    ``root/processed/<pre_transform_key(pre_transform)>_seed<seed>[_n<sizes>]/<split>.pt``. The
    first instantiation generates all three splits (about 3 hours on 2 cores for the benchmark
    sizes; progress is logged at INFO level), later ones load them.

    Graphs have ``x`` FloatTensor ``[n, 2]`` (coordinates), ``edge_index`` ``[2, 25 n]``,
    ``edge_attr`` FloatTensor ``[25 n, 1]`` (distances) and ``y`` LongTensor ``[25 n]`` (1 for
    tour edges). Metric: :func:`f1_positive`.

    Args:
        root (str or PathLike, optional): cache directory (default
            ``resolve_cache_dir() / "TSP"``).
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        seed (int): generation seed (see :func:`tsp_instance`).
        transform, pre_transform (callable, optional): as in PyG.
        force_reload (bool): rebuild the processed files (the solved tours are reused).
        num_graphs (three ints): keyword-only, for tests and quick experiments: graphs in
            train/val/test (default the benchmark's ``(10000, 1000, 1000)``). Non-default sizes
            are cached with the suffix ``_n<train>-<val>-<test>``.
        num_workers (int, optional): keyword-only, solver processes (default: the CPUs this
            process may use).

    Raises:
        ValueError: for an unknown ``split``, a negative ``seed`` or invalid sizes.
    """

    name = "TSP"
    level = "edge"
    metric = "f1"
    num_classes = TSP_NUM_CLASSES
    node_dim = 2
    edge_dim = 1

    def __init__(
        self,
        root: str | os.PathLike | None = None,
        split: str = "train",
        seed: int = 0,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        force_reload: bool = False,
        *,
        num_graphs: Sequence[int] | None = None,
        num_workers: int | None = None,
    ) -> None:
        _check_split(split)
        self.split = split
        self.seed = check_seed(seed)
        self.num_graphs = TSP_NUM_GRAPHS if num_graphs is None else check_split_counts("num_graphs", num_graphs)
        if num_workers is not None and (
            isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer))
            or num_workers < 1
        ):
            raise ValueError(f"num_workers must be a positive integer, got {num_workers!r}")
        self.num_workers = num_workers
        if root is None:
            root = resolve_cache_dir() / self.name
        super().__init__(os.fspath(root), transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[_SPLITS.index(split)])

    def _size_tag(self) -> str:
        if self.num_graphs == TSP_NUM_GRAPHS:
            return ""
        return "_n" + "-".join(map(str, self.num_graphs))

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def tour_dir(self) -> str:
        """Directory of the solved-tour chunk files."""
        return osp.join(self.root, "tours", f"{TSP_SOLVER_TAG}_seed{self.seed}")

    @property
    def processed_dir(self) -> str:
        key = f"{pre_transform_key(self.pre_transform)}_seed{self.seed}{self._size_tag()}"
        return osp.join(self.root, "processed", key)

    @property
    def processed_file_names(self) -> list[str]:
        return [f"{split}.pt" for split in _SPLITS]

    def process(self) -> None:
        # solve every split first (the long part, resumable), then build one split at a time
        tours = {
            split: solve_split_tours(split, count, self.seed, num_workers=self.num_workers,
                                     chunk_dir=self.tour_dir)
            for split, count in zip(_SPLITS, self.num_graphs)
        }
        for split, path in zip(_SPLITS, self.processed_paths):
            data_list = [tsp_graph(tsp_instance(self.seed, split, i), tour)
                         for i, tour in enumerate(tours.pop(split))]
            if self.pre_transform is not None:
                data_list = [self.pre_transform(d) for d in data_list]
            self.save(data_list, path)
            del data_list

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({len(self)}, split={self.split!r}, seed={self.seed})"
