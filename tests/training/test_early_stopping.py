"""``trainer.early_stopping`` (issue 57, item 5c; it was refused as "not an argument of
lightning.Trainer"): Lightning's ``EarlyStopping`` on the figure the run selects its best
checkpoint by (or another it logs), recorded in ``metrics.json``."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from graph_transformers.data.registry import get_spec
from graph_transformers.training.callbacks import RunEarlyStopping, early_stopping
from graph_transformers.training.config import ConfigError, load_config
from graph_transformers.training.fit import _monitor, train
from graph_transformers.training.reproduction import COMPLETE

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=1", "model.hidden_dim=8",
        "model.num_heads=2", "data.batch_size=30", "trainer.threads=1"]


def _run(tmp_path: Path, *overrides: str) -> dict:
    config = load_config(CONFIG, [*FAST, *overrides])
    out = tmp_path / "run"
    train(config, out)
    return json.loads((out / "metrics.json").read_text())


@pytest.mark.slow
def test_a_run_that_stops_improving_stops_early_and_says_at_which_epoch(tmp_path):
    """min_delta 10 on a loss near 2.3: no later epoch counts as an improvement, so patience 1
    stops the run after epoch 2 of 5."""
    m = _run(tmp_path, "trainer.max_epochs=5",
             "trainer.early_stopping={monitor: val/loss, patience: 1, min_delta: 10.0}")
    assert m["stopped_by"] == "early_stopping" and m["epochs"] == 2
    record = m["early_stopping"]
    assert record["stopped_epoch"] == 2 and record["monitor"] == "val/loss"
    assert (record["mode"], record["patience"], record["min_delta"]) == ("min", 1, 10.0)
    with open(tmp_path / "run" / "epochs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["epoch"]) for r in rows] == [1, 2]
    assert record["best_score"] == pytest.approx(float(rows[0]["val/loss"]), rel=1e-5)
    assert "early_stopping" in COMPLETE  # a finished run for the reproduction tables


@pytest.mark.slow
def test_a_patient_rule_lets_the_run_finish_and_records_no_stop(tmp_path):
    m = _run(tmp_path, "trainer.max_epochs=2", "trainer.early_stopping={patience: 50}")
    assert m["stopped_by"] == "max_epochs" and m["epochs"] == 2
    assert m["early_stopping"]["stopped_epoch"] is None
    assert m["early_stopping"]["monitor"] == "val/accuracy"  # CSL's metric, the default


def test_the_default_monitor_and_mode_follow_the_checkpoint_choice():
    spec = get_spec("csl")  # accuracy: higher is better
    config = load_config(CONFIG, ["trainer.early_stopping={}"])
    es = early_stopping(config.trainer.early_stopping, spec.metric, _monitor(spec, config))
    assert isinstance(es, RunEarlyStopping)
    assert (es.monitor, es.mode, es.patience, es.min_delta) == ("val/accuracy", "max", 10, 0.0)
    by_loss = load_config(CONFIG, ["trainer.early_stopping={}", "protocol.select_by=loss"])
    es = early_stopping(by_loss.trainer.early_stopping, spec.metric, _monitor(spec, by_loss))
    assert (es.monitor, es.mode) == ("val/loss", "min")
    # another logged figure: its own mode, unless given
    other = load_config(CONFIG, ["trainer.early_stopping={monitor: train/loss}"])
    es = early_stopping(other.trainer.early_stopping, spec.metric, _monitor(spec, other))
    assert (es.monitor, es.mode) == ("train/loss", "min")
    given = load_config(CONFIG, ["trainer.early_stopping={monitor: val/accuracy, mode: min}"])
    es = early_stopping(given.trainer.early_stopping, spec.metric, _monitor(spec, given))
    assert es.mode == "min"


def test_bad_early_stopping_settings_are_one_line_errors():
    spec = get_spec("csl")
    config = load_config(CONFIG, ["trainer.early_stopping={monitor: val/mae}"])
    with pytest.raises(ConfigError, match=r"trainer.early_stopping.monitor='val/mae' is not "
                                          r"logged by this run; use one of val/loss, "
                                          r"val/accuracy, train/loss, train/accuracy"):
        early_stopping(config.trainer.early_stopping, spec.metric, _monitor(spec, config))
    with pytest.raises(ConfigError, match="trainer.early_stopping.patience"):
        load_config(CONFIG, ["trainer.early_stopping={patience: 0}"])
    with pytest.raises(ConfigError, match="trainer.early_stopping.patiense: unknown key"):
        load_config(CONFIG, ["trainer.early_stopping={patiense: 3}"])
    with pytest.raises(ConfigError, match="trainer.early_stopping.mode"):
        load_config(CONFIG, ["trainer.early_stopping={mode: lowest}"])
    # not passed to lightning.Trainer
    assert "early_stopping" not in load_config(
        CONFIG, ["trainer.early_stopping={}"]).trainer.trainer_kwargs()
