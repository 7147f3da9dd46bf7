r"""``pcqm4m`` (PCQM4M-LSC, the KDD Cup 2021 version) and ``pcqm4mv2`` (PCQM4Mv2) of the OGB
Large-Scale Challenge (Hu et al., "OGB-LSC: A Large-Scale Challenge for Machine Learning on
Graphs", NeurIPS 2021 Datasets and Benchmarks): the HOMO-LUMO gap (eV) of 3.8 M / 3.7 M
molecules from their 2D graphs, read from OGB-LSC's published files.

**Files** (OGB-LSC's layout, as ``ogb.lsc.PCQM4MDataset(root=DATA_DIR)`` /
``PCQM4Mv2Dataset(root=DATA_DIR)`` unpack them; read in place, never downloaded: the archives
are large, see :data:`LSC_DATASETS` for their URLs):

* ``DATA_DIR/pcqm4m_kddcup2021/raw/data.csv.gz`` and ``DATA_DIR/pcqm4m_kddcup2021/split_dict.pt``
  (keys ``train``, ``valid``, ``test``);
* ``DATA_DIR/pcqm4m-v2/raw/data.csv.gz`` and ``DATA_DIR/pcqm4m-v2/split_dict.pt`` (keys
  ``train``, ``valid``, ``test-dev``, ``test-challenge``).

``data.csv.gz`` has the columns ``idx,smiles,homolumogap``, row ``idx`` = molecule ``idx``; the
test molecules' gap is empty (NaN). ``split_dict.pt`` maps each split to the row ids of its
molecules (a tensor or NumPy array); it is read with ``torch.load(weights_only=True)`` (NumPy
arrays allowed, nothing else), never with plain pickle.

**Splits.** ``train`` = the official ``train``, ``val`` = ``valid``, ``test`` = ``test``
(PCQM4M) or ``test-dev`` (PCQM4Mv2; ``data.options.test_split: test-challenge`` for the other).
The official test splits have no labels: such a split is **predict-only**
(``predict_only = True``): training and evaluation report no metric for it and log why, and
``graph-transformers predict`` gives its predictions. The papers report the ``valid`` MAE.

**Graphs** (OGB's ``smiles2graph`` featurization: RDKit's ``MolFromSmiles``, 9 atom and 3 bond
feature columns, every bond as two directed edges;
:func:`~graph_transformers.datasets.molecules.featurization.mol_to_graph` computes exactly OGB's
columns, ``tests/datasets/test_canonical.py`` and ``tests/datasets/test_lsc_molpcba.py`` check
it against
``ogb.utils.smiles2graph``): ``x`` ``LongTensor [N, 9]``, ``edge_index`` ``LongTensor [2, E]``,
``edge_attr`` ``LongTensor [E, 3]``, ``y`` ``FloatTensor [1, 1]`` (the gap in eV, NaN where
missing). A SMILES RDKit rejects is left out of its split, with a WARNING and its row in the
store's ``meta.json``.

**Storage.** Each official split is featurized in parallel worker processes
(``data.options.num_workers``, default: every core this process may use; chunks of
``data.options.chunk_size`` molecules), its encodings (the ``pre_transform``) computed per graph
in the workers, and written to a memory-mapped store
(:mod:`graph_transformers.data.ondisk`) under ``CACHE/canonical/<PCQM4M|PCQM4Mv2>/processed/
<pre_transform key>_<files tag>_v<format>/<official split>/``, checksummed. A run maps the files
instead of loading them: memory holds what the batches touch.

**Metric.** MAE, computed by OGB-LSC's ``PCQM4MEvaluator`` / ``PCQM4Mv2Evaluator``
(:class:`~graph_transformers.training.metrics.OGBLSCEvaluatorMAE`; its formula, the mean of
``|pred − true|``, where ``ogb.lsc`` cannot be imported).
"""
from __future__ import annotations

import csv
import gzip
import logging
import pickle
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ..._optional import require
from ...data.cache import DATA_ENV, DataNotFoundError, pre_transform_key, resolve_data_dir
from ...data.generated import PathLike, Transform, check_split
from ...data.ondisk import GraphStore, build_graph_store, store_problem
from ...data.parallel import default_workers
from ...data.registry import DatasetSpec
from ...data.split_rules import split_row_ids
from ...data.textfiles import parse_float_cell
from ...errors import DataError
from ...data.published import canonical_root, files_tag, looked
from .featurization import (
    ATOM_FEATURE_DIMS,
    BOND_FEATURE_DIMS,
    mol_to_graph,
    parse_smiles,
    smiles_to_graph,
)

