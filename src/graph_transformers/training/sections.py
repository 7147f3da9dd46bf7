"""The sections of a run config besides ``model`` and ``encodings``: ``data``, ``optim`` (with
its LR schedulers), ``trainer``, ``protocol`` and ``reference``, and :class:`Section`, the base
of every section (the derived ``model`` and ``encodings`` sections too,
:mod:`~graph_transformers.training.model_sections`). :class:`~.config.Config` puts them
together.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PositiveInt = Annotated[int, Field(gt=0)]


class Section(BaseModel):
    """The base of every config section: an unknown key is an error (``extra="forbid"``), an
    assignment is validated, and no number may be NaN or infinite (``optim.lr: .inf`` is an
    error)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class DataConfig(Section):
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
    #: static-shape training batches (``graph_transformers.data.static_shapes``, docs/speed.md):
    #: graphs packed into fixed node / edge / graph budgets chosen from the training split
    #: (about ``batch_size`` graphs each) and padded to exactly them with masked padding graphs,
    #: so a compiled step sees one shape; BatchNorm, loss and metrics ignore the padding.
    #: Evaluation batches stay ordinary PyG batches
    static_shapes: bool = False
    #: keep each split's graphs on the training device as flat tensors and build every batch
    #: there by index gathers (``graph_transformers.data.device_split``, docs/gpu.md): the same
    #: batches, no per-step collation or host-to-device copy; costs the splits' size in device
    #: memory. Graph batches only (not with ``num_neighbors`` or ``sampler: cluster``)
    on_device: bool = False
    #: a user's own data (``name`` is then ignored): a molecule CSV (``.csv``, ``.csv.gz``),
    #: featurized like MoleculeNet and split by scaffold (or ``split``; a label cell may hold a
    #: list, ``[0, 1, 0]``: one task per entry, ``nan`` = missing), or a saved list of PyG graphs
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
    #: ``f1`` (two classes), ``f1_macro`` (classification: F1 per class over the split, averaged
    #: over the classes, LRGB's), ``roc_auc`` / ``ap`` (binary tasks)
    metric: Literal["mae", "rmse", "accuracy", "weighted_accuracy", "f1", "f1_macro", "roc_auc",
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
    #: ``node_table``: the id column; unset: the first column named ``id``, ``node_id``,
    #: ``node``, ``nodeid`` or ``name`` (any case), else the first whose distinct cells hold every
    #: id of the edge list; without one, nodes are the rows and the edge list holds 0- or
    #: 1-based row numbers (``options.id_base`` fixes the base)
    id_column: str | None = None
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
    #: the split of a user's data (``graph_transformers.data.split_rules``, docs/datasets.md):
    #: ``random`` / ``random:TRAIN,VAL,TEST`` (fractions drawn from ``seed``; default
    #: 0.8,0.1,0.1, a node table's 0.6,0.2,0.2 stratified by class); ``scaffold`` /
    #: ``scaffold:TRAIN,VAL,TEST`` (a molecule CSV's default); a column name (a molecule CSV's
    #: column of train / val / test cells); ``columns`` (a node table's train_mask / val_mask /
    #: test_mask, its default when present); or a file of 0-based ids: one split as index arrays
    #: train / val / test in an ``.npz``, ``.json`` or ``.pickle`` (LRGB's; a node table's
    #: ``.npz`` holds the three masks instead), or folds, fold ``fold`` of them: a ``.json``
    #: list (the fair-comparison format of Errica et al. 2020) or a folder / glob of
    #: benchmarking-gnns ``*_train/_val/_test.index`` files (``--folds FILE`` trains them all).
    #: Ids count a CSV's data rows, a graph file's graphs (nodes / edges of a one-graph file), a
    #: TU set's graphs (which take a file only). Not with ``split_files``
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
    def _sampler(self) -> DataConfig:
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
    def _csv(self) -> DataConfig:
        from ..data.registry import is_graph_file
        graph_file = self.path is not None and is_graph_file(self.path)
        if self.path is not None and not graph_file and not self.target_columns:
            raise ValueError("data.path is set: give the label columns in data.target_columns")
        if (self.level is not None or self.split_files is not None) and not graph_file \
                and self.name != "graph_list":
            raise ValueError("data.level and data.split_files apply to a graph file "
                             "(data.path: <file>.pt) or in-memory graphs")
        if self.split is not None and self.split_files is not None:
            raise ValueError("data.split and data.split_files both give the split; give one "
                             "(data.split: a split file of index arrays train / val / test)")
        return self

    @model_validator(mode="after")
    def _node_table(self) -> DataConfig:
        keys = [k for k in ("edges", "nodes", "feature_columns")
                if getattr(self, k) is not None] + (["allow_no_edges"] if self.allow_no_edges
                                                    else [])
        if keys and self.name != "node_table":
            raise ValueError(f"data.{', data.'.join(keys)} apply to data.name: node_table (a "
                             "node-level graph from an edge list and a node table); set it")
        if self.name == "node_table" and self.path is not None:
            raise ValueError("data.path and data.name: node_table exclude each other: give the "
                             "files as data.edges and data.nodes")
        return self


class PlateauConfig(Section):
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


class CosineConfig(Section):
    """Linear warmup for ``warmup_epochs``, then cosine decay to ``min_lr`` at ``max_epochs``."""

    name: Literal["cosine"] = "cosine"
    warmup_epochs: Annotated[int, Field(ge=0)] = 0
    min_lr: Annotated[float, Field(ge=0)] = 0.0


class LinearConfig(Section):
    """Linear warmup for ``warmup_epochs`` (from 0), then linear decay from ``optim.lr`` to
    ``end_lr`` at ``max_epochs`` (GRPE: 2e-4 → 1e-9, the official ``PolynomialDecayLR`` with
    power 1)."""

    name: Literal["linear"] = "linear"
    warmup_epochs: Annotated[int, Field(ge=0)] = 0
    end_lr: Annotated[float, Field(ge=0)] = 1e-9


class OptimConfig(Section):
    """The optimizer (Adam or AdamW), its learning rate, ε and weight decay, and the LR
    scheduler (``null``: a constant LR)."""

    optimizer: Literal["adam", "adamw"] = "adam"
    lr: Annotated[float, Field(gt=0)] = 7e-4
    #: Adam's ε (EGT uses 1e-7)
    eps: Annotated[float, Field(gt=0)] = 1e-8
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    scheduler: Annotated[PlateauConfig | CosineConfig | LinearConfig,
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


class EarlyStoppingConfig(Section):
    """``trainer.early_stopping``: Lightning's ``EarlyStopping`` callback, same names. Training
    stops once ``monitor`` has not improved by more than ``min_delta`` for ``patience``
    validations in a row; ``metrics.json`` records it (``stopped_by: early_stopping`` and
    ``early_stopping.stopped_epoch``). Not a ``lightning.Trainer`` argument: the run builds the
    callback (``training.callbacks.RunEarlyStopping``)."""

    #: ``val/loss``, ``val/<metric>`` (the run's metric, ``data.metric``) or the same of
    #: ``train/``; default: what the best checkpoint is kept by (``val/<metric>``, ``val/loss``
    #: with ``protocol.select_by: loss``)
    monitor: str | None = None
    patience: PositiveInt = 10
    #: default: ``min`` for a loss, MAE or RMSE, ``max`` for the other metrics
    mode: Literal["min", "max"] | None = None
    min_delta: Annotated[float, Field(ge=0)] = 0.0


class TrainerConfig(Section):
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
    #: stop when the validation figure stops improving (:class:`EarlyStoppingConfig`; ``{}``:
    #: its defaults). Not a Lightning argument.
    early_stopping: EarlyStoppingConfig | None = None

    @model_validator(mode="after")
    def _trainer_arguments(self) -> TrainerConfig:
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
                if v is not None and k not in ("logger", "slice_minutes", "threads",
                                               "early_stopping")}


class ProtocolConfig(Section):
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


class ReferenceConfig(Section):
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
