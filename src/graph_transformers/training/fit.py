"""Trains one run end to end (:func:`train`): the run directory (``config.yaml``, ``run.json``,
``epochs.csv``, ``checkpoints/``), the data and the model, Lightning's fit, then the evaluation at
the best-validation checkpoint (:func:`~.finish.finish_run`, ``metrics.json``)."""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import TQDMProgressBar
from lightning.pytorch.utilities.exceptions import SIGTERMException

from ..core.checks import validate_dataset
from ..data.progress import progress_enabled
from ..data.registry import DatasetSpec
from ..encodings.registry import float_encodings
from ..errors import RunError, RunInterrupted, RunTerminated
from ..models import count_parameters
from ..nn.fused import load_kernels
from . import targets
from .allocator import configure_for_training
from .binding import (check_same_data, data_fingerprint, new_run_id, read_run_id, stored_binding,
                      write_node_split, write_run_id)
from .build import check_param_budget, make_model, make_task
from .callbacks import (EpochLog, EpochSummary, RunCheckpoint, RunEarlyStopping, RunState,
                        SliceDeadline, StopAtMinLR, early_stopping)
from .checkpoint import AtomicCheckpointIO, load_checkpoint
from .config import Config, ConfigError, load_config, save_config
from .device import compile_model, step_compile_mode, trains_on_cpu
from .distributed import SeedPerRank, ddp_strategy, launch_is_rank_zero
from .finish import finish_run, sigterm_raises
from .loaders import make_loaders
from .loggers import finish_loggers, log_interval, make_loggers
from .module import GraphTaskModule
from .numerics import watch_in_debug_mode
from .rundir import check_resume_compatible, check_run_target, resume_checkpoint, run_lock
from .sections import PlateauConfig
from .splits import check_splits, collect_provenance, log_provenance, resolve_data

log = logging.getLogger(__name__)


def train(config: Config, out_dir: str | Path, resume: bool = False,
          dataset=None, allow_data_change: bool = False,
          init_from: str | Path | None = None,
          callbacks: list[L.Callback] | None = None) -> dict[str, Any]:
    """Trains one seed of ``config`` into ``out_dir`` and returns its ``metrics.json`` content.

    ``dataset``: a user's graphs (a list of ``torch_geometric.data.Data`` or a PyG dataset)
    instead of the dataset ``config.data`` names; the task is read off the graphs
    (:mod:`graph_transformers.datasets.user.graph_list`) and the saved config gets
    ``data.name: graph_list``.

    ``init_from``: a trained run's directory whose matching weights the new model starts from
    (fine-tuning, :mod:`~.finetune`; the task head is re-initialized when the task differs);
    recorded in ``init_from.json`` and ``metrics.json``. Ignored on ``resume``. ``callbacks``:
    Lightning callbacks added to the run's own (a sweep's pruning, :mod:`~.sweep`).

    The run holds an exclusive lock on ``out_dir`` throughout (:func:`~.rundir.run_lock`).
    With ``resume``, the checkpoint (``last.ckpt``, else the newest readable one) is read and
    the config checked against the one it was trained with *before* anything is written; once
    the data are loaded, their fingerprint is compared with the checkpoint's (:mod:`~.binding`;
    ``allow_data_change`` proceeds anyway and records it in ``metrics.json``).

    Returns:
        dict: the run's ``metrics.json`` (``{}`` on a DDP rank other than 0).

    Raises:
        RunError: when ``out_dir`` holds a run and ``resume`` is false, ``resume`` is set and
            there is nothing to resume or the config changes the model or data
            (:func:`~.rundir.check_resume_compatible`), the data differ from the checkpoint's
            (without ``allow_data_change``), or another run holds ``out_dir``.
        CheckpointError: no readable checkpoint to resume, or one cannot be written.
        TrainingError: the training loss became non-finite.
        RunTerminated: the process received SIGTERM (its message says how to resume);
            :class:`~graph_transformers.errors.RunInterrupted`, its subclass: Ctrl-C (SIGINT).
    """
    out = Path(out_dir)
    config = _for_dataset(config, dataset)
    threads = torch.get_num_threads()
    if config.trainer.threads is not None:
        torch.set_num_threads(config.trainer.threads)
    try:
        with run_lock(out):
            return _train_locked(config, out, resume, dataset, allow_data_change, init_from,
                                 callbacks or [])
    finally:
        torch.set_num_threads(threads)  # a Python caller keeps its own setting