__all__ = ["LSC_DATASETS", "LSCInfo", "PCQM4MLSC", "read_split_dict", "read_lsc_csv",
           "load_pcqm4m", "load_pcqm4mv2", "PCQM4M_SPEC", "PCQM4MV2_SPEC"]

log = logging.getLogger(__name__)

#: bumped when the featurization or the stored fields change (it is in the cache key)
_FORMAT = 1
#: OGB's feature ids fit in a byte (vocabularies of at most 119), local node ids in int16
_COMPACT = {"x": torch.uint8, "edge_attr": torch.uint8, "edge_index": torch.int16}


@dataclass(frozen=True)
class LSCInfo:
    """One OGB-LSC molecule set: its ``data.name``, title, folder under ``DATA_DIR``, official
    split keys, which of them are test splits (no labels), the OGB-LSC evaluator class, the
    cache folder and the official archive URLs."""

    name: str
    title: str
    folder: str
    split_keys: tuple[str, ...]
    test_splits: tuple[str, ...]
    evaluator: str
    cache_folder: str
    urls: tuple[str, ...]


#: the OGB-LSC molecule sets: ``data.name`` → :class:`LSCInfo`
LSC_DATASETS: dict[str, LSCInfo] = {
    "pcqm4m": LSCInfo(
        "pcqm4m", "PCQM4M-LSC", "pcqm4m_kddcup2021", ("train", "valid", "test"), ("test",),
        "PCQM4MEvaluator", "PCQM4M",
        ("https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m_kddcup2021.zip",
         "http://ogb-data.stanford.edu/data/lsc/pcqm4m_kddcup2021.zip")),
    "pcqm4mv2": LSCInfo(
        "pcqm4mv2", "PCQM4Mv2", "pcqm4m-v2", ("train", "valid", "test-dev", "test-challenge"),
        ("test-dev", "test-challenge"), "PCQM4Mv2Evaluator", "PCQM4Mv2",
        ("https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip",
         "http://ogb-data.stanford.edu/data/lsc/pcqm4m-v2.zip")),
}
#: the CSV's columns, as OGB-LSC writes them
_COLUMNS = ("idx", "smiles", "homolumogap")
_MISSING = {"", "nan", "na"}


def _locate(info: LSCInfo, data_dir: Path | None) -> tuple[Path, Path]:
    """``(data.csv.gz, split_dict.pt)`` of ``info`` in ``data_dir``.

    Raises:
        DataNotFoundError: no data directory, or a file missing; the message names the files,
            where they were looked for and the official URLs.
    """
    how = (f"unpack OGB-LSC's {info.urls[0]} (or {info.urls[1]}) into DATA_DIR, giving "
           f"DATA_DIR/{info.folder}/raw/data.csv.gz and DATA_DIR/{info.folder}/split_dict.pt "
           "(OGB-LSC's layout); nothing is downloaded automatically")
    if data_dir is None:
        raise DataNotFoundError(f"{info.title}: no data directory (pass --data-dir or set "
                                f"${DATA_ENV}); to get the files, {how}")
    folder = data_dir / info.folder
    files = (folder / "raw" / "data.csv.gz", folder / "split_dict.pt")
    missing = [str(p) for p in files if not p.is_file()]
    if missing:
        raise DataNotFoundError(f"{info.title}: {' and '.join(missing)} not found. Looked in: "
                                f"{looked([folder])}. To use {info.title}, {how}")
    return files


def _safe_globals() -> list:
    """What a ``split_dict.pt`` of NumPy arrays needs beyond ``weights_only``'s defaults: the
    array reconstructor, ``ndarray`` and the integer dtypes (nothing that runs code)."""
    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]
    dtypes = [type(np.dtype(t)) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8,
                                           np.uint16, np.uint32, np.uint64)]
    return [_reconstruct, np.ndarray, np.dtype, *dtypes]


