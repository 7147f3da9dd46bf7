"""The optional loggers of ``trainer.logger`` (issue 57, item 5d), each offline: a 1-epoch tiny
CSL run with TensorBoard, Weights & Biases (``WANDB_MODE=offline``) and MLflow (a SQLite store in
the run directory) writes its logger's files under the run directory, and nothing into the
working directory or the home directory (``HOME`` is a fresh folder; the only file outside is
W&B's service debug log in its cache, ``~/.cache/wandb/logs``, documented in
``training.loggers``)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from graph_transformers.training.config import load_config
from graph_transformers.training.fit import train
from graph_transformers.training.loggers import log_interval, make_loggers

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=1", "model.hidden_dim=8",
        "model.num_heads=2", "data.batch_size=30", "trainer.threads=1", "trainer.max_epochs=1"]


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install 'graph-transformers[loggers]')")


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _run_isolated(tmp_path: Path, monkeypatch, logger: str) -> tuple[Path, Path, Path]:
    """One epoch with ``trainer.logger: [csv, <logger>]`` from an empty working directory with
    an empty ``HOME``; returns ``(run directory, working directory, home)``."""
    cwd, home, caches = tmp_path / "cwd", tmp_path / "home", tmp_path / "caches"
    for d in (cwd, home, caches):
        d.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "WANDB_DIR",
                "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MPLCONFIGDIR", str(caches / "matplotlib"))  # the curves' font cache
    monkeypatch.setenv("GRAPH_TRANSFORMERS_KERNELS", "off")  # no C++ build into a fresh HOME
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.chdir(cwd)
    out = tmp_path / "run"
    train(load_config(CONFIG, [*FAST, f"trainer.logger=[csv,{logger}]"]), out)
    assert (out / "metrics.json").is_file() and list((out / "lightning_logs").rglob("*.csv"))
    assert _files(cwd) == [] and not list(cwd.iterdir())
    return out, cwd, home


@pytest.mark.slow
def test_tensorboard_writes_its_event_files_in_the_run_directory(tmp_path, monkeypatch):
    _needs("tensorboard")
    out, _, home = _run_isolated(tmp_path, monkeypatch, "tensorboard")
    events = list((out / "tensorboard").rglob("events.out.tfevents.*"))
    assert len(events) == 1
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    assert {"val/loss", "train/loss", "val/accuracy"} <= set(acc.Tags()["scalars"])
    assert _files(home) == []


@pytest.mark.slow
def test_mlflow_logs_to_a_sqlite_store_in_the_run_directory(tmp_path, monkeypatch):
    _needs("mlflow")
    _needs("sqlalchemy")
    out, _, home = _run_isolated(tmp_path, monkeypatch, "mlflow")
    db = out / "mlflow.db"
    assert db.is_file()
    from mlflow.tracking import MlflowClient
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    experiment = client.get_experiment_by_name(out.name)
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert {"val/loss", "train/loss", "val/accuracy"} <= set(runs[0].data.metrics)
    assert experiment.artifact_location == (out / "mlartifacts").resolve().as_uri()
    assert _files(home) == []


@pytest.mark.slow
def test_wandb_offline_writes_its_run_in_the_run_directory(tmp_path, monkeypatch):
    _needs("wandb")
    out, _, home = _run_isolated(tmp_path, monkeypatch, "wandb")
    runs = list((out / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    records = list(runs[0].glob("run-*.wandb"))
    assert len(records) == 1 and b"val/loss" in records[0].read_bytes()
    # outside the run: only the W&B service's own debug log, in its cache
    assert all(f.startswith(os.path.join(".cache", "wandb", "logs")) for f in _files(home)), \
        _files(home)


def test_wandb_goes_offline_where_the_project_is_offline(tmp_path, monkeypatch):
    """``$GRAPH_TRANSFORMERS_OFFLINE`` (set for every test) without ``WANDB_MODE``: W&B logs
    offline instead of asking for a login; ``WANDB_MODE`` decides where it is set."""
    _needs("wandb")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    wandb_logger = make_loggers(["wandb"], tmp_path / "run")[1]
    assert type(wandb_logger).__name__ == "WandbLogger" and wandb_logger._offline is True
    monkeypatch.setenv("WANDB_MODE", "online")
    assert make_loggers(["wandb"], tmp_path / "run")[1]._offline is False


def test_missing_logger_packages_name_their_extra(monkeypatch):
    """MLflow without SQLAlchemy (``mlflow-skinny`` alone) cannot keep its store in the run:
    one line names the extra."""
    import sys
    from graph_transformers._optional import MissingDependencyError
    _needs("mlflow")
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # import sqlalchemy -> ImportError
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(MissingDependencyError, match=r"trainer.logger: mlflow \(its SQLite "
                                                     r"tracking store\) needs sqlalchemy: pip "
                                                     r"install 'graph-transformers\[mlflow\]'"):
        make_loggers(["mlflow"], Path("unused"))


def test_the_logging_interval_fits_a_short_epoch():
    """Lightning warned on every small run that the epoch (3 batches) is shorter than
    ``log_every_n_steps`` (50); the interval now never exceeds the epoch."""
    assert log_interval(50, list(range(3))) == 3
    assert log_interval(50, list(range(200))) == 50
    assert log_interval(50, []) == 1
    assert log_interval(50, iter(range(3))) == 50  # no length: as configured
