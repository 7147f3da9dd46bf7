"""GRPE network (Park et al. 2022) and the pair relations it shares with Graphormer."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any, Literal
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch

from ..core.checks import checks_enabled
from ..core.dense import DenseBatch, GraphSizeLimit, check_dense_budget, pair_size_limit
from ..encodings.spd import PAIR_SELF, num_spd_ids
from ..nn.grpe import EDGE_NONE, EDGE_OFFSET, EDGE_SELF, EDGE_VIRTUAL, GRPEEncodings, GRPELayer
from .encoders import FeatureEncoder
from .heads import MLPReadout
from .registry import (NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt,
                       Probability, model_config, register_model)
from .registry import EdgeFeatureUse
from ..nn.reset import reset_descendants
from .utils import check_inputs

# the pair-edge ids EDGE_NONE, EDGE_SELF, EDGE_VIRTUAL, EDGE_OFFSET (shared by GRPE and Graphormer)
# are defined with the layer (nn.grpe), whose PyG-native forward builds them too


@dataclass
class PairRelations:
    """Dense view of a batch with a virtual node at position 0 of every graph.

    Attributes:
        dense: the :class:`DenseBatch` of the real nodes (``N`` = largest graph).
        mask: ``[B, N + 1]`` bool, ``True`` at the virtual node and real nodes.
        topology: ``[B, N + 1, N + 1]`` long: distance ids ``0 … L``, far ``L + 1``,
            unreachable ``L + 2``, virtual node ``L + 3``.
        edge: ``[B, N + 1, N + 1]`` long: :data:`EDGE_NONE`, :data:`EDGE_SELF`,
            :data:`EDGE_VIRTUAL`, ``EDGE_OFFSET + joint edge type``.
        static: a static-shape batch (``N = static_max_nodes``): the layers run as one group.
    """

    dense: DenseBatch
    mask: Tensor
    topology: Tensor
    edge: Tensor
    static: bool = False


class PairRelationBuilder(nn.Module):
    """Builds :class:`PairRelations` from a batch processed with
    :class:`~graph_transformers.encodings.AddShortestPaths` (cached ``spd`` and ``pair_edge``).

    Edge types of several categorical columns (``num_edge_types`` a sequence, e.g. OGB bonds) are
    combined into one joint id (mixed radix), so a pair has one edge relation; without
    ``num_edge_types`` only the presence of an edge counts.

    Args:
        max_distance: ``L`` the dataset was processed with.
        num_edge_types: categories per edge-feature column, or ``None``.
        bytes_per_pair: the model's memory estimate per (graph, i, j) pair.
        memory_budget_gb: budget of :func:`check_dense_budget` (``None`` = no check).

    Raises (forward):
        ValueError: when the batch lacks ``spd`` / ``pair_edge`` (add ``encodings.spd``), or its ids
            do not fit ``max_distance`` / ``num_edge_types``.
        DenseBudgetError: when the padded batch exceeds the memory budget.
    """

    def __init__(self, max_distance: int, num_edge_types: int | Sequence[int] | None,
                 bytes_per_pair: float, memory_budget_gb: float | None = None,
                 what: str = "dense attention") -> None:
        super().__init__()
        self.max_distance = max_distance
        self.types = (None if num_edge_types is None else
                      [num_edge_types] if isinstance(num_edge_types, int) else
                      list(num_edge_types))
        self.num_topology = num_spd_ids(max_distance) + 1
        self.topology_virtual = num_spd_ids(max_distance)
        self.num_edge = EDGE_OFFSET + (prod(self.types) if self.types else 1)
        self.bytes_per_pair = bytes_per_pair
        self.budget = None if memory_budget_gb is None else memory_budget_gb * 2 ** 30
        self.what = what

    def size_limit(self) -> GraphSizeLimit | None:
        """The largest graph (and its virtual node) the budget admits alone in a batch
        (``None``: no budget), for ``encodings.spd`` to refuse larger graphs early."""
        return pair_size_limit(self.budget, self.bytes_per_pair, 1,
                               self.what.removesuffix(" attention"))

    def _edge_ids(self, raw: Tensor) -> Tensor:
        """``pair_edge [P, C]`` (raw) → ``[P]`` ids."""
        raw = raw.long()
        present = raw[:, 0] >= 0
        if self.types is None:
            joint = torch.zeros_like(raw[:, 0])
        else:
            if raw.size(1) != len(self.types):
                raise ValueError(f"pair_edge has {raw.size(1)} edge-type columns, the model "
                                 f"expects {len(self.types)}")
            joint = torch.zeros_like(raw[:, 0])
            for c, size in enumerate(self.types):
                col = raw[:, c]
                if checks_enabled(col) and bool(present.any()):  # reads values
                    hi = int(col[present].max())
                    if hi >= size:
                        raise ValueError(f"edge type {hi} in column {c} is outside the model's "
                                         f"{size} types")
                joint = joint * size + col.clamp(min=0)
        ids = torch.where(present, joint + EDGE_OFFSET, torch.full_like(joint, EDGE_NONE))
        return ids.masked_fill(raw[:, 0] == PAIR_SELF, EDGE_SELF)

    def forward(self, data: Batch) -> PairRelations:
        spd = getattr(data, "spd", None)
        pair_edge = getattr(data, "pair_edge", None)
        if spd is None or pair_edge is None:
            raise ValueError("the model needs shortest-path and pair-edge relations but the batch "
                             "has no spd / pair_edge: add encodings.spd to the config (the "
                             "AddShortestPaths pre-transform)")
        static = static_max_nodes(data)
        dense = DenseBatch.from_batch(data, max_num_nodes=static)
        # a static-shape batch: (B, N) host ints, no tensor read
        check_dense_budget(dense.budget_sizes, self.bytes_per_pair, self.budget, extra_nodes=1,
                           what=self.what)
        if spd.numel() and checks_enabled(spd) and int(spd.max()) > self.max_distance + 2:
            raise ValueError(f"spd ids reach {int(spd.max())}, above max_distance + 2 = "
                             f"{self.max_distance + 2}: the dataset was processed with another "
                             "encodings.spd.max_distance")
        B, N = dense.num_graphs, dense.max_num_nodes
        dev = dense.mask.device
        topo = torch.full((B, N + 1, N + 1), self.topology_virtual, dtype=torch.long, device=dev)
        topo[:, 1:, 1:] = dense.place_pairs(spd.long(), fill=0)
        edge = torch.full((B, N + 1, N + 1), EDGE_VIRTUAL, dtype=torch.long, device=dev)
        edge[:, 1:, 1:] = dense.place_pairs(self._edge_ids(pair_edge.view(spd.size(0), -1)),
                                            fill=EDGE_NONE)
        mask = torch.cat([dense.mask.new_ones(B, 1), dense.mask], dim=1)
        return PairRelations(dense, mask, topo, edge, static is not None)


def static_max_nodes(data: Batch) -> int | None:
    """The per-graph padded size ``N`` of a static-shape batch (its host int
    ``static_max_nodes``, issue 56), or ``None`` for an ordinary batch.

    Raises:
        ValueError: when ``static_max_nodes`` is not a positive Python int.
    """
    n = getattr(data, "static_max_nodes", None)
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"static_max_nodes must be a positive host int (the padded graph size "
                         f"of a static-shape batch), got {n!r}")
    return n


#: a batch is split into more size groups only while that removes more than this fraction of
#: the padded node pairs (see :func:`size_groups`); 0: only splits that remove some padding
GROUP_PADDING_TOLERANCE = 0.0


def size_groups(num_nodes: Tensor, max_groups: int, host_sizes: Tensor | None = None,
                padding_tolerance: float = GROUP_PADDING_TOLERANCE) -> list[tuple[Tensor, int]]:
    """Splits the graphs of a batch into equal-count groups of similar size (sorted by
    ``num_nodes``): the fewest groups, at most ``max_groups``, whose padded pairs
    ``sum_g B_g * n_g^2`` are within ``1 + padding_tolerance`` of those of ``max_groups``
    groups.

    Every group costs a separate pass of the layers (about 15 small matrix products per layer),
    so a split that removes no padding only adds work: a size-bucketed ZINC batch of 128 (the
    configs' default) often holds graphs of one size and then runs as one group, where a random
    batch (about 2.1x its real pairs padded as one group, 1.5x as two, 1.23x as four) is split
    into ``max_groups``.

    Args:
        num_nodes: ``[B]`` nodes per graph (on the model's device).
        max_groups: the most groups.
        host_sizes: the same sizes on the CPU (:attr:`DenseBatch.host_sizes`); the group sizes
            are then read from it, and only the (stable) sort runs on the device: no sync.
        padding_tolerance: see above; ``0`` keeps splitting while any padding is removed.

    Returns:
        ``[(graph indices [B_g] on num_nodes' device, largest n in the group), …]``; one group
        ``(arange(B), N)`` when ``max_groups == 1``.
    """
    B = num_nodes.numel()
    host = host_sizes if host_sizes is not None else num_nodes.cpu()  # host: fallback
    sizes = host.tolist()  # host: the CPU size table, read once; the rule runs on Python ints
    if max_groups <= 1 or B <= 1:
        return [(torch.arange(B, device=num_nodes.device), max(sizes, default=0))]
    sorted_sizes = sorted(sizes)  # the order of a stable sort, on the host

    def split(g: int) -> list[tuple[int, int]]:  # (start, stop) of each group in sorted order
        bounds = [round(k * B / g) for k in range(g + 1)]
        return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]

    def padded(groups: list[tuple[int, int]]) -> int:
        return sum((b - a) * sorted_sizes[b - 1] ** 2 for a, b in groups)

    most = min(max_groups, B)
    best = padded(split(most))
    groups = next(gs for g in range(1, most + 1)
                  if padded(gs := split(g)) <= (1 + padding_tolerance) * best)
    if len(groups) == 1:
        return [(torch.arange(B, device=num_nodes.device), sorted_sizes[-1])]
    order = torch.argsort(num_nodes, stable=True)  # the same permutation (stable sort)
    return [(order[a:b], sorted_sizes[b - 1]) for a, b in groups]


class TokenPairModel(nn.Module):
    """What :class:`GRPE` and :class:`~graph_transformers.models.Graphormer` share: the nodes of
    each graph in a dense batch behind a learned token at position 0 (GRPE's virtual node,
    Graphormer's graph token), the layers run on groups of graphs of similar size
    (:func:`size_groups`), a final LayerNorm, and the head on the token (graph level) or on each
    node (node level). A subclass builds ``layers``, ``final_norm``, ``head`` and ``_encode``."""

    def _check_options(self, name: str, level: str, size_groups: int, use_edge_features: bool,
                       num_edge_types: Any, num_edge_features: int | None,
                       edge_part: str) -> None:
        """Sets ``level`` and ``size_groups``.

        Raises:
            ValueError: for a level other than graph / node, ``size_groups < 1``, or continuous
                edge features with ``use_edge_features`` (``edge_part`` indexes types).
        """
        if level not in ("graph", "node"):
            raise ValueError(f"{name} predicts per graph or per node, got level={level!r}")
        if size_groups < 1:
            raise ValueError(f"size_groups must be >= 1, got {size_groups}")
        if use_edge_features and num_edge_types is None and num_edge_features is not None:
            raise ValueError(f"{edge_part} index categorical edge types; this dataset has "
                             "continuous edge features: set model.use_edge_features=false (edges "
                             "then count by presence only)")
        self.level, self.size_groups = level, size_groups

    @staticmethod
    def edge_feature_use(**_: object) -> EdgeFeatureUse:
        """What GRPE / Graphormer read of edge features (:class:`~.registry.EdgeFeatureUse`):
        edge types only (their edge embeddings index categories)."""
        return EdgeFeatureUse("categorical")

    def graph_size_limit(self) -> GraphSizeLimit | None:
        """The largest graph the memory budget admits (``relations``' budget, with the token),
        for ``encodings.spd`` to refuse larger graphs before computing them."""
        return self.relations.size_limit()

    def _add_stack(self, layers: Iterable[nn.Module], hidden_dim: int, out_dim: int,
                   mlp_layers: int) -> None:
        """The end of a subclass's ``__init__``: ``layers`` (a ``ModuleList``), ``final_norm``
        (``LayerNorm(hidden_dim)``) and ``head`` (:class:`MLPReadout` with ``mlp_layers``
        hidden layers to ``out_dim``), in this order, then :meth:`reset_parameters`."""
        self.layers = nn.ModuleList(layers)
        self.final_norm = nn.LayerNorm(hidden_dim)
        self.head = MLPReadout(hidden_dim, out_dim, mlp_layers)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every descendant's ``reset_parameters``; a subclass then initializes its token."""
        reset_descendants(self)

    def _embed(self, data: Batch) -> tuple[PairRelations, Tensor]:
        """The start of ``_encode``: checks ``data`` (:func:`~.utils.check_inputs`) and returns
        its pair relations (``self.relations(data)``) and node embeddings ``[num_nodes, d]``
        (``self.node_encoder(data.x)``)."""
        check_inputs(data)
        return self.relations(data), self.node_encoder(data.x)

    @staticmethod
    def _behind_token(h: Tensor, rel: PairRelations, token: Tensor) -> Tensor:
        """``h [num_nodes, d]`` as the dense batch ``[B, N + 1, d]`` of ``rel`` behind the
        learned ``token [d]`` at position 0 of every graph."""
        x = rel.dense.to_dense(h)
        return torch.cat([token.view(1, 1, -1).expand(x.size(0), 1, -1), x], dim=1)

    def _in_groups(self, x: Tensor, rel: PairRelations, num_heads: int,
                   run: Callable[[tuple], tuple[Tensor, list[Tensor]]],
                   return_attention_weights: bool) -> tuple[Tensor, list[Tensor]]:
        """``final_norm`` of the layers' output on ``x [B, N + 1, d]`` and, on request, each
        layer's weights ``[B, H, N + 1, N + 1]`` (zero beyond a graph's group size), where
        ``run((graphs, nodes))`` runs the layers on ``x[graphs, nodes]`` and returns
        ``(x_g, [weights per layer])``; one ``run(None)`` on the whole batch when there is one
        group: always with ``size_groups == 1`` and on static-shape batches (their shapes must
        not depend on the graphs' sizes), with no host read."""
        if self.size_groups == 1 or rel.static:
            out, weights = run(None)
            return self.final_norm(out), weights
        groups = size_groups(rel.dense.num_nodes, self.size_groups, rel.dense.host_sizes)
        if len(groups) == 1:
            out, weights = run(None)
            return self.final_norm(out), weights
        B, N1 = x.size(0), x.size(1)
        out = x.new_zeros(x.shape)
        weights = ([x.new_zeros(B, num_heads, N1, N1) for _ in self.layers]
                   if return_attention_weights else [])
        for idx, n in groups:
            xg, wg = run((idx, slice(0, n + 1)))
            out = out.index_put((idx,), nn.functional.pad(xg, (0, 0, 0, N1 - n - 1)))
            for w, w_g in zip(weights, wg):
                w[idx, :, :n + 1, :n + 1] = w_g
        return self.final_norm(out), weights

    def forward(self, data: Batch) -> Tensor:
        x, rel, _ = self._encode(data)
        if self.level == "graph":
            return self.head(x[:, 0])
        return self.head(rel.dense.to_sparse(x[:, 1:]))

    @torch.no_grad()
    def attention_maps(self, data: Batch) -> tuple[list[Tensor], Tensor]:
        """Head-averaged attention of every layer over the real nodes of each graph.

        Returns:
            ``([A_1 … A_L], mask)``: ``A_l [B, N, N]`` (row ``i`` = query ``i``'s weights over keys
            ``j``; the token's row and column dropped, padding ``0``) and ``mask [B, N]`` bool at
            real nodes.
        """
        _, rel, weights = self._encode(data, return_attention_weights=True)
        pm = rel.dense.pair_mask
        maps = [w.mean(1)[:, 1:, 1:].masked_fill(~pm, 0.0) for w in weights]
        return maps, rel.dense.mask


@register_model("grpe")
@model_config(defaults={"hidden_dim": 80, "num_layers": 12, "num_heads": 8},
              encoding_args={"max_distance": "spd.max_distance"})
class GRPE(TokenPairModel):
    """GRPE (Park et al. 2022): node embeddings, a virtual node, ``num_layers``
    :class:`~graph_transformers.nn.GRPELayer` s with node-aware attention and graph-encoded values
    (eqs. 6-9), a final LayerNorm and a head on the virtual node (graph tasks) or on each node
    (node tasks).

    Args:
        hidden_dim: ``d_z`` (GRPE-Small, Table 1: 80).
        num_layers: layers (Table 1).
        num_heads: attention heads (Table 1).
        out_dim: outputs per graph or node.
        level: ``"graph"`` or ``"node"``.
        num_node_types / num_node_features: categorical / continuous node features (see
            :class:`~graph_transformers.models.encoders.FeatureEncoder`).
        num_edge_types: categorical edge types per column (``None``: edges only by presence).
        num_edge_features: continuous edge features are not supported by GRPE's edge encodings
            (error).
        use_edge_features: use the edge types (else only presence).
        max_distance: ``L`` (must equal the ``encodings.spd.max_distance`` of the data; a run
            passes that).
        ffn_dim: FFN width (``None``: ``d_z``, Table 1).
        dropout: dropout in the layers (official default 0.1).
        attn_dropout: dropout on the attention weights (official default 0.1).
        input_noise: uniform noise ``U(-s, s)`` added to the node embeddings in training (the
            official ``perturb_noise``; 0.2 on ZINC).
        share_encodings: one set of topology/edge encodings for all layers (Table 10 "shared").
        topology_attention: the topology terms ``q·P^q + k·P^k`` of the attention scores (a
            Table 9 switch).
        edge_attention: the edge terms ``q·E^q + k·E^k`` of the attention scores (a Table 9
            switch).
        graph_encoded_value: the values ``v_j + P^v + E^v`` (graph-encoded values; a Table 9
            switch).
        attention_impl: ``"gather"`` or ``"materialized"`` (see :class:`GRPEAttention`).
        mlp_layers: hidden layers of the :class:`MLPReadout` head (0 = linear, as official).
        memory_budget_gb: dense-attention memory budget per batch (``None`` = unchecked).
        size_groups: the layers run on up to this many groups of graphs of similar size (graphs
            sorted by size, equal-count groups, each padded to its own largest graph; fewer where
            more would remove no padding, see :func:`size_groups`), which cuts the padded pairs
            of a random batch by about 40%; the result is the same as one padded batch (every
            operation is per graph). Every group is a pass of the layers: 4 groups dispatch
            about 4x the operations of one, which is what a GPU step costs (issue 56), while on
            a CPU, where arithmetic dominates, they made a ZINC step about 25% faster
            (``benchmarks/results/grpe_zinc_speed_idle.md``). Static-shape batches
            (``static_max_nodes``) always run as one group.

    Forward takes a PyG ``Batch`` with ``x``, ``edge_index``, ``spd`` and ``pair_edge`` and
    returns ``[num_graphs, out_dim]`` or ``[num_nodes, out_dim]``.

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
                 input_noise: NonNegativeFloat = 0.0, share_encodings: bool = True,
                 topology_attention: bool = True, edge_attention: bool = True,
                 graph_encoded_value: bool = True,
                 attention_impl: Literal["gather", "materialized"] = "gather",
                 mlp_layers: NonNegativeInt = 0, memory_budget_gb: PositiveFloat | None = 4.0,
                 size_groups: PositiveInt = 4) -> None:
        super().__init__()
        self._check_options("GRPE", level, size_groups, use_edge_features, num_edge_types,
                            num_edge_features, "GRPE's edge encodings")
        self.input_noise = input_noise
        self.share_encodings = share_encodings
        self.node_encoder = FeatureEncoder(hidden_dim, num_node_types, num_node_features,
                                           name="node")
        self.virtual_node = nn.Parameter(torch.empty(hidden_dim))
        # per pair and layer: ~8 float [H] tensors kept for backward (scores, gathers, softmax,
        # dropout) plus the long relation ids
        self.relations = PairRelationBuilder(
            max_distance, num_edge_types if use_edge_features else None,
            bytes_per_pair=num_layers * num_heads * 4 * 8 + 64,
            memory_budget_gb=memory_budget_gb, what="GRPE attention")
        T, E = self.relations.num_topology, self.relations.num_edge
        n_enc = 1 if share_encodings else num_layers
        self.encodings = nn.ModuleList(GRPEEncodings(T, E, hidden_dim) for _ in range(n_enc))
        layers = (
            GRPELayer(hidden_dim, num_heads, ffn_dim=ffn_dim, dropout=dropout,
                      attn_dropout=attn_dropout, topology_attention=topology_attention,
                      edge_attention=edge_attention, graph_encoded_value=graph_encoded_value,
                      attention_impl=attention_impl)
            for _ in range(num_layers))
        self._add_stack(layers, hidden_dim, out_dim, mlp_layers)

    def reset_parameters(self) -> None:
        super().reset_parameters()
        nn.init.normal_(self.virtual_node)

    def _encode(self, data: Batch, return_attention_weights: bool = False):
        rel, h = self._embed(data)
        if self.training and self.input_noise > 0:
            h = h + torch.empty_like(h).uniform_(-self.input_noise, self.input_noise)
        x = self._behind_token(h, rel, self.virtual_node)

        tables: dict = {}  # the encodings' tables, once per forward (see _layers)

        def run(sl: tuple | None) -> tuple[Tensor, list[Tensor]]:
            if sl is None:  # the whole batch
                return self._layers(x, rel.topology, rel.edge, rel.mask,
                                    return_attention_weights, tables)
            idx, nodes = sl
            return self._layers(x[sl], rel.topology[idx, nodes, nodes], rel.edge[idx, nodes, nodes],
                                rel.mask[sl], return_attention_weights, tables)

        out, weights = self._in_groups(x, rel, self.layers[0].attn.num_heads, run,
                                       return_attention_weights)
        return out, rel, weights

    def _layer_encodings(self, i: int) -> GRPEEncodings:
        return self.encodings[0 if self.share_encodings else i]

    def _layers(self, x: Tensor, topology: Tensor, edge: Tensor, mask: Tensor,
                return_attention_weights: bool, tables: dict) -> tuple[Tensor, list[Tensor]]:
        """The layers on one group; ``tables`` caches the encodings' tables over the groups of a
        forward, keyed by (encodings, fused)."""
        weights = []
        # the gather / scatter indices of the relations, once per (group of a) batch: every
        # layer has the same switches and vocabularies
        first = self.layers[0].attn
        relations = (first.prepare_relations(topology, edge, self._layer_encodings(0), mask)
                     if first.attention_impl == "gather" else None)
        for i, layer in enumerate(self.layers):
            enc = self._layer_encodings(i)
            tab = None
            if relations is not None:
                key = (0 if self.share_encodings else i, relations.fused)
                if key not in tables:
                    tables[key] = layer.attn.prepare_tables(enc, relations)
                tab = tables[key]
            x, w = layer.forward_dense(x, topology, edge, enc, mask, return_attention_weights,
                                       relations=relations, tables=tab)
            if return_attention_weights:
                weights.append(w)
        return x, weights

