"""The ``graph-transformers`` command line's arguments: global options, then one sub-parser per
command (:func:`build_parser`), with each command's help line, description and examples."""
from __future__ import annotations

import argparse
from pathlib import Path

from .sweep_command import add_sweep

_DATA_DIR_HELP = "raw data directory (else $GRAPH_TRANSFORMERS_DATA)"
_RUN_DATA_DIR_HELP = "raw data directory (else the run's or the environment's)"


def build_parser() -> argparse.ArgumentParser:
    """The command line: global options, then one sub-parser per command.

    Returns:
        argparse.ArgumentParser: the ``graph-transformers`` parser.
    """
    p = argparse.ArgumentParser(
        prog="graph-transformers",
        description="Train and study transformer networks on graphs (GT, EGT, GRPE, GPS).",
        epilog="Examples:\n"
               "  graph-transformers train                      # the embedded CSL demo\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --data-dir DATA\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --set optim.lr=1e-3\n"
               "  graph-transformers benchmark --config configs/zinc/gt.yaml --seeds 4\n"
               "  graph-transformers sweep --config configs/zinc/gt.yaml --space space.yaml"
               " --trials 30 --out runs/zinc-sweep\n"
               "  graph-transformers evaluate runs/zinc-gt\n"
               "  graph-transformers predict runs/esol-gt --data molecules.csv --out preds.csv\n"
               "  graph-transformers analyze runs/zinc-egt-spe-do",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_train, _add_slice, _add_benchmark, add_sweep, _add_params, _add_evaluate,
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
               "  graph-transformers train                     "
               "  # GT on CSL, with and without LapPE\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --data-dir"
               " ../shared/data\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --seeds 2 --set seed=41\n"
               "  graph-transformers train --config configs/csl/gt.yaml --folds 5 --seeds 2\n"
               "  graph-transformers train --config my.yaml --folds NCI1_splits.json\n"
               "  graph-transformers train --config configs/zinc/gt.yaml --out runs/zinc-gt"
               " --resume"),
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
               "  graph-transformers benchmark --config configs/zinc/gt.yaml"
               " configs/zinc/gt_nope.yaml "
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
               "  graph-transformers evaluate runs/zinc-gt --write "
               "  # metrics.json of a stopped run"),
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
        epilog="Example:\n  graph-transformers analyze runs/zinc-egt-spe-do --split val "
               "--num-graphs 4"),
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
    t.add_argument("-q", "--quiet", action="store_true",
                   help="print only warnings, errors and the final result line (no INFO lines, "
                        "no progress bars)")
    t.add_argument("--seeds", type=int, default=1,
                   help="number of seeds; reports mean ± std over them (default 1)")
    t.add_argument("--folds", type=_folds, default=None, metavar="K|FILE",
                   help="cross-validation: train folds 0..K-1 (data.fold) × --seeds into "
                        "OUT/fold_<k>/ and report mean ± std over all of them (CSL: 5); or "
                        "every fold of a folds FILE (the fair-comparison JSON, a folder of "
                        "*_train/_val/_test.index files) as data.split=FILE")


def _folds(text: str) -> int | str:
    """``--folds``: a number of folds, or a folds file (anything that is not an integer)."""
    try:
        return int(text)
    except ValueError:
        return text


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
    """``check-device``: the models on a GPU (its options:
    :func:`~graph_transformers.device_check.add_arguments`)."""
    from ..device_check import add_arguments
    c = sub.add_parser(
        "check-device", help="check the models on a GPU: CPU parity, bf16, SDPA kernels, speed",
        description="For GT, GT with edges, EGT, GRPE, Graphormer, GPS and GatedGCN on a fixed "
                    "ZINC batch: forward+backward parity CPU vs device (float32, float64), bf16 "
                    "loss against float32, the SDPA kernel that ran, graphs/s and peak memory in "
                    "fp32 and bf16, one-epoch training time. Writes gpu_check.json/.md to --out "
                    "(see docs/gpu.md). Exit status 1 when a model is out of tolerance.")
    add_arguments(c)
