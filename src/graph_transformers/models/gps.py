"""The GPS network: input encoders with a positional/structural encoding, ``num_layers``
:class:`~graph_transformers.nn.GPSLayer` s (survey eqs. 40-41), and a task head.

Rampášek et al., "Recipe for a General, Powerful, Scalable Graph Transformer" (NeurIPS 2022);
see ``docs/gps.md`` for the design and where it departs from GraphGPS.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch

from ..data.checks import check_batch
from ..data.dense import DenseBatch
from ..nn.attention import DEFAULT_ATTENTION_BUDGET_GB
from ..nn.gps import GPSLayer
from ..nn.norm import make_norm
from .encoders import FeatureEncoder, encoding_input, make_pe_encoder
from .heads import MLPReadout, level_head
from ..nn.reset import reset_descendants


class GPS(nn.Module):
    """GPS: node features embedded to ``hidden_dim - pe_embed_dim`` channels and concatenated with
    the encoding projected to ``pe_embed_dim`` (GraphGPS's input, §3.1), edge features embedded to
    ``hidden_dim``, GPS layers, a final Norm when the layers are pre-norm (post-norm layers end
    with their own), and a head.

    Args:
        hidden_dim: ``d``.
        num_layers: ``L``.
        num_heads: attention heads.
        out_dim: outputs per graph or node (by ``level``).
        level: ``"graph"`` (readout, then MLP), ``"node"`` or ``"edge"`` (MLP on ``[h_i ∥ h_j]``).
        num_node_types / num_node_features, num_edge_types / num_edge_features: as
            :class:`~.gt.GraphTransformer`.
        mpnn: local MPNN name (:data:`~graph_transformers.nn.mpnn.CONVS`) or ``None``.
        attention: ``"full"``, ``"performer"``, ``"linear"`` (elu+1 linear attention),
            ``"sgformer"`` (SGFormer's simple global attention) or ``"none"``; see
            :class:`~graph_transformers.nn.GPSLayer`.
        use_edge_features: embed ``edge_attr`` and give it to the MPNN.
        pe: ``"rwse"`` (``data.rwse [num_nodes, pe_dim]``), ``"lap"`` (``data.lap_pe``), any other
            registered node encoding (:func:`~.encoders.make_pe_encoder`) or ``None``.
        pe_dim: width of the stored encoding (RWSE walk length / LapPE ``k``).
        pe_embed_dim: channels of the projected encoding inside ``hidden_dim``.
        sign_flip: sign flips of the encoding in training (:func:`~.encoders.flip_signs`).
        norm, norm_position, dropout, attn_dropout, ffn_multiplier: passed to every
            :class:`~graph_transformers.nn.GPSLayer` (``norm_position="post"`` is GraphGPS's own
            layer layout and has no final Norm).
        num_features, memory_budget_gb, pna_towers, train_eps: passed to every GPS layer too.
        deg: PNA's training in-degree histogram (only with ``mpnn="pna"``).
        readout: ``"sum"`` (GraphGPS on ZINC), ``"mean"`` or ``"max"``.
        mlp_layers: hidden layers of the :class:`~.heads.MLPReadout` head.

    Forward takes a PyG ``Batch`` (or one ``Data``, e.g. a ``NeighborLoader`` sample) and returns
    ``[num_graphs, out_dim]``, ``[num_nodes, out_dim]`` or ``[num_edges, out_dim]``.

    Raises:
        ValueError: for an unknown level or encoding, ``pe_embed_dim >= hidden_dim``, and (in
            ``forward``) for a batch missing the encoding the model uses.
    """

    def __init__(self, hidden_dim: int, num_layers: int, num_heads: int, out_dim: int,
                 level: str = "graph", num_node_types: int | Sequence[int] | None = None,
                 num_node_features: int | None = None,
                 num_edge_types: int | Sequence[int] | None = None,
                 num_edge_features: int | None = None, mpnn: str | None = "gine",
                 attention: str = "full", use_edge_features: bool = True,
                 pe: str | None = "rwse", pe_dim: int = 20, pe_embed_dim: int = 28,
                 sign_flip: str = "batch", norm: str = "batch", norm_position: str = "pre",
                 dropout: float = 0.0,
                 attn_dropout: float = 0.0, ffn_multiplier: float = 2.0,
                 num_features: int | None = None,
                 memory_budget_gb: float | None = DEFAULT_ATTENTION_BUDGET_GB,
                 deg: Tensor | None = None, pna_towers: int = 5, readout: str = "sum",
                 mlp_layers: int = 2, train_eps: bool = True) -> None:
        super().__init__()
        if level not in ("graph", "node", "edge"):
            raise ValueError(f"level must be 'graph', 'node' or 'edge', got {level!r}")
        if pe is not None and not 0 < pe_embed_dim < hidden_dim:
            raise ValueError(f"pe_embed_dim={pe_embed_dim} must be in (0, hidden_dim="
                             f"{hidden_dim}): the encoding is concatenated to the node embedding")
        self.level = level
        self.pe = pe
        self.attention = attention
        self.readout = readout
        self.use_edge_features = use_edge_features and mpnn is not None
        node_out = hidden_dim - pe_embed_dim if pe is not None else hidden_dim
        self.node_encoder = FeatureEncoder(node_out, num_node_types, num_node_features, name="node")
        self.pe_encoder = make_pe_encoder(pe, pe_dim, pe_embed_dim, sign_flip) if pe else None
        self.edge_encoder = (FeatureEncoder(hidden_dim, num_edge_types, num_edge_features,
                                            name="edge")
                             if self.use_edge_features else None)
        self.layers = nn.ModuleList(
            GPSLayer(hidden_dim, num_heads, mpnn=mpnn, attention=attention,
                     use_edge_features=self.use_edge_features, norm=norm,
                     norm_position=norm_position, dropout=dropout,
                     attn_dropout=attn_dropout, ffn_multiplier=ffn_multiplier,
                     num_features=num_features, memory_budget_gb=memory_budget_gb,
                     deg=deg, pna_towers=pna_towers, train_eps=train_eps)
            for _ in range(num_layers))
        # post-norm layers end with their own Norm
        self.final_norm = (make_norm(norm, hidden_dim) if norm_position == "pre"
                           else nn.Identity())
        self.head = MLPReadout(2 * hidden_dim if level == "edge" else hidden_dim, out_dim,
                               mlp_layers)

    @staticmethod
    def needs_degree_histogram(mpnn: str | None = None, **_: object) -> bool:
        """Whether the constructor needs ``deg`` (the runner then computes it from the train
        split)."""
        return mpnn == "pna"

    def reset_parameters(self) -> None:
        reset_descendants(self)

    def _inputs(self, data: Batch) -> tuple[Tensor, Tensor | None, Tensor | None]:
        check_batch(data, need_edge_attr=self.use_edge_features)
        h = self.node_encoder(data.x)
        batch = getattr(data, "batch", None)
        if self.pe is not None:  # its values are checked with the batch's (check_batch)
            p = self.pe_encoder(encoding_input(data, self.pe), batch,
                                getattr(data, "num_graphs", None))
            h = torch.cat([h, p], dim=-1)
        e = self.edge_encoder(data.edge_attr) if self.use_edge_features else None
        return h, e, batch

    def encode(self, data: Batch) -> Tensor:
        """Node embeddings after the last layer (and the final Norm of pre-norm layers),
        ``[num_nodes, hidden_dim]``."""
        h, e, batch = self._inputs(data)
        # the padded view for full attention, built once (no device sync; see DenseBatch)
        dense = DenseBatch.from_batch(data) if self.attention == "full" else None
        # linear / sgformer attention: per-graph sums sized by the batch's graph count (host int)
        num_graphs = getattr(data, "num_graphs", None) if batch is not None else None
        num_graphs = num_graphs if isinstance(num_graphs, int) and num_graphs > 0 else None
        for layer in self.layers:
            h, e = layer(h, data.edge_index, batch, e, dense=dense, num_graphs=num_graphs)
        return self.final_norm(h)

    def forward(self, data: Batch) -> Tensor:
        return level_head(self.head, self.encode(data), data, self.level, self.readout)

    @torch.no_grad()
    def attention_maps(self, data: Batch) -> tuple[list[Tensor], Tensor]:
        """Per-layer head-averaged global attention (inference mode, no dropout).

        Returns:
            ``(maps, mask)``: ``maps[l]`` is ``[batch, N, N]`` (row i = query i's weights over
            keys j; padding rows and columns 0), ``mask`` is ``[batch, N]`` bool (real nodes).

        Raises:
            NotImplementedError: for the linear attentions (Performer, linear, SGFormer) or no
                global attention.
        """
        if self.attention != "full":
            raise NotImplementedError(
                f"attention maps need full softmax attention; this GPS uses "
                f"attention={self.attention!r} (linear attention weights are never formed, and "
                "'none' has no global attention)")
        was_training = self.training
        self.eval()
        try:
            h, e, batch = self._inputs(data)
            maps, mask = [], None
            for layer in self.layers:
                w, mask = layer.attention_map(h, batch)
                maps.append(w)
                h, e = layer(h, data.edge_index, batch, e)
        finally:
            self.train(was_training)
        return maps, mask
