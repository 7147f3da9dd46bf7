"""Atomic file writes: every file of a run directory or a dataset cache is written to a
uniquely named temporary file in the same directory, flushed, and renamed into place, so a
crash, a full disk or a concurrent writer never leaves a half-written file, and two writers
never share a temporary file."""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w", **open_kwargs) -> Iterator[IO]:
    """Opens a unique temporary file beside ``path`` for writing; on a clean exit it is
    flushed, fsynced and renamed onto ``path`` (mode 0644); on any error it is removed and the
    error re-raised, leaving an existing ``path`` untouched.

    Raises:
        OSError: from the file system (e.g. ``ENOSPC``, ``EACCES``); nothing is left behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **open_kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Writes ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_writer`)."""
    with atomic_writer(path, "w", encoding="utf-8") as f:
        f.write(text)


def atomic_save(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> None:
    """Calls ``write(f)`` on a binary temporary file and renames it onto ``path`` atomically
    (e.g. ``atomic_save(p, lambda f: torch.save(obj, f))``)."""
    with atomic_writer(path, "wb") as f:
        write(f)


#: what torch's zip writer says when the file system stops a write (full disk, file size limit):
#: it raises ``RuntimeError``, not ``OSError`` (e.g. "[enforce fail at inline_container.cc:672] .
#: unexpected pos 704 vs 598", "PytorchStreamWriter failed writing file data/0: file write failed")
_TORCH_WRITE_FAILURES = ("unexpected pos", "inline_container", "failed writing", "file write")


def is_torch_write_failure(err: BaseException) -> bool:
    """Whether ``err`` is ``torch.save``'s report of a failed write (see
    :data:`_TORCH_WRITE_FAILURES`), which a full disk or a file-size limit causes."""
    text = str(err).lower()
    return isinstance(err, RuntimeError) and any(k in text for k in _TORCH_WRITE_FAILURES)
