"""The split on the device (``data.on_device: true``, issue 56 item 2): a split's graphs stored
once on the accelerator as flat tensors with offsets, each batch built there by index gathers.

A training step on a GPU otherwise starts with host work: PyG's ``Collater`` concatenates the
batch's graphs on the CPU (``Batch.from_data_list``) and every attribute is copied to the device.
:class:`DeviceSplit` does that concatenation once for the whole split, with PyG's own collation
(:func:`torch_geometric.data.collate.collate` without increments, the storage of an
``InMemoryDataset``), and keeps on the host what only depends on sizes: every graph's size along
each attribute's concatenation dimension (``Data.__cat_dim__``) and its increment
(``Data.__inc__``: the number of nodes for ``edge_index``, ``0`` for features; whatever a
``Data`` subclass declares). :meth:`DeviceSplit.batch` then builds the ``Batch`` of a list of
graph indices with gathers on the device: the attribute rows of the chosen graphs
(``index_select`` along the concatenation dimension, the row indices from
``torch.repeat_interleave`` with an ``output_size`` known on the host), the increments added per
row, and ``batch`` / ``ptr``. The slice and increment tables of the batch (``_slice_dict``,
``_inc_dict``) are computed on the host from the stored sizes, so
:func:`graph_transformers.core.dense.host_num_nodes` reads the graph sizes without waiting for
the device. No collation and no host-to-device copy happen per step; :class:`DeviceLoader`
copies the epoch's graph order (one ``int64`` per graph) once per epoch.

The result equals ``torch_geometric.loader.DataLoader``'s batch of the same graphs: the same
keys in the same order, values, dtypes, ``num_graphs``, ``batch``, ``ptr``, slice and increment
tables (``tests/data/test_device_split.py``). Attributes kept: tensors of any shape (node-,
edge-, graph- and pair-level, whatever their names), Python numbers (stacked into a tensor, as
PyG does) and other objects (strings, ...: kept on the host, the batch holds their list).

Memory: the split's tensors once (:attr:`DeviceSplit.nbytes`: for ZINC's 10,000 training
graphs with LapPE and RWSE a few MB; pair attributes grow with ``Σ n²``), plus three ``int64``
values per graph and per distinct size table (nodes, edges, pairs, graphs) for the offsets.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler
from torch_geometric.data import Batch, Data
from torch_geometric.data.collate import collate
from torch_geometric.utils import cumsum

from ..errors import DataError

log = logging.getLogger(__name__)

#: attribute kinds: a tensor concatenated along its ``__cat_dim__``, Python numbers PyG stacks
#: into one tensor, and other objects PyG keeps as a list
_TENSOR, _NUMBER, _OBJECT = "tensor", "number", "object"


@dataclass
class _Group:
    """The sizes of the graphs along one concatenation: every attribute with the same per-graph
    sizes (all node-level ones, all edge-level ones, ...) shares one group, so a batch computes
    the row indices once per group. ``sizes`` / ``starts``: host ``[G]`` int64; ``*_dev``: the
    same on the split's device (``None`` where every size is 1: the rows are the graph ids)."""

    sizes: np.ndarray
    starts: np.ndarray
    unit: bool
    sizes_dev: Tensor | None = None
    starts_dev: Tensor | None = None


@dataclass
class _Attr:
    """One attribute of the split: its kind, flat value (``[..., Σ sizes, ...]`` for tensors,
    ``[G]`` for numbers, a host list for objects), concatenation dimension, size group and
    per-graph increments (host ``[G]`` as PyG computes them, ``None`` for objects)."""

    key: str
    kind: str
    value: Any
    cat_dim: int
    group: int
    inc: Tensor | None
    increments: bool = False
    inc_dev: Tensor | None = None


def _kind(key: str, value: Any) -> str:
    """The kind of an attribute value (:data:`_TENSOR`, ...); a one-line DataError for what PyG
    collates in ways this storage does not reproduce."""
    from torch_geometric import EdgeIndex, Index
    from torch_geometric.utils import is_sparse
    if isinstance(value, Tensor):
        if isinstance(value, (EdgeIndex, Index)):
            raise DataError(f"DeviceSplit: attribute {key!r} is a PyG {type(value).__name__}; "
                            "store plain tensors (value.as_tensor())")
        if is_sparse(value) or getattr(value, "is_nested", False):
            raise DataError(f"DeviceSplit: attribute {key!r} is a sparse or nested tensor, "
                            "which is not stored flat; use a dense tensor")
        return _TENSOR
    if isinstance(value, (bool, int, float)):
        return _NUMBER
    if isinstance(value, (dict, list, tuple)) and any(
            isinstance(v, Tensor) for v in (value.values() if isinstance(value, dict) else value)):
        raise DataError(f"DeviceSplit: attribute {key!r} is a {type(value).__name__} of tensors; "
                        "store each tensor as its own attribute")
    if type(value).__name__ == "SparseTensor" or type(value).__name__ == "TensorFrame":
        raise DataError(f"DeviceSplit: attribute {key!r} is a {type(value).__name__}, which is "
                        "not stored flat")
    return _OBJECT