def read_split_dict(path: PathLike, keys: tuple[str, ...], num_rows: int | None = None
                    ) -> dict[str, np.ndarray]:
    """The official split of an OGB-LSC set: ``{key: int64 array of row ids}`` read from its
    ``split_dict.pt`` with ``torch.load(weights_only=True)`` (tensors, NumPy integer arrays or
    lists of ints; never unpickled otherwise).

    Args:
        path: the ``split_dict.pt`` file.
        keys: the split keys it must have (``("train", "valid", "test")`` for PCQM4M).
        num_rows: the number of molecules (rows of ``data.csv.gz``): ids must lie below it.

    Raises:
        DataError: not a torch file of a dict, a key missing, ids that are not 1-D integers,
            negative, beyond ``num_rows``, repeated, or in two splits; the message names the
            file.
    """
    path = Path(path)
    try:
        with torch.serialization.safe_globals(_safe_globals()):
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile, ValueError,
            OSError) as err:
        text = str(err)  # torch names the first global it refused: "GLOBAL <name> was not ..."
        if "Unsupported global: GLOBAL " in text:
            unsafe = text.split("Unsupported global: GLOBAL ", 1)[1].split(" ", 1)[0]
            raise DataError(f"{path}: refused by torch.load(weights_only=True): it holds "
                            f"{unsafe}, not only tensors / integer arrays (OGB-LSC's "
                            "split_dict.pt is a dict of index tensors); it is not unpickled "
                            "otherwise") from None
        first = text.strip().splitlines()[0][:160] if text.strip() else type(err).__name__
        raise DataError(f"{path}: not a readable split_dict.pt (torch.load with "
                        f"weights_only=True: {first})") from None
    if not isinstance(obj, dict):
        raise DataError(f"{path}: holds a {type(obj).__name__}, not a dict of split indices")
    return split_row_ids(obj, keys, path, num_rows)


def read_lsc_csv(path: PathLike) -> tuple[list[str], np.ndarray]:
    """The molecules of an OGB-LSC ``data.csv.gz``: ``(smiles, gaps)``, row ``i`` = molecule
    ``idx = i``, ``gaps`` float64 ``[num_rows]`` (NaN where the cell is empty: the test
    molecules).

    Raises:
        DataError: a file that is not gzip-compressed CSV text, a header without the columns
            ``idx,smiles,homolumogap``, an ``idx`` that is not the row's position, or a gap
            that is not a number; the message names the file and the line.
    """
    path = Path(path)
    smiles: list[str] = []
    gaps: list[float] = []
    try:
        with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader, [])]
            if any(c not in header for c in _COLUMNS):
                raise DataError(f"{path}: header {header[:6]} lacks the columns "
                                f"{','.join(_COLUMNS)} of OGB-LSC's data.csv.gz")
            i_idx, i_smi, i_gap = (header.index(c) for c in _COLUMNS)
            width = max(i_idx, i_smi, i_gap) + 1
            for row_no, rec in enumerate(reader):
                line = row_no + 2
                if len(rec) < width:
                    raise DataError(f"{path}: line {line} has {len(rec)} cells, the header "
                                    f"{len(header)}")
                if rec[i_idx].strip() != str(row_no):
                    raise DataError(f"{path}: line {line}: idx {rec[i_idx]!r}, expected "
                                    f"{row_no} (split_dict.pt indexes the rows in order)")
                smiles.append(rec[i_smi].strip())
                gaps.append(parse_float_cell(rec[i_gap], f"{path}: line {line}: homolumogap",
                                             missing=_MISSING,
                                             hint="an empty cell is a missing label"))
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise DataError(f"{path}: cannot read it: not a gzip file, or a truncated one ({err})") \
            from None
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except csv.Error as err:
        raise DataError(f"{path}: not a readable CSV file ({err})") from None
    return smiles, np.asarray(gaps, dtype=np.float64)


def _featurize_chunk(job: list[tuple[int, str, float]]
                     ) -> tuple[list[Data], list[int], list[dict[str, Any]]]:
    """One chunk of molecules → graphs (``y`` ``[1, 1]``), their row ids, and the rows RDKit
    rejects (a worker's job in :func:`~graph_transformers.data.ondisk.build_graph_store`)."""
    graphs, ids, skipped = [], [], []
    for row, smiles, gap in job:
        mol, reason = parse_smiles(smiles)
        if mol is None:
            skipped.append({"id": int(row), "smiles": smiles, "reason": reason})
            continue
        graph = mol_to_graph(mol)
        graph.y = torch.tensor([[gap]], dtype=torch.float32)
        graphs.append(graph)
        ids.append(int(row))
    return graphs, ids, skipped


