"""Run configuration: a validated schema for the YAML files under ``configs/``.

Sections: ``model``, ``data``, ``encodings``, ``optim``,
``trainer``, ``seed`` (and an optional run ``name``). Unknown keys and wrong types are errors that
name the key; ``--set a.b=value`` overrides are applied before validation. Keys under ``trainer``
use Lightning's ``Trainer`` argument names. The ``model`` section of each registered model is
derived from that model's constructor (:func:`model_section`,
:mod:`graph_transformers.models.registry`): its keys, types, defaults and descriptions are the
constructor's arguments, and its cross-checks the model's ``config_checks``.
"""
from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Callable, ClassVar, Literal, Union

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, create_model,
                      field_validator, model_validator)

from ..encodings.registry import (ENCODINGS, LapPEConfig, RRWPConfig,  # noqa: F401 (re-exported)
                                  RWSEConfig, SPDConfig, SVDPEConfig, WLPEConfig, node_encoding)
from ..fileio import atomic_write_text  # noqa: F401  (re-exported: runner and cli use it)
from ..fileio import check_name

PositiveInt = Annotated[int, Field(gt=0)]
Probability = Annotated[float, Field(ge=0.0, lt=1.0)]


#: ``model.use_edge_features``: ``true``, ``false`` or ``auto`` (on exactly where the dataset has
#: edge features and the model can read them; resolved by ``runner.model_kwargs``, which logs
#: the value). The schema defaults stay booleans, so existing configs resolve as before.
EdgeFeatures = Union[bool, Literal["auto"]]


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the offending key(s)."""


class _Section(BaseModel):
    # allow_inf_nan=False: ``optim.lr: .inf`` (or any NaN / infinite number) is an error
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


# ----------------------------------------------------------------------------- model sections
class _ModelSection(_Section):
    """Base of every derived model section (:func:`model_section`): the keys every model
    section has besides its model's constructor arguments, and the checks that call the
    model's own."""

    #: the model class the section is derived from (set on each derived section)
    model_class: ClassVar[type | None] = None
    #: whether ``num_heads`` must divide ``hidden_dim`` (every attention model; the MPNN
    #: baselines check it for GAT only)
    heads_divide_hidden: ClassVar[bool] = True
    #: the encodings the model reads constructor arguments from (``encodings.<name>``)
    required_encodings: ClassVar[tuple[str, ...]] = ()

    #: compile the model with ``torch.compile`` (dynamic shapes; see training.device)
    compile: bool = Field(False, description="compile the model with torch.compile (dynamic "
                                             "shapes; see training.device)")

    @model_validator(mode="after")
    def _check_heads(self) -> "_ModelSection":
        hidden, heads = getattr(self, "hidden_dim", None), getattr(self, "num_heads", None)
        if self.heads_divide_hidden and hidden is not None and heads and hidden % heads:
            raise ValueError(f"model.hidden_dim={self.hidden_dim} must be divisible by "
                             f"model.num_heads={self.num_heads}")
        return self

    @model_validator(mode="after")
    def _model_checks(self) -> "_ModelSection":
        checks = getattr(self.model_class, "config_checks", None)
        if checks is not None:  # the model's cross-checks: ValueError naming the keys
            checks(self)
        return self


#: keys whose config type is wider than the constructor argument's, because the run resolves
#: the config value into an argument value: ``use_edge_features: auto``
#: (``runner.model_kwargs``). Config-only keys are ``name`` and ``compile``
#: (:class:`_ModelSection`); old key names are :data:`RENAMED_MODEL_KEYS`.
CONFIG_TYPES: dict[str, Any] = {"use_edge_features": EdgeFeatures}


def _registered_models() -> dict[str, type]:
    from ..models import MODELS  # the model classes (torch): imported on first use
    return MODELS


_SECTIONS: dict[tuple, type[_ModelSection]] = {}


def _annotation(function: Callable, param: Any) -> Any:
    """A parameter's annotation, evaluated in its module where it is a string (``from
    __future__ import annotations``); ``Any`` where there is none."""
    if param.annotation is param.empty:
        return Any
    if isinstance(param.annotation, str):
        return eval(param.annotation, function.__globals__)  # noqa: S307 - the module's own
    return param.annotation


