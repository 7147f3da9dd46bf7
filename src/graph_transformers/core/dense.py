r"""The dense view of a PyG batch, shared by every global-attention model (EGT, GRPE, Graphormer).

A PyG ``Batch`` stores graphs as one big sparse graph (``x [num_nodes, ·]``, ``edge_index [2,
num_edges]``, ``batch [num_nodes]``). Dense attention wants per-graph blocks instead: node tensors
``[B, N, ·]`` padded to the largest graph ``N``, a node mask ``[B, N]`` and pair tensors
``[B, N, N, ·]``. :class:`DenseBatch` holds the index maps between the two views (computed once per
batch, no Python loop over graphs or node pairs) and builds the pair tensors the papers use:
adjacency with self-loops, edge features scattered onto pairs, and hop distances.

Pair convention (dst-major): ``pairs[b, i, j]`` describes the edge ``j -> i`` (``edge_index[0] = j``
source, ``edge_index[1] = i`` target), so row ``i`` of a pair matrix is what node ``i`` receives,
the same orientation as an attention matrix whose rows are queries ``i`` and columns keys ``j``:

.. math::
    \mathrm{pairs}[b, i, j] = e_{j \to i}, \qquad
    \mathrm{pairs} = \texttt{to\_dense\_adj}(\ldots)^\top_{(1, 2)}.

PyG's ``to_dense_adj`` is source-major (``adj[b, src, dst]``): convert its output with
``to_dense_adj(edge_index, batch, edge_attr).transpose(1, 2)`` before passing it to a layer's
``forward_dense``. The layers' PyG-native ``forward`` (``x [num_nodes, d]``, ``edge_index``,
``edge_attr``, ``batch``) densifies through this class and cannot get the orientation wrong.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import torch
from torch import Tensor

from .checks import checks_enabled

#: ids of :meth:`DenseBatch.shortest_paths` for pairs that are not at a finite distance
UNREACHABLE = -1


class DenseBudgetError(ValueError):
    """A batch (or a single graph) needs more memory for dense attention than the configured
    budget; raised before anything is allocated, with the size that was needed."""


def format_bytes(n: float) -> str:
    """``1536 → '1.5 KiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


@dataclass(frozen=True)
class GraphSizeLimit:
    """The largest graph a model can take, known before its data are processed: an all-pairs
    encoding (:class:`~graph_transformers.encodings.rrwp.AddRRWP`,
    :class:`~graph_transformers.encodings.spd.AddShortestPaths`) refuses a larger graph before
    computing anything for it, instead of caching an encoding the model would refuse.

    Args:
        max_nodes: nodes of the largest graph that fits.
        why: what sets the limit, for the message (e.g. "GRIT's memory budget
            (model.memory_budget_gb: 8.0 GiB at 3,712 B per node pair)").
    """

    max_nodes: int
    why: str

    def check(self, num_nodes: int, encoding: str) -> None:
        """Raises :class:`DenseBudgetError` for a graph of more than :attr:`max_nodes` nodes,
        naming ``encoding`` (what would have been computed) and :attr:`why`."""
        if num_nodes > self.max_nodes:
            raise DenseBudgetError(
                f"a graph of {num_nodes:,} nodes is larger than the {self.max_nodes:,} nodes "
                f"that {self.why} allows; refused before computing its {encoding}. Raise "
                "model.memory_budget_gb, or use a sparse model (GT, GPS) for such graphs")


