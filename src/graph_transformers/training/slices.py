"""Runs trained in wall-clock slices across machines (``graph-transformers slice``).

A paper's schedule can need more hours than any one machine is lent for: ten minutes of a GPU,
a three-hour session of a CPU. A *slice* trains one run for a fixed wall-clock time, stops at an
epoch boundary (:class:`~.callbacks.SliceDeadline`), and leaves everything the next slice needs
in a small *state folder* that can be committed and carried to the next machine:

``<state>/``
    ``config.yaml`` (the resolved config; later slices read it, so ``--config`` is only needed
    for the first), ``run.json`` (the run id its checkpoints carry), ``epochs.csv`` (every
    epoch so far), ``metrics.json`` (all splits at the best-validation and at the last epoch so
    far, with ``stopped_by: slice`` until the schedule ends), ``curves.png``, and two
    checkpoints: ``last.ckpt`` (the resume state: weights,
    optimizer, LR schedule, RNG and sampler states, the cumulative clock) and ``best.ckpt`` (the
    best-validation weights, which the paper's protocol reports, kept without the optimizer
    state: a third of the size).

Each slice holds the state folder's lock (:func:`~.rundir.run_lock`: a second slice of the same
state is refused), copies the state into a scratch run directory, continues it with ``--resume``
semantics (the config checked against the checkpoint's; only from ``last.ckpt``: an unreadable one
is an error, never a fallback to the weights-only ``best.ckpt``), and writes the state back file
by file, each atomically. A slice stopped by SIGTERM or Ctrl-C writes back its last complete epoch
too, and its message gives the ``slice`` command that continues. When the schedule has ended
(``stopped_by`` ``min_lr`` or ``max_epochs``) the checkpoints are removed from the state folder:
what stays is a finished run as the results tree keeps it. A run sliced this way gives the same
epochs as one uninterrupted run on the same device and thread count, since resuming restores
every random state.
"""
from __future__ import annotations

import contextlib
import json
import logging
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import CheckpointError, RunError, RunInterrupted, RunTerminated
from ..fileio import atomic_writer
from .config import Config, build_config, load_config
from .reproduction import COMPLETE
from .rundir import HOLDER_NAME, LOCK_NAME, check_run_target

log = logging.getLogger(__name__)

#: files of a state folder besides the checkpoints
STATE_FILES = ("config.yaml", "run.json", "epochs.csv", "metrics.json", "curves.png")
#: checkpoints of a state folder (``checkpoints/<name>`` in the run directory)
STATE_CHECKPOINTS = ("last.ckpt", "best.ckpt")
#: what ends a paper's schedule (the reproduction table's ``COMPLETE``, one definition)
FINISHED = COMPLETE
#: the state folder's lock files (:func:`~.rundir.run_lock`): never part of the state
LOCK_FILES = (LOCK_NAME, HOLDER_NAME)


