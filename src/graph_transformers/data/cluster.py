"""Partitioned mini-batches for node tasks on one large graph (Cluster-GCN: Chiang, Liu, Si, Li,
Bengio & Hsieh, "Cluster-GCN: An Efficient Algorithm for Training Deep and Large Graph
Convolutional Networks", KDD 2019).

The graph's ``N`` nodes are split once by METIS into ``num_parts`` clusters that keep most edges
inside a cluster (:func:`metis_partition`; the edges are symmetrized and self-loops dropped for
METIS only). A training batch is the union of ``clusters_per_batch`` clusters drawn at random
without replacement, with every edge between two of its nodes restored, the between-cluster
ones included (the paper's *stochastic multiple partitions*, Algorithm 1): the batch is exactly
the subgraph of the graph induced by its nodes. Each epoch's draw is seeded by ``seed + epoch``
(:class:`ClusterBatchSampler`), so every rank of a DDP run computes the same list of batches and
takes its own share (:func:`~graph_transformers.data.sampler.deal_batches`).

Where PyG's METIS backend is installed (``torch-sparse`` or ``pyg-lib`` built with METIS), the
partition comes from it, called as PyG's :class:`~torch_geometric.loader.ClusterData` calls it;
otherwise from ``pymetis`` (the ``large`` extra: ``pip install 'graph-transformers[large]'``),
with ``seed`` as METIS' own seed (METIS: Karypis & Kumar, "A Fast and High Quality Multilevel
Scheme for Partitioning Irregular Graphs", SIAM J. Sci. Comput. 1998). The assignment is cached
as ``metis-<graph>-p<num_parts>-s<seed>-<backend>.pt`` in a ``partitions`` folder next to the
dataset's processed files, keyed by a hash of the graph's edges, so it is computed once.
The batches themselves come from PyG's ``ClusterData`` (nodes sorted by cluster, edges in CSR) and
``ClusterLoader`` (merging clusters and restoring the edges between them).

A batch is a :class:`~torch_geometric.data.Data` with the node and edge attributes of its
subgraph, ``n_id`` (``[num_nodes_in_batch]``: the nodes' ids in the whole graph) and
``node_mask`` (the batch's nodes of the split: the loss and metrics count only those). Clusters
holding no node of the split are left out of that split's batches, so no batch is without a
target.
"""
from __future__ import annotations

import copy
import hashlib
import importlib.util
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch_geometric.typing as pyg_typing
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.index import index2ptr
from torch_geometric.loader import ClusterData, ClusterLoader
from torch_geometric.utils import remove_self_loops, to_undirected

from .._optional import require
from ..fileio import atomic_save
from .cache import cache_lock
from .sampler import DistributedBatchSampler, EpochSeededBatchSampler

log = logging.getLogger(__name__)

#: what the missing-backend error asks for
FEATURE = "data.sampler: cluster (METIS graph partitions)"
#: the partition :func:`shared_partition` keeps (``key``, ``partition``)
_SHARED: dict = {}


def metis_backend() -> str | None:
    """The METIS implementation :func:`metis_partition` uses for Cluster-GCN's clustering
    (Chiang et al. 2019, Cluster-GCN, KDD): ``"torch-sparse"`` or ``"pyg-lib"`` (PyG's own, as
    :class:`~torch_geometric.loader.ClusterData` calls it), else ``"pymetis"`` when it is
    installed, else ``None``. Raises nothing."""
    if pyg_typing.WITH_TORCH_SPARSE:
        return "torch-sparse"
    if getattr(pyg_typing, "WITH_METIS", False):
        return "pyg-lib"
    return "pymetis" if importlib.util.find_spec("pymetis") is not None else None


