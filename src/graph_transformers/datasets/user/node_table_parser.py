"""The node-table parser (``data.name: node_table``; the formats are described in
:mod:`graph_transformers.datasets.user.node_table`): :func:`read_node_table` reads an edge list
(or a graph file) and a node table into one PyG ``Data`` with its labels, features and split
masks (:class:`NodeTableGraph`); :func:`cached_node_table` reads it once per process. The files
are read by :mod:`.node_files`, the columns by :mod:`.node_columns`.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ...data.cache import sha256_of
from ...data.generated import SPLITS
from ...errors import DataError
from .node_columns import (DEFAULT_SPLIT, MASK_COLUMNS, bool_cells, check_masks, npz_masks,
                           parse_split, random_masks, read_features, read_labels)
from .node_files import (ID_COLUMN_NAMES, SHOWN_COLUMNS, Table, attribute_table, cell_text,
                         check_some_edges, edge_endpoints, edge_index_of, edges_by_id, edges_by_row,
                         find_id_column, missing_ids_error, read_graph, read_rows, read_table,
                         unique_ids)

__all__ = ["GRAPH_FORMATS", "NodeTableGraph", "cached_node_table", "read_node_table"]

log = logging.getLogger(__name__)

#: suffix of ``data.edges`` → the NetworkX reader used
GRAPH_FORMATS: dict[str, str] = {".graphml": "graphml", ".gml": "gml", ".edgelist": "edgelist"}
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
        id_column: the node table's id column used (``None``: the nodes are its rows).
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
    id_column: str | None = None

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
                "id_column": self.id_column,
                "classes": list(self.classes) if self.classes is not None else None,
                "num_features": len(self.feature_names),
                "features_standardized": self.standardized, "split_rule": self.split_rule,
                "split_sizes": {s: int(d[f"{s}_mask"].sum()) for s in SPLITS}}


def read_node_table(edges: str | os.PathLike, nodes: str | os.PathLike | None = None, *,
                    id_column: str | None = None, label_column: str = "label",
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
        id_column: the name of the id column in the node table (the attribute name in a graph
            file). ``None`` (the default): the first column named ``id``, ``node_id``, ``node``,
            ``nodeid`` or ``name`` (any case, in that order of preference), else the first
            column whose distinct cells hold every id of the edge list (several such columns:
            a WARNING names them), else none: the nodes are the table's rows
            (:func:`~.node_files.find_id_column`); a graph file's own attributes: ``id``.
        label_column: the name of the label column in the node table (the attribute name in a
            graph file).
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
    if nodes is None:  # a graph file's own attributes
        id_column = id_column or "id"
    graph, table, files = _read_inputs(edges, nodes, id_column or "id", label_column)
    n = len(table.rows)
    not_ids = [label_column, *MASK_COLUMNS, *(feature_columns or ())]
    pairs, node_ids, id_column = _node_pairs(edges, graph, table, nodes is None, id_column,
                                             id_base, not_ids)
    check_some_edges(edges, int(pairs.shape[1]), graph is not None, allow_no_edges)
    edge_index = edge_index_of(pairs, n, undirected)
    y, labelled, task, classes = read_labels(table, label_column, task)
    exclude = [c for c in (id_column, label_column, *MASK_COLUMNS) if c in table.columns]
    x, feature_names = read_features(table, exclude, feature_columns)
    _log_features(table, exclude, feature_columns, feature_names)
    if not isinstance(standardize_features, bool):
        raise DataError("data.options.standardize_features must be true or false, got "
                        f"{standardize_features!r}")
    if x is not None and standardize_features:
        std = x.double().std(0, unbiased=False)
        x = ((x.double() - x.double().mean(0)) / torch.where(std > 1e-12, std, 1.0)).float()
    masks, rule = _split_masks(split, table, labelled, y, task, seed, node_ids, files)
    data = Data(edge_index=edge_index, y=y, num_nodes=n,
                **{f"{s}_mask": torch.from_numpy(masks[s]) for s in SPLITS})
    if x is not None:
        data.x = x
    data.node_id = list(node_ids)
    sha = {role: sha256_of(p) for role, p in files.items()}
    return NodeTableGraph(data, node_ids, labelled, task, classes, feature_names, rule, files, sha,
                          standardized=x is not None and standardize_features,
                          id_column=id_column if id_column in table.columns else None)


def _log_features(table: Table, exclude: Sequence[str], feature_columns: Sequence[str] | None,
                  feature_names: Sequence[str]) -> None:
    """One INFO line naming the feature columns a node table's ``x`` is made of (the first
    :data:`~.node_files.SHOWN_COLUMNS`, then the count)."""
    used = list(feature_columns) if feature_columns is not None else \
        [c for c in table.columns if c not in exclude]
    if not used:
        log.info("%s: no feature column: one constant feature per node", table.source)
        return
    shown = ", ".join(used[:SHOWN_COLUMNS]) + (f" and {len(used) - SHOWN_COLUMNS} more"
                                               if len(used) > SHOWN_COLUMNS else "")
    log.info("%s: %d feature column(s) (%d values per node): %s%s", table.source, len(used),
             len(feature_names), shown, "" if feature_columns is not None else
             " (every column but the id, label and masks; data.feature_columns lists others)")


def _read_inputs(edges: Path, nodes: str | os.PathLike | None, id_column: str,
                 label_column: str) -> tuple[Any, Table, dict[str, str]]:
    """``(graph, table, files)``: the graph file NetworkX read (``None`` for an edge list), the
    node rows (the node table, or the graph file's node attributes) and the paths by role.

    Raises:
        DataNotFoundError / DataError: as :func:`read_node_table` (no node table for an edge
            list; a graph file whose nodes lack the label attribute).
    """
    kind = GRAPH_FORMATS.get(edges.suffix.lower())
    files = {"edges": str(edges)}
    graph = read_graph(edges, kind) if kind is not None else None
    if nodes is not None:
        nodes = Path(nodes).expanduser()
        files["nodes"] = str(nodes)
        return graph, read_table(nodes), files
    if graph is None:
        raise DataError(f"data.nodes is required with the edge list {edges.name}: the node table "
                        "holds the labels (only .graphml / .gml files carry node attributes)")
    table, _ = attribute_table(graph, edges, id_column)
    if label_column not in table.columns:
        raise DataError(f"{edges}: no node has the attribute {label_column!r} (attributes: "
                        f"{', '.join(table.columns[1:]) or 'none'}); give the labels in a "
                        "node table (data.nodes) or name the attribute with "
                        "data.label_column")
    return graph, table, files


def _node_pairs(edges: Path, graph: Any, table: Table, own_attributes: bool,
                id_column: str | None, id_base: int | None, not_ids: Sequence[str]
                ) -> tuple[Any, tuple[str, ...], str | None]:
    """``(pairs [2, E], node ids, id column)``: the edges as node positions (matched by id, or by
    row number where the table has no id column), the user's id of every node and the id
    column used (``id_column``, or the one :func:`~.node_files.find_id_column` finds where it
    is ``None``; ``not_ids``: columns that are not ids).

    Raises:
        DataError: as :func:`read_node_table` (ids missing from the table, repeated ids, an
            ``id_base`` with an id column, no id column to match a graph file's nodes).
    """
    n = len(table.rows)
    rows = None
    if id_column is None and id_base is None:  # id_base: the edge list holds row numbers
        if graph is not None:
            endpoints, first = {cell_text(k) for k in graph.nodes}, None
        else:
            rows = read_rows(edges, "edge list", comments=True)
            endpoints, first = edge_endpoints(rows[0])
        id_column = find_id_column(table, not_ids, endpoints, first)
    has_ids = id_column is not None and id_column in table.columns
    if id_base is not None and has_ids:
        raise DataError(f"data.options.id_base applies to a node table without an id column; "
                        f"{table.source} has the id column {id_column!r} and edges are matched "
                        "by id")
    where_nodes = f"{Path(table.source).name}'s {id_column!r} column" if has_ids else \
        Path(table.source).name
    index = unique_ids(table.column(id_column), table, id_column) if has_ids else None
    base = 0
    if graph is not None:
        pairs = _graph_file_pairs(edges, graph, table, own_attributes, index, id_column,
                                  where_nodes)
    elif has_ids:
        pairs = edges_by_id(edges, index, where_nodes, rows)
    else:
        pairs, base = edges_by_row(edges, n, id_base, where_nodes, rows)
        what = f"{id_column!r} column" if id_column is not None else \
            f"id column (none named {'/'.join(ID_COLUMN_NAMES)}, none holding every id of the " \
            "edge list)"
        log.info("%s has no %s: nodes are its rows, the edge list's ids %d-based", table.source,
                 what, base)
    node_ids = tuple(table.column(id_column)) if has_ids else \
        tuple(str(i + base) for i in range(n))
    return pairs, node_ids, id_column if has_ids else None


def _graph_file_pairs(edges: Path, graph: Any, table: Table, own_attributes: bool,
                      index: dict[str, int] | None, id_column: str | None,
                      where_nodes: str) -> torch.Tensor:
    """The edges of a graph file as node positions: in its own node order when the table is its
    attributes, else matched by id with the node table.

    Raises:
        DataError: a node missing from the node table, or a table without the id column.
    """
    keys = list(graph.nodes)
    if own_attributes:  # the table is the graph's own attributes, in its node order
        lookup = {k: i for i, k in enumerate(keys)}
    elif index is not None:
        lookup, missing = {}, []
        for k in keys:
            if cell_text(k) in index:
                lookup[k] = index[cell_text(k)]
            else:
                missing.append((cell_text(k), f"node {cell_text(k)!r}"))
        if missing:
            raise missing_ids_error(edges, missing, len(missing), where_nodes)
    else:
        which = repr(id_column) if id_column is not None else \
            f"(none named {'/'.join(ID_COLUMN_NAMES)}, none holding every node)"
        raise DataError(f"{table.source}: no id column {which} to match the nodes of "
                        f"{edges.name} with; add it or name it with data.id_column")
    return _graph_pairs(graph, lookup, len(table.rows))


def _split_masks(split: str | None, table: Table, labelled: torch.Tensor, y: torch.Tensor,
                 task: str, seed: int, node_ids: Sequence[str],
                 files: dict[str, str]) -> tuple[dict[str, np.ndarray], str]:
    """``(masks, rule)``: the three split masks of ``data.split`` (random, the mask columns or
    an ``.npz`` file, recorded in ``files``), checked, and how they were made.

    Raises:
        DataError: a bad ``data.split``, or masks that overlap, hold unlabelled nodes or leave a
            split empty.
    """
    n = len(table.rows)
    how, arg = parse_split(split, table)
    if how == "random":
        masks = random_masks(n, labelled, y, task, arg, seed)
        rule = (f"random {','.join(f'{f:g}' for f in arg)} of the labelled nodes"
                f"{', stratified by class' if task == 'classification' else ''} (seed {seed})")
        where = f"data.split={split or DEFAULT_SPLIT}"
    elif how == "columns":
        masks = {s: bool_cells(table, m) for s, m in zip(SPLITS, MASK_COLUMNS)}
        rule, where = f"mask columns {', '.join(MASK_COLUMNS)} of {table.source}", table.source
    else:
        masks = npz_masks(arg, n)
        files["split"] = str(arg)
        rule, where = f"masks of {arg} (node-table order)", str(arg)
    check_masks(masks, labelled.numpy(), node_ids, where)
    return masks, rule


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
    """What identifies a file's version: its resolved path, size and modification time."""
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
    """:func:`read_node_table` memoized on the files' ``stamps`` and the ``settings``."""
    return read_node_table(**dict(settings))


def cached_node_table(**settings: Any) -> NodeTableGraph:
    """:func:`read_node_table`, read once per process while the files are unchanged (size and
    modification time); the result is shared: copy ``data`` before changing it."""
    split = settings.get("split")
    npz = split if isinstance(split, str) and split.lower().endswith(".npz") else None
    stamps = tuple(_stamp(settings.get(k)) for k in ("edges", "nodes")) + (_stamp(npz),)
    key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in settings.items()))
    return _read_cached(stamps, key)


