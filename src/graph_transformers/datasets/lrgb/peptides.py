r"""``peptides-func`` and ``peptides-struct`` of the Long Range Graph Benchmark (Dwivedi et al.,
"Long Range Graph Benchmark", NeurIPS 2022 Datasets and Benchmarks, §3.2): 15,535 peptides from
SATPdb as molecular graphs (one node per heavy atom), read from LRGB's published files in
``DATA_DIR`` (:mod:`.lrgb_files`; never downloaded, no generator: ``data.source: generated`` is
a config error).

**Files** (LRGB's layout, as ``PeptidesFunctionalDataset(root=DATA_DIR)`` /
``PeptidesStructuralDataset(root=DATA_DIR)`` of LRGB / GraphGPS keep them):

* Peptides-func: ``DATA_DIR/peptides-functional/raw/peptide_multi_class_dataset.csv.gz``, columns
  ``smiles`` and ``labels`` (one cell, a Python list of 10 labels in {0, 1}, in the order of
  :data:`PEPTIDES_FUNC_TASKS`; other columns such as ``peptide_seq`` are not read), and
  ``DATA_DIR/peptides-functional/splits_random_stratified_peptide.pickle``;
* Peptides-struct: ``DATA_DIR/peptides-structural/raw/peptide_structure_normalized_dataset.csv.gz``
  (columns ``smiles`` and the 11 targets of :data:`PEPTIDES_STRUCT_TARGETS`, standardized in the
  file to mean 0 and sample s.d. 1 over all rows: checked, as GraphGPS's loader asserts) or
  LRGB's first release ``peptide_structure_dataset.csv.gz`` (raw targets: standardized here over
  all rows, ``(y − mean) / s.d.`` with the sample s.d., as LRGB's loader does with pandas), and
  ``DATA_DIR/peptides-structural/splits_random_stratified_peptide_structure.pickle``.

A split file maps ``train`` / ``val`` / ``test`` to the rows of the data file (random stratified,
70 / 15 / 15 %); it is read with :func:`~.lrgb_files.read_lrgb_split`
(:func:`~graph_transformers.data.safe_pickle.load_safe_pickle`), the pickle in the data folder
or in ``raw/``. A file that differs from LRGB's release (its MD5) is used with one WARNING.

**Graphs** (LRGB's featurization, OGB's ``ogb.utils.smiles2graph``, called as LRGB calls it:
needs the ``[ogb]`` and ``[chem]`` extras): ``x`` ``LongTensor [N, 9]``, ``edge_index``
``LongTensor [2, E]`` (every bond both ways), ``edge_attr`` ``LongTensor [E, 3]``, and ``y``
``FloatTensor [1, 10]`` (func: 0 / 1 per class) or ``[1, 11]`` (struct: standardized targets).
A SMILES that RDKit rejects is left out of its split with a WARNING (LRGB's files have none).

**Metrics** as LRGB reports them: Peptides-func, average precision (``ap``) per class over the
split, averaged over the 10 classes (OGB's rules, classes without both labels skipped:
:class:`~graph_transformers.training.metrics.MultitaskAP`), binary cross-entropy loss;
Peptides-struct, MAE over the 11 standardized targets (``mae``: the mean of ``|pred − y|``
over all entries, equal to the mean of the per-target MAEs), L1 loss. The best checkpoint is the
one with the best validation value of that metric.

**Cache.** All three splits are built at once into
``CACHE/canonical/<peptides-functional|peptides-structural>/processed/<data file sha256>_<split
file sha256>_<pre_transform key>_v<format>/{train,val,test}.pt`` + ``meta.json`` (checksummed;
another file or other encodings give another folder).
"""
from __future__ import annotations

import ast
import contextlib
import csv
import gzip
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ..._optional import require
from ...data.cache import pre_transform_key, resolve_data_dir, sha256_of, write_cache_json
from ...data.generated import SPLITS, PathLike, Transform, check_split
from ...data.progress import progress
from ...data.published import canonical_root
from ...data.registry import DatasetSpec
from ...data.textfiles import (check_header, check_text_head, csv_records, parse_float_cell,
                               read_head)
