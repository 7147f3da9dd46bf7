"""The input files of ``graph-transformers predict``: a SMILES CSV (:func:`read_smiles_csv`, with
the columns carried into the output, :func:`read_csv_columns`) or a ``.pt`` file of graphs
(:func:`load_graphs`); :func:`read_inputs` picks the reader by the file's name."""
from __future__ import annotations

import contextlib
import csv
import gzip
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from torch_geometric.data import Data

from ..data.textfiles import check_header, check_text_head, csv_records, read_head
from ..datasets.user.graph_list import load_graph_file
from ..errors import DataError
from .results import _reason


def read_inputs(path: str | Path, smiles_column: str = "smiles") -> list[str] | list[Data]:
    """The inputs in a file: the SMILES column of a CSV (``.csv`` or ``.csv.gz``,
    :func:`read_smiles_csv`) or the graphs of a ``.pt`` file (:func:`load_graphs`).

    Raises:
        FileNotFoundError: no such file.
        DataError: an unknown file type (one that is not text is named: a pickle, a zip
            archive, ...), or a file that cannot be read (see the two readers).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input file not found: {path}")
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        return read_smiles_csv(path, smiles_column)
    if name.endswith((".pt", ".pth")):
        return load_graphs(path)
    check_text_head(path, read_head(path))  # a pickle or an archive: say so
    raise DataError(f"{path}: unknown input type; expected a SMILES CSV (.csv, .csv.gz) or a "
                    ".pt file of torch_geometric graphs")


def _inputs(records: Iterable[tuple[int, list[str]]]) -> Iterable[list[str]]:
    """The records below the header of an input CSV that are inputs: every line but an empty
    one (no characters at all). A line holding ``""`` or only spaces is an input, an empty one
    (its status :data:`~.results.EMPTY`): output rows line up with input rows one to one."""
    return (rec for _, rec in records if rec)


def _input_header(path: Path, records: Iterable[tuple[int, list[str]]]) -> list[str]:
    """The stripped header of an input CSV: the first of its ``records``
    (:func:`~graph_transformers.data.textfiles.csv_records`).

    Raises:
        DataError: an empty file.
    """
    header = [h.strip() for h in next(iter(records), (0, []))[1]]
    if not header:
        raise DataError(f"{path}: empty file (expected a CSV header line)")
    return header


@contextlib.contextmanager
def _input_csv(path: Path) -> Iterator[tuple[list[str], Iterator[tuple[int, list[str]]]]]:
    """An input CSV opened for reading (``.csv`` or ``.csv.gz``, checked to be text first): its
    stripped header (:func:`_input_header`) and the records below it; a file that turns out not
    to be readable CSV text while the block reads it raises a ``DataError``."""
    from ..datasets.molecules.csv_reading import open_text
    check_text_head(path, read_head(path, gzip_ok=True), gzip_ok=True)
    try:
        with open_text(path) as f:
            records = csv_records(path, f)
            yield _input_header(path, records), records
    except (UnicodeDecodeError, gzip.BadGzipFile, csv.Error, EOFError) as err:
        raise DataError(f"{path}: not a readable CSV file ({_reason(err)})") from None


def read_smiles_csv(path: str | Path, smiles_column: str = "smiles") -> list[str]:
    """The SMILES column of a CSV file with a header line (``.csv``, or ``.csv.gz``), one entry
    per data row in file order: empty lines are skipped, as in training, but a row holding
    ``""`` or only spaces stays, as an empty input (status :data:`~.results.EMPTY`), and so does
    a blank cell.

    Raises:
        DataError: an empty file, no ``smiles_column`` in the header (the message lists the
            columns), the header naming ``smiles_column`` twice, no data rows, a quoted cell over
            several lines (a ``"`` left open), or a file that is not CSV text (a pickle, a zip
            archive, not UTF-8: named as such).
    """
    path = Path(path)
    with _input_csv(path) as (header, records):
        if smiles_column not in header:
            raise DataError(f"{path}: SMILES column {smiles_column!r} not in the header; "
                            f"columns: {header} (choose one with --smiles-column)")
        check_header(path, header, used=[smiles_column])
        j = header.index(smiles_column)
        smiles = [(rec[j] if j < len(rec) else "").strip() for rec in _inputs(records)]
    if not smiles:
        raise DataError(f"{path}: no data rows below the header")
    return smiles


def read_csv_columns(path: str | Path, columns: Sequence[str] | None = None,
                     exclude: Sequence[str] = ()) -> dict[str, list[str]]:
    """Columns of a CSV with a header line, one value per data row in file order, the rows
    aligned with :func:`read_smiles_csv` (empty lines skipped): what ``predict`` carries from
    its input into its output (ID columns, names).

    Args:
        path: a ``.csv`` or ``.csv.gz`` file.
        columns: the columns to read (``None``: all of them but ``exclude``).
        exclude: columns left out when ``columns`` is ``None`` (the SMILES column).

    Raises:
        DataError: a named column not in the header (the message lists the columns), a column
            read whose name the header gives twice, or a file that is not CSV text (as
            :func:`read_smiles_csv`).
    """
    path = Path(path)
    with _input_csv(path) as (header, records):
        names = [h for h in header if h not in exclude and h] if columns is None \
            else list(columns)
        missing = [c for c in names if c not in header]
        if missing:
            raise DataError(f"{path}: column(s) {missing} not in the header; columns: "
                            f"{header}")
        check_header(path, header, used=names)
        where = [header.index(c) for c in names]
        rows = list(_inputs(records))
    return {c: [(rec[j] if j < len(rec) else "") for rec in rows]
            for c, j in zip(names, where)}


load_graphs = load_graph_file  # one reader for graph files: data.graph_list
