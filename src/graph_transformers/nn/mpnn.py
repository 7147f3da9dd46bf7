"""Message-passing convolutions (the local "MPNN" of the survey's eq. 40 and the baselines of
Dwivedi et al., "Benchmarking Graph Neural Networks", JMLR 2023), behind one interface.

GCN, GAT, GIN, GINE and PNA are PyG's convolutions (``GCNConv``, ``GATConv``, ``GINConv``,
``GINEConv``, ``PNAConv``); GCN with edge features (GNN+'s, :class:`EdgeGCNConv`) and GNN+'s
feed-forward block (:class:`GNNPlusFFN`) are written here. GatedGCN is written here as a
``MessagePassing``: PyG's
``ResGatedGraphConv`` gates messages with ``σ(W_3 x_i + W_4 x_j [+ W_5 e_ij])`` but neither
normalizes the gates over the neighbourhood (``Σ_j σ_ij + ε``) nor returns the updated edge features
``ê_ij``, which Bresson & Laurent's edge-gated form with its edge stream (the benchmark's GatedGCN)
needs.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, GINConv, GINEConv, MessagePassing, PNAConv

from ..errors import ConfigError
from .attention import acc_dtype
from .norm import apply_norm, make_norm
from .reset import reset_children, reset_descendants

#: convolution names (config ``mpnn`` / model names)
CONVS = ("gcn", "gat", "gatedgcn", "gin", "gine", "pna")
#: convolutions that read edge features (GAT only when built with them)
EDGE_CONVS = ("gatedgcn", "gine", "pna", "gat")
#: PNA's aggregators and scalers on ZINC / the SBM sets (Corso et al. 2020, benchmark config)
PNA_AGGREGATORS = ("mean", "min", "max", "std")
PNA_SCALERS = ("identity", "amplification", "attenuation")
#: GCN neighbourhood normalizations (``gcn_norm``): see :class:`LocalMPNN`
GCN_NORMS = ("sym", "sym_no_self_loops", "mean", "sum")
#: the blocks' activations (``activation``): see :class:`MPNNBlock`
ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "elu": nn.ELU}


def make_activation(name: str) -> nn.Module:
    """``"relu"`` → ``ReLU``, ``"gelu"`` → ``GELU``, ``"elu"`` → ``ELU``.

    Raises:
        ValueError: for another name.
    """
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; expected one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]()


class _ProjectedConv(MessagePassing):
    """A convolution that projects the node features by ``lin`` (``W``, no bias) before the
    aggregation ``aggr`` and adds its own ``bias`` (``b``, ``[out_dim]``) after it; subclasses
    set the message and ``reset_parameters``."""

    def __init__(self, in_dim: int, out_dim: int, aggr: str) -> None:
        super().__init__(aggr=aggr)
        self.lin = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.empty(out_dim))
        self.reset_parameters()

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.lin.in_features}, {self.lin.out_features})"


class MeanGraphConv(_ProjectedConv):
    r"""The GCN layer of benchmarking-gnns as its ZINC numbers were produced: a linear map of the
    mean of the neighbours' features, without a self-loop and without degree normalization.

    .. math::
        h'_i = W \frac{1}{|\mathcal N(i)|} \sum_{j \in \mathcal N(i)} h_j + b.

    This is ``layers/gcn_layer.py`` of github.com/graphdeeplearning/benchmarking-gnns with its
    default ``dgl_builtin=False`` (a copy-source message, a mean reducer, then ``Linear``), the
    default from the first release (March 2020) until the "update framework" commit 1068260
    (May 2022), which switched to DGL's ``GraphConv``. The paper's ≈100k ZINC row (GCN test MAE
    0.459 ± 0.006, 4 seeds) was published in 2020 and cited by EGT in 2021, before that switch,
    so it was trained with this layer. The node's own features reach the next layer only through
    the block's residual.

    A node without in-neighbours gets ``b`` (the mean of no messages is 0, as DGL's built-in
    ``fn.mean``); the 2020 code, with a Python reducer, left such a node's input unaggregated.
    ZINC molecules have no isolated atoms, so the two agree there.

    Shapes: ``x [num_nodes, in_dim]``, ``edge_index [2, num_edges]`` → ``[num_nodes, out_dim]``
    (``edge_attr`` and ``batch`` are accepted for the layer convention and unused).
    """

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__(in_dim, out_dim, aggr="mean")

    def reset_parameters(self) -> None:
        # nn.Linear's own initialization (the benchmark's layer is an nn.Linear)
        full = nn.Linear(self.lin.in_features, self.lin.out_features)
        with torch.no_grad():
            self.lin.weight.copy_(full.weight)
            self.bias.copy_(full.bias)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None) -> Tensor:
        # W·mean(h_j) = mean(W·h_j): project first, then average
        return self.propagate(edge_index, x=self.lin(x), size=(x.size(0), x.size(0))) + self.bias


class EdgeGCNConv(_ProjectedConv):
    r"""GCN with edge features as GNN+ runs it (Luo, Shi & Wu, "Can Classic GNNs Be Strong
    Baselines for Graph-level Tasks?", ICML 2025): each message is the neighbour's projected
    features plus the edge's, through a ReLU, summed without self-loops or degree weights.

    .. math::
        h'_i = b + \sum_{j \in \mathcal N(i)} \operatorname{ReLU}(W h_j + e_{ij}).

    This is the official code's ``GCNConvWithEdges`` (github.com/LUOyk1999/GNNPlus,
    ``GNNPlus/layer/gcn_conv_layer_e.py``, the ``gcne`` layer of its GCN+ configs): a
    ``GCNConv`` built with ``normalize=False, add_self_loops=False`` whose message adds
    ``edge_attr`` and applies ReLU (so no degree normalization reaches the sum). ``W`` has
    ``nn.Linear``'s initialization and ``b`` starts at 0, as there.

    Shapes: ``x [num_nodes, in_dim]``, ``edge_index [2, num_edges]``, ``edge_attr [num_edges,
    out_dim]`` (the embedded edge features; ``batch`` unused) → ``[num_nodes, out_dim]``.

    Raises:
        ValueError: when ``edge_attr`` is missing or not ``[num_edges, out_dim]``.
    """

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__(in_dim, out_dim, aggr="add")

    def reset_parameters(self) -> None:
        self.lin.reset_parameters()
        nn.init.zeros_(self.bias)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None) -> Tensor:
        out_dim = self.lin.out_features
        if edge_attr is None or edge_attr.shape != (edge_index.size(1), out_dim):
            shape = None if edge_attr is None else tuple(edge_attr.shape)
            raise ValueError(f"EdgeGCNConv needs edge_attr [num_edges={edge_index.size(1)}, "
                             f"{out_dim}], got {shape}")
        wx = self.lin(x)
        return self.propagate(edge_index, x=wx, edge_attr=edge_attr.to(wx.dtype),
                              size=(x.size(0), x.size(0))) + self.bias

    def message(self, x_j: Tensor, edge_attr: Tensor) -> Tensor:
        return torch.relu(x_j + edge_attr)


class GNNPlusFFN(nn.Module):
    r"""GNN+'s feed-forward block after a message-passing block.

    The "FFN" of GNN+'s six techniques (Luo, Shi & Wu, ICML 2025), in the order of the official
    code (``_ff_block`` with ``norm1_local`` and ``norm2`` in every ``GNNPlus/layer/*.py``):

    .. math::
        y = \operatorname{Norm}_1(x), \qquad
        x' = \operatorname{Norm}_2\big(y + \operatorname{Dropout}(W_2\,
             \operatorname{Dropout}(\sigma(W_1 y + b_1)) + b_2)\big),

    ``W_1: d → ffn_dim``, ``W_2: ffn_dim → d`` (the official width is ``2d``); the residual adds
    the normalized ``y``, not ``x``.

    Args:
        hidden_dim: ``d``.
        ffn_dim: the hidden width (``None``: ``2 · hidden_dim``, GNN+'s).
        norm: ``"batch"`` (GNN+'s), ``"layer"`` or ``"none"``, for both norms.
        activation: ``σ``: ``"relu"``, ``"gelu"`` or ``"elu"``.
        dropout: both dropouts' rate (GNN+ uses the model's dropout).

    Shapes: ``x [num_nodes, d]`` → ``[num_nodes, d]``.

    Raises:
        ValueError: for an unknown norm or activation.
    """

    def __init__(self, hidden_dim: int, ffn_dim: int | None = None, *, norm: str = "batch",
                 activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        ffn_dim = 2 * hidden_dim if ffn_dim is None else ffn_dim
        self.norm_in = make_norm(norm, hidden_dim)
        self.lin1 = nn.Linear(hidden_dim, ffn_dim)
        self.act = make_activation(activation)
        self.lin2 = nn.Linear(ffn_dim, hidden_dim)
        self.norm_out = make_norm(norm, hidden_dim)
        self.dropout = nn.Dropout(dropout)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x [num_nodes, d]``; ``mask [num_nodes]`` bool (a static-shape batch's real nodes):
        BatchNorm statistics over them only."""
        y = apply_norm(self.norm_in, x, mask)
        return apply_norm(self.norm_out,
                          y + self.dropout(self.lin2(self.dropout(self.act(self.lin1(y))))), mask)


class GatedGCNConv(MessagePassing):
    r"""Residual gated graph convolution with an edge stream: Bresson & Laurent, "Residual Gated
    Graph ConvNets" (2017), eqs. 11-12, in the form with edge features of Dwivedi et al.
    "Benchmarking GNNs" (JMLR 2023), eqs. 22-24. For an edge ``j → i``.

    .. math::
        \hat e_{ij} = C e_{ij} + D h_i + E h_j,
        \qquad \sigma_{ij} = \operatorname{sigmoid}(\hat e_{ij}),

        \hat h_i = A h_i + \frac{\sum_{j \in \mathcal N(i)} \sigma_{ij} \odot B h_j}
                               {\sum_{j \in \mathcal N(i)} \sigma_{ij} + \varepsilon}.

    The norm, activation and residual of the benchmark's layer are applied by the caller.

    Args:
        hidden_dim: ``d`` (nodes and edges).
        eps: ``ε`` of the gate normalization (the benchmark uses ``1e-6``).

    Shapes: ``x [num_nodes, d]``, ``edge_index [2, num_edges]``, ``edge_attr [num_edges, d]``
    (``batch`` unused) → ``(ĥ [num_nodes, d], ê [num_edges, d])``.

    Raises:
        ValueError: when ``edge_attr`` is missing or has the wrong shape.
    """

    def __init__(self, hidden_dim: int, eps: float = 1e-6) -> None:
        super().__init__(aggr="add")
        self.hidden_dim = hidden_dim
        self.eps = eps
        self.A = nn.Linear(hidden_dim, hidden_dim)
        self.B = nn.Linear(hidden_dim, hidden_dim)
        self.C = nn.Linear(hidden_dim, hidden_dim)
        self.D = nn.Linear(hidden_dim, hidden_dim)
        self.E = nn.Linear(hidden_dim, hidden_dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None) -> tuple[Tensor, Tensor]:
        if edge_attr is None or edge_attr.shape != (edge_index.size(1), self.hidden_dim):
            shape = None if edge_attr is None else tuple(edge_attr.shape)
            raise ValueError(f"GatedGCN needs edge_attr [num_edges={edge_index.size(1)}, "
                             f"{self.hidden_dim}], got {shape}")
        src, dst = edge_index
        e_hat = self.C(edge_attr) + self.D(x).index_select(0, dst) + self.E(x).index_select(0, src)
        # gates, sums and the normalizer in float32 (bf16 under autocast would round the sum
        # over a node's neighbours and swallow ε)
        acc = acc_dtype(e_hat.dtype)
        sigma = torch.sigmoid(e_hat.to(acc))
        bx = self.B(x).to(acc)
        # one propagate for numerator and denominator: messages [σ ⊙ B h_j ∥ σ]
        agg = self.propagate(edge_index, bx=bx, sigma=sigma, size=(x.size(0), x.size(0)))
        num, den = agg.split(self.hidden_dim, dim=-1)
        ax = self.A(x)
        return ax + (num / (den + self.eps)).to(ax.dtype), e_hat

    def message(self, bx_j: Tensor, sigma: Tensor) -> Tensor:
        return torch.cat([sigma * bx_j, sigma], dim=-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.hidden_dim})"


def _mlp(dim: int, norm: bool) -> nn.Sequential:
    """``Linear → [BatchNorm] → ReLU → Linear`` (GIN's MLP)."""
    layers: list[nn.Module] = [nn.Linear(dim, dim)]
    if norm:
        layers.append(make_norm("batch", dim))
    layers += [nn.ReLU(), nn.Linear(dim, dim)]
    return nn.Sequential(*layers)


class LocalMPNN(nn.Module):
    """One message-passing convolution chosen by name, with the layer convention's call:
    ``(x, edge_index, edge_attr=None, batch=None) → x_out`` (GatedGCN: ``(x_out, e_hat)``).

    Args:
        hidden_dim: ``d`` (input = output channels; edge features, when used, are also ``d``).
        kind: ``"gcn"`` (Kipf & Welling 2017, eq. 2; by default ``GCNConv`` with self-loops and
            symmetric normalization; see ``gcn_norm``; with edge features GNN+'s
            :class:`EdgeGCNConv`), ``"gat"`` (Veličković et al. 2018,
            eqs. 3-5; ``GATConv`` with ``num_heads`` heads of ``hidden_dim / num_heads``
            channels, concatenated), ``"gatedgcn"``
            (:class:`GatedGCNConv`), ``"gin"`` (Xu et al. 2019, eq. 4.1; ``GINConv`` with a
            learnable ``ε``), ``"gine"`` (Hu et al. 2020, GIN with edge features added to the
            messages; ``GINEConv``), ``"pna"`` (Corso et al. 2020, eq. 8; ``PNAConv``).
            Second, as the convolution of PyG's ``GPSConv(channels, conv, heads)``.
        use_edge_features: the convolution reads ``edge_attr`` (required by ``gatedgcn`` and
            ``gine``; optional for ``gat`` and ``pna``, and for ``gcn`` with ``gcn_norm="sum"``:
            :class:`EdgeGCNConv`; not possible for ``gin``).
        num_heads: GAT heads.
        deg: PNA's in-degree histogram of the training graphs (``[max_degree + 1]`` long). It may
            be left out only to count parameters or to load a checkpoint, which restores the
            degree statistics (buffers); ``forward`` raises until then.
        pna_towers: PNA towers (``hidden_dim`` must be divisible by it).
        gin_mlp_norm: BatchNorm inside GIN/GINE's MLP (the benchmark's GIN has it; GraphGPS's
            GINE does not).
        train_eps: GIN/GINE's ``ε`` is learned (default; the benchmark's GIN) or fixed at 0
            (GraphGPS's GINE, PyG's default).
        gcn_norm: GCN's neighbourhood weighting. ``"sym"`` (default): PyG's ``GCNConv``,
            ``Σ_{j ∈ N(i) ∪ {i}} W h_j / sqrt(d̂_i d̂_j)`` with ``d̂ = degree + 1``.
            ``"sym_no_self_loops"``: the same without the self-loop, ``d`` the plain degree
            (``GCNConv(add_self_loops=False)``; DGL's ``GraphConv(norm="both")``, which
            benchmarking-gnns' ``layers/gcn_layer.py`` uses since May 2022). ``"mean"``:
            :class:`MeanGraphConv`, the benchmark's layer when its published GCN numbers were
            produced. ``"sum"``: ``Σ_{j ∈ N(i)} W h_j + b`` without self-loops or weights
            (``GCNConv(normalize=False, add_self_loops=False)``); with edge features,
            GNN+'s :class:`EdgeGCNConv`.
        gat_self_loops: GAT attends over the node itself as well as its neighbours (PyG's
            default). DGL's ``GATConv``, which benchmarking-gnns' ``layers/gat_layer.py`` wraps,
            attends over the in-neighbours only (``False``).

    ``e_hat`` is GatedGCN's ``[num_edges, d]`` edge update; the other kinds return ``x_out``
    alone.

    Raises:
        TypeError: for a name as ``hidden_dim`` (the width comes first).
        ValueError: for an unknown kind, edge features asked of a convolution that cannot use them
            (or missing where required; GCN reads them only with ``gcn_norm="sum"``), GAT heads
            or PNA towers that do not divide ``hidden_dim``; in ``forward``, a missing
            ``edge_attr`` or unknown PNA degree statistics.
    """

    def __init__(self, hidden_dim: int, kind: str, *, use_edge_features: bool = False,
                 num_heads: int = 8, deg: Tensor | None = None, pna_towers: int = 5,
                 pna_aggregators: Sequence[str] = PNA_AGGREGATORS,
                 pna_scalers: Sequence[str] = PNA_SCALERS, gin_mlp_norm: bool = True,
                 train_eps: bool = True,
                 gcn_norm: str = "sym", gat_self_loops: bool = True) -> None:
        super().__init__()
        if isinstance(hidden_dim, str):  # kind first is not a width: a clear error, not kind=d
            raise TypeError(f"LocalMPNN / MPNNBlock(hidden_dim, kind): the width comes first, "
                            f"got hidden_dim={hidden_dim!r}")
        if kind not in CONVS:
            raise ValueError(f"unknown MPNN {kind!r}; expected one of {CONVS}")
        if use_edge_features and kind == "gcn" and gcn_norm != "sum":
            raise ValueError("the gcn convolution takes no edge features unless "
                             "gcn_norm='sum' (GNN+'s EdgeGCNConv): set use_edge_features=false "
                             "or gcn_norm='sum'")
        if use_edge_features and kind not in EDGE_CONVS + ("gcn",):
            raise ValueError(f"the {kind} convolution takes no edge features: set "
                             "use_edge_features=false (or use gine/gatedgcn/pna/gat)")
        if not use_edge_features and kind in ("gatedgcn", "gine"):
            raise ValueError(f"{kind} needs edge features (use_edge_features=true); for graphs "
                             "without them use gin or gcn")
        if gcn_norm not in GCN_NORMS:
            raise ValueError(f"unknown gcn_norm {gcn_norm!r}; expected one of {GCN_NORMS}")
        self.kind = kind
        self.hidden_dim = hidden_dim
        self.use_edge_features = use_edge_features
        d = hidden_dim
        if kind == "gcn" and use_edge_features:
            self.conv: nn.Module = EdgeGCNConv(d, d)
        elif kind == "gcn":
            self.conv = (MeanGraphConv(d, d) if gcn_norm == "mean" else
                         GCNConv(d, d, add_self_loops=gcn_norm == "sym",
                                 normalize=gcn_norm != "sum"))
        elif kind == "gat":
            if d % num_heads:
                raise ValueError(f"GAT: hidden_dim={d} is not divisible by num_heads={num_heads}")
            self.conv = GATConv(d, d // num_heads, heads=num_heads,
                                edge_dim=d if use_edge_features else None,
                                add_self_loops=gat_self_loops)
        elif kind == "gatedgcn":
            self.conv = GatedGCNConv(d)
        elif kind == "gin":
            self.conv = GINConv(_mlp(d, gin_mlp_norm), train_eps=train_eps)
        elif kind == "gine":
            self.conv = GINEConv(_mlp(d, gin_mlp_norm), train_eps=train_eps)
        else:
            if d % pna_towers:
                raise ValueError(f"PNA: hidden_dim={d} is not divisible by pna_towers={pna_towers}")
            # Without ``deg`` the scalers' average degrees are unknown until a checkpoint (whose
            # buffers hold them) is loaded; ``forward`` refuses to run before that.
            self.register_buffer("degree_known", torch.tensor(deg is not None))
            # a host copy of the buffer, refreshed when a state dict is loaded: forward reads no
            # device value (a sync per step on an accelerator)
            self._degree_known = deg is not None
            self.register_load_state_dict_post_hook(_refresh_degree_known)
            self.conv = PNAConv(d, d, aggregators=list(pna_aggregators),
                                scalers=list(pna_scalers),
                                deg=deg if deg is not None else torch.tensor([0, 1]),
                                edge_dim=d if use_edge_features else None, towers=pna_towers,
                                divide_input=True)

    def reset_parameters(self) -> None:
        self.conv.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
        """``x [num_nodes, d]``, ``edge_index [2, num_edges]``, ``edge_attr [num_edges, d]`` (when
        the convolution uses edges; ``batch`` unused) → ``x_out [num_nodes, d]`` (GatedGCN:
        ``(x_out, e_hat [num_edges, d])``).

        Raises:
            ValueError: for a missing ``edge_attr``, or a PNA built without ``deg`` whose degree
                statistics were not loaded from a checkpoint.
        """
        if self.kind == "pna" and not self._degree_known:
            raise ValueError("this PNA was built without the training in-degree histogram (deg) "
                             "and no checkpoint with its degree statistics was loaded: build it "
                             "with deg (training.build.make_model does, from the train split)")
        if self.use_edge_features:
            if edge_attr is None:
                raise ValueError(f"the {self.kind} convolution was built with edge features: pass "
                                 "edge_attr")
            return self.conv(x, edge_index, edge_attr)
        return self.conv(x, edge_index)

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, edges={self.use_edge_features}"


def _refresh_degree_known(module: LocalMPNN, incompatible_keys) -> None:
    """Load-state-dict post hook of a PNA :class:`LocalMPNN`: the host copy of its
    ``degree_known`` buffer (read once per load, not per forward)."""
    module._degree_known = bool(module.degree_known)


class MPNNBlock(nn.Module):
    """The benchmark's MPNN layer (Dwivedi et al. 2023, §C; Fig. 3): convolution, Norm,
    activation (ELU for GAT, ReLU otherwise), dropout and a residual connection; GatedGCN's edge
    stream gets its own Norm, activation, dropout and residual (their eq. 24). With ``ffn``,
    GNN+'s feed-forward block (:class:`GNNPlusFFN`) follows on the node stream: the GNN+ layer
    of Luo, Shi & Wu (ICML 2025) with its official code's order (conv → Norm → σ → dropout →
    residual → FFN block).

    Args:
        hidden_dim, kind, use_edge_features, num_heads: :class:`LocalMPNN`.
        deg, pna_towers, gcn_norm, gat_self_loops: :class:`LocalMPNN`.
        train_eps, gin_mlp_norm: :class:`LocalMPNN` (GIN / GINE).
        norm: ``"batch"`` (the benchmark's), ``"layer"`` or ``"none"``.
        residual: add the input to the output (both streams).
        dropout: dropout after the activation (and in the FFN block).
        activation: ``"relu"``, ``"gelu"`` or ``"elu"`` for both streams and the FFN block;
            ``None``: the benchmark's (ELU for GAT, ReLU otherwise; ReLU in the FFN block).
        ffn: add GNN+'s feed-forward block after the block.
        ffn_dim: its hidden width (``None``: ``2 · hidden_dim``).
        ffn_norm: its two norms (``None``: ``norm``). GNN+'s GINE layer has BatchNorm there
            but none after the convolution (``norm="none", ffn_norm="batch"``).

    Shapes: ``x [num_nodes, d]``, ``edge_attr [num_edges, d]`` (or ``None``; ``batch`` unused) →
    ``x [num_nodes, d]``; GatedGCN, which updates its edges: ``(x, edge_attr [num_edges, d])``.

    Example:
        GatedGCN blocks (with their edge stream) in a small PyG model on a ``Batch``:

        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from torch_geometric.nn import global_mean_pool
        >>> from graph_transformers.nn import MPNNBlock
        >>> blocks = torch.nn.ModuleList(MPNNBlock(16, "gatedgcn", use_edge_features=True)
        ...                              for _ in range(2))
        >>> g = Data(x=torch.randn(4, 16), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
        ...          edge_attr=torch.randn(3, 16))
        >>> batch = Batch.from_data_list([g, g])
        >>> x, e = batch.x, batch.edge_attr
        >>> for block in blocks:
        ...     x, e = block(x, batch.edge_index, e, batch.batch)
        >>> global_mean_pool(x, batch.batch).shape, e.shape
        (torch.Size([2, 16]), torch.Size([6, 16]))
    """

    def __init__(self, hidden_dim: int, kind: str, *, use_edge_features: bool = False,
                 num_heads: int = 8, deg: Tensor | None = None, pna_towers: int = 5,
                 norm: str = "batch", residual: bool = True, dropout: float = 0.0,
                 gcn_norm: str = "sym", gat_self_loops: bool = True,
                 activation: str | None = None, ffn: bool = False, ffn_dim: int | None = None,
                 ffn_norm: str | None = None, train_eps: bool = True,
                 gin_mlp_norm: bool = True) -> None:
        super().__init__()
        self.conv = LocalMPNN(hidden_dim, kind, use_edge_features=use_edge_features,
                              num_heads=num_heads, deg=deg,
                              pna_towers=pna_towers, gcn_norm=gcn_norm,
                              gat_self_loops=gat_self_loops, train_eps=train_eps,
                              gin_mlp_norm=gin_mlp_norm)
        self.norm = make_norm(norm, hidden_dim)
        self.act = make_activation(activation or ("elu" if kind == "gat" else "relu"))
        self.norm_e = make_norm(norm, hidden_dim) if kind == "gatedgcn" else None
        self.residual = residual
        self.dropout = nn.Dropout(dropout)
        # built last: a block without it draws the same parameters as before it existed
        self.ffn = (GNNPlusFFN(hidden_dim, ffn_dim, norm=ffn_norm or norm,
                               activation=activation or "relu", dropout=dropout)
                    if ffn else None)

    def reset_parameters(self) -> None:
        reset_descendants(self)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, real_node_mask: Tensor | None = None,
                real_edge_mask: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
        """See the class docstring; ``real_node_mask [num_nodes]`` / ``real_edge_mask
        [num_edges]`` (bool; a static-shape batch's real rows,
        :mod:`graph_transformers.data.static_shapes`) restrict the BatchNorm statistics to them.

        Raises:
            ConfigError: for a mask with GIN / GINE's BatchNorm inside the convolution's MLP
                (PyG's ``GINConv`` calls it without a mask: padding would change its
                statistics).
        """
        if real_node_mask is not None and self.conv.kind in ("gin", "gine") and any(
                isinstance(m, nn.modules.batchnorm._BatchNorm) for m in self.conv.conv.modules()):
            raise ConfigError("data.static_shapes cannot mask the BatchNorm inside GIN/GINE's "
                              "MLP: set model.gin_mlp_norm=false or data.static_shapes=false")
        h = self.conv(x, edge_index, edge_attr)
        h, e_hat = h if isinstance(h, tuple) else (h, None)
        h = self.dropout(self.act(apply_norm(self.norm, h, real_node_mask)))
        x = x + h if self.residual else h
        if self.ffn is not None:
            x = self.ffn(x, real_node_mask)
        if e_hat is None:
            return x
        e = self.dropout(self.act(apply_norm(self.norm_e, e_hat, real_edge_mask)))
        return x, (edge_attr + e if self.residual else e)
