"""The training commands of the command line: ``train`` (with the embedded CSL demo), ``slice``,
``benchmark`` and ``params``; each handler takes the parsed arguments and returns the exit
status."""
from __future__ import annotations

import argparse
import json
from importlib import resources
from pathlib import Path

from ..fileio import path_inside

DEFAULT_CONFIG = "csl_gt.yaml"


def _default_config_path() -> Path:
    return Path(str(resources.files("graph_transformers") / "configs" / DEFAULT_CONFIG))


def _overrides(args: argparse.Namespace) -> list[str]:
    """The command's ``--set`` overrides, with ``--data-dir`` as ``data.data_dir``."""
    overrides = list(args.overrides)
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    return overrides


def train(args: argparse.Namespace) -> int:
    """``train``: one config over ``--seeds`` or ``--folds`` (without ``--config``, the embedded
    CSL demo); prints the result.

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).
    """
    from ..training.config import load_config
    from ..training.sets import train_folds, train_seeds

    overrides = _overrides(args)
    if args.config is None:
        return _train_default(args, overrides)
    config = load_config(args.config, overrides)
    out = args.out or path_inside("runs", default_run_name(args.config, config),
                                  what="run name (the config's name)")
    allow = args.allow_data_change
    if args.folds is not None:
        result = train_folds(config, out, args.folds, args.seeds, resume=args.resume,
                             allow_data_change=allow, init_from=args.init_from)
    else:
        result = train_seeds(config, out, args.seeds, resume=args.resume, allow_data_change=allow,
                             init_from=args.init_from)
    _print_result(result, out, quiet=getattr(args, "quiet", False))
    return 0


def slice_run(args: argparse.Namespace) -> int:
    """``slice``: one wall-clock slice of the run kept in ``--state``; prints where it stands.

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).
    """
    from ..training.config import load_config
    from ..training.slices import run_slice, state_config

    overrides = _overrides(args)
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


def default_run_name(path: Path, config) -> str:
    """The run directory name under ``runs/``: the config's name, or, when ``--set`` points the
    config at another dataset or model (``data.name=tu:PROTEINS``), ``<dataset>-<model>``, so
    that a second such run is not refused as the first one's directory."""
    import re

    from ..training.config import load_yaml
    raw = load_yaml(path)
    same = ((raw.get("data") or {}).get("name", config.data.name) == config.data.name and
            (raw.get("model") or {}).get("name", config.model.name) == config.model.name)
    if same:
        return config.name or path.stem
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{config.data.name}-{config.model.name}").strip("-")


def _train_default(args: argparse.Namespace, overrides: list[str]) -> int:
    """GT with LapPE vs. without PE on CSL: the demonstration that PE matters."""
    from ..training.config import build_config, load_yaml
    from ..training.sets import train_folds, train_seeds

    raw = load_yaml(_default_config_path())
    base = args.out or Path("runs") / "csl-default"
    rows = []
    for label, extra in (("GT + LapPE", []),
                         ("GT, no PE", ["model.pe=null", "encodings.lap_pe=null",
                                        "name=csl-gt-nope"])):
        config = build_config(raw, overrides + extra)
        out = base / ("gt-lappe" if not extra else "gt-nope")
        if not getattr(args, "quiet", False):
            print(f"\n== {label}: training on CSL (fold {config.data.fold}) into {out}",
                  flush=True)
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
        from ..training.stats import format_mean_std
        return format_mean_std(v["mean"], v["std"], 3, scale) + ("%" if pct else "")
    return f"{v * scale:.3f}" + ("%" if pct else "")


def _print_result(result: dict, out: Path, quiet: bool = False) -> None:
    """The result of ``train``: the metric on each split (``quiet``: on one line)."""
    if not result:
        return
    metric = result["metric"]
    pct = metric in ("accuracy", "weighted_accuracy")
    if quiet:
        print(f"{result['model']} on {result['dataset']} ({out}): " + ", ".join(
            f"{split} {metric} {_fmt(result, split, metric, pct)}"
            for split in ("train", "val", "test")))
        return
    print(f"\n{result['model']} on {result['dataset']} ({out}):")
    for split in ("train", "val", "test"):
        print(f"  {split:<5} {metric}: {_fmt(result, split, metric, pct)}")


def benchmark(args: argparse.Namespace) -> int:
    """``benchmark``: every config over ``--seeds`` (and ``--folds``), written as ``table.md`` and
    ``table.json`` in ``--out`` (rows of other configs already there are kept).

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status (0).

    Raises:
        RunError: ``--out`` holds a ``table.json`` that is not a benchmark table.
    """
    from ..errors import RunError
    from ..training.config import load_config
    from ..training.finish import write_json
    from ..training.sets import summarize, train_folds, train_seeds
    from ..training.tables import markdown_table, merge_rows, table_row

    overrides = _overrides(args)
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
    from ..fileio import atomic_write_text
    atomic_write_text(args.out / "table.md", text)
    write_json(args.out / "table.json", rows)
    print("\n" + text)
    return 0


def params(args: argparse.Namespace) -> int:
    """``params``: each config's parameter count against its ``param_budget``.

    Args:
        args: the parsed command line.

    Returns:
        int: the exit status: 1 when a model is outside its budget, else 0.
    """
    from ..data.registry import resolve_spec
    from ..models import count_parameters
    from ..training.build import check_param_budget, make_model
    from ..training.config import ConfigError, load_config

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
