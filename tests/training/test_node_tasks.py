"""Node classification end to end on small PATTERN / CLUSTER sets: weighted loss and metric."""
from __future__ import annotations

import lightning as L
import pytest
import torch
from torch_geometric.loader import DataLoader

from graph_transformers.data.registry import get_spec
from graph_transformers.datasets.synthetic.sbm import CLUSTER, PATTERN
from graph_transformers.encodings import AddLaplacianPE
from graph_transformers.models import GraphTransformer
from graph_transformers.training.config import OptimConfig
from graph_transformers.training.metrics import weighted_accuracy
from graph_transformers.training.module import GraphTaskModule, evaluate
from graph_transformers.training.tasks import Task


def test_weighted_cross_entropy_matches_benchmark_weights():
    spec = get_spec("pattern")
    y = torch.tensor([0, 0, 0, 1])
    out = torch.randn(4, 2)
    w = torch.tensor([1 / 4, 3 / 4])  # (V - V_c) / V
    expected = torch.nn.functional.cross_entropy(out, y, weight=w)
    from torch_geometric.data import Data
    torch.testing.assert_close(Task(spec).loss(out, Data(y=y)), expected)


@pytest.mark.parametrize("name, cls, sizes", [
    ("pattern", PATTERN, {"num_graphs_per_pattern": (6, 2, 2), "num_patterns": 4}),
    ("cluster", CLUSTER, {"num_graphs": (24, 8, 8)})])
def test_gt_trains_on_sbm(tmp_path, name, cls, sizes):
    torch.manual_seed(0)
    spec = get_spec(name)
    pre = AddLaplacianPE(4)
    splits = {s: cls(root=str(tmp_path), split=s, pre_transform=pre, **sizes)
              for s in ("train", "val", "test")}
    model = GraphTransformer(32, 2, 4, spec.out_dim, level="node", num_node_types=spec.node_types,
                             pe="lap", pe_dim=4)
    module = GraphTaskModule(model, spec, OptimConfig(lr=1e-3, scheduler=None))
    trainer = L.Trainer(max_epochs=3, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, DataLoader(splits["train"], batch_size=8, shuffle=True),
                DataLoader(splits["val"], batch_size=8))
    assert "val/weighted_accuracy" in trainer.callback_metrics
    result = evaluate(model, spec, DataLoader(splits["test"], batch_size=8))
    assert 0.0 <= result["weighted_accuracy"] <= 1.0 and result["loss"] > 0
    # the metric is the mean of per-batch weighted accuracies, as the benchmark reports it
    model.eval()
    per_batch = [weighted_accuracy(model(b), b.y, spec.out_dim)
                 for b in DataLoader(splits["test"], batch_size=8)]
    assert result["weighted_accuracy"] == pytest.approx(sum(per_batch) / len(per_batch))
