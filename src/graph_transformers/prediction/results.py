"""What a trained run predicted: :class:`Predictions` (one row per input, graph-level runs) and
:class:`NodePredictions` (one row per node of a single-graph node-level run), each written to a
CSV file atomically."""
from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..fileio import atomic_writer

#: ``status`` of an input that was predicted
OK = "ok"
#: ``status`` of an input that is empty: ``""`` or only whitespace (a CSV row holding ``""`` or
#: spaces keeps its row with it, so that output rows line up with input rows)
EMPTY = "empty input"
#: columns of :meth:`Predictions.rows` before the prediction columns
_FIXED = ("index", "smiles", "status", "class")


@dataclass(frozen=True, eq=False)
class Predictions:
    """What a run predicted for each input, in input order.

    Attributes:
        task: the run's task: ``"regression"``, ``"classification"`` or ``"binary"``.
        columns: names of the columns of ``values``: the run's targets (regression) or tasks
            (binary) where known, else ``pred_0, pred_1, ...``; ``prob_0, prob_1, ...`` for the
            classes of a classification run.
        values: ``FloatTensor [num_inputs, len(columns)]`` on the CPU: the predicted values
            (regression), the class probabilities (classification, softmax of the outputs) or the
            probability that each task is 1 (binary, sigmoid); ``NaN`` rows for invalid inputs.
        status: ``"ok"`` or, for an input that could not be predicted, the reason.
        classes: ``LongTensor [num_inputs]``, the predicted class (classification; ``-1`` for
            invalid inputs), else ``None``.
        inputs: the SMILES strings, when the inputs were SMILES (``None`` for a graph input).
    """

    task: str
    columns: tuple[str, ...]
    values: Tensor
    status: tuple[str, ...]
    classes: Tensor | None = None
    inputs: tuple[str | None, ...] | None = None

    def __len__(self) -> int:
        return len(self.status)

    @property
    def ok(self) -> Tensor:
        """``BoolTensor [num_inputs]``: which inputs were predicted."""
        return torch.tensor([s == OK for s in self.status], dtype=torch.bool)

    @property
    def num_invalid(self) -> int:
        return sum(s != OK for s in self.status)

    def rows(self, keep: dict[str, Sequence[Any]] | None = None) -> list[dict[str, Any]]:
        """One dict per input: ``index``, the input's own columns ``keep`` (e.g. an ID column of
        the input CSV, :func:`read_csv_columns`; one value per input, named ``input_<name>``
        where the name is also an output column), ``smiles`` (SMILES inputs only), ``status``,
        ``class`` (classification only) and one key per column (``None`` for an invalid input).

        Raises:
            ValueError: a ``keep`` column whose length is not the number of inputs.
        """
        keep = dict(keep or {})
        taken = {*_FIXED, *self.columns}
        for name, values in keep.items():
            if len(values) != len(self):
                raise ValueError(f"column {name!r} has {len(values)} values for {len(self)} "
                                 "inputs")
        keep = {(f"input_{k}" if k in taken else k): v for k, v in keep.items()}
        out = []
        values = self.values.tolist()
        for i, status in enumerate(self.status):
            row: dict[str, Any] = {"index": i}
            row.update((k, v[i]) for k, v in keep.items())
            if self.inputs is not None:
                row["smiles"] = self.inputs[i]
            row["status"] = status
            ok = status == OK
            if self.classes is not None:
                row["class"] = int(self.classes[i]) if ok else None
            row.update((c, v if ok else None) for c, v in zip(self.columns, values[i]))
            out.append(row)
        return out

    def to_csv(self, path: str | Path, keep: dict[str, Sequence[Any]] | None = None) -> Path:
        """Writes :meth:`rows` (with the input columns ``keep``) to a CSV file atomically (a crash
        never leaves half a file), lines ending in ``\n``; an invalid input's prediction cells
        are empty. Values are written with float32 precision.

        Raises:
            OSError: the file cannot be written (nothing is left behind).
            ValueError: see :meth:`rows`.
        """
        path = Path(path)
        rows = self.rows(keep)
        header = list(rows[0]) if rows else ["index", "status", *self.columns]
        with atomic_writer(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")  # csv's default is \r\n (issue 25)
            w.writerow(header)
            for row in rows:
                w.writerow(["" if v is None else _cell(v) for v in row.values()])
        return path


@dataclass(frozen=True, eq=False)
class NodePredictions:
    """What a run on one graph predicts for every node of that graph, in node order
    (:meth:`TrainedRun.predict_nodes`).

    Attributes:
        task: the run's task: ``"classification"``, ``"regression"`` or ``"binary"``.
        node_ids: the user's node ids (a node table's id column), else ``"0" … "N-1"``.
        split: per node, the split it was in: ``"train"``, ``"val"``, ``"test"`` or ``"none"``.
        columns: names of the columns of ``values``: ``p_<class>`` per class (classification),
            ``prediction`` (one regression target; ``prediction_<target>`` for several) or
            ``p_<task>`` per binary task.
        values: ``FloatTensor [N, len(columns)]`` on the CPU: class probabilities (softmax; each
            row sums to 1), predicted values, or the probability that each task is 1.
        classes: ``LongTensor [N]``, the predicted class id (classification), else ``None``.
        class_names: the name of each class id (a node table's labels; else ``"0" … "C-1"``),
            classification only.
    """

    task: str
    node_ids: tuple[str, ...]
    split: tuple[str, ...]
    columns: tuple[str, ...]
    values: Tensor
    classes: Tensor | None = None
    class_names: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.node_ids)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per node: ``node_id``, ``prediction`` (the class name, classification only;
        a regression run's ``prediction`` is its value column), one key per column, ``split``."""
        values = self.values.tolist()
        out = []
        for i, node in enumerate(self.node_ids):
            row: dict[str, Any] = {"node_id": node}
            if self.classes is not None:
                k = int(self.classes[i])
                row["prediction"] = self.class_names[k] if self.class_names else k
            row.update(zip(self.columns, values[i]))
            row["split"] = self.split[i]
            out.append(row)
        return out

    def to_csv(self, path: str | Path) -> Path:
        """Writes :meth:`rows` to a CSV file atomically, lines ending in ``\n``, values with
        float32 precision.

        Raises:
            OSError: the file cannot be written (nothing is left behind).
        """
        path = Path(path)
        head = ["node_id"] + (["prediction"] if self.classes is not None else []) + \
            list(self.columns) + ["split"]
        with atomic_writer(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(head)
            for row in self.rows():
                w.writerow([_cell(v) for v in row.values()])
        return path


def _cell(value: Any) -> Any:
    """A float with 9 significant digits (float32 round-trips), anything else unchanged."""
    return f"{value:.9g}" if isinstance(value, float) else value


def _reason(err: BaseException) -> str:
    """One line for the ``status`` column."""
    text = " ".join(str(err).split())
    return text or type(err).__name__
