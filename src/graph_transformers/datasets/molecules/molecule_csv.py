"""A user's molecule CSV as a dataset (``data.path``: :class:`MoleculeCSV`, split by scaffold
or by ``data.split``), its loader and the spec read off the config and the file's header
(:func:`molecule_csv_spec`); the MoleculeNet benchmarks subclass it
(:mod:`graph_transformers.datasets.molecules.moleculenet`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ..._optional import require
from ...data.cache import (DataNotFoundError, FileBackedDataset, pre_transform_key,
                           resolve_cache_dir, sha256_of, write_cache_json)
from ...data.generated import PathLike, Transform
from ...data.progress import progress
from ...data.registry import DatasetSpec
from ...data.split_rules import (DEFAULT_FRACTIONS, check_index_sets, file_split,
                                 parse_split_rule, random_split, read_split_file, rule_record)
from ...data.textfiles import csv_records
from ...errors import DataError
from .csv_reading import (check_csv_arguments, format_lines, format_skipped, label_widths,
                          open_text, parse_labels, read_split_column, reading,
                          target_columns_of, task_names_of)
from .featurization import OGB_MOL_TYPES, mol_to_graph, parse_smiles
from .scaffold import check_frac, murcko_scaffold, split_from_scaffolds

__all__ = ["MOLECULE_CSV_PARAMS", "MoleculeCSV", "csv_task", "load_molecule_csv",
           "molecule_csv_spec"]

log = logging.getLogger(__name__)

_FORMAT_VERSION = 3  # bump when the processed format, the featurization or label parsing changes
#: the forms of ``data.split`` a molecule CSV takes (:mod:`graph_transformers.data.split_rules`)
CSV_SPLIT_FORMS = ("scaffold", "random", "column", "file")


class MoleculeCSV(FileBackedDataset):
    r"""Molecular graph property prediction from a CSV file of SMILES and labels (``.csv`` or
    ``.csv.gz``), featurized like OGB (:func:`mol_to_graph`) and split by scaffold
    (:func:`scaffold_split`) or by ``split_rule`` (``data.split``).

    Each graph: ``x`` ``LongTensor [num_nodes, 9]``, ``edge_index`` ``LongTensor [2, num_edges]``,
    ``edge_attr`` ``LongTensor [num_edges, 3]``, ``y`` ``FloatTensor [1, num_tasks]`` (``NaN`` for
    a blank / ``NA`` label). A label column whose cells hold lists (``[0, 1, 0]``, LRGB's
    Peptides-func ``labels``) gives one task per entry, named ``column[i]``; every row's list
    has the width of the first non-blank one, and a blank / ``nan`` entry is a missing label
    (:func:`~.csv_reading.parse_labels`).

    Rows whose SMILES RDKit cannot parse or sanitize (or that has no atoms) are **skipped**, never
    fatal and never silent: they are listed in :attr:`skipped`, a WARNING on
    ``logging.getLogger(__name__)`` gives their count, line numbers, SMILES and RDKit's reason
    when the cache is built, and a shorter WARNING (count + line numbers) each time the dataset is
    loaded from the cache. The scaffold split is computed over the remaining (valid) molecules in
    file order. Building takes about 1.5 ms per molecule (parse, featurize, scaffold) on one CPU
    core; loading from the cache is fast.

    The file is read in place. Processed graphs are cached in
    ``root/processed/<sha256 of file>_<settings hash>_<pre_transform_key(pre_transform)>/``
    (``data.pt`` with all valid molecules + ``meta.json`` with their rows, scaffolds, the
    skipped rows and provenance), so editing the file, the columns, the task, ``max_rows`` or
    the pre-transform gives a new cache entry, never a stale one. The split is computed from
    them each time the dataset is made (a new split, or another fold, featurizes nothing again).

    The split (``split_rule``, ``data.split``; :mod:`graph_transformers.data.split_rules`):
    ``scaffold`` (the default; ``scaffold:TRAIN,VAL,TEST`` or ``frac``), ``random`` /
    ``random:TRAIN,VAL,TEST`` (of the valid molecules, drawn from ``seed``), a column of the
    file holding ``train`` / ``val`` / ``test`` per row, or a split or folds file of 0-based
    **data rows** of the file (the header and blank lines not counted; fold ``fold`` of a folds
    file). A row named by a column or file whose SMILES was skipped is left out (a WARNING).

    Args:
        root: cache directory (default ``resolve_cache_dir() / "MoleculeCSV" / <file stem>``).
        split (str): ``"train"``, ``"val"``, ``"test"`` or ``"all"`` (every valid molecule in
            file order).
        path: the CSV file (required). First line = header.
        smiles_column (str): the SMILES column.
        target_columns: label columns (default: every column but ``smiles_column``).
        task (str): ``"classification"`` (labels 0 / 1 / blank) or ``"regression"``.
        transform, pre_transform, force_reload: as in
            :class:`~torch_geometric.data.InMemoryDataset`.
        frac: ``(train, val, test)`` fractions of the scaffold (or random) split (default
            0.8 / 0.1 / 0.1; or written in ``split_rule``, not both).
        max_rows (int, optional): read only the first ``max_rows`` data rows (a prefix, e.g. for
            quick tests); the split is then the split of that prefix.
        split_rule (str, optional): ``data.split`` (above; default ``scaffold``).
        seed (int): the seed of a ``random`` split (``data.seed``).
        fold (int): the fold of a folds file (``data.fold``).

    Attributes:
        skipped (list[dict]): skipped rows: ``row`` (0-based data row), ``line`` (line in the
            file, the header being line 1), ``smiles``, ``reason``.
        provenance (dict): source path and sha256, settings, row / valid / skipped counts and
            split sizes.
        smiles (list[str]): SMILES of this split's molecules, in dataset order.
        rows (list[int]): 0-based data-row number in the file of each molecule of this split.
        split_indices (dict[str, list[int]]): positions of each split among the valid molecules.
        split_rule (dict): the record of the split (``metrics.json`` ``split``): ``rule``
            (``scaffold``, ``random:0.8,0.1,0.1 seed 0``, ``column NAME``, ``file PATH``,
            ``folds PATH fold k``), ``sizes``, and for a file its ``sha256``.
        target_columns (list[str]): the label columns; task_names (list[str]), num_tasks (int),
            task (str), metric (str): the targets (a list column's as ``column[i]``), and
            ``"roc_auc"`` for classification / ``"rmse"`` for regression.

    Raises:
        DataNotFoundError: ``path`` does not exist.
        DataError: a file that is not CSV text (a pickle, a zip archive, not UTF-8; named as
            such), a column not in the header, a used column whose name the header gives twice,
            a quoted cell over several lines, a label that is not a number (or not 0 / 1 for
            classification; the message gives line and column), a list label of another width
            than the column's, or no valid molecule at all; a bad ``split_rule`` or split file
            (:mod:`~graph_transformers.data.split_rules`).
        ValueError: unknown split / task, or bad ``frac``.
    """

    _missing = "CSV file"

    def __init__(
        self,
        root: str | os.PathLike | None = None,
        split: str = "train",
        path: str | os.PathLike | None = None,
        smiles_column: str = "smiles",
        target_columns: Sequence[str] | None = None,
        task: str = "classification",
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        force_reload: bool = False,
        *,
        frac: Sequence[float] | None = None,
        max_rows: int | None = None,
        split_rule: str | None = None,
        seed: int = 0,
        fold: int = 0,
    ) -> None:
        name = type(self).__name__
        check_csv_arguments(name, split, task, path, max_rows)
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise DataNotFoundError(f"{name}: CSV file not found: {self.path}")
        target_columns = target_columns_of(name, self.path, smiles_column, target_columns)
        self.split = split
        self.smiles_column = smiles_column
        self.target_columns = target_columns
        self.widths = label_widths(self.path, target_columns)
        self.task_names = task_names_of(target_columns, self.widths)
        self.task = task
        self.max_rows = None if max_rows is None else int(max_rows)
        self.rule = parse_split_rule(split_rule or "scaffold", CSV_SPLIT_FORMS)
        if self.rule.kind == "file":  # a missing or unreadable file fails before featurizing
            read_split_file(self.rule.path)
        self._column_sets = None if self.rule.kind != "column" else read_split_column(
            self.path, self.rule.column, self.max_rows, target_columns)  # so does a bad column
        self.frac = self._fractions(frac)
        self.seed, self.fold = int(seed), int(fold)
        self.file_sha256 = sha256_of(self.path)
        self._key = self._cache_key(pre_transform)
        if root is None:
            stem = self.path.name.split(".")[0] or "data"
            root = resolve_cache_dir() / "MoleculeCSV" / stem
        super().__init__(os.fspath(root), transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[0])  # verifies data.pt and meta.json, rebuilds if needed
        meta = self._read_meta()
        self.split_indices, self.split_rule = self._make_split(meta)
        self.provenance.update(split_sizes={s: len(v) for s, v in self.split_indices.items()},
                               split_rule=self.split_rule["rule"])
        self._select_split(meta)

    def _fractions(self, frac: Sequence[float] | None) -> tuple[float, float, float] | None:
        """The fractions of a scaffold / random split: ``frac`` or those of the rule."""
        if self.rule.kind not in ("scaffold", "random"):
            return None
        if frac is not None and self.rule.fractions is not None and \
                tuple(map(float, frac)) != self.rule.fractions:
            raise ValueError(f"{type(self).__name__}: data.split {self.rule.text!r} and frac="
                             f"{tuple(frac)} both give the fractions; give them once")
        chosen = self.rule.fractions or (tuple(frac) if frac is not None else DEFAULT_FRACTIONS)
        return check_frac(chosen) if self.rule.kind == "scaffold" else chosen

    def _make_split(self, meta: dict[str, Any]) -> tuple[dict[str, list[int]], dict[str, Any]]:
        """``(positions of each split among the valid molecules, the split's record)``."""
        if self.rule.kind == "scaffold":
            split = split_from_scaffolds(meta["scaffolds"], self.frac)
            return split, rule_record(self.rule, split, fractions=self.frac)
        if self.rule.kind == "random":
            split = random_split(range(len(meta["smiles"])), self.frac, self.seed)
            return split, rule_record(self.rule, split, seed=self.seed, fractions=self.frac)
        num_rows = meta["provenance"]["num_rows"]
        if self.rule.kind == "column":
            by_row = check_index_sets({s: np.asarray(v, dtype=np.int64) for s, v in
                                       self._column_sets.items()}, num_rows,
                                      f"{self.path} column {self.rule.column!r}", "rows")
            record = rule_record(self.rule, by_row)
        else:
            by_row, record = file_split(self.rule.path, num_rows, self.fold, "data rows")
        position = {r: i for i, r in enumerate(meta["rows"])}
        split = {s: [position[r] for r in rows if r in position] for s, rows in by_row.items()}
        dropped = {s: len(by_row[s]) - len(split[s]) for s in split}
        record["sizes"] = {s: len(v) for s, v in split.items()}  # the molecules used
        if any(dropped.values()):
            record["skipped_rows"] = dropped
            if self.split in ("train", "all"):
                log.warning("%s(%s): the split (%s) names %s row(s) whose SMILES was skipped; "
                            "they are left out", type(self).__name__, self.path, record["rule"],
                            ", ".join(f"{s} {n}" for s, n in dropped.items() if n))
        return split, record

    def _cache_key(self, pre_transform: Callable | None) -> str:
        """``<sha256 of the file>_<settings hash>_<pre_transform key>``: the processed folder."""
        settings = json.dumps(
            {"format": _FORMAT_VERSION, "smiles": self.smiles_column,
             "targets": self.target_columns, "task": self.task, "max_rows": self.max_rows},
            sort_keys=True,
        )
        return "_".join((
            self.file_sha256[:16],
            hashlib.sha256(settings.encode()).hexdigest()[:8],
            pre_transform_key(pre_transform),
        ))

    def _read_meta(self) -> dict[str, Any]:
        """Reads ``meta.json`` (skipped rows, split, provenance) and, on a load from the cache,
        repeats the skipped-rows summary as a WARNING."""
        with open(self.processed_paths[1]) as f:
            meta = json.load(f)
        self.skipped: list[dict] = meta["skipped"]
        self.provenance: dict[str, Any] = dict(meta["provenance"])
        if self.skipped and not getattr(self, "_logged_skipped", False):
            # process() logged the details just now; a load from the cache repeats a summary.
            log.warning(
                "%s(%s): %d of %d rows were skipped (invalid SMILES) when this cache was built; "
                "%d molecules kept; lines %s; details in .skipped", type(self).__name__,
                self.path, len(self.skipped), self.provenance["num_rows"],
                self.provenance["num_molecules"], format_lines(self.skipped),
            )
        return meta

    def _select_split(self, meta: dict[str, Any]) -> None:
        """Keeps this split's molecules (all of them for ``"all"``) and their SMILES and rows."""
        idx = (list(range(len(meta["smiles"]))) if self.split == "all"
               else self.split_indices[self.split])
        self.smiles: list[str] = [meta["smiles"][i] for i in idx]
        self.rows: list[int] = [meta["rows"][i] for i in idx]
        if self.split != "all":
            if idx:
                self.data, self.slices = self.collate([self.get(i) for i in idx])
            else:
                log.warning("%s(%s): split %r is empty (%d molecules, split %s)",
                            type(self).__name__, self.path, self.split, len(meta["smiles"]),
                            self.split_rule["rule"])
                self.data, self.slices = Data(), {}
            self._data_list = None

    # -- task description -----------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return len(self.task_names)

    @property
    def metric(self) -> str:
        return "roc_auc" if self.task == "classification" else "rmse"

    def _read_rows(self):
        """Yield ``(row, line, smiles, labels)`` for the data rows (up to ``max_rows``)."""
        with reading(self.path), open_text(self.path) as f:
            records = csv_records(self.path, f)  # a quoted cell over several lines: DataError
            header = [h.strip() for h in next(records)[1]]
            s_col = header.index(self.smiles_column)
            t_cols = [header.index(c) for c in self.target_columns]
            row = 0
            for line, record in records:
                if not record or all(not c.strip() for c in record):
                    continue  # blank line
                if self.max_rows is not None and row >= self.max_rows:
                    break
                cell = lambda j, record=record: record[j] if j < len(record) else ""  # noqa: E731
                labels = [v for k, j in enumerate(t_cols)
                          for v in self._cell_labels(cell(j), line, k)]
                yield row, line, cell(s_col).strip(), labels
                row += 1

    def _cell_labels(self, text: str, line: int, k: int) -> list[float]:
        """The labels of label column ``k`` in one row: one, or its list's ``widths[k]``."""
        column, width = self.target_columns[k], self.widths[k]
        values = parse_labels(text, self.task, self.path, line, column)
        is_list = text.strip().startswith("[")
        if width is None and is_list:
            raise DataError(f"{self.path}: line {line}, column {column!r}: holds a list of "
                            f"labels, but the column's first label is a single value; a column "
                            "holds single labels or lists of one width")
        if width is not None:
            if not is_list and len(values) == 1 and math.isnan(values[0]):
                return [float("nan")] * width  # a blank cell: every label of the list missing
            if not is_list or len(values) != width:
                raise DataError(f"{self.path}: line {line}, column {column!r}: "
                                f"{len(values)} label(s), the column's first list has {width}; "
                                "every row needs a list of the same width (nan for a missing "
                                "entry)")
        return values

    def process(self) -> None:
        """Parse every row, featurize the valid molecules, compute their scaffolds, apply
        ``pre_transform`` and save graphs + metadata (the split is made on loading)."""
        graphs, smiles, rows, scaffolds, skipped, num_rows = self._featurize_rows()
        if skipped:
            log.warning(
                "%s(%s): skipped %d of %d rows whose SMILES RDKit cannot use; %d molecules "
                "kept: %s", type(self).__name__, self.path, len(skipped), num_rows, len(graphs),
                format_skipped(skipped),
            )
            self._logged_skipped = True
        if not graphs:
            raise DataError(
                f"{type(self).__name__}: no valid molecule in {self.path} "
                f"({num_rows} rows, {len(skipped)} skipped)"
            )
        if self.pre_transform is not None:
            graphs = [self.pre_transform(g) for g in progress(graphs, f"{Path(self.path).name}: "
                                                                       "encodings")]
        self.save(graphs, self.processed_paths[0])
        provenance = self._provenance(num_rows, len(graphs), len(skipped))
        meta = {"provenance": provenance, "skipped": skipped, "scaffolds": scaffolds,
                "smiles": smiles, "rows": rows}
        write_cache_json(self.processed_paths[1], meta)

    def _featurize_rows(self) -> tuple[list[Data], list[str], list[int], list[str], list[dict],
                                       int]:
        """Parses and featurizes every row: ``(graphs, smiles, rows, scaffolds)`` of the valid
        molecules (``y`` set, before ``pre_transform``), the skipped rows and the row count."""
        graphs: list[Data] = []
        smiles: list[str] = []
        rows: list[int] = []
        scaffolds: list[str] = []
        skipped: list[dict] = []
        num_rows = 0
        for row, line, smi, labels in progress(self._read_rows(),
                                               f"{Path(self.path).name}: molecules",
                                               unit="row"):
            num_rows += 1
            mol, reason = parse_smiles(smi)
            graph = None
            if mol is not None:
                try:
                    graph = mol_to_graph(mol)
                    scaffold = murcko_scaffold(mol)
                except Exception as e:  # noqa: BLE001 - RDKit errors on exotic molecules
                    reason = f"featurization failed: {e}"
                    graph = None
            if graph is None:
                skipped.append({"row": row, "line": line, "smiles": smi, "reason": reason})
                continue
            graph.y = torch.tensor(labels, dtype=torch.float32).view(1, -1)
            graphs.append(graph)
            smiles.append(smi)
            rows.append(row)
            scaffolds.append(scaffold)
        return graphs, smiles, rows, scaffolds, skipped, num_rows

    def _provenance(self, num_rows: int, num_molecules: int, num_skipped: int
                    ) -> dict[str, Any]:
        """The ``provenance`` record of ``meta.json``: source, settings, counts (the split's
        sizes and rule are added on loading)."""
        return {
            "source": str(self.path),
            "sha256": self.file_sha256,
            "smiles_column": self.smiles_column,
            "target_columns": self.target_columns,
            "task_names": self.task_names,
            "task": self.task,
            "max_rows": self.max_rows,
            "num_rows": num_rows,
            "num_molecules": num_molecules,
            "num_skipped": num_skipped,
            "featurization": "OGB smiles2graph (9 atom / 3 bond categorical features)",
            "format_version": _FORMAT_VERSION,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}, split={self.split!r}, tasks={self.num_tasks})"


def csv_task(task: str | None) -> str:
    """``data.task`` of a molecule CSV → :class:`MoleculeCSV`'s task: label columns of 0 / 1 are
    binary tasks (``classification`` or ``binary``), the default is regression."""
    return "classification" if task in ("classification", "binary") else "regression"


def load_molecule_csv(
    root: PathLike, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, path: PathLike,
    smiles_column: str = "smiles", target_columns: Sequence[str] | None = None,
    task: str | None = None, split_rule: str | None = None, seed: int = 0, fold: int = 0,
    **options: Any,
) -> MoleculeCSV:
    """One split of a user's molecule CSV (``data.path``: ``data.smiles_column``,
    ``data.target_columns``, ``data.task`` as :func:`csv_task` reads it, ``data.split`` as
    ``split_rule``, ``data.seed``, ``data.fold``), cached under ``root/MoleculeCSV/``;
    ``options`` (``data.options``: ``frac``, ``max_rows``) go to :class:`MoleculeCSV`, which
    refuses a key it does not take (``TypeError``).

    Raises:
        MissingDependencyError: RDKit is not installed.
        TypeError: an option :class:`MoleculeCSV` does not take.
    """
    require("rdkit", "a molecule CSV dataset")
    return MoleculeCSV(root=str(Path(root) / "MoleculeCSV"), split=split, path=path,
                       smiles_column=smiles_column, target_columns=list(target_columns or ()),
                       task=csv_task(task), transform=transform, pre_transform=pre_transform,
                       force_reload=force_reload, split_rule=split_rule, seed=seed, fold=fold,
                       **options)



#: what :func:`load_molecule_csv` accepts: ``data.path``, ``data.smiles_column``,
#: ``data.target_columns``, ``data.task``, ``data.split`` (as ``split_rule``), ``data.seed``,
#: ``data.fold`` and the ``data.options`` of :class:`MoleculeCSV`
MOLECULE_CSV_PARAMS = ("path", "smiles_column", "target_columns", "task", "split_rule", "seed",
                       "fold", "frac", "max_rows")


def molecule_csv_spec(task: str | None = None, target_columns: Sequence[str] | None = None,
                      path: PathLike | None = None) -> DatasetSpec:
    """The spec of a user's molecule CSV (``data.path`` set): ``data.task``
    ``classification`` / ``binary`` gives binary tasks scored by ROC-AUC, else regression with
    RMSE (MSE loss); one output per target column, and one per entry of a list column (its
    width read off the file, :func:`~.csv_reading.label_widths`, while it exists; the loader
    reports a missing file).

    Raises:
        DataError: an unreadable file.
    """
    targets = tuple(target_columns or ())
    if path is not None and targets and Path(path).expanduser().is_file():
        targets = tuple(task_names_of(targets, label_widths(Path(path).expanduser(), targets)))
    if csv_task(task) == "regression":
        return DatasetSpec("molecule_csv", "graph", "regression", len(targets), "rmse",
                           load_molecule_csv, loss="mse", targets=targets, source="user",
                           params=MOLECULE_CSV_PARAMS, **OGB_MOL_TYPES)
    return DatasetSpec("molecule_csv", "graph", "binary", len(targets), "roc_auc",
                       load_molecule_csv, targets=targets, source="user",
                       params=MOLECULE_CSV_PARAMS, **OGB_MOL_TYPES)

