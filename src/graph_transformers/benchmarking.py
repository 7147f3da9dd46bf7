"""Measurement helpers shared by the scripts under ``benchmarks/``."""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile


def peak_step_memory_mib(step: Callable[[], None], cuda: bool = False) -> float:
    """Peak memory allocated while ``step()`` runs, above what was live before it (MiB).

    CUDA: ``torch.cuda.max_memory_allocated``. CPU: replays the profiler's allocation and free
    events in time order and takes the running maximum (the CPU allocator has no counter)."""
    if cuda:
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - base) / 2**20
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    deltas = []
    for e in prof.events():
        delta = e.cpu_memory_usage if e.name == "[memory]" else e.self_cpu_memory_usage
        if delta:
            deltas.append((e.time_range.start, delta))
    live = peak = 0
    for _, delta in sorted(deltas):
        live += delta
        peak = max(peak, live)
    return peak / 2**20
