"""Dataset registry: config names → loaders and the task description a model and trainer need."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch_geometric.data import Dataset
from torch_geometric.transforms import BaseTransform, Compose

from .cache import resolve_cache_dir


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
        load: ``load(split, data_dir, cache_dir, pre_transform, options) -> Dataset``.
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
    notes: dict = field(default_factory=dict)

    @property
    def higher_is_better(self) -> bool:
        return self.metric not in ("mae", "rmse", "loss")


def _load_zinc(split, data_dir, cache_dir, pre_transform, options):
    from .zinc import ZINC
    root = resolve_cache_dir(cache_dir) / "ZINC"
    return ZINC(root=str(root), split=split, data_dir=data_dir, pre_transform=pre_transform)


def _load_csl(split, data_dir, cache_dir, pre_transform, options):
    from .csl import CSL
    root = resolve_cache_dir(cache_dir) / "CSL"
    return CSL(root=str(root), split=split, fold=options.get("fold", 0),
               seed=options.get("seed", 0), pre_transform=pre_transform)


def _load_pattern(split, data_dir, cache_dir, pre_transform, options):
    from .sbm import PATTERN
    root = resolve_cache_dir(cache_dir) / "PATTERN"
    return PATTERN(root=str(root), split=split, seed=options.get("seed", 0),
                   pre_transform=pre_transform)


def _load_cluster(split, data_dir, cache_dir, pre_transform, options):
    from .sbm import CLUSTER
    root = resolve_cache_dir(cache_dir) / "CLUSTER"
    return CLUSTER(root=str(root), split=split, seed=options.get("seed", 0),
                   pre_transform=pre_transform)


DATASETS: dict[str, DatasetSpec] = {
    "zinc": DatasetSpec("zinc", "graph", "regression", 1, "mae", _load_zinc,
                        node_types=28, edge_types=4),
    "csl": DatasetSpec("csl", "graph", "classification", 10, "accuracy", _load_csl,
                       node_types=1),
    "pattern": DatasetSpec("pattern", "node", "classification", 2, "weighted_accuracy",
                           _load_pattern, node_types=3, loss="weighted_ce"),
    "cluster": DatasetSpec("cluster", "node", "classification", 6, "weighted_accuracy",
                           _load_cluster, node_types=7, loss="weighted_ce"),
}


def get_spec(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` of a registered dataset.

    Raises:
        ValueError: for an unknown name (listing the known ones).
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {sorted(DATASETS)}")
    return DATASETS[name]


def build_pre_transform(encodings: Any) -> BaseTransform | None:
    """The encodings section of a config → a PyG pre-transform (``None`` when empty)."""
    from ..encodings import AddLaplacianPE, AddWLPE
    transforms: list[BaseTransform] = []
    if getattr(encodings, "lap_pe", None) is not None:
        transforms.append(AddLaplacianPE(encodings.lap_pe.k))
    if getattr(encodings, "wl_pe", None) is not None:
        transforms.append(AddWLPE(encodings.wl_pe.iterations))
    if not transforms:
        return None
    return transforms[0] if len(transforms) == 1 else Compose(transforms)


def load_splits(data_cfg: Any, encodings: Any) -> dict[str, Dataset]:
    """Loads every split of the dataset a config names, with its encodings precomputed."""
    spec = get_spec(data_cfg.name)
    pre = build_pre_transform(encodings)
    options = {"fold": data_cfg.fold, "seed": data_cfg.seed}
    return {s: spec.load(s, data_cfg.data_dir, data_cfg.cache_dir, pre, options)
            for s in spec.splits}
