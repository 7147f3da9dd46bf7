"""Task metrics that torchmetrics does not provide in the papers' exact form."""
from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import torch
import torchmetrics
from torch import Tensor
from torchmetrics.functional.classification import multiclass_accuracy

log = logging.getLogger(__name__)


def predicted_labels(pred: Tensor, target: Tensor, num_classes: int,
                     who: str) -> tuple[Tensor, Tensor]:
    """``(pred, target)`` as integer labels ``[N]`` in ``0..num_classes-1``, the argmax taken of
    scores ``[N, num_classes]``: the checks of the label metrics (:func:`weighted_accuracy`,
    :func:`f1_positive`, :func:`~graph_transformers.training.lrgb_metrics.macro_f1`).

    Raises:
        ValueError: naming ``who``: scores of another width, no target, different sizes, or
            labels outside ``0..num_classes-1``.
    """
    target = torch.as_tensor(target).reshape(-1)
    pred = torch.as_tensor(pred)
    if pred.dim() == 2:
        if pred.shape[1] != num_classes:
            raise ValueError(f"{who}: scores must have {num_classes} columns, got "
                             f"{tuple(pred.shape)}")
        pred = pred.argmax(dim=1)
    pred = pred.reshape(-1)
    if target.numel() == 0:
        raise ValueError(f"{who} needs at least one target")
    if pred.shape != target.shape:
        raise ValueError(f"{who}: pred and target sizes differ: {tuple(pred.shape)} vs "
                         f"{tuple(target.shape)}")
    for name, t in (("pred", pred), ("target", target)):
        if t.is_floating_point() and not bool((t == t.round()).all()):
            raise ValueError(f"{who}: {name} labels must be integers")
        if int(t.min()) < 0 or int(t.max()) >= num_classes:
            raise ValueError(f"{who}: {name} labels must be in 0..{num_classes - 1}")
    return pred.long(), target.long()


def weighted_accuracy(pred: Tensor, target: Tensor, num_classes: int) -> float:
    """The SBM benchmarks' class-balanced ("weighted") accuracy, as a fraction in ``[0, 1]``.

    The benchmark (``accuracy_SBM`` in benchmarking-gnns ``train/metrics.py``) builds the sklearn
    confusion matrix of (target, prediction), whose classes are those occurring in the targets
    *or* the predictions, and returns ``100 *`` the mean over those classes of the per-class
    recall ``TP_c / #{target == c}`` (0 for a class that is predicted but absent from the
    targets). Classes absent from both are not counted. This function returns the same mean
    without the factor 100: it is ``torchmetrics``' ``multiclass_accuracy(average="macro")``,
    which gives weight 0 to classes with ``TP + FP + FN = 0`` (absent from both) and recall 0 to
    predicted-only classes, exactly as above.

    One corner case differs, a quirk of the benchmark code: it indexes the confusion matrix by
    class id, which is only right when the occurring classes are ``0..m-1``; with a gap (e.g.
    only classes 0 and 2 occur) it misattributes recalls. This function uses the class ids
    correctly. Every PATTERN and CLUSTER graph contains all classes among its targets, so on any
    batch of whole graphs the two agree exactly.

    Note that the benchmark reports the mean over test *batches* of this per-batch value, not the
    value on the concatenated predictions.

    Args:
        pred (Tensor): predicted labels ``[N]`` (integers) or scores/logits ``[N, num_classes]``
            (the argmax is taken).
        target (Tensor): true labels ``[N]`` in ``0..num_classes-1``.
        num_classes (int): number of classes.

    Returns:
        float in ``[0, 1]`` (multiply by 100 for the benchmark's percentages).

    Raises:
        ValueError: for empty or mismatched inputs, or labels outside ``0..num_classes-1``.
    """
    pred, target = predicted_labels(pred, target, num_classes, "weighted_accuracy")
    return float(multiclass_accuracy(pred.cpu(), target.cpu(), num_classes=num_classes,
                                     average="macro"))


