"""Runs a config end to end: data, model, Lightning training, evaluation at the best-val
checkpoint, and the run directory (``config.yaml``, ``epochs.csv``, ``checkpoints/``,
``metrics.json``)."""
from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import logging
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import TQDMProgressBar
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import BatchSampler, SequentialSampler
from lightning.pytorch.utilities.exceptions import SIGTERMException
from torch_geometric.loader import DataLoader

from ..core.checks import is_debug_enabled, validate_dataset
from ..data.registry import DatasetSpec, choose_metric, load_splits, resolve_spec
from ..data.sampler import (DistributedBatchSampler, DistributedSizeBucketBatchSampler,
                            EpochShuffleSampler, graph_sizes)
from ..encodings.registry import float_encodings, pe_dim
from ..models import build_model, count_parameters
from ..errors import RunError, RunInterrupted, RunTerminated, RunUnfinished
from ..fileio import path_inside
from .allocator import configure_for_training
from .callbacks import (EpochLog, EpochSummary, RunCheckpoint, RunState, SliceDeadline,
                        StopAtMinLR, epoch_devices)
from .checkpoint import AtomicCheckpointIO, load_checkpoint, load_model_weights
from .reproduction import UNFINISHED
from .stats import mean_std
from .config import (Config, ConfigError, PlateauConfig, atomic_write_text, load_config,
                     save_config)
from .curves import write_curves
from .device import (compile_model, device_name, eval_device, loader_options,
                     trains_on_cpu)
from .distributed import SeedPerRank, launch_is_rank_zero
from .module import GraphTaskModule, evaluate
from .tasks import Task
from .predict_only import log_predict_only, predict_only_splits
from . import targets
from .finetune import summary as finetune_summary

log = logging.getLogger(__name__)


def resolve_edge_features(model: Any, spec: DatasetSpec) -> bool:
    """``model.use_edge_features`` as the model is built: ``true`` / ``false`` as given;
    ``auto`` → on exactly where the dataset has edge features (``spec.edge_types`` or
    ``spec.edge_dim``) and the model reads them (not GCN / GIN, GPS without an MPNN, GT with
    ``full_graph``; GRPE / Graphormer only categorical ones, ``spec.edge_types``).

    Args:
        model: the model section (a model config or its ``model_dump()`` dict).
        spec: the dataset spec.

    Returns:
        bool: whether the model uses edge features (an explicit ``true`` is checked against the
        dataset by :func:`model_kwargs`, not here).
    """
    kw = model if isinstance(model, dict) else model.model_dump()
    value = kw.get("use_edge_features", False)
    if value != "auto":
        return bool(value)
    name = kw.get("name")
    conv = kw.get("mpnn") if name == "gps" else name
    if (name == "gt" and kw.get("full_graph")) or (name == "gps" and conv is None) \
            or conv in ("gcn", "gin"):
        return False
    if name in ("grpe", "graphormer"):
        return spec.edge_types is not None
    return spec.edge_types is not None or spec.edge_dim is not None


def _no_edge_features_error(name: str, kw: dict, spec: DatasetSpec, how: str) -> ValueError:
    mpnn = kw.get("mpnn") if name == "gps" else (name if name in ("gine", "gatedgcn") else None)
    key = "model.mpnn" if name == "gps" else "model.name"
    fix = (f"set model.use_edge_features=false and {key}=gin (or gcn): {mpnn} needs "
           "edge features" if mpnn in ("gine", "gatedgcn")
           else "set model.use_edge_features=false")
    return ValueError(f"model.use_edge_features is {how} but dataset {spec.name!r} has no edge "
                      f"features; {fix}")


def model_kwargs(config: Config, spec: DatasetSpec) -> dict[str, Any]:
    """Constructor arguments of the configured model, completed from the dataset spec and the
    encodings (feature vocabularies, output size, PE dimensions). ``model.use_edge_features:
    auto`` is resolved here (:func:`resolve_edge_features`) and the value logged at INFO.

    Raises:
        ValueError: ``model.use_edge_features`` is ``true`` (or ``auto`` with a model that
            needs edge features: GPS with GINE / GatedGCN, GINE) and the dataset has none; the
            message names the fix.
    """
    kw = config.model.model_dump()
    name = kw.pop("name")
    kw.pop("compile", None)  # a training option, not a constructor argument
    kw.update(out_dim=spec.out_dim, level=spec.level, num_node_types=spec.node_types,
              num_node_features=spec.node_dim)
    if kw.get("use_edge_features") == "auto":
        kw["use_edge_features"] = resolve_edge_features({"name": name, **kw}, spec)
        has = spec.edge_types is not None or spec.edge_dim is not None
        needs = (kw.get("mpnn") if name == "gps" else name) in (
            ("gine", "gatedgcn") if name == "gps" else ("gine",))
        if needs and not has:
            raise _no_edge_features_error(name, kw, spec, "auto")
        log.info("model.use_edge_features: auto -> %s (dataset %s %s)",
                 str(kw["use_edge_features"]).lower(), spec.name,
                 "has no edge features" if not has else
                 f"has edge features, {spec.edge_types or spec.edge_dim} "
                 f"{'types' if spec.edge_types is not None else 'columns'}"
                 + ("" if kw["use_edge_features"] else f"; {name} does not read them"))
    if kw.get("use_edge_features"):
        if spec.edge_types is None and spec.edge_dim is None:
            raise _no_edge_features_error(name, kw, spec, "set")
        kw.update(num_edge_types=spec.edge_types, num_edge_features=spec.edge_dim)
    if kw.get("pe") is not None:  # the width the registry gives the encoding's section
        kw["pe_dim"] = pe_dim(kw["pe"], config.encodings)
    from ..models.registry import config_spec
    # arguments read from an encoding's section (GRPE / Graphormer: spd.max_distance, GRIT:
    # rrwp.walk_length), as the model declares them (models.registry.model_config)
    owner = getattr(type(config.model), "model_class", None) or object
    for arg, path in config_spec(owner).encoding_args.items():
        encoding, key = path.split(".", 1)
        kw[arg] = getattr(getattr(config.encodings, encoding), key)
    return {"name": name, **kw}


def degree_histogram(dataset) -> torch.Tensor:
    """In-degree histogram ``[max_degree + 1]`` over all nodes of a dataset (PNA's ``deg``),
    via PyG's ``PNAConv.get_degree_histogram``."""
    from torch_geometric.nn import PNAConv
    return PNAConv.get_degree_histogram(DataLoader(dataset, batch_size=256))


