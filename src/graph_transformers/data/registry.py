"""Dataset registry: config names → the datasets of :mod:`graph_transformers.datasets`, and the
generic loading of a config's ``data`` section (``data.source``, the cache lock, the record
``metrics.json`` keeps).

Every dataset declares its :class:`DatasetSpec` next to its loader, in its family's module
(``docs/adding_a_dataset.md``). This module imports none of them: :data:`DATASETS` maps a config
name to ``"package.module:ATTRIBUTE"``, imported on first use (as the encoding registry does), and
:data:`SPEC_READERS` names the functions that read a spec off the data (any TU set, a node table,
a user's graph file or molecule CSV). :func:`register_dataset` adds a dataset.

A config's ``data`` section is unpacked once into plain keyword arguments
(:func:`dataset_arguments`); a loader is called with those its registration declares
(``DatasetSpec.params``: the ``data`` keys and ``data.options`` keys it accepts), by keyword::

    load(root, split=..., pre_transform=..., [source=...], **the declared arguments)

where ``root`` is the cache directory (``data.cache_dir``), under which the loader picks its own
folder, and ``source`` (``"canonical"`` / ``"generated"``) is passed to the datasets that have a
published form (``spec.published``). A ``data.options`` key that the declaration does not name
is a one-line ``ValueError`` naming it and the accepted ones (:func:`check_options`); nothing is
read off a loader's signature.
"""
from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from torch_geometric.data import Dataset
from torch_geometric.transforms import BaseTransform, Compose

from .._optional import MissingDependencyError
from ..encodings.registry import build_transforms
from ..fileio import check_name
from .cache import DataNotFoundError, cache_lock, resolve_cache_dir

log = logging.getLogger(__name__)

#: values of ``data.source`` (see :func:`load_splits`)
SOURCES: tuple[str, ...] = ("auto", "canonical", "generated")


@dataclass(frozen=True)
class DatasetSpec:
    """What a dataset is and how to load it.

    Attributes:
        name: config name.
        level: ``"graph"``, ``"node"`` or ``"edge"`` prediction, or ``"pair"`` (link
            prediction within each graph: labelled node pairs ``edge_label_index`` /
            ``edge_label``, :mod:`graph_transformers.training.tasks`).
        task: ``"regression"``, ``"classification"`` (one label of ``out_dim`` classes) or
            ``"binary"`` (``out_dim`` binary tasks, NaN = missing label); see
            :mod:`graph_transformers.training.tasks`.
        out_dim: model outputs (1 for scalar regression, number of classes for classification,
            number of tasks for binary).
        metric: the paper's metric key in ``metrics.json`` (``"mae"``, ``"accuracy"``, ...).
        load: the loader, a callable or ``"package.module:function"``:
            ``load(root, split=, pre_transform=, [source=], **arguments) -> Dataset`` (module
            docstring); ``root`` is the cache directory.
        params: the keyword arguments ``load`` accepts besides those: keys of the ``data``
            section (``data_dir``, ``fold``, ``seed``, ``path``, ...; ``data.split`` is
            ``split_rule``, see :data:`SECTION_KEYS`) and ``data.options`` keys
            (``max_rows``, ``num_graphs``, ...). The loader gets exactly these (where set);
            any other ``data.options`` key is refused (:func:`check_options`).
        node_types / edge_types: category counts of the categorical features (``None`` when
            continuous or absent).
        node_dim / edge_dim: widths of continuous features.
        splits: split names.
        loss: ``"auto"`` (L1 / cross-entropy / BCE), ``"mse"`` or ``"weighted_ce"`` (the SBM
            benchmarks' class-weighted cross-entropy).
        featurize: ``featurize(smiles) -> Data``, a SMILES string as a graph with this dataset's
            node and edge features (molecule datasets; ``None`` for the others). Raises
            ``ValueError`` for a SMILES it cannot use.
        targets: names of the ``out_dim`` regression targets or binary tasks, where known.
        source: what ``load`` gives without ``source="canonical"``: ``"canonical"`` (the
            published files, read as published: TU, Planetoid, MoleculeNet), ``"generated"``
            (generated in code: PATTERN, CLUSTER, CSL, TSP), ``"reconstructed"`` (rebuilt from
            other published material: ZINC's train split, the superpixel graphs from the images,
            ogbg-molhiv's re-derived split) or ``"user"`` (a user's CSV or graph file).
        published: the benchmark also has a published form: ``load`` takes ``source``
            (``"canonical"``: the published files with the well-kept loader, raising
            :class:`~graph_transformers.data.cache.DataNotFoundError` when they cannot be had;
            ``"generated"``: this library's version).
        adapt: ``adapt(spec, **arguments) -> DatasetSpec`` (a callable or ``"module:function"``),
            the spec for a config's dataset arguments (the TU sets: ``data.node_features``
            changes ``node_dim``), or ``None``.
        adapt_params: the arguments ``adapt`` accepts (as ``params``).
    """

    name: str
    level: str
    task: str
    out_dim: int
    metric: str
    load: Callable[..., Dataset] | str
    node_types: Any = None
    edge_types: Any = None
    node_dim: int | None = None
    edge_dim: int | None = None
    splits: tuple[str, ...] = ("train", "val", "test")
    loss: str = "auto"
    featurize: Callable[[str], Any] | None = None
    targets: tuple[str, ...] | None = None
    source: str = "canonical"
    published: bool = False
    adapt: Callable[..., DatasetSpec] | str | None = None
    params: tuple[str, ...] = ()
    adapt_params: tuple[str, ...] = ()

    @property
    def higher_is_better(self) -> bool:
        return self.metric not in ("mae", "rmse", "loss")