def _graphs(dataset) -> list[Data]:
    """The split's graphs as a list, checked: at least one, one ``Data`` class, no
    ``HeteroData``, the same attributes in every graph, no per-access ``transform``."""
    transform = getattr(dataset, "transform", None)
    if transform is not None:
        raise DataError(f"DeviceSplit stores the split once, but the dataset applies a transform "
                        f"on every access ({transform!r}); apply it as a pre_transform instead")
    graphs = [dataset[i] for i in range(len(dataset))]
    if not graphs:
        raise DataError("DeviceSplit: the split has no graphs")
    first = graphs[0]
    if not isinstance(first, Data):
        raise DataError(f"DeviceSplit stores graphs of torch_geometric.data.Data; got "
                        f"{type(first).__name__} (HeteroData and other types are not supported)")
    keys = set(first.keys())
    for i, g in enumerate(graphs):
        if type(g) is not type(first):
            raise DataError(f"DeviceSplit: graph {i} is a {type(g).__name__}, graph 0 a "
                            f"{type(first).__name__}; every graph must have one class")
        if i and set(g.keys()) != keys:
            diff = sorted(set(g.keys()) ^ keys)
            raise DataError(f"DeviceSplit: graph {i} has other attributes than graph 0 "
                            f"(differing: {', '.join(diff)}); every graph needs the same ones")
    return graphs


def _exclusive_cumsum(values: np.ndarray, size: int) -> np.ndarray:
    """``[0, v0, v0 + v1, ...]`` of length ``size`` (PyG's ``cumsum`` of ``values``), on the host
    with NumPy: no tensor op dispatched for a table that stays on the host."""
    out = np.zeros(size, dtype=values.dtype)
    np.cumsum(values, out=out[1:len(values) + 1])
    return out


