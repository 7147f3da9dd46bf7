r"""The metrics of the Long Range Graph Benchmark's node and pair tasks (Dwivedi et al., "Long
Range Graph Benchmark", NeurIPS 2022 D&B), and the dot-product pair scores a pair-level task
(``DatasetSpec.level == "pair"``, PCQM-Contact) is trained and ranked with.

* **Macro F1** (``f1_macro``; PascalVOC-SP, COCO-SP): per class ``F1_c = 2 TP_c / (2 TP_c +
  FP_c + FN_c)`` over all nodes of the split, averaged over the classes that occur among the
  targets or the predictions; a class with ``TP + FP + FN = 0`` is left out, one predicted but
  absent from the targets (or the reverse) counts with ``F1 = 0``. That is scikit-learn's
  ``f1_score(average="macro", zero_division=0)``, which LRGB's logger (and Tönshoff et al.'s)
  computes on the concatenated predictions of a split; torchmetrics' ``MulticlassF1Score
  (average="macro")`` computes the same from per-class counts accumulated over the batches
  (``tests/training/test_lrgb_metrics.py`` checks both against scikit-learn).
* **Filtered MRR** (``mrr``; PCQM-Contact), the corrected evaluation of Tönshoff et al., "Where
  Did the Gap Go? Reassessing the Long-Range Graph Benchmark" (TMLR 2024; github
  ``toenshoff/LRGB``, ``graphgps/head/inductive_edge.py``, ``compute_mrr``): the score of a pair
  ``(i, j)`` is the dot product ``⟨h_i, h_j⟩`` of the model's node embeddings (LRGB's
  ``edge_decoding: dot``). **Per graph**, for every positive pair ``(s, t)`` (a contact), ``t`` is
  ranked among the graph's nodes as targets of ``s``: its rank is ``1 + #{j ∈ N(s, t) : score(s,
  j) > score(s, t)}`` (ties: below), and the graph's MRR is the mean of ``1 / rank`` over its
  positive pairs; the split's MRR is the mean over its graphs that have a positive pair. The
  candidate negatives ``N(s, t)`` (:data:`MRR_MODES`):

  - ``"raw"``: every other node of the graph (``j ≠ t``; Tönshoff's ``mrr``);
  - ``"filtered"`` (the default, and what ``mrr`` reports): every node of the graph that is not
    a positive target of ``s`` (``(s, j)`` not a contact; Tönshoff's ``mrr_filt``), so that
    another true contact of ``s`` ranked above ``t`` is no error;
  - ``"filtered_self"``: also without ``j = s`` (Tönshoff's ``mrr_filt_self``).

  LRGB's first evaluation ranked ``t`` against every node of the *batch* (other graphs' nodes
  included), which made the number depend on the batch size; Tönshoff et al. fixed it to the
  per-graph ranking above. Two details differ from their code, on purpose: **ties** count half
  (the rank is the mean of the optimistic and pessimistic ranks, ``1 + #greater + #equal / 2``,
  as OGB's ``linkproppred`` evaluator; their ``argsort`` puts a tie wherever the sort happens to,
  so that a model scoring every pair alike would get MRR 1), and the split's value is the plain
  mean over graphs (theirs weighs each batch's mean over graphs by its number of labelled pairs;
  the two agree when one batch holds the split). A positive pair listed twice counts once.

Shapes: node embeddings ``h [num_nodes, d]``; pairs ``edge_label_index [2, num_pairs]`` (batch
node ids, source first) with ``edge_label [num_pairs]`` (1 = positive, 0 = negative); the
per-graph score grid ``scores [num_graphs, N, N]`` (``N``: the batch's largest graph;
``scores[b, i, j]`` = score of ``i → j``), ``positive [num_graphs, N, N]`` and ``valid
[num_graphs, N]`` (real nodes, not padding).
"""
from __future__ import annotations

import torch
import torchmetrics
from torch import Tensor
from torch_geometric.utils import to_dense_adj, to_dense_batch
from torchmetrics.functional.classification import multiclass_f1_score

from .metrics import predicted_labels

__all__ = ["MRR_MODES", "FilteredMRR", "macro_f1", "mean_reciprocal_rank", "pair_dot_scores",
           "pair_score_grid", "reciprocal_ranks"]

#: candidate negatives of the MRR (module docstring)
MRR_MODES: tuple[str, ...] = ("raw", "filtered", "filtered_self")