def pair_size_limit(budget_bytes: float | None, bytes_per_pair: float, extra_nodes: int,
                    model: str) -> GraphSizeLimit | None:
    """The largest graph whose ``(n + extra_nodes)²`` pairs at ``bytes_per_pair`` fit
    ``budget_bytes`` alone in a batch (``None`` without a budget): what the dense model
    ``model`` (its name, for the message) would refuse in :func:`check_dense_budget`, known
    before the data are processed."""
    if budget_bytes is None:
        return None
    largest = int(math.isqrt(int(budget_bytes // bytes_per_pair))) - extra_nodes
    return GraphSizeLimit(max(largest, 0), f"{model}'s memory budget (model.memory_budget_gb: "
                                           f"{format_bytes(budget_bytes)} at "
                                           f"{bytes_per_pair:,.0f} B per node pair)")


#: default memory budget of the all-pairs encodings (:class:`~graph_transformers.encodings.spd.
#: AddShortestPaths`, :class:`~graph_transformers.encodings.rrwp.AddRRWP`) for one graph
PAIR_BUDGET_BYTES = 4 * 1024 ** 3


def check_pair_budget(num_nodes: int, per_pair: int, budget_bytes: float | None, what: str,
                      advice: str, setting: str = "") -> None:
    """Refuses a graph whose all-pairs computation, ``num_nodes² × per_pair`` bytes, exceeds
    ``budget_bytes`` (``None``: no check), before anything is allocated.

    Raises:
        DenseBudgetError: "a graph of ``n`` nodes: ``what`` ≈<size> (``n``² pairs × ``per_pair`` B
            ``setting``), over the budget of <budget>; graphs above ≈<largest that fits> nodes do
            not fit. ``advice`` for such graphs".
    """
    n, need = num_nodes, num_nodes * num_nodes * per_pair
    if budget_bytes is None or need <= budget_bytes:
        return
    limit = int((budget_bytes / per_pair) ** 0.5)
    raise DenseBudgetError(
        f"a graph of {n:,} nodes: {what} ≈{format_bytes(need)} ({n:,}² pairs × {per_pair} B"
        f"{setting}), over the budget of {format_bytes(budget_bytes)}; graphs above ≈{limit:,} "
        f"nodes do not fit. {advice} for such graphs")


def check_dense_budget(num_nodes: Tensor | tuple[int, int], bytes_per_pair: float,
                       budget_bytes: float | None, extra_nodes: int = 0,
                       what: str = "dense attention") -> int:
    """Checks that the padded pair tensors of a batch fit a memory budget.

    The padded batch holds ``B · N²`` pairs with ``N = max(num_nodes) + extra_nodes`` (virtual
    nodes); each pair costs ``bytes_per_pair`` (a model's estimate of everything it keeps per pair,
    activations saved for backward included).

    Args:
        num_nodes: ``[B]`` real nodes per graph (a CPU tensor: its values are read), or ``(B,
            N)`` host ints for a static-shape batch whose graphs are all padded to ``N``
            (:meth:`DenseBatch.from_batch` with ``static_max_nodes``: nothing is read).
        bytes_per_pair: bytes per (graph, i, j) pair.
        budget_bytes: the budget; ``None`` disables the check.
        extra_nodes: nodes every graph gains inside the model (virtual nodes).
        what: how the error names the consumer.

    Returns:
        The estimated bytes.

    Raises:
        DenseBudgetError: when a single graph alone, or the whole batch, exceeds the budget. The
            message gives the graph's index and size, the bytes needed and the budget.
    """
    if isinstance(num_nodes, tuple):  # static shapes: B graphs padded to N, host ints
        num_graphs, n_max = num_nodes[0], num_nodes[1] + extra_nodes
    else:
        num_graphs = num_nodes.numel()
        n_max = int(num_nodes.max()) + extra_nodes if num_graphs else 0
    if num_graphs == 0:
        return 0
    need = int(num_graphs * n_max * n_max * bytes_per_pair)
    if budget_bytes is None or need <= budget_bytes:
        return need
    which = ("a graph of the static-shape batch padded to" if isinstance(num_nodes, tuple)
             else f"graph {int(num_nodes.argmax())} of the batch has")
    alone = int(n_max * n_max * bytes_per_pair)
    if alone > budget_bytes:
        limit = int(math.isqrt(int(budget_bytes / bytes_per_pair))) - extra_nodes
        raise DenseBudgetError(
            f"{which} {n_max - extra_nodes} nodes: {what} over all its "
            f"node pairs needs ≈{format_bytes(alone)} ({n_max}² pairs × {bytes_per_pair:.0f} B), "
            f"over the memory budget of {format_bytes(budget_bytes)}; graphs above ≈{limit} nodes "
            "do not fit. Use a sparse model (GT, GPS with linear attention) or raise the budget "
            "(model.memory_budget_gb)")
    raise DenseBudgetError(
        f"the batch of {num_graphs} graphs padded to {n_max} nodes needs "
        f"≈{format_bytes(need)} for {what} ({num_graphs}·{n_max}² pairs × "
        f"{bytes_per_pair:.0f} B), over the memory budget of {format_bytes(budget_bytes)}: lower "
        "data.batch_size, bucket batches by size (data.bucket_by_size) or raise "
        "model.memory_budget_gb")


def count_per_graph(batch: Tensor, num_graphs: int) -> Tensor:
    """Nodes per graph ``[num_graphs]`` counted on ``batch``'s device. Unlike ``torch.bincount``
    (which reads the largest id to size its output: a device sync on CUDA), the output size is
    given."""
    return torch.zeros(num_graphs, dtype=torch.long, device=batch.device).index_add_(
        0, batch, torch.ones_like(batch))


def host_num_nodes(data) -> Tensor:
    """Nodes per graph of a batch as a CPU ``[B]`` long tensor, read without a device sync.

    A PyG ``Batch`` keeps its collation slice table (``_slice_dict``, built on the host by the
    ``DataLoader``) on the CPU when the batch is moved to a GPU, so the graph sizes, which fix the
    padded shapes of dense attention, are known without waiting for the device. Without it (a
    single ``Data``, or a hand-built batch) they are counted from ``batch`` and copied to the host
    once.
    """
    slices = getattr(data, "_slice_dict", None)
    if slices is not None and "x" in slices and getattr(data, "x", None) is not None:
        ptr = slices["x"]
        if isinstance(ptr, Tensor) and ptr.device.type == "cpu" and \
                int(ptr[-1]) == int(data.num_nodes):
            return torch.diff(ptr)
    total = int(data.num_nodes)
    batch = getattr(data, "batch", None)
    if batch is None:
        return torch.tensor([total] if total else [], dtype=torch.long)
    num_graphs = int(getattr(data, "num_graphs", 0) or 0)
    if not num_graphs:
        num_graphs = int(batch.max()) + 1 if total else 0
    return torch.bincount(batch, minlength=num_graphs).cpu()


@dataclass
class DenseBatch:
    r"""Index maps between a PyG batch and its padded dense view (exported as
    ``graph_transformers.nn.DenseBatch``).

    Shapes: node tensors ``[num_nodes, *]`` ↔ ``[B, N, *]`` (:meth:`to_dense`, :meth:`to_sparse`);
    per-edge values ``[num_edges, *]`` ↔ pair tensors ``[B, N, N, *]`` (:meth:`scatter_edges`,
    :meth:`gather_edges`); per-graph pair values flattened row-major ``[Σ_b n_b², *]`` ↔
    ``[B, N, N, *]`` (:meth:`place_pairs`, :meth:`flatten_pairs`). ``N`` is the largest graph.

    Orientation (dst-major): ``pairs[b, i, j]`` is the value of the edge ``j → i`` of
    ``edge_index`` (``edge_index[0] = j``, ``edge_index[1] = i``): row ``i`` is query ``i`` of
    attention, column ``j`` its key. PyG's ``to_dense_adj`` is the transpose (``adj[b, src,
    dst]``): ``to_dense_adj(edge_index, batch, edge_attr).transpose(1, 2)`` equals
    ``dense.scatter_edges(edge_attr)`` (for graphs without duplicate edges).

    Example:
        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from torch_geometric.utils import to_dense_adj
        >>> from graph_transformers.nn import DenseBatch
        >>> g = Data(edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=3)  # 0 → 1 → 2
        >>> batch = Batch.from_data_list([g, g])
        >>> dense = DenseBatch.from_batch(batch)
        >>> pairs = dense.scatter_edges(torch.ones(4))
        >>> pairs[0, 1, 0].item(), pairs[0, 0, 1].item()  # row 1 receives from 0
        (1.0, 0.0)
        >>> bool((pairs == to_dense_adj(batch.edge_index, batch.batch).transpose(1, 2)).all())
        True

    Attributes:
        batch: ``[num_nodes]`` graph id of each node.
        pos: ``[num_nodes]`` position of each node inside its graph (``0 … n_b - 1``).
        num_nodes: ``[B]`` nodes per graph.
        mask: ``[B, N]`` bool, ``True`` at real nodes.
        edge_index: ``[2, num_edges]`` of the sparse batch (source, target).
        edge_batch: ``[num_edges]`` graph id of each edge.
        host_sizes: ``[B]`` nodes per graph on the CPU (shapes and budgets are computed from it
            without a device sync); ``None`` when built by hand.
    """

    batch: Tensor
    pos: Tensor
    num_nodes: Tensor
    mask: Tensor
    edge_index: Tensor
    edge_batch: Tensor
    host_sizes: Tensor | None = None
    #: :attr:`dense_index`, built on first use (one per view, shared by every ``to_dense``)
    _dense_index: Tensor | None = field(default=None, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_batch(cls, data, max_num_nodes: int | None = None) -> DenseBatch:
        """Builds the view of a PyG ``Batch`` (or a single ``Data``).

        No device-to-host synchronization: the padded size ``N`` comes from the batch's host-side
        slice table (:func:`host_num_nodes`); the consistency checks (sorted ``batch``, edges inside
        one graph) read values and run when
        :func:`~graph_transformers.core.checks.checks_enabled` (CPU tensors, or debug mode).

        A static-shape batch (issue 56: a host int ``data.static_max_nodes``, the padded size
        per graph, with ``data.batch`` and ``data.num_graphs``) is padded to that ``N`` and its
        sizes are counted on its device, so that nothing is read on the host and the shapes do
        not depend on the batch's content (``torch.compile(fullgraph=True, dynamic=False)``);
        :attr:`host_sizes` is then ``None``.

        Args:
            data: has ``edge_index`` and ``num_nodes``; ``batch`` (absent for one graph).
            max_num_nodes: pad to this ``N`` instead of the largest graph (or instead of
                ``data.static_max_nodes``).

        Raises:
            ValueError: when ``max_num_nodes`` (or ``static_max_nodes``) is smaller than a graph
                (checked from the host sizes, or, on a static-shape batch, when checks are
                enabled), or (checks enabled) ``edge_index`` joins nodes of two different graphs
                or points outside the batch.
        """
        edge_index = data.edge_index
        device = edge_index.device
        batch = getattr(data, "batch", None)
        static = getattr(data, "static_max_nodes", None)
        if static is not None and batch is not None:
            return cls._from_static_batch(data, batch, int(static if max_num_nodes is None
                                                           else max_num_nodes))
        total = int(data.num_nodes)
        if batch is None:
            batch = torch.zeros(total, dtype=torch.long, device=device)
        sizes = host_num_nodes(data)
        num_graphs = sizes.numel()
        # on an accelerator, counted there (no host-to-device copy to wait for)
        num_nodes = sizes if device.type == "cpu" else count_per_graph(batch, num_graphs)
        ptr = torch.zeros(num_graphs + 1, dtype=torch.long, device=device)
        ptr[1:] = torch.cumsum(num_nodes, 0)
        checks = checks_enabled(batch)
        if checks and total and bool((batch[1:] < batch[:-1]).any()):
            raise ValueError("batch vector must be sorted (nodes of a graph stored together), "
                             "as PyG's Batch stores them")
        pos = torch.arange(total, device=device) - ptr[batch]
        n_max = int(sizes.max()) if num_graphs else 0
        if max_num_nodes is not None:
            if max_num_nodes < n_max:
                raise ValueError(f"max_num_nodes={max_num_nodes} is smaller than the largest "
                                 f"graph of the batch ({n_max} nodes)")
            n_max = max_num_nodes
        if edge_index.numel():
            if checks and (int(edge_index.min()) < 0 or int(edge_index.max()) >= total):
                raise ValueError(f"edge_index points outside the batch's {total} nodes")
            edge_batch = batch[edge_index[0]]
            if checks and bool((edge_batch != batch[edge_index[1]]).any()):
                raise ValueError("edge_index joins nodes of two different graphs")
        else:
            edge_batch = edge_index.new_zeros(0)
        mask = torch.arange(n_max, device=device).unsqueeze(0) < num_nodes.unsqueeze(1)
        return cls(batch=batch, pos=pos, num_nodes=num_nodes, mask=mask, edge_index=edge_index,
                   edge_batch=edge_batch, host_sizes=sizes)

    @classmethod
    def _from_static_batch(cls, data, batch: Tensor, n_max: int) -> DenseBatch:
        """:meth:`from_batch` of a static-shape batch: ``B = data.num_graphs`` graphs padded to
        ``n_max`` nodes, sizes counted on the device, no host read (``host_sizes=None``); the
        value checks run when :func:`~graph_transformers.core.checks.checks_enabled`."""
        edge_index = data.edge_index
        device = batch.device
        num_graphs = int(data.num_graphs)
        num_nodes = count_per_graph(batch, num_graphs)
        ptr = torch.cumsum(num_nodes, 0) - num_nodes  # first node of each graph
        pos = torch.arange(batch.numel(), device=device) - ptr[batch]
        edge_batch = batch[edge_index[0]]
        if checks_enabled(batch):
            if batch.numel() and bool((batch[1:] < batch[:-1]).any()):
                raise ValueError("batch vector must be sorted (nodes of a graph stored together), "
                                 "as PyG's Batch stores them")
            if num_graphs and int(num_nodes.max()) > n_max:
                raise ValueError(f"a graph of the static-shape batch has {int(num_nodes.max())} "
                                 f"nodes, more than its padded size static_max_nodes={n_max}")
            if edge_index.numel() and (int(edge_index.min()) < 0
                                       or int(edge_index.max()) >= batch.numel()):
                raise ValueError(f"edge_index points outside the batch's {batch.numel()} nodes")
            if bool((edge_batch != batch[edge_index[1]]).any()):
                raise ValueError("edge_index joins nodes of two different graphs")
        mask = torch.arange(n_max, device=device).unsqueeze(0) < num_nodes.unsqueeze(1)
        return cls(batch=batch, pos=pos, num_nodes=num_nodes, mask=mask, edge_index=edge_index,
                   edge_batch=edge_batch, host_sizes=None)

    @classmethod
    def from_edge_index(cls, edge_index: Tensor, batch: Tensor | None = None,
                        num_nodes: int | None = None, num_graphs: int | None = None,
                        max_num_nodes: int | None = None) -> DenseBatch:
        """The view of PyG-native tensors (what a layer's ``forward`` receives), as
        :meth:`from_batch`.

        Args:
            edge_index: ``[2, num_edges]`` (source, target).
            batch: ``[num_nodes]`` sorted graph ids; ``None`` = one graph.
            num_nodes: total nodes (required when some node has no edge and ``batch`` is
                ``None``; read off ``batch`` otherwise).
            num_graphs: graphs in the batch (default: ``batch.max() + 1``, a device sync).
            max_num_nodes: pad to this ``N``.

        Raises:
            ValueError: as :meth:`from_batch`.
        """
        if num_nodes is None:
            if batch is not None:
                num_nodes = batch.numel()
            else:
                num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 0
        data = SimpleNamespace(edge_index=edge_index, num_nodes=num_nodes, batch=batch)
        if num_graphs is not None:
            data.num_graphs = num_graphs
        return cls.from_batch(data, max_num_nodes=max_num_nodes)

    # ------------------------------------------------------------------ sizes
    @property
    def num_graphs(self) -> int:
        return self.mask.size(0)

    @property
    def max_num_nodes(self) -> int:
        return self.mask.size(1)

    @property
    def budget_sizes(self) -> Tensor | tuple[int, int]:
        """What :func:`check_dense_budget` reads: :attr:`host_sizes`, or ``(B, N)`` for a
        static-shape batch (no host sizes; every graph padded to ``N``)."""
        if self.host_sizes is not None:
            return self.host_sizes
        return self.num_graphs, self.max_num_nodes

    @property
    def pair_mask(self) -> Tensor:
        """``[B, N, N]`` bool, ``True`` where both nodes are real."""
        return self.mask.unsqueeze(2) & self.mask.unsqueeze(1)

    @property
    def dense_index(self) -> Tensor:
        """``[B, N]`` long: the sparse row that slot ``[b, i]`` of the dense view reads,
        ``ptr[b] + i`` at real nodes and ``num_nodes`` (one past the last node: the fill row of
        :meth:`to_dense`) at padding. Built once per view, then reused."""
        if self._dense_index is None:
            first = torch.cumsum(self.num_nodes, 0) - self.num_nodes  # [B] first node per graph
            index = first.unsqueeze(1) + torch.arange(self.max_num_nodes, device=first.device)
            self._dense_index = torch.where(self.mask, index, self.batch.numel())
        return self._dense_index

    # ------------------------------------------------------------------ node tensors
    def to_dense(self, x: Tensor, fill: float = 0.0) -> Tensor:
        """``x [num_nodes, *]`` → ``[B, N, *]``, padding with ``fill``.

        A gather (slot ``[b, i]`` reads node ``ptr[b] + i``, padding slots a ``fill`` row), not
        a scatter into a new tensor: torch 2.13's CPU inductor miscompiled the scatter form
        (``out[batch, pos] = x``) inside GPS's compiled forward (``docs/speed.md``, "Compiled
        steps must compute what eager computes"). The values are the same either way; the index
        (:attr:`dense_index`) is built once per view.
        """
        if x.size(0) != self.batch.numel():
            raise ValueError(f"node tensor has {x.size(0)} rows, the batch {self.batch.numel()} "
                             "nodes")
        rows = torch.cat([x, x.new_full((1,) + tuple(x.shape[1:]), fill)])
        return rows[self.dense_index]

    def to_sparse(self, x: Tensor) -> Tensor:
        """``x [B, N, *]`` → ``[num_nodes, *]`` (real nodes only, in the batch's order)."""
        return x[self.batch, self.pos]

    # ------------------------------------------------------------------ pair tensors
    def edge_pairs(self) -> tuple[Tensor, Tensor, Tensor]:
        """``(b, i, j)`` pair coordinates of every edge ``j -> i``, each ``[num_edges]``."""
        src, dst = self.edge_index
        return self.edge_batch, self.pos[dst], self.pos[src]

    def adjacency(self, self_loops: bool = True) -> Tensor:
        """``[B, N, N]`` bool; ``A[b, i, j]`` is set for an edge ``j -> i`` (and ``i = j`` at real
        nodes with ``self_loops``, EGT §3.2's "adjacency with self-loops")."""
        B, N = self.num_graphs, self.max_num_nodes
        adj = torch.zeros(B, N, N, dtype=torch.bool, device=self.mask.device)
        b, i, j = self.edge_pairs()
        adj[b, i, j] = True
        if self_loops:
            idx = torch.arange(N, device=adj.device)
            adj[:, idx, idx] = self.mask
        return adj

    def scatter_edges(self, values: Tensor, fill: Tensor | float = 0.0) -> Tensor:
        """Per-edge values ``[num_edges, *]`` → pair tensor ``[B, N, N, *]``.

        Args:
            values: one row per edge of ``edge_index``.
            fill: value of pairs without an edge: a scalar or a tensor broadcastable to ``[*]``
                (e.g. EGT's learned masking vector for non-edges).
        """
        if values.size(0) != self.edge_index.size(1):
            raise ValueError(f"edge tensor has {values.size(0)} rows, the batch "
                             f"{self.edge_index.size(1)} edges")
        shape = (self.num_graphs, self.max_num_nodes, self.max_num_nodes) + tuple(values.shape[1:])
        if isinstance(fill, Tensor):
            out = fill.to(values.dtype).expand(shape).clone()
        else:
            out = values.new_full(shape, fill)
        b, i, j = self.edge_pairs()
        out[b, i, j] = values
        return out

    def gather_edges(self, pairs: Tensor) -> Tensor:
        """Pair tensor ``[B, N, N, *]`` → per-edge rows ``[num_edges, *]`` (inverse of
        :meth:`scatter_edges`)."""
        b, i, j = self.edge_pairs()
        return pairs[b, i, j]

    def place_pairs(self, values: Tensor, fill: float | int = 0) -> Tensor:
        """Per-graph pair tensors stored flattened → pair tensor ``[B, N, N, *]``.

        ``values`` concatenates, graph after graph, each graph's ``[n_b, n_b, *]`` pair tensor
        flattened row-major (``k = i · n_b + j``), as PyG batching concatenates a per-graph
        ``[n_b², *]`` attribute (e.g. the cached ``spd`` / ``pair_edge`` of
        :class:`~graph_transformers.encodings.AddShortestPaths`). Vectorized: one index
        computation over the ``Σ n_b²`` entries, no loop over graphs.

        Args:
            values: ``[Σ_b n_b², *]``.
            fill: value at padding pairs.

        Raises:
            ValueError: when ``values`` does not have ``Σ n_b²`` rows (a dataset processed
                without the pair encoding, or with other graphs).
        """
        graph, i, j = self._pair_index(values.size(0), values.device)
        B, N = self.num_graphs, self.max_num_nodes
        out = values.new_full((B, N, N) + tuple(values.shape[1:]), fill)
        out[graph, i, j] = values
        return out

    def flatten_pairs(self, pairs: Tensor) -> Tensor:
        """Pair tensor ``[B, N, N, *]`` → ``[Σ_b n_b², *]``, each graph's real pairs flattened
        row-major (``k = i · n_b + j``), graph after graph: the inverse of :meth:`place_pairs`,
        and the layout PyG batching concatenates (as the ``spd`` of
        :class:`~graph_transformers.encodings.AddShortestPaths`)."""
        if pairs.shape[:3] != (self.num_graphs, self.max_num_nodes, self.max_num_nodes):
            raise ValueError(f"pair tensor must be [B, N, N, *] = [{self.num_graphs}, "
                             f"{self.max_num_nodes}, {self.max_num_nodes}, *], got "
                             f"{tuple(pairs.shape)}")
        graph, i, j = self._pair_index(None, pairs.device)
        return pairs[graph, i, j]

    def _pair_index(self, rows: int | None, device) -> tuple[Tensor, Tensor, Tensor]:
        """``(graph, i, j)`` of the ``Σ n_b²`` real pairs in flattened order; checks ``rows``.
        Without host sizes (a static-shape batch) and with ``rows``, the count is ``rows`` (a
        shape: no host read), checked against the sizes when checks are enabled."""
        sizes = self.num_nodes * self.num_nodes
        if self.host_sizes is None and rows is not None and not checks_enabled(sizes):
            total = rows
        else:
            host = self.host_sizes if self.host_sizes is not None else self.num_nodes.cpu()
            total = int((host * host).sum())
        if rows is not None and rows != total:
            raise ValueError(f"pair tensor has {rows} rows, but the batch's graphs have "
                             f"Σ n² = {total} node pairs; was the dataset processed with this "
                             "pair encoding?")
        B = self.num_graphs
        sizes = sizes.to(device)
        graph = torch.repeat_interleave(torch.arange(B, device=device), sizes, output_size=total)
        start = torch.cumsum(sizes, 0) - sizes
        k = torch.arange(total, device=device) - start[graph]
        n = self.num_nodes.to(device)[graph]
        return graph, torch.div(k, n, rounding_mode="floor"), k % n

    def shortest_paths(self, max_hops: int | None = None) -> Tensor:
        """Hop distances between all pairs, by a vectorized breadth-first search on the dense
        adjacency (one batched matrix product per hop, no loop over pairs or graphs).

        ``D[b, i, j]`` is the number of edges on a shortest path from ``j`` to ``i`` (following
        edge directions, ``j -> … -> i``; the same both ways for undirected graphs), ``0`` on the
        diagonal. With ``max_hops``, longer paths are reported as ``max_hops + 1`` (the search
        runs to the end either way: one product per hop of the largest diameter). Unreachable
        pairs and padding are :data:`UNREACHABLE` (``-1``).

        Returns:
            ``[B, N, N]`` long.
        """
        adj = self.adjacency(self_loops=False).float()
        B, N = self.num_graphs, self.max_num_nodes
        dist = torch.full((B, N, N), UNREACHABLE, dtype=torch.long, device=adj.device)
        reach = torch.diag_embed(self.mask.float())  # reach[b, i, j]: i reachable from j
        dist[reach.bool()] = 0
        for hop in range(1, N):
            nxt = (torch.bmm(adj, reach) > 0) | reach.bool()
            new = nxt & (dist == UNREACHABLE)
            if not bool(new.any()):
                break
            dist[new] = hop
            reach = nxt.float()
        if max_hops is not None:
            dist = torch.where(dist > max_hops, torch.full_like(dist, max_hops + 1), dist)
        return dist

    def distances_within(self, k: int) -> Tensor:
        """Hop distances up to ``k``: ``D[b, i, j]`` as :meth:`shortest_paths` where it is at most
        ``k``, :data:`UNREACHABLE` (``-1``) for longer paths, unreachable pairs and padding.

        Exactly ``k`` batched matrix products and no data-dependent stopping, so no device sync
        (:meth:`shortest_paths` stops at the largest diameter, which it must read from the device).

        Returns:
            ``[B, N, N]`` long.
        """
        adj = self.adjacency(self_loops=False)
        B, N = self.num_graphs, self.max_num_nodes
        reach = torch.diag_embed(self.mask)  # reach[b, i, j]: i reachable from j
        dist = torch.full((B, N, N), UNREACHABLE, dtype=torch.long, device=adj.device)
        dist = dist.masked_fill(reach, 0)
        adj_f = adj.to(torch.float32)
        for hop in range(1, min(k, max(N - 1, 0)) + 1):
            nxt = (torch.bmm(adj_f, reach.to(torch.float32)) > 0) | reach
            dist = dist.masked_fill(nxt & ~reach, hop)
            reach = nxt
        return dist

    def clipped_distances(self, k: int) -> Tensor:
        """EGT's ``D^(k)`` (§3.3): hop distances clipped to ``0 … k`` (unreachable pairs → ``k``);
        ``[B, N, N]`` long, padding ``0``."""
        d = self.distances_within(k)
        d = torch.where(d == UNREACHABLE, torch.full_like(d, k), d)
        return d.masked_fill(~self.pair_mask, 0)
