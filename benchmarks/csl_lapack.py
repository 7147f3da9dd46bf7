"""Does the CSL demo's test accuracy depend on the LAPACK build (issue 57, item 8)?

Every non-trivial eigenvalue of a CSL graph is repeated, so the LapPE vectors of ``basis: solver``
are whichever basis of each eigenspace the eigensolver returns: a LAPACK build (or thread count)
returning another basis gives other encodings, another training run and another accuracy. This
script trains the embedded demo config (``src/graph_transformers/configs/csl_gt.yaml``: GT + LapPE
k = 20) on ``--folds`` folds × ``--seeds`` seeds at each of ``--threads`` thread counts, under four
conditions:

* ``solver``: ``encodings.lap_pe.basis: solver`` (the plain encoding, as before the remedy);
* ``solver-rotated``: the same, the eigensolver's output rotated within each eigenspace by a fixed
  random orthogonal matrix (a simulated other LAPACK: as valid an output as the real one);
* ``canonical``: ``basis: canonical`` (the remedy, ``encodings.lappe.canonical_eigenbasis``);
* ``canonical-rotated``: the remedy under the simulated other LAPACK.

Each (condition, threads) runs in its own process with ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``trainer.threads`` set, so NumPy's LAPACK and
torch use that many threads, and its own dataset cache. Besides the test accuracy (the metric's
best epoch, as the demo prints it) of every run, the largest difference between the encodings of
the 150 graphs of each condition and those of ``solver`` / ``canonical`` at the first thread
count is recorded.
Results are deterministic for a fixed thread count, not across thread counts (torch's reductions):
the thread columns show what remains once the encoding is fixed.

Writes ``<out>.json`` and ``<out>.md`` (default ``benchmarks/results/csl_lapack``). Usage::

    PYTHONPATH=src python benchmarks/csl_lapack.py            # 5 folds × 2 seeds × 1, 2 threads
    PYTHONPATH=src python benchmarks/csl_lapack.py --folds 1 --seeds 1 --epochs 2 --threads 1 \\
        --out /tmp/csl_lapack_smoke                              # a check that it runs
    PYTHONPATH=src python benchmarks/csl_lapack.py --work ../runs/csl_lapack  # resumable

With ``--work``, each finished (condition, threads) stays in that folder and a second call with
the same options reads it instead of training it again.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
CONDITIONS = ("solver", "solver-rotated", "canonical", "canonical-rotated")
#: seed of the simulated other LAPACK's rotations (with each graph's Laplacian)
ROTATION_SEED = 57


def install_rotated_solver() -> None:
    """Replaces ``encodings.lappe.smallest_eigenpairs`` by the solver followed by a Haar-random
    orthogonal matrix (rotation or reflection) within each eigenspace, drawn from a seed made of
    ``ROTATION_SEED`` and the Laplacian's bytes: the same "other LAPACK" in every process."""
    import numpy as np

    import graph_transformers.encodings.lappe as lappe
    solve = lappe.smallest_eigenpairs

    def rotated(lap, count, tol=lappe.EIGSH_TOL):
        vals, vecs = solve(lap, count, tol)
        digest = hashlib.sha256(lap.indices.tobytes() + lap.data.tobytes()).digest()
        rng = np.random.default_rng([ROTATION_SEED, int.from_bytes(digest[:8], "little")])
        vecs = vecs.copy()
        for group in lappe.eigenvalue_groups(vals):
            q, r = np.linalg.qr(rng.standard_normal((group.size, group.size)))
            vecs[:, group] = vecs[:, group] @ (q * np.sign(np.diag(r)))
        return vals, vecs

    lappe.smallest_eigenpairs = rotated


def worker(condition: str, threads: int, folds: int, seeds: int, epochs: int | None,
           workdir: str) -> dict:
    """One (condition, threads): the encodings of the 150 generated CSL graphs (saved to
    ``workdir/encodings.npy``) and a training run per fold × seed. Returns the runs."""
    import numpy as np

    from graph_transformers import api
    from graph_transformers.datasets.synthetic.csl import generate_csl
    from graph_transformers.encodings.lappe import laplacian_pe
    from graph_transformers.training.config import load_config
    if condition.endswith("-rotated"):
        install_rotated_solver()
    basis = condition.split("-")[0]
    k = load_config(CONFIG).encodings.lap_pe.k
    pe = np.stack([laplacian_pe(g.edge_index, g.num_nodes, k, basis).numpy()
                   for g in generate_csl(0)])
    np.save(Path(workdir) / "encodings.npy", pe)
    runs = []
    for fold in range(folds):
        for seed in range(seeds):
            overrides = [f"data.fold={fold}", f"seed={seed}", f"encodings.lap_pe.basis={basis}",
                         f"trainer.threads={threads}", f"data.cache_dir={workdir}/cache",
                         "trainer.enable_progress_bar=false"]
            if epochs is not None:
                overrides.append(f"trainer.max_epochs={epochs}")
            t0 = time.perf_counter()
            m = api.train(CONFIG, out_dir=Path(workdir) / f"fold{fold}_seed{seed}",
                          overrides=overrides)
            runs.append({"fold": fold, "seed": seed, "test_accuracy": m["test"]["accuracy"],
                         "epochs": m["epochs"], "best_epoch": m["best_epoch"],
                         "epoch_time_s": m["epoch_time_s"], "device": m["device"],
                         "wall_s": round(time.perf_counter() - t0, 1)})
    return {"condition": condition, "threads": threads, "runs": runs}


