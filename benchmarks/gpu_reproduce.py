"""Advance the paper-budget runs that this machine's CPU cannot finish, one wall-clock slice per
lent GPU (issue 24; the mechanism is ``graph-transformers slice``, see ``docs/gpu.md``).

Each run keeps its state under ``results/gpu_runs/<run>/`` (config, epoch log, metrics so far,
the resume and best-validation checkpoints). A call trains the first unfinished runs of
:data:`PRIORITY` (or ``--runs``) for ``--minutes`` each, writes their states back, and with
``--out`` also packs each state into ``<out>/<run>.tar`` (one file per run: the device machine
returns at most 8 files). Back on the development machine, ``--unpack DIR`` puts the states in
place, to be committed.

    # on the lent GPU (repository root; data carried in, see docs/gpu.md):
    python benchmarks/gpu_reproduce.py --minutes 8 --data-dir .gpu_data --out $OUT
    # here, with the files the device tool brought back:
    python benchmarks/gpu_reproduce.py --unpack /work/.device/<call>/files
    # a CPU smoke run of the slicing on a tiny config:
    python benchmarks/gpu_reproduce.py --runs csl-smoke --minutes 0.01 --state-root /tmp/gr
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tarfile
import time
from pathlib import Path

try:
    import graph_transformers  # noqa: F401
except ImportError:  # a source checkout without the package installed (the lent GPU)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from graph_transformers.training.config import build_config, load_yaml  # noqa: E402
from graph_transformers.training.slices import (FINISHED, LOCK_FILES, run_slice,  # noqa: E402
                                                 state_config)

REPO = Path(__file__).resolve().parents[1]
STATE_ROOT = REPO / "results" / "gpu_runs"

#: run name → config: the rows this CPU cannot run at the papers' budgets
RUNS = {
    "pattern-gt": "configs/pattern/gt.yaml",
    "zinc-egt-spe-do": "configs/zinc/egt_spe_do.yaml",
    "cluster-gt": "configs/cluster/gt.yaml",
    "pattern-egt": "configs/pattern/egt.yaml",
    "cluster-egt": "configs/cluster/egt.yaml",
    "mnist-egt-spe-do": "configs/superpixels/egt_mnist.yaml",
    "cifar10-egt-spe-do": "configs/superpixels/egt_cifar10.yaml",
    "zinc-gps": "configs/zinc/gps.yaml",
    "zinc-grpe-small": "configs/zinc/grpe_small.yaml",
    "zinc-grit": "configs/zinc/grit.yaml",
    # the CPU test of the slicing: GT on the embedded CSL, tiny, 3 epochs
    "csl-smoke": "src/graph_transformers/configs/csl_gt.yaml",
}
#: the order in which lent GPUs advance the runs (issue 24; GRIT's 2000 epochs after them, issue 29)
PRIORITY = ("pattern-gt", "zinc-egt-spe-do", "cluster-gt", "zinc-grit")
#: the smoke run's overrides: a model of a few thousand parameters, 3 epochs
SMOKE = ["trainer.enable_progress_bar=false", "model.num_layers=1", "model.hidden_dim=8",
         "model.num_heads=2", "data.batch_size=30", "trainer.max_epochs=3"]


def finished(state: Path) -> bool:
    """Whether the run in ``state`` has ended its schedule (and dropped its checkpoints)."""
    path = state / "metrics.json"
    return (path.is_file() and not (state / "last.ckpt").is_file()
            and json.loads(path.read_text()).get("stopped_by") in FINISHED)


def advance(run: str, minutes: float, state_root: Path, overrides: list[str]) -> dict:
    """One slice of ``run``; returns a one-line summary record."""
    state = state_root / run
    extra = list(overrides) + (SMOKE if run == "csl-smoke" else [])
    if (state / "config.yaml").is_file():
        config = state_config(state, overrides=extra)
    else:
        config = build_config(load_yaml(REPO / RUNS[run]), extra)
    start = time.perf_counter()
    metrics = run_slice(config, state, minutes)
    record = {"run": run, "state": str(state), "wall_s": round(time.perf_counter() - start, 1)}
    if metrics:
        record.update(epochs=metrics["epochs"], max_epochs=config.trainer.max_epochs,
                      stopped_by=metrics["stopped_by"], device=metrics["device"],
                      best_epoch=metrics["best_epoch"], metric=metrics["metric"],
                      test_at_best=metrics["test"][metrics["metric"]])
    return record


def pack(state: Path, out: Path) -> Path:
    """``state`` as ``out/<run>.tar`` (members ``<run>/<file>``; the state's lock files stay
    out)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{state.name}.tar"
    with tarfile.open(path, "w") as tar:
        for f in sorted(state.iterdir()):
            if f.is_file() and f.name not in LOCK_FILES:
                tar.add(f, arcname=f"{state.name}/{f.name}")
    return path


def unpack(folder: Path, state_root: Path) -> list[Path]:
    """Extracts every ``<run>.tar`` of ``folder`` into ``state_root/<run>/``, replacing the files
    it holds (and removing checkpoints a finished run no longer has).

    Raises:
        ValueError: a member outside ``<run>/`` or not a plain file.
    """
    done = []
    for path in sorted(folder.glob("*.tar")):
        run = path.stem
        with tarfile.open(path) as tar:
            members = tar.getmembers()
            for m in members:
                if not m.isfile() or Path(m.name).parent != Path(run) or m.name.startswith("/"):
                    raise ValueError(f"{path}: unexpected member {m.name!r}")
            target = state_root / run
            target.mkdir(parents=True, exist_ok=True)
            names = {Path(m.name).name for m in members}
            for stale in ("last.ckpt", "best.ckpt"):
                if stale not in names:
                    (target / stale).unlink(missing_ok=True)
            tar.extractall(state_root, members=members, filter="data")
        done.append(target)
    return done


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", nargs="+", choices=sorted(RUNS),
                   help="runs to advance, in order (default: the first unfinished of "
                        f"{', '.join(PRIORITY)})")
    p.add_argument("--minutes", type=float, default=8.0, help="training minutes per run slice")
    p.add_argument("--data-dir", help="raw data directory (else $GRAPH_TRANSFORMERS_DATA)")
    p.add_argument("--set", dest="overrides", nargs="+", default=[], metavar="KEY=VALUE",
                   help="config overrides (trainer.* only once a run has started)")
    p.add_argument("--state-root", type=Path, default=STATE_ROOT,
                   help="where the run states live (default results/gpu_runs)")
    p.add_argument("--out", type=Path, help="also pack each advanced state into OUT/<run>.tar")
    p.add_argument("--unpack", type=Path, metavar="DIR",
                   help="put the <run>.tar files of DIR in place under --state-root, and exit")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                                                   "%(message)s", datefmt="%H:%M:%S")
    if args.unpack is not None:
        for target in unpack(args.unpack, args.state_root):
            print(f"unpacked {target}")
        return 0
    overrides = list(args.overrides)
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    runs = args.runs or [r for r in PRIORITY if not finished(args.state_root / r)][:1]
    if not runs:
        print("every run of the priority list has finished")
        return 0
    records = []
    for run in runs:
        record = advance(run, args.minutes, args.state_root, overrides)
        records.append(record)
        if args.out is not None:
            pack(args.state_root / run, args.out)
        print(json.dumps(record), flush=True)
    if args.out is not None:
        (args.out / "gpu_reproduce.json").write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
