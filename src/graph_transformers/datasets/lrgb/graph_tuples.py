"""The checks every LRGB file of pre-built graphs needs (the superpixel pickles of
:mod:`.superpixels_sp`, the PCQM-Contact tensors of :mod:`.pcqm_contact`): each graph is a tuple
of tensors in LRGB's order, and each tensor is converted and checked here so that a malformed
file is one line naming the file, the graph and the field, never a wrong graph."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ...errors import DataError

__all__ = ["as_tensor", "check_node_ids", "graph_tuple", "integral", "shaped"]


def graph_tuple(item: Any, fields: Sequence[str], where: str) -> tuple[Any, ...]:
    """``item`` as the tuple of ``len(fields)`` entries LRGB stores per graph.

    Raises:
        DataError: anything else (``where`` names the file and the graph).
    """
    if not isinstance(item, (tuple, list)) or len(item) != len(fields):
        kind = f"a {len(item)}-tuple" if isinstance(item, (tuple, list)) else \
            f"a {type(item).__name__}"
        raise DataError(f"{where} is {kind}, not LRGB's ({', '.join(fields)}) tuple")
    return tuple(item)


def as_tensor(value: Any, what: str, where: str) -> Tensor:
    """``value`` (a tensor, a NumPy array or a list of numbers) as a tensor.

    Raises:
        DataError: anything else, or an array that does not hold numbers.
    """
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, list, tuple)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf":
            return torch.from_numpy(np.ascontiguousarray(arr))
        raise DataError(f"{where}: {what} is an array of {arr.dtype}, not numbers")
    raise DataError(f"{where}: {what} is a {type(value).__name__}, not a tensor")


def integral(t: Tensor, what: str, where: str) -> Tensor:
    """``t`` as int64; a floating tensor must hold whole numbers.

    Raises:
        DataError: fractional or non-finite values.
    """
    if t.is_floating_point() and (not bool(torch.isfinite(t).all()) or
                                  not bool((t == t.round()).all())):
        raise DataError(f"{where}: {what} holds non-integer values")
    return t.long()


def shaped(t: Tensor, what: str, where: str, *dims: int | None) -> Tensor:
    """``t`` checked to have ``len(dims)`` dimensions of the given sizes (``None``: any).

    Raises:
        DataError: another shape, named with the expected one.
    """
    if t.dim() != len(dims) or any(d is not None and t.size(i) != d for i, d in enumerate(dims)):
        want = ", ".join("*" if d is None else str(d) for d in dims)
        raise DataError(f"{where}: {what} has shape {list(t.shape)}, not [{want}]")
    return t


def check_node_ids(index: Tensor, num_nodes: int, what: str, where: str) -> None:
    """Refuses node ids of ``index`` outside ``0..num_nodes-1``.

    Raises:
        DataError: naming the first offending id.
    """
    if not index.numel():
        return
    lo, hi = int(index.min()), int(index.max())
    if lo < 0 or hi >= num_nodes:
        raise DataError(f"{where}: {what} holds node id {lo if lo < 0 else hi} outside the "
                        f"graph's {num_nodes} nodes")
