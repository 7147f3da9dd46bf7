"""Input encoders: node/edge feature embeddings and positional-encoding projections."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ..core.checks import checks_enabled
from ..encodings.registry import node_encoding
from ..nn.norm import apply_norm
from ..nn.reset import reset_children


class FeatureEncoder(nn.Module):
    """Embeds node or edge features into ``hidden_dim`` (GT eq. 2).

    Categorical features (``num_types``) use ``nn.Embedding``: an int gives one table for a single
    column (``x: [num_items]`` or ``[num_items, 1]``), a sequence gives one table per column and
    sums them (``x: [num_items, num_columns]``, as OGB's atom/bond encoders). Continuous features
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


def feature_encoders(hidden_dim: int, num_node_types: int | Sequence[int] | None,
                     num_node_features: int | None, num_edge_types: int | Sequence[int] | None,
                     num_edge_features: int | None, use_edge_features: bool
                     ) -> tuple[FeatureEncoder, FeatureEncoder | None]:
    """A model's node encoder and, with ``use_edge_features``, its edge encoder (else ``None``),
    both to ``hidden_dim`` and created in this order (GT eq. 2; the MPNN baselines)."""
    node = FeatureEncoder(hidden_dim, num_node_types, num_node_features, name="node")
    edge = (FeatureEncoder(hidden_dim, num_edge_types, num_edge_features, name="edge")
            if use_edge_features else None)
    return node, edge


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


def encoding_input(data: Any, pe: str) -> Tensor:
    """The batch's node encoding for ``model.pe = pe``: the ``Data`` attribute the encoding
    registry names (:func:`~graph_transformers.encodings.registry.node_encoding`).

    Raises:
        ValueError: for an unknown ``pe``, or a batch without that attribute (naming the
            ``encodings`` key to add).
    """
    attr = node_encoding(pe).name
    value = getattr(data, attr, None)
    if value is None:
        raise ValueError(f"the model uses pe={pe!r} but the batch has no {attr}: add "
                         f"encodings.{attr} to the config")
    return value


def check_sign_flip(sign_flip: str) -> None:
    """Raises ``ValueError`` unless ``sign_flip`` is ``"batch"``, ``"graph"``, ``"node"`` or
    ``"none"``."""
    if sign_flip not in ("batch", "graph", "node", "none"):
        raise ValueError(f"sign_flip must be 'batch', 'graph', 'node' or 'none', got "
                         f"{sign_flip!r}")


def flip_signs(pe_values: Tensor, pe: str, sign_flip: str, batch: Tensor | None,
               num_graphs: int | None) -> Tensor:
    """The encoding's training-time random sign flip (the registry's ``sign_flip``: LapPE's
    eigenvectors, GT §2.2; SVD's singular-vector pairs, EGT §3.2): one sign per column and batch
    (``"batch"``) or per graph (``"graph"``); or one sign per node over its whole encoding
    vector (``"node"``: ``pe_values[i] · s_i``, ``s_i = ±1``), as the code behind the EGT paper
    had it (``shamim-hussain/egt`` at ``5a1efb1``, ``RandomNeg``; the per-graph flip of each
    singular-vector pair came in ``8aa625f``); unchanged for ``"none"`` or an encoding without
    flips. ``num_graphs`` spares reading it from ``batch`` (a device sync)."""
    flip = node_encoding(pe).flip()
    if flip is None or sign_flip == "none":
        return pe_values
    if sign_flip == "node":
        signs = torch.randint(0, 2, (pe_values.size(0), 1), device=pe_values.device) * 2 - 1
        return pe_values * signs.to(pe_values)
    return flip(pe_values, batch, per_graph=sign_flip == "graph", num_graphs=num_graphs)


class LinearPEEncoder(nn.Module):
    """Projects a node encoding ``[num_nodes, pe_dim]`` to ``out_dim`` channels with a
    ``Linear`` (GT eq. 3: ``C λ_i + c``), after the encoding's random sign flip in training
    (:func:`flip_signs`: GT §2.2 for LapPE) and, for an encoding with ``raw_norm`` (RWSE), a
    ``BatchNorm`` of the raw values, as GraphGPS's RWSE encoder (Rampášek et al. 2022, §3.1 and
    its ZINC config: ``raw_norm_type: BatchNorm``, linear; return probabilities span orders of
    magnitude).

    Args:
        pe_dim: the encoding's width (LapPE ``k``, RWSE walk length).
        out_dim: output channels.
        sign_flip: ``"batch"`` (one sign per column per batch, as the official GT code),
            ``"graph"`` (independent per graph) or ``"none"``; encodings without flips ignore it.
        pe: the ``model.pe`` name of the encoding (``"lap"``: LapPE).
        raw_norm: the BatchNorm of the raw values; ``None``: as the encoding registry says.

    Shapes: ``pe [num_nodes, pe_dim]``, ``batch [num_nodes]`` → ``[num_nodes, out_dim]``;
    ``num_graphs`` (the batch's graph count) spares reading it from ``batch`` (a device sync).

    Raises:
        ValueError: for an unknown ``sign_flip`` or ``pe``; in ``forward`` when the encoding's
            width is not ``pe_dim``.
    """

    def __init__(self, pe_dim: int, out_dim: int, sign_flip: str = "batch", pe: str = "lap",
                 raw_norm: bool | None = None) -> None:
        super().__init__()
        check_sign_flip(sign_flip)
        encoding = node_encoding(pe)
        encoding.flip()  # imported now: forward reads it from the cache (torch.compile)
        self.attr = encoding.name
        self.pe, self.pe_dim, self.sign_flip = pe, pe_dim, sign_flip
        raw_norm = encoding.raw_norm if raw_norm is None else raw_norm
        self.norm = nn.BatchNorm1d(pe_dim) if raw_norm else nn.Identity()
        self.linear = nn.Linear(pe_dim, out_dim)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, pe: Tensor, batch: Tensor | None = None,
                num_graphs: int | None = None, real_node_mask: Tensor | None = None) -> Tensor:
        """``real_node_mask [num_nodes]`` (a static-shape batch's real nodes): the raw
        BatchNorm's statistics over them only (:func:`~graph_transformers.nn.norm.apply_norm`)."""
        check_encoding_shape(pe, self.attr, self.pe_dim)
        if self.training:
            pe = flip_signs(pe, self.pe, self.sign_flip, batch, num_graphs)
        return self.linear(apply_norm(self.norm, pe.to(self.linear.weight.dtype),
                                      real_node_mask))


