"""Results tables in the papers' format (GT Table 1 / benchmarking-GNNs style)."""
from __future__ import annotations

from typing import Any

from .stats import format_mean_std

PERCENT_METRICS = {"accuracy", "weighted_accuracy", "f1", "roc_auc", "ap"}


def _cell(stat: dict[str, float] | None, metric: str) -> str:
    if stat is None:  # a predict-only split (no labels: PCQM4M's test sets)
        return "– (no labels)"
    scale, digits = (100.0, 3) if metric in PERCENT_METRICS else (1.0, 3)
    return format_mean_std(stat["mean"], stat["std"], digits, scale)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}hr" if seconds >= 3600 else f"{seconds / 60:.1f}min"


def table_row(name: str, summary: dict[str, Any]) -> dict[str, Any]:
    """One row from a :func:`~graph_transformers.training.sets.summarize` result; ``test`` is
    ``None`` for a predict-only test split (no labels, e.g. PCQM4M-LSC's)."""
    metric = summary["metric"]
    return {
        "name": name,
        "model": summary["model"],
        "dataset": summary["dataset"],
        "metric": metric,
        "num_params": summary["num_params"],
        "seeds": summary["seeds"],
        "test": summary["test"].get(metric),
        "train": summary["train"][metric],
        "epochs": summary["epochs"]["mean"],
        "epoch_time_s": summary["epoch_time_s"]["mean"],
        "total_time_s": summary["wall_time_s"]["mean"],
        "devices": summary.get("devices") or {},
    }


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table with the columns of GT's Table 1: test ± s.d., train ± s.d.,
    #params, #epochs, epoch time / total time (means over seeds; sample s.d.). A row whose
    epochs trained on more than one device (``devices``, from the epoch logs) has its times
    marked ``‡`` and a note under the table with the epochs per device."""
    lines = ["| run | dataset | metric | #params | test ± s.d. | train ± s.d. | #epochs | "
             "epoch / total | seeds |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    notes = []
    for r in rows:
        devices = r.get("devices") or {}
        mark = " ‡" if len(devices) > 1 else ""
        if mark:
            notes.append(f"‡ {r['name']}: epochs per device: "
                         + "; ".join(f"{name}: {n}" for name, n in devices.items()))
        lines.append(
            f"| {r['name']} | {r['dataset']} | {r['metric']} | {r['num_params']:,} | "
            f"{_cell(r['test'], r['metric'])} | {_cell(r['train'], r['metric'])} | "
            f"{r['epochs']:.2f} | {r['epoch_time_s']:.2f}s/{_hours(r['total_time_s'])}{mark} | "
            f"{len(r['seeds'])} |")
    if notes:
        lines += ["", "  \n".join(notes)]  # two spaces: a line break in Markdown
    return "\n".join(lines) + "\n"


def merge_rows(existing: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a benchmark table after another ``benchmark`` into the same directory: the
    rows of ``existing`` whose run is not in ``new`` keep their place, then ``new`` in its order
    (a config run again, with ``--resume``, replaces its row)."""
    names = {r["name"] for r in new}
    return [r for r in existing if r.get("name") not in names] + list(new)
