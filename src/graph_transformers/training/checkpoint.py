"""Checkpoint I/O: atomic writes and ``weights_only`` loads, with one-line errors."""
from __future__ import annotations

import errno
import os
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from ..core.serialization import load_weights_only
from ..errors import CheckpointError, CheckpointWriteError
from ..fileio import atomic_save, is_torch_write_failure


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning checkpoint I/O that writes to a uniquely named temporary file and renames it
    into place (a crash or a full disk never leaves a truncated ``last.ckpt``, and the previous
    checkpoint stays untouched) and loads with ``torch.load(weights_only=True)``."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        save_checkpoint(checkpoint, path)

    def load_checkpoint(self, path, map_location=None, weights_only=None) -> dict[str, Any]:
        return load_checkpoint(path, map_location=map_location)


def save_checkpoint(checkpoint: dict[str, Any], path: str | os.PathLike) -> None:
    """``torch.save`` to ``path`` atomically.

    Raises:
        CheckpointWriteError: the file system refused the write (full disk, no permission); the
            message names the file, the previous checkpoint at ``path`` is untouched and the
            temporary file is removed.
    """
    try:
        atomic_save(path, lambda f: torch.save(checkpoint, f))
    except OSError as err:
        why = "the disk is full" if err.errno == errno.ENOSPC else (err.strerror or str(err))
        raise CheckpointWriteError(f"cannot write checkpoint {path}: {why}; the previous "
                                   "checkpoint there is untouched") from None
    except RuntimeError as err:  # torch wraps write failures of its zip writer
        if not is_torch_write_failure(err):
            raise
        raise CheckpointWriteError(f"cannot write checkpoint {path}: the write failed (a full "
                                   "disk or a file-size limit; torch: "
                                   f"{str(err).splitlines()[0][-60:].strip()}); the previous "
                                   "checkpoint there is untouched") from None


def load_checkpoint(path, map_location=None) -> dict[str, Any]:
    """``torch.load(path, weights_only=True)`` on CPU by default.

    Raises:
        CheckpointError: naming the file and what is wrong with it: missing, empty, truncated or
            corrupt, not a checkpoint, or holding a pickled object other than tensors and plain
            containers ("refusing to load <file>: it contains <global>").
    """
    state = load_weights_only(path, map_location=map_location)
    if not isinstance(state, dict):
        raise CheckpointError(f"cannot read checkpoint {path}: it holds a "
                              f"{type(state).__name__}, not a checkpoint dictionary")
    return state


def load_model_weights(model: torch.nn.Module, path: str | os.PathLike) -> dict[str, Any]:
    """Loads the ``model.`` weights of a Lightning checkpoint into ``model``; returns the whole
    checkpoint.

    Raises:
        CheckpointError: the file cannot be read (see :func:`load_checkpoint`), holds no model
            weights, or its weights do not fit ``model`` (a checkpoint of another config).
    """
    state = load_checkpoint(path)
    weights = state.get("state_dict")
    if not isinstance(weights, dict):
        raise CheckpointError(f"cannot use checkpoint {path}: it holds no state_dict (not a "
                              "checkpoint written by graph-transformers)")
    from .targets import match_weights
    match_weights(model, weights, prefix="model.")  # whether the run standardized its targets
    try:
        model.load_state_dict({k.removeprefix("model."): v for k, v in weights.items()
                               if k.startswith("model.")})
    except RuntimeError as err:
        detail = " ".join(str(err).split())[:300]
        raise CheckpointError(f"checkpoint {path} does not fit the model of the run's config "
                              f"({detail})") from None
    return state
