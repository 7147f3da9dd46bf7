"""The Edge-augmented Graph Transformer network (EGT; Hussain, Zaki & Subramanian,
arXiv:2108.03348v1, 2021, with the KDD 2022 version's options)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Batch

from ..core.dense import (UNREACHABLE, DenseBatch, GraphSizeLimit, check_dense_budget,
                          pair_size_limit)
from ..encodings.registry import node_encoding
from ..nn.convention import ffn_width
from ..nn.egt import EGTLayer, pair_bytes
from .encoders import (FeatureEncoder, check_encoding_shape, check_sign_flip, encoding_input,
                       flip_signs)
from .heads import MLPReadout, check_level
from .registry import (NonNegativeFloat, NonNegativeInt, PEName, PositiveFloat, PositiveInt,
                       Probability, SignFlip, model_config, register_model)
from ..nn.reset import reset_descendants
from .utils import check_inputs

#: EGT variant name → layer options (appendix C-D); "egt" is the full model
VARIANTS = {
    "egt": dict(edge_update=True, gated=True, constrained=False),
    "simple": dict(edge_update=False, gated=True, constrained=False),
    "constrained": dict(edge_update=True, gated=True, constrained=True),
    "ungated": dict(edge_update=True, gated=False, constrained=False),
}


class ModelOutput(NamedTuple):
    """What :class:`EGT` returns, whatever its options: the task prediction ``out`` and the
    weighted auxiliary loss ``aux_loss`` (a scalar added to the task loss in training; ``None``
    without the distance objective)."""

    out: Tensor
    aux_loss: Tensor | None = None


#: classes of the distance objective (:func:`distance_labels`)
DISTANCE_LABELS = ("official", "spd")

#: ``variant`` (:data:`VARIANTS`), ``structure``, ``distance_labels`` (:data:`DISTANCE_LABELS`)
#: and ``head_activation``: the choices of the constructor (and of the config section)
Variant = Literal["egt", "simple", "constrained", "ungated"]
Structure = Literal["adjacency", "distance"]
DistanceLabels = Literal["official", "spd"]
HeadActivation = Literal["elu", "relu"]


def distance_labels(distances: Tensor, hops: int, kind: str = "official") -> Tensor:
    """Targets of EGT's distance-prediction objective from hop distances.

    Args:
        distances: ``[*]`` long, the hop distance ``d`` of each pair where ``d ≤ hops``,
            :data:`~graph_transformers.core.dense.UNREACHABLE` (``-1``) elsewhere (longer paths,
            unreachable pairs, padding), as :meth:`DenseBatch.distances_within` returns them.
        hops: ``ν``.
        kind: ``"official"``: ``ν + 1 − max(d, 1)``, what the authors' TensorFlow code computes
            (``lib/models/graph_model_base.py``, ``add_hops``: ``Σ_{k=1..ν} clip((A + I)^k, 0,
            1)`` with self-loops in ``A + I``, 0 masked out), so a node and its 1-hop neighbours
            share class ``ν`` and class 0 is never a target; ``"spd"``: ``d`` itself (classes
            ``0 … ν``).

    Returns:
        ``[*]`` long: the class of each pair, ``-1`` (ignored) where ``distances`` is ``-1``.

    Raises:
        ValueError: for an unknown ``kind``.
    """
    if kind == "spd":
        return distances
    if kind != "official":
        raise ValueError(f"distance labels must be one of {DISTANCE_LABELS}, got {kind!r}")
    return torch.where(distances >= 0, hops + 1 - distances.clamp(min=1), distances)


@register_model("egt")
@model_config(defaults={"hidden_dim": 64, "edge_hidden_dim": 8, "num_layers": 4, "num_heads": 8})
class EGT(nn.Module):
    """EGT: node and edge embeddings (§3.3), optional SVD or Laplacian positional encodings
    (§3.2), ``num_layers`` :class:`~graph_transformers.nn.EGTLayer` s over the dense batch, a final
    LayerNorm on both channels, and a node / edge / graph head; optionally virtual nodes and the
    distance-prediction objective (§3.3).

    Args:
        hidden_dim: node channel width ``d_h``.
        edge_hidden_dim: edge channel width ``d_e``.
        num_layers: ``L``.
        num_heads: ``H``.
        out_dim: outputs per graph, node or edge (by ``level``).
        level: ``"graph"``, ``"node"`` or ``"edge"`` (one output per edge of ``edge_index``, read
            from the output edge channel of that pair — EGT-Simple reads ``[h_i ∥ h_j ∥ e⁰_ij]``).
        num_node_types / num_node_features: categorical (``x`` long) or continuous node features.
        num_edge_types / num_edge_features: categorical or continuous edge features; pairs
            without an edge
            get a learned masking vector.
        use_edge_features: embed ``edge_attr`` into the input edge channels.
        variant: ``"egt"``, ``"simple"``, ``"constrained"`` or ``"ungated"`` (:data:`VARIANTS`).
        structure: input structural matrix: ``"adjacency"`` (with self-loops, ``A_ij ∈ {0,1}``) or
            ``"distance"`` (``D^(k)``, hops clipped to ``max_hops``).
        max_hops: ``k`` of ``D^(k)``.
        pe: ``"svd"`` (``data.svd_pe [num_nodes, 2r]``), ``"lap"`` (``data.lap_pe``), another
            registered feature encoding (:mod:`graph_transformers.encodings.registry`) or
            ``None`` (the default, as the config section); projected by ``W_enc`` (§3.2).
        pe_dim: ``2r`` for SVD, ``k`` for LapPE.
        sign_flip: random sign flips of the PE in training: ``"graph"`` (default: an independent
            sign per graph and per singular-vector pair / eigenvector, as the official code
            since ``8aa625f`` and ``egt_pytorch``), ``"node"`` (one sign per node over its whole
            ``2r``-vector, as the code behind the paper, ``5a1efb1``), ``"batch"`` (one sign per
            batch) or ``"none"`` (SVD flips singular-vector pairs, Table 8's "augmented").
        num_virtual_nodes: ``q``; the graph embedding is then the concatenation of the virtual
            nodes' outputs (else the mean of the real nodes' outputs).
        distance_objective: add the distance-prediction loss on the output edge channels
            (pairs within ``ν`` hops; longer paths and unreachable pairs ignored), times
            ``distance_weight`` ``κ``. Forces ``structure="adjacency"``.
        distance_hops: ``ν``.
        distance_weight: ``κ``.
        distance_labels: the class of a pair at hop distance ``d ≤ ν``: ``"official"`` (the
            default: the authors' code, ``Σ_{k=1..ν} clip((A + I)^k, 0, 1)``, i.e.
            ``ν + 1 − max(d, 1)``: a node and its neighbours share class ``ν``) or ``"spd"``
            (class ``d``, the paper's ``D^(ν)`` read literally). :func:`distance_labels`.
        node_ffn_multiplier / edge_ffn_multiplier: the layers' node / edge FFN widths, in
            multiples of ``hidden_dim`` / ``edge_hidden_dim``
            (:class:`~graph_transformers.nn.EGTLayer`).
        attn_dropout: dropout on the layers' attention weights.
        dropout: dropout on the outputs of the layers' sublayers.
        clamp: ``c`` of the layers' ``clip(Â, -c, c)`` (paper: 5).
        scale_degree: the KDD version's degree scalers ``log(1 + Σ_j σ(G_ij))`` in the layers
            (the official code's large-scale configs; not with ``variant="ungated"``).
        random_mask_prob: the official random attention masking in training (a layer option;
            the KDD version's configs: 0.1).
        mlp_layers: hidden layers of the heads; widths ``round(d_h/2), round(d_h/4)`` from the
            node width ``d_h`` whatever the head's input (Table 4 and the official ``mlp_out``,
            also for the distance head and the virtual-node readout).
        head_activation: between the head layers: ``"elu"`` (the official code) or ``"relu"``.
        memory_budget_gb: refuse batches whose dense pair tensors would need more (estimated
            before allocation); ``None`` disables the check.

    Forward takes a PyG ``Batch`` and returns a :class:`ModelOutput`, whatever the options:
    ``out [num_graphs | num_nodes | num_edges, out_dim]`` and ``aux_loss``, the weighted distance
    loss with ``distance_objective`` (else ``None``).

    Raises:
        ValueError: for unknown options, or ``distance_objective`` without edge channels.
        DenseBudgetError: for a batch too large for dense attention under the budget.
    """

    def __init__(self, hidden_dim: PositiveInt, edge_hidden_dim: PositiveInt,
                 num_layers: PositiveInt, num_heads: PositiveInt, out_dim: int,
                 level: str = "graph", num_node_types: int | Sequence[int] | None = None,
                 num_node_features: int | None = None,
                 num_edge_types: int | Sequence[int] | None = None,
                 num_edge_features: int | None = None, variant: Variant = "egt",
                 use_edge_features: bool = True, structure: Structure = "adjacency",
                 max_hops: PositiveInt = 16, pe: PEName | None = None, pe_dim: int = 16,
                 sign_flip: SignFlip = "graph", num_virtual_nodes: NonNegativeInt = 0,
                 distance_objective: bool = False, distance_hops: PositiveInt = 3,
                 distance_weight: NonNegativeFloat = 0.0,
                 distance_labels: DistanceLabels = "official",
                 node_ffn_multiplier: PositiveFloat = 2.0,
                 edge_ffn_multiplier: PositiveFloat = 2.0, attn_dropout: Probability = 0.0,
                 dropout: Probability = 0.0, clamp: PositiveFloat = 5.0,
                 scale_degree: bool = False, random_mask_prob: Probability = 0.0,
                 mlp_layers: NonNegativeInt = 2, head_activation: HeadActivation = "elu",
                 memory_budget_gb: PositiveFloat | None = 8.0) -> None:
        """See the class docstring. Long (≈70 lines) on purpose for now: the order in which
        the sub-modules are created is the random-number stream that initialised the committed
        results (``tests/models/test_init_fingerprint.py``); a split must keep that order."""
        super().__init__()
        check_level(level)
        if variant not in VARIANTS:
            raise ValueError(f"unknown EGT variant {variant!r}; known: {sorted(VARIANTS)}")
        if structure not in ("adjacency", "distance"):
            raise ValueError(f"structure must be 'adjacency' or 'distance', got {structure!r}")
        if pe is not None and node_encoding(pe).categorical:
            raise ValueError(f"pe={pe!r} holds categorical ids; EGT projects features "
                             "(W_enc, §3.2): use a feature encoding such as 'svd' or 'lap'")
        check_sign_flip(sign_flip)
        if distance_labels not in DISTANCE_LABELS:
            raise ValueError(f"distance_labels must be one of {DISTANCE_LABELS}, got "
                             f"{distance_labels!r}")
        opts = VARIANTS[variant]
        if distance_objective and not opts["edge_update"]:
            raise ValueError("the distance objective reads the output edge channels, which "
                             "EGT-Simple does not have")
        if distance_objective:
            structure = "adjacency"  # §3.3: else the edge channels could copy their input
        if num_virtual_nodes and level != "graph":
            raise ValueError("virtual nodes feed the graph head; use num_virtual_nodes=0 for "
                             f"level={level!r}")
        self.level, self.variant = level, variant
        self.structure, self.max_hops = structure, max_hops
        self.edge_update, self.constrained = opts["edge_update"], opts["constrained"]
        self.pe, self.sign_flip = pe, sign_flip
        self.num_virtual_nodes = num_virtual_nodes
        self.distance_objective, self.distance_hops = distance_objective, distance_hops
        self.distance_weight, self.distance_labels = distance_weight, distance_labels
        self.use_edge_features = use_edge_features
        self.num_layers, self.num_heads = num_layers, num_heads
        self.edge_hidden_dim = edge_hidden_dim
        self.edge_ffn_multiplier = edge_ffn_multiplier
        self.memory_budget_gb = memory_budget_gb

        self.node_encoder = FeatureEncoder(hidden_dim, num_node_types, num_node_features,
                                           name="node")
        self.pe_encoder = nn.Linear(pe_dim, hidden_dim) if pe else None   # W_enc, §3.2
        if pe:  # its sign flip imported now: forward reads it from the cache (torch.compile)
            node_encoding(pe).flip()
        self.struct_encoder = nn.Embedding(2 if structure == "adjacency" else max_hops + 1,
                                           edge_hidden_dim)
        if use_edge_features:
            self.edge_encoder = FeatureEncoder(edge_hidden_dim, num_edge_types, num_edge_features,
                                               name="edge")
            self.no_edge = nn.Parameter(torch.empty(edge_hidden_dim))     # masking vector
        else:
            self.edge_encoder, self.no_edge = None, None
        if num_virtual_nodes:
            self.virtual_h = nn.Parameter(torch.empty(num_virtual_nodes, hidden_dim))
            self.virtual_e = nn.Parameter(torch.empty(num_virtual_nodes, edge_hidden_dim))
        else:
            self.virtual_h, self.virtual_e = None, None
        # the last layer's edge update (eq. 7 + FFN_e) is only computed when something reads the
        # output edge channels: an edge head or the distance objective
        self.edge_output = opts["edge_update"] and (level == "edge" or distance_objective)
        self.layers = nn.ModuleList(
            EGTLayer(hidden_dim, num_heads, edge_dim=edge_hidden_dim,
                     ffn_dim=ffn_width(hidden_dim, node_ffn_multiplier),
                     edge_ffn_dim=ffn_width(edge_hidden_dim, edge_ffn_multiplier),
                     edge_update=opts["edge_update"], gated=opts["gated"],
                     attn_dropout=attn_dropout,
                     dropout=dropout, clamp=clamp, scale_degree=scale_degree,
                     edge_output=self.edge_output or layer < num_layers - 1,
                     random_mask_prob=random_mask_prob)
            for layer in range(num_layers))
        self.final_norm_h = nn.LayerNorm(hidden_dim)
        self.final_norm_e = nn.LayerNorm(edge_hidden_dim) if self.edge_output else None
        if level == "graph":
            head_in = hidden_dim * max(1, num_virtual_nodes)
        elif level == "node":
            head_in = hidden_dim
        else:
            head_in = edge_hidden_dim if opts["edge_update"] else 2 * hidden_dim + edge_hidden_dim
        self.head = MLPReadout(head_in, out_dim, mlp_layers, head_activation, width=hidden_dim)
        # ν + 1 logits: "official" labels use classes 1…ν (class 0 is never a target, as there)
        self.distance_head = (MLPReadout(edge_hidden_dim, distance_hops + 1, mlp_layers,
                                         head_activation, width=hidden_dim)
                              if distance_objective else None)
        self.reset_parameters()

    @staticmethod
    def config_checks(model) -> None:
        """Cross-checks of the ``model:`` section (:mod:`~graph_transformers.models.registry`).

        Raises:
            ValueError: ``scale_degree`` with EGT-Ungated, ``distance_objective`` with
                EGT-Simple or without ``structure=adjacency``, a categorical ``pe``.
        """
        if model.scale_degree and model.variant == "ungated":
            raise ValueError("model.scale_degree sums the sigmoid gates; EGT-Ungated has none")
        if model.distance_objective and model.variant == "simple":
            raise ValueError("model.distance_objective needs edge channels; EGT-Simple has none")
        if model.pe is not None and node_encoding(model.pe).categorical:
            raise ValueError(f"model.pe={model.pe!r} holds categorical ids; EGT projects "
                             "features (W_enc, §3.2): use svd, lap or rwse")
        if model.distance_objective and model.structure != "adjacency":
            raise ValueError("model.distance_objective uses the adjacency as input (EGT §3.3): "
                             "set model.structure=adjacency")

    def reset_parameters(self) -> None:
        reset_descendants(self)
        for p in (self.no_edge, self.virtual_h, self.virtual_e):
            if p is not None:
                nn.init.normal_(p, std=p.size(-1) ** -0.5)

    # ------------------------------------------------------------------ inputs
    def graph_size_limit(self) -> GraphSizeLimit | None:
        """The largest graph (virtual nodes added) the memory budget admits in training, alone
        in its batch (``None``: no budget)."""
        budget = None if self.memory_budget_gb is None else self.memory_budget_gb * 2 ** 30
        return pair_size_limit(budget, self.bytes_per_pair(), self.num_virtual_nodes,
                               "EGT")

    def bytes_per_pair(self) -> float:
        """Estimated training memory per (graph, i, j) pair, for the dense budget."""
        return pair_bytes(self.num_layers, self.edge_hidden_dim, self.num_heads,
                          self.edge_update, self.edge_ffn_multiplier, training=self.training)

    def _node_inputs(self, data: Batch, dense: DenseBatch) -> Tensor:
        h = self.node_encoder(data.x)
        if self.pe is not None:
            pe = encoding_input(data, self.pe)
            check_encoding_shape(pe, node_encoding(self.pe).name, self.pe_encoder.in_features)
            if self.training:
                pe = flip_signs(pe, self.pe, self.sign_flip, dense.batch, dense.num_graphs)
            h = h + self.pe_encoder(pe)
        return dense.to_dense(h)

    def _edge_inputs(self, data: Batch, dense: DenseBatch) -> tuple[Tensor, Tensor]:
        """Input edge embeddings ``e⁰ [B, N, N, d_e]`` and the adjacency with self-loops."""
        adj = dense.adjacency(self_loops=True)
        if self.structure == "adjacency":
            e = self.struct_encoder(adj.long())
        else:
            e = self.struct_encoder(dense.clipped_distances(self.max_hops))
        if self.use_edge_features:
            feats = self.edge_encoder(data.edge_attr)
            e = e + dense.scatter_edges(feats, fill=self.no_edge)
        return e, adj

    def _add_virtual_nodes(self, h: Tensor, e: Tensor, mask: Tensor, attn_mask: Tensor | None):
        """Prepends ``q`` virtual nodes (§3.3): edges to/from virtual node ``v`` are ``ẽ_v``,
        between virtual nodes ``v, w`` ``½(ẽ_v + ẽ_w)``."""
        B, N, q = h.size(0), h.size(1), self.num_virtual_nodes
        h = torch.cat([self.virtual_h.unsqueeze(0).expand(B, -1, -1), h], dim=1)
        ve = self.virtual_e
        top = torch.cat([0.5 * (ve.unsqueeze(1) + ve.unsqueeze(0)),          # [q, q, d_e]
                         ve.unsqueeze(1).expand(q, N, -1)], dim=1)           # [q, q+N, d_e]
        rows = torch.cat([ve.unsqueeze(0).expand(N, q, -1).unsqueeze(0).expand(B, -1, -1, -1),
                          e], dim=2)                                         # [B, N, q+N, d_e]
        e = torch.cat([top.unsqueeze(0).expand(B, -1, -1, -1), rows], dim=1)
        mask = torch.cat([mask.new_ones(B, q), mask], dim=1)
        if attn_mask is not None:
            full = torch.ones(B, q + N, q + N, dtype=torch.bool, device=h.device)
            full[:, q:, q:] = attn_mask
            attn_mask = full
        return h, e, mask, attn_mask

    # ------------------------------------------------------------------ network
    def encode(self, data: Batch, return_attention_weights: bool = False):
        """Runs the layers on the dense view.

        Returns:
            ``(h [B, q+N, d_h], e [B, q+N, q+N, d_e], dense, e0)`` after the final LayerNorms
            (``e`` is the input embedding ``e⁰`` for EGT-Simple, and the last layer's *input* edge
            channels when nothing reads the output ones, see ``edge_output``), and with
            ``return_attention_weights``
            the per-layer ``Ã [B, H, q+N, q+N]`` list.
        """
        check_inputs(data, need_edge_attr=self.use_edge_features)
        dense = DenseBatch.from_batch(data)
        budget = None if self.memory_budget_gb is None else self.memory_budget_gb * 2 ** 30
        check_dense_budget(dense.budget_sizes, self.bytes_per_pair(), budget,
                           extra_nodes=self.num_virtual_nodes, what="EGT's edge channels")
        h = self._node_inputs(data, dense)
        e, adj = self._edge_inputs(data, dense)
        mask = dense.mask
        attn_mask = None
        if self.constrained:  # eq. 12: N(i) ∪ {i}; the diagonal is kept at padding too
            eye = torch.eye(dense.max_num_nodes, dtype=torch.bool, device=adj.device)
            attn_mask = adj | eye
        if self.num_virtual_nodes:
            h, e, mask, attn_mask = self._add_virtual_nodes(h, e, mask, attn_mask)
        e0 = e
        attentions = []
        for layer in self.layers:
            out = layer.forward_dense(h, e, mask, attn_mask,
                                      return_attention_weights=return_attention_weights,
                                      num_virtual=self.num_virtual_nodes)
            h, e = out.h, out.e
            if return_attention_weights:
                attentions.append(out.attention)
        h = self.final_norm_h(h)
        if self.edge_output:
            e = self.final_norm_e(e)
            if attn_mask is not None:  # EGT-Constrained tracks existing pairs only
                e = e * attn_mask.unsqueeze(-1)
        result = (h, e, dense, e0)
        return result + (attentions,) if return_attention_weights else result

    def _distance_loss(self, e: Tensor, dense: DenseBatch,
                       real_graphs: Tensor | None = None) -> Tensor:
        """Unweighted distance-prediction loss (§3.3), reduced as the official code does: the
        cross-entropy is summed over the node pairs ``(i, j)`` of each graph with
        ``SPD(i, j) ≤ ν`` and averaged over the graphs of the batch, i.e.
        ``(1 / B) Σ_b Σ_{(i, j) ∈ b} CE``. A mean over pairs would make the regularizer about as
        many times weaker as a graph has such pairs: ≈200× on ZINC. ``real_graphs [B]`` (a
        static-shape batch's ``real_graph_mask``): the padding graphs' pairs ignored and the
        average taken over the real graphs."""
        q = self.num_virtual_nodes
        target = distance_labels(dense.distances_within(self.distance_hops), self.distance_hops,
                                 self.distance_labels)
        if real_graphs is not None:
            target = torch.where(real_graphs.view(-1, 1, 1), target,
                                 torch.full_like(target, UNREACHABLE))
        # every pair through the head, the others ignored: no data-dependent shapes (syncs)
        logits = self.distance_head(e[:, q:, q:])
        logits = logits.reshape(-1, logits.size(-1))
        ce = F.cross_entropy(logits.to(torch.promote_types(logits.dtype, torch.float32)),
                             target.view(-1),
                             ignore_index=UNREACHABLE, reduction="sum")
        return ce / (target.size(0) if real_graphs is None else real_graphs.sum())

    def forward(self, data: Batch):
        h, e, dense, e0 = self.encode(data)
        q = self.num_virtual_nodes
        if self.level == "graph":
            if q:
                g = h[:, :q].reshape(h.size(0), -1)
            else:
                m = dense.mask.unsqueeze(-1).to(h.dtype)
                g = (h * m).sum(1) / m.sum(1).clamp(min=1)
            out = self.head(g)
        elif self.level == "node":
            out = self.head(dense.to_sparse(h[:, q:]))
        else:
            b, i, j = dense.edge_pairs()
            if self.edge_update:
                out = self.head(e[:, q:, q:][b, i, j])
            else:
                hr = h[:, q:]
                out = self.head(torch.cat([hr[b, i], hr[b, j], e0[:, q:, q:][b, i, j]], -1))
        aux = (self.distance_weight * self._distance_loss(e, dense,
                                                          getattr(data, "real_graph_mask", None))
               if self.distance_objective else None)
        return ModelOutput(out, aux)

    @torch.no_grad()
    def attention_maps(self, data: Batch) -> tuple[list[Tensor], Tensor]:
        """Head-averaged attention per layer over the real nodes, for analysis (EGT §4.4).

        Returns:
            ``([Ã_ℓ [B, N, N]] per layer, mask [B, N])``: row ``i`` holds query ``i``'s weights
            over keys ``j`` (virtual nodes dropped, padding zero). With gates the rows need not
            sum to one (eq. 4).
        """
        was = self.training
        self.eval()
        try:
            _, _, dense, _, atts = self.encode(data, return_attention_weights=True)
        finally:
            self.train(was)
        q = self.num_virtual_nodes
        pm = dense.pair_mask
        maps = [a.mean(1)[:, q:, q:] * pm for a in atts]
        return maps, dense.mask