def _metis_csr(edge_index: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """``(indptr [N + 1], index [E'])``: the symmetrized graph without self-loops in CSR, as
    METIS needs it."""
    ei, _ = remove_self_loops(edge_index.cpu().long())
    row, col = to_undirected(ei, num_nodes=num_nodes)  # coalesced: sorted by row, no duplicates
    return index2ptr(row, size=num_nodes), col


def metis_partition(edge_index: Tensor, num_nodes: int, num_parts: int, seed: int = 0,
                    backend: str | None = None) -> Tensor:
    """The METIS part (``0 .. num_parts - 1``) of every node: a k-way partition of the
    symmetrized graph minimizing the edges cut, with parts of near-equal size: the clustering
    step of Cluster-GCN (Chiang et al. 2019, Cluster-GCN, KDD; Algorithm 1, line 1), by METIS
    (Karypis & Kumar 1998).

    Args:
        edge_index: ``[2, num_edges]``; its direction and self-loops do not matter.
        num_nodes: ``N``.
        num_parts: number of clusters, ``1 <= num_parts <= N``.
        seed: METIS' random seed (``pymetis`` only: PyG's backends take none and are
            deterministic).
        backend: ``"torch-sparse"``, ``"pyg-lib"`` or ``"pymetis"``; ``None``:
            :func:`metis_backend`.

    Returns:
        ``[num_nodes]`` long tensor of part ids (on the CPU). A part may be empty on a tiny or
        very disconnected graph.

    Raises:
        ValueError: for ``num_parts`` outside ``1 .. N`` or a malformed ``edge_index``.
        MissingDependencyError: when no METIS backend is installed (names the ``large`` extra).
    """
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be [2, num_edges], got {tuple(edge_index.shape)}")
    if not 1 <= num_parts <= max(num_nodes, 1):
        raise ValueError(f"num_parts must be in 1..{num_nodes} (the number of nodes), "
                         f"got {num_parts}")
    backend = backend or metis_backend()
    if backend is None:
        require("pymetis", FEATURE)  # raises, naming the extra
    if num_parts == 1:
        return torch.zeros(num_nodes, dtype=torch.long)
    indptr, index = _metis_csr(edge_index, num_nodes)
    if backend == "torch-sparse":
        try:
            return torch.ops.torch_sparse.partition(indptr, index, None, num_parts, False).long()
        except (AttributeError, RuntimeError) as err:  # built without METIS: as ClusterData
            log.debug("torch-sparse has no METIS (%s); trying the next backend", err)
            backend = "pyg-lib" if getattr(pyg_typing, "WITH_METIS", False) else "pymetis"
    if backend == "pyg-lib":
        return pyg_typing.pyg_lib.partition.metis(indptr, index, num_parts).long()
    pymetis = require("pymetis", FEATURE)
    dtype = pymetis.zero_copy_dtype()
    adjacency = pymetis.CSRAdjacency(indptr.numpy().astype(dtype), index.numpy().astype(dtype))
    result = pymetis.part_graph(num_parts, adjacency,
                                options=pymetis.Options(seed=int(seed) % (2 ** 31)))
    return torch.from_numpy(np.asarray(result.vertex_part, dtype=np.int64))


def cut_fraction(edge_index: Tensor, assignment: Tensor) -> float:
    """The fraction of the ``[2, num_edges]`` edges whose ends lie in different parts of
    ``assignment`` (``[num_nodes]``): what a batch of single clusters would lose, the quantity
    METIS minimizes (Chiang et al. 2019, Cluster-GCN, KDD: the between-cluster links that
    batches of merged clusters restore). 0 for a graph without edges. Raises nothing."""
    if edge_index.size(1) == 0:
        return 0.0
    a = assignment.to(edge_index.device)
    return float((a[edge_index[0]] != a[edge_index[1]]).double().mean())


def graph_key(edge_index: Tensor, num_nodes: int) -> str:
    """A short hash (16 hex digits) of a graph's structure (``num_nodes`` and ``edge_index``
    ``[2, num_edges]``), the key of its cached Cluster-GCN partitions
    (:func:`cached_metis_partition`). Raises nothing."""
    h = hashlib.sha256(f"{num_nodes}:{tuple(edge_index.shape)}".encode())
    h.update(edge_index.detach().cpu().to(torch.long).contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def cached_metis_partition(edge_index: Tensor, num_nodes: int, num_parts: int, seed: int = 0,
                           cache_dir: str | Path | None = None) -> Tensor:
    """:func:`metis_partition` (Cluster-GCN's clustering, Chiang et al. 2019, KDD), computed once
    and cached in ``cache_dir`` as
    ``metis-<graph_key>-p<num_parts>-s<seed>-<backend>.pt`` (written atomically, under a file
    lock so that the ranks of a DDP run compute it once). A cached file that does not hold a
    valid ``[num_nodes]`` assignment is recomputed.

    Args:
        edge_index: ``[2, num_edges]``, as :func:`metis_partition`.
        num_nodes: ``N``, as :func:`metis_partition`.
        num_parts: number of clusters, as :func:`metis_partition`.
        seed: METIS' random seed, as :func:`metis_partition` (also part of the file name).
        cache_dir: where the file lives; ``None``: not cached.

    Returns:
        ``[num_nodes]`` long tensor of part ids.

    Raises:
        ValueError, MissingDependencyError: as :func:`metis_partition`.
    """
    backend = metis_backend()
    if backend is None:
        require("pymetis", FEATURE)
    if cache_dir is None:
        return metis_partition(edge_index, num_nodes, num_parts, seed, backend)
    name = f"metis-{graph_key(edge_index, num_nodes)}-p{num_parts}-s{seed}-{backend}.pt"
    path = Path(cache_dir) / name

    def cached() -> Tensor | None:
        if not path.is_file():
            return None
        try:
            part = torch.load(path, weights_only=True)
        except Exception as err:  # noqa: BLE001 - a broken cache file is recomputed
            log.warning("%s is unreadable (%s); recomputing the partition", path, err)
            return None
        ok = (isinstance(part, Tensor) and part.dtype == torch.long
              and part.shape == (num_nodes,) and (num_nodes == 0 or (
                  int(part.min()) >= 0 and int(part.max()) < num_parts)))
        return part if ok else None

    part = cached()
    if part is not None:
        return part
    with cache_lock(name, cache_dir):
        part = cached()  # another rank may have written it meanwhile
        if part is None:
            part = metis_partition(edge_index, num_nodes, num_parts, seed, backend)
            log.info("METIS (%s): %d nodes into %d parts (seed %d), %.1f%% of the edges between "
                     "parts; cached in %s", backend, num_nodes, num_parts, seed,
                     100 * cut_fraction(edge_index, part), path)
            try:
                atomic_save(path, lambda f: torch.save(part, f))
            except OSError as err:  # a read-only cache: use it uncached
                log.warning("could not cache the partition at %s (%s)", path, err)
    return part


class ClusterPartition(ClusterData):
    """One graph partitioned into ``num_parts`` METIS clusters (Chiang et al. 2019, Cluster-GCN,
    KDD): PyG's :class:`~torch_geometric.loader.ClusterData` (nodes sorted by cluster, every edge
    kept in CSR) on the cached assignment of :func:`cached_metis_partition`.

    The graph gets ``n_id = arange(N)`` (the original node ids, carried into every batch);
    ``node_mask`` is dropped (each loader sets its split's own), so the train, validation and
    test loaders of one graph can share one partition (:func:`shared_partition`).

    Memory: a copy of the node and edge attributes in cluster order, plus the CSR of the
    ``E`` edges and the node and edge permutations (about ``2N + 2E`` longs) and the
    assignment (``N`` longs).

    Args:
        data: the graph (``edge_index [2, E]``, node attributes ``[N, ·]``, edge attributes
            ``[E, ·]``).
        num_parts: ``p``, the number of clusters (``1 <= p <= N``).
        seed: METIS' seed (``pymetis``), part of the cache key.
        cache_dir: where the assignment is cached (``None``: not cached).

    Attributes:
        assignment: ``[N]`` the cluster of each node (original node order).
        sizes: ``[p]`` nodes per cluster.

    Raises:
        ValueError: for a graph without ``edge_index`` or ``num_parts`` outside ``1 .. N``.
        MissingDependencyError: when no METIS backend is installed.
    """

    def __init__(self, data: Data, num_parts: int, seed: int = 0,
                 cache_dir: str | Path | None = None) -> None:
        if getattr(data, "edge_index", None) is None:
            raise ValueError("Cluster-GCN batches need a graph with an edge_index")
        data = copy.copy(data)
        if "node_mask" in data:
            del data.node_mask
        n = int(data.num_nodes)
        data.n_id = torch.arange(n)
        self.assignment = cached_metis_partition(data.edge_index, n, num_parts, seed, cache_dir)
        self.sizes = torch.bincount(self.assignment, minlength=num_parts)
        super().__init__(data, num_parts, log=False)

    def _metis(self, edge_index: Tensor, num_nodes: int) -> Tensor:
        # ClusterData's hook for the node → cluster assignment: the cached one
        return self.assignment.to(edge_index.device)


def shared_partition(data: Data, num_parts: int, seed: int = 0,
                     cache_dir: str | Path | None = None) -> ClusterPartition:
    """A :class:`ClusterPartition` (Chiang et al. 2019, Cluster-GCN, KDD) of ``data``
    (``edge_index [2, E]``, ``[N, ·]`` node and ``[E, ·]`` edge attributes), reused by the next
    call on a graph with the same attributes (the split datasets of a transductive task hold
    the same graph with another ``node_mask``), so the loaders of all splits keep one
    partitioned copy in memory. One partition is kept at a time.

    Raises:
        ValueError, MissingDependencyError: as :class:`ClusterPartition`.
    """
    h = hashlib.sha256(f"{num_parts}:{seed}:{cache_dir}".encode())
    for key in sorted(k for k in data.keys() if k != "node_mask"):  # noqa: SIM118 - Data API
        value = data[key]
        h.update(f"{key}:{type(value).__name__}".encode())
        if isinstance(value, Tensor):
            h.update(f"{value.dtype}:{tuple(value.shape)}".encode())
            h.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy()
                     .tobytes())
        else:
            h.update(repr(value).encode())
    key = h.hexdigest()
    if _SHARED.get("key") != key:
        _SHARED.clear()
        _SHARED.update(key=key, partition=ClusterPartition(data, num_parts, seed, cache_dir))
    return _SHARED["partition"]


def active_clusters(partition: ClusterPartition, node_mask: Tensor | None = None) -> list[int]:
    """The clusters holding at least one node of ``node_mask`` (``[N]`` bool; ``None``: all
    non-empty clusters), in ascending order: those a split's Cluster-GCN batches draw from (a
    cluster without a target node adds no loss term; Chiang et al. 2019, KDD). Raises nothing."""
    if node_mask is None:
        counts = partition.sizes
    else:
        counts = torch.bincount(partition.assignment[node_mask.cpu()],
                                minlength=partition.sizes.numel())
    return torch.nonzero(counts > 0).view(-1).tolist()


class ClusterBatchSampler(EpochSeededBatchSampler):
    """Groups of ``clusters_per_batch`` cluster ids: with ``shuffle``, a random permutation of
    ``clusters`` per epoch (seeded by ``seed + epoch``, the same on every rank) cut into groups
    (the random choice of ``q`` clusters without replacement of Cluster-GCN's stochastic
    multiple partitions, Chiang et al. 2019, KDD, Algorithm 1; an epoch visits every cluster
    once); without, ``clusters`` in their order. The last group may be smaller. Yields lists of
    cluster ids; ``len`` is ``ceil(len(clusters) / q)``.

    Args:
        clusters: the cluster ids to draw from.
        clusters_per_batch: ``q``, clusters merged per batch.
        shuffle: draw a new random grouping each epoch.
        seed: base seed; epoch ``t`` uses ``seed + t``.

    Raises:
        ValueError: for ``clusters_per_batch < 1``.
    """

    def __init__(self, clusters: Sequence[int], clusters_per_batch: int, shuffle: bool = True,
                 seed: int = 0) -> None:
        if clusters_per_batch < 1:
            raise ValueError(f"clusters_per_batch must be >= 1, got {clusters_per_batch}")
        self.clusters = torch.as_tensor(list(clusters), dtype=torch.long)
        self.clusters_per_batch, self.shuffle, self.seed = clusters_per_batch, shuffle, seed
        self.epoch = 0

    def batches(self) -> list[list[int]]:
        """This epoch's groups of cluster ids (without advancing the epoch)."""
        order = self.clusters
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed + self.epoch)
            order = order[torch.randperm(order.numel(), generator=g)]
        q = self.clusters_per_batch
        return [order[i:i + q].tolist() for i in range(0, order.numel(), q)]

    def __len__(self) -> int:
        return -(-self.clusters.numel() // self.clusters_per_batch)


class ClusterBatchLoader(ClusterLoader):
    """PyG's :class:`~torch_geometric.loader.ClusterLoader` over the groups of a batch sampler:
    each batch is the subgraph induced by the nodes of its clusters, the edges between them
    restored (Chiang et al. 2019, Cluster-GCN, KDD, Algorithm 1), with ``n_id``
    (``[num_nodes_in_batch]`` original ids) and ``node_mask`` (``[num_nodes_in_batch]`` bool:
    the batch's nodes in the ``[N]`` ``node_mask``; ``None``: all). ``kwargs`` go to the
    ``DataLoader`` (``batch_sampler``, ``num_workers``, …). Raises nothing itself."""

    def __init__(self, partition: ClusterPartition, node_mask: Tensor | None = None,
                 **kwargs) -> None:
        self.node_mask = None if node_mask is None else node_mask.cpu().bool()
        super().__init__(partition, **kwargs)

    def _collate(self, batch) -> Data:
        out = super()._collate(batch)
        out.node_mask = (torch.ones(out.num_nodes, dtype=torch.bool) if self.node_mask is None
                         else self.node_mask[out.n_id])
        return out


def cluster_loader(data: Data, num_parts: int, clusters_per_batch: int,
                   node_mask: Tensor | None = None, shuffle: bool = False, seed: int = 0,
                   cache_dir: str | Path | None = None, num_replicas: int | None = None,
                   rank: int | None = None, remainder: str | None = None,
                   **kwargs) -> ClusterBatchLoader:
    """Cluster-GCN batches of one graph (Chiang et al. 2019, KDD; module docstring): each batch
    merges ``clusters_per_batch`` METIS clusters with all edges between their nodes;
    ``node_mask`` marks the nodes that count.

    Only the clusters holding a node of ``node_mask`` are drawn. With ``shuffle`` (training) the
    grouping is redrawn every epoch from ``seed + epoch``; without (evaluation), the clusters go
    in ascending order, so every node of ``node_mask`` is in exactly one batch and the batches
    are the same at every call. Under DDP (``num_replicas`` ranks, default: the process group's)
    rank ``r`` takes the global batches ``r, r + W, …``
    (:class:`~graph_transformers.data.sampler.DistributedBatchSampler`).

    Args:
        data: the graph; a ``[N, ·]`` node attribute per node, ``[E, ·]`` per edge.
        num_parts: ``p``, METIS clusters (``1 <= p <= N``).
        clusters_per_batch: ``q``, clusters per batch; a batch holds about ``q · N / p`` nodes.
        node_mask: ``[N]`` bool, the split's nodes (``None``: all).
        shuffle: random groups per epoch (training).
        seed: seeds METIS (with the ``pymetis`` backend) and the groups.
        cache_dir: where the partition is cached (``None``: not cached).
        num_replicas: the number of DDP ranks (``None``: from the process group).
        rank: this process's DDP rank (``None``: from the process group).
        remainder: how batches left over by the ranks are handled (``"pad"``, ``"drop"``,
            ``"uneven"``; ``None``: ``"pad"`` with ``shuffle``, else ``"uneven"``).
        **kwargs: to the ``DataLoader``, e.g. ``num_workers``.

    Returns:
        A loader of :class:`~torch_geometric.data.Data` batches with ``n_id`` and ``node_mask``.

    Raises:
        ValueError: for ``num_parts`` outside ``1 .. N``, ``clusters_per_batch < 1``, or a
            ``node_mask`` of another length.
        MissingDependencyError: when no METIS backend is installed (names the ``large`` extra).
    """
    if node_mask is not None and node_mask.numel() != data.num_nodes:
        raise ValueError(f"node_mask has {node_mask.numel()} entries for {data.num_nodes} nodes")
    partition = shared_partition(data, num_parts, seed, cache_dir)
    sampler = ClusterBatchSampler(active_clusters(partition, node_mask), clusters_per_batch,
                                  shuffle=shuffle, seed=seed)
    batches = DistributedBatchSampler(sampler, num_replicas=num_replicas, rank=rank,
                                      remainder=remainder or ("pad" if shuffle else "uneven"))
    return ClusterBatchLoader(partition, node_mask, batch_sampler=batches, **kwargs)