def model_section(name: str) -> type[_ModelSection]:
    """The ``model:`` section of the registered model ``name``, derived from its constructor
    (:mod:`graph_transformers.models.registry`): one key per argument except the wired ones
    (:data:`~graph_transformers.models.registry.WIRED_ARGUMENTS`, the spec's
    ``encoding_args`` and ``exclude``), typed by the annotation (:data:`CONFIG_TYPES` widens
    ``use_edge_features``), with the argument's default (or the spec's ``defaults``; else
    required) and its ``Args:`` description; plus ``name`` and ``compile``. Classes sharing a
    declaration (the MPNN baselines) share one section, whose ``name`` is one of theirs. The
    model's ``config_checks(section)`` runs after the fields are valid. Cached per
    registration.

    Raises:
        ValueError: for an unknown name (listing the known ones).
    """
    import inspect

    from ..models.registry import (WIRED_ARGUMENTS, argument_docs, config_owner,
                                   config_spec)
    models = _registered_models()
    if name not in models:
        raise ValueError(f"unknown model name {name!r}; known: {sorted(models)}")
    owner = config_owner(models[name])
    names = tuple(n for n, cls in models.items() if config_owner(cls) is owner)
    key = (owner, names)
    if key in _SECTIONS:
        return _SECTIONS[key]
    spec = config_spec(owner)
    docs = argument_docs(owner)
    skip = {"self", *WIRED_ARGUMENTS, *spec.encoding_args, *spec.exclude}
    fields: dict[str, Any] = {"name": (Literal[names], Field(
        names[0] if len(names) == 1 else ..., description="the registered model name"))}
    for param in inspect.signature(owner.__init__).parameters.values():
        if param.name in skip or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        kind = CONFIG_TYPES.get(param.name) or _annotation(owner.__init__, param)
        default = (param.default if param.default is not param.empty
                   else spec.defaults.get(param.name, ...))
        fields[param.name] = (kind, Field(default, description=docs.get(param.name)))
    what = ", ".join(names)
    section = create_model(
        f"{owner.__name__}ModelConfig", __base__=_ModelSection, __module__=__name__,
        __doc__=f"The ``model:`` section of {what}: the arguments of "
                f":class:`{owner.__module__}.{owner.__qualname__}` (derived from its "
                "constructor).",
        **fields)
    section.model_class = owner
    section.heads_divide_hidden = spec.heads_divide_hidden
    section.required_encodings = spec.required_encodings
    _SECTIONS[key] = section
    return section


class _ModelSections(Mapping):
    """Model name → its section (:func:`model_section`), following the model registry."""

    def __getitem__(self, name: str) -> type[_ModelSection]:
        if name not in _registered_models():
            raise KeyError(name)
        return model_section(name)

    def __iter__(self):
        return iter(_registered_models())

    def __len__(self) -> int:
        return len(_registered_models())


#: model name → config section, derived from the registered models
#: (:data:`graph_transformers.models.MODELS`); a model registered later is included.
MODEL_CONFIGS: Mapping[str, type[_ModelSection]] = _ModelSections()

#: the section names before the sections were derived (issue 27): still importable from here
_SECTION_ALIASES = {"GTModelConfig": "gt", "EGTModelConfig": "egt", "GRPEModelConfig": "grpe",
                    "GraphormerModelConfig": "graphormer", "GPSModelConfig": "gps",
                    "MPNNModelConfig": "gcn", "GRITModelConfig": "grit"}