class DeviceSplit:
    """A split's graphs stored once, flat, on one device; :meth:`batch` builds the PyG ``Batch``
    of any list of graph indices there by index gathers (module docstring).

    Built on the host with PyG's collation (``collate(..., increment=False)``, as
    ``InMemoryDataset`` stores a dataset), then moved with :meth:`to`. Which attributes are
    incremented, and by how much, is PyG's ``Data.__inc__`` of each graph; along which dimension
    graphs are joined, ``Data.__cat_dim__`` (no attribute name is special here).

    Args:
        dataset: the split: a PyG ``InMemoryDataset`` / ``Dataset`` or a list of ``Data``
            (indexable, with ``len``), without a per-access ``transform``.
        device: where the flat tensors live (default the CPU).

    Attributes:
        num_nodes (numpy.ndarray): ``[G]`` int64, the nodes of every graph (on the host).
        device (torch.device): where the split's tensors are.

    Raises:
        DataError: for an empty split, a dataset with a ``transform``, graphs of different
            classes or attributes, an attribute of different types or dtypes, ``HeteroData``,
            sparse / nested tensors, PyG ``EdgeIndex``, containers of tensors, tensors that do
            not concatenate (naming the attribute), or an ``__inc__`` that is not a number.
    """

    def __init__(self, dataset, device: torch.device | str = "cpu") -> None:
        graphs = _graphs(dataset)
        self._template = graphs[0]
        self._data_cls = type(graphs[0])
        self._keys = list(graphs[0]._store.keys())  # in storage order, as PyG collates
        g = len(graphs)
        self.num_nodes = np.asarray([int(d.num_nodes or 0) for d in graphs], dtype=np.int64)
        self._explicit_num_nodes = [int(d["num_nodes"]) for d in graphs] \
            if "num_nodes" in self._keys else None
        kinds = {k: _kind(k, graphs[0][k]) for k in self._keys if k != "num_nodes"}
        # PyG promotes types within each batch; stored flat, they must agree across the split
        for i, d in enumerate(graphs[1:], 1):
            for k, kind in kinds.items():
                a, b = d[k], graphs[0][k]
                if _kind(k, a) != kind or (kind == _NUMBER and type(a) is not type(b)):
                    raise DataError(f"DeviceSplit: attribute {k!r} of graph {i} is a "
                                    f"{type(a).__name__}, of graph 0 a {type(b).__name__}")
                if kind == _TENSOR and a.dtype != b.dtype:
                    raise DataError(f"DeviceSplit: attribute {k!r} of graph {i} has dtype "
                                    f"{a.dtype}, of graph 0 {b.dtype}; store one dtype")
        tensors = [k for k, kind in kinds.items() if kind != _OBJECT]
        try:
            flat, slices, _ = collate(self._data_cls, graphs, increment=False, add_batch=False,
                                      exclude_keys=[k for k in kinds if k not in tensors])
        except RuntimeError as err:
            raise DataError(f"DeviceSplit: the graphs' attributes do not concatenate "
                            f"({str(err).splitlines()[0]})") from None
        self._groups: list[_Group] = []
        self._group_of: dict[bytes, int] = {}
        self._attrs: list[_Attr] = []
        for k, kind in kinds.items():
            if kind == _OBJECT:
                values = [d[k] for d in graphs]
                self._attrs.append(_Attr(k, kind, values, 0, self._group(np.ones(g, np.int64)),
                                         None))
                continue
            value = flat[k]
            sizes = torch.diff(slices[k]).numpy().astype(np.int64)
            cat_dim, stacked = 0, kind == _NUMBER
            if kind == _TENSOR:
                elem = graphs[0][k]
                dim = graphs[0].__cat_dim__(k, elem, graphs[0]._store)
                stacked = dim is None or elem.dim() == 0  # PyG stacks these (unsqueeze(0))
                cat_dim = 0 if stacked else int(dim) % value.dim()
            inc = self._incs(k, graphs, unsqueeze=stacked and kind == _TENSOR)
            self._attrs.append(_Attr(k, kind, value, cat_dim, self._group(sizes), inc,
                                     increments=bool((inc != 0).any())))
        # PyG adds ``batch`` / ``ptr`` to node storages whose node count it can infer
        self._add_batch = bool(self._template._store.can_infer_num_nodes)
        self._batch_group = self._group(self.num_nodes)
        self.device: torch.device | None = None
        self.to(device)

    def _group(self, sizes: np.ndarray) -> int:
        """The index of the size group with these per-graph sizes (created when new)."""
        key = sizes.tobytes()
        if key not in self._group_of:
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
            self._group_of[key] = len(self._groups)
            self._groups.append(_Group(sizes, starts, bool((sizes == 1).all())))
        return self._group_of[key]

    @staticmethod
    def _incs(key: str, graphs: list[Data], unsqueeze: bool) -> Tensor:
        """Per-graph increments of ``key`` as PyG's ``get_incs`` computes them (before its
        cumulative sum; ``unsqueeze``: the values as PyG passes stacked ones): ``[G]``; a
        DataError for a tensor-valued increment."""
        repeats = [d.__inc__(key, d[key].unsqueeze(0) if unsqueeze else d[key], d._store)
                   for d in graphs]
        if isinstance(repeats[0], Tensor):
            if repeats[0].numel() != 1:
                raise DataError(f"DeviceSplit: attribute {key!r} has a tensor increment "
                                f"(shape {tuple(repeats[0].shape)}, e.g. a bipartite graph); "
                                "only number increments are supported")
            return torch.stack([r.reshape(()) for r in repeats])
        try:
            return torch.tensor(repeats)
        except (TypeError, ValueError, RuntimeError):
            raise DataError(f"DeviceSplit: __inc__ of attribute {key!r} returned "
                            f"{type(repeats[0]).__name__}, not a number") from None

    def __len__(self) -> int:
        return int(self.num_nodes.size)

    @property
    def nbytes(self) -> int:
        """Bytes the split takes on its device: the flat tensors plus the offset tables."""
        total = sum(a.value.numel() * a.value.element_size() for a in self._attrs
                    if a.kind != _OBJECT)
        total += sum(a.inc_dev.numel() * a.inc_dev.element_size() for a in self._attrs
                     if a.inc_dev is not None)
        return total + sum(2 * 8 * grp.sizes.size for grp in self._groups if not grp.unit)

    def to(self, device: torch.device | str) -> DeviceSplit:
        """Moves the flat tensors and offset tables to ``device`` (in place; once: a no-op when
        they are there) and returns the split."""
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if device == self.device:
            return self
        for a in self._attrs:
            if a.kind != _OBJECT:
                a.value = a.value.to(device)
            a.inc_dev = a.inc.to(device) if a.increments else None
        for grp in self._groups:
            if not grp.unit:
                grp.sizes_dev = torch.from_numpy(grp.sizes).to(device)
                grp.starts_dev = torch.from_numpy(grp.starts).to(device)
        self.device = device
        return self

    def batch(self, index: Sequence[int] | np.ndarray | Tensor,
              index_on_device: Tensor | None = None) -> Batch:
        """The PyG ``Batch`` of the graphs ``index`` (in that order), built on the split's
        device; equal to ``Batch.from_data_list([dataset[i] for i in index])``.

        Args:
            index: ``[B]`` graph indices on the host (list, numpy array or CPU tensor).
            index_on_device: the same indices already on the split's device (``[B]`` int64;
                :class:`DeviceLoader` passes a slice of the epoch's order); ``None``: copied.

        Returns:
            the batch: every attribute, ``batch`` ``[num_nodes]``, ``ptr`` ``[B + 1]``, and the
            host tables ``_slice_dict`` / ``_inc_dict`` / ``_num_graphs`` of PyG's collation.

        Raises:
            DataError: for an empty ``index`` or one outside ``0..len - 1``.
        """
        idx = np.asarray(index.cpu() if isinstance(index, Tensor) else index, dtype=np.int64)
        if idx.ndim != 1 or idx.size == 0:
            raise DataError(f"DeviceSplit.batch needs a non-empty 1-D list of graph indices, got "
                            f"shape {tuple(idx.shape)}")
        if int(idx.min()) < 0 or int(idx.max()) >= len(self):
            raise DataError(f"DeviceSplit.batch: graph index out of range 0..{len(self) - 1} "
                            f"(min {int(idx.min())}, max {int(idx.max())})")
        dev = self.device
        idx_t = torch.from_numpy(idx)
        idx_dev = idx_t.to(dev) if index_on_device is None else index_on_device
        b = idx.size
        rows: dict[int, tuple[Tensor, Tensor | None, Tensor]] = {}

        def rows_of(gi: int) -> tuple[Tensor, Tensor | None, Tensor]:
            """(row indices ``[total]``, owner graph of each row or ``None`` for one row per
            graph, host slice table ``[B + 1]``) of size group ``gi``."""
            if gi not in rows:
                grp = self._groups[gi]
                counts = grp.sizes[idx]
                slice_host = torch.from_numpy(_exclusive_cumsum(counts, b + 1))
                if grp.unit:
                    rows[gi] = (idx_dev, None, slice_host)
                else:
                    total = int(slice_host[-1])
                    n_dev = grp.sizes_dev[idx_dev]
                    owner = torch.repeat_interleave(n_dev, output_size=total)
                    first = grp.starts_dev[idx_dev] - (torch.cumsum(n_dev, 0) - n_dev)
                    rows[gi] = (torch.arange(total, device=dev) + first[owner], owner,
                                slice_host)
            return rows[gi]

        out = Batch(_base_cls=self._data_cls)
        out.stores_as(self._template)
        store = out._store
        slice_dict: dict[str, Any] = {}
        inc_dict: dict[str, Any] = {}
        attrs = {a.key: a for a in self._attrs}
        for key in self._keys:
            if key == "num_nodes":
                sizes = [self._explicit_num_nodes[i] for i in idx.tolist()]
                store._num_nodes = sizes
                store.num_nodes = sum(sizes)
                continue
            a = attrs[key]
            if a.kind == _OBJECT:
                store[key] = [a.value[i] for i in idx.tolist()]
                slice_dict[key], inc_dict[key] = torch.arange(b + 1), None
                continue
            row, owner, slice_host = rows_of(a.group)
            value = a.value.index_select(a.cat_dim, row)
            incs = torch.from_numpy(_exclusive_cumsum(a.inc.numpy()[idx[:-1]], b))
            if a.increments and int(incs[-1]) != 0:  # PyG adds only then (dtypes as PyG's)
                inc_b = a.inc_dev[idx_dev]
                offset = torch.cumsum(inc_b, 0) - inc_b
                per_row = offset if owner is None else offset[owner]
                shape = [1] * value.dim()
                shape[a.cat_dim] = -1
                if a.kind == _NUMBER:
                    value = value.add_(per_row.view(shape))
                else:
                    value = value + per_row.view(shape)
            store[key] = value
            slice_dict[key] = torch.arange(b + 1) if a.kind == _NUMBER else slice_host
            inc_dict[key] = incs
        if self._add_batch:
            _, owner, _ = rows_of(self._batch_group)
            grp = self._groups[self._batch_group]
            store.batch = torch.arange(b, device=dev) if owner is None else owner
            store.ptr = (torch.arange(b + 1, device=dev) if grp.unit
                         else cumsum(grp.sizes_dev[idx_dev]))
        out._num_graphs = b
        out._slice_dict = slice_dict
        out._inc_dict = inc_dict
        return out


