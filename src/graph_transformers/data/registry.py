"""Dataset registry: config names → loaders and the task description a model and trainer need."""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from torch_geometric.data import Dataset
from torch_geometric.transforms import BaseTransform, Compose

from .._optional import MissingDependencyError, require
from .cache import DataNotFoundError, cache_lock, resolve_cache_dir, resolve_data_dir
# plain constants, no RDKit import
from .molecules import ATOM_FEATURE_DIMS, BOND_FEATURE_DIMS, MOLECULENET

log = logging.getLogger(__name__)

#: values of ``data.source`` (see :func:`load_splits`)
SOURCES: tuple[str, ...] = ("auto", "canonical", "generated")


@dataclass(frozen=True)
class DatasetSpec:
    """What a dataset is and how to load it.

    Attributes:
        name: config name.
        level: ``"graph"`` or ``"node"`` prediction.
        task: ``"regression"``, ``"classification"`` (one label of ``out_dim`` classes) or
            ``"binary"`` (``out_dim`` binary tasks, NaN = missing label); see
            :mod:`graph_transformers.training.tasks`.
        out_dim: model outputs (1 for scalar regression, number of classes for classification,
            number of tasks for binary).
        metric: the paper's metric key in ``metrics.json`` (``"mae"``, ``"accuracy"``, ...).
        node_types / edge_types: category counts of the categorical features (``None`` when
            continuous or absent).
        node_dim / edge_dim: widths of continuous features.
        splits: split names.
        loss: ``"auto"`` (L1 / cross-entropy / BCE), ``"mse"`` or ``"weighted_ce"`` (the SBM
            benchmarks' class-weighted cross-entropy).
        load: ``load(split, data_dir, cache_dir, pre_transform, options) -> Dataset``: this
            library's loader.
        source: what ``load`` gives: ``"canonical"`` (the published files, read as published:
            TU, Planetoid, MoleculeNet), ``"generated"`` (generated in code: PATTERN, CLUSTER,
            CSL, TSP), ``"reconstructed"`` (rebuilt from other published material: ZINC's train
            split, the superpixel graphs from the images, ogbg-molhiv's re-derived split) or
            ``"user"`` (a user's CSV or graph file).
        load_canonical: same signature; reads the published files with the well-kept loader
            (:mod:`graph_transformers.data.canonical`), raising
            :class:`~graph_transformers.data.cache.DataNotFoundError` when they cannot be had.
            ``None`` when ``load`` is the only loader.
        featurize: ``featurize(smiles) -> Data``, a SMILES string as a graph with this dataset's
            node and edge features (molecule datasets; ``None`` for the others). Raises
            ``ValueError`` for a SMILES it cannot use.
        targets: names of the ``out_dim`` regression targets or binary tasks, where known.
    """

    name: str
    level: str
    task: str
    out_dim: int
    metric: str
    load: Callable[..., Dataset]
    node_types: Any = None
    edge_types: Any = None
    node_dim: int | None = None
    edge_dim: int | None = None
    splits: tuple[str, ...] = ("train", "val", "test")
    loss: str = "auto"
    featurize: Callable[[str], Any] | None = None
    targets: tuple[str, ...] | None = None
    source: str = "canonical"
    load_canonical: Callable[..., Dataset] | None = None

    @property
    def higher_is_better(self) -> bool:
        return self.metric not in ("mae", "rmse", "loss")


def _load_zinc(split, data_dir, cache_dir, pre_transform, options):
    require("rdkit", "the ZINC dataset")
    from .zinc import ZINCSubset
    root = resolve_cache_dir(cache_dir) / "ZINC"
    return ZINCSubset(root=str(root), split=split, data_dir=data_dir, pre_transform=pre_transform)


def _load_csl(split, data_dir, cache_dir, pre_transform, options):
    from .csl import CSL
    root = resolve_cache_dir(cache_dir) / "CSL"
    return CSL(root=str(root), split=split, fold=options.get("fold", 0),
               seed=options.get("seed", 0), pre_transform=pre_transform)


def _load_pattern(split, data_dir, cache_dir, pre_transform, options):
    from .sbm import PATTERN
    root = resolve_cache_dir(cache_dir) / "PATTERN"
    sizes = {k: options[k] for k in ("num_graphs_per_pattern", "num_patterns") if k in options}
    return PATTERN(root=str(root), split=split, seed=options.get("seed", 0),
                   pre_transform=pre_transform, **sizes)


