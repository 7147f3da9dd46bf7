"""Coverage of the seed papers' cells: which published number has a config, and which a run.

The seed papers' own-model result cells (GT, EGT arXiv v1, GRPE; and GNN+'s cells that have a
config, issue 57) are listed in
``paper_cells.yaml`` beside this module (:data:`CELLS_FILE`): per cell its paper, table, row,
dataset, budget, metric, the printed number, and exactly one of ``config`` (the config whose
``reference`` is that cell), ``same_as`` (the cell repeats another cell's setting) or ``reason``
(why no config can exist here); and per seed paper (:func:`load_papers`) its title, what a
config's ``reference.source`` citing it contains, and its own model. :func:`coverage_rows` joins
them with the configs (:func:`~.reproduction.config_references`) and the committed runs
(:func:`~.reproduction.build_rows`), and :func:`coverage_markdown` writes the table that
``graph-transformers table results/ --coverage docs/reproduction.md`` puts between
:data:`COVERAGE_START` and :data:`COVERAGE_END` (:func:`update_coverage`). Nothing in it is typed
by hand; ``tests/training/test_coverage.py`` fails when the committed table and a fresh one differ.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .reproduction import build_rows, config_references, relative_path

CELLS_FILE = Path(__file__).with_name("paper_cells.yaml")
COVERAGE_START = ("<!-- coverage table: written by `graph-transformers table results/ --coverage "
                  "docs/reproduction.md`; do not edit -->")
COVERAGE_END = "<!-- end of coverage table -->"
KINDS = ("config", "same_as", "reason")


def load_cells(path: str | Path = CELLS_FILE) -> list[dict[str, Any]]:
    """The cells of ``path`` (default :data:`CELLS_FILE`), in file order."""
    return list(yaml.safe_load(Path(path).read_text())["cells"])


def load_papers(path: str | Path = CELLS_FILE) -> dict[str, dict[str, str]]:
    """The seed papers of ``path`` (default :data:`CELLS_FILE`), in file order.

    Args:
        path: the cells file.

    Returns:
        Paper key (a cell's ``paper``) → ``{title, source, model}``: the paper's heading in the
        coverage table, what the ``reference.source`` of a config citing it first-hand
        contains, and the library's name of the paper's own model, or a list of names for a
        paper with several (:func:`paper_models`).
    """
    return dict(yaml.safe_load(Path(path).read_text())["papers"])


def paper_models(paper: dict[str, Any]) -> tuple[str, ...]:
    """The library's names of a paper's own models: its ``model`` entry, one name or a list
    (GNN+: GCN, GINE and GatedGCN).

    Raises:
        ValueError: for an entry that is neither a name nor a non-empty list of names.
    """
    model = paper.get("model")
    names = (model,) if isinstance(model, str) else (tuple(model) if isinstance(model, list)
                                                     else ())
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"a paper's model must be a model name or a list of them, got {model!r}")
    return names


def parse_printed(printed: str) -> tuple[float, float | None]:
    """``"86.730 ± 0.036"`` → ``(86.73, 0.036)``; ``"0.1263"`` → ``(0.1263, None)``."""
    parts = [p.strip() for p in printed.split("±")]
    if len(parts) > 2:
        raise ValueError(f"not a number ± s.d.: {printed!r}")
    return float(parts[0]), (float(parts[1]) if len(parts) == 2 else None)


def resolved(cell: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The cell that holds ``cell``'s config or reason: ``cell`` itself, or its ``same_as``."""
    return by_id[cell["same_as"]] if "same_as" in cell else cell


def seed_paper(source: str, papers: dict[str, dict[str, str]] | None = None) -> str | None:
    """Which seed paper a ``reference.source`` cites first-hand (``None``: none, or a number
    only quoted by it, as the baselines that EGT's Table 1 cites from Benchmarking GNNs).

    Args:
        source: a config's ``reference.source``.
        papers: the seed papers (default: :func:`load_papers`).

    Returns:
        The paper's key, or ``None``.
    """
    if "as cited in" in source:
        return None
    for key, paper in (load_papers() if papers is None else papers).items():
        if paper["source"] in source:
            return key
    return None


def own_model_configs(config_dir: str | Path, relative_to: str | Path | None = None
                      ) -> dict[str, str]:
    """``{config path: seed paper}`` of every config whose reference cites a seed paper for that
    paper's own model (GT for GT, EGT for EGT, GRPE for GRPE, GCN / GINE / GatedGCN for GNN+);
    paths relative to ``relative_to`` (default: the current directory)."""
    base = Path(relative_to) if relative_to is not None else Path.cwd()
    papers = load_papers()
    found = {}
    for _, (path, ref, config) in config_references(config_dir).items():
        if ref is None:
            continue
        paper = seed_paper(ref["source"], papers)
        if (paper is not None
                and (config.get("model") or {}).get("name") in paper_models(papers[paper])):
            found[relative_path(path, base)] = paper
    return found


def _verdict_text(row: dict[str, Any]) -> str:
    """A reproduction row's verdict as the reproduction table writes it, with our value."""
    text = row["verdict"]
    if text == "outside":
        text += f" ({row['direction']})"
    if row["ours"]["seeds"] == 1 and row["verdict"] in ("within 2σ", "outside"):
        text += ", 1 seed"
    ours = row["ours"]
    value = f"{ours['mean']:.3f}" + (f" ± {ours['std']:.3f}" if ours["std"] is not None else "")
    if row["in_progress"] or row["verdict"] == "budget not run":
        value += f" after {row['epochs']:g} epochs"
    changed = " (run predates config change)" if row["config_changed_since_run"] else ""
    return f"{text}: {value}{changed}"


def coverage_rows(results_dir: str | Path, config_dir: str | Path,
                  cells: list[dict[str, Any]] | None = None,
                  relative_to: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per cell: ``{cell, config, same_as, reason, runs: [{run, verdict}]}``. A ``same_as``
    cell shows the config and runs of the cell it repeats; a config without a committed run has
    no runs (the table says ``not run``)."""
    cells = load_cells() if cells is None else cells
    by_id = {c["id"]: c for c in cells}
    runs: dict[str, list[dict[str, Any]]] = {}
    for row in build_rows(results_dir, config_dir, relative_to):
        runs.setdefault(row["config"], []).append(row)
    out = []
    for cell in cells:
        target = resolved(cell, by_id)
        config = target.get("config")
        out.append({"cell": cell, "config": config, "same_as": cell.get("same_as"),
                    "reason": target.get("reason"),
                    "runs": [{"run": r["run"], "verdict": _verdict_text(r)}
                             for r in runs.get(config, [])] if config else []})
    return out


def coverage_markdown(rows: list[dict[str, Any]]) -> str:
    """The coverage table: per paper, one line per cell (cell, paper value, config, run,
    verdict), the counts, and the reasons for cells without a config as numbered notes."""
    reasons: list[str] = []
    lines: list[str] = []
    counts = {"cells": 0, "config": 0, "same_as": 0, "reason": 0, "run": 0}
    for paper, about in load_papers().items():
        title = about["title"]
        mine = [r for r in rows if r["cell"]["paper"] == paper]
        if not mine:
            continue
        lines += ["", f"**{title}**: {len(mine)} cells", "",
                  "| cell | table | row | paper | config | run | verdict |",
                  "|---|---|---|---:|---|---|---|"]
        for r in mine:
            c = r["cell"]
            counts["cells"] += 1
            kind = "same_as" if r["same_as"] else "config" if c.get("config") else "reason"
            counts[kind] += 1
            if r["config"] is None:
                if r["reason"] not in reasons:
                    reasons.append(r["reason"])
                config = f"none (note {reasons.index(r['reason']) + 1})"
            else:
                config = f"`{r['config']}`"
            if r["same_as"]:
                config += f", as `{r['same_as']}`"
            if r["runs"]:
                counts["run"] += 1
                run = "<br>".join(f"`{x['run']}`" for x in r["runs"])
                verdict = "<br>".join(x["verdict"] for x in r["runs"])
            else:
                run, verdict = "–", ("not run" if r["config"] else "–")
            lines.append(f"| `{c['id']}` | {c['table']} | {c['row']} | {c['printed']} | {config} | "
                         f"{run} | {verdict} |")
    head = [f"{counts['cells']} cells: {counts['config']} with their own config, "
            f"{counts['same_as']} repeating another cell's setting (`same_as`), "
            f"{counts['reason']} without a config (notes below); {counts['run']} with a committed "
            f"run. Written from `src/graph_transformers/training/paper_cells.yaml`, the configs' "
            f"`reference:` sections and the runs under `results/` (verdicts as in the reproduction "
            f"table; our value after the colon)."]
    notes = ["", "Notes:", ""] + [f"{i}. {text}" for i, text in enumerate(reasons, 1)]
    return "\n".join(head + lines + (notes if reasons else [])) + "\n"


def update_coverage(doc: str | Path, table: str) -> bool:
    """Replaces the text between ``doc``'s coverage markers with ``table``; returns whether the
    file changed.

    Raises:
        ValueError: when ``doc`` lacks the markers.
    """
    from .reproduction import replace_between_markers
    return replace_between_markers(doc, COVERAGE_START, COVERAGE_END, table, "coverage")


def committed_table(doc: str | Path) -> str:
    """The text between ``doc``'s coverage markers (as :func:`update_coverage` wrote it)."""
    text = Path(doc).read_text()
    start, end = text.find(COVERAGE_START), text.find(COVERAGE_END)
    if start < 0 or end < start:
        raise ValueError(f"{doc} has no coverage-table markers")
    return text[start + len(COVERAGE_START) + 1:end]


def write_coverage(results_dir: str | Path, config_dir: str | Path, doc: str | Path,
                   relative_to: str | Path | None = None) -> list[dict[str, Any]]:
    """Builds the coverage rows and writes their table into ``doc``."""
    rows = coverage_rows(results_dir, config_dir, relative_to=relative_to)
    update_coverage(doc, coverage_markdown(rows))
    return rows


__all__ = ["CELLS_FILE", "COVERAGE_END", "COVERAGE_START", "committed_table",
           "coverage_markdown", "coverage_rows", "load_cells", "load_papers", "own_model_configs",
           "paper_models", "parse_printed", "resolved", "seed_paper", "update_coverage",
           "write_coverage"]
