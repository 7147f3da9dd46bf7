r"""A memory-mapped graph store for datasets too large to keep in memory (PCQM4M-LSC,
PCQM4Mv2: 3.4 M / 3.7 M molecules, with their encodings).

**Layout.** One store is one folder holding the graphs of one split, in the collated layout of
PyG's :class:`~torch_geometric.data.InMemoryDataset` (every attribute's tensors of all graphs
concatenated, values local to each graph), one raw little-endian file per attribute:

* ``<key>.bin``: the attribute's tensors of all graphs concatenated along its concatenation
  dimension (``Data.__cat_dim__``: 1 for ``edge_index``, 0 otherwise), stored with that
  dimension first (``edge_index`` as ``[num_edges, 2]``), so that chunks of graphs are appended
  as they are built; optionally in a narrower integer dtype (``compact``: OGB's feature ids in
  ``uint8``), cast back when a graph is read;
* ``slices.bin``: ``int64 [num_keys, num_graphs + 1]``, where each graph's rows start (PyG's
  ``slices``); ``num_nodes.bin`` and ``ids.bin``: ``int64 [num_graphs]``, each graph's node
  count and its id in the source (e.g. its row of a CSV file);
* ``meta.json``: format version, the keys with their dtypes and shapes, the graph count and
  whatever the builder records (``info``);
* ``manifest.json``: the sha256 and size of every file above
  (:func:`~graph_transformers.data.cache.record_cache_file`), written last: a folder whose
  files do not all match it is an interrupted or damaged build and is rebuilt.

A store is built into a temporary sibling folder and renamed into place when complete
(:func:`build_graph_store`); it is read by :class:`GraphStore`, an ``InMemoryDataset`` whose
tensors are ``numpy.memmap`` views of the files: nothing is read into memory until a graph
is, and the pages read stay evictable page cache. Because the collated tensors and ``slices``
are exactly where an ``InMemoryDataset`` keeps them (``_data``, ``slices``, no ``_indices``),
the library's whole-split fast paths apply unchanged (graph sizes for bucketing, label and
input checks, the run's data fingerprint, ``torch_geometric.loader.DataLoader``).

Why not PyG's :class:`~torch_geometric.data.OnDiskDataset` (SQLite): it stores graph by graph,
so every whole-split pass the library makes (the data fingerprint of a run, the check for
all-missing labels, graph sizes) would read millions of rows one query at a time, and reading
one graph costs a query; a memory-mapped collated store costs a slice per tensor.

**Building in parallel.** :func:`build_graph_store` maps a ``make(job) -> (graphs, skipped)``
function over jobs (chunks of items) in worker processes
(:func:`~graph_transformers.data.parallel.parallel_map`); each worker applies the
``pre_transform`` (the encodings) to every graph of its chunk, checks the chunk
(:func:`~graph_transformers.data.cache.validate_graph_storage`) and packs it into concatenated
arrays (:func:`pack_graphs`); the parent appends the chunks in order. Memory use is bounded by a
few chunks, whatever the number of graphs.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset

from ..errors import DataError
from ..fileio import atomic_write_text
from .cache import MANIFEST, cache_file_problem, record_cache_file, validate_graph_storage
from .parallel import parallel_map
from .progress import counter

__all__ = ["STORE_FORMAT", "GraphStore", "PackedGraphs", "build_graph_store", "pack_graphs",
           "store_problem"]

log = logging.getLogger(__name__)

#: version of the folder layout (in ``meta.json``; a store of another version is rebuilt)
STORE_FORMAT = 1
META = "meta.json"
#: the files of a store besides one ``<key>.bin`` per attribute
_FIXED_FILES = ("slices.bin", "num_nodes.bin", "ids.bin", META)
#: most skipped items listed in ``meta.json`` (their count is always recorded)
_MAX_LISTED_SKIPPED = 1000


def _np_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of a torch dtype (``bfloat16`` has none).

    Raises:
        DataError: a dtype numpy cannot store.
    """
    try:
        return torch.empty(0, dtype=dtype).numpy().dtype
    except TypeError:
        raise DataError(f"graph store: tensors of dtype {dtype} cannot be stored (no numpy "
                        "dtype); convert them in the pre-transform") from None


def _torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise DataError(f"graph store: unknown dtype {name!r} in {META}")
    return dtype


