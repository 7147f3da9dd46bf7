"""Device-dependent training settings: where a run trains, its DataLoader options, and the
optional ``torch.compile`` of the model."""
from __future__ import annotations

import functools
import logging
import os
import platform

import torch
from torch import nn

log = logging.getLogger(__name__)

#: DataLoader worker processes per GPU process with ``data.num_workers: auto``
AUTO_GPU_WORKERS = 4


@functools.cache
def cpu_name() -> str:
    """The CPU's model name as ``/proc/cpuinfo`` gives it (e.g. ``"AMD EPYC"``), else
    :func:`platform.processor`, else the architecture (``"x86_64"``).

    Timings depend on it: the same 2-thread training took 79 s per epoch on one development
    machine and twice that on another (``docs/reproduction.md``).
    """
    name = ""
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name")), "")
    except OSError:
        pass
    return name or platform.processor() or platform.machine() or "unknown CPU"


def device_name(device: torch.device | str | None = None) -> str:
    """What trains a run, for epoch logs and results tables: a CUDA device's name (e.g.
    ``"NVIDIA H100 80GB HBM3"``), else the CPU's model with the architecture and torch's thread
    count (``"CPU (AMD EPYC, x86_64, 2 threads)"``), else the device type (``"MPS"``).

    Args:
        device: the device that trains; ``None``: the current CUDA device where CUDA is
            available, else the CPU.
    """
    if device is None:
        device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "cpu":
        return f"CPU ({cpu_name()}, {platform.machine()}, {torch.get_num_threads()} threads)"
    return device.type.upper()


def trains_on_cpu(accelerator: str) -> bool:
    """Whether a Lightning ``accelerator`` setting trains on the CPU: ``"cpu"``, or ``"auto"``
    on a machine without CUDA or MPS."""
    acc = str(accelerator).lower()
    if acc == "cpu":
        return True
    if acc != "auto":
        return False  # gpu, cuda, mps, tpu, ...
    mps = getattr(torch.backends, "mps", None)
    return not torch.cuda.is_available() and not (mps is not None and mps.is_available())


def eval_device(accelerator: str) -> torch.device:
    """Where a run's final evaluation runs: the device it trained on. Lightning moves the model
    back to the CPU when ``fit`` ends, so without this a GPU run's splits would be evaluated on
    the CPU (minutes for PATTERN's 14,000 graphs, and the CPU kernels built first).

    ``"cpu"`` (or ``"auto"`` without an accelerator) gives the CPU; otherwise the current CUDA
    device when CUDA is available, else MPS when available; an accelerator that this machine
    lacks (evaluating a GPU run's checkpoints on a laptop) falls back to the CPU.
    """
    if trains_on_cpu(accelerator):
        return torch.device("cpu")
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _devices_per_node(devices: int | str) -> int:
    if isinstance(devices, int) and devices > 0:
        return devices
    if str(devices).isdigit() and int(devices) > 0:
        return int(devices)
    return max(1, torch.cuda.device_count())  # "auto", -1


def loader_options(num_workers: int | str, pin_memory: bool | str, accelerator: str,
                   devices: int | str = 1) -> dict:
    """Keyword arguments of a training/evaluation ``DataLoader``.

    - ``num_workers``: an int, or ``"auto"``: none on the CPU (the CPU is busy with the model;
      batches are collated between steps), else up to :data:`AUTO_GPU_WORKERS` per GPU process,
      bounded by the cores available to each process.
    - ``pin_memory``: a bool, or ``"auto"``: pinned host buffers when training on a GPU (faster,
      asynchronous host-to-device copies).
    - ``persistent_workers`` whenever there are workers (no re-spawn every epoch).
    """
    cpu = trains_on_cpu(accelerator)
    if num_workers == "auto":
        if cpu:
            workers = 0
        else:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
                (os.cpu_count() or 1)
            workers = max(0, min(AUTO_GPU_WORKERS, cores // _devices_per_node(devices) - 1))
    else:
        workers = int(num_workers)
    pin = (not cpu and torch.cuda.is_available()) if pin_memory == "auto" else bool(pin_memory)
    return dict(num_workers=workers, persistent_workers=workers > 0, pin_memory=pin)


def compile_model(model: nn.Module, dynamic: bool | None = True) -> nn.Module:
    """Compiles ``model`` in place with ``torch.compile`` (``nn.Module.compile``: the module, its
    parameter names and checkpoints stay as they are). ``dynamic=True`` because batches of graphs
    change shape every step (nodes, edges, padded size): one graph with symbolic sizes instead of
    a recompilation per shape. Returns ``model``."""
    model.compile(dynamic=dynamic)
    log.info("model compiled with torch.compile (dynamic=%s)", dynamic)
    return model


#: ``model.compile`` values that compile the step's forward and loss as one graph
STEP_COMPILE_MODES = ("full", "cudagraphs")


def step_compile_mode(setting: bool | str, accelerator: str) -> str | None:
    """What ``model.compile`` asks of a run on ``accelerator``: ``None`` (no step compilation:
    ``false``, or ``true``, which compiles the model alone, :func:`compile_model`), ``"full"`` or
    ``"cudagraphs"``. CUDA graphs need CUDA: on a run that trains on the CPU (or without CUDA)
    ``"cudagraphs"`` logs one warning and runs as ``"full"``."""
    if setting not in STEP_COMPILE_MODES:
        return None
    if setting == "cudagraphs" and (trains_on_cpu(accelerator) or not torch.cuda.is_available()):
        log.warning("model.compile: cudagraphs needs CUDA; this run trains on the CPU, so it runs "
                    "as model.compile: full (one compiled graph, no CUDA graphs)")
        return "full"
    return setting


def compile_step(fn, mode: str):
    """``fn`` (the step's forward and loss, :func:`~.module.forward_loss`) compiled as one graph:
    ``torch.compile(fn, fullgraph=True, dynamic=False)``, with ``mode="reduce-overhead"`` (CUDA
    graphs of the forward and its backward) for ``mode="cudagraphs"``. ``fullgraph=True`` makes a
    graph break an error instead of a silent split, and ``dynamic=False`` specializes on the
    batch's shapes, which static-shape batches (``data.static_shapes: true``) keep fixed.

    Raises:
        ValueError: for a ``mode`` other than ``"full"`` or ``"cudagraphs"``.
    """
    if mode not in STEP_COMPILE_MODES:
        raise ValueError(f"compile mode must be one of {STEP_COMPILE_MODES}, got {mode!r}")
    compiled = torch.compile(fn, fullgraph=True, dynamic=False,
                             mode="reduce-overhead" if mode == "cudagraphs" else None)
    log.info("forward and loss compiled as one graph (model.compile: %s)", mode)
    return compiled
