"""Figures quoted in the README and the docs come from committed files: every ``results/…`` path
they name exists (a removed run fails), and the figures quoted outside the generated table are
recomputed from the files they come from (a replaced run fails). The generated table itself is
checked by ``tests/training/test_reproduction.py``."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from graph_transformers.training.config import load_config
from graph_transformers.training.stats import mean_std

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")),
        *sorted((REPO / "benchmarks").rglob("README.md"))]


def _expand(path: str) -> list[str]:
    """``a/{b,c}/d`` → ``a/b/d``, ``a/c/d`` (the docs' shorthand for several files)."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [p for alt in m.group(1).split(",")
            for p in _expand(path[:m.start()] + alt + path[m.end():])]


def results_paths(text: str) -> list[str]:
    """The ``results/…`` paths a Markdown text names (globs and placeholders skipped)."""
    paths = []
    for m in re.finditer(r"(?<![\w/.])results/[\w./{},*<>-]*", text):
        raw = m.group(0).rstrip(".,)")
        if not any(c in raw for c in "*<>"):
            paths += _expand(raw)
    return paths


def test_results_paths_are_read_with_braces():
    text = "see `results/parity/gps.{json,png}` and results/zinc/{gcn,gin}-100k, or results/<run>."
    assert results_paths(text) == ["results/parity/gps.json", "results/parity/gps.png",
                                   "results/zinc/gcn-100k", "results/zinc/gin-100k"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_results_path_named_in_the_docs_exists(doc):
    missing = [p for p in results_paths(doc.read_text()) if not (REPO / p).exists()]
    assert not missing, f"{doc.relative_to(REPO)} names results that are not committed: {missing}"


def _last_test(run: str) -> tuple[float, float | None]:
    seeds = sorted((REPO / run).glob("seed_*/metrics.json"))
    return mean_std([json.loads(p.read_text())["last"]["test"]["mae"] for p in seeds])


def test_readme_gt_zinc_figure_is_the_committed_run():
    mean, std = _last_test("results/zinc/gt-lappe")
    epochs = {json.loads(p.read_text())["epochs"]
              for p in (REPO / "results/zinc/gt-lappe").glob("seed_*/metrics.json")}
    readme = (REPO / "README.md").read_text()
    assert f"GT + LapPE reached {mean:.3f} ± {std:.3f}" in readme
    assert f"after {int(sum(epochs) / len(epochs))} epochs" in readme


def test_parity_readme_epoch_times_are_the_summaries():
    text = (REPO / "benchmarks/parity/README.md").read_text()
    for model, label in (("egt", "EGT"), ("grpe", "GRPE"), ("gps", "GPS")):
        data = json.loads((REPO / f"results/parity/{model}.json").read_text())
        ours, off = (round(data[s]["epoch_seconds_mean"]) for s in ("ours", "official"))
        hours = (data["ours"]["wall_s"] + data["official"]["wall_s"]) / 3600
        row = re.search(rf"^\| {label}[^|]*\| (\d+) s \+ (\d+) s \| ([\d.]+) h \|$", text, re.M)
        assert row, f"no {label} row in benchmarks/parity/README.md"
        assert (int(row[1]), int(row[2])) == (ours, off), label
        assert float(row[3]) == pytest.approx(hours, abs=0.05), label


@pytest.mark.parametrize("model", ["egt", "grpe", "gps"])
def test_parity_sections_quote_the_summaries(model):
    """docs/reproduction.md's per-seed tables and Welch p-values are those of the summaries."""
    from graph_transformers.training.stats import parity_verdict
    data = json.loads((REPO / f"results/parity/{model}.json").read_text())
    text = (REPO / "docs/reproduction.md").read_text()
    section = text[text.index(f"### Same-budget parity: {model.upper()}"):]
    section = section[:section.find("\n### ", 1) if "\n### " in section[1:] else None]
    values = {s: [r["test_final"] for r in data[s]["runs"]] for s in ("ours", "official")}
    for side in ("ours", "official"):
        mean, std = mean_std(values[side])
        assert f"{mean:.3f} ± {std:.3f}" in section, (model, side)
    p = parity_verdict(values["ours"], values["official"])["p_value"]
    assert f"p = {p:.2f}" in section


def test_readme_egt_zinc_figure_is_the_committed_run():
    """The README's EGT ≈100k paragraph quotes the finished seeds' test MAE at their best epochs
    and the two seeds' mean ± s.d."""
    root = REPO / "results/zinc/egt-spe-do-100k"
    runs = [json.loads((root / f"seed_{s}" / "metrics.json").read_text()) for s in (0, 1)]
    readme = " ".join((REPO / "README.md").read_text().split())
    for m in runs:
        assert m["stopped_by"] == "max_epochs" and m["epochs"] == 600
        assert f"({m['best_epoch']}) is {m['test']['mae']:.3f}" in readme or \
            f"({m['best_epoch']}) {m['test']['mae']:.3f}" in readme
    summary = json.loads((root / "summary.json").read_text())["test"]["mae"]
    assert f"{summary['mean']:.3f} ± {summary['std']:.3f} over the two seeds" in readme


def test_readme_large_graph_table_is_the_committed_benchmark():
    """Every cell of the README's 10⁶ / 3·10⁶ table is the committed benchmark JSON's, and the
    CLI figures are the committed 10⁶-node run's."""
    results = json.loads((REPO / "benchmarks/results/large_graph.json").read_text())["results"]
    methods = ["gps_performer", "gps_linear", "exphormer", "sampled_gt", "pyg_sgformer",
               "pyg_polynormer"]
    fields = {"s / epoch": ("epoch_s", "{:.1f}"), "peak RSS, MiB": ("peak_rss_mib", "{:,.0f}"),
              "test accuracy": ("test_acc", "{:.3f}")}
    readme = (REPO / "README.md").read_text()
    rows = re.findall(r"^\| (10⁶|3·10⁶) \| ([^|]+) \|(.*)\|$", readme, re.M)
    assert len(rows) >= 5
    for size, field, cells in rows:
        n = {"10⁶": "1000000", "3·10⁶": "3000000"}[size]
        key, fmt = fields[field.strip()]
        got = [c.strip().strip("*") for c in cells.split("|")]
        assert got == [fmt.format(results[m][n][key]) for m in methods], (size, field)
    run = REPO / "results/synthetic_large/gps-linear-cluster-1m"
    m = json.loads((run / "metrics.json").read_text())
    peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                             (run / "time.txt").read_text())[1])
    assert f"peak of {peak_kib / 2**20:.2f} GiB" in readme
    assert f"accuracy was {100 * m['test']['accuracy']:.1f}%" in readme


def test_readme_csl_lappe_figure_is_the_committed_run():
    # the README's CSL paragraph quotes results/csl/gt-lappe (5 folds x 2 seeds)
    runs = sorted((REPO / "results/csl/gt-lappe").glob("fold_*/seed_*/metrics.json"))
    accs = [json.loads(p.read_text())["test"]["accuracy"] for p in runs]
    mean, std = mean_std(accs)
    readme = (REPO / "README.md").read_text()
    assert len(runs) == 10
    assert f"{100 * mean:.3f} ± {100 * std:.3f}%" in readme
    demo = load_config(REPO / "src/graph_transformers/configs/csl_gt.yaml")
    assert f"basis: {demo.encodings.lap_pe.basis}" in readme

