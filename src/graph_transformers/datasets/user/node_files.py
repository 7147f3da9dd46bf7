"""Reading the files of a node-level graph (:mod:`graph_transformers.datasets.user.node_table`):
a CSV / TSV table as text cells (:class:`Table`, :func:`read_table`), a graph file NetworkX reads
and its node attributes (:func:`read_graph`, :func:`attribute_table`), and the edges by node id
or by row number (:func:`edges_by_id`, :func:`edges_by_row`) as an ``edge_index``
(:func:`edge_index_of`), and which column of the node table holds the ids
(:func:`find_id_column`). Errors are one line (:class:`~graph_transformers.errors.DataError`)
naming the file, the line and the fix.
"""
from __future__ import annotations

import io
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...data.cache import DataNotFoundError
from ...data.textfiles import check_header, csv_records, decode_text
from ...errors import DataError

__all__ = ["ID_COLUMN_NAMES", "INT_CELL", "SHOWN_COLUMNS", "SHOWN_IDS", "Table", "attribute_table",
           "cell_text", "check_some_edges", "edge_endpoints", "edge_index_of", "edges_by_id",
           "edges_by_row", "find_id_column", "missing_ids_error", "read_graph", "read_rows",
           "read_table", "unique_ids"]

log = logging.getLogger(__name__)

#: a cell holding an integer
INT_CELL = re.compile(r"^[+-]?\d+$")
#: ids named in an error message
SHOWN_IDS = 3
#: the names of a node table's id column (any case), in the order they are preferred, where
#: ``data.id_column`` is unset (:func:`find_id_column`)
ID_COLUMN_NAMES = ("id", "node_id", "node", "nodeid", "name")
#: feature columns named in the log line of a node table
SHOWN_COLUMNS = 5


@dataclass
class Table:
    """Node rows as text cells: ``columns`` (names), ``rows`` (one list of cells per node),
    ``where`` (``"line 7"`` or ``"node 'a'"`` per row, for messages) and ``source`` (a name)."""

    source: str
    columns: list[str]
    rows: list[list[str]]
    where: list[str]

    def column(self, name: str) -> list[str]:
        """The cells of column ``name``, one per row."""
        j = self.columns.index(name)
        return [r[j] for r in self.rows]


# ------------------------------------------------------------------------------------ reading text
def _read_lines(path: Path, what: str) -> list[str]:
    """The lines of a text file, line ends kept (split where ``csv`` splits them: ``\n``,
    ``\r\n``, ``\r``), after :func:`~graph_transformers.data.textfiles.decode_text` checked
    that it is UTF-8 text (not a pickle, a zip archive, ...).

    Raises:
        DataNotFoundError: no such file. DataError: not UTF-8 text.
    """
    if not path.is_file():
        raise DataNotFoundError(f"{what} not found: {path}")
    return io.StringIO(decode_text(path, path.read_bytes()), newline="").readlines()


def _delimiter(path: Path, line: str) -> str | None:
    """``\\t``, ``,``, ``;`` or ``None`` (runs of spaces), read off a sample line."""
    if path.suffix.lower() in (".tsv", ".tab") or "\t" in line:
        return "\t"
    for d in (",", ";"):
        if d in line:
            return d
    return None


def read_rows(path: Path, what: str, comments: bool) -> tuple[list[list[str]], list[int]]:
    """The non-blank rows of a delimited text file (stripped cells) and their line numbers.

    Raises:
        DataNotFoundError: no such file. DataError: not UTF-8 text (a binary file), or a
            malformed CSV row (a quoted cell over several lines among them).
    """
    rows: list[list[str]] = []
    lines: list[int] = []
    text = _read_lines(path, what)
    if comments:  # blank, so that a quote in a comment opens no cell (line numbers kept)
        text = ["\n" if ln.lstrip().startswith("#") else ln for ln in text]
    sample = next((ln for ln in text if ln.strip()), "")
    delim = _delimiter(path, sample)
    if delim is None:
        for i, ln in enumerate(text, 1):
            if ln.strip():
                rows.append(ln.split())
                lines.append(i)
        return rows, lines
    for line, rec in csv_records(path, text, delimiter=delim, strict=True):
        if not rec or not any(c.strip() for c in rec):
            continue
        rows.append([c.strip() for c in rec])
        lines.append(line)
    return rows, lines


