"""The ``graph-transformers`` command line (thin: parse, load config, call ``training``)."""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from .fileio import path_inside

DEFAULT_CONFIG = "csl_gt.yaml"

log = logging.getLogger("graph_transformers")


def _default_config_path() -> Path:
    return Path(str(resources.files("graph_transformers") / "configs" / DEFAULT_CONFIG))


_DATA_DIR_HELP = "raw data directory (else $GRAPH_TRANSFORMERS_DATA)"
_RUN_DATA_DIR_HELP = "raw data directory (else the run's or the environment's)"


def _parser() -> argparse.ArgumentParser:
    """The command line: global options, then one sub-parser per command."""
    p = argparse.ArgumentParser(
        prog="graph-transformers",
        description="Train and study transformer networks on graphs (GT, EGT, GRPE, GPS).",
        epilog="Examples:\n"
               "  graph-transformers train                      # the embedded CSL demo\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --data-dir DATA\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --set optim.lr=1e-3\n"
               "  graph-transformers benchmark --config configs/zinc/gt.yaml --seeds 4\n"
               "  graph-transformers evaluate runs/zinc-gt\n"
               "  graph-transformers predict runs/esol-gt --data molecules.csv --out preds.csv\n"
               "  graph-transformers analyze runs/zinc-egt-spe-do",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_train, _add_slice, _add_benchmark, _add_params, _add_evaluate,
                _add_predict, _add_compare, _add_table, _add_analyze, _add_check_device):
        add(sub)
    return p


