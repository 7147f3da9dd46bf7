"""What a run builds from its config and dataset spec: the model's constructor arguments
(:func:`model_kwargs`, with ``model.use_edge_features: auto`` resolved from what the model class
declares it reads, :func:`resolve_edge_features`), the model (:func:`make_model`), the checks
that refuse a model before it is allocated (memory, parameter budget) and the run's
:class:`~.tasks.Task` (:func:`make_task`)."""
from __future__ import annotations

import logging
import os
from typing import Any

import torch
from torch_geometric.loader import DataLoader

from ..data.registry import DatasetSpec
from ..encodings.registry import pe_dim
from ..models import MODELS, build_model, count_parameters
from ..models.registry import config_spec, edge_feature_use
from . import targets
from .config import Config, ConfigError
from .tasks import Task, pair_embedding_dim

log = logging.getLogger(__name__)


def _has_edge_features(spec: DatasetSpec) -> bool:
    return spec.edge_types is not None or spec.edge_dim is not None


def resolve_edge_features(model: Any, spec: DatasetSpec) -> bool:
    """``model.use_edge_features`` as the model is built: ``true`` / ``false`` as given;
    ``auto`` → on exactly where the dataset has edge features the model reads, as its class
    declares them (:class:`~graph_transformers.models.registry.EdgeFeatureUse`: none, edge types
    only (``spec.edge_types``), or edge types or continuous features (``spec.edge_dim``)).

    Args:
        model: the model section (a model config or its ``model_dump()`` dict, with ``name``).
        spec: the dataset spec.

    Returns:
        bool: whether the model uses edge features (an explicit ``true`` is checked against the
        dataset by :func:`model_kwargs`, not here).
    """
    kw = model if isinstance(model, dict) else model.model_dump()
    value = kw.get("use_edge_features", False)
    if value != "auto":
        return bool(value)
    reads = edge_feature_use(kw.get("name"), kw).reads
    if reads == "none":
        return False
    if reads == "categorical":
        return spec.edge_types is not None
    return _has_edge_features(spec)


def _no_edge_features_error(name: str, kw: dict, spec: DatasetSpec, how: str) -> ValueError:
    """The error of a model given (``how``: ``"set"`` or ``"auto"``) edge features a dataset
    lacks; names the fix (the model's declared ``instead`` where part of it needs them)."""
    use = edge_feature_use(name, kw)
    fix = (f"set model.use_edge_features=false and {use.instead}: {use.needed_by} needs edge "
           "features" if use.needed_by is not None and use.instead is not None
           else "set model.use_edge_features=false")
    return ValueError(f"model.use_edge_features is {how} but dataset {spec.name!r} has no edge "
                      f"features; {fix}")


def model_kwargs(config: Config, spec: DatasetSpec) -> dict[str, Any]:
    """Constructor arguments of the configured model, completed from the dataset spec and the
    encodings (feature vocabularies, output size, PE dimensions). ``model.use_edge_features:
    auto`` is resolved here (:func:`resolve_edge_features`) and the value logged at INFO.

    Args:
        config: the run's config.
        spec: the dataset spec.

    Returns:
        dict: ``name`` (the registered model name) and the constructor's keyword arguments.

    Raises:
        ValueError: ``model.use_edge_features`` is ``true`` (or ``auto`` with a model that
            declares it needs edge features: GPS with GINE / GatedGCN, GINE) and the dataset has
            none; the message names the fix. A pair-level dataset and a model without
            ``hidden_dim`` (:func:`~.tasks.pair_embedding_dim`).
    """
    kw = config.model.model_dump()
    name = kw.pop("name")
    kw.pop("compile", None)  # a training option, not a constructor argument
    kw.update(out_dim=spec.out_dim, level=spec.level, num_node_types=spec.node_types,
              num_node_features=spec.node_dim)
    if spec.level == "pair":  # node embeddings; the task scores the pairs (tasks.py)
        kw.update(out_dim=pair_embedding_dim(kw), level="node")
    if kw.get("use_edge_features") == "auto":
        kw["use_edge_features"] = resolve_edge_features({"name": name, **kw}, spec)
        has = _has_edge_features(spec)
        if edge_feature_use(name, kw).needed_by is not None and not has:
            raise _no_edge_features_error(name, kw, spec, "auto")
        log.info("model.use_edge_features: auto -> %s (dataset %s %s)",
                 str(kw["use_edge_features"]).lower(), spec.name,
                 "has no edge features" if not has else
                 f"has edge features, {spec.edge_types or spec.edge_dim} "
                 f"{'types' if spec.edge_types is not None else 'columns'}"
                 + ("" if kw["use_edge_features"] else f"; {name} does not read them"))
    if kw.get("use_edge_features"):
        if not _has_edge_features(spec):
            raise _no_edge_features_error(name, kw, spec, "set")
        kw.update(num_edge_types=spec.edge_types, num_edge_features=spec.edge_dim)
    if kw.get("pe") is not None:  # the width the registry gives the encoding's section
        kw["pe_dim"] = pe_dim(kw["pe"], config.encodings)
    # arguments read from an encoding's section (GRPE / Graphormer: spd.max_distance, GRIT:
    # rrwp.walk_length), as the model declares them (models.registry.model_config)
    owner = getattr(type(config.model), "model_class", None) or object
    for arg, path in config_spec(owner).encoding_args.items():
        encoding, key = path.split(".", 1)
        kw[arg] = getattr(getattr(config.encodings, encoding), key)
    return {"name": name, **kw}


