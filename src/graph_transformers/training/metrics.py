"""Task metrics that torchmetrics does not provide in the papers' exact form."""
from __future__ import annotations

import torch
import torchmetrics
from torch import Tensor
from torchmetrics.functional.classification import multiclass_accuracy


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
    target = torch.as_tensor(target).reshape(-1).long()
    pred = torch.as_tensor(pred)
    if pred.dim() == 2:
        if pred.shape[1] != num_classes:
            raise ValueError(f"scores must have {num_classes} columns, got {tuple(pred.shape)}")
        pred = pred.argmax(dim=1)
    pred = pred.reshape(-1).long()
    if target.numel() == 0:
        raise ValueError("weighted_accuracy needs at least one target")
    if pred.shape != target.shape:
        raise ValueError(f"pred and target sizes differ: {tuple(pred.shape)} vs "
                         f"{tuple(target.shape)}")
    for name, t in (("pred", pred), ("target", target)):
        if int(t.min()) < 0 or int(t.max()) >= num_classes:
            raise ValueError(f"{name} labels must be in 0..{num_classes - 1}")
    return float(multiclass_accuracy(pred.cpu(), target.cpu(), num_classes=num_classes,
                                     average="macro"))


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
        self.add_state("total", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("batches", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor) -> None:
        self.total += weighted_accuracy(preds, target, self.num_classes)
        self.batches += 1

    def compute(self) -> Tensor:
        return self.total / self.batches.clamp_min(1)


class MultitaskROCAUC(torchmetrics.Metric):
    """ROC-AUC averaged over binary tasks, with OGB's evaluator semantics (``ogbg-molhiv`` and
    the MoleculeNet classification sets): NaN targets are missing labels and are ignored; a task
    whose labelled targets do not contain both classes is skipped; the result is the mean over
    the remaining tasks.

    ``update(preds [num_items, num_tasks] logits or scores, target [num_items, num_tasks])``.

    Raises:
        ValueError: from ``compute`` when no task has both classes.
    """

    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("preds", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")

    def update(self, preds: Tensor, target: Tensor) -> None:
        self.preds.append(preds.float().reshape(preds.size(0), -1))
        self.target.append(target.float().reshape(target.size(0), -1))

    def compute(self) -> Tensor:
        preds = torchmetrics.utilities.dim_zero_cat(self.preds)
        target = torchmetrics.utilities.dim_zero_cat(self.target)
        return roc_auc_multitask(target, preds)


def roc_auc_multitask(y_true: Tensor, y_score: Tensor) -> Tensor:
    """Mean per-task ROC-AUC over tasks with both classes among their labelled items.

    Args:
        y_true: ``[num_items, num_tasks]`` in {0, 1} or NaN (missing).
        y_score: ``[num_items, num_tasks]`` scores (any monotone scale, e.g. logits).

    Raises:
        ValueError: on shape mismatch or when no task qualifies.
    """
    from torchmetrics.functional.classification import binary_auroc
    if y_true.shape != y_score.shape:
        raise ValueError(f"y_true {tuple(y_true.shape)} and y_score {tuple(y_score.shape)} differ")
    values = []
    for t in range(y_true.size(1)):
        labelled = ~torch.isnan(y_true[:, t])
        yt = y_true[labelled, t]
        if yt.numel() == 0 or yt.min() == yt.max():
            continue
        values.append(binary_auroc(y_score[labelled, t], yt.long()))
    if not values:
        raise ValueError("ROC-AUC is undefined: no task has both positive and negative labels")
    return torch.stack(values).mean()