def macro_f1(pred: Tensor, target: Tensor, num_classes: int) -> float:
    """Macro F1 over the classes occurring in ``target`` or the predictions (module docstring:
    scikit-learn's ``f1_score(average="macro", zero_division=0)``), LRGB's PascalVOC-SP / COCO-SP
    metric.

    Args:
        pred: predicted labels ``[N]`` or scores / logits ``[N, num_classes]`` (argmax taken).
        target: true labels ``[N]`` in ``0..num_classes-1``.
        num_classes: number of classes.

    Returns:
        float in ``[0, 1]``.

    Raises:
        ValueError: no target, sizes that differ, scores of another width, or labels outside
            ``0..num_classes-1``.
    """
    pred, target = predicted_labels(pred, target, num_classes, "macro_f1")
    return float(multiclass_f1_score(pred.cpu(), target.cpu(), num_classes=num_classes,
                                     average="macro"))


# ---------------------------------------------------------------------------------- pair scores
def pair_dot_scores(h: Tensor, edge_label_index: Tensor) -> Tensor:
    """The dot-product scores (logits) of the pairs ``edge_label_index`` (LRGB's
    ``edge_decoding: dot``): ``⟨h_i, h_j⟩`` for each column ``(i, j)``.

    Args:
        h: node embeddings ``[num_nodes, d]``.
        edge_label_index: pairs ``[2, num_pairs]`` of node ids of ``h``.

    Returns:
        ``[num_pairs, 1]``, in ``h``'s dtype.

    Raises:
        ValueError: ``edge_label_index`` not of shape ``[2, num_pairs]``.
    """
    if edge_label_index.dim() != 2 or edge_label_index.size(0) != 2:
        raise ValueError(f"edge_label_index must have shape [2, num_pairs], got "
                         f"{tuple(edge_label_index.shape)}")
    src, dst = edge_label_index
    return (h[src] * h[dst]).sum(dim=-1, keepdim=True)


