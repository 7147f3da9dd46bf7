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

Splits (``TU(..., split=, fold=)``; 10 folds, each fold's train/val/test are disjoint and cover
all graphs):

* **ENZYMES**: the benchmark's own split files ``ENZYMES_{train,val,test}.index``
  (graphdeeplearning/benchmarking-gnns ``data/TUs/``): line ``k`` of each file is fold ``k``
  (480 / 60 / 60 comma-separated graph ids, 0-based positions in the TU file order). They are read
  from the data directory next to the zip (sha256 checked), else from ``<root>/splits/``, else
  downloaded there from the benchmarking-gnns repository (:data:`BENCHMARK_INDEX_URL`).
* **MUTAG, NCI1** (no split files were available): the same protocol, generated with a fixed seed
  by :func:`stratified_kfold` (numpy; scikit-learn is not a dependency of this package): the
  graphs are cut into 10 stratified folds; fold ``k`` uses fold ``k`` as test, fold
  ``(k + 1) % 10`` as val and the other 8 folds as train (about 80 / 10 / 10 %). The benchmark's
  recipe takes val as a stratified 11.1 % (≈ 1/9) of the non-test part, so the proportions agree;
  the graph ids are not the benchmark's (its MUTAG/NCI1 split files were not available), so
  fold-level numbers are not directly comparable, only the mean over folds is.

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
"""
from __future__ import annotations

import logging
import os
import os.path as osp
import shutil
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch_geometric.datasets import TUDataset

log = logging.getLogger(__name__)

from .cache import (DATA_ENV, DataNotFoundError, check_sha256, pre_transform_key,
                    resolve_cache_dir, resolve_data_dir, sha256_of)
from .download import OFFLINE_ENV, fetch_url, offline
from .generated import SPLITS, check_split

__all__ = [
    "TU",
    "TU_NAMES",
    "TU_NUM_FOLDS",
    "TU_SPLIT_SEED",
    "TU_STATS",
    "BENCHMARK_INDEX_URL",
    "OFFLINE_ENV",
    "stratified_kfold",
    "stratified_fold_split",
    "read_benchmark_index",
    "extract_tu_zip",
]

#: The TU datasets this module knows (case as in the TU file names).
TU_NAMES: tuple[str, ...] = ("MUTAG", "ENZYMES", "NCI1")
#: Number of cross-validation folds of the benchmark.
TU_NUM_FOLDS = 10
#: Seed of the generated stratified folds (MUTAG, NCI1). Fixed: the split is part of the
#: benchmark, not of a training run, so it must not follow the training seed.
TU_SPLIT_SEED = 0
#: Known sizes (checked by the tests): graphs, classes, node-feature width with the default
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
#: Set to ``1`` to forbid any download attempt (same as ``download=False``).

# sha256 of the benchmark's raw files in TU (docs/datasets.md, 'Raw files').
_SHA256 = {
    "MUTAG.zip": "e6f234cb1487781d0b6411175fb0489ed4142cf8a103570526114e1fd4eebdf0",
    "ENZYMES.zip": "f9530114781f6d3b02e12fce1b58f2a9d33b419bcc8932904067e55c60b02cf2",
    "NCI1.zip": "8c43fc45bdc599cc2eaa74966590425087a6cf19628a5507c76d174bc054f98c",
    "ENZYMES_train.index": "529cef68e6a4ff122224b7ad300437d08d1f02ac54a7abdd95803fb20dad7cdf",
    "ENZYMES_val.index": "9301b77fb3d7238cd863a4ac954bad997f8c40927d5fc77ec6deaab4dd25d2c7",
    "ENZYMES_test.index": "1f7cff482f173ecc8940c56b8dce70a4766ddd90bf69cc16506fdca8b3aa292f",
}
# Datasets whose split comes from the benchmark's index files.
_INDEX_SPLIT_NAMES = ("ENZYMES",)




def _canonical_name(name: str) -> str:
    for known in TU_NAMES:
        if name.upper() == known:
            return known
    return name  # any other TU name: TUDataset decides whether it exists


def _tu_dir(data_dir: Path) -> Path:
    """``data_dir/TU`` if it exists, else ``data_dir`` itself when it already holds TU files."""
    if (data_dir / "TU").is_dir():
        return data_dir / "TU"
    if any(data_dir.glob("*.zip")) or any(data_dir.glob("*.index")):
        return data_dir
    return data_dir / "TU"


def _check_sha(path: Path) -> None:
    """Checks a file with a recorded sha256; any other file is used as found, its sha256 logged
    (so that a run records which file it read)."""
    want = _SHA256.get(path.name)
    if want is None:
        log.info("TU: %s has no recorded checksum; used as found (sha256 %s)", path,
                 sha256_of(path))
    check_sha256(path, want, "TU")


# --------------------------------------------------------------------------------------------
# Splits
# --------------------------------------------------------------------------------------------
def stratified_kfold(labels: Sequence[int] | np.ndarray | torch.Tensor, n_splits: int = 10,
                     seed: int = TU_SPLIT_SEED) -> list[np.ndarray]:
    """Cut ``range(len(labels))`` into ``n_splits`` stratified folds, deterministically.

    Recipe (numpy only): ``rng = numpy.random.default_rng(seed)``; for each class in increasing
    label order, its ids are shuffled with ``rng.permutation``; the class-wise shuffled lists are
    concatenated and position ``j`` of the concatenation goes to fold ``j % n_splits``. Hence every
    fold holds ``floor`` or ``ceil`` of ``n_c / n_splits`` graphs of each class ``c``, and the
    fold sizes differ by at most one.

    Args:
        labels: ``[N]`` integer class labels.
        n_splits (int): number of folds (``2 <= n_splits <= N``).
        seed (int): seed of the shuffles; the same seed gives the same folds.

    Returns:
        list of ``n_splits`` sorted ``int64`` arrays, disjoint, covering ``0..N-1``.

    Raises:
        ValueError: for labels that are not 1-D, or an ``n_splits`` outside ``[2, N]``.
    """
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels).reshape(-1)
    n = y.shape[0]
    if not 2 <= int(n_splits) <= n:
        raise ValueError(f"stratified_kfold needs 2 <= n_splits <= {n}, got {n_splits}")
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)])
    fold_of = np.empty(n, dtype=np.int64)
    fold_of[order] = np.arange(n) % int(n_splits)
    return [np.flatnonzero(fold_of == k).astype(np.int64) for k in range(int(n_splits))]


def stratified_fold_split(labels: Sequence[int] | np.ndarray | torch.Tensor, fold: int,
                          n_splits: int = TU_NUM_FOLDS,
                          seed: int = TU_SPLIT_SEED) -> dict[str, list[int]]:
    """Train/val/test graph ids of one fold of the generated split (MUTAG, NCI1).

    With ``folds = stratified_kfold(labels, n_splits, seed)``: test = ``folds[fold]``, val =
    ``folds[(fold + 1) % n_splits]``, train = all other folds (about 80 / 10 / 10 % for 10 folds,
    each stratified by class).

    Returns:
        dict ``{"train", "val", "test"}`` → sorted lists of graph ids.

    Raises:
        ValueError: ``fold`` not an integer in ``0..n_splits-1``.
    """
    fold = _check_fold(fold, n_splits)
    folds = stratified_kfold(labels, n_splits, seed)
    val_fold = (fold + 1) % n_splits
    train = np.concatenate([f for k, f in enumerate(folds) if k not in (fold, val_fold)])
    return {"train": sorted(train.tolist()), "val": folds[val_fold].tolist(),
            "test": folds[fold].tolist()}


def _check_fold(fold, n_splits: int = TU_NUM_FOLDS) -> int:
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not (
        0 <= fold < n_splits
    ):
        raise ValueError(f"TU fold must be an integer in 0..{n_splits - 1}, got {fold!r}")
    return int(fold)


def read_benchmark_index(path: str | os.PathLike) -> list[list[int]]:
    """Parse a benchmarking-gnns ``<NAME>_<split>.index`` file: one line per fold, each a
    comma-separated list of 0-based graph ids.

    Returns:
        list (one per fold, in file order) of lists of graph ids.
    """
    text = Path(path).read_text()
    return [[int(tok) for tok in line.split(",")] for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------------------------------
# Raw files
# --------------------------------------------------------------------------------------------
def extract_tu_zip(zip_path: str | os.PathLike, raw_dir: str | os.PathLike, name: str) -> None:
    """Extract the TU text files of ``name`` from ``zip_path`` flat into ``raw_dir``.

    Only members whose base name is ``<name>_*.txt`` or ``README.txt`` are taken (their folder
    inside the zip is dropped, so ``MUTAG/MUTAG_A.txt`` becomes ``raw_dir/MUTAG_A.txt``, the
    layout TUDataset expects). Each file is written to a temporary name and renamed, the
    ``_A.txt`` / ``_graph_indicator.txt`` files that TUDataset checks for last, so an interrupted
    extraction is redone. The sha256 of a zip named like a benchmark's (MUTAG, ENZYMES, NCI1) is checked first.

    Raises:
        ValueError: a sha256 mismatch, a bad zip, or a zip without ``<name>_A.txt`` /
            ``<name>_graph_indicator.txt``.
    """
    zip_path = Path(zip_path)
    _check_sha(zip_path)
    raw = Path(raw_dir)
    raw.mkdir(parents=True, exist_ok=True)
    required = {f"{name}_A.txt", f"{name}_graph_indicator.txt"}
    try:
        with zipfile.ZipFile(zip_path) as zf:
            members = {}
            for info in zf.infolist():
                base = osp.basename(info.filename)
                if info.is_dir() or info.filename.startswith("__MACOSX"):
                    continue
                if (base.startswith(f"{name}_") and base.endswith(".txt")) or base == "README.txt":
                    members[base] = info
            missing = required - members.keys()
            if missing:
                raise ValueError(f"TU: {zip_path} holds no {sorted(missing)}")
            for base in sorted(members, key=lambda b: (b in required, b)):
                tmp = raw / f".{base}.part"
                with zf.open(members[base]) as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst, length=1 << 20)
                os.replace(tmp, raw / base)
    except zipfile.BadZipFile as e:
        raise ValueError(f"TU: {zip_path} is not a valid zip archive: {e}") from e


def _copy_txt_folder(folder: Path, raw_dir: Path, name: str) -> None:
    raw_dir.mkdir(parents=True, exist_ok=True)
    required = {f"{name}_A.txt", f"{name}_graph_indicator.txt"}
    files = sorted(folder.glob(f"{name}_*.txt"), key=lambda p: (p.name in required, p.name))
    for src in files:
        tmp = raw_dir / f".{src.name}.part"
        shutil.copyfile(src, tmp)
        os.replace(tmp, raw_dir / src.name)


def _local_txt_folder(tu_dir: Path, name: str) -> Path | None:
    for folder in (tu_dir / name, tu_dir / name / name, tu_dir / name / "raw"):
        if (folder / f"{name}_A.txt").is_file() and (
                folder / f"{name}_graph_indicator.txt").is_file():
            return folder
    return None


# --------------------------------------------------------------------------------------------
# Dataset
# --------------------------------------------------------------------------------------------
class TU(TUDataset):
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

    Args:
        name (str): ``"MUTAG"``, ``"ENZYMES"`` or ``"NCI1"`` (case-insensitive); another TU name
            works with a generated split, downloaded by TUDataset.
        root (str or PathLike, optional): cache directory.
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        fold (int): cross-validation fold ``0..9``.
        data_dir (str or PathLike, optional): data directory holding ``TU/`` (default
            ``$GRAPH_TRANSFORMERS_DATA``; ``None`` → download).
        transform, pre_transform (callable, optional): as in PyG.
        force_reload (bool): re-process the raw files.
        use_node_attr (bool, optional): keep the continuous node attributes in ``x``; default
            ``True`` for datasets that have them (ENZYMES), else ``False``.
        use_edge_attr (bool): keep continuous edge attributes (none of the three has any).
        split_seed (int): seed of the generated stratified folds (MUTAG, NCI1); keep the default
            :data:`TU_SPLIT_SEED` for the benchmark split.
        download (bool): allow downloads (raw zip from TUDataset's URL, ENZYMES split files from
            benchmarking-gnns) when files are not local; also off with
            ``$GRAPH_TRANSFORMERS_OFFLINE=1``.

    Attributes:
        metric (str): ``"accuracy"``. level (str): ``"graph"``.
        split_indices (dict): ``{"train", "val", "test"}`` → graph ids of this fold.
        indices_in_full (list[int]): the ids of this split (= ``split_indices[split]``).
        split_source (str): ``"benchmark index files"`` or ``"stratified_kfold(seed=...)"``.

    Raises:
        ValueError: unknown ``split``, ``fold`` outside ``0..9``, a raw file or split file whose
            sha256 is not the pinned one, or a malformed split file.
        DataNotFoundError: the raw files (or the ENZYMES split files) are neither local nor
            downloadable; the message lists where it looked and how to get them.
    """

    metric = "accuracy"
    level = "graph"
    task = "graph_classification"

    def __init__(
        self,
        name: str,
        root: str | os.PathLike | None = None,
        split: str = "train",
        fold: int = 0,
        data_dir: str | os.PathLike | None = None,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        force_reload: bool = False,
        *,
        use_node_attr: bool | None = None,
        use_edge_attr: bool = False,
        split_seed: int = TU_SPLIT_SEED,
        download: bool = True,
    ) -> None:
        check_split("TU", split)
        fold = _check_fold(fold)
        name = _canonical_name(str(name))
        self.split = split
        self.fold = fold
        self.split_seed = int(split_seed)
        self.allow_download = bool(download) and not offline()
        data = resolve_data_dir(data_dir)
        self._tu_dir = _tu_dir(data) if data is not None else None
        root = Path(root).expanduser() if root is not None else resolve_cache_dir() / "TU"
        # Default: keep node attributes where they exist (ENZYMES); for a dataset without
        # attributes, TUDataset's slicing is a no-op either way.
        keep_attr = True if use_node_attr is None else bool(use_node_attr)
        # Locate the split files before any extraction/processing, so a missing one fails fast.
        self._index_paths = ({s: self._index_file(name, s, root) for s in SPLITS}
                             if name in _INDEX_SPLIT_NAMES else None)
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
    @property
    def processed_dir(self) -> str:
        return osp.join(self.root, self.name, "processed", pre_transform_key(self.pre_transform))

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

    def _split_indices(self, labels: torch.Tensor) -> dict[str, list[int]]:
        n = int(labels.numel())
        if self.name not in _INDEX_SPLIT_NAMES:
            self.split_source = f"stratified_kfold(n_splits={TU_NUM_FOLDS}, seed={self.split_seed})"
            return stratified_fold_split(labels, self.fold, TU_NUM_FOLDS, self.split_seed)
        self.split_source = "benchmark index files"
        out = {}
        for split in SPLITS:
            path = self._index_paths[split]
            _check_sha(path)
            folds = read_benchmark_index(path)
            if len(folds) != TU_NUM_FOLDS:
                raise ValueError(f"TU: {path} has {len(folds)} lines, expected {TU_NUM_FOLDS}")
            ids = folds[self.fold]
            if len(set(ids)) != len(ids) or min(ids) < 0 or max(ids) >= n:
                raise ValueError(f"TU: {path} line {self.fold} has repeated or out-of-range "
                                 f"graph ids (dataset has {n} graphs)")
            out[split] = ids
        if sum(len(v) for v in out.values()) != len(set().union(*map(set, out.values()))):
            raise ValueError(f"TU {self.name}: fold {self.fold} train/val/test overlap")
        return out

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.name}, {len(self)}, split={self.split!r}, "
                f"fold={self.fold})")
