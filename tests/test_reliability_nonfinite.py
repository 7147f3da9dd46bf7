"""No non-finite figure reported as success (issue 26, silent results 1, 2 and item 2): a split
whose labels are all missing and a label beyond float32's range are input errors caught before
training; a metric that is NaN or infinite at the end of training or in ``evaluate`` makes the
command exit non-zero with one line naming the metric and the split."""
from __future__ import annotations

import json
import math

from graph_transformers.cli import main

from test_reliability import CSV_SETS, _molecule_csv, _train


def _errors(capsys) -> list[str]:
    """The CLI's error lines (log lines aside)."""
    return [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("graph-transformers: error:")]


def test_all_blank_regression_labels_are_refused_before_training(tmp_path, capsys):
    """Silent result 1: a regression CSV whose labels are all blank gave ``rmse: NaN``, exit 0."""
    path = _molecule_csv(tmp_path / "m.csv", [""] * 16)
    out = tmp_path / "run"
    assert _train(out, f"data.path={path}", *CSV_SETS) == 2
    err = _errors(capsys)
    assert len(err) == 1 and "every label of the train split" in err[0], err
    assert not (out / "metrics.json").exists() and not (out / "epochs.csv").exists()


def test_label_beyond_float32_is_a_data_error(tmp_path, capsys):
    """Silent result 2: a label of 1e30 became ``"rmse": Infinity`` once squared in float32."""
    labels = [str(float(i)) for i in range(16)]
    labels[9] = "1e39"
    path = _molecule_csv(tmp_path / "m.csv", labels)
    assert _train(tmp_path / "run", f"data.path={path}", *CSV_SETS) == 2
    err = capsys.readouterr().err
    assert "line 11" in err and "beyond float32's range" in err, err


def test_non_finite_metric_fails_the_run_and_evaluate(tmp_path, monkeypatch, capsys):
    """A metric that comes out NaN (here: the model's outputs made NaN at evaluation) ends
    ``train`` and ``evaluate`` with status 1 and one line naming the split and metric; no
    ``metrics.json`` claims a result."""
    labels = [str(float(i % 5)) for i in range(16)]
    path = _molecule_csv(tmp_path / "m.csv", labels)
    good = tmp_path / "good"
    assert _train(good, f"data.path={path}", *CSV_SETS) == 0
    from graph_transformers.training import module as module_mod
    real = module_mod.evaluate

    def nan_evaluate(*args, **kwargs):
        out = real(*args, **kwargs)
        return {k: (math.nan if k == "rmse" else v) for k, v in out.items()}

    import graph_transformers.training.runner as runner
    monkeypatch.setattr(runner, "evaluate", nan_evaluate)
    bad = tmp_path / "bad"
    capsys.readouterr()
    assert _train(bad, f"data.path={path}", *CSV_SETS) == 1
    err = _errors(capsys)
    assert len(err) == 1 and "rmse is nan at the last epoch" in err[0], err
    assert not (bad / "metrics.json").exists()
    assert main(["evaluate", str(good)]) == 1
    err = _errors(capsys)
    assert len(err) == 1 and "rmse is nan with the best checkpoint" in err[0], err
    # the good run's recorded figures are left as they were
    assert math.isfinite(json.loads((good / "metrics.json").read_text())["test"]["rmse"])