def degree_histogram(dataset) -> torch.Tensor:
    """In-degree histogram ``[max_degree + 1]`` over all nodes of a dataset (PNA's ``deg``),
    via PyG's ``PNAConv.get_degree_histogram``.

    Args:
        dataset: the graphs (the train split).

    Returns:
        Tensor: the number of nodes of each in-degree.
    """
    from torch_geometric.nn import PNAConv
    return PNAConv.get_degree_histogram(DataLoader(dataset, batch_size=256))


def make_model(config: Config, spec: DatasetSpec, train_set=None) -> torch.nn.Module:
    """Builds the configured model. A model class whose ``needs_degree_histogram(**kwargs)`` is
    true (PNA, GPS with a PNA) gets ``deg``, the in-degree histogram of ``train_set`` (the train
    split). Without ``train_set`` (counting parameters, loading a checkpoint, which restores the
    degree statistics) it is built without it, and refuses to run until a checkpoint is loaded.

    Regression targets standardized (``data.standardize_targets``, :mod:`~.targets`): the model
    carries the training split's mean and s.d. per target (counted on ``train_set``; without
    it, placeholders a checkpoint fills in) and predicts in the original units.

    Args:
        config: the run's config.
        spec: the dataset spec.
        train_set: the train split, or ``None``.

    Returns:
        torch.nn.Module: the model.

    Raises:
        ValueError: see :func:`model_kwargs`.
        ConfigError: a model too large for this machine's memory (:func:`check_model_memory`).
    """
    kw = model_kwargs(config, spec)
    name = kw.pop("name")
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
    """This machine's physical memory, or ``None`` where the OS does not say.

    Returns:
        int | None: bytes of physical memory.
    """
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def check_model_memory(name: str, kwargs: dict, limit: int | None = None) -> None:
    """Refuses, before anything is allocated, a model whose parameters alone would not fit in
    memory while training (:data:`TRAIN_BYTES_PER_PARAM` each): it is first built on PyTorch's
    ``meta`` device, which allocates nothing (a model that cannot be built there is not checked).

    Args:
        name: the registered model name (as :func:`~graph_transformers.models.build_model`).
        kwargs: the model's constructor arguments.
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

    Args:
        num_params: the model's trainable parameters.
        budget: the config's ``param_budget`` (``None``: no check).
        tolerance: the relative tolerance.

    Raises:
        ConfigError: when ``num_params`` is outside ``budget ± tolerance``.
    """
    if budget is None:
        return
    if abs(num_params - budget) > tolerance * budget:
        raise ConfigError(f"the model has {num_params:,} parameters, outside the budget "
                          f"{budget:,} ± {tolerance:.0%} (param_budget); adjust hidden_dim or "
                          "num_layers")


def make_task(config: Config, spec: DatasetSpec, train_set, model=None) -> Task:
    """The :class:`Task` of a run: the dataset's loss and metric with the config's protocol
    (global class weights counted on ``train_set``, split-level weighted accuracy), OGB's
    evaluator when ``train_set`` was read from OGB's files (``ogb_evaluator``), and the loss on
    standardized targets when ``model`` standardizes them (:mod:`~.targets`).

    Args:
        config: the run's config.
        spec: the dataset spec.
        train_set: the train split.
        model: the model, or ``None``.

    Returns:
        Task: the run's loss and metrics.
    """
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
