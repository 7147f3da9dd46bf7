"""What a dataset asks of training: which outputs count, the loss, and the metrics.

A :class:`Task` is built from a :class:`~graph_transformers.data.registry.DatasetSpec` and turns a
model output plus its batch into ``(prediction, target)`` pairs for the loss and the metrics:

- ``level``: ``"graph"`` (one output per graph), ``"node"`` (per node; a boolean ``node_mask``
  on the batch, as set for the transductive Planetoid splits, selects the nodes that count) or
  ``"edge"`` (per edge of ``edge_index``);
- ``task``: ``"regression"`` (NaN targets are missing labels, ignored by loss and metrics),
  ``"classification"`` (single label, ``out_dim`` classes) or ``"binary"`` (``out_dim``
  independent binary tasks; NaN targets are missing labels and are ignored by loss and
  metrics, as in OGB / MoleculeNet);
- ``loss``: ``"auto"`` (L1 for regression, cross-entropy for classification, BCE for binary),
  ``"mse"``, or ``"weighted_ce"`` (the SBM benchmarks' cross-entropy with per-batch class weights
  ``(V - V_c) / V``, zero for absent classes).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torchmetrics
from torch import Tensor
from torch.nn import functional as F

from ..data.registry import DatasetSpec
from .metrics import BatchMeanWeightedAccuracy, MultitaskROCAUC


@dataclass(frozen=True)
class Task:
    """Loss and metrics of one dataset (see the module docstring)."""

    spec: DatasetSpec

    @property
    def metric(self) -> str:
        return self.spec.metric

    def count(self, batch) -> int:
        """Items the loss averages over in ``batch`` (graphs, nodes or edges)."""
        if self.spec.level == "graph":
            return int(batch.num_graphs)
        if self.spec.level == "edge":
            return int(batch.edge_index.size(1))
        mask = getattr(batch, "node_mask", None)
        return int(mask.sum()) if mask is not None else int(batch.num_nodes)

    def select(self, out: Tensor, batch) -> tuple[Tensor, Tensor]:
        """``(output, target)`` of the items that count, shaped for the loss."""
        y = batch.y
        if self.spec.level == "node":
            mask = getattr(batch, "node_mask", None)
            if mask is not None:
                out, y = out[mask], y[mask]
        if self.spec.task == "regression":
            if out.size(-1) == 1:
                out = out.view(-1)
            return out, y.float().view_as(out)
        if self.spec.task == "binary":
            return out, y.float().view_as(out)
        return out, y.view(-1).long()

    def loss(self, out: Tensor, batch) -> Tensor:
        out, y = self.select(out, batch)
        kind = self.spec.loss
        if self.spec.task == "regression":
            labelled = ~torch.isnan(y)  # a blank label in a CSV is NaN: missing, not counted
            if not bool(labelled.all()):
                if not bool(labelled.any()):
                    return out.sum() * 0.0  # no label in this batch: no gradient, finite loss
                out, y = out[labelled], y[labelled]
            return F.mse_loss(out, y) if kind == "mse" else F.l1_loss(out, y)
        if self.spec.task == "binary":
            labelled = ~torch.isnan(y)
            return F.binary_cross_entropy_with_logits(out[labelled], y[labelled])
        if kind == "weighted_ce":
            counts = torch.bincount(y, minlength=out.size(-1)).to(out.dtype)
            weight = (y.numel() - counts) / y.numel() * (counts > 0).to(out.dtype)
            return F.cross_entropy(out, y, weight=weight)
        return F.cross_entropy(out, y)

    def metrics(self, **kwargs) -> torchmetrics.MetricCollection:
        """The dataset's metrics, keyed as in ``metrics.json``; ``kwargs`` go to every
        torchmetrics constructor (e.g. ``sync_on_compute=False``)."""
        m, n = self.spec.metric, self.spec.out_dim
        if m == "mae":
            metric = torchmetrics.MeanAbsoluteError(**kwargs)
        elif m == "rmse":
            metric = torchmetrics.MeanSquaredError(squared=False, **kwargs)
        elif m == "accuracy":
            metric = torchmetrics.classification.MulticlassAccuracy(n, average="micro", **kwargs)
        elif m == "weighted_accuracy":
            metric = BatchMeanWeightedAccuracy(n, **kwargs)
        elif m == "f1":
            metric = torchmetrics.classification.BinaryF1Score(**kwargs)
        elif m == "roc_auc":
            metric = MultitaskROCAUC(**kwargs)
        else:
            raise ValueError(f"no metric implementation for {m!r}")
        return torchmetrics.MetricCollection({m: metric})

    def metric_inputs(self, out: Tensor, batch) -> tuple[Tensor, Tensor]:
        """``(preds, target)`` in the form the metric's ``update`` expects."""
        out, y = self.select(out.detach(), batch)
        if self.spec.task == "regression":
            labelled = ~torch.isnan(y)  # missing labels count in no metric
            if not bool(labelled.all()):
                out, y = out[labelled], y[labelled]
        if self.spec.metric == "f1":
            return out.argmax(-1), y
        return out, y
