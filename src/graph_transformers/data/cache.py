"""Where datasets are read from and where their processed form is cached.

Two directories matter:

* the **data directory** holds raw benchmark files (read-only is fine). It is, in order of
  precedence, the ``data_dir`` argument (CLI ``--data-dir``), the ``GRAPH_TRANSFORMERS_DATA``
  environment variable, or ``None`` (then loaders download from the canonical source, through
  :mod:`graph_transformers.data.download`);
* the **cache directory** holds processed datasets (graphs plus precomputed encodings). It is the
  ``cache_dir`` argument, the ``GRAPH_TRANSFORMERS_CACHE`` environment variable, or
  ``~/.cache/graph_transformers``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data as _Data
from torch_geometric.data import InMemoryDataset as _InMemoryDataset

from ..errors import DataError
from ..fileio import atomic_save, atomic_write_text
from .progress import counted_pre_transform

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


def check_sha256(path: str | os.PathLike, want: str | None, what: str) -> None:
    """Checks a raw file against the sha256 recorded for it (``want``; ``None``: nothing is
    recorded for this file, nothing is checked). ``what`` names the dataset in the error.

    Raises:
        ValueError: the file's sha256 is not ``want``.
    """
    if want is None:
        return
    got = sha256_of(path)
    if got != want:
        raise ValueError(
            f"{what}: {path} has sha256 {got}, expected {want} (the file listed in "
            f"docs/datasets.md, 'Raw files'); the file is corrupt or not the benchmark's"
        )


class DataNotFoundError(FileNotFoundError):
    """Raised when a dataset's raw files are neither in the data directory nor downloadable.

    The message says where the loader looked and how to get the files."""


# ----------------------------------------------------------------------------- verified caches
#: name of the checksum manifest in a processed directory
MANIFEST = "manifest.json"


def record_cache_file(path: str | os.PathLike) -> None:
    """Records ``path``'s sha256 and size in the ``manifest.json`` of its directory (written
    atomically, after the file itself, so a file without an entry is one whose write did not
    finish)."""
    path = Path(path)
    manifest = path.parent / MANIFEST
    entries = _read_manifest(manifest) or {}
    entries[path.name] = {"sha256": sha256_of(path), "size": path.stat().st_size}
    atomic_write_text(manifest, json.dumps({"format": 1, "files": entries}, indent=1) + "\n")


def _read_manifest(manifest: Path) -> dict | None:
    try:
        return dict(json.loads(manifest.read_text())["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def cache_file_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a cached file, or ``None`` when its size and sha256 match its
    manifest entry: missing, empty, no recorded checksum (written by an older version or an
    interrupted build), truncated, or modified."""
    path = Path(path)
    if not path.is_file():
        return "missing"
    size = path.stat().st_size
    if size == 0:
        return "empty (0 bytes)"
    entry = (_read_manifest(path.parent / MANIFEST) or {}).get(path.name)
    if entry is None:
        return "no checksum recorded (written by an older version, or its build was interrupted)"
    if size != entry.get("size"):
        return f"size {size:,} bytes, recorded {entry.get('size'):,} (truncated or modified)"
    if sha256_of(path) != entry.get("sha256"):
        return "content differs from its recorded sha256 (corrupted or modified)"
    return None


def write_cache_json(path: str | os.PathLike, obj: Any) -> None:
    """Writes a JSON cache file atomically and records its checksum."""
    atomic_write_text(path, json.dumps(obj))
    record_cache_file(path)


def validate_graph_storage(data: Any, slices: dict | None, where: str,
                           num_classes: int | None = None) -> None:
    """Cheap checks of a collated PyG storage (one pass over its tensors): ``edge_index`` ids
    in ``0..num_nodes-1`` of their graph, floating tensors finite (``y`` may hold NaN = missing
    label, never ±inf), integer labels in ``0..num_classes-1``.

    Raises:
        DataError: naming ``where``, the tensor and the first offending graph.
    """
    def graph_of(key: str, flat_index: int) -> str:
        if slices is None or key not in slices:
            return ""
        bounds = slices[key]
        g = int(torch.searchsorted(bounds, torch.tensor(flat_index), right=True)) - 1
        return f" (graph {g})"

    store = data.to_dict() if hasattr(data, "to_dict") else dict(data)
    ei = store.get("edge_index")
    if isinstance(ei, torch.Tensor) and ei.numel():
        if ei.dim() != 2 or ei.size(0) != 2:
            raise DataError(f"{where}: edge_index has shape {tuple(ei.shape)}, not [2, num_edges]")
        if int(ei.min()) < 0:
            col = int((ei.min(dim=0).values < 0).nonzero()[0])
            raise DataError(f"{where}: edge_index holds a negative node id"
                            f"{graph_of('edge_index', col)}")
        node_key = next((k for k in ("x", "pos", "node_mask")
                         if isinstance(store.get(k), torch.Tensor)), None)
        if slices is not None and node_key in slices and "edge_index" in slices:
            nodes = torch.diff(slices[node_key])
            per_edge = torch.repeat_interleave(nodes, torch.diff(slices["edge_index"]))
            bad = (ei.max(dim=0).values >= per_edge).nonzero()
            if bad.numel():
                col = int(bad[0])
                raise DataError(f"{where}: edge_index holds node id {int(ei[:, col].max())} "
                                f"outside its graph of {int(per_edge[col])} nodes"
                                f"{graph_of('edge_index', col)}")
        elif node_key is not None and int(ei.max()) >= store[node_key].size(0):
            raise DataError(f"{where}: edge_index holds node id {int(ei.max())} outside "
                            f"0..{store[node_key].size(0) - 1}")
    for key, value in store.items():
        if not isinstance(value, torch.Tensor) or not value.numel():
            continue
        if value.is_floating_point():
            bad = torch.isinf(value) if key == "y" else ~torch.isfinite(value)
            if bool(bad.any()):
                row = int(bad.reshape(value.size(0), -1).any(dim=1).nonzero()[0]) \
                    if value.dim() else 0
                raise DataError(f"{where}: {key} holds non-finite values{graph_of(key, row)}")
        elif key == "y" and value.dtype != torch.bool:
            lo, hi = int(value.min()), int(value.max())
            if lo < 0 or (num_classes is not None and hi >= num_classes):
                rng = f"0..{num_classes - 1}" if num_classes is not None else ">= 0"
                raise DataError(f"{where}: label {lo if lo < 0 else hi} outside {rng}")


