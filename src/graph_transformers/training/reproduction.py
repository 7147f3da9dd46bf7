"""The reproduction table: committed runs against the papers' numbers.

``graph-transformers table results/`` reads every run under a results directory (a directory
holding ``metrics.json``; seeds of one config in ``<run>/seed_<s>/``), finds the published number
each run reproduces (the ``reference`` section of its config, else of the config under
``configs/`` with the same ``name``) and writes one row per run with a verdict:

- ``budget not run``: some seed stopped before its schedule's end (``stopped_by`` ``max_time`` or
  ``interrupted``), or a fixed-length schedule was shorter than the paper's (``reference.epochs``);
  the row gives the fraction of the paper's epochs that ran;
- ``in progress``: the run is continued slice by slice (``graph-transformers slice``, its state
  folder committed with the resume checkpoint); the row says how many of the paper's epochs ran,
  and on which kind of device;
- ``within 2σ``: the schedule ran to its end and ``|ours − paper| ≤ 2 · √(σ_paper² + σ_ours²)``
  (:func:`~.stats.within_paper`; ``σ_ours`` the sample s.d. over seeds, unknown with one seed:
  the row then says ``1 seed``);
- ``outside``: the schedule ran to its end and the mean is farther than that (``direction`` says
  ``better`` or ``worse``);
- ``no paper s.d.``: the paper gives no spread to compare with;
- ``no paper value``: no published number exists for this row (the reference says why).

Beside these rows, the same-budget comparisons with the official implementations written by
``benchmarks/parity/parity.py`` (``<results>/parity/<model>.json``) become the ``parity`` rows
(:func:`parity_rows`): our test MAE and the official code's at equal epochs, with the verdict of
Welch's test on the per-seed values (:func:`~.stats.parity_verdict`), recomputed from the file.

Nothing in the table is typed by hand: it is rebuilt from the files, and the README's results
section is that table (:func:`update_readme`).
"""
from __future__ import annotations

import csv
import json
import re
import statistics
from pathlib import Path
from typing import Any

from ..fileio import atomic_write_text
from .binding import WHERE_KEYS
from .config import ConfigError, build_config, load_config
from .stats import RULES, mean_std, parity_verdict, within_paper
from .tables import PERCENT_METRICS

README_START = ("<!-- reproduction table: written by `graph-transformers table results/`; "
                "do not edit -->")
README_END = "<!-- end of reproduction table -->"
COMPLETE = ("min_lr", "max_epochs", "early_stopping")
#: ``stopped_by`` of a run stopped before its schedule's end that ``--resume`` continues: its
#: wall-clock slice ran out (``trainer.slice_minutes``) or it was interrupted
UNFINISHED = ("slice", "interrupted")


def find_runs(root: str | Path) -> dict[Path, list[dict[str, Any]]]:
    """Runs under ``root``: ``{run directory: [metrics.json of each seed]}``, seeds ordered.

    Directories named ``seed_<s>`` and ``fold_<k>`` (cross-validation) belong to the run above
    them; any other directory holding a ``metrics.json`` is a run of its own. Each metrics dict gets
    ``"_dir"``, its directory."""
    groups: dict[Path, list[dict[str, Any]]] = {}
    for path in sorted(Path(root).rglob("metrics.json")):
        run_dir = group = path.parent
        while re.fullmatch(r"(seed|fold)_\d+", group.name):
            group = group.parent
        metrics = json.loads(path.read_text())
        metrics["_dir"] = run_dir
        groups.setdefault(group, []).append(metrics)
    return groups


def config_references(config_dir: str | Path
                      ) -> dict[str, tuple[Path, dict[str, Any] | None, dict[str, Any]]]:
    """``{config name: (path, reference or None, resolved config)}`` for every YAML config under
    ``config_dir``.

    Raises:
        ConfigError: when two configs share a name (the table could not tell them apart).
    """
    found: dict[str, tuple[Path, dict[str, Any] | None, dict[str, Any]]] = {}
    for path in sorted(Path(config_dir).rglob("*.yaml")):
        config = load_config(path)
        name = config.name or path.stem
        if name in found:
            raise ConfigError(f"configs {found[name][0]} and {path} share the name {name!r}")
        ref = config.reference.model_dump() if config.reference is not None else None
        found[name] = (path, ref, config.to_dict())
    return found


