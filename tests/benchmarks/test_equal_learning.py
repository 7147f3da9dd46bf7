"""``benchmarks/equal_learning.py`` (issue 56, item 6) on hand-made finished runs: the overrides
of each mode, the per-mode statistics at the last epoch, Welch's verdict (parity for runs that
agree within their spread, "worse" for a compiled mode clearly behind), the report and the
copies of the runs (never their checkpoints)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import equal_learning as el  # noqa: E402


def _run(d: Path, test: float, val: float, epochs: int = 3) -> None:
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({
        "epochs": epochs, "epoch_time_s": 2.0, "test": {"mae": test + 0.01},
        "last": {"epoch": epochs, "test": {"mae": test}, "val": {"mae": val}}}))
    rows = ["epoch,val/mae"] + [f"{e},{val + 0.1 * (epochs - e)}" for e in range(1, epochs + 1)]
    (d / "epochs.csv").write_text("\n".join(rows) + "\n")
    (d / "checkpoints").mkdir()
    (d / "checkpoints" / "last.ckpt").write_text("not copied")


def test_overrides_per_mode_and_compressed_gps_warmup():
    eager = el.overrides("gt", "eager", 1, 40)
    compiled = el.overrides("gt", "compiled", 1, 40)
    assert eager == ["seed=1", "trainer.max_epochs=40"]
    assert set(compiled) - set(eager) == {"data.static_shapes=true", "model.compile=full"}
    assert "optim.scheduler.warmup_epochs=1" in el.overrides("gps", "eager", 0, 40)
    assert "optim.scheduler.warmup_epochs=5" in el.overrides("gps", "eager", 0, 200)


def test_summary_verdicts_report_and_copies(tmp_path):
    work = tmp_path / "work"
    for seed, (a, b) in enumerate([(0.30, 0.31), (0.32, 0.30)]):
        _run(el.run_dir(work, "gt", "eager", seed), a, a + 0.02)
        _run(el.run_dir(work, "gt", "compiled", seed), b, b + 0.02)
    for seed, (a, b) in enumerate([(0.300, 0.500), (0.301, 0.502)]):
        _run(el.run_dir(work, "gps", "eager", seed), a, a)
        _run(el.run_dir(work, "gps", "compiled", seed), b, b)
    result = el.summarize(work, ["gt", "gps"], [0, 1])
    gt, gps = result["models"]["gt"], result["models"]["gps"]
    assert gt["verdict_last_test_mae"]["label"] == "parity"
    assert gps["verdict_last_test_mae"]["label"] == "worse"
    assert abs(gt["modes"]["eager"]["last_test_mae"]["mean"] - 0.31) < 1e-12
    curve = gt["modes"]["compiled"]["runs"][0]["val_curve"]
    assert [round(v, 9) for v in curve] == [0.53, 0.43, 0.33]
    result["meta"] = {"epochs": 3, "seeds": [0, 1], "cpu": "cpu", "threads": 2, "torch": "x"}
    report = el.markdown(result)
    assert "| gt | compiled | 2 |" in report and "| parity |" in report and "| worse |" in report
    el.copy_runs(work, tmp_path / "results", ["gt"], [0, 1])
    copied = tmp_path / "results" / "gt" / "compiled" / "seed_1"
    assert (copied / "metrics.json").is_file() and (copied / "epochs.csv").is_file()
    assert not (copied / "checkpoints").exists()


def test_a_model_with_one_mode_missing_gets_no_verdict(tmp_path):
    _run(el.run_dir(tmp_path, "gt", "eager", 0), 0.3, 0.3)
    result = el.summarize(tmp_path, ["gt"], [0, 1])
    assert "verdict_last_test_mae" not in result["models"]["gt"]
    assert result["models"]["gt"]["modes"]["compiled"]["runs"] == []


def test_a_run_gone_from_the_work_folder_is_read_from_its_committed_copy(tmp_path):
    """A new machine has no run folders: the committed copy counts as finished (not retrained)
    and enters the comparison; a run in the work folder wins over its copy."""
    work, results = tmp_path / "work", tmp_path / "results"
    _run(el.run_dir(results, "gt", "eager", 0), 0.40, 0.40)
    _run(el.run_dir(results, "gt", "compiled", 0), 0.50, 0.50)
    _run(el.run_dir(work, "gt", "compiled", 0), 0.30, 0.30)
    assert el.finished_run("gt", "eager", 0, work, results) == el.run_dir(results, "gt", "eager", 0)
    assert el.finished_run("gt", "eager", 1, work, results) is None
    args = type("Args", (), {"work": str(work), "results": str(results)})()
    assert el.train("gt", "eager", 0, args) == el.run_dir(results, "gt", "eager", 0)
    modes = el.summarize(work, ["gt"], [0, 1], results)["models"]["gt"]["modes"]
    assert modes["eager"]["last_test_mae"]["mean"] == 0.40
    assert modes["compiled"]["last_test_mae"]["mean"] == 0.30
    assert el.summarize(work, ["gt"], [0, 1])["models"]["gt"]["modes"]["eager"]["runs"] == []
