"""The compiled mode of the device check (``check-device --compiled``, issue 56): each model
trained the way ``docs/gpu.md`` recommends on a GPU, beside the eager measurements of
:mod:`graph_transformers.device_measure`.

- **static shapes and the split on the device**: the training split stored once on the device
  (:class:`~graph_transformers.data.device_split.DeviceSplit`), batches packed to fixed budgets
  (:func:`~graph_transformers.data.static_shapes.choose_budget` at the config's
  ``data.batch_size``; :class:`~graph_transformers.data.static_shapes.PackingBatchSampler`) and
  padded on the device (:func:`~graph_transformers.data.static_shapes.pad_batch`): what
  ``data.static_shapes: true`` with ``data.on_device: true`` trains on;
- **one graph per step**: the forward and loss under
  :func:`~graph_transformers.training.device.compile_step` (``torch.compile(fullgraph=True,
  dynamic=False)``, ``model.compile: full``; on CUDA ``model.compile: cudagraphs``, the forward
  and its backward replayed as CUDA graphs), then backward and a fused Adam step, as the
  trainer runs them;

and reports, per model: ``graph_breaks`` (TorchDynamo's trace of the forward and loss on the
static batch, :func:`graph_transformers.step_profile.graph_breaks`), ``loss_rel`` (the compiled
eval-mode loss on the padded batch against the eager loss on the same graphs unpadded: padding
and compilation together change nothing), the budgets and their padding fractions, the
compilation time, training-step speed and memory on one static batch (fp32 and bf16 autocast)
and one epoch over the training split (fp32 and bf16; the split's storage on the device is timed
apart, ``store_s``). See ``docs/gpu.md``, "The device check".
"""
from __future__ import annotations

import contextlib
import copy
import functools
import time
from typing import Any

import torch
from torch import nn

from .device_measure import _sync

#: tolerance of the compiled, padded loss against the eager, unpadded one (float32, relative)
TOL_COMPILED_LOSS = 1e-4


def step_mode(device: torch.device) -> str:
    """``model.compile`` of the compiled mode on ``device``: ``"cudagraphs"`` on CUDA, else
    ``"full"`` (CUDA graphs need CUDA)."""
    return "cudagraphs" if device.type == "cuda" else "full"


class StaticTrainData:
    """The training split stored on one device and packed to static shapes.

    Args:
        train: the training split (a dataset or list of graphs).
        batch_size: the config's ``data.batch_size`` (the budgets hold about that many graphs).
        device: where the split is stored and batches are built.
        drop: ``Data`` attributes the model computes per batch (left out of the stored split).

    Attributes:
        budget (StaticBudget): the shape of every batch.
        padding (dict): :func:`~graph_transformers.data.static_shapes.padding_report` of one
            epoch's packing, plus ``batches`` and ``graphs_per_batch``.
        store_s (float): seconds to store the split on the device.

    Raises:
        DataError: a graph that fits no batch, or a split :class:`DeviceSplit` refuses.
    """

    def __init__(self, train, batch_size: int, device: torch.device,
                 drop: tuple[str, ...] = ()) -> None:
        from .data.device_split import DeviceSplit
        from .data.sampler import graph_sizes
        from .data.static_shapes import choose_budget, graph_edge_counts, padding_report
        from .device_measure import without_keys
        self.nodes, self.edges = graph_sizes(train), graph_edge_counts(train)
        self.budget = choose_budget(self.nodes, self.edges, batch_size)
        self.device = device
        graphs = [train[i] for i in range(len(train))]
        if drop:
            graphs = [without_keys(g, drop) for g in graphs]
        t0 = time.perf_counter()
        self.split = DeviceSplit(graphs, device)
        _sync(device)
        self.store_s = round(time.perf_counter() - t0, 3)
        self.padding = padding_report(self.nodes, self.edges, self.budget,
                                      self.sampler(shuffle=False).batches())

    def sampler(self, shuffle: bool = True, seed: int = 0):
        """A :class:`~graph_transformers.data.static_shapes.PackingBatchSampler` of the split."""
        from .data.static_shapes import PackingBatchSampler
        return PackingBatchSampler(self.nodes, self.edges, self.budget, shuffle=shuffle,
                                   seed=seed)

    def loader(self, shuffle: bool = True, seed: int = 0):
        """A :class:`~graph_transformers.data.device_split.DeviceLoader` of padded batches."""
        from .data.device_split import DeviceLoader
        from .data.static_shapes import pad_batch
        return DeviceLoader(self.split, batch_sampler=self.sampler(shuffle, seed),
                            transform=functools.partial(pad_batch, budget=self.budget),
                            device=self.device)

    def first_batch(self):
        """The first batch of the split's unshuffled packing, padded (the fixed batch of the
        step measurements), and the dataset indices of its real graphs.

        Returns:
            ``(padded batch, indices)``.
        """
        idx = self.sampler(shuffle=False).batches()[0]
        return next(iter(self.loader(shuffle=False))), idx


