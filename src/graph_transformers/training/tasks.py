"""What a dataset asks of training: which outputs count, the loss, and the metrics.

A :class:`Task` is built from a :class:`~graph_transformers.data.registry.DatasetSpec` and turns a
model output plus its batch into ``(prediction, target)`` pairs for the loss and the metrics:

- ``level``: ``"graph"`` (one output per graph), ``"node"`` (per node; a boolean ``node_mask``
  on the batch, as set for the transductive Planetoid splits, selects the nodes that count),
  ``"edge"`` (per edge of ``edge_index``; a boolean ``edge_mask`` likewise) or ``"pair"`` (link
  prediction within each graph, PCQM-Contact: the batch carries labelled node pairs in PyG's
  link-prediction fields, ``edge_label_index [2, num_pairs]`` and ``edge_label [num_pairs]``
  (1 / 0); the model is built as a node-level model whose outputs are node embeddings of
  :func:`pair_embedding_dim` channels, and a pair's logit is the dot product of its nodes'
  embeddings, :func:`~.lrgb_metrics.pair_dot_scores`, LRGB's ``edge_decoding: dot``; the
  ``mrr`` metric ranks every node pair of each graph, :mod:`~.lrgb_metrics`);
- ``task``: ``"regression"`` (NaN targets are missing labels, ignored by loss and metrics),
  ``"classification"`` (single label, ``out_dim`` classes) or ``"binary"`` (``out_dim``
  independent binary tasks; NaN targets are missing labels and are ignored by loss and
  metrics, as in OGB / MoleculeNet);
- ``target_std``: regression targets standardized by the training split's s.d. per column
  (:mod:`~graph_transformers.training.targets`): the loss divides the residual by it; the
  predictions and metrics stay in the original units;
- ``loss``: ``"auto"`` (L1 for regression, cross-entropy for classification, BCE for binary),
  ``"mse"``, or ``"weighted_ce"`` (the SBM benchmarks' cross-entropy with per-batch class weights
  ``(V - V_c) / V``, zero for absent classes; with ``class_counts`` of the training split, the
  official EGT form: each node's cross-entropy weighted by ``(N - N_c) / Σ_k (N - N_k)``, averaged
  over nodes).
- ``weighted_accuracy``: ``"batch_mean"`` (each batch scored, scores averaged: benchmarking GNNs)
  or ``"split"`` (the whole split scored at once: the official EGT code).
- ``evaluator``: an OGB dataset name (``"ogbg-molhiv"``) to compute ROC-AUC with OGB's own
  ``Evaluator`` (:class:`~graph_transformers.training.metrics.OGBEvaluatorROCAUC`), as for a
  dataset read from OGB's published files; AP likewise (``"ogbg-molpcba"``,
  :class:`~graph_transformers.training.metrics.OGBEvaluatorAP`), and the MAE of PCQM4M-LSC /
  PCQM4Mv2 with OGB-LSC's evaluator (``"pcqm4m"`` / ``"pcqm4mv2"``,
  :class:`~graph_transformers.training.metrics.OGBLSCEvaluatorMAE`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torchmetrics
from torch import Tensor
from torch.nn import functional as F

from ..data.registry import DatasetSpec
from .lrgb_metrics import FilteredMRR, pair_dot_scores, pair_score_grid
from .metrics import (LSC_EVALUATORS, BatchMeanWeightedAccuracy, MultitaskAP, MultitaskROCAUC,
                      OGBEvaluatorAP, OGBEvaluatorROCAUC, OGBLSCEvaluatorMAE)


def pair_embedding_dim(model_kwargs: dict) -> int:
    """The width of the node embeddings a pair-level model outputs (the model is built at node
    level with this ``out_dim``): the model's ``hidden_dim``, as LRGB's ``inductive_edge`` head
    maps the last layer's ``dim_inner`` channels to ``dim_inner`` before the dot product.

    Raises:
        ValueError: a model section without ``hidden_dim``.
    """
    dim = model_kwargs.get("hidden_dim")
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise ValueError("a pair-level task (link prediction, e.g. pcqm-contact) scores pairs by "
                         "the dot product of node embeddings of model.hidden_dim channels; this "
                         "model has no hidden_dim")
    return dim


@dataclass(frozen=True)
class Task:
    """Loss and metrics of one dataset (see the module docstring)."""

    spec: DatasetSpec
    #: training-split class sizes ``[out_dim]`` for global class weights (``None``: per batch)
    class_counts: Tensor | None = field(default=None, compare=False)
    weighted_accuracy: str = "batch_mean"
    #: OGB dataset whose ``Evaluator`` computes ROC-AUC / AP (OGB-LSC's: MAE) (``None``: this
    #: library's computation)
    evaluator: str | None = None
    #: regression only: the training split's s.d. per target ``[out_dim]`` when targets are
    #: standardized (:mod:`~.targets`): the loss is taken on ``(prediction - y) / target_std``
    target_std: Tensor | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.weighted_accuracy not in ("batch_mean", "split"):
            raise ValueError(f"weighted_accuracy must be 'batch_mean' or 'split', got "
                             f"{self.weighted_accuracy!r}")
        if self.target_std is not None and (self.spec.task != "regression" or
                                            self.target_std.numel() != self.spec.out_dim):
            raise ValueError(f"target_std has {self.target_std.numel()} entries for a "
                             f"{self.spec.task} task with {self.spec.out_dim} outputs; it "
                             "applies to regression targets, one s.d. per output")
        if self.class_counts is not None and self.class_counts.numel() != self.spec.out_dim:
            raise ValueError(f"class_counts has {self.class_counts.numel()} entries for "
                             f"{self.spec.out_dim} classes")

    @property
    def metric(self) -> str:
        return self.spec.metric

    def count(self, batch) -> int | Tensor:
        """Items the loss averages over in ``batch`` (graphs, nodes or edges): an ``int``, or,
        where a ``node_mask`` / ``edge_mask`` selects them, a 0-dim tensor on the batch's device
        (counted there, without a host sync; Lightning's ``log(batch_size=...)`` and
        :func:`~.module.evaluate` accumulate it as a tensor)."""
        real = self._real_mask(batch)
        if real is not None:  # a static-shape batch: its real items (a tensor, no host sync)
            mask = getattr(batch, f"{self.spec.level}_mask", None)
            return (real & mask).sum() if mask is not None else real.sum()
        if self.spec.level == "graph":
            return int(batch.num_graphs)
        if self.spec.level == "pair":
            return int(batch.edge_label_index.size(1))
        mask = getattr(batch, f"{self.spec.level}_mask", None)
        if mask is not None:
            return mask.sum()
        if self.spec.level == "edge":
            return int(batch.edge_index.size(1))
        return int(batch.num_nodes)

    def _real_mask(self, batch) -> Tensor | None:
        """A static-shape batch's (:mod:`graph_transformers.data.static_shapes`) real items of
        the task's level, ``real_graph_mask`` / ``real_node_mask`` / ``real_edge_mask``
        (``None`` for an ordinary batch, or a pair task: padding graphs have no labelled
        pairs)."""
        if self.spec.level == "pair":
            return None
        return getattr(batch, f"real_{self.spec.level}_mask", None)

    def select(self, out: Tensor, batch) -> tuple[Tensor, Tensor]:
        """``(output, target)`` of the items that count, shaped for the loss. A ``node_mask`` /
        ``edge_mask`` selects by boolean indexing, the one host sync left in a training step
        (transductive single-graph tasks only). A pair-level task's ``out`` is node embeddings
        ``[num_nodes, d]``, turned into one logit per labelled pair (``[num_pairs, 1]``, target
        ``edge_label``). The padding of a static-shape batch is kept here (static shapes); the
        loss weighs it 0 and the metrics drop it (:meth:`real_rows`)."""
        return self._select(out, batch)

    def real_rows(self, out: Tensor, batch) -> Tensor | None:
        """``[num_items]`` bool, the rows of :meth:`select`'s output that are real (not the
        padding of a static-shape batch); ``None`` when all are."""
        real = self._real_mask(batch)
        if real is None:
            return None
        mask = getattr(batch, f"{self.spec.level}_mask", None)
        return real[mask] if mask is not None and self.spec.level in ("node", "edge") else real

    def _select(self, out: Tensor, batch) -> tuple[Tensor, Tensor]:
        """:meth:`select`'s computation."""
        if self.spec.level == "pair":
            out, y = pair_dot_scores(out, batch.edge_label_index), batch.edge_label
        else:
            y = batch.y
        if self.spec.level in ("node", "edge"):
            mask = getattr(batch, f"{self.spec.level}_mask", None)
            if mask is not None:
                out, y = out[mask], y[mask]
        # float targets in float32, or float64 for a float64 model
        ydt = torch.promote_types(out.dtype, torch.float32) if out.is_floating_point() else \
            torch.float32
        if self.spec.task == "regression":
            if out.size(-1) == 1:
                out = out.view(-1)
            return out, y.to(ydt).view_as(out)
        if self.spec.task == "binary":
            return out, y.to(ydt).view_as(out)
        return out, y.view(-1).long()

    def loss(self, out: Tensor, batch) -> Tensor:
        """The task loss, computed in float32 (float64 for a float64 model) whatever the output's
        dtype (bf16 under autocast), and without device syncs (no boolean indexing, no
        ``bincount``) for graph-level tasks."""
        out, y = self.select(out, batch)
        out = out.to(torch.promote_types(out.dtype, torch.float32))
        real = self.real_rows(out, batch)
        if real is not None:  # a static-shape batch: a mean over its real items (weights 0/1)
            return self._masked_loss(out, y, real)
        kind = self.spec.loss
        if self.spec.task == "regression":
            # a blank label in a CSV is NaN: missing, not counted; a masked mean keeps the loss
            # free of device syncs (and finite, with no gradient, when a batch has no label)
            labelled = ~torch.isnan(y)
            diff = out - torch.where(labelled, y, out.detach())
            if self.target_std is not None:  # the loss on standardized values
                diff = diff / self.target_std.to(device=diff.device, dtype=diff.dtype)
            per_item = diff.square() if kind == "mse" else diff.abs()
            return (per_item * labelled).sum() / labelled.sum().clamp_min(1)
        if self.spec.task == "binary":
            # mean over the labelled entries, without boolean indexing (a device sync)
            labelled = ~torch.isnan(y)
            per_item = F.binary_cross_entropy_with_logits(
                out, torch.where(labelled, y, torch.zeros_like(y)), reduction="none")
            return (per_item * labelled).sum() / labelled.sum()
        if kind == "weighted_ce" and self.class_counts is not None:
            counts = self.class_counts.to(device=out.device, dtype=torch.float32)
            weight = (counts.sum() - counts) / (counts.sum() - counts).sum()
            per_node = F.cross_entropy(out, y, reduction="none")
            return (weight[y].to(per_node.dtype) * per_node).mean()
        if kind == "weighted_ce":
            # counted with index_add_: torch.bincount reads max(y) first (a device sync)
            counts = out.new_zeros(out.size(-1)).index_add_(0, y, torch.ones_like(y,
                                                                                dtype=out.dtype))
            weight = (y.numel() - counts) / y.numel() * (counts > 0).to(out.dtype)
            return F.cross_entropy(out, y, weight=weight)
        return F.cross_entropy(out, y)

    def _masked_loss(self, out: Tensor, y: Tensor, real: Tensor) -> Tensor:
        """:meth:`loss` of a static-shape batch: the same loss over its ``real [num_items]``
        rows only, as masked sums ``Σ w·l / Σ w`` (``w`` = real, and labelled where NaN marks a
        missing label), read through ``torch.where`` so that no padding value (and no NaN)
        reaches the value or the gradient; no boolean indexing (static shapes, no host sync).
        Equal to :meth:`loss` of the unpadded batch."""
        kind = self.spec.loss
        rows = real.view((-1,) + (1,) * (y.dim() - 1)) if self.spec.task != "classification" \
            else real
        if self.spec.task in ("regression", "binary"):
            labelled = ~torch.isnan(y) & rows
            safe_y = torch.where(labelled, y, torch.zeros_like(y))
            if self.spec.task == "binary":
                per_item = F.binary_cross_entropy_with_logits(
                    torch.where(labelled, out, torch.zeros_like(out)), safe_y, reduction="none")
                return (per_item * labelled).sum() / labelled.sum()
            diff = torch.where(labelled, out - safe_y, torch.zeros_like(out))
            if self.target_std is not None:
                diff = diff / self.target_std.to(device=diff.device, dtype=diff.dtype)
            per_item = diff.square() if kind == "mse" else diff.abs()
            return (per_item * labelled).sum() / labelled.sum().clamp_min(1)
        w = real.to(out.dtype)
        safe_out = torch.where(real.unsqueeze(-1), out, torch.zeros_like(out))
        safe_y = torch.where(real, y, torch.zeros_like(y))
        per_item = F.cross_entropy(safe_out, safe_y, reduction="none")
        if kind == "weighted_ce" and self.class_counts is not None:
            counts = self.class_counts.to(device=out.device, dtype=torch.float32)
            weight = (counts.sum() - counts) / (counts.sum() - counts).sum()
            return (weight[safe_y].to(per_item.dtype) * per_item * w).sum() / w.sum()
        if kind == "weighted_ce":  # per-batch class weights over the real items
            counts = out.new_zeros(out.size(-1)).index_add_(0, safe_y, w)
            total = w.sum()
            weight = (total - counts) / total * (counts > 0).to(out.dtype)
            item_w = weight[safe_y] * w
            return (item_w * per_item).sum() / item_w.sum()
        return (per_item * w).sum() / w.sum()

    def metrics(self, **kwargs) -> torchmetrics.MetricCollection:
        """The dataset's metrics, keyed as in ``metrics.json``; ``kwargs`` go to every
        torchmetrics constructor (e.g. ``sync_on_compute=False``)."""
        m, n = self.spec.metric, self.spec.out_dim
        if m == "mae" and self.evaluator in LSC_EVALUATORS:  # PCQM4M(v2): OGB-LSC's evaluator
            metric = OGBLSCEvaluatorMAE(self.evaluator, **kwargs)
        elif m == "mae":
            metric = torchmetrics.MeanAbsoluteError(**kwargs)
        elif m == "rmse":
            metric = torchmetrics.MeanSquaredError(squared=False, **kwargs)
        elif m == "accuracy":
            metric = torchmetrics.classification.MulticlassAccuracy(n, average="micro", **kwargs)
        elif m == "weighted_accuracy" and self.weighted_accuracy == "split":
            # mean over classes of the per-class accuracy, over the whole split
            metric = torchmetrics.classification.MulticlassRecall(n, average="macro", **kwargs)
        elif m == "weighted_accuracy":
            metric = BatchMeanWeightedAccuracy(n, **kwargs)
        elif m == "f1":
            metric = torchmetrics.classification.BinaryF1Score(**kwargs)
        elif m == "f1_macro":  # LRGB's VOC / COCO: over the whole split (lrgb_metrics)
            metric = torchmetrics.classification.MulticlassF1Score(n, average="macro", **kwargs)
        elif m == "mrr" and self.spec.level == "pair":  # PCQM-Contact (lrgb_metrics)
            metric = FilteredMRR("filtered", **kwargs)
        elif m == "roc_auc" and self.evaluator is not None:
            metric = OGBEvaluatorROCAUC(self.evaluator, **kwargs)
        elif m == "roc_auc":
            metric = MultitaskROCAUC(**kwargs)
        elif m == "ap" and self.evaluator is not None:  # ogbg-molpcba: OGB's Evaluator
            metric = OGBEvaluatorAP(self.evaluator, **kwargs)
        elif m == "ap":
            metric = MultitaskAP(**kwargs)
        else:
            raise ValueError(f"no metric implementation for {m!r}")
        return torchmetrics.MetricCollection({m: metric})

    def metric_inputs(self, out: Tensor, batch) -> tuple[Tensor, Tensor]:
        """``(preds, target)`` in the form the metric's ``update`` expects (predictions in float32
        or float64, also under bf16 autocast; missing regression labels left out). The ``mrr``
        of a pair-level task takes every pair of each graph: ``(scores [B, N, N], positive
        [B, N, N], valid [B, N])`` (:func:`~.lrgb_metrics.pair_score_grid`)."""
        out = out.detach()
        if out.is_floating_point():
            out = out.to(torch.promote_types(out.dtype, torch.float32))
        if self.spec.metric == "mrr" and self.spec.level == "pair":
            return pair_score_grid(out, batch.edge_label_index, batch.edge_label,
                                   getattr(batch, "batch", None))
        out, y = self.select(out, batch)
        real = self.real_rows(out, batch)
        if real is not None:  # a static-shape batch: its padding counts in no metric
            out, y = out[real], y[real]
        if self.spec.task == "regression":
            labelled = ~torch.isnan(y)  # missing labels count in no metric
            if not bool(labelled.all()):
                out, y = out[labelled], y[labelled]
        if self.spec.metric == "f1":
            return out.argmax(-1), y
        return out, y
