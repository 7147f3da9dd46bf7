"""The measurements of the device check (:mod:`graph_transformers.device_check`), each on one
model and batch: CPU-vs-device parity of forward and backward (:func:`parity`), bf16 autocast
against float32 (:func:`bf16_check`), the SDPA kernels that ran (:func:`sdpa_backends`),
training-step speed and memory (:func:`train_steps`), one epoch's time (:func:`epoch_time`),
with the tolerances the results are held against (:func:`verdict`). :func:`measure_model` takes
them all for one model.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import time
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

#: tolerances (relative L2 differences) of the parity and bf16 checks
TOL_FP32 = 1e-4
TOL_FP64 = 1e-10
TOL_BF16_LOSS = 5e-2
#: float32 gradients may differ CPU vs device by this factor times float32's own error for the
#: model (the CPU's float32 gradients against its float64 ones), where that exceeds TOL_FP32
FP32_MARGIN = 10.0

#: ATen ops of SDPA's fused kernels → the backend's name
SDPA_KERNELS = {
    "_scaled_dot_product_flash_attention": "flash",
    "_scaled_dot_product_efficient_attention": "memory-efficient",
    "_scaled_dot_product_cudnn_attention": "cudnn",
    "_scaled_dot_product_flash_attention_for_cpu": "cpu-flash",
    "_scaled_dot_product_fused_attention_overrideable": "fused-overrideable",
}


class _SDPARecorder(TorchFunctionMode):
    """Counts calls of ``F.scaled_dot_product_attention`` (the function level)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.nn.functional.scaled_dot_product_attention:
            self.calls += 1
        return func(*args, **(kwargs or {}))


class _KernelRecorder(TorchDispatchMode):
    """Records which fused SDPA kernels were dispatched (the ATen level)."""

    def __init__(self) -> None:
        super().__init__()
        self.kernels: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in SDPA_KERNELS:
            self.kernels.add(SDPA_KERNELS[name])
        return func(*args, **(kwargs or {}))


def sdpa_backends(step) -> str:
    """Runs ``step()`` and names the SDPA kernel(s) it used: ``"none"`` (no SDPA call), a fused
    kernel's name, or ``"math"`` (SDPA called, no fused kernel: the reference path)."""
    fn, disp = _SDPARecorder(), _KernelRecorder()
    with fn, disp:
        step()
    if not fn.calls:
        return "none"
    return ",".join(sorted(disp.kernels)) if disp.kernels else "math"



def without_keys(batch: Any, keys: tuple[str, ...]) -> Any:
    """``batch`` without the attributes ``keys``.

    Args:
        batch: a PyG batch.
        keys: attribute names (absent ones are skipped).

    Returns:
        ``batch`` itself when ``keys`` is empty, else a copy without them.
    """
    if not keys:
        return batch
    batch = batch.clone()
    for key in keys:
        if key in batch:
            del batch[key]
    return batch



def rel_diff(a: Tensor, b: Tensor) -> float:
    """Relative L2 difference ``‖a - b‖ / max(‖a‖, tiny)`` in float64."""
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm() / a.norm().clamp(min=1e-30))


def forward_backward(model: nn.Module, batch, task, autocast: torch.dtype | None = None
                     ) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
    """Eval-mode forward, task loss (plus any auxiliary loss) and backward, under ``autocast``
    where given.

    Returns:
        ``(output, loss, {parameter name: gradient})``, detached.
    """
    from .training.module import split_output
    model.eval()
    model.zero_grad(set_to_none=True)
    dev = next(model.parameters()).device
    ctx = (torch.autocast(dev.type, dtype=autocast) if autocast is not None
           else contextlib.nullcontext())
    with ctx:
        out, aux = split_output(model(batch))
        loss = task.loss(out, batch)
        if aux is not None:
            loss = loss + aux
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()
             if p.grad is not None}
    return out.detach(), loss.detach(), grads


def cast_batch(batch, device: torch.device, dtype: torch.dtype):
    """A copy of ``batch`` on ``device`` with its floating-point inputs and target (``lap_pe``,
    ``svd_pe``, ``rwse``, ``y``) in ``dtype``.

    Returns:
        The cast copy.
    """
    b = batch.clone().to(device)
    for key in ("lap_pe", "svd_pe", "rwse", "y"):
        t = getattr(b, key, None)
        if isinstance(t, Tensor) and t.is_floating_point():
            setattr(b, key, t.to(dtype))
    return b


def worst_grad(g_ref: dict[str, Tensor], g: dict[str, Tensor]) -> tuple[float, str]:
    """The largest per-parameter relative gradient difference and its parameter."""
    return max(((rel_diff(g_ref[n], g[n]), n) for n in g_ref if g_ref[n].norm() > 0),
               default=(0.0, ""))


