"""Training callbacks: the per-epoch CSV log, the stop-at-minimum-LR rule, early stopping
(``trainer.early_stopping``: :func:`early_stopping`), the wall-clock slice, the per-epoch log line
and the state a resumed run needs."""
from __future__ import annotations

import csv
from collections import Counter
import logging
import os
import time
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping, ModelCheckpoint

from ..errors import ConfigError
from ..fileio import atomic_writer
from .device import device_name
from .sections import EarlyStoppingConfig

log = logging.getLogger(__name__)


def _epoch_metrics(trainer: L.Trainer) -> dict[str, float]:
    """The epoch's ``train/`` and ``val/`` metrics Lightning has collected."""
    return {k: float(v) for k, v in trainer.callback_metrics.items()
            if k.startswith(("train/", "val/"))}


class StopAtMinLR(L.Callback):
    """Stops training once the learning rate falls below ``min_lr`` (GT / benchmarking-GNNs
    protocol: ``ReduceLROnPlateau`` until the LR reaches 1e-6)."""

    def __init__(self, min_lr: float) -> None:
        self.min_lr = min_lr
        #: whether this rule ended the run
        self.stopped = False

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        lr = trainer.optimizers[0].param_groups[0]["lr"]
        if lr < self.min_lr:
            trainer.should_stop = True
            self.stopped = True


class RunEarlyStopping(EarlyStopping):
    """Lightning's ``EarlyStopping`` (``trainer.early_stopping``): stops training once
    ``monitor`` has not improved by more than ``min_delta`` for ``patience`` checks in a row
    (after each validation), and remembers the epoch it stopped at for ``metrics.json``
    (:meth:`record`). Its state (best score, epochs without improvement) is kept in every
    checkpoint by Lightning, so a resumed run counts on.

    Attributes:
        stopped_at (int | None): the 1-based epoch after which it stopped training; ``None``
            while it has not.
    """

    def __init__(self, monitor: str, mode: str, patience: int, min_delta: float) -> None:
        super().__init__(monitor=monitor, mode=mode, patience=patience, min_delta=min_delta,
                         strict=True, check_finite=True, verbose=False)
        self.stopped_at: int | None = None

    def _run_early_stopping_check(self, trainer: L.Trainer) -> None:
        before = trainer.should_stop
        super()._run_early_stopping_check(trainer)
        if trainer.should_stop and not before and self.stopped_at is None:
            self.stopped_at = trainer.current_epoch + 1
            log.info("early stopping after epoch %d: %s has not improved by more than %g for %d "
                     "epoch(s) (best %.6g)", self.stopped_at, self.monitor, abs(self.min_delta),
                     self.wait_count, float(self.best_score))

    def record(self) -> dict:
        """What ``metrics.json`` keeps under ``early_stopping``: the settings, ``stopped_epoch``
        (1-based, ``None`` when it did not stop the run) and the best ``monitor`` value seen."""
        return {"monitor": self.monitor, "mode": self.mode, "patience": self.patience,
                "min_delta": abs(self.min_delta), "stopped_epoch": self.stopped_at,
                "best_score": float(self.best_score)}


def early_stopping(config: EarlyStoppingConfig, metric: str,
                   default: tuple[str, str]) -> RunEarlyStopping:
    """The callback of ``trainer.early_stopping``: ``monitor`` defaults to ``default[0]`` (the
    figure the best checkpoint is kept by, mode ``default[1]``); any other must be one this run
    logs, ``val/`` or ``train/`` of ``loss`` or of ``metric`` (the run's metric), its mode
    ``min`` for a loss, MAE or RMSE and ``max`` otherwise unless given.

    Raises:
        ConfigError: a ``monitor`` the run does not log, naming those it does.
    """
    allowed = [f"{s}/{m}" for s in ("val", "train") for m in ("loss", metric)]
    monitor = config.monitor or default[0]
    if monitor not in allowed:
        raise ConfigError(f"trainer.early_stopping.monitor={monitor!r} is not logged by this run; "
                          f"use one of {', '.join(allowed)}")
    mode = config.mode or (default[1] if monitor == default[0] else
                           "min" if monitor.split("/")[1] in ("loss", "mae", "rmse") else "max")
    return RunEarlyStopping(monitor, mode, config.patience, config.min_delta)


