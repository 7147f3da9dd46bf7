"""Hyperparameter sweeps on Optuna (training.sweep, training.search_space): the space's one-line
errors, trials as ordinary run directories in a SQLite study, best.yaml, pruning, and a sweep
killed with SIGKILL that resumes keeping its completed trial."""
from __future__ import annotations

import contextlib
import csv
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from graph_transformers.errors import ConfigError, RunError
from graph_transformers.training.config import load_config
from graph_transformers.training.search_space import check_space, load_space, parse_space
from graph_transformers.training.sweep import objective_of, run_sweep, write_outputs

optuna = pytest.importorskip("optuna", reason="the [sweep] extra is not installed")
pytest.importorskip("optuna_integration", reason="the [sweep] extra is not installed")

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
#: a tiny GT on the embedded CSL, two epochs, one thread (about a second a trial)
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=1", "model.num_heads=2",
        "data.batch_size=30", "trainer.threads=1", "encodings.lap_pe.k=4",
        "trainer.max_epochs=2"]
SPACE = """\
optim.lr: {type: float, low: 1e-4, high: 1e-2, log: true}
model.hidden_dim: {type: int, low: 8, high: 16, step: 8}
model.norm: {type: categorical, choices: [batch, layer]}
"""


def _space(tmp_path: Path, text: str = SPACE, name: str = "space.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _base() -> dict:
    from graph_transformers.training.config_yaml import apply_overrides, load_yaml
    return apply_overrides(load_yaml(CONFIG), FAST)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _study(out: Path):
    storage = f"sqlite:///{out / 'study.db'}"
    return optuna.load_study(study_name=optuna.get_all_study_names(storage)[0], storage=storage)


# ----------------------------------------------------------------------------- the space
def test_space_reads_the_three_parameter_types(tmp_path):
    space = load_space(_space(tmp_path))
    lr, hidden, norm = space
    assert (lr.key, lr.type, lr.low, lr.high, lr.log, lr.step) == \
        ("optim.lr", "float", 1e-4, 1e-2, True, None)  # YAML 1.1's '1e-4' text read as a float
    assert isinstance(lr.low, float)
    assert (hidden.type, hidden.low, hidden.high, hidden.step) == ("int", 8, 16, 8)
    assert norm.choices == ("batch", "layer") and norm.probes() == ["batch", "layer"]
    assert hidden.to_dict() == {"type": "int", "low": 8, "high": 16, "log": False, "step": 8}
    # an integer step of 1 is the default grid
    assert parse_space({"model.num_layers": {"type": "int", "low": 1, "high": 4, "step": 1}}
                       )[0].step is None


@pytest.mark.parametrize("text, expected", [
    ("optim.lr: {type: uniform, low: 0.1, high: 1}",
     "optim.lr: unknown type 'uniform'; use float, int or categorical"),
    ("optim.lr: {type: float, low: 0.1, high: 0.01}",
     "optim.lr: low must be below high (got low=0.1, high=0.01)"),
    ("optim.lr: {type: float, low: 0.1, high: 0.1}", "low must be below high"),
    ("optim.lr: {type: float, low: 0.0, high: 0.1, log: true}",
     "optim.lr: a log scale needs low > 0, got low=0.0"),
    ("model.hidden_dim: {type: int, low: 0, high: 8, log: true}", "a log scale needs low >= 1"),
    ("optim.lr: {type: float, low: 0.1}", "optim.lr: a float parameter needs low and high"),
    ("optim.lr: {type: float, low: abc, high: 1}", "low must be a finite number, got 'abc'"),
    ("optim.lr: {type: float, low: .inf, high: 1}", "low must be a finite number"),
    ("model.hidden_dim: {type: int, low: 8.5, high: 16}", "low must be an integer, got 8.5"),
    ("model.hidden_dim: {type: int, low: true, high: 16}", "low must be an integer, got True"),
    ("model.hidden_dim: {type: int, low: 8, high: 20, step: 8}",
     "high - low (12) is not a multiple of step (8)"),
    ("model.hidden_dim: {type: int, low: 8, high: 16, step: 0}", "step must be positive"),
    ("optim.lr: {type: float, low: 0.1, high: 1.0, log: true, step: 0.1}",
     "log and step cannot be combined"),
    ("optim.lr: {type: float, low: 0.1, high: 1.0, log: yes please}",
     "log must be true or false"),
    ("optim.lr: {type: float, low: 0.1, high: 1.0, lo: 3}",
     "unknown option 'lo' for type float; a float parameter takes low, high, log, step"),
    ("model.num_layers: {type: categorical, choices: []}", "needs choices: a non-empty list"),
    ("model.num_layers: {type: categorical, choices: 4}", "needs choices: a non-empty list"),
    ("model.num_layers: {type: categorical, choices: [[1, 2]]}",
     "choices are null, booleans, numbers or strings"),
    ("model.num_layers: {type: categorical, choices: [2, 4, 2]}", "choice 2 is given twice"),
    ("optim.lr: 0.001", "optim.lr: a parameter is a mapping with type: float, int or categorical"),
    ("optim.lr: {low: 0.1, high: 1}", "a parameter is a mapping with type"),
    ("- optim.lr", "a search space must be a YAML mapping of config keys"),
    ("", "the search space is empty"),
    ("optim..lr: {type: float, low: 0.1, high: 1}", "'optim..lr' is not a dotted config key"),
    ("model: {type: categorical, choices: [gt]}\n"
     "model.hidden_dim: {type: int, low: 8, high: 16}",
     "model and model.hidden_dim overlap (one is a section of the other)"),
    ("optim.lr: {type: float, low: 0.1, high: 1}\noptim.lr: {type: float, low: 0.2, high: 1}",
     "line 2, column 1: invalid YAML: key 'optim.lr' is given twice (first on line 1)"),
])
def test_each_space_error_is_one_line_naming_file_and_key(tmp_path, text, expected):
    path = _space(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_space(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(str(path) + ": ")
    assert expected in message


def test_space_keys_are_resolved_with_the_config_loader(tmp_path):
    base = _base()
    check_space(load_space(_space(tmp_path)), base, "s.yaml")  # the valid space passes
    cases = [("optim.lrr: {type: float, low: 1e-4, high: 1e-2}",
              "s.yaml: optim.lrr=0.0001: invalid config: optim.lrr: unknown key"),
             ("model.hidden_dm: {type: int, low: 8, high: 16}",
              "s.yaml: model.hidden_dm=8: invalid config: model.hidden_dm: unknown key"),
             # the base config's values are checked too: a value of the wrong type
             ("model.hidden_dim: {type: categorical, choices: [16, wide]}",
              's.yaml: model.hidden_dim="wide": invalid config: model.hidden_dim: '),
             ("optim.lr.x: {type: float, low: 0.1, high: 1}",
              "'lr' is not a section")]
    for text, expected in cases:
        with pytest.raises(ConfigError) as err:
            check_space(parse_space(yaml.safe_load(text), "s.yaml"), base, "s.yaml")
        assert expected in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_sweep_without_optuna_names_the_extra(tmp_path, monkeypatch):
    from graph_transformers._optional import MissingDependencyError
    for module in ("optuna", "optuna_integration"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError,
                       match=r"graph-transformers sweep needs .*pip install "
                             r"'graph-transformers\[sweep\]'"):
        run_sweep(CONFIG, _space(tmp_path), tmp_path / "out", 1, overrides=FAST)
    assert not (tmp_path / "out").exists()


def test_multi_device_trials_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match="trainer.devices must be 1"):
        run_sweep(CONFIG, _space(tmp_path), tmp_path / "out", 1,
                  overrides=[*FAST, "trainer.devices=2"])
    with pytest.raises(ConfigError, match=r"--trials and --seeds must be >= 1"):
        run_sweep(CONFIG, _space(tmp_path), tmp_path / "out", 0, overrides=FAST)
    assert not (tmp_path / "out").exists()


def test_the_direction_follows_the_metric():
    assert objective_of(load_config(CONFIG)) == ("accuracy", "maximize")
    assert objective_of(load_config(REPO / "configs/zinc/gt.yaml")) == ("mae", "minimize")
    assert objective_of(load_config(CONFIG, ["data.metric=accuracy"]))[1] == "maximize"


@pytest.mark.parametrize("direction", ["maximize", "minimize"])
def test_best_yaml_holds_the_best_trial_for_the_direction(tmp_path, direction):
    """Distinct values (made by hand): best.yaml is the base config with the values of the
    highest (maximize) or lowest (minimize) trial, and trials.csv has one row per trial."""
    space = load_space(_space(tmp_path))
    dists = {"optim.lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True),
             "model.hidden_dim": optuna.distributions.IntDistribution(8, 16, step=8),
             "model.norm": optuna.distributions.CategoricalDistribution(["batch", "layer"])}
    points = [(0.3, {"optim.lr": 1e-3, "model.hidden_dim": 8, "model.norm": "batch"}),
              (0.7, {"optim.lr": 5e-3, "model.hidden_dim": 16, "model.norm": "layer"}),
              (0.1, {"optim.lr": 2e-4, "model.hidden_dim": 16, "model.norm": "batch"})]
    study = optuna.create_study(direction=direction, study_name="csl-gt-lappe")
    for value, params in points:
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dists,
                                                  value=value, user_attrs={"run_dir": "x"}))
    out = tmp_path / "out"
    summary = write_outputs(optuna, study, space, _base(), out, "accuracy")
    best_value, best_params = (max if direction == "maximize" else min)(points)
    assert summary["best"]["value"] == best_value and summary["best"]["params"] == best_params
    config = load_config(out / "best.yaml")
    assert config.optim.lr == best_params["optim.lr"]
    assert config.model.hidden_dim == best_params["model.hidden_dim"]
    assert config.model.norm == best_params["model.norm"]
    assert config.name == "csl-gt-lappe-best" and config.trainer.max_epochs == 2  # the base
    rows = _rows(out / "trials.csv")
    assert [float(r["value"]) for r in rows] == [v for v, _ in points]
    assert [r["model.norm"] for r in rows] == ["batch", "layer", "batch"]
    assert {r["state"] for r in rows} == {"COMPLETE"}


