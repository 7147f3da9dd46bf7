"""Training curves of runs: ``curves.png`` beside each run's ``epochs.csv``, and the overlay and
table of ``graph-transformers compare``.

Plots need matplotlib (the ``[analysis]`` extra); without it :func:`write_curves` logs one line
and returns ``None``, so a run never fails for want of a plot.
"""
from __future__ import annotations

import csv
import logging
import math
import statistics
from pathlib import Path
from typing import Any

from .._optional import MissingDependencyError, require
from ..fileio import atomic_save
from .reproduction import UNFINISHED, find_runs, stopped_by
from .stats import format_mean_std, mean_std
from .tables import PERCENT_METRICS

log = logging.getLogger(__name__)


#: the text columns of an ``epochs.csv``, left out by :func:`read_epochs`
#: (:func:`~graph_transformers.training.callbacks.epoch_devices` reads ``device``)
TEXT_COLUMNS = frozenset({"device"})


def read_epochs(path: str | Path) -> list[dict[str, float]]:
    """Rows of an ``epochs.csv`` as floats (empty cells, e.g. a metric first logged later,
    become NaN), without the text columns (:data:`TEXT_COLUMNS`)."""
    with open(path, newline="") as f:
        return [{k: float(v) if v not in ("", None) else math.nan for k, v in row.items()
                 if k not in TEXT_COLUMNS}
                for row in csv.DictReader(f)]


def _pyplot():
    require("matplotlib", "plotting training curves")
    import matplotlib.figure  # object-oriented API: no global backend switch
    return matplotlib


def write_curves(run_dir: str | Path, metric: str) -> Path | None:
    """Writes ``run_dir/curves.png``: train/val loss, train/val ``metric`` and the learning
    rate (log scale) per epoch, from ``run_dir/epochs.csv``. Returns the path, or ``None`` when
    matplotlib is missing or the run has no epochs."""
    run = Path(run_dir)
    if not (run / "epochs.csv").is_file():
        return None
    rows = read_epochs(run / "epochs.csv")
    if not rows:
        return None
    try:
        _pyplot()
    except MissingDependencyError as err:
        log.info("no curves.png: %s", err)
        return None
    from matplotlib.figure import Figure
    epochs = [r["epoch"] for r in rows]
    fig = Figure(figsize=(13, 3.6), layout="constrained")
    axes = fig.subplots(1, 3)
    for ax, key, title in ((axes[0], "loss", "loss"), (axes[1], metric, metric)):
        for split, style in (("train", "-"), ("val", "--")):
            name = f"{split}/{key}"
            if name in rows[0] or any(name in r for r in rows):
                ax.plot(epochs, [r.get(name, math.nan) for r in rows], style, label=split)
        ax.set_xlabel("epoch")
        ax.set_title(title)
        ax.legend()
        ax.grid(alpha=0.3)
    axes[2].plot(epochs, [r["lr"] for r in rows])
    axes[2].set_yscale("log")
    axes[2].set_xlabel("epoch")
    axes[2].set_title("learning rate")
    axes[2].grid(alpha=0.3)
    fig.suptitle(run.name)
    out = run / "curves.png"
    atomic_save(out, lambda f: fig.savefig(f, dpi=90, format="png"))
    return out


