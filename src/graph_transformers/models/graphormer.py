"""Graphormer-style network (Ying et al. 2021): the attention-bias baseline GRPE argues against."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch
from torch_geometric.utils import degree

from ..nn.attention import aligned_bias, attention_dtype
from ..nn.graphormer import GraphormerLayer
from .encoders import FeatureEncoder
from .grpe import PairRelationBuilder, TokenPairModel
from .registry import (NonNegativeInt, PositiveFloat, PositiveInt, Probability, model_config,
                       register_model)


@register_model("graphormer")
@model_config(defaults={"hidden_dim": 80, "num_layers": 12, "num_heads": 8},
              encoding_args={"max_distance": "spd.max_distance"})
class Graphormer(TokenPairModel):
    """Graphormer with the same dense path as :class:`~graph_transformers.models.GRPE`.

    * centrality encoding (eq. 5): a learned embedding of each node's degree (clipped at
      ``max_degree``) added to its input embedding (graphs are undirected: in = out degree);
    * a graph token (the ``[VNode]`` of §3.1.3) at position 0, connected to all nodes with its own
      distance id (Graphormer's learned virtual distance ``t``) and edge id;
    * spatial encoding (eq. 6): a learned scalar per head and shortest-path distance id
      ``b_ψ(i,j)`` (distances ``0 … L``, far, unreachable, graph token), added to the scores;
    * edge encoding: a learned scalar per head and pair edge type (bond type, no edge, self,
      graph token) — the one-hop form of eq. 7 (Graphormer averages edge features along the
      shortest path; here only the direct edge, as GRPE's ``a^edge``);
    * pre-LN :class:`~graph_transformers.nn.GraphormerLayer` s, a final LayerNorm and a head on
      the graph token (graph tasks) or the nodes (node tasks).

    The bias tables are shared by all layers (as in Graphormer, computed once per batch).

    Args:
        hidden_dim: ``d`` (as :class:`~graph_transformers.models.GRPE`).
        num_layers: layers.
        num_heads: attention heads.
        out_dim, level: as GRPE.
        num_node_types, num_node_features, num_edge_types, num_edge_features: as GRPE.
        ffn_dim: FFN width (``None``: ``d``).
        use_edge_features: use the edge types in the edge biases (else only presence).
        max_distance: ``L`` of the spatial encoding (the ``encodings.spd.max_distance`` of the
            data; a run passes that).
        dropout: dropout in the layers.
        attn_dropout: dropout on the attention weights.
        mlp_layers: hidden layers of the head (0 = linear).
        memory_budget_gb: dense-attention memory budget per batch (``None`` = unchecked).
        size_groups: the layers run on up to this many groups of graphs of similar size (as
            GRPE; static-shape batches run as one group).
        max_degree: degrees above are clipped.
        spatial_bias: the spatial encoding (eq. 6) in the attention scores.
        edge_bias: the edge encoding (one-hop eq. 7) in the attention scores.
        degree_encoding: the centrality encoding (eq. 5) added to the input embeddings.

    Forward takes a PyG ``Batch`` with ``x``, ``edge_index``, ``spd`` and ``pair_edge`` and returns
    ``[num_graphs, out_dim]`` or ``[num_nodes, out_dim]``.

    Raises:
        ValueError: for an unsupported level or feature kind, or a batch without the relations.
        DenseBudgetError: for a batch beyond ``memory_budget_gb``.
    """

    def __init__(self, hidden_dim: PositiveInt, num_layers: PositiveInt, num_heads: PositiveInt,
                 out_dim: int, level: str = "graph",
                 num_node_types: int | Sequence[int] | None = None,
                 num_node_features: int | None = None,
                 num_edge_types: int | Sequence[int] | None = None,
                 num_edge_features: int | None = None, ffn_dim: PositiveInt | None = None,
                 use_edge_features: bool = True, max_distance: int = 5,
                 dropout: Probability = 0.1, attn_dropout: Probability = 0.1,
                 max_degree: PositiveInt = 64, spatial_bias: bool = True,
                 edge_bias: bool = True, degree_encoding: bool = True,
                 mlp_layers: NonNegativeInt = 0, memory_budget_gb: PositiveFloat | None = 4.0,
                 size_groups: PositiveInt = 4) -> None:
        super().__init__()
        self._check_options("Graphormer", level, size_groups, use_edge_features, num_edge_types,
                            num_edge_features, "Graphormer's edge biases")
        self.num_heads = num_heads
        self.max_degree = max_degree
        self.node_encoder = FeatureEncoder(hidden_dim, num_node_types, num_node_features,
                                           name="node")
        self.degree_encoder = nn.Embedding(max_degree + 1, hidden_dim) if degree_encoding else None
        self.graph_token = nn.Parameter(torch.empty(hidden_dim))
        self.relations = PairRelationBuilder(
            max_distance, num_edge_types if use_edge_features else None,
            bytes_per_pair=num_layers * num_heads * 4 * 6 + 64,
            memory_budget_gb=memory_budget_gb, what="Graphormer attention")
        self.spatial_bias = (nn.Embedding(self.relations.num_topology, num_heads)
                             if spatial_bias else None)
        self.edge_bias = nn.Embedding(self.relations.num_edge, num_heads) if edge_bias else None
        layers = (GraphormerLayer(hidden_dim, num_heads, ffn_dim=ffn_dim, dropout=dropout,
                                  attn_dropout=attn_dropout)
                  for _ in range(num_layers))
        self._add_stack(layers, hidden_dim, out_dim, mlp_layers)

    def reset_parameters(self) -> None:
        super().reset_parameters()
        nn.init.normal_(self.graph_token, std=0.02)
        for emb in (self.spatial_bias, self.edge_bias):
            if emb is not None:
                nn.init.zeros_(emb.weight)  # start as plain attention, learn the biases

    def _encode(self, data: Batch, return_attention_weights: bool = False):
        rel, h = self._embed(data)
        if self.degree_encoder is not None:
            deg = degree(data.edge_index[1], h.size(0), dtype=torch.long)
            h = h + self.degree_encoder(deg.clamp(max=self.max_degree))
        x = self._behind_token(h, rel, self.graph_token)
        bias = self._bias(x, rel)

        def run(sl: tuple | None) -> tuple[Tensor, list[Tensor]]:
            if sl is None:  # the whole batch
                xg, bg = x, bias
            else:
                idx, nodes = sl
                xg, bg = x[sl], bias[idx, :, nodes, nodes]
            if bg.is_cuda:  # one aligned copy in the attention dtype, shared by all layers, so
                # CUDA's memory-efficient SDPA kernel reads it in place (docs/gpu.md)
                bg = aligned_bias(bg, dtype=attention_dtype(x))
            weights = []
            for layer in self.layers:
                xg, wg = layer.forward_dense(xg, bg, return_attention_weights)
                weights.append(wg)
            return xg, weights if return_attention_weights else []

        out, weights = self._in_groups(x, rel, self.num_heads, run, return_attention_weights)
        return out, rel, weights

    def _bias(self, x: Tensor, rel) -> Tensor:
        """The attention bias shared by all layers, ``[B, H, N + 1, N + 1]`` (Graphormer eqs. 6-7,
        built once per batch): ``b_ψ(i,j) + c_e(i,j)`` per head, ``-inf`` at padding keys."""
        B, N1 = x.size(0), x.size(1)
        parts = [emb(ids) for emb, ids in ((self.spatial_bias, rel.topology),
                                           (self.edge_bias, rel.edge)) if emb is not None]
        if not parts:
            bias = x.new_zeros(B, N1, N1, self.num_heads)
        else:
            bias = parts[0] if len(parts) == 1 else parts[0] + parts[1]
        return bias.to(x.dtype).permute(0, 3, 1, 2).masked_fill(~rel.mask.view(B, 1, 1, N1),
                                                                float("-inf"))
