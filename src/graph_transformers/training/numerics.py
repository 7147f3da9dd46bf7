"""Finding the first layer that produces a non-finite value (issue 26).

:func:`watch_nonfinite` puts a forward hook on every sub-module of a model; the first module
whose output holds a NaN or an infinity raises a ``FloatingPointError`` naming it (its path in
the model and its class). Hooks of inner modules run before those of the modules that contain
them, so the module named is the innermost, earliest one. Each check reads a value back from the
device, so training runs install the hooks only in debug mode (``GRAPH_TRANSFORMERS_DEBUG=1``);
from Python, call it on any model::

    >>> import torch
    >>> from graph_transformers.training.numerics import watch_nonfinite
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LogSigmoid())
    >>> handles = watch_nonfinite(model)
    >>> _ = model(torch.ones(1, 2))                   # finite: nothing happens
    >>> for h in handles: h.remove()
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle


def _tensors(value: Any):
    """The tensors in a module's output (a tensor, a tuple / NamedTuple, a dict, a dataclass)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _tensors(getattr(value, f.name))


def watch_nonfinite(model: nn.Module) -> list[RemovableHandle]:
    """Hooks every sub-module of ``model`` (itself included) so that the first output holding a
    NaN or an infinity raises.

    Returns:
        The hook handles (``handle.remove()`` takes them off).

    Raises:
        FloatingPointError: in the forward pass, naming the module (e.g.
            ``layers.1.ffn_h.lin1 (Linear)``) and how many values of which output tensor are
            non-finite.
    """
    def check(name: str):
        def hook(module: nn.Module, inputs, output) -> None:
            for i, t in enumerate(_tensors(output)):
                if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                    bad = int((~torch.isfinite(t)).sum())
                    where = name or "the model"
                    raise FloatingPointError(
                        f"first non-finite value produced by {where} ({type(module).__name__}): "
                        f"{bad} of {t.numel()} values of its output tensor {i} "
                        f"{tuple(t.shape)} are NaN or infinite")
        return hook

    return [m.register_forward_hook(check(name)) for name, m in model.named_modules()]


def watch_in_debug_mode(model: nn.Module) -> None:
    """In debug mode (``GRAPH_TRANSFORMERS_DEBUG=1``), every sub-module's output is checked and
    the first non-finite one is named (:func:`watch_nonfinite`); otherwise nothing happens.

    Args:
        model: the model a run trains or loads.
    """
    from ..core.checks import is_debug_enabled
    if is_debug_enabled():
        watch_nonfinite(model)
        logging.getLogger(__name__).info(
            "debug mode: the first layer producing a non-finite value will be named")
