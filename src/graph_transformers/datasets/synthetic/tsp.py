"""The TSP edge-classification benchmark, generated in code.

TSP was introduced by Dwivedi et al., "Benchmarking Graph Neural Networks" (JMLR 2023,
arXiv:2003.00982) and is used by the Graph Transformer paper (Dwivedi & Bresson, 2021). The
original files (``TSP.pkl``, ``tsp50-500_{train,val,test}.txt``) are not available, so this module
regenerates the dataset with the procedure and parameters of graphdeeplearning/benchmarking-gnns
``data/TSP/generate_TSP.py`` and ``data/TSP.py``.
Where the published files can be had (PyG's ``TSP_v2.pt``), the registry reads those instead
(``data.source``, :mod:`graph_transformers.data.published`).

**Instances.** A graph has ``n ~ randint(50, 501)`` nodes (50..500 inclusive) with coordinates
drawn uniformly from the unit square. Its label is an (optimal or near-optimal, see below)
travelling-salesman tour through all nodes under the Euclidean distance.

**Graph.** Every node ``i`` has directed edges ``i -> j`` to its ``k = 25`` nearest other nodes
(itself excluded; all other nodes when ``n <= k``). Edge feature: the Euclidean distance; node
feature: the 2-D coordinates; edge label: 1 if the undirected edge ``{i, j}`` is in the tour
(in either direction), else 0. Metric: F1 score of the positive class
(:func:`graph_transformers.training.metrics.f1_positive`).

Each generated graph is a :class:`~torch_geometric.data.Data` with

* ``x``: ``FloatTensor [n, 2]``, the coordinates;
* ``edge_index``: ``LongTensor [2, n * k]``, the k-NN edges ``i -> knn(i)`` sorted by
  ``(row, col)``; an edge and its reverse are both present only when each endpoint is among the
  other's ``k`` nearest;
* ``edge_attr``: ``FloatTensor [n * k, 1]``, the edge lengths;
* ``y``: ``LongTensor [n * k]``, the 0/1 edge labels. Each node has at most 2 positive out-edges
  (its tour neighbours, when they are among its ``k`` nearest).

**Solver.** The original used Concorde, which has no wheel on PyPI. Tours here come from one
deterministic LKH-3 run per instance
(:func:`~graph_transformers.datasets.synthetic.tsp_solver.solve_tour`, through ``elkai``);
``docs/datasets.md`` ("TSP: the solver") records the measured optimality gap,
the run time (about 4.3 CPU-hours for the 12,000 instances) and the comparison with the other
solvers and with the original's tours.

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

from functools import partial
import logging
import os
import os.path as osp
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from ...data.generated import (SPLITS, GeneratedDataset, PathLike, Transform, check_count,
                               check_seed, check_split, check_split_counts, size_tag)
from ...data.parallel import default_workers, parallel_map, resumable_map
from ...data.registry import DatasetSpec
from ...fileio import atomic_save
from ...data.published import published_or_generated, require_fields
from ...errors import DataError
from ..gnn_benchmark import GNNBenchmark
from .tsp_solver import LKH_RUNS, check_coords, check_tour, distance_matrix, solve_tour

__all__ = [
    "TSP",
    "TSP_SPEC",
    "TSP_CHUNK_SIZE",
    "TSP_MAX_NODES",
    "TSP_MIN_NODES",
    "TSP_NUM_CLASSES",
    "TSP_NUM_GRAPHS",
    "TSP_NUM_NEIGHBORS",
    "TSP_SOLVER_TAG",
    "generate_tsp",
    "load_tsp",
    "solve_split_tours",
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
#: Names the solver and its settings in the chunk directory: tours from other settings are
#: never reused.
TSP_SOLVER_TAG = f"lkh3-elkai-runs{LKH_RUNS}-scale1e6"


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
    c = check_coords(coords, min_nodes=2)
    n = c.shape[0]
    t = check_tour(tour, n)
    kk = min(check_count("k", k), n - 1)
    d = distance_matrix(c)
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
    s = check_split("TSP", split)
    index = check_count("index", index, minimum=0)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(s, index)))
    n = int(rng.integers(TSP_MIN_NODES, TSP_MAX_NODES + 1))
    return rng.random((n, 2))


def _solve_job(job: tuple[int, str, int]) -> np.ndarray:
    """Worker: ``(seed, split, index) -> tour``."""
    seed, split, index = job
    return solve_tour(tsp_instance(seed, split, index))


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
            out.append(check_tour(tours[a:b], int(b - a)))
        return out
    except Exception as err:  # noqa: BLE001 - any bad file is re-solved
        log.warning("ignoring TSP chunk %s (%s); it will be re-solved", path, err)
        return None


def _write_chunk(path: str, seed: int, split: str, start: int, tours: list[np.ndarray]) -> None:
    """Write a chunk atomically: sizes, coordinates (checked on reload) and tours."""
    os.makedirs(osp.dirname(path), exist_ok=True)
    coords = [tsp_instance(seed, split, start + m) for m in range(len(tours))]
    atomic_save(path, lambda f: np.savez(
        f, num_nodes=np.array([t.shape[0] for t in tours], dtype=np.int64),
        coords=np.concatenate(coords), tours=np.concatenate(tours)))


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

    Raises:
        ValueError: for an unknown split, a negative seed, ``num_workers < 1`` or
            ``chunk_size < 1``.
    """
    check_split("TSP", split)
    seed = check_seed(seed)
    workers = default_workers() if num_workers is None else int(num_workers)
    if workers < 1:
        raise ValueError(f"num_workers must be at least 1, got {num_workers!r}")
    chunk_size = check_count("chunk_size", chunk_size)

    def solve(indices: list[int]) -> Iterator[np.ndarray]:
        # fork: the workers only run NumPy and LKH, and skip re-importing torch
        return parallel_map(_solve_job, [(seed, split, i) for i in indices], workers, fork=True,
                            maxtasksperchild=1000)

    if chunk_dir is None:
        return list(solve(list(range(count))))
    chunk_dir = os.fspath(chunk_dir)
    return resumable_map(
        solve, count, chunk_size,
        read_chunk=lambda a, b: _read_chunk(_chunk_path(chunk_dir, split, a, b), seed, split,
                                            a, b),
        write_chunk=lambda a, b, tours: _write_chunk(_chunk_path(chunk_dir, split, a, b), seed,
                                                     split, a, tours),
        what=f"TSP {split} tours ({workers} worker(s))",
    )


