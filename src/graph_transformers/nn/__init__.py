"""Layers: plain ``torch.nn.Module``s usable in any PyG model."""
from .attention import clamped_edge_softmax, sparse_attention
from .egt import EGTLayer
from .gt import GraphTransformerLayer
from .norm import make_norm

__all__ = ["EGTLayer", "GraphTransformerLayer", "clamped_edge_softmax", "make_norm", "sparse_attention"]