def __getattr__(name: str) -> Any:
    if name in _SECTION_ALIASES:
        return model_section(_SECTION_ALIASES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: model keys renamed for one name per concept across the package: old key → (new key, conversion of
#: the value or ``None``). A config with an old key still loads, with one ``FutureWarning`` per
#: key naming old → new (a config's own user sees it, unlike a ``DeprecationWarning``).
RENAMED_MODEL_KEYS: dict[str, tuple[str, Callable[[Any], Any] | None]] = {
    "clip": ("clamp", None),                                  # EGT's score clamp
    "attention_dropout": ("attn_dropout", None),              # GRPE, Graphormer
    "max_attention_bytes": ("memory_budget_gb",               # GPS: bytes → GiB
                            lambda b: None if b is None else b / 2**30),
}


def rename_model_keys(section: dict) -> dict:
    """A model section with the old keys of :data:`RENAMED_MODEL_KEYS` renamed (values
    converted), warning once per key.

    Raises:
        ValueError: when a section gives both an old key and its new name.
    """
    out = dict(section)
    for old, (new, convert) in RENAMED_MODEL_KEYS.items():
        if old not in out:
            continue
        if new in out:
            raise ValueError(f"model.{old} is the old name of model.{new}: give only {new}")
        value = out.pop(old)
        out[new] = convert(value) if convert is not None else value
        how = f" (value {value!r} → {out[new]!r})" if convert is not None else ""
        warnings.warn(f"config key model.{old} is renamed model.{new}{how}; the old name will be "
                      "removed", FutureWarning, stacklevel=2)
    return out


# ----------------------------------------------------------------------------- other sections
class DataConfig(_Section):
    """Which dataset, where its files are, and how it is batched."""

    name: str = "csl"
    data_dir: str | None = None
    cache_dir: str | None = None
    batch_size: PositiveInt = 128
    eval_batch_size: PositiveInt | None = None
    #: DataLoader workers; ``auto``: none on CPU, a few per GPU (training.device.loader_options)
    num_workers: Annotated[int, Field(ge=0)] | Literal["auto"] = "auto"
    #: pinned host memory for the batches; ``auto``: when training on a GPU
    pin_memory: bool | Literal["auto"] = "auto"
    fold: Annotated[int, Field(ge=0)] = 0
    #: generation seed of generated datasets (CSL permutations, PATTERN/CLUSTER graphs)
    seed: Annotated[int, Field(ge=0)] = 0
    #: where a benchmark with published files gets its graphs (docs/datasets.md): ``auto`` = the
    #: published files read by the well-kept loader (PyG / OGB) when they can be had (local or
    #: downloaded), else this library's generator / reconstruction, with a WARNING naming what
    #: was missing; ``canonical`` = the published files or an error; ``generated`` = always the
    #: generator. ``metrics.json`` records the outcome under ``data_source``.
    source: Literal["auto", "canonical", "generated"] = "auto"
    #: extra keyword arguments of the dataset class (e.g. ``max_images`` for superpixels,
    #: ``max_rows`` for MoleculeNet, ``num_graphs`` for generated sets)
    options: dict[str, Any] = Field(default_factory=dict)
    #: node features of a TU set (``graph_transformers.datasets.tu``): ``auto`` = the set's own,
    #: one constant 1 per node where it has none (logged); ``constant`` = one constant 1 per
    #: node, the set's own dropped; ``degree`` = one-hot node degree capped at
    #: ``options.max_degree`` (default 64; higher degrees share the last column): the features
    #: of a set that has none, appended after the set's own where it has them
    node_features: Literal["auto", "constant", "degree"] = "auto"
    #: batch graphs of similar size together (less padding for dense models; measured in
    #: ``benchmarks/egt_speed.py``); batches are still drawn in random order (under DDP dealt
    #: to the ranks, ``docs/scaling.md``)
    bucket_by_size: bool = False
    #: graphs per sorting window of the bucketing sampler, in batches
    bucket_window: PositiveInt = 50
    #: a user's own data (``name`` is then ignored): a molecule CSV (``.csv``, ``.csv.gz``),
    #: featurized like MoleculeNet and split by scaffold, or a saved list of PyG graphs
    #: (``.pt``: ``InMemoryDataset.save(data_list, path)`` or ``torch.save(data_list, path)``;
    #: ``graph_transformers.datasets.user.graph_list``)
    path: str | None = None
    smiles_column: str = "smiles"
    target_columns: list[str] | None = None
    #: a CSV's label columns are ``classification`` / ``binary`` (0/1 tasks, ROC-AUC) or
    #: ``regression`` (the default; RMSE). A graph file's task is read off ``y`` unless given:
    #: ``regression`` (MAE), ``classification`` (one class id per item, accuracy) or ``binary``
    #: (0/1/NaN columns, ROC-AUC). A node table's (``name: node_table``) is read off its label
    #: column unless given: ``classification`` or ``regression``
    task: Literal["classification", "regression", "binary"] | None = None
    #: regression: train on targets standardized with the training split's mean and s.d. per
    #: column, report in the original units (``training.targets``); ``auto``: for a user's data
    #: (CSV, graph file, in-memory graphs, node table), not for the papers' benchmarks
    standardize_targets: bool | Literal["auto"] = "auto"
    #: the metric reported and used to keep the best epoch, instead of the dataset's own:
    #: ``mae`` / ``rmse`` (regression), ``accuracy`` / ``weighted_accuracy`` (classification),
    #: ``f1`` (two classes), ``roc_auc`` / ``ap`` (binary tasks)
    metric: Literal["mae", "rmse", "accuracy", "weighted_accuracy", "f1", "roc_auc",
                    "ap"] | None = None
    #: a graph file's prediction level, read off ``y``'s rows unless given
    level: Literal["graph", "node", "edge"] | None = None
    #: a graph file's split: ``{train, val, test}`` → text files of 0-based graph ids (node or
    #: edge ids for one graph); without it, the graph's masks or 10 seeded folds (``fold``)
    split_files: dict[Literal["train", "val", "test"], str] | None = None
    #: ``name: node_table`` (``graph_transformers.datasets.user.node_table``): the edge list
    #: (CSV / TSV, two id columns, header optional) or a ``.graphml`` / ``.gml`` / ``.edgelist``
    #: file
    edges: str | None = None
    #: ``node_table``: the node table (CSV / TSV with a header: id, label, features, masks);
    #: optional for a graph file whose nodes carry the attributes
    nodes: str | None = None
    #: ``node_table``: the id column (without it, nodes are the rows and the edge list holds
    #: 0- or 1-based row numbers; ``options.id_base`` fixes the base)
    id_column: str = "id"
    #: ``node_table``: the label column (empty cells: unlabelled nodes, in no split)
    label_column: str = "label"
    #: ``node_table``: feature columns (a number or a comma-separated vector per cell); default:
    #: every column but id, label and the masks
    feature_columns: list[str] | None = None
    #: ``node_table``: add the reverse of every edge (duplicates are dropped either way)
    undirected: bool = True
    #: ``node_table``: accept an edge list (or graph file) without a single edge; by default a
    #: 0-byte or header-only edge list is a data error (a wrong path or a failed export, far
    #: more often than a graph meant to have none)
    allow_no_edges: bool = False
    #: ``node_table``: ``random:TRAIN,VAL,TEST`` (seeded by ``seed``, stratified by class),
    #: ``columns`` (the table's train_mask / val_mask / test_mask) or an ``.npz`` of the three
    #: masks in node-table order; default: ``columns`` when present, else ``random:0.6,0.2,0.2``
    split: str | None = None
    #: neighbour sampling for node tasks on one large graph (PyG ``NeighborLoader``): neighbours
    #: sampled per hop, e.g. ``[10, 10]``; ``batch_size`` is then the number of seed nodes
    num_neighbors: list[Annotated[int, Field(ge=-1)]] | None = None
    #: how a node task on one large graph is cut into mini-batches: ``neighbor`` (sampled
    #: neighbourhoods, ``num_neighbors``; the default when that is set) or ``cluster``
    #: (Cluster-GCN: ``num_parts`` METIS clusters, ``clusters_per_batch`` of them merged at
    #: random per batch with the edges between them; ``batch_size`` is then unused;
    #: ``graph_transformers.data.cluster``)
    sampler: Literal["neighbor", "cluster"] | None = None
    #: ``sampler: cluster``: METIS clusters of the graph (computed once, cached with the dataset)
    num_parts: PositiveInt | None = None
    #: ``sampler: cluster``: clusters merged into one training batch (default 1)
    clusters_per_batch: PositiveInt | None = None
    #: ``sampler: cluster``: clusters per evaluation batch (default ``clusters_per_batch``;
    #: ``num_parts`` evaluates the whole graph at once, exactly)
    eval_clusters_per_batch: PositiveInt | None = None

    @model_validator(mode="after")
    def _sampler(self) -> "DataConfig":
        cluster_keys = [k for k in ("num_parts", "clusters_per_batch", "eval_clusters_per_batch")
                        if getattr(self, k) is not None]
        if self.sampler == "cluster":
            if self.num_parts is None:
                raise ValueError("data.sampler: cluster needs data.num_parts (METIS clusters)")
            if self.num_neighbors is not None:
                raise ValueError("data.num_neighbors applies to data.sampler: neighbor; "
                                 "data.sampler: cluster takes num_parts and clusters_per_batch")
            q = self.clusters_per_batch or 1
            for key, value in (("clusters_per_batch", q),
                               ("eval_clusters_per_batch", self.eval_clusters_per_batch)):
                if value is not None and value > self.num_parts:
                    raise ValueError(f"data.{key} ({value}) exceeds data.num_parts "
                                     f"({self.num_parts})")
        elif cluster_keys:
            raise ValueError(f"data.{', data.'.join(cluster_keys)} apply to data.sampler: "
                             "cluster (Cluster-GCN batches); set it")
        elif self.sampler == "neighbor" and self.num_neighbors is None:
            raise ValueError("data.sampler: neighbor needs data.num_neighbors (neighbours "
                             "sampled per hop, e.g. [10, 10])")
        return self

    @model_validator(mode="after")
    def _csv(self) -> "DataConfig":
        from ..data.registry import is_graph_file
        graph_file = self.path is not None and is_graph_file(self.path)
        if self.path is not None and not graph_file and not self.target_columns:
            raise ValueError("data.path is set: give the label columns in data.target_columns")
        if (self.level is not None or self.split_files is not None) and not graph_file \
                and self.name != "graph_list":
            raise ValueError("data.level and data.split_files apply to a graph file "
                             "(data.path: <file>.pt) or in-memory graphs")
        return self

    @model_validator(mode="after")
    def _node_table(self) -> "DataConfig":
        keys = [k for k in ("edges", "nodes", "split", "feature_columns")
                if getattr(self, k) is not None] + (["allow_no_edges"] if self.allow_no_edges
                                                    else [])
        if keys and self.name != "node_table":
            raise ValueError(f"data.{', data.'.join(keys)} apply to data.name: node_table (a "
                             "node-level graph from an edge list and a node table); set it")
        if self.name == "node_table" and self.path is not None:
            raise ValueError("data.path and data.name: node_table exclude each other: give the "
                             "files as data.edges and data.nodes")
        return self


def encodings_config() -> type[_Section]:
    """The schema of the ``encodings`` section: one optional field per registered encoding
    (:data:`~graph_transformers.encodings.registry.ENCODINGS`, in registry order), typed by that
    encoding's section; rebuilt when an encoding is registered."""
    key = tuple(ENCODINGS.items())
    if key not in _ENCODINGS_SCHEMAS:
        _ENCODINGS_SCHEMAS[key] = create_model(
            "EncodingsConfig", __base__=_Section, __module__=__name__,
            __doc__="Encodings precomputed (and cached) with the dataset; ``null`` disables one.",
            **{name: (e.config | None, None) for name, e in ENCODINGS.items()})
    return _ENCODINGS_SCHEMAS[key]


_ENCODINGS_SCHEMAS: dict[tuple, type[_Section]] = {}
#: the ``encodings`` section of the built-in encodings (:func:`encodings_config` follows the
#: registry)
EncodingsConfig = encodings_config()


class PlateauConfig(_Section):
    """``ReduceLROnPlateau`` on the validation loss.

    With ``stop_at_min_lr`` (default), training stops once the LR falls below ``min_lr`` (the
    GT/benchmarking-GNNs protocol); otherwise the LR is floored at ``min_lr``
    (``max(lr · factor, min_lr)``) and training goes on to ``trainer.max_epochs`` (the official
    EGT protocol)."""

    name: Literal["plateau"] = "plateau"
    factor: Annotated[float, Field(gt=0, lt=1)] = 0.5
    patience: Annotated[int, Field(ge=0)] = 15
    min_lr: Annotated[float, Field(ge=0)] = 1e-6
    stop_at_min_lr: bool = True


class CosineConfig(_Section):
    """Linear warmup for ``warmup_epochs``, then cosine decay to ``min_lr`` at ``max_epochs``."""

    name: Literal["cosine"] = "cosine"
    warmup_epochs: Annotated[int, Field(ge=0)] = 0
    min_lr: Annotated[float, Field(ge=0)] = 0.0


class LinearConfig(_Section):
    """Linear warmup for ``warmup_epochs`` (from 0), then linear decay from ``optim.lr`` to
    ``end_lr`` at ``max_epochs`` (GRPE: 2e-4 → 1e-9, the official ``PolynomialDecayLR`` with
    power 1)."""

    name: Literal["linear"] = "linear"
    warmup_epochs: Annotated[int, Field(ge=0)] = 0
    end_lr: Annotated[float, Field(ge=0)] = 1e-9


class OptimConfig(_Section):
    optimizer: Literal["adam", "adamw"] = "adam"
    lr: Annotated[float, Field(gt=0)] = 7e-4
    #: Adam's ε (EGT uses 1e-7)
    eps: Annotated[float, Field(gt=0)] = 1e-8
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    scheduler: Annotated[Union[PlateauConfig, CosineConfig, LinearConfig],
                         Field(discriminator="name")] | None = \
        Field(default_factory=PlateauConfig)


#: ``lightning.Trainer`` arguments the run sets itself, with what to use instead
RESERVED_TRAINER_ARGS = {
    "callbacks": "the run builds its callbacks (epoch log, checkpoints, LR floor)",
    "plugins": "the run sets its checkpoint I/O plugin",
    "default_root_dir": "the run directory is --out",
    "enable_checkpointing": "best.ckpt and last.ckpt are part of every run",
}
LOGGERS = ("csv", "tensorboard", "wandb", "mlflow")


def trainer_arguments() -> set[str]:
    """The keyword arguments of ``lightning.Trainer`` (what ``trainer:`` accepts)."""
    import inspect

    import lightning

    return set(inspect.signature(lightning.Trainer.__init__).parameters) - {"self"}


class TrainerConfig(_Section):
    """Arguments of ``lightning.Trainer``, same names. The fields below are validated here; every
    other ``Trainer`` argument (``num_sanity_val_steps``, ``gradient_clip_algorithm``,
    ``val_check_interval``, ``profiler``, ...) is accepted as is and checked against
    ``Trainer``'s signature, so a typo fails with the key named. ``logger`` lists loggers by
    name: CSV always, plus ``tensorboard``, ``wandb``, ``mlflow`` (each an extra of the
    package)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    max_epochs: PositiveInt = 1000
    max_time: str | None = None
    accelerator: str = "auto"
    devices: int | str = 1
    #: machines of a multi-node run (``docs/scaling.md``)
    num_nodes: PositiveInt = 1
    strategy: str = "auto"
    precision: str | int = "32-true"
    gradient_clip_val: Annotated[float, Field(gt=0)] | None = None
    accumulate_grad_batches: PositiveInt = 1
    check_val_every_n_epoch: PositiveInt = 1
    log_every_n_steps: PositiveInt = 50
    enable_progress_bar: bool = True
    deterministic: bool | Literal["warn"] = False
    limit_train_batches: int | float | None = None
    logger: list[Literal["csv", "tensorboard", "wandb", "mlflow"]] = Field(
        default_factory=lambda: ["csv"])
    #: a wall-clock slice (minutes): stop at the end of the first epoch after which the next one
    #: would not finish within this many minutes of the fit's start; ``--resume`` (or
    #: ``graph-transformers slice``) continues the run. Not a Lightning argument.
    slice_minutes: Annotated[float, Field(gt=0)] | None = None
    #: torch's CPU threads for the run (``torch.set_num_threads``); ``None``: torch's default, the
    #: cores this process may use. On a machine busy with other work, fewer threads can be much
    #: faster. Results are reproducible for a fixed thread count, not across thread counts.
    #: Not a Lightning argument.
    threads: PositiveInt | None = None

    @model_validator(mode="after")
    def _trainer_arguments(self) -> "TrainerConfig":
        known = trainer_arguments()
        for key in self.model_extra or {}:
            if key in RESERVED_TRAINER_ARGS:
                raise ValueError(f"trainer.{key} cannot be set: {RESERVED_TRAINER_ARGS[key]}")
            if key not in known:
                import difflib
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"trainer.{key} is not an argument of lightning.Trainer{hint}")
        return self

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``lightning.Trainer`` (``None`` values and ``logger`` left
        out: the run builds its loggers from the names)."""
        return {k: v for k, v in self.model_dump().items()
                if v is not None and k not in ("logger", "slice_minutes", "threads")}


class ProtocolConfig(_Section):
    """Evaluation details on which the papers' own code differ (defaults: the GT /
    benchmarking-GNNs code).

    - ``class_weights`` (SBM sets, ``weighted_ce`` loss): ``batch`` weighs class c by
      ``(V - V_c) / V`` counted in each batch (benchmarking GNNs); ``global`` counts the training
      split once and weighs each node's cross-entropy by ``(N - N_c) / Σ_k (N - N_k)``, averaged
      over nodes (the official EGT code).
    - ``weighted_accuracy``: ``batch_mean`` scores each evaluation batch and averages the scores
      (benchmarking GNNs); ``split`` scores the whole split at once (the official EGT code).
    - ``select_by``: the checkpoint kept as best, by the validation ``metric`` or the validation
      ``loss`` (the official EGT code keeps the lowest validation weighted cross-entropy).
    """

    class_weights: Literal["batch", "global"] = "batch"
    weighted_accuracy: Literal["batch_mean", "split"] = "batch_mean"
    select_by: Literal["metric", "loss"] = "metric"


class ReferenceConfig(_Section):
    """The published number a config reproduces; ``graph-transformers table`` compares runs
    against it.

    ``value`` and ``std`` are in the paper's units: percent for accuracy-type metrics (73.169),
    the raw value otherwise (MAE 0.226). ``source`` names paper, table and row. ``epoch`` says which
    epoch the paper's protocol reports: ``best`` (the best-validation checkpoint) or ``last`` (the
    final epoch, as the GT benchmark code). ``epochs`` is the paper's training length in epochs (its
    reported mean, or its fixed budget), used for the fraction of the budget a run covered.
    """

    source: str
    #: ``None`` where no published number exists (``source`` says why)
    value: float | None
    std: Annotated[float, Field(ge=0)] | None = None
    #: metric name of our ``metrics.json`` (default: the dataset's main metric)
    metric: str | None = None
    epoch: Literal["best", "last"] = "best"
    epochs: Annotated[float, Field(gt=0)] | None = None
    seeds: PositiveInt | None = None
    #: the split the paper's number is measured on: ``test`` (default) or ``val`` (PCQM4M-LSC,
    #: PCQM4Mv2: the test labels are hidden, the papers report the validation MAE)
    split: Literal["test", "val"] = "test"


class Config(_Section):
    """A whole run."""

    name: str | None = None
    #: validated by :func:`model_section` (the registered model ``name``; default ``gt``)
    model: Any = Field(default_factory=lambda: model_section("gt")())
    data: DataConfig = Field(default_factory=DataConfig)
    #: validated by :func:`encodings_config` (the registered encodings)
    encodings: Any = Field(default_factory=lambda: encodings_config()())
    optim: OptimConfig = Field(default_factory=OptimConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    #: seeds torch, numpy (which takes 0 … 2³² − 1) and Python
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    #: the papers' parameter budget (e.g. 100000 or 500000); runs refuse a model outside ±10%
    param_budget: PositiveInt | None = None
    #: evaluation details of the paper's code (see :class:`ProtocolConfig`)
    protocol: ProtocolConfig = Field(default_factory=ProtocolConfig)
    #: the published result this config reproduces (see :class:`ReferenceConfig`)
    reference: ReferenceConfig | None = None

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str | None) -> str | None:
        # the name becomes a run folder (runs/<name>, benchmark --out/<name>): a name, not a path
        return value if value is None else check_name(value, "config name")

    @field_validator("model", mode="before")
    @classmethod
    def _model_by_name(cls, value: Any) -> BaseModel:
        if isinstance(value, BaseModel):
            return value
        if not isinstance(value, dict):
            raise ValueError("model must be a mapping with a 'name'")
        name = value.get("name", "gt")
        if not isinstance(name, str) or name not in MODEL_CONFIGS:  # a list: not a TypeError
            raise ValueError(f"unknown model name {name!r}; known: {sorted(MODEL_CONFIGS)}")
        return MODEL_CONFIGS[name].model_validate(rename_model_keys(value))

    @field_validator("encodings", mode="before")
    @classmethod
    def _encodings(cls, value: Any) -> BaseModel:
        schema = encodings_config()
        if isinstance(value, schema):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if not isinstance(value, dict):
            raise ValueError("encodings must be a mapping of encoding name → options")
        return schema.model_validate(value)

    @model_validator(mode="after")
    def _cross_check(self) -> "Config":
        pe = getattr(self.model, "pe", None)
        if pe is not None:
            name = node_encoding(pe).name
            if getattr(self.encodings, name, None) is None:
                raise ValueError(f"model.pe is {pe!r} but encodings.{name} is not set")
        for enc in getattr(type(self.model), "required_encodings", ()):
            if getattr(self.encodings, enc, None) is None:
                raise ValueError(f"model {self.model.name!r} needs encodings.{enc} (e.g. "
                                 f"'encodings: {{{enc}: {{}}}}')")
        # Exphormer attention (GPS) attends over the expander graph the expander encoding
        # precomputes per graph: an error, not a silent default, so the cache key stays explicit
        if getattr(self.model, "attention", None) == "exphormer" and getattr(
                self.encodings, "expander", None) is None:
            raise ValueError("model.attention 'exphormer' attends over a per-graph expander "
                             "graph: set encodings.expander (e.g. 'encodings: {expander: "
                             "{degree: 3, seed: 0}}')")
        return self

    def to_dict(self) -> dict:
        """Plain-Python form (what is saved as the resolved config)."""
        return self.model_dump(mode="json")


# ----------------------------------------------------------------------------- loading
def _format_errors(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"] if not str(p).endswith("Config")
                       and p not in ("plateau", "cosine", "linear"))
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        lines.append(f"{key or '<root>'}: {msg}" + (f" (got {e['input']!r})"
                                                   if e["type"] != "extra_forbidden"
                                                   and not isinstance(e["input"], dict) else ""))
    return "invalid config: " + "; ".join(lines)  # one line, as every CLI error


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"optim.lr=1e-3"`` → ``(["optim", "lr"], 0.001)``; the value is parsed as YAML.

    Raises:
        ConfigError: without ``=`` or with an empty key.
    """
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key.subkey=value")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".")]
    if not key.strip() or any(not p for p in parts):
        raise ConfigError(f"override {text!r} has an empty key")
    value = parse_yaml_text(raw, f"override {text!r}") if raw.strip() else None
    if isinstance(value, str):
        try:  # YAML 1.1 reads 1e-3 as a string
            value = float(value) if any(c in value for c in "eE.") else value
        except ValueError:
            pass
    return parts, value


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Returns a copy of ``raw`` with ``key.sub=value`` overrides applied (sections created as
    needed)."""
    out = copy.deepcopy(raw)
    for text in overrides:
        parts, value = parse_override(text)
        node = out
        for p in parts[:-1]:
            if node.get(p) is None:
                node[p] = {}
            if not isinstance(node[p], dict):
                raise ConfigError(f"override {text!r}: {p!r} is not a section")
            node = node[p]
        node[parts[-1]] = value
    return out


def deep_merge(base: dict, update: dict) -> dict:
    """``base`` updated by ``update``, recursing into mappings (``update`` wins)."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a key given twice in one mapping (plain PyYAML keeps
    the later value silently)."""


def _construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:  # (``key in seen`` raised TypeError for a list key, issue 54's fuzzing)
            first = seen.get(key)
        except TypeError:  # an unhashable key (``? [a]``): PyYAML reports it, with its line
            break
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice (first on line {first + 1})",
                key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_unique_mapping)


def parse_yaml_text(text: str, source: str = "<string>") -> Any:
    """Parses YAML with the safe loader, refusing duplicate keys.

    Raises:
        ConfigError: ``<source>: line L, column C: <problem>`` for a syntax error or a duplicate
            key.
    """
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        context = getattr(err, "context", None)
        cmark = getattr(err, "context_mark", None)
        if context and cmark is not None and cmark is not mark:
            context += f" (started on line {cmark.line + 1}, column {cmark.column + 1})"
        what = f"{context}: {problem}" if context and "twice" not in problem else problem
        raise ConfigError(f"{source}: {where}invalid YAML: {what}") from None


def _parse_yaml_file(path: Path) -> Any:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}: line {line}: not UTF-8 text (byte 0x{data[err.start]:02x} "
                          f"at offset {err.start}); save the config as UTF-8") from None
    return parse_yaml_text(text, str(path)) or {}