def read_table(path: Path) -> Table:
    """A node table: a header line, then one row per node with as many cells.

    Raises:
        DataNotFoundError: no such file. DataError: empty, no rows, a repeated column name or a
            row whose cell count differs from the header's.
    """
    rows, lines = read_rows(path, "node table", comments=False)
    if not rows:
        raise DataError(f"{path}: empty file; a node table needs a header line (e.g. "
                        "id,label,f1,f2) and one row per node")
    header, body = rows[0], rows[1:]
    check_header(path, header)  # every column is read (id, label, features, masks)
    for cells, line in zip(body, lines[1:]):
        if len(cells) != len(header):
            raise DataError(
                f"{path} line {line}: {len(cells)} cells, but the header has {len(header)} "
                "columns; fix the row (a feature vector in one column must be quoted in a CSV, "
                "e.g. \"0.1,0.2\", or written to a TSV)")
    if not body:
        raise DataError(f"{path}: no node rows below the header")
    return Table(str(path), header, body, [f"line {n}" for n in lines[1:]])


# ------------------------------------------------------------------------------------ graph files
def read_graph(path: Path, kind: str):
    """A NetworkX graph read from a ``.graphml`` / ``.gml`` / ``.edgelist`` file.

    Raises:
        DataNotFoundError: no such file. DataError: the reader cannot parse it.
    """
    import networkx as nx
    if not path.is_file():
        raise DataNotFoundError(f"graph file not found: {path}")
    try:
        if kind == "graphml":
            return nx.read_graphml(path)
        if kind == "gml":
            try:  # NetworkX's convention: the GML labels name the nodes
                return nx.read_gml(path)
            except nx.NetworkXError:  # labels missing or repeated (class labels): the GML ids
                return nx.read_gml(path, label=None)
        return nx.read_edgelist(path, create_using=nx.DiGraph, nodetype=str, data=False)
    except Exception as err:  # noqa: BLE001 - NetworkX, XML and parse errors differ by reader
        why = " ".join(str(err).split()) or type(err).__name__
        name = "an edge list" if kind == "edgelist" else kind.upper()
        raise DataError(f"{path}: cannot be parsed as {name} ({why[:200]}); check the file, or "
                        "give a CSV edge list") from None


def attribute_table(graph, path: Path, id_column: str) -> tuple[Table, list[Any]]:
    """A graph file's node attributes as a table (cells as text), in the file's node order, and
    the graph's node keys; the ids are the node keys, or the attribute ``id_column`` where every
    node has one."""
    nodes = list(graph.nodes(data=True))
    keys = [n for n, _ in nodes]
    columns: list[str] = []
    for _, attrs in nodes:
        columns.extend(a for a in attrs if a not in columns)
    use_attr = id_column in columns and all(id_column in a for _, a in nodes)
    ids = [cell_text(a[id_column]) if use_attr else cell_text(n) for n, a in nodes]
    columns = [c for c in columns if c != id_column] if use_attr else columns
    rows = [[i] + [cell_text(a.get(c, "")) for c in columns] for i, (_, a) in zip(ids, nodes)]
    return Table(str(path), [id_column] + columns, rows, [f"node {i!r}" for i in ids]), keys


