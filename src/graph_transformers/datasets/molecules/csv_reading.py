"""Reading a CSV file of SMILES and labels (``.csv`` or ``.csv.gz``), as
:class:`~graph_transformers.datasets.molecules.molecule_csv.MoleculeCSV` does: the header and its
label columns, the labels (blank / ``NA`` = missing; a cell may hold a list of labels,
:func:`parse_labels`, whose width :func:`label_widths` reads), a split column
(:func:`read_split_column`), what a damaged file raises as one
:class:`~graph_transformers.errors.DataError`, and the messages on skipped rows.
"""
from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...data.generated import SPLITS
from ...data.textfiles import (check_header, check_text_head, csv_records, parse_float_cell,
                               read_head)
from ...errors import DataError

__all__ = ["CSV_TASKS", "check_csv_arguments", "format_lines", "format_skipped", "label_widths",
           "open_text", "parse_label", "parse_labels", "read_header", "read_split_column",
           "reading", "target_columns_of", "task_names_of"]

#: the tasks of a molecule CSV
CSV_TASKS = ("classification", "regression")
#: cells read as a missing label (NaN, masked in loss and metrics); ``nan`` / ``inf`` written
#: out are data errors, as a non-finite label is more often a bug upstream than a blank
_MISSING = {"", "na", "n/a", "none", "null"}
_MAX_LOGGED_ROWS = 20