def _build(info: LSCInfo, folder: Path, csv_path: Path, split_path: Path, official: str,
           pre_transform: Transform, num_workers: int, chunk_size: int) -> None:
    """Featurizes the molecules of the official split ``official`` of ``info`` into the store
    ``folder``."""
    require("rdkit", f"building the {info.title} graphs")  # before reading 3.7M rows
    log.info("%s %s: building the graph store %s from %s (%d worker processes)",
             info.title, official, folder, csv_path, num_workers)
    smiles, gaps = read_lsc_csv(csv_path)
    rows = read_split_dict(split_path, info.split_keys, len(smiles))[official]
    if official not in info.test_splits:
        missing = int(np.isnan(gaps[rows]).sum())
        if missing:
            raise DataError(f"{csv_path}: {missing} of the {len(rows)} molecules of the "
                            f"labelled split {official!r} ({split_path}) have no homolumogap")
    jobs = [[(int(r), smiles[r], float(gaps[r])) for r in rows[a:a + chunk_size]]
            for a in range(0, len(rows), chunk_size)]
    del smiles
    build_graph_store(folder, jobs, _featurize_chunk, pre_transform=pre_transform,
                      compact=_COMPACT, num_workers=num_workers,
                      info={"dataset": info.title, "split": official,
                            "files": [str(csv_path), str(split_path)],
                            "featurization": "OGB smiles2graph (9 atom / 3 bond features)",
                            "pre_transform": repr(pre_transform)},
                      what=f"{info.title} {official}", total=len(rows))


class PCQM4MLSC(GraphStore):
    r"""One split of PCQM4M-LSC or PCQM4Mv2 read from OGB-LSC's published files (module
    docstring): the molecules of the official split, featurized like OGB's ``smiles2graph``,
    with ``pre_transform`` (the encodings) computed per graph when the split is first built,
    in a memory-mapped, checksummed store (:class:`~graph_transformers.data.ondisk.GraphStore`).

    Each graph: ``x`` ``LongTensor [N, 9]``, ``edge_index`` ``LongTensor [2, E]``,
    ``edge_attr`` ``LongTensor [E, 3]``, ``y`` ``FloatTensor [1, 1]`` (eV; NaN in the test
    splits), plus the encodings.

    Args:
        root: the processing folder (default ``canonical_root()``); the store goes to
            ``root/<PCQM4M|PCQM4Mv2>/processed/<key>/<official split>/``.
        name (str): ``"pcqm4m"`` or ``"pcqm4mv2"`` (:data:`LSC_DATASETS`).
        split (str): ``"train"``, ``"val"`` (the official ``valid``) or ``"test"`` (PCQM4M's
            ``test``, PCQM4Mv2's ``test_split``).
        transform, pre_transform, force_reload: as in PyG.
        data_dir: where OGB-LSC's folder is (default ``$GRAPH_TRANSFORMERS_DATA``).
        test_split (str, optional): PCQM4Mv2's test split: ``"test-dev"`` (default) or
            ``"test-challenge"``.
        num_workers (int, optional): processes featurizing a split being built (default:
            every core this process may use).
        chunk_size (int): molecules per worker job.

    Attributes:
        official_split (str): the split's key in ``split_dict.pt``.
        predict_only (bool): the split has no labels (the official test splits).
        predict_only_reason (str): why, for the log and ``metrics.json``.
        provenance (dict): ``{split: "exact"}``.
        canonical_info (dict): files, split and evaluator.
        ogb_evaluator (str): ``"pcqm4m"`` / ``"pcqm4mv2"``: the run's MAE is computed by
            OGB-LSC's evaluator.
        source_ids (Tensor): each graph's row (``idx``) in ``data.csv.gz``.

    Raises:
        ValueError: an unknown name, split, test split, ``num_workers`` or ``chunk_size``.
        DataNotFoundError: the files are not in the data directory.
        DataError: an unreadable ``data.csv.gz`` / ``split_dict.pt`` (:func:`read_lsc_csv`,
            :func:`read_split_dict`), a molecule of ``train`` or ``valid`` without a gap, or
            graphs that fail the store's checks.
        MissingDependencyError: a split to build and RDKit is not installed (the ``[chem]``
            extra).
    """

    def __init__(
        self, root: PathLike | None = None, name: str = "pcqm4mv2", split: str = "train",
        transform: Transform = None, pre_transform: Transform = None, force_reload: bool = False,
        *, data_dir: PathLike | None = None, test_split: str | None = None,
        num_workers: int | None = None, chunk_size: int = 10_000,
    ) -> None:
        if name not in LSC_DATASETS:
            raise ValueError(f"unknown OGB-LSC molecule set {name!r}; known: "
                             f"{sorted(LSC_DATASETS)}")
        info = self.info = LSC_DATASETS[name]
        check_split(info.title, split)
        test = test_split if test_split is not None else info.test_splits[0]
        if test not in info.test_splits:
            raise ValueError(f"{info.title}: test_split must be one of {info.test_splits}, got "
                             f"{test_split!r}")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"{info.title}: chunk_size must be a positive integer, got "
                             f"{chunk_size!r}")
        if num_workers is not None and (isinstance(num_workers, bool) or
                                        not isinstance(num_workers, int) or num_workers < 1):
            raise ValueError(f"{info.title}: num_workers must be a positive integer, got "
                             f"{num_workers!r}")
        official = {"train": "train", "val": "valid", "test": test}[split]
        csv_path, split_path = _locate(info, resolve_data_dir(data_dir))
        base = Path(root).expanduser() if root is not None else canonical_root()
        key = f"{pre_transform_key(pre_transform)}_{files_tag([csv_path, split_path])}_v{_FORMAT}"
        folder = base / info.cache_folder / "processed" / key / official
        why = store_problem(folder)
        if force_reload or why is not None:
            if why not in (None, "missing"):
                log.warning("dataset cache %s: %s; rebuilding it", folder, why)
            _build(info, folder, csv_path, split_path, official, pre_transform,
                   num_workers or default_workers(), chunk_size)
        super().__init__(folder, transform)
        self.name, self.split, self.official_split = name, split, official
        self.pre_transform = pre_transform
        y = self._data.y if "y" in self._keys else torch.empty(0)
        self.predict_only = bool(len(self)) and bool(torch.isnan(y).all())
        self.predict_only_reason = (
            f"{info.title} {official}: the official files have no labels for it (homolumogap "
            "empty); predictions only (graph-transformers predict)") if self.predict_only else ""
        skipped = int(self.meta.get("num_skipped", 0))
        if skipped:
            log.warning("%s %s: %d of the split's molecules are left out, RDKit cannot parse "
                        "them (rows and reasons in %s)", info.title, official, skipped,
                        folder / "meta.json")
        self.provenance: dict[str, str] = {split: "exact"}
        self.ogb_evaluator = name
        self.canonical_info: dict[str, Any] = {
            "loader": f"{__name__}.PCQM4MLSC({name!r})",
            "files": str(csv_path.parent.parent),
            "split": f"OGB-LSC's official split (split_dict.pt: train/val/test = train/valid/"
                     f"{test})",
            "evaluator": f"ogb.lsc.{info.evaluator}",
            "num_skipped": skipped,
        }

    def __repr__(self) -> str:
        return f"{self.info.title}({len(self)}, split={self.split!r} = {self.official_split})"


