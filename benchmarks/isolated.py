"""One measurement in a forked child process with an address-space cap and a timeout, so that
running out of memory is reported as ``{"status": "oom"}`` instead of taking the machine down.

Shared by the scaling benchmarks (``gps_scaling.py``, ``large_graph.py``). The parent imports
torch and the package once; a forked child inherits them, so a point costs no import time.
"""
from __future__ import annotations

import resource
import time
from collections.abc import Callable, Sequence
from typing import Any

from graph_transformers.training.device import cpu_name  # noqa: F401  (re-exported)


def status_kib(key: str) -> int:
    """A ``/proc/self/status`` field in KiB (``VmRSS``, ``VmHWM``, ``VmSize``).

    Raises:
        KeyError: for a field the kernel does not report.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    raise KeyError(key)


def reset_peak_rss() -> None:
    """Resets ``VmHWM`` (the peak resident set) to the current resident set (Linux
    ``/proc/self/clear_refs``)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _exit_with_parent(poll_s: float = 2.0) -> None:
    """Ends this process once its parent is gone (a killed benchmark, or the ``forkserver``
    that forked it exiting with the benchmark), so that no orphaned point keeps the cores busy
    and skews the next measurement."""
    import os
    import threading
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _child(fn: Callable[..., dict], args: tuple, mem_gib: float, conn) -> None:
    """Runs in the forked process: caps the address space, calls ``fn(*args)``, sends its dict."""
    cap = int(mem_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    _exit_with_parent()
    try:
        out = fn(*args)
    except (MemoryError, RuntimeError) as err:
        text = str(err)
        if isinstance(err, MemoryError) or "alloc" in text.lower() or "memory" in text.lower():
            out = {"status": "oom", "error": (text.splitlines() or ["MemoryError"])[0][:200]}
        else:
            out = {"status": "error", "error": text[:300]}
    except Exception as err:  # reported as the point's result, not lost with the child
        out = {"status": "error", "error": f"{type(err).__name__}: {str(err)[:300]}"}
    conn.send(out)
    conn.close()


def measure(fn: Callable[..., dict], args: tuple, mem_gib: float, timeout: float,
            preload: Sequence[str] | None = None) -> dict[str, Any]:
    """``fn(*args)`` (which returns a dict with ``"status": "ok"`` and its figures) in a forked
    child capped at ``mem_gib`` GiB of address space (``RLIMIT_AS``), killed after ``timeout``
    seconds.

    By default the child is a fork of the caller, which must then not have run a multi-threaded
    torch op: a fork of a process whose OpenMP thread pool has run blocks forever in its first
    parallel op. With ``preload`` (module names), the child is forked from a fresh server process
    that imported those modules and never ran torch ops (``multiprocessing``'s ``forkserver``), so
    the child may use several threads whatever the caller did before; ``fn`` must then be a
    module-level function of an importable module and ``args`` picklable.

    Returns:
        ``fn``'s dict plus ``wall_s``; or ``{"status": "oom" | "timeout" | "error", …}``.
    """
    import multiprocessing as mp
    if preload is None:
        ctx = mp.get_context("fork")
    else:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(preload))
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn, args, mem_gib, child))
    t0 = time.perf_counter()
    proc.start()
    child.close()
    result = None
    if parent.poll(timeout):
        try:
            result = parent.recv()
        except EOFError:
            result = None
    wall = time.perf_counter() - t0
    if proc.is_alive() and result is None:
        proc.kill()
        proc.join()
        return {"status": "timeout", "wall_s": round(wall, 1)}
    proc.join(30)
    if result is None:  # died without a word: killed by the kernel (OOM) or crashed
        status = "oom" if proc.exitcode in (-9, 137) else "error"
        return {"status": status, "exitcode": proc.exitcode, "wall_s": round(wall, 1)}
    return {**result, "wall_s": round(wall, 1)}