#: each sub-command's help line, description and examples (``--help``)
_TEXTS: dict[str, dict[str, str]] = {
    "train": dict(
        help="train a model from a YAML config (default: GT on CSL, with and without PE)",
        description="Train a model. Without --config, runs the embedded default: a Graph "
                    "Transformer with Laplacian PE on CSL next to the same model without PE, and "
                    "prints both test accuracies.",
        epilog="Examples:\n"
               "  graph-transformers train                       # GT on CSL, with and without LapPE\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --data-dir ../shared/data\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --seeds 2 --set seed=41\n"
               "  graph-transformers train --config configs/csl/gt.yaml --folds 5 --seeds 2\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --out runs/zinc-gt --resume"),
    "slice": dict(
        help="train a run for a wall-clock slice and keep its state for the next machine",
        description="Continue (or start) the run kept in the state folder --state for --minutes "
                    "of training, stopping at an epoch boundary, then write config.yaml, "
                    "epochs.csv, metrics.json, curves.png and the resume and best checkpoints "
                    "back to --state. Later slices, on this machine or another, read the config "
                    "from the state; the checkpoints are removed once the schedule has ended. "
                    "For runs longer than one lent GPU or one session (docs/gpu.md).",
        epilog="Examples:\n"
               "  graph-transformers slice --config configs/pattern/gt.yaml "
               "--state results/gpu_runs/pattern-gt --minutes 8 --data-dir DATA\n"
               "  graph-transformers slice --state results/gpu_runs/pattern-gt --minutes 8"),
    "benchmark": dict(
        help="run configs over several seeds and write a results table",
        description="Train each config for --seeds seeds (resumable) and write table.md and "
                    "table.json in the papers' format: test ± s.d., train ± s.d., #params, "
                    "#epochs, epoch time / total.",
        epilog="Example:\n"
               "  graph-transformers benchmark --config configs/zinc/gt.yaml configs/zinc/gt_nope.yaml "
               "--seeds 4 --data-dir ../shared/data --out runs/zinc-table"),
    "params": dict(
        help="report model parameters of configs (and budget checks)",
        description="Build the model of each config and print its parameter count, and whether "
                    "it is within ±10% of param_budget.",
        epilog="Example:\n  graph-transformers params configs/zinc/*.yaml"),
    "evaluate": dict(
        help="re-compute a run's metrics from its best checkpoint",
        description="Re-compute train/val/test metrics of RUN_DIR from its best (or last) "
                    "checkpoint.",
        epilog="Examples:\n  graph-transformers evaluate runs/zinc-gt\n"
               "  graph-transformers evaluate runs/zinc-gt --checkpoint last\n"
               "  graph-transformers evaluate runs/zinc-gt --write   # metrics.json of a stopped run"),
    "predict": dict(
        help="predict new molecules (a SMILES CSV) or graphs with a trained run",
        description="Predict with the model of RUN_DIR: every SMILES of a CSV column is featurized "
                    "as the run's dataset was (molecular runs: MoleculeNet, ogbg-molhiv, molecule "
                    "CSVs, ZINC), or the graphs of a .pt file are taken as they are; the run's "
                    "encodings are computed, and one row per input is written to --out: index, "
                    "smiles, status ('ok' or why the input could not be used) and the predictions "
                    "(regression: one column per target; classification: class and prob_<k>; "
                    "binary tasks: the probability of each task). A node-level run on one graph "
                    "(data.name: node_table, a one-graph .pt file, cora) predicts the nodes of "
                    "its own graph without --data: one row per node with node_id, prediction, "
                    "p_<class> and split (train, val, test or none).",
        epilog="Examples:\n"
               "  graph-transformers predict runs/esol-gt --data molecules.csv --out preds.csv\n"
               "  graph-transformers predict runs/my-nodes --out nodes.csv   # a node_table run\n"
               "  graph-transformers predict runs/my-csv --data new.csv.gz --smiles-column SMILES\n"
               "  graph-transformers predict runs/csl-gt --data graphs.pt --checkpoint last\n"
               "  (graphs.pt: torch.save(list_of_Data, 'graphs.pt'), with the dataset's features)"),
    "compare": dict(
        help="compare runs: one table and an overlay of validation curves",
        description="Print one table of RUN_DIRs (test/val mean ± s.d. over seeds and folds, "
                    "parameters, epochs, time) and write an overlay plot of their validation "
                    "curves (needs the [analysis] extra).",
        epilog="Example:\n  graph-transformers compare runs/zinc-gt runs/zinc-gcn-100k "
               "--out zinc.png"),
    "table": dict(
        help="the reproduction table: committed runs against the papers' numbers",
        description="Read every run under RESULTS_DIR (metrics.json; seeds in seed_<s>/), match "
                    "it with the reference of its config (its own, else the config under "
                    "--configs with the same name) and write <--out>.json and <--out>.md with "
                    "paper value, our mean ± s.d., epochs, schedule, provenance and a verdict.",
        epilog="Example:\n  graph-transformers table results/ --readme README.md"),
    "analyze": dict(
        help="attention maps and attention-by-hop plots of a trained run",
        description="For a trained attention model (GT, EGT, GRPE, Graphormer, GPS with full "
                    "attention), write RUN_DIR/analysis/: attention_maps.png (head-averaged "
                    "attention per layer for sample graphs beside their adjacency and distance "
                    "matrices), hop_weights.png (attention weight per hop distance per layer, "
                    "averaged over a split) and attention.json (the numbers), as EGT §4.4.",
        epilog="Example:\n  graph-transformers analyze runs/zinc-egt-spe-do --split val --num-graphs 4"),
}


