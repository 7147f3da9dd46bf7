"""Euclidean TSP tours by LKH-3 (through the ``elkai`` wheel), and the tour checks the TSP
dataset (:mod:`graph_transformers.datasets.synthetic.tsp`) shares with it.

The benchmark's original tours came from Concorde, which has no wheel on PyPI. Here one
deterministic LKH run (:data:`LKH_RUNS`) per instance; ``docs/datasets.md`` ("TSP: the solver")
records how close that comes to the optimum, how long it takes, and why the other solvers on PyPI
were not used.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from torch import Tensor

from ..._optional import require
from ...data.generated import check_count

__all__ = ["LKH_RUNS", "LKH_SCALE", "solve_tour", "tour_length"]

#: Coordinates are mapped to span ``[0, LKH_SCALE]`` before LKH rounds distances to integers.
LKH_SCALE = 1e6
#: LKH runs per instance used for the dataset (``docs/datasets.md`` gives the trade-off).
LKH_RUNS = 1


def check_coords(coords: np.ndarray | Tensor | Sequence, min_nodes: int = 1) -> np.ndarray:
    """``coords`` as a float64 array ``[n, 2]`` of finite values with ``n >= min_nodes``.

    Raises:
        ValueError: for another shape, fewer than ``min_nodes`` rows or a non-finite value.
    """
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


def check_tour(tour: np.ndarray | Tensor | Sequence, n: int) -> np.ndarray:
    """``tour`` as an int64 array ``[n]``, checked to be a permutation of ``0..n-1``.

    Raises:
        ValueError: for another shape, non-integer ids or ids that are not a permutation.
    """
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


def distance_matrix(c: np.ndarray) -> np.ndarray:
    """Euclidean distances ``[n, n]`` (float64) between the rows of coordinates ``c [n, 2]``."""
    diff = c[:, None, :] - c[None, :, :]
    return np.sqrt((diff * diff).sum(-1))


def tour_length(coords: np.ndarray | Tensor, tour: np.ndarray | Tensor | Sequence[int]) -> float:
    """Euclidean length of the closed tour ``tour[0] -> tour[1] -> ... -> tour[0]``.

    Args:
        coords: ``[n, 2]`` coordinates.
        tour: permutation of ``0..n-1``.

    Raises:
        ValueError: for malformed coordinates or a tour that is not a permutation.
    """
    c = check_coords(coords)
    t = check_tour(tour, c.shape[0])
    return float(np.linalg.norm(c[t] - c[np.roll(t, -1)], axis=1).sum())


def solve_tour(coords: np.ndarray | Tensor | Sequence, runs: int = LKH_RUNS) -> np.ndarray:
    """A (near-)optimal Euclidean TSP tour, computed by LKH-3 (``elkai``).

    ``runs`` deterministic LKH runs (``SEED = 1``), LKH's default settings otherwise; the best
    tour is returned (``docs/datasets.md`` records the measured optimality gap and run time).
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
    c = check_coords(coords)
    runs = check_count("runs", runs)
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
        return check_tour(np.asarray(route, dtype=np.int64), n)
    except (ValueError, TypeError) as err:
        raise RuntimeError(f"LKH returned an invalid tour for {n} nodes: {route!r}") from err