_D = "graph_transformers.datasets."

#: config name → ``"package.module:ATTRIBUTE"`` of its :class:`DatasetSpec` (imported on first
#: use; a :class:`DatasetSpec` itself is accepted too, see :func:`register_dataset`)
DATASETS: dict[str, Any] = {
    "zinc": _D + "molecules.zinc:ZINC_SPEC",
    "csl": _D + "synthetic.csl:CSL_SPEC",
    "pattern": _D + "synthetic.sbm:PATTERN_SPEC",
    "cluster": _D + "synthetic.sbm:CLUSTER_SPEC",
    "mutag": _D + "tu:MUTAG_SPEC",
    "enzymes": _D + "tu:ENZYMES_SPEC",
    "nci1": _D + "tu:NCI1_SPEC",
    "cora": _D + "planetoid:CORA_SPEC",
    "citeseer": _D + "planetoid:CITESEER_SPEC",
    "ogbg-molhiv": _D + "molecules.moleculenet:MOLHIV_SPEC",
    "tox21": _D + "molecules.moleculenet:TOX21_SPEC",
    "clintox": _D + "molecules.moleculenet:CLINTOX_SPEC",
    "sider": _D + "molecules.moleculenet:SIDER_SPEC",
    "esol": _D + "molecules.moleculenet:ESOL_SPEC",
    "freesolv": _D + "molecules.moleculenet:FREESOLV_SPEC",
    "lipo": _D + "molecules.moleculenet:LIPO_SPEC",
    "mnist": _D + "images.superpixels:MNIST_SPEC",
    "cifar10": _D + "images.superpixels:CIFAR10_SPEC",
    "synthetic_large": _D + "synthetic.large_graph:SYNTHETIC_LARGE_SPEC",
    "tsp": _D + "synthetic.tsp:TSP_SPEC",
    "pcqm4m": _D + "molecules.pcqm4m:PCQM4M_SPEC",
    "pcqm4mv2": _D + "molecules.pcqm4m:PCQM4MV2_SPEC",
    "ogbg-molpcba": _D + "molecules.molpcba:MOLPCBA_SPEC",
    "peptides-func": _D + "lrgb.peptides:PEPTIDES_FUNC_SPEC",
    "peptides-struct": _D + "lrgb.peptides:PEPTIDES_STRUCT_SPEC",
    "pascalvoc-sp": _D + "lrgb.superpixels_sp:PASCALVOC_SP_SPEC",
    "coco-sp": _D + "lrgb.superpixels_sp:COCO_SP_SPEC",
    "pcqm-contact": _D + "lrgb.pcqm_contact:PCQM_CONTACT_SPEC",
}


