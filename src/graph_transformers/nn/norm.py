"""Normalization layers selectable by name."""
from __future__ import annotations

from torch import nn

NORMS = ("batch", "layer", "none")


def make_norm(kind: str, dim: int) -> nn.Module:
    """``"batch"`` → ``BatchNorm1d(dim)``, ``"layer"`` → ``LayerNorm(dim)``, ``"none"`` →
    ``Identity``; inputs ``[num_items, dim]``.

    Raises:
        ValueError: for another name.
    """
    if kind == "batch":
        return nn.BatchNorm1d(dim)
    if kind == "layer":
        return nn.LayerNorm(dim)
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"unknown norm {kind!r}; expected one of {NORMS}")