def _load_cluster(split, data_dir, cache_dir, pre_transform, options):
    from .sbm import CLUSTER
    root = resolve_cache_dir(cache_dir) / "CLUSTER"
    sizes = {"num_graphs": options["num_graphs"]} if "num_graphs" in options else {}
    return CLUSTER(root=str(root), split=split, seed=options.get("seed", 0),
                   pre_transform=pre_transform, **sizes)


def _load_tu(name: str, constant_x: bool = False, node_features: str = "auto",
             max_degree: int | None = None) -> Callable[..., Dataset]:
    """The loader of a TU set. ``constant_x``: the set has no node features of its own;
    ``node_features`` / ``max_degree``: ``data.node_features`` and its cap (resolved by
    :func:`resolve_spec`), applied as a pre-transform before the encodings (their own cache)."""
    def load(split, data_dir, cache_dir, pre_transform, options):
        from torch_geometric.transforms import Constant

        from .tu import DEFAULT_MAX_DEGREE, TU, node_feature_transform
        cap = DEFAULT_MAX_DEGREE if max_degree is None else max_degree
        # auto on a featureless set: the constant is added as each graph is read (a transform,
        # as before data.node_features existed, so earlier caches and fingerprints still hold)
        auto_constant = node_features == "auto" and constant_x
        features = None if auto_constant else node_feature_transform(node_features, constant_x,
                                                                     cap)
        root = resolve_cache_dir(cache_dir) / "TU"
        if split == "train":
            _log_tu_features(name, constant_x, node_features, cap)
        pre = features if pre_transform is None else (
            pre_transform if features is None else Compose([features, pre_transform]))
        # the benchmark split is fixed: the data seed does not reshuffle folds
        return TU(name, root=str(root), split=split, fold=options.get("fold", 0),
                  data_dir=data_dir, pre_transform=pre,
                  transform=Constant(value=1.0) if auto_constant else None)
    return load


def _log_tu_features(name: str, featureless: bool, mode: str, cap: int) -> None:
    """One INFO line on the node features a TU run uses (``data.node_features``)."""
    if mode == "degree":
        log.info("TU %s: node features = one-hot node degree, %d columns (degree >= %d in the "
                 "last; data.options.max_degree)%s", name, cap + 1, cap,
                 "" if featureless else ", appended after the set's own node features")
    elif mode == "constant":
        log.info("TU %s: node features = one constant 1 per node (data.node_features: "
                 "constant)%s", name, "" if featureless else "; the set's own node features "
                 "are not used")
    elif featureless:
        log.info("TU %s has no node labels or attributes: each node gets one constant feature 1 "
                 "(data.node_features: auto); data.node_features=degree gives the one-hot node "
                 "degree instead (capped at data.options.max_degree, default %d), the usual "
                 "choice for such sets", name, cap)


@functools.lru_cache(maxsize=32)
def tu_spec(name: str, data_dir: Any = None, cache_dir: Any = None, node_features: str = "auto",
            max_degree: int | None = None) -> DatasetSpec:
    """The spec of any TU dataset by its TU name (``data.name: tu:<NAME>``, e.g. ``tu:DD``),
    read once from the data: classes, node feature width (one-hot node labels, plus the node
    attributes where present; a constant 1 for sets with neither; changed by ``node_features``,
    see :func:`~.tu.node_feature_dim`) and edge feature width (one-hot edge labels, or none).
    Raw files come from ``DATA_DIR/TU/<NAME>.zip`` or TUDataset's download; splits are the
    set's own index files in ``DATA_DIR/TU/`` where present, else the 10 stratified folds of
    :mod:`graph_transformers.data.tu`. The spec is read once per (name, data_dir, cache_dir,
    node_features, max_degree) in a process (a run resolves it several times).

    Raises:
        DataNotFoundError: when the raw files are neither local nor downloadable.
        ValueError: an unknown ``node_features``, a bad ``max_degree``, or malformed index
            files.
    """
    from .tu import DEFAULT_MAX_DEGREE, TU, node_feature_dim
    full = TU(name, root=str(resolve_cache_dir(cache_dir) / "TU"), split="train", fold=0,
              data_dir=data_dir)
    own = int(full.num_features)
    cap = DEFAULT_MAX_DEGREE if max_degree is None else max_degree
    edge_dim = int(full.num_edge_features) or None
    return DatasetSpec(f"tu:{full.name}", "graph", "classification", int(full.num_classes),
                       "accuracy", _load_tu(full.name, constant_x=own == 0,
                                            node_features=node_features, max_degree=cap),
                       node_dim=node_feature_dim(node_features, own, cap), edge_dim=edge_dim)