from ...errors import DataError
from .lrgb_dataset import LRGBDataset, lrgb_loader
from .lrgb_files import LRGB_FILES, check_release, locate_lrgb, read_lrgb_split

__all__ = ["OGB_ATOM_FEATURE_DIMS", "OGB_BOND_FEATURE_DIMS", "PEPTIDES", "PEPTIDES_FUNC_SPEC",
           "PEPTIDES_FUNC_TASKS", "PEPTIDES_STRUCT_SPEC", "PEPTIDES_STRUCT_TARGETS", "Peptides",
           "PeptidesInfo", "load_peptides_func", "load_peptides_struct", "peptide_graph",
           "read_peptides_csv"]

log = logging.getLogger(__name__)

#: bumped when the featurization or the stored fields change (it is in the cache key)
_FORMAT = 1
#: OGB's vocabularies of the 9 atom / 3 bond feature columns
#: (``ogb.utils.features.get_atom_feature_dims()`` / ``get_bond_feature_dims()``; the tests check
#: them against OGB's)
OGB_ATOM_FEATURE_DIMS: tuple[int, ...] = (119, 5, 12, 12, 10, 6, 6, 2, 2)
OGB_BOND_FEATURE_DIMS: tuple[int, ...] = (5, 6, 2)

#: Peptides-func's 10 functional classes, in the order of the ``labels`` lists (LRGB's loader)
PEPTIDES_FUNC_TASKS: tuple[str, ...] = (
    "antifungal", "cell_cell_communication", "anticancer", "drug_delivery_vehicle",
    "antimicrobial", "antiviral", "antihypertensive", "antibacterial", "antiparasitic", "toxic")
#: Peptides-struct's 11 targets (columns of its data file), in LRGB's order: principal moments
#: of inertia by mass and by valence, lengths along the 3 main axes (each sorted), RDKit's
#: spherocity index and plane of best fit
PEPTIDES_STRUCT_TARGETS: tuple[str, ...] = (
    "Inertia_mass_a", "Inertia_mass_b", "Inertia_mass_c", "Inertia_valence_a",
    "Inertia_valence_b", "Inertia_valence_c", "length_a", "length_b", "length_c", "Spherocity",
    "Plane_best_fit")
#: the data file of LRGB's first release, whose raw targets are standardized here
_RAW_TARGETS = LRGB_FILES["peptides-struct-csv-raw"]
#: a standardized column's mean and s.d. may differ from 0 and 1 by this much (text rounding)
_STANDARDIZED_TOL = 1e-6


@dataclass(frozen=True)
class PeptidesInfo:
    """One Peptides dataset: its ``data.name``, title, folder under ``DATA_DIR``, data files
    (keys of :data:`~.lrgb_files.LRGB_FILES`, the first found is read), split file, the names of
    its outputs, and how the file holds them: one ``label_column`` of lists (func) or one
    column per target (struct, ``label_column=None``)."""

    name: str
    title: str
    folder: str
    data_files: tuple[str, ...]
    split_file: str
    targets: tuple[str, ...]
    label_column: str | None


#: the Peptides datasets: ``data.name`` → :class:`PeptidesInfo`
PEPTIDES: dict[str, PeptidesInfo] = {
    "peptides-func": PeptidesInfo(
        "peptides-func", "Peptides-func", "peptides-functional", ("peptides-func-csv",),
        "peptides-func-split", PEPTIDES_FUNC_TASKS, "labels"),
    "peptides-struct": PeptidesInfo(
        "peptides-struct", "Peptides-struct", "peptides-structural",
        ("peptides-struct-csv", "peptides-struct-csv-raw"), "peptides-struct-split",
        PEPTIDES_STRUCT_TARGETS, None),
}
_SMILES = "smiles"


