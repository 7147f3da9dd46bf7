"""The GPS network: input encoders with a positional/structural encoding, ``num_layers``
:class:`~graph_transformers.nn.GPSLayer` s (survey eqs. 40-41), and a task head.

Rampášek et al., "Recipe for a General, Powerful, Scalable Graph Transformer" (NeurIPS 2022);
see ``docs/gps.md`` for the design and where it departs from GraphGPS.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch
from torch_geometric.utils import subgraph

from ..core.dense import DenseBatch
from ..nn.attention import DEFAULT_ATTENTION_BUDGET_GB
from ..nn.convention import ffn_width
from ..nn.gps import GPSLayer, check_attention_maps
from ..nn.norm import apply_norm, make_norm
from .encoders import FeatureEncoder, encoding_input, make_pe_encoder, pe_forward
from .heads import MLPReadout, check_level, level_head
from .registry import (NonNegativeInt, Norm, PEName, PositiveFloat, PositiveInt, Probability,
                       Readout, SignFlip, model_config, register_model)
from .registry import EdgeFeatureUse
from ..nn.reset import reset_descendants
from .utils import check_inputs


#: ``mpnn``: the local MPNN of a GPS layer (:data:`~graph_transformers.nn.mpnn.CONVS`)
LocalMPNN = Literal["gcn", "gat", "gatedgcn", "gin", "gine", "pna"]
#: ``attention``: the global attention of a GPS layer
#: (:data:`~graph_transformers.nn.gps.ATTENTIONS`)
GlobalAttention = Literal["full", "performer", "linear", "sgformer", "exphormer", "none"]


@register_model("gps")
@model_config(defaults={"hidden_dim": 64, "num_layers": 10, "num_heads": 4})
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
            ``"sgformer"`` (SGFormer's simple global attention), ``"exphormer"`` (Exphormer's
            sparse attention over the graph's edges, ``data.expander_index`` and virtual nodes;
            the batch must carry ``expander_index``, the ``expander`` encoding) or ``"none"``; see
            :class:`~graph_transformers.nn.GPSLayer`.
        use_edge_features: embed ``edge_attr`` and give it to the MPNN.
        pe: ``"rwse"`` (``data.rwse [num_nodes, pe_dim]``), ``"lap"`` (``data.lap_pe``), any other
            registered node encoding (:func:`~.encoders.make_pe_encoder`) or ``None``.
        pe_dim: width of the stored encoding (RWSE walk length / LapPE ``k``).
        pe_embed_dim: channels of the projected encoding inside ``hidden_dim``.
        sign_flip: sign flips of the encoding in training (:func:`~.encoders.flip_signs`).
        norm: the layers' normalization: ``"batch"``, ``"layer"`` or ``"none"``.
        norm_position: ``"pre"``: the survey's block (eqs. 40-41) and a final Norm; ``"post"``:
            GraphGPS's own layer layout, without a final Norm.
        dropout: dropout in the layers.
        attn_dropout: dropout on the attention weights.
        ffn_multiplier: the layers' FFN width, in multiples of ``hidden_dim``.
        num_features: Performer random features (default ``head_dim * ceil(log head_dim)``).
        memory_budget_gb: full attention refuses a batch whose ``[B, H, N, N]`` tensors would
            exceed this many GiB (``None``: unchecked).
        pna_towers: PNA towers (``mpnn="pna"``).
        train_eps: GIN/GINE's ``ε`` learned (``True``) or fixed at 0 (``False``, GraphGPS).
        num_virtual_nodes: Exphormer's virtual nodes per graph (``attention="exphormer"``).
        deg: PNA's training in-degree histogram (only with ``mpnn="pna"``).
        readout: ``"sum"`` (GraphGPS on ZINC), ``"mean"`` or ``"max"``.
        mlp_layers: hidden layers of the :class:`~.heads.MLPReadout` head.

    Forward takes a PyG ``Batch`` (or one ``Data``, e.g. a ``NeighborLoader`` sample) and returns
    ``[num_graphs, out_dim]``, ``[num_nodes, out_dim]`` or ``[num_edges, out_dim]``.

    Raises:
        ValueError: for an unknown level or encoding, ``pe_embed_dim >= hidden_dim``, and (in
            ``forward``) for a batch missing the encoding the model uses (``expander_index``
            with ``attention="exphormer"``).
    """

    def __init__(self, hidden_dim: PositiveInt, num_layers: PositiveInt, num_heads: PositiveInt,
                 out_dim: int, level: str = "graph",
                 num_node_types: int | Sequence[int] | None = None,
                 num_node_features: int | None = None,
                 num_edge_types: int | Sequence[int] | None = None,
                 num_edge_features: int | None = None, mpnn: LocalMPNN | None = "gine",
                 attention: GlobalAttention = "full", use_edge_features: bool = True,
                 pe: PEName | None = "rwse", pe_dim: int = 20, pe_embed_dim: PositiveInt = 28,
                 sign_flip: SignFlip = "batch", norm: Norm = "batch",
                 norm_position: Literal["pre", "post"] = "pre", train_eps: bool = True,
                 dropout: Probability = 0.0, attn_dropout: Probability = 0.0,
                 ffn_multiplier: PositiveFloat = 2.0, num_features: PositiveInt | None = None,
                 memory_budget_gb: PositiveFloat | None = DEFAULT_ATTENTION_BUDGET_GB,
                 deg: Tensor | None = None, pna_towers: PositiveInt = 5,
                 readout: Readout = "sum", mlp_layers: NonNegativeInt = 2,
                 num_virtual_nodes: NonNegativeInt = 1) -> None:
        super().__init__()
        check_level(level)
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
                     attn_dropout=attn_dropout, ffn_dim=ffn_width(hidden_dim, ffn_multiplier),
                     num_features=num_features, memory_budget_gb=memory_budget_gb,
                     deg=deg, pna_towers=pna_towers, train_eps=train_eps,
                     num_virtual_nodes=num_virtual_nodes)
            for _ in range(num_layers))
        # post-norm layers end with their own Norm
        self.final_norm = (make_norm(norm, hidden_dim) if norm_position == "pre"
                           else nn.Identity())
        self.head = MLPReadout(2 * hidden_dim if level == "edge" else hidden_dim, out_dim,
                               mlp_layers)

    @staticmethod
    def needs_degree_histogram(mpnn: str | None = None, **_: object) -> bool:
        """Whether the constructor needs ``deg`` (``training.build.make_model`` then computes it
        from the train split)."""
        return mpnn == "pna"

    @staticmethod
    def edge_feature_use(mpnn: str | None = None, **_: object) -> EdgeFeatureUse:
        """What GPS reads of edge features (:class:`~.registry.EdgeFeatureUse`): those its MPNN
        reads (none without one, or with GCN / GIN); GINE and GatedGCN need them."""
        if mpnn is None or mpnn in ("gcn", "gin"):
            return EdgeFeatureUse("none")
        return EdgeFeatureUse("any", needed_by=mpnn if mpnn in ("gine", "gatedgcn") else None,
                              instead="model.mpnn=gin (or gcn)")

    @staticmethod
    def config_checks(model) -> None:
        """Cross-checks of the ``model:`` section (:mod:`~graph_transformers.models.registry`).

        Raises:
            ValueError: no MPNN and no attention, ``pe_embed_dim >= hidden_dim``, or
                ``use_edge_features`` against what the MPNN reads.
        """
        if model.mpnn is None and model.attention == "none":
            raise ValueError("model.mpnn is null and model.attention is 'none': a GPS layer "
                             "needs at least one of them")
        if model.pe is not None and model.pe_embed_dim >= model.hidden_dim:
            raise ValueError(f"model.pe_embed_dim={model.pe_embed_dim} must be smaller than "
                             f"model.hidden_dim={model.hidden_dim}")
        if model.mpnn in ("gcn", "gin") and model.use_edge_features is True:
            raise ValueError(f"model.mpnn={model.mpnn!r} takes no edge features: set "
                             "model.use_edge_features=false")
        if model.mpnn in ("gine", "gatedgcn") and model.use_edge_features is False:
            raise ValueError(f"model.mpnn={model.mpnn!r} needs edge features: set "
                             "model.use_edge_features=true, or, for graphs without edge "
                             "features, model.mpnn=gin (or gcn)")

    @staticmethod
    def config_encodings(model) -> dict[str, str]:
        """The encodings the ``model:`` section's values call for
        (:func:`~graph_transformers.training.model_sections.missing_encodings`): Exphormer
        attention attends over the expander graph that ``encodings.expander`` precomputes per
        graph (an error without it, not a silent default, so the cache key stays explicit).

        Returns:
            Encoding name → why the section needs it.
        """
        if model.attention == "exphormer":
            return {"expander": "model.attention 'exphormer' attends over a per-graph expander "
                                "graph"}
        return {}

    def reset_parameters(self) -> None:
        reset_descendants(self)

    def _inputs(self, data: Batch) -> tuple[Tensor, Tensor | None, Tensor | None]:
        check_inputs(data, need_edge_attr=self.use_edge_features)
        h = self.node_encoder(data.x)
        batch = getattr(data, "batch", None)
        if self.pe is not None:  # its values are checked with the batch's (check_inputs)
            p = pe_forward(self.pe_encoder, encoding_input(data, self.pe), batch,
                           getattr(data, "num_graphs", None), getattr(data, "real_node_mask", None))
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
        expander = self._expander_index(data) if self.attention == "exphormer" else None
        # static-shape batches: BatchNorm statistics over the real nodes and edges only
        node_mask = getattr(data, "real_node_mask", None)
        edge_mask = getattr(data, "real_edge_mask", None)
        for layer in self.layers:
            out = layer(h, data.edge_index, e, batch, dense=dense, num_graphs=num_graphs,
                        expander_index=expander, real_node_mask=node_mask,
                        real_edge_mask=edge_mask)
            h, e = out if isinstance(out, tuple) else (out, e)  # GatedGCN updates e
        return apply_norm(self.final_norm, h, node_mask)

    @staticmethod
    def _expander_index(data: Batch) -> Tensor:
        """``data.expander_index [2, E_exp]`` for Exphormer attention; on a sampled subgraph
        (``data.n_id``, PyG's ``NodeLoader``, which copies the attribute unchanged) the whole
        graph's expander restricted to the sampled nodes and relabelled.

        Raises:
            ValueError: when the batch has no ``expander_index``.
        """
        index = getattr(data, "expander_index", None)
        if index is None:
            raise ValueError("model.attention 'exphormer' needs data.expander_index [2, E_exp]: "
                             "set encodings.expander (e.g. 'encodings: {expander: {degree: 3}}') "
                             "or add graph_transformers.encodings.AddExpanderGraph to the "
                             "dataset's pre-transform")
        n_id = getattr(data, "n_id", None)
        if n_id is not None and index.numel():
            size = int(torch.maximum(index.max(), n_id.max())) + 1  # the whole graph's ids
            index, _ = subgraph(n_id, index, relabel_nodes=True, num_nodes=size)
        return index

    def forward(self, data: Batch) -> Tensor:
        return level_head(self.head, self.encode(data), data, self.level, self.readout)

    @torch.no_grad()
    def attention_maps(self, data: Batch) -> tuple[list[Tensor], Tensor]:
        """Per-layer head-averaged global attention (inference mode, no dropout).

        Returns:
            ``(maps, mask)``: ``maps[l]`` is ``[batch, N, N]`` (row i = query i's weights over
            keys j; padding rows and columns 0), ``mask`` is ``[batch, N]`` bool (real nodes).

        Raises:
            NotImplementedError: for the linear attentions (Performer, linear, SGFormer),
                Exphormer or no global attention.
        """
        check_attention_maps(self.attention, "GPS")
        was_training = self.training
        self.eval()
        try:
            h, e, batch = self._inputs(data)
            maps, mask = [], None
            for layer in self.layers:
                w, mask = layer.attention_map(h, batch)
                maps.append(w)
                out = layer(h, data.edge_index, e, batch)
                h, e = out if isinstance(out, tuple) else (out, e)
        finally:
            self.train(was_training)
        return maps, mask