#: the name GT's docs and benchmarks use for the LapPE projection
LapPEEncoder = LinearPEEncoder


def check_encoding_shape(pe: Tensor, attr: str, pe_dim: int) -> None:
    """Raises ``ValueError`` unless the encoding ``attr`` is ``[num_nodes, pe_dim]``."""
    if pe.dim() != 2 or pe.size(1) != pe_dim:
        raise ValueError(f"{attr} must have shape [num_nodes, {pe_dim}], got "
                         f"{tuple(pe.shape)}; was the dataset processed with other "
                         f"encodings.{attr} options?")


class PEEmbedding(nn.Embedding):
    """Embeds a categorical node encoding (integer ids ``[num_nodes]``, e.g. WL role ids,
    Graph-BERT §3.1) into ``out_dim`` channels.

    Shapes: ``ids [num_nodes]`` → ``[num_nodes, out_dim]`` (``batch`` and ``num_graphs`` are
    accepted, as by every encoder :func:`make_pe_encoder` builds, and unused).

    Raises:
        ValueError: in ``forward``, for an id beyond the table (checked where value checks run,
            :func:`~graph_transformers.core.checks.checks_enabled`).
    """

    def forward(self, ids: Tensor, batch: Tensor | None = None,
                num_graphs: int | None = None) -> Tensor:
        if ids.numel() and checks_enabled(ids) and int(ids.max()) >= self.num_embeddings:
            raise ValueError(f"an encoding id {int(ids.max())} exceeds the embedding size "
                             f"{self.num_embeddings}: raise model.pe_dim (configs: "
                             "encodings.wl_pe.num_roles)")
        return super().forward(ids)


def pe_forward(encoder: nn.Module, values: Tensor, batch: Tensor | None,
               num_graphs: int | None, real_node_mask: Tensor | None = None) -> Tensor:
    """``encoder(values, batch, num_graphs)`` for an encoder of :func:`make_pe_encoder`, with
    the static-shape batch's ``real_node_mask`` passed to a :class:`LinearPEEncoder` (its raw
    BatchNorm) when given; ``[num_nodes, out_dim]``."""
    if real_node_mask is not None and isinstance(encoder, LinearPEEncoder):
        return encoder(values, batch, num_graphs, real_node_mask=real_node_mask)
    return encoder(values, batch, num_graphs)


def make_pe_encoder(pe: str, pe_dim: int, out_dim: int, sign_flip: str = "batch") -> nn.Module:
    """The input encoder of the node encoding ``model.pe = pe``, as the registry describes it:
    a :class:`PEEmbedding` for a categorical encoding, else a :class:`LinearPEEncoder` (with the
    encoding's sign flips, or GraphGPS's BatchNorm of the raw values for RWSE). Every one is called
    as ``encoder(values, batch, num_graphs)`` → ``[num_nodes, out_dim]``.

    Raises:
        ValueError: for an unknown ``pe`` or ``sign_flip``.
    """
    if node_encoding(pe).categorical:
        return PEEmbedding(pe_dim, out_dim)
    return LinearPEEncoder(pe_dim, out_dim, sign_flip, pe)
