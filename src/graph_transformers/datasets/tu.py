"""TU graph-classification benchmarks (MUTAG, ENZYMES, NCI1), read by PyTorch Geometric's own
:class:`~torch_geometric.datasets.TUDataset`, with the 10-fold cross-validation splits of Dwivedi
et al., "Benchmarking Graph Neural Networks". The metric is accuracy (report mean ± std over the
10 folds).

Where the raw files come from (``docs/datasets.md``, "Raw files"):

* **offline**: ``resolve_data_dir(data_dir) / "TU" / "<NAME>.zip"``. The zip holds
  ``<NAME>/<NAME>_A.txt``, ``_graph_indicator.txt``, ``_graph_labels.txt``,
  ``_node_labels.txt`` (+ ``_edge_labels.txt``, ``_node_attributes.txt``) and ``README.txt`` — the
  original TU Dortmund text files. Its sha256 is checked against the README's, then the members
  are extracted *flat* into TUDataset's ``raw_dir`` (``<root>/<NAME>/raw/<NAME>_A.txt``, ...),
  which is where :meth:`TUDataset.download` would have put them, so TUDataset finds its
  ``raw_file_names`` and never downloads. An already extracted folder ``TU/<NAME>/`` (or
  ``TU/<NAME>/<NAME>/``) holding the ``.txt`` files is copied the same way;
* **online fallback**: TUDataset's own download from its canonical URL
  (:attr:`TUDataset.url`, ``https://www.chrsmrrs.com/graphkerneldatasets/<NAME>.zip``), unless
  ``download=False`` or ``$GRAPH_TRANSFORMERS_OFFLINE`` is set.

Splits (``TU(..., split=, fold=)``; each fold's train/val/test are disjoint):

* **index files, any TU name**: ``<NAME>_train.index``, ``<NAME>_val.index``,
  ``<NAME>_test.index`` in the data directory's ``TU/`` (or in ``<root>/splits/``) are used when
  present, in the format benchmarking-gnns ships for ENZYMES (``data/TUs/``): line ``k`` of each
  file is fold ``k``, a comma-separated list of 0-based graph ids (positions in the TU file
  order). For ENZYMES the three files are required (480 / 60 / 60 ids a line, 10 lines); they
  are read from the data directory, else from ``<root>/splits/``, else downloaded there from the
  benchmarking-gnns repository (:data:`BENCHMARK_INDEX_URL`), and their sha256 is checked. For
  any other name no checksum is known: the files are validated instead (all three present, the
  same number of lines, ids integers in range, no id twice in a line, train/val/test of a line
  disjoint) and their sha256 is recorded; ``data.fold`` must then be below the number of lines.
  Index files of another prefix (``PROTEINS_full_*.index`` beside ``PROTEINS.zip``) are read with
  ``data.options.index_prefix: PROTEINS_full``; without it they are not used, with a WARNING
  naming them (:func:`~graph_transformers.datasets.tu_folds.foreign_index_files`).
* **otherwise** (MUTAG and NCI1 in the shared data): 10 folds generated with a fixed seed by
  :func:`~graph_transformers.data.generated.stratified_kfold` (numpy; scikit-learn is not a
  dependency of this package): the graphs are cut into 10 stratified folds; fold ``k`` uses fold
  ``k`` as test, fold ``(k + 1) % 10`` as val and the other 8 folds as train (about 80 / 10 / 10 %).
  The benchmark's recipe takes val as a stratified 11.1 % (≈ 1/9) of the non-test part, so the
  proportions agree; the graph ids are not the benchmark's (its MUTAG/NCI1 split files were not
  available), so fold-level numbers are not directly comparable, only the mean over folds is.

* **a split or folds file** (``data.split``; the fair-comparison JSON of Errica et al. 2020):
  fold ``data.fold`` of it (:func:`~graph_transformers.data.split_rules.file_split`).

Each split carries :attr:`TU.split_rule`, the record of the rule used (``metrics.json``
``split``): ``{"rule": "index_files", "files": [...], "sha256": {...}, "num_folds": L,
"fold": k}``, ``{"rule": "stratified_folds", "seed": s, "num_folds": 10, "fold": k}`` or a
split file's (``{"rule": "folds PATH fold k", "sha256": ...}``).

Features (PyG conventions, kept as PyG builds them):

* ``x``: ``FloatTensor [num_nodes, F]``: the one-hot node label (MUTAG 7, NCI1 37, ENZYMES 3),
  preceded for ENZYMES by its 18 continuous node attributes (``use_node_attr`` defaults to
  ``True`` exactly for the datasets that have ``_node_attributes.txt``, i.e. ENZYMES:
  ``F = 18 + 3 = 21``). ``x`` stays float so that it goes through the model's continuous
  (``nn.Linear``) node encoder: registry ``node_dim = F``, ``node_types = None``;
* ``edge_attr``: MUTAG only, ``FloatTensor [num_edges, 4]`` one-hot bond label; ``None`` for
  ENZYMES and NCI1;
* ``edge_index``: ``LongTensor [2, num_edges]``, both directions, self-loops removed, coalesced;
* ``y``: ``LongTensor [1]``, class id ``0..C-1`` (the raw labels mapped in sorted order, e.g.
  MUTAG ``-1 → 0``, ``1 → 1``; ENZYMES ``1..6 → 0..5``).

Node features of the runs (``data.node_features``,
:func:`~graph_transformers.datasets.tu_features.node_feature_transform`; ``constant`` and ``degree``
are applied as a pre-transform, so each has its own processed cache):

* ``auto`` (default): the set's own ``x``; a set with neither node labels nor attributes (the
  social sets: IMDB-BINARY, REDDIT-BINARY, COLLAB, ...) gets one constant feature ``1`` per node
  (``x`` ``[N, 1]``), with an INFO line suggesting ``degree``. That constant is added as each
  graph is read (a transform, not cached), as before the option existed;
* ``constant``: ``x`` replaced by one constant ``1`` per node (``[N, 1]``), the set's own
  features dropped (a structure-only baseline);
* ``degree``: the one-hot node degree
  :class:`~graph_transformers.datasets.tu_features.CappedOneHotDegree` (``max_degree + 1`` columns,
  ``data.options.max_degree``, default :data:`DEFAULT_MAX_DEGREE`; a degree ``>= max_degree``
  goes into the last column), as Xu et al. (GIN, 2019) did for the social sets. It replaces
  ``x`` where the set has no node features and is appended after them where it has.
"""
from __future__ import annotations