class EpochLog(Checkpoint):
    """Appends one row per epoch to ``path`` (CSV): epoch, lr, epoch time, cumulative training
    time (across ``--resume`` segments), the device that trained the epoch
    (:func:`~graph_transformers.training.device.device_name`: a run resumed on another machine
    shows where its epoch times changed) and every ``train/`` and ``val/`` metric.

    The cumulative time is kept in the checkpoint, so a resumed run continues the clock.
    It derives from Lightning's ``Checkpoint`` marker class only so that Lightning calls its
    ``on_train_epoch_end`` after the module's (where epoch metrics are computed) and before the
    checkpoint callbacks listed after it save its state.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.elapsed = 0.0
        self._start = 0.0

    def state_dict(self) -> dict:
        return {"elapsed": self.elapsed}

    def load_state_dict(self, state: dict) -> None:
        self.elapsed = float(state.get("elapsed", 0.0))

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._start = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if not trainer.is_global_zero:
            return
        epoch_time = time.perf_counter() - self._start
        self.elapsed += epoch_time
        metrics = _epoch_metrics(trainer)
        row = {"epoch": trainer.current_epoch + 1,
               "lr": trainer.optimizers[0].param_groups[0]["lr"],
               "epoch_time_s": round(epoch_time, 3), "elapsed_s": round(self.elapsed, 3),
               "device": device_name(pl_module.device)}
        row.update({k: metrics[k] for k in sorted(metrics)})
        self._append(row)

    def _append(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existing: list[dict] = []
        if self.path.exists():
            with open(self.path, newline="") as f:
                existing = [r for r in csv.DictReader(f) if int(r["epoch"]) < row["epoch"]]
        rows = existing + [row]
        fields: list[str] = []
        for r in rows:
            fields += [k for k in r if k not in fields]
        with atomic_writer(self.path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)


def epoch_devices(path: str | os.PathLike) -> dict[str, int]:
    """Epochs per device in an :class:`EpochLog` file: ``{device name: number of epochs}``, in
    the order the devices first trained. ``{}`` for a missing file or a log written before the
    ``device`` column existed; in a run resumed from such a log, the earlier epochs (blank
    cells) count as ``"unrecorded"``."""
    path = Path(path)
    if not path.is_file():
        return {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if "device" not in (reader.fieldnames or ()):
            return {}
        return dict(Counter(row["device"] or "unrecorded" for row in reader))


class SliceDeadline(L.Callback):
    """Stops training at an epoch boundary so that the fit ends within a wall-clock slice.

    After each training epoch (its validation included), the callback sets
    ``trainer.should_stop`` when the time since the fit started plus the longest epoch seen so far
    would pass ``minutes``: the run ends on a complete epoch, whose ``last.ckpt`` is written as
    usual, and a resume continues with the next one. At least one epoch runs per slice, so a
    slice shorter than one epoch overruns by that epoch.

    Args:
        minutes: the slice's length, in minutes, counted from ``on_fit_start``.

    Raises:
        ValueError: for a non-positive length.
    """

    def __init__(self, minutes: float) -> None:
        if not minutes > 0:
            raise ValueError(f"a slice must last more than 0 minutes, got {minutes}")
        self.seconds = 60.0 * minutes
        self.stopped = False
        self._fit_start = self._epoch_start = 0.0
        self._longest = 0.0

    def on_fit_start(self, trainer, pl_module) -> None:
        self._fit_start = time.perf_counter()

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._epoch_start = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        now = time.perf_counter()
        self._longest = max(self._longest, now - self._epoch_start)
        if now - self._fit_start + self._longest > self.seconds and not trainer.should_stop:
            self.stopped = trainer.should_stop = True
            log.info("slice of %.1f min: stopping after epoch %d (%.1f min used, epochs up to "
                     "%.1f s); resume to continue", self.seconds / 60, trainer.current_epoch + 1,
                     (now - self._fit_start) / 60, self._longest)


class EpochSummary(Checkpoint):
    """One log line per epoch (epoch, LR, time, ``train/`` and ``val/`` metrics): what a run
    shows instead of a progress bar when its output is not a terminal (a log file, a batch
    job), where a bar would write thousands of carriage-return fragments. Like
    :class:`EpochLog`, it derives from ``Checkpoint`` only so that Lightning calls it after the
    module has computed the epoch's metrics."""

    def __init__(self) -> None:
        self._start = 0.0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._start = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if not trainer.is_global_zero:
            return
        metrics = _epoch_metrics(trainer)
        parts = [f"{k} {metrics[k]:.4g}" for k in sorted(metrics)]
        lr = trainer.optimizers[0].param_groups[0]["lr"]
        max_epochs = trainer.max_epochs if trainer.max_epochs and trainer.max_epochs > 0 else "?"
        log.info("epoch %d/%s  lr %.3g  %.2f s  %s", trainer.current_epoch + 1, max_epochs, lr,
                 time.perf_counter() - self._start, "  ".join(parts))


