"""The GRIT network (Ma et al., "Graph Inductive Biases in Transformers without Message Passing",
ICML 2023): RRWP-initialized node and pair representations, ``num_layers``
:class:`~graph_transformers.nn.GRITLayer` s over all node pairs of each graph, and a task head.

See ``docs/grit.md`` for the design and where it departs from the official code
(``LiamMa/GRIT``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch_geometric.data import Batch

from ..core.dense import (DenseBudgetError, GraphSizeLimit, count_per_graph, format_bytes,
                          host_num_nodes, pair_size_limit)
from ..encodings.rrwp import batch_rrwp
from ..nn.grit import GRITLayer, pair_bytes
from ..nn.reset import reset_children
from .encoders import FeatureEncoder
from .heads import (MLPReadout, batch_vector, check_level, level_head,
                    sparse_attention_maps)
from .registry import (NonNegativeInt, Norm, PositiveFloat, PositiveInt, Probability, Readout,
                       model_config, register_model)
from .utils import check_inputs, full_graph_edge_index


class GRITPairs(NamedTuple):
    """The pair layout of a batch (:func:`grit_pairs`).

    Attributes:
        index: ``[2, Σ_b n_b²]`` every ordered pair ``(j, i)`` of each graph, self-pairs
            included, as global node ids (``index[0] = j`` key, ``index[1] = i`` query), in the
            order of the cached ``rrwp_pair`` (row-major per graph, graph after graph).
        edge_rows: ``[num_edges]`` the row of ``index`` that holds each edge ``j → i`` of
            ``edge_index``.
        degree: ``[num_nodes]`` float, each node's out-degree in ``edge_index`` (multi-edges
            and self-loops counted: the ``D`` of RRWP's ``M = D⁻¹A``).
    """

    index: Tensor
    edge_rows: Tensor
    degree: Tensor


def grit_pairs(edge_index: Tensor, batch: Tensor, host_sizes: Tensor | None,
               dtype: torch.dtype = torch.float32, *, num_graphs: int | None = None,
               num_pairs: int | None = None) -> GRITPairs:
    """All node pairs of each graph of a batch, where its edges sit among them, and the node
    degrees: what :class:`GRIT` gives its layers. Vectorized, no device sync (the number of
    pairs comes from the host-side sizes).

    Args:
        edge_index: ``[2, num_edges]`` of the batch.
        batch: ``[num_nodes]`` sorted graph ids.
        host_sizes: ``[B]`` nodes per graph on the CPU
            (:func:`~graph_transformers.core.dense.host_num_nodes`); ``None`` with
            ``num_graphs`` and ``num_pairs``.
        dtype: of ``degree``.
        num_graphs: ``B``, with ``num_pairs = Σ_b n_b²`` instead of ``host_sizes`` (host ints:
            nothing is read, as ``torch.compile(fullgraph=True)`` needs).
        num_pairs: see ``num_graphs``.

    Returns:
        :class:`GRITPairs`.
    """
    if num_graphs is None or num_pairs is None:
        num_graphs, num_pairs = host_sizes.numel(), int((host_sizes * host_sizes).sum())
    index = full_graph_edge_index(batch, self_loops=True, num_graphs=num_graphs,
                                  num_pairs=num_pairs)
    counts = count_per_graph(batch, num_graphs)
    ptr = torch.cumsum(counts, 0) - counts                 # first node of each graph
    per_node = counts[batch]                               # pairs of each query node
    row_start = torch.cumsum(per_node, 0) - per_node       # first pair row of each query
    src, dst = edge_index[0], edge_index[1]
    edge_rows = row_start[dst] + src - ptr[batch[src]]
    degree = torch.zeros(batch.numel(), dtype=dtype, device=batch.device).index_add_(
        0, src, torch.ones(src.numel(), dtype=dtype, device=batch.device))
    return GRITPairs(index, edge_rows, degree)


class GraphGymHead(nn.Module):
    """GraphGym's ``MLP`` head as GRIT's node-task configs build it (``head: inductive_node``,
    ``layers_post_mp: L``): ``L - 1`` blocks of ``Linear(d, d)`` + ReLU each followed by an L2
    normalization of the row (GraphGym's ``has_l2norm`` default), then ``Linear(d, out)``.

    Shapes: ``[*, in_dim] → [*, out_dim]``.
    """

    def __init__(self, in_dim: int, out_dim: int, num_layers: int = 2) -> None:
        super().__init__()
        self.hidden = nn.ModuleList(nn.Linear(in_dim, in_dim) for _ in range(num_layers))
        self.out = nn.Linear(in_dim, out_dim)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, x: Tensor) -> Tensor:
        for lin in self.hidden:
            x = F.normalize(F.relu(lin(x)), p=2.0, dim=-1)
        return self.out(x)


@register_model("grit")
@model_config(defaults={"hidden_dim": 64, "num_layers": 10, "num_heads": 8},
              encoding_args={"walk_length": "rrwp.walk_length"})
class GRIT(nn.Module):
    """GRIT: node features embedded plus a linear map of the RRWP diagonal ``P_ii``, pair
    representations ``e_ij`` from a linear map of ``P_ij`` plus the edge embedding where an edge
    ``j → i`` exists (GRIT §3.1; the official ``rrwp_linear`` encoders: no biases, Xavier
    uniform, zero for pairs without walks or edges), ``num_layers``
    :class:`~graph_transformers.nn.GRITLayer` s attending over all node pairs of each graph
    (the official ``full_attn: True``) or over the pairs with an RRWP value or an edge
    (``full_attention=False``), and a head: readout then MLP (graph level), on each node, or on
    ``[h_i ∥ h_j]`` of each edge.

    Args:
        hidden_dim: ``D`` (node and pair channels).
        num_layers: layers.
        num_heads: attention heads.
        out_dim: outputs per graph, node or edge (by ``level``).
        level: ``"graph"``, ``"node"`` or ``"edge"``.
        num_node_types / num_node_features: categorical / continuous node features
            (:class:`~.encoders.FeatureEncoder`).
        num_edge_types / num_edge_features: the same for ``edge_attr``, with
            ``use_edge_features``.
        use_edge_features: embed ``edge_attr``; otherwise every edge adds one learned vector to
            its pair (the official ``DummyEdge`` encoder of PATTERN / CLUSTER).
        walk_length: ``K`` of the batch's cached RRWP (must equal ``encodings.rrwp.walk_length``).
        full_attention: attend over all pairs (``True``, every official config) or only over
            the pairs with a nonzero RRWP value or an edge (a boolean selection per batch: one
            device sync).
        dropout: dropout in every layer (official ``gt.dropout``).
        attn_dropout: dropout on the attention weights (official ``gt.attn_dropout``).
        clamp: attention scores clamped to ``±clamp`` before the softmax (``None``: no clamp).
        deg_scaler: the degree scaler ``θ1 ⊙ x + log(1 + d) θ2 ⊙ x`` (GRIT §3.3).
        edge_update: each layer passes its updated pair representations on.
        norm: the layers' normalization: ``"batch"`` (the paper's), ``"layer"`` or ``"none"``.
        readout: ``"sum"`` (GRIT's ZINC), ``"mean"`` or ``"max"``.
        mlp_layers: hidden layers of the head.
        head: ``"halving"`` (:class:`~.heads.MLPReadout`, widths ``D/2, D/4, …``: the official
            ``san_graph`` head of the graph tasks) or ``"graphgym"`` (:class:`GraphGymHead`,
            constant width and L2-normalized hidden rows: the official ``inductive_node`` head
            of PATTERN / CLUSTER).
        memory_budget_gb: refuse a batch whose pair tensors would need more (estimated with
            :func:`~graph_transformers.nn.grit.pair_bytes`; ``None``: unchecked).

    Forward takes a PyG ``Batch`` processed with :class:`~graph_transformers.encodings.AddRRWP`
    (``x``, ``edge_index``, ``rrwp [num_nodes, K]``, ``rrwp_pair [Σ n², K]``, ``edge_attr`` with
    ``use_edge_features``) and returns ``[num_graphs | num_nodes | num_edges, out_dim]``. A
    batch without ``rrwp_pair`` (``encodings.rrwp.cache_pairs: false``) gets its pairs computed
    on its device (:func:`~graph_transformers.encodings.rrwp.batch_rrwp`, the same values).

    Raises:
        ValueError: for an unknown level, head or readout; in ``forward`` for a batch without
            ``rrwp`` or with another ``walk_length``.
        DenseBudgetError: in ``forward``, for a batch beyond ``memory_budget_gb``.
    """

    def __init__(self, hidden_dim: PositiveInt, num_layers: PositiveInt, num_heads: PositiveInt,
                 out_dim: int, level: str = "graph",
                 num_node_types: int | Sequence[int] | None = None,
                 num_node_features: int | None = None,
                 num_edge_types: int | Sequence[int] | None = None,
                 num_edge_features: int | None = None, use_edge_features: bool = True,
                 walk_length: int = 21, full_attention: bool = True,
                 dropout: Probability = 0.0, attn_dropout: Probability = 0.2,
                 clamp: PositiveFloat | None = 5.0, deg_scaler: bool = True,
                 edge_update: bool = True, norm: Norm = "batch", readout: Readout = "sum",
                 mlp_layers: NonNegativeInt = 2, head: Literal["halving", "graphgym"] = "halving",
                 memory_budget_gb: PositiveFloat | None = 8.0) -> None:
        super().__init__()
        check_level(level)
        if head not in ("halving", "graphgym"):
            raise ValueError(f"head must be 'halving' or 'graphgym', got {head!r}")
        if readout not in ("sum", "mean", "max"):
            raise ValueError(f"readout must be 'sum', 'mean' or 'max', got {readout!r}")
        if walk_length < 1:
            raise ValueError(f"walk_length must be >= 1, got {walk_length}")
        self.level, self.readout = level, readout
        self.use_edge_features, self.full_attention = use_edge_features, full_attention
        self.hidden_dim, self.walk_length = hidden_dim, walk_length
        self.budget = None if memory_budget_gb is None else memory_budget_gb * 2 ** 30
        self.bytes_per_pair = {mode: pair_bytes(num_layers, hidden_dim, training=mode)
                               for mode in (True, False)}
        self.node_encoder = FeatureEncoder(hidden_dim, num_node_types, num_node_features,
                                           name="node")
        if use_edge_features:
            self.edge_encoder = FeatureEncoder(hidden_dim, num_edge_types, num_edge_features,
                                               name="edge")
        else:
            self.edge_embedding = nn.Parameter(torch.empty(hidden_dim))   # DummyEdge
        self.rrwp_node = nn.Linear(walk_length, hidden_dim, bias=False)
        self.rrwp_pair = nn.Linear(walk_length, hidden_dim, bias=False)
        self.layers = nn.ModuleList(
            GRITLayer(hidden_dim, num_heads, dropout=dropout, attn_dropout=attn_dropout,
                      clamp=clamp, deg_scaler=deg_scaler, edge_update=edge_update,
                      edge_output=i < num_layers - 1, norm=norm)
            for i in range(num_layers))
        in_dim = 2 * hidden_dim if level == "edge" else hidden_dim
        self.head = (MLPReadout(in_dim, out_dim, mlp_layers) if head == "halving"
                     else GraphGymHead(in_dim, out_dim, mlp_layers))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Each child resets itself once (layers: :meth:`GRITLayer.reset_parameters`); the
        RRWP maps are Xavier uniform and the edge vector standard normal, as the official
        ``rrwp_linear`` and ``DummyEdge`` encoders."""
        reset_children(self)
        nn.init.xavier_uniform_(self.rrwp_node.weight)
        nn.init.xavier_uniform_(self.rrwp_pair.weight)
        if not self.use_edge_features:
            nn.init.normal_(self.edge_embedding)

    def graph_size_limit(self) -> GraphSizeLimit | None:
        """The largest graph the memory budget admits in training and evaluation (alone in its
        batch), for the RRWP encoding to refuse larger graphs before computing them (``None``:
        no budget)."""
        return pair_size_limit(self.budget, max(self.bytes_per_pair.values()), 0,
                               "GRIT")

    def _check_budget(self, sizes: Tensor) -> None:
        """Refuses a batch of graphs of ``sizes [B]`` nodes (a CPU tensor) beyond the memory
        budget."""
        self._check_pairs(int((sizes * sizes).sum()), lambda: int(sizes.max()), sizes.numel())

    def _check_pairs(self, pairs: int, largest: Callable[[], int], num_graphs: int) -> None:
        """Refuses a batch of ``pairs`` node pairs in ``num_graphs`` graphs beyond the memory
        budget (``largest()``: its largest graph, read only for the error)."""
        if self.budget is None:
            return
        per_pair = self.bytes_per_pair[self.training]
        need = pairs * per_pair
        if need <= self.budget:
            return
        n = largest()
        if n * n * per_pair > self.budget:
            limit = int((self.budget / per_pair) ** 0.5)
            raise DenseBudgetError(
                f"a graph of {n:,} nodes: GRIT attention over all its node pairs needs "
                f"≈{format_bytes(n * n * per_pair)} ({n:,}² pairs × {per_pair:.0f} B), over "
                f"the memory budget of {format_bytes(self.budget)}; graphs above ≈{limit:,} "
                "nodes do not fit. Raise model.memory_budget_gb, or use a sparse model (GT, "
                "GPS with Performer attention) for such graphs")
        raise DenseBudgetError(
            f"the batch of {num_graphs} graphs has {pairs:,} node pairs: GRIT attention needs "
            f"≈{format_bytes(need)} ({per_pair:.0f} B per pair), over the memory budget of "
            f"{format_bytes(self.budget)}: lower data.batch_size or raise "
            "model.memory_budget_gb")

    def _inputs(self, data: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """``(h [n, D], pair index [2, P], e [P, D], degree [n], batch [n])`` of a batch."""
        check_inputs(data, need_edge_attr=self.use_edge_features)
        node, pair = getattr(data, "rrwp", None), getattr(data, "rrwp_pair", None)
        if node is None:
            raise ValueError("GRIT needs the RRWP encodings but the batch has no rrwp: add "
                             "encodings.rrwp to the config (the AddRRWP pre-transform)")
        K = self.walk_length
        if (getattr(data, "static_max_nodes", None) is not None
                and getattr(data, "batch", None) is not None and pair is not None):
            # a static-shape batch with cached pairs: the sizes are host ints (the graph count
            # and the pair tensor's rows), nothing is read (torch.compile(fullgraph=True))
            sizes, num_graphs, total = None, int(data.num_graphs), pair.size(0)
            largest = lambda: int(data.static_max_nodes)  # noqa: E731
        else:
            sizes = host_num_nodes(data)
            num_graphs, total = sizes.numel(), int((sizes * sizes).sum())
            largest = lambda: int(sizes.max())  # noqa: E731
        if node.shape != (data.x.size(0), K) or (pair is not None and pair.shape != (total, K)):
            got = "not cached" if pair is None else tuple(pair.shape)
            raise ValueError(f"rrwp must be [num_nodes, {K}] and rrwp_pair [Σ n² = {total}, {K}], "
                             f"got {tuple(node.shape)} and {got}: the dataset was processed "
                             "with another encodings.rrwp.walk_length (or without RRWP for "
                             "some graphs)")
        self._check_pairs(total, largest, num_graphs)
        dtype = self.rrwp_pair.weight.dtype
        h = self.node_encoder(data.x)
        batch = batch_vector(data, h)
        pairs = grit_pairs(data.edge_index, batch, sizes, dtype=h.dtype, num_graphs=num_graphs,
                           num_pairs=total)
        if pair is None:  # encodings.rrwp.cache_pairs: false, computed here (the same values)
            pair = batch_rrwp(data.edge_index, batch, sizes, K, pairs.index)[1]
        h = h + self.rrwp_node(node.to(dtype))
        e_edges = (self.edge_encoder(data.edge_attr) if self.use_edge_features
                   else self.edge_embedding.expand(data.edge_index.size(1), -1))
        e = self.rrwp_pair(pair.to(dtype))
        e = e.index_add(0, pairs.edge_rows, e_edges.to(e.dtype))
        index = pairs.index
        if not self.full_attention:  # the pairs with a walk of < K steps, and the edges
            keep = (pair != 0).any(-1).index_fill(0, pairs.edge_rows, True)
            rows = keep.nonzero().view(-1)  # a device sync (the number of kept pairs)
            index, e = index[:, rows], e[rows]
        return h, index, e, pairs.degree, batch

    def encode(self, data: Batch, return_attention_weights: bool = False) -> Any:
        """Node representations after the last layer, ``[num_nodes, D]``; with
        ``return_attention_weights`` also ``[(pair index [2, P], weights [P, H]) per layer]``."""
        h, index, e, degree, batch = self._inputs(data)
        # static-shape batches: BatchNorm statistics over the real nodes and the pairs of real
        # nodes only (a pair joins two nodes of one graph: real iff its query node is)
        node_mask = getattr(data, "real_node_mask", None)
        pair_mask = node_mask[index[1]] if node_mask is not None else None
        attentions = []
        for layer in self.layers:
            out = layer(h, index, e, batch, degree=degree,
                        return_attention_weights=return_attention_weights,
                        real_node_mask=node_mask, real_pair_mask=pair_mask)
            if return_attention_weights:
                out, attention = out
                attentions.append(attention)  # (index, weights)
            h, e = out
        return (h, attentions) if return_attention_weights else h

    def forward(self, data: Batch) -> Tensor:
        return level_head(self.head, self.encode(data), data, self.level, self.readout)

    @torch.no_grad()
    def attention_maps(self, data: Batch) -> tuple[list[Tensor], Tensor]:
        """Per-layer head-averaged attention as dense matrices (inference mode).

        Returns:
            ``(maps, mask)``: ``maps[l]`` is ``[batch, N, N]`` (row ``i`` = query ``i``'s
            weights over keys ``j``; padding rows and columns 0), ``mask`` is ``[batch, N]``
            bool (real nodes).
        """
        return sparse_attention_maps(self, data)


__all__ = ["GRIT", "GRITPairs", "GraphGymHead", "grit_pairs"]
