"""Safe loading of files written by ``torch.save``: ``weights_only=True`` loads with their
checksums verified, and one-line errors naming the file and what is wrong with it.

Ground floor: imports only torch (the run-level checkpoint I/O built on it lives in
:mod:`graph_transformers.training.checkpoint`; user graph files load through it too).
"""
from __future__ import annotations

import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch

from ..errors import CheckpointError, RunError

__all__ = ["load_weights_only"]

_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")
_DETAIL = re.compile(r"WeightsUnpickler error:\s*(.+)", re.S)


def load_weights_only(path, map_location=None, what: str = "checkpoint",
                      error: type[Exception] = CheckpointError, allow: tuple = (),
                      allowed: str = "tensors and plain containers", hint: str = "") -> Any:
    """``torch.load(path, weights_only=True)`` (CPU by default) with the classes ``allow`` added
    to the globals it accepts (``torch.serialization.safe_globals``), and one-line errors.

    Raises:
        error: (``CheckpointError`` by default) naming the file, as ``what``, and what is wrong
            with it: missing, empty, truncated or corrupt, not a PyTorch file, or holding a
            pickled object other than ``allowed`` ("refusing to load <file>: it contains
            <global>", then ``hint``).
    """
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} not found: {path}")
    size = path.stat().st_size
    if size == 0:
        raise error(f"cannot read {what} {path}: the file is empty (0 bytes)")
    # only classes not allowed yet: leaving the context removes the classes it names, which
    # would drop PyG's own registrations (Data) if they were named again
    extra = [c for c in allow if c not in torch.serialization.get_safe_globals()]
    try:
        damaged = _damaged_member(path)
        if damaged is not None:
            raise error(f"cannot read {what} {path}: its content does not match its checksums "
                        f"(record {damaged!r}): the file was changed or damaged after it was "
                        "written")
        with torch.serialization.safe_globals(extra):
            return torch.load(path, map_location=map_location or "cpu", weights_only=True)
    except (error, RunError):  # the checksum refusal above, a SIGTERM's RunTerminated: as they are
        raise
    except pickle.UnpicklingError as err:
        found = _GLOBAL.search(str(err))
        if found:
            raise error(f"refusing to load {path}: it contains {found.group(1)} "
                        f"(only {allowed} are loaded){hint}") from None
        detail = _DETAIL.search(str(err))
        why = detail.group(1).strip().splitlines()[0] if detail else _first_line(err)
        raise error(f"cannot read {what} {path}: not a PyTorch {what} or corrupt "
                    f"({why})") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError, OSError) as err:
        raise error(f"cannot read {what} {path} ({size:,} bytes): truncated or corrupt "
                    f"({_first_line(err)})") from None


def _damaged_member(path: Path) -> str | None:
    """The first record of a ``torch.save`` archive (a zip file) whose CRC-32 does not match its
    bytes, else ``None``; ``None`` for a file that is not a zip archive (older formats, left to
    ``torch.load``). ``torch.load`` itself does not check the CRCs, so flipped bytes inside a
    tensor loaded silently (issue 26).

    Raises:
        zipfile.BadZipFile: for a damaged archive directory.
    """
    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as archive:
        return archive.testzip()


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0].split(". This is an internal")[0][:160] if text else \
        type(err).__name__
