"""The end of a run: every split evaluated at the best-validation checkpoint (and the last one)
and ``metrics.json`` written (:func:`finish_run`; for a run stopped before it finished,
:func:`finalize_interrupted`), non-finite figures refused (:func:`check_finite_metrics`), and
SIGTERM / Ctrl-C during the final evaluation turned into the run's errors
(:func:`sigterm_raises`)."""
from __future__ import annotations

import contextlib
import csv
import json
import logging
import math
from pathlib import Path
from typing import Any

import torch

from ..data.progress import progress
from ..data.registry import DatasetSpec
from ..errors import RunError, RunInterrupted, RunTerminated
from ..fileio import atomic_write_text
from ..models import count_parameters
from . import targets
from .build import make_model, make_task
from .callbacks import epoch_devices
from .checkpoint import load_model_weights
from .config import Config, load_config
from .curves import write_curves
from .device import device_name, eval_device
from .finetune import summary as finetune_summary
from .loaders import eval_loader
from .module import evaluate
from .predict_only import predict_only_splits
from .splits import collect_provenance, resolve_data, split_record
from .tasks import Task

log = logging.getLogger(__name__)


def write_json(path: str | Path, obj: Any) -> None:
    """Writes JSON atomically (indented, keys in their order).

    Args:
        path: the file.
        obj: what to write.

    Raises:
        OSError: the file cannot be written (nothing is left behind).
    """
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def _evaluate_checkpoint(config: Config, spec: DatasetSpec, model: torch.nn.Module,
                         splits: dict, checkpoint: Path, task: Task
                         ) -> tuple[int, dict[str, dict]]:
    """Loads ``checkpoint`` into ``model`` and evaluates every split: (1-based epoch, results);
    one INFO line, and on a terminal a progress bar per split
    (:func:`~graph_transformers.data.progress.progress`)."""
    state = load_model_weights(model, checkpoint)
    epoch = int(state.get("epoch", -1)) + 1
    device = eval_device(config.trainer.accelerator)  # where it trained (fit ends on the CPU)
    predict_only = predict_only_splits(splits)  # no labels: no metric ({})
    todo = [s for s in splits if s not in predict_only]
    log.info("final evaluation: %s (epoch %d) on %s (%s graphs)", checkpoint.name, epoch,
             ", ".join(todo), "/".join(str(len(splits[s])) for s in todo))
    return epoch, {s: {} if s in predict_only else
                   evaluate(model, spec, progress(eval_loader(config, ds, s),
                                                  f"evaluating {checkpoint.stem}, {s}",
                                                  unit="batch"), device=device, task=task)
                   for s, ds in splits.items()}


def check_finite_metrics(results: dict[str, dict[str, float]], where: str) -> None:
    """Refuses to report a non-finite figure: every metric of every split must be finite.

    Args:
        results: ``{split: {metric: value}}``.
        where: which checkpoint or command the results come from, for the message.

    Raises:
        TrainingError: naming the first non-finite metric and its split (exit status 1).
    """
    from ..errors import TrainingError
    for split, values in results.items():
        for name, value in values.items():
            if isinstance(value, (int, float)) and not math.isfinite(value):
                raise TrainingError(
                    f"{split} {name} is {value} {where}: not reported as a result; check the "
                    f"{split} split's labels (missing, or too large for float32) and the "
                    "model's outputs")