def pair_score_grid(h: Tensor, edge_label_index: Tensor, edge_label: Tensor,
                    batch: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Every pair's dot-product score within each graph of a batch, with the positive pairs
    marked: the input of :class:`FilteredMRR`.

    Args:
        h: node embeddings ``[num_nodes, d]`` (float).
        edge_label_index: labelled pairs ``[2, num_pairs]`` (batch node ids; both ends in one
            graph).
        edge_label: ``[num_pairs]``, 1 for a positive pair (a contact), 0 for a negative.
        batch: each node's graph ``[num_nodes]`` (``None``: one graph).

    Returns:
        ``(scores [B, N, N], positive [B, N, N] bool, valid [B, N] bool)``; padding entries of
        ``scores`` are 0 and never count (``valid``).

    Raises:
        ValueError: ``edge_label`` of another length than the pairs.
    """
    if edge_label.numel() != edge_label_index.size(1):
        raise ValueError(f"edge_label has {edge_label.numel()} entries for "
                         f"{edge_label_index.size(1)} pairs")
    if batch is None:
        batch = torch.zeros(h.size(0), dtype=torch.long, device=h.device)
    dense, valid = to_dense_batch(h, batch)  # [B, N, d], [B, N]
    scores = dense @ dense.transpose(1, 2)
    pos = edge_label_index[:, edge_label.reshape(-1) == 1]
    positive = to_dense_adj(pos, batch, max_num_nodes=dense.size(1),
                            batch_size=dense.size(0)) > 0
    return scores, positive, valid


# ------------------------------------------------------------------------------------- the MRR
def _check_grid(scores: Tensor, positive: Tensor, valid: Tensor, mode: str) -> None:
    if mode not in MRR_MODES:
        raise ValueError(f"unknown MRR mode {mode!r}; expected one of {MRR_MODES}")
    if scores.dim() != 3 or scores.size(1) != scores.size(2):
        raise ValueError(f"scores must have shape [num_graphs, N, N], got {tuple(scores.shape)}")
    if positive.shape != scores.shape or valid.shape != scores.shape[:2]:
        raise ValueError(f"positive {tuple(positive.shape)} must match scores "
                         f"{tuple(scores.shape)} and valid {tuple(valid.shape)} its first two "
                         "dimensions")
    if bool((positive & ~(valid.unsqueeze(2) & valid.unsqueeze(1))).any()):
        raise ValueError("a positive pair involves a padding node (valid is False)")


def reciprocal_ranks(scores: Tensor, positive: Tensor, valid: Tensor, mode: str = "filtered"
                     ) -> tuple[Tensor, Tensor]:
    """``1 / rank`` of every positive pair's target among its source's candidate targets
    (module docstring; ties count half).

    Args:
        scores: ``[num_graphs, N, N]``, ``scores[b, s, j]`` the score of ``s → j`` in graph ``b``.
        positive: ``[num_graphs, N, N]`` bool, the positive pairs.
        valid: ``[num_graphs, N]`` bool, the real nodes.
        mode: ``"raw"``, ``"filtered"`` or ``"filtered_self"`` (:data:`MRR_MODES`).

    Returns:
        ``(rr [num_positives] float64, graph [num_positives] long)``: each positive pair's
        reciprocal rank and its graph, in the order of ``positive.nonzero()``.

    Raises:
        ValueError: an unknown mode, shapes that do not fit, or a positive pair on padding.
    """
    _check_grid(scores, positive, valid, mode)
    b, s, t = positive.nonzero(as_tuple=True)
    rows = scores[b, s].double()                       # [P, N]
    pos = scores[b, s, t].double().unsqueeze(1)        # [P, 1]
    neg = valid[b].clone()                             # candidates: the graph's nodes ...
    arange = torch.arange(b.numel(), device=neg.device)
    neg[arange, t] = False                             # ... but the target itself
    if mode != "raw":
        neg &= ~positive[b, s]                         # ... and the source's other positives
    if mode == "filtered_self":
        neg[arange, s] = False                         # ... and the source itself
    greater = ((rows > pos) & neg).sum(dim=1)
    ties = ((rows == pos) & neg).sum(dim=1)
    rank = 1.0 + greater.double() + 0.5 * ties.double()
    return 1.0 / rank, b


def _per_graph(scores: Tensor, positive: Tensor, valid: Tensor, mode: str
               ) -> tuple[Tensor, Tensor]:
    """``(sum of the per-graph MRRs, number of graphs with a positive pair)``, float64."""
    rr, graph = reciprocal_ranks(scores, positive, valid, mode)
    num_graphs = scores.size(0)
    total = torch.zeros(num_graphs, dtype=torch.float64, device=rr.device).index_add_(0, graph, rr)
    count = torch.zeros(num_graphs, dtype=torch.float64, device=rr.device).index_add_(
        0, graph, torch.ones_like(rr))
    has = count > 0
    return (total[has] / count[has]).sum(), has.sum().double()


def mean_reciprocal_rank(scores: Tensor, positive: Tensor, valid: Tensor,
                         mode: str = "filtered") -> float:
    """The MRR of the graphs of one score grid: per graph the mean ``1 / rank`` of its positive
    pairs (:func:`reciprocal_ranks`), then the mean over the graphs that have one (module
    docstring).

    Args:
        scores: ``[num_graphs, N, N]`` pair scores (as :func:`reciprocal_ranks`).
        positive: ``[num_graphs, N, N]`` bool, the positive pairs.
        valid: ``[num_graphs, N]`` bool, the real nodes.
        mode: ``"raw"``, ``"filtered"`` or ``"filtered_self"`` (:data:`MRR_MODES`).

    Returns:
        float in ``(0, 1]``; NaN when no graph has a positive pair.

    Raises:
        ValueError: as :func:`reciprocal_ranks`.
    """
    total, graphs = _per_graph(scores, positive, valid, mode)
    return float(total / graphs) if float(graphs) > 0 else float("nan")


class FilteredMRR(torchmetrics.Metric):
    """The MRR of a split (module docstring; ``mode="filtered"``: PCQM-Contact's ``mrr``),
    accumulated over batches: each ``update`` adds the per-graph MRRs of its graphs (a graph's
    value does not depend on the batch), ``compute`` returns their mean (NaN when no graph had
    a positive pair). Under DDP the sums are reduced over the ranks.

    ``update(scores [B, N, N], positive [B, N, N] bool, valid [B, N] bool)``, as
    :func:`pair_score_grid` returns them.

    Args:
        mode: ``"raw"``, ``"filtered"`` or ``"filtered_self"`` (:data:`MRR_MODES`).
        **kwargs: torchmetrics' ``Metric`` options.

    Raises:
        ValueError: an unknown mode; in ``update``, inputs of :func:`reciprocal_ranks`' errors.
    """

    higher_is_better = True
    full_state_update = False

    def __init__(self, mode: str = "filtered", **kwargs) -> None:
        super().__init__(**kwargs)
        if mode not in MRR_MODES:
            raise ValueError(f"unknown MRR mode {mode!r}; expected one of {MRR_MODES}")
        self.mode = mode
        self.add_state("total", default=torch.tensor(0.0, dtype=torch.float64),
                       dist_reduce_fx="sum")
        self.add_state("graphs", default=torch.tensor(0.0, dtype=torch.float64),
                       dist_reduce_fx="sum")

    def update(self, scores: Tensor, positive: Tensor, valid: Tensor) -> None:
        total, graphs = _per_graph(scores.detach(), positive, valid, self.mode)
        self.total += total.to(self.total.device)
        self.graphs += graphs.to(self.graphs.device)

    def compute(self) -> Tensor:
        if float(self.graphs) == 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return self.total / self.graphs
