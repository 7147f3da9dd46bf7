"""What the pre-LayerNorm blocks of GRPE and Graphormer share (as their official code): the
residual-and-FFN part of the block (:class:`PreNormBlock`) and the dropout both use on their
outputs and attention weights, whose keep-mask is drawn from random bytes
(:func:`attention_dropout_mask`, :class:`ByteDropout`; several times faster on CPU than
``bernoulli_``).

Sources: Park et al., "GRPE: Relative Positional Encoding for Graph Transformer" (2022), and Ying
et al., "Do Transformers Really Perform Bad for Graph Representation?" (NeurIPS 2021): both blocks
are ``x = x + Dropout(Attn(LN(x)))``, ``x = x + Dropout(FFN(LN(x)))``.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .reset import reset_children


def attention_dropout_mask(shape: torch.Size, p: float, device=None) -> tuple[Tensor, float]:
    """Keep-mask of inverted dropout drawn from random bytes: ``(keep [shape] bool, scale)``.

    ``p`` is rounded to a multiple of 1/256 (``p' = round(256 p) / 256``, ``scale = 1 / (1 - p')``).
    Drawing 4 random bytes per int32 is several times faster on CPU than ``bernoulli_``, which
    dominates a step otherwise (one draw per attention weight). While ``torch.compile`` traces
    (which does not support ``Tensor.random_``: a graph break), the mask is ``rand >= p'`` instead,
    the same keep probability ``1 - p'`` (a compiled kernel draws it in place).
    """
    n = 1
    for s in shape:
        n *= s
    threshold = int(round(p * 256))
    if torch.compiler.is_compiling():
        return torch.rand(shape, device=device) >= threshold / 256, 256.0 / (256 - threshold)
    # int32 words uniform over all 2^32 values: their 4 bytes are uniform and independent, read
    # as one flat byte view (no strided copy: fewer dispatched operations, and faster on CPU
    # than 3 bytes of a 31-bit word)
    words = torch.empty((n + 3) // 4, dtype=torch.int32, device=device).random_(-2 ** 31, 2 ** 31)
    keep = words.view(torch.uint8)[:n].view(shape) >= threshold
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

    def residual(self, x: Tensor, y: Tensor) -> Tensor:
        """``x + self(y)``, in one ``addcmul`` (``x + scale · y · keep``) in training: fewer
        dispatched operations than the product and the sum. Shapes: ``x``, ``y`` alike."""
        if not self.training or self.p == 0:
            return x + y
        keep, scale = attention_dropout_mask(y.shape, self.p, y.device)
        return torch.addcmul(x, y, keep.to(y.dtype), value=scale)

    def extra_repr(self) -> str:
        return f"p={self.p}"



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
        """``x [B, N, d]`` (or ``[B·N, d]`` rows) and the attention output ``y`` → the block's
        output."""
        x = self.dropout.residual(x, y)
        return self.dropout.residual(x, self.ffn(self.ffn_norm(x)))


__all__ = ["ByteDropout", "PreNormBlock", "attention_dropout_mask"]
