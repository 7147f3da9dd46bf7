"""Training callbacks: the per-epoch CSV log and the stop-at-minimum-LR rule."""
from __future__ import annotations

import csv
import logging
import os
import time
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import Checkpoint

log = logging.getLogger(__name__)


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


class EpochLog(Checkpoint):
    """Appends one row per epoch to ``path`` (CSV): epoch, lr, epoch time, cumulative training
    time (across ``--resume`` segments), and every ``train/`` and ``val/`` metric.

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
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()
                   if k.startswith(("train/", "val/"))}
        row = {"epoch": trainer.current_epoch + 1,
               "lr": trainer.optimizers[0].param_groups[0]["lr"],
               "epoch_time_s": round(epoch_time, 3), "elapsed_s": round(self.elapsed, 3)}
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
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.path)


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
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()
                   if k.startswith(("train/", "val/"))}
        parts = [f"{k} {metrics[k]:.4g}" for k in sorted(metrics)]
        lr = trainer.optimizers[0].param_groups[0]["lr"]
        max_epochs = trainer.max_epochs if trainer.max_epochs and trainer.max_epochs > 0 else "?"
        log.info("epoch %d/%s  lr %.3g  %.2f s  %s", trainer.current_epoch + 1, max_epochs, lr,
                 time.perf_counter() - self._start, "  ".join(parts))
