"""Hyperparameter search (``graph-transformers sweep``, :func:`run_sweep`) on Optuna (Akiba et
al., "Optuna: A Next-generation Hyperparameter Optimization Framework", KDD 2019).

Each trial samples the search space (:mod:`.search_space`), applies the values to the base config
as ``--set`` overrides and trains an ordinary run (:func:`~.fit.train`) into
``OUT/trial_<NNNN>/``; its objective is the run's validation metric at the best-validation
checkpoint (``metrics.json``'s ``val[<metric>]``; the mean over ``seeds`` seeds), minimized for
``mae`` / ``rmse`` and maximized for the others. The validation metric of every epoch is reported
to the trial, and the pruner (``MedianPruner`` by default) stops an unpromising trial through
``optuna_integration.PyTorchLightningPruningCallback``.

The study lives in ``OUT/study.db`` (SQLite through Optuna's ``RDBStorage``), named after the
config, so that the same command resumes a stopped sweep: completed, pruned and failed trials are
kept, a trial that was running when the sweep was killed is marked failed and its parameters are
queued again. ``OUT/trials.csv`` (one row per trial) and ``OUT/best.yaml`` (the base config with
the best trial's values, for ``graph-transformers train --config``) are rewritten, atomically,
at the end; each trial folder holds ``trial.json`` (state, parameters, value, why it stopped).
"""
from __future__ import annotations

import contextlib
import csv
import json
import logging
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import yaml

from .._optional import require
from ..errors import ConfigError, RunError, RunTerminated, TrainingError
from ..fileio import atomic_write_text, atomic_writer, path_inside
from .config import Config, build_config
from .config_yaml import apply_overrides, deep_merge, load_yaml
from .finish import write_json
from .fit import train
from .rundir import run_lock
from .search_space import Parameter, check_space, load_space
from .search_space import overrides as as_overrides
from .sets import summarize
from .splits import run_spec

log = logging.getLogger(__name__)

DB_NAME = "study.db"
#: what fails one trial (marked FAIL with its error; the sweep goes on): a sampled combination the
#: config refuses, a training that cannot go on (a non-finite loss), a model too large for the
#: device
TRIAL_ERRORS = (ConfigError, TrainingError, torch.cuda.OutOfMemoryError)
#: keys of the base config a resumed sweep may change: where data are read from, threads,
#: progress output and loggers (anything else would mix trials of different configs)
MAY_CHANGE = ("data.data_dir", "data.cache_dir", "data.num_workers", "data.pin_memory",
              "trainer.threads", "trainer.enable_progress_bar", "trainer.logger", "reference")


def _optuna() -> Any:
    """Optuna and its Lightning pruning callback, or a one-line error naming the extra."""
    require("optuna_integration", "graph-transformers sweep")
    return require("optuna", "graph-transformers sweep")


def trial_dir(out: Path, number: int) -> Path:
    """``out/trial_<number, 4 digits>`` (checked to stay inside ``out``)."""
    return path_inside(out, f"trial_{number:04d}", what="trial folder")


def check_single_process(config: Config, where: str = "") -> None:
    """A sweep trains each trial in its own process, one device, no wall-clock slices.

    Raises:
        ConfigError: ``trainer.devices`` other than one device, ``trainer.num_nodes`` > 1, or
            ``trainer.slice_minutes`` set.
    """
    t = config.trainer
    if t.devices not in (1, "1") or t.num_nodes != 1 or t.slice_minutes is not None:
        raise ConfigError(f"{where}a sweep trains each trial in this process on one device: "
                          f"trainer.devices must be 1 and trainer.num_nodes 1, without "
                          f"trainer.slice_minutes (got devices={t.devices!r}, num_nodes="
                          f"{t.num_nodes}, slice_minutes={t.slice_minutes})")


