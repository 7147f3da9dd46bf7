"""The LRGB metrics (issue 57, item 1b): macro F1 against hand-computed values and scikit-learn,
over one split whatever the batching; the filtered MRR of Tönshoff et al.'s corrected evaluation
against a hand-ranked example (ties, filtering, padding, a graph without contacts) and a naive
per-positive reference, independent of the batch size (the bug of LRGB's first evaluation);
and the pair-level task's dot-product logits and loss."""
from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional as F
from torch_geometric.data import Batch, Data

from graph_transformers.data.registry import DatasetSpec, TASK_METRICS, choose_metric, get_spec
from graph_transformers.training.config import ConfigError, build_config
from graph_transformers.training.lrgb_metrics import (FilteredMRR, macro_f1,
                                                      mean_reciprocal_rank, pair_dot_scores,
                                                      pair_score_grid, reciprocal_ranks)
from graph_transformers.training.tasks import Task, pair_embedding_dim


# ---------------------------------------------------------------------------------- macro F1
def test_macro_f1_of_a_small_confusion_by_hand():
    target = torch.tensor([0, 0, 1, 1, 2, 2])
    pred = torch.tensor([0, 1, 1, 1, 0, 2])
    # class 0: TP 1, FP 1, FN 1 -> 1/2; class 1: TP 2, FP 1, FN 0 -> 4/5; class 2: TP 1, FN 1
    # -> 2/3; class 3 occurs nowhere and is left out
    want = (0.5 + 0.8 + 2 / 3) / 3
    assert macro_f1(pred, target, 4) == pytest.approx(want, abs=1e-6)
    # a class predicted but absent from the targets counts with F1 = 0
    assert macro_f1(torch.tensor([0, 1, 1, 1, 3, 2]), target, 4) == pytest.approx(
        (2 / 3 + 0.8 + 2 / 3 + 0.0) / 4, abs=1e-6)
    # scores: the argmax is taken
    logits = F.one_hot(pred, 4).float() * 3.0
    assert macro_f1(logits, target, 4) == pytest.approx(want, abs=1e-6)
    with pytest.raises(ValueError, match="labels must be in 0..3"):
        macro_f1(torch.tensor([0, 4]), torch.tensor([0, 1]), 4)
    with pytest.raises(ValueError, match="macro_f1: target labels must be integers"):
        macro_f1(torch.tensor([0, 1]), torch.tensor([0.0, 0.7]), 4)  # was truncated to 0


def test_macro_f1_equals_sklearn_and_the_task_metric_over_batches():
    sklearn = pytest.importorskip("sklearn.metrics")
    g = torch.Generator().manual_seed(0)
    target = torch.randint(0, 7, (300,), generator=g)
    target[target == 5] = 0  # class 5 absent from the targets ...
    logits = torch.randn(300, 9, generator=g)
    pred = logits.argmax(1)  # ... classes 7, 8 predicted only
    want = sklearn.f1_score(target.numpy(), pred.numpy(), average="macro", zero_division=0)
    assert macro_f1(logits, target, 9) == pytest.approx(want, abs=1e-6)
    # the run's metric: torchmetrics over three batches of nodes equals the split's value
    spec = DatasetSpec("toy", "node", "classification", 9, "f1_macro", lambda: None)
    metric = Task(spec).metrics()
    for part in torch.arange(300).split(100):
        batch = Data(y=target[part], num_nodes=part.numel())
        metric.update(*Task(spec).metric_inputs(logits[part], batch))
    assert float(metric.compute()["f1_macro"]) == pytest.approx(want, abs=1e-6)


def test_f1_macro_is_a_classification_metric_of_data_metric():
    assert "f1_macro" in TASK_METRICS["classification"]
    spec = choose_metric(get_spec("cluster"), "f1_macro")
    assert spec.metric == "f1_macro" and spec.higher_is_better
    assert build_config({"data": {"name": "cluster", "metric": "f1_macro"},
                         "encodings": {"lap_pe": {}}}).data.metric == "f1_macro"
    with pytest.raises(ConfigError, match="data.metric"):
        build_config({"data": {"name": "cluster", "metric": "mrr"}, "encodings": {"lap_pe": {}}})
    with pytest.raises(ValueError, match="does not apply"):
        choose_metric(get_spec("zinc"), "f1_macro")