import functools
import logging
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.datasets import TUDataset
from torch_geometric.transforms import Constant

from ..data.cache import (DATA_ENV, DataNotFoundError, PreTransformKeyed, resolve_cache_dir,
                          resolve_data_dir, sha256_of)
from ..data.download import OFFLINE_ENV, fetch_url, offline
from ..data.generated import SPLITS, PathLike, Transform, chain, check_split
from ..data.registry import DatasetSpec
from ..data.split_rules import file_split, parse_split_rule
from ..fileio import check_name
from .tu_files import _check_sha, _copy_txt_folder, _local_txt_folder, _tu_dir, extract_tu_zip
from .tu_features import (DEFAULT_MAX_DEGREE, CappedOneHotDegree, log_node_features,
                          node_feature_dim, node_feature_transform)
from .tu_folds import (TU_NUM_FOLDS, TU_SPLIT_SEED, check_fold, check_index_folds, index_files,
                       read_benchmark_index, stratified_fold_split, warn_foreign_index_files)

log = logging.getLogger(__name__)

__all__ = ["BENCHMARK_INDEX_URL", "ENZYMES_SPEC", "MUTAG_SPEC", "NCI1_SPEC", "TU", "TU_NAMES",
           "TU_PARAMS", "TU_STATS", "adapt_tu_spec", "extract_tu_zip", "load_tu", "tu_spec"]

