"""Layers: plain ``torch.nn.Module``s usable in any PyG model.

The global-attention layers (:class:`EGTLayer`, :class:`GRPELayer`, :class:`GRPEAttention`,
:class:`GraphormerLayer`) take PyG-native inputs in ``forward`` (``x [num_nodes, d]``,
``edge_index``, ``edge_attr``, ``batch``) and densify them with :class:`DenseBatch`; their
``forward_dense`` takes padded tensors with pairs oriented dst-major (``pairs[b, i, j]`` = the edge
``j → i``; PyG's ``to_dense_adj(...).transpose(1, 2)``).
"""
from ..data.dense import DenseBatch
from .attention import FullAttention, clamped_edge_softmax, sparse_attention
from .egt import EGTDenseOutput, EGTLayer, EGTOutput
from .gps import GPSLayer
from .grit import GRITLayer, GRITOutput
from .gt import GraphTransformerLayer, GTOutput
from .graphormer import GraphormerLayer
from .grpe import (GRPEAttention, GRPEEncodings, GRPELayer, GRPERelations, GRPETables,
                   fuse_relations)
from .linear_attention import PerformerAttention, linear_attention
from .kernel_attention import LinearGlobalAttention, SGFormerAttention
from .mpnn import GatedGCNConv, LocalMPNN, MeanGraphConv, MPNNBlock
from .norm import BatchNorm, make_norm
from .pyg_inputs import LayerOutput

__all__ = ["BatchNorm", "DenseBatch", "EGTDenseOutput", "EGTLayer", "EGTOutput", "FullAttention",
           "GPSLayer", "GRITLayer", "GRITOutput", "GRPEAttention", "GRPEEncodings", "GRPELayer",
           "GRPERelations", "GRPETables", "GTOutput", "GatedGCNConv",
           "GraphTransformerLayer", "GraphormerLayer", "LayerOutput", "LinearGlobalAttention",
           "LocalMPNN", "MPNNBlock",
           "MeanGraphConv",
           "PerformerAttention", "SGFormerAttention", "clamped_edge_softmax", "fuse_relations",
           "linear_attention",
           "make_norm",
           "sparse_attention"]
