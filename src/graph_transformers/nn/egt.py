"""The Edge-augmented Graph Transformer layer (Hussain, Zaki & Subramanian, EGT,
arXiv:2108.03348v1, 2021, with the KDD 2022 version's options)."""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import acc_dtype, head_dim
from .convention import with_attention
from .pyg_inputs import densify, pair_attention, pairs_input
from .reset import reset_children


class _NodesAndEdges(NamedTuple):
    x: Tensor
    edge_attr: Tensor


class EGTOutput(_NodesAndEdges):
    """What :meth:`EGTLayer.forward` (PyG-native) returns: ``(x, edge_attr)``, a named tuple that
    unpacks as two (the layer convention), with the all-pairs channels as an extra attribute.

    Attributes:
        x: ``[num_nodes, d_h]`` updated node channels.
        edge_attr: ``[num_edges, d_e]`` updated edge channels at the edges of ``edge_index``
            (pair ``(i, j)`` of the edge ``j → i``).
        pair_attr: ``[Σ_b n_b², d_e]`` updated edge channels of *all* node pairs, each graph's
            ``[n_b, n_b, d_e]`` flattened row-major (``k = i · n_b + j``, pair ``j → i``), graph
            after graph; pass it as ``pair_attr`` to the next layer. Equal to the input pairs when
            the layer has no edge output (EGT-Simple, ``edge_output=False``). Not part of the
            tuple: ``x, edge_attr = out`` and ``out.pair_attr``.
    """

    def __new__(cls, x: Tensor, edge_attr: Tensor, pair_attr: Tensor | None = None):
        out = super().__new__(cls, x, edge_attr)
        out.pair_attr = pair_attr
        return out

    def __getnewargs__(self):
        return (self.x, self.edge_attr, self.pair_attr)


class EGTDenseOutput(NamedTuple):
    """What :meth:`EGTLayer.forward_dense` returns: ``h [B, N, d_h]``, ``e [B, N, N, d_e]`` and,
    with ``return_attention_weights=True``, ``attention`` ``Ã [B, H, N, N]`` (else ``None``)."""

    h: Tensor
    e: Tensor
    attention: Tensor | None = None


class FeedForward(nn.Module):
    """Pointwise two-layer MLP with ELU, ``d → m·d → d`` (EGT §3.1, the FFN sublayer); ``hidden``
    gives the width ``m·d`` directly."""

    def __init__(self, dim: int, multiplier: float = 2.0, dropout: float = 0.0, *,
                 hidden: int | None = None) -> None:
        super().__init__()
        hidden = max(1, round(dim * multiplier)) if hidden is None else hidden
        self.lin1 = nn.Linear(dim, hidden)
        self.lin2 = nn.Linear(hidden, dim)
        self.dropout = dropout

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, x: Tensor) -> Tensor:
        """``x [*, dim]`` → ``[*, dim]``."""
        shape = x.shape
        # on a 2-D view the hidden tensor is a base tensor, so the in-place ELU below costs no
        # copy in backward; in place, autograd keeps only the ELU output (which lin2 saves
        # anyway), not its input too: one [*, m·d] tensor less per layer on pair tensors
        x = F.elu(self.lin1(x.reshape(-1, shape[-1])), inplace=True)
        if self.dropout and self.training:
            x = F.dropout(x, self.dropout, True)
        return self.lin2(x).view(shape)


