"""A check of the models on an accelerator: parity with the CPU, mixed precision, SDPA kernels,
throughput, memory and one-epoch training time (``graph-transformers check-device`` and
``benchmarks/gpu_check.py``; how to run it on a GPU machine: ``docs/gpu.md``).

For each model (GT, GT with edges, EGT, GRPE, Graphormer, GPS, GatedGCN, GRIT with its RRWP pairs
cached and GRIT computing them on the device; the ZINC configs under ``configs/zinc``) and one
fixed batch of ZINC graphs (the library's ZINC loader; a clearly
labelled synthetic batch of molecule-sized graphs when the data is absent):

- **parity**: forward and backward of the same weights on the CPU and on the device, in eval
  mode (no dropout, sign flips or input noise; BatchNorm on running statistics taken from the
  batch, :func:`calibrate_norms`), float32 with TF32 off, and float64 where the device supports
  it; the relative L2 difference of the outputs and of the gradient of every parameter (worst
  one), against a stated tolerance; in float32 the gradients are also held against float32's own
  error on the model (the CPU's float32 against float64);
- **bf16**: the loss under ``torch.autocast(bfloat16)`` is finite and its relative difference to
  the float32 loss is within a stated tolerance;
- **SDPA**: which ``scaled_dot_product_attention`` kernel ran (flash, memory-efficient, cuDNN,
  the CPU flash kernel, or the math fallback), recorded from the dispatched ATen ops;
- **speed and memory**: training steps (forward, backward, Adam) on the batch in float32 and
  bf16-mixed: graphs/s timed with CUDA events (wall clock on the CPU) and the peak memory of a
  step (``torch.cuda.max_memory_allocated``; not measured on the CPU);
- **epoch**: the time of one epoch over the ZINC training split (or ``--epoch-graphs`` graphs), in
  float32 and bf16-mixed, including data loading.

Writes ``gpu_check.json`` and ``gpu_check.md`` to ``--out`` (default ``benchmarks/results``).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

#: the models checked: name → ZINC config under ``configs/zinc`` and overrides
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "gt": ("gt.yaml", {"model.use_edge_features": False}),
    "gt_edge": ("gt.yaml", {}),
    "egt": ("egt.yaml", {}),
    "grpe": ("grpe_small.yaml", {}),
    "graphormer": ("graphormer_small.yaml", {}),
    "gps": ("gps.yaml", {}),
    "gatedgcn": ("gatedgcn_100k.yaml", {}),
    "grit": ("grit.yaml", {}),
    # the RRWP pairs computed per batch on the device (encodings.rrwp.batch_rrwp)
    "grit_batch_rrwp": ("grit.yaml", {"encodings.rrwp.cache_pairs": False}),
}
#: tiny sizes for ``--tiny`` (CPU smoke runs)
TINY = {"gt": dict(hidden_dim=16, num_layers=2, num_heads=2),
        "gt_edge": dict(hidden_dim=16, num_layers=2, num_heads=2),
        "egt": dict(hidden_dim=16, edge_hidden_dim=8, num_layers=2, num_heads=2),
        "grpe": dict(hidden_dim=16, ffn_dim=16, num_layers=2, num_heads=2),
        "graphormer": dict(hidden_dim=16, ffn_dim=16, num_layers=2, num_heads=2),
        "gps": dict(hidden_dim=16, num_layers=2, num_heads=2, pe_embed_dim=4),
        "gatedgcn": dict(hidden_dim=16, num_layers=2),
        "grit": dict(hidden_dim=16, num_layers=2, num_heads=2),
        "grit_batch_rrwp": dict(hidden_dim=16, num_layers=2, num_heads=2)}
#: ``Data`` attributes a model's config leaves uncached (its model computes them per batch): the
#: shared batch, processed with the union of the encodings, drops them for that model
UNCACHED = {("rrwp", "cache_pairs"): "rrwp_pair"}

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
REPO = Path(__file__).resolve().parents[2]


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


# ----------------------------------------------------------------------------- data
@dataclass
class CheckData:
    """The batch and training split of the check, and where they come from."""

    batch: Any
    train: Any
    source: str


def _encodings_union(configs: dict[str, Any]) -> Any:
    """One encodings section holding every model's encodings (so ZINC is processed once), with
    everything cached (:data:`UNCACHED`: a model that computes some per batch gets a batch
    without them, :func:`uncached_keys`)."""
    from .training.config import EncodingsConfig
    merged: dict[str, Any] = {}
    for cfg in configs.values():
        for key, value in cfg.encodings.model_dump().items():
            if value is None:
                continue
            value = {**value, **{f: True for (k, f) in UNCACHED if k == key}}
            if key in merged and merged[key] != value:
                raise ValueError(f"the ZINC configs disagree on encodings.{key}: {merged[key]} vs "
                                 f"{value}")
            merged[key] = value
    return EncodingsConfig.model_validate(merged)


def synthetic_molecules(num_graphs: int, seed: int = 0, min_nodes: int = 9,
                        max_nodes: int = 38) -> list:
    """Molecule-sized random graphs shaped like ZINC (28 atom types, 3 bond types, 9-38 atoms,
    chains with rings closed at random, a float target), for when the ZINC files are absent."""
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(seed)
    graphs = []
    for _ in range(num_graphs):
        n = int(torch.randint(min_nodes, max_nodes + 1, (1,), generator=g))
        parent = [int(torch.randint(0, max(i, 1), (1,), generator=g)) for i in range(1, n)]
        edges = [(p, i) for i, p in zip(range(1, n), parent)]
        for _ in range(max(1, n // 8)):  # ring closures
            a, b = (int(v) for v in torch.randint(0, n, (2,), generator=g))
            if a != b and (a, b) not in edges and (b, a) not in edges:
                edges.append((a, b))
        src = [a for a, b in edges] + [b for a, b in edges]
        dst = [b for a, b in edges] + [a for a, b in edges]
        bond = torch.randint(1, 4, (len(edges),), generator=g)
        graphs.append(Data(x=torch.randint(0, 28, (n, 1), generator=g),
                           edge_index=torch.tensor([src, dst], dtype=torch.long),
                           edge_attr=torch.cat([bond, bond]).view(-1, 1),
                           y=torch.randn(1, generator=g), num_nodes=n))
    return graphs


def uncached_keys(cfg: Any) -> tuple[str, ...]:
    """The ``Data`` attributes ``cfg``'s encodings leave uncached (:data:`UNCACHED`)."""
    return tuple(attr for (key, flag), attr in UNCACHED.items()
                 if (section := getattr(cfg.encodings, key, None)) is not None
                 and not getattr(section, flag))


