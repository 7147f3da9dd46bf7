"""``graph-transformers sweep``: the command runs a study whose best.yaml trains with ``train
--config``, prints one summary line, and refuses a bad search space with one line (exit 2)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from graph_transformers.cli import main
from graph_transformers.training.config import load_config

pytest.importorskip("optuna", reason="the [sweep] extra is not installed")
pytest.importorskip("optuna_integration", reason="the [sweep] extra is not installed")

CONFIG = Path(__file__).resolve().parents[2] / "src/graph_transformers/configs/csl_gt.yaml"
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=1", "model.num_heads=2",
        "data.batch_size=30", "trainer.threads=1", "encodings.lap_pe.k=4",
        "trainer.max_epochs=1"]


def _sweep(space: Path, out: Path, *extra: str) -> int:
    return main(["sweep", "--config", str(CONFIG), "--space", str(space), "--trials", "2",
                 "--out", str(out), *extra, "--set", *FAST])


@pytest.mark.slow
def test_sweep_command_prints_a_summary_and_best_yaml_trains(tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text("optim.lr: {type: float, low: 1e-4, high: 1e-2, log: true}\n"
                     "model.hidden_dim: {type: categorical, choices: [8, 16]}\n")
    out = tmp_path / "sweep"
    assert _sweep(space, out, "--pruner", "none") == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("sweep csl-gt-lappe: 2 trials (2 complete, 0 pruned, 0 failed); "
                           "best trial ")
    assert last.endswith(f"-> {out / 'best.yaml'}") and "val accuracy 0." in last
    best = yaml.safe_load((out / "best.yaml").read_text())
    assert best["name"] == "csl-gt-lappe-best" and best["model"]["hidden_dim"] in (8, 16)
    assert 1e-4 <= best["optim"]["lr"] <= 1e-2
    # best.yaml is an ordinary config: train --config runs it, with the best trial's values
    run = tmp_path / "best-run"
    assert main(["train", "--config", str(out / "best.yaml"), "--out", str(run)]) == 0
    saved = load_config(run / "config.yaml")
    assert (saved.optim.lr, saved.model.hidden_dim) == (best["optim"]["lr"],
                                                        best["model"]["hidden_dim"])


@pytest.mark.parametrize("text, expected", [
    ("optim.lrr: {type: float, low: 1e-4, high: 1e-2}",
     "optim.lrr=0.0001: invalid config: optim.lrr: unknown key"),
    ("optim.lr: {type: normal, low: 1e-4, high: 1e-2}", "optim.lr: unknown type 'normal'"),
    ("optim.lr: {type: float, low: 1e-2, high: 1e-4}", "optim.lr: low must be below high"),
])
def test_a_bad_space_is_one_error_line_and_exit_status_2(tmp_path, capsys, text, expected):
    space = tmp_path / "space.yaml"
    space.write_text(text + "\n")
    assert _sweep(space, tmp_path / "sweep") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"graph-transformers: error: {space}: ") and expected in err[0]
    assert not (tmp_path / "sweep").exists()  # refused before anything is written


def test_sweep_is_listed_with_its_options(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = capsys.readouterr().out
    for option in ("--config", "--space", "--trials", "--out", "--seeds", "--timeout",
                   "--pruner", "--set", "--data-dir"):
        assert option in text, option