@dataclass
class PackedGraphs:
    """A chunk of graphs in the store's layout (what a worker returns, see :func:`pack_graphs`).

    Attributes:
        keys: ``{key: {"cat_dim", "dtype", "stored_dtype", "shape"}}``: the concatenation
            dimension, the graphs' dtype, the dtype on disk and the shape of one row (the
            tensor's other dimensions, concatenation dimension first).
        arrays: ``{key: ndarray [rows, *shape]}`` in the stored dtype.
        sizes: ``int64 [num_keys, count]``: each graph's rows of each key (``keys`` order).
        num_nodes, ids: ``int64 [count]``.
        skipped: records of the items ``make`` left out (``{"id", "reason", ...}``).
    """

    keys: dict[str, dict[str, Any]]
    arrays: dict[str, np.ndarray]
    sizes: np.ndarray
    num_nodes: np.ndarray
    ids: np.ndarray
    skipped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return int(self.num_nodes.shape[0])


def _graph_tensors(graph: Data, where: str) -> dict[str, Tensor]:
    """The tensor attributes of ``graph`` (``num_nodes`` is kept apart).

    Raises:
        DataError: a graph that is not a plain ``Data``, an attribute that is not a tensor, or a
            0-dimensional tensor (it has no dimension to concatenate along).
    """
    if type(graph) is not Data:
        raise DataError(f"{where}: the graph store holds torch_geometric.data.Data graphs, got "
                        f"{type(graph).__name__}")
    out = {}
    for key, value in graph.to_dict().items():
        if key == "num_nodes":
            continue
        if not isinstance(value, Tensor):
            raise DataError(f"{where}: attribute {key!r} is a {type(value).__name__}, not a "
                            "tensor; the graph store holds tensors only")
        if value.dim() == 0:
            raise DataError(f"{where}: attribute {key!r} is a 0-dimensional tensor; store it "
                            "with at least one dimension (e.g. y as [1, 1])")
        out[key] = value
    return out


def pack_graphs(graphs: Sequence[Data], ids: Sequence[int],
                compact: Mapping[str, torch.dtype] | None = None,
                where: str = "graph store") -> PackedGraphs:
    """Concatenates ``graphs`` into the store's layout (see the module docstring).

    Args:
        graphs: PyG ``Data`` objects with the same tensor attributes, each of one dtype and one
            shape but along its concatenation dimension.
        ids: each graph's id in the source, ``[len(graphs)]``.
        compact: ``{key: dtype}``: integer attributes stored in a narrower dtype (their values
            are checked to fit).
        where: names the chunk in errors.

    Returns:
        :class:`PackedGraphs`.

    Raises:
        DataError: graphs with different attributes, dtypes or shapes, values that do not fit
            their ``compact`` dtype, or attributes the store cannot hold
            (:func:`_graph_tensors`).
    """
    compact = dict(compact or {})
    keys: dict[str, dict[str, Any]] = {}
    parts: dict[str, list[Tensor]] = {}
    sizes: list[list[int]] = []
    num_nodes = []
    for i, graph in enumerate(graphs):
        tensors = _graph_tensors(graph, f"{where}, graph {ids[i]}")
        if i == 0:  # keys sorted: every chunk lists them (and its sizes) in one order
            for key, value in sorted(tensors.items()):
                dim = graph.__cat_dim__(key, value) % value.dim()
                shape = list(value.movedim(dim, 0).shape[1:])
                keys[key] = {"cat_dim": dim, "dtype": str(value.dtype),
                             "stored_dtype": str(compact.get(key, value.dtype)), "shape": shape}
                parts[key] = []
        if set(tensors) != set(keys):
            raise DataError(f"{where}, graph {ids[i]}: attributes {sorted(tensors)} differ from "
                            f"the first graph's {sorted(keys)}")
        row = []
        for key, spec in keys.items():
            value = tensors[key]
            moved = value.movedim(spec["cat_dim"], 0)
            if str(value.dtype) != spec["dtype"] or list(moved.shape[1:]) != spec["shape"]:
                raise DataError(f"{where}, graph {ids[i]}: {key} is {value.dtype} "
                                f"{list(value.shape)}, unlike the first graph's {spec['dtype']} "
                                f"with rows {spec['shape']}")
            parts[key].append(moved)
            row.append(int(moved.shape[0]))
        sizes.append(row)
        num_nodes.append(int(graph.num_nodes))
    arrays = {}
    for key in keys:
        flat = torch.cat(parts[key]) if parts[key] else torch.empty(0)
        target = compact.get(key)
        if target is not None:
            if flat.is_floating_point() or flat.dtype == torch.bool:
                raise DataError(f"{where}: {key} is {flat.dtype}; only integer attributes can "
                                f"be stored as {target}")
            info = torch.iinfo(target)
            if flat.numel() and (int(flat.min()) < info.min or int(flat.max()) > info.max):
                raise DataError(f"{where}: {key} holds values {int(flat.min())}..{int(flat.max())}"
                                f", outside the {target} it is stored as ({info.min}..{info.max})")
            flat = flat.to(target)
        arrays[key] = np.ascontiguousarray(flat.numpy())
    rows = np.asarray(sizes, dtype=np.int64).reshape(len(sizes), len(keys))
    return PackedGraphs(keys, arrays, np.ascontiguousarray(rows.T),
                        np.asarray(num_nodes, dtype=np.int64), np.asarray(ids, dtype=np.int64))