class SpecReader(NamedTuple):
    """A dataset whose spec is read off the data: ``target`` (``"package.module:function"``)
    is called with the config's dataset arguments named in ``params``
    (:func:`dataset_arguments`) and returns a :class:`DatasetSpec`."""

    target: str
    params: tuple[str, ...]


#: datasets whose spec is read off the data (``name`` is the TU name of ``tu:<NAME>``).
#: ``graph_file`` / ``molecule_csv``: ``data.path`` set (:func:`is_graph_file` tells which).
SPEC_READERS: dict[str, SpecReader] = {
    "tu:": SpecReader(_D + "tu:tu_spec", ("data_dir", "cache_dir", "node_features", "max_degree",
                                          "index_prefix")),
    "node_table": SpecReader(_D + "user.node_table:node_table_spec", (
        "edges", "nodes", "id_column", "label_column", "feature_columns", "undirected", "task",
        "split_rule", "seed", "id_base", "standardize_features", "allow_no_edges")),
    "graph_file": SpecReader(_D + "user.graph_list:graph_file_spec", ("path", "level", "task")),
    "molecule_csv": SpecReader(_D + "molecules.molecule_csv:molecule_csv_spec",
                               ("task", "target_columns", "path")),
}


def resolve(target: Any) -> Any:
    """``"package.module:attribute"`` → that attribute (imported now); anything else as is."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def register_dataset(name: str, spec: DatasetSpec | str) -> None:
    """Registers ``spec`` (a :class:`DatasetSpec` or ``"package.module:ATTRIBUTE"`` naming one)
    as ``data.name: <name>`` (``docs/adding_a_dataset.md``). The spec declares what its loader
    accepts (``DatasetSpec.params``), e.g.
    ``DatasetSpec("toy", "graph", "regression", 1, "mae", load_toy, params=("seed", "size"))``.

    Raises:
        ValueError: ``name`` is registered already, or is one of :data:`SPEC_READERS`.
    """
    if name in DATASETS or name in SPEC_READERS or name.lower().startswith("tu:"):
        raise ValueError(f"dataset {name!r} is registered already")
    DATASETS[name] = spec


#: suffixes of a user's graph file (``data.path``); any other suffix is a molecule CSV
GRAPH_FILE_SUFFIXES = (".pt", ".pth")


def is_graph_file(path: Any) -> bool:
    """Whether ``data.path`` names a saved list of PyG graphs (``.pt`` / ``.pth``) rather than a
    molecule CSV."""
    return str(path).lower().endswith(GRAPH_FILE_SUFFIXES)


#: the metrics each task can report (``data.metric``); the first of a task is its default
#: where the dataset names none
TASK_METRICS: dict[str, tuple[str, ...]] = {
    "regression": ("mae", "rmse"),
    "classification": ("accuracy", "weighted_accuracy", "f1", "f1_macro"),
    "binary": ("roc_auc", "ap"),
}


def choose_metric(spec: DatasetSpec, metric: str | None) -> DatasetSpec:
    """``spec`` reporting ``metric`` (``data.metric``) instead of its own; ``None`` keeps it.
    The loss is unchanged (``spec.loss``).

    Raises:
        ValueError: a metric the task cannot report (``f1`` needs two classes), naming the ones
            it can.
    """
    if metric is None or metric == spec.metric:
        return spec
    allowed = TASK_METRICS.get(spec.task, ())
    if metric not in allowed or (metric == "f1" and spec.out_dim != 2):
        can = [m for m in allowed if m != "f1" or spec.out_dim == 2]
        raise ValueError(f"data.metric={metric!r} does not apply to dataset {spec.name!r} (a "
                         f"{spec.task} task with {spec.out_dim} outputs); choose one of {can}")
    return replace(spec, metric=metric)


# ----------------------------------------------------------------------- the data section, once
#: the ``data`` keys a dataset may take as keyword arguments (``split`` is passed as
#: ``split_rule``: ``split`` is the split a loader builds), with their defaults
SECTION_KEYS: dict[str, Any] = {
    "data_dir": None, "cache_dir": None, "fold": 0, "seed": 0, "path": None, "level": None,
    "task": None, "split_files": None, "smiles_column": "smiles", "target_columns": None,
    "edges": None, "nodes": None, "id_column": None, "label_column": "label",
    "feature_columns": None, "undirected": True, "node_features": "auto",
    "allow_no_edges": False,
}

#: ``data.options`` keys passed on only to a loader that declares them, else ignored (they are
#: ``data`` keys too: ``data.options.seed`` overrides ``data.seed`` where declared)
_COMMON = ("fold", "seed")


def dataset_arguments(data_cfg: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A config's ``data`` section read once, as plain values: ``(name, arguments, options)``
    with ``arguments`` the keys of the section a dataset may take (``data_dir``, ``fold``,
    ``seed``, ``path``, ``edges``, ...; ``data.split`` as ``split_rule``) and ``options`` the
    dataset class's extra keyword arguments (``data.options``)."""
    args = {key: getattr(data_cfg, key, default) for key, default in SECTION_KEYS.items()}
    args["split_rule"] = getattr(data_cfg, "split", None)
    args["node_features"] = str(args["node_features"] or "auto")
    return (str(getattr(data_cfg, "name", "") or ""), args,
            dict(getattr(data_cfg, "options", None) or {}))