def cell_text(value: Any) -> str:
    """A graph attribute as a table cell: numbers as Python writes them, lists comma-joined."""
    if isinstance(value, (list, tuple)):
        return ",".join(cell_text(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return ""
    return str(value).strip()


# ------------------------------------------------------------------------------------ ids and edges
def unique_ids(ids: list[str], table: Table, id_column: str) -> dict[str, int]:
    """``{id: row}`` of the id column.

    Raises:
        DataError: an empty or repeated id (naming its rows).
    """
    index: dict[str, int] = {}
    for i, v in enumerate(ids):
        if v == "":
            raise DataError(f"{table.source} {table.where[i]}: empty id in column "
                            f"{id_column!r}; give every node an id")
        if v in index:
            raise DataError(f"{table.source} {table.where[i]}: id {v!r} repeats the "
                            f"{table.where[index[v]]}; node ids must be unique")
        index[v] = i
    return index


def find_id_column(table: Table, exclude: Sequence[str], endpoints: set[str],
                   first_row: Sequence[str] | None = None) -> str | None:
    """The node table's id column where ``data.id_column`` is unset: the first column named as
    one of :data:`ID_COLUMN_NAMES` (any case; the earlier name preferred), else the first column
    whose cells are distinct and hold every edge endpoint (``endpoints``: the edge list's ids, or
    a graph file's node keys; ``first_row``: an edge list's first two cells, which may be a
    header: they must be both ids of the column or neither); ``None`` when no column qualifies
    (the nodes are then the table's rows). ``exclude``: the label, mask and listed feature
    columns, never ids. The choice is logged; several qualifying columns, with a WARNING naming
    them.
    """
    columns = [c for c in table.columns if c not in exclude]
    named = {}
    for c in columns:
        named.setdefault(c.lower(), c)
    for name in ID_COLUMN_NAMES:
        if name in named:
            log.info("%s: node ids in column %r (by its name; data.id_column names another)",
                     table.source, named[name])
            return named[name]
    if not endpoints:
        return None
    found = []
    for c in columns:
        cells = table.column(c)
        values = set(cells)
        if len(values) != len(cells) or "" in values or not endpoints <= values:
            continue
        if first_row is not None and len(first_row) >= 2 and \
                (first_row[0] in values) != (first_row[1] in values):
            continue
        found.append(c)
    if len(found) > 1:
        log.warning("%s: columns %s each hold every node id of the edge list; the first, %r, is "
                    "read as the id column (set data.id_column to choose)", table.source,
                    ", ".join(repr(c) for c in found), found[0])
    elif found:
        log.info("%s: node ids in column %r (its cells are the edge list's ids; set "
                 "data.id_column to name another)", table.source, found[0])
    return found[0] if found else None


def edge_endpoints(rows: list[list[str]]) -> tuple[set[str], list[str] | None]:
    """The ids a delimited edge list's rows (:func:`read_rows`) name below its first row, and
    that first row's two cells (a header or an edge), for :func:`find_id_column`."""
    if not rows:
        return set(), None
    return {c for r in rows[1:] for c in r[:2]}, rows[0][:2]


def missing_ids_error(path: Path, missing: list[tuple[str, str]], count: int,
                      nodes: str) -> DataError:
    """The error for edge endpoints of ``path`` that are not nodes of ``nodes``: the first
    :data:`SHOWN_IDS` of ``missing`` (``(id, where)``) named, then the count."""
    shown = ", ".join(f"{v!r} ({where})" for v, where in missing[:SHOWN_IDS])
    more = f" and {count - SHOWN_IDS} more" if count > SHOWN_IDS else ""
    return DataError(f"{path}: {count} edge endpoint(s) not in {nodes}: {shown}{more}; add "
                     "those nodes to the node table or remove their edges")


def edges_by_id(path: Path, index: dict[str, int], nodes: str,
                rows: tuple[list[list[str]], list[int]] | None = None) -> np.ndarray:
    """``[2, E]`` node indices of a delimited edge list whose ids are looked up in ``index``
    (``rows``: the file's :func:`read_rows`, where already read)."""
    rows, lines = rows if rows is not None else read_rows(path, "edge list", comments=True)
    if rows and len(rows[0]) >= 2 and rows[0][0] not in index and rows[0][1] not in index:
        log.info("%s: line %d (%s) is read as a header: neither id is a node", path, lines[0],
                 ", ".join(rows[0][:2]))
        check_header(path, rows[0][:2])  # the source and target columns
        rows, lines = rows[1:], lines[1:]
    src, dst, missing, count = [], [], [], 0
    for cells, line in zip(rows, lines):
        if len(cells) < 2:
            raise DataError(f"{path} line {line}: {len(cells)} cell(s); an edge list needs two "
                            "node ids per line (source, target)")
        for v in cells[:2]:
            if v not in index:
                count += 1
                if len(missing) < SHOWN_IDS:
                    missing.append((v, f"line {line}"))
        if count == 0:
            src.append(index[cells[0]])
            dst.append(index[cells[1]])
    if count:
        raise missing_ids_error(path, missing, count, nodes)
    return np.array([src, dst], dtype=np.int64).reshape(2, -1)


def edges_by_row(path: Path, num_nodes: int, id_base: int | None, nodes: str,
                 rows: tuple[list[list[str]], list[int]] | None = None
                 ) -> tuple[np.ndarray, int]:
    """``[2, E]`` 0-based node indices of a delimited edge list of row numbers (a node table
    without an id column), and the id base used (0 or 1) (``rows``: the file's
    :func:`read_rows`, where already read)."""
    rows, lines = rows if rows is not None else read_rows(path, "edge list", comments=True)
    if rows and len(rows[0]) >= 2 and not (INT_CELL.match(rows[0][0])
                                           and INT_CELL.match(rows[0][1])):
        check_header(path, rows[0][:2])  # the source and target columns
        rows, lines = rows[1:], lines[1:]  # a header line
    pairs = np.empty((2, len(rows)), dtype=np.int64)
    for k, (cells, line) in enumerate(zip(rows, lines)):
        if len(cells) < 2:
            raise DataError(f"{path} line {line}: {len(cells)} cell(s); an edge list needs two "
                            "node ids per line (source, target)")
        for j in (0, 1):
            if not INT_CELL.match(cells[j]):
                raise DataError(
                    f"{path} line {line}: {cells[j]!r} is not a row number; {nodes} has no id "
                    "column, so the edge list must hold 0- or 1-based row numbers (or add the "
                    "id column, or name it with data.id_column)")
            pairs[j, k] = int(cells[j])
    if id_base is None:
        if pairs.size == 0 or int(pairs.min()) == 0:
            id_base = 0
        elif int(pairs.max()) == num_nodes:
            id_base = 1
        else:
            raise DataError(
                f"{path}: cannot tell whether the node ids are 0- or 1-based (they span "
                f"{int(pairs.min())}..{int(pairs.max())} of {num_nodes} nodes); set "
                "data.options.id_base to 0 or 1")
    pairs -= id_base
    bad = np.flatnonzero((pairs < 0).any(0) | (pairs >= num_nodes).any(0))
    if bad.size:
        missing = [(rows[k][j], f"line {lines[k]}") for k in bad[:SHOWN_IDS].tolist()
                   for j in (0, 1) if not 0 <= int(rows[k][j]) - id_base < num_nodes]
        count = int(((pairs < 0) | (pairs >= num_nodes)).sum())
        raise missing_ids_error(path, missing, count, f"{nodes} ({num_nodes} rows, {id_base}-based "
                           f"ids {id_base}..{num_nodes - 1 + id_base})")
    return pairs, id_base


def check_some_edges(path: Path, num_edges: int, graph_file: bool, allow: bool) -> None:
    """Refuses an edge list (or graph file) without a single edge, unless ``allow``
    (``data.allow_no_edges``): a 0-byte or header-only file is far more often a wrong path or
    an export that failed than a graph meant to have none.

    Raises:
        DataError: no edge, naming the file and the key that allows it.
    """
    if num_edges or allow:
        return
    if graph_file:
        what = "the graph holds no edges"
    elif path.stat().st_size == 0:
        what = "the edge list is empty (0 bytes)"
    else:
        what = "the edge list holds no edges (a header, comments or blank lines only)"
    raise DataError(f"{path}: {what}; give one edge per line (source, target), or set "
                    "data.allow_no_edges: true to train on the nodes without edges")


def edge_index_of(pairs: np.ndarray | torch.Tensor, num_nodes: int, undirected: bool
                  ) -> torch.Tensor:
    """``edge_index`` ``[2, E]`` of the node pairs: both directions where ``undirected``,
    duplicates dropped (``coalesce``)."""
    from torch_geometric.utils import coalesce, to_undirected
    ei = torch.as_tensor(pairs, dtype=torch.long).reshape(2, -1)
    if undirected:
        return to_undirected(ei, num_nodes=num_nodes)
    return coalesce(ei, num_nodes=num_nodes)
