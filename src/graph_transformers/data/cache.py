"""Where datasets are read from and where their processed form is cached.

Two directories matter:

* the **data directory** holds raw benchmark files (read-only is fine). It is, in order of
  precedence, the ``data_dir`` argument (CLI ``--data-dir``), the ``GRAPH_TRANSFORMERS_DATA``
  environment variable, or ``None`` (then loaders download from the canonical source);
* the **cache directory** holds processed datasets (graphs plus precomputed encodings). It is the
  ``cache_dir`` argument, the ``GRAPH_TRANSFORMERS_CACHE`` environment variable, or
  ``~/.cache/graph_transformers``.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DATA_ENV = "GRAPH_TRANSFORMERS_DATA"
CACHE_ENV = "GRAPH_TRANSFORMERS_CACHE"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The raw-data directory: ``data_dir``, else ``$GRAPH_TRANSFORMERS_DATA``, else ``None``."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser() if env else None


def resolve_cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """The processed-data cache: ``cache_dir``, else ``$GRAPH_TRANSFORMERS_CACHE``, else
    ``~/.cache/graph_transformers``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "graph_transformers"


@contextmanager
def cache_lock(name: str, cache_dir: str | os.PathLike | None = None) -> Iterator[None]:
    """Holds an inter-process file lock (``filelock``) on building dataset ``name`` in the cache
    directory, so that when several processes (the ranks of a DDP run started together by
    torchrun or SLURM) load a dataset that is not cached yet, one builds it and the others wait,
    then read the finished cache. The lock file is ``<cache>/.<name>.lock``; the OS releases it
    if its holder dies. Where the cache directory is not writable (a read-only, prebuilt cache)
    it proceeds without a lock.
    """
    from filelock import FileLock, Timeout

    root = resolve_cache_dir(cache_dir)
    path = root / f".{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.lock"
    lock: FileLock | None = FileLock(str(path))
    try:
        root.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            log.info("waiting for another process to finish building the %s cache (%s)", name,
                     path)
            lock.acquire()
    except OSError as err:  # read-only cache: nothing will be built here either
        log.debug("no cache lock at %s (%s); loading without it", path, err)
        lock = None
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def pre_transform_key(pre_transform: Any) -> str:
    """A short stable hash of a pre-transform's ``repr``, used to name the processed directory so
    that datasets processed with different encodings never share (or silently reuse) a cache."""
    text = "none" if pre_transform is None else repr(pre_transform)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def sha256_of(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


class DataNotFoundError(FileNotFoundError):
    """Raised when a dataset's raw files are neither in the data directory nor downloadable.

    The message says where the loader looked and how to get the files."""


#: set to 1/true/yes/on to forbid every download attempt (loaders then only read local files)
OFFLINE_ENV = "GRAPH_TRANSFORMERS_OFFLINE"


def offline() -> bool:
    """Whether ``$GRAPH_TRANSFORMERS_OFFLINE`` forbids downloads."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