def _check_chunk(packed: PackedGraphs, where: str) -> None:
    """:func:`~graph_transformers.data.cache.validate_graph_storage` on a packed chunk (node ids
    inside their graph, floating values finite, NaN allowed in ``y``)."""
    if not packed.count:
        return
    store, slices = {}, {}
    for j, (key, spec) in enumerate(packed.keys.items()):
        store[key] = torch.from_numpy(packed.arrays[key]).movedim(0, spec["cat_dim"])
        slices[key] = torch.from_numpy(np.concatenate([[0], np.cumsum(packed.sizes[j])]))
    validate_graph_storage(store, slices, where)


class _Writer:
    """Appends :class:`PackedGraphs` chunks to the files of a store folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.keys: dict[str, dict[str, Any]] | None = None
        self.files: dict[str, Any] = {}
        self.rows: dict[str, int] = {}
        self.sizes: list[np.ndarray] = []
        self.num_nodes: list[np.ndarray] = []
        self.ids: list[np.ndarray] = []
        self.skipped: list[dict[str, Any]] = []
        self.num_skipped = 0

    def append(self, packed: PackedGraphs, where: str) -> None:
        self.num_skipped += len(packed.skipped)
        self.skipped += packed.skipped[:max(0, _MAX_LISTED_SKIPPED - len(self.skipped))]
        if not packed.count:
            return
        if self.keys is None:
            self.keys = packed.keys
            for key in self.keys:
                self.files[key] = open(self.folder / f"{key}.bin", "wb")
                self.rows[key] = 0
        elif list(packed.keys.items()) != list(self.keys.items()):
            raise DataError(f"{where}: the graphs' attributes {packed.keys} differ from those "
                            f"of the earlier chunks {self.keys}")
        for key, f in self.files.items():
            packed.arrays[key].tofile(f)
            self.rows[key] += int(packed.arrays[key].shape[0])
        self.sizes.append(packed.sizes)
        self.num_nodes.append(packed.num_nodes)
        self.ids.append(packed.ids)

    def close(self, info: dict[str, Any]) -> None:
        for f in self.files.values():
            f.close()
        keys = self.keys or {}
        sizes = np.concatenate(self.sizes, axis=1) if self.sizes else \
            np.zeros((len(keys), 0), np.int64)
        slices = np.concatenate([np.zeros((len(keys), 1), np.int64),
                                 np.cumsum(sizes, axis=1)], axis=1)
        slices.astype(np.int64).tofile(self.folder / "slices.bin")
        for name, parts in (("num_nodes", self.num_nodes), ("ids", self.ids)):
            arr = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            arr.astype(np.int64).tofile(self.folder / f"{name}.bin")
        meta = {"format": STORE_FORMAT, "num_graphs": int(slices.shape[1] - 1),
                "keys": {k: {**v, "rows": self.rows[k]} for k, v in keys.items()},
                "num_skipped": self.num_skipped, "skipped": self.skipped, "info": info}
        atomic_write_text(self.folder / META, json.dumps(meta, indent=1) + "\n")
        for name in [f"{k}.bin" for k in keys] + list(_FIXED_FILES):
            record_cache_file(self.folder / name)


def _pack_job(job: Any, make: Callable[[Any], tuple[list[Data], list[int], list[dict]]],
              pre_transform: Callable | None, compact: Mapping[str, torch.dtype] | None,
              what: str) -> PackedGraphs:
    """One worker's chunk: ``make(job)`` → graphs (with the ``pre_transform`` applied to each),
    checked and packed."""
    graphs, ids, skipped = make(job)
    if pre_transform is not None:
        graphs = [pre_transform(g) for g in graphs]
    where = f"{what} (items {ids[0]}..{ids[-1]})" if ids else what
    packed = pack_graphs(graphs, ids, compact, where)
    _check_chunk(packed, where)
    packed.skipped = list(skipped)
    return packed


def build_graph_store(
    folder: str | os.PathLike, jobs: Iterable[Any],
    make: Callable[[Any], tuple[list[Data], list[int], list[dict]]], *,
    pre_transform: Callable | None = None, compact: Mapping[str, torch.dtype] | None = None,
    num_workers: int = 1, info: dict[str, Any] | None = None, what: str = "graph store",
    total: int | None = None,
) -> Path:
    """Builds a store (module docstring) in ``folder``: ``make`` is mapped over ``jobs`` in
    ``num_workers`` worker processes, the chunks appended in job order, and the folder renamed
    into place once every file and ``manifest.json`` are written (an existing ``folder`` is
    replaced).

    Args:
        folder: the store's folder.
        jobs: picklable arguments of ``make`` (e.g. chunks of rows).
        make: a module-level function ``make(job) -> (graphs, ids, skipped)``: the chunk's
            ``Data`` graphs, their ids in the source, and a record (dict with ``"id"`` and
            ``"reason"``) of each item it left out.
        pre_transform: applied to every graph in the workers (the encodings); it must be
            picklable.
        compact: integer attributes stored narrower (:func:`pack_graphs`).
        num_workers: worker processes (``<= 1``: in this process).
        info: recorded in ``meta.json`` under ``info``.
        what: names the dataset in log lines and errors.
        total: the number of items, for progress lines (optional).

    Returns:
        ``folder``.

    Raises:
        DataError: graphs the store cannot hold or that fail the checks (:func:`pack_graphs`,
            :func:`~graph_transformers.data.cache.validate_graph_storage`).
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.{os.getpid()}.building"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    writer = _Writer(tmp)
    func = functools.partial(_pack_job, make=make, pre_transform=pre_transform, compact=compact,
                             what=what)
    done, logged = 0, 0
    bar = counter(what, total, unit="item")
    try:
        # spawned, not forked: the workers run torch ops (encodings, checks), and a forked
        # child of a process that already ran multi-threaded torch ops can hang in OpenMP
        for packed in parallel_map(func, jobs, num_workers, start_method="spawn"):
            writer.append(packed, what)
            done += packed.count + len(packed.skipped)
            bar.update(packed.count + len(packed.skipped))
            if total and (100 * done // total >= logged + 5 or done == total):
                logged = 100 * done // total
                log.info("%s: %s of %s items processed (%d%%)", what, f"{done:,}",
                         f"{total:,}", logged)
        writer.close(dict(info or {}))
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
    finally:
        bar.close()
        for f in writer.files.values():
            f.close()
        shutil.rmtree(tmp, ignore_errors=True)
    _VERIFIED.pop(str(folder), None)
    return folder


#: stores verified in this process: folder → the (name, size, mtime) of its files then
_VERIFIED: dict[str, tuple] = {}


def _stamp(folder: Path) -> tuple:
    return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                        for p in folder.iterdir() if p.is_file()))