# ------------------------------------------------------------------------------------ the MRR
def _hand_grid():
    """Three graphs padded to 4 nodes: A (4 nodes, contacts 0→1 and 0→2), B (2 nodes, contact
    1→0), C (3 nodes, no contact)."""
    scores = torch.zeros(3, 4, 4)
    scores[0, 0] = torch.tensor([5.0, 3.0, 4.0, 3.0])  # row of source 0 in A: a tie 1 ~ 3
    scores[1, 1, :2] = torch.tensor([2.0, 0.0])
    scores[1, 1, 2:] = 99.0  # padding: must never count
    positive = torch.zeros(3, 4, 4, dtype=torch.bool)
    positive[0, 0, 1] = positive[0, 0, 2] = True
    positive[1, 1, 0] = True
    valid = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=torch.bool)
    return scores, positive, valid


def test_mrr_of_a_hand_ranked_example_with_ties_and_filtering():
    scores, positive, valid = _hand_grid()
    # A, contact 0→1 (score 3): raw negatives {0: 5, 2: 4, 3: 3}: 2 above, 1 tie -> rank 3.5;
    #   filtered (2 is a contact of 0) {0, 3}: rank 1 + 1 + 0.5 = 2.5; without the source: 1.5
    # A, contact 0→2 (score 4): raw {5, 3, 3} -> rank 2; filtered {5, 3} -> 2; no source -> 1
    # B, contact 1→0 (score 2): raw and filtered {1: 0} -> 1; no source: no negative -> 1
    rr, graph = reciprocal_ranks(scores, positive, valid, "raw")
    assert rr.tolist() == pytest.approx([1 / 3.5, 1 / 2, 1.0]) and graph.tolist() == [0, 0, 1]
    assert reciprocal_ranks(scores, positive, valid, "filtered")[0].tolist() == pytest.approx(
        [1 / 2.5, 1 / 2, 1.0])
    assert reciprocal_ranks(scores, positive, valid, "filtered_self")[0].tolist() == \
        pytest.approx([1 / 1.5, 1.0, 1.0])
    # per graph, then over graphs with a contact (C has none)
    assert mean_reciprocal_rank(scores, positive, valid, "raw") == pytest.approx(
        ((1 / 3.5 + 1 / 2) / 2 + 1) / 2)
    assert mean_reciprocal_rank(scores, positive, valid) == pytest.approx(
        ((1 / 2.5 + 1 / 2) / 2 + 1) / 2)
    assert mean_reciprocal_rank(scores, positive, valid, "filtered_self") == pytest.approx(
        ((1 / 1.5 + 1) / 2 + 1) / 2)
    metric = FilteredMRR()
    metric.update(scores, positive, valid)
    assert float(metric.compute()) == pytest.approx(((1 / 2.5 + 1 / 2) / 2 + 1) / 2)


def test_constant_scores_are_not_a_perfect_ranking():
    """Ties count half: a model scoring every pair alike ranks each contact in the middle
    (an argsort that puts ties first would give it MRR 1)."""
    n = 9
    scores = torch.zeros(1, n, n)
    positive = torch.zeros(1, n, n, dtype=torch.bool)
    positive[0, 0, 5] = True
    valid = torch.ones(1, n, dtype=torch.bool)
    assert mean_reciprocal_rank(scores, positive, valid) == pytest.approx(1 / (1 + (n - 1) / 2))