#: data keys that only describe a user's own file (``data.path``)
_USER_DATA_KEYS = ("smiles_column", "target_columns", "task", "level", "split_files")
#: keys only a node table (``data.name: node_table``) reads
_NODE_TABLE_KEYS = ("edges", "nodes", "id_column", "label_column", "feature_columns",
                    "undirected", "allow_no_edges")


def _config_changed(run_config: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether the run's resolved config differs from today's config in what it trains (model,
    data, encodings); where data is read from does not count."""
    try:
        run = build_config(run_config).to_dict()
    except ConfigError:
        return True  # a key that no longer exists
    for section in ("model", "data", "encodings"):
        a, b = dict(run.get(section) or {}), dict(current.get(section) or {})
        if section == "data":
            for key in WHERE_KEYS:
                a.pop(key, None), b.pop(key, None)
            if a.get("path") is None and b.get("path") is None:  # keys of a user's own data
                for key in _USER_DATA_KEYS:
                    a.pop(key, None), b.pop(key, None)
            if "node_table" not in (a.get("name"), b.get("name")):
                for key in _NODE_TABLE_KEYS:
                    a.pop(key, None), b.pop(key, None)
        if a != b:
            return True
    return False


def stopped_by(metrics: dict[str, Any]) -> str:
    """What ended a run: ``metrics["stopped_by"]`` when recorded, else inferred from its config
    and ``epochs.csv`` (runs written before the key existed): ``min_lr`` when the plateau
    schedule's LR fell below its floor, ``max_epochs`` when the epoch budget was used, else
    ``max_time``."""
    if "stopped_by" in metrics:
        return metrics["stopped_by"]
    config = metrics.get("config", {})
    sched = (config.get("optim") or {}).get("scheduler") or {}
    max_epochs = (config.get("trainer") or {}).get("max_epochs", 1000)
    if metrics.get("epochs", 0) >= max_epochs:
        return "max_epochs"
    log = Path(metrics["_dir"]) / "epochs.csv" if "_dir" in metrics else None
    if (sched.get("name") == "plateau" and sched.get("stop_at_min_lr", True) and log
            and log.is_file()):
        with open(log, newline="") as f:
            rows = list(csv.DictReader(f))
        if rows and float(rows[-1]["lr"]) < float(sched.get("min_lr", 0.0)):
            return "min_lr"
    return "max_time"


def _test_value(metrics: dict[str, Any], metric: str, epoch: str,
                split: str = "test") -> tuple[float, str]:
    """The test metric (``split``: the split the paper reports, ``reference.split``) at the
    paper's epoch (``best`` / ``last``) and which epoch it is."""
    if epoch == "last" and "last" in metrics:
        return float(metrics["last"][split][metric]), "last"
    if epoch == "last":
        return float(metrics[split][metric]), "best (last epoch not recorded)"
    return float(metrics[split][metric]), "best"


def _provenance(metrics: dict[str, Any]) -> str:
    """Where a run's graphs came from: the per-split record (``train: reconstructed; val, test:
    exact``), else the ``data_source`` record (``canonical`` reads as ``exact``), else
    ``exact`` (runs written before either was recorded)."""
    how: dict[str, list[str]] = {}
    for split, what in (metrics.get("provenance") or {}).items():
        if split in ("train", "val", "test") and isinstance(what, str):
            how.setdefault(what, []).append(split)
    if not how:
        source = (metrics.get("data_source") or {}).get("source", "canonical")
        return "exact" if source == "canonical" else str(source)
    return "; ".join(f"{', '.join(splits)}: {what}" for what, splits in how.items())


def verdict(ours_mean: float, paper: dict[str, Any], complete: bool,
            higher_is_better: bool, ours_std: float | None = None) -> tuple[str, str | None]:
    """``(verdict, direction)`` of one row (see the module docstring); ``ours_std`` is the sample
    s.d. over seeds, ``None`` for one seed."""
    direction = None
    # metrics are float32: differences below 1e-6 (relative) are equality, not a direction
    tol = 1e-6 * max(1.0, abs(paper["value"])) if paper.get("value") is not None else 0.0
    if paper.get("value") is not None and abs(ours_mean - paper["value"]) > tol:
        better = (ours_mean > paper["value"]) == higher_is_better
        direction = "better" if better else "worse"
    if paper.get("value") is None:
        return "no paper value", None
    if not complete:
        return "budget not run", direction
    if paper.get("std") is None:
        return "no paper s.d.", direction
    if within_paper(ours_mean, ours_std, paper["value"], paper["std"], tol):
        return "within 2σ", direction
    return "outside", direction


def build_rows(results_dir: str | Path, config_dir: str | Path | None = None,
               relative_to: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per run under ``results_dir`` that has a reference (keys in
    ``docs/reproduction.md``); runs without one are skipped. Paths are written relative to
    ``relative_to`` (default: the current directory)."""
    base = Path(relative_to) if relative_to is not None else Path.cwd()
    refs = config_references(config_dir) if config_dir is not None else {}
    rows = []
    for run_dir, seeds in find_runs(results_dir).items():
        first = seeds[0]
        config = first.get("config", {})
        name = first.get("name") or config.get("name") or run_dir.name
        config_path, ref, current = refs.get(name, (None, None, None))
        # the paper's number is the config's (corrected citations apply to older runs too);
        # a run without a config under configs/ keeps the reference it ran with
        ref = ref or config.get("reference")
        if ref is None:
            continue
        row = {"model": first["model"], "dataset": first["dataset"],
               "config": relative_path(config_path, base) if config_path is not None else name,
               "name": name, "run": relative_path(run_dir, base),
               "config_changed_since_run": current is not None and _config_changed(config,
                                                                                     current)}
        rows.append({**row, **_scores(seeds, ref, config)})
    rows.sort(key=lambda r: (r["dataset"], r["model"], r["config"]))
    return rows


def relative_path(path: str | Path, base: str | Path) -> str:
    """``path`` relative to ``base`` where it lies below it (both resolved), else as given.

    Args:
        path: a file or folder.
        base: the folder the result is relative to.

    Returns:
        The path as text.
    """
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


def _scores(seeds: list[dict[str, Any]], ref: dict[str, Any],
            config: dict[str, Any]) -> dict[str, Any]:
    """The columns of a row from its seeds' ``metrics.json`` (``seeds``), its reference and its
    config: paper value, our mean ± s.d., epochs against the paper's budget, and the verdict."""
    first = seeds[0]
    metric = ref.get("metric") or first["metric"]
    scale = 100.0 if metric in PERCENT_METRICS else 1.0
    picked = [_test_value(m, metric, ref.get("epoch", "best"), ref.get("split") or "test")
              for m in seeds]
    values = [v * scale for v, _ in picked]
    mean, std = mean_std(values)
    val_mean, _ = mean_std([float(m["val"][metric]) * scale for m in seeds])
    train_mean, _ = mean_std([float(m["train"][metric]) * scale for m in seeds])
    ends = [stopped_by(m) for m in seeds]
    epochs = statistics.fmean(m["epochs"] for m in seeds)
    complete = _schedule_complete(ends, epochs, ref, config)
    paper = {"value": ref["value"], "std": ref.get("std"), "source": ref["source"],
             "epochs": ref.get("epochs"), "seeds": ref.get("seeds"),
             "epoch": ref.get("epoch", "best"),
             # a number measured on another split than test (PCQM4M: the validation MAE)
             **({"split": ref["split"]} if ref.get("split") not in (None, "test") else {})}
    higher = metric not in ("mae", "rmse", "loss")
    result, direction = verdict(mean, paper, complete, higher, std)
    in_progress = not complete and "slice" in ends  # continued slice by slice (``slice``)
    if in_progress and result == "budget not run":
        result = "in progress"
    return {
        "metric": metric,
        "paper": paper,
        "ours": {"mean": round(mean, 6), "std": None if std is None else round(std, 6),
                 "seeds": len(seeds),
                 "folds": len({(m.get("config", {}).get("data") or {}).get("fold")
                               for m in seeds}),
                 "seed_ids": [m.get("seed") for m in seeds],
                 "values": [round(v, 6) for v in values],
                 "epoch_used": picked[0][1], "val_mean": round(val_mean, 6),
                 "train_mean": round(train_mean, 6)},
        "epochs": round(epochs, 2),
        "schedule_complete": complete,
        "stopped_by": ends,
        "budget_fraction": (round(epochs / paper["epochs"], 3) if paper["epochs"] else None),
        "num_params": first.get("num_params"),
        "provenance": _provenance(first),
        "device": first.get("device", "CPU"),
        "wall_time_s": round(statistics.fmean(m.get("wall_time_s", 0.0) for m in seeds), 1),
        "verdict": result,
        "direction": direction,
        "in_progress": in_progress,
    }


def _schedule_complete(ends: list[str], epochs: float, ref: dict[str, Any],
                       config: dict[str, Any]) -> bool:
    """Whether every seed ran its schedule out (:data:`COMPLETE`), and a fixed budget was not
    shorter than the paper's (a compressed schedule); an open-ended plateau schedule that
    stops at its LR floor is complete in fewer epochs."""
    complete = all(e in COMPLETE for e in ends)
    sched = (config.get("optim") or {}).get("scheduler") or {}
    open_ended = sched.get("name") == "plateau" and sched.get("stop_at_min_lr", True)
    if not open_ended and ref.get("epochs") and epochs < ref["epochs"]:
        complete = False
    return complete


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (accuracy-type metrics in percent)."""
    lines = ["| model | dataset | config | metric | test at | paper | ours | runs | "
             "epochs (paper) | schedule | #params | data | device | time | verdict |",
             "|---|---|---|---|---|---:|---:|---:|---:|---|---:|---|---|---:|---|"]
    for r in rows:
        p, o, m = r["paper"], r["ours"], r["metric"]
        paper = _num(p["value"]) + (f" ± {_num(p['std'])}" if p["std"] is not None else "")
        ours = _num(o["mean"]) + (f" ± {_num(o['std'])}" if o["std"] is not None else "")
        epochs = f"{r['epochs']:g}" + (f" ({p['epochs']:g})" if p["epochs"] else "")
        if r["schedule_complete"]:
            schedule = "complete"
        elif r.get("in_progress"):
            where = "CPU" if str(r["device"]).startswith("CPU") else "GPU"
            schedule = (f"in progress: {r['epochs']:g} of {p['epochs']:g} epochs ({where})"
                        if p["epochs"] else f"in progress: {r['epochs']:g} epochs ({where})")
        elif r["budget_fraction"] is not None:
            schedule = f"stopped at {100 * r['budget_fraction']:.2g}% of paper's epochs"
        else:
            schedule = "stopped early"
        verdict_text = r["verdict"] + (f" ({r['direction']})" if r["verdict"] == "outside" else "")
        if o["seeds"] == 1 and r["verdict"] in ("within 2σ", "outside"):
            verdict_text += ", 1 seed"
        hours = r["wall_time_s"] / 3600
        changed = " (run predates config change)" if r["config_changed_since_run"] else ""
        runs = str(o["seeds"]) + (f" ({o['folds']} folds)" if o.get("folds", 1) > 1 else "")
        lines.append(
            f"| {r['model']} | {r['dataset']} | `{r['config']}`{changed} | {m} | "
            f"{o['epoch_used']} | "
            f"{paper} | {ours} | {runs} | {epochs} | {schedule} | "
            f"{r['num_params']:,} | {r['provenance']} | {r['device']} | {hours:.2f} h | "
            f"{verdict_text} |")
    lines.append("")
    lines.append(RULES)
    lines.append("")
    lines.append("Sources of the paper values:")
    lines.append("")
    for r in rows:
        lines.append(f"- `{r['config']}`: {r['paper']['source']}")
    return "\n".join(lines) + "\n"


def parity_rows(results_dir: str | Path, relative_to: str | Path | None = None
                ) -> list[dict[str, Any]]:
    """One row per same-budget comparison ``<results_dir>/parity/*.json`` (written by
    ``benchmarks/parity/parity.py``): model, official repository and commit, epochs, seeds, both
    sides' test / validation MAE at the last epoch (mean ± s.d. over seeds) and parameter counts,
    and the verdict of Welch's test on the per-seed test values at the last epoch
    (:func:`~.stats.parity_verdict`, recomputed here, so a summary written under an older rule is
    judged by the current one). Files without the harness's keys are skipped."""
    base = Path(relative_to) if relative_to is not None else Path.cwd()
    rows = []
    for path in sorted((Path(results_dir) / "parity").glob("*.json")):
        data = json.loads(path.read_text())
        if not {"model", "official_commit", "ours", "official", "verdict"} <= data.keys():
            continue
        conditions = data.get("conditions", {})

        def side(s: dict[str, Any]) -> dict[str, Any]:
            return {"test_mean": round(s["test_mean"], 6), "test_std": round(s["test_std"], 6),
                    "val_mean": round(s["val_mean"], 6), "val_std": round(s["val_std"], 6),
                    "num_params": s.get("num_params"),
                    "seconds_per_step": s.get("seconds_per_step")}

        per_seed = {k: [r["test_final"] for r in data[k].get("runs", [])]
                    for k in ("ours", "official")}
        if not all(per_seed.values()):  # no per-seed values stored: the means alone
            per_seed = {k: [data[k]["test_mean"]] for k in ("ours", "official")}
        judged = parity_verdict(per_seed["ours"], per_seed["official"])
        rows.append({
            "model": data["model"], "dataset": conditions.get("dataset", "zinc"),
            "config": conditions.get("config"), "official_repo": data.get("official_repo"),
            "official_commit": data["official_commit"], "epochs": data["epochs"],
            "seeds": data["seeds"], "schedule": conditions.get("schedule", {}).get("mode"),
            "device": conditions.get("device_name", conditions.get("device")),
            "ours": side(data["ours"]), "official": side(data["official"]),
            "ours_test_per_seed": [round(v, 6) for v in per_seed["ours"]],
            "official_test_per_seed": [round(v, 6) for v in per_seed["official"]],
            "verdict": judged["label"],
            "welch_p": None if judged["p_value"] is None else round(judged["p_value"], 4),
            "ours_minus_official": round(judged["ours_minus_official"], 6),
            "source": relative_path(path, base)})
    return rows


def parity_markdown(rows: list[dict[str, Any]]) -> str:
    """The parity rows as a Markdown table (empty string without rows)."""
    if not rows:
        return ""
    lines = ["Same-budget parity with the official implementations (`benchmarks/parity/`: same "
             "data, batches, loop, optimizer and compressed schedule on both sides; test MAE at "
             "the last epoch, mean ± sample s.d. over seeds; Welch's t-test on the per-seed "
             "values):", "",
             "| model | official code | epochs | seeds | ours | official | #params ours / "
             "official | device | Welch p | verdict |",
             "|---|---|---:|---:|---:|---:|---:|---|---:|---|"]
    for r in rows:
        o, f = r["ours"], r["official"]
        p = "–" if r.get("welch_p") is None else f"{r['welch_p']:.2f}"
        lines.append(
            f"| {r['model']} | {r['official_repo']}@{r['official_commit'][:8]} | {r['epochs']} | "
            f"{len(r['seeds'])} | {_num(o['test_mean'])} ± {_num(o['test_std'])} | "
            f"{_num(f['test_mean'])} ± {_num(f['test_std'])} | "
            f"{o['num_params']:,} / {f['num_params']:,} | {r['device']} | {p} | "
            f"{r['verdict']} |")
    return "\n".join(lines) + "\n"


def update_readme(readme: str | Path, table: str) -> bool:
    """Replaces the text between the README's reproduction markers with ``table``; returns
    whether the file changed.

    Raises:
        ValueError: when the README lacks the markers.
    """
    return replace_between_markers(readme, README_START, README_END, table, "reproduction")


def replace_between_markers(doc: str | Path, start_marker: str, end_marker: str, table: str,
                            what: str) -> bool:
    """Replaces the text between ``start_marker`` and ``end_marker`` in ``doc`` with ``table``
    (written atomically); returns whether the file changed.

    Raises:
        ValueError: when ``doc`` lacks the markers (``what``: the table's name, for the message).
    """
    path = Path(doc)
    text = path.read_text()
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"{path} has no {what}-table markers ({start_marker!r} ... "
                         f"{end_marker!r})")
    new = text[:start + len(start_marker)] + "\n" + table + text[end:]
    if new != text:
        atomic_write_text(path, new)
    return new != text


def write_table(results_dir: str | Path, config_dir: str | Path | None,
                out_stem: str | Path, readme: str | Path | None = None,
                relative_to: str | Path | None = None) -> list[dict[str, Any]]:
    """Builds the rows and writes ``<out_stem>.json`` (``{"rows": [...], "parity": [...]}``) and
    ``<out_stem>.md``; with ``readme``, also its reproduction section."""
    rows = build_rows(results_dir, config_dir, relative_to)
    parity = parity_rows(results_dir, relative_to)
    stem = Path(out_stem)
    atomic_write_text(stem.with_suffix(".json"),
                      json.dumps({"rows": rows, "parity": parity}, indent=2) + "\n")
    table = markdown(rows)
    if parity:
        table += "\n" + parity_markdown(parity)
    atomic_write_text(stem.with_suffix(".md"), "# Reproduction table\n\n" + table)
    if readme is not None:
        update_readme(readme, table)
    return rows
