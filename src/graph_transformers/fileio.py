"""Atomic file writes: every file of a run directory or a dataset cache is written to a
uniquely named temporary file in the same directory, flushed, and renamed into place, so a
crash, a full disk or a concurrent writer never leaves a half-written file, and two writers
never share a temporary file.

Names that become paths go through :func:`check_name` and :func:`path_inside`: a config's
``name``, a run or fold folder, a dataset name in a cache path are plain names, and every path
built from one stays inside its root (``docs/reliability.md``, "Paths")."""
from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from .errors import UnsafeNameError

#: what a plain name may not hold: path separators (both kinds, so that a name means the same on
#: every system) and control characters (NUL, newlines, escape sequences)
_NOT_IN_NAMES = re.compile(r"[/\\\x00-\x1f\x7f]")


def check_name(name: object, what: str) -> str:
    """Returns ``name`` when it is a plain name that can become one file or folder: a non-empty
    string without path separators (``/``, ``\\``) or control characters, not ``.`` or ``..``,
    and without leading or trailing white space.

    Args:
        name: the name to check.
        what: where it came from, for the message (e.g. ``"config name"``).

    Raises:
        UnsafeNameError: otherwise; one line naming ``what`` and the name.

    Example:
        >>> check_name("zinc-gt", "config name")
        'zinc-gt'
    """
    if not isinstance(name, str):
        raise UnsafeNameError(f"{what} must be a string, got {type(name).__name__} {name!r}")
    problem = ("is empty" if not name.strip() else
               "is '.' or '..', which name a folder relative to another" if name in (".", "..")
               else "holds a path separator or a control character"
               if _NOT_IN_NAMES.search(name) else
               "starts or ends with white space" if name != name.strip() else None)
    if problem is not None:
        raise UnsafeNameError(f"{what} {name!r} {problem}: it becomes a file or folder name, so "
                              "it must be a plain name (letters, digits, '.', '-', '_', ':' ...)")
    return name


def path_inside(root: str | os.PathLike, *names: str, what: str = "name") -> Path:
    """``root / names[0] / names[1] / …`` after :func:`check_name` of each name, checked to
    resolve (symbolic links followed) inside ``root``: the one way this package turns a name
    into a path.

    Args:
        root: the folder the path must stay in (a run directory, ``runs/``, a cache root).
        names: plain names, one per path component.
        what: where the names came from, for the message.

    Returns:
        The joined path (not resolved).

    Raises:
        UnsafeNameError: a name is not plain, or the path resolves outside ``root`` (e.g. a
            symbolic link inside ``root`` that points elsewhere).
    """
    root = Path(root)
    for name in names:
        check_name(name, what)
    path = root.joinpath(*names)
    if not path.resolve().is_relative_to(root.resolve()):
        raise UnsafeNameError(f"{what} {'/'.join(names)!r}: {path} resolves to "
                              f"{path.resolve()}, outside {root}; refusing to write there")
    return path


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w", **open_kwargs) -> Iterator[IO]:
    """Opens a unique temporary file beside ``path`` for writing; on a clean exit it is
    flushed, fsynced and renamed onto ``path`` (mode 0644); on any error it is removed and the
    error re-raised, leaving an existing ``path`` untouched.

    Raises:
        OSError: from the file system (e.g. ``ENOSPC``, ``EACCES``); nothing is left behind. A
            full disk, quota or file-size limit (``ENOSPC``, ``EDQUOT``, ``EFBIG``) names no
            file by itself: its ``filename`` is set to ``path``, and torch's report of such a
            failed write (a ``RuntimeError``) gets a note naming ``path``
            (:func:`file_being_written` reads either).
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
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError) and err.filename is None and err.errno in _NO_ROOM:
            err.filename = str(path)
        elif is_torch_write_failure(err) and file_being_written(err) is None:
            err.add_note(f"{_WRITING}{path}")
        raise


#: what a write the file system refused for lack of room raises (a full disk, a quota, a file-size
#: limit); such an ``OSError`` names no file
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
#: the note :func:`atomic_writer` adds to torch's report of a failed write
_WRITING = "while writing "


def file_being_written(err: BaseException) -> str | None:
    """The file whose write failed with ``err``, as :func:`atomic_writer` records it.

    Args:
        err: an error raised through :func:`atomic_writer` (or any other).

    Returns:
        The ``filename`` of an ``OSError``, or the path of the note on torch's ``RuntimeError``
        of a failed write; ``None`` when ``err`` names no file.
    """
    if isinstance(err, OSError) and err.filename:
        return str(err.filename)
    return next((n[len(_WRITING):] for n in getattr(err, "__notes__", ())
                 if isinstance(n, str) and n.startswith(_WRITING)), None)


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