def _load(name: str, root: PathLike, split: str, transform: Transform, pre_transform: Transform,
          force_reload: bool, data_dir: PathLike | None, options: dict[str, Any]) -> PCQM4MLSC:
    return PCQM4MLSC(canonical_root(root), name, split, transform, pre_transform, force_reload,
                     data_dir=data_dir, **options)


def load_pcqm4m(
    root: PathLike, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *,
    data_dir: PathLike | None = None, **options: Any,
) -> PCQM4MLSC:
    """One split of ``data.name: pcqm4m`` (PCQM4M-LSC), processed under
    ``root/canonical/PCQM4M/``; ``options`` (``data.options``: ``num_workers``, ``chunk_size``)
    go to :class:`PCQM4MLSC`, which refuses a key it does not take (``TypeError``).

    Raises:
        DataNotFoundError, DataError, ValueError: as :class:`PCQM4MLSC`.
    """
    return _load("pcqm4m", root, split, transform, pre_transform, force_reload, data_dir,
                 options)


def load_pcqm4mv2(
    root: PathLike, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *,
    data_dir: PathLike | None = None, **options: Any,
) -> PCQM4MLSC:
    """One split of ``data.name: pcqm4mv2`` (PCQM4Mv2), processed under
    ``root/canonical/PCQM4Mv2/``; ``options`` (``data.options``: ``test_split``,
    ``num_workers``, ``chunk_size``) go to :class:`PCQM4MLSC`.

    Raises:
        DataNotFoundError, DataError, ValueError: as :class:`PCQM4MLSC`.
    """
    return _load("pcqm4mv2", root, split, transform, pre_transform, force_reload, data_dir,
                 options)


_LSC = dict(node_types=tuple(ATOM_FEATURE_DIMS), edge_types=tuple(BOND_FEATURE_DIMS),
            featurize=smiles_to_graph, targets=("homolumogap",), source="canonical",
            params=("data_dir", "test_split", "num_workers", "chunk_size"))

#: ``data.name: pcqm4m`` (PCQM4M-LSC, KDD Cup 2021; its test split is predict-only)
PCQM4M_SPEC = DatasetSpec("pcqm4m", "graph", "regression", 1, "mae", load_pcqm4m, **_LSC)
#: ``data.name: pcqm4mv2`` (PCQM4Mv2; its test split, test-dev, is predict-only)
PCQM4MV2_SPEC = DatasetSpec("pcqm4mv2", "graph", "regression", 1, "mae", load_pcqm4mv2, **_LSC)