def lapack_libraries() -> list[str]:
    """The BLAS / LAPACK libraries NumPy loaded (``threadpoolctl``), e.g. ``openblas 0.3.27``."""
    import numpy  # noqa: F401  (loads its BLAS)
    from threadpoolctl import threadpool_info
    return sorted({f"{i.get('internal_api')} {i.get('version')} ({Path(i['filepath']).name})"
                   for i in threadpool_info() if i.get("user_api") == "blas"})


def run_all(conditions, threads_list, folds, seeds, epochs, work: Path | None = None) -> dict:
    """Every (condition, threads) in a child process; the runs and encoding differences.

    ``work``: a folder kept after the run (default: a temporary one). A (condition, threads)
    whose ``result.json`` is already there, from the same folds, seeds and epochs, is read
    instead of trained again, so a killed run continues where it stopped.
    """
    import numpy as np
    results, encodings = [], {}
    with tempfile.TemporaryDirectory(prefix="csl_lapack_") as tmp:
        root = Path(work) if work is not None else Path(tmp)
        for threads in threads_list:
            for condition in conditions:
                workdir = root / f"{condition}-{threads}"
                spec = json.dumps([condition, threads, folds, seeds, epochs, str(workdir)])
                done = workdir / "result.json"
                if done.is_file() and json.loads(done.read_text()).get("spec") == spec:
                    print(f"{condition}, {threads} thread(s): done in {workdir}", flush=True)
                else:
                    workdir.mkdir(parents=True, exist_ok=True)
                    env = {**os.environ, "OMP_NUM_THREADS": str(threads),
                           "OPENBLAS_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
                           "PYTHONPATH": os.pathsep.join(filter(None, [
                               str(REPO / "src"), os.environ.get("PYTHONPATH")]))}
                    print(f"{condition}, {threads} thread(s) ...", flush=True)
                    subprocess.run([sys.executable, __file__, "--worker", spec], env=env,
                                   check=True)
                out = json.loads(done.read_text())
                out.pop("spec", None)
                out["lapack"] = json.loads((workdir / "lapack.json").read_text())
                results.append(out)
                encodings[(condition, threads)] = np.load(workdir / "encodings.npy")
    first = threads_list[0]
    diffs = []
    for (condition, threads), pe in encodings.items():
        row = {"condition": condition, "threads": threads}
        for ref in ("solver", "canonical"):
            if (ref, first) in encodings:
                row[f"vs_{ref}_{first}t"] = float(np.abs(pe - encodings[(ref, first)]).max())
        diffs.append(row)
    return {"results": results, "encoding_max_abs_diff": diffs}


def markdown(report: dict) -> str:
    """The report as a Markdown page."""
    lines = ["# CSL demo: test accuracy against the LAPACK basis (issue 57)", "",
             f"Config `{report['config']}`, {report['folds']} fold(s) × {report['seeds']} "
             f"seed(s), max epochs {report['epochs'] or 'as the config'}; BLAS/LAPACK: "
             f"{', '.join(report['lapack']) or 'unknown'}. `*-rotated`: the eigensolver's output "
             "rotated within each eigenspace by a fixed random orthogonal matrix (a simulated "
             "other LAPACK). Results are deterministic for a fixed thread count, not across "
             "thread counts.", "",
             "| condition | threads | test accuracy per fold/seed (%) | mean ± s.d. (%) |",
             "|---|---|---|---|"]
    for res in report["results"]:
        accs = [100 * r["test_accuracy"] for r in res["runs"]]
        sd = statistics.stdev(accs) if len(accs) > 1 else 0.0
        lines.append(f"| {res['condition']} | {res['threads']} | "
                     f"{', '.join(f'{a:.1f}' for a in accs)} | "
                     f"{statistics.mean(accs):.1f} ± {sd:.1f} |")
    keys = [k for k in report["encoding_max_abs_diff"][0] if k.startswith("vs_")]
    lines += ["", "Largest difference between the encodings of the 150 graphs (float32):", "",
              "| condition | threads | " + " | ".join(keys) + " |",
              "|---|---|" + "---|" * len(keys)]
    for row in report["encoding_max_abs_diff"]:
        lines.append(f"| {row['condition']} | {row['threads']} | "
                     + " | ".join(f"{row[k]:.2e}" for k in keys) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--epochs", type=int, default=None, help="default: the config's max_epochs")
    ap.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS))
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks/results/csl_lapack")
    ap.add_argument("--work", type=Path, default=None,
                    help="keep each condition's runs here and reuse finished ones (resume)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    from graph_transformers.fileio import atomic_write_text
    if args.worker:
        condition, threads, folds, seeds, epochs, workdir = json.loads(args.worker)
        out = worker(condition, threads, folds, seeds, epochs, workdir)
        atomic_write_text(Path(workdir) / "lapack.json", json.dumps(lapack_libraries()))
        # written last: its presence (with this spec) marks the condition as done
        atomic_write_text(Path(workdir) / "result.json",
                          json.dumps({**out, "spec": args.worker}))
        return
    t0 = time.perf_counter()
    report = {"config": str(CONFIG.relative_to(REPO)), "folds": args.folds, "seeds": args.seeds,
              "epochs": args.epochs, "threads": args.threads, "rotation_seed": ROTATION_SEED,
              **run_all(args.conditions, args.threads, args.folds, args.seeds, args.epochs,
                        args.work)}
    report["lapack"] = report["results"][0]["lapack"]
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out.with_suffix(".json"), json.dumps(report, indent=2) + "\n")
    atomic_write_text(args.out.with_suffix(".md"), markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
