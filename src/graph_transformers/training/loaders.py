"""The data loaders of a run: graph batches (dealt to the ranks of a DDP run), neighbour-sampled
seed nodes or Cluster-GCN batches of one graph (:func:`make_loader`), and the evaluation
loaders of the final evaluation (:func:`eval_loader`)."""
from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import BatchSampler, SequentialSampler
from torch_geometric.loader import DataLoader

from ..data.sampler import (
    DistributedBatchSampler,
    DistributedSizeBucketBatchSampler,
    EpochShuffleSampler,
    graph_sizes,
)
from .config import Config
from .device import loader_options


class SeedNodeMask:
    """``NeighborLoader`` transform: ``node_mask`` = the batch's seed nodes (its first
    ``batch_size`` nodes), so the loss and metrics count each sampled seed once."""

    def __call__(self, data):
        """Sets ``data.node_mask`` on the sampled batch ``data`` and returns it."""
        mask = torch.zeros(data.num_nodes, dtype=torch.bool)
        mask[: data.batch_size] = True
        data.node_mask = mask
        return data


def make_loader(config: Config, dataset, split: str):
    """The loader of one split: PyG's ``DataLoader`` over graphs, or, with
    ``data.num_neighbors`` set, a neighbour-sampling loader (PyG's ``NeighborLoader``, or its
    ``NodeLoader`` with :class:`~graph_transformers.data.sampling.UniformNeighborSampler` where
    ``pyg-lib``/``torch-sparse`` are missing) over the seed nodes of the split's
    ``node_mask`` in the dataset's single graph. With ``data.bucket_by_size`` the training
    batches come from a :class:`~graph_transformers.data.sampler.SizeBucketBatchSampler`;
    evaluation batches keep the dataset's order (metrics averaged per batch, as the benchmark's
    weighted accuracy, depend on batch composition).

    With ``data.sampler: cluster``, Cluster-GCN batches of the single graph
    (:func:`~graph_transformers.data.cluster.cluster_loader`): ``data.clusters_per_batch`` of
    ``data.num_parts`` METIS clusters merged at random per training batch (seeded by
    ``seed + epoch``), with the edges between them; evaluation goes over the clusters in order,
    ``data.eval_clusters_per_batch`` at a time, each node of the split once. Only the clusters
    holding nodes of the split's ``node_mask`` are used, and only those nodes count. The METIS
    partition is cached in ``partitions/`` next to the dataset's processed files.

    Graph loaders deal their batches to the ranks of a DDP run themselves
    (:class:`~graph_transformers.data.sampler.DistributedBatchSampler`; the trainer runs with
    ``use_distributed_sampler=False``): training batches padded to equal counts per rank,
    evaluation batches exactly the single-process ones, each on one rank. In a single process
    they are the batches of PyG's ``DataLoader`` (``shuffle`` for training) unchanged.

    Args:
        config: the run's config.
        dataset: the split's dataset.
        split: ``"train"`` (shuffled training batches) or another split's name.

    Returns:
        the loader.

    Raises:
        ValueError: when neighbour sampling or cluster batches are asked of a dataset that is
            not one graph with a node mask.
        MissingDependencyError: for cluster batches without a METIS backend (names the
            ``large`` extra).
    """
    train = split == "train"
    bs = config.data.batch_size if train else (config.data.eval_batch_size or
                                               config.data.batch_size)
    workers = loader_options(config.data.num_workers, config.data.pin_memory,
                             config.trainer.accelerator, config.trainer.devices)
    cluster = config.data.sampler == "cluster"
    if config.data.num_neighbors is None and not cluster:
        if config.data.bucket_by_size and train:
            sampler = DistributedSizeBucketBatchSampler(
                graph_sizes(dataset), bs, window=config.data.bucket_window, seed=config.seed)
        elif train:
            sampler = DistributedBatchSampler(
                BatchSampler(EpochShuffleSampler(len(dataset), seed=config.seed), bs, False))
        else:
            sampler = DistributedBatchSampler(
                BatchSampler(SequentialSampler(range(len(dataset))), bs, False),
                remainder="uneven")
        return DataLoader(dataset, batch_sampler=sampler, **workers)
    from ..data.sampling import neighbor_loader
    if len(dataset) != 1 or getattr(dataset[0], "node_mask", None) is None:
        what = ("data.sampler: cluster (Cluster-GCN batches)" if cluster else
                "data.num_neighbors (neighbour sampling)")
        raise ValueError(f"{what} needs a single-graph node task "
                         f"with split masks (e.g. cora, citeseer, synthetic_large); "
                         f"{config.data.name!r} has {len(dataset)} graphs")
    data = dataset[0]
    if cluster:
        return _cluster_loader(config, dataset, train)
    return neighbor_loader(data, config.data.num_neighbors, batch_size=bs,
                           input_nodes=data.node_mask, shuffle=train, transform=SeedNodeMask(),
                           **workers)


def _cluster_loader(config: Config, dataset, train: bool,
                    world: tuple[int, int] | None = None):
    """The Cluster-GCN loader of a one-graph split (:func:`make_loader`); ``world``:
    ``(num_replicas, rank)`` to deal the batches for, ``None``: the process group's."""
    from ..data.cluster import cluster_loader
    data = dataset[0]
    q = config.data.clusters_per_batch or 1
    if not train:
        q = config.data.eval_clusters_per_batch or q
    num_replicas, rank = world if world is not None else (None, None)
    return cluster_loader(data, config.data.num_parts, q, node_mask=data.node_mask,
                          shuffle=train, seed=config.seed,
                          cache_dir=_partition_dir(config, dataset), num_replicas=num_replicas,
                          rank=rank, **loader_options(config.data.num_workers,
                                                      config.data.pin_memory,
                                                      config.trainer.accelerator,
                                                      config.trainer.devices))


def _partition_dir(config: Config, dataset) -> Path:
    """Where a graph's METIS partitions are cached: ``partitions/`` next to the dataset's
    processed files, else in the data cache (``data.cache_dir``)."""
    from ..data.cache import resolve_cache_dir
    try:
        processed = getattr(dataset, "processed_dir", None)
    except (TypeError, AttributeError):  # a dataset without a root
        processed = None
    if processed:
        return Path(processed) / "partitions"
    return resolve_cache_dir(config.data.cache_dir) / "partitions"


def make_loaders(config: Config, splits: dict) -> dict[str, DataLoader]:
    """:func:`make_loader` for every split.

    Args:
        config: the run's config.
        splits: ``{split name: dataset}``.

    Returns:
        dict: ``{split name: loader}``.
    """
    return {s: make_loader(config, ds, s) for s, ds in splits.items()}


def eval_loader(config: Config, dataset, split: str):
    """Evaluation loader: graphs in order (``eval_batch_size``), or the neighbour-sampling loader
    of the split's seed nodes, or all of the split's Cluster-GCN batches (rank 0 evaluates alone
    after a DDP fit, while the process group still exists).

    Args:
        config: the run's config.
        dataset: the split's dataset.
        split: the split's name.

    Returns:
        the loader.
    """
    if config.data.sampler == "cluster":
        return _cluster_loader(config, dataset, train=False, world=(1, 0))
    if config.data.num_neighbors is not None:
        return make_loader(config, dataset, "eval")
    return DataLoader(dataset, batch_size=config.data.eval_batch_size or config.data.batch_size)