def check_options(name: str, params: tuple[str, ...], options: dict[str, Any]) -> None:
    """Checks ``data.options`` against what the dataset ``name`` declares it accepts
    (``params``: :attr:`DatasetSpec.params`); ``fold`` / ``seed`` are let through (passed only
    where declared).

    Raises:
        ValueError: one line naming the first unknown key and the accepted options.
    """
    for key in options:
        if key not in params and key not in _COMMON:
            accepted = [p for p in params if p not in SECTION_KEYS and p != "split_rule"]
            raise ValueError(f"data.options: dataset {name!r} takes no option {key!r}; it "
                             f"accepts {', '.join(map(repr, accepted)) or 'no options'}")


def call_with(func: Callable, params: tuple[str, ...], args: dict[str, Any],
              options: dict[str, Any] | None = None, **fixed: Any) -> Any:
    """``func(**fixed, **the arguments and options named in params)``: ``params`` is what
    ``func``'s registration declares it accepts; a ``data.options`` key overrides the ``data``
    key of the same name."""
    merged = {**args, **(options or {})}
    return func(**fixed, **{k: merged[k] for k in params if k in merged and k not in fixed})


def _entry(name: str, path: Any) -> tuple[str, Any, dict[str, Any]]:
    """``(key, target, fixed arguments)`` of a config's dataset: a registered
    :class:`DatasetSpec` (or its ``"module:ATTRIBUTE"``), or a reader of :data:`SPEC_READERS`.

    Raises:
        ValueError: an unknown name.
    """
    if path:
        key = "graph_file" if is_graph_file(path) else "molecule_csv"
        return key, SPEC_READERS[key], {}
    if name == "graph_list":
        raise ValueError("this run trained on in-memory graphs: pass them again "
                         "(dataset=...) to evaluate or resume it")
    if name.lower().startswith("tu:"):
        # the TU name becomes folders of the cache and of DATA_DIR/TU: a name, not a path
        return "tu:", SPEC_READERS["tu:"], {"name": check_name(name[3:], "TU dataset name "
                                                              f"(data.name {name!r})")}
    if name in SPEC_READERS and name not in ("graph_file", "molecule_csv"):  # by data.path only
        return name, SPEC_READERS[name], {}
    return name, _registered(name), {}


def _registered(name: str) -> Any:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {sorted(DATASETS)}, any TU "
                         "dataset as 'tu:<NAME>' (e.g. tu:PROTEINS), node_table (a node-level "
                         "graph from an edge list and a node table), or set data.path to a "
                         "molecule CSV")
    return DATASETS[name]


