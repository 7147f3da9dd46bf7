"""The commands of the command line that read trained runs: ``evaluate``, ``predict``,
``compare``, ``table`` and ``analyze``, and ``check-device``; each handler takes the parsed
arguments and returns the exit status."""
from __future__ import annotations

import argparse
import json
import logging


def analyze(args: argparse.Namespace) -> int:
    """``analyze``: attention maps and attention by hop distance of a trained run, written to its
    ``analysis/`` (or ``--out``); prints the hop weights per layer.

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).
    """
    from ..analysis import analyze_run
    result = analyze_run(args.run_dir, args.out, split=args.split, num_graphs=args.num_graphs,
                         max_hops=args.max_hops, max_batches=args.max_batches,
                         data_dir=args.data_dir, checkpoint=args.checkpoint)
    out = args.out or args.run_dir / "analysis"
    print(f"attention analysis of {result['model']} on {result['dataset']} ({result['split']}) "
          f"written to {out}")
    for layer, row in result["hop_weights"].items():
        print(f"  {layer:>9}: " + " ".join(f"{v:.3f}" for v in row))
    return 0


def compare(args: argparse.Namespace) -> int:
    """``compare``: one table of the runs, their rows as JSON and an overlay of their validation
    curves (without the plot when the ``analysis`` extra is missing).

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).
    """
    from .._optional import MissingDependencyError
    from ..training.curves import compare_runs, compare_table, plot_compare
    from ..training.finish import write_json
    rows = compare_runs(args.run_dirs, args.labels)
    print(compare_table(rows))
    write_json(args.out.with_suffix(".json"), rows)
    try:
        print(f"validation curves: {plot_compare(rows, args.out)}")
    except MissingDependencyError as err:
        print(f"no plot: {err}")
    return 0


def table(args: argparse.Namespace) -> int:
    """``table``: the reproduction table of the runs under ``RESULTS_DIR`` (and, with
    ``--coverage``, the coverage table of the papers' cells).

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).

    Raises:
        FileNotFoundError: no results directory, or ``--coverage`` without the config directory.
    """
    from ..training.reproduction import markdown, write_table
    if not args.results_dir.is_dir():
        raise FileNotFoundError(f"no results directory {args.results_dir}")
    configs = args.configs if args.configs.is_dir() else None
    if configs is None:
        logging.getLogger("graph_transformers").warning(
            "no config directory %s: only runs whose own config has a reference are listed",
            args.configs)
    out = args.out or args.results_dir / "reproduction"
    rows = write_table(args.results_dir, configs, out, readme=args.readme)
    print(markdown(rows))
    print(f"{len(rows)} rows written to {out}.json and {out}.md")
    if args.coverage is not None:
        from ..training.coverage import write_coverage
        if configs is None:
            raise FileNotFoundError(f"--coverage needs the config directory {args.configs}")
        cells = write_coverage(args.results_dir, configs, args.coverage)
        print(f"coverage of {len(cells)} cells written to {args.coverage}")
    return 0


def evaluate(args: argparse.Namespace) -> int:
    """``evaluate``: a run's metrics from its checkpoint, printed as JSON (``--write``: its
    ``metrics.json`` from the best checkpoint, for a run stopped before it finished).

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).
    """
    from ..training.finish import finalize_interrupted
    from ..training.trained import evaluate_run
    if args.write:
        import contextlib

        from ..training.rundir import run_lock
        # never beside a live run writing the same files (and never create a mistyped dir)
        with run_lock(args.run_dir) if args.run_dir.is_dir() else contextlib.nullcontext():
            results = finalize_interrupted(args.run_dir)
        print(json.dumps({s: results[s] for s in ("epochs", "best_epoch", "train", "val", "test")},
                         indent=2))
        return 0
    results = evaluate_run(args.run_dir, data_dir=args.data_dir, checkpoint=args.checkpoint,
                           allow_data_change=args.allow_data_change)
    print(json.dumps(results, indent=2))
    return 0


def predict(args: argparse.Namespace) -> int:
    """``predict``: a trained run on the molecules or graphs of ``--data`` (a node-level run
    without it: the nodes of its graph), written to ``--out``.

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).

    Raises:
        ValueError: ``--data`` missing for a graph-level run, or given to a node-level one.
    """
    from ..prediction import load_run, read_inputs
    run = load_run(args.run_dir, checkpoint=args.checkpoint, data_dir=args.data_dir,
                   allow_data_change=args.allow_data_change)
    if args.data is None:
        if run.spec.level != "node":
            raise ValueError(f"predict: --data FILE is required for a {run.spec.level}-level run "
                             "(the molecules or graphs to predict); only a node-level run "
                             "predicts the nodes of its own graph without it")
        nodes = run.predict_nodes()
        nodes.to_csv(args.out)
        counts = {s: nodes.split.count(s) for s in ("train", "val", "test", "none")}
        print(f"{len(nodes)} nodes predicted ("
              + ", ".join(f"{n} {s}" for s, n in counts.items()) + f"): {args.out}")
        return 0
    if run.spec.level == "node":
        raise ValueError(f"predict: {args.run_dir} is a node-level run; leave out --data to "
                         "predict the nodes of its graph (new graphs go to graph-level runs)")
    smiles_column = args.smiles_column or run.config.data.smiles_column
    inputs = read_inputs(args.data, smiles_column)
    keep = None
    if args.data.name.lower().endswith((".csv", ".csv.gz")) and args.keep_columns != "none":
        from ..prediction import read_csv_columns
        names = None if args.keep_columns == "all" else \
            [c.strip() for c in args.keep_columns.split(",") if c.strip()]
        keep = read_csv_columns(args.data, names, exclude=[smiles_column])
    preds = run.predict(inputs, batch_size=args.batch_size)
    preds.to_csv(args.out, keep)
    n, bad = len(preds), preds.num_invalid
    print(f"{n - bad} of {n} inputs predicted, {bad} invalid (reason in the status column): "
          f"{args.out}")
    return 0


def check_device(args: argparse.Namespace) -> int:
    """``check-device``: the models on a GPU (:func:`graph_transformers.device_check.main`).

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (1 when a model is out of tolerance).
    """
    from ..device_check import main as check_main
    return check_main(args=args)
