"""Normalization layers selectable by name."""
from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F

NORMS = ("batch", "layer", "none")


class BatchNorm(nn.BatchNorm1d):
    r"""``torch.nn.BatchNorm1d`` whose evaluation mode agrees with its training mode on channels
    that are constant over the training data.

    Training mode is ``BatchNorm1d`` itself (Ioffe & Szegedy 2015, Alg. 1): the same kernel, the
    same running-statistics update and the same state dict, so checkpoints move freely between
    the two. Evaluation mode (``y = γ (x − μ̂) / √(σ̂² + ε) + β``) departs in two ways:

    1. **Bias-corrected running statistics.** ``BatchNorm1d`` starts its running mean at 0 and
       its running variance at 1 and averages them exponentially, so for the first few hundred
       steps they lean towards those start values. Here they are corrected as Adam corrects its
       moments: with ``d = (1 − momentum)^t`` after ``t`` training batches,
       ``μ̂ = running_mean / (1 − d)`` and ``σ̂² = (running_var − d) / (1 − d)``. After
       ``t`` ≳ 200 steps ``d`` is below ``1e-9`` and both are ``BatchNorm1d``'s values.
       (``momentum=None``, the cumulative average, has no start bias and is used as is.)
    2. **Constant channels output β.** In training, a channel whose batch variance ``v`` is far
       below ``ε`` normalises to ``|x̂| ≤ √(v / (v + ε))`` ≈ 0, so the layers above learned
       from ``β`` alone. Standard evaluation divides the drift between the input and the
       running mean by ``√ε`` ≈ 316 instead, and stacked layers multiply that: a Graph
       Transformer on CSL without positional encodings (all node states identical) reported a
       validation loss of 1e16. A channel with ``σ̂² ≤ constant_var`` (default ``ε / 100``,
       where training-mode ``|x̂| ≤ 0.1``) therefore outputs ``β`` in evaluation too.

    Both are elementwise tensor operations (no host synchronisation).

    Args:
        num_features: channels ``C``.
        eps, momentum, affine, track_running_stats: as ``torch.nn.BatchNorm1d``.
        constant_var: running-variance threshold below which a channel counts as constant
            (default ``eps / 100``); ``0`` turns departure 2 off.

    Shapes:
        input ``[num_items, C]`` or ``[num_items, C, L]``; output the same.

    Raises:
        ValueError: for a negative ``constant_var``.

    Example:
        >>> import torch
        >>> from graph_transformers.nn import BatchNorm
        >>> norm = BatchNorm(4)
        >>> x = torch.ones(10, 4)               # every item identical
        >>> for _ in range(3):
        ...     _ = norm(x * 2.0)                # training: x̂ = 0, output β
        >>> _ = norm.eval()
        >>> torch.equal(norm(x), norm.bias.detach().expand(10, 4))  # β, not drift / √ε
        True
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 constant_var: float | None = None, device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype)
        constant_var = eps / 100 if constant_var is None else float(constant_var)
        if constant_var < 0:
            raise ValueError(f"constant_var must be >= 0, got {constant_var}")
        self.constant_var = constant_var

    def running_stats(self) -> tuple[Tensor, Tensor]:
        """The bias-corrected running mean and variance ``[C]`` used in evaluation mode."""
        mean, var = self.running_mean, self.running_var
        if self.momentum is None:
            return mean, var
        t = self.num_batches_tracked.to(mean.dtype)
        decay = torch.pow(torch.full_like(t, 1.0 - self.momentum), t)
        trained = t > 0  # untrained (or set by hand with t = 0): the buffers as they are
        scale = torch.where(trained, 1.0 - decay, torch.ones_like(decay))
        mean = mean / scale
        var = torch.where(trained, (var - decay) / scale, var).clamp_min(0.0)
        return mean, var

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """Normalizes ``x [num_items, C(, L)]``; ``mask [num_items]`` (bool, ``True`` = real
        row; ``None``: every row) restricts the training statistics to the real rows
        (:func:`masked_batch_norm`: the padding of a static-shape batch changes nothing)."""
        if mask is not None and (self.training or not self.track_running_stats
                                 or self.running_mean is None):
            return masked_batch_norm(self, x, mask)
        if self.training or not self.track_running_stats or self.running_mean is None:
            return super().forward(x)
        self._check_input_dim(x)
        mean, var = self.running_stats()
        out = F.batch_norm(x, mean, var, self.weight, self.bias, False, 0.0, self.eps)
        if self.constant_var > 0:
            shape = (1, -1) + (1,) * (x.dim() - 2)
            constant = (var <= self.constant_var).view(shape)
            beta = self.bias.view(shape) if self.bias is not None else out.new_zeros(())
            out = torch.where(constant, beta.to(out.dtype), out)
        return out

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, constant_var={self.constant_var:g}"


def masked_batch_norm(norm: nn.modules.batchnorm._BatchNorm, x: Tensor, mask: Tensor) -> Tensor:
    r"""Batch normalization of ``x`` with the statistics of the rows where ``mask`` is True.

    With ``w_i = mask_i`` and ``n = Σ_i w_i`` (a tensor: no host sync), per channel
    ``μ = Σ_i w_i x_i / n`` and ``σ² = Σ_i w_i (x_i − μ)² / n`` normalize every row
    (``y = γ (x − μ) / √(σ² + ε) + β``, Ioffe & Szegedy 2015, Alg. 1); in training the running
    statistics move as ``BatchNorm1d``'s with the unbiased variance ``σ² · n / (n − 1)`` (``n −
    1`` clamped at 1) and ``num_batches_tracked`` counts the batch. Masked-out rows are read
    through ``torch.where`` (a NaN there reaches no statistic). Outside training, a module that
    tracks running statistics is applied as usual (each row alone: the mask changes nothing).
    With every row real this is ``BatchNorm1d``'s training step up to rounding.

    Args:
        norm: a ``torch.nn`` batch-norm module (``BatchNorm1d`` or :class:`BatchNorm`).
        x: ``[num_items, C]`` or ``[num_items, C, L]``.
        mask: ``[num_items]`` bool, ``True`` at the rows that count.

    Returns:
        ``[num_items, C(, L)]``.

    Raises:
        ValueError: when ``mask`` is not one flag per row of ``x``.
    """
    if mask.shape != x.shape[:1]:
        raise ValueError(f"the BatchNorm mask must be [num_items={x.size(0)}], got "
                         f"{tuple(mask.shape)}")
    if not norm.training and norm.track_running_stats and norm.running_mean is not None:
        return norm(x)
    dims = [0] + list(range(2, x.dim()))
    shape = (-1,) + (1,) * (x.dim() - 1)
    keep = mask.view(shape)
    w = keep.to(x.dtype).expand_as(x)
    count = w.sum(dims)                                   # [C]: real rows (× L)
    xr = torch.where(keep, x, torch.zeros((), dtype=x.dtype, device=x.device))
    mean = xr.sum(dims) / count.clamp_min(1)
    channel = (1, -1) + (1,) * (x.dim() - 2)
    centred = torch.where(keep, x - mean.view(channel), torch.zeros((), dtype=x.dtype,
                                                                   device=x.device))
    var = centred.square().sum(dims) / count.clamp_min(1)
    out = (x - mean.view(channel)) * torch.rsqrt(var.view(channel) + norm.eps)
    if norm.affine:
        out = out * norm.weight.view(channel) + norm.bias.view(channel)
    if norm.training and norm.track_running_stats and norm.running_mean is not None:
        with torch.no_grad():
            norm.num_batches_tracked.add_(1)
            factor = (1.0 / norm.num_batches_tracked.to(x.dtype) if norm.momentum is None
                      else norm.momentum)
            unbiased = var * count / (count - 1).clamp_min(1)
            norm.running_mean.mul_(1 - factor).add_(factor * mean.to(norm.running_mean.dtype))
            norm.running_var.mul_(1 - factor).add_(factor *
                                                   unbiased.to(norm.running_var.dtype))
    return out


def apply_norm(norm: nn.Module | None, x: Tensor, mask: Tensor | None = None) -> Tensor:
    """``norm(x)``, the statistics of a batch norm restricted to ``mask``'s rows
    (:func:`masked_batch_norm`) when a mask is given; other norms (``LayerNorm``, ``Identity``:
    per row) ignore the mask; ``norm=None`` returns ``x``.

    Shapes: ``x [num_items, C]``, ``mask [num_items]`` bool or ``None`` → ``[num_items, C]``.
    """
    if norm is None:
        return x
    if mask is None or not isinstance(norm, nn.modules.batchnorm._BatchNorm):
        return norm(x)
    return masked_batch_norm(norm, x, mask)


def make_norm(kind: str, dim: int) -> nn.Module:
    """``"batch"`` → :class:`BatchNorm` ``(dim)`` (``BatchNorm1d`` in training; see the class for
    its evaluation mode), ``"layer"`` → ``LayerNorm(dim)``, ``"none"`` → ``Identity``; inputs
    ``[num_items, dim]``.

    Raises:
        ValueError: for another name.
    """
    if kind == "batch":
        return BatchNorm(dim)
    if kind == "layer":
        return nn.LayerNorm(dim)
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"unknown norm {kind!r}; expected one of {NORMS}")
