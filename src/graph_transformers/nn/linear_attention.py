r"""Linear (Performer) attention: softmax attention approximated by positive random features.

Choromanski et al., "Rethinking Attention with Performers" (ICLR 2021), FAVOR+ (§2.3-2.4,
Lemma 1, eq. 7): for :math:`\omega_1, \ldots, \omega_m \sim \mathcal N(0, I_{d})` (drawn in
orthogonal blocks, §2.4),

.. math::
    \phi(x) = \frac{1}{\sqrt m}\, e^{-\lVert x\rVert^2/2}\,
              \big[e^{\omega_1^\top x}, \ldots, e^{\omega_m^\top x}\big],
    \qquad \mathbb E\big[\phi(x)^\top \phi(y)\big] = e^{x^\top y},

so with :math:`x = q/d^{1/4}`, :math:`y = k/d^{1/4}` the softmax kernel
:math:`\exp(q^\top k/\sqrt d)` is estimated without bias by positive features, and

.. math::
    \mathrm{Attn}(Q, K, V) \approx D^{-1}\, \phi(Q)\big(\phi(K)^\top V\big), \qquad
    D = \operatorname{diag}\big(\phi(Q)\, \phi(K)^\top \mathbf 1_N\big),

which costs :math:`O(N m d)` time and :math:`O(N m)` memory instead of :math:`O(N^2)`.

Numerical stabilization (as the reference code): each query row's features are divided by
:math:`e^{\max_r \omega_r^\top q}` and all keys' features of one (graph, head) by the largest
exponent over its real keys. Both factors cancel in the ratio, so the estimate is unchanged.
Padded keys get zero features, so they contribute neither to the numerator nor to :math:`D`.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .attention import QKVAttention, head_dim

#: added to the normalizer ``D`` (which is > 0 for any real key) against underflow
_DENOM_EPS = 1e-12


def orthogonal_gaussian_features(num_features: int, dim: int,
                                 generator: torch.Generator | None = None) -> Tensor:
    """Random feature matrix ``[num_features, dim]`` whose rows are Gaussian vectors made
    orthogonal within blocks of ``dim`` rows (Performer §2.4, "ORF"): each block is the Q factor of
    a Gaussian matrix, and each row is rescaled to the norm of an independent ``N(0, I_dim)``
    vector, so every row is marginally ``N(0, I_dim)``.

    Raises:
        ValueError: for ``num_features < 1`` or ``dim < 1``.
    """
    if num_features < 1 or dim < 1:
        raise ValueError(f"need num_features >= 1 and dim >= 1, got {num_features}, {dim}")
    blocks = []
    for _ in range(math.ceil(num_features / dim)):
        g = torch.randn(dim, dim, generator=generator)
        q, r = torch.linalg.qr(g)
        q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)  # a uniformly random orthogonal matrix
        blocks.append(q.T)
    w = torch.cat(blocks)[:num_features]
    norms = torch.randn(num_features, dim, generator=generator).norm(dim=1, keepdim=True)
    return w * norms


def favor_features(x: Tensor, projection: Tensor, is_query: bool,
                   key_mask: Tensor | None = None) -> Tensor:
    """Positive random features :math:`\\phi(x)` of the module docstring, stabilized.

    Args:
        x: ``[batch, heads, N, head_dim]``, already scaled by ``head_dim ** -0.25``.
        projection: ``[m, head_dim]`` random features ``ω``.
        is_query: stabilize per row (queries) or per (batch, head) over real keys (keys).
        key_mask: ``[batch, N]`` bool, True = real node (keys only); padded keys get 0.

    Returns:
        ``[batch, heads, N, m]`` non-negative features.
    """
    proj = x @ projection.T  # [B, H, N, m]
    sq = 0.5 * (x * x).sum(-1, keepdim=True)
    logits = proj - sq
    if is_query:
        stab = proj.amax(-1, keepdim=True)
    else:
        masked = proj if key_mask is None else proj.masked_fill(~key_mask[:, None, :, None],
                                                                float("-inf"))
        stab = masked.amax(dim=(-1, -2), keepdim=True)
    feats = torch.exp(logits - stab.detach()) / math.sqrt(projection.size(0))
    if key_mask is not None and not is_query:
        feats = feats * key_mask[:, None, :, None]
    return feats


def linear_attention(q: Tensor, k: Tensor, v: Tensor, projection: Tensor,
                     mask: Tensor | None = None) -> Tensor:
    """FAVOR+ attention ``D^{-1} φ(Q)(φ(K)^T V)`` (module docstring).

    Args:
        q: queries ``[batch, heads, N, head_dim]`` (unscaled; the ``1/sqrt(head_dim)`` of
            softmax attention is applied here).
        k: keys ``[batch, heads, N, head_dim]`` (unscaled, as ``q``).
        v: values ``[batch, heads, N, head_dim]``.
        projection: ``[m, head_dim]``.
        mask: ``[batch, N]`` bool, True = real node; padded keys are ignored.

    Returns:
        ``[batch, heads, N, head_dim]``.
    """
    scale = q.size(-1) ** -0.25
    qf = favor_features(q * scale, projection, is_query=True)
    kf = favor_features(k * scale, projection, is_query=False, key_mask=mask)
    kv = kf.transpose(-1, -2) @ v  # [B, H, m, dk]
    num = qf @ kv  # [B, H, N, dk]
    den = qf @ kf.sum(-2).unsqueeze(-1)  # [B, H, N, 1]
    return num / (den + _DENOM_EPS)


class PerformerAttention(QKVAttention):
    """Multi-head self-attention with FAVOR+ linear attention (module docstring), the
    "Performer" global attention of GraphGPS (Rampášek et al. 2022, Table 1 / §3.2).

    Args:
        hidden_dim: ``d``; divisible by ``num_heads``.
        num_heads: ``H``.
        num_features: ``m`` random features (default ``head_dim * ceil(log(head_dim))``, the
            Performer paper's choice ``d log d``, at least ``head_dim``).
        bias: biases of the Q/K/V and output projections.

    The random features are a buffer (saved in checkpoints, shared by all heads, as the reference
    code); :meth:`redraw_features` draws new ones.

    Shapes: ``forward(x [num_nodes, hidden_dim], edge_index=None, edge_attr=None, batch=None)``
    → ``[num_nodes, hidden_dim]`` (PyG-native, the layer convention; ``edge_index`` and
    ``edge_attr`` unused); ``forward_dense(x [batch, N, hidden_dim], mask [batch, N])`` (bool,
    True = real node) → ``[batch, N, hidden_dim]``.

    Raises:
        ValueError: for ``hidden_dim`` not divisible by ``num_heads``; in ``forward`` for shape
            mismatches.
    """

    def __init__(self, hidden_dim: int, num_heads: int, *, num_features: int | None = None,
                 bias: bool = True) -> None:
        dk = head_dim(hidden_dim, num_heads)
        if num_features is None:
            num_features = dk * max(1, math.ceil(math.log(dk)))
        if num_features < 1:
            raise ValueError(f"num_features must be >= 1, got {num_features}")
        super().__init__(hidden_dim, num_heads, bias)
        self.num_features = num_features
        self.register_buffer("projection", torch.empty(num_features, self.head_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Projections as ``nn.MultiheadAttention`` (:class:`QKVAttention`), fresh random
        features."""
        super().reset_parameters()
        self.redraw_features()

    @torch.no_grad()
    def redraw_features(self, generator: torch.Generator | None = None) -> None:
        """Draws new orthogonal random features (:func:`orthogonal_gaussian_features`)."""
        w = orthogonal_gaussian_features(self.num_features, self.head_dim, generator)
        self.projection.copy_(w.to(self.projection))

    def forward_dense(self, x: Tensor, mask: Tensor) -> Tensor:
        """Padded input; see the class docstring."""
        self._check(x, mask)
        b, n, _ = x.shape
        q, k, v = self._qkv(x)
        # the exponential features and the normalizer D in float32 (at least), autocast off:
        # bf16 features would lose most of the small terms of D
        dtype = torch.promote_types(q.dtype, torch.float32)
        with torch.autocast(x.device.type, enabled=False):
            out = linear_attention(q.to(dtype), k.to(dtype), v.to(dtype),
                                   self.projection.to(dtype), mask)
        return self.out(out.to(q.dtype).transpose(1, 2).reshape(b, n, self.hidden_dim))

    def extra_repr(self) -> str:
        return f"{self.hidden_dim}, heads={self.num_heads}, features={self.num_features}"
