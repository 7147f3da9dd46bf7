"""GRPE: node-aware attention with topology and edge encodings, and graph-encoded values.

Park et al., "GRPE: Relative Positional Encoding for Graph Transformer" (2022), eqs. 6-9:

.. math::
    a_{ij} = \\frac{q_i \\cdot k_j + q_i \\cdot P^q_{ψ(i,j)} + k_j \\cdot P^k_{ψ(i,j)}
             + q_i \\cdot E^q_{e_{ij}} + k_j \\cdot E^k_{e_{ij}}}{\\sqrt{d_k}},\\qquad
    z_i = \\sum_j \\hat a_{ij} \\, (v_j + P^v_{ψ(i,j)} + E^v_{e_{ij}}),

per head (``d_k = hidden_dim / num_heads``; the tables are split into heads like ``q``, ``k``,
``v``, as in the official code). The paper's "complexity trick" is how the layer computes them:
the queries (keys) are multiplied by the small tables once, ``[H, B, N, T]`` (heads first), and
the products are gathered per pair; for the values, the attention mass of each row is scattered into one bin per
relation type, ``[H, B, N, T]``, and the bins are multiplied by the value table. No
``[B, N, N, hidden_dim]`` tensor is built. When both relations are used, they are fused into one
relation of ``T_ψ · T_e`` types (``id = ψ · T_e + e``, table rows ``P_ψ + E_e``): one gather per
side and one scatter instead of two; a large product of vocabularies falls back to two relations.

``attention_impl="materialized"`` computes the same equations by gathering the tables into
``[B, N, N, hidden_dim]`` pair tensors first (the naive form, kept for benchmarking).
"""
from __future__ import annotations

import sys

import torch
from torch import Tensor, nn

from ..data.checks import checks_enabled
from ..data.dense import UNREACHABLE, DenseBatch
from .attention import acc_dtype, head_dim
from .pyg_inputs import LayerOutput, densify, pairs_input
from .reset import reset_children

_LITTLE_ENDIAN = sys.byteorder == "little"
#: fuse topology and edge relations when the product of their vocabularies is at most this
FUSE_LIMIT = 256
#: pair-edge ids (shared with GRPE and Graphormer models); edge types start at ``EDGE_OFFSET``
EDGE_NONE, EDGE_SELF, EDGE_VIRTUAL, EDGE_OFFSET = 0, 1, 2, 3


