r"""A user's own graphs: a list of PyG ``Data`` objects, in memory or saved to a ``.pt`` file.

The task is read off the data, so a file made with a few lines of PyG trains with no registry
entry:

- **level** — from the first dimension of ``y`` in every graph: ``1`` row → ``"graph"``,
  ``num_nodes`` rows → ``"node"``, ``num_edges`` rows → ``"edge"`` (one label per edge of
  ``edge_index``); where several fit every graph (say a one-node graph), ``data.level`` decides.
- **task** — an integer (or bool) ``y`` with one column → ``"classification"`` with
  ``max(y) + 1`` classes (accuracy); a floating ``y`` → ``"regression"`` (MAE, L1 loss; ``NaN``
  marks a missing label); ``data.task: binary`` reads ``y`` ``[*, T]`` of 0 / 1 / ``NaN`` as
  ``T`` binary tasks (ROC-AUC).
- **features** — a floating ``x`` ``[num_nodes, F]`` is continuous (a linear encoder); an integer
  ``x`` ``[num_nodes]`` or ``[num_nodes, C]`` holds category ids (one embedding table per
  column, sized by the largest id over all graphs); no ``x`` → one constant feature. ``edge_attr``
  likewise, or none.

Splits (``data.split``, :mod:`graph_transformers.data.split_rules`, takes precedence over the
rest): ``random`` / ``random:TRAIN,VAL,TEST`` of the labelled items drawn from ``data.seed``, or
a split or folds file of 0-based graph ids (node or edge ids for one graph; fold ``data.fold``
of a folds file). Without it:

- several graphs: ``data.split_files`` (``{train, val, test}`` → text files of 0-based graph ids,
  separated by commas, spaces or new lines), else 10 folds of the graphs drawn from ``data.seed``
  — stratified by class for classification — with fold ``data.fold`` as test, the next fold as
  validation and the other eight as training (80 / 10 / 10; ``--folds K`` trains folds
  ``0..K-1``);
- one graph, node or edge level (transductive): boolean ``train_mask`` / ``val_mask`` /
  ``test_mask`` of length ``num_nodes`` or ``num_edges`` stored in the graph, else
  ``data.split_files`` holding node or edge ids, else the same 10-fold cut of the labelled nodes
  or edges. Each split is the whole graph with ``node_mask`` / ``edge_mask`` selecting the items
  that count.

A saved file is read with ``torch.load(weights_only=True)``, PyG's data classes allowed: both
``InMemoryDataset.save(data_list, path)`` (what PyG's own datasets write) and
``torch.save(data_list, path)`` work; anything else in the file is refused
(:func:`load_graph_file`, also what ``graph-transformers predict --data graphs.pt`` reads).

What the graphs ask of a model is read by :mod:`.graph_info`; this module holds the splits, the
datasets (:class:`GraphList`, :class:`GraphFile`) and their registry entries.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset

from torch_geometric.transforms import Compose

from ...core.serialization import load_weights_only
from ...data.cache import (DataNotFoundError, FileBackedDataset, pre_transform_key,
                           resolve_cache_dir, sha256_of, write_cache_json)
from ...data.generated import SPLITS, check_split, stratified_kfold
from ...data.progress import progress
from ...data.registry import DatasetSpec
from ...data.split_rules import (file_split, parse_split_rule, random_split, read_split_file,
                                 rule_record)
from ...data.textfiles import decode_text
from ...errors import DataError
from .graph_info import GraphListInfo, infer_info

log = logging.getLogger(__name__)

#: folds of the generated split: test = fold ``k``, val = fold ``k + 1``, train = the rest
NUM_FOLDS = 10
#: the forms of ``data.split`` a graph file (or in-memory graphs) takes
GRAPH_SPLIT_FORMS = ("random", "file")
_FORMAT_VERSION = 2  # 2: meta.json keeps the split's record


def load_graph_file(path: str | os.PathLike) -> list[Data]:
    """The graphs of a ``.pt`` file, read with ``torch.load(weights_only=True)`` (PyG's ``Data``
    and its storage classes allowed, nothing else): a ``Data``, a list of ``Data`` (or of
    ``Data.to_dict()`` dicts), as written by ``torch.save(data_list, path)``, or a PyG
    ``InMemoryDataset`` file (``InMemoryDataset.save(data_list, path)``, ``processed/*.pt``:
    ``(data, slices[, Data])``).

    Raises:
        DataNotFoundError: the file does not exist.
        DataError: empty, corrupt, holding other pickled classes (a whole ``Dataset`` object:
            save ``list(dataset)`` instead), or holding no graphs.
    """
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.separate import separate
    from torch_geometric.data.storage import GlobalStorage

    path = Path(path).expanduser()
    if not path.is_file():
        raise DataNotFoundError(f"graph file not found: {path}")
    obj = load_weights_only(path, what="graph file", error=DataError,
                            allow=(GlobalStorage, DataEdgeAttr, DataTensorAttr),
                            allowed="tensors, plain containers and torch_geometric Data",
                            hint="; save a dataset as torch.save(list(dataset), path)")
    if isinstance(obj, tuple) and len(obj) in (2, 3) and obj[1] is None and \
            isinstance(obj[0], (dict, Data)):  # InMemoryDataset.save of ONE graph: no slices
        graphs = [Data.from_dict(obj[0]) if isinstance(obj[0], dict) else obj[0]]
    elif isinstance(obj, tuple) and len(obj) in (2, 3) and isinstance(obj[1], dict) and \
            isinstance(obj[0], (dict, Data)):  # InMemoryDataset.save: (data, slices[, cls])
        data = Data.from_dict(obj[0]) if isinstance(obj[0], dict) else obj[0]
        slices = obj[1]
        num = len(next(iter(slices.values()))) - 1 if slices else 0
        graphs = [separate(cls=Data, batch=data, idx=i, slice_dict=slices, decrement=False)
                  for i in range(num)]
    elif isinstance(obj, Data):
        graphs = [obj]
    elif isinstance(obj, (list, tuple)) and all(isinstance(g, (Data, dict)) for g in obj):
        graphs = [Data.from_dict(g) if isinstance(g, dict) else g for g in obj]
    else:
        raise DataError(f"{path}: holds a {type(obj).__name__}, not graphs (a Data, a list of "
                        "Data, or a PyG InMemoryDataset file)")
    if not graphs:
        raise DataError(f"{path}: holds no graphs")
    return graphs



def read_index_file(path: str | os.PathLike, size: int, what: str) -> list[int]:
    """0-based ids in ``[0, size)`` from a text file (commas, spaces or new lines between them).

    Raises:
        DataNotFoundError: the file does not exist.
        DataError: a file that is not UTF-8 text (a pickle, an ``.npy`` array, ...: named as
            such), a token that is not an integer, an id out of range or a repeated id.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataNotFoundError(f"split file not found: {path}")
    ids = []
    for tok in decode_text(path, path.read_bytes()).replace(",", " ").split():
        try:
            ids.append(int(tok))
        except ValueError:
            raise DataError(f"{path}: {tok!r} is not an integer id") from None
    bad = [i for i in ids if not 0 <= i < size]
    if bad:
        raise DataError(f"{path}: id {bad[0]} is outside the {size} {what}")
    if len(set(ids)) != len(ids):
        raise DataError(f"{path}: repeated ids")
    return ids


def fold_split(num_items: int, fold: int, seed: int, labels: np.ndarray | None = None
               ) -> dict[str, list[int]]:
    """Train / val / test ids of ``num_items`` items: :data:`NUM_FOLDS` folds drawn from
    ``seed`` (stratified by ``labels`` when given, with
    :func:`~graph_transformers.data.generated.stratified_kfold`), test =
    fold ``fold``, val = the next fold, train = the rest.

    Raises:
        DataError: fewer than :data:`NUM_FOLDS` items, or ``fold`` outside ``0..NUM_FOLDS-1``.
    """
    if num_items < NUM_FOLDS:
        raise DataError(f"{num_items} items are too few for the {NUM_FOLDS}-fold split; give "
                        "data.split_files")
    if not 0 <= fold < NUM_FOLDS:
        raise DataError(f"data.fold must be in 0..{NUM_FOLDS - 1} for a generated split, got "
                        f"{fold}")
    labels = np.zeros(num_items, dtype=np.int64) if labels is None else labels
    folds = stratified_kfold(labels, NUM_FOLDS, seed)
    val = (fold + 1) % NUM_FOLDS
    train = np.concatenate([f for k, f in enumerate(folds) if k not in (fold, val)])
    return {"train": sorted(train.tolist()), "val": folds[val].tolist(),
            "test": folds[fold].tolist()}


def make_split(graphs: Sequence[Data], info: GraphListInfo, fold: int = 0, seed: int = 0,
               split_files: dict[str, str] | None = None, split_rule: str | None = None
               ) -> tuple[dict[str, list[int]], str]:
    """``({train, val, test} → ids, how)``: graph ids for several graphs, node or edge ids for
    one graph (see the module docstring); ``how`` describes the rule for the provenance
    (:func:`split_with_record` also gives the record ``metrics.json`` keeps).

    Raises:
        DataError: one graph at graph level, missing or overlapping splits, bad split files,
            a bad ``split_rule`` (``data.split``).
    """
    split, record = split_with_record(graphs, info, fold, seed, split_files, split_rule)
    return split, record["rule"]


def _labelled_ids(graphs: Sequence[Data], info: GraphListInfo, single: bool, size: int
                  ) -> tuple[np.ndarray, torch.Tensor]:
    """The ids of the items with a label (regression / binary: not all NaN), and ``y`` as
    ``[items, T]``."""
    g0 = graphs[0]
    y = g0.y.view(g0.y.size(0), -1) if single else torch.cat([g.y.view(1, -1) for g in graphs])
    ids = np.arange(size)
    if info.task in ("regression", "binary"):  # items without any label do not count
        ids = np.flatnonzero((~torch.isnan(y.float()).all(1)).numpy())
    return ids, y


def split_with_record(graphs: Sequence[Data], info: GraphListInfo, fold: int = 0, seed: int = 0,
                      split_files: dict[str, str] | None = None, split_rule: str | None = None
                      ) -> tuple[dict[str, list[int]], dict]:
    """:func:`make_split` with the record of the split for ``metrics.json`` (``split``):
    ``{"rule": ...}`` and, for files, their sha256.

    Raises:
        DataError: as :func:`make_split`.
    """
    single = len(graphs) == 1 and info.level != "graph"
    if len(graphs) == 1 and info.level == "graph":
        raise DataError("a graph-level task needs several graphs; one graph was given")
    g0 = graphs[0]
    size = (g0.num_nodes if info.level == "node" else g0.edge_index.size(1)) if single \
        else len(graphs)
    what = f"{info.level}s" if single else "graphs"
    if split_rule is not None:
        if split_files:
            raise DataError("data.split and data.split_files both give the split; give one")
        rule = parse_split_rule(split_rule, GRAPH_SPLIT_FORMS)
        if rule.kind == "file":
            return file_split(rule.path, size, fold, what)
        ids, _ = _labelled_ids(graphs, info, single, size)
        fractions = rule.fractions or (0.8, 0.1, 0.1)
        split = random_split(ids, fractions, seed)
        return split, rule_record(rule, split, seed=seed, fractions=fractions)
    masks = single and all(getattr(g0, f"{s}_mask", None) is not None for s in SPLITS)
    files: dict[str, str] = {}
    if masks:
        for s in SPLITS:
            m = getattr(g0, f"{s}_mask")
            if m.dtype != torch.bool or m.numel() != size:
                raise DataError(f"{s}_mask must be a bool tensor with one entry per {info.level} "
                                f"({size}), got {m.dtype} with {m.numel()}")
        split = {s: torch.nonzero(getattr(g0, f"{s}_mask")).view(-1).tolist() for s in SPLITS}
        how = "train_mask / val_mask / test_mask of the graph"
    elif split_files:
        missing = [s for s in SPLITS if s not in split_files]
        if missing:
            raise DataError(f"data.split_files lacks {missing}")
        split = {s: read_index_file(split_files[s], size, what) for s in SPLITS}
        how = "index files " + ", ".join(f"{s}={split_files[s]}" for s in SPLITS)
        files = {s: sha256_of(Path(split_files[s]).expanduser()) for s in SPLITS}
    else:
        ids, y = _labelled_ids(graphs, info, single, size)
        labels = y[ids, 0].long().numpy() if info.task == "classification" else None
        cut = fold_split(len(ids), fold, seed, labels)
        split = {s: ids[v].tolist() for s, v in cut.items()}
        how = (f"{NUM_FOLDS} {'stratified ' if labels is not None else ''}folds of the "
               f"{'labelled ' if len(ids) < size else ''}{what} (seed {seed}), fold {fold} "
               "test, the next val")
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        if set(split[a]) & set(split[b]):
            raise DataError(f"the {a} and {b} splits share {what}")
    empty = [s for s in SPLITS if not split[s]]
    if empty:
        raise DataError(f"empty split(s) {empty}")
    record = {"rule": how, **({"sha256": files} if files else {}),
              "sizes": {s: len(split[s]) for s in SPLITS}}
    return split, record


def _prepare(graphs: Sequence[Data], info: GraphListInfo, pre_transform) -> list[Data]:
    out = []
    for g in progress(graphs, "graphs: encodings" if pre_transform is not None else "graphs"):
        g = g.clone()
        if info.constant_x:
            g.x = torch.ones(g.num_nodes, 1)
        if info.task == "classification":
            g.y = g.y.long().view(-1)
        elif info.level == "graph":
            g.y = g.y.float().view(1, -1)
        else:
            g.y = g.y.float().view(g.y.size(0), -1)
        out.append(pre_transform(g) if pre_transform is not None else g)
    return out


class ItemMask:
    """A transform setting ``node_mask`` or ``edge_mask`` (``[num_nodes]`` / ``[num_edges]``
    bool) to the items of one split of a single graph (transductive node or edge tasks)."""

    def __init__(self, level: str, ids: Sequence[int]) -> None:
        self.attr = f"{level}_mask"
        self.level = level
        self.ids = torch.as_tensor(list(ids), dtype=torch.long)

    def __call__(self, data: Data) -> Data:
        size = data.num_nodes if self.level == "node" else data.edge_index.size(1)
        mask = torch.zeros(size, dtype=torch.bool)
        mask[self.ids] = True
        data = data.clone()
        setattr(data, self.attr, mask)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.level!r}, {self.ids.numel()} ids)"


class GraphList(InMemoryDataset):
    r"""One split of a user's list of graphs, in memory, with encodings applied once.

    Args:
        graphs: ``torch_geometric.data.Data`` objects (or a PyG dataset); each with
            ``edge_index`` ``[2, num_edges]``, ``y`` (``[1, T]`` / ``[T]`` per graph,
            ``[num_nodes, T]`` per node or ``[num_edges, T]`` per edge) and optionally ``x``
            ``[num_nodes, F]`` and ``edge_attr`` ``[num_edges, F_e]`` (see the module docstring
            for how they are read).
        split: ``"train"``, ``"val"`` or ``"test"``.
        level, task: fix what :func:`infer_info` would read off the data.
        fold, seed, split_files, split_rule: the split (:func:`make_split`; ``split_rule`` is
            ``data.split``).
        pre_transform: applied once to every graph (the run's encodings).
        transform: applied on access.
        source: where the graphs came from, for :attr:`provenance`.

    Attributes:
        info (GraphListInfo): what was read off the graphs (level, task, vocabularies).
        split_indices (dict): the graph (or node / edge) ids of each split.
        split_rule (dict): the record of the split (``metrics.json`` ``split``,
            :func:`split_with_record`).
        provenance (dict): the record of the data: source, number of graphs, split rule and
            sizes, and what was read off the graphs.

    Raises:
        DataError: see :func:`infer_info` and :func:`make_split`.

    Example:
        >>> import torch
        >>> from torch_geometric.data import Data
        >>> from graph_transformers.datasets.user.graph_list import GraphList
        >>> graphs = [Data(x=torch.randn(4, 3), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
        ...                y=torch.tensor([i % 2])) for i in range(20)]
        >>> train = GraphList(graphs, "train")
        >>> len(train), train.info.task, train.info.out_dim
        (16, 'classification', 2)
    """

    def __init__(self, graphs: Sequence[Data], split: str = "train", level: str | None = None,
                 task: str | None = None, fold: int = 0, seed: int = 0,
                 split_files: dict[str, str] | None = None, pre_transform=None,
                 transform=None, source: str = "in-memory graphs (Python)",
                 info: GraphListInfo | None = None, split_rule: str | None = None) -> None:
        check_split("GraphList", split)
        super().__init__(None, transform)
        graphs = list(graphs)
        self.info = info or infer_info(graphs, level, task)
        self.split_indices, self.split_rule = split_with_record(graphs, self.info, fold, seed,
                                                                split_files, split_rule)
        how = self.split_rule["rule"]
        self.split = split
        self.provenance = {"graph_list": {
            "source": source, "num_graphs": len(graphs), "split_rule": how,
            "split_sizes": {s: len(v) for s, v in self.split_indices.items()},
            **{k: v for k, v in asdict(self.info).items() if k != "num_graphs"}}}
        single = len(graphs) == 1
        chosen = graphs if single else [graphs[i] for i in self.split_indices[split]]
        prepared = _prepare(chosen, self.info, pre_transform)
        if single:
            self.transform = _compose(ItemMask(self.info.level, self.split_indices[split]),
                                      transform)
        self.data, self.slices = self.collate(prepared)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}, split={self.split!r})"


def _compose(first, second):
    if second is None:
        return first
    return Compose([first, second])


@functools.lru_cache(maxsize=8)
def _file_info(path: str, stamp: tuple, level: str | None, task: str | None) -> GraphListInfo:
    return infer_info(load_graph_file(path), level, task)


def graph_file_info(path: str | os.PathLike, level: str | None = None,
                    task: str | None = None) -> GraphListInfo:
    """:func:`infer_info` of a graph file, read once per process while the file is unchanged."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataNotFoundError(f"graph file not found: {p}")
    st = p.stat()
    return _file_info(str(p.resolve()), (st.st_size, st.st_mtime_ns), level, task)


class GraphFile(FileBackedDataset):
    r"""One split of a user's graph file (``.pt``, see :func:`load_graph_file`), with the
    encodings computed once and cached in
    ``root/processed/<sha256 of file>_<settings hash>_<pre_transform key>/``; editing the file,
    the split settings or the encodings gives a new cache entry.

    Args:
        root: cache directory (default ``resolve_cache_dir() / "GraphFile"``).
        split, level, task, fold, seed, split_files, split_rule: as :class:`GraphList`.
        path: the graph file.
        transform, pre_transform, force_reload: as :class:`~torch_geometric.data.InMemoryDataset`.

    Attributes:
        info (GraphListInfo): what was read off the graphs (level, task, vocabularies).
        split_indices (dict): the graph (or node / edge) ids of each split.
        split_rule (dict): the record of the split (``metrics.json`` ``split``).
        provenance (dict): path, sha256, split rule and what was read off the data.

    Raises:
        DataNotFoundError: ``path`` does not exist.
        DataError: see :func:`load_graph_file`, :func:`infer_info` and :func:`make_split`.
    """

    _missing = "graph file"

    def __init__(self, root: str | os.PathLike | None = None, split: str = "train",
                 path: str | os.PathLike | None = None, level: str | None = None,
                 task: str | None = None, fold: int = 0, seed: int = 0,
                 split_files: dict[str, str] | None = None, transform=None,
                 pre_transform=None, force_reload: bool = False,
                 split_rule: str | None = None) -> None:
        check_split("GraphFile", split)
        if path is None:
            raise ValueError("GraphFile: path (the .pt file) is required")
        self.path = Path(path).expanduser()
        self.info = graph_file_info(self.path, level, task)
        self.split, self.fold, self.seed = split, int(fold), int(seed)
        self.split_files = dict(split_files) if split_files else None
        self.split_text = split_rule
        self.file_sha256 = sha256_of(self.path)
        files = {s: sha256_of(Path(f).expanduser())[:16] for s, f in
                 (self.split_files or {}).items() if Path(f).expanduser().is_file()}
        rule_sha = None
        if split_rule is not None and parse_split_rule(split_rule, GRAPH_SPLIT_FORMS).kind == \
                "file":
            rule_sha = read_split_file(split_rule).sha256  # an edited split file: a new entry
        settings = json.dumps({"format": _FORMAT_VERSION, "info": asdict(self.info),
                               "fold": self.fold, "seed": self.seed,
                               "split_files": self.split_files, "split_sha": files,
                               **({"split": split_rule, "split_rule_sha": rule_sha}
                                  if split_rule is not None else {})},
                              sort_keys=True)
        self._key = "_".join((self.file_sha256[:16],
                              hashlib.sha256(settings.encode()).hexdigest()[:8],
                              pre_transform_key(pre_transform)))
        root = resolve_cache_dir() / "GraphFile" if root is None else root
        super().__init__(os.fspath(root), transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[0])
        with open(self.processed_paths[1]) as f:
            meta = json.load(f)
        self.split_indices = meta["split"]
        self.split_rule = meta["record"]
        self.provenance = {"graph_file": meta["provenance"]}
        ids = self.split_indices[split]
        if self.info.num_graphs == 1:
            self.transform = _compose(ItemMask(self.info.level, ids), transform)
        else:
            self.data, self.slices = self.collate([self.get(i) for i in ids])
            self._data_list = None

    def process(self) -> None:
        graphs = load_graph_file(self.path)
        split, record = split_with_record(graphs, self.info, self.fold, self.seed,
                                          self.split_files, self.split_text)
        how = record["rule"]
        self.save(_prepare(graphs, self.info, self.pre_transform), self.processed_paths[0])
        provenance = {"source": str(self.path), "sha256": self.file_sha256,
                      "num_graphs": len(graphs), "split_rule": how,
                      "split_sizes": {s: len(v) for s, v in split.items()},
                      **{k: v for k, v in asdict(self.info).items() if k != "num_graphs"}}
        write_cache_json(self.processed_paths[1], {"split": split, "record": record,
                                                   "provenance": provenance})
        # a subclass that writes the file itself (a node table) announces its data itself
        log.log(logging.INFO if type(self).process is GraphFile.process and
                type(self) is GraphFile else logging.DEBUG,
                "graph file %s: %d graphs, %s-level %s, split: %s", self.path, len(graphs),
                self.info.level, self.info.task, how)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path.name}, {len(self)}, split={self.split!r})"


# --------------------------------------------------------------------------------------------
# Loader and registry entries
# --------------------------------------------------------------------------------------------
def load_graph_file_split(
    root: str | os.PathLike,
    split: str = "train",
    transform=None,
    pre_transform=None,
    force_reload: bool = False,
    *,
    path: str | os.PathLike,
    level: str | None = None,
    task: str | None = None,
    fold: int = 0,
    seed: int = 0,
    split_files: dict[str, str] | None = None,
    split_rule: str | None = None,
) -> GraphFile:
    """One split of a user's graph file (``data.path: <file>.pt``; :class:`GraphFile`, cached
    under ``root/GraphFile/``), with ``data.level``, ``data.task``, ``data.fold``,
    ``data.seed``, ``data.split_files`` and ``data.split`` (as ``split_rule``)."""
    return GraphFile(root=Path(root) / "GraphFile", split=split, path=path, level=level,
                     task=task, fold=fold, seed=seed, split_files=split_files,
                     transform=transform, pre_transform=pre_transform, force_reload=force_reload,
                     split_rule=split_rule)


#: what :func:`load_graph_file_split` takes from a config
GRAPH_FILE_PARAMS = ("path", "level", "task", "fold", "seed", "split_files", "split_rule")


def graph_list_spec(info: GraphListInfo, name: str = "graph_file", load=load_graph_file_split,
                    params: tuple[str, ...] = GRAPH_FILE_PARAMS) -> DatasetSpec:
    """The spec of a user's graphs from what :func:`~.graph_info.infer_info` read off them.

    Args:
        info: what the graphs ask of a model.
        name: the spec's name (``graph_file``, ``graph_list``, ``node_table``).
        load: the loader.
        params: the arguments the loader accepts
            (:attr:`~graph_transformers.data.registry.DatasetSpec.params`).

    Returns:
        DatasetSpec: level, task, outputs, metric and features of the graphs.
    """
    return DatasetSpec(name, info.level, info.task, info.out_dim, info.metric, load,
                       node_types=info.node_types, edge_types=info.edge_types,
                       node_dim=info.node_dim, edge_dim=info.edge_dim, source="user",
                       params=params)


def graph_file_spec(path: str | os.PathLike, level: str | None = None,
                    task: str | None = None) -> DatasetSpec:
    """The spec of a user's graph file (``data.path: <file>.pt``), read off the graphs."""
    return graph_list_spec(graph_file_info(path, level, task))