#: The TU datasets this module knows (case as in the TU file names).
TU_NAMES: tuple[str, ...] = ("MUTAG", "ENZYMES", "NCI1")
#: ``use_node_attr``, edge-feature width (0 = no ``edge_attr``).
TU_STATS: dict[str, dict[str, int]] = {
    "MUTAG": {"num_graphs": 188, "num_classes": 2, "num_features": 7, "num_edge_features": 4},
    "ENZYMES": {"num_graphs": 600, "num_classes": 6, "num_features": 21,
                "num_edge_features": 0},
    "NCI1": {"num_graphs": 4110, "num_classes": 2, "num_features": 37, "num_edge_features": 0},
}
#: The benchmark's split files (graphdeeplearning/benchmarking-gnns ``data/TUs/``).
BENCHMARK_INDEX_URL = (
    "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/TUs/"
    "{name}_{split}.index"
)

# Datasets whose benchmark split files are required (and downloaded when missing); any other
# name uses its index files when they are present, else the generated folds.
_INDEX_SPLIT_NAMES = ("ENZYMES",)




def _canonical_name(name: str) -> str:
    for known in TU_NAMES:
        if name.upper() == known:
            return known
    return name  # any other TU name: TUDataset decides whether it exists


# --------------------------------------------------------------------------------------------
# Dataset
# --------------------------------------------------------------------------------------------
class TU(PreTransformKeyed, TUDataset):
    r"""One split of one fold of a TU graph-classification benchmark (MUTAG, ENZYMES, NCI1),
    loaded by PyG's :class:`~torch_geometric.datasets.TUDataset` (see the module docstring for
    the sources, the split protocol and the features).

    =========  ========  =======  ================================  ==============
    name       graphs    classes  ``x`` width (default)             ``edge_attr``
    =========  ========  =======  ================================  ==============
    MUTAG      188       2        7 (one-hot atom type)             ``[E, 4]``
    ENZYMES    600       6        21 (18 attributes + 3 one-hot)    none
    NCI1       4110      2        37 (one-hot atom type)            none
    =========  ========  =======  ================================  ==============

    Each graph: ``x`` ``FloatTensor [num_nodes, num_features]``, ``edge_index``
    ``LongTensor [2, num_edges]``, ``edge_attr`` ``FloatTensor [num_edges, 4]`` (MUTAG only),
    ``y`` ``LongTensor [1]``. Metric: accuracy, mean ± std over the 10 folds.

    Layout under ``root`` (default ``resolve_cache_dir() / "TU"``): raw files in
    ``root/<NAME>/raw/`` (TUDataset's ``raw_dir``), all graphs processed once (after
    ``pre_transform``, which sees ``x`` with the node attributes included) in
    ``root/<NAME>/processed/<pre_transform_key(pre_transform)>/data.pt``, downloaded split files
    in ``root/splits/``. The dataset then holds only the graphs of ``split`` / ``fold``, in the
    order of the split's id list (:attr:`indices_in_full` gives their positions in the full set).

    Arguments in PyG's order (``TUDataset(root, name, ...)``).

    Args:
        root (str or PathLike, optional): cache directory.
        name (str): ``"MUTAG"``, ``"ENZYMES"`` or ``"NCI1"`` (case-insensitive); another TU name
            works too (from ``DATA_DIR/TU/<NAME>.zip`` or TUDataset's download), split by its
            own index files in ``DATA_DIR/TU/`` where present, else by the generated folds.
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        transform, pre_transform (callable, optional): as in PyG.
        force_reload (bool): re-process the raw files.
        fold (int): cross-validation fold ``0..9`` (``0..L-1`` with another name's own index
            files of ``L`` lines).
        data_dir (str or PathLike, optional): data directory holding ``TU/`` (default
            ``$GRAPH_TRANSFORMERS_DATA``; ``None`` → download).
        use_node_attr (bool, optional): keep the continuous node attributes in ``x``; default
            ``True`` for datasets that have them (ENZYMES), else ``False``.
        use_edge_attr (bool): keep continuous edge attributes (none of the three has any).
        split_seed (int): seed of the generated stratified folds (MUTAG, NCI1); keep the default
            :data:`TU_SPLIT_SEED` for the benchmark split.
        download (bool): allow downloads (raw zip from TUDataset's URL, ENZYMES split files from
            benchmarking-gnns) when files are not local; also off with
            ``$GRAPH_TRANSFORMERS_OFFLINE=1``.
        split_file (str, optional): a split or folds file of 0-based graph ids (``data.split``).
        index_prefix (str, optional): read ``<PREFIX>_{train,val,test}.index`` in the data
            directory's ``TU/`` instead of ``<NAME>_*.index`` (``data.options.index_prefix``).

    Attributes:
        metric (str): ``"accuracy"``. level (str): ``"graph"``.
        split_indices (dict): ``{"train", "val", "test"}`` → graph ids of this fold.
        indices_in_full (list[int]): the ids of this split (= ``split_indices[split]``).
        split_source (str): ``"benchmark index files"`` (ENZYMES), ``"index files"`` (another
            name's own files) or ``"stratified_kfold(seed=...)"``.
        split_rule (dict): the record of the split rule (``metrics.json`` ``split``):
            ``{"rule": "index_files", "files", "sha256", "num_folds", "fold"}`` or
            ``{"rule": "stratified_folds", "seed", "num_folds", "fold"}``.

    Raises:
        TypeError: a ``name`` that is not a string (a call in the removed order
            ``TU(name, root, ...)``).
        ValueError: no ``name``, unknown ``split``, ``fold`` outside ``0..9`` (or outside the
            index files' lines), a raw file or split file whose sha256 is not the pinned one, a
            malformed split file (:func:`~graph_transformers.datasets.tu_folds.check_index_folds`),
            or one or two of a name's three index files without the others.
        DataNotFoundError: the raw files (or the ENZYMES split files) are neither local nor
            downloadable; the message lists where it looked and how to get them.
    """

    family = "TU"
    metric = "accuracy"
    level = "graph"
    task = "graph_classification"

    def __init__(
        self, root: PathLike | None = None, name: str | None = None, split: str = "train",
        transform: Transform = None, pre_transform: Transform = None, force_reload: bool = False,
        *, fold: int = 0, data_dir: PathLike | None = None, use_node_attr: bool | None = None,
        use_edge_attr: bool = False, split_seed: int = TU_SPLIT_SEED, download: bool = True,
        split_file: str | None = None, index_prefix: str | None = None,
    ) -> None:
        if name is None:
            raise ValueError(f"TU: no dataset name; pass name= (one of {', '.join(TU_NAMES)}, "
                             "or another TU name)")
        if not isinstance(name, str):  # e.g. a path: the removed order TU(name, root, ...)
            raise TypeError(f"TU: name must be a dataset name (str), got {name!r}; the arguments "
                            "are in PyG's order, TU(root, name, split, ...)")
        check_split("TU", split)
        name = _canonical_name(str(name))
        self.split = split
        self.split_seed = int(split_seed)
        self.allow_download = bool(download) and not offline()
        data = resolve_data_dir(data_dir)
        self._tu_dir = _tu_dir(data) if data is not None else None
        root = Path(root).expanduser() if root is not None else resolve_cache_dir() / "TU"
        # Default: keep node attributes where they exist (ENZYMES); for a dataset without
        # attributes, TUDataset's slicing is a no-op either way.
        keep_attr = True if use_node_attr is None else bool(use_node_attr)
        # Locate the split files before any extraction/processing, so a missing one fails fast.
        # Another name's own index files set the number of folds (checked once they are read).
        self._split_file = split_file  # its folds are checked when it is read
        self.index_prefix = None if index_prefix is None else \
            check_name(index_prefix, "data.options.index_prefix")
        if split_file is not None:
            self.fold, self._index_paths = int(fold), None
        elif name in _INDEX_SPLIT_NAMES and index_prefix in (None, name):
            self.fold = check_fold(fold)
            self._index_paths = {s: self._index_file(name, s, root) for s in SPLITS}
        else:
            self._index_paths = self._optional_index_files(name, self.index_prefix)
            if self._index_paths is None:
                self.fold = check_fold(fold)
            elif isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or fold < 0:
                raise ValueError(f"TU fold must be a non-negative integer, got {fold!r}")
            else:
                self.fold = int(fold)  # checked against the files' lines once they are read
        super().__init__(str(root), name, transform, pre_transform,
                         force_reload=force_reload, use_node_attr=keep_attr,
                         use_edge_attr=use_edge_attr)
        self.use_node_attr = keep_attr and self.num_node_attributes > 0
        labels = self._data.y.view(-1)
        self._num_classes = int(labels.max()) + 1
        self.num_graphs_full = int(labels.numel())
        self.split_indices = self._split_indices(labels)
        self.indices_in_full = list(self.split_indices[split])
        data_list = [self.get(i) for i in self.indices_in_full]
        self._data_list = None
        self.data, self.slices = self.collate(data_list)

    # -- PyG hooks ---------------------------------------------------------------------------
    def download(self) -> None:
        """Called by PyG only when ``raw_dir`` lacks the raw files: fill it from the data
        directory (zip or extracted folder), else by TUDataset's own download."""
        raw = Path(self.raw_dir)
        if self._tu_dir is not None:
            zpath = self._tu_dir / f"{self.name}.zip"
            if zpath.is_file():
                extract_tu_zip(zpath, raw, self.name)
                return
            folder = _local_txt_folder(self._tu_dir, self.name)
            if folder is not None:
                _copy_txt_folder(folder, raw, self.name)
                return
        if not self.allow_download:
            raise DataNotFoundError(f"TU {self.name}: raw files not found. {self._how_to_get()}")
        try:
            super().download()
        except Exception as e:  # fsspec/aiohttp/urllib errors differ by backend
            shutil.rmtree(raw, ignore_errors=True)
            raise DataNotFoundError(
                f"TU {self.name}: the download from {self.url}/{self.name}.zip failed ({e!r}). "
                f"{self._how_to_get()}"
            ) from e

    # -- properties --------------------------------------------------------------------------
    @property
    def num_classes(self) -> int:
        """Number of classes of the full dataset (not only of the classes in this split)."""
        n = getattr(self, "_num_classes", None)
        return n if n is not None else super().num_classes

    # -- helpers -----------------------------------------------------------------------------
    def _how_to_get(self) -> str:
        looked = str(self._tu_dir) if self._tu_dir is not None else "(no data directory given)"
        return (
            f"Looked in: {looked} (for {self.name}.zip or {self.name}/{self.name}_A.txt) and "
            f"{self.raw_dir}. To get the data, pass --data-dir (data_dir=...) or set "
            f"${DATA_ENV} to a folder whose TU/ holds {self.name}.zip laid out like "
            "the benchmark's (see docs/datasets.md, 'Raw files'), or allow TUDataset's download "
            f"of {self.url}/{self.name}.zip (needs network; download=True and ${OFFLINE_ENV} "
            "unset)."
        )

    def _index_file(self, name: str, split: str, root: Path) -> Path:
        fname = f"{name}_{split}.index"
        search = ([self._tu_dir] if self._tu_dir is not None else []) + [root / "splits"]
        for d in search:
            if (d / fname).is_file():
                return d / fname
        if not self.allow_download:
            raise DataNotFoundError(
                f"TU {name}: split file {fname} not found; looked in "
                f"{', '.join(map(str, search))}. Put the benchmark's {fname} (benchmarking-gnns "
                f"data/TUs/) there, set ${DATA_ENV}, or allow its download from "
                f"{BENCHMARK_INDEX_URL.format(name=name, split=split)}."
            )
        url = BENCHMARK_INDEX_URL.format(name=name, split=split)
        try:
            path = fetch_url(url, root / "splits" / fname)
        except Exception as e:
            raise DataNotFoundError(
                f"TU {name}: split file {fname} not found in "
                f"{', '.join(map(str, search[:-1])) or '(no data directory)'} and its download "
                f"from {url} failed ({e!r}). Set ${DATA_ENV} to a folder whose TU/ holds it."
            ) from e
        try:
            _check_sha(path)
        except ValueError:
            path.unlink(missing_ok=True)
            raise
        return path

    def _optional_index_files(self, name: str, prefix: str | None) -> dict[str, Path] | None:
        """``<PREFIX>_{train,val,test}.index`` (``prefix``, else ``name``) in the data
        directory's ``TU/`` when all three are there, ``None`` when none is (the generated folds
        are used); without ``prefix``, index files of another prefix there are warned about.

        Raises:
            ValueError: only one or two of the three files are there.
            DataNotFoundError: ``prefix`` is given and none of its files is there.
        """
        found = index_files(self._tu_dir, prefix or name, name) if self._tu_dir else None
        if prefix is not None and found is None:
            raise DataNotFoundError(
                f"TU {name}: data.options.index_prefix is {prefix!r}, but "
                f"{self._tu_dir or '(no data directory)'} holds no {prefix}_train.index, "
                f"{prefix}_val.index and {prefix}_test.index")
        if prefix is None and self._tu_dir is not None:
            warn_foreign_index_files(self._tu_dir, name, own=found is not None)
        return found

    def _split_indices(self, labels: torch.Tensor) -> dict[str, list[int]]:
        n = int(labels.numel())
        if self._split_file is not None:
            ids, self.split_rule = file_split(self._split_file, n, self.fold, "graphs")
            self.split_source = self.split_rule["rule"]
            return ids
        if self._index_paths is None:
            self.split_source = f"stratified_kfold(n_splits={TU_NUM_FOLDS}, seed={self.split_seed})"
            self.split_rule = {"rule": "stratified_folds", "seed": self.split_seed,
                               "num_folds": TU_NUM_FOLDS, "fold": self.fold}
            return stratified_fold_split(labels, self.fold, TU_NUM_FOLDS, self.split_seed)
        paths = self._index_paths
        known = self.name in _INDEX_SPLIT_NAMES and self.index_prefix in (None, self.name)
        self.split_source = "benchmark index files" if known else "index files"
        if known:
            for path in paths.values():
                _check_sha(path)
        folds = {s: read_benchmark_index(paths[s]) for s in SPLITS}
        if known and len(folds["train"]) != TU_NUM_FOLDS:
            raise ValueError(f"TU: {paths['train']} has {len(folds['train'])} lines, expected "
                             f"{TU_NUM_FOLDS}")
        check_index_folds(folds, paths, n)
        num_folds = len(folds["train"])
        if self.fold >= num_folds:
            raise ValueError(f"TU {self.name}: fold {self.fold} asked for, but the index files "
                             f"in {paths['train'].parent} have {num_folds} lines (folds 0.."
                             f"{num_folds - 1}); set data.fold in that range")
        self.split_rule = {"rule": "index_files", "files": [str(paths[s]) for s in SPLITS],
                           "sha256": {paths[s].name: sha256_of(paths[s]) for s in SPLITS},
                           "num_folds": num_folds, "fold": self.fold}
        return {s: list(folds[s][self.fold]) for s in SPLITS}

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.name}, {len(self)}, split={self.split!r}, "
                f"fold={self.fold})")