def objective_of(config: Config) -> tuple[str, str]:
    """What a sweep of ``config`` optimizes: the dataset's metric (``data.metric`` where set)
    and Optuna's direction for it.

    Returns:
        tuple: the metric (``"accuracy"``, ``"mae"``, ...) and ``"minimize"`` (``mae``, ``rmse``)
        or ``"maximize"`` (the others).
    """
    spec = run_spec(config)
    return spec.metric, ("maximize" if spec.higher_is_better else "minimize")


def run_sweep(config: str | os.PathLike, space: str | os.PathLike, out_dir: str | os.PathLike,
              trials: int, seeds: int = 1, timeout: float | None = None,
              overrides: list[str] | tuple[str, ...] = (), data_dir: str | None = None,
              pruner: Any = "median", sampler: Any = None) -> dict[str, Any]:
    """Runs (or resumes) the sweep of ``config`` over ``space`` in ``out_dir`` until ``trials``
    trials have finished (completed, pruned, or failed by their own config or training; a trial
    the sweep was stopped in does not count), or ``timeout`` seconds have passed.

    Args:
        config: the base YAML config.
        space: the search-space YAML (:mod:`.search_space`).
        out_dir: the sweep folder (``study.db``, ``trial_<NNNN>/``, ``trials.csv``,
            ``best.yaml``); locked while the sweep runs.
        trials: finished trials wanted in the study (earlier segments' count).
        seeds: seeds per trial (``config.seed``, ``+1``, …; ``trial_<NNNN>/seed_<s>/``); the
            objective is their mean, pruning follows the first.
        timeout: no trial starts after this many seconds of this call (``None``: no limit).
        overrides: ``--set`` overrides of the base config (kept in ``best.yaml``).
        data_dir: the raw-data directory of the trials (not written into ``best.yaml``).
        pruner: ``"median"`` (``optuna.pruners.MedianPruner()``), ``"none"``, or an Optuna
            pruner.
        sampler: an Optuna sampler (default ``TPESampler`` seeded with ``config.seed`` plus the
            trials already in the study, so that a resumed sweep draws new points).

    Returns:
        dict: ``study``, ``metric``, ``direction``, ``states`` (trials per state), ``best``
        (``number``, ``value``, ``params``, ``run_dir``; ``None`` before a trial completed) and
        ``best_yaml`` (its path or ``None``).

    Raises:
        MissingDependencyError: Optuna is not installed (the ``[sweep]`` extra).
        ConfigError: a bad config, space (one line naming the file and key), a config that
            trains on several devices, ``trials`` or ``seeds`` below 1, ``timeout`` <= 0.
        RunError: ``out_dir`` is locked by another process, or holds another study or a
            different sweep (space, metric, seeds or base config), or trial folders without a
            ``study.db``.
        RunTerminated: SIGTERM or Ctrl-C during a trial; its parameters are queued again and the
            same call resumes the sweep.
    """
    optuna = _optuna()
    if trials < 1 or seeds < 1 or (timeout is not None and timeout <= 0):
        raise ConfigError(f"sweep: --trials and --seeds must be >= 1 and --timeout > 0 (got "
                          f"trials={trials}, seeds={seeds}, timeout={timeout})")
    raw = apply_overrides(load_yaml(config), list(overrides))
    base = build_config(raw, source=config)
    run_raw = raw if data_dir is None else deep_merge(raw, {"data": {"data_dir": str(data_dir)}})
    params = load_space(space)
    check_space(params, run_raw, str(space))
    check_single_process(base, f"{config}: ")
    metric, direction = objective_of(build_config(run_raw))
    name = base.name or Path(config).stem
    record = {"metric": metric, "direction": direction, "seeds": seeds,
              "space": {p.key: p.to_dict() for p in params},
              "config": json.loads(json.dumps(base.to_dict()))}
    out = Path(out_dir)
    with run_lock(out), _quiet(optuna):
        study = _open_study(optuna, out, name, record, pruner)
        study.sampler = sampler or optuna.samplers.TPESampler(seed=base.seed + len(study.trials))
        _requeue_stale(optuna, study, out)
        done = _finished(optuna, study)
        if study.trials:
            log.info("sweep %s in %s: %d of %d trials finished", name, out, done, trials)
        try:
            if trials > done:
                objective = _Objective(optuna, params, run_raw, out, metric, seeds)
                study.optimize(objective, n_trials=trials - done, timeout=timeout,
                               catch=TRIAL_ERRORS, callbacks=[_log_trial])
        except BaseException:  # trials.csv still tells where the sweep stopped
            with contextlib.suppress(Exception):
                write_outputs(optuna, study, params, raw, out, metric)
            raise
        return write_outputs(optuna, study, params, raw, out, metric)


