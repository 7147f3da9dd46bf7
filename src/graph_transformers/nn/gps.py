r"""The hybrid Graph Transformer block of GraphGPS: global attention beside a local MPNN.

Müller, Galkin, Morris & Rampášek, "Attending to Graph Transformers" (survey, TMLR 2024), §5.1,
eqs. 40-41, the pre-norm form of the GPS layer of Rampášek et al., "Recipe for a General, Powerful,
Scalable Graph Transformer" (NeurIPS 2022), eqs. 2-4:

.. math::
    h = \mathrm{GlobalAttention}(\mathrm{Norm}(x)) + \mathrm{MPNN}(\mathrm{Norm}(x), A, e) + x,
    \qquad (40)

    y = \mathrm{MLP}(\mathrm{Norm}(h)) + h. \qquad (41)

With ``norm_position="post"`` the block is GraphGPS's own layer (Rampášek et al. 2022,
``graphgps/layer/gps_layer.py``; the paper's eqs. 2-4 do not show the norms), one Norm per branch
after its residual and one after the MLP's:

.. math::
    h = \mathrm{Norm}_\ell(x + \mathrm{MPNN}(x, A, e))
        + \mathrm{Norm}_a(x + \mathrm{GlobalAttention}(x)),
    \qquad y = \mathrm{Norm}_2(h + \mathrm{MLP}(h)).

Edge features go to the MPNN (and to Exphormer attention) only. The attention is chosen from full
softmax attention (:class:`~graph_transformers.nn.attention.FullAttention`, SDPA on the padded
dense batch),
Performer linear attention (:class:`~graph_transformers.nn.linear_attention.PerformerAttention`),
the elu+1 linear attention of Katharopoulos et al. 2020
(:class:`~graph_transformers.nn.kernel_attention.LinearGlobalAttention`), SGFormer's simple global
attention (:class:`~graph_transformers.nn.kernel_attention.SGFormerAttention`; these two per graph
by segment sums on the unpadded nodes), Exphormer's sparse attention over the graph's edges, an
expander graph and virtual nodes (:class:`~graph_transformers.nn.exphormer.ExphormerAttention`,
which also reads the edge features) or none; the MPNN is any message-passing module (as PyG's
``GPSConv(channels, conv, heads)``), one of :data:`~graph_transformers.nn.mpnn.CONVS` by name, or
none.
"""
from __future__ import annotations

import functools

import torch
from torch import Tensor, nn
from torch_geometric.utils import to_dense_batch

from ..core.dense import DenseBatch
from .attention import DEFAULT_ATTENTION_BUDGET_GB, FullAttention, head_dim
from .convention import is_node_batch
from .exphormer import ExphormerAttention
from .kernel_attention import LinearGlobalAttention, SGFormerAttention
from .linear_attention import PerformerAttention
from .mpnn import CONVS, LocalMPNN
from .norm import apply_norm, make_norm
from .reset import reset_children

#: global attention kinds
ATTENTIONS = ("full", "performer", "linear", "sgformer", "exphormer", "none")
#: the global attentions computed on the unpadded nodes by segment sums over ``batch``
SEGMENT_ATTENTIONS = ("linear", "sgformer")
#: where the Norms sit: before each residual branch (the survey) or after each residual (GraphGPS)
NORM_POSITIONS = ("pre", "post")


def check_attention_maps(attention: str, owner: str) -> None:
    """Refuses attention maps of a GPS ``owner`` (``"GPS layer"``, ``"GPS"``: how the message
    names it) whose global attention (one of :data:`ATTENTIONS`) is not ``"full"``.

    Raises:
        NotImplementedError: for the linear attentions (Performer, linear, SGFormer: their
            weights are never formed), Exphormer (its sparse weights come from
            ``ExphormerAttention(..., return_attention_weights=True)``) or ``"none"``.
    """
    if attention == "full":
        return
    why = ("its sparse weights come from ExphormerAttention(..., return_attention_weights=True)"
           if attention == "exphormer" else
           "linear attention weights are never formed, and 'none' has no global attention")
    raise NotImplementedError(f"attention maps need full softmax attention; this {owner} uses "
                              f"attention={attention!r} ({why})")


