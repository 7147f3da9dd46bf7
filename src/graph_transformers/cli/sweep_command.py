"""The ``sweep`` command: a hyperparameter search over a config on Optuna
(:func:`~graph_transformers.training.sweep.run_sweep`): its arguments (:func:`add_sweep`) and its
handler (:func:`sweep`), which prints one summary line."""
from __future__ import annotations

import argparse
from pathlib import Path


def add_sweep(sub: argparse._SubParsersAction) -> None:
    """The ``sweep`` sub-command and its arguments.

    Args:
        sub: the parser's sub-commands.
    """
    s = sub.add_parser(
        "sweep", help="hyperparameter search over a config (Optuna; resumable)",
        description="Search the config keys of --space (float, int or categorical parameters "
                    "over dotted keys, as --set takes them) with Optuna: each trial trains an "
                    "ordinary run into OUT/trial_<NNNN>/, its objective is the best-checkpoint "
                    "validation metric (minimized for mae/rmse, else maximized), and unpromising "
                    "trials are pruned by their per-epoch validation metric (median rule). The "
                    "study is kept in OUT/study.db: the same command resumes a stopped sweep. "
                    "Writes OUT/trials.csv and OUT/best.yaml (the base config with the best "
                    "trial's values, for train --config). Needs the [sweep] extra; see "
                    "docs/sweep.md.",
        epilog="Examples:\n"
               "  graph-transformers sweep --config configs/zinc/gt.yaml --space space.yaml "
               "--trials 30 --out runs/zinc-sweep --data-dir DATA\n"
               "  graph-transformers train --config runs/zinc-sweep/best.yaml --seeds 4\n"
               "space.yaml:\n"
               "  optim.lr: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}\n"
               "  model.hidden_dim: {type: int, low: 32, high: 128, step: 32}\n"
               "  model.num_layers: {type: categorical, choices: [4, 6, 8]}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--config", type=Path, required=True, help="the base YAML config")
    s.add_argument("--space", type=Path, required=True, help="the search space (YAML)")
    s.add_argument("--trials", type=int, required=True,
                   help="finished trials wanted in the study (a resumed sweep counts the "
                        "earlier ones)")
    s.add_argument("--out", type=Path, required=True,
                   help="sweep folder: study.db, trial_<NNNN>/, trials.csv, best.yaml")
    s.add_argument("--seeds", type=int, default=1,
                   help="seeds per trial; the objective is their mean (default 1)")
    s.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="start no trial after this many seconds (default: no limit)")
    s.add_argument("--pruner", choices=("median", "none"), default="median",
                   help="stop unpromising trials by the median rule, or never (default median)")
    s.add_argument("--set", dest="overrides", nargs="+", action="extend", default=[],
                   metavar="KEY=VALUE", help="overrides of the base config (kept in best.yaml)")
    s.add_argument("--data-dir", help="raw data directory (else $GRAPH_TRANSFORMERS_DATA)")


def sweep(args: argparse.Namespace) -> int:
    """``sweep``: runs or resumes the sweep, then prints one summary line.

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).
    """
    from ..training.sweep import run_sweep
    result = run_sweep(args.config, args.space, args.out, args.trials, seeds=args.seeds,
                       timeout=args.timeout, overrides=args.overrides, data_dir=args.data_dir,
                       pruner=args.pruner)
    print(summary_line(result))
    return 0


def summary_line(result: dict) -> str:
    """``sweep <study>: N trials (a complete, b pruned, c failed); best trial k: val <metric> v
    (key=value, ...) -> <best.yaml>``.

    Args:
        result: what :func:`~graph_transformers.training.sweep.run_sweep` returns.

    Returns:
        str: the line.
    """
    states = result["states"]
    counts = ", ".join(f"{states.get(s, 0)} {word}" for s, word in
                       (("COMPLETE", "complete"), ("PRUNED", "pruned"), ("FAIL", "failed")))
    line = f"sweep {result['study']}: {sum(states.values())} trials ({counts})"
    best = result["best"]
    if best is None:
        return line + "; no trial has completed yet"
    values = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in best["params"].items())
    return (f"{line}; best trial {best['number']}: val {result['metric']} {best['value']:.4f} "
            f"({values}) -> {result['best_yaml']}")
