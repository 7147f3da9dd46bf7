"""Layers: plain ``torch.nn.Module``s usable in any PyG model."""
from .attention import FullAttention, clamped_edge_softmax, sparse_attention
from .gps import GPSLayer
from .gt import GraphTransformerLayer
from .linear_attention import PerformerAttention, linear_attention
from .mpnn import GatedGCNConv, LocalMPNN, MPNNBlock
from .norm import make_norm

__all__ = ["FullAttention", "GPSLayer", "GatedGCNConv", "GraphTransformerLayer", "LocalMPNN",
           "MPNNBlock", "PerformerAttention", "clamped_edge_softmax", "linear_attention",
           "make_norm", "sparse_attention"]