def _open_study(optuna: Any, out: Path, name: str, record: dict, pruner: Any) -> Any:
    """The sweep's study in ``out/study.db``, created or loaded; a loaded one must be the same
    sweep (:data:`MAY_CHANGE`)."""
    db = out / DB_NAME
    if not db.is_file() and any(out.glob("trial_*")):
        raise RunError(f"{out} holds trial folders but no {DB_NAME}; choose another --out")
    storage = optuna.storages.RDBStorage(f"sqlite:///{db.resolve()}")
    others = [n for n in optuna.get_all_study_names(storage) if n != name]
    if others:
        raise RunError(f"{db} holds the study {others[0]!r}, not {name!r} (a sweep's study is "
                       "named after its config's name); choose another --out")
    if pruner in ("median", "none"):
        pruner = (optuna.pruners.MedianPruner() if pruner == "median"
                  else optuna.pruners.NopPruner())
    study = optuna.create_study(storage=storage, study_name=name, load_if_exists=True,
                                direction=record["direction"], pruner=pruner)
    if not study.user_attrs:  # a new study (or one killed before its record was written)
        for key, value in record.items():
            study.set_user_attr(key, value)
        return study
    stored = study.user_attrs
    for key in ("metric", "direction", "seeds", "space"):
        if stored.get(key) != record[key]:
            raise RunError(f"{db}: the sweep there has {key} {stored.get(key)!r}, this one "
                           f"{record[key]!r}; resume it with the same command or choose another "
                           "--out")
    diffs = _differences(stored.get("config", {}), record["config"])
    if diffs:
        raise RunError(f"{db}: the base config differs from the sweep's in {', '.join(diffs[:3])}"
                       f"; resume with the same config, or choose another --out")
    return study


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict) and d:
        return {k: v for key, val in d.items() for k, v in _flat(val, f"{prefix}{key}.").items()}
    return {prefix[:-1]: d}


def _differences(stored: dict, new: dict) -> list[str]:
    """``key: stored -> new`` for the flattened keys that differ, outside :data:`MAY_CHANGE`."""
    a, b = _flat(stored), _flat(new)
    return [f"{k}: {a.get(k, '<unset>')!r} -> {b.get(k, '<unset>')!r}" for k in sorted({*a, *b})
            if not any(k == p or k.startswith(p + ".") for p in MAY_CHANGE)
            and a.get(k, "<unset>") != b.get(k, "<unset>")]


def _requeue_stale(optuna: Any, study: Any, out: Path) -> None:
    """Marks the trials left running by a killed sweep as failed (the caller holds the sweep's
    lock, so no other process runs them), and queues again the parameters of every failed trial
    the sweep was stopped in (SIGKILL, SIGTERM, Ctrl-C; not one that failed by its own config or
    training) that has no retry yet."""
    state = optuna.trial.TrialState
    for t in study.get_trials(deepcopy=False, states=(state.RUNNING,)):
        study.tell(t.number, state=state.FAIL)
        where = trial_dir(out, t.number)
        if where.is_dir():
            write_json(where / "trial.json", {"number": t.number, "state": "FAIL",
                                              "params": t.params, "note": _STOPPED})
    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get("retry_of") for t in trials}
    for t in trials:
        if t.state == state.FAIL and "error" not in t.user_attrs and t.number not in retried \
                and t.params:  # (killed before its values were drawn: nothing to retry)
            study.enqueue_trial(t.params, user_attrs={"retry_of": t.number})
            log.warning("trial %d did not finish (the sweep stopped during it): its parameters "
                        "are queued again", t.number)


