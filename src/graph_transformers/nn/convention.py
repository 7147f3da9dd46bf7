"""The one layer convention of :mod:`graph_transformers.nn` (``docs/layers.md``) and the small
helpers the layers share to follow it.

* Constructors: ``Layer(hidden_dim, num_heads, *, edge_dim=None, ffn_dim=None, dropout=0.0,
  ...)``: sizes first, every option by keyword. The feed-forward width is always the absolute
  ``ffn_dim`` (``None``: the paper's default, ``2 · hidden_dim`` or ``hidden_dim``); message-passing
  blocks take their convolution second, ``MPNNBlock(hidden_dim, kind)``, as PyG's
  ``GPSConv(channels, conv, heads)``, which :class:`~graph_transformers.nn.GPSLayer` also accepts.
* ``forward(x, edge_index, edge_attr=None, batch=None, *, ...)``: ``edge_attr`` holds edge
  features (GRPE: integer edge types); attention biases go under their own keywords
  (``edge_bias``, ``pair_bias``).
* Returns: ``x``; a layer that updates edge features returns ``(x, edge_attr)`` (a named tuple for
  GT, EGT and GRIT, with ``.x`` and ``.edge_attr``); ``return_attention_weights=True`` returns
  ``(out, (index, weights))`` as PyG's attention convolutions, ``index [2, P]`` the attended pairs
  ``j → i`` and ``weights [P, num_heads]``.

Release 0.2.0 removed the call orders of 0.1 and their deprecation warnings: an old
positional order or a renamed keyword (``ffn_multiplier``) is a ``TypeError``.
"""
from __future__ import annotations

import torch
from torch import Tensor


def ffn_width(dim: int, multiplier: float) -> int:
    """The absolute FFN width of a multiplier, ``max(1, round(dim · multiplier))``: how the models
    that take ``ffn_multiplier`` in their config size their layers' ``ffn_dim`` (the widths the
    layers computed from a multiplier before 0.2.0, so the same parameters)."""
    return max(1, round(dim * multiplier))


def is_node_batch(t, num_nodes: int) -> bool:
    """Whether ``t`` looks like a PyG ``batch`` vector: an integer ``[num_nodes]`` tensor (edge
    features are floating point, or integer types ``[num_edges]`` / ``[num_edges, k]``)."""
    return (isinstance(t, Tensor) and t.dim() == 1 and t.numel() == num_nodes
            and not t.is_floating_point() and t.dtype != torch.bool)


def with_attention(out, index: Tensor, weights: Tensor, return_attention_weights: bool):
    """``out`` or, asked for the weights, PyG's ``(out, (index, weights))``."""
    return (out, (index, weights)) if return_attention_weights else out


__all__ = ["ffn_width", "is_node_batch", "with_attention"]
