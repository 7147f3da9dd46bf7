"""Graph Transformer layer of Dwivedi & Bresson, "A Generalization of Transformer Networks to
Graphs" (AAAI-DLG 2021), on edge lists."""
from __future__ import annotations

import math
from typing import NamedTuple

from torch import Tensor, nn

from .attention import head_dim, sparse_attention
from .convention import with_attention
from .norm import apply_norm, make_norm
from .reset import reset_children


class GTOutput(NamedTuple):
    """What :class:`GraphTransformerLayer` with an edge stream returns: ``(x, edge_attr)``, a
    named tuple (it unpacks as two; the node-only layer returns ``x`` alone).

    Attributes:
        x: ``[num_nodes, hidden_dim]`` updated node features.
        edge_attr: ``[num_edges, hidden_dim]`` updated edge features.
    """

    x: Tensor
    edge_attr: Tensor


class GraphTransformerLayer(nn.Module):
    r"""The Graph Transformer layer, without (eqs. 4-8) or with (eqs. 9-18) an edge stream.

    Node update, for each head :math:`k` and edge :math:`j \to i` of the graph:

    .. math::
        \hat w^k_{ij} = \frac{Q^k h_i \cdot K^k h_j}{\sqrt{d_k}} \;[\odot\, E^k e_{ij}]
        \qquad w^k_{ij} =
        \operatorname{softmax}_{j \in \mathcal N(i)}(\mathrm{clamp}(\hat w^k_{ij}))

        \hat h_i = O_h \big\Vert_k \sum_j w^k_{ij} V^k h_j,\quad
        h'_i = \mathrm{Norm}(h_i + \hat h_i),\quad
        h^{out}_i = \mathrm{Norm}(h'_i + W_2\,\mathrm{ReLU}(W_1 h'_i))

    With ``edge_dim`` set, the product :math:`Q h_i \odot K h_j \odot E e_{ij} / \sqrt{d_k}` is kept
    per dimension (summed over each head's dimensions for the score, eq. 12) and also forms the edge
    update :math:`\hat e_{ij} = O_e \Vert_k \hat w^k_{ij}` (eq. 10), followed by the edge stream's
    own residual, Norm, FFN, residual, Norm (eqs. 16-18).

    Args:
        hidden_dim: ``d``, node (and edge) channels; must be divisible by ``num_heads``.
        num_heads: ``H``.
        edge_dim: ``None`` for the node-only layer, else the width of the ``edge_attr`` the
            layer receives (as PyG's ``TransformerConv``). The edge stream is residual in
            ``hidden_dim`` channels: another width is first projected by a ``Linear(edge_dim,
            hidden_dim)`` (``edge_proj``), and the layer returns ``hidden_dim``-wide edges.
        ffn_dim: hidden width of the FFNs (default ``2 · d``, the paper's).
        dropout: dropout on the attention output and inside the FFNs.
        norm: ``"batch"`` (BatchNorm, the paper's best), ``"layer"`` or ``"none"``.
        residual: residual connections (eqs. 6, 8, 13, 15, 16, 18).
        qkv_bias: biases in ``Q, K, V, E`` (the official code has none; parameter counts in the
            paper's Table 1 match that).
        clamp: scores are clamped to ``[-clamp, clamp]`` before the exponential.

    Shapes:
        - x: ``[num_nodes, hidden_dim]``
        - edge_index: ``[2, num_edges]`` (messages flow ``edge_index[0] -> edge_index[1]``)
        - edge_attr: ``[num_edges, edge_dim]`` (edge form only)
        - batch: ``[num_nodes]`` or ``None``: accepted for the layer convention and unused (the
          softmax runs over each node's incoming edges)
        - output: ``x [num_nodes, hidden_dim]`` (node-only form) or a :class:`GTOutput` ``(x,
          edge_attr [num_edges, hidden_dim])`` (edge form); with
          ``return_attention_weights=True``, ``(output, (edge_index, weights [num_edges,
          num_heads]))`` as PyG's ``TransformerConv``.

    Raises:
        ValueError: for ``hidden_dim`` not divisible by ``num_heads``; in ``forward`` when
            ``edge_attr`` is missing, given to a node-only layer, or of the wrong shape.

    Example:
        A small PyG model on a ``Batch`` (edge features of another width are projected):

        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from torch_geometric.nn import global_mean_pool
        >>> from graph_transformers.nn import GraphTransformerLayer
        >>> class Net(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.emb = torch.nn.Linear(3, 16)
        ...         self.layers = torch.nn.ModuleList(
        ...             [GraphTransformerLayer(16, num_heads=4, edge_dim=2),
        ...              GraphTransformerLayer(16, num_heads=4, edge_dim=16)])
        ...         self.head = torch.nn.Linear(16, 1)
        ...     def forward(self, data):
        ...         x, e = self.emb(data.x), data.edge_attr
        ...         for layer in self.layers:
        ...             x, e = layer(x, data.edge_index, e, data.batch)
        ...         return self.head(global_mean_pool(x, data.batch))
        >>> g = Data(x=torch.randn(4, 3), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
        ...          edge_attr=torch.randn(3, 2))
        >>> Net()(Batch.from_data_list([g, g])).shape
        torch.Size([2, 1])
    """

    def __init__(self, hidden_dim: int, num_heads: int, *, edge_dim: int | None = None,
                 ffn_dim: int | None = None, dropout: float = 0.0, norm: str = "batch",
                 residual: bool = True, qkv_bias: bool = False, clamp: float = 5.0) -> None:
        super().__init__()
        ffn_dim = 2 * hidden_dim if ffn_dim is None else ffn_dim
        self.head_dim = head_dim(hidden_dim, num_heads)
        self.hidden_dim, self.num_heads = hidden_dim, num_heads
        self.edge_dim = edge_dim
        self.dropout = dropout
        self.residual = residual
        self.clamp = clamp
        self.scale = 1.0 / math.sqrt(self.head_dim)

        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim, bias=qkv_bias)  # Q, K, V fused
        self.o_h = nn.Linear(hidden_dim, hidden_dim)
        self.norm1_h = make_norm(norm, hidden_dim)
        self.ffn_h = _ffn(hidden_dim, ffn_dim, dropout)
        self.norm2_h = make_norm(norm, hidden_dim)
        self.edge_proj: nn.Linear | None = None
        if edge_dim is not None:
            # a new module only for another width: the default layer keeps its RNG stream
            self.edge_proj = nn.Linear(edge_dim, hidden_dim) if edge_dim != hidden_dim else None
            self.proj_e = nn.Linear(hidden_dim, hidden_dim, bias=qkv_bias)
            self.o_e = nn.Linear(hidden_dim, hidden_dim)
            self.norm1_e = make_norm(norm, hidden_dim)
            self.ffn_e = _ffn(hidden_dim, ffn_dim, dropout)
            self.norm2_e = make_norm(norm, hidden_dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialize all weights (PyTorch defaults for Linear and Norm layers)."""
        reset_children(self)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, return_attention_weights: bool = False,
                real_node_mask: Tensor | None = None, real_edge_mask: Tensor | None = None):
        """Apply the layer.

        Args:
            x: ``[num_nodes, hidden_dim]``.
            edge_index: ``[2, num_edges]``.
            edge_attr: ``[num_edges, edge_dim]``; required iff the layer has an edge stream.
            batch: unused (the layer convention's argument).
            return_attention_weights: also return ``(edge_index, weights [num_edges,
                num_heads])``.
            real_node_mask: ``[num_nodes]`` bool, the real nodes of a static-shape batch
                (:mod:`graph_transformers.data.static_shapes`): BatchNorm statistics over them
                only; ``None``: every node.
            real_edge_mask: ``[num_edges]`` bool, likewise for the edge stream's BatchNorms.

        Returns:
            ``x`` (node-only form) or :class:`GTOutput` ``(x, edge_attr)`` (edge form); with
            ``return_attention_weights``, ``(that, (edge_index, weights))``.

        Raises:
            TypeError: for a bool as ``batch`` (``return_attention_weights`` is keyword-only).
            ValueError: when ``edge_attr`` is missing or given against the layer's form, or
                has the wrong shape.
        """
        if isinstance(batch, bool):  # batch is unused here: a bool would be dropped silently
            raise TypeError("GraphTransformerLayer.forward(x, edge_index, edge_attr, batch): "
                            "batch is a graph-id tensor; pass return_attention_weights=... by "
                            "keyword")
        has_edges = self.edge_dim is not None
        if has_edges and edge_attr is None:
            raise ValueError("this GraphTransformerLayer has an edge stream: pass edge_attr")
        if not has_edges and edge_attr is not None:
            raise ValueError("edge_attr given to a GraphTransformerLayer built without edge_dim")
        if has_edges and edge_attr.shape != (edge_index.size(1), self.edge_dim):
            raise ValueError(f"edge_attr must be [num_edges={edge_index.size(1)}, "
                             f"edge_dim={self.edge_dim}], got {tuple(edge_attr.shape)}")
        if has_edges and self.edge_proj is not None:
            edge_attr = self.edge_proj(edge_attr)
        n, h, dk = x.size(0), self.num_heads, self.head_dim
        q, k, v = self.qkv(x).view(n, 3, h, dk).unbind(1)
        gate = self.proj_e(edge_attr).view(-1, h, dk) if has_edges else None
        out, per_dim, weights = sparse_attention(
            q, k, v, edge_index, self.scale, edge_gate=gate, clamp=self.clamp,
            return_scores=has_edges, return_weights=return_attention_weights)

        h_att = self.o_h(self._dropout(out.reshape(n, -1)))
        x = self._ffn_block(x, h_att, self.norm1_h, self.ffn_h, self.norm2_h, real_node_mask)
        if has_edges:
            e_att = self.o_e(self._dropout(per_dim.reshape(per_dim.size(0), -1)))
            edge_attr = self._ffn_block(edge_attr, e_att, self.norm1_e, self.ffn_e, self.norm2_e,
                                        real_edge_mask)
        out = GTOutput(x, edge_attr) if has_edges else x
        return with_attention(out, edge_index, weights, return_attention_weights)

    def _dropout(self, x: Tensor) -> Tensor:
        if self.dropout == 0.0 or not self.training:
            return x
        return nn.functional.dropout(x, self.dropout, True)

    def _ffn_block(self, inp: Tensor, att: Tensor, norm1: nn.Module, ffn: nn.Module,
                   norm2: nn.Module, mask: Tensor | None = None) -> Tensor:
        h = inp + att if self.residual else att
        h = apply_norm(norm1, h, mask)
        out = ffn(h)
        return apply_norm(norm2, h + out if self.residual else out, mask)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.hidden_dim}, heads={self.num_heads}, "
                f"edge_dim={self.edge_dim})")


def _ffn(dim: int, hidden: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(),
                         nn.Dropout(dropout) if dropout > 0 else nn.Identity(),
                         nn.Linear(hidden, dim))