def _train_locked(config: Config, out: Path, resume: bool, dataset=None,
                  allow_data_change: bool = False,
                  init_from: str | Path | None = None, extra: list | None = None
                  ) -> dict[str, Any]:
    """The body of :func:`train` under the run lock: the run directory, data and model,
    Lightning's fit, then the evaluation of the best checkpoint (:func:`~.finish.finish_run`)."""
    resume_from, stored = open_run_dir(config, out, resume)
    L.seed_everything(config.seed, workers=True, verbose=False)
    configure_for_training(config.trainer.accelerator)  # glibc setting: CPU on Linux only
    data = _load_data(config, out, dataset, resume_from, stored, allow_data_change)
    loaders = make_loaders(config, data.splits)
    module, num_params = _build_module(config, data, out, resume_from, stored, init_from)
    callbacks, best_ckpt, stop_rule = _callbacks(config, data.spec, out, loaders,
                                                 stored["run_id"], data.fingerprint)
    trainer, fit_time = _fit(config, module, loaders, callbacks + (extra or []), out,
                             resume_from)
    if not trainer.is_global_zero:
        return {}
    stopped_by = _stopped_by(config, trainer, callbacks, stop_rule)
    best = _best_checkpoint(out, best_ckpt)
    binding = {"run_id": stored["run_id"], "data_fingerprint": data.fingerprint,
               **({"data_changed": data.changed} if data.changed else {})}
    with sigterm_raises(f"during the final evaluation; training ended ({stopped_by}) and its "
                        "checkpoints are complete",
                        f"graph-transformers evaluate {out} --write writes metrics.json"):
        return finish_run(config, data.spec, module.model, data.splits, out, best,
                          epochs=trainer.current_epoch,
                          wall_time_s=callbacks[0].elapsed or fit_time,  # over all segments
                          num_params=num_params, provenance=data.provenance,
                          last_checkpoint=out / "checkpoints" / "last.ckpt",
                          stopped_by=stopped_by, binding=binding,
                          early_stopping=next((c.record() for c in callbacks
                                               if isinstance(c, RunEarlyStopping)), None))


@dataclass
class _RunData:
    """The data of a run being trained: spec, splits, their fingerprint (:mod:`~.binding`), the
    splits that differ from a resumed checkpoint's (``--allow-data-change``) and provenance."""

    spec: DatasetSpec
    splits: dict
    fingerprint: dict
    changed: list[str]
    provenance: dict


def _load_data(config: Config, out: Path, dataset, resume_from: Path | None,
               stored: dict[str, Any], allow_data_change: bool) -> _RunData:
    """Loads and checks the run's splits, compares them with a resumed checkpoint's, then writes
    the run files (a refused run writes nothing)."""
    spec, splits = resolve_data(config, dataset)
    check_splits(splits, config)
    fingerprint = data_fingerprint(splits)
    changed = check_same_data(stored.get("data"), fingerprint, f"checkpoint {resume_from}",
                              allow_data_change) if resume_from is not None else []
    if changed:
        log.warning("--allow-data-change: the %s split(s) differ from those the checkpoint was "
                    "trained on; recorded in metrics.json (data_changed)", ", ".join(changed))
    _write_run_files(config, out, stored["run_id"])
    if launch_is_rank_zero():  # a run on one graph's nodes keeps its split for predict
        write_node_split(out, splits, getattr(splits["train"], "node_ids", None))
    if not trains_on_cpu(config.trainer.accelerator):  # per batch, value checks run on CPU only
        for s, ds in splits.items():
            validate_dataset(ds, f"{spec.name} {s} split", encodings=float_encodings())
    provenance = collect_provenance(splits)
    log_provenance(spec.name, provenance)
    return _RunData(spec, splits, fingerprint, changed, provenance)


