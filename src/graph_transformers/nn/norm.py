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

    def forward(self, x: Tensor) -> Tensor:
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
