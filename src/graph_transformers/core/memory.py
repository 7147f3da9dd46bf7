"""How much memory this process may use, for checks made before a large allocation (a generated
graph, an all-pairs encoding): the smallest of the machine's physical memory, the memory
available now, the process's address-space and data limits (``ulimit -v`` / ``-d``) and its
control group's limit (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``)."""
from __future__ import annotations

import os
from pathlib import Path

#: cgroup files holding a memory limit in bytes (v2, then v1); "max" or a huge v1 value is none
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"),
                  Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_limit() -> int | None:
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text)
    return None


def _rlimits() -> dict[str, int]:
    try:
        import resource
    except ImportError:  # not on this platform
        return {}
    found = {}
    for name in ("RLIMIT_AS", "RLIMIT_DATA"):
        kind = getattr(resource, name, None)
        if kind is None:
            continue
        soft, _ = resource.getrlimit(kind)
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
            found[name] = int(soft)
    return found


def memory_limit() -> tuple[int | None, str]:
    """The memory this process may allocate, in bytes, and where that number comes from.

    Returns:
        ``(bytes, source)``: the smallest of the physical memory (``physical``), the memory
        available now (``available``, ``/proc/meminfo``), ``RLIMIT_AS`` / ``RLIMIT_DATA`` and the
        cgroup limit (``cgroup``); ``(None, "unknown")`` where the system says none of them.

    Example:
        >>> limit, source = memory_limit()
        >>> limit is None or limit > 0
        True
    """
    candidates: dict[str, int] = {}
    try:
        candidates["physical memory"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    if (available := _meminfo_available()) is not None:
        candidates["memory available now"] = available
    if (cgroup := _cgroup_limit()) is not None:
        candidates["the control group's limit"] = cgroup
    for name, value in _rlimits().items():
        candidates[f"{name} (ulimit)"] = value
    if not candidates:
        return None, "unknown"
    source = min(candidates, key=candidates.get)
    return candidates[source], source

