"""The reproduction table (`graph-transformers table`): verdicts, seeds, epochs, README sync."""
import json
from pathlib import Path

import pytest

from graph_transformers.cli import main
from graph_transformers.training.config import build_config, load_yaml
from graph_transformers.training.reproduction import (README_END, README_START, build_rows,
                                                      markdown, parity_markdown, parity_rows,
                                                      update_readme, verdict)

REPO = Path(__file__).resolve().parents[2]


def _config(name, reference=None, dataset="zinc", scheduler=None):
    raw = {"name": name, "model": {"name": "gt", "pe": None}, "data": {"name": dataset},
           "optim": {"scheduler": scheduler or {"name": "plateau", "min_lr": 1e-6}},
           "trainer": {"max_epochs": 500}}
    if reference is not None:
        raw["reference"] = reference
    return build_config(raw).to_dict()


def _run(path: Path, config: dict, seed: int, test: float, last_test: float | None = None,
         metric="mae", epochs=300, stopped=None, lrs=None):
    path.mkdir(parents=True)
    m = {"model": "gt", "dataset": config["data"]["name"], "name": config["name"],
         "config": config, "num_params": 1234, "epochs": epochs, "wall_time_s": 3600.0,
         "seed": seed, "metric": metric, "provenance": {"train": "reconstructed",
                                                        "val": "exact", "test": "exact"},
         "train": {metric: 0.1}, "val": {metric: test}, "test": {metric: test}}
    if stopped is not None:
        m["stopped_by"] = stopped
    if last_test is not None:
        m["last"] = {"epoch": epochs, "train": {metric: 0.1}, "val": {metric: last_test},
                     "test": {metric: last_test}}
    (path / "metrics.json").write_text(json.dumps(m))
    if lrs is not None:
        rows = "epoch,lr\n" + "".join(f"{i + 1},{lr}\n" for i, lr in enumerate(lrs))
        (path / "epochs.csv").write_text(rows)


def test_rows_verdicts_seeds_and_epochs(tmp_path):
    ref = {"source": "Paper, Table 1", "value": 0.226, "std": 0.014, "epoch": "last",
           "epochs": 287.5}
    res = tmp_path / "results"
    # two seeds, schedule complete, the paper's (last) epoch: mean 0.25 is within 0.226 ± 2·0.014
    cfg = _config("a", ref)
    _run(res / "zinc/a/seed_41", cfg, 41, test=0.9, last_test=0.24, stopped="min_lr")
    _run(res / "zinc/a/seed_42", cfg, 42, test=0.9, last_test=0.26, stopped="min_lr")
    # outside, worse
    _run(res / "zinc/b", _config("b", ref), 0, test=0.3, last_test=0.3, stopped="max_epochs",
         epochs=500)
    # stopped by its time limit: budget not run, with the fraction of the paper's epochs
    _run(res / "zinc/c", _config("c", ref), 0, test=0.2, last_test=0.2, stopped="max_time",
         epochs=115)
    # no reference: not a table row
    _run(res / "zinc/d", _config("d"), 0, test=0.2)
    # written before `stopped_by` existed: the plateau floor is read back from epochs.csv
    _run(res / "zinc/e", _config("e", ref), 0, test=0.2, last_test=0.2, epochs=3,
         lrs=[1e-3, 5e-4, 5e-7])
    rows = {r["name"]: r for r in build_rows(res, relative_to=tmp_path)}
    assert set(rows) == {"a", "b", "c", "e"}
    a = rows["a"]
    assert a["ours"]["values"] == [0.24, 0.26] and a["ours"]["mean"] == pytest.approx(0.25)
    # the sample s.d. (n − 1): √(2 · 0.01² / 1)
    assert a["ours"]["std"] == pytest.approx(0.02 ** 0.5 * 0.1, abs=1e-6)
    assert a["ours"]["seeds"] == 2
    assert a["ours"]["seed_ids"] == [41, 42] and a["ours"]["epoch_used"] == "last"
    assert a["verdict"] == "within 2σ" and a["schedule_complete"]
    assert a["run"] == "results/zinc/a"
    assert a["provenance"] == "train: reconstructed; val, test: exact"
    assert rows["b"]["verdict"] == "outside" and rows["b"]["direction"] == "worse"
    c = rows["c"]
    assert c["verdict"] == "budget not run" and not c["schedule_complete"]
    assert c["budget_fraction"] == pytest.approx(115 / 287.5, abs=1e-3)
    assert rows["e"]["stopped_by"] == ["min_lr"] and rows["e"]["verdict"] == "within 2σ"
    text = markdown(list(rows.values()))
    assert "| 0.226 ± 0.014 | 0.250 ± 0.014 | 2 |" in text and "Paper, Table 1" in text
    assert rows["e"]["ours"]["std"] is None and "| within 2σ, 1 seed |" in text
    assert "2·√(σ_paper² + σ_ours²)" in text
    assert "stopped at 40% of paper's epochs" in text


