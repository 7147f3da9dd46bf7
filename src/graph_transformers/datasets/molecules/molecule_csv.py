"""A user's molecule CSV as a dataset (``data.path``: :class:`MoleculeCSV`, split by scaffold),
its loader and the spec read off the config (:func:`molecule_csv_spec`); the MoleculeNet
benchmarks subclass it (:mod:`graph_transformers.datasets.molecules.moleculenet`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data

from ..._optional import require
from ...data.cache import (DataNotFoundError, FileBackedDataset, pre_transform_key,
                           resolve_cache_dir, sha256_of, write_cache_json)
from ...data.generated import PathLike, Transform
from ...data.registry import DatasetSpec
from ...data.textfiles import csv_records
from ...errors import DataError
from .csv_reading import (check_csv_arguments, format_lines, format_skipped, open_text,
                          parse_label, reading, target_columns_of)
from .featurization import OGB_MOL_TYPES, mol_to_graph, parse_smiles
from .scaffold import check_frac, murcko_scaffold, split_from_scaffolds

__all__ = ["MOLECULE_CSV_PARAMS", "MoleculeCSV", "csv_task", "load_molecule_csv",
           "molecule_csv_spec"]

log = logging.getLogger(__name__)

_FORMAT_VERSION = 2  # bump when the processed format, the featurization or label parsing changes


class MoleculeCSV(FileBackedDataset):
    r"""Molecular graph property prediction from a CSV file of SMILES and labels (``.csv`` or
    ``.csv.gz``), featurized like OGB (:func:`mol_to_graph`) and split by scaffold
    (:func:`scaffold_split`).

    Each graph: ``x`` ``LongTensor [num_nodes, 9]``, ``edge_index`` ``LongTensor [2, num_edges]``,
    ``edge_attr`` ``LongTensor [num_edges, 3]``, ``y`` ``FloatTensor [1, num_tasks]`` (``NaN`` for
    a blank / ``NA`` label).

    Rows whose SMILES RDKit cannot parse or sanitize (or that has no atoms) are **skipped**, never
    fatal and never silent: they are listed in :attr:`skipped`, a WARNING on
    ``logging.getLogger(__name__)`` gives their count, line numbers, SMILES and RDKit's reason
    when the cache is built, and a shorter WARNING (count + line numbers) each time the dataset is
    loaded from the cache. The scaffold split is computed over the remaining (valid) molecules in
    file order. Building takes about 1.5 ms per molecule (parse, featurize, scaffold) on one CPU
    core; loading from the cache is fast.

    The file is read in place. Processed graphs are cached in
    ``root/processed/<sha256 of file>_<settings hash>_<pre_transform_key(pre_transform)>/``
    (``data.pt`` with all valid molecules + ``meta.json`` with the split, skipped rows and
    provenance), so editing the file, the columns, the task, ``frac``, ``max_rows`` or the
    pre-transform gives a new cache entry, never a stale one.

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
        frac: ``(train, val, test)`` fractions of the scaffold split.
        max_rows (int, optional): read only the first ``max_rows`` data rows (a prefix, e.g. for
            quick tests); the split is then the scaffold split of that prefix.

    Attributes:
        skipped (list[dict]): skipped rows: ``row`` (0-based data row), ``line`` (line in the
            file, the header being line 1), ``smiles``, ``reason``.
        provenance (dict): source path and sha256, settings, row / valid / skipped counts and
            split sizes.
        smiles (list[str]): SMILES of this split's molecules, in dataset order.
        rows (list[int]): 0-based data-row number in the file of each molecule of this split.
        split_indices (dict[str, list[int]]): positions of each split among the valid molecules.
        task_names (list[str]), num_tasks (int), task (str), metric (str): the targets, and
            ``"roc_auc"`` for classification / ``"rmse"`` for regression.

    Raises:
        DataNotFoundError: ``path`` does not exist.
        DataError: a file that is not CSV text (a pickle, a zip archive, not UTF-8; named as
            such), a column not in the header, a used column whose name the header gives twice,
            a quoted cell over several lines, a label that is not a number (or not 0 / 1 for
            classification; the message gives line and column), or no valid molecule at all.
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
        frac: Sequence[float] = (0.8, 0.1, 0.1),
        max_rows: int | None = None,
    ) -> None:
        name = type(self).__name__
        check_csv_arguments(name, split, task, path, max_rows)
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise DataNotFoundError(f"{name}: CSV file not found: {self.path}")
        target_columns = target_columns_of(name, self.path, smiles_column, target_columns)
        self.split = split
        self.smiles_column = smiles_column
        self.task_names = target_columns
        self.task = task
        self.frac = check_frac(frac)
        self.max_rows = None if max_rows is None else int(max_rows)
        self.file_sha256 = sha256_of(self.path)
        self._key = self._cache_key(pre_transform)
        if root is None:
            stem = self.path.name.split(".")[0] or "data"
            root = resolve_cache_dir() / "MoleculeCSV" / stem
        super().__init__(os.fspath(root), transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[0])  # verifies data.pt and meta.json, rebuilds if needed
        self._select_split(self._read_meta())

    def _cache_key(self, pre_transform: Callable | None) -> str:
        """``<sha256 of the file>_<settings hash>_<pre_transform key>``: the processed folder."""
        settings = json.dumps(
            {"format": _FORMAT_VERSION, "smiles": self.smiles_column,
             "targets": self.task_names, "task": self.task, "frac": self.frac,
             "max_rows": self.max_rows},
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
        self.split_indices: dict[str, list[int]] = meta["split"]
        self.provenance: dict[str, Any] = meta["provenance"]
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
                log.warning("%s(%s): split %r is empty (%d molecules are too few for frac=%s)",
                            type(self).__name__, self.path, self.split, len(meta["smiles"]),
                            self.frac)
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
            t_cols = [header.index(c) for c in self.task_names]
            row = 0
            for line, record in records:
                if not record or all(not c.strip() for c in record):
                    continue  # blank line
                if self.max_rows is not None and row >= self.max_rows:
                    break
                cell = lambda j, record=record: record[j] if j < len(record) else ""  # noqa: E731
                labels = [
                    parse_label(cell(j), self.task, self.path, line, self.task_names[k])
                    for k, j in enumerate(t_cols)
                ]
                yield row, line, cell(s_col).strip(), labels
                row += 1

    def process(self) -> None:
        """Parse every row, featurize the valid molecules, compute their scaffolds and the
        split, apply ``pre_transform`` and save graphs + metadata."""
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
        split = split_from_scaffolds(scaffolds, self.frac)
        if self.pre_transform is not None:
            graphs = [self.pre_transform(g) for g in graphs]
        self.save(graphs, self.processed_paths[0])
        provenance = self._provenance(num_rows, len(graphs), len(skipped), split)
        meta = {"provenance": provenance, "skipped": skipped, "split": split,
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
        for row, line, smi, labels in self._read_rows():
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

    def _provenance(self, num_rows: int, num_molecules: int, num_skipped: int,
                    split: dict[str, list[int]]) -> dict[str, Any]:
        """The ``provenance`` record of ``meta.json``: source, settings, counts, split rule."""
        return {
            "source": str(self.path),
            "sha256": self.file_sha256,
            "smiles_column": self.smiles_column,
            "target_columns": self.task_names,
            "task": self.task,
            "frac": list(self.frac),
            "max_rows": self.max_rows,
            "num_rows": num_rows,
            "num_molecules": num_molecules,
            "num_skipped": num_skipped,
            "split_sizes": {s: len(v) for s, v in split.items()},
            "split_rule": "scaffold (MurckoScaffoldSmiles includeChirality=True; groups by "
                          "(size, first index) descending; greedy train/val/test fill)",
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
    task: str | None = None, **options: Any,
) -> MoleculeCSV:
    """One split of a user's molecule CSV (``data.path``: ``data.smiles_column``,
    ``data.target_columns``, ``data.task`` as :func:`csv_task` reads it), cached under
    ``root/MoleculeCSV/``; ``options`` (``data.options``: ``frac``, ``max_rows``) go to
    :class:`MoleculeCSV`, which refuses a key it does not take (``TypeError``).

    Raises:
        MissingDependencyError: RDKit is not installed.
        TypeError: an option :class:`MoleculeCSV` does not take.
    """
    require("rdkit", "a molecule CSV dataset")
    return MoleculeCSV(root=str(Path(root) / "MoleculeCSV"), split=split, path=path,
                       smiles_column=smiles_column, target_columns=list(target_columns or ()),
                       task=csv_task(task), transform=transform, pre_transform=pre_transform,
                       force_reload=force_reload, **options)



#: what :func:`load_molecule_csv` accepts: ``data.path``, ``data.smiles_column``,
#: ``data.target_columns``, ``data.task`` and the ``data.options`` of :class:`MoleculeCSV`
MOLECULE_CSV_PARAMS = ("path", "smiles_column", "target_columns", "task", "frac", "max_rows")


def molecule_csv_spec(task: str | None = None,
                      target_columns: Sequence[str] | None = None) -> DatasetSpec:
    """The spec of a user's molecule CSV (``data.path`` set): ``data.task``
    ``classification`` / ``binary`` gives binary tasks scored by ROC-AUC, else regression with
    RMSE (MSE loss); one output per target column."""
    targets = tuple(target_columns or ())
    if csv_task(task) == "regression":
        return DatasetSpec("molecule_csv", "graph", "regression", len(targets), "rmse",
                           load_molecule_csv, loss="mse", targets=targets, source="user",
                           params=MOLECULE_CSV_PARAMS, **OGB_MOL_TYPES)
    return DatasetSpec("molecule_csv", "graph", "binary", len(targets), "roc_auc",
                       load_molecule_csv, targets=targets, source="user",
                       params=MOLECULE_CSV_PARAMS, **OGB_MOL_TYPES)

