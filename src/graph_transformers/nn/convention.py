"""The one layer convention of :mod:`graph_transformers.nn` (``docs/layers.md``) and the shims that
keep the call forms it replaced working for one release, with a ``FutureWarning``.

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
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from ..core import deprecation as _core

_NN_DIR = os.path.dirname(os.path.abspath(__file__))


def warn_deprecated(message: str) -> None:
    """A ``FutureWarning`` attributed to the first caller outside ``torch`` and this package's
    ``nn`` (the user's line, not the layer's)."""
    _core.warn_deprecated(message, see="docs/layers.md", skip=(_NN_DIR,))


def ffn_width(dim: int, multiplier: float) -> int:
    """The absolute FFN width of a multiplier, ``max(1, round(dim · multiplier))``: how the layers
    that took ``ffn_multiplier`` sized their FFN (the same widths, so the same parameters)."""
    return max(1, round(dim * multiplier))


def _arg(args: tuple, kwargs: dict, index: int | None, name: str):
    return args[index] if index is not None and len(args) > index else kwargs.get(name)


def renamed_multiplier(old: str, new: str, dim_index: int | None, dim_name: str
                       ) -> tuple[str, Callable[[tuple, dict], None]]:
    """A ``renamed`` entry of :func:`legacy_init`: the keyword ``old`` (an FFN multiplier of the
    width argument ``dim_name``, positional index ``dim_index``, ``None`` for keyword-only) becomes ``new`` (an absolute
    width, :func:`ffn_width`)."""
    def fix(args: tuple, kwargs: dict) -> None:
        value = kwargs.pop(old)
        if kwargs.get(new) is not None:
            raise TypeError(f"give {new} (the FFN width) or the deprecated {old}, not both")
        dim = _arg(args, kwargs, dim_index, dim_name)
        if dim is None:
            raise TypeError(f"{old} is a multiple of {dim_name}: give {dim_name} too")
        kwargs[new] = ffn_width(dim, value)
    return old, fix


def legacy_init(old_order: Sequence[str], *, new_form: str,
                is_legacy: Callable[[tuple, dict], bool] | None = None,
                resolve: Callable[[tuple, dict], tuple[tuple, dict]] | None = None,
                renamed: Sequence[tuple[str, Callable[[tuple, dict], None]]] = ()):
    """Decorator of a layer's ``__init__`` that accepts the positional order it replaced:
    :func:`graph_transformers.core.deprecation.legacy_init` (same arguments), its warnings
    pointing at ``docs/layers.md`` and at the caller's line outside ``nn``."""
    return _core.legacy_init(old_order, new_form=new_form, see="docs/layers.md",
                             skip=(_NN_DIR,), is_legacy=is_legacy, resolve=resolve,
                             renamed=renamed)


def is_node_batch(t, num_nodes: int) -> bool:
    """Whether ``t`` looks like a PyG ``batch`` vector: an integer ``[num_nodes]`` tensor (edge
    features are floating point, or integer types ``[num_edges]`` / ``[num_edges, k]``)."""
    return (isinstance(t, Tensor) and t.dim() == 1 and t.numel() == num_nodes
            and not t.is_floating_point() and t.dtype != torch.bool)


def with_attention(out, index: Tensor, weights: Tensor, return_attention_weights: bool):
    """``out`` or, asked for the weights, PyG's ``(out, (index, weights))``."""
    return (out, (index, weights)) if return_attention_weights else out


__all__ = ["ffn_width", "is_node_batch", "legacy_init", "renamed_multiplier", "warn_deprecated",
           "with_attention"]