def _command(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    """The sub-command ``name`` with its :data:`_TEXTS`; ``--help`` keeps the line breaks of its
    examples (the epilog)."""
    return sub.add_parser(name, **_TEXTS[name],
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_overrides(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--set KEY=VALUE ...`` (repeatable), collected into ``args.overrides``."""
    parser.add_argument("--set", dest="overrides", nargs="+", action="extend", default=[],
                        metavar="KEY=VALUE", help=help)


def _add_checkpoint(parser: argparse.ArgumentParser) -> None:
    """``--checkpoint best|last``: the checkpoint of a run to read."""
    parser.add_argument("--checkpoint", choices=["best", "last"], default="best")


def _add_train(sub: argparse._SubParsersAction) -> None:
    """``train``: one config over seeds or folds, or the embedded CSL demo."""
    t = _command(sub, "train")
    t.add_argument("--config", type=Path, help="YAML config (see configs/)")
    _add_overrides(t, "override config keys, e.g. --set optim.lr=1e-3 trainer.max_epochs=10")
    t.add_argument("--data-dir", help=_DATA_DIR_HELP)
    t.add_argument("--out", type=Path, help="run directory (default: runs/<config name>)")
    t.add_argument("--resume", action="store_true",
                   help="continue the interrupted run in --out from its last checkpoint")
    t.add_argument("--allow-data-change", action="store_true",
                   help="with --resume: continue although the data differ from those the "
                        "checkpoint was trained on (recorded in metrics.json)")
    t.add_argument("--init-from", type=Path, metavar="RUN_DIR",
                   help="fine-tune: start from a trained run's weights (every tensor of "
                        "matching name and shape; the task head is re-initialized when the task "
                        "differs); what was loaded is logged and kept in init_from.json")
    t.add_argument("--seeds", type=int, default=1,
                   help="number of seeds; reports mean ± std over them (default 1)")
    t.add_argument("--folds", type=int, default=None,
                   help="cross-validation: train folds 0..FOLDS-1 (data.fold) × --seeds into "
                        "OUT/fold_<k>/ and report mean ± std over all of them (CSL: 5)")


def _add_slice(sub: argparse._SubParsersAction) -> None:
    """``slice``: one wall-clock slice of a run kept in a state folder."""
    s = _command(sub, "slice")
    s.add_argument("--state", type=Path, required=True,
                   help="state folder of the run (created by the first slice)")
    s.add_argument("--config", type=Path,
                   help="YAML config (the first slice; later ones read the state's)")
    _add_overrides(s, "override config keys (trainer.* only once the run has started)")
    s.add_argument("--data-dir", help=_DATA_DIR_HELP)
    s.add_argument("--minutes", type=float, default=8.0,
                   help="training time of the slice, in minutes (default 8); setup and the "
                        "final evaluation come on top")
    s.add_argument("--work", type=Path, default=None,
                   help="scratch run directory (default: a temporary one)")


def _add_benchmark(sub: argparse._SubParsersAction) -> None:
    """``benchmark``: several configs over seeds, written as a results table."""
    b = _command(sub, "benchmark")
    b.add_argument("--config", dest="configs", type=Path, nargs="+", action="extend",
                   required=True, help="one or more YAML configs")
    b.add_argument("--seeds", type=int, default=4, help="seeds per config (default 4)")
    b.add_argument("--folds", type=int, default=None,
                   help="cross-validation folds per config (data.fold 0..FOLDS-1; TU: 10, "
                        "CSL: 5); the table pools folds and seeds")
    _add_overrides(b, "overrides applied to every config")
    b.add_argument("--data-dir", help=_DATA_DIR_HELP)
    b.add_argument("--out", type=Path, default=Path("runs") / "benchmark",
                   help="output directory (default runs/benchmark)")
    b.add_argument("--resume", action="store_true", help="reuse finished seeds, continue others")


def _add_params(sub: argparse._SubParsersAction) -> None:
    """``params``: the parameter count of each config's model against its budget."""
    pp = _command(sub, "params")
    pp.add_argument("configs", type=Path, nargs="+")
    _add_overrides(pp)


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    """``evaluate``: a run's metrics again from its checkpoint."""
    e = _command(sub, "evaluate")
    e.add_argument("run_dir", type=Path)
    e.add_argument("--data-dir", help=_RUN_DATA_DIR_HELP)
    _add_checkpoint(e)
    e.add_argument("--allow-data-change", action="store_true",
                   help="evaluate although the data differ from those the checkpoint was "
                        "trained on")
    e.add_argument("--write", action="store_true",
                   help="write metrics.json from the best checkpoint (for a run that was "
                        "stopped before it finished; --resume can still continue it)")


def _add_predict(sub: argparse._SubParsersAction) -> None:
    """``predict``: a trained run on new molecules or graphs."""
    pr = _command(sub, "predict")
    pr.add_argument("run_dir", type=Path)
    pr.add_argument("--data", type=Path, default=None, metavar="FILE",
                    help="a CSV (.csv, .csv.gz) with a SMILES column, or a .pt file of graphs "
                         "(graph-level runs; leave it out for a node-level run on one graph)")
    pr.add_argument("--smiles-column", default=None,
                    help="SMILES column of a CSV (default: the run's data.smiles_column, smiles)")
    pr.add_argument("--keep-columns", default="all", metavar="COLS",
                    help="columns of an input CSV copied into the output, after index: all "
                         "(default: every column but the SMILES one), none, or a comma-separated "
                         "list such as id,name; a name that is also an output column gets the "
                         "prefix input_")
    pr.add_argument("--out", type=Path, default=Path("predictions.csv"),
                    help="output CSV, written atomically (default predictions.csv)")
    _add_checkpoint(pr)
    pr.add_argument("--batch-size", type=int, default=None,
                    help="graphs per forward pass (default: the run's evaluation batch size)")
    pr.add_argument("--data-dir", help="raw data directory (only tu:<NAME> runs need it)")
    pr.add_argument("--allow-data-change", action="store_true",
                    help="a node-level run: predict even though its data differ from those the "
                         "checkpoint was trained on (each node keeps the split it trained with)")


def _add_compare(sub: argparse._SubParsersAction) -> None:
    """``compare``: runs side by side, with their validation curves."""
    cp = _command(sub, "compare")
    cp.add_argument("run_dirs", type=Path, nargs="+")
    cp.add_argument("--labels", nargs="+", default=None,
                    help="one label per run directory (default: the directories' names)")
    cp.add_argument("--out", type=Path, default=Path("compare.png"),
                    help="overlay plot (default compare.png; a .json with the rows beside it)")


def _add_table(sub: argparse._SubParsersAction) -> None:
    """``table``: the reproduction table of the committed runs."""
    tb = _command(sub, "table")
    tb.add_argument("results_dir", type=Path)
    tb.add_argument("--configs", type=Path, default=Path("configs"),
                    help="config directory holding the references (default configs/)")
    tb.add_argument("--out", type=Path, default=None,
                    help="output stem (default RESULTS_DIR/reproduction)")
    tb.add_argument("--readme", type=Path, default=None,
                    help="also rewrite the reproduction section of this README")
    tb.add_argument("--coverage", type=Path, default=None, metavar="DOC",
                    help="also rewrite the coverage table of the seed papers' cells in DOC "
                         "(docs/reproduction.md)")


def _add_analyze(sub: argparse._SubParsersAction) -> None:
    """``analyze``: attention maps and attention by hop distance of a trained run."""
    a = _command(sub, "analyze")
    a.add_argument("run_dir", type=Path)
    a.add_argument("--split", default="val", help="split to analyze (default val)")
    a.add_argument("--num-graphs", type=int, default=4, help="sample graphs to draw (default 4)")
    a.add_argument("--max-hops", type=int, default=8,
                   help="hop distances shown; farther pairs are pooled (default 8)")
    a.add_argument("--max-batches", type=int, default=None,
                   help="average over at most this many batches (default: the whole split)")
    a.add_argument("--out", type=Path, help="output directory (default RUN_DIR/analysis)")
    a.add_argument("--data-dir", help=_RUN_DATA_DIR_HELP)
    _add_checkpoint(a)


def _add_check_device(sub: argparse._SubParsersAction) -> None:
    """``check-device``: the models on a GPU (its options: :func:`.device_check.add_arguments`)."""
    from .device_check import add_arguments
    c = sub.add_parser(
        "check-device", help="check the models on a GPU: CPU parity, bf16, SDPA kernels, speed",
        description="For GT, GT with edges, EGT, GRPE, Graphormer, GPS and GatedGCN on a fixed "
                    "ZINC batch: forward+backward parity CPU vs device (float32, float64), bf16 "
                    "loss against float32, the SDPA kernel that ran, graphs/s and peak memory in "
                    "fp32 and bf16, one-epoch training time. Writes gpu_check.json/.md to --out "
                    "(see docs/gpu.md). Exit status 1 when a model is out of tolerance.")
    add_arguments(c)


def _analyze(args: argparse.Namespace) -> int:
    from .analysis import analyze_run
    result = analyze_run(args.run_dir, args.out, split=args.split, num_graphs=args.num_graphs,
                         max_hops=args.max_hops, max_batches=args.max_batches,
                         data_dir=args.data_dir, checkpoint=args.checkpoint)
    out = args.out or args.run_dir / "analysis"
    print(f"attention analysis of {result['model']} on {result['dataset']} ({result['split']}) "
          f"written to {out}")
    for layer, row in result["hop_weights"].items():
        print(f"  {layer:>9}: " + " ".join(f"{v:.3f}" for v in row))
    return 0


def _train(args: argparse.Namespace) -> int:
    from .training.config import load_config
    from .training.runner import train_folds, train_seeds

    overrides = list(args.overrides)
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    if args.config is None:
        return _train_default(args, overrides)
    config = load_config(args.config, overrides)
    out = args.out or path_inside("runs", _default_run_name(args.config, config),
                                  what="run name (the config's name)")
    allow = args.allow_data_change
    if args.folds is not None:
        result = train_folds(config, out, args.folds, args.seeds, resume=args.resume,
                             allow_data_change=allow, init_from=args.init_from)
    else:
        result = train_seeds(config, out, args.seeds, resume=args.resume, allow_data_change=allow,
                             init_from=args.init_from)
    _print_result(result, out)
    return 0


def _slice(args: argparse.Namespace) -> int:
    from .training.config import load_config
    from .training.slices import run_slice, state_config

    overrides = list(args.overrides)
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    config = (load_config(args.config, overrides) if args.config is not None
              else state_config(args.state, overrides=overrides))
    result = run_slice(config, args.state, args.minutes, args.work)
    if not result:
        print(f"{args.state}: the run has already finished")
        return 0
    total = config.trainer.max_epochs
    print(f"{args.state}: {result['epochs']} of at most {total} epochs, stopped by "
          f"{result['stopped_by']}; test {result['metric']} at the best validation epoch "
          f"({result['best_epoch']}): {result['test'][result['metric']]:.4f}")
    return 0


def _default_run_name(path: Path, config) -> str:
    """The run directory name under ``runs/``: the config's name, or, when ``--set`` points the
    config at another dataset or model (``data.name=tu:PROTEINS``), ``<dataset>-<model>``, so
    that a second such run is not refused as the first one's directory."""
    import re

    from .training.config import load_yaml
    raw = load_yaml(path)
    same = ((raw.get("data") or {}).get("name", config.data.name) == config.data.name and
            (raw.get("model") or {}).get("name", config.model.name) == config.model.name)
    if same:
        return config.name or path.stem
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{config.data.name}-{config.model.name}").strip("-")


def _train_default(args: argparse.Namespace, overrides: list[str]) -> int:
    """GT with LapPE vs. without PE on CSL: the demonstration that PE matters."""
    from .training.config import build_config, load_yaml
    from .training.runner import train_folds, train_seeds

    raw = load_yaml(_default_config_path())
    base = args.out or Path("runs") / "csl-default"
    rows = []
    for label, extra in (("GT + LapPE", []),
                         ("GT, no PE", ["model.pe=null", "encodings.lap_pe=null",
                                        "name=csl-gt-nope"])):
        config = build_config(raw, overrides + extra)
        out = base / ("gt-lappe" if not extra else "gt-nope")
        print(f"\n== {label}: training on CSL (fold {config.data.fold}) into {out}", flush=True)
        if args.folds is not None:
            result = train_folds(config, out, args.folds, args.seeds, resume=args.resume)
        else:
            result = train_seeds(config, out, args.seeds, resume=args.resume)
        rows.append((label, result))
    print("\nCSL test accuracy (graph classification, 10 classes; chance = 10%)")
    for label, r in rows:
        print(f"  {label:<12} {_fmt(r, 'test', 'accuracy', pct=True)}")
    return 0


def _fmt(result: dict, split: str, metric: str, pct: bool = False) -> str:
    v = result.get(split, {}).get(metric)
    if v is None:
        return "n/a"
    scale = 100.0 if pct else 1.0
    if isinstance(v, dict):
        from .training.stats import format_mean_std
        return format_mean_std(v["mean"], v["std"], 3, scale) + ("%" if pct else "")
    return f"{v * scale:.3f}" + ("%" if pct else "")


def _print_result(result: dict, out: Path) -> None:
    if not result:
        return
    metric = result["metric"]
    pct = metric in ("accuracy", "weighted_accuracy")
    print(f"\n{result['model']} on {result['dataset']} ({out}):")
    for split in ("train", "val", "test"):
        print(f"  {split:<5} {metric}: {_fmt(result, split, metric, pct)}")


def _benchmark(args: argparse.Namespace) -> int:
    from .training.config import load_config
    from .training.runner import summarize, train_folds, train_seeds, write_json
    from .errors import RunError
    from .training.tables import markdown_table, merge_rows, table_row

    overrides = list(args.overrides)
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    rows = []
    for path in args.configs:
        config = load_config(path, overrides)
        name = config.name or path.stem
        run_dir = path_inside(args.out, name, what=f"run name of {path}")
        if args.folds is not None:
            result = train_folds(config, run_dir, args.folds, args.seeds, resume=args.resume)
        else:
            result = train_seeds(config, run_dir, args.seeds, resume=args.resume)
        if not result:  # a non-zero DDP rank
            return 0
        summary = result if (args.seeds > 1 or args.folds is not None) else summarize([result])
        rows.append(table_row(name, summary))
    # another benchmark into the same --out adds its rows: the table keeps the other configs'
    previous = args.out / "table.json"
    if previous.is_file():
        try:
            rows = merge_rows(json.loads(previous.read_text()), rows)
        except (ValueError, TypeError, AttributeError) as err:
            raise RunError(f"{previous}: not a benchmark table ({err}); move it away to "
                           "write a new one") from None
    text = markdown_table(rows)
    from .training.config import atomic_write_text
    atomic_write_text(args.out / "table.md", text)
    write_json(args.out / "table.json", rows)
    print("\n" + text)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ._optional import MissingDependencyError
    from .training.curves import compare_runs, compare_table, plot_compare
    from .training.runner import write_json
    rows = compare_runs(args.run_dirs, args.labels)
    print(compare_table(rows))
    write_json(args.out.with_suffix(".json"), rows)
    try:
        print(f"validation curves: {plot_compare(rows, args.out)}")
    except MissingDependencyError as err:
        print(f"no plot: {err}")
    return 0


def _table(args: argparse.Namespace) -> int:
    from .training.reproduction import markdown, write_table
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
        from .training.coverage import write_coverage
        if configs is None:
            raise FileNotFoundError(f"--coverage needs the config directory {args.configs}")
        cells = write_coverage(args.results_dir, configs, args.coverage)
        print(f"coverage of {len(cells)} cells written to {args.coverage}")
    return 0


def _params(args: argparse.Namespace) -> int:
    from .data.registry import resolve_spec
    from .models import count_parameters
    from .training.config import ConfigError, load_config
    from .training.runner import check_param_budget, make_model

    status = 0
    for path in args.configs:
        config = load_config(path, args.overrides)
        n = count_parameters(make_model(config, resolve_spec(config.data)))
        budget = config.param_budget
        try:
            check_param_budget(n, budget)
            verdict = "" if budget is None else f"  within {budget:,} ± 10%"
        except ConfigError:
            verdict, status = f"  OUTSIDE {budget:,} ± 10%", 1
        print(f"{str(path):<45} {config.model.name:<6} {n:>10,}{verdict}")
    return status


def _evaluate(args: argparse.Namespace) -> int:
    from .training.runner import evaluate_run, finalize_interrupted
    if args.write:
        import contextlib

        from .training.rundir import run_lock
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


def _predict(args: argparse.Namespace) -> int:
    from .prediction import load_run, read_inputs
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
        from .prediction import read_csv_columns
        names = None if args.keep_columns == "all" else \
            [c.strip() for c in args.keep_columns.split(",") if c.strip()]
        keep = read_csv_columns(args.data, names, exclude=[smiles_column])
    preds = run.predict(inputs, batch_size=args.batch_size)
    preds.to_csv(args.out, keep)
    n, bad = len(preds), preds.num_invalid
    print(f"{n - bad} of {n} inputs predicted, {bad} invalid (reason in the status column): "
          f"{args.out}")
    return 0


def _check_device(args: argparse.Namespace) -> int:
    from .device_check import main as check_main
    return check_main(args=args)


#: sub-command → its handler (each returns the exit status)
_COMMANDS = {"train": _train, "slice": _slice, "evaluate": _evaluate, "predict": _predict,
             "benchmark": _benchmark, "params": _params, "table": _table, "compare": _compare,
             "analyze": _analyze, "check-device": _check_device}


class _NoAdverts(logging.Filter):
    """Drops Lightning's promotional 'Tip' lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Tip:" not in record.getMessage()


def _setup_logging(verbose: bool) -> None:
    """Our messages go to stderr with a timestamp; Lightning keeps its own handler (no
    duplicates through the root logger)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                           datefmt="%H:%M:%S"))
    handler.set_name("graph-transformers-cli")
    ours = logging.getLogger("graph_transformers")
    for old in [h for h in ours.handlers if h.get_name() == "graph-transformers-cli"]:
        ours.removeHandler(old)  # one handler, bound to the current stderr
    ours.addHandler(handler)
    ours.setLevel(logging.DEBUG if verbose else logging.INFO)
    ours.propagate = False
    logging.getLogger("lightning.pytorch.utilities.rank_zero").addFilter(_NoAdverts())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``graph-transformers`` console script."""
    args = _parser().parse_args(argv)
    _setup_logging(args.verbose)
    from ._optional import MissingDependencyError
    from .data.cache import DataNotFoundError
    from .training.config import ConfigError
    from .errors import RunError
    if args.command in ("benchmark", "evaluate", "analyze", "predict"):  # CPU work; training decides
        from .training.allocator import keep_freed_memory  # by its accelerator (runner.train)
        keep_freed_memory()
    input_errors = (ConfigError, DataNotFoundError, MissingDependencyError, ValueError,
                    TypeError, FileNotFoundError, PermissionError)
    try:
        with _sigint_once():
            return _COMMANDS[args.command](args)
    except KeyboardInterrupt:  # Ctrl-C outside training (which says where it stopped)
        print("graph-transformers: error: interrupted by SIGINT (Ctrl-C)", file=sys.stderr)
        return 130
    except RunError as err:  # exit status by kind: 2 inputs, 1 training failure, 143 SIGTERM,
        if args.verbose and err.exit_code not in (130, 143):  # 130 SIGINT
            raise
        print(f"graph-transformers: error: {err}", file=sys.stderr)
        return err.exit_code
    except (*input_errors, OSError) as err:  # OSError: e.g. a full disk outside a checkpoint write
        if args.verbose:
            raise
        print(f"graph-transformers: error: {_one_line(err)}", file=sys.stderr)
        return 2 if isinstance(err, input_errors) else 1
    except RuntimeError as err:  # torch.save of a dataset cache on a full disk, say
        from .fileio import file_being_written, is_torch_write_failure
        if args.verbose or not is_torch_write_failure(err):
            raise
        where = file_being_written(err)
        print(f"graph-transformers: error: a file could not be written"
              f"{f' ({where})' if where else ''} (a full disk or a file-size limit; torch: "
              f"{str(err).splitlines()[0][-60:].strip()})", file=sys.stderr)
        return 1


@contextlib.contextmanager
def _sigint_once() -> Iterator[None]:
    """While the command runs (main thread only), the first SIGINT (Ctrl-C) raises
    ``KeyboardInterrupt`` as usual and every later one is ignored, so that a second Ctrl-C
    while the run stops (Lightning's teardown, the CLI's message) cannot escape as a traceback
    or change the exit status (always 130, ``docs/reliability.md``). After an interrupted
    command SIGINT stays ignored, as the process is ending (a later one would print a traceback
    from the interpreter's exit); otherwise the previous handler is restored."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum, frame):
        if not received:
            received.append(signum)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN if received else previous)


def _one_line(err: BaseException) -> str:
    """An OS error as ``<what>: <path>``; other errors as their message."""
    if isinstance(err, OSError) and err.strerror:
        where = f": {err.filename}" if err.filename else ""
        return f"{err.strerror}{where}"
    return str(err)


if __name__ == "__main__":
    sys.exit(main())
