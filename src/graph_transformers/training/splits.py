"""The data of a run: its dataset spec and ``{train, val, test}`` splits (:func:`resolve_data`:
the dataset ``config.data`` names, or a user's in-memory graphs), the checks that every split
holds usable data (:func:`check_splits`), and where the data came from
(:func:`collect_provenance`)."""
from __future__ import annotations

import logging

import torch

from ..data.registry import DatasetSpec, choose_metric, load_splits, resolve_spec
from ..models import build_model
from .build import model_kwargs
from .config import Config
from .predict_only import log_predict_only, predict_only_splits

log = logging.getLogger(__name__)


def graph_list_splits(config: Config, dataset) -> tuple[DatasetSpec, dict]:
    """Spec and ``{train, val, test}`` splits of a user's in-memory graphs (a list of PyG
    ``Data`` or a PyG dataset) under ``config.data`` (``level``, ``task``, ``fold``, ``seed``,
    ``split_files``, ``split``) with ``config.encodings`` applied
    (:class:`~..data.graph_list.GraphList`).

    Args:
        config: the run's config.
        dataset: the user's graphs.

    Returns:
        tuple: the spec and ``{split name: dataset}``.

    Raises:
        DataError: graphs the task cannot be read off, or a bad split
            (:func:`~..data.graph_list.infer_info`, :func:`~..data.graph_list.make_split`).
    """
    from ..data.registry import build_pre_transform
    from ..datasets.user.graph_info import infer_info
    from ..datasets.user.graph_list import GraphList, graph_list_spec
    graphs = list(dataset)
    d = config.data
    info = infer_info(graphs, d.level, d.task)
    spec = choose_metric(graph_list_spec(info, "graph_list"), d.metric)
    pre = build_pre_transform(config.encodings, graph_size_limit(config, spec))
    splits = {s: GraphList(graphs, s, fold=d.fold, seed=d.seed, split_files=d.split_files,
                           pre_transform=pre, info=info, split_rule=d.split)
              for s in ("train", "val", "test")}
    return spec, splits


def graph_list_spec_of(config: Config, dataset) -> DatasetSpec:
    """The spec of a user's in-memory graphs alone (what :func:`graph_list_splits` returns first,
    without splitting them or computing encodings).

    Args:
        config: the run's config.
        dataset: the user's graphs.

    Returns:
        DatasetSpec: their spec.
    """
    from ..datasets.user.graph_info import infer_info
    from ..datasets.user.graph_list import graph_list_spec
    return choose_metric(graph_list_spec(infer_info(list(dataset), config.data.level,
                                                    config.data.task), "graph_list"),
                         config.data.metric)


def resolve_data(config: Config, dataset=None) -> tuple[DatasetSpec, dict]:
    """The dataset spec and splits of a run: ``dataset`` (a user's in-memory graphs) when
    given, else the dataset ``config.data`` names (:func:`~..data.registry.load_splits`), its
    all-pairs encodings limited to the graphs the model takes (:func:`graph_size_limit`).

    Args:
        config: the run's config.
        dataset: a user's graphs, or ``None``.

    Returns:
        tuple: the spec and ``{split name: dataset}``.

    Raises:
        DataNotFoundError, DataError: the dataset's files are missing or unreadable.
    """
    if dataset is not None:
        return graph_list_splits(config, dataset)
    spec = run_spec(config)
    return spec, load_splits(config.data, config.encodings, graph_size_limit(config, spec))


def graph_size_limit(config: Config, spec: DatasetSpec):
    """The largest graph the config's model takes within its memory budget (a
    :class:`~..core.dense.GraphSizeLimit`, or ``None``), read off the model built on PyTorch's
    ``meta`` device (nothing allocated), when the config has an all-pairs encoding
    (``encodings.spd``, ``encodings.rrwp``) that would otherwise be computed, and cached, for
    graphs the model then refuses.

    Args:
        config: the run's config.
        spec: the dataset spec.

    Returns:
        GraphSizeLimit | None: the limit, or ``None`` (no all-pairs encoding, no limit).
    """
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
    (:func:`~..data.registry.choose_metric`).

    Args:
        config: the run's config.

    Returns:
        DatasetSpec: the spec.
    """
    return choose_metric(resolve_spec(config.data), config.data.metric)


def check_splits(splits: dict, config: Config) -> None:
    """Every split must hold data: training needs a train and a val split to fit and select
    checkpoints, and a test split to report.

    Args:
        splits: ``{split name: dataset}``.
        config: the run's config.

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
    rule = getattr(next(iter(splits.values())), "split_rule", None) or {}
    if rule.get("rule") == "scaffold":  # a molecule CSV's scaffold split
        from ..datasets.molecules.scaffold import min_molecules_per_split
        frac = getattr(next(iter(splits.values())), "frac", None) or (0.8, 0.1, 0.1)
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


def split_record(splits: dict, spec: DatasetSpec, config: Config) -> dict:
    """What ``metrics.json`` keeps under ``split``: the dataset's own record of its rule
    (``split_rule``: a user's ``data.split`` with the sha256 of its files, a TU set's folds, a
    graph file's folds or split files), else the dataset's fixed split by name (with
    ``data.fold`` where the dataset takes one).

    Args:
        splits: ``{split name: dataset}``.
        spec: the dataset's spec.
        config: the run's config.

    Returns:
        dict: ``{"rule": ..., ...}``.
    """
    rule = getattr(next(iter(splits.values())), "split_rule", None)
    if rule:
        return rule
    fold = f", fold {config.data.fold}" if "fold" in spec.params else ""
    return {"rule": f"the dataset's own split ({spec.name}{fold})",
            "sizes": {s: len(ds) for s, ds in splits.items()}}


def collect_provenance(splits: dict) -> dict:
    """The splits' ``provenance`` records merged into one (``{"train": "reconstructed", "val":
    "exact", ...}``, or a file-backed dataset's record), for ``metrics.json``.

    Args:
        splits: ``{split name: dataset}``.

    Returns:
        dict: the merged record (empty when no split has one).
    """
    provenance: dict = {}
    for ds in splits.values():
        provenance.update(getattr(ds, "provenance", {}) or {})
    return provenance


def log_provenance(dataset: str, provenance: dict) -> None:
    """One INFO line on where the data came from (the full record goes to ``metrics.json``).

    Args:
        dataset: the dataset's name.
        provenance: what :func:`collect_provenance` returns.
    """
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