def _all_grads_rel(g_ref: dict[str, Tensor], g: dict[str, Tensor]) -> float:
    """The relative difference of all gradients together."""
    names = [n for n in g_ref if n in g]
    if not names:
        return 0.0
    return rel_diff(torch.cat([g_ref[n].double().flatten().cpu() for n in names]),
                    torch.cat([g[n].double().flatten().cpu() for n in names]))


def parity(model: nn.Module, batch, task, device: torch.device, dtype: torch.dtype) -> dict:
    """Forward+backward of ``model``'s weights on the CPU and on ``device`` in ``dtype``:
    relative differences of the outputs, the loss, the worst parameter's gradient
    (``grad_rel``, ``worst_param``) and all gradients together (``grad_rel_all``). In float32
    also ``fp32_own_grad_rel``: the CPU's float32 gradients against its float64 ones (worst
    parameter), the error float32 itself makes on this model and batch; a device cannot be
    expected to agree with the CPU much better than that (:func:`verdict`)."""
    ref = copy.deepcopy(model).to(dtype)
    dev = copy.deepcopy(model).to(device=device, dtype=dtype)
    out_c, loss_c, g_c = forward_backward(ref, cast_batch(batch, torch.device("cpu"), dtype),
                                          task)
    out_d, loss_d, g_d = forward_backward(dev, cast_batch(batch, device, dtype), task)
    worst = worst_grad(g_c, g_d)
    result = {"output_rel": rel_diff(out_c, out_d), "loss_rel": rel_diff(loss_c, loss_d),
              "grad_rel": worst[0], "worst_param": worst[1],
              "grad_rel_all": _all_grads_rel(g_c, g_d), "loss_cpu": float(loss_c),
              "loss_device": float(loss_d)}
    if dtype == torch.float32:
        exact = copy.deepcopy(model).to(torch.float64)
        _, _, g_64 = forward_backward(exact, cast_batch(batch, torch.device("cpu"),
                                                        torch.float64), task)
        own = worst_grad(g_64, g_c)
        result.update(fp32_own_grad_rel=own[0], fp32_own_worst_param=own[1])
    return result


