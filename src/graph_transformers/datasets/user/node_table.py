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
  the graph, isolated ones included): an id column (``data.id_column``; unset, the first column
  named ``id``, ``node_id``, ``node``, ``nodeid`` or ``name``, any case, else the first column
  whose distinct cells hold every id of the edge list, both logged), a label
  column (``data.label_column``, default ``label``), feature columns (``data.feature_columns``,
  default every other column but the mask columns ``train_mask`` / ``val_mask`` /
  ``test_mask``) and optionally the three mask columns.

How they are read:

- **ids**: the edge list's ids are looked up in the node table's id column (any strings). A
  node table without an id column (none found as above, or ``data.options.id_base`` given)
  lists the nodes in order: the edge list then holds row numbers,
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

The result is one PyG ``Data`` (:func:`~.node_table_parser.read_node_table`, the parser; the
files are read by :mod:`.node_files`, the columns by :mod:`.node_columns`) that the single-graph
machinery of :mod:`~graph_transformers.datasets.user.graph_list` trains on (:class:`NodeTable`, a
:class:`~graph_transformers.datasets.user.graph_list.GraphFile`): each split is the whole graph
with a ``node_mask`` selecting its nodes. The graph is written once to
``<cache>/NodeTable/graphs/<key>.pt``, the key the sha256 of the graph's tensors (so of the
files' contents and the reading settings); its encodings are cached by the graph file's
machinery. Errors are one line (:class:`~graph_transformers.errors.DataError`) naming the file,
the line (or node) and the fix.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from ...data.cache import resolve_cache_dir
from ...data.generated import check_split
from ...data.registry import DatasetSpec
from .graph_list import GraphFile, graph_list_spec
from .graph_info import infer_info
from .node_table_parser import NodeTableGraph, cached_node_table

__all__ = ["NODE_TABLE_PARAMS", "NodeTable", "load_node_table", "node_table_spec"]

log = logging.getLogger(__name__)


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
                 *, id_column: str | None = None, label_column: str = "label",
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
        self.split_rule = {"rule": self.graph.split_rule,  # metrics.json split
                           **({"sha256": self.graph.sha256["split"]}
                              if "split" in self.graph.sha256 else {}),
                           "sizes": record["split_sizes"]}
        ids = self.split_indices[split]
        self.fingerprint_extra = {"split_nodes": torch.as_tensor(ids, dtype=torch.long)}
        if split == "train":
            files = self.graph.files
            where = f"edge list {files['edges']}" + (f", node table {files['nodes']}"
                                                     if "nodes" in files else "")
            log.info("%s: %d nodes (%d labelled), %d edges, %s %s, %d feature value(s) per "
                     "node, ids %s; split %s: %s", where, record["num_nodes"],
                     record["num_labelled"], record["num_edges"], self.graph.task,
                     f"({len(self.classes)} classes)" if self.classes else "(1 target)",
                     record["num_features"],
                     f"in column {record['id_column']!r}" if record["id_column"] else
                     "= row numbers", self.graph.split_rule,
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
#: what :func:`load_node_table` takes from a config: the ``data`` keys of a node table and the
#: ``data.options`` of :func:`~.node_table_parser.read_node_table` (``id_base``,
#: ``standardize_features``)
NODE_TABLE_PARAMS = ("edges", "nodes", "id_column", "label_column", "feature_columns",
                     "undirected", "task", "split_rule", "seed", "fold", "allow_no_edges",
                     "id_base", "standardize_features")


def node_table_spec(edges: str | os.PathLike | None = None,
                    nodes: str | os.PathLike | None = None, *, id_column: str | None = None,
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
    spec = graph_list_spec(info, "node_table", load_node_table, NODE_TABLE_PARAMS)
    if graph.task == "regression":
        spec = dataclasses.replace(spec, targets=(str(label_column),))
    return spec


def load_node_table(root: str | os.PathLike, split: str = "train", transform=None,
                    pre_transform=None, force_reload: bool = False, *,
                    edges: str | os.PathLike | None = None,
                    nodes: str | os.PathLike | None = None, id_column: str | None = None,
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
