"""The gather path of :class:`~graph_transformers.nn.GRPEAttention` (the paper's "complexity
trick"; module docstring of :mod:`graph_transformers.nn.grpe`): the choice between fused and
side-by-side relations (:func:`fuse_relations`), the indices and tables a model prepares once
per batch / forward (:class:`GRPERelations`, :class:`GRPETables`), and the autograd functions that
compute the score terms without ``[B, N, N, d]`` intermediates, each in a constant number of ATen
operations whatever the number of relations and heads (:class:`GatherTerms`, :class:`QKScores`,
:func:`key_mask_bias`): on an accelerator every dispatched operation costs a fixed few
microseconds (:mod:`graph_transformers.step_profile`).

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
        key: ``(topology_attention, edge_attention, graph_encoded_value, T_ψ, T_e, fused, H)``.
        shape: ``(B, N)``.
        fused: whether the relations are fused (:func:`fuse_relations`).
        score_size: ``T_s`` (0 without score relations).
        score_index: ``[2, 1, R_s · B · N²]`` long or ``None``: flat positions in a
            ``[T_s, B · N]`` table product (row: relation type, column: node ``b · N + n``),
            query side (``(o_r + id_r(b, i, j)) · B·N + b·N + i``, index 0) and key side
            (``… + b·N + j``, index 1), in the order ``(r, b, i, j)``.
        score_terms: ``((side, index [H, B · N²]), …)``: ``score_index`` split per side and
            relation and expanded over the ``H`` heads once per batch (views), what
            :class:`GatherTerms` gathers term by term.
        value_size: ``T_v`` (0 without graph-encoded values).
        value_index: per value relation, ``[H, B · N²]`` long (expanded over the heads, a
            view): ``(o_r + id_r(b, i, j)) · B·N + b·N + i``, the bin of pair ``(i, j)`` of graph
            ``b`` in a ``[T_v, B · N]`` table of attention mass.
        mask: the ``[B, N]`` key mask the batch was prepared with (``None``: none), checked by
            identity.
        mask_bias: ``[1, B · N²]`` float32, :func:`key_mask_bias` of ``mask`` (``None``
            without one), built once per batch instead of once per layer.
    """

    key: tuple
    shape: tuple[int, int]
    fused: bool
    score_size: int
    score_index: Tensor | None
    value_size: int
    value_index: tuple[Tensor, ...]
    mask: Tensor | None = None
    mask_bias: Tensor | None = None
    score_terms: tuple[tuple[int, Tensor], ...] = ()


@dataclass(frozen=True)
class GRPETables:
    """The encodings' tables in the layout of the gather path of
    :meth:`~graph_transformers.nn.GRPEAttention.forward_dense`, built once per forward by
    :meth:`~graph_transformers.nn.GRPEAttention.prepare_tables` (the fused rows ``P_ψ + E_e``,
    the split into heads and the ``1 / √d_k`` of the score terms) and shared by every layer that
    uses the same encodings.

    Attributes:
        key: the layer's switches, ``T_ψ``, ``T_e``, whether fused, ``H`` and ``d_k``.
        encodings: the :class:`~graph_transformers.nn.GRPEEncodings` they come from (checked
            by identity).
        score: ``[2 · H, T_s, d_k]`` or ``None``: per head, the query-side tables (first ``H``)
            and the key-side tables (last ``H``), both times ``1 / √d_k``.
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


class GatherTerms(torch.autograd.Function):
    """The score terms of the table products: ``prod [2, H, X]`` (query side, key side),
    ``terms`` (``((side, index [H, L]), …)``, :attr:`GRPERelations.score_terms`) and ``extra
    [1, L]`` or ``None`` (no gradient) → ``[H, L]``, ``Σ_terms prod[side, h, index[h, l]] +
    extra[0, l]``. The same as ``gather`` then ``sum`` over sides and relations, without their
    ``[2, H, R·L]`` intermediates (one gather, twice as slow on CPU): each term is gathered and
    added in turn, and the backward scatters the gradient once per term; the indices come
    expanded over the heads from the relations (once per batch), so a term costs one gather and
    one add (and one scatter in the backward)."""

    @staticmethod
    def forward(ctx, prod: Tensor, terms: tuple, extra: Tensor | None) -> Tensor:
        ctx.terms, ctx.prod_shape = terms, prod.shape
        sides = prod.unbind(0)
        out = None
        for side, index in terms:
            term = torch.gather(sides[side], 1, index)
            out = term if out is None else out.add_(term)
        if extra is not None:
            out.add_(extra)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        grad_prod = grad.new_zeros(ctx.prod_shape)
        sides = grad_prod.unbind(0)
        for side, index in ctx.terms:
            sides[side].scatter_add_(1, index, grad)
        return grad_prod, None, None


class QKScores(torch.autograd.Function):
    """``bias + scale · q kᵀ`` per (head, graph): ``bias [H·B, N, N]`` or ``None``, ``q, k
    [H·B, N, d_k]``, ``scale`` a float → ``[H·B, N, N]``. Autograd's ``∂q = g k`` is a per-graph
    ``[N, d_k]`` product, the slow orientation of small matrix products on CPU; the backward
    here computes its transpose ``kᵀ gᵀ`` (``[d_k, N]``, like ``∂kᵀ = qᵀ g``), about twice as
    fast. The scale goes into the products (``alpha`` of ``baddbmm``), not into extra
    multiplications."""

    @staticmethod
    def forward(ctx, bias: Tensor | None, q: Tensor, k: Tensor, scale: float = 1.0) -> Tensor:
        ctx.save_for_backward(q, k)
        ctx.bias_dtype = None if bias is None else bias.dtype
        ctx.scale = scale
        kT = k.transpose(1, 2)
        if bias is None:
            return torch.baddbmm(kT.new_zeros(()), q, kT, beta=0.0, alpha=scale) \
                if scale != 1.0 else torch.bmm(q, kT)
        return torch.baddbmm(bias, q, kT, alpha=scale)

    @staticmethod
    def backward(ctx, grad: Tensor):
        q, k = ctx.saved_tensors
        g = grad.to(q.dtype)  # the same dtype unless autocast mixed them
        s = ctx.scale
        grad_q = grad_k = grad_bias = None
        # beta = 0: the first argument only gives the shape [H·B, d_k, N] (its values are
        # ignored), alpha the scale
        if ctx.needs_input_grad[1]:
            kT = k.transpose(1, 2)
            grad_q = torch.baddbmm(kT, kT, g.transpose(1, 2), beta=0.0, alpha=s).transpose(1, 2)
        if ctx.needs_input_grad[2]:
            qT = q.transpose(1, 2)
            grad_k = torch.baddbmm(qT, qT, g, beta=0.0, alpha=s).transpose(1, 2)
        if ctx.needs_input_grad[0]:
            grad_bias = grad.to(ctx.bias_dtype)
        return grad_bias, grad_q, grad_k, None


__all__ = ["FUSE_LIMIT", "GRPERelations", "GRPETables", "GatherTerms", "QKScores", "fuse_relations",
           "key_mask_bias"]