def _build_module(config: Config, data: _RunData, out: Path, resume_from: Path | None,
                  stored: dict[str, Any], init_from: str | Path | None
                  ) -> tuple[GraphTaskModule, int]:
    """The model (its weights from ``init_from`` when fine-tuning a new run), checked against
    the parameter budget, in its Lightning module; returns it with the parameter count."""
    model = make_model(config, data.spec, data.splits["train"])
    if resume_from is not None:  # the checkpoint decides whether its model standardized
        targets.match_weights(model, stored["target_scaling"])
    if init_from is not None and resume_from is None:
        from .finetune import init_from as load_init
        from .finetune import write_record
        write_record(out, load_init(model, init_from, config.to_dict(), data.fingerprint))
    elif init_from is not None:
        log.info("--resume: the weights come from %s; --init-from %s is not applied again",
                 resume_from.name, init_from)
    num_params = count_parameters(model)
    check_param_budget(num_params, config.param_budget)
    log.info("%s on %s: %d parameters; graphs train/val/test = %s", config.model.name,
             data.spec.name, num_params, {s: len(d) for s, d in data.splits.items()})
    task = make_task(config, data.spec, data.splits["train"], model)
    watch_in_debug_mode(model)
    step_mode = step_compile_mode(config.model.compile, config.trainer.accelerator)
    if step_mode is not None and trains_on_cpu(config.trainer.accelerator):
        load_kernels()  # the compiled graph takes the fused CPU kernels only if loaded before
    if config.model.compile is True:
        compile_model(model)
    return (GraphTaskModule(model, data.spec, config.optim, task=task, compile=step_mode),
            num_params)


def _stopped_by(config: Config, trainer: L.Trainer, callbacks: list[L.Callback],
                stop_rule: StopAtMinLR | None) -> str:
    """What ended training (``metrics.json``'s ``stopped_by``, :func:`~.finish.finish_run`)."""
    deadline = next((c for c in callbacks if isinstance(c, SliceDeadline)), None)
    if trainer.interrupted:
        return "interrupted"
    if stop_rule is not None and stop_rule.stopped:
        return "min_lr"
    if any(isinstance(c, RunEarlyStopping) and c.stopped_at for c in callbacks):
        return "early_stopping"
    if trainer.current_epoch >= config.trainer.max_epochs:
        return "max_epochs"
    if deadline is not None and deadline.stopped:
        return "slice"
    return "max_time"


def _best_checkpoint(out: Path, best_ckpt: RunCheckpoint) -> Path:
    """The best-validation checkpoint of the run (``last.ckpt`` when none was saved)."""
    last = out / "checkpoints" / "last.ckpt"
    best = Path(best_ckpt.best_model_path) if best_ckpt.best_model_path else last
    if not best.is_file() and (out / "checkpoints" / "best.ckpt").is_file():
        best = out / "checkpoints" / "best.ckpt"  # a run directory moved between segments
    return best


def _for_dataset(config: Config, dataset) -> Config:
    """``config`` with ``data.name: graph_list`` when it trains on in-memory graphs, so that the
    saved config says what the data was."""
    if dataset is None or config.data.name == "graph_list":
        return config
    if config.data.path is not None:
        raise ConfigError("give either dataset=... or data.path, not both")
    return config.model_copy(update={"data": config.data.model_copy(
        update={"name": "graph_list"})})


