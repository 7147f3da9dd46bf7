r"""Exphormer's sparse attention: softmax attention over the graph's edges, a random expander
graph and a few virtual nodes.

Shirzad, Velingker, Venkatachalam, Sutherland & Sinop, "Exphormer: Sparse Transformers for Graphs"
(ICML 2023), §3-4. Each node ``i`` attends over its in-neighbours in the *interaction graph*
:math:`H = G \cup X \cup \mathcal V`:

* (a) :math:`G`, the graph's own edges ``j → i`` (``edge_index``), with their edge features;
* (b) :math:`X`, a random ``d``-regular expander graph on the nodes of ``i``'s graph
  (``expander_index``, precomputed once per graph by
  :class:`~graph_transformers.encodings.expander.AddExpanderGraph`);
* (c) :math:`\mathcal V`, ``num_virtual_nodes`` virtual nodes of ``i``'s graph, each connected to
  every node of that graph.

Per head ``h`` (:math:`d_k = d / H`), with :math:`q_i = W_Q^h x_i`, :math:`k_j = W_K^h x_j`,
:math:`v_j = W_V^h x_j` and :math:`\epsilon_{ji} = W_E^h e_{ji}` the projected feature of the
edge ``j → i`` (the paper's edge features entering the keys, :math:`E^h \odot K^h`):

.. math::
    s^h_{ij} = \frac{\big(q_i \odot k_j \odot \epsilon_{ji}\big)^\top \mathbf 1}{\sqrt{d_k}},
    \qquad
    a^h_{ij} = \frac{\exp s^h_{ij}}{\sum_{(j', t) \in N_H(i)} \exp s^h_{ij'}},
    \qquad
    o^h_i = \sum_{(j, t) \in N_H(i)} a^h_{ij}\, v_j,

and :math:`y_i = [o^1_i \Vert \cdots \Vert o^H_i]\, W_O`. The softmax runs over the *multiset*
:math:`N_H(i)` of ``(source, edge type)`` entries: a pair that is both a graph edge and an
expander edge is two entries with different edge features, as in the paper's union of edge
lists. The edge feature :math:`e_{ji}` is ``edge_attr`` for a graph edge (a learned vector
``edge_emb`` when there is none), a learned ``expander_emb`` for an expander edge and a learned
``virtual_edge_emb`` for a virtual-node edge; one projection :math:`W_E` serves all three.

Virtual nodes inside one layer. Exphormer appends the virtual nodes to the node set and carries
their states from layer to layer. A layer here takes and returns the real nodes only
(``forward(x, edge_index, ...) → x``), so the states of graph ``g``'s virtual nodes are formed at
each layer's input: :math:`z_{g,u} = c_u + \frac{1}{n_g}\sum_{j \in g} x_j` (``virtual_state=
"mean"``, the default: a learned vector per virtual node plus the graph's mean node state, so
global information crosses the graph within the layer) or :math:`z_{g,u} = c_u`
(``"learned"``: Exphormer's first-layer virtual nodes, learned embeddings). Keys and values of
virtual nodes are :math:`W_K z`, :math:`W_V z`; their query rows are not computed (their
outputs would be discarded).

Memory and time are linear in the nodes and edges: :math:`O\big((|E| + |E_X| + N V) H d_k\big)`
for the per-entry scores and messages, with no ``N × N`` tensor. The scores, the softmax and the
weighted sums run in float32 at least (autocast off inside; the output projection runs in the
input's dtype).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.utils import softmax

from ..core.checks import checks_enabled
from .attention import (QKVAttention, acc_dtype, autocast_off, check_batch,
                        check_node_features)

#: how :class:`ExphormerAttention` forms the input states of the virtual nodes
VIRTUAL_STATES = ("mean", "learned")


def _index_shape_ok(index: Tensor | None) -> bool:
    return (isinstance(index, Tensor) and index.dim() == 2 and index.size(0) == 2
            and not index.is_floating_point() and index.dtype != torch.bool)


class ExphormerAttention(QKVAttention):
    r"""Exphormer's sparse multi-head attention (Shirzad et al., ICML 2023; module docstring)
    over the union of the graph's edges, an expander graph and ``num_virtual_nodes`` virtual
    nodes per graph, computed edge by edge (PyG's ``softmax`` over each node's entries).

    For node ``i`` of graph ``g`` and head ``h``:

    .. math::
        o^h_i = \sum_{(j,t) \in N_H(i)}
            \operatorname{softmax}_{(j,t)}\Big(\tfrac{(q_i \odot k_j \odot W_E^h e^t_{ji})^\top
            \mathbf 1}{\sqrt{d_k}}\Big)\, v_j,
        \qquad y_i = \big[o^1_i \Vert \cdots \Vert o^H_i\big] W_O,

    :math:`N_H(i)` = the graph edges ``j → i`` (``t`` = graph, :math:`e = ` ``edge_attr``), the
    expander edges ``j → i`` (``t`` = expander, :math:`e = ` ``expander_emb``) and the virtual
    nodes of ``g`` (``t`` = virtual, :math:`e = ` ``virtual_edge_emb``, states :math:`z_{g,u}` as
    the module docstring). A node with no entry (no edge, no expander edge, no virtual node)
    gets a zero output.

    Args:
        hidden_dim: ``d``; divisible by ``num_heads``.
        num_heads: ``H``.
        edge_dim: width of ``edge_attr`` and of the learned edge-type vectors (default
            ``hidden_dim``).
        num_virtual_nodes: ``V`` virtual nodes per graph (Exphormer's ``num_virt_node``); 0 for
            none.
        dropout: dropout on the attention weights (training only).
        bias: biases of the Q/K/V, edge and output projections.
        virtual_state: ``"mean"`` (default) or ``"learned"``; see the module docstring.
        clamp: scores clamped to ``[-clamp, clamp]`` before the softmax (Exphormer's code clamps
            at 5); ``None`` (default): the exact, max-subtracted softmax.

    Shapes:
        - x: ``[num_nodes, hidden_dim]``; edge_index: ``[2, num_edges]`` (messages flow
          ``edge_index[0] → edge_index[1]``); edge_attr: ``[num_edges, edge_dim]`` or ``None``;
          batch: ``[num_nodes]`` graph ids (``None`` = one graph); expander_index:
          ``[2, E_exp]`` (``data.expander_index``; ``None`` = no expander edges).
        - returns ``[num_nodes, hidden_dim]``; with ``return_attention_weights=True``
          ``(out, (index [2, E_tot], weights [E_tot, num_heads]))``: the entries of the
          interaction graph (graph edges, then expander edges, then one virtual edge per node and
          virtual node), targets in ``index[1]``, and their softmax weights (before dropout; in
          float32 at least).
          Virtual node ``u`` of graph ``b`` has source id ``num_nodes + b * V + u``.

    Memory: :math:`O((|E| + |E_X| + N V) \cdot d)`, linear in nodes and edges (no ``N × N``
    tensor). ``num_graphs`` (PyG's ``data.num_graphs``) sizes the per-graph virtual states;
    without it they get ``num_nodes`` rows (no device sync either way).

    Raises:
        ValueError: for ``hidden_dim`` not divisible by ``num_heads``, a negative
            ``num_virtual_nodes``, an unknown ``virtual_state``, a non-positive ``clamp``; in
            ``forward``, for ``x`` not ``[num_nodes, hidden_dim]``, an ``edge_index`` /
            ``expander_index`` not ``[2, *]`` integer, ``edge_attr`` not ``[num_edges,
            edge_dim]``, a ``batch`` not ``[num_nodes]`` integer, a bad ``num_graphs``, and (on
            CPU tensors, where reading them costs no device sync) node ids out of range or an
            expander edge joining two graphs.

    Example:
        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from graph_transformers.encodings.expander import AddExpanderGraph
        >>> from graph_transformers.nn import ExphormerAttention
        >>> expander = AddExpanderGraph(degree=3, seed=0)
        >>> ring = lambda n: torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
        >>> graphs = [expander(Data(x=torch.randn(n, 16), edge_index=ring(n),
        ...                         edge_attr=torch.randn(n, 16))) for n in (5, 8)]
        >>> data = Batch.from_data_list(graphs)
        >>> att = ExphormerAttention(16, num_heads=4, num_virtual_nodes=1).eval()
        >>> out = att(data.x, data.edge_index, data.edge_attr, data.batch,
        ...           expander_index=data.expander_index)
        >>> out.shape
        torch.Size([13, 16])
        >>> alone = att(graphs[0].x, graphs[0].edge_index, graphs[0].edge_attr,
        ...             expander_index=graphs[0].expander_index)
        >>> torch.allclose(out[:5], alone, atol=1e-6)  # graphs never attend to each other
        True
    """

    def __init__(self, hidden_dim: int, num_heads: int = 1, *, edge_dim: int | None = None,
                 num_virtual_nodes: int = 1, dropout: float = 0.0, bias: bool = True,
                 virtual_state: str = "mean", clamp: float | None = None) -> None:
        super().__init__(hidden_dim, num_heads, bias)
        if not isinstance(num_virtual_nodes, int) or num_virtual_nodes < 0:
            raise ValueError(f"num_virtual_nodes must be an int >= 0, got {num_virtual_nodes!r}")
        if virtual_state not in VIRTUAL_STATES:
            raise ValueError(f"unknown virtual_state {virtual_state!r}; expected one of "
                             f"{VIRTUAL_STATES}")
        if clamp is not None and not clamp > 0:
            raise ValueError(f"clamp must be > 0 or None, got {clamp!r}")
        edge_dim = hidden_dim if edge_dim is None else edge_dim
        self.edge_dim, self.num_virtual_nodes = edge_dim, num_virtual_nodes
        self.virtual_state, self.clamp = virtual_state, clamp
        self.edge_proj = nn.Linear(edge_dim, hidden_dim, bias=bias)
        self.edge_emb = nn.Parameter(torch.empty(edge_dim))
        self.expander_emb = nn.Parameter(torch.empty(edge_dim))
        if num_virtual_nodes:
            self.virtual_edge_emb: nn.Parameter | None = nn.Parameter(torch.empty(edge_dim))
            self.virtual_emb: nn.Parameter | None = nn.Parameter(
                torch.empty(num_virtual_nodes, hidden_dim))
        else:
            self.register_parameter("virtual_edge_emb", None)
            self.register_parameter("virtual_emb", None)
        self.attn_dropout = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Q/K/V and output projections as ``nn.MultiheadAttention``
        (:meth:`.QKVAttention.reset_parameters`), ``nn.Linear``'s default for ``W_E``, and the
        learned vectors ``N(0, 1)`` (``nn.Embedding``'s default, as Exphormer's edge-type
        embeddings)."""
        super().reset_parameters()
        self.edge_proj.reset_parameters()
        for p in (self.edge_emb, self.expander_emb, self.virtual_edge_emb, self.virtual_emb):
            if p is not None:
                nn.init.normal_(p)

    # ------------------------------------------------------------------------- checks
    def _validate(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None,
                  batch: Tensor | None, expander_index: Tensor | None,
                  num_graphs: int | None) -> None:
        check_node_features(self, x)
        name, n = type(self).__name__, x.size(0)
        for what, index in (("edge_index", edge_index), ("expander_index", expander_index)):
            if index is not None and not _index_shape_ok(index):
                shape = (f"{index.dtype} {tuple(index.shape)}" if isinstance(index, Tensor)
                         else type(index).__name__)
                raise ValueError(f"{what} must be an integer tensor [2, num_edges], got {shape}")
        if edge_index is None:
            raise ValueError(f"{name} needs edge_index [2, num_edges] (an empty [2, 0] tensor "
                             "for a graph without edges)")
        if edge_attr is not None and (not isinstance(edge_attr, Tensor) or edge_attr.shape != (
                edge_index.size(1), self.edge_dim)):
            shape = tuple(edge_attr.shape) if isinstance(edge_attr, Tensor) else type(edge_attr)
            raise ValueError(f"edge_attr must be [num_edges={edge_index.size(1)}, "
                             f"edge_dim={self.edge_dim}], got {shape}")
        check_batch(batch, n, num_graphs)
        if not checks_enabled(x):
            return
        for what, index in (("edge_index", edge_index), ("expander_index", expander_index)):
            if index is not None and index.numel() and (int(index.min()) < 0
                                                        or int(index.max()) >= n):
                raise ValueError(f"{what} has node ids in [{int(index.min())}, "
                                 f"{int(index.max())}] but x has {n} nodes")
        if batch is not None and n and (int(batch.min()) < 0 or (
                num_graphs is not None and int(batch.max()) >= num_graphs)):
            raise ValueError(f"batch has graph ids in [{int(batch.min())}, {int(batch.max())}], "
                             f"outside [0, num_graphs={num_graphs})")
        if batch is not None and expander_index is not None and expander_index.numel() and bool(
                (batch[expander_index[0]] != batch[expander_index[1]]).any()):
            raise ValueError("expander_index has edges between different graphs of the batch "
                             "(batch each graph's expander with its graph: PyG's Batch offsets "
                             "data.expander_index by the node counts)")

    # ------------------------------------------------------------------------- forward
    def _virtual_states(self, x: Tensor, batch: Tensor | None, num_graphs: int | None) -> Tensor:
        """The virtual nodes' input states ``z [num_graphs or num_nodes or 1, V, hidden_dim]``
        (module docstring)."""
        u = self.virtual_emb
        if self.virtual_state == "learned":
            rows = 1 if batch is None else (x.size(0) if num_graphs is None else num_graphs)
            return u.unsqueeze(0).expand(rows, -1, -1).to(x.dtype)
        if batch is None:
            mean = x.mean(0, keepdim=True)
        else:
            rows = x.size(0) if num_graphs is None else num_graphs
            total = x.new_zeros(rows, x.size(1)).index_add_(0, batch, x)
            count = x.new_zeros(rows).index_add_(0, batch, torch.ones_like(x[:, 0]))
            mean = total / count.clamp_min(1).unsqueeze(1)
        return u.unsqueeze(0).to(x.dtype) + mean.unsqueeze(1)

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, expander_index: Tensor | None = None,
                num_graphs: int | None = None, return_attention_weights: bool = False
                ) -> Tensor | tuple[Tensor, tuple[Tensor, Tensor]]:
        """See the class docstring."""
        self._validate(x, edge_index, edge_attr, batch, expander_index, num_graphs)
        n, H, dk, V = x.size(0), self.num_heads, self.head_dim, self.num_virtual_nodes
        q, k, v = self.qkv(x).view(n, 3, H, dk).unbind(1)
        gates = [self.edge_proj(edge_attr if edge_attr is not None else self.edge_emb)]
        gates.append(self.edge_proj(self.expander_emb))
        if V:
            gates.append(self.edge_proj(self.virtual_edge_emb))
            z = self._virtual_states(x, batch, num_graphs)  # [G, V, d]
            d = self.hidden_dim
            kz, vz = F.linear(z, self.qkv.weight[d:], None if self.qkv.bias is None
                              else self.qkv.bias[d:]).view(z.size(0), V, 2, H, dk).unbind(2)
        in_dtype = q.dtype  # the projections' dtype (bf16 under autocast)
        dtype = acc_dtype(in_dtype)
        scale = 1.0 / math.sqrt(dk)
        with autocast_off(x):
            q, k, v = q.to(dtype) * scale, k.to(dtype), v.to(dtype)  # q scaled once, on N rows
            g_edge, g_exp = (g.to(dtype).view(-1, H, dk) for g in gates[:2])
            src, dst = edge_index[0], edge_index[1]
            parts = [(q.index_select(0, dst) * k.index_select(0, src) * g_edge).sum(-1)]
            index = [dst]
            if expander_index is not None:
                xs, xd = expander_index[0], expander_index[1]
                parts.append((q.index_select(0, xd) * k.index_select(0, xs) * g_exp).sum(-1))
                index.append(xd)
            if V:
                g_virt = gates[2].to(dtype).view(1, 1, H, dk)
                kz, vz = kz.to(dtype), vz.to(dtype)
                kn = kz.expand(n, -1, -1, -1) if batch is None else kz.index_select(0, batch)
                s_virt = torch.einsum("nhc,nuhc->nuh", q, kn * g_virt)  # [N, V, H]
                parts.append(s_virt.reshape(n * V, H))
                index.append(torch.arange(n, device=x.device).repeat_interleave(V))
            scores = torch.cat(parts)
            if self.clamp is not None:
                scores = scores.clamp(-self.clamp, self.clamp)
            tgt = torch.cat(index)
            weights = softmax(scores, tgt, num_nodes=n)  # [E_tot, H]
            w = self.attn_dropout(weights)
            ne = src.numel()
            out = v.new_zeros(n, H, dk).index_add_(
                0, dst, v.index_select(0, src) * w[:ne].unsqueeze(-1))
            if expander_index is not None:
                nx = expander_index.size(1)
                out = out.index_add_(0, xd, v.index_select(0, xs) * w[ne:ne + nx].unsqueeze(-1))
            if V:
                vn = vz.expand(n, -1, -1, -1) if batch is None else vz.index_select(0, batch)
                out = out + torch.einsum("nuh,nuhc->nhc", w[w.size(0) - n * V:].view(n, V, H), vn)
        y = self.out(out.to(in_dtype).reshape(n, self.hidden_dim))
        if not return_attention_weights:
            return y
        return y, (self._union_index(edge_index, expander_index, batch, n), weights)

    def _union_index(self, edge_index: Tensor, expander_index: Tensor | None,
                     batch: Tensor | None, n: int) -> Tensor:
        """``[2, E_tot]`` (source, target) of the entries, in the order of the weights."""
        parts = [edge_index]
        if expander_index is not None:
            parts.append(expander_index)
        V = self.num_virtual_nodes
        if V:
            nodes = torch.arange(n, device=edge_index.device)
            graph = torch.zeros_like(nodes) if batch is None else batch
            src = n + (graph.unsqueeze(1) * V + torch.arange(V, device=nodes.device)).reshape(-1)
            parts.append(torch.stack([src, nodes.repeat_interleave(V)]))
        return torch.cat([p.to(edge_index.dtype) for p in parts], 1)

    def extra_repr(self) -> str:
        return (f"{self.hidden_dim}, heads={self.num_heads}, edge_dim={self.edge_dim}, "
                f"virtual_nodes={self.num_virtual_nodes}, virtual_state={self.virtual_state!r}"
                + (f", clamp={self.clamp}" if self.clamp is not None else ""))


__all__ = ["ExphormerAttention", "VIRTUAL_STATES"]
