"""Dataset registry: config names → loaders and the task description a model and trainer need."""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch_geometric.data import Dataset
from torch_geometric.transforms import BaseTransform, Compose, Constant

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


def _load_tu(name: str, constant_x: bool = False) -> Callable[..., Dataset]:
    def load(split, data_dir, cache_dir, pre_transform, options):
        from .tu import TU
        root = resolve_cache_dir(cache_dir) / "TU"
        # a TU set without node labels or attributes gets one constant feature per node
        transform = Constant(value=1.0) if constant_x else None
        # the benchmark split is fixed: the data seed does not reshuffle folds
        return TU(name, root=str(root), split=split, fold=options.get("fold", 0),
                  data_dir=data_dir, pre_transform=pre_transform, transform=transform)
    return load


@functools.lru_cache(maxsize=32)
def tu_spec(name: str, data_dir: Any = None, cache_dir: Any = None) -> DatasetSpec:
    """The spec of any TU dataset by its TU name (``data.name: tu:<NAME>``, e.g. ``tu:DD``),
    read once from the data: classes, node feature width (one-hot node labels, plus the node
    attributes where present; a constant 1 for sets with neither) and edge feature width (one-hot
    edge labels, or none). Raw files come from ``DATA_DIR/TU/<NAME>.zip`` or TUDataset's
    download; splits are the 10 stratified folds of :mod:`graph_transformers.data.tu`. The spec
    is read once per (name, data_dir, cache_dir) in a process (a run resolves it several times).

    Raises:
        DataNotFoundError: when the raw files are neither local nor downloadable.
    """
    from .tu import TU
    full = TU(name, root=str(resolve_cache_dir(cache_dir) / "TU"), split="train", fold=0,
              data_dir=data_dir)
    node_dim = int(full.num_features)
    edge_dim = int(full.num_edge_features) or None
    return DatasetSpec(f"tu:{full.name}", "graph", "classification", int(full.num_classes),
                       "accuracy", _load_tu(full.name, constant_x=node_dim == 0),
                       node_dim=node_dim or 1, edge_dim=edge_dim)


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


def csv_task(task: str | None) -> str:
    """``data.task`` of a molecule CSV → :class:`~.molecules.MoleculeCSV`'s task: label columns
    of 0 / 1 are binary tasks (``classification`` or ``binary``), the default is regression."""
    return "classification" if task in ("classification", "binary") else "regression"


def resolve_spec(data_cfg: Any) -> DatasetSpec:
    """The spec for a config's ``data`` section: a user's molecule CSV when ``data.path`` is set,
    else the registered ``data.name``."""
    path = getattr(data_cfg, "path", None)
    if path and is_graph_file(path):
        from .graph_list import graph_file_info
        return graph_list_spec(graph_file_info(path, data_cfg.level, data_cfg.task))
    if path:
        return molecule_csv_spec(csv_task(data_cfg.task), data_cfg.target_columns)
    name = str(data_cfg.name)
    if name == "graph_list":
        raise ValueError("this run trained on in-memory graphs: pass them again "
                         "(dataset=...) to evaluate or resume it")
    if name.lower().startswith("tu:"):
        return tu_spec(name[3:], getattr(data_cfg, "data_dir", None),
                       getattr(data_cfg, "cache_dir", None))
    return get_spec(name)


def get_spec(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` of a registered dataset.

    Raises:
        ValueError: for an unknown name (listing the known ones).
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {sorted(DATASETS)}, any TU "
                         "dataset as 'tu:<NAME>' (e.g. tu:PROTEINS), or set data.path to a "
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
    dataset's own record, or ``spec.source``).

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
    return splits


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