def test_the_pruning_callback_prunes_a_trial_whose_first_epoch_is_bad():
    """The callback the sweep attaches (val/<metric>, step = epoch) with a deterministic median
    rule: one finished trial at 0.9 after epoch 1; a trial reporting 0.1 there is pruned, one
    reporting 0.95 goes on; the sanity-check validation reports nothing."""
    import torch
    from optuna_integration import PyTorchLightningPruningCallback
    study = optuna.create_study(direction="maximize",
                                pruner=optuna.pruners.MedianPruner(n_startup_trials=1))
    dist = {"x": optuna.distributions.FloatDistribution(0, 1)}
    study.add_trial(optuna.trial.create_trial(params={"x": 0.5}, distributions=dist, value=0.9,
                                              intermediate_values={0: 0.9}))

    class Trainer:
        def __init__(self, value, sanity=False):
            self.sanity_checking = sanity
            self.callback_metrics = {"val/accuracy": torch.tensor(value)}

    class Module:
        current_epoch = 0

    bad = study.ask()
    callback = PyTorchLightningPruningCallback(bad, "val/accuracy")
    callback.on_validation_end(Trainer(0.0, sanity=True), Module())  # ignored
    with pytest.raises(optuna.TrialPruned):
        callback.on_validation_end(Trainer(0.1), Module())
    good = study.ask()
    PyTorchLightningPruningCallback(good, "val/accuracy").on_validation_end(Trainer(0.95),
                                                                           Module())
    running = {t.number: t for t in study.get_trials(states=(optuna.trial.TrialState.RUNNING,))}
    assert running[bad.number].intermediate_values == pytest.approx({0: 0.1})
    assert running[good.number].intermediate_values == pytest.approx({0: 0.95})


