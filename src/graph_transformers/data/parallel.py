"""Generation helpers shared by the datasets built item by item (TSP tours, superpixel graphs):
mapping a function over items in worker processes, and keeping the results of a long generation
in chunk files so that an interrupted run resumes where it stopped.
"""
from __future__ import annotations

import logging
import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from .progress import counter

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    """The number of CPUs this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def parallel_map(
    func: Callable[[T], R],
    jobs: Iterable[T],
    num_workers: int,
    *,
    chunksize: int = 1,
    fork: bool = False,
    maxtasksperchild: int | None = None,
    start_method: str | None = None,
) -> Iterator[R]:
    """``func(job)`` for every job, in order: in this process when ``num_workers <= 1``, else in
    a pool of ``num_workers`` processes (``Pool.imap``).

    Args:
        func: a picklable, module-level function.
        jobs: the arguments (a list, or any iterable; only a list is checked for length 1).
        num_workers (int): worker processes; ``<= 1`` runs in this process.
        chunksize (int): jobs handed to a worker at a time.
        fork (bool): start the workers with ``fork`` where available (they then skip
            re-importing torch, seconds per worker) instead of the default start method.
        maxtasksperchild (int, optional): restart a worker after this many jobs.
        start_method (str, optional): the start method when not ``fork`` (e.g. ``"spawn"``
            for workers that run torch ops: a forked child of a process that already ran
            multi-threaded torch ops can hang in the OpenMP runtime); ``None``: the default.

    Returns:
        an iterator over the results, in job order.
    """
    if num_workers <= 1 or (isinstance(jobs, list) and len(jobs) <= 1):
        yield from map(func, jobs)
        return
    if isinstance(jobs, list):
        num_workers = min(num_workers, len(jobs))
    method = "fork" if fork and "fork" in mp.get_all_start_methods() else start_method
    with mp.get_context(method).Pool(int(num_workers), maxtasksperchild=maxtasksperchild) as pool:
        yield from pool.imap(func, jobs, chunksize=chunksize)


def chunk_ranges(count: int, chunk_size: int) -> list[tuple[int, int]]:
    """``[(0, chunk_size), (chunk_size, 2 chunk_size), ..., (.., count)]``: items
    ``start..stop-1`` of each chunk."""
    return [(a, min(a + chunk_size, count)) for a in range(0, count, chunk_size)]


def resumable_map(
    compute: Callable[[list[int]], Iterator[R]],
    count: int,
    chunk_size: int,
    read_chunk: Callable[[int, int], list[R] | None],
    write_chunk: Callable[[int, int, list[R]], None],
    what: str,
) -> list[R]:
    """The results for items ``0..count-1``, computed in chunks of ``chunk_size`` items that are
    stored as soon as they are done, so that an interrupted run resumes.

    Chunks that ``read_chunk(start, stop)`` returns (not ``None``) are reused; the items of the
    others are handed to ``compute`` in one call (so its workers stay busy across chunks) and each
    chunk is passed to ``write_chunk(start, stop, results)`` once its last item is done. Progress
    is logged at INFO level, naming ``what``, once per chunk, and drawn as a bar of the items on
    a terminal (:func:`~graph_transformers.data.progress.counter`).

    Returns:
        ``count`` results, in item order.
    """
    ranges = chunk_ranges(count, chunk_size)
    done: dict[int, list[R]] = {}
    for a, b in ranges:
        got = read_chunk(a, b)
        if got is not None:
            done[a] = got
    todo = [(a, b) for a, b in ranges if a not in done]
    if todo:
        log.info("%s: computing %d of %d chunks (%d items)", what, len(todo), len(ranges),
                 sum(b - a for a, b in todo))
    results = compute([i for a, b in todo for i in range(a, b)])
    bar = counter(what, sum(b - a for a, b in todo), unit="item")
    try:
        for a, b in todo:
            items = []
            for _ in range(a, b):
                items.append(next(results))
                bar.update()
            write_chunk(a, b, items)
            done[a] = items
            log.info("%s: items %d..%d done", what, a, b - 1)
    finally:
        bar.close()
    return [r for a, _ in ranges for r in done[a]]
