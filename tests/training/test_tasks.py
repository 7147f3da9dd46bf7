"""Task semantics: masks, missing labels, edge outputs, ROC-AUC with OGB's rules."""
from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import Batch, Data

from graph_transformers.data.registry import DatasetSpec
from graph_transformers.models import GraphTransformer
from graph_transformers.training.metrics import roc_auc_multitask
from graph_transformers.training.tasks import Task


def _spec(**kw):
    args = dict(name="t", level="graph", task="classification", out_dim=2, metric="accuracy",
                load=lambda *a: None)
    args.update(kw)
    return DatasetSpec(**args)


def test_binary_tasks_ignore_missing_labels():
    task = Task(_spec(task="binary", out_dim=2, metric="roc_auc"))
    out = torch.tensor([[2.0, -1.0], [0.5, 3.0]])
    y = torch.tensor([[1.0, float("nan")], [0.0, 1.0]])
    expected = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor([2.0, 0.5, 3.0]), torch.tensor([1.0, 0.0, 1.0]))
    torch.testing.assert_close(task.loss(out, Data(y=y)), expected)


def test_roc_auc_by_hand_and_skipped_tasks():
    y = torch.tensor([[1, 0], [0, 0], [1, 0], [0, float("nan")]], dtype=torch.float)
    s = torch.tensor([[0.9, 0.1], [0.2, 0.3], [0.4, 0.2], [0.5, 0.9]])
    # task 0: positives {0.9, 0.4}, negatives {0.2, 0.5}: pairs ordered right 3 of 4
    # task 1 has one class only and is skipped
    assert float(roc_auc_multitask(y, s)) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="no task"):
        roc_auc_multitask(torch.zeros(3, 1), torch.rand(3, 1))
    # logits far from 0 keep their order (no sigmoid saturation into ties)
    assert roc_auc_multitask([0, 1, 0, 1], [50.0, 60.0, 70.0, 80.0]) == pytest.approx(0.75)
    metric = Task(_spec(task="binary", metric="roc_auc")).metrics()["roc_auc"]
    metric.update(s[:2], y[:2])
    metric.update(s[2:], y[2:])
    assert float(metric.compute()) == pytest.approx(0.75)


def test_node_mask_selects_the_split_nodes():
    task = Task(_spec(level="node", out_dim=3))
    out = torch.randn(5, 3)
    batch = Data(y=torch.tensor([0, 1, 2, 1, 0]),
                 node_mask=torch.tensor([True, False, True, False, False]))
    assert task.count(batch) == 2
    expected = torch.nn.functional.cross_entropy(out[[0, 2]], torch.tensor([0, 2]))
    torch.testing.assert_close(task.loss(out, batch), expected)


def test_edge_task_outputs_and_f1():
    torch.manual_seed(0)
    model = GraphTransformer(16, 2, 2, out_dim=2, level="edge", num_node_features=2, pe=None).eval()
    ei = torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])
    g = Data(x=torch.rand(3, 2), edge_index=ei, y=torch.tensor([1, 1, 0, 0, 1, 1]))
    out = model(Batch.from_data_list([g]))
    assert out.shape == (6, 2)
    task = Task(_spec(level="edge", metric="f1"))
    assert task.count(g) == 6
    f1 = task.metrics()["f1"]
    f1.update(*task.metric_inputs(out, g))
    pred = out.argmax(-1)
    tp = int(((pred == 1) & (g.y == 1)).sum())
    fp = int(((pred == 1) & (g.y == 0)).sum())
    fn = int(((pred == 0) & (g.y == 1)).sum())
    expected = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    assert float(f1.compute()) == pytest.approx(expected)
    assert not math.isnan(float(task.loss(out, g)))


def test_official_egt_sbm_loss_uses_global_class_weights():
    """EGT's SBM loss: each node's cross-entropy weighted by (N - N_c) / Σ_k (N - N_k) from the
    training split's class sizes, averaged over nodes (not normalized by the weights)."""
    spec = _spec(level="node", out_dim=3, metric="weighted_accuracy", loss="weighted_ce")
    counts = torch.tensor([70, 20, 10])
    task = Task(spec, class_counts=counts)
    out = torch.tensor([[2.0, 0.0, -1.0], [0.1, 0.2, 0.3], [1.0, 1.0, 1.0], [-1.0, 0.5, 2.0]])
    y = torch.tensor([0, 1, 2, 2])
    batch = Batch.from_data_list([Data(y=y, num_nodes=4)])
    w = torch.tensor([30.0, 80.0, 90.0]) / 200.0  # N - N_c = 30, 80, 90
    expected = sum(w[y[i]] * -torch.log_softmax(out[i], -1)[y[i]] for i in range(4)) / 4
    assert task.loss(out, batch).item() == pytest.approx(expected.item(), rel=1e-6)
    # the per-batch weights of the GT benchmark give another value on the same batch
    assert Task(spec).loss(out, batch).item() != pytest.approx(expected.item(), rel=1e-3)
    with pytest.raises(ValueError, match="class_counts has 2 entries for 3 classes"):
        Task(spec, class_counts=torch.tensor([1, 2]))