# ------------------------------------------------------------ the trial loop, without training
def _fake_train(calls: list, fail: dict):
    """A stand-in for ``fit.train``: raises ``fail[call number]`` (1-based) or returns a
    ``metrics.json`` whose validation accuracy is the trial's learning rate."""
    def train(config, out_dir, callbacks=()):
        calls.append((config, Path(out_dir)))
        if len(calls) in fail:
            raise fail[len(calls)]
        return {"metric": "accuracy", "val": {"accuracy": config.optim.lr}}
    return train


def test_a_failing_trial_fails_alone_and_counts(tmp_path, monkeypatch):
    """A non-finite loss, an out-of-memory model and a sampled combination the config refuses
    (16 hidden channels over 3 heads) each fail their own trial, with the error in trials.csv;
    the other trials run, and failed trials count towards --trials."""
    import torch

    from graph_transformers.errors import TrainingError
    from graph_transformers.training import sweep
    calls: list = []
    fail = {1: TrainingError("the training loss became non-finite (nan) at epoch 1"),
            2: torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\n")}
    monkeypatch.setattr(sweep, "train", _fake_train(calls, fail))
    space = _space(tmp_path, "model.hidden_dim: {type: categorical, choices: [12, 16]}\n"
                             "model.num_heads: {type: categorical, choices: [4, 3]}\n"
                             "optim.lr: {type: float, low: 1e-4, high: 1e-2}\n")
    grid = optuna.samplers.GridSampler({"model.hidden_dim": [12, 16], "model.num_heads": [4, 3],
                                        "optim.lr": [1e-3]}, seed=0)
    out = tmp_path / "sweep"
    result = run_sweep(CONFIG, space, out, 4, overrides=[*FAST, "model.hidden_dim=48"],
                       sampler=grid)
    trials = _study(out).trials
    assert len(trials) == 4 and len(calls) == 3  # the refused combination never trains
    refused = [t for t in trials if (t.params["model.hidden_dim"], t.params["model.num_heads"])
               == (16, 3)]
    assert [t.state.name for t in refused] == ["FAIL"]
    assert "must be divisible by model.num_heads=3" in refused[0].user_attrs["error"]
    assert result["states"] == {"FAIL": 3, "COMPLETE": 1}
    notes = {r["number"]: r["note"] for r in _rows(out / "trials.csv")}
    assert sum("non-finite" in n for n in notes.values()) == 1
    assert sum(n == "CUDA out of memory. Tried to allocate 2.00 GiB" for n in notes.values()) == 1
    [done] = [t for t in trials if t.state.name == "COMPLETE"]
    config, where = calls[-1]
    assert done.value == config.optim.lr == 1e-3 and where == out / f"trial_{done.number:04d}"
    assert (config.model.hidden_dim, config.model.num_heads) == \
        (done.params["model.hidden_dim"], done.params["model.num_heads"])
    # the four finished (one completed, three failed): nothing more to run
    run_sweep(CONFIG, space, out, 4, overrides=[*FAST, "model.hidden_dim=48"], sampler=grid)
    assert len(_study(out).trials) == 4 and len(calls) == 3


def test_ctrl_c_in_a_trial_says_how_to_resume_and_the_trial_is_retried(tmp_path, monkeypatch):
    from graph_transformers.errors import RunInterrupted
    from graph_transformers.training import sweep
    calls: list = []
    detail = "interrupted by SIGINT (Ctrl-C) during epoch 1; last complete checkpoint: none"
    fail = {2: RunInterrupted(f"{detail}; continue with the same command plus --resume --out x",
                              detail=detail)}
    monkeypatch.setattr(sweep, "train", _fake_train(calls, fail))
    space, out = _space(tmp_path), tmp_path / "sweep"
    with pytest.raises(RunInterrupted) as err:
        run_sweep(CONFIG, space, out, 3, overrides=FAST)
    assert str(err.value) == (f"{out / 'trial_0001'}: {detail}; the same sweep command resumes "
                              "the study and retries this trial's parameters")
    assert [r["state"] for r in _rows(out / "trials.csv")] == ["COMPLETE", "FAIL"]
    stopped = _study(out).trials[1]
    run_sweep(CONFIG, space, out, 3, overrides=FAST)
    trials = _study(out).trials
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert trials[2].user_attrs["retry_of"] == 1 and trials[2].params == stopped.params
    assert len(calls) == 4  # trial 0 was not trained again


# ----------------------------------------------------------------------------- sweeps
@pytest.mark.slow
def test_sweep_trains_run_directories_into_a_sqlite_study_and_resumes(tmp_path):
    space = _space(tmp_path)
    out = tmp_path / "sweep"
    result = run_sweep(CONFIG, space, out, 3, overrides=FAST)
    assert result["states"] == {"COMPLETE": 3}
    study = _study(out)
    assert study.study_name == "csl-gt-lappe" and study.direction.name == "MAXIMIZE"
    trials = study.trials
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3
    for t in trials:  # each trial is an ordinary run of the config with its values
        run = out / f"trial_{t.number:04d}"
        metrics = json.loads((run / "metrics.json").read_text())
        assert t.value == metrics["val"]["accuracy"]
        saved = load_config(run / "config.yaml")
        assert saved.optim.lr == t.params["optim.lr"]
        assert saved.model.hidden_dim == t.params["model.hidden_dim"]
        assert saved.model.norm == t.params["model.norm"]
        assert saved.trainer.max_epochs == 2 and metrics["epochs"] == 2
        # the values reported for pruning are the epochs' validation metric
        epochs = [float(r["val/accuracy"]) for r in _rows(run / "epochs.csv")]
        assert list(t.intermediate_values.values()) == pytest.approx(epochs)
        record = json.loads((run / "trial.json").read_text())
        assert record["state"] == "COMPLETE" and record["params"] == t.params
    best = study.best_trial
    config = load_config(out / "best.yaml")
    assert (config.optim.lr, config.model.hidden_dim, config.model.norm) == \
        (best.params["optim.lr"], best.params["model.hidden_dim"], best.params["model.norm"])
    assert result["best"]["number"] == best.number
    rows = _rows(out / "trials.csv")
    assert [(int(r["number"]), r["state"]) for r in rows] == [(t.number, "COMPLETE")
                                                                for t in trials]
    assert [float(r["optim.lr"]) for r in rows] == [t.params["optim.lr"] for t in trials]

    # the same command again: the study is complete, nothing is trained
    again = run_sweep(CONFIG, space, out, 3, overrides=FAST)
    assert again["states"] == {"COMPLETE": 3} and len(_study(out).trials) == 3
    # another space or another base config in the same folder is refused
    other = _space(tmp_path, SPACE.replace("high: 16", "high: 24"), "other.yaml")
    with pytest.raises(RunError, match="space"):
        run_sweep(CONFIG, other, out, 4, overrides=FAST)
    with pytest.raises(RunError, match=r"trainer.max_epochs: 2 -> 3"):
        run_sweep(CONFIG, space, out, 4, overrides=[*FAST, "trainer.max_epochs=3"])
    with pytest.raises(RunError, match="seeds"):
        run_sweep(CONFIG, space, out, 4, seeds=2, overrides=FAST)
    # more trials: the study goes on from its three, which are kept
    more = run_sweep(CONFIG, space, out, 4, overrides=FAST)
    after = _study(out).trials
    assert more["states"] == {"COMPLETE": 4}
    assert [(t.number, t.value, t.datetime_complete) for t in after[:3]] == \
        [(t.number, t.value, t.datetime_complete) for t in trials]


@pytest.mark.slow
def test_a_trial_with_a_bad_first_epoch_is_pruned_and_its_run_dir_says_so(tmp_path):
    out = tmp_path / "sweep"
    # CSL after one epoch of a tiny GT is at chance (10%): below the threshold, pruned there
    result = run_sweep(CONFIG, _space(tmp_path), out, 1, overrides=FAST,
                       pruner=optuna.pruners.ThresholdPruner(lower=0.5))
    assert result["states"] == {"PRUNED": 1} and result["best"] is None
    assert not (out / "best.yaml").exists()
    record = json.loads((out / "trial_0000" / "trial.json").read_text())
    assert record["state"] == "PRUNED" and list(record["epochs"]) == ["1"]
    assert record["note"].startswith("pruned after epoch 1: val accuracy ")
    assert not (out / "trial_0000" / "metrics.json").exists()  # stopped in its first epoch
    [row] = _rows(out / "trials.csv")
    assert row["state"] == "PRUNED" and row["note"] == record["note"]


@pytest.mark.slow
def test_seeds_per_trial_average_their_validation_metric(tmp_path):
    out = tmp_path / "sweep"
    run_sweep(CONFIG, _space(tmp_path), out, 1, seeds=2, overrides=FAST, pruner="none")
    [trial] = _study(out).trials
    vals = [json.loads((out / "trial_0000" / f"seed_{s}" / "metrics.json").read_text())
            ["val"]["accuracy"] for s in (0, 1)]
    assert trial.value == pytest.approx(sum(vals) / 2)
    summary = json.loads((out / "trial_0000" / "summary.json").read_text())
    assert summary["seeds"] == [0, 1]


def _states(db: Path) -> dict[int, str]:
    """The trials' states in an Optuna SQLite study, read while another process writes it."""
    if not db.is_file():
        return {}
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True,
                                                timeout=1)) as con:
            return dict(con.execute("SELECT number, state FROM trials"))
    except sqlite3.Error:  # the schema is being created
        return {}