def open_text(path: Path):
    """``path`` opened as UTF-8 text for the csv module (gunzipped for a ``.gz``)."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


@contextlib.contextmanager
def reading(path: Path):
    """Turns what a damaged file raises while it is read (a truncated or corrupt gzip stream,
    bytes that are not UTF-8, a malformed CSV line) into one :class:`DataError` naming it."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise DataError(f"{path}: cannot read it: truncated or corrupt gzip file ({err})") from None
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text (byte {err.object[err.start]:#04x} at offset "
                        f"{err.start}); save it as UTF-8") from None
    except csv.Error as err:
        raise DataError(f"{path}: not a readable CSV file ({err})") from None


def read_header(path: Path) -> list[str]:
    """The stripped column names of a CSV's first line, once its first bytes show text (not a
    pickle, a zip archive, ...: :func:`~graph_transformers.data.textfiles.check_text_head`).

    Raises:
        DataError: not UTF-8 text, an unreadable file, or an empty one.
    """
    check_text_head(path, read_head(path, gzip_ok=True), gzip_ok=True)
    with reading(path), open_text(path) as f:
        header = next((rec for _, rec in csv_records(path, f)), None)
    if not header:
        raise DataError(f"{path}: empty file (expected a CSV header line)")
    return [h.strip() for h in header]


#: labels beyond this become inf in float32 tensors (issue 26: a label of 1e30 gave RMSE inf)
_FLOAT32_MAX = 3.4028234663852886e38


def parse_label(text: str, task: str, path: Path, line: int, column: str) -> float:
    """The label of a cell (line ``line``, ``column`` of ``path``): a float, NaN for a missing
    one (a blank, ``NA``, ...).

    Raises:
        DataError: not a number, not finite, beyond float32's range, or (``classification``)
            not 0 or 1.
    """
    v = parse_float_cell(text, f"{path}: line {line}, column {column!r}: label", missing=_MISSING,
                         hint="leave the cell blank for a missing label")
    if v != v:  # missing
        return v
    if abs(v) > _FLOAT32_MAX:
        raise DataError(
            f"{path}: line {line}, column {column!r}: label {text!r} is beyond float32's range "
            f"(±3.4e38), where training and metrics compute: rescale the column"
        )
    if task == "classification" and v not in (0.0, 1.0):
        raise DataError(
            f"{path}: line {line}, column {column!r}: classification label {text!r} is not 0 or "
            f"1 (leave the cell blank for a missing label)"
        )
    return v


#: entries of a list label read as missing (NaN): those of a cell, and ``nan`` as NumPy writes it
_MISSING_ENTRY = _MISSING | {"nan"}
_LIST_SEP = re.compile(r"[,\s]+")


def parse_labels(text: str, task: str, path: Path, line: int, column: str) -> list[float]:
    """The labels of a cell: ``[v]`` for one label (:func:`parse_label`), or the entries of a
    list in brackets, separated by commas and / or spaces (``[0, 1, 0]``, ``[0 1 0]``, as LRGB's
    Peptides-func ``labels``); a list entry that is blank, ``nan``, ``NA``, ... is missing
    (NaN). A blank cell is one missing label (:func:`parse_label`).

    Raises:
        DataError: an unclosed or empty list, or an entry that is not a label (as
            :func:`parse_label`); the message gives line and column.
    """
    t = text.strip()
    if not t.startswith("["):
        return [parse_label(text, task, path, line, column)]
    if not t.endswith("]"):
        raise DataError(f"{path}: line {line}, column {column!r}: list label {_short(t)!r} has "
                        "no closing ']'")
    entries = [e for e in _LIST_SEP.split(t[1:-1].strip()) if e]
    if not entries:
        raise DataError(f"{path}: line {line}, column {column!r}: an empty list of labels; "
                        "leave the cell blank for missing labels")
    return [float("nan") if e.lower() in _MISSING_ENTRY else
            parse_label(e, task, path, line, column) for e in entries]


def _list_width(text: str) -> int | None:
    """The width of a list cell, ``None`` for a single label."""
    t = text.strip()
    if not t.startswith("["):
        return None
    return len([e for e in _LIST_SEP.split(t.strip("[]").strip()) if e])


@functools.lru_cache(maxsize=16)
def _widths(path: str, stamp: tuple, columns: tuple[str, ...]) -> tuple[int | None, ...]:
    p = Path(path)
    widths: dict[str, int | None] = {}
    header = read_header(p)  # a file that is not CSV text, or an empty one: one DataError
    with reading(p), open_text(p) as f:
        records = csv_records(p, f)
        next(records)
        index = {c: header.index(c) for c in columns if c in header}
        for _, record in records:
            for c, j in index.items():
                if c not in widths and j < len(record) and \
                        record[j].strip().lower() not in _MISSING:
                    widths[c] = _list_width(record[j])
            if len(widths) == len(index):
                break
    return tuple(widths.get(c) for c in columns)


def label_widths(path: Path, target_columns: Sequence[str]) -> list[int | None]:
    """Per label column, the width of its lists (the first non-blank cell's), ``None`` for a
    column of single labels (or one without any label); read once per process while the file is
    unchanged.

    Raises:
        DataError: an unreadable file (:func:`reading`).
    """
    st = Path(path).stat()
    return list(_widths(str(Path(path).resolve()), (st.st_size, st.st_mtime_ns),
                        tuple(target_columns)))


def task_names_of(target_columns: Sequence[str], widths: Sequence[int | None]) -> list[str]:
    """The task names: a column of single labels by its name, a list column's ``W`` tasks as
    ``column[0]`` … ``column[W-1]``."""
    return [name for c, w in zip(target_columns, widths)
            for name in ([c] if w is None else [f"{c}[{i}]" for i in range(w)])]


#: cells of a split column → the set
_SPLIT_CELLS = {"train": "train", "val": "val", "valid": "val", "validation": "val",
                "test": "test"}


def read_split_column(path: Path, column: str, max_rows: int | None,
                      label_columns: Sequence[str]) -> dict[str, list[int]]:
    """The 0-based data rows (as :class:`~.molecule_csv.MoleculeCSV` counts them: blank lines
    skipped) of each set named in ``column``: ``train``, ``val`` (``valid``, ``validation``) or
    ``test``, case-insensitive; a blank cell leaves its row out of every set.

    Raises:
        DataError: no such column, a label column used as the split column, or another value
            (naming the line).
    """
    header = read_header(path)
    if column not in header:
        raise DataError(f"data.split: no column {column!r} in {path} (columns: {header}); "
                        "name a column of train / val / test cells, or use scaffold or random")
    if column in label_columns:
        raise DataError(f"data.split: column {column!r} is a label column "
                        "(data.target_columns); the split needs its own column")
    j = header.index(column)
    sets: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    with reading(path), open_text(path) as f:
        records = csv_records(path, f)
        next(records)
        row = 0
        for line, record in records:
            if not record or all(not c.strip() for c in record):
                continue
            if max_rows is not None and row >= max_rows:
                break
            cell = record[j].strip() if j < len(record) else ""
            if cell:
                name = _SPLIT_CELLS.get(cell.lower())
                if name is None:
                    raise DataError(f"{path}: line {line}, column {column!r}: split {cell!r} is "
                                    "not train, val (valid, validation) or test (leave it blank "
                                    "for a row in no set)")
                sets[name].append(row)
            row += 1
    return sets


def _short(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def format_skipped(skipped: Sequence[dict]) -> str:
    """``line L (row R): 'SMILES' (reason); ...`` for the first rows, then a count."""
    shown = "; ".join(
        f"line {s['line']} (row {s['row']}): {_short(s['smiles'])!r} ({_short(s['reason'])})"
        for s in skipped[:_MAX_LOGGED_ROWS]
    )
    more = len(skipped) - _MAX_LOGGED_ROWS
    return shown + (f"; ... and {more} more (see .skipped)" if more > 0 else "")


def format_lines(skipped: Sequence[dict]) -> str:
    """The line numbers of the first skipped rows, ``, ...`` when there are more."""
    lines = ", ".join(str(s["line"]) for s in skipped[:_MAX_LOGGED_ROWS])
    return lines + (", ..." if len(skipped) > _MAX_LOGGED_ROWS else "")


def check_csv_arguments(name: str, split: str, task: str, path: Any, max_rows: Any) -> None:
    """The arguments of :class:`~graph_transformers.datasets.molecules.molecule_csv.MoleculeCSV`
    that need no file: split, task, path, max_rows.

    Raises:
        ValueError: an unknown split or task, no path, or a ``max_rows`` that is not positive.
    """
    if split not in SPLITS + ("all",):
        raise ValueError(f"{name}: split must be one of {SPLITS + ('all',)}, got {split!r}")
    if task not in CSV_TASKS:
        raise ValueError(f"{name}: task must be one of {CSV_TASKS}, got {task!r}")
    if path is None:
        raise ValueError(f"{name}: path (the CSV file) is required")
    if max_rows is not None and (isinstance(max_rows, bool) or int(max_rows) < 1):
        raise ValueError(
            f"{name}: max_rows must be a positive integer or None, got {max_rows!r}")


def target_columns_of(name: str, path: Path, smiles_column: str,
                    target_columns: Sequence[str] | str | None) -> list[str]:
    """The label columns (default: every column but the SMILES one), checked against the
    header of ``path``: each is in it, once (a name given twice, where it is used, would be
    read from its first copy silently).

    Raises:
        DataError: an unreadable or empty file, a column not in the header, or a used column
            whose name the header gives twice (naming both positions).
    """
    header = read_header(path)
    if smiles_column not in header:
        raise DataError(
            f"{name}: SMILES column {smiles_column!r} not in the header of {path}; "
            f"columns: {header}"
        )
    if target_columns is None:
        target_columns = [c for c in header if c != smiles_column]
    elif isinstance(target_columns, str):
        target_columns = [target_columns]
    target_columns = list(target_columns)
    missing = [c for c in target_columns if c not in header]
    if missing or not target_columns:
        raise DataError(
            f"{name}: target columns {missing or target_columns} not in the header of "
            f"{path}; columns: {header}"
        )
    check_header(path, header, used=[smiles_column, *target_columns])
    return target_columns