def test_weighted_accuracy_over_the_split_or_as_a_batch_mean():
    """``split``: mean per-class accuracy over all nodes at once (official EGT); ``batch_mean``:
    the same score per batch, averaged (benchmarking GNNs)."""
    spec = _spec(level="node", out_dim=2, metric="weighted_accuracy", loss="weighted_ce")
    # batch 1: class 0 right 2/2, class 1 right 0/1; batch 2: class 0 right 0/1, class 1 3/3
    batches = [(torch.tensor([0, 0, 0]), torch.tensor([0, 0, 1])),
               (torch.tensor([1, 1, 1, 1]), torch.tensor([0, 1, 1, 1]))]
    results = {}
    for mode in ("split", "batch_mean"):
        metric = Task(spec, weighted_accuracy=mode).metrics()["weighted_accuracy"]
        for pred, target in batches:
            metric.update(torch.nn.functional.one_hot(pred, 2).float(), target)
        results[mode] = metric.compute().item()
    assert results["split"] == pytest.approx((2 / 3 + 3 / 4) / 2)
    assert results["batch_mean"] == pytest.approx(((1 + 0) / 2 + (0 + 1) / 2) / 2)


def test_runner_protocol_counts_training_classes_and_selects_by_loss():
    from graph_transformers.training.config import build_config
    from graph_transformers.training.build import make_task
    from graph_transformers.training.fit import _monitor

    spec = _spec(level="node", out_dim=2, metric="weighted_accuracy", loss="weighted_ce")
    train = [Data(y=torch.tensor([0, 0, 1]), num_nodes=3), Data(y=torch.tensor([0]), num_nodes=1)]
    official = build_config({"model": {"name": "gt", "pe": None},
                             "protocol": {"class_weights": "global", "select_by": "loss",
                                          "weighted_accuracy": "split"}})
    task = make_task(official, spec, train)
    assert task.class_counts.tolist() == [3, 1] and task.weighted_accuracy == "split"
    assert _monitor(spec, official) == ("val/loss", "min")
    default = build_config({"model": {"name": "gt", "pe": None}})
    assert make_task(default, spec, train).class_counts is None
    assert _monitor(spec, default) == ("val/weighted_accuracy", "max")


def test_undefined_roc_auc_is_nan_with_one_warning_not_an_exception(caplog):
    """A validation batch (or a sanity check) with one class only must not crash the run."""
    metric = Task(_spec(task="binary", metric="roc_auc")).metrics()["roc_auc"]
    metric.update(torch.tensor([[0.3], [0.8]]), torch.tensor([[1.0], [1.0]]))
    with caplog.at_level("WARNING"):
        assert math.isnan(float(metric.compute()))
        assert math.isnan(float(metric.compute()))
    assert sum("ROC-AUC is undefined" in r.message for r in caplog.records) == 1
    metric.update(torch.tensor([[0.1]]), torch.tensor([[0.0]]))
    assert float(metric.compute()) == pytest.approx(1.0)


def test_weighted_accuracy_tensor_equals_the_benchmark_form():
    from graph_transformers.training.metrics import weighted_accuracy, weighted_accuracy_tensor
    g = torch.Generator().manual_seed(0)
    cases = [(torch.randint(0, 6, (50,), generator=g), torch.randint(0, 6, (50,), generator=g)),
             (torch.tensor([0, 0, 2, 2, 1]), torch.tensor([0, 2, 2, 2, 2])),  # 1 predicted only
             (torch.tensor([3, 3, 0]), torch.tensor([3, 0, 0]))]  # classes 1, 2, 4, 5 absent
    for pred, target in cases:
        got = weighted_accuracy_tensor(pred, target, 6)
        assert got.dtype == torch.float64 and got.dim() == 0
        assert float(got) == pytest.approx(weighted_accuracy(pred, target, 6), abs=1e-6)
    scores = torch.randn(50, 6, generator=g)
    assert float(weighted_accuracy_tensor(scores, cases[0][1], 6)) == pytest.approx(
        weighted_accuracy(scores, cases[0][1], 6), abs=1e-6)


def test_masked_node_counts_and_weighted_accuracy_read_nothing_on_the_host():
    """On the meta device any host read raises: the per-step count of masked nodes and the SBM
    benchmarks' weighted accuracy stay on the device. (Selecting the masked nodes themselves is
    boolean indexing, which still syncs: see Task.select.)"""
    from graph_transformers.training.metrics import BatchMeanWeightedAccuracy
    spec = DatasetSpec("t", "node", "classification", 3, "weighted_accuracy", lambda *a: None,
                       loss="weighted_ce")
    task = Task(spec)
    batch = Data(x=torch.zeros(6, 1), y=torch.tensor([0, 1, 2, 1, 0, 2]),
                 node_mask=torch.tensor([True, True, False, True, True, False]))
    batch = batch.to("meta")
    out = torch.randn(6, 3, device="meta")
    n = task.count(batch)
    assert isinstance(n, torch.Tensor) and n.device.type == "meta"
    metric = BatchMeanWeightedAccuracy(3).to("meta")
    metric.update(out, batch.y)  # an SBM batch: every node counts
    assert metric.total.device.type == "meta"