def _optimizer(model: nn.Module) -> torch.optim.Optimizer:
    """The trainer's optimizer: Adam, fused where every parameter is floating point."""
    return torch.optim.Adam(model.parameters(), lr=1e-4,
                            fused=all(p.is_floating_point() for p in model.parameters()))


class CompiledStep:
    """One training step as ``model.compile: full | cudagraphs`` runs it: the forward and loss
    compiled as one graph (:func:`~graph_transformers.training.device.compile_step`), backward,
    then a fused Adam step.

    Args:
        model: the model, already on its device and in train mode (updated in place).
        task: the task (its loss drops padding).
        mode: ``"full"`` or ``"cudagraphs"``.
    """

    def __init__(self, model: nn.Module, task: Any, mode: str) -> None:
        from .training.device import compile_step
        from .training.module import forward_loss
        self.model, self.task, self.mode = model, task, mode
        self.fn = compile_step(forward_loss, mode)
        self.opt = _optimizer(model)

    def __call__(self, batch, bf16: bool = False) -> None:
        if self.mode == "cudagraphs":  # a new step: the previous graph outputs are done with
            torch.compiler.cudagraph_mark_step_begin()
        dev = batch.batch.device.type
        ctx = torch.autocast(dev, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        self.opt.zero_grad(set_to_none=True)
        with ctx:
            _, aux, loss = self.fn(self.model, self.task, batch)
            if aux is not None:
                loss = loss + aux
        loss.backward()
        self.opt.step()


def compiled_parity(model: nn.Module, task: Any, padded, plain, device: torch.device) -> dict:
    """The eval-mode loss of ``model`` compiled (``model.compile: full``) on the padded batch
    against its eager loss on ``plain``, the same real graphs collated without padding, on
    ``device``.

    Returns:
        ``{"loss_compiled", "loss_eager", "loss_rel"}`` (float32).
    """
    from .device_measure import rel_diff
    from .training.device import compile_step
    from .training.module import forward_loss
    m = copy.deepcopy(model).to(device).eval()
    with torch.no_grad():
        _, aux_e, eager = forward_loss(m, task, plain)
        _, aux_c, compiled = compile_step(forward_loss, "full")(m, task, padded)
    if aux_e is not None:
        eager, compiled = eager + aux_e, compiled + aux_c
    return {"loss_compiled": float(compiled), "loss_eager": float(eager),
            "loss_rel": rel_diff(eager, compiled)}


def _timed_steps(step: CompiledStep, batch, bf16: bool, steps: int, real_graphs: int,
                 device: torch.device, warmup: int = 2) -> dict:
    """Times ``steps`` calls of ``step`` on ``batch`` after ``warmup`` (the first compiles):
    graphs/s of the real graphs, step ms, peak MiB above what was allocated before (CUDA),
    and the seconds of the warm-up (``first_s``: compilation, CUDA graph capture)."""
    t0 = time.perf_counter()
    for _ in range(warmup):
        step(batch, bf16)
    _sync(device)
    first_s = time.perf_counter() - t0
    peak = None
    if device.type == "cuda":
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step(batch, bf16)
    _sync(device)
    seconds = time.perf_counter() - t0
    if device.type == "cuda":
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    return {"graphs_per_s": round(steps * real_graphs / seconds, 1),
            "step_ms": round(1000 * seconds / steps, 2),
            "peak_mib": None if peak is None else round(peak, 1),
            "first_s": round(first_s, 1)}


def _epoch(step: CompiledStep, data: StaticTrainData, bf16: bool) -> dict:
    """One epoch of compiled steps over the packed split on the device (gathering and padding
    included); ``graphs``: the real graphs trained on (each graph lands in one batch)."""
    _sync(data.device)
    t0 = time.perf_counter()
    batches = 0
    for batch in data.loader(shuffle=True):
        step(batch, bf16)
        batches += 1
    _sync(data.device)
    seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 4), "graphs": len(data.nodes), "batches": batches}


