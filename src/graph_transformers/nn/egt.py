"""The Edge-augmented Graph Transformer layer (Hussain, Zaki & Subramanian, EGT, KDD 2022)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import acc_dtype


class FeedForward(nn.Module):
    """Pointwise two-layer MLP with ELU, ``d → m·d → d`` (EGT §3.1, the FFN sublayer)."""

    def __init__(self, dim: int, multiplier: float = 2.0, dropout: float = 0.0) -> None:
        super().__init__()
        hidden = max(1, round(dim * multiplier))
        self.lin1 = nn.Linear(dim, hidden)
        self.lin2 = nn.Linear(hidden, dim)
        self.dropout = dropout

    def reset_parameters(self) -> None:
        self.lin1.reset_parameters()
        self.lin2.reset_parameters()

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

    Per head :math:`k` (pre-LayerNorm: :math:`\hat h = \mathrm{LN}(h)`, :math:`\hat e = \mathrm{LN}(e)`):

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
        node_dim: ``d_h``.
        edge_dim: ``d_e``.
        num_heads: ``H`` (``d_h`` must be divisible by it; ``d_k = d_h / H``).
        edge_update: keep residual edge channels (``False``: EGT-Simple).
        gated: sigmoid gates ``σ(G_e)`` on the attention weights.
        node_ffn_multiplier / edge_ffn_multiplier: FFN widths as multiples of ``d_h`` / ``d_e``.
        attn_dropout: dropout on the attention weights (node channels only, as the paper's
            large-scale setting).
        dropout: dropout on the outputs of the node channels' two sublayers (as the official
            code: none inside the FFN, none in the edge channels).
        clip: ``c`` of ``clip(Â, -c, c)`` (paper: 5).
        edge_output: compute the edge-channel update; a network's last layer skips it when
            nothing reads its output edge channels (``e`` is then returned unchanged).
        scale_degree: multiply each head's aggregate by ``log(1 + Σ_j σ(G_ij))`` (the "dynamic
            centrality scalers" of the KDD version and the official code; virtual-node rows keep
            scale 1).

    Shapes:
        ``h [B, N, d_h]``, ``e [B, N, N, d_e]`` (``e[b, i, j]``: the pair whose row ``i`` is the
        query), ``mask [B, N]`` bool (real nodes), ``attn_mask [B, N, N]`` bool or ``None`` (pairs
        that may attend; must include the diagonal) → ``(h [B, N, d_h], e [B, N, N, d_e])``.
        With ``return_attention=True`` also ``Ã [B, H, N, N]``.
    """

    def __init__(self, node_dim: int, edge_dim: int, num_heads: int, edge_update: bool = True,
                 gated: bool = True, node_ffn_multiplier: float = 2.0,
                 edge_ffn_multiplier: float = 2.0, attn_dropout: float = 0.0,
                 dropout: float = 0.0, clip: float = 5.0, edge_output: bool = True,
                 scale_degree: bool = False) -> None:
        super().__init__()
        if node_dim % num_heads:
            raise ValueError(f"node_dim={node_dim} must be divisible by num_heads={num_heads}")
        if scale_degree and not gated:
            raise ValueError("scale_degree sums the sigmoid gates: it needs gated=True")
        self.node_dim, self.edge_dim, self.num_heads = node_dim, edge_dim, num_heads
        self.head_dim = node_dim // num_heads
        self.edge_update, self.gated, self.clip = edge_update, gated, clip
        self.edge_output = edge_update and edge_output
        self.scale_degree = scale_degree
        self.attn_dropout, self.dropout = attn_dropout, dropout

        self.norm_h = nn.LayerNorm(node_dim)
        self.qkv = nn.Linear(node_dim, 3 * node_dim)
        # E (bias) and G (gate) of every head from the edge channels, fused: [d_e] -> [2H] / [H]
        self.eg = nn.Linear(edge_dim, (2 if gated else 1) * num_heads)
        self.out_h = nn.Linear(node_dim, node_dim)
        self.ffn_norm_h = nn.LayerNorm(node_dim)
        self.ffn_h = FeedForward(node_dim, node_ffn_multiplier)
        self.norm_e = nn.LayerNorm(edge_dim)
        if self.edge_output:
            self.out_e = nn.Linear(num_heads, edge_dim)
            self.ffn_norm_e = nn.LayerNorm(edge_dim)
            self.ffn_e = FeedForward(edge_dim, edge_ffn_multiplier)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for m in self.children():
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()

    def _drop(self, x: Tensor, p: float) -> Tensor:
        return F.dropout(x, p, True) if p and self.training else x

    def forward(self, h: Tensor, e: Tensor, mask: Tensor, attn_mask: Tensor | None = None,
                return_attention: bool = False, num_virtual: int = 0):
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
        scores = torch.matmul(q, k.transpose(-1, -2)).clamp_(-self.clip, self.clip)
        h_hat = scores + eg[:, :H]                                           # Ĥ, eq. 5
        keep = mask[:, None, None, :] if attn_mask is None else attn_mask[:, None]
        # boolean mask filled with -inf (exact in every float dtype); softmax accumulates in fp32
        logits = h_hat.masked_fill(~keep, float("-inf"))
        attn = torch.softmax(logits, dim=-1, dtype=acc_dtype(logits.dtype)).to(v.dtype)
        if self.gated:
            gates = torch.sigmoid(eg[:, H:])
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
        return (h, e, attn) if return_attention else (h, e)

    def extra_repr(self) -> str:
        return (f"node_dim={self.node_dim}, edge_dim={self.edge_dim}, "
                f"num_heads={self.num_heads}, edge_update={self.edge_update}, "
                f"gated={self.gated}, clip={self.clip}, scale_degree={self.scale_degree}")


def pair_bytes(num_layers: int, edge_dim: int, num_heads: int, edge_update: bool = True,
               edge_ffn_multiplier: float = 2.0, training: bool = True) -> float:
    """Estimated bytes an EGT network keeps per (graph, i, j) pair (float32): the edge channels
    and the ``[B, H, N, N]`` attention tensors each layer saves for backward. Used for the dense
    memory budget (:func:`~graph_transformers.data.dense.check_dense_budget`)."""
    # saved per layer and pair: clipped scores, Ĥ, softmax, gates, gated weights, Ĥ for O_e, …
    per_layer = 7 * num_heads
    if edge_update:  # LN inputs and outputs (2 × 2 d_e) and the FFN's ELU output (m · d_e)
        per_layer += edge_dim * (4 + edge_ffn_multiplier)
    if not training:
        return 4.0 * (per_layer + 2 * edge_dim)  # nothing saved: a few live layers' worth
    return 4.0 * (num_layers * per_layer + 2 * edge_dim)


__all__ = ["EGTLayer", "FeedForward", "pair_bytes"]
