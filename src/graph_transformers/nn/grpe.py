"""GRPE: node-aware attention with topology and edge encodings, and graph-encoded values.

Park et al., "GRPE: Relative Positional Encoding for Graph Transformer" (2022), eqs. 6-9:

.. math::
    a_{ij} = \\frac{q_i \\cdot k_j + q_i \\cdot P^q_{ψ(i,j)} + k_j \\cdot P^k_{ψ(i,j)}
             + q_i \\cdot E^q_{e_{ij}} + k_j \\cdot E^k_{e_{ij}}}{\\sqrt{d_k}},\\qquad
    z_i = \\sum_j \\hat a_{ij} \\, (v_j + P^v_{ψ(i,j)} + E^v_{e_{ij}}),

per head (``d_k = hidden_dim / num_heads``; the tables are split into heads like ``q``, ``k``,
``v``, as in the official code). The paper's "complexity trick" is how the layer computes them:
the queries and keys are multiplied by the small tables once (both sides in one batched product,
``[2, H, T, B·N]``) and the products are gathered per pair; for the values, the attention mass of
each row is scattered into one bin per relation type, ``[H, T, B·N]``, and the bins are
multiplied by the value table. No ``[B, N, N, hidden_dim]`` tensor is built. The two relations
are laid side by side in one table of ``T_ψ + T_e`` rows (two gathers per side), or fused into one
relation of ``T_ψ · T_e`` types (``id = ψ · T_e + e``, rows ``P_ψ + E_e``; one gather per side)
where that is cheaper (:func:`~graph_transformers.nn.grpe_gather.fuse_relations`). The gather /
scatter indices depend only on the batch and the tables only on the encodings, so a model builds
them once per batch / forward (:meth:`GRPEAttention.prepare_relations`,
:meth:`GRPEAttention.prepare_tables`) and passes them to every layer. The pieces of this gather
path (the prepared indices and tables, the autograd functions of the score terms) are in
:mod:`graph_transformers.nn.grpe_gather`; the pre-LayerNorm block and the byte-mask dropout that
:class:`GRPELayer` shares with Graphormer are in :mod:`graph_transformers.nn.prenorm`.

``attention_impl="materialized"`` computes the same equations by gathering the tables into
``[B, N, N, hidden_dim]`` pair tensors first (the naive form, kept for benchmarking).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..core.checks import checks_enabled
from ..core.dense import UNREACHABLE, DenseBatch
from .attention import acc_dtype, head_dim
from .convention import with_attention
from .grpe_gather import (
    GatherTerms,
    GRPERelations,
    GRPETables,
    QKScores,
    fuse_relations,
    key_mask_bias,
)
from .prenorm import PreNormBlock, attention_dropout_mask
from .pyg_inputs import LayerOutput, densify, pair_attention, pairs_input
from .reset import reset_children

#: pair-edge ids (shared with GRPE and Graphormer models); edge types start at ``EDGE_OFFSET``
EDGE_NONE, EDGE_SELF, EDGE_VIRTUAL, EDGE_OFFSET = 0, 1, 2, 3


def pyg_relations(dense: DenseBatch, edge_index: Tensor, edge_attr: Tensor | None,
                  topology: Tensor | None, edge_ids: Tensor | None, enc: GRPEEncodings
                  ) -> tuple[Tensor, Tensor]:
    """Dense ``(topology [B, N, N], edge [B, N, N])`` ids for the PyG-native ``forward`` of
    :class:`GRPEAttention` / :class:`GRPELayer` (see :class:`GRPEAttention` for what is built)."""
    if topology is not None:
        if topology.dim() != 1:
            raise ValueError(f"topology ids must be [Σ n²] (flattened per graph, as "
                             f"AddShortestPaths' spd), got {tuple(topology.shape)}")
        topo = pairs_input(dense, topology.long(), "topology", fill=0)
    else:
        L = enc.num_topology - 3
        if L < 0:
            raise ValueError(f"building topology ids needs encodings with at least 3 topology "
                             f"ids (0 … L, far, unreachable), got {enc.num_topology}")
        topo = dense.shortest_paths(max_hops=L)  # L + 1 for longer paths, -1 unreachable
        topo = torch.where(topo == UNREACHABLE, torch.full_like(topo, L + 2), topo)
        topo = topo.masked_fill(~dense.pair_mask, 0)
    if edge_ids is not None:
        if edge_attr is not None:
            raise ValueError("give edge types as edge_attr (edges only) or edge_ids (all pairs), "
                             "not both")
        if edge_ids.dim() != 1:
            raise ValueError(f"edge_ids must be [Σ n²] (flattened per graph), got "
                             f"{tuple(edge_ids.shape)}")
        edge = pairs_input(dense, edge_ids.long(), "edge_ids", fill=EDGE_NONE)
    else:
        num_edges = edge_index.size(1)
        if edge_attr is None:
            types = edge_index.new_zeros(num_edges)
        else:
            if edge_attr.dim() == 2 and edge_attr.size(1) == 1:
                edge_attr = edge_attr.view(-1)
            if edge_attr.shape != (num_edges,) or edge_attr.is_floating_point():
                raise ValueError(f"edge_attr must be integer edge types [num_edges={num_edges}], "
                                 f"got {tuple(edge_attr.shape)} {edge_attr.dtype}")
            types = edge_attr.long()
        edge = dense.scatter_edges(types + EDGE_OFFSET, fill=EDGE_NONE)
        idx = torch.arange(dense.max_num_nodes, device=edge.device)
        diag = edge[:, idx, idx]
        edge[:, idx, idx] = torch.where(dense.mask, torch.full_like(diag, EDGE_SELF), diag)
    for name, ids, size in (("topology", topo, enc.num_topology), ("edge", edge, enc.num_edge)):
        if ids.numel() and checks_enabled(ids) and (int(ids.min()) < 0 or int(ids.max()) >= size):
            raise ValueError(f"{name} ids span [{int(ids.min())}, {int(ids.max())}], outside the "
                             f"encodings' {size} {name} ids")
    return topo, edge


class GRPEEncodings(nn.Module):
    """The topology encodings ``P^query, P^key, P^value ∈ R^{T_ψ × d}`` and edge encodings
    ``E^query, E^key, E^value ∈ R^{T_e × d}`` of GRPE (§"Relative positional encoding for graph"),
    shared by all layers (or one instance per layer, Table 10 "not shared").

    Initialized like ``nn.Embedding`` (standard normal), as the official code.

    Args:
        num_topology: ``T_ψ``, topology ids (distances, far, unreachable, virtual node).
        num_edge: ``T_e``, edge ids (edge types, no edge, self, virtual node).
        hidden_dim: ``d``.
    """

    def __init__(self, num_topology: int, num_edge: int, hidden_dim: int) -> None:
        super().__init__()
        if num_topology < 1 or num_edge < 1:
            raise ValueError(f"GRPE needs at least one topology and one edge id, got "
                             f"{num_topology} and {num_edge}")
        self.num_topology = num_topology
        self.num_edge = num_edge
        self.hidden_dim = hidden_dim
        self.topology = nn.Parameter(torch.empty(3, num_topology, hidden_dim))  # q, k, v
        self.edge = nn.Parameter(torch.empty(3, num_edge, hidden_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.topology)
        nn.init.normal_(self.edge)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(num_topology={self.num_topology}, "
                f"num_edge={self.num_edge}, hidden_dim={self.hidden_dim})")


def _pyg_forward(module: nn.Module, hidden_dim: int, x: Tensor, edge_index: Tensor,
                 edge_attr: Tensor | None, batch: Tensor | None,
                 encodings: GRPEEncodings | None, topology: Tensor | None,
                 edge_ids: Tensor | None, return_attention_weights: bool):
    """The PyG-native call of :class:`GRPEAttention` and :class:`GRPELayer`: densify, build (or
    take) the relation ids, run ``module.forward_dense``, and return the node rows (with
    ``return_attention_weights``, ``(x, (pair_index, weights))``)."""
    dense = densify(module, x, edge_index, batch, hidden_dim)
    if encodings is None:
        raise ValueError(f"{type(module).__name__}.forward needs encodings=GRPEEncodings(...) "
                         "(the P and E tables, usually shared by all layers)")
    topo, edge = pyg_relations(dense, edge_index, edge_attr, topology, edge_ids, encodings)
    out = module.forward_dense(dense.to_dense(x), topo, edge, encodings, dense.mask,
                               return_attention_weights)
    x = dense.to_sparse(out.x)
    if not return_attention_weights:
        return x
    return with_attention(x, *pair_attention(dense, out.attention), True)


class GRPEAttention(nn.Module):
    """Multi-head GRPE self-attention over a padded dense batch (eqs. 6-9).

    Args:
        hidden_dim: ``d``.
        num_heads: ``H``; ``d`` must be divisible by ``H``.
        attn_dropout: dropout on the attention weights ``â``.
        topology_attention: use ``a^topology`` (eq. 6) — Table 9's first switch.
        edge_attention: use ``a^edge`` (eq. 7) — Table 9's second switch.
        graph_encoded_value: add ``P^v + E^v`` to the values (eq. 9) — Table 9's third switch.
        attention_impl: ``"gather"`` (the paper's complexity trick) or ``"materialized"`` (naive
            ``[B, N, N, d]`` pair tensors, for benchmarking).

    Two entry points (see :mod:`graph_transformers.nn.pyg_inputs`); the attention weights are
    taken after the softmax, before dropout:

    * ``forward(x, edge_index, edge_attr=None, batch=None, *, encodings, topology=None,
      edge_ids=None, return_attention_weights=False)``: PyG-native, ``x [num_nodes, d]`` →
      ``x [num_nodes, d]`` (with ``return_attention_weights=True``: ``(x, (pair_index [2, Σ_b
      n_b²], weights [Σ_b n_b², H]))`` over every pair ``j → i`` of each graph).
      ``encodings``: the :class:`GRPEEncodings` (``d`` = ``hidden_dim``).
      ``topology``: ``[Σ_b n_b²]`` ids ``ψ(i, j)``, each graph's pairs flattened row-major
      (``k = i · n_b + j``, pair ``j → i``): pass ``batch.spd`` of
      :class:`~graph_transformers.encodings.AddShortestPaths`; ``None``: built from
      ``edge_index`` in the same layout (hops along edge directions ``j → … → i``, ``0 … L``,
      far ``L + 1``, unreachable ``L + 2``, with ``L = encodings.num_topology - 3``; a BFS with
      one device sync per hop). ``edge_ids``: ``[Σ_b n_b²]`` ids ``e_ij`` in ``[0, T_e)`` in the
      same layout; ``None``: built from ``edge_index`` and ``edge_attr`` (integer edge types
      ``[num_edges]``, GRPE's categorical edge features, as its edge encodings are tables indexed
      by type, eq. 7; ``None`` = one type): :data:`EDGE_OFFSET` ``+ type`` on the pair of each
      edge ``j → i``, :data:`EDGE_SELF` on the diagonal, :data:`EDGE_NONE` elsewhere (``T_e``
      must exceed ``EDGE_OFFSET + max type``). No virtual node (a model feature).
    * ``forward_dense(x, topology, edge, encodings, mask=None, return_attention_weights=False, *,
      relations=None, tables=None)``: ``x [B, N, d]``; ``topology``, ``edge``: ``[B, N, N]``
      long ids in ``[0, T_ψ)`` / ``[0, T_e)``, dst-major (``[b, i, j]``: the pair ``j → i``, row
      ``i`` the query; from PyG's ``to_dense_adj``: ``.transpose(1, 2)``); ``mask``: ``[B, N]``
      bool, ``True`` at real nodes (keys at padding get no attention), ``None`` = all real;
      ``relations`` / ``tables``: :class:`GRPERelations` / :class:`GRPETables` from
      :meth:`prepare_relations` / :meth:`prepare_tables`, shared by the layers of a model (built
      by the layer when ``None``). Returns a :class:`~graph_transformers.nn.LayerOutput` ``(x
      [B, N, d], attention [B, H, N, N] or None)``; rows at padding are finite but meaningless.

    Raises:
        ValueError: on mismatched shapes; in ``forward`` for dense tensors (naming
            ``forward_dense``), ids outside the encodings (checked on CPU / in debug mode); in
            ``forward_dense`` for ``relations`` / ``tables`` prepared for another batch shape,
            layer configuration or encodings.
    """

    def __init__(self, hidden_dim: int, num_heads: int, *, attn_dropout: float = 0.0,
                 topology_attention: bool = True, edge_attention: bool = True,
                 graph_encoded_value: bool = True, attention_impl: str = "gather") -> None:
        super().__init__()
        self.head_dim = head_dim(hidden_dim, num_heads)
        if attention_impl not in ("gather", "materialized"):
            raise ValueError(f"attention_impl must be 'gather' or 'materialized', got "
                             f"{attention_impl!r}")
        self.hidden_dim, self.num_heads = hidden_dim, num_heads
        self.topology_attention = topology_attention
        self.edge_attention = edge_attention
        self.graph_encoded_value = graph_encoded_value
        self.attention_impl = attention_impl
        if not 0.0 <= attn_dropout < 1.0:
            raise ValueError(f"attn_dropout must be in [0, 1), got {attn_dropout}")
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)  # W_q, W_k, W_v stacked
        self.out = nn.Linear(hidden_dim, hidden_dim)
        self.attn_dropout = attn_dropout

    def reset_parameters(self) -> None:
        reset_children(self)

    # ------------------------------------------------------------------ relations
    def _fused(self, enc: GRPEEncodings, num_nodes: int) -> bool:
        return (self.topology_attention and self.edge_attention
                and fuse_relations(enc.num_topology, enc.num_edge, num_nodes))

    def _plan(self, enc: GRPEEncodings, fused: bool) -> list[tuple[str, int, bool, bool]]:
        """The relations this layer uses with ``enc``: ``(kind, T, scores, values)`` each, kind
        ``"fused"`` (``ψ · T_e + e``, ``T_ψ · T_e`` types), ``"topology"`` or ``"edge"``;
        ``scores`` / ``values``: whether it has query-key tables / a value table."""
        t_t, t_e = enc.num_topology, enc.num_edge
        value = self.graph_encoded_value
        if fused:
            return [("fused", t_t * t_e, True, value)]
        plan = []
        if self.topology_attention or value:
            plan.append(("topology", t_t, self.topology_attention, value))
        if self.edge_attention or value:
            plan.append(("edge", t_e, self.edge_attention, value))
        return plan

    def _relation_key(self, enc: GRPEEncodings, fused: bool) -> tuple:
        return (self.topology_attention, self.edge_attention, self.graph_encoded_value,
                enc.num_topology, enc.num_edge, fused, self.num_heads)

    def _table_key(self, enc: GRPEEncodings, fused: bool) -> tuple:
        return self._relation_key(enc, fused) + (self.head_dim,)

    def prepare_relations(self, topology: Tensor, edge: Tensor, encodings: GRPEEncodings,
                          mask: Tensor | None = None) -> GRPERelations:
        """The gather / scatter indices of a batch's relation ids, for ``forward_dense(...,
        relations=...)`` of this layer and of every layer with the same switches (a model builds
        them once per batch, not once per layer).

        Args:
            topology: ``[B, N, N]`` long topology ids, as :meth:`forward_dense` takes them.
            edge: ``[B, N, N]`` long edge ids, likewise.
            encodings: the :class:`GRPEEncodings` (only their vocabularies ``T_ψ``, ``T_e`` are
                read).
            mask: ``[B, N]`` bool key mask (``True`` at real nodes) that ``forward_dense`` will
                be given, or ``None``; its additive ``-inf`` bias is then built here once.

        Returns:
            :class:`GRPERelations`.
        """
        if topology.dim() != 3 or topology.size(1) != topology.size(2):
            raise ValueError(f"topology ids must be [B, N, N], got {tuple(topology.shape)}")
        if edge.shape != topology.shape:
            raise ValueError(f"edge ids must be [B, N, N] = {tuple(topology.shape)}, got "
                             f"{tuple(edge.shape)}")
        B, N = topology.size(0), topology.size(1)
        ids = {"topology": topology.long(), "edge": edge.long()}
        fused = self._fused(encodings, N)
        plan = self._plan(encodings, fused)
        if fused:
            ids["fused"] = ids["topology"] * encodings.num_edge + ids["edge"]

        # position of node (b, n) in a [T, B·N] table product: b · N + n
        node = torch.arange(B * N, device=topology.device).view(B, N)

        def flat(parts: list[tuple[str, int]], node_view: Tensor) -> tuple[int, list[Tensor]]:
            out, offset = [], 0
            for kind, t in parts:  # [B, N, N] → [B·N²]: (offset + id) · B·N + b·N + (i or j)
                out.append(((ids[kind] + offset) * (B * N) + node_view).reshape(B * N * N))
                offset += t
            return offset, out

        score_parts = [(kind, t) for kind, t, sc, _ in plan if sc]
        value_parts = [(kind, t) for kind, t, _, val in plan if val]
        score_size, score_index = 0, None
        if score_parts:
            score_size, q_side = flat(score_parts, node.view(B, N, 1))
            _, k_side = flat(score_parts, node.view(B, 1, N))
            score_index = torch.stack([torch.cat(q_side), torch.cat(k_side)]).unsqueeze(1)
        H, L = self.num_heads, B * N * N
        # per side and relation, expanded over the heads once per batch (views)
        score_terms = () if score_index is None else tuple(
            (side, score_index[side, :, r * L:(r + 1) * L].expand(H, L))
            for side in range(2) for r in range(len(score_parts)))
        value_size, value_index = 0, []
        if value_parts:
            value_size, value_index = flat(value_parts, node.view(B, N, 1))
        if mask is not None and mask.shape != (B, N):
            raise ValueError(f"mask must be [B, N] = {(B, N)}, got {tuple(mask.shape)}")
        mask_bias = None if mask is None else key_mask_bias(mask, torch.float32)
        return GRPERelations(self._relation_key(encodings, fused), (B, N), fused, score_size,
                             score_index, value_size,
                             tuple(i.view(1, -1).expand(H, L) for i in value_index), mask,
                             mask_bias, score_terms)

    def prepare_tables(self, encodings: GRPEEncodings, relations: GRPERelations) -> GRPETables:
        """The encodings' tables in the gather path's layout (fused rows, heads, 1/√d_k scale),
        for ``forward_dense(..., tables=...)`` of this layer and of every layer with the same
        switches and encodings (a model builds them once per forward, not once per layer).

        Args:
            encodings: the :class:`GRPEEncodings`.
            relations: from :meth:`prepare_relations`; the tables fit every batch whose
                relations are fused alike (``relations.fused``).

        Returns:
            :class:`GRPETables`.
        """
        if encodings.hidden_dim != self.hidden_dim:
            raise ValueError(f"encodings have dimension {encodings.hidden_dim}, the layer "
                             f"{self.hidden_dim}")
        H, dk = self.num_heads, self.head_dim
        P, E = encodings.topology, encodings.edge

        def table(kind: str, r: int) -> Tensor:  # r: 0 query, 1 key, 2 value → [T, d]
            if kind == "fused":
                return (P[r].unsqueeze(1) + E[r].unsqueeze(0)).flatten(0, 1)
            return P[r] if kind == "topology" else E[r]

        def side(kinds: list[str], r: int) -> Tensor:
            parts = [table(kind, r) for kind in kinds]
            return parts[0] if len(parts) == 1 else torch.cat(parts)

        fused = relations.fused
        plan = self._plan(encodings, fused)
        score_kinds = [kind for kind, _, sc, _ in plan if sc]
        value_kinds = [kind for kind, _, _, val in plan if val]
        score = value = None
        if score_kinds:  # [2, T_s, d] → [2 · H, T_s, d_k], both sides times 1/√d_k
            both = torch.stack([side(score_kinds, 0), side(score_kinds, 1)]) * dk ** -0.5
            t_s = both.size(1)
            score = both.view(2, t_s, H, dk).transpose(1, 2).reshape(2 * H, t_s, dk)
        if value_kinds:
            tv = side(value_kinds, 2)
            value = tv.view(tv.size(0), H, dk).permute(1, 2, 0)  # [H, d_k, T_v]
        return GRPETables(self._table_key(encodings, fused), encodings, score, value)

    def _relations(self, topology: Tensor, edge: Tensor, enc: GRPEEncodings
                   ) -> list[tuple[Tensor, Tensor | None, Tensor | None, Tensor | None]]:
        """``(ids [B, N, N], table_q, table_k, table_v)`` per relation; tables ``[T, d]`` or
        ``None`` where a switch is off (the materialized path)."""
        P, E = enc.topology, enc.edge
        rel = []
        for kind, _, sc, val in self._plan(enc, self._fused(enc, topology.size(-1))):
            if kind == "fused":
                ids = topology * enc.num_edge + edge
                tabs = [(P[r].unsqueeze(1) + E[r].unsqueeze(0)).flatten(0, 1) for r in range(3)]
            else:
                ids = topology if kind == "topology" else edge
                tabs = list(P if kind == "topology" else E)
            rel.append((ids, tabs[0] if sc else None, tabs[1] if sc else None,
                        tabs[2] if val else None))
        return rel

    # ------------------------------------------------------------------ forward
    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, encodings: GRPEEncodings | None = None,
                topology: Tensor | None = None, edge_ids: Tensor | None = None,
                return_attention_weights: bool = False):
        """PyG-native entry point; see the class docstring."""
        return _pyg_forward(self, self.hidden_dim, x, edge_index, edge_attr, batch, encodings,
                            topology, edge_ids, return_attention_weights)

    def forward_dense(self, x: Tensor, topology: Tensor, edge: Tensor, encodings: GRPEEncodings,
                      mask: Tensor | None = None, return_attention_weights: bool = False, *,
                      relations: GRPERelations | None = None, tables: GRPETables | None = None
                      ) -> LayerOutput:
        """Dense entry point (ids dst-major); see the class docstring. ``relations`` /
        ``tables``: from :meth:`prepare_relations` / :meth:`prepare_tables` (built here when
        ``None``; ignored by ``attention_impl="materialized"``)."""
        if x.dim() != 3 or x.size(-1) != self.hidden_dim:
            raise ValueError(f"x must be [B, N, {self.hidden_dim}], got {tuple(x.shape)}")
        B, N, d = x.shape
        for name, t in (("topology", topology), ("edge", edge)):
            if t.shape != (B, N, N):
                raise ValueError(f"{name} ids must be [B, N, N] = {(B, N, N)}, got "
                                 f"{tuple(t.shape)}")
        if encodings.hidden_dim != self.hidden_dim:
            raise ValueError(f"encodings have dimension {encodings.hidden_dim}, the layer "
                             f"{self.hidden_dim}")
        if mask is not None and mask.shape != (B, N):
            raise ValueError(f"mask must be [B, N] = {(B, N)}, got {tuple(mask.shape)}")
        H, dk = self.num_heads, self.head_dim
        scale = dk ** -0.5  # in the q·k products (alpha) and the tables: every score term
        if self.attention_impl == "materialized":
            return self._materialized(x, topology, edge, encodings, mask,
                                      return_attention_weights)
        if relations is None:
            relations = self.prepare_relations(topology, edge, encodings, mask)
        elif (relations.key != self._relation_key(encodings, relations.fused)
              or relations.shape != (B, N)
              or relations.fused != self._fused(encodings, N)):
            raise ValueError(f"relations were prepared for {relations.key} on a batch of shape "
                             f"{relations.shape}; this layer needs "
                             f"{self._relation_key(encodings, self._fused(encodings, N))} on "
                             f"{(B, N)}: build them with this layer's prepare_relations")
        if tables is None:
            tables = self.prepare_tables(encodings, relations)
        elif (tables.encodings is not encodings
              or tables.key != self._table_key(encodings, relations.fused)):
            raise ValueError("tables were prepared from other encodings or for another layer "
                             "configuration: build them with prepare_tables(encodings, relations)")
        # heads first, one copy: q, k, v [3, H, B, N, d_k]; every product below is then a
        # batched matmul on views. The 1/√d_k goes into the products (QKScores' alpha) and the
        # tables (prepare_tables).
        qkv = self.qkv(x.reshape(B * N, d)).view(B, N, 3, H, dk).permute(2, 3, 0, 1, 4)
        qkv = qkv.contiguous()
        q, k, v = qkv.view(3, H * B, N, dk).unbind(0)
        mask_bias = self._mask_bias(mask, relations)
        if tables.score is not None:
            # T^q_t · q_i and T^k_t · k_j for all t, both sides in one product, [2, H, T_s, B·N]
            # (the [T_s, B·N] results, and those of the backward, are the fast orientation on CPU)
            t_s = relations.score_size
            qk = qkv[:2].view(2 * H, B * N, dk)
            prod = torch.bmm(tables.score, qk.transpose(1, 2))
            if mask_bias is not None and mask_bias.dtype != prod.dtype:
                mask_bias = mask_bias.to(prod.dtype)
            # gathered per pair, the two sides and the relations summed, with the key mask:
            # [H, B·N²]
            bias = GatherTerms.apply(prod.view(2, H, t_s * B * N), relations.score_terms,
                                      mask_bias)
            scores = QKScores.apply(bias.view(H * B, N, N), q, k, scale)
        else:
            scores = QKScores.apply(None, q, k, scale)
            if mask_bias is not None:
                scores = (scores.view(H, B * N * N) + mask_bias.to(scores.dtype)
                          ).view(H * B, N, N)
        attn = torch.softmax(scores, dim=-1, dtype=acc_dtype(scores.dtype))  # fp32 (autocast)
        a, drop_scale = self._dropout(attn)
        # z^T = v^T â^T: per graph a [d_k, N] result, which (with its backward) runs about twice
        # as fast on CPU as the [N, d_k] one of â v
        zT = torch.bmm(v.transpose(1, 2), a.to(v.dtype).transpose(1, 2)).view(H, B, dk, N)
        if tables.value is not None:
            # attention mass per relation type, bins[h, t, (b, i)] = Σ_j â_ij [id(i, j) = t],
            # summed in fp32 (a stays fp32 here), one scatter per value relation (indices
            # expanded over the heads once per batch); then T^v bins: [H, d_k, B·N]
            t_v = relations.value_size
            mass = a.view(H, B * N * N)
            bins = a.new_zeros(H, t_v * B * N)
            for index in relations.value_index:
                bins = bins.scatter_add_(1, index, mass)
            zt = torch.bmm(tables.value, bins.to(v.dtype).view(H, t_v, B * N))
            zT = zT + zt.view(H, dk, B, N).transpose(1, 2)
        z = zT.transpose(2, 3)  # [H, B, N, d_k]
        return self._finish(z, attn.view(H, B, N, N), drop_scale,
                            return_attention_weights)

    @staticmethod
    def _mask_bias(mask: Tensor | None, relations: GRPERelations) -> Tensor | None:
        """The ``[1, B·N²]`` float32 key-mask bias: the one ``relations`` were prepared with
        when they were prepared with this ``mask`` (once per batch), else built here."""
        if mask is None:
            return None
        if relations.mask is mask:
            return relations.mask_bias
        return key_mask_bias(mask, torch.float32)

    def _dropout(self, attn: Tensor) -> tuple[Tensor, float | None]:
        if self.training and self.attn_dropout > 0:
            keep, scale = attention_dropout_mask(attn.shape, self.attn_dropout, attn.device)
            # keep as float once (a bool factor is converted in the product and its backward);
            # z is linear in â: the 1 / (1 - p) scale goes on z
            return attn * keep.to(attn.dtype), scale
        return attn, None

    def _finish(self, z: Tensor, attn: Tensor, drop_scale: float | None,
                return_attention_weights: bool):
        """``z [H, B, N, d_k]`` → the output projection; the dropout's ``1 / (1 - p)`` goes on
        its weight (``z`` is linear in ``â``)."""
        H, B, N, dk = z.shape
        weight = self.out.weight if drop_scale is None else self.out.weight * drop_scale
        # a 2-D linear (one addmm; a 3-D input adds views), then [B, N, d]
        out = F.linear(z.permute(1, 2, 0, 3).reshape(B * N, H * dk), weight, self.out.bias)
        return LayerOutput(out.view(B, N, H * dk),
                           attn.transpose(0, 1) if return_attention_weights else None)

    def _materialized(self, x, topology, edge, encodings, mask, return_attention_weights):
        """The naive form: tables gathered into ``[B, N, N, H, d_k]`` pair tensors."""
        B, N, _ = x.shape
        H, dk = self.num_heads, self.head_dim
        scale = dk ** -0.5
        qkv = self.qkv(x).view(B, N, 3, H, dk).permute(2, 3, 0, 1, 4)  # [3, H, B, N, dk]
        q, k, v = qkv[0] * scale, qkv[1], qkv[2]
        relations = [(ids, tq, None if tk is None else tk * scale, tv)
                     for ids, tq, tk, tv in self._relations(topology, edge, encodings)]
        scores = q @ k.transpose(-1, -2)
        for ids, tq, tk, _ in relations:
            if tq is not None:
                scores = scores + torch.einsum("hbid,bijhd->hbij", q, tq[ids].view(B, N, N, H, dk))
            if tk is not None:
                scores = scores + torch.einsum("hbjd,bijhd->hbij", k, tk[ids].view(B, N, N, H, dk))
        if mask is not None:
            scores = scores.masked_fill(~mask.view(1, B, 1, N), float("-inf"))
        attn = torch.softmax(scores, dim=-1, dtype=acc_dtype(scores.dtype))
        a, drop_scale = self._dropout(attn)
        a = a.to(v.dtype)
        z = a @ v
        for ids, _, _, tv in relations:
            if tv is not None:
                z = z + torch.einsum("hbij,bijhd->hbid", a, tv[ids].view(B, N, N, H, dk))
        return self._finish(z, attn, drop_scale, return_attention_weights)


class GRPELayer(PreNormBlock):
    """A GRPE transformer block (pre-LayerNorm, as the official implementation).

    ``x = x + Dropout(GRPEAttention(LN(x)))``; ``x = x + Dropout(FFN(LN(x)))`` with
    ``FFN = Linear(d, ffn_dim) → GELU → Linear(ffn_dim, d)``.

    Args:
        hidden_dim, num_heads, attn_dropout: see :class:`GRPEAttention`.
        topology_attention, edge_attention, graph_encoded_value, attention_impl: the same.
        ffn_dim: FFN width (Table 1: equal to ``hidden_dim``).
        dropout: on the attention and FFN outputs.

    Entry points: as :class:`GRPEAttention` — ``forward(x, edge_index, edge_attr=None,
    batch=None, *, encodings, topology=None, edge_ids=None, return_attention_weights=False)``
    (PyG-native, ``x [num_nodes, d]`` → ``x``) and ``forward_dense(x, topology, edge, encodings,
    mask=None, return_attention_weights=False)`` (``x [B, N, d]``, ids ``[B, N, N]`` dst-major,
    returning a :class:`~graph_transformers.nn.LayerOutput`).

    Raises:
        ValueError: as :class:`GRPEAttention`.

    Example:
        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from graph_transformers.encodings import AddShortestPaths
        >>> from graph_transformers.nn import GRPEEncodings, GRPELayer
        >>> spd = AddShortestPaths(max_distance=5)              # batch.spd: ids 0 … 7
        >>> g = spd(Data(x=torch.randn(4, 16), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
        ...              edge_attr=torch.tensor([0, 1, 1])))    # directed path, 2 bond types
        >>> batch = Batch.from_data_list([g, g])
        >>> enc = GRPEEncodings(num_topology=5 + 3, num_edge=3 + 2, hidden_dim=16)
        >>> layer = GRPELayer(16, 4)
        >>> x = layer(batch.x, batch.edge_index, batch.edge_attr, batch.batch, encodings=enc,
        ...           topology=batch.spd)
        >>> x.shape
        torch.Size([8, 16])
    """

    def __init__(self, hidden_dim: int, num_heads: int, *, ffn_dim: int | None = None,
                 dropout: float = 0.0, attn_dropout: float = 0.0,
                 topology_attention: bool = True, edge_attention: bool = True,
                 graph_encoded_value: bool = True, attention_impl: str = "gather") -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(hidden_dim)
        self.attn = GRPEAttention(hidden_dim, num_heads, attn_dropout=attn_dropout,
                                  topology_attention=topology_attention,
                                  edge_attention=edge_attention,
                                  graph_encoded_value=graph_encoded_value,
                                  attention_impl=attention_impl)
        self._add_ffn(hidden_dim, ffn_dim, dropout)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, encodings: GRPEEncodings | None = None,
                topology: Tensor | None = None, edge_ids: Tensor | None = None,
                return_attention_weights: bool = False):
        """PyG-native entry point; see :class:`GRPEAttention`."""
        return _pyg_forward(self, self.attn.hidden_dim, x, edge_index, edge_attr, batch,
                            encodings, topology, edge_ids, return_attention_weights)

    def forward_dense(self, x: Tensor, topology: Tensor, edge: Tensor, encodings: GRPEEncodings,
                      mask: Tensor | None = None, return_attention_weights: bool = False, *,
                      relations: GRPERelations | None = None, tables: GRPETables | None = None
                      ) -> LayerOutput:
        """Dense entry point (ids dst-major); see :class:`GRPEAttention` (``relations``,
        ``tables``: from ``self.attn.prepare_relations`` / ``prepare_tables``)."""
        if x.dim() != 3:
            raise ValueError(f"x must be [B, N, {self.attn.hidden_dim}], got {tuple(x.shape)}")
        B, N, d = x.shape
        y, w = self.attn.forward_dense(self.attn_norm(x), topology, edge, encodings, mask,
                                       return_attention_weights, relations=relations,
                                       tables=tables)
        # the residuals and the FFN on [B·N, d] rows: 2-D linears (fewer dispatched operations)
        rows = self._residuals(x.reshape(B * N, d), y.view(B * N, d))
        return LayerOutput(rows.view(B, N, d), w)