#: the registered TU datasets: config name → TU name
_TU_REGISTERED = {"mutag": "MUTAG", "enzymes": "ENZYMES", "nci1": "NCI1"}


@functools.lru_cache(maxsize=32)
def _registered_tu_spec(name: str, node_features: str, max_degree: int | None) -> DatasetSpec:
    """A registered TU spec (all have node features) with ``data.node_features`` other than
    ``auto``: the same spec with the feature pre-transform and its ``node_dim``."""
    from .tu import DEFAULT_MAX_DEGREE, node_feature_dim
    spec = DATASETS[name]
    cap = DEFAULT_MAX_DEGREE if max_degree is None else max_degree
    return replace(spec, load=_load_tu(_TU_REGISTERED[name], node_features=node_features,
                                       max_degree=cap),
                   node_dim=node_feature_dim(node_features, int(spec.node_dim), cap))


def _node_features(data_cfg: Any) -> tuple[str, int | None]:
    """``data.node_features`` and ``data.options.max_degree`` of a config's data section."""
    mode = getattr(data_cfg, "node_features", "auto") or "auto"
    options = getattr(data_cfg, "options", None) or {}
    return str(mode), options.get("max_degree")


class NodeSplitMask(BaseTransform):
    """Sets ``data.node_mask = data[f"{split}_mask"]`` so that a transductive single-graph dataset
    (Planetoid) trains and evaluates on the nodes of one split."""

    def __init__(self, split: str) -> None:
        self.split = split

    def forward(self, data):
        data.node_mask = data[f"{self.split}_mask"]
        return data

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.split!r})"


def _load_planetoid(name: str) -> Callable[..., Dataset]:
    def load(split, data_dir, cache_dir, pre_transform, options):
        from .planetoid import PlanetoidGraph
        root = resolve_cache_dir(cache_dir) / "Planetoid"
        return PlanetoidGraph(name, root=str(root), data_dir=data_dir,
                              pre_transform=pre_transform, transform=NodeSplitMask(split))
    return load


def _load_synthetic_large(split, data_dir, cache_dir, pre_transform, options):
    from .synthetic import SyntheticLargeGraph
    kwargs = {k: options[k] for k in ("num_nodes", "avg_degree", "p_intra", "signal")
              if k in options}
    return SyntheticLargeGraph(root=str(resolve_cache_dir(cache_dir) / "SyntheticLarge"),
                               seed=options.get("seed", 0), pre_transform=pre_transform,
                               transform=NodeSplitMask(split), **kwargs)


def _load_moleculenet(name: str) -> Callable[..., Dataset]:
    def load(split, data_dir, cache_dir, pre_transform, options):
        require("rdkit", f"the {name} dataset")
        from .molecules import MoleculeNetCSV
        return MoleculeNetCSV(root=str(resolve_cache_dir(cache_dir) / "MoleculeNet"), name=name,
                           split=split, data_dir=data_dir, pre_transform=pre_transform,
                           max_rows=options.get("max_rows"))
    return load


def _load_molecule_csv(split, data_dir, cache_dir, pre_transform, options):
    require("rdkit", "a molecule CSV dataset")
    from .molecules import MoleculeCSV
    kwargs = {k: v for k, v in options.items() if k not in ("fold", "seed")}
    return MoleculeCSV(root=str(resolve_cache_dir(cache_dir) / "MoleculeCSV"), split=split,
                       pre_transform=pre_transform, **kwargs)


def _load_superpixels(kind: str) -> Callable[..., Dataset]:
    def load(split, data_dir, cache_dir, pre_transform, options):
        require("skimage", f"the {kind.upper()} superpixel dataset")
        from . import superpixels
        cls = superpixels.MNISTSuperpixels if kind == "mnist" else superpixels.CIFAR10Superpixels
        root = resolve_cache_dir(cache_dir) / cls.__name__
        return cls(root=str(root), split=split, data_dir=data_dir, pre_transform=pre_transform,
                   max_images=options.get("max_images"),
                   num_workers=options.get("num_workers", 0))
    return load