def _copy(src: Path, dst: Path) -> None:
    """``src`` → ``dst`` atomically (:func:`~graph_transformers.fileio.atomic_writer`)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as f, atomic_writer(dst, "wb") as out:
        shutil.copyfileobj(f, out)


def _save_weights(src: Path, dst: Path) -> None:
    """``src`` without its optimizer and LR-scheduler states, atomically at ``dst``: the best
    checkpoint is only ever evaluated (a run resumes from ``last.ckpt``), and Adam's two moments
    are two thirds of a checkpoint."""
    from .checkpoint import load_checkpoint, save_checkpoint
    state = load_checkpoint(src)
    for key in ("optimizer_states", "lr_schedulers"):
        state.pop(key, None)
    save_checkpoint(state, dst)


def state_config(state: str | Path, config: Config | None = None,
                 overrides: list[str] | None = None) -> Config:
    """The config of a sliced run: ``config`` when given (the first slice), else the state's
    ``config.yaml`` with ``overrides`` applied.

    Raises:
        RunError: with neither a config nor a state that holds one.
    """
    path = Path(state) / "config.yaml"
    if config is not None:
        return config
    if not path.is_file():
        raise RunError(f"{state} holds no config.yaml: give --config for the first slice")
    return load_config(path, overrides or [])


def run_slice(config: Config, state: str | Path, minutes: float,
              work_dir: str | Path | None = None) -> dict[str, Any]:
    """Trains one wall-clock slice of the run kept in ``state`` and writes the state back.

    The slice holds an exclusive lock on ``state`` throughout (:func:`~.rundir.run_lock`).

    Args:
        config: the run's config (its ``trainer.slice_minutes`` is set to ``minutes``).
        state: the state folder; created by the first slice.
        minutes: the slice's training time (setup and the final evaluation of the splits come on
            top; a slice always trains at least one epoch).
        work_dir: the scratch run directory (default: a temporary one, removed afterwards). It
            must not hold a run.

    Returns:
        The slice's ``metrics.json`` content (``{}`` when the state's run had already finished).

    Raises:
        RunLockedError: another slice (or run) holds ``state``; the message names it.
        CheckpointError: the state's ``last.ckpt`` cannot be read, or the state holds a
            ``best.ckpt`` but no ``last.ckpt`` (nothing is changed: the message says to restore
            it).
        RunTerminated: SIGTERM (:class:`~graph_transformers.errors.RunInterrupted`: Ctrl-C); the
            state keeps the last complete epoch and the message gives the ``slice`` command that
            continues.
        RunError: ``work_dir`` already holds a run; the config does not fit the stored checkpoint
            (as ``--resume``); or as :func:`~.fit.train`.
    """
    from .rundir import run_lock
    state = Path(state)
    with run_lock(state, option="--state"):
        return _run_slice_locked(config, state, minutes, work_dir)


def _check_state(state: Path) -> bool:
    """Whether the state continues a run (it holds ``last.ckpt``, which must be readable).

    Raises:
        CheckpointError: ``last.ckpt`` is unreadable (damaged, truncated, not a checkpoint, no
            optimizer state), or missing beside a ``best.ckpt``: a slice never falls back to the
            weights-only ``best.ckpt``, nor starts again beside it.
    """
    from .checkpoint import load_checkpoint
    last = state / "last.ckpt"
    restore = (f"restore {last} (e.g. git checkout -- {last}, where the state is committed) "
               "and run the slice again; nothing was changed")
    if not last.is_file():
        if (state / "best.ckpt").is_file():
            raise CheckpointError(f"{state} holds best.ckpt but no last.ckpt: a slice continues "
                                  f"only from last.ckpt (best.ckpt holds weights only); {restore}")
        return False
    try:
        ckpt = load_checkpoint(last)
    except CheckpointError as err:
        raise CheckpointError(f"{err}; a slice continues only from the state's last.ckpt "
                              f"(best.ckpt holds weights only): {restore}") from None
    if "optimizer_states" not in ckpt:
        raise CheckpointError(f"{last} holds model weights only (no optimizer state), so "
                              f"training cannot continue from it; {restore}")
    return True


@contextlib.contextmanager
def _signals_deferred() -> Iterator[list[int]]:
    """While the state is written back (main thread only), SIGTERM and SIGINT wait: each is
    recorded in the yielded list instead of stopping the process between two files (a
    ``last.ckpt`` of one epoch beside a ``best.ckpt`` of another); the caller raises for them
    once the state is complete."""
    import threading
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum))
                for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield received
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _write_back(work: Path, state: Path, finished: bool) -> None:
    """The state files and checkpoints of the run in ``work`` → ``state`` (each atomically; the
    best checkpoint without its optimizer state; no checkpoint once ``finished``)."""
    for name in STATE_FILES:
        if (work / name).is_file():
            _copy(work / name, state / name)
    for name in STATE_CHECKPOINTS:
        if finished:
            (state / name).unlink(missing_ok=True)
        elif name == "best.ckpt" and (work / "checkpoints" / name).is_file():
            _save_weights(work / "checkpoints" / name, state / name)
        elif (work / "checkpoints" / name).is_file():
            _copy(work / "checkpoints" / name, state / name)


def _stopped(err: BaseException, work: Path, state: Path, minutes: float) -> RunTerminated:
    """The error of a slice stopped by a signal, once its state is written back: where it
    stopped (the work directory's ``last.ckpt`` named as the state's) and the ``slice`` command
    that continues (its own ``slice --state`` has no ``--resume``)."""
    sigint = isinstance(err, (KeyboardInterrupt, RunInterrupted))
    detail = getattr(err, "detail", None) or (
        "interrupted by SIGINT (Ctrl-C)" if sigint else "terminated by SIGTERM")
    detail = detail.replace(str(work / "checkpoints" / "last.ckpt"), str(state / "last.ckpt"))
    if (state / "last.ckpt").is_file():
        kept = f"the state folder keeps the run up to epoch {_epoch_of(state / 'last.ckpt')}"
    elif (state / "metrics.json").is_file() and \
            json.loads((state / "metrics.json").read_text()).get("stopped_by") in FINISHED:
        kept = "the run has finished (its metrics.json is written)"
    else:
        kept = "no epoch had ended"
    error = RunInterrupted if sigint else RunTerminated
    return error(f"{state}: {detail}; {kept}: continue with graph-transformers slice --state "
                 f"{state} --minutes {minutes:g}", detail=detail)


def _epoch_of(path: Path) -> int | str:
    from .checkpoint import load_checkpoint
    try:
        return int(load_checkpoint(path).get("epoch", -1)) + 1
    except CheckpointError:  # only for a message
        return "?"


def _run_slice_locked(config: Config, state: Path, minutes: float,
                      work_dir: str | Path | None) -> dict[str, Any]:
    """The body of :func:`run_slice` under the state folder's lock."""
    from .fit import train
    done = state / "metrics.json"
    if done.is_file() and not (state / "last.ckpt").is_file():
        ended = json.loads(done.read_text()).get("stopped_by")
        if ended in FINISHED:
            log.info("%s: the run has finished (%s); nothing to train", state, ended)
            return {}
    resume = _check_state(state)
    if not resume:  # the first slice: the state folder is new, empty or its own
        if done.is_file():
            raise CheckpointError(f"{state} holds an unfinished run (metrics.json) but no "
                                  f"last.ckpt to continue it from: restore {state / 'last.ckpt'} "
                                  "(e.g. from git), or choose another --state to start anew; "
                                  "nothing was changed")
        check_run_target(state, option="--state")
    config = build_config({**config.to_dict(),
                           "trainer": {**config.trainer.model_dump(), "slice_minutes": minutes}})
    scratch = tempfile.TemporaryDirectory(prefix="gt-slice-") if work_dir is None else None
    work = Path(scratch.name if scratch is not None else work_dir)
    try:
        if (work / "checkpoints").exists() or (work / "metrics.json").exists():
            raise RunError(f"{work} already holds a run: give an empty --work directory")
        if resume:
            for name in STATE_CHECKPOINTS:
                if (state / name).is_file():
                    _copy(state / name, work / "checkpoints" / name)
            for name in ("config.yaml", "run.json", "epochs.csv"):
                if (state / name).is_file():
                    _copy(state / name, work / name)
        log.info("slice of %.1f min: %s %s in %s", minutes,
                 "continuing" if resume else "starting", state, work)
        try:
            metrics = train(config, work, resume=resume)
        except (RunTerminated, KeyboardInterrupt) as err:
            with _signals_deferred():  # the last complete epoch goes back to the state
                _write_back(work, state, finished=False)
            raise _stopped(err, work, state, minutes) from None
        if not metrics:  # not rank 0
            return metrics
        finished = metrics.get("stopped_by") in FINISHED
        with _signals_deferred() as received:
            _write_back(work, state, finished)
        if received:  # it waited for a complete state; now it ends the process (a set of slices)
            sigint = received[0] == signal.SIGINT
            how = "interrupted by SIGINT (Ctrl-C)" if sigint else "terminated by SIGTERM"
            error = RunInterrupted if sigint else RunTerminated
            raise _stopped(error("", detail=f"{how} while the state was written back"), work,
                           state, minutes)
        log.info("%s: %d epochs so far, stopped by %s%s", state, metrics["epochs"],
                 metrics["stopped_by"], " (finished: checkpoints removed)" if finished else "")
        return metrics
    finally:
        if scratch is not None:
            scratch.cleanup()