def test_percent_metrics_best_epoch_and_fixed_budgets(tmp_path):
    """Accuracy-type metrics compare in percent; a fixed-length schedule shorter than the
    paper's (a compressed run) is not a complete one even though it reached its own end."""
    ref = {"source": "T", "value": 73.169, "std": 0.622, "epochs": 200}
    cos = {"name": "cosine"}
    _run(tmp_path / "r/x", _config("x", ref, "cluster", cos), 0, test=0.7301,
         metric="weighted_accuracy", epochs=200, stopped="max_epochs")
    _run(tmp_path / "r/y", _config("y", ref, "cluster", cos), 0, test=0.7301,
         metric="weighted_accuracy", epochs=50, stopped="max_epochs")
    rows = {r["name"]: r for r in build_rows(tmp_path / "r")}
    assert rows["x"]["ours"]["mean"] == pytest.approx(73.01)
    assert rows["x"]["ours"]["epoch_used"] == "best" and rows["x"]["verdict"] == "within 2σ"
    assert rows["y"]["verdict"] == "budget not run"


def test_verdict_directions():
    paper = {"value": 0.2, "std": 0.01}
    assert verdict(0.1, paper, True, higher_is_better=False) == ("outside", "better")
    assert verdict(0.3, paper, True, higher_is_better=False) == ("outside", "worse")
    assert verdict(0.21, paper, True, higher_is_better=False) == ("within 2σ", "worse")
    # 2·√(σ_paper² + σ_ours²): our own spread widens the band (0.2 + 2·√(0.01² + 0.02²) = 0.245)
    assert verdict(0.24, paper, True, False, ours_std=0.02) == ("within 2σ", "worse")
    assert verdict(0.25, paper, True, False, ours_std=0.02) == ("outside", "worse")
    assert verdict(0.24, paper, True, False, ours_std=None) == ("outside", "worse")
    assert verdict(0.3, {"value": 0.2, "std": None}, True, False)[0] == "no paper s.d."
    # float32 metrics: 0.1 stored as 0.10000000149 is the paper's 10.000 exactly
    assert verdict(10.000000149, {"value": 10.0, "std": 0.0}, True, True) == ("within 2σ", None)
    assert verdict(95.0, {"value": None, "std": None}, True, True) == ("no paper value", None)
    assert verdict(0.1, paper, False, False)[0] == "budget not run"


def test_reference_is_not_inherited_from_a_base_config():
    assert load_yaml(REPO / "configs/zinc/gt.yaml")["reference"]["value"] == 0.226
    assert load_yaml(REPO / "configs/zinc/gt_nope.yaml")["reference"]["value"] == 0.264
    assert "reference" not in load_yaml(REPO / "configs/zinc/egt_vn_distance.yaml")


def test_update_readme_rewrites_only_its_section(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# T\nbefore\n{README_START}\nold\n{README_END}\nafter\n")
    assert update_readme(readme, "| new |\n")
    assert readme.read_text() == f"# T\nbefore\n{README_START}\n| new |\n{README_END}\nafter\n"
    assert not update_readme(readme, "| new |\n")
    readme.write_text("no markers\n")
    with pytest.raises(ValueError, match="no reproduction-table markers"):
        update_readme(readme, "x")


def test_cli_table_writes_json_and_markdown(tmp_path, capsys):
    ref = {"source": "S", "value": 0.226, "std": 0.014}
    _run(tmp_path / "results/zinc/a", _config("a", ref), 0, test=0.23, stopped="min_lr")
    assert main(["table", str(tmp_path / "results"), "--configs", str(tmp_path / "none")]) == 0
    rows = json.loads((tmp_path / "results/reproduction.json").read_text())["rows"]
    assert len(rows) == 1 and rows[0]["verdict"] == "within 2σ"
    assert {"model", "dataset", "config", "metric", "paper", "ours", "epochs",
            "schedule_complete", "provenance", "verdict"} <= set(rows[0])
    assert "| 0.226 ± 0.014 | 0.230 | 1 |" in (tmp_path / "results/reproduction.md").read_text()
    assert "1 rows written" in capsys.readouterr().out
    assert main(["table", str(tmp_path / "missing")]) == 2


def test_committed_table_and_readme_match_the_committed_runs(monkeypatch):
    """results/reproduction.{json,md} and the README section are regenerated, never edited."""
    monkeypatch.chdir(REPO)
    rows = build_rows("results", "configs", relative_to=REPO)
    parity = parity_rows("results", relative_to=REPO)
    committed = json.loads((REPO / "results/reproduction.json").read_text())
    assert committed["rows"] == json.loads(json.dumps(rows))
    assert committed.get("parity", []) == json.loads(json.dumps(parity))
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index(README_START) + len(README_START) + 1:readme.index(README_END)]
    assert section == markdown(rows) + ("\n" + parity_markdown(parity) if parity else "")