def _load_tsp(split, data_dir, cache_dir, pre_transform, options):
    from .tsp import TSP
    root = resolve_cache_dir(cache_dir) / "TSP"
    return TSP(root=str(root), split=split, seed=options.get("seed", 0),
               pre_transform=pre_transform, num_graphs=options.get("num_graphs"))


def _canonical_benchmark(name: str) -> Callable[..., Dataset]:
    """PyG's ``GNNBenchmarkDataset`` on the published files of ``name``."""
    def load(split, data_dir, cache_dir, pre_transform, options):
        from .canonical import GNNBenchmark, canonical_root
        return GNNBenchmark(name, split=split, data_dir=data_dir, root=canonical_root(cache_dir),
                            pre_transform=pre_transform, fold=options.get("fold", 0))
    return load


def _canonical_zinc(split, data_dir, cache_dir, pre_transform, options):
    from .canonical import CanonicalZINC, canonical_root
    return CanonicalZINC(split, data_dir=data_dir, root=canonical_root(cache_dir),
                         pre_transform=pre_transform)


def _canonical_ogb(name: str) -> Callable[..., Dataset]:
    """OGB's ``PygGraphPropPredDataset`` on the published files of ``name``."""
    def load(split, data_dir, cache_dir, pre_transform, options):
        from .canonical import canonical_root, locate_ogb
        root = canonical_root(cache_dir)
        # the files first: without them, that is what the message must say (not the package)
        locate_ogb(name, resolve_data_dir(data_dir), root, download=True)
        require("ogb.graphproppred", f"reading the published {name} files")
        from .ogb_mol import OGBGraphPropPred
        return OGBGraphPropPred(name, split, data_dir=data_dir, root=root,
                                pre_transform=pre_transform)
    return load


def _ogb_featurize(smiles: str):
    """A SMILES string as an OGB-featurized graph (:func:`.molecules.smiles_to_graph`)."""
    from .molecules import smiles_to_graph
    return smiles_to_graph(smiles)


def _zinc_featurize(smiles: str):
    """A SMILES string as a ZINC-benchmark graph (28 atom types, :func:`.zinc.smiles_to_graph`)."""
    require("rdkit", "featurizing SMILES for a ZINC run")
    from .zinc import smiles_to_graph
    return smiles_to_graph(smiles)


#: OGB's atom / bond vocabulary sizes, one embedding table per column
_MOL_TYPES = dict(node_types=tuple(ATOM_FEATURE_DIMS), edge_types=tuple(BOND_FEATURE_DIMS),
                  featurize=_ogb_featurize)


def _moleculenet_spec(name: str, key: str, task: str, metric: str, **kwargs) -> DatasetSpec:
    """The spec of the MoleculeNet benchmark ``key`` (of :data:`.molecules.MOLECULENET`): one
    output per label column of its file."""
    targets = MOLECULENET[key].target_columns
    return DatasetSpec(name, "graph", task, len(targets), metric, _load_moleculenet(key),
                       targets=targets, **_MOL_TYPES, **kwargs)


