"""Sets of runs: several seeds of a config (:func:`train_seeds`) and cross-validation folds
(:func:`train_folds`; ``--folds K`` or ``--folds FILE``, :mod:`~.folds`), each run a
:func:`~.fit.train` in its own directory, and their ``summary.json``: mean ± s.d. over the runs
(:func:`summarize`)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import RunTerminated, RunUnfinished
from .config import Config
from .distributed import launch_is_rank_zero
from .finish import write_json
from .folds import plan_folds
from .fit import train
from .reproduction import UNFINISHED
from .rundir import check_run_target, run_lock
from .stats import mean_std


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean ± sample s.d. (``n − 1``; ``None`` for one run, :mod:`~.stats`) of every split metric
    over runs, and ``devices``: epochs per device over the runs (several when slices of a run
    trained on different machines, whose epoch times then mix).

    Args:
        runs: the runs' ``metrics.json`` contents.

    Returns:
        dict: the summary (``{}`` for no runs).
    """
    if not runs:
        return {}
    summary: dict[str, Any] = {"model": runs[0]["model"], "dataset": runs[0]["dataset"],
                               "metric": runs[0]["metric"], "num_params": runs[0]["num_params"],
                               "seeds": [r["seed"] for r in runs]}
    for split in ("train", "val", "test"):
        keys = runs[0].get(split, {}).keys()
        summary[split] = {k: dict(zip(("mean", "std"), mean_std([r[split][k] for r in runs])))
                          for k in keys}
    for k in ("epochs", "wall_time_s", "epoch_time_s"):
        summary[k] = dict(zip(("mean", "std"), mean_std([r[k] for r in runs])))
    devices: Counter[str] = Counter()
    for r in runs:
        devices.update(r.get("devices") or {})
    summary["devices"] = dict(devices)  # epochs per device over the seeds (times mix when several)
    return summary


def _train_member(config: Config, run_dir: Path, resume: bool, **kwargs) -> dict[str, Any]:
    """One run of a set (a seed, a fold): with ``resume``, a finished run's ``metrics.json`` is
    read back, an unfinished one continued from its ``last.ckpt`` and a missing one started;
    ``kwargs`` go to :func:`~.fit.train`.

    Raises:
        RunUnfinished: the run stopped before its schedule ended (``stopped_by`` in
            :data:`~.reproduction.UNFINISHED`), so the set cannot be summarized and the runs after
            it are not started.
        RunTerminated: SIGTERM (:class:`~graph_transformers.errors.RunInterrupted`: Ctrl-C); the
            message names the run and says to rerun the set's command.
    """
    done = run_dir / "metrics.json"
    if resume and done.is_file():
        previous = json.loads(done.read_text())
        if previous.get("stopped_by") not in UNFINISHED:
            return previous
    go_on = "the same command with --resume continues it and the runs after it"
    try:
        result = train(config, run_dir, resume=resume and (run_dir / "checkpoints" /
                                                            "last.ckpt").is_file(), **kwargs)
    except RunTerminated as err:  # its advice names this run's directory, not the set's command
        if err.detail is None:
            raise
        raise type(err)(f"{run_dir}: {err.detail}; {go_on}", detail=err.detail) from None
    if result.get("stopped_by") in UNFINISHED:
        raise RunUnfinished(f"{run_dir}: stopped by {result['stopped_by']} after epoch "
                            f"{result['epochs']} of {config.trainer.max_epochs}; {go_on}")
    return result


def train_seeds(config: Config, out_dir: str | Path, num_seeds: int = 1,
                resume: bool = False, dataset=None, allow_data_change: bool = False,
                init_from: str | Path | None = None) -> dict[str, Any]:
    """Runs ``num_seeds`` seeds (``config.seed``, ``config.seed + 1``, …). One seed trains into
    ``out_dir`` itself; several into ``out_dir/seed_<s>/`` plus ``summary.json``. With
    ``resume``, finished seeds are read back and unfinished ones continued or started
    (``allow_data_change``, ``init_from``: as :func:`~.fit.train`; every seed starts from the
    same trained weights).

    Returns:
        dict: one seed's ``metrics.json``, or the ``summary.json`` of several (``{}`` on a DDP
        rank other than 0).

    Raises:
        ValueError: when ``num_seeds`` < 1.
        RunUnfinished: several seeds, and one stopped before its schedule ended (its wall-clock
            slice ran out, or it was interrupted): the later seeds are not started and no
            ``summary.json`` is written (:func:`_train_member`).
    """
    if num_seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {num_seeds}")
    if num_seeds == 1:
        return train(config, out_dir, resume=resume, dataset=dataset,
                     allow_data_change=allow_data_change, init_from=init_from)
    with run_lock(out_dir):  # summary.json is the root's; each seed also locks its own dir
        return _train_seeds_locked(config, Path(out_dir), num_seeds, resume, dataset,
                                   allow_data_change, init_from)


def _train_seeds_locked(config: Config, out: Path, num_seeds: int, resume: bool,
                        dataset=None, allow_data_change: bool = False,
                        init_from: str | Path | None = None) -> dict[str, Any]:
    check_run_target(out, of_set=True)
    runs = []
    for i in range(num_seeds):
        cfg = config.model_copy(update={"seed": config.seed + i})
        runs.append(_train_member(cfg, out / f"seed_{cfg.seed}", resume, dataset=dataset,
                                  allow_data_change=allow_data_change, init_from=init_from))
    if not launch_is_rank_zero():  # DDP: the other ranks have no results to summarize
        return {}
    summary = summarize(runs)
    write_json(out / "summary.json", summary)
    return summary


def train_folds(config: Config, out_dir: str | Path, num_folds: int | str | Path,
                num_seeds: int = 1, resume: bool = False, dataset=None,
                allow_data_change: bool = False,
                init_from: str | Path | None = None) -> dict[str, Any]:
    """Cross-validation: ``num_seeds`` seeds of each fold, into ``out_dir/fold_<k>/`` (seeds as
    :func:`train_seeds`), and ``summary.json`` with mean ± s.d. over every (fold, seed) run, as
    the CSL and TU benchmarks report. ``num_folds``: ``K`` trains ``data.fold`` ``0..K-1``
    (refused where the split does not change with the fold); a folds file trains each of its
    folds as ``data.split: FILE``, ``data.fold: k`` (:func:`~.folds.plan_folds`).

    Returns:
        dict: the ``summary.json`` (with ``folds``, and ``folds_file`` for a file; ``{}`` on a
        DDP rank other than 0).

    Raises:
        ValueError: when ``num_folds`` < 1.
        ConfigError: ``--folds K`` on a fixed split, or a file that is no folds file
            (:func:`~.folds.plan_folds`).
        RunUnfinished: a run stopped before its schedule ended (as :func:`train_seeds`).
    """
    configs, about = plan_folds(config, num_folds, dataset)
    out = Path(out_dir)
    check_run_target(out, of_set=True)
    runs = []
    for k, cfg in enumerate(configs):
        fold_dir = out / f"fold_{k}"
        if num_seeds == 1:
            _train_member(cfg, fold_dir, resume, dataset=dataset,
                          allow_data_change=allow_data_change, init_from=init_from)
        else:
            train_seeds(cfg, fold_dir, num_seeds, resume=resume, dataset=dataset,
                        allow_data_change=allow_data_change, init_from=init_from)
        runs += [json.loads(p.read_text()) for p in sorted(fold_dir.rglob("metrics.json"))]
    if not launch_is_rank_zero():  # DDP: rank 0 writes the summary
        return {}
    summary = summarize(runs)
    summary.update(about)
    write_json(out / "summary.json", summary)
    return summary
