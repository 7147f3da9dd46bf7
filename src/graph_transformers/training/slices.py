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

Each slice copies the state into a scratch run directory, continues it with ``--resume`` semantics
(the config checked against the checkpoint's), and writes the state back file by file, each
atomically. When the schedule has ended (``stopped_by`` ``min_lr`` or ``max_epochs``) the
checkpoints are removed from the state folder: what stays is a finished run as the results tree
keeps it. A run sliced this way gives the same epochs as one uninterrupted run on the same
device and thread count, since resuming restores every random state.
"""
from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..fileio import atomic_writer
from .config import Config, build_config, load_config
from .reproduction import COMPLETE

log = logging.getLogger(__name__)

#: files of a state folder besides the checkpoints
STATE_FILES = ("config.yaml", "run.json", "epochs.csv", "metrics.json", "curves.png")
#: checkpoints of a state folder (``checkpoints/<name>`` in the run directory)
STATE_CHECKPOINTS = ("last.ckpt", "best.ckpt")
#: what ends a paper's schedule (the reproduction table's ``COMPLETE``, one definition)
FINISHED = COMPLETE


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
        RunError: ``work_dir`` already holds a run; the config does not fit the stored checkpoint
            (as ``--resume``); or as :func:`~.runner.train`.
    """
    from .runner import train
    state = Path(state)
    done = state / "metrics.json"
    if done.is_file() and not (state / "last.ckpt").is_file():
        ended = json.loads(done.read_text()).get("stopped_by")
        if ended in FINISHED:
            log.info("%s: the run has finished (%s); nothing to train", state, ended)
            return {}
    config = build_config({**config.to_dict(),
                           "trainer": {**config.trainer.model_dump(), "slice_minutes": minutes}})
    scratch = tempfile.TemporaryDirectory(prefix="gt-slice-") if work_dir is None else None
    work = Path(scratch.name if scratch is not None else work_dir)
    try:
        if (work / "checkpoints").exists() or (work / "metrics.json").exists():
            raise RunError(f"{work} already holds a run: give an empty --work directory")
        resume = (state / "last.ckpt").is_file()
        if resume:
            for name in STATE_CHECKPOINTS:
                if (state / name).is_file():
                    _copy(state / name, work / "checkpoints" / name)
            for name in ("config.yaml", "run.json", "epochs.csv"):
                if (state / name).is_file():
                    _copy(state / name, work / name)
        log.info("slice of %.1f min: %s %s in %s", minutes,
                 "continuing" if resume else "starting", state, work)
        metrics = train(config, work, resume=resume)
        if not metrics:  # not rank 0
            return metrics
        for name in STATE_FILES:
            if (work / name).is_file():
                _copy(work / name, state / name)
        finished = metrics.get("stopped_by") in FINISHED
        for name in STATE_CHECKPOINTS:
            if finished:
                (state / name).unlink(missing_ok=True)
            elif name == "best.ckpt" and (work / "checkpoints" / name).is_file():
                _save_weights(work / "checkpoints" / name, state / name)
            elif (work / "checkpoints" / name).is_file():
                _copy(work / "checkpoints" / name, state / name)
        log.info("%s: %d epochs so far, stopped by %s%s", state, metrics["epochs"],
                 metrics["stopped_by"], " (finished: checkpoints removed)" if finished else "")
        return metrics
    finally:
        if scratch is not None:
            scratch.cleanup()
