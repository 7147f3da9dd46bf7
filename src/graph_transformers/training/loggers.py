"""The Lightning loggers of a run (``trainer.logger``, :func:`make_loggers`, closed after the fit
by :func:`finish_loggers`): CSV always, plus TensorBoard, Weights & Biases and MLflow on
request, each writing under the run directory and working offline, and the logging interval
Lightning is given (:func:`log_interval`).

Where each writes (``OUT`` = the run directory):

- ``csv``: ``OUT/lightning_logs/version_<n>/metrics.csv`` (Lightning's ``CSVLogger``);
- ``tensorboard``: ``OUT/tensorboard/version_<n>/events.out.tfevents.*``
  (``tensorboard --logdir OUT/tensorboard``);
- ``wandb``: ``OUT/wandb/<run>/`` (``WandbLogger(save_dir=OUT)``). Online when W&B is logged in
  (``wandb login``, ``WANDB_API_KEY``); offline, ``OUT/wandb/offline-run-*`` to upload later with
  ``wandb sync``, with ``WANDB_MODE=offline`` or where ``$GRAPH_TRANSFORMERS_OFFLINE`` is set
  (unless ``WANDB_MODE`` says otherwise). W&B's background service keeps its own debug log in
  its cache (``$WANDB_CACHE_DIR``, default ``~/.cache/wandb/logs``);
- ``mlflow``: the tracking store ``sqlite:///OUT/mlflow.db`` (MLflow's database backend: its
  file store ``file:./mlruns`` is in maintenance mode and refused by MLflow 3 unless
  ``MLFLOW_ALLOW_FILE_STORE=true``) and the artifacts in ``OUT/mlartifacts/``; browse with
  ``mlflow ui --backend-store-uri sqlite:///OUT/mlflow.db``. ``MLFLOW_TRACKING_URI``, where set,
  names a tracking server instead. MLflow's usage telemetry (an installation id in
  ``~/.config/mlflow``, reports over the network) is turned off where
  ``$GRAPH_TRANSFORMERS_OFFLINE`` is set, as with ``MLFLOW_DISABLE_TELEMETRY=true``.
"""
from __future__ import annotations

import os
from pathlib import Path

from lightning.pytorch.loggers import CSVLogger

from .._optional import require
from ..data.download import offline

__all__ = ["finish_loggers", "log_interval", "make_loggers"]


def make_loggers(names: list[str], out: Path) -> list:
    """Lightning loggers of a run: CSV (always, ``out/lightning_logs``) plus the named ones
    (``tensorboard``, ``wandb``, ``mlflow``), each writing under ``out`` (see the module
    docstring).

    Args:
        names: ``trainer.logger``.
        out: the run directory.

    Returns:
        list: the loggers.

    Raises:
        MissingDependencyError: when a named logger's package is not installed (naming the
            extra that brings it).
    """
    loggers: list = [CSVLogger(str(out), name="lightning_logs")]
    if "tensorboard" in names:
        require("tensorboard", "trainer.logger: tensorboard")
        from lightning.pytorch.loggers import TensorBoardLogger
        loggers.append(TensorBoardLogger(str(out), name="tensorboard"))
    if "wandb" in names:
        require("wandb", "trainer.logger: wandb")
        from lightning.pytorch.loggers import WandbLogger
        quiet = offline() and not os.environ.get("WANDB_MODE")
        loggers.append(WandbLogger(save_dir=str(out), name=out.name,
                                   **({"offline": True} if quiet else {})))
    if "mlflow" in names:
        loggers.append(_mlflow_logger(out))
    return loggers


def finish_loggers(loggers: list) -> None:
    """Ends what a fit's loggers left open: the W&B run (``wandb.finish``: its files complete,
    and the next run of the process, another seed or fold, gets a W&B run of its own instead of
    Lightning reusing this one). MLflow's run is ended by Lightning.

    Args:
        loggers: the trainer's loggers.
    """
    for logger in loggers:
        experiment = getattr(logger, "_experiment", None)
        if type(logger).__name__ == "WandbLogger" and experiment is not None:
            experiment.finish()


def _mlflow_logger(out: Path):
    """MLflow's Lightning logger on a SQLite store in ``out`` (or ``MLFLOW_TRACKING_URI``)."""
    require("mlflow", "trainer.logger: mlflow")
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        require("sqlalchemy", "trainer.logger: mlflow (its SQLite tracking store)")
        uri = f"sqlite:///{(out / 'mlflow.db').resolve()}"
    if offline():
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from lightning.pytorch.loggers import MLFlowLogger
    return MLFlowLogger(experiment_name=out.name, tracking_uri=uri,
                        artifact_location=(out / "mlartifacts").resolve().as_uri())


def log_interval(configured: int, loader) -> int:
    """``trainer.log_every_n_steps`` for Lightning: at most the number of training batches, so
    that an epoch shorter than the interval still logs once, and Lightning does not warn that
    it would not (the epoch metrics are logged per epoch either way).

    Args:
        configured: ``trainer.log_every_n_steps``.
        loader: the training loader.

    Returns:
        int: the interval, at least 1.
    """
    try:
        batches = len(loader)
    except TypeError:  # an iterable loader of unknown length
        return configured
    return max(1, min(configured, batches))
