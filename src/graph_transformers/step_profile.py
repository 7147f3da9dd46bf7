"""What one training step dispatches (issue 56): the ATen operations of a forward, backward and
optimizer step, and the host synchronisations among them.

On a GPU every dispatched ATen operation costs a roughly fixed 8–15 µs of Python and launch
overhead whatever it computes (``benchmarks/results/gpu_check.md`` against these counts), so the
count is the figure that predicts a small-graph model's GPU step time. It is measured on the CPU
with a :class:`~torch.utils._python_dispatch.TorchDispatchMode`, which sees every operation that
reaches the ATen dispatcher below autograd (forward and backward alike), and
``benchmarks/launch_overhead.py`` reports it per ZINC model.

Example:
    >>> import torch
    >>> from graph_transformers.step_profile import count_ops
    >>> x = torch.ones(3, requires_grad=True)
    >>> ops = count_ops(lambda: (x * 2).sum().backward())
    >>> ops.total > 0, ops.host_syncs
    (True, 0)
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

#: ATen operations that copy a device value to the host (a synchronisation on an accelerator)
HOST_SYNC_OPS = frozenset({"_local_scalar_dense", "item", "nonzero", "_assert_async",
                           "masked_select", "unique", "_unique2", "repeat_interleave"})


@dataclass
class OpCount:
    """The ATen operations dispatched by a call.

    Attributes:
        total: operations dispatched.
        by_op: ``{aten overload packet name: count}``.
        host_syncs: operations among them that read a device value on the host
            (:data:`HOST_SYNC_OPS`; ``repeat_interleave`` and ``nonzero`` only where their
            output size depends on values).
    """

    total: int = 0
    by_op: Counter = field(default_factory=Counter)
    host_syncs: int = 0

    def top(self, k: int = 10) -> list[tuple[str, int]]:
        """The ``k`` most frequent operations, most frequent first."""
        return self.by_op.most_common(k)


class _Counter(TorchDispatchMode):
    def __init__(self, count: OpCount) -> None:
        super().__init__()
        self.count = count

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.count.total += 1
        self.count.by_op[name] += 1
        if name in HOST_SYNC_OPS:
            self.count.host_syncs += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn: Callable[[], Any]) -> OpCount:
    """Runs ``fn()`` once and counts the ATen operations it dispatches.

    Args:
        fn: a callable without arguments (its return value is discarded).

    Returns:
        The :class:`OpCount`.
    """
    count = OpCount()
    with _Counter(count):
        fn()
    return count


def train_step(model: nn.Module, batch: Any, task: Any,
               optimizer: torch.optim.Optimizer | None = None) -> torch.Tensor:
    """One training step as the trainer takes it: forward, the task's loss plus any auxiliary
    loss (EGT's distance prediction), backward and, with ``optimizer``, its step and
    ``zero_grad(set_to_none=True)``.

    Args:
        model: the model, in the mode it should run in (``train()`` for a training step).
        batch: its input batch (a PyG ``Batch``).
        task: a :class:`graph_transformers.training.tasks.Task` (``task.loss(out, batch)``).
        optimizer: stepped after the backward when given.

    Returns:
        The loss, detached.
    """
    from .training.module import split_output
    out, aux = split_output(model(batch))
    loss = task.loss(out, batch)
    if aux is not None:
        loss = loss + aux
    loss.backward()
    if optimizer is not None:
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def step_ops(model: nn.Module, batch: Any, task: Any, optimizer: torch.optim.Optimizer
             ) -> OpCount:
    """The ATen operations of one training step (:func:`train_step`) of ``model`` on ``batch``,
    counted after one uncounted warm-up step (so that lazily created optimizer state is not
    counted as per-step work)."""
    train_step(model, batch, task, optimizer)
    return count_ops(lambda: train_step(model, batch, task, optimizer))


def graph_breaks(fn: Callable[..., Any], *args: Any) -> tuple[int, list[str]]:
    """The graph breaks ``torch.compile`` meets in ``fn(*args)``: TorchDynamo's trace of one call
    (``torch._dynamo.explain``, which captures the graphs without compiling them: no inductor,
    seconds on the CPU), with Dynamo's caches reset before and after so that neither an earlier
    compilation nor this trace leaks into other code.

    Args:
        fn: the function to trace (e.g. a model's forward and loss,
            :func:`graph_transformers.training.module.forward_loss`).
        *args: its arguments.

    Returns:
        ``(number of breaks, one line per break: the reason, then where in the library or user
        code it happened, "file:line")``; ``(0, [])`` when ``fn`` traces as one graph, as
        ``torch.compile(fn, fullgraph=True)`` needs.
    """
    import torch._dynamo
    torch._dynamo.reset()
    try:
        explained = torch._dynamo.explain(fn)(*args)
    finally:
        torch._dynamo.reset()
    lines = []
    for br in explained.break_reasons:
        reason = " ".join(str(br.reason).split())
        frames = [f for f in br.user_stack if "graph_transformers" in f.filename] or br.user_stack
        where = (f" at {frames[-1].filename.rsplit('graph_transformers/', 1)[-1]}:"
                 f"{frames[-1].lineno}" if frames else "")
        lines.append(f"{reason[:300]}{where}")
    return explained.graph_break_count, lines