class CheckedInMemoryDataset(_InMemoryDataset):
    """A PyG ``InMemoryDataset`` whose processed files are checksummed and verified.

    ``save`` writes atomically (unique temporary file, rename) and records the file's sha256
    and size in ``processed_dir/manifest.json``; ``load`` first checks the file against the
    manifest (and every ``.json`` processed file, which subclasses write with
    :func:`write_cache_json`). On a missing entry, a size or hash mismatch or an empty file it
    logs one WARNING naming the file and what is wrong, and rebuilds the cache with
    ``process()``; when that is impossible (raw data gone) it raises a
    :class:`~graph_transformers.errors.DataError`. The loaded storage is then validated once
    (:func:`validate_graph_storage`; ``num_classes``, when the class defines it as an integer,
    bounds integer labels).

    Raises:
        DataError: a corrupt cache that cannot be rebuilt, or graphs that fail validation.
    """

    @classmethod
    def save(cls, data_list, path: str) -> None:
        data, slices = cls.collate(data_list)
        atomic_save(path, lambda f: torch.save((data.to_dict(), slices, data.__class__), f))
        record_cache_file(path)

    def load(self, path: str, data_cls=None) -> None:
        files = [Path(path)] + [Path(p) for p in self.processed_paths
                                if p.endswith(".json") and Path(p) != Path(path)]
        problems = [(f, why) for f in files if (why := cache_file_problem(f)) is not None]
        if problems:
            f, why = problems[0]
            log.warning("dataset cache %s: %s; rebuilding it", f, why)
            try:
                os.makedirs(self.processed_dir, exist_ok=True)
                self.process()
            except (DataNotFoundError, FileNotFoundError) as err:
                raise DataError(f"dataset cache {f} is unusable ({why}) and cannot be rebuilt: "
                                f"{err}") from None
            still = [(f, why) for f in files if (why := cache_file_problem(f)) is not None]
            if still:
                raise DataError(f"dataset cache {still[0][0]}: {still[0][1]} after a rebuild")
        super().load(path, data_cls or _Data)
        n = type(self).__dict__.get("num_classes", getattr(type(self), "num_classes", None))
        validate_graph_storage(self._data, self.slices, f"dataset cache {path}",
                               n if isinstance(n, int) and not isinstance(n, bool) else None)


class KeyedCacheDataset(CheckedInMemoryDataset):
    """A :class:`CheckedInMemoryDataset` whose processed files live in
    ``root/processed/<self._key>/``, the key naming what the graphs depend on (source files'
    hash, settings, seed, pre-transform), so that a change gives a new cache entry, never a
    stale one. Subclasses set ``_key`` (an attribute or a property) before ``__init__`` of this
    class runs. Raw files, if any, are found by the subclass itself: ``raw_file_names`` is
    empty, so PyG's download hook never runs."""

    _key: str

    @property
    def raw_file_names(self) -> list[str]:
        return []

    @property
    def processed_dir(self) -> str:
        return os.path.join(self.root, "processed", self._key)


class FileBackedDataset(KeyedCacheDataset):
    """A :class:`KeyedCacheDataset` built from one user file ``self.path``, read in place
    (never copied), its processed files ``data.pt`` + ``meta.json`` under
    ``root/processed/<self._key>/`` (the key names the file's hash, settings and pre-transform).
    Subclasses set ``path``, ``_key`` and ``_missing`` (what the missing file is, for the
    error) before ``__init__`` of this class runs."""

    _missing = "file"

    @property
    def raw_dir(self) -> str:
        return str(self.path.parent)  # read in place, never copied

    @property
    def raw_file_names(self) -> list[str]:
        return [self.path.name]

    @property
    def processed_file_names(self) -> list[str]:
        return ["data.pt", "meta.json"]

    def download(self) -> None:  # pragma: no cover - the file's existence is checked earlier
        raise DataNotFoundError(f"{self._missing} not found: {self.path}")


class PreTransformKeyed:
    """A mixin for a PyG dataset processed by PyG's own ``process`` (``TUDataset``,
    ``Planetoid``; put it first among the bases): the processed files go to
    ``root/<name>/processed/<pre_transform_key(pre_transform)>/``, so that other encodings never
    share a cache, and the pre-transform is counted on a progress bar
    (:func:`~graph_transformers.data.progress.counted_pre_transform`, labelled
    ``"<family> <name>: encodings"``). Subclasses may set ``family`` (e.g. ``"TU"``)."""

    family = ""

    @property
    def processed_dir(self) -> str:
        return os.path.join(self.root, self.name, "processed",
                            pre_transform_key(self.pre_transform))

    def process(self) -> None:
        with counted_pre_transform(self, f"{self.family} {self.name}: encodings".lstrip()):
            super().process()
