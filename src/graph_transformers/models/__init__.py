"""Full networks and their registry: config names → classes."""
from __future__ import annotations

from torch import nn

from .egt import EGT, ModelOutput
from .gt import GraphTransformer
from .graphormer import Graphormer
from .grpe import GRPE

MODELS: dict[str, type[nn.Module]] = {"gt": GraphTransformer, "egt": EGT, "grpe": GRPE,
                                      "graphormer": Graphormer}


def build_model(name: str, **kwargs) -> nn.Module:
    """Instantiates a registered model by its config name.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).
    """
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known models: {sorted(MODELS)}")
    return MODELS[name](**kwargs)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = ["EGT", "GRPE", "Graphormer", "MODELS", "GraphTransformer", "ModelOutput", "build_model",
           "count_parameters"]
