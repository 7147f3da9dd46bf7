"""A synthetic large graph for node classification at scale: one stochastic-block-model graph with
``num_nodes`` nodes (default 100,000), ``num_classes`` communities, average degree
``avg_degree``, and noisy node features, split by node masks like the Planetoid graphs.

Generation (vectorized, seed-deterministic): every node gets a class uniformly at random and a
Gaussian class centroid ``μ_c ∈ R^F``; its features are ``signal · μ_c + N(0, I)`` (by default the
features alone are weak evidence, so neighbourhood aggregation helps). Each node draws
``avg_degree / 2`` edge endpoints, each inside its own class with probability ``p_intra`` and
uniformly at random otherwise; the graph is symmetrized, self-loops and duplicates are removed, so
the average degree is close to ``avg_degree``. Masks: a random 60 / 20 / 20 % train / val / test
split of the nodes.

This is the "synthetic large graph" of the large-graph configs (``configs/large/``), meant for
neighbour sampling (``data.num_neighbors``); its size is a data option.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops

from ...core.dense import format_bytes
from ...core.memory import memory_limit
from ...data.cache import KeyedCacheDataset, pre_transform_key
from ...data.generated import PathLike, Transform, check_seed, split_mask
from ...data.registry import DatasetSpec

#: classes and feature width of the registered dataset (``DatasetSpec`` fixes them)
NUM_CLASSES = 10
FEATURE_DIM = 32


#: bytes :func:`make_sbm_graph` holds at its peak per edge endpoint drawn (the int64 endpoint
#: lists, both directions, and coalescing's sort) and per feature (float32 result and noise);
#: measured: 1.1 GB at its peak for 10⁶ nodes at average degree 10 (10⁷ edges, 32 features)
GENERATION_BYTES_PER_EDGE = 100
GENERATION_BYTES_PER_FEATURE = 8
GENERATION_BYTES_PER_NODE = 64


def sbm_generation_bytes(num_nodes: int, avg_degree: float = 10.0,
                         feature_dim: int = FEATURE_DIM) -> int:
    """Peak bytes :func:`make_sbm_graph` needs for a graph of ``num_nodes`` nodes (an upper
    estimate, from the constants above)."""
    per_node = max(1, int(round(avg_degree / 2))) * 2  # edges per node, both directions
    return int(num_nodes) * (per_node * GENERATION_BYTES_PER_EDGE
                             + feature_dim * GENERATION_BYTES_PER_FEATURE
                             + GENERATION_BYTES_PER_NODE)


def check_generation_memory(num_nodes: int, avg_degree: float = 10.0,
                            feature_dim: int = FEATURE_DIM, limit: int | None = None,
                            source: str = "") -> None:
    """Refuses, before anything is allocated, a graph that :func:`make_sbm_graph` could not
    generate in the memory this process may use.

    Args:
        num_nodes: the number of nodes, as :func:`make_sbm_graph`.
        avg_degree: the average degree, as :func:`make_sbm_graph`.
        feature_dim: the width of ``x``, as :func:`make_sbm_graph`.
        limit: bytes available (default: :func:`~graph_transformers.core.memory.memory_limit`).
        source: where ``limit`` comes from, for the message.

    Raises:
        ValueError: naming the size, the memory it needs and the memory there is.
    """
    if limit is None:
        limit, source = memory_limit()
        if limit is None:
            return
    need = sbm_generation_bytes(num_nodes, avg_degree, feature_dim)
    if need > limit:
        raise ValueError(
            f"synthetic_large: generating a graph of {num_nodes:,} nodes at average degree "
            f"{avg_degree:g} needs ≈{format_bytes(need)}, more than the {format_bytes(limit)} "
            f"this process may use ({source or 'the given limit'}); lower "
            "data.options.num_nodes or data.options.avg_degree")


def make_sbm_graph(num_nodes: int, num_classes: int = NUM_CLASSES, avg_degree: float = 10.0,
                   p_intra: float = 0.7, feature_dim: int = FEATURE_DIM, signal: float = 0.5,
                   seed: int = 0) -> Data:
    """One SBM graph (module docstring).

    Returns:
        ``Data`` with ``x [n, feature_dim]`` float, ``y [n]`` long,
        ``edge_index [2, ~n·avg_degree]`` (both directions), and bool ``train_mask`` /
        ``val_mask`` / ``test_mask`` ``[n]``.

    Raises:
        ValueError: for ``num_nodes < num_classes``, ``avg_degree <= 0``, ``p_intra`` outside
            ``[0, 1]``, a bad seed, or a graph too large for the memory this process may use
            (:func:`check_generation_memory`, checked before anything is allocated).
    """
    check_seed(seed)
    if num_nodes < num_classes or num_classes < 2:
        raise ValueError(f"need num_nodes >= num_classes >= 2, got {num_nodes}, {num_classes}")
    if avg_degree <= 0:
        raise ValueError(f"avg_degree must be > 0, got {avg_degree}")
    if not 0.0 <= p_intra <= 1.0:
        raise ValueError(f"p_intra must be in [0, 1], got {p_intra}")
    check_generation_memory(num_nodes, avg_degree, feature_dim)
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, num_classes, (num_nodes,), generator=g)
    order = torch.argsort(y, stable=True)  # nodes grouped by class
    sizes = torch.bincount(y, minlength=num_classes)
    starts = torch.cumsum(sizes, 0) - sizes
    per_node = max(1, int(round(avg_degree / 2)))
    src = torch.arange(num_nodes).repeat_interleave(per_node)
    intra = torch.rand(src.numel(), generator=g) < p_intra
    c = y[src]
    in_class = order[starts[c] + (torch.rand(src.numel(), generator=g) * sizes[c]).long()
                     .clamp_max(sizes[c] - 1)]
    anywhere = torch.randint(0, num_nodes, (src.numel(),), generator=g)
    dst = torch.where(intra, in_class, anywhere)
    edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    edge_index, _ = remove_self_loops(edge_index)
    edge_index = coalesce(edge_index, num_nodes=num_nodes)
    centroids = torch.randn(num_classes, feature_dim, generator=g)
    x = signal * centroids[y] + torch.randn(num_nodes, feature_dim, generator=g)
    perm = torch.randperm(num_nodes, generator=g)
    n_train, n_val = int(0.6 * num_nodes), int(0.2 * num_nodes)
    masks = {}
    for name, idx in (("train", perm[:n_train]), ("val", perm[n_train:n_train + n_val]),
                      ("test", perm[n_train + n_val:])):
        m = torch.zeros(num_nodes, dtype=torch.bool)
        m[idx] = True
        masks[f"{name}_mask"] = m
    return Data(x=x, y=y, edge_index=edge_index, num_nodes=num_nodes, **masks)


class SyntheticLargeGraph(KeyedCacheDataset):
    """The graph of :func:`make_sbm_graph` as a one-graph dataset, cached under
    ``root/processed/<options + pre-transform key>/`` (the encodings of a large graph, e.g. LapPE
    by the sparse eigensolver, are computed once).

    Args:
        root: cache folder.
        num_nodes, avg_degree, p_intra, signal, seed: :func:`make_sbm_graph`.
        transform, pre_transform, force_reload: as in PyG (the loader's transform sets
            ``node_mask`` for the split, :func:`load_synthetic_large`).
    """

    def __init__(self, root: str, num_nodes: int = 100_000, avg_degree: float = 10.0,
                 p_intra: float = 0.7, signal: float = 0.5, seed: int = 0,
                 transform: Callable | None = None, pre_transform: Callable | None = None,
                 force_reload: bool = False) -> None:
        self.options = dict(num_nodes=int(num_nodes), avg_degree=float(avg_degree),
                            p_intra=float(p_intra), signal=float(signal), seed=int(seed))
        self._key = pre_transform_key(json.dumps(self.options, sort_keys=True) + "|" +
                                      pre_transform_key(pre_transform))
        super().__init__(root, transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[0])

    @property
    def processed_file_names(self) -> list[str]:
        return ["graph.pt"]

    def download(self) -> None:  # generated in code
        return None

    def process(self) -> None:
        data = make_sbm_graph(**self.options)
        if self.pre_transform is not None:
            data = self.pre_transform(data)
        self.save([data], self.processed_paths[0])

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.options})"


def load_synthetic_large(
    root: PathLike, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, seed: int = 0,
    num_nodes: int = 100_000, avg_degree: float = 10.0, p_intra: float = 0.7,
    signal: float = 0.5,
) -> SyntheticLargeGraph:
    """The graph of ``data.name: synthetic_large`` (:class:`SyntheticLargeGraph`, cached under
    ``root/SyntheticLarge/``) with ``node_mask`` selecting the nodes of ``split``
    (:func:`~graph_transformers.data.generated.split_mask`, then ``transform``). The sizes
    are data options (``data.options.num_nodes``, ...)."""
    return SyntheticLargeGraph(
        root=str(Path(root) / "SyntheticLarge"), num_nodes=num_nodes, avg_degree=avg_degree,
        p_intra=p_intra, signal=signal, seed=seed, pre_transform=pre_transform,
        transform=split_mask(split, transform), force_reload=force_reload)


#: ``data.name: synthetic_large``
SYNTHETIC_LARGE_SPEC = DatasetSpec("synthetic_large", "node", "classification", NUM_CLASSES,
                                   "accuracy", load_synthetic_large, node_dim=FEATURE_DIM,
                                   source="generated", params=("seed", "num_nodes", "avg_degree",
                                                               "p_intra", "signal"))