DATASETS: dict[str, DatasetSpec] = {
    "zinc": DatasetSpec("zinc", "graph", "regression", 1, "mae", _load_zinc,
                        node_types=28, edge_types=4, featurize=_zinc_featurize,
                        targets=("logP_SA_cycle_normalized",), source="reconstructed",
                        load_canonical=_canonical_zinc),
    "csl": DatasetSpec("csl", "graph", "classification", 10, "accuracy", _load_csl,
                       node_types=1, source="generated",
                       load_canonical=_canonical_benchmark("CSL")),
    "pattern": DatasetSpec("pattern", "node", "classification", 2, "weighted_accuracy",
                           _load_pattern, node_types=3, loss="weighted_ce", source="generated",
                           load_canonical=_canonical_benchmark("PATTERN")),
    "cluster": DatasetSpec("cluster", "node", "classification", 6, "weighted_accuracy",
                           _load_cluster, node_types=7, loss="weighted_ce", source="generated",
                           load_canonical=_canonical_benchmark("CLUSTER")),
    "mutag": DatasetSpec("mutag", "graph", "classification", 2, "accuracy", _load_tu("MUTAG"),
                         node_dim=7, edge_dim=4),
    "enzymes": DatasetSpec("enzymes", "graph", "classification", 6, "accuracy",
                           _load_tu("ENZYMES"), node_dim=21),
    "nci1": DatasetSpec("nci1", "graph", "classification", 2, "accuracy", _load_tu("NCI1"),
                        node_dim=37),
    "cora": DatasetSpec("cora", "node", "classification", 7, "accuracy",
                        _load_planetoid("Cora"), node_dim=1433),
    "citeseer": DatasetSpec("citeseer", "node", "classification", 6, "accuracy",
                            _load_planetoid("CiteSeer"), node_dim=3703),
    "ogbg-molhiv": _moleculenet_spec("ogbg-molhiv", "hiv", "binary", "roc_auc",
                                     source="reconstructed",
                                     load_canonical=_canonical_ogb("ogbg-molhiv")),
    "tox21": _moleculenet_spec("tox21", "tox21", "binary", "roc_auc"),
    "clintox": _moleculenet_spec("clintox", "clintox", "binary", "roc_auc"),
    "sider": _moleculenet_spec("sider", "sider", "binary", "roc_auc"),
    "esol": _moleculenet_spec("esol", "esol", "regression", "rmse", loss="mse"),
    "freesolv": _moleculenet_spec("freesolv", "freesolv", "regression", "rmse", loss="mse"),
    "lipo": _moleculenet_spec("lipo", "lipo", "regression", "rmse", loss="mse"),
    "mnist": DatasetSpec("mnist", "graph", "classification", 10, "accuracy",
                         _load_superpixels("mnist"), node_dim=3, edge_dim=1,
                         source="reconstructed", load_canonical=_canonical_benchmark("MNIST")),
    "cifar10": DatasetSpec("cifar10", "graph", "classification", 10, "accuracy",
                           _load_superpixels("cifar10"), node_dim=5, edge_dim=1,
                           source="reconstructed",
                           load_canonical=_canonical_benchmark("CIFAR10")),
    "synthetic_large": DatasetSpec("synthetic_large", "node", "classification", 10, "accuracy",
                                   _load_synthetic_large, node_dim=32, source="generated"),
    "tsp": DatasetSpec("tsp", "edge", "classification", 2, "f1", _load_tsp, node_dim=2,
                       edge_dim=1, source="generated", load_canonical=_canonical_benchmark("TSP")),
}


#: suffixes of a user's graph file (``data.path``); any other suffix is a molecule CSV
GRAPH_FILE_SUFFIXES = (".pt", ".pth")


def is_graph_file(path: Any) -> bool:
    """Whether ``data.path`` names a saved list of PyG graphs (``.pt`` / ``.pth``) rather than a
    molecule CSV."""
    return str(path).lower().endswith(GRAPH_FILE_SUFFIXES)


def _load_graph_file(split, data_dir, cache_dir, pre_transform, options):
    from .graph_list import GraphFile
    return GraphFile(root=resolve_cache_dir(cache_dir) / "GraphFile", split=split,
                     path=options["path"], level=options.get("level"),
                     task=options.get("task"), fold=options.get("fold", 0),
                     seed=options.get("seed", 0), split_files=options.get("split_files"),
                     pre_transform=pre_transform)


def _load_node_table(split, data_dir, cache_dir, pre_transform, options):
    from .node_table import NodeTable
    return NodeTable(root=resolve_cache_dir(cache_dir) / "NodeTable", split=split,
                     pre_transform=pre_transform, **options)


def graph_list_spec(info: Any, name: str = "graph_file",
                    load: Callable[..., Dataset] = _load_graph_file) -> DatasetSpec:
    """The spec of a user's graphs from what :func:`~.graph_list.infer_info` read off them."""
    return DatasetSpec(name, info.level, info.task, info.out_dim, info.metric, load,
                       node_types=info.node_types, edge_types=info.edge_types,
                       node_dim=info.node_dim, edge_dim=info.edge_dim, source="user")