_STOPPED = "the sweep stopped during this trial; its parameters were queued again"


def _finished(optuna: Any, study: Any) -> int:
    """Trials that count towards ``--trials``: completed, pruned, or failed by their own config
    or training (``user_attrs['error']``); not those the sweep was stopped in."""
    state = optuna.trial.TrialState
    return sum(1 for t in study.get_trials(deepcopy=False)
               if t.state in (state.COMPLETE, state.PRUNED)
               or (t.state == state.FAIL and "error" in t.user_attrs))


class _Objective:
    """One trial: the sampled config, trained (seeds) into its folder, with pruning."""

    def __init__(self, optuna: Any, space: list[Parameter], raw: dict, out: Path, metric: str,
                 seeds: int) -> None:
        self.optuna, self.space, self.raw, self.out = optuna, space, raw, out
        self.metric, self.seeds = metric, seeds

    def __call__(self, trial: Any) -> float:
        values = {p.key: p.suggest(trial) for p in self.space}
        run_dir = trial_dir(self.out, trial.number)
        trial.set_user_attr("run_dir", run_dir.name)
        record = {"number": trial.number, "params": values, "metric": self.metric}
        try:
            config = build_config(self.raw, as_overrides(values))
            check_single_process(config)
            value = self._train(trial, config, run_dir)
        except self.optuna.TrialPruned:
            epochs = _reported(self.optuna, trial)
            last = max(epochs) if epochs else None
            note = (f"pruned after epoch {last}: val {self.metric} {epochs[last]:.6g}"
                    if last is not None else "pruned")
            trial.set_user_attr("note", note)
            write_json(run_dir / "trial.json", {**record, "state": "PRUNED", "note": note,
                                                "epochs": epochs})
            raise
        except TRIAL_ERRORS as err:
            message = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
            trial.set_user_attr("error", message)
            write_json(run_dir / "trial.json", {**record, "state": "FAIL", "note": message})
            raise
        except RunTerminated as err:  # SIGTERM / Ctrl-C: the next call retries these values
            trial.set_user_attr("note", _STOPPED)
            write_json(run_dir / "trial.json", {**record, "state": "FAIL", "note": _STOPPED})
            raise type(err)(f"{run_dir}: {err.detail or err}; the same sweep command resumes "
                            "the study and retries this trial's parameters",
                            detail=err.detail) from None
        write_json(run_dir / "trial.json", {**record, "state": "COMPLETE", "value": value,
                                            "epochs": _reported(self.optuna, trial)})
        return value

    def _train(self, trial: Any, config: Config, run_dir: Path) -> float:
        """The objective: the validation metric of the run(s) of ``config``."""
        from optuna_integration import PyTorchLightningPruningCallback
        runs = []
        for i in range(self.seeds):
            cfg = config.model_copy(update={"seed": config.seed + i})
            where = run_dir if self.seeds == 1 else run_dir / f"seed_{cfg.seed}"
            prune = [PyTorchLightningPruningCallback(trial, f"val/{self.metric}")] if i == 0 \
                else []
            runs.append(train(cfg, where, callbacks=prune))
        if runs[0].get("metric") != self.metric:
            raise ConfigError(f"trial {trial.number} reports {runs[0].get('metric')!r}, the "
                              f"sweep {self.metric!r}: the space must not change the metric")
        if self.seeds == 1:
            return float(runs[0]["val"][self.metric])
        summary = summarize(runs)
        write_json(run_dir / "summary.json", summary)
        return float(summary["val"][self.metric]["mean"])