# ------------------------------------------------------------------------------- the data file
@contextlib.contextmanager
def _wide_cells(limit: int = 1 << 28) -> Iterator[None]:
    """Lets the csv module read cells of up to ``limit`` characters while the context lasts
    (LRGB's files may carry long cells besides the ones read)."""
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, limit))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _parse_labels(text: str, path: Path, line: int, num: int) -> list[float]:
    """A ``labels`` cell (``"[0, 1, 0, ...]"``, a Python list literal, as LRGB writes it and its
    loader evaluates it) as ``num`` floats in {0, 1}.

    Raises:
        DataError: not a list literal, a list of another length, or a label not 0 / 1.
    """
    shown = text.strip()[:60]
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, (list, tuple)):
        raise DataError(f"{path} line {line}: labels {shown!r} is not a list of {num} labels "
                        "in {0, 1} (LRGB writes e.g. [0, 1, 0, 0, 0, 0, 0, 0, 0, 0])")
    if len(value) != num:
        raise DataError(f"{path} line {line}: labels has {len(value)} entries, expected {num} "
                        f"(one per class: {', '.join(PEPTIDES_FUNC_TASKS[:3])}, ...)")
    for k, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v not in (0, 1):
            raise DataError(f"{path} line {line}: label {k} ({PEPTIDES_FUNC_TASKS[k]}) is "
                            f"{v!r}, not 0 or 1")
    return [float(v) for v in value]


def _columns(path: Path, header: list[str], info: PeptidesInfo) -> tuple[int, list[int]]:
    """Positions of the SMILES column and of the label column(s) in ``header``.

    Raises:
        DataError: a column missing, or named twice.
    """
    wanted = [_SMILES, *([info.label_column] if info.label_column else info.targets)]
    missing = [c for c in wanted if c not in header]
    if missing:
        raise DataError(f"{path}: header {header[:8]} lacks the column(s) {', '.join(missing)} "
                        f"of LRGB's {info.title} file")
    check_header(path, header, wanted)
    return header.index(_SMILES), [header.index(c) for c in wanted[1:]]


def read_peptides_csv(path: PathLike, info: PeptidesInfo) -> tuple[list[str], np.ndarray]:
    """The rows of a Peptides data file (``.csv.gz`` as LRGB publishes it, or ``.csv``):
    ``(smiles, labels)``, row ``i`` of the file (the header excluded) = graph ``i`` of the split
    file, ``labels`` float64 ``[num_rows, len(info.targets)]`` as written in the file.

    Args:
        path: the file.
        info: which dataset (:data:`PEPTIDES`): Peptides-func reads the ``labels`` lists,
            Peptides-struct one column per target.

    Raises:
        DataError: not (gzip-compressed) CSV text, a column missing or named twice, a row with
            fewer cells than the header, a ``labels`` cell that is not a list of 10 labels in
            {0, 1}, a target that is not a finite number, or no row at all; one line naming
            the file and the line.
    """
    path = Path(path)
    gz = path.name.lower().endswith(".gz")
    check_text_head(path, read_head(path, gzip_ok=True), gzip_ok=True)
    opener = gzip.open(path, "rt", encoding="utf-8", newline="") if gz else \
        open(path, encoding="utf-8", newline="")
    smiles: list[str] = []
    labels: list[list[float]] = []
    with _wide_cells(), opener as f:
        records = csv_records(path, f)
        first = next(records, None)
        if first is None:
            raise DataError(f"{path}: empty file (expected a CSV header line)")
        header = [h.strip() for h in first[1]]
        i_smi, i_labels = _columns(path, header, info)
        width = max(i_smi, *i_labels) + 1
        for line, rec in records:
            if not rec or all(not c.strip() for c in rec):
                continue
            if len(rec) < width:
                raise DataError(f"{path} line {line}: {len(rec)} cells, the header has "
                                f"{len(header)}")
            smiles.append(rec[i_smi].strip())
            if info.label_column:
                labels.append(_parse_labels(rec[i_labels[0]], path, line, len(info.targets)))
            else:
                labels.append([parse_float_cell(rec[j], f"{path} line {line}: {c}",
                                                hint="LRGB's targets are all present")
                               for j, c in zip(i_labels, info.targets)])
    if not smiles:
        raise DataError(f"{path}: no data row below the header")
    return smiles, np.asarray(labels, dtype=np.float64).reshape(len(smiles), len(info.targets))