def make_model(config: Config, spec: DatasetSpec, train_set=None) -> torch.nn.Module:
    """Builds the configured model. A model class whose ``needs_degree_histogram(**kwargs)`` is
    true (PNA, GPS with a PNA) gets ``deg``, the in-degree histogram of ``train_set`` (the train
    split). Without ``train_set`` (counting parameters, loading a checkpoint, which restores the
    degree statistics) it is built without it, and refuses to run until a checkpoint is loaded.

    Regression targets standardized (``data.standardize_targets``, :mod:`~.targets`): the model
    carries the training split's mean and s.d. per target (counted on ``train_set``; without
    it, placeholders a checkpoint fills in) and predicts in the original units."""
    kw = model_kwargs(config, spec)
    name = kw.pop("name")
    from ..models import MODELS
    check_model_memory(name, kw)
    needs = getattr(MODELS.get(name), "needs_degree_histogram", None)
    if train_set is not None and needs is not None and needs(**kw):
        kw["deg"] = degree_histogram(train_set)
    model = build_model(name, **kw)
    if targets.standardizes(config.data, spec):
        if train_set is not None:
            mean, std = targets.target_statistics(train_set, spec)
            log.info("regression targets standardized with the training split's mean %s and "
                     "s.d. %s (data.standardize_targets); loss on standardized values, metrics "
                     "and predictions in the original units",
                     [round(float(v), 4) for v in mean], [round(float(v), 4) for v in std])
        else:  # filled in from a checkpoint
            mean, std = torch.zeros(spec.out_dim), torch.ones(spec.out_dim)
        targets.attach(model, mean, std)
    return model


#: bytes per parameter while training in float32: weights, gradients and Adam's two moments
TRAIN_BYTES_PER_PARAM = 16


