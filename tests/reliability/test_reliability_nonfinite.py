"""No non-finite figure reported as success (issue 26, silent results 1, 2 and item 2): a split
whose labels are all missing and a label beyond float32's range are input errors caught before
training; a metric that is NaN or infinite at the end of training or in ``evaluate`` makes the
command exit non-zero with one line naming the metric and the split; a full disk during a
cache or checkpoint write is one line too (tested for real under a file-size limit)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from graph_transformers.cli import main

from test_reliability import CSV_SETS, _errors, _molecule_csv, _train


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

    import graph_transformers.training.finish as finish
    import graph_transformers.training.trained as trained
    monkeypatch.setattr(finish, "evaluate", nan_evaluate)  # the final evaluation
    monkeypatch.setattr(trained, "evaluate", nan_evaluate)  # graph-transformers evaluate
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


# ------------------------------------------------------------- a full disk, for real
_LIMITED = ("import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
            "from graph_transformers.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")


def _limited(args: list[str], limit: int, cache: Path) -> subprocess.CompletedProcess:
    """The CLI in a process whose files cannot grow past ``limit`` bytes (RLIMIT_FSIZE: the
    write fails as on a full disk)."""
    from test_reliability import _env
    env = dict(_env(), GRAPH_TRANSFORMERS_CACHE=str(cache))
    return subprocess.run([sys.executable, "-c", _LIMITED.format(limit=limit), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def _csl_args(out: Path) -> list[str]:
    from test_reliability import CONFIG, FAST
    return ["train", "--config", str(CONFIG), "--out", str(out), "--set", *FAST,
            "trainer.max_epochs=1"]


@pytest.mark.slow
def test_a_full_disk_ends_in_one_line_and_keeps_the_old_checkpoint(tmp_path):
    """Issue 26: a full disk during a cache or checkpoint write printed 70-85 lines (torch's
    "unexpected pos"). Here a file-size limit makes the write fail as a full disk does."""
    pytest.importorskip("resource", reason="needs resource.setrlimit (POSIX)")
    cache = tmp_path / "cache"
    # the dataset cache (≈0.9 MB) cannot be written under a 20 kB limit
    cut = _limited(_csl_args(tmp_path / "a"), 20_000, cache)
    errors = [x for x in cut.stderr.splitlines() if x.startswith("graph-transformers: error:")]
    assert cut.returncode == 1 and len(errors) == 1, cut.stderr[-2000:]
    assert "could not be written" in errors[0] and "Traceback" not in cut.stderr
    # with the cache built, a checkpoint (≈120 kB) cannot be written under a 60 kB limit
    done = tmp_path / "done"
    assert _limited(_csl_args(done), 10**9, cache).returncode == 0
    before = (done / "checkpoints" / "last.ckpt").read_bytes()
    resumed = _limited([*_csl_args(done), "trainer.max_epochs=2", "--resume"], 60_000, cache)
    errors = [x for x in resumed.stderr.splitlines()
              if x.startswith("graph-transformers: error:")]
    assert resumed.returncode == 1 and len(errors) == 1, resumed.stderr[-2000:]
    assert "cannot write checkpoint" in errors[0] and "Traceback" not in resumed.stderr
    assert (done / "checkpoints" / "last.ckpt").read_bytes() == before
