"""Full networks and their registry: config names → classes. Each model registers itself
(:func:`~.registry.register_model`) and its config section is derived from its constructor
(:mod:`~graph_transformers.models.registry`; ``docs/adding_a_model.md``)."""
from __future__ import annotations

from torch import nn

from .egt import EGT, ModelOutput
from .gps import GPS
from .grit import GRIT
from .gt import GraphTransformer
from .graphormer import Graphormer
from .grpe import GRPE
from .mpnn import BASELINES, GAT, GCN, GIN, GINE, MPNN, PNA, GatedGCN  # noqa: F401 (BASELINES)
from .registry import MODELS, model_config, register_model


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


__all__ = ["EGT", "GAT", "GCN", "GIN", "GINE", "GPS", "GRIT", "GRPE", "Graphormer", "GatedGCN",
           "GraphTransformer", "MODELS", "MPNN", "ModelOutput", "PNA", "build_model",
           "count_parameters", "model_config", "register_model"]