def _gpsconv_order(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``GPSLayer(channels, conv, heads)`` (PyG's ``GPSConv`` order; a module, an MPNN name or
    ``None`` second) → ``GPSLayer(channels, heads, mpnn=conv)``; other calls unchanged.

    Raises:
        TypeError: for more than 3 positional arguments in that order, or ``conv`` given both
            positionally and as ``mpnn=``.
    """
    if len(args) < 2 or (isinstance(args[1], int) and not isinstance(args[1], bool)):
        return args, kwargs
    if len(args) > 3:
        raise TypeError("GPSLayer(channels, conv, heads) takes at most 3 positional arguments; "
                        "pass the options by keyword")
    if "mpnn" in kwargs:
        raise TypeError("GPSLayer got its MPNN both as the second argument (conv) and as mpnn=")
    return args[:1] + args[2:], {**kwargs, "mpnn": args[1]}


def _accepts_gpsconv_order(init):
    """Decorator of :class:`GPSLayer`'s ``__init__``: also PyG's ``GPSConv(channels, conv,
    heads)`` order (:func:`_gpsconv_order`), without a second signature (``inspect`` shows the
    one of ``init``)."""
    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        args, kwargs = _gpsconv_order(args, kwargs)
        init(self, *args, **kwargs)
    return wrapper


class GPSLayer(nn.Module):
    r"""One GPS block, survey eqs. 40-41 (module docstring).

    Also built in the order of PyG's ``GPSConv(channels, conv, heads)``: ``GPSLayer(d, conv)`` or
    ``GPSLayer(d, conv, heads)``, with ``conv`` the ``mpnn`` below (a module, a name or ``None``).

    Args:
        hidden_dim: ``d``.
        num_heads: heads of the global attention (and of a GAT MPNN); default 1, as ``GPSConv``.
        mpnn: the local message-passing term: a module called as ``mpnn(x, edge_index,
            edge_attr)`` (``mpnn(x, edge_index)`` without edge features) that returns
            ``x [num_nodes, d]`` or ``(x, e_hat)`` (an edge update, added residually to
            ``edge_attr``), e.g. PyG's ``GINEConv(nn, edge_dim=d)``; a name of
            :data:`~graph_transformers.nn.mpnn.CONVS` (the configs' form, built as a
            :class:`~graph_transformers.nn.mpnn.LocalMPNN`); or ``None`` (no local term).
        attention: ``"full"``, ``"performer"``, ``"linear"`` (elu+1 linear attention,
            :class:`~graph_transformers.nn.kernel_attention.LinearGlobalAttention`),
            ``"sgformer"`` (:class:`~graph_transformers.nn.kernel_attention.SGFormerAttention`,
            ``num_heads`` heads of width ``hidden_dim``, averaged), ``"exphormer"``
            (:class:`~graph_transformers.nn.exphormer.ExphormerAttention`: sparse softmax
            attention over the graph's edges, ``expander_index`` and ``num_virtual_nodes``
            virtual nodes; it reads ``edge_attr`` when ``use_edge_features``, else a learned
            vector per graph edge) or ``"none"`` (no global term).
        use_edge_features: the MPNN reads ``edge_attr`` (``[num_edges, d]``). With ``gatedgcn``
            the edge features are also updated: ``e' = e + Dropout(ê)``, where ``ê`` is
            GatedGCN's edge output from ``Norm_e(e)`` (the same pre-norm residual form as eq. 40;
            post-norm: ``e' = Norm_e(e + Dropout(ê))``).
        norm: ``"batch"`` (GraphGPS's default), ``"layer"`` (the survey's) or ``"none"``.
        norm_position: ``"pre"`` (default; the survey's eqs. 40-41, one Norm shared by both
            branches and one before the MLP; a network of these layers ends with a Norm) or
            ``"post"`` (GraphGPS's layer: a Norm after each branch's residual and one after the
            MLP's, three per layer; see the module docstring).
        dropout: dropout on the attention, MPNN and MLP outputs.
        attn_dropout: dropout on the attention weights (full and Exphormer attention).
        ffn_dim: hidden width of the MLP (``Linear → ReLU → Dropout → Linear``; default ``2 · d``).
        num_features: Performer random features (default: see
            :class:`~graph_transformers.nn.linear_attention.PerformerAttention`).
        memory_budget_gb: memory budget of full attention in GiB, ``None`` = unchecked (see
            :class:`~graph_transformers.nn.attention.FullAttention`).
        train_eps: GIN/GINE's ``ε`` is learned (default) or fixed at 0 (GraphGPS); an ``mpnn``
            given by name only.
        deg, pna_towers: PNA's options (:class:`~graph_transformers.nn.mpnn.LocalMPNN`; an
            ``mpnn`` given by name only).
        num_virtual_nodes: Exphormer's virtual nodes per graph (``attention="exphormer"``
            only).

    Shapes:
        - x: ``[num_nodes, hidden_dim]``; batch: ``[num_nodes]`` sorted graph ids (``None`` = one
          graph); edge_index: ``[2, num_edges]``; edge_attr: ``[num_edges, hidden_dim]``.
        - returns ``x [num_nodes, hidden_dim]``; when the MPNN updates the edge features
          (``gatedgcn``, or a module that returns ``(x, e_hat)``), ``(x, edge_attr [num_edges,
          hidden_dim])``.

    Raises:
        ValueError: for an unknown attention/MPNN/norm position, both terms off, bad sizes; in
            ``forward``,
            missing ``edge_attr``, or a batch too large for full attention's memory budget.

    Example:
        A PyG model whose local term is PyG's own ``GINEConv`` (as ``GPSConv``) on a ``Batch``:

        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from torch_geometric.nn import GINEConv, global_add_pool
        >>> from graph_transformers.nn import GPSLayer
        >>> class Net(torch.nn.Module):
        ...     def __init__(self, d=16):
        ...         super().__init__()
        ...         self.emb, self.edge_emb = torch.nn.Linear(3, d), torch.nn.Embedding(4, d)
        ...         mlp = lambda: torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(),
        ...                                           torch.nn.Linear(d, d))
        ...         self.layers = torch.nn.ModuleList(
        ...             GPSLayer(d, GINEConv(mlp()), 4) for _ in range(2))  # as GPSConv
        ...         self.head = torch.nn.Linear(d, 1)
        ...     def forward(self, data):
        ...         x, e = self.emb(data.x), self.edge_emb(data.edge_attr)
        ...         for layer in self.layers:
        ...             x = layer(x, data.edge_index, e, data.batch)  # GINE keeps e
        ...         return self.head(global_add_pool(x, data.batch))
        >>> g = Data(x=torch.randn(4, 3), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]),
        ...          edge_attr=torch.tensor([0, 3, 1]))
        >>> Net()(Batch.from_data_list([g, g])).shape
        torch.Size([2, 1])
    """

    @_accepts_gpsconv_order
    def __init__(self, hidden_dim: int, num_heads: int = 1, *,
                 mpnn: str | nn.Module | None = "gine",
                 attention: str = "full", use_edge_features: bool = True, norm: str = "batch",
                 norm_position: str = "pre", dropout: float = 0.0, attn_dropout: float = 0.0,
                 ffn_dim: int | None = None, num_features: int | None = None,
                 memory_budget_gb: float | None = DEFAULT_ATTENTION_BUDGET_GB,
                 deg: Tensor | None = None, pna_towers: int = 5, train_eps: bool = True,
                 num_virtual_nodes: int = 1) -> None:
        super().__init__()
        if attention not in ATTENTIONS:
            raise ValueError(f"unknown attention {attention!r}; expected one of {ATTENTIONS}")
        if norm_position not in NORM_POSITIONS:
            raise ValueError(f"unknown norm_position {norm_position!r}; expected one of "
                             f"{NORM_POSITIONS}")
        if isinstance(mpnn, str) and mpnn not in CONVS:
            raise ValueError(f"unknown MPNN {mpnn!r}; expected one of {CONVS}, a module or None")
        if not (mpnn is None or isinstance(mpnn, (str, nn.Module))):
            raise ValueError(f"mpnn must be a name of {CONVS}, an nn.Module or None, got "
                             f"{type(mpnn).__name__}")
        if mpnn is None and attention == "none":
            raise ValueError("a GPS layer needs an MPNN, a global attention, or both")
        head_dim(hidden_dim, num_heads)  # raises unless num_heads divides hidden_dim
        self.hidden_dim = hidden_dim
        self.attention_kind = attention
        self.mpnn_kind = mpnn if mpnn is None or isinstance(mpnn, str) else type(mpnn).__name__
        self.use_edge_features = use_edge_features and mpnn is not None
        self.norm_position = norm_position
        post = norm_position == "post"
        # pre: the Norm of both branches' input; post: the Norm after the attention's residual
        self.norm1 = make_norm(norm, hidden_dim) if attention != "none" or not post else None
        # post only: the Norm after the MPNN's residual
        self.norm1_local = make_norm(norm, hidden_dim) if post and mpnn is not None else None
        if attention == "full":
            self.attention: nn.Module | None = FullAttention(
                hidden_dim, num_heads, attn_dropout=attn_dropout,
                memory_budget_gb=memory_budget_gb)
        elif attention == "performer":
            self.attention = PerformerAttention(hidden_dim, num_heads, num_features=num_features)
        elif attention == "linear":
            self.attention = LinearGlobalAttention(hidden_dim, num_heads)
        elif attention == "sgformer":
            self.attention = SGFormerAttention(hidden_dim, num_heads)
        elif attention == "exphormer":
            self.attention = ExphormerAttention(hidden_dim, num_heads,
                                                num_virtual_nodes=num_virtual_nodes,
                                                dropout=attn_dropout)
        else:
            self.attention = None
        self.mpnn = (LocalMPNN(hidden_dim, mpnn, use_edge_features=self.use_edge_features,
                               num_heads=num_heads, deg=deg, pna_towers=pna_towers,
                               gin_mlp_norm=False, train_eps=train_eps)
                     if isinstance(mpnn, str) else mpnn)
        self.norm_e = (make_norm(norm, hidden_dim)
                       if mpnn == "gatedgcn" and self.use_edge_features else None)
        self.norm2 = make_norm(norm, hidden_dim)
        hidden = 2 * hidden_dim if ffn_dim is None else ffn_dim
        self.mlp = nn.Sequential(nn.Linear(hidden_dim, hidden), nn.ReLU(), nn.Dropout(dropout),
                                 nn.Linear(hidden, hidden_dim))
        self.dropout = nn.Dropout(dropout)

    def reset_parameters(self) -> None:
        """Re-initializes every sub-module (PyTorch/PyG defaults; the attention as
        ``nn.MultiheadAttention``, :meth:`.QKVAttention.reset_parameters`)."""
        reset_children(self)

    def _dense(self, xn: Tensor, batch: Tensor | None, dense: DenseBatch | None = None
               ) -> tuple[Tensor, Tensor]:
        if dense is not None:
            return dense.to_dense(xn), dense.mask
        if batch is None:
            return xn.unsqueeze(0), torch.ones(1, xn.size(0), dtype=torch.bool, device=xn.device)
        return to_dense_batch(xn, batch)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, dense: DenseBatch | None = None,
                num_graphs: int | None = None, expander_index: Tensor | None = None,
                real_node_mask: Tensor | None = None, real_edge_mask: Tensor | None = None
                ) -> Tensor | tuple[Tensor, Tensor]:
        """See the class docstring. ``real_node_mask [num_nodes]`` / ``real_edge_mask
        [num_edges]`` (bool; a static-shape batch's real nodes and edges,
        :mod:`graph_transformers.data.static_shapes`) restrict the BatchNorm statistics to
        them (``None``: every row). ``dense`` (the batch's
        :class:`~graph_transformers.core.dense.DenseBatch`, built once per forward by the
        network) makes the padding of the attention input and its inverse index gathers with no
        device sync; without it PyG's ``to_dense_batch`` and a boolean mask are used.
        ``num_graphs`` (``data.num_graphs``) sizes the per-graph sums of ``"linear"`` and
        ``"sgformer"`` attention (see
        :class:`~graph_transformers.nn.kernel_attention.LinearGlobalAttention`) and the virtual
        nodes of ``"exphormer"``; ``expander_index`` (``data.expander_index [2, E_exp]``) is the
        expander graph ``"exphormer"`` attends over (``None``: the graph's edges and the virtual
        nodes only)."""
        if x.dim() != 2 or x.size(1) != self.hidden_dim:
            raise ValueError(f"x must be [num_nodes, {self.hidden_dim}], got {tuple(x.shape)}")
        n = x.size(0)
        if ((is_node_batch(edge_attr, n) and batch is None and edge_index.size(1) != n)
                or (isinstance(batch, Tensor) and batch.is_floating_point())):
            # graph ids where the edge features go, or features where the graph ids go: a layer
            # without edge features would otherwise attend across the graphs of the batch
            raise TypeError("GPSLayer.forward(x, edge_index, edge_attr=None, batch=None): got "
                            "graph ids as edge_attr or floating-point features as batch")
        if self.use_edge_features and (edge_attr is None or edge_attr.shape !=
                                       (edge_index.size(1), self.hidden_dim)):
            shape = None if edge_attr is None else tuple(edge_attr.shape)
            raise ValueError(f"this GPS layer's MPNN uses edge features: edge_attr must be "
                             f"[num_edges={edge_index.size(1)}, {self.hidden_dim}], got {shape}")
        # what the sparse (Exphormer) attention reads besides x
        sparse = (edge_index, edge_attr if self.use_edge_features else None, expander_index)
        if self.norm_position == "post":
            return self._forward_post(x, edge_index, batch, edge_attr, dense, num_graphs, sparse,
                                      real_node_mask, real_edge_mask)
        xn = apply_norm(self.norm1, x, real_node_mask)
        h = x
        e_hat = None
        if self.attention is not None:
            h = h + self.dropout(self._attend(xn, batch, dense, num_graphs, sparse))
        if self.mpnn is not None:
            e_in = apply_norm(self.norm_e, edge_attr, real_edge_mask)
            local, e_hat = self._local(xn, edge_index, e_in)
            h = h + self.dropout(local)
            if e_hat is not None:
                edge_attr = edge_attr + self.dropout(e_hat)
        y = h + self.dropout(self.mlp(apply_norm(self.norm2, h, real_node_mask)))
        return y if e_hat is None else (y, edge_attr)

    def _forward_post(self, x: Tensor, edge_index: Tensor, batch: Tensor | None,
                      edge_attr: Tensor | None, dense: DenseBatch | None,
                      num_graphs: int | None = None, sparse: tuple | None = None,
                      node_mask: Tensor | None = None, edge_mask: Tensor | None = None
                      ) -> Tensor | tuple[Tensor, Tensor]:
        """GraphGPS's post-norm layer (module docstring); the masks as :meth:`forward`'s."""
        h: Tensor | None = None
        e_hat = None
        if self.mpnn is not None:
            local, e_hat = self._local(x, edge_index, edge_attr)
            h = apply_norm(self.norm1_local, x + self.dropout(local), node_mask)
            if e_hat is not None:
                edge_attr = apply_norm(self.norm_e, edge_attr + self.dropout(e_hat), edge_mask)
        if self.attention is not None:
            att = apply_norm(self.norm1, x + self.dropout(self._attend(x, batch, dense,
                                                                       num_graphs, sparse)),
                             node_mask)
            h = att if h is None else h + att
        y = apply_norm(self.norm2, h + self.dropout(self.mlp(h)), node_mask)
        return y if e_hat is None else (y, edge_attr)

    def _attend(self, x: Tensor, batch: Tensor | None, dense: DenseBatch | None,
                num_graphs: int | None = None, sparse: tuple | None = None) -> Tensor:
        """The global attention's output at the real nodes, ``[num_nodes, hidden_dim]``
        (``sparse``: ``(edge_index, edge_attr or None, expander_index or None)`` for
        ``"exphormer"``)."""
        if self.attention_kind == "exphormer":  # edge lists, no padding
            if num_graphs is None and dense is not None:
                num_graphs = dense.num_graphs
            edge_index, edge_attr, expander_index = sparse
            return self.attention(x, edge_index, edge_attr, batch,
                                  expander_index=expander_index, num_graphs=num_graphs)
        if self.attention_kind in SEGMENT_ATTENTIONS:  # no padding: segment sums over batch
            if num_graphs is None and dense is not None:
                num_graphs = dense.num_graphs
            return self.attention(x, batch=batch, num_graphs=num_graphs)
        xd, mask = self._dense(x, batch, dense)
        att = self.attention.forward_dense(xd, mask)
        return dense.to_sparse(att) if dense is not None else att[mask]

    def _local(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None
               ) -> tuple[Tensor, Tensor | None]:
        """The MPNN's ``(x_out [num_nodes, d], e_hat [num_edges, d] or None)``."""
        local = (self.mpnn(x, edge_index, edge_attr) if self.use_edge_features
                 else self.mpnn(x, edge_index))
        return local if isinstance(local, tuple) else (local, None)

    @torch.no_grad()
    def attention_map(self, x: Tensor, batch: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Head-averaged global attention of this layer on its input ``x``.

        Returns:
            ``(weights [batch, N, N], mask [batch, N])``: row i holds query i's weights over keys j;
            rows and columns of padding are 0.

        Raises:
            NotImplementedError: for linear (Performer, linear, SGFormer), Exphormer or no
                global attention (the linear attentions never form the ``N × N`` matrix; their
                weights are only implicit; Exphormer's sparse weights come from
                ``ExphormerAttention(..., return_attention_weights=True)``).
        """
        check_attention_maps(self.attention_kind, "GPS layer")
        xa = self.norm1(x) if self.norm_position == "pre" else x
        dense, mask = self._dense(xa, batch)
        return self.attention.attention_weights(dense, mask).mean(1), mask

    def extra_repr(self) -> str:
        return (f"mpnn={self.mpnn_kind!r}, attention={self.attention_kind!r}, "
                f"norm_position={self.norm_position!r}")