def open_run_dir(config: Config, out: Path, resume: bool) -> tuple[Path | None, dict[str, Any]]:
    """Checks ``out`` for the run (with ``resume``: the checkpoint to continue and that the
    config still fits it, :func:`~.rundir.check_resume_compatible`; without: that ``out`` holds
    no run); writes nothing (:func:`_write_run_files` does, after the data check).

    Args:
        config: the run's config.
        out: the run directory.
        resume: continue the run in ``out``.

    Returns:
        tuple: the checkpoint to resume from (or ``None``) and what binds the run
        (:func:`~.binding.stored_binding`: the checkpoint's data fingerprint, and the run id:
        ``run.json``'s, else the checkpoint's, else a new one).

    Raises:
        RunError: ``out`` holds a run and ``resume`` is false; a config that does not fit the
            resumed run (:func:`~.rundir.check_resume_compatible`).
        CheckpointError: ``resume`` and no readable checkpoint.
    """
    last = out / "checkpoints" / "last.ckpt"
    resume_from, stored = None, {"run_id": None, "data": None, "config": None}
    if resume:
        resume_from, state = resume_checkpoint(out)
        stored = stored_binding(state)
        stored["target_scaling"] = {k.removeprefix("model."): v for k, v in
                                    (state.get("state_dict") or {}).items()
                                    if k.removeprefix("model.") in targets.BUFFERS}
        saved = state.get("callbacks", {}).get("RunState", {}).get("config")
        source, stored_in = f"stored in {resume_from.name}", resume_from
        if saved is None and (out / "config.yaml").is_file():
            saved, source = load_config(out / "config.yaml").to_dict(), \
                str(out / "config.yaml")
            stored_in = out / "config.yaml"
        check_resume_compatible(saved, config.to_dict(), source, path=stored_in)
        done = int(state.get("epoch", -1)) + 1
        if config.trainer.max_epochs < done:
            raise RunError(f"--resume: {resume_from.name} has {done} epochs, more than "
                           f"trainer.max_epochs={config.trainer.max_epochs}; set "
                           f"trainer.max_epochs to at least {done} to continue (or evaluate the "
                           f"run as it is: graph-transformers evaluate {out})")
        del state
    elif last.exists() or (out / "metrics.json").exists():
        raise RunError(f"{out} already holds a run; pass --resume to continue it or choose "
                       "another --out")
    else:
        check_run_target(out)
    run_id = (read_run_id(out) if resume else None) or stored["run_id"] or new_run_id()
    return resume_from, {**stored, "run_id": run_id}


def _write_run_files(config: Config, out: Path, run_id: str) -> None:
    """Creates the run directory and writes ``config.yaml`` and ``run.json`` (rank 0), once every
    check of :func:`open_run_dir` and of the data has passed (a refused ``--resume`` changes
    nothing)."""
    out.mkdir(parents=True, exist_ok=True)
    if launch_is_rank_zero():  # run files come from rank 0 only
        save_config(config, out / "config.yaml")
        write_run_id(out, run_id)


def _monitor(spec: DatasetSpec, config: Config) -> tuple[str, str]:
    """What picks the best checkpoint: the validation metric, or the validation loss."""
    if config.protocol.select_by == "loss":
        return "val/loss", "min"
    return f"val/{spec.metric}", ("max" if spec.higher_is_better else "min")