def get_spec(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` of a registered dataset (its module imported now).

    Raises:
        ValueError: for an unknown name (listing the known ones).
    """
    return resolve(_registered(name))


def _spec_for(name: str, args: dict[str, Any], options: dict[str, Any]) -> DatasetSpec:
    """The spec of a config's dataset, from its unpacked arguments (see :func:`resolve_spec`)."""
    key, target, fixed = _entry(name, args["path"])
    target = resolve(target)
    mode = args["node_features"]
    if mode != "auto":
        if "node_features" not in target.params:
            raise ValueError(f"data.node_features={mode!r} applies to the TU sets (mutag, "
                             "enzymes, nci1, tu:<NAME>) only; set data.node_features=auto for "
                             "this dataset")
    if isinstance(target, SpecReader):
        spec = call_with(resolve(target.target), target.params, args, options, **fixed)
    else:
        spec = target
    if spec.adapt is not None:
        spec = call_with(resolve(spec.adapt), spec.adapt_params, args, options, spec=spec)
    if args.get("split_rule") is not None and "split_rule" not in spec.params:
        raise ValueError(f"data.split applies to a dataset whose split can be chosen (a molecule "
                         f"CSV, a graph file, a node table, a TU set); {spec.name} has its own "
                         "fixed split: leave data.split unset")
    return spec


def resolve_spec(data_cfg: Any) -> DatasetSpec:
    """The spec for a config's ``data`` section: a user's graph file or molecule CSV when
    ``data.path`` is set, else the registered ``data.name`` (a TU set as ``tu:<NAME>`` and
    ``node_table``: read off the files, :data:`SPEC_READERS`), adapted to the section's
    arguments (``spec.adapt``; the TU sets: ``data.node_features`` and
    ``data.options.max_degree`` choose the node features and so ``node_dim``).

    Raises:
        ValueError: an unknown name; ``data.node_features`` other than ``auto`` for a dataset
            that is not a TU set; a bad ``data.options.max_degree``.
    """
    return _spec_for(*dataset_arguments(data_cfg))


def build_pre_transform(encodings: Any, size_limit: Any = None) -> BaseTransform | None:
    """The encodings section of a config → a PyG pre-transform (``None`` when empty): the
    registered encodings' transforms in registry order
    (:data:`~graph_transformers.encodings.registry.ENCODINGS`), composed when several;
    ``size_limit`` (the model's :class:`~graph_transformers.core.dense.GraphSizeLimit`) makes
    the all-pairs encodings refuse larger graphs before computing them."""
    transforms = build_transforms(encodings, size_limit)
    if not transforms:
        return None
    return transforms[0] if len(transforms) == 1 else Compose(transforms)


def load_splits(data_cfg: Any, encodings: Any, size_limit: Any = None) -> dict[str, Dataset]:
    """Loads every split of the dataset a config names, with its encodings precomputed, under
    :func:`~graph_transformers.data.cache.cache_lock` (concurrent processes build it once).

    ``data.source`` (:data:`SOURCES`) picks where the graphs come from, for a dataset with a
    published form (``spec.published``): ``auto`` reads the published files with the
    well-kept loader when they can be had (local, or a download that succeeds) and otherwise
    falls back to this library's generator / reconstruction with one WARNING naming what was
    missing and how to get it; ``canonical`` requires the published files; ``generated`` always
    uses the generator. Every split then carries ``data_source`` (the record ``metrics.json``
    stores: what was asked for, what was used, the loader and files, why the published files
    were not used) and a per-split ``provenance`` (``"exact"`` for published graphs, else the
    dataset's own record, or ``spec.source``). A dataset's own ``split_rule`` (the TU sets':
    index files or seeded folds; ``metrics.json`` ``split``) is logged once at INFO.

    ``size_limit``: the largest graph the model takes (:class:`~graph_transformers.core.dense.
    GraphSizeLimit`, from its memory budget); the all-pairs encodings refuse a larger graph
    before computing it.

    Raises:
        ValueError: an unknown ``data.source``; ``generated`` for a dataset that has no generator
            (it is read from its published files); ``canonical`` for one that has no published
            form; a ``data.options`` key the dataset's registration does not declare
            (:func:`check_options`).
        DataNotFoundError: ``canonical`` and the published files cannot be had, or the chosen
            loader's files are missing (the message says where it looked and how to get them).
    """
    name, args, options = dataset_arguments(data_cfg)
    spec = _spec_for(name, args, options)
    pre = build_pre_transform(encodings, size_limit)
    requested = str(getattr(data_cfg, "source", "auto"))
    check_options(spec.name, spec.params, options)
    # one process builds a missing cache, concurrent ones (DDP ranks) wait and read it
    with cache_lock(spec.name, args["cache_dir"]):
        splits, record = _load_by_source(spec, requested, pre, args, options)
    for split, ds in splits.items():
        ds.data_source = record
        prov = getattr(ds, "provenance", None)
        if not prov:  # a dataset that keeps no record of its own
            kind = record["source"]
            ds.provenance = {split: "exact" if kind == "canonical" else kind}
    # a dataset's own split rule (TU: index files or seeded folds), metrics.json ``split``
    _log_split_rule(spec.name, getattr(next(iter(splits.values())), "split_rule", None))
    return splits


def _log_split_rule(name: str, rule: dict | None) -> None:
    """One INFO line on the split rule a dataset records (``split_rule``, e.g. the TU sets';
    ``metrics.json`` keeps it under ``split``)."""
    if not rule:
        return
    if rule.get("rule") == "index_files":
        files = ", ".join(str(f).rsplit("/", 1)[-1] for f in rule.get("files", ()))
        log.info("%s split: fold %s of %s from the index files %s (recorded in metrics.json, "
                 "split)", name, rule.get("fold"), rule.get("num_folds"), files)
    elif rule.get("rule") == "stratified_folds":
        log.info("%s split: fold %s of %s seeded stratified folds (seed %s; recorded in "
                 "metrics.json, split)", name, rule.get("fold"), rule.get("num_folds"),
                 rule.get("seed"))
    elif isinstance(rule.get("rule"), str):  # a user's data.split (data.split_rules)
        sizes = "/".join(str(v) for v in (rule.get("sizes") or {}).values())
        log.info("%s split: %s%s (recorded in metrics.json, split)", name, rule["rule"],
                 f", train/val/test = {sizes}" if sizes else "")
    else:
        log.info("%s split: %s", name, rule)


def _load_by_source(spec: DatasetSpec, requested: str, pre: BaseTransform | None,
                    args: dict[str, Any], options: dict[str, Any]
                    ) -> tuple[dict[str, Dataset], dict[str, Any]]:
    """The splits and the ``data_source`` record, following ``data.source`` (see
    :func:`load_splits`)."""
    if requested not in SOURCES:
        raise ValueError(f"data.source must be one of {SOURCES}, got {requested!r}")
    if requested == "generated" and not spec.published and spec.source == "canonical":
        raise ValueError(f"data.source: generated, but {spec.name} has no generator: it is read "
                         "from its published files (use data.source: auto or canonical)")
    if requested == "canonical" and not spec.published and spec.source in (
            "generated", "reconstructed"):
        raise ValueError(f"data.source: canonical, but {spec.name} has no published files: it "
                         f"is {spec.source} in code (use data.source: auto or generated)")
    load = resolve(spec.load)
    root = resolve_cache_dir(args["cache_dir"])

    def load_all(source: str) -> dict[str, Dataset]:
        fixed = {"source": source} if spec.published else {}
        return {s: call_with(load, spec.params, args, options, root=root, split=s,
                             pre_transform=pre, **fixed) for s in spec.splits}

    record: dict[str, Any] = {"requested": requested}
    if spec.published and requested != "generated":
        try:
            splits = load_all("canonical")
        except (DataNotFoundError, MissingDependencyError) as err:
            if requested == "canonical":
                raise type(err)(f"data.source: canonical: {err}") from None
            log.warning(
                "%s: using the %s version (data.source: auto), not the published benchmark "
                "files: %s. Results are then not comparable graph by graph with published ones; "
                "set data.source: generated to choose this version explicitly.", spec.name,
                spec.source, err)
            record["canonical_unavailable"] = str(err)
        else:
            info = dict(getattr(splits[spec.splits[0]], "canonical_info", {}))
            record.update(source="canonical", **info)
            ignored = sorted(set(options) - set(_COMMON))
            if ignored:
                log.warning("%s: data.options %s apply to the %s version only; the published "
                            "files are used as they are", spec.name, ignored, spec.source)
            log.info("%s: published benchmark files via %s (%s)", spec.name,
                     info.get("loader", "?"), info.get("files", "?"))
            return splits, record
    splits = load_all("generated")
    first = splits[spec.splits[0]]
    record.update(source=spec.source, loader=f"{type(first).__module__}.{type(first).__name__}")
    return splits, record