# --------------------------------------------------------------------------------------------
# Loader and registry entries
# --------------------------------------------------------------------------------------------
def load_tu(
    root: PathLike, name: str, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, fold: int = 0,
    data_dir: PathLike | None = None, node_features: str = "auto",
    max_degree: int | None = None, featureless: bool = False, split_rule: str | None = None,
    index_prefix: str | None = None,
) -> TU:
    """One split of one fold of the TU set ``name`` (``data.name: mutag`` / ``tu:<NAME>``), cached
    under ``root/TU/``, with the node features of ``data.node_features``
    (:func:`~graph_transformers.datasets.tu_features.node_feature_transform`, capped at
    ``max_degree``, ``data.options.max_degree``) applied as a pre-transform before ``pre_transform``
    (their own cache). ``featureless``: the set has no node features of its own; with ``auto`` each
    graph then gets the constant as it is read (a transform, as before ``data.node_features``
    existed, so earlier caches still hold). The benchmark split is fixed: no data seed reshuffles
    the folds; ``split_rule`` (``data.split``) may give a split or folds file instead, and
    ``index_prefix`` (``data.options.index_prefix``) index files named otherwise than the set."""
    cap = DEFAULT_MAX_DEGREE if max_degree is None else max_degree
    auto_constant = node_features == "auto" and featureless
    features = None if auto_constant else node_feature_transform(node_features, featureless,
                                                                 cap)
    if split == "train":
        log_node_features(name, featureless, node_features, cap)
    if auto_constant:
        transform = chain(Constant(value=1.0), transform)
    split_file = None if split_rule is None else parse_split_rule(split_rule, ("file",)).path
    return TU(str(Path(root) / "TU"), name, split=split, fold=fold, data_dir=data_dir,
              pre_transform=chain(features, pre_transform), transform=transform,
              force_reload=force_reload, split_file=split_file, index_prefix=index_prefix)