def load_yaml(path: str | os.PathLike, _seen: tuple[Path, ...] = ()) -> dict:
    """Reads a YAML mapping with the safe loader.

    A top-level ``base: other.yaml`` (relative to the file) names a config this one extends: the
    base is loaded first and this file's keys are merged over it, so a paper's variants state only
    what differs. The base's ``reference`` is not inherited: a variant is a different paper row.

    Raises:
        ConfigError: for a missing or empty file, a file that is not UTF-8 text, a YAML syntax
            error or a key given twice in one mapping (the message names file and line), a file
            that is not a mapping, a ``base`` that is not a path, or a ``base`` cycle.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path in _seen:
        raise ConfigError(f"config base cycle: {' -> '.join(map(str, _seen + (path,)))}")
    raw = _parse_yaml_file(path)
    if raw is None or raw == {}:
        raise ConfigError(f"{path}: the config is empty; a config needs at least a model and a "
                          "data section (see configs/)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a config must be a YAML mapping, got {type(raw).__name__}")
    base = raw.pop("base", None)
    if base is not None:
        if not isinstance(base, str) or not base.strip():
            raise ConfigError(f"{path}: base must be the path of a YAML config (relative to "
                              f"this file), got {type(base).__name__} {base!r}")
        inherited = load_yaml(path.parent / base, _seen + (path,))
        inherited.pop("reference", None)
        raw = deep_merge(inherited, raw)
    return raw


def build_config(raw: dict, overrides: list[str] | None = None,
                 source: str | os.PathLike | None = None) -> Config:
    """Validates a raw mapping (after overrides) into a :class:`Config`.

    Args:
        raw: the config mapping.
        overrides: ``key.subkey=value`` strings applied first.
        source: the file ``raw`` was read from (a config file, a run's ``config.yaml``, the
            checkpoint that stored it); a warning about its content (an old key name, say)
            then starts with it: ``<source>: config key model.clip is renamed model.clamp``.

    Returns:
        The validated config.

    Raises:
        ConfigError: listing every invalid or unknown key.
    """
    raw = apply_overrides(raw, overrides or [])
    if source is not None:
        caught: list = []
        try:  # the warnings go out after the catching context, also when validation fails
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                return build_config(raw)
        finally:
            for w in caught:  # this module's warnings are about the content; others unchanged
                if os.path.abspath(w.filename) == os.path.abspath(__file__):
                    warnings.warn(f"{source}: {w.message}", w.category, stacklevel=2)
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    try:
        return Config.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_format_errors(err)) from None


def load_config(path: str | os.PathLike, overrides: list[str] | None = None) -> Config:
    """:func:`load_yaml` then :func:`build_config`; a warning about the file's content (an old
    key name, say) names the file.

    Raises:
        ConfigError: as :func:`load_yaml` and :func:`build_config`.
    """
    raw = load_yaml(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = build_config(raw, overrides)
    for w in caught:
        warnings.warn(f"{path}: {w.message}", w.category, stacklevel=2)
    return config


def save_config(config: Config, path: str | os.PathLike) -> None:
    """Writes the resolved config as YAML, atomically."""
    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