def pyg_relations(dense: DenseBatch, edge_index: Tensor, edge_attr: Tensor | None,
                  topology: Tensor | None, edge_ids: Tensor | None, enc: "GRPEEncodings"
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


def attention_dropout_mask(shape: torch.Size, p: float, device=None) -> tuple[Tensor, float]:
    """Keep-mask of inverted dropout drawn from random bytes: ``(keep [shape] bool, scale)``.

    ``p`` is rounded to a multiple of 1/256 (``p' = round(256 p) / 256``, ``scale = 1 / (1 - p')``).
    Drawing 3 random bytes per int32 is several times faster on CPU than ``bernoulli_``, which
    dominates a step otherwise (one draw per attention weight).
    """
    n = 1
    for s in shape:
        n *= s
    threshold = int(round(p * 256))
    # random_() fills int32 with 31 random bits: its three low bytes are uniform, the top one not
    words = torch.empty((n + 2) // 3, dtype=torch.int32, device=device).random_()
    low = words.view(torch.uint8).view(-1, 4)[:, :3] if _LITTLE_ENDIAN else \
        words.view(torch.uint8).view(-1, 4)[:, 1:]
    keep = low.reshape(-1)[:n].view(shape) >= threshold
    return keep, 256.0 / (256 - threshold)


class ByteDropout(nn.Module):
    """Inverted dropout whose mask comes from :func:`attention_dropout_mask` (``p`` rounded to a
    multiple of 1/256); the same as ``nn.Dropout`` otherwise, several times faster on CPU.

    Shapes: any → same.
    """

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return x
        keep, scale = attention_dropout_mask(x.shape, self.p, x.device)
        return x * keep * scale

    def extra_repr(self) -> str:
        return f"p={self.p}"


def _heads(table: Tensor, num_heads: int) -> Tensor:
    """``[T, H·d_k]`` → ``[H, T, d_k]``."""
    t = table.size(0)
    return table.view(t, num_heads, -1).transpose(0, 1)


def _pyg_forward(module: nn.Module, hidden_dim: int, x: Tensor, edge_index: Tensor,
                 edge_attr: Tensor | None, batch: Tensor | None,
                 encodings: GRPEEncodings | None, topology: Tensor | None,
                 edge_ids: Tensor | None, return_attention_weights: bool) -> LayerOutput:
    """The PyG-native call of :class:`GRPEAttention` and :class:`GRPELayer`: densify, build (or
    take) the relation ids, run ``module.forward_dense``, and return the node rows."""
    dense = densify(module, x, edge_index, batch, hidden_dim)
    if encodings is None:
        raise ValueError(f"{type(module).__name__}.forward needs encodings=GRPEEncodings(...) "
                         "(the P and E tables, usually shared by all layers)")
    topo, edge = pyg_relations(dense, edge_index, edge_attr, topology, edge_ids, encodings)
    out = module.forward_dense(dense.to_dense(x), topo, edge, encodings, dense.mask,
                               return_attention_weights)
    return LayerOutput(dense.to_sparse(out.x), out.attention)


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

    Two entry points (see :mod:`graph_transformers.nn.pyg_inputs`), both returning a
    :class:`~graph_transformers.nn.LayerOutput` ``(x, attention)``; ``attention`` is
    ``[B, H, N, N]`` (after softmax, before dropout) with ``return_attention_weights=True``, else
    ``None``:

    * ``forward(x, edge_index, edge_attr=None, batch=None, *, encodings, topology=None,
      edge_ids=None, return_attention_weights=False)``: PyG-native, ``x [num_nodes, d]`` →
      ``[num_nodes, d]``.
      ``encodings``: the :class:`GRPEEncodings` (``d`` = ``hidden_dim``).
      ``topology``: ``[Σ_b n_b²]`` ids ``ψ(i, j)``, each graph's pairs flattened row-major
      (``k = i · n_b + j``, pair ``j → i``): pass ``batch.spd`` of
      :class:`~graph_transformers.encodings.AddShortestPaths`; ``None``: built from
      ``edge_index`` in the same layout (hops along edge directions ``j → … → i``, ``0 … L``,
      far ``L + 1``, unreachable ``L + 2``, with ``L = encodings.num_topology - 3``; a BFS with
      one device sync per hop). ``edge_ids``: ``[Σ_b n_b²]`` ids ``e_ij`` in ``[0, T_e)`` in the
      same layout; ``None``: built from ``edge_index`` and ``edge_attr`` (integer edge types
      ``[num_edges]``; ``None`` = one type): :data:`EDGE_OFFSET` ``+ type`` on the pair of each
      edge ``j → i``, :data:`EDGE_SELF` on the diagonal, :data:`EDGE_NONE` elsewhere (``T_e``
      must exceed ``EDGE_OFFSET + max type``). No virtual node (a model feature).
    * ``forward_dense(x, topology, edge, encodings, mask=None, return_attention_weights=False)``:
      ``x [B, N, d]``; ``topology``, ``edge``: ``[B, N, N]`` long ids in ``[0, T_ψ)`` /
      ``[0, T_e)``, dst-major (``[b, i, j]``: the pair ``j → i``, row ``i`` the query; from
      PyG's ``to_dense_adj``: ``.transpose(1, 2)``); ``mask``: ``[B, N]`` bool, ``True`` at real
      nodes (keys at padding get no attention), ``None`` = all real. Returns ``[B, N, d]``; rows
      at padding are finite but meaningless.

    Raises:
        ValueError: on mismatched shapes; in ``forward`` for dense tensors (naming
            ``forward_dense``), ids outside the encodings (checked on CPU / in debug mode).
    """

    def __init__(self, hidden_dim: int, num_heads: int, attn_dropout: float = 0.0,
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
    def _relations(self, topology: Tensor, edge: Tensor, enc: GRPEEncodings
                   ) -> list[tuple[Tensor, Tensor | None, Tensor | None, Tensor | None]]:
        """``(ids [B, N, N], table_q, table_k, table_v)`` per relation; tables ``[T, d]`` or
        ``None`` where a switch is off."""
        P, E = enc.topology, enc.edge
        pv = P[2] if self.graph_encoded_value else None
        ev = E[2] if self.graph_encoded_value else None
        use_t = self.topology_attention or self.graph_encoded_value
        use_e = self.edge_attention or self.graph_encoded_value
        t_e = enc.num_edge
        if (self.topology_attention and self.edge_attention
                and enc.num_topology * t_e <= FUSE_LIMIT):
            ids = topology * t_e + edge
            fq = (P[0].unsqueeze(1) + E[0].unsqueeze(0)).flatten(0, 1)
            fk = (P[1].unsqueeze(1) + E[1].unsqueeze(0)).flatten(0, 1)
            fv = (pv.unsqueeze(1) + ev.unsqueeze(0)).flatten(0, 1) if pv is not None else None
            return [(ids, fq, fk, fv)]
        rel = []
        if use_t:
            rel.append((topology, P[0] if self.topology_attention else None,
                        P[1] if self.topology_attention else None, pv))
        if use_e:
            rel.append((edge, E[0] if self.edge_attention else None,
                        E[1] if self.edge_attention else None, ev))
        return rel

    # ------------------------------------------------------------------ forward
    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, encodings: GRPEEncodings | None = None,
                topology: Tensor | None = None, edge_ids: Tensor | None = None,
                return_attention_weights: bool = False) -> LayerOutput:
        """PyG-native entry point; see the class docstring."""
        return _pyg_forward(self, self.hidden_dim, x, edge_index, edge_attr, batch, encodings,
                            topology, edge_ids, return_attention_weights)

    def forward_dense(self, x: Tensor, topology: Tensor, edge: Tensor, encodings: GRPEEncodings,
                      mask: Tensor | None = None, return_attention_weights: bool = False
                      ) -> LayerOutput:
        """Dense entry point (ids dst-major); see the class docstring."""
        if x.dim() != 3 or x.size(-1) != self.hidden_dim:
            raise ValueError(f"x must be [B, N, {self.hidden_dim}], got {tuple(x.shape)}")
        B, N, _ = x.shape
        for name, t in (("topology", topology), ("edge", edge)):
            if t.shape != (B, N, N):
                raise ValueError(f"{name} ids must be [B, N, N] = {(B, N, N)}, got "
                                 f"{tuple(t.shape)}")
        if encodings.hidden_dim != self.hidden_dim:
            raise ValueError(f"encodings have dimension {encodings.hidden_dim}, the layer "
                             f"{self.hidden_dim}")
        H, dk = self.num_heads, self.head_dim
        scale = dk ** -0.5  # folded into q and the key tables: every score term is scaled
        # heads first, [H, B, N, ·]: the table products are then H plain matmuls over B·N rows
        qkv = self.qkv(x).view(B, N, 3, H, dk).permute(2, 3, 0, 1, 4)  # [3, H, B, N, dk]
        q, k, v = qkv[0] * scale, qkv[1], qkv[2]
        relations = [(ids, tq, None if tk is None else tk * scale, tv)
                     for ids, tq, tk, tv in self._relations(topology, edge, encodings)]
        if mask is not None and mask.shape != (B, N):
            raise ValueError(f"mask must be [B, N] = {(B, N)}, got {tuple(mask.shape)}")
        if self.attention_impl == "materialized":
            return self._materialized(q, k, v, relations, mask, return_attention_weights)
        scores = q @ k.transpose(-1, -2)  # [H, B, N, N]
        rows = torch.arange(N, device=x.device)
        bin_index = []
        for ids, tq, tk, tv in relations:
            T = (tq if tq is not None else tk if tk is not None else tv).size(0)
            # flat indices into a [B, N·T] per-node table: row i (query) or row j (key)
            flat_q = (rows.view(1, N, 1) * T + ids).view(1, B, N * N).expand(H, B, N * N)
            if tq is not None:  # q_i · T_{id(i,j)}: [H, B, N, T], gathered at (i, id(i, j))
                qt = (q.reshape(H, B * N, dk) @ _heads(tq, H).transpose(1, 2)).view(H, B, N * T)
                scores = scores + torch.gather(qt, 2, flat_q).view(H, B, N, N)
            if tk is not None:  # k_j · T_{id(i,j)}: gathered at (j, id(i, j))
                flat_k = (rows.view(1, 1, N) * T + ids).view(1, B, N * N).expand(H, B, N * N)
                kt = (k.reshape(H, B * N, dk) @ _heads(tk, H).transpose(1, 2)).view(H, B, N * T)
                scores = scores + torch.gather(kt, 2, flat_k).view(H, B, N, N)
            bin_index.append((flat_q, T))
        if mask is not None:  # boolean mask, -inf: exact in every float dtype
            scores = scores.masked_fill(~mask.view(1, B, 1, N), float("-inf"))
        attn = torch.softmax(scores, dim=-1, dtype=acc_dtype(scores.dtype))  # fp32 (autocast)
        a, drop_scale = self._dropout(attn)
        z = a.to(v.dtype) @ v  # [H, B, N, dk]
        for (ids, _, _, tv), (flat_q, T) in zip(relations, bin_index):
            if tv is None:
                continue
            # attention mass per relation type: bins[h,b,i,t] = Σ_j â_ij [id(i, j) = t], summed
            # in fp32 (a stays fp32 here)
            bins = a.new_zeros(H, B, N * T).scatter_add_(2, flat_q, a.reshape(H, B, N * N))
            bins = bins.to(v.dtype)
            z = z + (bins.view(H, B * N, T) @ _heads(tv, H)).view(H, B, N, dk)
        return self._finish(z, attn, drop_scale, return_attention_weights)

    def _dropout(self, attn: Tensor) -> tuple[Tensor, float | None]:
        if self.training and self.attn_dropout > 0:
            keep, scale = attention_dropout_mask(attn.shape, self.attn_dropout, attn.device)
            return attn * keep, scale  # z is linear in â: the 1 / (1 - p) scale goes on z
        return attn, None

    def _finish(self, z: Tensor, attn: Tensor, drop_scale: float | None,
                return_attention_weights: bool):
        H, B, N, dk = z.shape
        if drop_scale is not None:
            z = z * drop_scale
        out = self.out(z.permute(1, 2, 0, 3).reshape(B, N, H * dk))
        return LayerOutput(out, attn.transpose(0, 1) if return_attention_weights else None)

    def _materialized(self, q, k, v, relations, mask, return_attention_weights):
        """The naive form: tables gathered into ``[B, N, N, H, d_k]`` pair tensors."""
        H, B, N, dk = q.shape
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


class PreNormBlock(nn.Module):
    """What the pre-LayerNorm blocks of GRPE and Graphormer share (as their official code):
    after the attention output ``y`` of ``LN(x)``, ``x = x + Dropout(y)`` then
    ``x = x + Dropout(FFN(LN(x)))`` with ``FFN = Linear(d, ffn_dim) → GELU → Linear(ffn_dim, d)``
    (``ffn_dim`` defaults to ``d``). A subclass creates ``attn_norm`` and its attention, then
    calls :meth:`_add_ffn`."""

    def _add_ffn(self, hidden_dim: int, ffn_dim: int | None, dropout: float) -> None:
        ffn_dim = ffn_dim or hidden_dim
        self.ffn_norm = nn.LayerNorm(hidden_dim)
        self.ffn = nn.Sequential(nn.Linear(hidden_dim, ffn_dim), nn.GELU(),
                                 nn.Linear(ffn_dim, hidden_dim))
        self.dropout = ByteDropout(dropout)

    def reset_parameters(self) -> None:
        reset_children(self)

    def _residuals(self, x: Tensor, y: Tensor) -> Tensor:
        """``x [B, N, d]`` and the attention output ``y`` → the block's output."""
        x = x + self.dropout(y)
        return x + self.dropout(self.ffn(self.ffn_norm(x)))


class GRPELayer(PreNormBlock):
    """A GRPE transformer block (pre-LayerNorm, as the official implementation):

    ``x = x + Dropout(GRPEAttention(LN(x)))``; ``x = x + Dropout(FFN(LN(x)))`` with
    ``FFN = Linear(d, ffn_dim) → GELU → Linear(ffn_dim, d)``.

    Args:
        hidden_dim, num_heads, attn_dropout: see :class:`GRPEAttention`.
        topology_attention, edge_attention, graph_encoded_value, attention_impl: the same.
        ffn_dim: FFN width (Table 1: equal to ``hidden_dim``).
        dropout: on the attention and FFN outputs.

    Entry points: as :class:`GRPEAttention` — ``forward(x, edge_index, edge_attr=None,
    batch=None, *, encodings, topology=None, edge_ids=None, return_attention_weights=False)``
    (PyG-native,
    ``x [num_nodes, d]``) and ``forward_dense(x, topology, edge, encodings, mask=None,
    return_attention_weights=False)`` (``x [B, N, d]``, ids ``[B, N, N]`` dst-major), both
    returning a
    :class:`~graph_transformers.nn.LayerOutput`.

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
        >>> layer = GRPELayer(hidden_dim=16, num_heads=4)
        >>> out = layer(batch.x, batch.edge_index, batch.edge_attr, batch.batch, encodings=enc,
        ...             topology=batch.spd)
        >>> out.x.shape
        torch.Size([8, 16])
    """

    def __init__(self, hidden_dim: int, num_heads: int, ffn_dim: int | None = None,
                 dropout: float = 0.0, attn_dropout: float = 0.0,
                 topology_attention: bool = True, edge_attention: bool = True,
                 graph_encoded_value: bool = True, attention_impl: str = "gather") -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(hidden_dim)
        self.attn = GRPEAttention(hidden_dim, num_heads, attn_dropout, topology_attention,
                                  edge_attention, graph_encoded_value, attention_impl)
        self._add_ffn(hidden_dim, ffn_dim, dropout)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, encodings: GRPEEncodings | None = None,
                topology: Tensor | None = None, edge_ids: Tensor | None = None,
                return_attention_weights: bool = False) -> LayerOutput:
        """PyG-native entry point; see :class:`GRPEAttention`."""
        return _pyg_forward(self, self.attn.hidden_dim, x, edge_index, edge_attr, batch,
                            encodings, topology, edge_ids, return_attention_weights)

    def forward_dense(self, x: Tensor, topology: Tensor, edge: Tensor, encodings: GRPEEncodings,
                      mask: Tensor | None = None, return_attention_weights: bool = False
                      ) -> LayerOutput:
        """Dense entry point (ids dst-major); see :class:`GRPEAttention`."""
        y, w = self.attn.forward_dense(self.attn_norm(x), topology, edge, encodings, mask,
                                       return_attention_weights)
        return LayerOutput(self._residuals(x, y), w)
