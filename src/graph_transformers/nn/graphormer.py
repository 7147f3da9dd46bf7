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

from .attention import acc_dtype, sdpa
from .grpe import ByteDropout


class GraphormerLayer(nn.Module):
    """Pre-LN multi-head self-attention with an additive bias, then a GELU FFN.

    Args:
        hidden_dim: ``d``.
        num_heads: ``H`` (``d`` divisible by ``H``).
        ffn_dim: FFN width (default ``d``).
        dropout: on the attention and FFN outputs.
        attention_dropout: on the attention weights.

    Forward:
        x: ``[B, N, d]``.
        bias: ``[B, H, N, N]`` float added to the scaled scores; ``-inf`` masks a key (padding).
            Every row needs at least one finite entry.
        need_weights: also return the attention weights ``[B, H, N, N]``.

    Returns:
        ``[B, N, d]`` (and the weights).

    Raises:
        ValueError: on mismatched shapes.
    """

    def __init__(self, hidden_dim: int, num_heads: int, ffn_dim: int | None = None,
                 dropout: float = 0.0, attention_dropout: float = 0.0) -> None:
        super().__init__()
        if hidden_dim % num_heads:
            raise ValueError(f"hidden_dim={hidden_dim} must be divisible by num_heads={num_heads}")
        if not 0.0 <= attention_dropout < 1.0:
            raise ValueError(f"attention_dropout must be in [0, 1), got {attention_dropout}")
        ffn_dim = ffn_dim or hidden_dim
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.attn_norm = nn.LayerNorm(hidden_dim)
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)
        self.out = nn.Linear(hidden_dim, hidden_dim)
        self.ffn_norm = nn.LayerNorm(hidden_dim)
        self.ffn = nn.Sequential(nn.Linear(hidden_dim, ffn_dim), nn.GELU(),
                                 nn.Linear(ffn_dim, hidden_dim))
        self.dropout = ByteDropout(dropout)

    def reset_parameters(self) -> None:
        for m in (self.attn_norm, self.qkv, self.out, self.ffn_norm, self.ffn[0], self.ffn[2]):
            m.reset_parameters()

    def forward(self, x: Tensor, bias: Tensor, need_weights: bool = False):
        if x.dim() != 3 or x.size(-1) != self.hidden_dim:
            raise ValueError(f"x must be [B, N, {self.hidden_dim}], got {tuple(x.shape)}")
        B, N, _ = x.shape
        H = self.num_heads
        if bias.shape != (B, H, N, N):
            raise ValueError(f"bias must be [B, H, N, N] = {(B, H, N, N)}, got "
                             f"{tuple(bias.shape)}")
        qkv = self.qkv(self.attn_norm(x)).view(B, N, 3, H, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [B, H, N, dk]
        p = self.attention_dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = q @ k.transpose(-1, -2) * q.size(-1) ** -0.5 + bias
            weights = torch.softmax(scores, -1, dtype=acc_dtype(scores.dtype)).to(v.dtype)
            z = F.dropout(weights, p, self.training) @ v
        else:
            # a bias already in q's dtype and aligned (Graphormer: aligned_bias) is read in place by
            # CUDA's memory-efficient kernel, and sdpa pads d_k to a multiple of 8 on CUDA so
            # that kernel is reachable for any head size; see docs/gpu.md
            z = sdpa(q, k, v, attn_mask=bias.to(q.dtype), dropout_p=p)
        y = self.out(z.transpose(1, 2).reshape(B, N, self.hidden_dim))
        x = x + self.dropout(y)
        x = x + self.dropout(self.ffn(self.ffn_norm(x)))
        return (x, weights) if need_weights else x
