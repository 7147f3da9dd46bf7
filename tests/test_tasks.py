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
    model = GraphTransformer(16, 2, 2, out_dim=2, task="edge", node_dim=2, pe=None).eval()
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
