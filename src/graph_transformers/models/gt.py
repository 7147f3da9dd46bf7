"""The Graph Transformer network (GT) of Dwivedi & Bresson (2020)."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch

from ..core.dense import host_num_nodes
from ..nn.convention import ffn_width
from ..nn.gt import GraphTransformerLayer
from .encoders import encoding_input, feature_encoders, make_pe_encoder, pe_forward
from .heads import MLPReadout, batch_vector, check_level, level_head, sparse_attention_maps
from .registry import (NonNegativeInt, Norm, PEName, PositiveFloat, PositiveInt, Probability,
                       Readout, SignFlip, model_config, register_model)
from .registry import EdgeFeatureUse
from .utils import check_inputs, full_graph_edge_index
from ..nn.reset import reset_descendants


@register_model("gt")
@model_config(defaults={"hidden_dim": 64, "num_layers": 10, "num_heads": 8})
class GraphTransformer(nn.Module):
    """GT: input embeddings (eq. 2), a positional encoding added at the input only (eq. 3),
    ``num_layers`` :class:`~graph_transformers.nn.GraphTransformerLayer` s, and a task head.

    Args:
        hidden_dim: ``d``.
        num_layers: ``L``.
        num_heads: ``H``.
        out_dim: outputs per graph, node or edge (by ``level``).
        level: ``"graph"`` (readout, then MLP), ``"node"`` (MLP on each node) or ``"edge"`` (MLP on
            ``[h_i ∥ h_j]`` for each edge ``j -> i`` of ``edge_index``, as the benchmark's TSP
            edge classifier).
        num_node_types / num_node_features: categorical node features (``x`` long ``[num_nodes]``,
            ``[num_nodes, 1]`` or one column per table) or continuous ones
            (``x [num_nodes, num_node_features]``).
        num_edge_types / num_edge_features: same for ``edge_attr``; used when ``use_edge_features``.
        use_edge_features: build the edge-stream form (eqs. 9-18).
        pe: the node encoding added at the input (:func:`~.encoders.make_pe_encoder`): ``"lap"``
            (``data.lap_pe [num_nodes, pe_dim]``, the paper's), ``"wl"`` (``data.wl_pe
            [num_nodes]`` role ids, embedded), any other registered one
            (:mod:`graph_transformers.encodings.registry`) or ``None``.
        pe_dim: LapPE dimension ``k``; for ``pe="wl"`` the number of role ids embedded.
        sign_flip: sign flips of the encoding in training: ``"batch"``, ``"graph"`` or
            ``"none"``.
        full_graph: attend over all node pairs of each graph (the paper's "Full Graph" columns,
            no self-pairs, as the official code); edge features are then not used.
        norm: the layers' normalization: ``"batch"`` (BatchNorm, the paper's best), ``"layer"``
            or ``"none"``.
        dropout: dropout on the layers' attention output and inside their FFNs.
        ffn_multiplier: the layers' FFN width, in multiples of ``hidden_dim``.
        qkv_bias: biases in the layers' ``Q, K, V, E`` (the official code has none).
        in_feat_dropout: dropout on the input embeddings.
        readout: ``"mean"``, ``"sum"`` or ``"max"`` (graph task).
        mlp_layers: hidden layers of the :class:`MLPReadout` head.

    Forward takes a PyG ``Batch`` (``x``, ``edge_index``, ``batch``, optional ``edge_attr``,
    ``lap_pe``/``wl_pe``) and returns ``[num_graphs, out_dim]``, ``[num_nodes, out_dim]`` or
    ``[num_edges, out_dim]``.
    """

    def __init__(self, hidden_dim: PositiveInt, num_layers: PositiveInt, num_heads: PositiveInt,
                 out_dim: int, level: str = "graph",
                 num_node_types: int | Sequence[int] | None = None,
                 num_node_features: int | None = None,
                 num_edge_types: int | Sequence[int] | None = None,
                 num_edge_features: int | None = None, use_edge_features: bool = False,
                 pe: PEName | None = "lap", pe_dim: int = 8, sign_flip: SignFlip = "batch",
                 full_graph: bool = False, norm: Norm = "batch", dropout: Probability = 0.0,
                 in_feat_dropout: Probability = 0.0, ffn_multiplier: PositiveFloat = 2.0,
                 qkv_bias: bool = False, readout: Readout = "mean",
                 mlp_layers: NonNegativeInt = 2) -> None:
        super().__init__()
        check_level(level)
        if full_graph and use_edge_features:
            raise ValueError("GT's full-graph mode attends over all pairs and discards edge "
                             "features (paper, Table 1): set use_edge_features=false")
        self.level, self.pe, self.readout = level, pe, readout
        self.full_graph, self.use_edge_features = full_graph, use_edge_features
        self.node_encoder, self.edge_encoder = feature_encoders(
            hidden_dim, num_node_types, num_node_features, num_edge_types, num_edge_features,
            use_edge_features)
        self.pe_encoder = make_pe_encoder(pe, pe_dim, hidden_dim, sign_flip) if pe else None
        self.in_feat_dropout = nn.Dropout(in_feat_dropout)
        self.layers = nn.ModuleList(
            GraphTransformerLayer(hidden_dim, num_heads,
                                  edge_dim=hidden_dim if use_edge_features else None,
                                  ffn_dim=ffn_width(hidden_dim, ffn_multiplier),
                                  dropout=dropout, norm=norm, qkv_bias=qkv_bias)
            for _ in range(num_layers))
        self.head = MLPReadout(2 * hidden_dim if level == "edge" else hidden_dim, out_dim,
                               mlp_layers)

    @staticmethod
    def config_checks(model) -> None:
        """Cross-checks of the ``model:`` section (:mod:`~graph_transformers.models.registry`).

        Raises:
            ValueError: ``full_graph`` with ``use_edge_features: true``.
        """
        if model.full_graph and model.use_edge_features is True:
            raise ValueError("model.full_graph discards edge features (GT paper, Table 1): set "
                             "model.use_edge_features=false")

    @staticmethod
    def edge_feature_use(full_graph: bool = False, **_: object) -> EdgeFeatureUse:
        """What GT reads of edge features (:class:`~.registry.EdgeFeatureUse`): none in
        full-graph mode, else edge types or continuous features."""
        return EdgeFeatureUse("none" if full_graph else "any")

    def reset_parameters(self) -> None:
        reset_descendants(self)

    def encode(self, data: Batch, return_attention_weights: bool = False):
        """Node embeddings after the last layer, ``[num_nodes, hidden_dim]`` (and, on request,
        the list of per-layer ``(edge_index, weights [num_edges, num_heads])``)."""
        check_inputs(data, need_edge_attr=self.use_edge_features)
        h = self.node_encoder(data.x)
        batch = batch_vector(data, h)
        if self.pe is not None:
            h = h + pe_forward(self.pe_encoder, encoding_input(data, self.pe), batch,
                               getattr(data, "num_graphs", None),
                               getattr(data, "real_node_mask", None))
        h = self.in_feat_dropout(h)
        edge_index = (full_graph_edge_index(batch, host_sizes=host_num_nodes(data))
                      if self.full_graph else data.edge_index)
        e = self.edge_encoder(data.edge_attr) if self.use_edge_features else None
        attentions = []
        # static-shape batches: BatchNorm statistics over the real nodes and edges only
        node_mask = getattr(data, "real_node_mask", None)
        edge_mask = None if self.full_graph else getattr(data, "real_edge_mask", None)
        for layer in self.layers:
            out = layer(h, edge_index, e, batch,
                        return_attention_weights=return_attention_weights,
                        real_node_mask=node_mask, real_edge_mask=edge_mask)
            if return_attention_weights:
                out, attention = out
                attentions.append(attention)  # (edge_index, weights)
            h, e = out if e is not None else (out, None)
        return (h, attentions) if return_attention_weights else h

    @torch.no_grad()
    def attention_maps(self, data: Batch) -> tuple[list[Tensor], Tensor]:
        """Per-layer head-averaged attention as dense matrices (inference mode).

        The sparse weights ``[num_edges, num_heads]`` of each layer are averaged over heads and
        scattered into ``[batch, N, N]`` (``to_dense_adj`` with rows = target/query ``i``, columns
        = source/key ``j``; duplicate edges add up); pairs that are not attended are 0.

        Returns:
            ``(maps, mask)``: ``maps[l]`` is ``[batch, N, N]`` (row i = query i's weights over keys
            j; padding rows and columns 0), ``mask`` is ``[batch, N]`` bool (real nodes).
        """
        return sparse_attention_maps(self, data)

    def forward(self, data: Batch) -> Tensor:
        return level_head(self.head, self.encode(data), data, self.level, self.readout)
