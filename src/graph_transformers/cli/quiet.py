"""``graph-transformers train --quiet``: only warnings, errors and the final result line reach the
terminal (:func:`quiet_output`). The package's INFO lines and Lightning's are held back (their
loggers at WARNING), no progress bar is drawn
(:func:`~graph_transformers.data.progress.set_progress`), and the ``Processing...`` / ``Done!``
lines PyG prints to stderr around a dataset's first processing are dropped
(:class:`DropLines`); everything else written to stderr (warnings, tracebacks) passes.
"""
from __future__ import annotations

import contextlib
import io
import logging
import sys
from collections.abc import Iterator

from ..data.progress import set_progress

__all__ = ["PYG_LINES", "DropLines", "quiet_output"]

#: the lines PyG's ``Dataset`` prints around processing (``torch_geometric.data.Dataset``)
PYG_LINES = ("Processing...", "Done!")
#: loggers of Lightning held at WARNING under ``--quiet`` ("GPU available", "max_epochs reached")
_LIGHTNING = ("lightning.pytorch", "lightning.fabric")


class DropLines(io.TextIOBase):
    """A text stream that passes on to ``stream`` every line but those equal to one of ``lines``
    (a partial line is held back only while it could still become one of them)."""

    def __init__(self, stream, lines: tuple[str, ...] = PYG_LINES) -> None:
        super().__init__()
        self.stream, self.lines, self._pending = stream, lines, ""

    def write(self, text: str) -> int:
        parts = (self._pending + text).split("\n")
        self._pending = parts.pop()
        out = "".join(line + "\n" for line in parts if line not in self.lines)
        if not any(d.startswith(self._pending) for d in self.lines):
            out, self._pending = out + self._pending, ""
        if out:
            self.stream.write(out)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def close_pending(self) -> None:
        """Writes out a held-back partial line (at the end of the command)."""
        if self._pending:
            self.stream.write(self._pending)
            self._pending = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")


@contextlib.contextmanager
def quiet_output(enabled: bool = True) -> Iterator[None]:
    """While the command runs with ``enabled``: Lightning's loggers at WARNING, no progress
    bars, PyG's processing lines dropped from stderr (the package logger's level is set by the
    CLI's logging setup). Everything is restored afterwards. Without ``enabled``, nothing
    changes."""
    if not enabled:
        yield
        return
    import lightning.pytorch  # noqa: F401 - its import sets its loggers' levels: first, then ours
    levels = {name: logging.getLogger(name).level for name in _LIGHTNING}
    for name in _LIGHTNING:
        logging.getLogger(name).setLevel(logging.WARNING)
    set_progress(False)
    stderr = sys.stderr
    sys.stderr = filtered = DropLines(stderr)
    try:
        yield
    finally:
        filtered.close_pending()
        sys.stderr = stderr
        set_progress(None)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
