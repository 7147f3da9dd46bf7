"""Downloads of raw benchmark files: the one transport every loader uses (:func:`fetch_url`, with
a socket timeout and an atomic write), checksum-verified fetches, and the switch that forbids
downloads altogether (``$GRAPH_TRANSFORMERS_OFFLINE``).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import urllib.request
from pathlib import Path

from ..fileio import atomic_writer

__all__ = ["DOWNLOAD_TIMEOUT", "OFFLINE_ENV", "fetch_checked", "fetch_url", "md5_of", "offline"]

#: set to 1/true/yes/on to forbid every download attempt (loaders then only read local files)
OFFLINE_ENV = "GRAPH_TRANSFORMERS_OFFLINE"


def offline() -> bool:
    """Whether ``$GRAPH_TRANSFORMERS_OFFLINE`` forbids downloads."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


#: seconds a download waits to connect and for each read before it fails
DOWNLOAD_TIMEOUT = 15.0


def fetch_url(url: str, dest: str | os.PathLike, timeout: float = DOWNLOAD_TIMEOUT) -> Path:
    """Downloads ``url`` to ``dest`` atomically (a unique temporary file renamed into place).

    Unlike PyG's ``download_url``, every socket operation has a ``timeout`` (connecting and each
    read), so a closed or stalled network fails within seconds instead of hanging; a slow but
    working download still finishes.

    Returns:
        ``dest`` as a :class:`~pathlib.Path`.

    Raises:
        OSError: unreachable host, HTTP error (``urllib.error.URLError`` / ``HTTPError``), socket
            timeout, or a write error; nothing is left at ``dest``.
        http.client.HTTPException: a broken HTTP response.
    """
    req = urllib.request.Request(url, headers={"User-Agent": "graph_transformers"})
    with urllib.request.urlopen(req, timeout=timeout) as r, atomic_writer(dest, "wb") as f:
        shutil.copyfileobj(r, f, length=1 << 20)
    return Path(dest)


def md5_of(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex md5 of a file's bytes (the checksum MNIST's and CIFAR-10's publishers list)."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def fetch_checked(url: str, dest: str | os.PathLike, md5: str,
                  timeout: float = DOWNLOAD_TIMEOUT) -> Path:
    """Downloads ``url`` to ``dest`` (:func:`fetch_url`) and keeps it only when its md5 is
    ``md5``; ``dest`` is never left holding a partial or wrong file.

    Returns:
        ``dest`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: the downloaded file's md5 differs.
        OSError, http.client.HTTPException: as :func:`fetch_url`.
    """
    dest = Path(dest)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")  # unique per process
    try:
        fetch_url(url, tmp, timeout)
        got = md5_of(tmp)
        if got != md5:
            raise ValueError(f"{url}: md5 {got} != expected {md5}")
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest
