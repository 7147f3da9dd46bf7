"""Graphormer's transformer block: self-attention with an additive per-head pair bias.

Ying et al., "Do Transformers Really Perform Bad for Graph Representation?" (2021), eqs. 6-8:

.. math::
    A_{ij} = \\frac{(h_i W_Q)(h_j W_K)^\\top}{\\sqrt{d}} + b_{ψ(i,j)} + c_{ij},

with ``b`` a learned scalar per head and shortest-path distance (spatial encoding) and ``c`` an
edge-encoding bias (see :class:`graph_transformers.models.Graphormer` for how it is built);
the block is pre-LayerNorm (eqs. 7-8): ``h' = MHA(LN(h)) + h``, ``h = FFN(LN(h')) + h'``.
Unlike GRPE, the bias does not interact with the node features (GRPE paper, eq. 4).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import acc_dtype, head_dim, sdpa
from .convention import with_attention
from .prenorm import PreNormBlock
from .pyg_inputs import LayerOutput, densify, pair_attention, pairs_input


class GraphormerLayer(PreNormBlock):
    """Pre-LN multi-head self-attention with an additive bias, then a GELU FFN.

    Args:
        hidden_dim: ``d``.
        num_heads: ``H`` (``d`` divisible by ``H``).
        edge_dim: ``None``, or the width of the edge features ``edge_attr`` the layer turns into
            its edge encoding, ``c_ij = x_e · w^E`` per head for the edge ``e = j → i``
            (Graphormer eq. 7 for a path of one edge; ``edge_proj``, a bias-free
            ``Linear(edge_dim, H)``).
        ffn_dim: FFN width (default ``d``).
        dropout: on the attention and FFN outputs.
        attn_dropout: on the attention weights.

    Two entry points (see :mod:`graph_transformers.nn.pyg_inputs`):

    * ``forward(x, edge_index, edge_attr=None, batch=None, *, edge_bias=None, pair_bias=None,
      return_attention_weights=False)``: PyG-native. ``x [num_nodes, d]``; the bias ``b_ij`` of
      the scores is the sum of the edge encoding of ``edge_attr [num_edges, edge_dim]`` (edge
      features; a layer built with ``edge_dim``), ``edge_bias [num_edges, H]`` (a per-head bias on
      the pairs ``(i, j)`` of the edges ``j → i``, e.g. an edge encoding
      ``nn.Embedding(num_types, H)(edge_type)``; ``0`` on other pairs) and ``pair_bias [Σ_b n_b²,
      H]`` (a bias on every pair of each graph, flattened row-major ``k = i · n_b + j``, the
      layout of :class:`~graph_transformers.encodings.AddShortestPaths`' ``spd``, e.g. the
      spatial encoding ``nn.Embedding(L + 3, H)(batch.spd.long())``); none given is refused
      (plain attention over each graph would ignore its edges). The layer builds nothing else (no
      distances, no graph token: those are :class:`~graph_transformers.models.Graphormer`'s).
      Returns ``x [num_nodes, d]``; with ``return_attention_weights=True``, ``(x, (pair_index
      [2, Σ_b n_b²], weights [Σ_b n_b², H]))`` over every pair ``j → i`` of each graph
      (:func:`~graph_transformers.nn.pyg_inputs.pair_attention`).
    * ``forward_dense(x, bias, return_attention_weights=False)``: ``x [B, N, d]``;
      ``bias [B, H, N, N]``
      float added to the scaled scores, dst-major (``bias[b, h, i, j]``: query ``i``, key ``j``,
      the pair ``j → i``; from PyG's ``to_dense_adj``: ``.transpose(1, 2)``); ``-inf`` masks a key
      (padding). Every row needs at least one finite entry. Returns a
      :class:`~graph_transformers.nn.LayerOutput` ``(x [B, N, d], attention)``, ``attention``
      ``[B, H, N, N]`` with ``return_attention_weights=True``, else ``None``.

    Raises:
        ValueError: on mismatched shapes; in ``forward`` for dense tensors (naming
            ``forward_dense``), without ``edge_attr``, ``edge_bias`` and ``pair_bias`` (the
            graph would be ignored), or for ``edge_attr`` given to a layer built without
            ``edge_dim`` (a per-head bias goes in ``edge_bias``).

    Example:
        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from graph_transformers.encodings import AddShortestPaths
        >>> from graph_transformers.nn import GraphormerLayer
        >>> spd = AddShortestPaths(max_distance=5)
        >>> g = spd(Data(x=torch.randn(4, 16), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]])))
        >>> batch = Batch.from_data_list([g, g])
        >>> spatial = torch.nn.Embedding(5 + 3, 4)                 # b_ψ(i,j), one per head
        >>> layer = GraphormerLayer(16, 4)
        >>> x = layer(batch.x, batch.edge_index, batch=batch.batch,
        ...           pair_bias=spatial(batch.spd.long()))
        >>> x.shape
        torch.Size([8, 16])
    """

    def __init__(self, hidden_dim: int, num_heads: int, *, edge_dim: int | None = None,
                 ffn_dim: int | None = None, dropout: float = 0.0, attn_dropout: float = 0.0
                 ) -> None:
        super().__init__()
        head_dim(hidden_dim, num_heads)  # raises unless num_heads divides hidden_dim
        if not 0.0 <= attn_dropout < 1.0:
            raise ValueError(f"attn_dropout must be in [0, 1), got {attn_dropout}")
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.attn_dropout = attn_dropout
        self.attn_norm = nn.LayerNorm(hidden_dim)
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)
        self.out = nn.Linear(hidden_dim, hidden_dim)
        self._add_ffn(hidden_dim, ffn_dim, dropout)
        # created last: a layer without edge features draws the same parameters as before
        self.edge_dim = edge_dim
        self.edge_proj = (nn.Linear(edge_dim, num_heads, bias=False) if edge_dim is not None
                          else None)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, edge_bias: Tensor | None = None,
                pair_bias: Tensor | None = None, return_attention_weights: bool = False):
        """PyG-native entry point; see the class docstring."""
        dense = densify(self, x, edge_index, batch, self.hidden_dim)
        H, E = self.num_heads, edge_index.size(1)
        if edge_attr is not None and self.edge_proj is None:
            raise ValueError(f"edge_attr holds edge features: build the layer with edge_dim "
                             f"(GraphormerLayer(hidden_dim, num_heads, edge_dim=...)); a "
                             f"per-head bias [num_edges={E}, num_heads={H}] goes in "
                             f"edge_bias=, got edge_attr {tuple(edge_attr.shape)}")
        if edge_attr is None and edge_bias is None and pair_bias is None:
            raise ValueError(
                "GraphormerLayer got edge_index without edge_attr, edge_bias or pair_bias: with no "
                "bias the attention ignores the graph; pass pair_bias (e.g. a spatial encoding "
                "b(SPD_ij) per head, as in the example), a per-head edge_bias and/or edge features "
                "edge_attr (a layer built with edge_dim)")
        B, N = dense.num_graphs, dense.max_num_nodes
        bias = x.new_zeros(B, N, N, H)
        if edge_attr is not None:
            if edge_attr.shape != (E, self.edge_dim):
                raise ValueError(f"edge_attr must be [num_edges={E}, edge_dim={self.edge_dim}], "
                                 f"got {tuple(edge_attr.shape)}")
            bias = bias + dense.scatter_edges(self.edge_proj(edge_attr).to(x.dtype))
        if edge_bias is not None:
            if edge_bias.shape != (E, H):
                raise ValueError(f"edge_bias is a per-head bias: [num_edges={E}, "
                                 f"num_heads={H}], got {tuple(edge_bias.shape)}")
            bias = bias + dense.scatter_edges(edge_bias.to(x.dtype))
        if pair_bias is not None:
            if pair_bias.dim() != 2 or pair_bias.size(1) != H:
                raise ValueError(f"pair_bias must be [Σ n², num_heads={H}], got "
                                 f"{tuple(pair_bias.shape)}")
            bias = bias + pairs_input(dense, pair_bias.to(x.dtype), "pair_bias")
        bias = bias.permute(0, 3, 1, 2).masked_fill(~dense.mask.view(B, 1, 1, N), float("-inf"))
        out = self.forward_dense(dense.to_dense(x), bias, return_attention_weights)
        x = dense.to_sparse(out.x)
        if not return_attention_weights:
            return x
        return with_attention(x, *pair_attention(dense, out.attention), True)

    def forward_dense(self, x: Tensor, bias: Tensor, return_attention_weights: bool = False
                      ) -> LayerOutput:
        """Dense entry point (``bias`` dst-major); see the class docstring."""
        if x.dim() != 3 or x.size(-1) != self.hidden_dim:
            raise ValueError(f"x must be [B, N, {self.hidden_dim}], got {tuple(x.shape)}")
        B, N, _ = x.shape
        H = self.num_heads
        if bias.shape != (B, H, N, N):
            raise ValueError(f"bias must be [B, H, N, N] = {(B, H, N, N)}, got "
                             f"{tuple(bias.shape)}")
        # node-wise parts on [B·N, d] rows: a 2-D linear is one addmm, where a 3-D one adds views
        # (fewer dispatched operations, the same arithmetic)
        rows = x.reshape(B * N, self.hidden_dim)
        qkv = self.qkv(self.attn_norm(rows)).view(B, N, 3, H, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # [B, H, N, dk]; one op (and one in the backward)
        p = self.attn_dropout if self.training else 0.0
        weights = None
        if return_attention_weights:
            scores = q @ k.transpose(-1, -2) * q.size(-1) ** -0.5 + bias
            weights = torch.softmax(scores, -1, dtype=acc_dtype(scores.dtype)).to(v.dtype)
            z = F.dropout(weights, p, self.training) @ v
        else:
            # a bias already in q's dtype and aligned (Graphormer: aligned_bias) is read in place by
            # CUDA's memory-efficient kernel, and sdpa pads d_k to a multiple of 8 on CUDA so
            # that kernel is reachable for any head size; see docs/gpu.md
            z = sdpa(q, k, v, attn_mask=bias.to(q.dtype), dropout_p=p)
        y = self.out(z.transpose(1, 2).reshape(B * N, self.hidden_dim))
        return LayerOutput(self._residuals(rows, y).view(B, N, self.hidden_dim), weights)
