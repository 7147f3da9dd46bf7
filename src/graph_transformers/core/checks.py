"""Input validation for batches entering a model: clear errors instead of crashes deep inside.

Checks that read tensor *values* (NaN, id ranges) cost a device-to-host synchronization on an
accelerator, which stalls the GPU on every batch. They therefore run where they are free: on CPU
tensors (reading host memory), or on any device when debugging is switched on
(:func:`set_debug`, the environment variable ``GRAPH_TRANSFORMERS_DEBUG=1``, or PyG's
``torch_geometric.debug()``). Shape and dtype checks (no values read) always run. Data that
trains on a GPU is validated once, on the host, by the data pipeline
(:func:`validate_dataset`, which the training runner calls for every split).
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

import torch
import torch_geometric
from torch import Tensor
from torch_geometric.data import Data

#: environment variable that turns value checks on for every device
DEBUG_ENV = "GRAPH_TRANSFORMERS_DEBUG"
_debug: bool | None = None  # None: follow the environment variable and PyG's switch


def set_debug(enabled: bool | None) -> None:
    """Turns value checks on (``True``) or off (``False``) for every device; ``None`` restores
    the default (on for CPU tensors, on everywhere under ``$GRAPH_TRANSFORMERS_DEBUG=1`` or
    ``torch_geometric.debug()``)."""
    global _debug
    _debug = enabled


@contextlib.contextmanager
def debug(enabled: bool = True) -> Iterator[None]:
    """Context manager form of :func:`set_debug`."""
    global _debug
    old = _debug
    _debug = enabled
    try:
        yield
    finally:
        _debug = old


def is_debug_enabled() -> bool:
    """Whether value checks run on every device (see the module docstring)."""
    if _debug is not None:
        return _debug
    if os.environ.get(DEBUG_ENV, "").lower() in ("1", "true", "yes", "on"):
        return True
    return bool(torch_geometric.is_debug_enabled())


def checks_enabled(t: Tensor | None) -> bool:
    """Whether checks reading the values of ``t`` should run: always in debug mode; never when
    debugging is explicitly off (:func:`set_debug` ``(False)``) or while ``torch.compile``
    traces; otherwise only for CPU tensors, where reading a value needs no device sync."""
    if _debug is not None:
        return _debug and not torch.compiler.is_compiling()
    if torch.compiler.is_compiling():
        return False
    if is_debug_enabled():
        return True
    return t is not None and t.device.type == "cpu"


#: the largest magnitude accepted in float inputs: the layers square their inputs (LayerNorm
#: and BatchNorm variances, attention scores), which overflows float32 (≈3.4e38) beyond ≈1.8e19;
#: 1e18 leaves room for the sums over a feature dimension (issue 26: x · 1e30 gave NaN outputs)
MAX_INPUT_MAGNITUDE = 1e18


def _check_values(t: Tensor, what: str, plural: bool = True) -> None:
    """One host read: ``t`` is finite and within :data:`MAX_INPUT_MAGNITUDE`.

    Raises:
        ValueError: naming ``what`` (a plural noun, else ``plural=False``).
    """
    if t.numel() == 0:
        return
    peak = float(t.detach().abs().max())
    if peak != peak or peak == float("inf"):
        raise ValueError(f"{what} {'contain' if plural else 'contains'} NaN or inf")
    if peak > MAX_INPUT_MAGNITUDE:
        verb = "reach" if plural else "reaches"
        raise ValueError(f"{what} {verb} {peak:.3g} in magnitude: beyond "
                         f"{MAX_INPUT_MAGNITUDE:.0e} float32 overflows where the layers square "
                         "their inputs (normalization, attention scores); standardize them")


def check_batch(data: Data, need_edge_attr: bool = False,
                encodings: Sequence[str] = ()) -> None:
    """Validates a PyG ``Data``/``Batch`` before a forward pass.

    Always checks that ``x`` exists, ``edge_index`` is ``[2, num_edges]`` integer, ``edge_attr``
    (when needed) has one row per edge and the input has at least one node. When
    :func:`checks_enabled` (CPU tensors, or debug mode) it also checks that ``x``, ``edge_attr``,
    ``pos`` and the float node encodings named in ``encodings`` (the models pass the registry's,
    :func:`graph_transformers.encodings.registry.float_encodings`) are finite and at most
    :data:`MAX_INPUT_MAGNITUDE` in magnitude, that no graph of a batch is empty (an empty graph
    has no defined output: its readout would divide by zero and dense models would attend over
    nothing), and that the ids of
    ``edge_index`` lie in ``[0, num_nodes)``. These value checks read tensors back to the host,
    so on an accelerator they run once per dataset (:func:`validate_dataset`) instead.

    Args:
        data: the graph or batch (``x [num_nodes, ·]``, ``edge_index [2, num_edges]``,
            ``edge_attr [num_edges, ·]``, ``batch [num_nodes]``).
        need_edge_attr: the model reads ``edge_attr``: it must exist with one row per edge.
        encodings: attribute names of float node encodings ``[num_nodes, ·]`` to value-check
            (absent ones are skipped).

    Raises:
        ValueError: naming the offending field (and graph, for an empty one).
    """
    x = getattr(data, "x", None)
    if x is None:
        raise ValueError("the batch has no node features x")
    num_nodes = x.size(0)
    values = checks_enabled(x)
    if values and x.is_floating_point():
        _check_values(x, "node features x")
    if num_nodes == 0:
        raise ValueError("the input has no nodes (an empty graph has no defined output; drop "
                         "empty graphs from the dataset)")
    batch = getattr(data, "batch", None)
    num_graphs = getattr(data, "num_graphs", None)
    if values and batch is not None and num_graphs:
        counts = torch.bincount(batch, minlength=int(num_graphs))
        if bool((counts == 0).any()):
            empty = (counts == 0).nonzero().view(-1).tolist()
            raise ValueError(f"graph(s) {empty[:5]} of the batch have no nodes (an empty graph "
                             "has no defined output; drop empty graphs from the dataset)")
    ei = data.edge_index
    if ei is None or ei.dim() != 2 or ei.size(0) != 2:
        shape = None if ei is None else tuple(ei.shape)
        raise ValueError(f"edge_index must have shape [2, num_edges], got {shape}")
    if ei.is_floating_point():
        raise ValueError(f"edge_index must be an integer tensor, got {ei.dtype}")
    if values and ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= num_nodes):
        raise ValueError(f"edge_index has node ids in [{int(ei.min())}, {int(ei.max())}] but the "
                         f"batch has {num_nodes} nodes")
    if need_edge_attr:
        ea = getattr(data, "edge_attr", None)
        if ea is None:
            raise ValueError("the model uses edge features but the batch has no edge_attr")
        if ea.size(0) != ei.size(1):
            raise ValueError(f"edge_attr has {ea.size(0)} rows but edge_index has {ei.size(1)} "
                             "edges")
        if values and ea.is_floating_point():
            _check_values(ea, "edge features edge_attr")
    if values:
        for name in (*encodings, "pos"):
            pe = getattr(data, name, None)
            if isinstance(pe, torch.Tensor) and pe.is_floating_point():
                _check_values(pe, f"positional encoding {name}", plural=False)


def validate_dataset(dataset, name: str = "dataset", encodings: Sequence[str] = ()) -> None:
    """Validates every graph of a dataset once, on the host (the data-pipeline counterpart of
    the per-batch value checks, which are off for accelerator tensors): features and encodings
    finite and within :data:`MAX_INPUT_MAGNITUDE`, ``edge_index`` ids inside each graph. Reads the
    collated storage of an ``InMemoryDataset`` in one pass when it can (fast), else graph by graph.

    Args:
        dataset: a sequence of graphs (an ``InMemoryDataset`` is read from its collated
            storage).
        name: how errors name it.
        encodings: attribute names of float node encodings to value-check besides ``x`` and
            ``edge_attr`` (the runner passes the registry's float node encodings).

    Raises:
        ValueError: naming the dataset, the field and (graph by graph) the graph's index.
    """
    store = getattr(dataset, "_data", None)
    slices = getattr(dataset, "slices", None)
    if store is not None and slices is not None and getattr(dataset, "_indices", None) is None:
        graphs = [(None, store)]
    else:
        graphs = [(i, dataset[i]) for i in range(len(dataset))]
    for i, g in graphs:
        where = f"{name}" if i is None else f"{name} graph {i}"
        for field in ("x", "edge_attr", *encodings):
            t = getattr(g, field, None)
            if isinstance(t, Tensor) and t.is_floating_point():
                try:
                    _check_values(t, field, plural=False)
                except ValueError as err:
                    raise ValueError(f"{where}: {err}") from None
        ei = getattr(g, "edge_index", None)
        if i is not None and isinstance(ei, Tensor) and ei.numel():
            n = g.num_nodes
            if int(ei.min()) < 0 or int(ei.max()) >= n:
                raise ValueError(f"{where}: edge_index has ids outside [0, {n})")
        elif i is None and isinstance(ei, Tensor) and ei.numel() and "edge_index" in slices:
            # collated storage: edge ids are local to each graph
            counts = torch.diff(slices["edge_index"])
            sizes = torch.diff(slices["x"]) if "x" in slices else None
            if sizes is not None:
                n_per_edge = torch.repeat_interleave(sizes, counts)
                if bool((ei < 0).any()) or bool((ei >= n_per_edge).any()):
                    raise ValueError(f"{where}: edge_index has ids outside their graph")


def check_edge_index(edge_index: Tensor, num_nodes: int) -> None:
    """Checks one graph's ``edge_index`` before an encoding is computed from it.

    Args:
        edge_index: ``[2, num_edges]`` node ids.
        num_nodes: the graph's number of nodes.

    Raises:
        ValueError: ``edge_index`` is not ``[2, num_edges]``, or holds a node id outside
            ``[0, num_nodes)`` (the message gives the range found).
    """
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError("edge_index must have shape [2, num_edges], "
                         f"got {tuple(edge_index.shape)}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index has node ids in [{int(edge_index.min())}, "
                         f"{int(edge_index.max())}] but the graph has {num_nodes} nodes")
