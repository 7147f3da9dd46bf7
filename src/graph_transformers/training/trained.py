"""A trained run read back from its directory: its config, dataset spec and model with the
weights of a checkpoint that belongs to it (:func:`load_trained_model`, :func:`load_bound_model`),
and its metrics computed again on the data it was trained on (:func:`evaluate_run`)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from ..data.registry import DatasetSpec
from ..errors import RunError
from ..fileio import path_inside
from .binding import (
    check_run_id,
    check_same_data,
    check_same_split_config,
    data_fingerprint,
    read_run_id,
    stored_binding,
)
from .build import make_model, make_task
from .checkpoint import load_model_weights
from .config import Config, load_config
from .finish import check_finite_metrics
from .loaders import eval_loader
from .module import evaluate
from .numerics import watch_in_debug_mode
from .predict_only import predict_only_splits
from .splits import graph_list_spec_of, resolve_data, run_spec

log = logging.getLogger(__name__)


def load_trained_model(run_dir: str | Path, data_dir: str | None = None,
                       checkpoint: str = "best", dataset=None
                       ) -> tuple[Config, DatasetSpec, torch.nn.Module]:
    """The config, dataset spec and model (weights from ``checkpoints/<checkpoint>.ckpt``, loaded
    with ``weights_only=True``) of a run directory; the model is in eval mode. The checkpoint
    must belong to the run (its run id) and the run's ``config.yaml`` must still describe the
    data it was trained on (:mod:`~.binding`).

    Args:
        run_dir: the run directory.
        data_dir: the raw-data directory (else the run's or the environment's).
        checkpoint: ``"best"`` or ``"last"``.
        dataset: the in-memory graphs a ``graph_list`` run trained on, or ``None``.

    Returns:
        tuple: the config, the dataset spec and the model.

    Raises:
        RunError: when the run directory has no config or no such checkpoint, or its
            ``config.yaml`` changes the data keys the checkpoint was trained with.
        CheckpointError: the checkpoint cannot be read, does not fit, or was written by another
            run.
    """
    config, spec, model, _ = load_bound_model(run_dir, data_dir, checkpoint, dataset)
    return config, spec, model


def load_bound_model(run_dir: str | Path, data_dir: str | None, checkpoint: str, dataset
                     ) -> tuple[Config, DatasetSpec, torch.nn.Module, dict[str, Any]]:
    """:func:`load_trained_model`, also returning what the checkpoint stores of its run
    (:func:`~.binding.stored_binding`: run id, data fingerprint, config), for a caller that
    binds the data itself (``evaluate``, ``predict``).

    Args:
        run_dir: the run directory.
        data_dir: the raw-data directory, or ``None``.
        checkpoint: ``"best"`` or ``"last"``.
        dataset: the in-memory graphs a ``graph_list`` run trained on, or ``None``.

    Returns:
        tuple: the config, the dataset spec, the model and the checkpoint's binding.

    Raises:
        RunError, CheckpointError: as :func:`load_trained_model`.
    """
    run = Path(run_dir)
    if not (run / "config.yaml").is_file():
        # seeds (seed_<s>/) and folds (fold_<k>/[seed_<s>/]) keep one run per subdirectory
        inner = sorted(str(p.parent.relative_to(run)) for p in
                       [*run.glob("*/config.yaml"), *run.glob("*/*/config.yaml")])
        more = ", …" if len(inner) > 3 else ""
        hint = f"; it holds the runs {', '.join(inner[:3])}{more}: pass one of them" \
            if inner else ""
        raise RunError(f"{run} is not a run directory (no config.yaml){hint}")
    config = load_config(run / "config.yaml")
    if data_dir is not None:
        config.data.data_dir = data_dir
    spec = graph_list_spec_of(config, dataset) if dataset is not None else run_spec(config)
    model = make_model(config, spec)
    path = path_inside(run / "checkpoints", f"{checkpoint}.ckpt", what="checkpoint name")
    if not path.is_file():
        raise RunError(f"{run} has no checkpoint {path.name}")
    stored = stored_binding(load_model_weights(model, path))
    watch_in_debug_mode(model)
    check_run_id(stored["run_id"], read_run_id(run), path, run)
    check_same_split_config(stored["config"], config.to_dict(), f"checkpoint {path.name}",
                            str(run / "config.yaml"), path=path)
    model.eval()
    return config, spec, model, stored


def evaluate_run(run_dir: str | Path, data_dir: str | None = None,
                 checkpoint: str = "best", dataset=None, allow_data_change: bool = False
                 ) -> dict[str, dict[str, float]]:
    """Re-computes the metrics of a finished (or interrupted) run from its checkpoint
    (``dataset``: the in-memory graphs a ``graph_list`` run trained on), on the data it was
    trained on: their fingerprint must match the checkpoint's (``allow_data_change``: evaluate
    anyway, with a warning).

    Args:
        run_dir: the run directory.
        data_dir: the raw-data directory, or ``None``.
        checkpoint: ``"best"`` or ``"last"``.
        dataset: the in-memory graphs a ``graph_list`` run trained on, or ``None``.
        allow_data_change: evaluate although the data differ from the checkpoint's.

    Returns:
        dict: ``{split: {metric: value}}`` (``{}`` for a predict-only split).

    Raises:
        RunError: when the run directory has no config or checkpoint, or the data differ.
        CheckpointError: see :func:`load_trained_model`.
        TrainingError: a metric comes out NaN or infinite.
    """
    config, spec, model, stored = load_bound_model(run_dir, data_dir, checkpoint, dataset)
    splits = resolve_data(config, dataset)[1]
    changed = check_same_data(stored["data"], data_fingerprint(splits),
                              f"checkpoint {checkpoint}.ckpt", allow_data_change)
    if changed:
        log.warning("--allow-data-change: evaluating on %s split(s) that differ from those the "
                    "checkpoint was trained on", ", ".join(changed))
    task = make_task(config, spec, splits["train"], model)
    predict_only = predict_only_splits(splits)  # no labels: no metric ({})
    results = {s: {} if s in predict_only else evaluate(model, spec, eval_loader(config, ds, s),
                                                        task=task)
               for s, ds in splits.items()}
    check_finite_metrics(results, f"with the {checkpoint} checkpoint of {run_dir}")
    return results
