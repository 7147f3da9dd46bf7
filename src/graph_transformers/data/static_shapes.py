"""Static-shape batches (``data.static_shapes: true``, issue 56): every training batch holds
exactly ``G`` graphs, ``Nn`` nodes and ``Ne`` edges, so that a compiled training step sees one
shape (``torch.compile(fullgraph=True, dynamic=False)``, CUDA graphs).

Three parts, as the fixed-budget packing of GPS++ on IPUs (Masters et al. 2022, §4):

- :func:`choose_budget`: the budgets, from the split's graph sizes and ``data.batch_size``;
- :class:`PackingBatchSampler`: batches of dataset indices that fit the budgets (seeded,
  reshuffled per epoch, greedy: graphs are added in the epoch's order until the next one would
  not fit, which then opens the next batch);
- :func:`pad_batch` / :class:`StaticCollater`: a collated PyG ``Batch`` padded to exactly the
  budgets. Real graphs, nodes and edges come first; padding graphs (at least one, each of at
  least one node and at most ``N`` nodes) follow; padding edges are self-loops on padding nodes.
  Every other attribute is padded with zeros of its dtype (category 0 for embeddings, zero
  encodings, zero targets), its level (node / edge / graph / node pair) read off PyG's collation
  (``_slice_dict``, ``__cat_dim__``). The batch carries ``real_node_mask [Nn]``,
  ``real_edge_mask [Ne]``, ``real_graph_mask [G]`` (bool, True = real) and the host int
  ``static_max_nodes = N``, the padded size of every graph for dense models.

The models' BatchNorms take statistics over the real rows only
(:func:`graph_transformers.nn.norm.masked_batch_norm`) and the task's loss and metrics drop the
padding (:class:`graph_transformers.training.tasks.Task`), so that the loss and every gradient
equal those of the unpadded batch of the same graphs (``tests/models/test_padding_equivalence``).
See ``docs/speed.md``, "Static-shape batches".
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.utils.data import DataLoader
from torch_geometric.data import Batch, Data

from ..core.dense import host_num_nodes
from ..errors import DataError
from .sampler import DistributedBatchSampler, EpochSeededBatchSampler, graph_sizes

#: the boolean masks a static-shape batch carries (True = real)
MASKS = ("real_node_mask", "real_edge_mask", "real_graph_mask")


@dataclass(frozen=True)
class StaticBudget:
    """The fixed shape of every static batch.

    Attributes:
        num_graphs: ``G``, graphs per batch (real ones ≤ ``G - 1``: one padding graph at least).
        num_nodes: ``Nn``, nodes per batch.
        num_edges: ``Ne``, edges per batch (``edge_index`` columns).
        max_nodes: ``N``, the padded size of each graph for dense models (``static_max_nodes``);
            no graph, real or padding, has more nodes.

    Raises:
        ValueError: for a non-positive budget, or ``Nn`` outside ``[G, G · N]`` (padding graphs
            of 1 to ``N`` nodes could not fill it).
    """

    num_graphs: int
    num_nodes: int
    num_edges: int
    max_nodes: int

    def __post_init__(self) -> None:
        if min(self.num_graphs, self.num_nodes, self.max_nodes) < 1 or self.num_edges < 0 \
                or self.num_graphs < 2:
            raise ValueError(f"static budgets must be positive (G >= 2), got {self}")
        if not self.num_graphs <= self.num_nodes <= self.num_graphs * self.max_nodes:
            raise ValueError(f"the node budget {self.num_nodes} must lie in [G={self.num_graphs}"
                             f", G·N={self.num_graphs * self.max_nodes}]")


def graph_edge_counts(dataset) -> list[int]:
    """Number of edges (``edge_index`` columns) of every graph of a PyG dataset (read from the
    collated storage of an unindexed ``InMemoryDataset``, else graph by graph)."""
    slices = getattr(dataset, "slices", None)
    if slices is not None and getattr(dataset, "_indices", None) is None and \
            "edge_index" in slices:
        return torch.diff(slices["edge_index"]).tolist()
    return [int(dataset[i].edge_index.size(1)) for i in range(len(dataset))]


def choose_budget(num_nodes: Sequence[int], num_edges: Sequence[int],
                  batch_size: int) -> StaticBudget:
    """Budgets for batches of about ``batch_size`` graphs of a split with these graph sizes.

    ``N`` is the split's largest graph; ``Nn = ⌈batch_size · mean(n)⌉ + N`` and ``Ne =
    ⌈batch_size · mean(e)⌉ + max(e)`` (a batch of ``batch_size`` average graphs fits with room
    for one more of any size); ``G = ⌈1.25 · Nn / mean(n)⌉ + 1``, so that the graph count
    rarely closes a batch before the node budget does.

    Args:
        num_nodes: nodes per graph of the split.
        num_edges: edges per graph (same order).
        batch_size: the configured ``data.batch_size``.

    Returns:
        The :class:`StaticBudget`.

    Raises:
        DataError: for an empty split, mismatched lists, or a graph without nodes.
    """
    if not num_nodes or len(num_nodes) != len(num_edges):
        raise DataError(f"static shapes need the node and edge counts of a non-empty split, got "
                        f"{len(num_nodes)} and {len(num_edges)} graphs")
    if min(num_nodes) < 1:
        raise DataError(f"graph {list(num_nodes).index(min(num_nodes))} has no nodes: static "
                        "shapes need graphs of at least one node")
    mean_n = sum(num_nodes) / len(num_nodes)
    mean_e = sum(num_edges) / len(num_edges)
    n_max = max(num_nodes)
    nodes = math.ceil(batch_size * mean_n) + n_max
    edges = math.ceil(batch_size * mean_e) + max(num_edges)
    graphs = math.ceil(1.25 * nodes / mean_n) + 1
    return StaticBudget(graphs, nodes, edges, n_max)


def _fits(budget: StaticBudget, graphs: int, nodes: int, edges: int) -> bool:
    """Whether ``graphs`` real graphs of ``nodes`` nodes and ``edges`` edges can be padded to
    ``budget``: one padding graph at least, each of 1 to ``N`` nodes."""
    pad_graphs = budget.num_graphs - graphs
    pad_nodes = budget.num_nodes - nodes
    return (pad_graphs >= 1 and edges <= budget.num_edges
            and pad_graphs <= pad_nodes <= pad_graphs * budget.max_nodes)


def pack(num_nodes: Sequence[int], num_edges: Sequence[int], budget: StaticBudget,
         order: Sequence[int]) -> list[list[int]]:
    """Greedy packing: the graphs of ``order`` (dataset indices) in turn, each added to the open
    batch when the batch still fits ``budget`` with it (:class:`StaticBudget`), else opening the
    next batch. Every index lands in exactly one batch, in ``order``.

    Raises:
        DataError: for a graph that does not fit an empty batch (its index, size and the budget).
    """
    batches: list[list[int]] = []
    cur: list[int] = []
    n = e = 0
    for i in order:
        ni, ei = int(num_nodes[i]), int(num_edges[i])
        if cur and _fits(budget, len(cur) + 1, n + ni, e + ei) and ni <= budget.max_nodes:
            cur.append(i)
            n, e = n + ni, e + ei
            continue
        if not (ni <= budget.max_nodes and _fits(budget, 1, ni, ei)):
            raise DataError(f"graph {i} ({ni} nodes, {ei} edges) does not fit the static-shape "
                            f"budget (G={budget.num_graphs}, nodes {budget.num_nodes}, edges "
                            f"{budget.num_edges}, {budget.max_nodes} nodes per graph)")
        if cur:
            batches.append(cur)
        cur, n, e = [i], ni, ei
    if cur:
        batches.append(cur)
    return batches


class PackingBatchSampler(EpochSeededBatchSampler):
    """Batches of dataset indices that fit a :class:`StaticBudget` (:func:`pack`), in an order
    drawn per epoch from ``seed + epoch`` (the same on every rank of a DDP run, so it can be
    dealt out by :class:`~graph_transformers.data.sampler.DistributedBatchSampler`).

    Args:
        num_nodes: nodes per graph.
        num_edges: edges per graph.
        budget: the budgets.
        shuffle: a new order every epoch; ``False``: the dataset's order.
        seed: base seed; epoch ``t`` draws with ``seed + t``.

    Raises:
        DataError: (at construction) for a graph that fits no batch.
    """

    def __init__(self, num_nodes: Sequence[int], num_edges: Sequence[int],
                 budget: StaticBudget, shuffle: bool = True, seed: int = 0) -> None:
        self.num_nodes, self.num_edges = list(num_nodes), list(num_edges)
        self.budget, self.shuffle, self.seed = budget, shuffle, seed
        self.epoch = 0
        pack(self.num_nodes, self.num_edges, budget, range(len(self.num_nodes)))  # raises early

    def batches(self) -> list[list[int]]:
        """This epoch's batches (what the next iteration yields), without advancing the
        epoch."""
        n = len(self.num_nodes)
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed + self.epoch)
            order = torch.randperm(n, generator=g).tolist()
        else:
            order = list(range(n))
        return pack(self.num_nodes, self.num_edges, self.budget, order)

    def __len__(self) -> int:
        return len(self.batches())


def padding_report(num_nodes: Sequence[int], num_edges: Sequence[int], budget: StaticBudget,
                   batches: Sequence[Sequence[int]]) -> dict[str, float]:
    """The fraction of each padded quantity that is padding, over ``batches``.

    ``nodes = 1 − Σ n / (B·Nn)``, ``edges = 1 − Σ e / (B·Ne)``, ``graphs = 1 − (graphs) /
    (B·G)`` and ``pairs = 1 − Σ n² / (B·G·N²)`` (the ``[G, N, N]`` pair tensors of dense
    models), ``B`` = number of batches; also ``batches = B`` and ``graphs_per_batch``.

    Raises:
        ValueError: for no batches.
    """
    if not batches:
        raise ValueError("padding_report needs at least one batch")
    b = len(batches)
    idx = [i for batch in batches for i in batch]
    n = sum(int(num_nodes[i]) for i in idx)
    e = sum(int(num_edges[i]) for i in idx)
    pairs = sum(int(num_nodes[i]) ** 2 for i in idx)
    g, nn_, ne, nmax = budget.num_graphs, budget.num_nodes, budget.num_edges, budget.max_nodes
    return {"nodes": 1 - n / (b * nn_), "edges": 1 - e / (b * ne) if ne else 0.0,
            "graphs": 1 - len(idx) / (b * g), "pairs": 1 - pairs / (b * g * nmax * nmax),
            "batches": float(b), "graphs_per_batch": len(idx) / b}


# ------------------------------------------------------------------------------ padding
def _level(key: str, counts: Tensor, nodes: Tensor, edges: Tensor | None, stacked: bool) -> str:
    """``"node"``, ``"edge"``, ``"graph"``, ``"pair"`` or ``"other"`` (a per-graph list of its
    own length, e.g. ``edge_label_index``: padding graphs get none) from the per-graph counts
    of an attribute's collation slices."""
    if stacked:
        return "graph"
    edge_first = key.startswith("edge")
    checks = (("edge", edges), ("node", nodes)) if edge_first else (("node", nodes),
                                                                    ("edge", edges))
    for name, ref in checks:
        if ref is not None and torch.equal(counts, ref):
            return name
    if bool((counts == 1).all()):
        return "graph"
    if torch.equal(counts, nodes * nodes):
        return "pair"
    return "other"


