"""A run is bound to its data, config and checkpoints (issue 26, silent results 3-7): each test
reproduces a probe that used to succeed silently and now ends in one line naming what changed."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import yaml

from graph_transformers.cli import main

from test_reliability import CONFIG, CSV_SETS, FAST, _errors, _molecule_csv, _train


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and "lightning_logs" not in p.parts}


@pytest.fixture(scope="module")
def csl_runs(tmp_path_factory) -> tuple[Path, Path]:
    """Two finished 1-epoch CSL runs of the same architecture, seeds 0 and 1."""
    root = tmp_path_factory.mktemp("csl")
    for seed in (0, 1):
        assert main(["train", "--config", str(CONFIG), "--out", str(root / f"s{seed}"), "--set",
                     *FAST, "trainer.max_epochs=1", f"seed={seed}"]) == 0
    return root / "s0", root / "s1"


def test_resume_after_the_csv_changed_is_refused(tmp_path, capsys):
    """Probe 3: epochs 1-2 on the old labels, 3-4 on the new ones, one best epoch chosen across
    both. Now refused, the run directory untouched; --allow-data-change records it."""
    path = _molecule_csv(tmp_path / "m.csv", [str(float(i % 5)) for i in range(16)])
    out = tmp_path / "run"
    assert _train(out, f"data.path={path}", *CSV_SETS) == 0
    first = json.loads((out / "metrics.json").read_text())
    assert set(first["data_fingerprint"]) == {"train", "val", "test"}
    assert len(first["run_id"]) == 32
    _molecule_csv(path, [str(float(i % 7)) for i in range(16)])  # edited in place
    before = _files(out)
    capsys.readouterr()
    assert _train(out, f"data.path={path}", *CSV_SETS, "trainer.max_epochs=4", resume=True) == 2
    (err,) = _errors(capsys)
    assert "differ from those" in err and "--allow-data-change" in err, err
    assert _files(out) == before
    assert main(["train", "--config", str(CONFIG), "--out", str(out), "--resume",
                 "--allow-data-change", "--set", *FAST, f"data.path={path}", *CSV_SETS,
                 "trainer.max_epochs=4"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["data_changed"] and metrics["run_id"] == first["run_id"]


def test_evaluate_after_the_csv_changed_is_refused(tmp_path, capsys):
    """Probe 4: ``evaluate`` scored the edited file (test RMSE 42.3 against 4.10 recorded)."""
    path = _molecule_csv(tmp_path / "m.csv", [str(float(i % 5)) for i in range(16)])
    out = tmp_path / "run"
    assert _train(out, f"data.path={path}", *CSV_SETS) == 0
    assert main(["evaluate", str(out)]) == 0
    _molecule_csv(path, [str(100.0 + i) for i in range(16)])
    capsys.readouterr()
    assert main(["evaluate", str(out)]) == 2
    (err,) = _errors(capsys)
    assert "split(s) differ from those checkpoint best.ckpt was trained on" in err, err
    assert main(["evaluate", str(out), "--allow-data-change"]) == 0


def test_evaluate_with_another_fold_in_config_yaml_is_refused(csl_runs, tmp_path, capsys):
    """Probe 5: ``data.fold`` edited in the run's config.yaml evaluated fold 3 with no warning,
    though most of its test graphs were in fold 0's training split."""
    run = tmp_path / "run"
    shutil.copytree(csl_runs[0], run)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["data"]["fold"] = 3
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    capsys.readouterr()
    assert main(["evaluate", str(run)]) == 2
    (err,) = _errors(capsys)
    assert "data.fold: 0 in checkpoint best.ckpt, 3 in" in err, err


def test_checkpoint_with_flipped_bytes_is_refused(csl_runs, tmp_path, capsys):
    """Probe 6: 64 flipped bytes inside a tensor loaded and evaluated, exit 0."""
    run = tmp_path / "run"
    shutil.copytree(csl_runs[0], run)
    ckpt = run / "checkpoints" / "best.ckpt"
    data = bytearray(ckpt.read_bytes())
    start = len(data) // 2  # inside the weights, away from the archive's directory
    for i in range(start, start + 64):
        data[i] ^= 0xFF
    ckpt.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["evaluate", str(run)]) == 2
    (err,) = _errors(capsys)
    assert "does not match its checksums" in err, err


def test_any_damaged_span_of_a_checkpoint_is_caught(csl_runs, tmp_path):
    """Flipping any 64 bytes of a checkpoint (20 random spans) makes loading it fail loudly."""
    from graph_transformers.errors import CheckpointError
    from graph_transformers.training.checkpoint import load_checkpoint
    data = (csl_runs[0] / "checkpoints" / "last.ckpt").read_bytes()
    rng = random.Random(0)
    for trial in range(20):
        d = bytearray(data)
        start = rng.randrange(0, len(d) - 64)
        for i in range(start, start + 64):
            d[i] ^= 0xFF
        path = tmp_path / f"c{trial}.ckpt"
        path.write_bytes(bytes(d))
        with pytest.raises(CheckpointError):
            load_checkpoint(path)


def test_another_runs_checkpoint_is_refused(csl_runs, tmp_path, capsys):
    """Probe 7: a checkpoint of another run of the same architecture was used by ``predict`` and
    ``evaluate``."""
    run = tmp_path / "run"
    shutil.copytree(csl_runs[0], run)
    shutil.copy(csl_runs[1] / "checkpoints" / "best.ckpt", run / "checkpoints" / "best.ckpt")
    capsys.readouterr()
    assert main(["evaluate", str(run)]) == 2
    (err,) = _errors(capsys)
    assert "was written by another run" in err, err
    from graph_transformers.errors import CheckpointError
    from graph_transformers.prediction import load_run
    with pytest.raises(CheckpointError, match="written by another run"):
        load_run(run)
    assert main(["evaluate", str(csl_runs[1])]) == 0  # in its own run it is fine