def measure_compiled(model: nn.Module, task: Any, device: torch.device, data: StaticTrainData,
                     steps: int, epoch: bool) -> dict:
    """The compiled mode's figures of one model (module docstring), as a dict; a model that
    fails keeps the figures taken before the failure and gets ``"error"``.

    Args:
        model: the model (with the BatchNorm statistics of the eager checks); copied, not
            changed.
        task: its task.
        device: where it trains.
        data: the split on ``device``, packed (:class:`StaticTrainData`).
        steps: timed training steps per precision.
        epoch: also time one epoch per precision.
    """
    from .step_profile import graph_breaks
    from .training.module import forward_loss
    b = data.budget
    out: dict[str, Any] = {
        "mode": step_mode(device),
        "budget": {"num_graphs": b.num_graphs, "num_nodes": b.num_nodes,
                   "num_edges": b.num_edges, "max_nodes": b.max_nodes},
        "padding": {k: round(v, 4) for k, v in data.padding.items()},
        "store_s": data.store_s}
    torch._dynamo.reset()
    try:
        padded, idx = data.first_batch()
        real = len(idx)
        m = copy.deepcopy(model).to(device)
        n_breaks, reasons = graph_breaks(lambda bt: forward_loss(m, task, bt)[2], padded)
        out.update(graph_breaks=n_breaks, graph_break_reasons=reasons[:10])
        out["parity"] = compiled_parity(model, task, padded, data.split.batch(idx), device)
        step = CompiledStep(m.train(), task, out["mode"])
        out["speed_fp32"] = _timed_steps(step, padded, False, steps, real, device)
        out["compile_s"] = out["speed_fp32"]["first_s"]
        out["speed_bf16"] = _timed_steps(step, padded, True, steps, real, device)
        if epoch:
            out["epoch_fp32"] = _epoch(step, data, False)
            out["epoch_bf16"] = _epoch(step, data, True)
    except Exception as err:  # noqa: BLE001 - a model that does not compile is a result
        first = str(err).splitlines()[0][:300] if str(err) else ""
        out["error"] = f"{type(err).__name__}: {first}"
    finally:
        torch._dynamo.reset()
    out["ok"] = compiled_ok(out)
    return out


def compiled_ok(entry: dict) -> bool:
    """Whether the compiled mode passed: no error, zero graph breaks, the compiled padded loss
    within :data:`TOL_COMPILED_LOSS` of the eager one."""
    return bool("error" not in entry and entry.get("graph_breaks") == 0
                and entry.get("parity", {}).get("loss_rel", float("inf")) <= TOL_COMPILED_LOSS)


__all__ = ["CompiledStep", "StaticTrainData", "TOL_COMPILED_LOSS", "compiled_ok",
           "compiled_parity", "measure_compiled", "step_mode"]