def physical_memory_bytes() -> int | None:
    """This machine's physical memory, or ``None`` where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_model_memory(name: str, kwargs: dict, limit: int | None = None) -> None:
    """Refuses, before anything is allocated, a model whose parameters alone would not fit in
    memory while training (:data:`TRAIN_BYTES_PER_PARAM` each): it is first built on PyTorch's
    ``meta`` device, which allocates nothing (a model that cannot be built there is not checked).

    Args:
        name, kwargs: what :func:`~graph_transformers.models.build_model` takes.
        limit: bytes available (default: the physical memory).

    Raises:
        ConfigError: naming the parameter count, the memory it needs and the memory there is.
    """
    limit = physical_memory_bytes() if limit is None else limit
    if limit is None:
        return
    try:
        with torch.device("meta"):
            count = count_parameters(build_model(name, **kwargs))
    except RuntimeError as err:
        if "overflow" in str(err).lower():  # a tensor too large for its size to be computed
            raise ConfigError(f"the model's parameter tensors are too large to allocate "
                              f"({str(err).splitlines()[0][:120]}); reduce model.hidden_dim or "
                              "model.num_layers") from None
        return  # the real build reports its own errors
    except Exception:  # noqa: BLE001 - the real build reports its own errors
        return
    need = count * TRAIN_BYTES_PER_PARAM
    if need > limit:
        raise ConfigError(f"the model has {count:,} parameters: training it needs ≈"
                          f"{need / 2**30:,.1f} GiB for weights, gradients and optimizer state, "
                          f"more than the {limit / 2**30:,.1f} GiB of memory here; reduce "
                          "model.hidden_dim or model.num_layers")


#: tolerance of the papers' "≈100k / ≈500k parameters" budgets
BUDGET_TOLERANCE = 0.10


def check_param_budget(num_params: int, budget: int | None, tolerance: float = BUDGET_TOLERANCE
                       ) -> None:
    """Checks a model against its parameter budget.

    Raises:
        ConfigError: when ``num_params`` is outside ``budget ± tolerance``.
    """
    if budget is None:
        return
    if abs(num_params - budget) > tolerance * budget:
        raise ConfigError(f"the model has {num_params:,} parameters, outside the budget "
                          f"{budget:,} ± {tolerance:.0%} (param_budget); adjust hidden_dim or "
                          "num_layers")


class SeedNodeMask:
    """``NeighborLoader`` transform: ``node_mask`` = the batch's seed nodes (its first
    ``batch_size`` nodes), so the loss and metrics count each sampled seed once."""

    def __call__(self, data):
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
    """:func:`make_loader` for every split."""
    return {s: make_loader(config, ds, s) for s, ds in splits.items()}


def make_loggers(names: list[str], out: Path) -> list:
    """Lightning loggers of a run: CSV (always, ``out/lightning_logs``) plus the named ones
    (``tensorboard``, ``wandb``, ``mlflow``), each writing under ``out``.

    Raises:
        MissingDependencyError: when a named logger's package is not installed.
    """
    from .._optional import require
    loggers: list = [CSVLogger(str(out), name="lightning_logs")]
    if "tensorboard" in names:
        require("tensorboard", "trainer.logger: tensorboard")
        from lightning.pytorch.loggers import TensorBoardLogger
        loggers.append(TensorBoardLogger(str(out), name="tensorboard"))
    if "wandb" in names:
        require("wandb", "trainer.logger: wandb")
        from lightning.pytorch.loggers import WandbLogger
        loggers.append(WandbLogger(save_dir=str(out), name=out.name))
    if "mlflow" in names:
        require("mlflow", "trainer.logger: mlflow")
        from lightning.pytorch.loggers import MLFlowLogger
        loggers.append(MLFlowLogger(experiment_name=out.name,
                                    tracking_uri=f"file:{(out / 'mlruns').resolve()}"))
    return loggers


def _monitor(spec: DatasetSpec, config: Config) -> tuple[str, str]:
    """What picks the best checkpoint: the validation metric, or the validation loss."""
    if config.protocol.select_by == "loss":
        return "val/loss", "min"
    return f"val/{spec.metric}", ("max" if spec.higher_is_better else "min")


def make_task(config: Config, spec: DatasetSpec, train_set, model=None) -> Task:
    """The :class:`Task` of a run: the dataset's loss and metric with the config's protocol
    (global class weights counted on ``train_set``, split-level weighted accuracy), OGB's
    evaluator when ``train_set`` was read from OGB's files (``ogb_evaluator``), and the loss on
    standardized targets when ``model`` standardizes them (:mod:`~.targets`)."""
    counts = None
    if config.protocol.class_weights == "global" and spec.loss == "weighted_ce":
        labels = torch.cat([d.y.view(-1) for d in train_set])
        counts = torch.bincount(labels.long(), minlength=spec.out_dim)
        log.info("class weights from the training split's class sizes %s", counts.tolist())
    # a dataset read from OGB's files is scored by OGB's Evaluator
    std = model.target_std.detach().cpu() if model is not None and targets.is_attached(model) \
        else None
    return Task(spec, class_counts=counts, weighted_accuracy=config.protocol.weighted_accuracy,
                evaluator=getattr(train_set, "ogb_evaluator", None), target_std=std)


def graph_list_splits(config: Config, dataset) -> tuple[DatasetSpec, dict]:
    """Spec and ``{train, val, test}`` splits of a user's in-memory graphs (a list of PyG
    ``Data`` or a PyG dataset) under ``config.data`` (``level``, ``task``, ``fold``, ``seed``,
    ``split_files``) with ``config.encodings`` applied (:class:`~..data.graph_list.GraphList`).

    Raises:
        DataError: graphs the task cannot be read off, or a bad split
            (:func:`~..data.graph_list.infer_info`, :func:`~..data.graph_list.make_split`).
    """
    from ..data.registry import build_pre_transform
    from ..datasets.user.graph_list import GraphList, graph_list_spec, infer_info
    graphs = list(dataset)
    d = config.data
    info = infer_info(graphs, d.level, d.task)
    spec = choose_metric(graph_list_spec(info, "graph_list"), d.metric)
    pre = build_pre_transform(config.encodings, graph_size_limit(config, spec))
    splits = {s: GraphList(graphs, s, fold=d.fold, seed=d.seed, split_files=d.split_files,
                           pre_transform=pre, info=info) for s in ("train", "val", "test")}
    return spec, splits


def graph_list_spec_of(config: Config, dataset) -> DatasetSpec:
    """The spec of a user's in-memory graphs alone (what :func:`graph_list_splits` returns first,
    without splitting them or computing encodings)."""
    from ..datasets.user.graph_list import graph_list_spec, infer_info
    return choose_metric(graph_list_spec(infer_info(list(dataset), config.data.level,
                                                    config.data.task), "graph_list"),
                         config.data.metric)


def resolve_data(config: Config, dataset=None) -> tuple[DatasetSpec, dict]:
    """The dataset spec and splits of a run: ``dataset`` (a user's in-memory graphs) when
    given, else the dataset ``config.data`` names (:func:`~..data.registry.load_splits`), its
    all-pairs encodings limited to the graphs the model takes (:func:`graph_size_limit`)."""
    if dataset is not None:
        return graph_list_splits(config, dataset)
    spec = run_spec(config)
    return spec, load_splits(config.data, config.encodings, graph_size_limit(config, spec))


def graph_size_limit(config: Config, spec: DatasetSpec):
    """The largest graph the config's model takes within its memory budget (a
    :class:`~..core.dense.GraphSizeLimit`, or ``None``), read off the model built on PyTorch's
    ``meta`` device (nothing allocated), when the config has an all-pairs encoding
    (``encodings.spd``, ``encodings.rrwp``) that would otherwise be computed, and cached, for
    graphs the model then refuses."""
    from ..encodings.registry import ENCODINGS
    if not any(e.all_pairs and getattr(config.encodings, e.name, None) is not None
               for e in ENCODINGS.values()):
        return None
    try:
        kw = model_kwargs(config, spec)
        with torch.device("meta"):
            model = build_model(kw.pop("name"), **kw)
    except Exception:  # noqa: BLE001 - the real build reports its own errors
        return None
    limit = getattr(model, "graph_size_limit", None)
    return limit() if callable(limit) else None


def run_spec(config: Config) -> DatasetSpec:
    """The spec of the dataset ``config.data`` names, reporting ``data.metric`` where set
    (:func:`~..data.registry.choose_metric`)."""
    return choose_metric(resolve_spec(config.data), config.data.metric)


def _for_dataset(config: Config, dataset) -> Config:
    """``config`` with ``data.name: graph_list`` when it trains on in-memory graphs, so that the
    saved config says what the data was."""
    if dataset is None or config.data.name == "graph_list":
        return config
    if config.data.path is not None:
        raise ConfigError("give either dataset=... or data.path, not both")
    return config.model_copy(update={"data": config.data.model_copy(
        update={"name": "graph_list"})})


def train(config: Config, out_dir: str | Path, resume: bool = False,
          dataset=None, allow_data_change: bool = False,
          init_from: str | Path | None = None) -> dict[str, Any]:
    """Trains one seed of ``config`` into ``out_dir`` and returns its ``metrics.json`` content.

    ``dataset``: a user's graphs (a list of ``torch_geometric.data.Data`` or a PyG dataset)
    instead of the dataset ``config.data`` names; the task is read off the graphs
    (:mod:`graph_transformers.datasets.user.graph_list`) and the saved config gets
    ``data.name: graph_list``.

    ``init_from``: a trained run's directory whose matching weights the new model starts from
    (fine-tuning, :mod:`~.finetune`; the task head is re-initialized when the task differs);
    recorded in ``init_from.json`` and ``metrics.json``. Ignored on ``resume``.

    The run holds an exclusive lock on ``out_dir`` throughout (:func:`~.rundir.run_lock`).
    With ``resume``, the checkpoint (``last.ckpt``, else the newest readable one) is read and
    the config checked against the one it was trained with *before* anything is written; once
    the data are loaded, their fingerprint is compared with the checkpoint's (:mod:`~.binding`;
    ``allow_data_change`` proceeds anyway and records it in ``metrics.json``).

    Raises:
        RunError: when ``out_dir`` holds a run and ``resume`` is false, ``resume`` is set and
            there is nothing to resume or the config changes the model or data
            (:func:`~.rundir.check_resume_compatible`), the data differ from the checkpoint's
            (without ``allow_data_change``), or another run holds ``out_dir``.
        CheckpointError: no readable checkpoint to resume, or one cannot be written.
        TrainingError: the training loss became non-finite.
        RunTerminated: the process received SIGTERM (its message says how to resume);
            :class:`~graph_transformers.errors.RunInterrupted`, its subclass: Ctrl-C (SIGINT).
    """
    from .rundir import check_resume_compatible, resume_checkpoint, run_lock
    out = Path(out_dir)
    config = _for_dataset(config, dataset)
    threads = torch.get_num_threads()
    if config.trainer.threads is not None:
        torch.set_num_threads(config.trainer.threads)
    try:
        with run_lock(out):
            return _train_locked(config, out, resume, check_resume_compatible,
                                 resume_checkpoint, dataset, allow_data_change, init_from)
    finally:
        torch.set_num_threads(threads)  # a Python caller keeps its own setting


def _train_locked(config: Config, out: Path, resume: bool, check_resume_compatible,
                  resume_checkpoint, dataset=None, allow_data_change: bool = False,
                  init_from: str | Path | None = None) -> dict[str, Any]:
    """The body of :func:`train` under the run lock: the run directory, data and model,
    Lightning's fit, then the evaluation of the best checkpoint (:func:`finish_run`)."""
    from .binding import check_same_data, data_fingerprint, write_node_split
    resume_from, stored = _open_run_dir(config, out, resume, check_resume_compatible,
                                        resume_checkpoint)
    L.seed_everything(config.seed, workers=True, verbose=False)
    configure_for_training(config.trainer.accelerator)  # glibc setting: CPU on Linux only
    spec, splits = resolve_data(config, dataset)
    check_splits(splits, config)
    fingerprint = data_fingerprint(splits)
    data_changed = check_same_data(stored.get("data"), fingerprint,
                                   f"checkpoint {resume_from}", allow_data_change) \
        if resume_from is not None else []
    if data_changed:
        log.warning("--allow-data-change: the %s split(s) differ from those the checkpoint was "
                    "trained on; recorded in metrics.json (data_changed)", ", ".join(data_changed))
    _write_run_files(config, out, stored["run_id"])
    if launch_is_rank_zero():  # a run on one graph's nodes keeps its split for predict
        write_node_split(out, splits, getattr(splits["train"], "node_ids", None))
    if not trains_on_cpu(config.trainer.accelerator):  # per batch, value checks run on CPU only
        for s, ds in splits.items():
            validate_dataset(ds, f"{spec.name} {s} split", encodings=float_encodings())
    provenance = collect_provenance(splits)
    _log_provenance(spec.name, provenance)
    loaders = make_loaders(config, splits)
    model = make_model(config, spec, splits["train"])
    if resume_from is not None:  # the checkpoint decides whether its model standardized
        targets.match_weights(model, stored["target_scaling"])
    if init_from is not None and resume_from is None:
        from .finetune import init_from as load_init, write_record
        write_record(out, load_init(model, init_from, config.to_dict(), fingerprint))
    elif init_from is not None:
        log.info("--resume: the weights come from %s; --init-from %s is not applied again",
                 resume_from.name, init_from)
    num_params = count_parameters(model)
    check_param_budget(num_params, config.param_budget)
    log.info("%s on %s: %d parameters; graphs train/val/test = %s", config.model.name,
             spec.name, num_params, {s: len(d) for s, d in splits.items()})
    task = make_task(config, spec, splits["train"], model)
    _watch_in_debug_mode(model)
    if config.model.compile:
        compile_model(model)
    module = GraphTaskModule(model, spec, config.optim, task=task)

    callbacks, best_ckpt, stop_rule = _callbacks(config, spec, out, loaders, stored["run_id"],
                                                 fingerprint)
    deadline = next((c for c in callbacks if isinstance(c, SliceDeadline)), None)
    trainer, fit_time = _fit(config, module, loaders, callbacks, out, resume_from)
    if not trainer.is_global_zero:
        return {}
    elapsed = callbacks[0].elapsed or fit_time  # EpochLog: training time over all segments
    last = out / "checkpoints" / "last.ckpt"
    best = Path(best_ckpt.best_model_path) if best_ckpt.best_model_path else last
    if not best.is_file() and (out / "checkpoints" / "best.ckpt").is_file():
        best = out / "checkpoints" / "best.ckpt"  # a run directory moved between segments
    if trainer.interrupted:
        stopped_by = "interrupted"
    elif stop_rule is not None and stop_rule.stopped:
        stopped_by = "min_lr"
    elif trainer.current_epoch >= config.trainer.max_epochs:
        stopped_by = "max_epochs"
    elif deadline is not None and deadline.stopped:
        stopped_by = "slice"
    else:
        stopped_by = "max_time"
    with _sigterm_raises(f"during the final evaluation; training ended ({stopped_by}) and its "
                         "checkpoints are complete",
                         f"graph-transformers evaluate {out} --write writes metrics.json"):
        return finish_run(config, spec, module.model, splits, out, best,
                          epochs=trainer.current_epoch, wall_time_s=elapsed,
                          num_params=num_params, provenance=provenance, last_checkpoint=last,
                          stopped_by=stopped_by,
                          binding={"run_id": stored["run_id"], "data_fingerprint": fingerprint,
                                   **({"data_changed": data_changed} if data_changed else {})})