def _without(batch: Any, keys: tuple[str, ...]) -> Any:
    """``batch`` without the attributes ``keys`` (a copy when there are any)."""
    if not keys:
        return batch
    batch = batch.clone()
    for key in keys:
        if key in batch:
            del batch[key]
    return batch


def load_data(configs: dict[str, Any], data_dir: str | None, batch_size: int,
              epoch_graphs: int | None, synthetic: bool = False) -> CheckData:
    """The fixed batch (the first ``batch_size`` training graphs) and the training split, with
    every model's encodings; synthetic molecules when ``synthetic`` or the data is missing."""
    from torch_geometric.loader import DataLoader

    from .data.cache import DataNotFoundError
    from .data.registry import build_pre_transform, load_splits
    encodings = _encodings_union(configs)
    any_cfg = next(iter(configs.values()))
    train = None
    source = ""
    if not synthetic:
        try:
            data_cfg = any_cfg.data.model_copy(update={"data_dir": data_dir})
            train = load_splits(data_cfg, encodings)["train"]
            origin = (getattr(train, "provenance", None) or {}).get("train", "exact")
            source = (f"ZINC-12k train split ({len(train)} graphs, {origin}"
                      f"{'' if origin == 'exact' else ': not the benchmark graphs'}) "
                      f"from {data_dir}")
        except (DataNotFoundError, FileNotFoundError, ImportError) as err:
            source = f"SYNTHETIC molecule-sized graphs (ZINC unavailable: {err})"
    if train is None:
        if not source:
            source = "SYNTHETIC molecule-sized graphs (--synthetic)"
        pre = build_pre_transform(encodings)
        n = max(batch_size, epoch_graphs or batch_size)
        train = [pre(d) if pre is not None else d for d in synthetic_molecules(n)]
    if epoch_graphs is not None:
        train = train[:epoch_graphs] if not isinstance(train, list) else train[:epoch_graphs]
    batch = next(iter(DataLoader(train, batch_size=batch_size, shuffle=False)))
    return CheckData(batch=batch, train=train, source=source)


# ----------------------------------------------------------------------------- helpers
def _rel(a: Tensor, b: Tensor) -> float:
    """Relative L2 difference ``‖a - b‖ / max(‖a‖, tiny)`` in float64."""
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).norm() / a.norm().clamp(min=1e-30))