def compare_runs(run_dirs: list[str | Path], labels: list[str] | None = None
                 ) -> list[dict[str, Any]]:
    """One row per run (seeds and folds of a run pooled): its label, config name, model, dataset,
    metric, test and val mean ± s.d. at the best-validation epoch, parameters, epochs, wall time,
    each seed's validation curve, and ``unfinished``: how many of its runs stopped before their
    schedule's end (a wall-clock slice, an interrupt; the table and the plot's legend say so).

    A run is labelled by ``labels`` (one per directory) or else by its directory's name, so two
    runs of one config (GT and GPS with the same ``name``, say) can be told apart; a directory
    holding several runs labels each ``<label>/<path below it>``.

    Raises:
        FileNotFoundError: when a directory holds no ``metrics.json``.
        ValueError: when ``labels`` does not give one label per directory.
    """
    if labels is not None and len(labels) != len(run_dirs):
        raise ValueError(f"--labels gives {len(labels)} label(s) for {len(run_dirs)} run "
                         "directories: give one per directory")
    rows = []
    for k, d in enumerate(run_dirs):
        groups = find_runs(d)
        if not groups:
            raise FileNotFoundError(f"{d}: no metrics.json (not a finished run)")
        base = labels[k] if labels is not None else Path(d).resolve().name
        for run, seeds in groups.items():
            below = Path(run).resolve().relative_to(Path(d).resolve())
            label = base if len(groups) == 1 or str(below) == "." else f"{base}/{below}"
            metric = seeds[0]["metric"]
            scale = 100.0 if metric in PERCENT_METRICS else 1.0

            def stat(split: str, seeds=seeds, metric=metric, scale=scale) -> dict[str, float]:
                mean, std = mean_std([float(m[split][metric]) * scale for m in seeds])
                return {"mean": mean, "std": std}

            curves = []
            for m in seeds:
                log_path = Path(m["_dir"]) / "epochs.csv"
                if log_path.is_file():
                    epochs = read_epochs(log_path)
                    curves.append([(r["epoch"], r.get(f"val/{metric}", math.nan) * scale)
                                   for r in epochs])
            rows.append({"label": label, "name": seeds[0].get("name") or Path(run).name,
                         "run": str(run),
                         "model": seeds[0]["model"], "dataset": seeds[0]["dataset"],
                         "metric": metric, "runs": len(seeds), "test": stat("test"),
                         "val": stat("val"), "num_params": seeds[0].get("num_params"),
                         "epochs": statistics.fmean(m["epochs"] for m in seeds),
                         "unfinished": sum(stopped_by(m) in UNFINISHED for m in seeds),
                         "wall_time_s": statistics.fmean(m.get("wall_time_s", 0.0)
                                                         for m in seeds),
                         "val_curves": curves})
    return rows


def compare_table(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`compare_runs` as a Markdown table."""
    lines = ["| run | config | model | dataset | metric | test ± s.d. | val ± s.d. | runs | "
             "#params | epochs | time |", "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        params = f"{r['num_params']:,}" if r["num_params"] is not None else "–"
        lines.append(
            f"| {r['label']} | {r['name']} | {r['model']} | {r['dataset']} | {r['metric']} | "
            f"{format_mean_std(r['test']['mean'], r['test']['std'], 4)} | "
            f"{format_mean_std(r['val']['mean'], r['val']['std'], 4)} | {r['runs']} | {params} | "
            f"{r['epochs']:.1f}{_unfinished(r)} | {r['wall_time_s'] / 60:.1f} min |")
    return "\n".join(lines) + "\n"


def _unfinished(row: dict[str, Any]) -> str:
    """`` (n unfinished)`` for a row with runs stopped before their schedule's end, else ``""``."""
    return f" ({row['unfinished']} unfinished)" if row.get("unfinished") else ""


def plot_compare(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Overlay of the validation curves of every run (one colour per run, one line per seed).

    Raises:
        MissingDependencyError: without matplotlib.
    """
    _pyplot()
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    colors = [f"C{i % 10}" for i in range(len(rows))]
    for color, r in zip(colors, rows):
        for i, curve in enumerate(r["val_curves"]):
            if curve:
                xs, ys = zip(*curve)
                ax.plot(xs, ys, color=color, alpha=0.85,
                        label=r["label"] + _unfinished(r) if i == 0 else None)
    metrics = sorted({r["metric"] for r in rows})
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation " + " / ".join(metrics))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_save(out, lambda f: fig.savefig(f, dpi=90, format="png"))
    return out