class DeviceLoader:
    """An iterable of PyG batches built on the device from a :class:`DeviceSplit`, one per
    index list of a batch sampler (a drop-in for ``torch_geometric.loader.DataLoader`` with
    ``batch_sampler``): no per-step collation, no per-step host-to-device copy.

    Each epoch, when the first batch is asked for, it draws one ``int64`` from ``generator``
    (the global RNG when ``None``), as PyTorch's ``DataLoader`` draws its worker base seed when
    an epoch starts, so a run consumes the RNG as with the ``DataLoader`` (the same shuffles and
    dropout masks at the same seed; PyTorch's persistent workers draw once per run instead);
    then it reads the epoch's index lists from ``batch_sampler`` (any iterable of index lists
    with ``len``: a ``BatchSampler``,
    :class:`~graph_transformers.data.sampler.SizeBucketBatchSampler`, the DDP
    :class:`~graph_transformers.data.sampler.DistributedBatchSampler` giving the rank its
    share, the static-shape packing sampler), copies their concatenation to the device once
    and yields :meth:`DeviceSplit.batch` of each.

    Args:
        dataset: the split (a dataset or list of graphs, stored as a :class:`DeviceSplit`), or a
            :class:`DeviceSplit`.
        batch_sampler: the index lists; ``None``: ``batch_size`` graphs at a time, shuffled
            with ``generator`` when ``shuffle``.
        batch_size: graphs per batch without ``batch_sampler``.
        shuffle: a new random order every epoch (without ``batch_sampler``).
        drop_last: drop the last, smaller batch (without ``batch_sampler``).
        generator: the RNG of the shuffle and of the per-epoch draw (``None``: the global one).
        device: where the split is stored, or a callable returning it, resolved on the first
            iteration (so that a DDP rank stores it on its own GPU once Lightning has set it).
        transform: applied to every batch after it is built (e.g. the static-shape padding
            :func:`graph_transformers.data.static_shapes.pad_batch` with its budget), as a
            ``collate_fn`` would after PyG's collation; ``None``: none.

    Attributes:
        dataset: the dataset given (as ``DataLoader.dataset``).
        batch_sampler: the index lists (Lightning calls ``set_epoch`` on its ``sampler``).
        split (DeviceSplit): the stored split.

    Raises:
        DataError: as :class:`DeviceSplit`; when iterated, for index lists it refuses.
        ValueError: for ``batch_size < 1``.
    """

    sampler = None  # as a DataLoader with a batch_sampler: nothing for Lightning to set there

    def __init__(self, dataset, batch_sampler: Iterable[Sequence[int]] | None = None, *,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 generator: torch.Generator | None = None,
                 device: torch.device | str | Callable[[], torch.device] = "cpu",
                 transform: Callable[[Batch], Batch] | None = None) -> None:
        self.split = dataset if isinstance(dataset, DeviceSplit) else DeviceSplit(dataset)
        self.dataset = dataset
        if batch_sampler is None:
            if batch_size < 1:
                raise ValueError(f"batch_size must be >= 1, got {batch_size}")
            order = (RandomSampler(range(len(self.split)), generator=generator) if shuffle
                     else SequentialSampler(range(len(self.split))))
            batch_sampler = BatchSampler(order, batch_size, drop_last)
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.transform = transform
        self._device = device

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[Batch]:
        # nothing runs before the first batch is asked for: Lightning calls ``iter`` once on a
        # loader that is not a DataLoader just to check that it is iterable
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        device = torch.device(self._device() if callable(self._device) else self._device)
        if device != self.split.device:
            log.info("data.on_device: %d graphs stored on %s (%.1f MB)", len(self.split), device,
                     self.split.nbytes / 1e6)
        split = self.split.to(device)
        batches = [np.asarray(list(b), dtype=np.int64) for b in self.batch_sampler]
        if not batches:
            return
        order = torch.from_numpy(np.concatenate(batches))
        if split.device.type == "cuda":
            order = order.pin_memory()
        order = order.to(split.device, non_blocking=True)
        start = 0
        for idx in batches:
            batch = split.batch(idx, order[start:start + idx.size])
            start += idx.size
            yield batch if self.transform is None else self.transform(batch)
