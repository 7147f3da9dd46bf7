"""Layers: plain ``torch.nn.Module``s usable in any PyG model."""
from .attention import clamped_edge_softmax, sparse_attention
from .egt import EGTLayer
from .gt import GraphTransformerLayer
from .graphormer import GraphormerLayer
from .grpe import GRPEAttention, GRPEEncodings, GRPELayer
from .norm import make_norm

__all__ = ["EGTLayer", "GRPEAttention", "GRPEEncodings", "GRPELayer", "GraphormerLayer",
           "GraphTransformerLayer", "clamped_edge_softmax", "make_norm", "sparse_attention"]
