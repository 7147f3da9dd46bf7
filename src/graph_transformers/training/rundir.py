"""The run directory's guarantees (see ``docs/reliability.md``): one live run per directory
(an exclusive lock held for the run's lifetime), and a ``--resume`` that checks before it writes.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ..errors import CheckpointError, RunError, RunLockedError
from ..fileio import atomic_write_text
from .binding import RUN_FILE
from .checkpoint import load_checkpoint

log = logging.getLogger(__name__)

LOCK_NAME = ".lock"
HOLDER_NAME = ".lock.holder.json"


def _is_main_process() -> bool:
    """False in the extra processes a multi-process (DDP) run starts; they share the directory
    of rank 0, which holds the lock."""
    return all(os.environ.get(k, "0") in ("", "0") for k in ("LOCAL_RANK", "NODE_RANK"))


@contextlib.contextmanager
def run_lock(run_dir: str | os.PathLike, option: str = "--out") -> Iterator[None]:
    """Holds an exclusive lock on ``run_dir`` (created if missing) while the block runs: a
    ``filelock.FileLock`` on ``run_dir/.lock`` (an OS-level lock, released when the process
    dies, so a killed run never leaves a stale lock), with the holder's pid, host, start time and
    command line in ``run_dir/.lock.holder.json``.

    Args:
        run_dir: the directory to lock (a run directory, a set of runs' folder, a slice's state
            folder).
        option: the command-line option that named it, for the messages ("choose another
            --out").

    Raises:
        RunLockedError: another live process holds the lock; the message names it.
        RunError: ``run_dir`` cannot be created or written (e.g. no permission), or it or a
            folder above it is a file.
    """
    run = Path(run_dir)
    if not _is_main_process():
        yield
        return
    blocking = next((p for p in (run, *run.parents) if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise RunError(f"cannot use {run} as a run directory: {blocking} is a file; choose "
                       f"another {option}")
    try:
        run.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(run / LOCK_NAME), timeout=0)
        lock.acquire()
    except Timeout:
        raise RunLockedError(f"{run} is in use by another run ({_holder(run)}); wait for it to "
                             f"finish or choose another {option}") from None
    except PermissionError as err:
        raise RunError(f"cannot use run directory {run}: permission denied "
                       f"({err.filename or run})") from None
    try:
        holder = {"pid": os.getpid(), "host": socket.gethostname(),
                  "started": datetime.datetime.now().isoformat(timespec="seconds"),
                  "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])}
        atomic_write_text(run / HOLDER_NAME, json.dumps(holder) + "\n")
        yield
    finally:
        with contextlib.suppress(OSError):
            (run / HOLDER_NAME).unlink()
        lock.release()


#: the entries of a set of runs' folder (``--seeds`` above 1, ``--folds``): its members'
#: folders and its summary
_SET_ENTRY = re.compile(r"(seed|fold)_\d+|summary\.json")


def check_run_target(out: str | os.PathLike, of_set: bool = False,
                     option: str = "--out") -> None:
    """Refuses to start a run in a folder that holds files no run wrote: a run directory is
    only ever written by a run. A single run's folder may be missing, empty (but for the lock
    files) or hold an earlier run's own files (``run.json`` marks them; whether that run
    finished is checked by the caller); a set's folder (``of_set``) only its members'
    ``seed_<s>`` / ``fold_<k>`` folders and ``summary.json``.

    Args:
        out: the folder a run or a set of runs is about to write.
        of_set: ``out`` holds the members of a set of runs, not one run.
        option: the command-line option that named ``out``, for the message.

    Raises:
        RunError: ``out`` holds other files; the message names up to three of them.
    """
    out = Path(out)
    if not out.is_dir():
        return
    entries = sorted(p.name for p in out.iterdir() if p.name not in (LOCK_NAME, HOLDER_NAME))
    if of_set:
        foreign = [e for e in entries if not _SET_ENTRY.fullmatch(e)]
    else:
        foreign = [] if RUN_FILE in entries else entries
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                          else "")
        raise RunError(f"{out} holds files that no run wrote ({shown}); a run only writes into "
                       f"a new or empty folder, or its own: choose another {option}")


def _holder(run: Path) -> str:
    try:
        h = json.loads((run / HOLDER_NAME).read_text())
        return f"pid {h['pid']} on {h['host']}, started {h['started']}: {h['command']}"
    except (OSError, ValueError, KeyError):
        return "holder unknown"


def resume_checkpoint(run_dir: str | os.PathLike) -> tuple[Path, dict[str, Any]]:
    """The checkpoint ``--resume`` continues from and its content: ``checkpoints/last.ckpt``, or,
    when that one is missing or unreadable (empty, truncated), the newest readable checkpoint
    of the run (``best.ckpt``), with a warning naming what was skipped. A checkpoint that holds
    model weights only (no optimizer state: a slice's ``best.ckpt``) is never resumed from.

    Raises:
        RunError: no checkpoint at all; CheckpointError: none is readable, or none holds the
            training state (the message lists why each was refused and what to do).
    """
    ckpt_dir = Path(run_dir) / "checkpoints"
    candidates = [ckpt_dir / "last.ckpt"] + sorted(
        (p for p in ckpt_dir.glob("*.ckpt") if p.name != "last.ckpt"),
        key=lambda p: p.stat().st_mtime, reverse=True) if ckpt_dir.is_dir() else []
    candidates = [p for p in candidates if p.is_file()]
    if not candidates:
        raise RunError(f"--resume: no checkpoint to resume at {ckpt_dir / 'last.ckpt'}")
    readable, refused, weights_only = [], [], []
    for path in candidates:
        try:
            state = load_checkpoint(path)
        except CheckpointError as err:
            refused.append(str(err))
            continue
        if "optimizer_states" not in state:  # Lightning's fit would end in a KeyError
            weights_only.append(f"{path} holds model weights only (no optimizer state), so "
                                "training cannot continue from it")
            continue
        readable.append((path, state))
    if not readable and not weights_only:
        raise CheckpointError("--resume: no readable checkpoint: " + "; ".join(refused))
    if not readable:
        raise CheckpointError(f"--resume: no checkpoint to resume from: "
                              f"{'; '.join(refused + weights_only)}; restore "
                              f"{ckpt_dir / 'last.ckpt'} (from a copy, or git), or evaluate the "
                              f"run as it is: graph-transformers evaluate {run_dir}")
    path, state = max(readable, key=lambda ps: (int(ps[1].get("global_step", -1)),
                                                ps[0].name == "last.ckpt"))
    if refused:
        log.warning("--resume: %s; resuming from %s (epoch %d) instead", "; ".join(refused),
                    path, int(state.get("epoch", -1)) + 1)
    return path, state


#: config keys a ``--resume`` may change: training limits, where files are read from and where
#: batches are built (``data.on_device`` builds the same batches), and the published reference
RESUME_MAY_CHANGE = ("name", "trainer.", "data.data_dir", "data.cache_dir", "data.num_workers",
                     "data.pin_memory", "data.on_device", "reference", "reference.")


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict) and d:
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: d}


def config_differences(saved: dict, new: dict) -> list[str]:
    """``key: saved -> new`` for every flattened key that differs and that a resume may not
    change (anything outside :data:`RESUME_MAY_CHANGE`)."""
    a, b = _flatten(saved), _flatten(new)
    diffs = []
    for key in sorted(set(a) | set(b)):
        if any(key == p or (p.endswith(".") and key.startswith(p)) for p in RESUME_MAY_CHANGE):
            continue
        if a.get(key, "<unset>") != b.get(key, "<unset>"):
            diffs.append(f"{key}: {a.get(key, '<unset>')!r} -> {b.get(key, '<unset>')!r}")
    return diffs


def check_resume_compatible(saved: dict | None, new: dict, source: str,
                            path: str | os.PathLike | None = None) -> None:
    """Refuses a ``--resume`` whose config changes what the checkpoint was trained on.

    Args:
        saved: the config the checkpoint was trained with (from the checkpoint, else the run's
            ``config.yaml``); ``None`` skips the check.
        new: the config of the resumed run.
        source: where ``saved`` came from, for the message.
        path: the file ``saved`` was read from, named where it cannot be validated (default:
            ``source``).

    Raises:
        RunError: listing every differing key (only ``trainer.*`` limits, ``name`` and data
            locations may change).
    """
    if saved is None:
        return
    from .config import ConfigError, build_config
    try:  # fill in fields added to the schema since the run started (their defaults)
        saved = build_config(saved, source=path if path is not None else source).to_dict()
    except ConfigError:
        pass  # a config of an older schema: compare what it holds
    diffs = config_differences(saved, new)
    if diffs:
        raise RunError(f"--resume: the config differs from the one the run was trained with "
                       f"({source}) in {', '.join(diffs)}; only trainer.* (e.g. "
                       "trainer.max_epochs, trainer.max_time) may change on resume. Nothing was "
                       "written; start a new run (another --out) to change the model or data")
