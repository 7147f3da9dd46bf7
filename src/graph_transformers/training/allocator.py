"""Keeps freed memory inside the process (glibc ``mallopt``), so training does not page-fault on
every large tensor.

PyTorch's CPU allocator takes each tensor from ``malloc``. glibc serves blocks above its mmap
threshold (≤ 32 MiB) with fresh ``mmap`` pages and returns them on ``free``, so every step
faults in all of its large activations again; in a VM a fault costs microseconds, which made a
[128, 25, 25, 128] elementwise op 3-5× slower than the same op on reused memory (measured in
``benchmarks/egt_speed.py``). Turning ``mmap`` off for ``malloc`` and raising the trim threshold
keeps freed blocks for reuse: peak memory is unchanged, it is just not handed back between steps.

Training applies it only on the CPU and only on Linux (:func:`configure_for_training`); a run on
CUDA leaves glibc's defaults alone.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

from .device import trains_on_cpu

log = logging.getLogger(__name__)

#: set to ``system`` to leave glibc's defaults alone
ENV = "GRAPH_TRANSFORMERS_MALLOC"
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


#: glibc's defaults (the trim threshold then adapts dynamically; setting it fixes it)
_DEFAULT_MMAP_MAX, _DEFAULT_TRIM_THRESHOLD = 65536, 128 * 1024


def _mallopt():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        fn = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int]
    return fn


def keep_freed_memory(enable: bool = True) -> bool:
    """Applies the settings above when running on glibc (a no-op elsewhere or when
    ``$GRAPH_TRANSFORMERS_MALLOC=system``); ``enable=False`` restores glibc's defaults (for
    benchmarks that compare both). Returns whether the settings were changed."""
    if enable and os.environ.get(ENV, "").lower() == "system":
        return False
    mallopt = _mallopt()
    if mallopt is None:
        return False
    if enable:
        ok = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2 ** 31 - 1))
    else:
        ok = (bool(mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX))
              and bool(mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)))
    if ok:
        log.debug("glibc malloc: %s", "mmap off, trim threshold 2 GiB" if enable else "defaults")
    return ok


def configure_for_training(accelerator: str) -> bool:
    """Applies :func:`keep_freed_memory` for CPU training on Linux only. On CUDA the tensors live
    in PyTorch's caching allocator, and the host allocator serves the data pipeline (pinned
    buffers, worker processes), where keeping every freed block would only grow the process.
    Returns whether the settings were changed."""
    if sys.platform != "linux" or not trains_on_cpu(accelerator):
        return False
    return keep_freed_memory()