def calibrate_norms(model: nn.Module, batch) -> nn.Module:
    """Sets every BatchNorm's running statistics to those of ``batch`` (one train-mode forward,
    cumulative average, no gradients), so that the eval-mode checks see activations at the
    scale of a trained model. With the initial statistics (mean 0, variance 1) BatchNorm is the
    identity in eval mode, and a model whose residual branches add up (GPS: local plus global
    branch in each of 10 layers) reaches outputs in the thousands, where float32's own gradient
    error on the CPU is already 0.4 (measured: ZINC GPS at initialization, 128 graphs). Dropout
    is run in that pass but changes no weight; the model is returned in eval mode."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
             and m.track_running_stats]
    if not norms:
        return model.eval()
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # cumulative: the statistics of exactly this batch
    model.train()
    with torch.no_grad():
        torch.manual_seed(0)
        model(batch.clone())
    for m, momentum in zip(norms, momenta):
        m.momentum = momentum
    return model.eval()


def bf16_check(model: nn.Module, batch, task, device: torch.device) -> dict:
    """Loss and gradients under bf16 autocast against float32 on ``device`` (``grad_rel``: the
    relative L2 difference of all gradients together, as one parameter's own gradient can be
    near zero and its relative difference meaningless)."""
    m = copy.deepcopy(model).to(device)
    b = batch.clone().to(device)
    _, loss32, g32 = forward_backward(m, b, task)
    _, loss16, g16 = forward_backward(m, b, task, autocast=torch.bfloat16)
    names = [n for n in g32 if n in g16]
    flat32 = torch.cat([g32[n].flatten().float() for n in names]) if names else torch.zeros(1)
    flat16 = torch.cat([g16[n].flatten().float() for n in names]) if names else torch.zeros(1)
    return {"loss_fp32": float(loss32), "loss_bf16": float(loss16),
            "loss_rel": rel_diff(loss32, loss16), "grad_rel": rel_diff(flat32, flat16),
            "finite": bool(torch.isfinite(loss16).item())}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _train_step(model: nn.Module, opt: torch.optim.Optimizer, batch, task,
                device: torch.device, bf16: bool) -> None:
    """One optimizer step on ``batch`` (task loss plus any auxiliary loss), under bf16
    autocast when ``bf16``."""
    from .training.module import split_output
    opt.zero_grad(set_to_none=True)
    ctx = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with ctx:
        out, aux = split_output(model(batch))
        loss = task.loss(out, batch) + (aux if aux is not None else 0)
    loss.backward()
    opt.step()


def train_steps(model: nn.Module, batch, task, device: torch.device, bf16: bool, steps: int,
                warmup: int = 2) -> dict:
    """Times ``steps`` training steps (forward, backward, Adam) on one batch: graphs/s and the
    peak memory of a step above what was allocated before (CUDA only)."""
    m = copy.deepcopy(model).to(device).train()
    b = batch.clone().to(device)
    opt = torch.optim.Adam(m.parameters(), lr=1e-4)

    def step() -> None:
        _train_step(m, opt, b, task, device, bf16)

    for _ in range(warmup):
        step()
    _sync(device)
    peak = None
    if device.type == "cuda":
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            step()
        end.record()
        torch.cuda.synchronize(device)
        seconds = start.elapsed_time(end) / 1000
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    else:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        seconds = time.perf_counter() - t0
    return {"graphs_per_s": round(steps * batch.num_graphs / seconds, 1),
            "step_ms": round(1000 * seconds / steps, 2),
            "peak_mib": None if peak is None else round(peak, 1)}


def epoch_time(model: nn.Module, train, task, device: torch.device, bf16: bool,
               batch_size: int, workers: dict, drop: tuple[str, ...] = ()) -> dict:
    """Wall time of one training epoch over ``train`` (loading included), each batch without
    the attributes ``drop``."""
    from torch_geometric.loader import DataLoader

    m = copy.deepcopy(model).to(device).train()
    opt = torch.optim.Adam(m.parameters(), lr=1e-4)
    loader = DataLoader(train, batch_size=batch_size, shuffle=True, **workers)
    _sync(device)
    t0 = time.perf_counter()
    n = 0
    for b in loader:
        _train_step(m, opt, without_keys(b, drop).to(device, non_blocking=True), task, device,
                    bf16)
        n += b.num_graphs
    _sync(device)
    return {"seconds": round(time.perf_counter() - t0, 4), "graphs": n}



def measure_model(entry: dict[str, Any], model: torch.nn.Module, task: Any,
                  device: torch.device, data: Any, args: argparse.Namespace, batch_size: int,
                  workers: dict, drop: tuple[str, ...] = ()) -> None:
    """Adds one model's measurements to ``entry`` as they are taken (a model that fails keeps
    those before the failure): CPU-vs-device parity in float32 and float64 (not on MPS), bf16
    against float32, the SDPA kernels that ran, training-step speed in fp32 and bf16, and with
    ``args.epoch`` one epoch's time over ``data.train``; every batch without the attributes
    ``drop`` (what the model's config leaves uncached)."""
    batch = without_keys(data.batch, drop)
    if getattr(args, "calibrate_norms", True):
        calibrate_norms(model, batch)
    entry["parity_fp32"] = parity(model, batch, task, device, torch.float32)
    entry["parity_fp64"] = (parity(model, batch, task, device, torch.float64)
                            if device.type != "mps" else None)
    entry["bf16"] = bf16_check(model, batch, task, device)
    m_dev = copy.deepcopy(model).to(device).eval()
    b_dev = batch.clone().to(device)
    with torch.no_grad():
        entry["sdpa_fp32"] = sdpa_backends(lambda: m_dev(b_dev))
        with torch.autocast(device.type, dtype=torch.bfloat16):
            entry["sdpa_bf16"] = sdpa_backends(lambda: m_dev(b_dev))
    entry["speed_fp32"] = train_steps(model, batch, task, device, False, args.steps)
    entry["speed_bf16"] = train_steps(model, batch, task, device, True, args.steps)
    if args.epoch:
        entry["epoch_fp32"] = epoch_time(model, data.train, task, device, False, batch_size,
                                         workers, drop)
        entry["epoch_bf16"] = epoch_time(model, data.train, task, device, True, batch_size,
                                         workers, drop)


def verdict(entry: dict) -> bool:
    """Whether a model's results are within the tolerances."""
    p32, p64, bf = entry["parity_fp32"], entry.get("parity_fp64"), entry["bf16"]
    grad_tol = max(TOL_FP32, FP32_MARGIN * p32.get("fp32_own_grad_rel", 0.0))
    ok = max(p32["output_rel"], p32["loss_rel"]) <= TOL_FP32 and p32["grad_rel"] <= grad_tol
    if p64 is not None:
        ok &= max(p64["output_rel"], p64["loss_rel"], p64["grad_rel"]) <= TOL_FP64
    return bool(ok and bf["finite"] and bf["loss_rel"] <= TOL_BF16_LOSS)