def generate_tsp(
    num_graphs: Sequence[int] = TSP_NUM_GRAPHS,
    seed: int = 0,
    *,
    num_workers: int | None = None,
    chunk_dir: str | os.PathLike | None = None,
    chunk_size: int = TSP_CHUNK_SIZE,
) -> dict[str, list[Data]]:
    """Generate the TSP splits (see the module docstring for the procedure).

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
    for split, count in zip(SPLITS, counts):
        tours = solve_split_tours(split, count, seed, num_workers=num_workers,
                                  chunk_dir=chunk_dir, chunk_size=chunk_size)
        out[split] = [tsp_graph(tsp_instance(seed, split, i), tour)
                      for i, tour in enumerate(tours)]
    return out


# --------------------------------------------------------------------------------------------
# Dataset
# --------------------------------------------------------------------------------------------


class TSP(GeneratedDataset):
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
    tour edges). Metric:
    :func:`graph_transformers.training.metrics.f1_positive`.

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
        self, root: PathLike | None = None, split: str = "train", seed: int = 0,
        transform: Transform = None, pre_transform: Transform = None, force_reload: bool = False, *,
        num_graphs: Sequence[int] | None = None, num_workers: int | None = None,
    ) -> None:
        self.num_graphs = TSP_NUM_GRAPHS if num_graphs is None else check_split_counts(
            "num_graphs", num_graphs)
        self.num_workers = None if num_workers is None else check_count("num_workers",
                                                                         num_workers)
        super().__init__(root, split, seed, transform, pre_transform, force_reload)

    def _size_tag(self) -> str:
        return size_tag("_n", self.num_graphs, TSP_NUM_GRAPHS)

    @property
    def tour_dir(self) -> str:
        """Directory of the solved-tour chunk files."""
        return osp.join(self.root, "tours", f"{TSP_SOLVER_TAG}_seed{self.seed}")

    def _generate(self) -> Iterator[list[Data]]:
        # solve every split first (the long part, resumable), then build one split at a time
        tours = {
            split: solve_split_tours(split, count, self.seed, num_workers=self.num_workers,
                                     chunk_dir=self.tour_dir)
            for split, count in zip(SPLITS, self.num_graphs)
        }
        for split in SPLITS:
            yield [tsp_graph(tsp_instance(self.seed, split, i), tour)
                   for i, tour in enumerate(tours.pop(split))]


def tsp_fields(data: Data) -> Data:
    """A graph of TSP's published files in the generated fields: ``x`` ``FloatTensor [N, 2]``,
    ``edge_attr`` ``FloatTensor [E, 1]`` (edge length), ``y`` ``LongTensor [E]``
    (:class:`~graph_transformers.data.published.ToBenchmarkFields`).

    Raises:
        DataError: a field is missing, or the coordinates are not ``[N, 2]``.
    """
    require_fields(data, "TSP", "x", "edge_index", "edge_attr", "y")
    if data.x.dim() != 2 or data.x.size(1) != 2:
        raise DataError(f"TSP: expected node coordinates [N, 2], got {list(data.x.shape)}")
    return Data(x=data.x.float(), edge_index=data.edge_index.long(),
                edge_attr=data.edge_attr.float().reshape(-1, 1), y=data.y.reshape(-1).long())


# --------------------------------------------------------------------------------------------
# Loader and registry entry
# --------------------------------------------------------------------------------------------
def load_tsp(
    root: PathLike, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, source: str = "generated",
    seed: int = 0, data_dir: PathLike | None = None, num_graphs: Sequence[int] | None = None,
) -> GNNBenchmark | TSP:
    """One split of TSP (``data.name: tsp``): the published ``TSP_v2.pt`` read by PyG's
    ``GNNBenchmarkDataset`` (``source="canonical"``, under ``root/canonical/TSP/``) or the
    instances generated and solved in code (``source="generated"``, :class:`TSP`, cached under
    ``root/TSP/``; ``seed`` and ``num_graphs`` apply to this one). The other arguments and the
    errors: :func:`~graph_transformers.data.published.published_or_generated`.
    """
    return published_or_generated(
        "TSP", source, root, split, transform, pre_transform, force_reload, data_dir=data_dir,
        generated=TSP, published=partial(GNNBenchmark, name="TSP"), seed=seed,
        num_graphs=num_graphs)


#: ``data.name: tsp``
TSP_SPEC = DatasetSpec("tsp", "edge", "classification", TSP_NUM_CLASSES, "f1", load_tsp,
                       node_dim=2, edge_dim=1, source="generated", published=True,
                       params=("seed", "data_dir", "num_graphs"))
