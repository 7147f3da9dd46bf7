"""What a list of PyG graphs asks of a model, read off the data (:func:`infer_info`,
:class:`GraphListInfo`): the level (graph, node or edge targets), the task, the number of
outputs, the metric and the node / edge features; used by a user's graph file or in-memory
graphs (:mod:`graph_transformers.datasets.user.graph_list`) and by a node table
(:mod:`graph_transformers.datasets.user.node_table`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch_geometric.data import Data

from ...errors import DataError

__all__ = ["LEVELS", "TASKS", "GraphListInfo", "infer_info"]

LEVELS = ("graph", "node", "edge")
TASKS = ("regression", "classification", "binary")


@dataclass(frozen=True)
class GraphListInfo:
    """What a list of graphs asks of a model, read off the data (see the module docstring).

    Attributes:
        level: ``"graph"``, ``"node"`` or ``"edge"``.
        task: ``"regression"``, ``"classification"`` or ``"binary"``.
        out_dim: targets (regression, binary) or classes (classification).
        metric: ``"mae"``, ``"accuracy"`` or ``"roc_auc"``.
        node_types / node_dim: category counts per column of an integer ``x`` (``None`` when
            continuous), or the width of a floating ``x`` (1 for the constant feature).
        edge_types / edge_dim: the same for ``edge_attr`` (both ``None``: no edge features).
        constant_x: the graphs have no ``x``; a constant 1 is used.
        num_graphs: graphs in the list.
    """

    level: str
    task: str
    out_dim: int
    metric: str
    node_types: tuple[int, ...] | None
    node_dim: int | None
    edge_types: tuple[int, ...] | None
    edge_dim: int | None
    constant_x: bool
    num_graphs: int




def _levels_of(g: Data) -> set[str]:
    rows = g.y.size(0) if g.y.dim() else 1
    fits = set()
    if rows == 1:
        fits.add("graph")
    if rows == g.num_nodes:
        fits.add("node")
    if g.edge_index is not None and rows == g.edge_index.size(1):
        fits.add("edge")
    return fits


def _categories(tensors: list[torch.Tensor], what: str) -> tuple[int, ...]:
    cols = {t.view(t.size(0), -1).size(1) for t in tensors if t.numel()}
    if len(cols) > 1:
        raise DataError(f"{what} has {sorted(cols)} columns in different graphs")
    ncol = cols.pop() if cols else 1
    stacked = torch.cat([t.view(t.size(0), ncol) for t in tensors]).long()
    if stacked.numel() and int(stacked.min()) < 0:
        raise DataError(f"{what} holds negative category ids (integer features are category "
                        "ids >= 0; use floating point for continuous features)")
    return tuple(int(v) + 1 for v in stacked.max(0).values) if stacked.numel() else (1,) * ncol


def _width(tensors: list[torch.Tensor], what: str) -> int:
    widths = {1 if t.dim() == 1 else t.size(1) for t in tensors}
    if len(widths) > 1:
        raise DataError(f"{what} has widths {sorted(widths)} in different graphs")
    return widths.pop()


def _feature_vocab(tensors: list[torch.Tensor], what: str
                   ) -> tuple[tuple[int, ...] | None, int | None]:
    """``(category sizes, None)`` for integer features, ``(None, width)`` for floating ones."""
    if all(t.is_floating_point() for t in tensors):
        return None, _width(tensors, what)
    if not any(t.is_floating_point() for t in tensors):
        return _categories(tensors, what), None
    raise DataError(f"{what} is floating point in some graphs and integer in others")


def _check_graphs(graphs: Sequence[Data], level: str | None, task: str | None) -> None:
    """The arguments of :func:`infer_info`: known ``level`` / ``task``, graphs with y and edges."""
    if level is not None and level not in LEVELS:
        raise DataError(f"data.level must be one of {LEVELS}, got {level!r}")
    if task is not None and task not in TASKS:
        raise DataError(f"data.task must be one of {TASKS}, got {task!r}")
    if not graphs:
        raise DataError("no graphs")
    for i, g in enumerate(graphs):
        if getattr(g, "y", None) is None:
            raise DataError(f"graph {i} has no y (the labels)")
        if g.edge_index is None:
            raise DataError(f"graph {i} has no edge_index")


def _infer_level(graphs: Sequence[Data], level: str | None) -> str:
    """The one level whose item count every graph's ``y`` matches (or ``level``, checked)."""
    fits = set(LEVELS)
    for g in graphs:
        fits &= _levels_of(g)
    if level is None:
        if len(fits) != 1:
            g = graphs[0]
            raise DataError(
                f"cannot tell the prediction level from y: graph 0 has y with "
                f"{g.y.size(0) if g.y.dim() else 1} rows, {g.num_nodes} nodes, "
                f"{g.edge_index.size(1)} edges; "
                + ("set data.level (graph, node or edge)" if fits else
                   "y must have 1 row per graph (graph level), one per node or one per edge"))
        return fits.pop()
    if level not in fits:
        raise DataError(f"data.level={level}, but y does not have one row per {level} in every "
                        "graph")
    return level