@pytest.mark.slow
def test_a_sweep_killed_mid_trial_resumes_keeping_the_completed_trial(tmp_path):
    space = _space(tmp_path)
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "graph_transformers.cli", "sweep", "--config", str(CONFIG),
           "--space", str(space), "--trials", "3", "--out", str(out), "--set", *FAST]
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})
        try:
            deadline = time.monotonic() + 600  # generous: a loaded machine; about 15 s when idle
            while time.monotonic() < deadline and proc.poll() is None:
                states = _states(out / "study.db")
                # trial 1 is training: its values are drawn and its run directory written
                if states.get(0) == "COMPLETE" and states.get(1) == "RUNNING" and \
                        (out / "trial_0001" / "config.yaml").is_file():
                    break
                time.sleep(0.02)
            else:
                pytest.fail(f"the sweep did not reach trial 1: {log.read_text()[-2000:]}")
        finally:
            proc.kill()  # SIGKILL: no handler runs
            proc.wait(timeout=60)
    assert proc.returncode == -9
    assert _states(out / "study.db") == {0: "COMPLETE", 1: "RUNNING"}
    first = _study(out).trials[0]
    killed_params = _study(out).trials[1].params

    result = run_sweep(CONFIG, space, out, 3, overrides=FAST)
    trials = _study(out).trials
    assert result["states"] == {"COMPLETE": 3, "FAIL": 1}
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert (trials[0].value, trials[0].datetime_complete, trials[0].params) == \
        (first.value, first.datetime_complete, first.params)  # kept, not trained again
    assert trials[2].user_attrs["retry_of"] == 1 and trials[2].params == killed_params
    assert json.loads((out / "trial_0001" / "trial.json").read_text())["state"] == "FAIL"
    rows = _rows(out / "trials.csv")
    assert "retried as trial 2" in rows[1]["note"] and rows[2]["note"] == "retry of trial 1"
    assert all((out / f"trial_{n:04d}" / "metrics.json").is_file() for n in (0, 2, 3))
