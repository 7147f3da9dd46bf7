"""Input encoders: node/edge feature embeddings and positional-encoding projections."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from ..data.checks import checks_enabled
from ..encodings.lappe import random_sign_flip
from ..nn.reset import reset_children


class FeatureEncoder(nn.Module):
    """Embeds node or edge features into ``hidden_dim`` (GT eq. 2).

    Categorical features (``num_types``) use ``nn.Embedding``: an int gives one table for a single
    column (``x: [num_items]`` or ``[num_items, 1]``), a sequence gives one table per column and sums
    them (``x: [num_items, num_columns]``, as OGB's atom/bond encoders). Continuous features
    (``in_dim``) use ``nn.Linear`` (``x: [num_items, in_dim]``).

    Raises:
        ValueError: when both or neither of ``num_types`` / ``in_dim`` are given, or on input whose
            shape, dtype or values do not fit (a category out of range, NaN features).
    """

    def __init__(self, hidden_dim: int, num_types: int | Sequence[int] | None = None,
                 in_dim: int | None = None, name: str = "feature") -> None:
        super().__init__()
        if (num_types is None) == (in_dim is None):
            raise ValueError(f"{name} encoder needs exactly one of num_types (categorical) or "
                             "in_dim (continuous)")
        self.name = name
        self.categorical = num_types is not None
        if self.categorical:
            sizes = [num_types] if isinstance(num_types, int) else list(num_types)
            self.num_types = sizes
            self.embeddings = nn.ModuleList(nn.Embedding(s, hidden_dim) for s in sizes)
        else:
            self.in_dim = in_dim
            self.linear = nn.Linear(in_dim, hidden_dim)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, x: Tensor) -> Tensor:
        """``x`` as described in the class docstring → ``[num_items, hidden_dim]``."""
        if self.categorical:
            x = check_features(x, self.name, num_types=self.num_types, values=checks_enabled(x))
            out = self.embeddings[0](x[:, 0])
            for c in range(1, x.size(1)):
                out = out + self.embeddings[c](x[:, c])
            return out
        x = check_features(x, self.name, in_dim=self.in_dim, values=checks_enabled(x))
        return self.linear(x.to(self.linear.weight.dtype))


def check_features(x: Tensor, name: str, num_types: int | Sequence[int] | None = None,
                   in_dim: int | None = None, values: bool = True) -> Tensor:
    """Checks node or edge features against what a :class:`FeatureEncoder` embeds: integer ids
    ``[num_items]`` or ``[num_items, len(num_types)]`` with column ``c`` in
    ``[0, num_types[c])`` (categorical), or ``[num_items]`` / ``[num_items, in_dim]`` values
    without NaN (continuous). Shapes and dtypes are always checked; ``values`` also reads the
    values (a device sync on an accelerator: pass ``checks_enabled(x)`` in forward code).

    Returns:
        ``x`` as a 2-D view ``[num_items, num_columns]``.

    Raises:
        ValueError: naming ``name`` and what does not fit.
    """
    if num_types is not None:
        sizes = [num_types] if isinstance(num_types, int) else list(num_types)
        if x.is_floating_point():
            raise ValueError(f"{name} features must be integer category ids for an "
                             f"embedding encoder, got dtype {x.dtype}")
        if x.dim() == 1:
            x = x.unsqueeze(-1)
        if x.dim() != 2 or x.size(1) != len(sizes):
            raise ValueError(f"{name} features must have shape [num_items, {len(sizes)}], got "
                             f"{tuple(x.shape)}")
        if x.numel() and values:
            lo, hi = x.min(0).values, x.max(0).values
            for c, size in enumerate(sizes):
                if lo[c] < 0 or hi[c] >= size:
                    raise ValueError(f"{name} feature column {c} has ids in "
                                     f"[{int(lo[c])}, {int(hi[c])}], outside [0, {size})")
        return x
    if x.dim() == 1:
        x = x.unsqueeze(-1)
    if x.dim() != 2 or x.size(1) != in_dim:
        raise ValueError(f"{name} features must have shape [num_items, {in_dim}], "
                         f"got {tuple(x.shape)}")
    if values and x.is_floating_point() and torch.isnan(x).any():
        raise ValueError(f"{name} features contain NaN")
    return x


class LapPEEncoder(nn.Module):
    """Projects LapPE to ``hidden_dim`` (GT eq. 3: ``C λ_i + c``), flipping eigenvector signs at
    random in training (GT §2.2).

    Args:
        pe_dim: ``k``.
        hidden_dim: output channels.
        sign_flip: ``"batch"`` (one sign per eigenvector per batch, as the official code),
            ``"graph"`` (independent per graph) or ``"none"``.

    Shapes: ``pe [num_nodes, k]``, ``batch [num_nodes]`` → ``[num_nodes, hidden_dim]``;
    ``num_graphs`` (the batch's graph count) spares reading it from ``batch`` (a device sync).
    """

    def __init__(self, pe_dim: int, hidden_dim: int, sign_flip: str = "batch") -> None:
        super().__init__()
        if sign_flip not in ("batch", "graph", "none"):
            raise ValueError(f"sign_flip must be 'batch', 'graph' or 'none', got {sign_flip!r}")
        self.pe_dim = pe_dim
        self.sign_flip = sign_flip
        self.linear = nn.Linear(pe_dim, hidden_dim)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, pe: Tensor, batch: Tensor | None = None,
                num_graphs: int | None = None) -> Tensor:
        if pe.dim() != 2 or pe.size(1) != self.pe_dim:
            raise ValueError(f"lap_pe must have shape [num_nodes, {self.pe_dim}], got "
                             f"{tuple(pe.shape)}; was the dataset processed with another k?")
        if self.training and self.sign_flip != "none":
            pe = random_sign_flip(pe, batch, per_graph=self.sign_flip == "graph",
                                  num_graphs=num_graphs)
        return self.linear(pe.to(self.linear.weight.dtype))


class RWSEEncoder(nn.Module):
    """Projects random-walk structural encodings to ``out_dim`` channels: ``BatchNorm`` of the raw
    probabilities (they span orders of magnitude), then a linear map, as GraphGPS's RWSE encoder
    (Rampášek et al. 2022, §3.1 and its ZINC config: ``raw_norm_type: BatchNorm``, linear,
    ``dim_pe = 28``).

    Args:
        pe_dim: walk length ``k``.
        out_dim: output channels.
        raw_norm: apply the BatchNorm to the raw encodings.

    Shapes: ``rwse [num_nodes, k]`` → ``[num_nodes, out_dim]``.

    Raises:
        ValueError: in ``forward`` when the encoding's width is not ``k``.
    """

    def __init__(self, pe_dim: int, out_dim: int, raw_norm: bool = True) -> None:
        super().__init__()
        self.pe_dim = pe_dim
        self.norm = nn.BatchNorm1d(pe_dim) if raw_norm else nn.Identity()
        self.linear = nn.Linear(pe_dim, out_dim)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, pe: Tensor) -> Tensor:
        if pe.dim() != 2 or pe.size(1) != self.pe_dim:
            raise ValueError(f"rwse must have shape [num_nodes, {self.pe_dim}], got "
                             f"{tuple(pe.shape)}; was the dataset processed with another walk "
                             "length?")
        return self.linear(self.norm(pe.to(self.linear.weight.dtype)))
