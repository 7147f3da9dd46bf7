"""Layers: plain ``torch.nn.Module``s usable in any PyG model."""
from .attention import FullAttention, clamped_edge_softmax, sparse_attention
from .egt import EGTLayer
from .gps import GPSLayer
from .gt import GraphTransformerLayer
from .graphormer import GraphormerLayer
from .grpe import GRPEAttention, GRPEEncodings, GRPELayer
from .linear_attention import PerformerAttention, linear_attention
from .mpnn import GatedGCNConv, LocalMPNN, MeanGraphConv, MPNNBlock
from .norm import BatchNorm, make_norm

__all__ = ["BatchNorm", "EGTLayer", "FullAttention", "GPSLayer", "GRPEAttention", "GRPEEncodings", "GRPELayer",
           "GatedGCNConv", "GraphTransformerLayer", "GraphormerLayer", "LocalMPNN", "MPNNBlock",
           "MeanGraphConv",
           "PerformerAttention", "clamped_edge_softmax", "linear_attention", "make_norm",
           "sparse_attention"]