def finish_run(config: Config, spec: DatasetSpec, model: torch.nn.Module, splits: dict,
               out: Path, checkpoint: Path, epochs: int, wall_time_s: float, num_params: int,
               provenance: dict, last_checkpoint: Path | None = None,
               stopped_by: str = "interrupted", binding: dict | None = None,
               early_stopping: dict | None = None) -> dict[str, Any]:
    """Evaluates every split at ``checkpoint`` (the best-validation epoch) and writes
    ``metrics.json`` (``model``, ``dataset``, ``config``, ``num_params``, ``num_graphs``,
    ``epochs``, ``wall_time_s``, ``data_source``, ``split`` (the split's record,
    :func:`~.splits.split_record`) and per-split metric dicts; ``train``/``val``/``test`` are
    taken at that epoch).
    With ``last_checkpoint``, the splits are also evaluated at the final epoch under ``"last":
    {"epoch", "train", "val", "test"}``: the GT benchmark reports that one.
    ``stopped_by`` records what ended training: ``min_lr`` or ``max_epochs`` (the schedule ran to
    its end), ``early_stopping`` (``trainer.early_stopping``; its record, with the
    ``stopped_epoch``, is kept under ``early_stopping`` as given), ``max_time``, ``slice`` (a
    wall-clock slice ended, ``trainer.slice_minutes``) or ``interrupted`` (it did not).
    ``binding`` (``run_id``, ``data_fingerprint``, and ``data_changed`` when
    ``--allow-data-change`` was used) is recorded as given. A predict-only
    split (no labels by design, :mod:`~.predict_only`) gets ``{}`` and is named, with the
    reason, under ``predict_only``.

    Returns:
        dict: what ``metrics.json`` holds.

    Raises:
        TrainingError: a metric is NaN or infinite (:func:`check_finite_metrics`).
        CheckpointError: a checkpoint cannot be read or does not fit the model.
    """
    task = make_task(config, spec, splits["train"], model)  # counted once for both checkpoints
    last = None
    if last_checkpoint is not None and Path(last_checkpoint).is_file():
        last_epoch, last_results = _evaluate_checkpoint(config, spec, model, splits,
                                                        Path(last_checkpoint), task)
        check_finite_metrics(last_results, f"at the last epoch ({last_epoch})")
        last = {"epoch": last_epoch, **last_results}
    best_epoch, results = _evaluate_checkpoint(config, spec, model, splits, checkpoint, task)
    check_finite_metrics(results, f"at the best-validation epoch ({best_epoch})")
    metrics = {
        "model": config.model.name,
        "dataset": spec.name,
        "name": config.name,
        "config": config.to_dict(),
        "num_params": num_params,
        "num_graphs": {s: len(d) for s, d in splits.items()},
        "epochs": epochs,
        "best_epoch": best_epoch,
        "wall_time_s": round(wall_time_s, 2),
        "epoch_time_s": round(wall_time_s / max(epochs, 1), 3),
        "seed": config.seed,
        "stopped_by": stopped_by,
        "device": device_name(eval_device(config.trainer.accelerator)),
        # epochs per device from the epoch log: more than one when slices ran on other machines
        "devices": epoch_devices(out / "epochs.csv"),
        "provenance": provenance,
        # where the graphs came from (data.source): published files or generated, and why
        "data_source": getattr(next(iter(splits.values())), "data_source", None),
        # the split rule: the dataset's record (data.split and its files' sha256, TU folds)
        "split": split_record(splits, spec, config),
        "metric": spec.metric,
        "target_standardization": targets.record(model),
        "init_from": finetune_summary(out),
        **({"predict_only": po} if (po := predict_only_splits(splits)) else {}),
        **(binding or {}),
        **{s: r for s, r in results.items()},
    }
    if early_stopping is not None:
        metrics["early_stopping"] = early_stopping
    if last is not None:
        metrics["last"] = last
    write_json(out / "metrics.json", metrics)
    write_curves(out, spec.metric)
    log.info("best epoch %d: %s", best_epoch,
             ", ".join(f"{s} {spec.metric} {results[s][spec.metric]:.4f}" for s in results
                       if spec.metric in results[s]))
    return metrics


def finalize_interrupted(run_dir: str | Path, dataset=None) -> dict[str, Any]:
    """Writes ``metrics.json`` for a run that was stopped before it finished (killed, out of
    time), from its best checkpoint and its epoch log; ``--resume`` can still continue it later.

    Args:
        run_dir: the run directory.
        dataset: the in-memory graphs a ``graph_list`` run trained on, or ``None``.

    Returns:
        dict: what ``metrics.json`` holds (:func:`finish_run`).

    Raises:
        RunError: without a config, a checkpoint or an epoch log.
    """
    run = Path(run_dir)
    log_path = run / "epochs.csv"
    best = run / "checkpoints" / "best.ckpt"
    if not (run / "config.yaml").is_file() or not best.is_file() or not log_path.is_file():
        raise RunError(f"{run}: needs config.yaml, checkpoints/best.ckpt and epochs.csv")
    config = load_config(run / "config.yaml")
    spec, splits = resolve_data(config, dataset)
    with open(log_path) as f:
        rows = list(csv.DictReader(f))
    provenance = collect_provenance(splits)
    model = make_model(config, spec, splits["train"])
    return finish_run(config, spec, model, splits, run, best, epochs=len(rows),
                      wall_time_s=float(rows[-1]["elapsed_s"]) if rows else 0.0,
                      num_params=count_parameters(model), provenance=provenance,
                      last_checkpoint=run / "checkpoints" / "last.ckpt")


@contextlib.contextmanager
def sigterm_raises(where: str, advice: str):
    """While the block runs (outside Lightning's fit, which has its own handler; the final
    evaluation of :func:`~.fit.train`), SIGTERM raises
    :class:`~graph_transformers.errors.RunTerminated` (exit status 143) instead of ending the
    process silently, and Ctrl-C (``KeyboardInterrupt``) raises
    :class:`~graph_transformers.errors.RunInterrupted` (130).

    The SIGTERM is reported as such wherever it lands: an error that the block raises after it
    (e.g. a checkpoint loader's ``except RuntimeError`` that turned the exception into "truncated
    or corrupt") is replaced by ``RunTerminated``, and further SIGTERMs are ignored. Main thread
    only; elsewhere the block runs unchanged.

    Args:
        where: where the run was, for the message (``"during the final evaluation; ..."``); it
            is the errors' ``detail`` after ``"terminated by SIGTERM "``.
        advice: how to go on, appended to the message.

    Raises:
        RunTerminated: the process received SIGTERM in the block.
        RunInterrupted: the block was interrupted by Ctrl-C.
    """
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def terminated() -> RunTerminated:
        detail = f"terminated by SIGTERM {where}"
        return RunTerminated(f"{detail}; {advice}", detail=detail)

    def handler(signum, frame):
        if received:  # already on its way out
            return
        received.append(signum)
        raise terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except RunTerminated:
        raise
    except KeyboardInterrupt:
        if received:
            raise terminated() from None
        detail = f"interrupted by SIGINT (Ctrl-C) {where}"
        raise RunInterrupted(f"{detail}; {advice}", detail=detail) from None
    except BaseException:
        if received:  # the SIGTERM's exception, caught and re-raised as another on its way
            raise terminated() from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
