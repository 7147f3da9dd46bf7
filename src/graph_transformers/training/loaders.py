"""The data loaders of a run: graph batches (dealt to the ranks of a DDP run), neighbour-sampled
seed nodes or Cluster-GCN batches of one graph (:func:`make_loader`), and the evaluation
loaders of the final evaluation (:func:`eval_loader`)."""
from __future__ import annotations

import functools
import logging
from pathlib import Path

import torch
from torch.utils.data import BatchSampler, SequentialSampler
from torch_geometric.loader import DataLoader

from ..data.device_split import DeviceLoader
from ..data.sampler import (
    DistributedBatchSampler,
    DistributedSizeBucketBatchSampler,
    EpochShuffleSampler,
    graph_sizes,
)
from ..data.static_shapes import padding_report, static_loader
from ..errors import ConfigError
from .config import Config
from .device import eval_device, loader_options

_log = logging.getLogger(__name__)


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

    With ``data.static_shapes`` the training batches are packed and padded to fixed budgets
    (:mod:`graph_transformers.data.static_shapes`); evaluation batches stay ordinary PyG
    batches (exactly today's metrics, batch-mean ones included).

    With ``data.on_device`` the graph loaders are
    :class:`~graph_transformers.data.device_split.DeviceLoader` objects over the same batch
    samplers (the same batches, static-shape padding included): the split stored once on the
    run's device (resolved when first iterated), each batch gathered there.

    Args:
        config: the run's config.
        dataset: the split's dataset.
        split: ``"train"`` (shuffled training batches) or another split's name.

    Returns:
        the loader.

    Raises:
        ValueError: when neighbour sampling or cluster batches are asked of a dataset that is
            not one graph with a node mask.
        ConfigError: ``data.static_shapes`` with neighbour sampling, cluster batches or size
            buckets; ``data.on_device`` with neighbour sampling, cluster batches or a dataset
            with a per-access transform.
        DataError: a graph that fits no static-shape batch.
        MissingDependencyError: for cluster batches without a METIS backend (names the
            ``large`` extra).
    """
    train = split == "train"
    bs = config.data.batch_size if train else (config.data.eval_batch_size or
                                               config.data.batch_size)
    workers = loader_options(config.data.num_workers, config.data.pin_memory,
                             config.trainer.accelerator, config.trainer.devices)
    cluster = config.data.sampler == "cluster"
    if config.data.on_device and (config.data.num_neighbors is not None or cluster):
        raise ConfigError("data.on_device stores splits of whole graphs; neighbour sampling "
                          "(data.num_neighbors) and Cluster-GCN batches (data.sampler: cluster) "
                          "cut one graph per step: set data.on_device: false")
    if getattr(config.data, "static_shapes", False):
        if config.data.num_neighbors is not None or cluster or config.data.bucket_by_size:
            raise ConfigError("data.static_shapes packs whole graphs into fixed budgets: it "
                              "does not combine with data.num_neighbors, data.sampler: cluster "
                              "or data.bucket_by_size")
        if train:
            return _device_loader(config, dataset, _static_loader(config, dataset, bs, workers))
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
        return _device_loader(config, dataset,
                              DataLoader(dataset, batch_sampler=sampler, **workers))
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


def _static_loader(config: Config, dataset, batch_size: int, workers: dict):
    """The training loader of ``data.static_shapes`` (:func:`make_loader`): packed, padded
    batches (:func:`~graph_transformers.data.static_shapes.static_loader`) of budgets chosen
    from the split at ``batch_size``; the budgets and their padding fractions (one epoch's
    packing) are logged at INFO."""
    loader = static_loader(dataset, batch_size=batch_size, shuffle=True, seed=config.seed,
                           **workers)
    packing = loader.batch_sampler.sampler
    report = padding_report(packing.num_nodes, packing.num_edges, loader.budget,
                            packing.batches())
    b = loader.budget
    _log.info("static shapes: %d graphs, %d nodes, %d edges per batch, %d nodes per graph; "
              "padding %.1f%% of nodes, %.1f%% of edges, %.1f%% of graphs, %.1f%% of dense "
              "pairs; %.1f real graphs per batch", b.num_graphs, b.num_nodes, b.num_edges,
              b.max_nodes, 100 * report["nodes"], 100 * report["edges"], 100 * report["graphs"],
              100 * report["pairs"], report["graphs_per_batch"])
    return loader


def _device_loader(config: Config, dataset, loader):
    """``loader`` itself, or with ``data.on_device`` a
    :class:`~graph_transformers.data.device_split.DeviceLoader` of the same batch sampler (and
    the same static-shape padding when ``loader`` has a ``budget``) on the run's device
    (:func:`~.device.eval_device`, read at the first iteration: a DDP rank's own GPU)."""
    if not config.data.on_device:
        return loader
    transform = getattr(dataset, "transform", None)
    if transform is not None:
        raise ConfigError(f"data.on_device stores the split once, but {config.data.name!r} "
                          f"applies a transform on every access ({transform!r}): set "
                          "data.on_device: false")
    pad = None
    if getattr(loader, "budget", None) is not None:
        from ..data.static_shapes import pad_batch
        pad = functools.partial(pad_batch, budget=loader.budget)
    if getattr(loader, "num_workers", 0):
        _log.info("data.on_device: batches are gathered on the device in the training process; "
                  "data.num_workers is not used")
    return DeviceLoader(dataset, batch_sampler=loader.batch_sampler, transform=pad,
                        device=lambda: eval_device(config.trainer.accelerator))


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