class EGTLayer(nn.Module):
    r"""One EGT layer: global self-attention over node channels, biased and gated by edge channels
    that are themselves updated (EGT eqs. 1-7), and its ablated variants (appendix C-D).

    Per head :math:`k` (pre-LayerNorm: :math:`\hat h = \mathrm{LN}(h)`,
    :math:`\hat e = \mathrm{LN}(e)`):

    .. math::
        \hat A^k = \frac{Q^k \hat h (K^k \hat h)^\top}{\sqrt{d_k}}, \quad
        \hat H^k = \mathrm{clip}(\hat A^k, -c, c) + E^k \hat e, \quad
        \tilde A^k = \mathrm{softmax}(\hat H^k) \odot \sigma(G^k \hat e)

    .. math::
        h_i \leftarrow h_i + O_h \big\Vert_k \sum_j \tilde A^k_{ij} V^k \hat h_j, \qquad
        e_{ij} \leftarrow e_{ij} + O_e \big\Vert_k \hat H^k_{ij}

    followed by ``h ← h + FFN_h(LN(h))`` and ``e ← e + FFN_e(LN(e))`` (ELU FFNs).

    Variants, one code path:

    * ``edge_update=False`` — **EGT-Simple** (eqs. 10-11): no edge channels; ``e`` is the *input*
      edge embedding ``e⁰`` (never updated) that every layer normalizes with its own LayerNorm
      and projects to its own bias and gate, ``E·LN_ℓ(e⁰)`` as the official code (the equations
      write ``E·e⁰``). The layer returns ``e`` unchanged.
    * ``gated=False`` — **EGT-Ungated** (eqs. 13-14): ``Ã = softmax(Ĥ)``.
    * **EGT-Constrained** (eq. 12) is this layer called with ``attn_mask`` = adjacency with
      self-loops: the softmax runs over ``N(i) ∪ {i}`` only. Pairs outside the mask still go
      through the pointwise edge sublayers, but nothing reads them (the model zeroes them).

    Args:
        hidden_dim: ``d_h``.
        num_heads: ``H`` (``d_h`` must be divisible by it; ``d_k = d_h / H``).
        edge_dim: ``d_e`` (required, by keyword).
        ffn_dim / edge_ffn_dim: hidden widths of the node and edge FFNs (default ``2 · d_h`` /
            ``2 · d_e``).
        edge_update: keep residual edge channels (``False``: EGT-Simple).
        gated: sigmoid gates ``σ(G_e)`` on the attention weights.
        attn_dropout: dropout on the attention weights (node channels only, as the paper's
            large-scale setting).
        dropout: dropout on the outputs of the node channels' two sublayers (as the official
            code: none inside the FFN, none in the edge channels).
        clamp: ``c`` of ``clip(Â, -c, c)`` (paper: 5; the official code's ``clip``).
        edge_output: compute the edge-channel update; a network's last layer skips it when
            nothing reads its output edge channels (``e`` is then returned unchanged).
        scale_degree: multiply each head's aggregate by ``log(1 + Σ_j σ(G_ij))`` (the "dynamic
            centrality scalers" of the KDD version and the official code; virtual-node rows keep
            scale 1).
        random_mask_prob: in training, each (graph, head, query, key) pair is masked out of the
            softmax and its gate closed with this probability, independently (the official
            code's ``random_mask_prob``, 0.1 in the KDD version's configs: ``-1e9`` added to
            ``Ĥ`` and ``G``). The edge-channel update reads the unmasked ``Ĥ``.

    Two entry points (see :mod:`graph_transformers.nn.pyg_inputs`):

    * ``forward(x, edge_index, edge_attr=None, batch=None, *, pair_attr=None, non_edge=0.0,
      constrained=False, return_attention_weights=False)`` → :class:`EGTOutput` ``(x,
      edge_attr)`` (with ``return_attention_weights=True``: ``(out, (pair_index [2, Σ_b n_b²],
      weights [Σ_b n_b², H]))``, the gated weights ``Ã`` of every pair ``j → i`` of each graph,
      :func:`~graph_transformers.nn.pyg_inputs.pair_attention`): PyG-native. ``x
      [num_nodes, d_h]``; the input edge channels are either ``edge_attr [num_edges, d_e]`` on the
      edges ``j → i`` of ``edge_index`` with every other pair (diagonal included) set to
      ``non_edge`` (a scalar or a ``[d_e]`` vector, e.g. a learned masking vector; add self-loops
      to ``edge_index`` to give the diagonal its own value), or ``pair_attr [Σ_b n_b², d_e]``, all
      pairs of each graph flattened row-major (``k = i · n_b + j``; what the previous layer's
      :class:`EGTOutput` returns). ``edge_attr=None`` and ``pair_attr=None``: zero edge channels
      on the edges, ``non_edge`` elsewhere; refused with a scalar ``non_edge`` (unless
      ``constrained``), where every pair would get the same input. Note that a constant edge
      vector is as blind: the pre-norm maps every constant vector to the same bias.
      ``constrained=True`` is EGT-Constrained: attention over ``N(i) ∪ {i}`` of
      ``edge_index``. Densified internally by :class:`~graph_transformers.nn.DenseBatch` (one
      host sync for the graph sizes); virtual nodes are a model feature (dense path).
    * ``forward_dense(h, e, mask, attn_mask=None, return_attention_weights=False, num_virtual=0)`` →
      :class:`EGTDenseOutput`: padded tensors, for models that densify once per batch.
      ``h [B, N, d_h]``, ``e [B, N, N, d_e]`` oriented dst-major: ``e[b, i, j]`` is the pair
      ``j → i``, row ``i`` the query (from PyG's ``to_dense_adj``: ``.transpose(1, 2)``);
      ``mask [B, N]`` bool (real nodes); ``attn_mask [B, N, N]`` bool or ``None`` (pairs that
      may attend; must include the diagonal); ``num_virtual``: rows of leading virtual nodes
      (unscaled by ``scale_degree``).

    Raises:
        ValueError: at construction for ``hidden_dim`` not divisible by ``num_heads`` or
            ``scale_degree`` without gates; in ``forward`` for dense tensors (naming
            ``forward_dense``), mismatched ``edge_attr`` / ``pair_attr`` rows or both given,
            neither given with a scalar ``non_edge`` (the graph would be ignored); in
            ``forward_dense`` for mismatched shapes.

    Example:
        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from graph_transformers.nn import EGTLayer
        >>> g = Data(x=torch.randn(4, 16), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
        ...          edge_attr=torch.randn(3, 8))                      # directed path 0→1→2→3
        >>> batch = Batch.from_data_list([g, g])
        >>> layer = EGTLayer(16, 4, edge_dim=8)
        >>> out = layer(batch.x, batch.edge_index, batch.edge_attr, batch.batch)
        >>> x, e = out                                                # (x, edge_attr)
        >>> x.shape, e.shape, out.pair_attr.shape                     # pairs: 2 graphs × 4²
        (torch.Size([8, 16]), torch.Size([6, 8]), torch.Size([32, 8]))
        >>> out2 = layer(x, batch.edge_index, batch=batch.batch, pair_attr=out.pair_attr)
    """

    def __init__(self, hidden_dim: int, num_heads: int, *, edge_dim: int | None = None,
                 ffn_dim: int | None = None, edge_ffn_dim: int | None = None,
                 edge_update: bool = True, gated: bool = True, attn_dropout: float = 0.0,
                 dropout: float = 0.0, clamp: float = 5.0, edge_output: bool = True,
                 scale_degree: bool = False, random_mask_prob: float = 0.0) -> None:
        super().__init__()
        if edge_dim is None:
            raise TypeError("EGTLayer needs the width of its edge channels: "
                            "EGTLayer(hidden_dim, num_heads, edge_dim=...)")
        self.head_dim = head_dim(hidden_dim, num_heads)
        if scale_degree and not gated:
            raise ValueError("scale_degree sums the sigmoid gates: it needs gated=True")
        if not 0.0 <= random_mask_prob < 1.0:
            raise ValueError(f"random_mask_prob must be in [0, 1), got {random_mask_prob}")
        self.hidden_dim, self.edge_dim, self.num_heads = hidden_dim, edge_dim, num_heads
        self.edge_update, self.gated, self.clamp = edge_update, gated, clamp
        self.edge_output = edge_update and edge_output
        self.scale_degree = scale_degree
        self.attn_dropout, self.dropout = attn_dropout, dropout
        self.random_mask_prob = random_mask_prob

        self.norm_h = nn.LayerNorm(hidden_dim)
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)
        # E (bias) and G (gate) of every head from the edge channels, fused: [d_e] -> [2H] / [H]
        self.eg = nn.Linear(edge_dim, (2 if gated else 1) * num_heads)
        self.out_h = nn.Linear(hidden_dim, hidden_dim)
        self.ffn_norm_h = nn.LayerNorm(hidden_dim)
        self.ffn_h = FeedForward(hidden_dim, hidden=ffn_dim)
        self.norm_e = nn.LayerNorm(edge_dim)
        if self.edge_output:
            self.out_e = nn.Linear(num_heads, edge_dim)
            self.ffn_norm_e = nn.LayerNorm(edge_dim)
            self.ffn_e = FeedForward(edge_dim, hidden=edge_ffn_dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_children(self)

    def _drop(self, x: Tensor, p: float) -> Tensor:
        return F.dropout(x, p, True) if p and self.training else x

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, pair_attr: Tensor | None = None,
                non_edge: Tensor | float = 0.0, constrained: bool = False,
                return_attention_weights: bool = False):
        """PyG-native entry point; see the class docstring."""
        dense = densify(self, x, edge_index, batch, self.hidden_dim)
        if pair_attr is not None:
            if edge_attr is not None:
                raise ValueError("give the input edge channels as edge_attr (edges only) or "
                                 "pair_attr (all pairs), not both")
            if pair_attr.dim() != 2 or pair_attr.size(1) != self.edge_dim:
                raise ValueError(f"pair_attr must be [Σ n², {self.edge_dim}], got "
                                 f"{tuple(pair_attr.shape)}")
            e = pairs_input(dense, pair_attr, "pair_attr")
        else:
            num_edges = edge_index.size(1)
            if edge_attr is None:
                if not constrained and isinstance(non_edge, (int, float)):
                    # edges and non-edges would both be the same constant, which the pre-norm
                    # maps to one bias: the layer would ignore the graph (issue 26)
                    raise ValueError(
                        "EGTLayer got edge_index without edge_attr or pair_attr: every pair would "
                        "get the same input and the layer would ignore the graph; pass the input "
                        "edge channels (EGT embeds the adjacency or distance matrix and the edge "
                        "features, e.g. pair_attr from an nn.Embedding of the hop distances), a "
                        "learned [edge_dim] non_edge vector, or constrained=True")
                edge_attr = x.new_zeros(num_edges, self.edge_dim)
            if edge_attr.shape != (num_edges, self.edge_dim):
                raise ValueError(f"edge_attr must be [num_edges={num_edges}, {self.edge_dim}], "
                                 f"got {tuple(edge_attr.shape)}")
            e = dense.scatter_edges(edge_attr, fill=non_edge)
        attn_mask = None
        if constrained:  # N(i) ∪ {i}; the diagonal is kept at padding too
            eye = torch.eye(dense.max_num_nodes, dtype=torch.bool, device=x.device)
            attn_mask = dense.adjacency(self_loops=True) | eye
        out = self.forward_dense(dense.to_dense(x), e, dense.mask, attn_mask,
                                 return_attention_weights=return_attention_weights)
        result = EGTOutput(dense.to_sparse(out.h), dense.gather_edges(out.e),
                           dense.flatten_pairs(out.e))
        if not return_attention_weights:
            return result
        return with_attention(result, *pair_attention(dense, out.attention), True)

    def forward_dense(self, h: Tensor, e: Tensor, mask: Tensor, attn_mask: Tensor | None = None,
                      return_attention_weights: bool = False, num_virtual: int = 0
                      ) -> EGTDenseOutput:
        """Dense entry point (pairs dst-major, ``e[b, i, j]`` = ``j → i``); see the class
        docstring."""
        if h.dim() != 3 or h.size(-1) != self.hidden_dim:
            raise ValueError(f"h must be [B, N, {self.hidden_dim}], got {tuple(h.shape)}")
        B, N, _ = h.shape
        H, dk = self.num_heads, self.head_dim
        if e.shape[:3] != (B, N, N) or e.size(-1) != self.edge_dim:
            raise ValueError(f"e must have shape [{B}, {N}, {N}, {self.edge_dim}], got "
                             f"{tuple(e.shape)}")
        if mask.shape != (B, N):
            raise ValueError(f"mask must have shape [{B}, {N}], got {tuple(mask.shape)}")

        # --- attention sublayer (eqs. 1-6) ------------------------------------------------
        qkv = self.qkv(self.norm_h(h)).view(B, N, 3, H, dk).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * dk ** -0.5, qkv[1], qkv[2]                      # [B, H, N, dk]
        e_hat = self.norm_e(e)
        eg = self.eg(e_hat).permute(0, 3, 1, 2)                              # [B, 2H|H, N, N]
        scores = torch.matmul(q, k.transpose(-1, -2)).clamp_(-self.clamp, self.clamp)
        h_hat = scores + eg[:, :H]                                           # Ĥ, eq. 5
        keep = mask[:, None, None, :] if attn_mask is None else attn_mask[:, None]
        # boolean mask filled with -inf (exact in every float dtype); softmax accumulates in fp32
        logits = h_hat.masked_fill(~keep, float("-inf"))
        dropped = None
        if self.random_mask_prob and self.training:
            # the official random masking: a large negative (not -inf) on the logits, so a row
            # whose every key is dropped stays finite (its gates close it, as there); padding
            # and masked-out pairs stay -inf
            dropped = (torch.rand_like(logits, dtype=torch.float32) < self.random_mask_prob) & keep
            logits = logits.masked_fill(dropped, torch.finfo(logits.dtype).min)
        attn = torch.softmax(logits, dim=-1, dtype=acc_dtype(logits.dtype)).to(v.dtype)
        if self.gated:
            gates = torch.sigmoid(eg[:, H:])
            if dropped is not None:
                gates = gates.masked_fill(dropped, 0.0)
            attn = attn * gates                                              # eq. 4
        attn_d = self._drop(attn, self.attn_dropout)
        z = torch.matmul(attn_d, v)                                          # [B, H, N, dk]
        if self.scale_degree:
            scale = torch.log1p((gates * keep).sum(-1, keepdim=True))       # [B, H, N, 1]
            if num_virtual:
                scale = torch.cat([torch.ones_like(scale[:, :, :num_virtual]),
                                   scale[:, :, num_virtual:]], dim=2)
            z = z * scale
        z = z.transpose(1, 2).reshape(B, N, H * dk)
        h = h + self._drop(self.out_h(z), self.dropout)                      # eq. 6
        h = h + self._drop(self.ffn_h(self.ffn_norm_h(h)), self.dropout)

        # --- edge channels (eq. 7) -----------------------------------------------------
        if self.edge_output:
            e = e + self.out_e(h_hat.permute(0, 2, 3, 1))
            e = e + self.ffn_e(self.ffn_norm_e(e))
        return EGTDenseOutput(h, e, attn if return_attention_weights else None)

    def extra_repr(self) -> str:
        return (f"hidden_dim={self.hidden_dim}, edge_dim={self.edge_dim}, "
                f"num_heads={self.num_heads}, edge_update={self.edge_update}, "
                f"gated={self.gated}, clamp={self.clamp}, scale_degree={self.scale_degree}"
                + (f", random_mask_prob={self.random_mask_prob}" if self.random_mask_prob else ""))


def pair_bytes(num_layers: int, edge_dim: int, num_heads: int, edge_update: bool = True,
               edge_ffn_multiplier: float = 2.0, training: bool = True) -> float:
    """Estimated bytes an EGT network keeps per (graph, i, j) pair (float32): the edge channels
    and the ``[B, H, N, N]`` attention tensors each layer saves for backward. Used for the dense
    memory budget (:func:`~graph_transformers.core.dense.check_dense_budget`)."""
    # saved per layer and pair: clipped scores, Ĥ, softmax, gates, gated weights, Ĥ for O_e, …
    per_layer = 7 * num_heads
    if edge_update:  # LN inputs and outputs (2 × 2 d_e) and the FFN's ELU output (m · d_e)
        per_layer += edge_dim * (4 + edge_ffn_multiplier)
    if not training:
        return 4.0 * (per_layer + 2 * edge_dim)  # nothing saved: a few live layers' worth
    return 4.0 * (num_layers * per_layer + 2 * edge_dim)


__all__ = ["EGTDenseOutput", "EGTLayer", "EGTOutput", "FeedForward", "pair_bytes"]
