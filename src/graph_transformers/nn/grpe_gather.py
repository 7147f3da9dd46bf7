"""The gather path of :class:`~graph_transformers.nn.GRPEAttention` (the paper's "complexity
trick"; module docstring of :mod:`graph_transformers.nn.grpe`): the choice between fused and
side-by-side relations (:func:`fuse_relations`), the indices and tables a model prepares once
per batch / forward (:class:`GRPERelations`, :class:`GRPETables`), and the autograd functions that
compute the score terms without ``[B, N, N, d]`` or ``[2, H, R · L]`` intermediates
(:class:`GatherTerms`, :class:`QKScores`, :func:`key_mask_bias`).

Source: Park et al., "GRPE: Relative Positional Encoding for Graph Transformer" (2022), eqs. 6-9
and §"Complexity".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:
    from .grpe import GRPEEncodings

#: topology and edge relations are fused only when the product of their vocabularies is at most
#: this (see :func:`fuse_relations`)
FUSE_LIMIT = 256


@dataclass(frozen=True)
class GRPERelations:
    """The relation ids of one dense batch, prepared for the gather path of
    :meth:`~graph_transformers.nn.GRPEAttention.forward_dense`: built once per batch by
    :meth:`~graph_transformers.nn.GRPEAttention.prepare_relations` and shared by every layer
    with the same switches and vocabularies (``key``), instead of being rebuilt by each layer.

    The relations are those the layer uses (see :class:`~graph_transformers.nn.GRPEAttention`):
    one fused relation (``id = ψ · T_e + e``) or up to two (topology, edge). The score
    relations (those with query / key tables) are laid side by side in one table of ``T_s``
    rows (relation ``r`` at rows ``o_r … o_r + T_r``), as are the value relations (``T_v``
    rows).

    Attributes:
        key: ``(topology_attention, edge_attention, graph_encoded_value, T_ψ, T_e, fused)``.
        shape: ``(B, N)``.
        fused: whether the relations are fused (:func:`fuse_relations`).
        score_size: ``T_s`` (0 without score relations).
        score_index: ``[2, 1, R_s · B · N²]`` long or ``None``: flat positions in a
            ``[T_s, B · N]`` table product (row: relation type, column: node ``b · N + n``),
            query side (``(o_r + id_r(b, i, j)) · B·N + b·N + i``, index 0) and key side
            (``… + b·N + j``, index 1), in the order ``(r, b, i, j)``.
        value_size: ``T_v`` (0 without graph-encoded values).
        value_index: per value relation, ``[1, B · N²]`` long:
            ``(o_r + id_r(b, i, j)) · B·N + b·N + i``, the bin of pair ``(i, j)`` of graph ``b``
            in a ``[T_v, B · N]`` table of attention mass.
    """

    key: tuple
    shape: tuple[int, int]
    fused: bool
    score_size: int
    score_index: Tensor | None
    value_size: int
    value_index: tuple[Tensor, ...]


@dataclass(frozen=True)
class GRPETables:
    """The encodings' tables in the layout of the gather path of
    :meth:`~graph_transformers.nn.GRPEAttention.forward_dense`, built once per forward by
    :meth:`~graph_transformers.nn.GRPEAttention.prepare_tables` (the fused rows ``P_ψ + E_e``,
    the split into heads and the ``1 / √d_k`` of the key side) and shared by every layer that
    uses the same encodings.

    Attributes:
        key: the layer's switches, ``T_ψ``, ``T_e``, whether fused, ``H`` and ``d_k``.
        encodings: the :class:`~graph_transformers.nn.GRPEEncodings` they come from (checked
            by identity).
        score: ``[2 · H, T_s, d_k]`` or ``None``: per head, the query-side tables (first ``H``)
            and the key-side tables times ``1 / √d_k`` (last ``H``).
        value: ``[H, d_k, T_v]`` or ``None``: per head, the value tables (transposed).
    """

    key: tuple
    encodings: GRPEEncodings
    score: Tensor | None
    value: Tensor | None


def fuse_relations(num_topology: int, num_edge: int, num_nodes: int) -> bool:
    """Whether :class:`~graph_transformers.nn.GRPEAttention` fuses the topology and edge
    relations (``T_ψ · T_e`` types, one gather per side) on a batch of ``N = num_nodes`` (padded)
    nodes instead of keeping them apart (``T_ψ + T_e`` table columns, two gathers per side):
    when ``T_ψ · T_e ≤`` :data:`FUSE_LIMIT` and the fused table's extra columns per node cost
    less than the second gather's ``N`` pairs per node, ``T_ψ · T_e - T_ψ - T_e < N``. Both give
    the same result up to float rounding. ZINC (``T_ψ = 9``, ``T_e = 7``, ``N ≤ 38``) stays
    apart: 47 extra columns.
    """
    product = num_topology * num_edge
    return product <= FUSE_LIMIT and product - num_topology - num_edge < num_nodes


def key_mask_bias(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """``mask [B, N]`` (``True`` at real nodes) → ``[1, B · N²]``: ``-inf`` at the pairs whose
    key ``j`` is padding, else 0 (added to the scores: exact in every float dtype, and its
    backward passes the gradient through, where ``masked_fill`` copies it)."""
    B, N = mask.shape
    bias = torch.zeros(B, N, N, dtype=dtype, device=mask.device)
    return bias.masked_fill_(~mask.view(B, 1, N), float("-inf")).view(1, B * N * N)


def _terms(index: Tensor, heads: int, pairs: int):
    """``(side, index [heads, pairs])`` of each term in ``index [2, 1, R · pairs]``."""
    for side in range(index.size(0)):
        for r in range(index.size(-1) // pairs):
            yield side, index[side, :, r * pairs:(r + 1) * pairs].expand(heads, pairs)


class GatherTerms(torch.autograd.Function):
    """The score terms of the table products: ``prod [2, H, X]`` (query side, key side),
    ``index [2, 1, R · L]`` (per side, ``R`` relations of ``L`` pairs each) and ``extra [1, L]``
    or ``None`` (no gradient) → ``[H, L]``, ``Σ_{s, r} prod[s, h, index[s, 0, r·L + l]] +
    extra[0, l]``. The same as ``gather`` then ``sum`` over sides and relations, without their
    ``[2, H, R·L]`` intermediates: each term is gathered and added in turn, and the backward
    scatters the gradient once per term (where autograd copies the expanded gradient of the sum
    into a ``[2, H, R·L]`` tensor first)."""

    @staticmethod
    def forward(ctx, prod: Tensor, index: Tensor, extra: Tensor | None, pairs: int) -> Tensor:
        ctx.save_for_backward(index)
        ctx.prod_shape, ctx.pairs = prod.shape, pairs
        out = None
        for side, part in _terms(index, prod.size(1), pairs):
            term = torch.gather(prod[side], 1, part)
            out = term if out is None else out.add_(term)
        if extra is not None:
            out.add_(extra)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        (index,) = ctx.saved_tensors
        grad_prod = grad.new_zeros(ctx.prod_shape)
        for side, part in _terms(index, grad.size(0), ctx.pairs):
            grad_prod[side].scatter_add_(1, part, grad)
        return grad_prod, None, None, None


class QKScores(torch.autograd.Function):
    """``bias + q kᵀ`` per (head, graph): ``bias [H·B, N, N]`` or ``None``, ``q, k [H·B, N, d_k]``
    → ``[H·B, N, N]``. Autograd's ``∂q = g k`` is a per-graph ``[N, d_k]`` product, the slow
    orientation of small matrix products on CPU; the backward here computes its transpose
    ``kᵀ gᵀ`` (``[d_k, N]``, like ``∂kᵀ = qᵀ g``), about twice as fast."""

    @staticmethod
    def forward(ctx, bias: Tensor | None, q: Tensor, k: Tensor) -> Tensor:
        ctx.save_for_backward(q, k)
        ctx.bias_dtype = None if bias is None else bias.dtype
        if bias is None:
            return torch.bmm(q, k.transpose(1, 2))
        return torch.baddbmm(bias, q, k.transpose(1, 2))

    @staticmethod
    def backward(ctx, grad: Tensor):
        q, k = ctx.saved_tensors
        g = grad.to(q.dtype)  # the same dtype unless autocast mixed them
        grad_q = grad_k = grad_bias = None
        if ctx.needs_input_grad[1]:
            grad_q = torch.bmm(k.transpose(1, 2), g.transpose(1, 2)).transpose(1, 2)
        if ctx.needs_input_grad[2]:
            grad_k = torch.bmm(q.transpose(1, 2), g).transpose(1, 2)
        if ctx.needs_input_grad[0]:
            grad_bias = grad.to(ctx.bias_dtype)
        return grad_bias, grad_q, grad_k


__all__ = ["FUSE_LIMIT", "GRPERelations", "GRPETables", "GatherTerms", "QKScores", "fuse_relations",
           "key_mask_bias"]