def _callbacks(config: Config, spec: DatasetSpec, out: Path, loaders: dict,
               run_id: str | None = None, fingerprint: dict | None = None
               ) -> tuple[list[L.Callback], RunCheckpoint, StopAtMinLR | None]:
    """The run's Lightning callbacks (the first is the :class:`~.callbacks.EpochLog`), its
    best-validation checkpoint and its LR-floor stop rule (``None`` without one); ``run_id`` and
    the data ``fingerprint`` go into every checkpoint (:class:`~.callbacks.RunState`)."""
    ckpt_dir = out / "checkpoints"
    monitor, mode = _monitor(spec, config)
    best_ckpt = RunCheckpoint(dirpath=ckpt_dir, filename="best", monitor=monitor, mode=mode,
                              save_top_k=1, auto_insert_metric_name=False,
                              enable_version_counter=False)
    # last.ckpt after every epoch: Lightning's save_last only writes it on epochs where the
    # monitored checkpoint was saved, so --resume would restart from the last improvement
    last_ckpt = RunCheckpoint(dirpath=ckpt_dir, filename="last", monitor=None, save_top_k=1,
                              auto_insert_metric_name=False, enable_version_counter=False)
    samplers = [b for b in [getattr(loaders["train"], "batch_sampler", None)]
                if hasattr(b, "load_state_dict")]
    callbacks: list[L.Callback] = [EpochLog(out / "epochs.csv"),
                                   RunState(config.to_dict(), samplers, run_id, fingerprint),
                                   best_ckpt, last_ckpt, SeedPerRank(config.seed)]
    sched = config.optim.scheduler
    stop_rule = None
    if isinstance(sched, PlateauConfig) and sched.stop_at_min_lr:
        stop_rule = StopAtMinLR(sched.min_lr)
        callbacks.append(stop_rule)
    if config.trainer.early_stopping is not None:  # same default figure as the best checkpoint
        callbacks.append(early_stopping(config.trainer.early_stopping, spec.metric,
                                        (monitor, mode)))
    if config.trainer.slice_minutes is not None:
        callbacks.append(SliceDeadline(config.trainer.slice_minutes))
    # a progress bar on a terminal; one line per epoch when the output goes to a file
    if config.trainer.enable_progress_bar and progress_enabled(sys.stdout):
        callbacks.append(TQDMProgressBar(refresh_rate=max(1, len(loaders["train"]) // 20)))
    elif config.trainer.enable_progress_bar:
        callbacks.append(EpochSummary())
    return callbacks, best_ckpt, stop_rule


def _fit(config: Config, module: GraphTaskModule, loaders: dict, callbacks: list[L.Callback],
         out: Path, resume_from: Path | None) -> tuple[L.Trainer, float]:
    """Lightning's fit of ``module``; returns the trainer and the fit's wall time (s).

    Raises:
        RunTerminated: on SIGTERM, naming the last complete checkpoint and how to resume.
        RunInterrupted: the same on Ctrl-C (SIGINT).
    """
    # graph loaders deal batches to ranks themselves (make_loader); PyG's neighbour loader
    # leaves it to Lightning
    use_bar = any(isinstance(c, TQDMProgressBar) for c in callbacks)
    tkw = {"enable_model_summary": False,
           "use_distributed_sampler": config.data.num_neighbors is not None,
           **config.trainer.trainer_kwargs(), "enable_progress_bar": use_bar,
           "log_every_n_steps": log_interval(config.trainer.log_every_n_steps, loaders["train"])}
    if "strategy" in tkw:  # DDP with parameters a step leaves without gradient (GT's edges)
        tkw["strategy"] = ddp_strategy(tkw["strategy"], module, loaders["train"].dataset,
                                       config.data.batch_size)
    trainer = L.Trainer(default_root_dir=str(out), callbacks=callbacks,
                        logger=make_loggers(config.trainer.logger, out),
                        plugins=[AtomicCheckpointIO()], **tkw)
    start = time.perf_counter()
    try:
        trainer.fit(module, loaders["train"], loaders["val"],
                    ckpt_path=str(resume_from) if resume_from else None)
    except (SIGTERMException, SystemExit, KeyboardInterrupt) as err:
        # Lightning ends a Ctrl-C (KeyboardInterrupt) with sys.exit(1) after its teardown
        sigint = not isinstance(err, SIGTERMException)
        if isinstance(err, SystemExit) and not trainer.interrupted:
            raise
        last = out / "checkpoints" / "last.ckpt"
        where = f"{last} (epoch {_epoch_of(last)})" if last.is_file() else "no checkpoint yet"
        how = "interrupted by SIGINT (Ctrl-C)" if sigint else "terminated by SIGTERM"
        detail = (f"{how} during epoch {trainer.current_epoch + 1}; last complete checkpoint: "
                  f"{where}")
        error = RunInterrupted if sigint else RunTerminated
        raise error(f"{detail}; continue with the same command plus --resume --out {out}",
                    detail=detail) from None
    elapsed = time.perf_counter() - start
    finish_loggers(trainer.loggers)  # W&B: this run's files complete, the next run its own
    return trainer, elapsed


def _epoch_of(path: Path) -> int | str:
    """The 1-based epoch of a checkpoint, ``"?"`` when it cannot be read (for a message)."""
    try:
        return int(load_checkpoint(path).get("epoch", -1)) + 1
    except Exception:  # noqa: BLE001 - only for a message
        return "?"
