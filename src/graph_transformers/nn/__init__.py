"""Layers: plain ``torch.nn.Module``s usable in any PyG model, all in one convention
(:mod:`graph_transformers.nn.convention`, ``docs/layers.md``): ``Layer(hidden_dim, num_heads, *,
edge_dim=None, ffn_dim=None, dropout=0.0, ...)``, ``layer(x, edge_index, edge_attr=None,
batch=None, *, ...)`` returning ``x``, or ``(x, edge_attr)`` for the layers that update edge
features, and PyG's ``(out, (index, weights))`` with ``return_attention_weights=True``.

The global-attention layers (:class:`EGTLayer`, :class:`GRPELayer`, :class:`GRPEAttention`,
:class:`GraphormerLayer`) take PyG-native inputs in ``forward`` (``x [num_nodes, d]``,
``edge_index``, ``edge_attr``, ``batch``) and densify them with :class:`DenseBatch`; their
``forward_dense`` takes padded tensors with pairs oriented dst-major (``pairs[b, i, j]`` = the edge
``j → i``; PyG's ``to_dense_adj(...).transpose(1, 2)``).
"""
from ..core.dense import DenseBatch
from .attention import FullAttention
from .egt import EGTDenseOutput, EGTLayer, EGTOutput
from .exphormer import ExphormerAttention
from .gps import GPSLayer
from .grit import GRITLayer, GRITOutput
from .gt import GraphTransformerLayer, GTOutput
from .graphormer import GraphormerLayer
from .grpe import GRPEAttention, GRPEEncodings, GRPELayer, GRPERelations, GRPETables
from .kernel_attention import LinearGlobalAttention, SGFormerAttention
from .linear_attention import PerformerAttention
from .mpnn import GatedGCNConv, LocalMPNN, MeanGraphConv, MPNNBlock
from .norm import BatchNorm
from .pyg_inputs import LayerOutput

#: the layers and what they take and return; kernels and helpers (``sparse_attention``,
#: ``clamped_edge_softmax``, ``linear_attention``, ``fuse_relations``, ``make_norm``) stay in
#: their modules (``graph_transformers.nn.attention`` etc.), documented in the API reference
__all__ = [
    # layers (docs/layers.md: one convention)
    "GraphTransformerLayer", "EGTLayer", "GRPELayer", "GRPEAttention", "GraphormerLayer",
    "GPSLayer", "GRITLayer", "ExphormerAttention", "FullAttention", "PerformerAttention",
    "LinearGlobalAttention", "SGFormerAttention", "GatedGCNConv", "MeanGraphConv", "LocalMPNN",
    "MPNNBlock", "BatchNorm",
    # their inputs and outputs
    "DenseBatch", "GRPEEncodings", "GRPERelations", "GRPETables", "GTOutput", "EGTOutput",
    "EGTDenseOutput", "GRITOutput", "LayerOutput",
]
