"""Progress bars for the long phases outside the training loop: processing a dataset graph by
graph (featurizing molecules, computing the encodings, packing a graph store) and the final
evaluation of a run (:func:`progress`; :func:`counter` for a count kept by hand;
:func:`counted_pre_transform` for the ``pre_transform`` of a PyG dataset's own ``process``),
shown with ``tqdm`` (a dependency of PyG and Lightning both: count, rate and time left), and
whether they are shown (:func:`progress_enabled`).

A bar is drawn only where someone watches: on a terminal (the stream it writes to is a TTY),
or where asked (``GRAPH_TRANSFORMERS_PROGRESS=1``); never with ``GRAPH_TRANSFORMERS_PROGRESS=0``
or under ``graph-transformers train --quiet`` (:func:`set_progress`). In a log file a run keeps
its one line per epoch. A bar appears only once its loop has run for
:data:`DELAY_S` seconds, so a phase of a second or two draws nothing.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

__all__ = ["DELAY_S", "ENV", "counted_pre_transform", "counter", "progress", "progress_enabled",
           "set_progress"]

T = TypeVar("T")

#: the environment variable that forces the bars on (``1``) or off (``0``)
ENV = "GRAPH_TRANSFORMERS_PROGRESS"
#: seconds a loop runs before its bar appears (tqdm's ``delay``)
DELAY_S = 2.0
log = logging.getLogger(__name__)
_forced: dict[str, bool] = {}  # "enabled": set_progress's choice, where one was made


def set_progress(enabled: bool | None) -> None:
    """Shows (``True``) or hides (``False``) every progress bar of this process, whatever the
    terminal and :data:`ENV` say; ``None`` returns to the default. ``--quiet`` sets ``False``.
    """
    if enabled is None:
        _forced.pop("enabled", None)
    else:
        _forced["enabled"] = bool(enabled)


def progress_enabled(stream: TextIO | None = None) -> bool:
    """Whether a progress bar writing to ``stream`` (default ``sys.stderr``) is shown: the
    choice of :func:`set_progress`, else :data:`ENV` (``1`` / ``true`` / ``on`` or ``0`` /
    ``false`` / ``off``), else whether ``stream`` is a terminal.

    Raises:
        ValueError: :data:`ENV` holds another value.
    """
    if "enabled" in _forced:
        return _forced["enabled"]
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("1", "true", "on", "yes"):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    if value:
        raise ValueError(f"{ENV} must be 1 (show progress bars) or 0 (hide them), got {value!r}")
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def progress(items: Iterable[T], what: str, *, total: int | None = None,
             unit: str = "graph", **options: Any) -> Iterator[T] | Iterable[T]:
    """``items`` with a progress bar (``what``: count of ``total``, rate, time left) while it is
    iterated, where :func:`progress_enabled`; otherwise ``items`` itself, untouched.

    Args:
        items: what the loop goes over.
        what: the bar's label (``"ZINC val: encodings"``).
        total: the number of items (default ``len(items)`` where it has one).
        unit: what one item is, for the rate (``graph``, ``batch``, ``molecule``).
        options: further ``tqdm`` arguments.

    Returns:
        an iterable over the same items, in order.
    """
    if not progress_enabled():
        return items
    from tqdm import tqdm
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    return tqdm(items, desc=what, total=total, unit=unit,
                **{"delay": DELAY_S, "leave": False, "dynamic_ncols": True, **options})


class _NoBar:
    """What :func:`counter` returns where no bar is shown: counts nothing."""

    def update(self, n: int = 1) -> None:
        """Ignored."""

    def close(self) -> None:
        """Ignored."""


def counter(what: str, total: int | None = None, unit: str = "graph") -> Any:
    """A progress bar counted by hand (``update(n)``, ``close()``) for work done in chunks
    (a pool's results, a graph store's packs), where :func:`progress_enabled`; otherwise an
    object whose ``update`` and ``close`` do nothing.

    Args:
        what: the bar's label.
        total: the number of items, where known.
        unit: what one item is.

    Returns:
        the bar.
    """
    if not progress_enabled():
        return _NoBar()
    from tqdm import tqdm
    return tqdm(desc=what, total=total, unit=unit, delay=DELAY_S, leave=False,
                dynamic_ncols=True)


class _Counted:
    """``fn`` that ticks ``bar`` at each call; its ``repr`` is ``fn``'s, so a cache key made of
    the ``repr`` (:func:`~graph_transformers.data.cache.pre_transform_key`, PyG's
    ``pre_transform.pt``) does not change."""

    def __init__(self, fn: Callable[[Any], Any], bar: Any) -> None:
        self.fn, self.bar = fn, bar

    def __call__(self, data: Any) -> Any:
        out = self.fn(data)
        self.bar.update()
        return out

    def __repr__(self) -> str:
        return repr(self.fn)


@contextmanager
def counted_pre_transform(dataset: Any, what: str) -> Iterator[None]:
    """Inside this block ``dataset.pre_transform`` (when set) counts the graphs it processes on
    a :func:`counter` bar labelled ``what`` (a count and a rate: PyG's own ``process`` of
    ``TUDataset`` / ``Planetoid`` reads the graphs itself, so the total is not known), and one
    INFO line says the phase has begun; the pre-transform is restored on leaving.

    Example:
        >>> class Dataset:
        ...     pre_transform = staticmethod(lambda d: d + 1)
        >>> ds = Dataset()
        >>> with counted_pre_transform(ds, "toy: encodings"):
        ...     tuple(ds.pre_transform(d) for d in range(3))
        (1, 2, 3)
    """
    pre = dataset.pre_transform
    if pre is None:
        yield
        return
    log.info("%s: computing the pre-transform graph by graph (%r)", what, pre)
    bar = counter(what)
    dataset.pre_transform = _Counted(pre, bar)
    try:
        yield
    finally:
        dataset.pre_transform = pre
        bar.close()