#: what :func:`load_tu` takes from a config: ``data.fold``, ``data.data_dir``,
#: ``data.node_features``, ``data.split`` (as ``split_rule``), ``data.options.max_degree`` and
#: ``data.options.index_prefix``
TU_PARAMS = ("fold", "data_dir", "node_features", "split_rule", "max_degree", "index_prefix")


@functools.lru_cache(maxsize=32)
def tu_spec(name: str, data_dir: Any = None, cache_dir: Any = None, node_features: str = "auto",
            max_degree: int | None = None, index_prefix: str | None = None) -> DatasetSpec:
    """The spec of any TU dataset by its TU name (``data.name: tu:<NAME>``, e.g. ``tu:DD``),
    read once from the data: classes, node feature width (one-hot node labels, plus the node
    attributes where present; a constant 1 for sets with neither; changed by ``node_features``,
    see :func:`node_feature_dim`) and edge feature width (one-hot edge labels, or none).
    Raw files come from ``DATA_DIR/TU/<NAME>.zip`` or TUDataset's download; splits are the
    set's own index files in ``DATA_DIR/TU/`` where present, else the 10 stratified folds of
    this module (``index_prefix``: another prefix's index files). The spec is read once per
    (name, data_dir, cache_dir, node_features, max_degree, index_prefix) in a process (a run
    resolves it several times).

    Raises:
        DataNotFoundError: when the raw files are neither local nor downloadable.
        ValueError: an unknown ``node_features``, a bad ``max_degree``, or malformed index
            files.
    """
    if max_degree is not None:
        CappedOneHotDegree(max_degree)  # ValueError naming the key
    full = TU(str(resolve_cache_dir(cache_dir) / "TU"), name, split="train", fold=0,
              data_dir=data_dir, index_prefix=index_prefix)
    own = int(full.num_features)
    cap = DEFAULT_MAX_DEGREE if max_degree is None else max_degree
    edge_dim = int(full.num_edge_features) or None
    return DatasetSpec(f"tu:{full.name}", "graph", "classification", int(full.num_classes),
                       "accuracy", functools.partial(load_tu, name=full.name,
                                                     featureless=own == 0),
                       node_dim=node_feature_dim(node_features, own, cap), edge_dim=edge_dim,
                       params=TU_PARAMS)


