"""One ``reset_parameters`` for the layers and one for the models.

Layers reset each direct child with PyG's :func:`torch_geometric.nn.inits.reset` (a child with
``reset_parameters`` resets itself, one without is searched recursively): every parameter is
drawn once. Models reset *every* descendant that has ``reset_parameters``, in ``modules()``
order, so a layer's sub-modules are drawn again after the layer reset them: wasteful, but it is
the random-number stream the committed results were initialised with (models stay
bit-identical per seed, tests/models/test_init_fingerprint.py), so it stays.
"""
from __future__ import annotations

from torch import nn
from torch_geometric.nn.inits import reset


def reset_children(module: nn.Module) -> None:
    """PyG's ``reset`` on each direct child of ``module`` (each parameter drawn once)."""
    for child in module.children():
        reset(child)


def reset_descendants(module: nn.Module) -> None:
    """``reset_parameters()`` of every descendant of ``module`` that has one, in ``modules()``
    order, nested ones again after their parent (the models' stream; module docstring)."""
    for m in module.modules():
        if m is not module and hasattr(m, "reset_parameters"):
            m.reset_parameters()


__all__ = ["reset_children", "reset_descendants"]