def f1_positive(pred: Tensor, target: Tensor) -> float:
    """F1 score of the positive class (label 1), the TSP benchmark's metric.

    ``2 TP / (2 TP + FP + FN)``, computed by ``torchmetrics``' ``BinaryF1Score``; 0 when there
    is no positive among both predictions and targets. This equals the benchmark's
    ``binary_f1_score`` (sklearn ``f1_score(average="binary")`` of the argmax) on the same edges.

    Args:
        pred (Tensor): predicted labels ``[E]`` (0/1, any dtype) or scores/logits ``[E, 2]``
            (the argmax is taken).
        target (Tensor): true labels ``[E]`` in ``{0, 1}``.

    Returns:
        float in ``[0, 1]``.

    Raises:
        ValueError: for empty or mismatched inputs, or labels outside ``{0, 1}``.

    Examples:
        >>> import torch
        >>> f1_positive(torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 1, 0]))
        0.5
    """
    from torchmetrics.classification import BinaryF1Score

    pred, target = predicted_labels(pred, target, 2, "f1_positive")
    return float(BinaryF1Score()(pred.cpu(), target.cpu()))


def weighted_accuracy_tensor(pred: Tensor, target: Tensor, num_classes: int) -> Tensor:
    """:func:`weighted_accuracy` as a 0-dim float64 tensor on the inputs' device, computed from
    per-class counts (``index_add_``) without reading any value on the host, so a training step
    on a GPU never waits for it. Labels are not range-checked here (the data pipeline checks
    them); a class that is neither a target nor predicted does not count, a class predicted but
    absent from the targets counts with recall 0, as in :func:`weighted_accuracy`.

    Args:
        pred: predicted labels ``[N]`` or scores ``[N, num_classes]``.
        target: labels ``[N]``.
        num_classes: number of classes.
    """
    if pred.dim() == 2:
        pred = pred.argmax(dim=1)
    pred, target = pred.reshape(-1).long(), target.reshape(-1).long()
    ones = torch.ones_like(target, dtype=torch.float64)
    support = torch.zeros(num_classes, dtype=torch.float64, device=target.device)
    support = support.index_add(0, target, ones)
    predicted = torch.zeros_like(support).index_add(0, pred, ones)
    hits = torch.zeros_like(support).index_add(0, target, (pred == target).to(torch.float64))
    counted = (support + predicted) > 0
    recall = hits / support.clamp_min(1)
    return (recall * counted).sum() / counted.sum().clamp_min(1)


