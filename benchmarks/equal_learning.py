"""Same learning, eager and compiled (issue 56, item 6): a model trained on ZINC for a fixed
number of epochs with the ordinary PyG batches and eager steps, and with static-shape batches
(``data.static_shapes: true``) and the forward and loss compiled as one graph (``model.compile:
full``), a few seeds each, through the library's own ``graph-transformers train``.

For each model (``gt``: ``configs/zinc/gt.yaml``; ``gps``: ``configs/zinc/gps.yaml``, its cosine
schedule and 50 warm-up epochs of 2,000 compressed to ``--epochs``), seed and mode it trains
``<work>/<model>/<mode>/seed_<s>`` (a finished run, one with ``metrics.json``, is kept; an
interrupted one continues with ``--resume``), then compares the modes at the last epoch: test and
validation MAE per seed, mean ± s.d., and Welch's test (:func:`graph_transformers.training.stats.
parity_verdict`: "parity" unless p < 0.05). It writes ``equal_learning.{json,md,png}`` to
``--out`` (the validation curves of every run, eager solid, compiled dashed) and copies each
finished run's ``metrics.json``, ``epochs.csv`` and ``config.yaml`` to
``--results/<model>/<mode>/seed_<s>/`` (default ``benchmarks/results/equal_learning_runs``:
not under ``results/``, whose runs are read as reproduction rows).

The two modes do not see the same batches (packing to fixed budgets groups the graphs
otherwise), so they are compared as two seeds of one model are: within the seed spread.

    python benchmarks/equal_learning.py --data-dir ../shared/data --work ../runs/equal-learning
    python benchmarks/equal_learning.py --models gt --seeds 0 1 --epochs 40     # one model
    python benchmarks/equal_learning.py --report-only      # the reports from finished runs
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

try:
    import graph_transformers  # noqa: F401
except ImportError:  # a source checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from graph_transformers.fileio import atomic_write_text
from graph_transformers.training.curves import read_epochs
from graph_transformers.training.stats import mean_std, parity_verdict

REPO = Path(__file__).resolve().parents[1]
#: model → (config, overrides for a short budget)
MODELS = {
    "gt": ("configs/zinc/gt.yaml", {}),
    # warm-up 50 of 2,000 epochs, compressed as the budget (at least one epoch)
    "gps": ("configs/zinc/gps.yaml", {"optim.scheduler.warmup_epochs": "{warmup}"}),
}
#: the two modes compared: their config overrides
MODES = {"eager": {},
         "compiled": {"data.static_shapes": "true", "model.compile": "full"}}


def overrides(model: str, mode: str, seed: int, epochs: int) -> list[str]:
    """The ``--set`` arguments of one run."""
    warmup = max(1, round(50 * epochs / 2000))
    sets = {"seed": str(seed), "trainer.max_epochs": str(epochs),
            **{k: v.format(warmup=warmup) for k, v in MODELS[model][1].items()},
            **MODES[mode]}
    return [f"{k}={v}" for k, v in sets.items()]


def run_dir(work: Path, model: str, mode: str, seed: int) -> Path:
    return work / model / mode / f"seed_{seed}"


def finished_run(model: str, mode: str, seed: int, work: Path,
                 results: Path | None = None) -> Path | None:
    """The folder of a finished run (one with ``metrics.json``): the run directory under
    ``work`` or, where that is gone (a new machine: run folders outside the work tree do not
    carry over), its committed copy under ``results``; None if neither has it."""
    for root in (work, results):
        if root is not None and (run_dir(root, model, mode, seed) / "metrics.json").is_file():
            return run_dir(root, model, mode, seed)
    return None


def train(model: str, mode: str, seed: int, args: argparse.Namespace) -> Path:
    """Trains one run (or keeps a finished one); returns its directory."""
    out = run_dir(Path(args.work), model, mode, seed)
    done = finished_run(model, mode, seed, Path(args.work), Path(args.results))
    if done is not None:
        return done
    cmd = [sys.executable, "-m", "graph_transformers.cli", "train", "--config",
           str(REPO / MODELS[model][0]), "--out", str(out), "-q", "--set",
           *overrides(model, mode, seed, args.epochs)]
    if args.data_dir:
        cmd += ["--data-dir", args.data_dir]
    if (out / "checkpoints").is_dir():
        cmd.append("--resume")
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"equal_learning: {model} {mode} seed {seed}: {' '.join(cmd[3:])}", file=sys.stderr,
          flush=True)
    t0 = time.perf_counter()
    with open(out.parent / f"seed_{seed}.log", "a") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    print(f"equal_learning: {model} {mode} seed {seed}: {time.perf_counter() - t0:.0f} s",
          file=sys.stderr, flush=True)
    return out


def summarize(work: Path, models: list[str], seeds: list[int],
              results: Path | None = None) -> dict:
    """The comparison of the finished runs (module docstring), each read from ``work`` or from
    its copy under ``results`` (:func:`finished_run`)."""
    result: dict = {"models": {}}
    for model in models:
        entry: dict = {"config": MODELS[model][0], "modes": {}}
        for mode in MODES:
            runs = []
            for seed in seeds:
                d = finished_run(model, mode, seed, work, results)
                if d is None:
                    continue
                m = json.loads((d / "metrics.json").read_text())
                epochs = read_epochs(d / "epochs.csv")
                runs.append({"seed": seed, "epochs": m["epochs"],
                             "last_test_mae": m["last"]["test"]["mae"],
                             "last_val_mae": m["last"]["val"]["mae"],
                             "best_test_mae": m["test"]["mae"],
                             "epoch_time_s": m.get("epoch_time_s"),
                             "val_curve": [r["val/mae"] for r in epochs]})
            stats = {}
            for key in ("last_test_mae", "last_val_mae", "epoch_time_s"):
                values = [r[key] for r in runs if r[key] is not None]
                if values:
                    mean, std = mean_std(values)
                    stats[key] = {"mean": mean, "std": std}
            entry["modes"][mode] = {"runs": runs, **stats}
        eager, compiled = entry["modes"]["eager"]["runs"], entry["modes"]["compiled"]["runs"]
        if eager and compiled:
            for key in ("last_test_mae", "last_val_mae"):
                entry[f"verdict_{key}"] = parity_verdict([r[key] for r in compiled],
                                                         [r[key] for r in eager])
        result["models"][model] = entry
    return result


def markdown(result: dict) -> str:
    """The comparison as Markdown."""
    meta = result["meta"]
    lines = ["# Same learning: eager vs static shapes + compiled (ZINC)", "",
             f"{meta['epochs']} epochs per run, seeds {meta['seeds']}; eager: PyG batches, eager "
             "steps; compiled: `data.static_shapes: true`, `model.compile: full` "
             f"(inductor on the CPU). {meta['cpu']}, {meta['threads']} threads, torch "
             f"{meta['torch']}. Verdict: Welch's test of compiled against eager at the last "
             "epoch, parity unless p < 0.05.", "",
             "| model | mode | runs | test MAE (last) | val MAE (last) | epoch s | verdict test "
             "| p |", "|---|---|---:|---|---|---:|---|---:|"]
    for model, e in result["models"].items():
        for mode, m in e["modes"].items():
            if not m["runs"]:
                lines.append(f"| {model} | {mode} | 0 | – | – | – | | |")
                continue

            def fmt(key, m=m):
                s = m.get(key)
                if s is None:
                    return "–"
                return f"{s['mean']:.4f}" + (f" ± {s['std']:.4f}" if s["std"] else "")
            verdict = e.get("verdict_last_test_mae") if mode == "compiled" else None
            p = verdict["p_value"] if verdict else None
            epoch_s = f"{m['epoch_time_s']['mean']:.1f}" if "epoch_time_s" in m else "–"
            lines.append(f"| {model} | {mode} | {len(m['runs'])} | {fmt('last_test_mae')} "
                         f"| {fmt('last_val_mae')} | {epoch_s} "
                         f"| {verdict['label'] if verdict else ''} "
                         f"| {'' if p is None else f'{p:.2f}'} |")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    """The validation MAE curves of every run, one panel per model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = list(result["models"])
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4), squeeze=False)
    for ax, model in zip(axes[0], models):
        for mode, style in (("eager", "-"), ("compiled", "--")):
            for k, r in enumerate(result["models"][model]["modes"][mode]["runs"]):
                ax.plot(range(1, len(r["val_curve"]) + 1), r["val_curve"], style,
                        color=f"C{k}", label=f"{mode}, seed {r['seed']}")
        ax.set_title(f"{model} on ZINC")
        ax.set_xlabel("epoch")
        ax.set_ylabel("validation MAE")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def copy_runs(work: Path, results: Path, models: list[str], seeds: list[int]) -> None:
    """Each finished run's metrics, curves and resolved config (never checkpoints)."""
    for model in models:
        for mode in MODES:
            for seed in seeds:
                src = run_dir(work, model, mode, seed)
                if not (src / "metrics.json").is_file():
                    continue
                dst = results / model / mode / f"seed_{seed}"
                dst.mkdir(parents=True, exist_ok=True)
                for name in ("metrics.json", "epochs.csv", "config.yaml", "curves.png"):
                    if (src / name).is_file():
                        shutil.copy2(src / name, dst / name)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--work", default=str(REPO.parent / "runs" / "equal-learning"),
                   help="run directories (outside the work tree: checkpoints)")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    p.add_argument("--results",
                   default=str(REPO / "benchmarks" / "results" / "equal_learning_runs"),
                   help="where finished runs' metrics, curves and configs are copied")
    p.add_argument("--report-only", action="store_true", help="no training: report what ran")
    args = p.parse_args(argv)
    import torch

    from graph_transformers.training.device import cpu_name
    work = Path(args.work)
    if not args.report_only:
        for model in args.models:
            for seed in args.seeds:
                for mode in MODES:  # interleaved: a change of machine load hits both modes
                    train(model, mode, seed, args)
    result = summarize(work, args.models, args.seeds, Path(args.results))
    result["meta"] = {"epochs": args.epochs, "seeds": args.seeds, "cpu": cpu_name(),
                      "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "load": round(os.getloadavg()[0], 2), "date": time.strftime("%Y-%m-%d")}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "equal_learning.json", json.dumps(result, indent=1) + "\n")
    report = markdown(result)
    atomic_write_text(out / "equal_learning.md", report)
    plot(result, out / "equal_learning.png")
    copy_runs(work, Path(args.results), args.models, args.seeds)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
