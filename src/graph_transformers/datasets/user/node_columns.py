"""The columns of a node table (:mod:`graph_transformers.datasets.user.node_table`): the labels
and the task (:func:`read_labels`), the feature matrix (:func:`read_features`) and the split
masks (``data.split``: :func:`parse_split`, :func:`random_masks`, :func:`bool_cells`,
:func:`npz_masks`, checked by :func:`check_masks`).
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...data.cache import DataNotFoundError
from ...data.generated import SPLITS
from ...data.split_rules import parse_fractions, parse_split_rule
from ...errors import DataError
from .node_files import INT_CELL, SHOWN_IDS, Table

__all__ = ["DEFAULT_SPLIT", "MASK_COLUMNS", "bool_cells", "check_masks", "npz_masks",
           "parse_split", "random_masks", "read_features", "read_labels"]

#: the mask columns of ``data.split: columns`` (never features)
MASK_COLUMNS: tuple[str, ...] = tuple(f"{s}_mask" for s in SPLITS)
#: ``data.split`` when unset and the table has no mask columns
DEFAULT_SPLIT = "random:0.6,0.2,0.2"
#: cells that mean "no label"
_MISSING = ("", "nan")
_TRUE = ("1", "1.0", "true", "t", "yes", "y")
_FALSE = ("0", "0.0", "false", "f", "no", "n", "")


# ------------------------------------------------------------------------------------ labels
def _is_number(s: str) -> bool:
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def read_labels(table: Table, label_column: str, task: str | None
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
        task = "classification" if not numbers or all(INT_CELL.match(v) for v in values) \
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


def _feature_column(table: Table, name: str) -> np.ndarray:
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
                                "data.feature_columns") from None
            if len(p) != width:
                raise DataError(f"{table.source} {table.where[i]}: the feature vector in column "
                                f"{name!r} has {len(p)} values, the first row's has {width}; "
                                "every node needs a vector of the same length") from None
            for t in p:
                if not _is_number(t) and t.lower() not in ("nan", "inf", "-inf", "+inf"):
                    raise DataError(
                        f"{table.source} {table.where[i]}: feature column {name!r} holds "
                        f"{t!r}, not a number (or a comma-separated vector of numbers); list "
                        "the feature columns in data.feature_columns") from None
        col = np.array(parts, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(col).all(1))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"{table.source} {table.where[i]}: feature column {name!r} holds "
                        f"{cells[i]!r}, not a finite number; fill in the value")
    return col


def read_features(table: Table, exclude: Sequence[str], feature_columns: Sequence[str] | None
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
def parse_split(split: str | None, table: Table) -> tuple[str, Any]:
    """``("random", fractions)``, ``("columns", None)`` or ``("npz", path)``."""
    has_masks = all(m in table.columns for m in MASK_COLUMNS)
    if split is None:
        split = "columns" if has_masks else DEFAULT_SPLIT
    text = str(split).strip()
    usage = ("data.split must be random:TRAIN,VAL,TEST (fractions > 0 summing to at most 1, e.g. "
             f"{DEFAULT_SPLIT}), columns (the node table's train_mask / val_mask / test_mask) or "
             f"the path of a .npz file of those three masks; got {text!r}")
    try:  # the one parser of data.split; a node table takes three of its forms
        rule = parse_split_rule(text, ("random", "columns", "file"))
    except DataError:
        raise DataError(usage) from None
    if rule.kind == "columns":
        lacking = [m for m in MASK_COLUMNS if m not in table.columns]
        if lacking:
            raise DataError(f"data.split is columns, but {table.source} has no column(s) "
                            f"{', '.join(lacking)}; add them (0/1 per node) or use "
                            f"data.split={DEFAULT_SPLIT}")
        return "columns", None
    if rule.kind == "random":
        return "random", rule.fractions or parse_fractions(DEFAULT_SPLIT.split(":", 1)[1], usage)
    if text.lower().endswith(".npz"):
        return "npz", Path(text).expanduser()
    raise DataError(usage)


def random_masks(n: int, labelled: torch.Tensor, y: torch.Tensor, task: str,
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


def bool_cells(table: Table, column: str) -> np.ndarray:
    """A mask column of the table as booleans (``0`` / ``1``, ``true`` / ``false``, ``yes`` /
    ``no``; empty = false).

    Raises:
        DataError: another value (naming the row).
    """
    out = np.zeros(len(table.rows), dtype=bool)
    for i, c in enumerate(table.column(column)):
        v = c.lower()
        if v in _TRUE:
            out[i] = True
        elif v not in _FALSE:
            raise DataError(f"{table.source} {table.where[i]}: {column} is {c!r}; a mask cell "
                            "is 0 or 1 (true / false)")
    return out


def npz_masks(path: Path, n: int) -> dict[str, np.ndarray]:
    """The ``train_mask`` / ``val_mask`` / ``test_mask`` arrays of an ``.npz`` file (boolean or
    0 / 1, length ``n``, node-table order).

    Raises:
        DataNotFoundError: no such file.
        DataError: not an ``.npz`` archive, a missing array, or one of another length or dtype.
    """
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


def check_masks(masks: dict[str, np.ndarray], labelled: np.ndarray, ids: Sequence[str],
                how: str) -> None:
    """Checks the three split masks: disjoint, labelled nodes only, none empty (``how`` names
    where they came from, ``ids`` the nodes, for the message).

    Raises:
        DataError: overlapping masks, an unlabelled node in a split, or an empty split.
    """
    def show(idx: np.ndarray) -> str:
        names = ", ".join(repr(ids[i]) for i in idx[:SHOWN_IDS].tolist())
        return names + (f" and {idx.size - SHOWN_IDS} more" if idx.size > SHOWN_IDS else "")

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
