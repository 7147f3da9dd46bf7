"""What the global-attention layers (EGT, GRPE, Graphormer) share between their two entry points.

Every such layer has

* ``forward(x, edge_index, edge_attr=None, batch=None, ...)``: PyG-native inputs (``x [num_nodes,
  d]``, the layer convention of ``docs/layers.md``), densified inside the layer by
  :class:`~graph_transformers.core.dense.DenseBatch` (exported as
  ``graph_transformers.nn.DenseBatch``); returns ``x [num_nodes, d]`` (EGT: ``(x, edge_attr)``),
  with ``return_attention_weights=True`` ``(out, (pair_index [2, Σ_b n_b²], weights [Σ_b n_b²,
  H]))`` over all node pairs of each graph (:func:`pair_attention`);
* ``forward_dense(...)``: padded tensors ``[B, N, ·]`` and pair tensors ``[B, N, N, ·]`` oriented
  dst-major, ``pairs[b, i, j]`` = the edge ``j → i`` (PyG's ``to_dense_adj`` output
  ``.transpose(1, 2)``), for models that densify once per batch and share it across layers.

A dense tensor given to ``forward`` is refused with an error that names ``forward_dense``.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from ..core.dense import DenseBatch


class LayerOutput(NamedTuple):
    """Output of ``forward_dense`` of :class:`~graph_transformers.nn.GRPELayer`,
    :class:`~graph_transformers.nn.GRPEAttention` and
    :class:`~graph_transformers.nn.GraphormerLayer`
    (their PyG-native ``forward`` returns ``x``, see :mod:`graph_transformers.nn.convention`).

    Attributes:
        x: ``[B, N, d]``.
        attention: ``[B, H, N, N]`` attention weights over the padded view (row ``i`` = query
            ``i``) when asked for (``return_attention_weights=True``), else ``None``.
    """

    x: Tensor
    attention: Tensor | None = None


def densify(layer, x: Tensor, edge_index: Tensor, batch: Tensor | None,
            dim: int) -> DenseBatch:
    """Checks PyG-native inputs of ``layer.forward`` and builds their :class:`DenseBatch`.

    Raises:
        ValueError: when ``x`` is not ``[num_nodes, dim]`` or ``edge_index`` not ``[2, num_edges]``
            integer (e.g. padded dense tensors passed positionally), naming ``forward_dense``;
            when ``batch`` is not ``[num_nodes]``.
    """
    name = type(layer).__name__
    hint = (f"{name}.forward takes PyG-native inputs (x [num_nodes, {dim}], edge_index "
            f"[2, num_edges], edge_attr, batch); for padded dense tensors [B, N, ·] call "
            f"{name}.forward_dense")
    if not isinstance(x, Tensor) or x.dim() != 2 or x.size(1) != dim:
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{hint}; got x of shape {shape}")
    if (not isinstance(edge_index, Tensor) or edge_index.dim() != 2 or edge_index.size(0) != 2
            or edge_index.is_floating_point() or edge_index.dtype == torch.bool):
        shape = (f"{tuple(edge_index.shape)} {edge_index.dtype}" if isinstance(edge_index, Tensor)
                 else type(edge_index).__name__)
        raise ValueError(f"{hint}; got edge_index {shape}")
    if batch is not None and (batch.dim() != 1 or batch.numel() != x.size(0)):
        raise ValueError(f"batch must be [num_nodes={x.size(0)}], got {tuple(batch.shape)}")
    return DenseBatch.from_edge_index(edge_index, batch, num_nodes=x.size(0))


def pair_attention(dense: DenseBatch, attention: Tensor) -> tuple[Tensor, Tensor]:
    """Attention weights over the padded view ``[B, H, N, N]`` (row ``i`` = query ``i``) → PyG's
    ``(pair_index [2, Σ_b n_b²], weights [Σ_b n_b², H])``: every pair ``j → i`` of each graph
    (``pair_index[0] = j``, ``pair_index[1] = i``, global node ids), flattened row-major per graph
    as :meth:`~graph_transformers.core.dense.DenseBatch.flatten_pairs`."""
    B, H, N, _ = attention.shape
    node = dense.to_dense(torch.arange(dense.batch.numel(), device=attention.device))  # [B, N]
    dst = dense.flatten_pairs(node.view(B, N, 1).expand(B, N, N))
    src = dense.flatten_pairs(node.view(B, 1, N).expand(B, N, N))
    return torch.stack([src, dst]), dense.flatten_pairs(attention.permute(0, 2, 3, 1))


def pairs_input(dense: DenseBatch, values: Tensor, name: str, fill=0) -> Tensor:
    """Per-graph pair values flattened row-major ``[Σ_b n_b², *]`` → ``[B, N, N, *]``, with an
    error naming the argument."""
    try:
        return dense.place_pairs(values, fill=fill)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None


__all__ = ["LayerOutput", "densify", "pair_attention", "pairs_input"]