@contextlib.contextmanager
def _sigterm_raises(where: str, advice: str):
    """While the block runs (outside Lightning's fit, which has its own handler), SIGTERM raises
    :class:`~graph_transformers.errors.RunTerminated` (exit status 143) instead of ending the
    process silently, and Ctrl-C (``KeyboardInterrupt``) raises
    :class:`~graph_transformers.errors.RunInterrupted` (130).

    The SIGTERM is reported as such wherever it lands: an error that the block raises after it
    (e.g. a checkpoint loader's ``except RuntimeError`` that turned the exception into "truncated
    or corrupt") is replaced by ``RunTerminated``, and further SIGTERMs are ignored. Main thread
    only; elsewhere the block runs unchanged.

    Args:
        where: where the run was, for the message (``"during the final evaluation; ..."``); it
            is the errors' ``detail`` after ``"terminated by SIGTERM "``.
        advice: how to go on, appended to the message.

    Raises:
        RunTerminated: the process received SIGTERM in the block.
        RunInterrupted: the block was interrupted by Ctrl-C.
    """
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def terminated() -> RunTerminated:
        detail = f"terminated by SIGTERM {where}"
        return RunTerminated(f"{detail}; {advice}", detail=detail)

    def handler(signum, frame):
        if received:  # already on its way out
            return
        received.append(signum)
        raise terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except RunTerminated:
        raise
    except KeyboardInterrupt:
        if received:
            raise terminated() from None
        detail = f"interrupted by SIGINT (Ctrl-C) {where}"
        raise RunInterrupted(f"{detail}; {advice}", detail=detail) from None
    except BaseException:
        if received:  # the SIGTERM's exception, caught and re-raised as another on its way
            raise terminated() from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def _open_run_dir(config: Config, out: Path, resume: bool, check_resume_compatible,
                  resume_checkpoint) -> tuple[Path | None, dict[str, Any]]:
    """Checks ``out`` for the run (with ``resume``: the checkpoint to continue and that the
    config still fits it; without: that ``out`` holds no run); writes nothing
    (:func:`_write_run_files` does, after the data check). Returns the checkpoint to resume from (or
    ``None``) and what binds the run (:func:`~.binding.stored_binding`: the checkpoint's data
    fingerprint, and the run id: ``run.json``'s, else the checkpoint's, else a new one).

    Raises:
        RunError: ``out`` holds a run and ``resume`` is false; a config that does not fit the
            resumed run (:func:`~.rundir.check_resume_compatible`).
        CheckpointError: ``resume`` and no readable checkpoint.
    """
    from .binding import new_run_id, read_run_id, stored_binding
    from .rundir import check_run_target
    last = out / "checkpoints" / "last.ckpt"
    resume_from, stored = None, {"run_id": None, "data": None, "config": None}
    if resume:
        resume_from, state = resume_checkpoint(out)
        stored = stored_binding(state)
        stored["target_scaling"] = {k.removeprefix("model."): v for k, v in
                                    (state.get("state_dict") or {}).items()
                                    if k.removeprefix("model.") in targets.BUFFERS}
        saved = state.get("callbacks", {}).get("RunState", {}).get("config")
        source, stored_in = f"stored in {resume_from.name}", resume_from
        if saved is None and (out / "config.yaml").is_file():
            saved, source = load_config(out / "config.yaml").to_dict(), \
                str(out / "config.yaml")
            stored_in = out / "config.yaml"
        check_resume_compatible(saved, config.to_dict(), source, path=stored_in)
        done = int(state.get("epoch", -1)) + 1
        if config.trainer.max_epochs < done:
            raise RunError(f"--resume: {resume_from.name} has {done} epochs, more than "
                           f"trainer.max_epochs={config.trainer.max_epochs}; set "
                           f"trainer.max_epochs to at least {done} to continue (or evaluate the "
                           f"run as it is: graph-transformers evaluate {out})")
        del state
    elif last.exists() or (out / "metrics.json").exists():
        raise RunError(f"{out} already holds a run; pass --resume to continue it or choose "
                       "another --out")
    else:
        check_run_target(out)
    run_id = (read_run_id(out) if resume else None) or stored["run_id"] or new_run_id()
    return resume_from, {**stored, "run_id": run_id}