def _parity_json(model, ours, official, label):
    """A harness summary; each side's two seeds lie at mean ± s.d./√2 (sample s.d. = s.d.)."""
    side = lambda m, sd: {"test_mean": m, "test_std": sd, "val_mean": m + 0.01,  # noqa: E731
                          "val_std": sd, "num_params": 1000, "seconds_per_step": 0.1,
                          "runs": [{"test_final": m - sd / 2 ** 0.5},
                                   {"test_final": m + sd / 2 ** 0.5}]}
    return {"model": model, "official_repo": "someone/" + model, "official_commit": "a" * 40,
            "epochs": 40, "seeds": [0, 1], "ours": side(*ours), "official": side(*official),
            "verdict": {"label": label, "ours_minus_official": ours[0] - official[0],
                        "spread": max(ours[1], official[1])},
            "conditions": {"config": f"configs/zinc/{model}.yaml", "dataset": "zinc",
                           "schedule": {"mode": "compressed"}, "device_name": "CPU"}}


def test_parity_rows_in_json_markdown_and_readme(tmp_path):
    """results/parity/<model>.json (the harness's output) become the table's parity rows."""
    ref = {"source": "S", "value": 0.226, "std": 0.014}
    _run(tmp_path / "results/zinc/a", _config("a", ref), 0, test=0.23, stopped="min_lr")
    (tmp_path / "results/parity").mkdir(parents=True)
    (tmp_path / "results/parity/gps.json").write_text(
        json.dumps(_parity_json("gps", (0.21, 0.01), (0.22, 0.02), "parity")))
    (tmp_path / "results/parity/notes.json").write_text(json.dumps({"other": 1}))  # skipped
    assert main(["table", str(tmp_path / "results"), "--configs", str(tmp_path / "none")]) == 0
    data = json.loads((tmp_path / "results/reproduction.json").read_text())
    assert len(data["rows"]) == 1 and len(data["parity"]) == 1
    row = data["parity"][0]
    assert row["model"] == "gps" and row["verdict"] == "parity" and row["epochs"] == 40
    assert row["ours"]["test_mean"] == 0.21 and row["official"]["test_std"] == 0.02
    md = (tmp_path / "results/reproduction.md").read_text()
    assert "| gps | someone/gps@aaaaaaaa | 40 | 2 | 0.210 ± 0.010 | 0.220 ± 0.020 |" in md
    assert row["welch_p"] > 0.05 and "Welch's t-test" in md


def test_parity_verdict_is_recomputed_with_welchs_test(tmp_path):
    """A summary written under the old rule ("better": means farther apart than the larger
    s.d.) is judged again: parity unless Welch's test gives p < 0.05."""
    (tmp_path / "parity").mkdir()
    (tmp_path / "parity/egt.json").write_text(
        json.dumps(_parity_json("egt", (0.538, 0.021), (0.572, 0.009), "better")))
    (tmp_path / "parity/gps.json").write_text(
        json.dumps(_parity_json("gps", (0.100, 0.001), (0.200, 0.001), "parity")))
    rows = {r["model"]: r for r in parity_rows(tmp_path)}
    assert rows["egt"]["verdict"] == "parity" and rows["egt"]["welch_p"] > 0.05
    assert rows["gps"]["verdict"] == "better" and rows["gps"]["welch_p"] < 0.05


def test_sliced_runs_are_in_progress_with_their_device(tmp_path):
    """A run continued slice by slice (``stopped_by: slice``) is "in progress: N of M epochs"
    with the kind of device that trained it, not "budget not run"."""
    ref = {"source": "S", "value": 0.226, "std": 0.014, "epochs": 600}
    _run(tmp_path / "gpu_runs/a", _config("a", ref), 0, test=0.5, stopped="slice", epochs=42)
    metrics = json.loads((tmp_path / "gpu_runs/a/metrics.json").read_text())
    (tmp_path / "gpu_runs/a/metrics.json").write_text(json.dumps({**metrics,
                                                                  "device": "NVIDIA H100"}))
    _run(tmp_path / "zinc/b", _config("b", ref), 0, test=0.5, stopped="slice", epochs=7)
    rows = {r["name"]: r for r in build_rows(tmp_path, relative_to=tmp_path)}
    assert rows["a"]["verdict"] == "in progress" and rows["a"]["in_progress"]
    text = markdown(list(rows.values()))
    assert "in progress: 42 of 600 epochs (GPU)" in text
    assert "in progress: 7 of 600 epochs (CPU)" in text