def _reported(optuna: Any, trial: Any) -> dict[int, float]:
    """The validation values reported to a running trial, by 1-based epoch."""
    running = trial.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    frozen = next((t for t in running if t.number == trial.number), None)
    return {} if frozen is None else {s + 1: v for s, v in
                                      sorted(frozen.intermediate_values.items())}


@contextlib.contextmanager
def _quiet(optuna: Any) -> Iterator[None]:
    """Optuna's own log lines off while the sweep logs its own (:func:`_log_trial`)."""
    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(before)


def _log_trial(study: Any, frozen: Any) -> None:
    """One line per finished trial (an ``optimize`` callback)."""
    what = (f"value {frozen.value:.6g}" if frozen.value is not None else
            frozen.user_attrs.get("error") or frozen.user_attrs.get("note") or "")
    log.info("trial %d %s: %s (%s)", frozen.number, frozen.state.name, what,
             ", ".join(f"{k}={v}" for k, v in frozen.params.items()))


def write_outputs(optuna: Any, study: Any, space: list[Parameter], raw: dict, out: Path,
                  metric: str) -> dict[str, Any]:
    """Writes ``trials.csv`` and, once a trial has completed, ``best.yaml`` (atomically) and
    returns the sweep's summary (see :func:`run_sweep`).

    Raises:
        ConfigError: the best trial's config no longer validates (``best.yaml`` is not written).
    """
    trials = study.get_trials(deepcopy=False)
    _write_trials_csv(out / "trials.csv", trials, space)
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    summary = {"study": study.study_name, "metric": metric,
               "direction": study.direction.name.lower(),
               "states": dict(Counter(t.state.name for t in trials)), "best": None,
               "best_yaml": None}
    if not complete:
        return summary
    best = study.best_trial
    best_raw = apply_overrides(raw, as_overrides(best.params))
    best_raw["name"] = f"{study.study_name}-best"
    build_config(best_raw)  # loadable by train --config
    where = trial_dir(out, best.number)
    header = (f"# graph-transformers sweep: the best of {len(complete)} completed trials of study "
              f"{study.study_name!r} ({out / DB_NAME}):\n# trial {best.number} ({where}), val "
              f"{metric} {best.value:.6g}. Train it: graph-transformers train --config "
              f"{out / 'best.yaml'}\n")
    atomic_write_text(out / "best.yaml", header + yaml.safe_dump(best_raw, sort_keys=False))
    summary["best"] = {"number": best.number, "value": best.value, "params": best.params,
                       "run_dir": str(where)}
    summary["best_yaml"] = str(out / "best.yaml")
    return summary


def _write_trials_csv(path: Path, trials: list, space: list[Parameter]) -> None:
    """One row per trial: number, state, value, one column per parameter, run folder, duration
    and a note (the error, where it was pruned, a retry)."""
    keys = [p.key for p in space]
    retried = {t.user_attrs["retry_of"]: t.number for t in trials if "retry_of" in t.user_attrs}
    with atomic_writer(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["number", "state", "value", *keys, "run_dir", "duration_s", "note"])
        for t in trials:
            note = t.user_attrs.get("error") or t.user_attrs.get("note") or ""
            if t.number in retried:
                note = f"{note or _STOPPED}; retried as trial {retried[t.number]}"
            elif "retry_of" in t.user_attrs:
                note = f"retry of trial {t.user_attrs['retry_of']}"
            duration = t.duration.total_seconds() if t.duration is not None else ""
            w.writerow([t.number, t.state.name, "" if t.value is None else t.value,
                        *[_cell(t.params[k]) if k in t.params else "" for k in keys],
                        t.user_attrs.get("run_dir", ""), duration, note.replace("\n", " ")])


def _cell(value: Any) -> str:
    """A parameter value in ``trials.csv``: text as it is, other values as YAML reads them back
    (``true``, ``null``, numbers)."""
    return value if isinstance(value, str) else json.dumps(value)
