"""Reading the pickles that benchmarks publish (LRGB's split files and superpixel graphs, index
arrays of other projects) without running what a pickle may name.

``pickle.load`` calls any importable function a file names; a split file downloaded from the web
is no reason to trust that. :func:`load_safe_pickle` admits only what such files hold: plain
containers (``dict``, ``list``, ``tuple``, ``set``, ``OrderedDict``), numbers and strings, NumPy
arrays, dtypes and scalars, and PyTorch tensors (their storages read back by
``torch.load(weights_only=True)``). Anything else is refused with a one-line error naming the
global the file asked for.

Framework floor (`data/`): imports NumPy and torch.
"""
from __future__ import annotations

import collections
import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import DataError

__all__ = ["load_safe_pickle", "SAFE_PICKLE_GLOBALS"]


def _storage_from_bytes(data: bytes):
    # what ``torch.storage._load_from_bytes`` does, but with the weights-only unpickler
    return torch.load(io.BytesIO(data), weights_only=True)


def _numpy_reconstruct():
    try:  # NumPy 2 writes numpy._core..., NumPy 1 numpy.core...; both map to the one loaded
        from numpy._core.multiarray import _reconstruct, scalar
    except ImportError:  # pragma: no cover - NumPy 1
        from numpy.core.multiarray import _reconstruct, scalar
    return _reconstruct, scalar


_RECONSTRUCT, _SCALAR = _numpy_reconstruct()

#: ``(module, name)`` → the object a safe pickle may name
SAFE_PICKLE_GLOBALS: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "slice"): slice,
    ("builtins", "complex"): complex,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy.core.multiarray", "scalar"): _SCALAR,
    ("numpy._core.multiarray", "scalar"): _SCALAR,
    ("torch._utils", "_rebuild_tensor_v2"): torch._utils._rebuild_tensor_v2,
    ("torch.storage", "_load_from_bytes"): _storage_from_bytes,
    ("torch", "Size"): torch.Size,
}
# NumPy's dtype classes (numpy.dtypes.Int64DType, ...), which NumPy 2 pickles name
for _name in dir(np.dtypes):
    if _name.endswith("DType"):
        SAFE_PICKLE_GLOBALS[("numpy.dtypes", _name)] = getattr(np.dtypes, _name)


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return SAFE_PICKLE_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"{module}.{name}") from None


def load_safe_pickle(path, what: str = "pickle") -> Any:
    """Load ``path`` with an unpickler that admits only plain containers, NumPy arrays and
    PyTorch tensors (:data:`SAFE_PICKLE_GLOBALS`).

    Args:
        path: the ``.pickle`` / ``.pkl`` file (optionally gzip-compressed: ``.gz``).
        what: what the file is, for the error messages (``"LRGB split file"``).

    Returns:
        The unpickled object.

    Raises:
        DataError: a missing or empty file, one that is not a pickle or is truncated, or one
            that names any other global ("refusing to load <file>: it contains <global>").
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{what} not found: {path}")
    if path.stat().st_size == 0:
        raise DataError(f"cannot read {what} {path}: the file is empty (0 bytes)")
    if path.suffix == ".gz":
        import gzip
        opener = gzip.open
    else:
        opener = open
    try:
        with opener(path, "rb") as f:
            return _SafeUnpickler(f).load()
    except pickle.UnpicklingError as err:
        text = str(err)
        if "." in text and " " not in text:
            raise DataError(f"refusing to load {what} {path}: it contains {text} (only plain "
                            "containers, NumPy arrays and tensors are loaded)") from None
        raise DataError(f"cannot read {what} {path}: not a pickle or damaged ({text})") from None
    except (EOFError, ValueError, TypeError, OSError, AttributeError, IndexError) as err:
        raise DataError(f"cannot read {what} {path}: not a pickle or damaged "
                        f"({type(err).__name__}: {err})") from None