def standardize_over_rows(y: np.ndarray, path: Path, names: tuple[str, ...]
                          ) -> tuple[np.ndarray, dict[str, list[float]]]:
    """LRGB's standardization of the raw Peptides-struct targets: per column,
    ``(y − mean) / s.d.`` over all rows of the file, with the sample s.d. (``ddof = 1``, pandas'
    ``std``).

    Returns:
        ``(standardized y, {"mean": [...], "std": [...]})``.

    Raises:
        DataError: fewer than 2 rows, or a column without spread.
    """
    if y.shape[0] < 2:
        raise DataError(f"{path}: {y.shape[0]} row(s): the targets cannot be standardized")
    mean, std = y.mean(axis=0), y.std(axis=0, ddof=1)
    flat = [n for n, s in zip(names, std) if not s > 0]
    if flat:
        raise DataError(f"{path}: target {flat[0]} has no spread: it cannot be standardized")
    return (y - mean) / std, {"mean": mean.tolist(), "std": std.tolist()}


def check_standardized(y: np.ndarray, path: Path, names: tuple[str, ...]) -> None:
    """Checks that every column of ``y`` has mean 0 and sample s.d. 1 (within
    :data:`_STANDARDIZED_TOL`), as LRGB's ``peptide_structure_normalized_dataset.csv.gz`` has
    (GraphGPS's loader asserts the same).

    Raises:
        DataError: naming the first column that is not standardized.
    """
    mean = y.mean(axis=0)
    std = y.std(axis=0, ddof=1) if y.shape[0] > 1 else np.full(y.shape[1], np.nan)
    for n, m, s in zip(names, mean, std):
        if not (abs(m) <= _STANDARDIZED_TOL and abs(s - 1.0) <= _STANDARDIZED_TOL):
            raise DataError(
                f"{path}: target {n} has mean {m:.6g} and s.d. {s:.6g} over the file's "
                f"{y.shape[0]} rows, but LRGB's standardized file has mean 0 and s.d. 1; a "
                f"file of raw targets is LRGB's {_RAW_TARGETS.name} (standardized when read)")


# ------------------------------------------------------------------------------------ graphs
def peptide_graph(smiles: str) -> Data:
    """A peptide's SMILES as LRGB's graph: OGB's ``ogb.utils.smiles2graph`` (RDKit; 9 atom and
    3 bond feature columns, every bond as two directed edges), as ``Data`` with ``x``
    ``LongTensor [N, 9]``, ``edge_index`` ``LongTensor [2, E]``, ``edge_attr``
    ``LongTensor [E, 3]`` and ``num_nodes``.

    Raises:
        ValueError: an empty SMILES, or one RDKit cannot parse.
        MissingDependencyError: OGB or RDKit is not installed (``[ogb]``, ``[chem]``).
    """
    require("rdkit", "the Peptides graphs (OGB's smiles2graph on RDKit)")
    require("ogb.utils", "the Peptides graphs (LRGB's featurization: OGB's smiles2graph)")
    from ogb.utils import smiles2graph
    from rdkit import rdBase

    text = str(smiles).strip()
    if not text:
        raise ValueError("an empty SMILES")
    try:
        with rdBase.BlockLogs():
            graph = smiles2graph(text)
    except Exception as err:  # noqa: BLE001 - OGB fails with an AttributeError on RDKit's None
        raise ValueError(f"SMILES {text[:60]!r}: RDKit cannot parse it "
                         f"({type(err).__name__})") from None
    return Data(x=torch.from_numpy(graph["node_feat"]).long(),
                edge_index=torch.from_numpy(graph["edge_index"]).long(),
                edge_attr=torch.from_numpy(graph["edge_feat"]).long(),
                num_nodes=int(graph["num_nodes"]))