def _infer_target(graphs: Sequence[Data], level: str, task: str | None
                  ) -> tuple[str, int, str]:
    """``(task, out_dim, metric)`` from the labels ``y`` stacked over ``graphs``."""
    ys = [g.y.view(1, -1) if level == "graph" else g.y.view(g.y.size(0), -1) for g in graphs]
    width = {y.size(1) for y in ys}
    if len(width) > 1:
        raise DataError(f"y has {sorted(width)} columns in different graphs")
    y = torch.cat(ys)
    floating = y.is_floating_point()
    if task is None:
        task = "regression" if floating else "classification"
    if task == "classification":
        if floating and not bool(torch.all(y == y.round())):
            raise DataError("task classification needs integer class labels in y; floating "
                            "labels mean regression (or set data.task)")
        if y.size(1) != 1:
            raise DataError(f"classification takes one label per item, y has {y.size(1)} "
                            "columns (set data.task=binary for several 0/1 tasks)")
        if int(y.min()) < 0:
            raise DataError("class labels must be >= 0")
        return task, int(y.max()) + 1, "accuracy"
    if task == "binary":
        known = y[~torch.isnan(y.float())].float()
        if not bool(torch.all((known == 0) | (known == 1))):
            raise DataError("task binary needs labels 0, 1 or NaN (missing)")
        return task, y.size(1), "roc_auc"
    return task, y.size(1), "mae"


def infer_info(graphs: Sequence[Data], level: str | None = None, task: str | None = None
               ) -> GraphListInfo:
    """Reads level, task, output size and feature vocabularies off ``graphs`` (see the module
    docstring); ``level`` / ``task`` given fix those instead.

    Raises:
        DataError: graphs without ``y`` or ``edge_index``, a ``y`` whose rows fit no level (or
            several, with ``level`` not given), mixed feature types or widths, negative category
            ids, class labels that are not integers, binary labels other than 0 / 1 / NaN.
    """
    _check_graphs(graphs, level, task)
    level = _infer_level(graphs, level)
    task, out_dim, metric = _infer_target(graphs, level, task)
    constant_x = any(getattr(g, "x", None) is None for g in graphs)
    if constant_x:
        if not all(getattr(g, "x", None) is None for g in graphs):
            raise DataError("some graphs have x and some do not")
        node_types, node_dim = None, 1
    else:
        node_types, node_dim = _feature_vocab([g.x for g in graphs], "x")
    edge_types = edge_dim = None
    eas = [getattr(g, "edge_attr", None) for g in graphs]
    if any(e is not None for e in eas):
        if any(e is None for e in eas):
            raise DataError("some graphs have edge_attr and some do not")
        edge_types, edge_dim = _feature_vocab(eas, "edge_attr")
    return GraphListInfo(level, task, out_dim, metric, node_types, node_dim, edge_types,
                         edge_dim, constant_x, len(graphs))