def store_problem(folder: str | os.PathLike) -> str | None:
    """What is wrong with a store folder, or ``None`` when it is complete: every file listed in
    ``meta.json`` present and matching its ``manifest.json`` entry (size and sha256,
    :func:`~graph_transformers.data.cache.cache_file_problem`), of format
    :data:`STORE_FORMAT`. A store found complete is not hashed again in this process while
    its files keep their size and modification time."""
    folder = Path(folder)
    if not (folder / META).is_file():
        return "missing" if not folder.exists() else f"no {META} (an interrupted build)"
    if not (folder / MANIFEST).is_file():
        return f"no {MANIFEST} (an interrupted build)"
    stamp = _stamp(folder)
    if _VERIFIED.get(str(folder)) == stamp:
        return None
    why = cache_file_problem(folder / META)
    if why is not None:
        return f"{META}: {why}"
    try:
        meta = json.loads((folder / META).read_text())
        keys = list(meta["keys"])
    except (ValueError, KeyError, TypeError):
        return f"{META} is not a graph store's"
    if meta.get("format") != STORE_FORMAT:
        return f"format {meta.get('format')}, this version reads {STORE_FORMAT}"
    try:
        recorded = json.loads((folder / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{MANIFEST} is unreadable"
    for name in [f"{k}.bin" for k in keys] + list(_FIXED_FILES):
        path = folder / name
        if path.is_file() and path.stat().st_size == 0 and \
                (recorded.get(name) or {}).get("size") == 0:
            continue  # recorded empty: no rows (a split without edges, or without graphs)
        why = cache_file_problem(path)
        if why is not None:
            return f"{name}: {why}"
    _VERIFIED[str(folder)] = stamp
    return None


def _memmap(path: Path, dtype: np.dtype, shape: tuple[int, ...]) -> Tensor:
    """A tensor viewing ``path`` (copy-on-write memory map: never written back); an empty
    tensor for zero rows (an empty file cannot be mapped)."""
    if int(np.prod(shape)) == 0:
        return torch.from_numpy(np.zeros(shape, dtype=dtype))
    return torch.from_numpy(np.memmap(path, dtype=dtype, mode="c", shape=shape))


class GraphStore(InMemoryDataset):
    r"""The graphs of one store folder (module docstring) as a PyG ``InMemoryDataset`` whose
    tensors are memory-mapped from the files: ``_data`` holds every attribute's concatenated
    tensor in PyG's layout (``_data.x [sum num_nodes, 9]``, ``_data.edge_index
    [2, sum num_edges]``, ...; views of the files, in their stored dtype), ``slices`` the
    graphs' offsets, as :meth:`InMemoryDataset.collate` gives them.

    ``dataset[i]`` is a ``Data`` with every stored attribute in its original dtype
    (``compact`` ones cast back), ``num_nodes`` and, after ``transform``, whatever it adds.
    Unlike ``InMemoryDataset.get``, graphs read are not kept (millions of them would fill the
    memory). Pickling (a DataLoader worker started with ``spawn``) sends the folder, not the
    tensors; the worker maps the files itself (without hashing them again).

    Args:
        folder: the store's folder (complete: see :func:`store_problem`).
        transform: as in PyG.

    Attributes:
        store_dir (Path), meta (dict): the folder and its ``meta.json``.
        source_ids (Tensor): ``int64 [num_graphs]``, each graph's id in the source.

    Raises:
        DataError: the folder is not a complete store (the message says what is wrong).
    """

    def __init__(self, folder: str | os.PathLike, transform: Callable | None = None) -> None:
        super().__init__(None, transform)
        self.store_dir = Path(folder)
        self._open()

    def _open(self, verify: bool = True) -> None:
        """Maps the files (after :func:`store_problem`'s check, unless ``verify`` is false: a
        copy unpickled in a worker, whose sender checked the store)."""
        why = store_problem(self.store_dir) if verify else (
            None if (self.store_dir / META).is_file() else "missing")
        if why is not None:
            raise DataError(f"graph store {self.store_dir}: {why}")
        self.meta = meta = json.loads((self.store_dir / META).read_text())
        n = int(meta["num_graphs"])
        self._count = n
        self._keys: dict[str, dict[str, Any]] = meta["keys"]
        self._dtypes = {k: _torch_dtype(v["dtype"]) for k, v in self._keys.items()}
        raw = _memmap(self.store_dir / "slices.bin", np.dtype(np.int64), (len(self._keys), n + 1))
        store: dict[str, Tensor] = {}
        self.slices = {}
        for j, (key, spec) in enumerate(self._keys.items()):
            dtype = _np_dtype(_torch_dtype(spec["stored_dtype"]))
            flat = _memmap(self.store_dir / f"{key}.bin", dtype,
                           (int(spec["rows"]), *spec["shape"]))
            store[key] = flat.movedim(0, int(spec["cat_dim"]))
            self.slices[key] = raw[j]
        self._data = Data.from_dict(store)
        self._num_nodes = _memmap(self.store_dir / "num_nodes.bin", np.dtype(np.int64), (n,))
        self.source_ids = _memmap(self.store_dir / "ids.bin", np.dtype(np.int64), (n,))

    def len(self) -> int:
        return self._count

    def get(self, idx: int) -> Data:
        idx = int(idx)
        out = {}
        for key, spec in self._keys.items():
            s = self.slices[key]
            start, stop = int(s[idx]), int(s[idx + 1])
            value = self._data[key].narrow(int(spec["cat_dim"]), start, stop - start)
            out[key] = value.to(self._dtypes[key]).contiguous() if value.dtype != \
                self._dtypes[key] else value.contiguous().clone()
        return Data(**out, num_nodes=int(self._num_nodes[idx]))

    def __copy__(self) -> GraphStore:
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for key in ("_data", "slices", "_num_nodes", "source_ids", "_data_list"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._data_list = None
        self._open(verify=False)  # checked where it was pickled: no second full read

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}, {self.store_dir})"
