"""MPNN baselines of the papers' tables: GCN, GAT, GatedGCN, GIN, GINE and PNA networks with the
conventions of Dwivedi et al., "Benchmarking Graph Neural Networks" (JMLR 2023), §C.

- input embedding of node (and edge) features to ``hidden_dim`` (an optional positional or
  structural encoding is projected and added, as GT does with LapPE), input dropout;
- ``num_layers`` :class:`~graph_transformers.nn.MPNNBlock` s: convolution, BatchNorm,
  ReLU (ELU for GAT), dropout, residual;
- graph task: mean readout then the 3-layer MLP head (``d → d/2 → d/4 → out``); node task: the
  MLP on each node; edge task: the MLP on ``[h_i ∥ h_j]``. The benchmark's GIN has another head
  (``head="layer_sum"``, graph task only): one linear prediction per layer, pooled, summed.

The convolutions are PyG's (GatedGCN is written here; see :mod:`graph_transformers.nn.mpnn`).
On graphs without edge features GatedGCN starts its edge stream from one learned vector per edge,
which is the benchmark's ``Linear(1, d)`` applied to a constant edge feature of 1.

The same networks express GNN+ (Luo, Shi & Wu, "Can Classic GNNs Be Strong Baselines for
Graph-level Tasks? Simple Architectures Meet Excellence", ICML 2025; code
github.com/LUOyk1999/GNNPlus), classic GCN / GINE / GatedGCN with six additions: edge features
(``use_edge_features``; GCN's through ``gcn_norm="sum"``, the official ``gcne`` layer), BatchNorm
(``norm``, ``ffn_norm``), dropout, residual connections, a feed-forward block after every layer
(``ffn``: :class:`~graph_transformers.nn.mpnn.GNNPlusFFN`) and RWSE concatenated to the node
embedding (``pe="rwse"`` with ``pe_embed_dim``, GraphGPS's ``TypeDictNode+RWSE`` input). The
LRGB configs' head is GraphGPS's ``mlp_graph`` (``head="mlp_graph"``). Every option defaults to
the benchmark network above.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch

from ..nn.convention import ffn_width
from ..nn.mpnn import CONVS, MPNNBlock, make_activation
from .encoders import (FeatureEncoder, encoding_input, feature_encoders, make_pe_encoder,
                       pe_forward)
from .heads import MLPReadout, batch_vector, check_level, graph_readout, level_head
from .registry import (NonNegativeInt, Norm, PEName, PositiveFloat, PositiveInt, Probability,
                       Readout, SignFlip, model_config, register_model)
from .registry import EdgeFeatureUse
from ..nn.reset import reset_children, reset_descendants
from .utils import check_inputs


#: ``activation``: the blocks' activation (``None``: ELU for GAT, ReLU otherwise)
Activation = Literal["relu", "gelu", "elu"]


class MLPGraphHead(nn.Module):
    """GraphGPS's ``mlp_graph`` head, which GNN+'s LRGB configs use (``GNNPlus/head/mlp_graph.py``
    of github.com/LUOyk1999/GNNPlus, ``layers_post_mp = num_layers + 1``): ``num_layers`` blocks
    ``Dropout → Linear(d, d) → σ`` at full width, then ``Dropout → Linear(d, out)``.

    Args:
        in_dim: ``d``.
        out_dim: outputs.
        num_layers: hidden layers.
        activation: ``σ`` (``"relu"``, ``"gelu"`` or ``"elu"``).
        dropout: the dropouts' rate (the official head uses the model's dropout).

    Shapes: ``[*, in_dim] → [*, out_dim]``.

    Raises:
        ValueError: for an unknown activation.
    """

    def __init__(self, in_dim: int, out_dim: int, num_layers: int = 2,
                 activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(num_layers):
            layers += [nn.Dropout(dropout), nn.Linear(in_dim, in_dim), make_activation(activation)]
        layers += [nn.Dropout(dropout), nn.Linear(in_dim, out_dim)]
        self.mlp = nn.Sequential(*layers)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.mlp(x)


@model_config(defaults={"hidden_dim": 64, "num_layers": 4}, heads_divide_hidden=False,
              exclude=("conv",))
class MPNN(nn.Module):
    """A benchmark MPNN network (module docstring) with the convolution ``conv``.

    Args:
        conv: one of :data:`~graph_transformers.nn.mpnn.CONVS` (the registered subclasses fix it).
        hidden_dim: ``d``; for GAT, divisible by ``num_heads`` (``d / H`` channels per head).
        num_layers: ``L``.
        out_dim: outputs per graph, node or edge (by ``level``).
        level: ``"graph"``, ``"node"`` or ``"edge"``.
        num_node_types / num_node_features, num_edge_types / num_edge_features: as
            :class:`~graph_transformers.models.GraphTransformer`.
        use_edge_features: embed ``edge_attr`` and give it to the convolution (GatedGCN, GINE,
            PNA, GAT can use it; GINE requires it).
        num_heads: GAT heads (``hidden_dim / num_heads`` channels each).
        pe: ``"lap"`` (``data.lap_pe``), ``"rwse"`` (``data.rwse``), any other registered node
            encoding (:func:`~.encoders.make_pe_encoder`) or ``None``; projected to ``d`` and
            added to the node embedding (see ``pe_embed_dim``).
        pe_dim: width of the stored encoding.
        pe_embed_dim: ``None``: the encoding is projected to ``d`` and added; a width ``k``: it
            is projected to ``k`` channels and concatenated to a ``d - k`` node embedding
            (GraphGPS's input, which GNN+ uses: ``k = 28`` for RWSE).
        sign_flip: sign flips of the encoding in training (:func:`~.encoders.flip_signs`).
        norm: the blocks' normalization (:class:`~graph_transformers.nn.MPNNBlock`):
            ``"batch"`` (the benchmark's), ``"layer"`` or ``"none"``.
        residual: the blocks' residual connections.
        dropout: dropout after each block's activation (and in the FFN block and the
            ``mlp_graph`` head).
        activation: the blocks' activation, ``"relu"``, ``"gelu"`` or ``"elu"`` (also in the FFN
            block and the ``mlp_graph`` head); ``None``: ELU for GAT, ReLU otherwise.
        ffn: GNN+'s feed-forward block after each block
            (:class:`~graph_transformers.nn.mpnn.GNNPlusFFN`).
        ffn_multiplier: its hidden width in multiples of ``hidden_dim`` (GNN+: 2).
        ffn_norm: its two norms (``None``: ``norm``); GNN+'s GINE has no Norm after the
            convolution but BatchNorm in the FFN block (``norm: none``, ``ffn_norm: batch``).
        in_feat_dropout: dropout on the input embeddings.
        readout: ``"mean"`` (the benchmark's), ``"sum"`` or ``"max"``.
        mlp_layers: hidden layers of the head.
        head: ``"mlp"`` (the MLP above, on the last layer's pooled output) or ``"layer_sum"``
            (graph task only): ``Σ_{l=0..L} Linear_l(pool(h^l))`` over the input embedding and
            every layer's output, ``pool`` the ``readout``, with no hidden layer
            (``mlp_layers`` is unused). This is the head of benchmarking-gnns'
            ``nets/molecules_graph_regression/gin_net.py`` (``linears_prediction`` over
            ``hidden_rep``), which follows Xu et al. (2019), eq. 4.2, and produced the paper's
            GIN rows; on ZINC it is used with ``readout="sum"``. ``"mlp_graph"``: GraphGPS's
            LRGB head (:class:`MLPGraphHead`: ``mlp_layers`` full-width hidden layers with
            dropout).
        gcn_norm: GCN only: ``"sym"`` (PyG's ``GCNConv``), ``"sym_no_self_loops"``, ``"mean"``
            (the benchmark's layer) or ``"sum"`` (no weights, no self-loops; the only one that
            takes edge features: GNN+'s GCN); :class:`~graph_transformers.nn.mpnn.LocalMPNN`.
        gat_self_loops: GAT only: attend over the node itself too (PyG); the benchmark's DGL
            ``GATConv`` does not (``False``).
        deg: PNA's training in-degree histogram.
        pna_towers: PNA towers (``hidden_dim`` must be divisible by them).
        train_eps: GIN / GINE only: ``ε`` learned (the benchmark's GIN) or fixed at 0 (PyG's
            ``GINEConv`` default, GNN+'s GINE).
        gin_mlp_norm: GIN / GINE only: BatchNorm inside the convolution's MLP (the benchmark's
            GIN) or ``Linear → ReLU → Linear`` (GNN+'s GINE).

    Forward: a PyG ``Batch`` (``x``, ``edge_index``, ``batch``, optional ``edge_attr`` and
    encodings) → ``[num_graphs | num_nodes | num_edges, out_dim]``.

    Raises:
        ValueError: for an unknown conv, level, head, activation or encoding, a
            ``pe_embed_dim`` not below ``hidden_dim``, or incompatible options (see
            :class:`~graph_transformers.nn.mpnn.LocalMPNN`); in ``forward``, missing inputs.
    """

    #: set by the registered subclasses
    conv: str | None = None

    def __init__(self, hidden_dim: PositiveInt, num_layers: PositiveInt, out_dim: int,
                 level: str = "graph", num_node_types: int | Sequence[int] | None = None,
                 num_node_features: int | None = None,
                 num_edge_types: int | Sequence[int] | None = None,
                 num_edge_features: int | None = None, use_edge_features: bool = False,
                 num_heads: PositiveInt = 8, pe: PEName | None = None, pe_dim: int = 8,
                 pe_embed_dim: PositiveInt | None = None,
                 sign_flip: SignFlip = "batch", norm: Norm = "batch", residual: bool = True,
                 dropout: Probability = 0.0, in_feat_dropout: Probability = 0.0,
                 activation: Activation | None = None, ffn: bool = False,
                 ffn_multiplier: PositiveFloat = 2.0, ffn_norm: Norm | None = None,
                 readout: Readout = "mean", mlp_layers: NonNegativeInt = 2,
                 deg: Tensor | None = None, pna_towers: PositiveInt = 5, conv: str | None = None,
                 head: Literal["mlp", "layer_sum", "mlp_graph"] = "mlp",
                 gcn_norm: Literal["sym", "sym_no_self_loops", "mean", "sum"] = "sym",
                 gat_self_loops: bool = True, train_eps: bool = True,
                 gin_mlp_norm: bool = True) -> None:
        super().__init__()
        conv = conv or self.conv
        if conv not in CONVS:
            raise ValueError(f"unknown convolution {conv!r}; expected one of {CONVS}")
        check_level(level)
        if head not in ("mlp", "layer_sum", "mlp_graph"):
            raise ValueError(f"head must be 'mlp', 'layer_sum' or 'mlp_graph', got {head!r}")
        if pe is not None and pe_embed_dim is not None and not 0 < pe_embed_dim < hidden_dim:
            raise ValueError(f"pe_embed_dim={pe_embed_dim} must be in (0, hidden_dim="
                             f"{hidden_dim}): the encoding is concatenated to the node embedding")
        if head == "layer_sum" and level != "graph":
            raise ValueError("head='layer_sum' (the benchmark GIN's per-layer predictions) is for "
                             f"graph tasks; this one is a {level} task")
        self.head_kind, self.kind = head, conv
        self.level, self.pe, self.readout = level, pe, readout
        self.use_edge_features = use_edge_features
        # GraphGPS's concatenated input (GNN+): the node embedding leaves pe_embed_dim channels
        self.pe_concat = pe is not None and pe_embed_dim is not None
        if self.pe_concat:  # the edge embedding stays at d
            self.node_encoder = FeatureEncoder(hidden_dim - pe_embed_dim, num_node_types,
                                               num_node_features, name="node")
            self.edge_encoder = (FeatureEncoder(hidden_dim, num_edge_types, num_edge_features,
                                                name="edge") if use_edge_features else None)
        else:
            self.node_encoder, self.edge_encoder = feature_encoders(
                hidden_dim, num_node_types, num_node_features, num_edge_types,
                num_edge_features, use_edge_features)
        # GatedGCN without edge features: the benchmark's Linear(1, d) on a constant 1
        self.edge_constant = (nn.Parameter(torch.empty(hidden_dim))
                              if conv == "gatedgcn" and not use_edge_features else None)
        self.pe_encoder = (make_pe_encoder(pe, pe_dim, pe_embed_dim if self.pe_concat
                                           else hidden_dim, sign_flip) if pe else None)
        self.in_feat_dropout = nn.Dropout(in_feat_dropout)
        conv_edges = use_edge_features or conv == "gatedgcn"
        self.layers = nn.ModuleList(
            MPNNBlock(hidden_dim, conv, use_edge_features=conv_edges, num_heads=num_heads,
                      deg=deg, pna_towers=pna_towers, norm=norm, residual=residual, dropout=dropout,
                      gcn_norm=gcn_norm, gat_self_loops=gat_self_loops, activation=activation,
                      ffn=ffn, ffn_dim=ffn_width(hidden_dim, ffn_multiplier), ffn_norm=ffn_norm,
                      train_eps=train_eps, gin_mlp_norm=gin_mlp_norm)
            for _ in range(num_layers))
        if head == "layer_sum":
            self.head: nn.Module = nn.ModuleList(nn.Linear(hidden_dim, out_dim)
                                                 for _ in range(num_layers + 1))
        elif head == "mlp_graph":
            self.head = MLPGraphHead(2 * hidden_dim if level == "edge" else hidden_dim, out_dim,
                                     mlp_layers, activation or "relu", dropout)
        else:
            self.head = MLPReadout(2 * hidden_dim if level == "edge" else hidden_dim, out_dim,
                                   mlp_layers)
        self.reset_parameters()

    @staticmethod
    def needs_degree_histogram(**_: object) -> bool:
        """Whether the constructor needs ``deg`` (PNA; overridden there)."""
        return False

    @classmethod
    def edge_feature_use(cls, gcn_norm: str = "sym", **_: object) -> EdgeFeatureUse:
        """What the baseline reads of edge features (:class:`~.registry.EdgeFeatureUse`), by its
        convolution: none for GIN and for GCN but with ``gcn_norm="sum"`` (GNN+'s edge GCN);
        GINE cannot run without them."""
        if cls.conv == "gin" or (cls.conv == "gcn" and gcn_norm != "sum"):
            return EdgeFeatureUse("none")
        return EdgeFeatureUse("any", needed_by="gine" if cls.conv == "gine" else None,
                              instead="model.name=gin (or gcn)")

    @staticmethod
    def config_checks(model) -> None:
        """Cross-checks of the ``model:`` section (:mod:`~graph_transformers.models.registry`),
        one section for the six baselines (``model.name`` picks the convolution).

        Raises:
            ValueError: an option of another convolution, ``num_heads`` (GAT) or ``pna_towers``
                (PNA) not dividing ``hidden_dim``, ``use_edge_features`` against what the
                convolution reads, FFN options without ``ffn``, or ``pe_embed_dim`` without
                ``pe`` or not below ``hidden_dim``.
        """
        if model.gcn_norm != "sym" and model.name != "gcn":
            raise ValueError(f"model.gcn_norm applies to gcn only (model.name={model.name!r})")
        if not model.gat_self_loops and model.name != "gat":
            raise ValueError(f"model.gat_self_loops applies to gat only "
                             f"(model.name={model.name!r})")
        if model.name == "gat" and model.hidden_dim % model.num_heads:
            raise ValueError(f"model.hidden_dim={model.hidden_dim} must be divisible by "
                             f"model.num_heads={model.num_heads} (GAT)")
        if model.name == "pna" and model.hidden_dim % model.pna_towers:
            raise ValueError(f"model.hidden_dim={model.hidden_dim} must be divisible by "
                             f"model.pna_towers={model.pna_towers} (PNA)")
        if model.name == "gcn" and model.use_edge_features is True and model.gcn_norm != "sum":
            raise ValueError("gcn takes no edge features unless model.gcn_norm='sum' (GNN+'s "
                             "edge GCN): set model.use_edge_features=false or "
                             "model.gcn_norm='sum'")
        if model.name == "gin" and model.use_edge_features is True:
            raise ValueError(f"{model.name} takes no edge features: set "
                             "model.use_edge_features=false")
        if model.name not in ("gin", "gine") and not (model.train_eps and model.gin_mlp_norm):
            raise ValueError("model.train_eps and model.gin_mlp_norm apply to gin and gine only "
                             f"(model.name={model.name!r})")
        if not model.ffn and (model.ffn_norm is not None or model.ffn_multiplier != 2.0):
            raise ValueError("model.ffn_norm and model.ffn_multiplier size the FFN block: set "
                             "model.ffn=true")
        if model.pe_embed_dim is not None and model.pe is None:
            raise ValueError("model.pe_embed_dim is the width of the concatenated encoding: set "
                             "model.pe (e.g. rwse)")
        if model.pe_embed_dim is not None and model.pe_embed_dim >= model.hidden_dim:
            raise ValueError(f"model.pe_embed_dim={model.pe_embed_dim} must be smaller than "
                             f"model.hidden_dim={model.hidden_dim}")
        if model.name == "gine" and model.use_edge_features is False:
            raise ValueError("gine needs edge features: set model.use_edge_features=true (or "
                             "use gin)")

    def reset_parameters(self) -> None:
        reset_descendants(self)
        if self.edge_constant is not None:
            nn.init.normal_(self.edge_constant, std=1.0)

    def encode(self, data: Batch) -> Tensor:
        """Node embeddings after the last layer, ``[num_nodes, hidden_dim]``."""
        return self.encode_layers(data)[-1]

    def encode_layers(self, data: Batch) -> list[Tensor]:
        """Node embeddings after the input embedding and after each layer: ``num_layers + 1``
        tensors ``[num_nodes, hidden_dim]``."""
        check_inputs(data, need_edge_attr=self.use_edge_features)
        h = self.node_encoder(data.x)
        if self.pe is not None:
            p = pe_forward(self.pe_encoder, encoding_input(data, self.pe),
                           getattr(data, "batch", None), getattr(data, "num_graphs", None),
                           getattr(data, "real_node_mask", None))
            h = torch.cat([h, p], dim=-1) if self.pe_concat else h + p
        h = self.in_feat_dropout(h)
        if self.use_edge_features:
            e = self.edge_encoder(data.edge_attr)
        elif self.edge_constant is not None:
            e = self.edge_constant.expand(data.edge_index.size(1), -1)
        else:
            e = None
        hs = [h]
        # static-shape batches: BatchNorm statistics over the real nodes and edges only
        node_mask = getattr(data, "real_node_mask", None)
        edge_mask = getattr(data, "real_edge_mask", None)
        for layer in self.layers:
            out = layer(h, data.edge_index, e, real_node_mask=node_mask, real_edge_mask=edge_mask)
            h, e = out if isinstance(out, tuple) else (out, e)  # GatedGCN updates e
            hs.append(h)
        return hs

    def forward(self, data: Batch) -> Tensor:
        if self.head_kind == "layer_sum":
            hs = self.encode_layers(data)
            batch, n = batch_vector(data, hs[0]), getattr(data, "num_graphs", 1)
            return sum(lin(graph_readout(h, batch, self.readout, n))
                       for lin, h in zip(self.head, hs))
        return level_head(self.head, self.encode(data), data, self.level, self.readout)


@register_model("gcn")
class GCN(MPNN):
    """GCN baseline (Kipf & Welling 2017) with the benchmark's conventions; see :class:`MPNN`."""
    conv = "gcn"


@register_model("gat")
class GAT(MPNN):
    """GAT baseline (Veličković et al. 2018); see :class:`MPNN`."""
    conv = "gat"


@register_model("gatedgcn")
class GatedGCN(MPNN):
    """GatedGCN baseline (Bresson & Laurent 2017; with edge stream); see :class:`MPNN`."""
    conv = "gatedgcn"


@register_model("gin")
class GIN(MPNN):
    """GIN baseline (Xu et al. 2019); see :class:`MPNN`."""
    conv = "gin"


@register_model("gine")
class GINE(MPNN):
    """GINE baseline (Hu et al. 2020: GIN with edge features); see :class:`MPNN`."""
    conv = "gine"


@register_model("pna")
class PNA(MPNN):
    """PNA baseline (Corso et al. 2020): mean/min/max/std aggregators, identity/amplification/
    attenuation scalers, towers; needs the train split's in-degree histogram ``deg``."""
    conv = "pna"

    @staticmethod
    def needs_degree_histogram(**_: object) -> bool:
        return True


BASELINES: dict[str, type[MPNN]] = {"gcn": GCN, "gat": GAT, "gatedgcn": GatedGCN, "gin": GIN,
                                    "gine": GINE, "pna": PNA}