def _forward_backward(model: nn.Module, batch, task, autocast: torch.dtype | None = None
                      ) -> tuple[Tensor, Tensor, dict[str, Tensor]]:
    """Eval-mode forward, task loss and backward: ``(output, loss, {param: grad})``."""
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


def _cast_batch(batch, device: torch.device, dtype: torch.dtype):
    b = batch.clone().to(device)
    for key in ("lap_pe", "svd_pe", "rwse", "y"):
        t = getattr(b, key, None)
        if isinstance(t, Tensor) and t.is_floating_point():
            setattr(b, key, t.to(dtype))
    return b


def _worst_grad(g_ref: dict[str, Tensor], g: dict[str, Tensor]) -> tuple[float, str]:
    """The largest per-parameter relative gradient difference and its parameter."""
    return max(((_rel(g_ref[n], g[n]), n) for n in g_ref if g_ref[n].norm() > 0),
               default=(0.0, ""))


def _all_grads_rel(g_ref: dict[str, Tensor], g: dict[str, Tensor]) -> float:
    """The relative difference of all gradients together."""
    names = [n for n in g_ref if n in g]
    if not names:
        return 0.0
    return _rel(torch.cat([g_ref[n].double().flatten().cpu() for n in names]),
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
    out_c, loss_c, g_c = _forward_backward(ref, _cast_batch(batch, torch.device("cpu"), dtype),
                                           task)
    out_d, loss_d, g_d = _forward_backward(dev, _cast_batch(batch, device, dtype), task)
    worst = _worst_grad(g_c, g_d)
    result = {"output_rel": _rel(out_c, out_d), "loss_rel": _rel(loss_c, loss_d),
              "grad_rel": worst[0], "worst_param": worst[1],
              "grad_rel_all": _all_grads_rel(g_c, g_d), "loss_cpu": float(loss_c),
              "loss_device": float(loss_d)}
    if dtype == torch.float32:
        exact = copy.deepcopy(model).to(torch.float64)
        _, _, g_64 = _forward_backward(exact, _cast_batch(batch, torch.device("cpu"),
                                                          torch.float64), task)
        own = _worst_grad(g_64, g_c)
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
    _, loss32, g32 = _forward_backward(m, b, task)
    _, loss16, g16 = _forward_backward(m, b, task, autocast=torch.bfloat16)
    names = [n for n in g32 if n in g16]
    flat32 = torch.cat([g32[n].flatten().float() for n in names]) if names else torch.zeros(1)
    flat16 = torch.cat([g16[n].flatten().float() for n in names]) if names else torch.zeros(1)
    return {"loss_fp32": float(loss32), "loss_bf16": float(loss16),
            "loss_rel": _rel(loss32, loss16), "grad_rel": _rel(flat32, flat16),
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
        _train_step(m, opt, _without(b, drop).to(device, non_blocking=True), task, device,
                    bf16)
        n += b.num_graphs
    _sync(device)
    return {"seconds": round(time.perf_counter() - t0, 4), "graphs": n}


# ----------------------------------------------------------------------------- driver
def model_configs(names: list[str], config_dir: Path, tiny: bool) -> dict[str, Any]:
    """The resolved config of every checked model."""
    from .training.config import build_config, load_yaml
    out = {}
    for name in names:
        if name not in MODELS:
            raise ValueError(f"unknown model {name!r}; known: {sorted(MODELS)}")
        file, overrides = MODELS[name]
        raw = load_yaml(config_dir / file)
        over = dict(overrides)
        if tiny:
            over.update({f"model.{k}": v for k, v in TINY[name].items()})
        for key, value in over.items():  # "section.field" or "section.sub.field"
            *path, field = key.split(".")
            node = raw
            for part in path:
                node = node.setdefault(part, {})
            node[field] = value
        out[name] = build_config(raw)
    return out


def check(args: argparse.Namespace) -> dict:
    """Runs the check (see the module docstring) and returns the result dict. TF32 matrix
    products are off while it runs (parity in true float32) and, with ``args.deterministic``,
    PyTorch's deterministic algorithms are on (``warn_only``: an operation without one still
    runs, with PyTorch's warning); both are restored afterwards."""
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("check-device: --device cuda but torch.cuda.is_available() is False")
    previous = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    was_deterministic = (torch.are_deterministic_algorithms_enabled(),
                         torch.is_deterministic_algorithms_warn_only_enabled())
    torch.backends.cuda.matmul.allow_tf32 = False  # parity in true float32, restored on return
    torch.backends.cudnn.allow_tf32 = False
    if getattr(args, "deterministic", False):
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        return _check_models(args, device)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = previous
        torch.use_deterministic_algorithms(was_deterministic[0], warn_only=was_deterministic[1])


def _check_models(args: argparse.Namespace, device: torch.device) -> dict:
    """The body of :func:`check`, with TF32 off."""
    from .data.registry import resolve_spec
    from .models import count_parameters
    from .training.device import loader_options
    from .training.runner import make_model
    from .training.tasks import Task

    t_start = time.perf_counter()
    configs = model_configs(args.models, Path(args.config_dir), args.tiny)
    data = load_data(configs, args.data_dir, args.batch_size, args.epoch_graphs, args.synthetic)
    workers = loader_options("auto", "auto", "cpu" if device.type == "cpu" else "gpu")
    result = _environment(device, data, args.tiny, getattr(args, "calibrate_norms", True),
                          getattr(args, "deterministic", False))
    for name, cfg in configs.items():
        t0 = time.perf_counter()
        torch.manual_seed(0)
        spec = resolve_spec(cfg.data)
        model = make_model(cfg, spec)
        entry: dict[str, Any] = {"config": MODELS[name][0], "params": count_parameters(model)}
        drop = uncached_keys(cfg)
        if drop:
            entry["computed_per_batch"] = list(drop)
        try:
            measure_model(entry, model, Task(spec), device, data, args, cfg.data.batch_size,
                          workers, drop)
            entry["ok"] = verdict(entry)
        except Exception as err:  # noqa: BLE001 - a failing model is a result, not a crash
            entry["error"] = f"{type(err).__name__}: {err}"
            entry["ok"] = False
        entry["seconds"] = round(time.perf_counter() - t0, 1)
        result["models"][name] = entry
        print(f"check-device: {name}: {'ok' if entry['ok'] else 'FAILED'} "
              f"({entry['seconds']} s){' ' + entry['error'] if 'error' in entry else ''}",
              file=sys.stderr, flush=True)
    result["seconds"] = round(time.perf_counter() - t_start, 1)
    result["ok"] = all(e["ok"] for e in result["models"].values())
    return result


def _environment(device: torch.device, data: Any, tiny: bool, calibrate: bool = True,
                 deterministic: bool = False) -> dict[str, Any]:
    """The head of the result: device, versions, the batch checked, the tolerances, where the
    BatchNorm statistics came from and whether deterministic algorithms were on."""
    from .training.device import cpu_name
    batch = data.batch
    return {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else
        cpu_name(),
        "device_type": device.type, "torch": torch.__version__,
        "cuda": torch.version.cuda, "python": platform.python_version(),
        "data": data.source, "batch_graphs": int(batch.num_graphs),
        "batch_nodes": int(batch.num_nodes), "tiny_models": bool(tiny),
        "tolerances": {"fp32_rel": TOL_FP32, "fp64_rel": TOL_FP64,
                       "bf16_loss_rel": TOL_BF16_LOSS, "fp32_margin": FP32_MARGIN},
        "norm_statistics": "batch" if calibrate else "initial",
        "deterministic_algorithms": bool(deterministic),
        "models": {}}


def measure_model(entry: dict[str, Any], model: torch.nn.Module, task: Any,
                  device: torch.device, data: Any, args: argparse.Namespace, batch_size: int,
                  workers: dict, drop: tuple[str, ...] = ()) -> None:
    """Adds one model's measurements to ``entry`` as they are taken (a model that fails keeps
    those before the failure): CPU-vs-device parity in float32 and float64 (not on MPS), bf16
    against float32, the SDPA kernels that ran, training-step speed in fp32 and bf16, and with
    ``args.epoch`` one epoch's time over ``data.train``; every batch without the attributes
    ``drop`` (what the model's config leaves uncached)."""
    batch = _without(data.batch, drop)
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


def _fmt(v: float | None, spec: str = ".1e") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def markdown(result: dict) -> str:
    """The result as a Markdown report."""
    lines = [f"# Device check: {result['device']} ({result['device_type']})", "",
             f"torch {result['torch']}, CUDA {result['cuda']}, Python {result['python']}; "
             f"{result['seconds']} s in all.", "",
             f"Data: {result['data']}; fixed batch of {result['batch_graphs']} graphs "
             f"({result['batch_nodes']} nodes)"
             + (" — **tiny models** (smoke run)" if result["tiny_models"] else "") + ".", "",
             "Parity: relative L2 difference CPU vs device of outputs, loss and the worst "
             "parameter gradient, eval mode with BatchNorm statistics "
             + ("from the batch" if result.get("norm_statistics", "batch") == "batch"
                else "at their initial values")
             + (", deterministic algorithms on" if result.get("deterministic_algorithms")
                else "") + "; tolerance "
             f"{TOL_FP32:g} (float32, TF32 off; for gradients {FP32_MARGIN:g}× float32's own "
             "error where larger: the CPU's float32 gradients against its float64 ones, "
             f"column 'fp32 own') and {TOL_FP64:g} (float64). bf16: autocast loss vs float32 "
             "loss, tolerance "
             f"{TOL_BF16_LOSS:g}; bf16 grad Δ: relative L2 over all gradients together.", "",
             "| model | params | fp32 out / grad | fp32 own | fp64 out / grad | bf16 loss Δ "
             "| bf16 grad Δ | SDPA fp32 / bf16 | graphs/s fp32 / bf16 | peak MiB fp32 / bf16 "
             "| epoch s fp32 / bf16 | ok |",
             "|---|---:|---|---:|---|---:|---:|---|---|---|---|---|"]
    for name, e in result["models"].items():
        if "error" in e:
            lines.append(f"| {name} | {e.get('params', '')} | error: {e['error']} "
                         "| | | | | | | | | no |")
            continue
        p32, p64, bf = e["parity_fp32"], e.get("parity_fp64"), e["bf16"]
        f64 = (f"{_fmt(p64['output_rel'])} / {_fmt(p64['grad_rel'])}" if p64 else "n/a")
        ep = (f"{e['epoch_fp32']['seconds']} / {e['epoch_bf16']['seconds']}"
              if "epoch_fp32" in e else "–")
        s32, s16 = e["speed_fp32"], e["speed_bf16"]
        lines.append(
            f"| {name} | {e['params']:,} | {_fmt(p32['output_rel'])} / {_fmt(p32['grad_rel'])} "
            f"| {_fmt(p32.get('fp32_own_grad_rel'))} | {f64} | {_fmt(bf['loss_rel'])} "
            f"| {_fmt(bf['grad_rel'])} "
            f"| {e['sdpa_fp32']} / {e['sdpa_bf16']} "
            f"| {s32['graphs_per_s']} / {s16['graphs_per_s']} "
            f"| {_fmt(s32['peak_mib'], '.0f')} / {_fmt(s16['peak_mib'], '.0f')} | {ep} "
            f"| {'yes' if e['ok'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    """The command-line options (shared by the CLI subcommand and the benchmark script)."""
    p = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Adds the check's options to ``p``."""
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                   help="device to check against the CPU (default: cuda if available)")
    p.add_argument("--data-dir", default=None, help="directory with the ZINC files")
    p.add_argument("--synthetic", action="store_true",
                   help="use synthetic molecule-sized graphs instead of ZINC")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--batch-size", type=int, default=128, help="graphs of the fixed batch")
    p.add_argument("--steps", type=int, default=20, help="timed training steps per precision")
    p.add_argument("--no-epoch", dest="epoch", action="store_false",
                   help="skip the one-epoch training times")
    p.add_argument("--epoch-graphs", type=int, default=None,
                   help="graphs of the timed epoch (default: the whole training split)")
    p.add_argument("--tiny", action="store_true", help="tiny models (a smoke run)")
    p.add_argument("--initial-norm-stats", dest="calibrate_norms", action="store_false",
                   help="keep BatchNorm's initial statistics (mean 0, variance 1) instead of "
                        "taking them from the batch (the first GPU run's condition)")
    p.add_argument("--deterministic", action="store_true",
                   help="torch.use_deterministic_algorithms (warn_only) during the check: "
                        "tells summation-order effects (atomics) from others")
    p.add_argument("--config-dir", default=str(REPO / "configs" / "zinc"),
                   help="the ZINC configs of the models")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results"),
                   help="directory of gpu_check.json and gpu_check.md")


def main(argv: list[str] | None = None, args: argparse.Namespace | None = None) -> int:
    """Runs the check and writes its reports; returns 0 when every model passed, else 1."""
    if args is None:
        args = parser().parse_args(argv)
    result = check(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(result, indent=1) + "\n")
    report = markdown(result)
    (out / "gpu_check.md").write_text(report)
    print(report)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
