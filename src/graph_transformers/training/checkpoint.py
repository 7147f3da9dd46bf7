"""Checkpoint I/O: atomic writes and ``weights_only`` loads."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning checkpoint I/O that writes to a temporary file and renames it into place (a crash
    never leaves a truncated ``last.ckpt``) and loads with ``torch.load(weights_only=True)``."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        torch.save(checkpoint, tmp)
        os.replace(tmp, path)

    def load_checkpoint(self, path, map_location=None, weights_only=None) -> dict[str, Any]:
        return load_checkpoint(path, map_location=map_location)


def load_checkpoint(path, map_location=None) -> dict[str, Any]:
    """``torch.load(path, weights_only=True)`` on CPU by default.

    Raises:
        FileNotFoundError: naming the path.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    return torch.load(path, map_location=map_location or "cpu", weights_only=True)
