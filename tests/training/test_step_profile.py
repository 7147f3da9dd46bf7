"""The ATen-op counter of a training step (graph_transformers.step_profile, issue 56)."""
from __future__ import annotations

import torch
from torch import nn

from graph_transformers.step_profile import count_ops, step_ops, train_step


class _MSETask:
    """The one method of a Task the step uses."""

    def loss(self, out, batch):
        return ((out - batch["y"]) ** 2).mean()


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 1)

    def forward(self, batch):
        return self.lin(batch["x"])


def test_counts_each_dispatched_op():
    a, b = torch.ones(4), torch.ones(4)
    ops = count_ops(lambda: torch.add(a, b).mul(2))
    assert ops.by_op["add"] == 1 and ops.by_op["mul"] == 1
    assert ops.total == sum(ops.by_op.values()) == 2
    assert ops.host_syncs == 0


def test_host_reads_are_counted_as_syncs():
    t = torch.arange(5.0)
    ops = count_ops(lambda: (t.sum().item(), bool((t > 2).any())))
    assert ops.host_syncs == 2
    assert ops.by_op["_local_scalar_dense"] == 2


def test_backward_ops_are_counted():
    x = torch.ones(3, requires_grad=True)
    forward = count_ops(lambda: (x * 2).sum())
    both = count_ops(lambda: (x * 2).sum().backward())
    assert both.total > forward.total


def test_step_counts_are_reproducible_and_include_the_optimizer():
    torch.manual_seed(0)
    model = _Linear()
    batch = {"x": torch.randn(8, 3), "y": torch.randn(8, 1)}
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    first = step_ops(model, batch, _MSETask(), opt)
    second = step_ops(model, batch, _MSETask(), opt)
    assert first.total == second.total
    assert all(p.grad is None for p in model.parameters())  # zero_grad(set_to_none) ran
    no_opt = count_ops(lambda: train_step(model, batch, _MSETask()))
    assert first.total > no_opt.total  # Adam's per-parameter updates are part of a step