def adapt_tu_spec(spec: DatasetSpec, node_features: str = "auto",
                  max_degree: int | None = None) -> DatasetSpec:
    """A registered TU spec (all have node features) for ``data.node_features`` and
    ``data.options.max_degree``: ``node_dim`` of the features the loader builds.

    Raises:
        ValueError: an unknown ``node_features`` or a bad ``max_degree``.
    """
    if max_degree is not None:
        CappedOneHotDegree(max_degree)  # ValueError naming the key
    if node_features == "auto":
        return spec
    cap = DEFAULT_MAX_DEGREE if max_degree is None else max_degree
    return replace(spec, node_dim=node_feature_dim(node_features, int(spec.node_dim), cap))


def _registered(name: str) -> DatasetSpec:
    stats = TU_STATS[name]
    return DatasetSpec(name.lower(), "graph", "classification", stats["num_classes"],
                       "accuracy", functools.partial(load_tu, name=name),
                       node_dim=stats["num_features"],
                       edge_dim=stats["num_edge_features"] or None, adapt=adapt_tu_spec,
                       params=TU_PARAMS, adapt_params=("node_features", "max_degree"))


#: ``data.name: mutag``
MUTAG_SPEC = _registered("MUTAG")
#: ``data.name: enzymes``
ENZYMES_SPEC = _registered("ENZYMES")
#: ``data.name: nci1``
NCI1_SPEC = _registered("NCI1")