def _pad_sizes(budget: StaticBudget, graphs: int, nodes: int, edges: int
               ) -> tuple[list[int], list[int]]:
    """Nodes and edges of each padding graph: the padding nodes spread evenly over
    ``G − graphs`` graphs, the padding edges (self-loops) likewise over the padding nodes."""
    if not _fits(budget, graphs, nodes, edges):
        raise DataError(f"a batch of {graphs} graphs, {nodes} nodes and {edges} edges does not "
                        f"fit the static-shape budget {budget}")
    p = budget.num_graphs - graphs
    m = budget.num_nodes - nodes
    k = budget.num_edges - edges
    node_sizes = [m // p + (1 if j < m % p else 0) for j in range(p)]
    edge_sizes = [k * s // m for s in node_sizes]  # proportional, rest on the first graphs
    rest = k - sum(edge_sizes)
    for j in range(rest):
        edge_sizes[j % p] += 1
    return node_sizes, edge_sizes


def _pad_graph(batch: Batch, levels: dict[str, str], n: int, e: int) -> Data:
    """One padding graph of ``n`` nodes and ``e`` self-loops shaped like ``batch``'s graphs."""
    out = Data(num_nodes=n)
    for key, level in levels.items():
        value = batch[key]
        if key == "edge_index":
            loops = torch.arange(e, device=value.device) % n
            out[key] = torch.stack([loops, loops]).to(value.dtype)
            continue
        cat = batch.__cat_dim__(key, value)
        if level == "graph" and cat is None:
            out[key] = value.new_zeros(value.shape[1:])
            continue
        size = {"node": n, "edge": e, "graph": 1, "pair": n * n, "other": 0}[level]
        shape = list(value.shape)
        shape[cat] = size
        out[key] = value.new_zeros(shape)
    return out


def pad_batch(batch: Batch, budget: StaticBudget) -> Batch:
    """Pads a collated PyG ``Batch`` to exactly ``budget`` (module docstring), in place.

    Args:
        batch: the real graphs, collated (``Batch.from_data_list``, a ``DataLoader``).
        budget: the shape to pad to.

    Returns:
        ``batch``, with ``G`` graphs, ``Nn`` nodes, ``Ne`` edges, the masks of :data:`MASKS`
        and ``static_max_nodes``; its collation tables (``_slice_dict``, ``_inc_dict``,
        ``ptr``, ``batch``) describe the padding graphs too.

    Raises:
        DataError: when the real graphs do not fit the budget, a graph exceeds ``N`` nodes, or
            the batch is already padded.
    """
    if getattr(batch, "real_node_mask", None) is not None:
        raise DataError("pad_batch: the batch is already padded (it has real_node_mask)")
    # own copies of the collation tables: ``Batch.clone`` shares them with the original, which
    # must keep describing its unpadded graphs
    batch._slice_dict = slices = dict(batch._slice_dict)
    batch._inc_dict = dict(batch._inc_dict)
    g = int(batch.num_graphs)
    nodes = host_num_nodes(batch)  # from the host's slice table: no device sync
    n_real, e_real = int(nodes.sum()), int(batch.edge_index.size(1))
    if g and int(nodes.max()) > budget.max_nodes:
        big = int(nodes.argmax())
        raise DataError(f"graph {big} of the batch has {int(nodes[big])} nodes, more than the "
                        f"static-shape budget of {budget.max_nodes} nodes per graph")
    node_sizes, edge_sizes = _pad_sizes(budget, g, n_real, e_real)
    edges = torch.diff(slices["edge_index"]) if "edge_index" in slices else None
    levels = {}
    for key, sl in slices.items():
        value = batch[key]
        if isinstance(value, Tensor):
            stacked = batch.__cat_dim__(key, value) is None
            levels[key] = _level(key, torch.diff(sl), nodes, edges, stacked)
    pad = Batch.from_data_list([_pad_graph(batch, levels, n, e)
                                for n, e in zip(node_sizes, edge_sizes)])
    p = len(node_sizes)
    # what the padding graphs' index attributes are shifted by: PyG's increment of the whole
    # real batch (its node count for ``*index`` attributes), read before anything changes
    offsets = {key: batch.__inc__(key, batch[key]) for key in levels}
    for key, sl in list(slices.items()):
        value = batch[key]
        if not isinstance(value, Tensor):  # a list per graph (names, SMILES): None for padding
            batch[key] = list(value) + [None] * p
            slices[key] = torch.cat([sl, torch.arange(1, p + 1) + sl[-1]])
            continue
        cat = batch.__cat_dim__(key, value)
        extra = pad[key]
        incs = batch._inc_dict.get(key)
        offset = offsets[key]
        if offset:
            extra = extra + offset
        batch[key] = torch.cat([value, extra.to(value.device)], dim=0 if cat is None else cat)
        slices[key] = torch.cat([sl, pad._slice_dict[key][1:] + sl[-1]])
        if incs is not None:
            pad_incs = pad._inc_dict[key]
            batch._inc_dict[key] = torch.cat([incs, pad_incs + offset])
    device = batch.batch.device
    batch.batch = torch.cat([batch.batch, pad.batch.to(device) + g])
    batch.ptr = torch.cat([batch.ptr, pad.ptr[1:].to(device) + n_real])
    if "num_nodes" in batch._store:
        batch.num_nodes = budget.num_nodes
    batch._num_graphs = budget.num_graphs
    arange = torch.arange
    batch.real_node_mask = arange(budget.num_nodes, device=device) < n_real
    batch.real_edge_mask = arange(budget.num_edges, device=device) < e_real
    batch.real_graph_mask = arange(budget.num_graphs, device=device) < g
    node_sl = slices["x"] if "x" in slices else torch.cat(
        [torch.zeros(1, dtype=torch.long), nodes.cumsum(0), pad.ptr[1:] + n_real])
    graph_sl = torch.arange(budget.num_graphs + 1)
    slices["real_node_mask"] = node_sl
    slices["real_edge_mask"] = slices.get("edge_index", torch.tensor([0, budget.num_edges]))
    slices["real_graph_mask"] = graph_sl
    for key in MASKS:
        batch._inc_dict[key] = torch.zeros(budget.num_graphs, dtype=torch.long)
    batch.static_max_nodes = budget.max_nodes
    return batch


class StaticCollater:
    """``DataLoader`` ``collate_fn``: PyG's collation of the graphs, then :func:`pad_batch`.

    Args:
        budget: the shape of every batch.
    """

    def __init__(self, budget: StaticBudget) -> None:
        self.budget = budget

    def __call__(self, data_list: list) -> Batch:
        return pad_batch(Batch.from_data_list(data_list), self.budget)


def static_loader(dataset, budget: StaticBudget | None = None, batch_size: int = 128,
                  shuffle: bool = True, seed: int = 0, **loader_kwargs):
    """A ``DataLoader`` of static-shape batches of ``dataset``: a :class:`PackingBatchSampler`
    (wrapped to deal batches to DDP ranks) and :class:`StaticCollater`.

    Args:
        dataset: the split.
        budget: the budgets (``None``: :func:`choose_budget` of the split at ``batch_size``).
        batch_size: graphs per batch on average, for :func:`choose_budget`.
        shuffle: a new order per epoch (training); ``False``: the dataset's order.
        seed: the sampler's base seed.
        loader_kwargs: more ``DataLoader`` options (``num_workers``, ``pin_memory``, ...).

    Returns:
        The loader; its ``budget`` attribute holds the budgets.

    Raises:
        DataError: as :func:`choose_budget` and :func:`pack`.
    """
    nodes, edges = graph_sizes(dataset), graph_edge_counts(dataset)
    budget = budget or choose_budget(nodes, edges, batch_size)
    sampler = DistributedBatchSampler(PackingBatchSampler(nodes, edges, budget,
                                                          shuffle=shuffle, seed=seed))
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=StaticCollater(budget),
                        **loader_kwargs)
    loader.budget = budget
    return loader


__all__ = ["MASKS", "PackingBatchSampler", "StaticBudget", "StaticCollater", "choose_budget",
           "graph_edge_counts", "pack", "pad_batch", "padding_report", "static_loader"]