def _watch_in_debug_mode(model: torch.nn.Module) -> None:
    """In debug mode (``GRAPH_TRANSFORMERS_DEBUG=1``), every sub-module's output is checked and
    the first non-finite one is named (:func:`~.numerics.watch_nonfinite`)."""
    if is_debug_enabled():
        from .numerics import watch_nonfinite
        watch_nonfinite(model)
        log.info("debug mode: the first layer producing a non-finite value will be named")


def _write_run_files(config: Config, out: Path, run_id: str) -> None:
    """Creates the run directory and writes ``config.yaml`` and ``run.json`` (rank 0), once every
    check of :func:`_open_run_dir` and of the data has passed (a refused ``--resume`` changes
    nothing)."""
    from .binding import write_run_id
    out.mkdir(parents=True, exist_ok=True)
    if launch_is_rank_zero():  # run files come from rank 0 only
        save_config(config, out / "config.yaml")
        write_run_id(out, run_id)


def _callbacks(config: Config, spec: DatasetSpec, out: Path, loaders: dict,
               run_id: str | None = None, fingerprint: dict | None = None
               ) -> tuple[list[L.Callback], RunCheckpoint, StopAtMinLR | None]:
    """The run's Lightning callbacks (the first is the :class:`~.callbacks.EpochLog`), its
    best-validation checkpoint and its LR-floor stop rule (``None`` without one); ``run_id`` and
    the data ``fingerprint`` go into every checkpoint (:class:`~.callbacks.RunState`)."""
    ckpt_dir = out / "checkpoints"
    monitor, mode = _monitor(spec, config)
    best_ckpt = RunCheckpoint(dirpath=ckpt_dir, filename="best", monitor=monitor, mode=mode,
                              save_top_k=1, auto_insert_metric_name=False,
                              enable_version_counter=False)
    # last.ckpt after every epoch: Lightning's save_last only writes it on epochs where the
    # monitored checkpoint was saved, so --resume would restart from the last improvement
    last_ckpt = RunCheckpoint(dirpath=ckpt_dir, filename="last", monitor=None, save_top_k=1,
                              auto_insert_metric_name=False, enable_version_counter=False)
    samplers = [b for b in [getattr(loaders["train"], "batch_sampler", None)]
                if hasattr(b, "load_state_dict")]
    callbacks: list[L.Callback] = [EpochLog(out / "epochs.csv"),
                                   RunState(config.to_dict(), samplers, run_id, fingerprint),
                                   best_ckpt, last_ckpt, SeedPerRank(config.seed)]
    sched = config.optim.scheduler
    stop_rule = None
    if isinstance(sched, PlateauConfig) and sched.stop_at_min_lr:
        stop_rule = StopAtMinLR(sched.min_lr)
        callbacks.append(stop_rule)
    if config.trainer.slice_minutes is not None:
        callbacks.append(SliceDeadline(config.trainer.slice_minutes))
    # a progress bar on a terminal; one line per epoch when the output goes to a file
    if config.trainer.enable_progress_bar and sys.stdout.isatty():
        callbacks.append(TQDMProgressBar(refresh_rate=max(1, len(loaders["train"]) // 20)))
    elif config.trainer.enable_progress_bar:
        callbacks.append(EpochSummary())
    return callbacks, best_ckpt, stop_rule


def _fit(config: Config, module: GraphTaskModule, loaders: dict, callbacks: list[L.Callback],
         out: Path, resume_from: Path | None) -> tuple[L.Trainer, float]:
    """Lightning's fit of ``module``; returns the trainer and the fit's wall time (s).

    Raises:
        RunTerminated: on SIGTERM, naming the last complete checkpoint and how to resume.
        RunInterrupted: the same on Ctrl-C (SIGINT).
    """
    # graph loaders deal batches to ranks themselves (make_loader); PyG's neighbour loader
    # leaves it to Lightning
    use_bar = any(isinstance(c, TQDMProgressBar) for c in callbacks)
    tkw = {"enable_model_summary": False,
           "use_distributed_sampler": config.data.num_neighbors is not None,
           **config.trainer.trainer_kwargs(), "enable_progress_bar": use_bar}
    trainer = L.Trainer(default_root_dir=str(out), callbacks=callbacks,
                        logger=make_loggers(config.trainer.logger, out),
                        plugins=[AtomicCheckpointIO()], **tkw)
    start = time.perf_counter()
    try:
        trainer.fit(module, loaders["train"], loaders["val"],
                    ckpt_path=str(resume_from) if resume_from else None)
    except (SIGTERMException, SystemExit, KeyboardInterrupt) as err:
        # Lightning ends a Ctrl-C (KeyboardInterrupt) with sys.exit(1) after its teardown
        sigint = not isinstance(err, SIGTERMException)
        if isinstance(err, SystemExit) and not trainer.interrupted:
            raise
        last = out / "checkpoints" / "last.ckpt"
        where = f"{last} (epoch {_epoch_of(last)})" if last.is_file() else "no checkpoint yet"
        how = "interrupted by SIGINT (Ctrl-C)" if sigint else "terminated by SIGTERM"
        detail = (f"{how} during epoch {trainer.current_epoch + 1}; last complete checkpoint: "
                  f"{where}")
        error = RunInterrupted if sigint else RunTerminated
        raise error(f"{detail}; continue with the same command plus --resume --out {out}",
                    detail=detail) from None
    return trainer, time.perf_counter() - start


def check_splits(splits: dict, config: Config) -> None:
    """Every split must hold data: training needs a train and a val split to fit and select
    checkpoints, and a test split to report.

    Raises:
        DataError: naming the empty split(s), the split sizes, and for a molecule CSV how many
            rows a split needs.
    """
    from ..errors import DataError
    empty = [s for s, ds in splits.items() if len(ds) == 0]
    if not empty:
        predict_only = predict_only_splits(splits)  # no labels by design (PCQM4M's test)
        log_predict_only(config.data.path or config.data.name, predict_only)
        for name, ds in splits.items():
            if name not in predict_only and _labels_all_missing(ds):
                raise DataError(
                    f"{config.data.path or config.data.name}: every label of the {name} split "
                    f"({len(ds)} graphs) is missing (NaN, e.g. blank CSV cells), so its loss and "
                    "metric would be NaN: fill in labels, or check data.target_columns")
        return
    sizes = "/".join(str(len(ds)) for ds in splits.values())
    hint = ""
    if config.data.path is not None or hasattr(next(iter(splits.values())), "split_indices"):
        from ..datasets.molecules.moleculenet import min_molecules_per_split
        frac = getattr(next(iter(splits.values())), "frac", (0.8, 0.1, 0.1))
        hint = (f"; the scaffold split with frac={tuple(frac)} needs at least "
                f"{min_molecules_per_split(frac)} valid molecules with distinct scaffolds (more "
                "when molecules share a scaffold) to give every split one")
    raise DataError(f"{config.data.path or config.data.name}: empty split(s) {', '.join(empty)} "
                    f"({'/'.join(splits)} = {sizes} graphs); every split needs at least "
                    f"one graph{hint}")


def _labels_all_missing(dataset) -> bool:
    """Whether every graph-level label of ``dataset`` is NaN (a missing label, masked in the loss
    and metrics): floating-point labels only; read from the stored tensor where PyG keeps one."""
    from torch_geometric.data import InMemoryDataset
    if isinstance(dataset, InMemoryDataset) and getattr(dataset, "_indices", None) is None:
        y = getattr(dataset._data, "y", None)
    else:
        ys = [getattr(g, "y", None) for g in dataset]
        y = torch.cat([t.reshape(-1) for t in ys]) if all(t is not None for t in ys) else None
    if y is None or not torch.is_floating_point(y) or y.numel() == 0:
        return False
    return bool(torch.isnan(y).all())


def _epoch_of(path: Path) -> int | str:
    try:
        return int(load_checkpoint(path).get("epoch", -1)) + 1
    except Exception:  # noqa: BLE001 - only for a message
        return "?"


def collect_provenance(splits: dict) -> dict:
    """The splits' ``provenance`` records merged into one (``{"train": "reconstructed", "val":
    "exact", ...}``, or a file-backed dataset's record), for ``metrics.json``."""
    provenance: dict = {}
    for ds in splits.values():
        provenance.update(getattr(ds, "provenance", {}) or {})
    return provenance


def _log_provenance(dataset: str, provenance: dict) -> None:
    """One INFO line on where the data came from (the full record goes to ``metrics.json``)."""
    if not provenance:
        return
    if "source" in provenance:  # a file-backed dataset (molecule CSV, MoleculeNet)
        keys = ("source", "sha256", "num_rows", "num_molecules", "num_skipped", "split_sizes")
        text = ", ".join(f"{k}={str(provenance[k])[:16] if k == 'sha256' else provenance[k]}"
                         for k in keys if k in provenance)
    else:  # per-split origin, e.g. ZINC's {"train": "exact", "val": "reconstructed"}; a
        # user's files (graph file, node table) are described by their loader's own log line
        text = ", ".join(f"{k}: {v}" for k, v in provenance.items() if not isinstance(v, dict))
        if not text:
            return
    log.info("%s data: %s (full record in metrics.json)", dataset, text)


def _evaluate_checkpoint(config: Config, spec: DatasetSpec, model: torch.nn.Module,
                         splits: dict, checkpoint: Path, task: Task
                         ) -> tuple[int, dict[str, dict]]:
    """Loads ``checkpoint`` into ``model`` and evaluates every split: (1-based epoch, results)."""
    state = load_model_weights(model, checkpoint)
    epoch = int(state.get("epoch", -1)) + 1
    device = eval_device(config.trainer.accelerator)  # where it trained (fit ends on the CPU)
    predict_only = predict_only_splits(splits)  # no labels: no metric ({})
    return epoch, {s: {} if s in predict_only else
                   evaluate(model, spec, _eval_loader(config, ds, s), device=device, task=task)
                   for s, ds in splits.items()}


def check_finite_metrics(results: dict[str, dict[str, float]], where: str) -> None:
    """Refuses to report a non-finite figure: every metric of every split must be finite.

    Args:
        results: ``{split: {metric: value}}``.
        where: which checkpoint or command the results come from, for the message.

    Raises:
        TrainingError: naming the first non-finite metric and its split (exit status 1).
    """
    from ..errors import TrainingError
    for split, values in results.items():
        for name, value in values.items():
            if isinstance(value, (int, float)) and not math.isfinite(value):
                raise TrainingError(
                    f"{split} {name} is {value} {where}: not reported as a result; check the "
                    f"{split} split's labels (missing, or too large for float32) and the "
                    "model's outputs")


def finish_run(config: Config, spec: DatasetSpec, model: torch.nn.Module, splits: dict,
               out: Path, checkpoint: Path, epochs: int, wall_time_s: float, num_params: int,
               provenance: dict, last_checkpoint: Path | None = None,
               stopped_by: str = "interrupted", binding: dict | None = None) -> dict[str, Any]:
    """Evaluates every split at ``checkpoint`` (the best-validation epoch) and writes
    ``metrics.json`` (``model``, ``dataset``, ``config``, ``num_params``, ``num_graphs``, ``epochs``,
    ``wall_time_s``, ``data_source``, ``split`` (the dataset's ``split_rule`` record, or
    ``None``) and per-split metric dicts; ``train``/``val``/``test`` are taken
    at that epoch). With ``last_checkpoint``, the splits are also evaluated at the final epoch
    under ``"last": {"epoch", "train", "val", "test"}``: the GT benchmark reports that one.
    ``stopped_by`` records what ended training: ``min_lr`` or ``max_epochs`` (the schedule ran to
    its end), ``max_time``, ``slice`` (a wall-clock slice ended, ``trainer.slice_minutes``) or
    ``interrupted`` (it did not). ``binding`` (``run_id``, ``data_fingerprint``, and
    ``data_changed`` when ``--allow-data-change`` was used) is recorded as given. A predict-only
    split (no labels by design, :mod:`~.predict_only`) gets ``{}`` and is named, with the
    reason, under ``predict_only``."""
    task = make_task(config, spec, splits["train"], model)  # counted once for both checkpoints
    last = None
    if last_checkpoint is not None and Path(last_checkpoint).is_file():
        last_epoch, last_results = _evaluate_checkpoint(config, spec, model, splits,
                                                        Path(last_checkpoint), task)
        check_finite_metrics(last_results, f"at the last epoch ({last_epoch})")
        last = {"epoch": last_epoch, **last_results}
    best_epoch, results = _evaluate_checkpoint(config, spec, model, splits, checkpoint, task)
    check_finite_metrics(results, f"at the best-validation epoch ({best_epoch})")
    metrics = {
        "model": config.model.name,
        "dataset": spec.name,
        "name": config.name,
        "config": config.to_dict(),
        "num_params": num_params,
        "num_graphs": {s: len(d) for s, d in splits.items()},
        "epochs": epochs,
        "best_epoch": best_epoch,
        "wall_time_s": round(wall_time_s, 2),
        "epoch_time_s": round(wall_time_s / max(epochs, 1), 3),
        "seed": config.seed,
        "stopped_by": stopped_by,
        "device": device_name(eval_device(config.trainer.accelerator)),
        # epochs per device from the epoch log: more than one when slices ran on other machines
        "devices": epoch_devices(out / "epochs.csv"),
        "provenance": provenance,
        # where the graphs came from (data.source): published files or generated, and why
        "data_source": getattr(next(iter(splits.values())), "data_source", None),
        # the split rule where the dataset records one (TU: index files or seeded folds)
        "split": getattr(next(iter(splits.values())), "split_rule", None),
        "metric": spec.metric,
        "target_standardization": targets.record(model),
        "init_from": finetune_summary(out),
        **({"predict_only": po} if (po := predict_only_splits(splits)) else {}),
        **(binding or {}),
        **{s: r for s, r in results.items()},
    }
    if last is not None:
        metrics["last"] = last
    write_json(out / "metrics.json", metrics)
    write_curves(out, spec.metric)
    log.info("best epoch %d: %s", best_epoch,
             ", ".join(f"{s} {spec.metric} {results[s][spec.metric]:.4f}" for s in results
                       if spec.metric in results[s]))
    return metrics


def finalize_interrupted(run_dir: str | Path, dataset=None) -> dict[str, Any]:
    """Writes ``metrics.json`` for a run that was stopped before it finished (killed, out of
    time), from its best checkpoint and its epoch log; ``--resume`` can still continue it later.

    Raises:
        RunError: without a config, a checkpoint or an epoch log.
    """
    run = Path(run_dir)
    log_path = run / "epochs.csv"
    best = run / "checkpoints" / "best.ckpt"
    if not (run / "config.yaml").is_file() or not best.is_file() or not log_path.is_file():
        raise RunError(f"{run}: needs config.yaml, checkpoints/best.ckpt and epochs.csv")
    config = load_config(run / "config.yaml")
    spec, splits = resolve_data(config, dataset)
    with open(log_path) as f:
        rows = list(csv.DictReader(f))
    provenance = collect_provenance(splits)
    model = make_model(config, spec, splits["train"])
    return finish_run(config, spec, model, splits, run, best, epochs=len(rows),
                      wall_time_s=float(rows[-1]["elapsed_s"]) if rows else 0.0,
                      num_params=count_parameters(model), provenance=provenance,
                      last_checkpoint=run / "checkpoints" / "last.ckpt")


def _eval_loader(config: Config, dataset, split: str):
    """Evaluation loader: graphs in order (``eval_batch_size``), or the neighbour-sampling loader of
    the split's seed nodes, or all of the split's Cluster-GCN batches (rank 0 evaluates alone
    after a DDP fit, while the process group still exists)."""
    if config.data.sampler == "cluster":
        return _cluster_loader(config, dataset, train=False, world=(1, 0))
    if config.data.num_neighbors is not None:
        return make_loader(config, dataset, "eval")
    return DataLoader(dataset, batch_size=config.data.eval_batch_size or config.data.batch_size)


def write_json(path: str | Path, obj: Any) -> None:
    """Writes JSON atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean ± sample s.d. (``n − 1``; ``None`` for one run, :mod:`~.stats`) of every split metric
    over runs, and ``devices``: epochs per device over the runs (several when slices of a run
    trained on different machines, whose epoch times then mix)."""
    if not runs:
        return {}
    summary: dict[str, Any] = {"model": runs[0]["model"], "dataset": runs[0]["dataset"],
                               "metric": runs[0]["metric"], "num_params": runs[0]["num_params"],
                               "seeds": [r["seed"] for r in runs]}
    for split in ("train", "val", "test"):
        keys = runs[0].get(split, {}).keys()
        summary[split] = {k: dict(zip(("mean", "std"), mean_std([r[split][k] for r in runs])))
                          for k in keys}
    for k in ("epochs", "wall_time_s", "epoch_time_s"):
        summary[k] = dict(zip(("mean", "std"), mean_std([r[k] for r in runs])))
    devices: Counter[str] = Counter()
    for r in runs:
        devices.update(r.get("devices") or {})
    summary["devices"] = dict(devices)  # epochs per device over the seeds (times mix when several)
    return summary


def _train_member(config: Config, run_dir: Path, resume: bool, **kwargs) -> dict[str, Any]:
    """One run of a set (a seed, a fold): with ``resume``, a finished run's ``metrics.json`` is
    read back, an unfinished one continued from its ``last.ckpt`` and a missing one started;
    ``kwargs`` go to :func:`train`.

    Raises:
        RunUnfinished: the run stopped before its schedule ended (``stopped_by`` in
            :data:`~.reproduction.UNFINISHED`), so the set cannot be summarized and the runs after
            it are not started.
        RunTerminated: SIGTERM (:class:`~graph_transformers.errors.RunInterrupted`: Ctrl-C); the
            message names the run and says to rerun the set's command.
    """
    done = run_dir / "metrics.json"
    if resume and done.is_file():
        previous = json.loads(done.read_text())
        if previous.get("stopped_by") not in UNFINISHED:
            return previous
    go_on = "the same command with --resume continues it and the runs after it"
    try:
        result = train(config, run_dir, resume=resume and (run_dir / "checkpoints" /
                                                            "last.ckpt").is_file(), **kwargs)
    except RunTerminated as err:  # its advice names this run's directory, not the set's command
        if err.detail is None:
            raise
        raise type(err)(f"{run_dir}: {err.detail}; {go_on}", detail=err.detail) from None
    if result.get("stopped_by") in UNFINISHED:
        raise RunUnfinished(f"{run_dir}: stopped by {result['stopped_by']} after epoch "
                            f"{result['epochs']} of {config.trainer.max_epochs}; {go_on}")
    return result


def train_seeds(config: Config, out_dir: str | Path, num_seeds: int = 1,
                resume: bool = False, dataset=None, allow_data_change: bool = False,
                init_from: str | Path | None = None) -> dict[str, Any]:
    """Runs ``num_seeds`` seeds (``config.seed``, ``config.seed + 1``, …). One seed trains into
    ``out_dir`` itself; several into ``out_dir/seed_<s>/`` plus ``summary.json``. With
    ``resume``, finished seeds are read back and unfinished ones continued or started
    (``allow_data_change``, ``init_from``: as :func:`train`; every seed starts from the same
    trained weights).

    Raises:
        RunUnfinished: several seeds, and one stopped before its schedule ended (its wall-clock
            slice ran out, or it was interrupted): the later seeds are not started and no
            ``summary.json`` is written (:func:`_train_member`).
    """
    if num_seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {num_seeds}")
    if num_seeds == 1:
        return train(config, out_dir, resume=resume, dataset=dataset,
                     allow_data_change=allow_data_change, init_from=init_from)
    from .rundir import run_lock
    with run_lock(out_dir):  # summary.json is the root's; each seed also locks its own dir
        return _train_seeds_locked(config, Path(out_dir), num_seeds, resume, dataset,
                                   allow_data_change, init_from)


def _train_seeds_locked(config: Config, out: Path, num_seeds: int, resume: bool,
                        dataset=None, allow_data_change: bool = False,
                        init_from: str | Path | None = None) -> dict[str, Any]:
    from .rundir import check_run_target
    check_run_target(out, of_set=True)
    runs = []
    for i in range(num_seeds):
        cfg = config.model_copy(update={"seed": config.seed + i})
        runs.append(_train_member(cfg, out / f"seed_{cfg.seed}", resume, dataset=dataset,
                                  allow_data_change=allow_data_change, init_from=init_from))
    if not launch_is_rank_zero():  # DDP: the other ranks have no results to summarize
        return {}
    summary = summarize(runs)
    write_json(out / "summary.json", summary)
    return summary


def train_folds(config: Config, out_dir: str | Path, num_folds: int, num_seeds: int = 1,
                resume: bool = False, dataset=None, allow_data_change: bool = False,
                init_from: str | Path | None = None) -> dict[str, Any]:
    """Cross-validation: ``num_seeds`` seeds of each fold ``0..num_folds-1`` (``data.fold``), into
    ``out_dir/fold_<k>/`` (seeds as :func:`train_seeds`), and ``summary.json`` with mean ± s.d.
    over every (fold, seed) run, as the CSL and TU benchmarks report.

    Raises:
        ValueError: when ``num_folds`` < 1.
        RunUnfinished: a run stopped before its schedule ended (as :func:`train_seeds`).
    """
    if num_folds < 1:
        raise ValueError(f"--folds must be >= 1, got {num_folds}")
    from .rundir import check_run_target
    out = Path(out_dir)
    check_run_target(out, of_set=True)
    runs = []
    for k in range(num_folds):
        cfg = config.model_copy(update={"data": config.data.model_copy(update={"fold": k})})
        fold_dir = out / f"fold_{k}"
        if num_seeds == 1:
            _train_member(cfg, fold_dir, resume, dataset=dataset,
                          allow_data_change=allow_data_change, init_from=init_from)
        else:
            train_seeds(cfg, fold_dir, num_seeds, resume=resume, dataset=dataset,
                        allow_data_change=allow_data_change, init_from=init_from)
        runs += [json.loads(p.read_text()) for p in sorted(fold_dir.rglob("metrics.json"))]
    if not launch_is_rank_zero():  # DDP: rank 0 writes the summary
        return {}
    summary = summarize(runs)
    summary["folds"] = num_folds
    write_json(out / "summary.json", summary)
    return summary


def load_trained_model(run_dir: str | Path, data_dir: str | None = None,
                       checkpoint: str = "best", dataset=None
                       ) -> tuple[Config, DatasetSpec, torch.nn.Module]:
    """The config, dataset spec and model (weights from ``checkpoints/<checkpoint>.ckpt``, loaded
    with ``weights_only=True``) of a run directory; the model is in eval mode. The checkpoint
    must belong to the run (its run id) and the run's ``config.yaml`` must still describe the
    data it was trained on (:mod:`~.binding`).

    Raises:
        RunError: when the run directory has no config or no such checkpoint, or its
            ``config.yaml`` changes the data keys the checkpoint was trained with.
        CheckpointError: the checkpoint cannot be read, does not fit, or was written by another
            run.
    """
    config, spec, model, _ = load_bound_model(run_dir, data_dir, checkpoint, dataset)
    return config, spec, model


def load_bound_model(run_dir: str | Path, data_dir: str | None, checkpoint: str, dataset
                  ) -> tuple[Config, DatasetSpec, torch.nn.Module, dict[str, Any]]:
    """:func:`load_trained_model`, also returning what the checkpoint stores of its run
    (:func:`~.binding.stored_binding`: run id, data fingerprint, config), for a caller that
    binds the data itself (``evaluate``, ``predict``). Raises as :func:`load_trained_model`."""
    from .binding import check_run_id, check_same_split_config, read_run_id, stored_binding
    run = Path(run_dir)
    if not (run / "config.yaml").is_file():
        # seeds (seed_<s>/) and folds (fold_<k>/[seed_<s>/]) keep one run per subdirectory
        inner = sorted(str(p.parent.relative_to(run)) for p in
                       [*run.glob("*/config.yaml"), *run.glob("*/*/config.yaml")])
        more = ", …" if len(inner) > 3 else ""
        hint = f"; it holds the runs {', '.join(inner[:3])}{more}: pass one of them" \
            if inner else ""
        raise RunError(f"{run} is not a run directory (no config.yaml){hint}")
    config = load_config(run / "config.yaml")
    if data_dir is not None:
        config.data.data_dir = data_dir
    spec = graph_list_spec_of(config, dataset) if dataset is not None else run_spec(config)
    model = make_model(config, spec)
    path = path_inside(run / "checkpoints", f"{checkpoint}.ckpt", what="checkpoint name")
    if not path.is_file():
        raise RunError(f"{run} has no checkpoint {path.name}")
    stored = stored_binding(load_model_weights(model, path))
    _watch_in_debug_mode(model)
    check_run_id(stored["run_id"], read_run_id(run), path, run)
    check_same_split_config(stored["config"], config.to_dict(), f"checkpoint {path.name}",
                            str(run / "config.yaml"), path=path)
    model.eval()
    return config, spec, model, stored


def evaluate_run(run_dir: str | Path, data_dir: str | None = None,
                 checkpoint: str = "best", dataset=None, allow_data_change: bool = False
                 ) -> dict[str, dict[str, float]]:
    """Re-computes the metrics of a finished (or interrupted) run from its checkpoint
    (``dataset``: the in-memory graphs a ``graph_list`` run trained on), on the data it was
    trained on: their fingerprint must match the checkpoint's (``allow_data_change``: evaluate
    anyway, with a warning).

    Raises:
        RunError: when the run directory has no config or checkpoint, or the data differ.
        CheckpointError: see :func:`load_trained_model`.
        TrainingError: a metric comes out NaN or infinite.
    """
    from .binding import check_same_data, data_fingerprint
    config, spec, model, stored = load_bound_model(run_dir, data_dir, checkpoint, dataset)
    splits = resolve_data(config, dataset)[1]
    changed = check_same_data(stored["data"], data_fingerprint(splits),
                              f"checkpoint {checkpoint}.ckpt", allow_data_change)
    if changed:
        log.warning("--allow-data-change: evaluating on %s split(s) that differ from those the "
                    "checkpoint was trained on", ", ".join(changed))
    task = make_task(config, spec, splits["train"], model)
    predict_only = predict_only_splits(splits)  # no labels: no metric ({})
    results = {s: {} if s in predict_only else evaluate(model, spec, _eval_loader(config, ds, s),
                                                        task=task)
               for s, ds in splits.items()}
    check_finite_metrics(results, f"with the {checkpoint} checkpoint of {run_dir}")
    return results