def molecule_csv_spec(task: str, target_columns: Sequence[str]) -> DatasetSpec:
    """The spec of a user's molecule CSV (``data.path`` set): ``task`` ``"classification"`` gives
    binary tasks scored by ROC-AUC, ``"regression"`` gives RMSE (MSE loss); one output per
    target column."""
    targets = tuple(target_columns)
    if task == "regression":
        return DatasetSpec("molecule_csv", "graph", "regression", len(targets), "rmse",
                           _load_molecule_csv, loss="mse", targets=targets, source="user",
                           **_MOL_TYPES)
    return DatasetSpec("molecule_csv", "graph", "binary", len(targets), "roc_auc",
                       _load_molecule_csv, targets=targets, source="user", **_MOL_TYPES)


#: the metrics each task can report (``data.metric``); the first of a task is its default
#: where the dataset names none
TASK_METRICS: dict[str, tuple[str, ...]] = {
    "regression": ("mae", "rmse"),
    "classification": ("accuracy", "weighted_accuracy", "f1"),
    "binary": ("roc_auc",),
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


def csv_task(task: str | None) -> str:
    """``data.task`` of a molecule CSV → :class:`~.molecules.MoleculeCSV`'s task: label columns
    of 0 / 1 are binary tasks (``classification`` or ``binary``), the default is regression."""
    return "classification" if task in ("classification", "binary") else "regression"


def resolve_spec(data_cfg: Any) -> DatasetSpec:
    """The spec for a config's ``data`` section: a user's molecule CSV when ``data.path`` is set,
    else the registered ``data.name`` (``node_table``: read off the files,
    :func:`~.node_table.node_table_spec`). For a TU set, ``data.node_features`` (and
    ``data.options.max_degree``) choose the node features and so ``node_dim``.

    Raises:
        ValueError: an unknown name; ``data.node_features`` other than ``auto`` for a dataset
            that is not a TU set; a bad ``data.options.max_degree``.
    """
    mode, max_degree = _node_features(data_cfg)
    name = str(getattr(data_cfg, "name", ""))
    is_tu = name.lower().startswith("tu:") or name in _TU_REGISTERED
    if mode != "auto" and (getattr(data_cfg, "path", None) or not is_tu):
        raise ValueError(f"data.node_features={mode!r} applies to the TU sets (mutag, enzymes, "
                         f"nci1, tu:<NAME>) only; set data.node_features=auto for this dataset")
    if is_tu and max_degree is not None:
        from .tu import CappedOneHotDegree
        CappedOneHotDegree(max_degree)  # ValueError naming the key
    path = getattr(data_cfg, "path", None)
    if path and is_graph_file(path):
        from .graph_list import graph_file_info
        return graph_list_spec(graph_file_info(path, data_cfg.level, data_cfg.task))
    if path:
        return molecule_csv_spec(csv_task(data_cfg.task), data_cfg.target_columns)
    name = str(data_cfg.name)
    if name == "node_table":  # a node-level graph from plain files, read off the files
        from .node_table import node_table_spec
        return node_table_spec(data_cfg)
    if name == "graph_list":
        raise ValueError("this run trained on in-memory graphs: pass them again "
                         "(dataset=...) to evaluate or resume it")
    if name.lower().startswith("tu:"):
        return tu_spec(name[3:], getattr(data_cfg, "data_dir", None),
                       getattr(data_cfg, "cache_dir", None), mode, max_degree)
    if mode != "auto":
        return _registered_tu_spec(name, mode, max_degree)
    return get_spec(name)


def get_spec(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` of a registered dataset.

    Raises:
        ValueError: for an unknown name (listing the known ones).
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {sorted(DATASETS)}, any TU "
                         "dataset as 'tu:<NAME>' (e.g. tu:PROTEINS), node_table (a node-level "
                         "graph from an edge list and a node table), or set data.path to a "
                         "molecule CSV")
    return DATASETS[name]


def build_pre_transform(encodings: Any) -> BaseTransform | None:
    """The encodings section of a config → a PyG pre-transform (``None`` when empty): the
    registered encodings' transforms in registry order
    (:data:`~graph_transformers.encodings.registry.ENCODINGS`), composed when several."""
    from ..encodings.registry import build_transforms
    transforms = build_transforms(encodings)
    if not transforms:
        return None
    return transforms[0] if len(transforms) == 1 else Compose(transforms)


def load_splits(data_cfg: Any, encodings: Any) -> dict[str, Dataset]:
    """Loads every split of the dataset a config names, with its encodings precomputed, under
    :func:`~graph_transformers.data.cache.cache_lock` (concurrent processes build it once).

    ``data.source`` (:data:`SOURCES`) picks where the graphs come from, for a dataset with a
    published form (``spec.load_canonical``): ``auto`` reads the published files with the
    well-kept loader when they can be had (local, or a download that succeeds) and otherwise
    falls back to this library's generator / reconstruction with one WARNING naming what was
    missing and how to get it; ``canonical`` requires the published files; ``generated`` always
    uses the generator. Every split then carries ``data_source`` (the record ``metrics.json``
    stores: what was asked for, what was used, the loader and files, why the published files
    were not used) and a per-split ``provenance`` (``"exact"`` for published graphs, else the
    dataset's own record, or ``spec.source``). A dataset's own ``split_rule`` (the TU sets':
    index files or seeded folds; ``metrics.json`` ``split``) is logged once at INFO.

    Raises:
        ValueError: an unknown ``data.source``; ``generated`` for a dataset that has no generator
            (it is read from its published files); ``canonical`` for one that has no published
            form; a ``data.options`` key the dataset class does not take.
        DataNotFoundError: ``canonical`` and the published files cannot be had, or the chosen
            loader's files are missing (the message says where it looked and how to get them).
    """
    spec = resolve_spec(data_cfg)
    pre = build_pre_transform(encodings)
    options = {"fold": data_cfg.fold, "seed": data_cfg.seed, **data_cfg.options}
    if getattr(data_cfg, "path", None) and is_graph_file(data_cfg.path):
        options.update(path=data_cfg.path, level=data_cfg.level, task=data_cfg.task,
                       split_files=data_cfg.split_files)
    elif str(data_cfg.name) == "node_table":
        from .node_table import node_table_settings
        settings = node_table_settings(data_cfg)
        settings["split_rule"] = settings.pop("split")
        options.update({k: v for k, v in settings.items() if k != "id_base"})
    elif getattr(data_cfg, "path", None):
        options.update(path=data_cfg.path, smiles_column=data_cfg.smiles_column,
                       target_columns=list(data_cfg.target_columns),
                       task=csv_task(data_cfg.task))
    try:
        # one process builds a missing cache, concurrent ones (DDP ranks) wait and read it
        with cache_lock(spec.name, data_cfg.cache_dir):
            splits, record = _load_by_source(spec, data_cfg, pre, options)
    except TypeError as err:  # an option the dataset class does not take
        if "unexpected keyword" in str(err):
            raise ValueError(f"data.options: {err}") from None
        raise
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
    else:
        log.info("%s split: %s", name, rule)


def _load_by_source(spec: DatasetSpec, data_cfg: Any, pre: BaseTransform | None,
                    options: dict) -> tuple[dict[str, Dataset], dict[str, Any]]:
    """The splits and the ``data_source`` record, following ``data.source`` (see
    :func:`load_splits`)."""
    requested = str(getattr(data_cfg, "source", "auto"))
    if requested not in SOURCES:
        raise ValueError(f"data.source must be one of {SOURCES}, got {requested!r}")
    if requested == "generated" and spec.load_canonical is None and spec.source == "canonical":
        raise ValueError(f"data.source: generated, but {spec.name} has no generator: it is read "
                         "from its published files (use data.source: auto or canonical)")
    if requested == "canonical" and spec.load_canonical is None and spec.source in (
            "generated", "reconstructed"):
        raise ValueError(f"data.source: canonical, but {spec.name} has no published files: it "
                         f"is {spec.source} in code (use data.source: auto or generated)")

    def load_all(load: Callable[..., Dataset]) -> dict[str, Dataset]:
        return {s: load(s, data_cfg.data_dir, data_cfg.cache_dir, pre, options)
                for s in spec.splits}

    record: dict[str, Any] = {"requested": requested}
    if spec.load_canonical is not None and requested != "generated":
        try:
            splits = load_all(spec.load_canonical)
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
            ignored = sorted(set(options) - {"fold", "seed"})
            if ignored:
                log.warning("%s: data.options %s apply to the %s version only; the published "
                            "files are used as they are", spec.name, ignored, spec.source)
            log.info("%s: published benchmark files via %s (%s)", spec.name,
                     info.get("loader", "?"), info.get("files", "?"))
            return splits, record
    splits = load_all(spec.load)
    first = splits[spec.splits[0]]
    record.update(source=spec.source, loader=f"{type(first).__module__}.{type(first).__name__}")
    return splits, record

