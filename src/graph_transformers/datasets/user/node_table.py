r"""A node-level graph from plain files (``data.name: node_table``): an edge list and a node table.

The files:

- **edges** (``data.edges``): a CSV or TSV edge list (``.csv``, ``.tsv``, ``.txt``, ...; the
  delimiter — tab, comma, semicolon or spaces — is read off the first line; a header line is
  optional; lines starting with ``#`` are comments; columns after the first two, such as a
  weight, are ignored), or a graph file NetworkX reads: ``.graphml``, ``.gml`` (node ids: the
  GML ``label``\ s where every node has a distinct one, NetworkX's convention, else the GML
  ``id``\ s, ``label`` then being an attribute like any other) or ``.edgelist``
  (whitespace-separated, NetworkX's ``read_edgelist``). A graph file may carry the node
  attributes itself; the node table is then optional.
- **nodes** (``data.nodes``): a CSV or TSV with a header line, one row per node (every node of
  the graph, isolated ones included): an id column (``data.id_column``, default ``id``), a label
  column (``data.label_column``, default ``label``), feature columns (``data.feature_columns``,
  default every other column but the mask columns ``train_mask`` / ``val_mask`` /
  ``test_mask``) and optionally the three mask columns.

How they are read:

- **ids**: the edge list's ids are looked up in the node table's id column (any strings). A
  node table without that column lists the nodes in order: the edge list then holds row numbers,
  0-based or 1-based, read off the ids (0 present → 0-based; the number of nodes present →
  1-based) or given as ``data.options.id_base``.
- **edges**: ``data.undirected: true`` (the default) adds the reverse of every edge; duplicate
  edges are dropped either way (``coalesce``). An undirected graph file gives both directions
  whatever ``data.undirected`` says.
- **labels**: an empty cell (or ``nan``) is an unlabelled node: in the graph, in no split.
  Integers or strings → classification (class ids in sorted order, numbers sorted as numbers;
  accuracy); other numbers → regression (MAE). ``data.task`` forces either.
- **features**: each feature column is a number per node, or a vector per node in one cell
  (comma-separated, optionally in brackets: ``"0.1,0.2,0.3"``, quoted in a CSV); the columns are
  concatenated in order into ``x`` ``[num_nodes, F]`` (float), each column standardized to mean
  0 and s.d. 1 over all nodes (``data.options.standardize_features: false`` keeps the values as
  written). No feature column → one constant feature per node.
- **split** (``data.split``): ``random:TRAIN,VAL,TEST`` — fractions of the labelled nodes
  (``round(fraction × labelled nodes)`` each) drawn from ``data.seed``, stratified by class for
  classification (each split holds the classes in their overall proportions, to within one
  node per class); ``columns`` — the table's ``train_mask`` / ``val_mask`` / ``test_mask``
  (``0`` / ``1``, ``true`` / ``false``, ``yes`` / ``no``; empty = ``0``); or the path of an
  ``.npz`` file with boolean (or 0 / 1) arrays ``train_mask``, ``val_mask``, ``test_mask`` of
  length ``num_nodes``, **in node-table order** (row order; for a graph file without a node
  table, the file's node order). Unset: ``columns`` when the table has the three mask columns,
  else ``random:0.6,0.2,0.2``.

The result is one PyG ``Data`` (:func:`read_node_table`) that the single-graph machinery of
:mod:`~graph_transformers.datasets.user.graph_list` trains on (:class:`NodeTable`, a
:class:`~graph_transformers.datasets.user.graph_list.GraphFile`): each split is the whole graph
with a ``node_mask`` selecting its nodes. The graph is written once to
``<cache>/NodeTable/graphs/<key>.pt``, the key the sha256 of the graph's tensors (so of the
files' contents and the reading settings); its encodings are cached by the graph file's
machinery. Errors are one line (:class:`~graph_transformers.errors.DataError`) naming the file,
the line (or node) and the fix.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import logging
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ...data.cache import DataNotFoundError, resolve_cache_dir, sha256_of
from ...data.generated import SPLITS, check_split
from ...data.registry import DatasetSpec
from ...data.textfiles import check_header, csv_records, decode_text
from ...errors import DataError
from .graph_list import GraphFile, graph_list_spec, infer_info

log = logging.getLogger(__name__)

__all__ = ["NodeTable", "NodeTableGraph", "read_node_table", "node_table_spec",
           "load_node_table", "MASK_COLUMNS", "DEFAULT_SPLIT", "GRAPH_FORMATS"]

#: the mask columns of ``data.split: columns`` (never features)
MASK_COLUMNS: tuple[str, ...] = tuple(f"{s}_mask" for s in SPLITS)
#: ``data.split`` when unset and the table has no mask columns
DEFAULT_SPLIT = "random:0.6,0.2,0.2"
#: suffix of ``data.edges`` → the NetworkX reader used
GRAPH_FORMATS: dict[str, str] = {".graphml": "graphml", ".gml": "gml", ".edgelist": "edgelist"}
#: cells that mean "no label"
_MISSING = ("", "nan")
_TRUE = ("1", "1.0", "true", "t", "yes", "y")
_FALSE = ("0", "0.0", "false", "f", "no", "n", "")
_INT = re.compile(r"^[+-]?\d+$")
#: ids named in an error message
_SHOW = 3
#: bump when the graph written for a setting changes
_FORMAT_VERSION = 1


@dataclass(frozen=True)
class NodeTableGraph:
    """A node-level graph read from plain files (:func:`read_node_table`).

    Attributes:
        data: the graph: ``x`` ``FloatTensor [N, F]`` (absent without feature columns),
            ``edge_index`` ``LongTensor [2, E]``, ``y`` (``LongTensor [N]`` class ids for
            classification, unlabelled nodes 0 and in no split; ``FloatTensor [N, 1]`` for
            regression, unlabelled nodes NaN), ``train_mask`` / ``val_mask`` / ``test_mask``
            ``BoolTensor [N]`` (disjoint, labelled nodes only), ``node_id`` (the user's ids, a
            list of N strings) and ``num_nodes``.
        node_ids: the user's node ids, in node order (``data.node_id``).
        labelled: ``BoolTensor [N]``, which nodes have a label.
        task: ``"classification"`` or ``"regression"``.
        classes: the class names in class-id order (classification), else ``None``.
        feature_names: one name per column of ``x`` (``col`` or ``col[k]`` for a vector column).
        split_rule: how the split was made, for the provenance.
        files: ``{"edges", "nodes", "split"}`` → path, where given.
        sha256: the same roles → sha256 of the file's bytes.
        standardized: whether the feature columns were standardized.
    """

    data: Data
    node_ids: tuple[str, ...]
    labelled: torch.Tensor
    task: str
    classes: tuple[str, ...] | None
    feature_names: tuple[str, ...]
    split_rule: str
    files: dict[str, str]
    sha256: dict[str, str]
    standardized: bool = False

    @functools.cached_property
    def key(self) -> str:
        """24 hex digits of sha256 over the graph's tensors (``x``, ``edge_index``, ``y``, the
        masks): the name of its cached file."""
        h = hashlib.sha256(f"node_table v{_FORMAT_VERSION} n={int(self.data.num_nodes)};".encode())
        for name in ("x", "edge_index", "y", *MASK_COLUMNS):
            t = getattr(self.data, name, None)
            if isinstance(t, torch.Tensor):
                h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
                h.update(t.contiguous().numpy().tobytes())
        return h.hexdigest()[:24]

    def provenance(self) -> dict[str, Any]:
        """The record ``metrics.json`` keeps: files, hashes, sizes, task, classes and split."""
        d = self.data
        return {"files": dict(self.files), "sha256": dict(self.sha256),
                "num_nodes": int(d.num_nodes), "num_edges": int(d.edge_index.size(1)),
                "num_labelled": int(self.labelled.sum()), "task": self.task,
                "classes": list(self.classes) if self.classes is not None else None,
                "num_features": len(self.feature_names),
                "features_standardized": self.standardized, "split_rule": self.split_rule,
                "split_sizes": {s: int(d[f"{s}_mask"].sum()) for s in SPLITS}}


@dataclass
class _Table:
    """Node rows as text cells: ``columns`` (names), ``rows`` (one list of cells per node),
    ``where`` (``"line 7"`` or ``"node 'a'"`` per row, for messages) and ``source`` (a name)."""

    source: str
    columns: list[str]
    rows: list[list[str]]
    where: list[str]

    def column(self, name: str) -> list[str]:
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


def _rows(path: Path, what: str, comments: bool) -> tuple[list[list[str]], list[int]]:
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


def _read_table(path: Path) -> _Table:
    """A node table: a header line, then one row per node with as many cells.

    Raises:
        DataNotFoundError: no such file. DataError: empty, no rows, a repeated column name or a
            row whose cell count differs from the header's.
    """
    rows, lines = _rows(path, "node table", comments=False)
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
    return _Table(str(path), header, body, [f"line {n}" for n in lines[1:]])


# ------------------------------------------------------------------------------------ graph files
def _read_graph(path: Path, kind: str):
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


def _attribute_table(graph, path: Path, id_column: str) -> tuple[_Table, list[Any]]:
    """A graph file's node attributes as a table (cells as text), in the file's node order, and
    the graph's node keys; the ids are the node keys, or the attribute ``id_column`` where every
    node has one."""
    nodes = list(graph.nodes(data=True))
    keys = [n for n, _ in nodes]
    columns: list[str] = []
    for _, attrs in nodes:
        columns.extend(a for a in attrs if a not in columns)
    use_attr = id_column in columns and all(id_column in a for _, a in nodes)
    ids = [_text(a[id_column]) if use_attr else _text(n) for n, a in nodes]
    columns = [c for c in columns if c != id_column] if use_attr else columns
    rows = [[i] + [_text(a.get(c, "")) for c in columns] for i, (_, a) in zip(ids, nodes)]
    return _Table(str(path), [id_column] + columns, rows, [f"node {i!r}" for i in ids]), keys


def _text(value: Any) -> str:
    """A graph attribute as a table cell: numbers as Python writes them, lists comma-joined."""
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return ""
    return str(value).strip()


# ------------------------------------------------------------------------------------ ids and edges
def _unique_ids(ids: list[str], table: _Table, id_column: str) -> dict[str, int]:
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


def _missing_ids(path: Path, missing: list[tuple[str, str]], count: int, nodes: str) -> DataError:
    shown = ", ".join(f"{v!r} ({where})" for v, where in missing[:_SHOW])
    more = f" and {count - _SHOW} more" if count > _SHOW else ""
    return DataError(f"{path}: {count} edge endpoint(s) not in {nodes}: {shown}{more}; add "
                     "those nodes to the node table or remove their edges")


def _edges_by_id(path: Path, index: dict[str, int], nodes: str) -> np.ndarray:
    """``[2, E]`` node indices of a delimited edge list whose ids are looked up in ``index``."""
    rows, lines = _rows(path, "edge list", comments=True)
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
                if len(missing) < _SHOW:
                    missing.append((v, f"line {line}"))
        if count == 0:
            src.append(index[cells[0]])
            dst.append(index[cells[1]])
    if count:
        raise _missing_ids(path, missing, count, nodes)
    return np.array([src, dst], dtype=np.int64).reshape(2, -1)


def _edges_by_row(path: Path, num_nodes: int, id_base: int | None, nodes: str
                  ) -> tuple[np.ndarray, int]:
    """``[2, E]`` 0-based node indices of a delimited edge list of row numbers (a node table
    without an id column), and the id base used (0 or 1)."""
    rows, lines = _rows(path, "edge list", comments=True)
    if rows and len(rows[0]) >= 2 and not (_INT.match(rows[0][0]) and _INT.match(rows[0][1])):
        check_header(path, rows[0][:2])  # the source and target columns
        rows, lines = rows[1:], lines[1:]  # a header line
    pairs = np.empty((2, len(rows)), dtype=np.int64)
    for k, (cells, line) in enumerate(zip(rows, lines)):
        if len(cells) < 2:
            raise DataError(f"{path} line {line}: {len(cells)} cell(s); an edge list needs two "
                            "node ids per line (source, target)")
        for j in (0, 1):
            if not _INT.match(cells[j]):
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
        missing = [(rows[k][j], f"line {lines[k]}") for k in bad[:_SHOW].tolist()
                   for j in (0, 1) if not 0 <= int(rows[k][j]) - id_base < num_nodes]
        count = int(((pairs < 0) | (pairs >= num_nodes)).sum())
        raise _missing_ids(path, missing, count, f"{nodes} ({num_nodes} rows, {id_base}-based "
                           f"ids {id_base}..{num_nodes - 1 + id_base})")
    return pairs, id_base


def _check_some_edges(path: Path, num_edges: int, graph_file: bool, allow: bool) -> None:
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


def _edge_index(pairs: np.ndarray | torch.Tensor, num_nodes: int, undirected: bool
                ) -> torch.Tensor:
    from torch_geometric.utils import coalesce, to_undirected
    ei = torch.as_tensor(pairs, dtype=torch.long).reshape(2, -1)
    if undirected:
        return to_undirected(ei, num_nodes=num_nodes)
    return coalesce(ei, num_nodes=num_nodes)


# ------------------------------------------------------------------------------------ labels
def _is_number(s: str) -> bool:
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def _labels(table: _Table, label_column: str, task: str | None
            ) -> tuple[torch.Tensor, torch.Tensor, str, tuple[str, ...] | None]:
    """``(y, labelled, task, classes)`` of the label column (see the module docstring)."""
    if label_column not in table.columns:
        raise DataError(f"{table.source}: no label column {label_column!r} (columns: "
                        f"{', '.join(table.columns)}); name it with data.label_column")
    if task not in (None, "classification", "regression"):
        raise DataError(f"data.task={task!r} does not apply to a node table (one label column): "
                        "use classification (0/1 labels are two classes) or regression")
    cells = table.column(label_column)
    labelled = [c.lower() not in _MISSING for c in cells]
    values = [c for c, ok in zip(cells, labelled) if ok]
    if not values:
        raise DataError(f"{table.source}: the label column {label_column!r} is empty; give the "
                        "labels of (at least) the training nodes")
    numbers = all(_is_number(v) for v in values)
    if task is None:
        task = "classification" if not numbers or all(_INT.match(v) for v in values) \
            else "regression"
    mask = torch.tensor(labelled, dtype=torch.bool)
    if task == "regression":
        y = torch.full((len(cells), 1), float("nan"))
        for i, (c, ok) in enumerate(zip(cells, labelled)):
            if ok:
                if not _is_number(c):
                    raise DataError(f"{table.source} {table.where[i]}: label {c!r} is not a "
                                    "number; regression needs numeric labels (or set "
                                    "data.task=classification)")
                y[i, 0] = float(c)
        return y, mask, task, None
    uniq = set(values)
    classes = tuple(sorted(uniq, key=lambda v: (float(v), v)) if numbers else sorted(uniq))
    if len(classes) < 2:
        raise DataError(f"{table.source}: every label in column {label_column!r} is "
                        f"{classes[0]!r}; classification needs at least two classes")
    ids = {c: k for k, c in enumerate(classes)}
    y = torch.tensor([ids[c] if ok else 0 for c, ok in zip(cells, labelled)], dtype=torch.long)
    return y, mask, task, classes


# ------------------------------------------------------------------------------------ features
def _vector(cell: str) -> list[str]:
    body = cell.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    return [t for t in re.split(r"[,;\s]+", body.strip()) if t]


def _feature_column(table: _Table, name: str) -> np.ndarray:
    """``[N, width]`` float64 of one feature column: a number or a vector of numbers per cell.

    Raises:
        DataError: an empty cell, a cell that is no number, a non-finite value, or vectors of
            different lengths (naming the row).
    """
    cells = table.column(name)
    try:
        col = np.array(cells, dtype=np.float64).reshape(-1, 1)
    except ValueError:
        parts = [_vector(c) for c in cells]
        width = len(parts[0])
        for i, p in enumerate(parts):
            if not p:
                raise DataError(f"{table.source} {table.where[i]}: no value in feature column "
                                f"{name!r}; fill it in, or leave the column out with "
                                "data.feature_columns")
            if len(p) != width:
                raise DataError(f"{table.source} {table.where[i]}: the feature vector in column "
                                f"{name!r} has {len(p)} values, the first row's has {width}; "
                                "every node needs a vector of the same length")
            for t in p:
                if not _is_number(t) and t.lower() not in ("nan", "inf", "-inf", "+inf"):
                    raise DataError(
                        f"{table.source} {table.where[i]}: feature column {name!r} holds "
                        f"{t!r}, not a number (or a comma-separated vector of numbers); list "
                        "the feature columns in data.feature_columns")
        col = np.array(parts, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(col).all(1))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"{table.source} {table.where[i]}: feature column {name!r} holds "
                        f"{cells[i]!r}, not a finite number; fill in the value")
    return col


def _features(table: _Table, exclude: Sequence[str], feature_columns: Sequence[str] | None
              ) -> tuple[torch.Tensor | None, tuple[str, ...]]:
    """``x`` ``[N, F]`` (``None`` without feature columns) and the names of its columns."""
    if feature_columns is not None:
        unknown = [c for c in feature_columns if c not in table.columns]
        if unknown:
            raise DataError(f"{table.source}: data.feature_columns names {unknown}, not in the "
                            f"columns {table.columns}")
        clash = [c for c in feature_columns if c in exclude]
        if clash:
            raise DataError(f"data.feature_columns names {clash}, the id, label or mask "
                            "column(s); leave them out")
        names = list(feature_columns)
    else:
        names = [c for c in table.columns if c not in exclude]
    if not names:
        return None, ()
    blocks = [_feature_column(table, c) for c in names]
    labels = [f"{c}[{k}]" if b.shape[1] > 1 else c for c, b in zip(names, blocks)
              for k in range(b.shape[1])]
    return torch.from_numpy(np.concatenate(blocks, axis=1)).float(), tuple(labels)


# ------------------------------------------------------------------------------------ splits
def _parse_split(split: str | None, table: _Table) -> tuple[str, Any]:
    """``("random", fractions)``, ``("columns", None)`` or ``("npz", path)``."""
    has_masks = all(m in table.columns for m in MASK_COLUMNS)
    if split is None:
        split = "columns" if has_masks else DEFAULT_SPLIT
    text = str(split).strip()
    usage = ("data.split must be random:TRAIN,VAL,TEST (fractions > 0 summing to at most 1, e.g. "
             f"{DEFAULT_SPLIT}), columns (the node table's train_mask / val_mask / test_mask) or "
             f"the path of a .npz file of those three masks; got {text!r}")
    if text == "columns":
        lacking = [m for m in MASK_COLUMNS if m not in table.columns]
        if lacking:
            raise DataError(f"data.split is columns, but {table.source} has no column(s) "
                            f"{', '.join(lacking)}; add them (0/1 per node) or use "
                            f"data.split={DEFAULT_SPLIT}")
        return "columns", None
    if text.lower() == "random" or text.lower().startswith("random:"):
        body = text.split(":", 1)[1] if ":" in text else DEFAULT_SPLIT.split(":", 1)[1]
        try:
            fractions = tuple(float(v) for v in body.split(","))
        except ValueError:
            raise DataError(usage) from None
        if len(fractions) != 3 or min(fractions) <= 0 or sum(fractions) > 1 + 1e-9:
            raise DataError(usage)
        return "random", fractions
    if text.lower().endswith(".npz"):
        return "npz", Path(text).expanduser()
    raise DataError(usage)


def _random_masks(n: int, labelled: torch.Tensor, y: torch.Tensor, task: str,
                  fractions: tuple[float, float, float], seed: int) -> dict[str, np.ndarray]:
    """Random masks of the labelled nodes, seeded: ``round(fraction × labelled)`` nodes per
    split (cumulatively), stratified for classification. Each class is shuffled and its nodes
    get the ranks ``(i + 0.5) / class size``; the labelled nodes, ordered by rank (ties broken at
    random), are cut at the fractions, so every prefix, and so every split, holds the classes in
    their overall proportions to within one node per class."""
    rng = np.random.default_rng(seed)
    ids = np.flatnonzero(labelled.numpy())
    groups = [ids]
    if task == "classification":
        cls = y.numpy()[ids]
        groups = [ids[cls == c] for c in np.unique(cls)]
    order = np.concatenate([rng.permutation(g) for g in groups]) if ids.size else ids
    rank = np.concatenate([(np.arange(g.size) + 0.5) / g.size for g in groups]) \
        if ids.size else np.zeros(0)
    order = order[np.lexsort((rng.random(order.size), rank))]
    size = order.size
    cuts = [int(round(fractions[0] * size)), int(round((fractions[0] + fractions[1]) * size))]
    cuts.append(size if abs(sum(fractions) - 1.0) < 1e-9 else
                min(int(round(sum(fractions) * size)), size))
    masks = {s: np.zeros(n, dtype=bool) for s in SPLITS}
    bounds = [0, *cuts]
    for s, lo, hi in zip(SPLITS, bounds[:-1], bounds[1:]):
        masks[s][order[lo:hi]] = True
    return masks


def _bool_cells(table: _Table, column: str) -> np.ndarray:
    out = np.zeros(len(table.rows), dtype=bool)
    for i, c in enumerate(table.column(column)):
        v = c.lower()
        if v in _TRUE:
            out[i] = True
        elif v not in _FALSE:
            raise DataError(f"{table.source} {table.where[i]}: {column} is {c!r}; a mask cell "
                            "is 0 or 1 (true / false)")
    return out


def _npz_masks(path: Path, n: int) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise DataNotFoundError(f"split file not found: {path} (data.split)")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
    except Exception as err:  # noqa: BLE001 - zip, pickle and format errors
        raise DataError(f"{path}: not a readable .npz file ({' '.join(str(err).split())[:120]})"
                        "; write it with numpy.savez(path, train_mask=..., val_mask=..., "
                        "test_mask=...)") from None
    masks = {}
    for s, key in zip(SPLITS, MASK_COLUMNS):
        if key not in arrays:
            raise DataError(f"{path}: no array {key!r} (has {sorted(arrays)}); save train_mask, "
                            "val_mask and test_mask")
        a = arrays[key].reshape(-1)
        if a.size != n:
            raise DataError(f"{path}: {key} has {a.size} entries, the graph {n} nodes; one "
                            "entry per node, in node-table order")
        if a.dtype != bool:
            if not np.isin(a, (0, 1)).all():
                raise DataError(f"{path}: {key} holds values other than 0 / 1 (or true / "
                                "false)")
            a = a.astype(bool)
        masks[s] = a
    return masks


def _check_masks(masks: dict[str, np.ndarray], labelled: np.ndarray, ids: Sequence[str],
                 how: str) -> None:
    def show(idx: np.ndarray) -> str:
        names = ", ".join(repr(ids[i]) for i in idx[:_SHOW].tolist())
        return names + (f" and {idx.size - _SHOW} more" if idx.size > _SHOW else "")

    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        both = np.flatnonzero(masks[a] & masks[b])
        if both.size:
            raise DataError(f"{how}: the {a} and {b} masks overlap on {both.size} node(s) "
                            f"({show(both)}); each node belongs to one split at most")
    for s in SPLITS:
        unlabelled = np.flatnonzero(masks[s] & ~labelled)
        if unlabelled.size:
            raise DataError(f"{how}: the {s} split holds {unlabelled.size} node(s) without a "
                            f"label ({show(unlabelled)}); give them labels or leave them out of "
                            "the split")
        if not masks[s].any():
            raise DataError(f"{how}: the {s} split holds no nodes ({int(labelled.sum())} "
                            f"labelled nodes); every split needs at least one labelled node")


# ------------------------------------------------------------------------------------ the graph
def read_node_table(edges: str | os.PathLike, nodes: str | os.PathLike | None = None, *,
                    id_column: str = "id", label_column: str = "label",
                    feature_columns: Sequence[str] | None = None, undirected: bool = True,
                    task: str | None = None, split: str | None = None, seed: int = 0,
                    id_base: int | None = None, standardize_features: bool = True,
                    allow_no_edges: bool = False) -> NodeTableGraph:
    """Reads a node-level graph from plain files (see the module docstring for the formats).

    Args:
        edges: an edge list (CSV / TSV / whitespace, header optional) or a ``.graphml``,
            ``.gml`` or ``.edgelist`` file.
        nodes: the node table (CSV / TSV with a header); optional for a graph file whose nodes
            carry the attributes.
        id_column, label_column: column names in the node table (attribute names in a graph
            file).
        feature_columns: the feature columns (default: every other column but the masks).
        undirected: add the reverse of every edge.
        task: ``"classification"`` or ``"regression"`` (default: read off the labels).
        split: ``"random:TRAIN,VAL,TEST"``, ``"columns"`` or a ``.npz`` path (default:
            ``columns`` when the table has the mask columns, else :data:`DEFAULT_SPLIT`).
        seed: the seed of a random split.
        id_base: ``0`` or ``1``: the base of row-number ids (a node table without id column);
            default: read off the ids.
        standardize_features: scale each feature column to mean 0 and s.d. 1 over all nodes
            (a constant column becomes 0), so that columns of different scales (a year, a
            count) do not swamp the others; ``False`` keeps the values as written.
        allow_no_edges: accept an edge list (or graph file) without any edge
            (``data.allow_no_edges``); by default a 0-byte or header-only edge list is an error.

    Returns:
        NodeTableGraph: the ``Data`` (``x`` ``[N, F]``, ``edge_index`` ``[2, E]``, ``y``, the
        three masks, ``node_id``) with its ids, classes and provenance.

    Raises:
        DataNotFoundError: a file does not exist.
        DataError: a file that cannot be parsed (not UTF-8 text: a pickle, a zip archive, ...;
            a quoted cell over several lines; a column name given twice in the header); no edge
            at all (unless ``allow_no_edges``); edge ids missing from the node table (the first
            few named, with their lines); repeated or empty ids; no label column; ragged or
            non-numeric features (naming the row); a bad ``data.split``; masks that overlap, hold
            unlabelled nodes or leave a split empty.

    Example:
        >>> import pathlib, tempfile
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "edges.csv").write_text("a,b\\nb,c\\nc,d\\nd,a\\n")
        >>> _ = (d / "nodes.csv").write_text(
        ...     "id,label,f\\na,x,0.1\\nb,y,0.2\\nc,x,0.3\\nd,y,0.4\\n"
        ...     "e,x,0.5\\nf,y,0.6\\n")
        >>> g = read_node_table(d / "edges.csv", d / "nodes.csv", split="random:0.34,0.33,0.33")
        >>> g.data.x.shape, g.data.edge_index.shape, g.classes
        (torch.Size([6, 1]), torch.Size([2, 8]), ('x', 'y'))
    """
    if id_base not in (None, 0, 1):
        raise DataError(f"data.options.id_base must be 0 or 1, got {id_base!r}")
    edges = Path(edges).expanduser()
    kind = GRAPH_FORMATS.get(edges.suffix.lower())
    files = {"edges": str(edges)}
    graph = _read_graph(edges, kind) if kind is not None else None
    if nodes is not None:
        nodes = Path(nodes).expanduser()
        files["nodes"] = str(nodes)
        table = _read_table(nodes)
    elif graph is not None:
        table, _ = _attribute_table(graph, edges, id_column)
        if label_column not in table.columns:
            raise DataError(f"{edges}: no node has the attribute {label_column!r} (attributes: "
                            f"{', '.join(table.columns[1:]) or 'none'}); give the labels in a "
                            "node table (data.nodes) or name the attribute with "
                            "data.label_column")
    else:
        raise DataError(f"data.nodes is required with the edge list {edges.name}: the node table "
                        "holds the labels (only .graphml / .gml files carry node attributes)")
    n = len(table.rows)
    has_ids = id_column in table.columns
    if id_base is not None and has_ids:
        raise DataError(f"data.options.id_base applies to a node table without an id column; "
                        f"{table.source} has the id column {id_column!r} and edges are matched "
                        "by id")
    where_nodes = f"{Path(table.source).name}'s {id_column!r} column" if has_ids else \
        Path(table.source).name
    if has_ids:
        ids = table.column(id_column)
        index = _unique_ids(ids, table, id_column)
    if graph is not None:
        keys = list(graph.nodes)
        if nodes is None:  # the table is the graph's own attributes, in its node order
            lookup = {k: i for i, k in enumerate(keys)}
        elif has_ids:
            lookup, missing = {}, []
            for k in keys:
                if _text(k) in index:
                    lookup[k] = index[_text(k)]
                else:
                    missing.append((_text(k), f"node {_text(k)!r}"))
            if missing:
                raise _missing_ids(edges, missing, len(missing), where_nodes)
        else:
            raise DataError(f"{table.source}: no id column {id_column!r} to match the nodes of "
                            f"{edges.name} with; add it or name it with data.id_column")
        pairs = _graph_pairs(graph, lookup, n)
        base = 0
    elif has_ids:
        pairs, base = _edges_by_id(edges, index, where_nodes), 0
    else:
        pairs, base = _edges_by_row(edges, n, id_base, where_nodes)
        log.info("%s has no %r column: nodes are its rows, the edge list's ids %d-based",
                 table.source, id_column, base)
    node_ids = tuple(table.column(id_column)) if has_ids else \
        tuple(str(i + base) for i in range(n))
    _check_some_edges(edges, int(pairs.shape[1]), graph is not None, allow_no_edges)
    edge_index = _edge_index(pairs, n, undirected)

    y, labelled, task, classes = _labels(table, label_column, task)
    exclude = [c for c in (id_column, label_column, *MASK_COLUMNS) if c in table.columns]
    x, feature_names = _features(table, exclude, feature_columns)
    if not isinstance(standardize_features, bool):
        raise DataError("data.options.standardize_features must be true or false, got "
                        f"{standardize_features!r}")
    if x is not None and standardize_features:
        std = x.double().std(0, unbiased=False)
        x = ((x.double() - x.double().mean(0)) / torch.where(std > 1e-12, std, 1.0)).float()

    how, arg = _parse_split(split, table)
    if how == "random":
        masks = _random_masks(n, labelled, y, task, arg, seed)
        rule = (f"random {','.join(f'{f:g}' for f in arg)} of the labelled nodes"
                f"{', stratified by class' if task == 'classification' else ''} (seed {seed})")
        where = f"data.split={split or DEFAULT_SPLIT}"
    elif how == "columns":
        masks = {s: _bool_cells(table, m) for s, m in zip(SPLITS, MASK_COLUMNS)}
        rule, where = f"mask columns {', '.join(MASK_COLUMNS)} of {table.source}", table.source
    else:
        masks = _npz_masks(arg, n)
        files["split"] = str(arg)
        rule, where = f"masks of {arg} (node-table order)", str(arg)
    _check_masks(masks, labelled.numpy(), node_ids, where)

    data = Data(edge_index=edge_index, y=y, num_nodes=n,
                **{f"{s}_mask": torch.from_numpy(masks[s]) for s in SPLITS})
    if x is not None:
        data.x = x
    data.node_id = list(node_ids)
    sha = {role: sha256_of(p) for role, p in files.items()}
    return NodeTableGraph(data, node_ids, labelled, task, classes, feature_names, rule, files, sha,
                          standardized=x is not None and standardize_features)


def _graph_pairs(graph, lookup: dict[Any, int], n: int) -> torch.Tensor:
    """``[2, E]`` of a NetworkX graph's edges, node keys mapped by ``lookup``, through PyG's
    ``from_networkx`` (both directions of an undirected graph)."""
    import networkx as nx
    from torch_geometric.utils import from_networkx
    plain = nx.DiGraph() if graph.is_directed() else nx.Graph()
    plain.add_nodes_from(range(n))
    plain.add_edges_from((lookup[u], lookup[v]) for u, v in graph.edges())
    return from_networkx(plain).edge_index


def _stamp(path: Any) -> tuple | None:
    if path is None:
        return None
    p = Path(path).expanduser()
    try:
        st = p.stat()
    except OSError:
        return (str(p), None)
    return (str(p.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _read_cached(stamps: tuple, settings: tuple) -> NodeTableGraph:
    return read_node_table(**dict(settings))


def cached_node_table(**settings: Any) -> NodeTableGraph:
    """:func:`read_node_table`, read once per process while the files are unchanged (size and
    modification time); the result is shared: copy ``data`` before changing it."""
    split = settings.get("split")
    npz = split if isinstance(split, str) and split.lower().endswith(".npz") else None
    stamps = tuple(_stamp(settings.get(k)) for k in ("edges", "nodes")) + (_stamp(npz),)
    key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in settings.items()))
    return _read_cached(stamps, key)


# ------------------------------------------------------------------------------------ the dataset
class NodeTable(GraphFile):
    r"""One split of a node-level graph read from plain files (:func:`read_node_table`): the
    whole graph, with ``node_mask`` ``[num_nodes]`` selecting the split's nodes (as the
    Planetoid and single-graph graph-file tasks). The graph is written once to
    ``root/graphs/<key>.pt`` (the key hashes the graph's tensors) and read by
    :class:`~graph_transformers.datasets.user.graph_list.GraphFile`, which caches it with its
    encodings under ``root/processed/``.

    Args:
        root: cache directory (default ``resolve_cache_dir() / "NodeTable"``).
        split: ``"train"``, ``"val"`` or ``"test"``.
        edges, nodes, id_column, label_column, feature_columns: as :func:`read_node_table`.
        undirected, task, seed, id_base, standardize_features: as :func:`read_node_table`.
        allow_no_edges: as :func:`read_node_table` (``data.allow_no_edges``).
        split_rule: :func:`read_node_table`'s ``split`` (``data.split``).
        fold: accepted for the registry's common options; not used.
        transform, pre_transform, force_reload: as PyG's ``InMemoryDataset``.

    Attributes:
        graph (NodeTableGraph): what was read (ids, classes, provenance).
        node_ids (tuple[str, ...]): the user's node ids, in node order.
        classes (tuple[str, ...] | None): class names in class-id order (classification).
        fingerprint_extra (dict): the split's node ids, which the run's data fingerprint
            (:mod:`graph_transformers.training.binding`) covers.

    Raises:
        DataNotFoundError, DataError: see :func:`read_node_table`.
    """

    _missing = "node table graph"

    def __init__(self, root: str | os.PathLike | None = None, split: str = "train",
                 edges: str | os.PathLike | None = None, nodes: str | os.PathLike | None = None,
                 *, id_column: str = "id", label_column: str = "label",
                 feature_columns: Sequence[str] | None = None, undirected: bool = True,
                 task: str | None = None, split_rule: str | None = None, seed: int = 0,
                 id_base: int | None = None, standardize_features: bool = True, fold: int = 0,
                 allow_no_edges: bool = False, transform=None, pre_transform=None,
                 force_reload: bool = False) -> None:
        check_split("NodeTable", split)
        if edges is None:
            raise ValueError("NodeTable: edges (the edge list or graph file) is required")
        self.graph = cached_node_table(
            edges=str(edges), nodes=None if nodes is None else str(nodes), id_column=id_column,
            label_column=label_column,
            feature_columns=tuple(feature_columns) if feature_columns is not None else None,
            undirected=bool(undirected), task=task, split=split_rule, seed=int(seed),
            id_base=id_base, standardize_features=standardize_features,
            allow_no_edges=bool(allow_no_edges))
        root = Path(root).expanduser() if root is not None else \
            resolve_cache_dir() / "NodeTable"
        path = _write_graph(self.graph, root / "graphs")
        super().__init__(root=root, split=split, path=path, level="node", task=self.graph.task,
                         transform=transform, pre_transform=pre_transform,
                         force_reload=force_reload)
        self.node_ids = self.graph.node_ids
        self.classes = self.graph.classes
        record = self.graph.provenance()
        self.provenance = {"node_table": record}
        ids = self.split_indices[split]
        self.fingerprint_extra = {"split_nodes": torch.as_tensor(ids, dtype=torch.long)}
        if split == "train":
            log.info("node table %s: %d nodes (%d labelled), %d edges, %s %s, %d feature "
                     "column(s); split %s: %s", self.graph.files["edges"], record["num_nodes"],
                     record["num_labelled"], record["num_edges"], self.graph.task,
                     f"({len(self.classes)} classes)" if self.classes else "(1 target)",
                     record["num_features"], self.graph.split_rule,
                     "/".join(str(v) for v in record["split_sizes"].values()))

    def __repr__(self) -> str:
        name = Path(self.graph.files["edges"]).name
        return f"{type(self).__name__}({name}, split={self.split!r})"


def _write_graph(graph: NodeTableGraph, folder: Path) -> Path:
    """``folder/<graph.key>.pt``: the graph without its string ids (what the training graph
    holds), written once, atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{graph.key}.pt"
    if not path.is_file():
        data = graph.data.clone()
        del data.node_id
        tmp = folder / f".{graph.key}.{os.getpid()}.part"
        torch.save([data], tmp)
        os.replace(tmp, path)
    return path


# ----------------------------------------------------------------------- loader and registry entry
def node_table_spec(edges: str | os.PathLike | None = None,
                    nodes: str | os.PathLike | None = None, *, id_column: str = "id",
                    label_column: str = "label", feature_columns: Sequence[str] | None = None,
                    undirected: bool = True, task: str | None = None,
                    split_rule: str | None = None, seed: int = 0, id_base: int | None = None,
                    standardize_features: bool = True, allow_no_edges: bool = False
                    ) -> DatasetSpec:
    """The :class:`~graph_transformers.data.registry.DatasetSpec` of ``data.name: node_table``,
    read off the files (the arguments: ``data.edges``, ``data.nodes``, ..., ``data.split`` as
    ``split_rule``, ``data.allow_no_edges``, ``data.options.id_base`` /
    ``standardize_features``; as
    :func:`read_node_table`): level ``node``, task, ``out_dim`` (classes, or 1), metric,
    ``node_dim`` (feature width, 1 without features); regression names the label column as its
    target.

    Raises:
        ValueError: ``edges`` unset. DataNotFoundError / DataError: see :func:`read_node_table`.
    """
    if not edges:
        raise ValueError("data.name is node_table: set data.edges (an edge list .csv / .tsv, or "
                         "a .graphml / .gml / .edgelist file) and data.nodes (the node table)")
    graph = cached_node_table(
        edges=str(edges), nodes=nodes, id_column=id_column, label_column=label_column,
        feature_columns=tuple(feature_columns) if feature_columns is not None else None,
        undirected=bool(undirected), task=task, split=split_rule, seed=int(seed),
        id_base=id_base, standardize_features=standardize_features,
        allow_no_edges=bool(allow_no_edges))
    info = infer_info([graph.data], "node", graph.task)
    spec = graph_list_spec(info, "node_table", load_node_table)
    if graph.task == "regression":
        spec = dataclasses.replace(spec, targets=(str(label_column),))
    return spec


def load_node_table(root: str | os.PathLike, split: str = "train", transform=None,
                    pre_transform=None, force_reload: bool = False, *,
                    edges: str | os.PathLike | None = None,
                    nodes: str | os.PathLike | None = None, id_column: str = "id",
                    label_column: str = "label", feature_columns: Sequence[str] | None = None,
                    undirected: bool = True, task: str | None = None,
                    split_rule: str | None = None, seed: int = 0, fold: int = 0,
                    allow_no_edges: bool = False, **options: Any) -> NodeTable:
    """One split of ``data.name: node_table`` (:class:`NodeTable`, cached under
    ``root/NodeTable/``; ``allow_no_edges``: ``data.allow_no_edges``); ``options``
    (``data.options``: ``id_base``, ``standardize_features``) go to :class:`NodeTable`, which
    refuses a key it does not take (``TypeError``)."""
    return NodeTable(root=Path(root) / "NodeTable", split=split, edges=edges, nodes=nodes,
                     id_column=id_column, label_column=label_column,
                     feature_columns=tuple(feature_columns) if feature_columns is not None
                     else None, undirected=bool(undirected), task=task, split_rule=split_rule,
                     seed=int(seed), fold=fold, allow_no_edges=bool(allow_no_edges),
                     transform=transform, pre_transform=pre_transform,
                     force_reload=force_reload, **options)
