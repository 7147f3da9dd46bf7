"""Keeps freed memory inside the process (glibc ``mallopt``), so training does not page-fault on
every large tensor.

PyTorch's CPU allocator takes each tensor from ``malloc``. glibc serves blocks above its mmap
threshold (≤ 32 MiB) with fresh ``mmap`` pages and returns them on ``free``, so every step
faults in all of its large activations again; in a VM a fault costs microseconds, which made a
[128, 25, 25, 128] elementwise op 3-5× slower than the same op on reused memory (measured in
``benchmarks/egt_speed.py``). Turning ``mmap`` off for ``malloc`` and raising the trim threshold
keeps freed blocks for reuse: peak memory is unchanged, it is just not handed back between steps.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

#: set to ``system`` to leave glibc's defaults alone
ENV = "GRAPH_TRANSFORMERS_MALLOC"
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def keep_freed_memory() -> bool:
    """Applies the settings above when running on glibc (a no-op elsewhere or when
    ``$GRAPH_TRANSFORMERS_MALLOC=system``). Returns whether they were applied."""
    if os.environ.get(ENV, "").lower() == "system":
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2 ** 31 - 1))
    if ok:
        log.debug("glibc malloc: mmap off, trim threshold 2 GiB")
    return ok