class Peptides(LRGBDataset):
    r"""One split of Peptides-func or Peptides-struct read from LRGB's published files (module
    docstring): the rows of the split file, featurized by OGB's ``smiles2graph``, with
    ``pre_transform`` (the encodings) computed when the cache is built.

    Each graph: ``x`` ``LongTensor [N, 9]``, ``edge_index`` ``LongTensor [2, E]``,
    ``edge_attr`` ``LongTensor [E, 3]``, ``y`` ``FloatTensor [1, 10]`` (func) or ``[1, 11]``
    (struct, standardized), plus the encodings.

    Args:
        root: the processing folder (default ``canonical_root()``); the cache goes to
            ``root/<peptides-functional|peptides-structural>/processed/<key>/``.
        name (str): ``"peptides-func"`` or ``"peptides-struct"`` (:data:`PEPTIDES`).
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        transform, pre_transform, force_reload: as in PyG.
        data_dir: where LRGB's folders are (default ``$GRAPH_TRANSFORMERS_DATA``).

    Attributes:
        info (:class:`PeptidesInfo`), split (str).
        source_ids (Tensor): each graph's row in the data file.
        skipped (list[dict]): this split's rows RDKit rejected (``row``, ``smiles``, ``reason``).
        provenance (dict): ``{split: "exact"}``.
        canonical_info (dict): loader, files, split, whether they are LRGB's release, the
            standardization of the targets.

    Raises:
        ValueError: an unknown name or split.
        DataNotFoundError: the files are not in the data directory (one line: the expected
            paths and LRGB's URLs).
        DataError: an unreadable data file or split file (:func:`read_peptides_csv`,
            :func:`~.lrgb_files.read_lrgb_split`), Peptides-struct targets that are not
            standardized in the standardized file, or a split left without graphs.
        MissingDependencyError: a cache to build and OGB or RDKit is not installed.
    """

    def __init__(self, root: PathLike | None = None, name: str = "peptides-func",
                 split: str = "train", transform: Transform = None,
                 pre_transform: Transform = None, force_reload: bool = False, *,
                 data_dir: PathLike | None = None) -> None:
        if name not in PEPTIDES:
            raise ValueError(f"unknown Peptides dataset {name!r}; known: {sorted(PEPTIDES)}")
        info = self.info = PEPTIDES[name]
        check_split(info.title, split)
        self.split, self.title = split, info.title
        slots = [[LRGB_FILES[k] for k in info.data_files], [LRGB_FILES[info.split_file]]]
        (self.data_file, self.csv_path), (self.split_file, self.split_path) = locate_lrgb(
            info.title, slots, resolve_data_dir(data_dir))
        self._key = "_".join((sha256_of(self.csv_path)[:16], sha256_of(self.split_path)[:8],
                              pre_transform_key(pre_transform), f"v{_FORMAT}"))
        base = Path(root).expanduser() if root is not None else canonical_root()
        super().__init__(str(base / info.folder), transform, pre_transform,
                         force_reload=force_reload)
        self.load(self.processed_paths[SPLITS.index(split)])  # verified, rebuilt if damaged
        meta = json.loads(Path(self.processed_paths[-1]).read_text())
        self.source_ids = torch.tensor(meta["splits"][split], dtype=torch.long)
        self.skipped: list[dict[str, Any]] = [s for s in meta["skipped"] if s["split"] == split]
        if self.skipped:
            log.warning("%s %s: %d of the split's rows are left out, RDKit cannot parse their "
                        "SMILES (rows %s; details in %s)", info.title, split, len(self.skipped),
                        [s["row"] for s in self.skipped][:20], self.processed_paths[-1])
        self.provenance: dict[str, str] = {split: "exact"}
        self.canonical_info: dict[str, Any] = {
            "loader": f"{__name__}.Peptides({name!r})",
            "files": [str(self.csv_path), str(self.split_path)],
            "split": f"LRGB's {self.split_file.name} ({split})",
            "lrgb_release": meta["lrgb_release"],
            "targets": meta["targets"],
            "num_skipped": len(self.skipped),
        }

    @property
    def processed_file_names(self) -> list[str]:
        return [f"{s}.pt" for s in SPLITS] + ["meta.json"]

    def _labels(self) -> tuple[list[str], np.ndarray, str]:
        """The data file's SMILES, its labels as the graphs get them (Peptides-struct's raw
        targets standardized) and how the targets were read, for ``meta.json``."""
        smiles, y = read_peptides_csv(self.csv_path, self.info)
        if self.info.label_column:
            return smiles, y, "binary labels, as in the file"
        if self.data_file.name == _RAW_TARGETS.name:
            y, stats = standardize_over_rows(y, self.csv_path, self.info.targets)
            log.info("%s: %s has LRGB's raw targets; standardized over its %d rows (mean %s, "
                     "s.d. %s)", self.info.title, self.csv_path.name, len(smiles),
                     np.round(stats["mean"], 4).tolist(), np.round(stats["std"], 4).tolist())
            return smiles, y, f"standardized here over all rows (LRGB's loader): {stats}"
        check_standardized(y, self.csv_path, self.info.targets)
        return smiles, y, "standardized in the file (checked: mean 0, s.d. 1)"

    def process(self) -> None:
        """Reads the data and split files, featurizes each split's rows, applies
        ``pre_transform`` and saves the three splits and ``meta.json``."""
        require("rdkit", f"building the {self.info.title} graphs")
        require("ogb.utils", f"building the {self.info.title} graphs (OGB's smiles2graph)")
        smiles, y, how = self._labels()
        rows = read_lrgb_split(self.split_path, len(smiles))
        release = all([check_release(self.info.title, self.data_file, self.csv_path),
                       check_release(self.info.title, self.split_file, self.split_path)])
        kept: dict[str, list[int]] = {}
        skipped: list[dict[str, Any]] = []
        log.info("%s: building the graphs of %d rows (%s)", self.info.title,
                 sum(len(r) for r in rows.values()), self.csv_path)
        for i, split in enumerate(SPLITS):
            graphs, kept[split] = [], []
            for row in progress(rows[split].tolist(), f"{self.info.title} {split}: graphs",
                                unit="molecule"):
                try:
                    graph = peptide_graph(smiles[row])
                except ValueError as err:
                    skipped.append({"row": row, "split": split, "smiles": smiles[row][:200],
                                    "reason": str(err)})
                    continue
                graph.y = torch.from_numpy(y[row]).to(torch.float32).view(1, -1)
                graphs.append(graph if self.pre_transform is None else self.pre_transform(graph))
                kept[split].append(row)
            if not graphs:
                listed = len(rows[split])
                raise DataError(f"{self.split_path}: split {split!r} has no graph ("
                                + (f"its {listed} rows are all skipped)" if listed else
                                   "it lists no row)"))
            self.save(graphs, self.processed_paths[i])
        write_cache_json(self.processed_paths[-1], {
            "format": _FORMAT, "dataset": self.info.title, "num_rows": len(smiles),
            "files": [str(self.csv_path), str(self.split_path)], "lrgb_release": release,
            "targets": how, "splits": kept, "skipped": skipped,
            "pre_transform": repr(self.pre_transform)})


#: the loader of ``data.name: peptides-func``
load_peptides_func = lrgb_loader(Peptides, "peptides-func", "peptides-func")
#: the loader of ``data.name: peptides-struct``
load_peptides_struct = lrgb_loader(Peptides, "peptides-struct", "peptides-struct")


_COMMON = dict(node_types=OGB_ATOM_FEATURE_DIMS, edge_types=OGB_BOND_FEATURE_DIMS,
               featurize=peptide_graph, source="canonical", params=("data_dir",))

#: ``data.name: peptides-func`` (LRGB; 10 binary classes, AP)
PEPTIDES_FUNC_SPEC = DatasetSpec("peptides-func", "graph", "binary", len(PEPTIDES_FUNC_TASKS),
                                 "ap", load_peptides_func, targets=PEPTIDES_FUNC_TASKS,
                                 **_COMMON)
#: ``data.name: peptides-struct`` (LRGB; 11 standardized regression targets, MAE, L1 loss)
PEPTIDES_STRUCT_SPEC = DatasetSpec("peptides-struct", "graph", "regression",
                                   len(PEPTIDES_STRUCT_TARGETS), "mae", load_peptides_struct,
                                   targets=PEPTIDES_STRUCT_TARGETS, **_COMMON)