def _naive_mrr(scores, positive, valid, mode):
    """One positive at a time, in plain Python: the module docstring's definition."""
    per_graph = []
    for b in range(scores.size(0)):
        n = int(valid[b].sum())
        rrs = []
        for s in range(n):
            for t in range(n):
                if not positive[b, s, t]:
                    continue
                negs = [j for j in range(n) if j != t and not (mode != "raw" and positive[b, s, j])
                        and not (mode == "filtered_self" and j == s)]
                pos = float(scores[b, s, t])
                above = sum(float(scores[b, s, j]) > pos for j in negs)
                ties = sum(float(scores[b, s, j]) == pos for j in negs)
                rrs.append(1.0 / (1 + above + 0.5 * ties))
        if rrs:
            per_graph.append(sum(rrs) / len(rrs))
    return sum(per_graph) / len(per_graph)


@pytest.mark.parametrize("mode", ["raw", "filtered", "filtered_self"])
def test_mrr_equals_a_naive_reference(mode):
    g = torch.Generator().manual_seed(1)
    sizes = [5, 9, 3, 7]
    scores = torch.randint(-3, 4, (4, 9, 9), generator=g).float()  # small ints: many ties
    valid = torch.zeros(4, 9, dtype=torch.bool)
    positive = torch.zeros(4, 9, 9, dtype=torch.bool)
    for b, n in enumerate(sizes):
        valid[b, :n] = True
        positive[b, :n, :n] = torch.rand(n, n, generator=g) < 0.3
        positive[b].fill_diagonal_(False)
    assert mean_reciprocal_rank(scores, positive, valid, mode) == pytest.approx(
        _naive_mrr(scores, positive, valid, mode), abs=1e-12)


def test_mrr_equals_ogb_s_ranking_per_positive_where_nothing_is_filtered():
    """Without filtering and ties, each positive's reciprocal rank is OGB's ``_eval_mrr`` of its
    score against the other nodes' (``ogb.linkproppred.Evaluator``)."""
    linkpred = pytest.importorskip("ogb.linkproppred")
    evaluator = linkpred.Evaluator("ogbl-citation2")
    g = torch.Generator().manual_seed(2)
    scores = torch.randn(1, 6, 6, generator=g)
    positive = torch.zeros(1, 6, 6, dtype=torch.bool)
    positive[0, 2, 4] = positive[0, 3, 0] = True
    valid = torch.ones(1, 6, dtype=torch.bool)
    rr, _ = reciprocal_ranks(scores, positive, valid, "raw")
    for k, (s, t) in enumerate([(2, 4), (3, 0)]):
        neg = torch.cat([scores[0, s, :t], scores[0, s, t + 1:]]).view(1, -1)
        out = evaluator.eval({"y_pred_pos": scores[0, s, t].view(1), "y_pred_neg": neg})
        assert float(rr[k]) == pytest.approx(float(out["mrr_list"][0]))


def _contact_graphs(num: int, seed: int = 3) -> list[Data]:
    g = torch.Generator().manual_seed(seed)
    graphs = []
    for i in range(num):
        n = 4 + i % 5
        pos = torch.stack([torch.arange(n - 2), torch.arange(2, n)])
        pos = torch.cat([pos, pos.flip(0)], dim=1)
        neg = torch.stack([torch.arange(n), torch.randint(0, n, (n,), generator=g)])
        graphs.append(Data(x=torch.zeros(n, 1), edge_index=torch.zeros(2, 0, dtype=torch.long),
                           edge_label_index=torch.cat([pos, neg], dim=1),
                           edge_label=torch.cat([torch.ones(pos.size(1)),
                                                 torch.zeros(n)]).long()))
    return graphs


