"""Argument checks shared by the datasets generated in code (CSL, PATTERN, CLUSTER, TSP)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def check_split_counts(name: str, counts: Sequence[int]) -> tuple[int, int, int]:
    """Validates ``(train, val, test)`` sizes of a generated dataset.

    Raises:
        ValueError: naming ``name`` unless ``counts`` are three non-negative integers.
    """
    try:
        values = tuple(counts)
    except TypeError:
        msg = f"{name} must be three counts (train, val, test), got {counts!r}"
        raise ValueError(msg) from None
    if len(values) != 3 or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0 for v in values
    ):
        raise ValueError(
            f"{name} must be three non-negative integers (train, val, test), got {counts!r}"
        )
    return tuple(int(v) for v in values)  # type: ignore[return-value]


def check_seed(seed: int) -> int:
    """Validates a generation seed.

    Raises:
        ValueError: unless ``seed`` is a non-negative integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)