class BatchMeanWeightedAccuracy(torchmetrics.Metric):
    """Mean over batches of :func:`weighted_accuracy`, the way the SBM benchmarks (and the GT
    paper's PATTERN/CLUSTER numbers) report it: each evaluation batch is scored on its own and
    the scores are averaged. The value therefore depends on the evaluation batch size; the
    configs use the papers' batch sizes.

    ``update(preds [num_nodes, num_classes] or [num_nodes], target [num_nodes])``.
    """

    higher_is_better = True
    full_state_update = False

    def __init__(self, num_classes: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.add_state("total", default=torch.tensor(0.0, dtype=torch.float64),
                       dist_reduce_fx="sum")
        self.add_state("batches", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor) -> None:
        # on the device, no host read (weighted_accuracy_tensor)
        self.total += weighted_accuracy_tensor(preds, target, self.num_classes)
        self.batches += 1

    def compute(self) -> Tensor:
        return self.total / self.batches.clamp_min(1)


class MultitaskROCAUC(torchmetrics.Metric):
    """ROC-AUC averaged over binary tasks, with OGB's evaluator semantics (``ogbg-molhiv`` and
    the MoleculeNet classification sets): NaN targets are missing labels and are ignored; a task
    whose labelled targets do not contain both classes is skipped; the result is the mean over
    the remaining tasks.

    ``update(preds [num_items, num_tasks] logits or scores, target [num_items, num_tasks])``.

    Where no task has both classes among what was seen (a split or a sanity-check batch with one
    class only), ROC-AUC is undefined: ``compute`` returns NaN and warns once per metric instead
    of stopping the run.
    """

    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("preds", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")
        self._warned = False

    def update(self, preds: Tensor, target: Tensor) -> None:
        self.preds.append(preds.float().reshape(preds.size(0), -1))
        self.target.append(target.float().reshape(target.size(0), -1))

    #: the metric's name in messages
    what = "ROC-AUC"

    def per_task(self, target: Tensor, preds: Tensor) -> list[float]:
        """The metric of every task, ``NaN`` where a task does not qualify."""
        return roc_auc_per_task(target, preds)

    def compute(self) -> Tensor:
        preds = torchmetrics.utilities.dim_zero_cat(self.preds)
        target = torchmetrics.utilities.dim_zero_cat(self.target)
        per_task = [v for v in self.per_task(target, preds) if not math.isnan(v)]
        if not per_task:
            if not self._warned:
                log.warning("%s is undefined (no task has both a positive and a negative "
                            "label among the %d items seen); reported as NaN", self.what,
                            target.size(0))
                self._warned = True
            return torch.tensor(float("nan"))
        return torch.tensor(sum(per_task) / len(per_task))


class _OGBEvaluated:
    """The mean of a multi-task metric computed by OGB's own ``ogb.graphproppred.Evaluator``
    where it scores the dataset by that metric (``ogb_key``); otherwise, and where the metric is
    undefined, the base class's computation (the same rules)."""

    ogb_key: str

    def __init__(self, name: str, **kwargs) -> None:
        super().__init__(**kwargs)
        from .._optional import require
        self.evaluator = require("ogb.graphproppred", f"OGB's evaluator for {name}").Evaluator(name)

    def compute(self) -> Tensor:
        preds = torchmetrics.utilities.dim_zero_cat(self.preds)
        target = torchmetrics.utilities.dim_zero_cat(self.target)
        if all(math.isnan(v) for v in self.per_task(target, preds)) or \
                getattr(self.evaluator, "eval_metric", self.ogb_key) != self.ogb_key:
            # undefined: NaN with one warning; or OGB scores this dataset by another metric
            # (ogbg-molpcba by AP, ogbg-molhiv by ROC-AUC): the same rules here
            return super().compute()
        result = self.evaluator.eval({"y_true": target.double().cpu().numpy(),
                                      "y_pred": preds.double().cpu().numpy()})
        return torch.tensor(float(result[self.ogb_key]))


class OGBEvaluatorROCAUC(_OGBEvaluated, MultitaskROCAUC):
    """:class:`MultitaskROCAUC` computed by OGB's own ``ogb.graphproppred.Evaluator(name)``
    (scikit-learn's ``roc_auc_score`` per task, the same rules), for a dataset read from OGB's
    published files (:class:`graph_transformers.datasets.molecules.ogb.OGBGraphPropPred`), so
    the reported number is the one OGB's leaderboard computes. Where no task has both classes it
    returns NaN and warns, as :class:`MultitaskROCAUC` (OGB's evaluator would raise).

    Raises:
        MissingDependencyError: ``ogb`` is not installed (the ``[ogb]`` extra).
    """

    ogb_key = "rocauc"


def _as_2d(y_true: Any, y_pred: Any, who: str) -> tuple[Tensor, Tensor]:
    t = torch.as_tensor(y_true).detach().to("cpu", torch.float64)
    p = torch.as_tensor(y_pred).detach().to("cpu", torch.float64)
    if t.dim() == 1:
        t = t.unsqueeze(1)
    if p.dim() == 1:
        p = p.unsqueeze(1)
    if t.dim() != 2 or t.shape != p.shape:
        raise ValueError(
            f"{who}: y_true and the predictions must have the same shape [N] or [N, num_tasks], "
            f"got {tuple(torch.as_tensor(y_true).shape)} and {tuple(torch.as_tensor(y_pred).shape)}"
        )
    return t, p


def roc_auc_per_task(y_true: Any, y_score: Any) -> list[float]:
    r"""ROC-AUC of every task, ``NaN`` for a task that does not qualify.

    Per task (column): rows whose label is ``NaN`` are ignored; the task qualifies when the
    remaining labels contain both a 0 and a 1. The AUC is computed with torchmetrics'
    ``BinaryAUROC`` (exact, ties counted as half; float32 arithmetic, so within ~1e-7 of a
    float64 computation such as scikit-learn's). Scores may be probabilities or logits: only
    their order matters (they are mapped to ranks in ``[0, 1]`` first, so no sigmoid is applied
    and large logits cannot saturate into ties).

    Args:
        y_true: ``[N]`` or ``[N, T]`` labels in ``{0, 1}`` or ``NaN`` (tensor, array or list).
        y_score: same shape, real scores.

    Raises:
        ValueError: shape mismatch, a label other than 0 / 1 / NaN, or a NaN score where the
            label is present.
    """
    from torchmetrics.classification import BinaryAUROC

    def auroc(yk: Tensor, sk: Tensor) -> float:
        uniq, rank = torch.unique(sk, return_inverse=True)
        metric = BinaryAUROC(thresholds=None)
        metric.update(rank.to(torch.float64) / max(len(uniq) - 1, 1), yk.long())
        return float(metric.compute())

    return _per_qualifying_task(y_true, y_score, "roc_auc", auroc)


def _per_qualifying_task(y_true: Any, y_score: Any, name: str,
                         score: Callable[[Tensor, Tensor], float]) -> list[float]:
    """``score(labels, scores)`` of every task (column) over its labelled rows, ``NaN`` for a
    task whose labels do not hold both classes: OGB's evaluator rules (see
    :func:`roc_auc_per_task`).

    Raises:
        ValueError: shape mismatch, a label other than 0 / 1 / NaN, or a NaN score where the
            label is present (``name`` and the task in the message).
    """
    t, s = _as_2d(y_true, y_score, name)
    out: list[float] = []
    for k in range(t.shape[1]):
        labelled = ~torch.isnan(t[:, k])
        yk, sk = t[labelled, k], s[labelled, k]
        if not bool(((yk == 0) | (yk == 1)).all()):
            raise ValueError(f"{name}: task {k} has labels other than 0, 1 and NaN")
        if bool(torch.isnan(sk).any()):
            raise ValueError(f"{name}: task {k} has NaN scores for labelled rows")
        if not (bool((yk == 1).any()) and bool((yk == 0).any())):
            out.append(float("nan"))
            continue
        out.append(score(yk, sk))
    return out


def roc_auc_multitask(y_true: Any, y_score: Any) -> float:
    r"""ROC-AUC averaged over tasks, as OGB's ``Evaluator`` computes ``rocauc`` for
    ``ogbg-molhiv`` / ``ogbg-moltox21`` / ...: per task, ``NaN`` labels are ignored, tasks
    without both classes are skipped, and the mean is over the remaining tasks (see
    :func:`roc_auc_per_task`).

    Args:
        y_true: ``[N]`` or ``[N, T]`` labels in ``{0, 1}`` or ``NaN``.
        y_score: same shape, real scores (probabilities or logits).

    Returns:
        float in ``[0, 1]``.

    Raises:
        ValueError: no task has both a positive and a negative label (ROC-AUC undefined), or an
            error of :func:`roc_auc_per_task`.
    """
    per_task = [v for v in roc_auc_per_task(y_true, y_score) if not math.isnan(v)]
    if not per_task:
        raise ValueError(
            "roc_auc_multitask: no task has both a positive and a negative label among its "
            "non-NaN labels, so ROC-AUC is undefined"
        )
    return float(sum(per_task) / len(per_task))


def _regression_metric(y_true: Any, y_pred: Any, who: str, make_metric: Callable) -> float:
    t, p = _as_2d(y_true, y_pred, who)
    values = []
    for k in range(t.shape[1]):
        labelled = ~torch.isnan(t[:, k])
        if not bool(labelled.any()):
            continue
        if bool(torch.isnan(p[labelled, k]).any()):
            raise ValueError(f"{who}: task {k} has NaN predictions for labelled rows")
        metric = make_metric()
        metric.update(p[labelled, k], t[labelled, k])
        values.append(float(metric.compute()))
    if not values:
        raise ValueError(f"{who}: every label is NaN")
    return float(sum(values) / len(values))


def rmse(y_true: Any, y_pred: Any) -> float:
    """Root-mean-squared error as OGB's evaluator (``rmse``): per task over the non-``NaN``
    labels (torchmetrics ``MeanSquaredError(squared=False)``), then the mean over tasks.

    Args:
        y_true: ``[N]`` or ``[N, T]`` targets, ``NaN`` = missing.
        y_pred: same shape.

    Raises:
        ValueError: shape mismatch, every label ``NaN``, or a NaN prediction for a labelled row.
    """
    from torchmetrics import MeanSquaredError

    return _regression_metric(y_true, y_pred, "rmse", lambda: MeanSquaredError(squared=False))


def mae(y_true: Any, y_pred: Any) -> float:
    """Mean absolute error: per task over the non-``NaN`` labels (torchmetrics
    ``MeanAbsoluteError``), then the mean over tasks. Same arguments and errors as :func:`rmse`.
    """
    from torchmetrics import MeanAbsoluteError

    return _regression_metric(y_true, y_pred, "mae", MeanAbsoluteError)


# ----------------------------------------------------------------- average precision (ogbg-molpcba)
def average_precision_per_task(y_true: Any, y_score: Any) -> list[float]:
    r"""Average precision (AP) of every task, ``NaN`` for a task that does not qualify: OGB's
    ``Evaluator._eval_ap`` rules (``ogbg-molpcba``), computed with torchmetrics'
    ``BinaryAveragePrecision`` (exact, ``thresholds=None``: scikit-learn's
    ``average_precision_score``, ``Σ_n (R_n − R_{n−1}) P_n`` over the distinct scores).

    Per task (column): rows whose label is ``NaN`` are ignored; the task qualifies when the
    remaining labels hold both a 0 and a 1. Only the scores' order matters (logits or
    probabilities).

    Args:
        y_true: ``[N]`` or ``[N, T]`` labels in ``{0, 1}`` or ``NaN``.
        y_score: same shape, real scores.

    Raises:
        ValueError: shape mismatch, a label other than 0 / 1 / NaN, or a NaN score where the
            label is present.
    """
    from torchmetrics.classification import BinaryAveragePrecision

    def ap(yk: Tensor, sk: Tensor) -> float:
        metric = BinaryAveragePrecision(thresholds=None)
        metric.update(sk, yk.long())  # scores outside [0, 1] are taken as logits: same order
        return float(metric.compute())

    return _per_qualifying_task(y_true, y_score, "ap", ap)


class MultitaskAP(MultitaskROCAUC):
    """Average precision averaged over binary tasks with OGB's evaluator semantics
    (``ogbg-molpcba``): NaN targets are missing labels and are ignored; a task whose labelled
    targets do not hold both classes is skipped; the result is the mean over the remaining
    tasks (:func:`average_precision_per_task`). ``update`` as :class:`MultitaskROCAUC`.

    Where no task has both classes among what was seen, AP is undefined: ``compute`` returns
    NaN and warns once per metric (OGB's evaluator would raise).
    """

    what = "AP"

    def per_task(self, target: Tensor, preds: Tensor) -> list[float]:
        """The AP of every task, ``NaN`` where a task does not qualify."""
        return average_precision_per_task(target, preds)


class OGBEvaluatorAP(_OGBEvaluated, MultitaskAP):
    """:class:`MultitaskAP` computed by OGB's own ``ogb.graphproppred.Evaluator(name)``
    (scikit-learn's ``average_precision_score`` per task, the same rules; ``ogbg-molpcba``), for
    a dataset read from OGB's published files, so the reported number is the one OGB's
    leaderboard computes. Where no task has both classes it returns NaN and warns, as
    :class:`MultitaskAP`.

    Raises:
        MissingDependencyError: ``ogb`` is not installed (the ``[ogb]`` extra).
    """

    ogb_key = "ap"


# ------------------------------------------------------------------------ OGB-LSC (PCQM4M, v2)
#: OGB-LSC datasets whose MAE its evaluator computes: ``ogb_evaluator`` → class of ``ogb.lsc``
LSC_EVALUATORS: dict[str, str] = {"pcqm4m": "PCQM4MEvaluator", "pcqm4mv2": "PCQM4Mv2Evaluator"}


class OGBLSCEvaluatorMAE(torchmetrics.Metric):
    """Mean absolute error computed by OGB-LSC's ``ogb.lsc.PCQM4MEvaluator`` /
    ``PCQM4Mv2Evaluator`` (``eval({"y_true", "y_pred"})["mae"]``, on float64 NumPy arrays of
    every prediction of the split), for PCQM4M-LSC / PCQM4Mv2 read from OGB-LSC's files
    (:class:`graph_transformers.datasets.molecules.pcqm4m.PCQM4MLSC`). Where ``ogb.lsc``
    cannot be imported, the same formula, ``mean(|y_pred − y_true|)`` in float64, is computed
    here and one INFO line says so.

    ``update(preds [N] or [N, 1], target [N] or [N, 1])`` (missing labels already left out, as
    :meth:`~graph_transformers.training.tasks.Task.metric_inputs` does). Nothing seen: NaN.

    Args:
        name: a key of :data:`LSC_EVALUATORS`.

    Raises:
        ValueError: an unknown name.
    """

    higher_is_better = False
    full_state_update = False

    def __init__(self, name: str, **kwargs) -> None:
        super().__init__(**kwargs)
        if name not in LSC_EVALUATORS:
            raise ValueError(f"no OGB-LSC evaluator for {name!r}; known: {sorted(LSC_EVALUATORS)}")
        self.add_state("preds", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")
        try:
            import ogb.lsc as lsc
            self.evaluator = getattr(lsc, LSC_EVALUATORS[name])()
        except (ImportError, AttributeError, OSError) as err:
            log.info("ogb.lsc.%s is not available (%s); the %s MAE is computed with its formula, "
                     "mean(|y_pred - y_true|) in float64", LSC_EVALUATORS[name], err, name)
            self.evaluator = None

    def update(self, preds: Tensor, target: Tensor) -> None:
        self.preds.append(preds.detach().reshape(-1).double())
        self.target.append(target.detach().reshape(-1).double())

    def compute(self) -> Tensor:
        # a list of batches in one process; under DDP the synced state is one tensor already
        if isinstance(self.preds, list) and not self.preds:  # nothing seen
            return torch.tensor(float("nan"), dtype=torch.float64)
        preds = torchmetrics.utilities.dim_zero_cat(self.preds).cpu()
        target = torchmetrics.utilities.dim_zero_cat(self.target).cpu()
        if preds.numel() == 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        p, t = preds.numpy(), target.numpy()
        if self.evaluator is not None:
            value = float(self.evaluator.eval({"y_true": t, "y_pred": p})["mae"])
        else:
            value = float(abs(p - t).mean())
        return torch.tensor(value, dtype=torch.float64)