def test_mrr_does_not_depend_on_the_batch_size():
    """LRGB's first evaluation ranked a contact against every node of the batch; per graph,
    batches of 1, 3 or all graphs give one value."""
    graphs = _contact_graphs(10)
    g = torch.Generator().manual_seed(4)
    embeddings = [torch.randn(d.num_nodes, 5, generator=g) for d in graphs]
    spec = get_spec("pcqm-contact")
    task = Task(spec)
    values = []
    for size in (1, 3, 10):
        metric = task.metrics()
        for start in range(0, 10, size):
            batch = Batch.from_data_list(graphs[start:start + size])
            h = torch.cat(embeddings[start:start + size])
            metric.update(*task.metric_inputs(h, batch))
        values.append(float(metric.compute()["mrr"]))
    assert values[0] == pytest.approx(values[1]) and values[0] == pytest.approx(values[2])
    # and the value is the per-graph definition
    per_graph = []
    for d, h in zip(graphs, embeddings):
        s = (h @ h.T).unsqueeze(0)
        pos = torch.zeros(1, d.num_nodes, d.num_nodes, dtype=torch.bool)
        p = d.edge_label_index[:, d.edge_label == 1]
        pos[0, p[0], p[1]] = True
        per_graph.append(_naive_mrr(s, pos, torch.ones(1, d.num_nodes, dtype=torch.bool),
                                    "filtered"))
    assert values[0] == pytest.approx(sum(per_graph) / len(per_graph))


def test_pair_score_grid_places_every_pair_of_each_graph():
    graphs = _contact_graphs(3)
    batch = Batch.from_data_list(graphs)
    h = torch.randn(batch.num_nodes, 4)
    scores, positive, valid = pair_score_grid(h, batch.edge_label_index, batch.edge_label,
                                              batch.batch)
    assert valid.sum(1).tolist() == [d.num_nodes for d in graphs]
    offset = 0
    for b, d in enumerate(graphs):
        n = d.num_nodes
        hb = h[offset:offset + n]
        assert torch.allclose(scores[b, :n, :n], hb @ hb.T)
        p = d.edge_label_index[:, d.edge_label == 1]
        want = torch.zeros(n, n, dtype=torch.bool)
        want[p[0], p[1]] = True
        assert torch.equal(positive[b, :n, :n], want) and not positive[b, n:].any()
        offset += n


def test_the_pair_task_scores_labelled_pairs_by_dot_products():
    graphs = _contact_graphs(4)
    batch = Batch.from_data_list(graphs)
    h = torch.randn(batch.num_nodes, 6, requires_grad=True)
    task = Task(get_spec("pcqm-contact"))
    src, dst = batch.edge_label_index
    logits = (h[src] * h[dst]).sum(-1)
    want = F.binary_cross_entropy_with_logits(logits, batch.edge_label.float())
    assert task.count(batch) == batch.edge_label_index.size(1)
    assert torch.allclose(task.loss(h, batch), want)
    assert torch.allclose(pair_dot_scores(h, batch.edge_label_index).view(-1), logits)
    with pytest.raises(ValueError, match=r"\[2, num_pairs\]"):
        pair_dot_scores(h, batch.edge_label_index[0])
    # ROC-AUC / AP of the labelled pairs are the binary task's metrics (data.metric)
    spec = choose_metric(get_spec("pcqm-contact"), "ap")
    preds, target = Task(spec).metric_inputs(h, batch)
    assert preds.shape == target.shape == (batch.edge_label_index.size(1), 1)


def test_the_pair_model_outputs_hidden_dim_embeddings():
    assert pair_embedding_dim({"hidden_dim": 96}) == 96
    with pytest.raises(ValueError, match="model.hidden_dim"):
        pair_embedding_dim({"node_dim": 8})
    from graph_transformers.training.build import model_kwargs
    cfg = build_config({"model": {"name": "gcn", "hidden_dim": 24, "num_layers": 2},
                        "data": {"name": "pcqm-contact"}})
    kw = model_kwargs(cfg, get_spec("pcqm-contact"))
    assert kw["level"] == "node" and kw["out_dim"] == 24


def test_a_bad_grid_is_refused():
    scores, positive, valid = _hand_grid()
    with pytest.raises(ValueError, match="unknown MRR mode"):
        FilteredMRR("ext")
    with pytest.raises(ValueError, match="padding node"):
        bad = positive.clone()
        bad[1, 0, 3] = True
        reciprocal_ranks(scores, bad, valid)
    with pytest.raises(ValueError, match="must match"):
        reciprocal_ranks(scores, positive[:, :3], valid)
    empty = FilteredMRR()
    assert math.isnan(float(empty.compute()))