def _rng_state() -> dict:
    """The torch (CPU and CUDA), numpy and Python RNG states, in types that load with
    ``torch.load(weights_only=True)``."""
    import random

    import numpy as np
    import torch

    name, keys, pos, has_gauss, cached = np.random.get_state()
    state = {"torch": torch.get_rng_state(),
             "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)),
                       "pos": int(pos), "has_gauss": int(has_gauss),
                       "cached_gaussian": float(cached)},
             "python": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    """Restores :func:`_rng_state`."""
    import random

    import numpy as np
    import torch

    torch.set_rng_state(state["torch"])
    npy = state["numpy"]
    np.random.set_state((npy["name"], npy["keys"].numpy().astype(np.uint32), npy["pos"],
                         npy["has_gauss"], npy["cached_gaussian"]))
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class RunState(L.Callback):
    """Keeps in every checkpoint what a resumed run needs to continue exactly as an
    uninterrupted one, and the config the checkpoint was trained with.

    Saved (``state_dict``, called when a checkpoint is written at the end of an epoch): the torch
    (CPU, CUDA), numpy and Python RNG states, the state of every stateful batch sampler given
    (e.g. :class:`~graph_transformers.data.sampler.SizeBucketBatchSampler`'s epoch), the
    resolved config, and what binds the checkpoint to its run (:mod:`~.binding`): the run id and
    the data fingerprint. Restored (``load_state_dict``, at ``--resume``): the RNG and sampler
    states, so the next epoch shuffles, drops out and flips signs as the uninterrupted run did.

    Args:
        config: the resolved config (``Config.to_dict()``), stored as ``config``.
        samplers: objects with ``state_dict`` / ``load_state_dict`` (the training batch sampler).
        run_id: the run's id, stored as ``run_id``.
        data: the data fingerprint ``{split: sha256}``, stored as ``data``.
    """

    def __init__(self, config: dict, samplers: list | tuple = (), run_id: str | None = None,
                 data: dict | None = None) -> None:
        self.config = config
        self.samplers = list(samplers)
        self.run_id, self.data = run_id, data
        self.restored_config: dict | None = None

    @property
    def state_key(self) -> str:
        return "RunState"

    def state_dict(self) -> dict:
        return {"rng": _rng_state(), "samplers": [s.state_dict() for s in self.samplers],
                "config": self.config, "run_id": self.run_id, "data": self.data}

    def load_state_dict(self, state: dict) -> None:
        if "rng" in state:
            _set_rng_state(state["rng"])
        for sampler, saved in zip(self.samplers, state.get("samplers", [])):
            sampler.load_state_dict(saved)
        self.restored_config = state.get("config")


class RunCheckpoint(ModelCheckpoint):
    """Lightning's ``ModelCheckpoint`` whose tracking (best score, best path) survives a moved
    run directory: Lightning drops the best score when the saved ``dirpath`` differs from the
    current one, so after copying a run elsewhere the first resumed epoch overwrote
    ``best.ckpt`` whatever its score. Here saved paths are re-rooted in the current
    ``dirpath`` (by file name) before Lightning restores them. The state key is Lightning's
    own, so checkpoints written before this class existed restore as before."""

    def _generate_state_key(self, **kwargs) -> str:
        return super()._generate_state_key(**kwargs).replace(type(self).__qualname__,
                                                             "ModelCheckpoint", 1)

    def load_state_dict(self, state_dict: dict) -> None:
        saved = state_dict.get("dirpath")
        if saved is not None and self.dirpath is not None and saved != self.dirpath:
            state_dict = dict(state_dict, dirpath=self.dirpath)
            for key in ("best_model_path", "kth_best_model_path", "last_model_path"):
                if state_dict.get(key):
                    state_dict[key] = os.path.join(self.dirpath, os.path.basename(state_dict[key]))
            if state_dict.get("best_k_models"):
                state_dict["best_k_models"] = {
                    os.path.join(self.dirpath, os.path.basename(k)): v
                    for k, v in state_dict["best_k_models"].items()}
        super().load_state_dict(state_dict)
