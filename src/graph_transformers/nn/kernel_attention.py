r"""Linear-time global attention over the nodes of each graph, computed with segment sums.

Two layers whose attention never forms the ``N × N`` matrix (survey §5.3, "Global Attention and
Scaling to Large Graphs": linear-complexity approximations of all-pair attention, and "a single
global attention layer working in parallel with a deep MPNN"):

* :class:`LinearGlobalAttention`: the kernelized linear attention of Katharopoulos, Vyas, Pappas &
  Fleuret, "Transformers are RNNs: Fast Autoregressive Transformers with Linear Attention" (ICML
  2020), §3.2, with the feature map :math:`\phi(x) = \mathrm{elu}(x) + 1` (their §3.2.1):

  .. math::
      o_i = \frac{\phi(q_i)^\top \sum_{j} \phi(k_j)\, v_j^\top}
                 {\phi(q_i)^\top \sum_{j} \phi(k_j) + \varepsilon},

  per head, the heads concatenated and projected (``W_O``).

* :class:`SGFormerAttention`: the "simple global attention" of Wu, Zhao, Yang, Li, Jin & Yan,
  "SGFormer: Simplifying and Empowering Transformers for Large-Graph Representations" (NeurIPS
  2023): with :math:`\tilde Q = Q / \lVert Q\rVert_F`, :math:`\tilde K = K / \lVert K\rVert_F`,

  .. math::
      D = \operatorname{diag}\Big(\mathbf 1 + \tfrac1N \tilde Q (\tilde K^\top \mathbf 1)\Big),
      \qquad
      \mathrm{Attn}(X) = D^{-1}\Big(V + \tfrac1N \tilde Q (\tilde K^\top V)\Big),

  that is :math:`o_i = \big(N v_i + \tilde q_i^\top \tilde K^\top V\big) / \big(N +
  \tilde q_i^\top \tilde K^\top \mathbf 1\big)`, averaged over heads.

Both sums :math:`\sum_j` run over the nodes ``j`` of node ``i``'s own graph (and ``N`` is that
graph's size): the per-graph statistics :math:`\sum_j \phi(k_j) v_j^\top` (``[H, d_k, d_v]``)
and :math:`\sum_j \phi(k_j)` are segment sums over ``batch`` (``index_add_``), gathered back to
each node, so a batch is never padded to ``[B, N_max, ·]`` and graphs of one batch never attend to
each other. Time is :math:`O(N d\, d_k)`; memory :math:`O(N d + H d_k d_v)` for one graph
(``batch=None`` or ``num_graphs=1``, plain matrix products) and :math:`O(N H d_k d_v)` for a
batch of several graphs (the per-node outer products :math:`\phi(k_j) v_j^\top` before their
segment sum, and the per-graph statistics gathered to each node): linear in ``N``, against the
:math:`O(B H N_{max}^2)` of softmax attention.

The sums, normalizers and ratios run in float32 at least (autocast off inside; the output is cast
back to the input's dtype), as :class:`~graph_transformers.nn.linear_attention.PerformerAttention`.
"""
from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import (QKVAttention, acc_dtype, autocast_off, check_batch,
                        check_node_features)

#: how :class:`SGFormerAttention` normalizes ``Q`` and ``K``
QK_NORMS = ("frobenius", "row")


# ----------------------------------------------------------------------------- segment helpers
def segment_sum(src: Tensor, batch: Tensor | None, num_graphs: int | None = None) -> Tensor:
    """Sums of ``src [num_nodes, *]`` over the nodes of each graph.

    Args:
        src: ``[num_nodes, *]``.
        batch: ``[num_nodes]`` graph id of each node (any order); ``None`` = one graph.
        num_graphs: rows of the output; ``None`` sizes it by ``num_nodes`` (an upper bound of
            the graph ids of a batch without empty graphs, read without a device sync; the rows
            past the last id stay zero).

    Returns:
        ``[num_graphs, *]`` (``[1, *]`` for ``batch=None``).
    """
    if batch is None:
        return src.sum(0, keepdim=True)
    size = src.size(0) if num_graphs is None else num_graphs
    return src.new_zeros((size,) + tuple(src.shape[1:])).index_add_(0, batch, src)


def _gather(seg: Tensor, batch: Tensor | None) -> Tensor:
    """Per-graph rows ``[num_graphs, *]`` back to each node, ``[num_nodes, *]`` (``batch=None``:
    the one row, broadcastable)."""
    return seg if batch is None else seg.index_select(0, batch)


def kernel_sums(fq: Tensor, fk: Tensor, v: Tensor, batch: Tensor | None = None,
                num_graphs: int | None = None) -> tuple[Tensor, Tensor]:
    r"""The numerator and normalizer of kernelized attention, per graph.

    For each node ``i`` of graph ``g`` and head ``h``:
    :math:`\mathrm{num}_i = f^q_i{}^\top \sum_{j \in g} f^k_j v_j^\top` and
    :math:`\mathrm{den}_i = f^q_i{}^\top \sum_{j \in g} f^k_j`.

    Args:
        fq: ``[num_nodes, heads, m]`` query features.
        fk: ``[num_nodes, heads, m]`` key features.
        v: ``[num_nodes, heads, d_v]``.
        batch: ``[num_nodes]`` graph id of each node (any order); ``None`` = one graph (as
            :func:`segment_sum`).
        num_graphs: the number of graphs, as :func:`segment_sum` (``None``: sized by
            ``num_nodes``).

    Returns:
        ``(num [num_nodes, heads, d_v], den [num_nodes, heads])``.

    One graph (``batch=None``, or ``num_graphs=1``: a batch of one graph, as a Cluster-GCN or
    neighbour-sampled batch) takes plain matrix products: no ``[num_nodes, heads, m, d_v]``
    outer products, 2× faster on 10⁴-node batches.
    """
    if batch is None or num_graphs == 1:  # one graph: plain products, no per-node outer product
        kv = torch.einsum("nhm,nhd->hmd", fk, v)
        num = torch.einsum("nhm,hmd->nhd", fq, kv)
        den = torch.einsum("nhm,hm->nh", fq, fk.sum(0))
        return num, den
    kv = segment_sum(fk.unsqueeze(-1) * v.unsqueeze(-2), batch, num_graphs)  # [B, H, m, d_v]
    ks = segment_sum(fk, batch, num_graphs)  # [B, H, m]
    num = torch.einsum("nhm,nhmd->nhd", fq, _gather(kv, batch))
    den = (fq * _gather(ks, batch)).sum(-1)
    return num, den


def elu_feature_map(x: Tensor) -> Tensor:
    r""":math:`\phi(x) = \mathrm{elu}(x) + 1` (Katharopoulos et al. 2020, §3.2.1): positive,
    so every normalizer is > 0."""
    return F.elu(x) + 1.0


def kernelized_attention(q: Tensor, k: Tensor, v: Tensor, batch: Tensor | None = None,
                         num_graphs: int | None = None, eps: float = 1e-6) -> Tensor:
    r"""Linear attention :math:`o_i = \phi(q_i)^\top S_g / (\phi(q_i)^\top z_g + \varepsilon)`,
    :math:`S_g = \sum_{j \in g} \phi(k_j) v_j^\top`, :math:`z_g = \sum_{j\in g} \phi(k_j)`,
    :math:`\phi = \mathrm{elu} + 1` (module docstring), per graph and head.

    Args:
        q: queries ``[num_nodes, heads, d_k]``.
        k: keys ``[num_nodes, heads, d_k]``.
        v: values ``[num_nodes, heads, d_v]``.
        batch: ``[num_nodes]`` graph id of each node (any order); ``None`` = one graph (as
            :func:`segment_sum`).
        num_graphs: the number of graphs, as :func:`segment_sum` (``None``: sized by
            ``num_nodes``).
        eps: added to the normalizer (the reference implementation's ``1e-6``).

    Returns:
        ``[num_nodes, heads, d_v]``.
    """
    num, den = kernel_sums(elu_feature_map(q), elu_feature_map(k), v, batch, num_graphs)
    return num / (den + eps).unsqueeze(-1)


def graph_frobenius_norm(t: Tensor, batch: Tensor | None = None, num_graphs: int | None = None,
                         eps: float = 1e-12) -> Tensor:
    r""":math:`\lVert T_g\rVert_F` of each node's graph ``g`` over its nodes, heads and channels,
    at least ``eps``; ``t [num_nodes, heads, c]`` → ``[num_nodes, 1, 1]`` (``[1, 1, 1]`` for
    ``batch=None``)."""
    sq = segment_sum(t.square().sum((1, 2)), batch, num_graphs)  # [B]
    # clamp before the root: no infinite derivative of sqrt at 0 for an all-zero graph
    return _gather(sq.clamp_min(eps * eps).sqrt(), batch).view(-1, 1, 1)


def sgformer_attention(q: Tensor, k: Tensor, v: Tensor, batch: Tensor | None = None,
                       num_graphs: int | None = None, qk_norm: str = "frobenius",
                       eps: float = 1e-12) -> Tensor:
    r"""SGFormer's simple global attention (module docstring), per graph and head:
    :math:`o_i = (n_g v_i + \tilde q_i^\top \sum_{j\in g} \tilde k_j v_j^\top) /
    (n_g + \tilde q_i^\top \sum_{j\in g} \tilde k_j)`, ``n_g`` = nodes of ``i``'s graph.

    Args:
        q: queries ``[num_nodes, heads, c]``.
        k: keys ``[num_nodes, heads, c]``.
        v: values ``[num_nodes, heads, d_v]``.
        batch: ``[num_nodes]`` graph id of each node (any order); ``None`` = one graph (as
            :func:`segment_sum`).
        num_graphs: the number of graphs, as :func:`segment_sum` (``None``: sized by
            ``num_nodes``).
        qk_norm: ``"frobenius"`` (the paper and the authors' code: ``Q`` divided by the
            Frobenius norm of the graph's whole ``[n_g, heads, c]`` query tensor, ``K`` alike)
            or ``"row"`` (PyG's ``SGFormerAttention``: each node's per-head ``q_i``, ``k_j``
            scaled to unit L2 norm).
        eps: lower bound of the norms (an all-zero ``Q`` gives ``o_i = v_i``).

    Returns:
        ``[num_nodes, heads, d_v]`` (per head; SGFormer averages the heads).

    Raises:
        ValueError: for an unknown ``qk_norm``.
    """
    if qk_norm == "frobenius":
        q = q / graph_frobenius_norm(q, batch, num_graphs, eps)
        k = k / graph_frobenius_norm(k, batch, num_graphs, eps)
    elif qk_norm == "row":
        q, k = F.normalize(q, dim=-1, eps=eps), F.normalize(k, dim=-1, eps=eps)
    else:
        raise ValueError(f"unknown qk_norm {qk_norm!r}; expected one of {QK_NORMS}")
    num, den = kernel_sums(q, k, v, batch, num_graphs)
    if batch is None:
        n = v.new_full((1, 1), q.size(0))
    else:  # nodes per graph n_g, counted on the device, at each node: [num_nodes, 1]
        n = _gather(segment_sum(torch.ones_like(batch, dtype=v.dtype), batch, num_graphs),
                    batch).unsqueeze(-1)
    return (num + n.unsqueeze(-1) * v) / (den + n).unsqueeze(-1)


# ----------------------------------------------------------------------------- input checks
def _check_inputs(layer: nn.Module, x: Tensor, batch: Tensor | None,
                  num_graphs: int | None) -> None:
    check_node_features(layer, x)
    check_batch(batch, x.size(0), num_graphs)


# ----------------------------------------------------------------------------- layers
class LinearGlobalAttention(QKVAttention):
    r"""Multi-head linear global attention (Katharopoulos et al., "Transformers are RNNs", ICML
    2020; module docstring) over the nodes of each graph of a PyG batch.

    For head ``h`` with :math:`q_i, k_i, v_i` the rows of :math:`X W_Q^h, X W_K^h, X W_V^h`
    (``d_k = hidden_dim / num_heads`` channels each) and :math:`\phi(x) = \mathrm{elu}(x) + 1`:

    .. math::
        o_i^h = \frac{\phi(q_i)^\top \sum_{j \in g(i)} \phi(k_j)\, v_j^\top}
                     {\phi(q_i)^\top \sum_{j \in g(i)} \phi(k_j) + \varepsilon},
        \qquad
        y_i = \mathrm{Dropout}\big(\big[o_i^1 \Vert \cdots \Vert o_i^H\big] W_O\big),

    ``g(i)`` the graph of node ``i``: the same as the quadratic form
    :math:`\big(\phi(Q)\phi(K)^\top\big) V` row-normalized, without forming the ``N × N``
    matrix. Projections as :class:`~graph_transformers.nn.attention.FullAttention` (fused
    ``Q/K/V`` ``d → 3d``, output ``d → d``, ``nn.MultiheadAttention``'s initialization).

    Args:
        hidden_dim: ``d``; divisible by ``num_heads``.
        num_heads: ``H``.
        dropout: dropout on the output (training only).
        bias: biases of the projections.
        eps: :math:`\varepsilon` (the reference implementation's ``1e-6``; the normalizer is
            positive without it).

    Shapes:
        - x: ``[num_nodes, hidden_dim]``; batch: ``[num_nodes]`` graph ids (any order; ``None`` =
          one graph); ``edge_index``/``edge_attr`` are accepted (the layer convention) and unused:
          the attention is over all node pairs of a graph.
        - returns ``[num_nodes, hidden_dim]``.

    Memory: :math:`O(N d + H d_k^2)` for one graph, :math:`O(N H d_k^2)` for a batch of several
    (module docstring); no ``N²`` term. ``num_graphs`` (PyG's ``data.num_graphs``) sizes the
    per-graph sums; without it they get ``num_nodes`` rows (no device sync either way).

    Raises:
        ValueError: for ``hidden_dim`` not divisible by ``num_heads``; in ``forward``, for ``x``
            not ``[num_nodes, hidden_dim]`` (e.g. a padded dense batch), a ``batch`` not
            ``[num_nodes]`` integer, a bad ``num_graphs``. A graph id ``>= num_graphs`` (or
            ``>= num_nodes`` without it) is an index error of ``index_add_``.

    Example:
        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from graph_transformers.nn import LinearGlobalAttention
        >>> g1, g2 = Data(x=torch.randn(3, 16)), Data(x=torch.randn(5, 16))
        >>> data = Batch.from_data_list([g1, g2])
        >>> att = LinearGlobalAttention(16, num_heads=4).eval()
        >>> out = att(data.x, batch=data.batch, num_graphs=data.num_graphs)
        >>> out.shape
        torch.Size([8, 16])
        >>> torch.allclose(out[:3], att(g1.x), atol=1e-6)  # graphs never attend to each other
        True
    """

    def __init__(self, hidden_dim: int, num_heads: int = 1, *, dropout: float = 0.0,
                 bias: bool = True, eps: float = 1e-6) -> None:
        super().__init__(hidden_dim, num_heads, bias)
        self.eps = eps
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor | None = None,
                edge_attr: Tensor | None = None, batch: Tensor | None = None, *,
                num_graphs: int | None = None) -> Tensor:
        """See the class docstring."""
        _check_inputs(self, x, batch, num_graphs)
        n = x.size(0)
        q, k, v = self.qkv(x).view(n, 3, self.num_heads, self.head_dim).unbind(1)
        dtype = acc_dtype(q.dtype)  # sums and normalizers in fp32 at least, autocast off
        with autocast_off(x):
            o = kernelized_attention(q.to(dtype), k.to(dtype), v.to(dtype), batch, num_graphs,
                                     self.eps)
        return self.dropout(self.out(o.to(q.dtype).reshape(n, self.hidden_dim)))

    def extra_repr(self) -> str:
        return f"{self.hidden_dim}, heads={self.num_heads}, feature_map='elu+1'"


class SGFormerAttention(nn.Module):
    r"""SGFormer's simple global attention (Wu et al., NeurIPS 2023; module docstring)
    over the nodes of each graph of a PyG batch, in one pass linear in ``N``.

    For head ``h`` with :math:`Q = X W_Q^h`, :math:`K = X W_K^h`, :math:`V = X W_V^h`
    (each head ``hidden_dim`` wide, as the paper's code), per graph ``g`` of ``n_g`` nodes,
    :math:`\tilde Q = Q_g / \lVert Q_g\rVert_F`, :math:`\tilde K = K_g / \lVert K_g\rVert_F`
    (``qk_norm="frobenius"``; the norm is over the graph's nodes and all heads, as the authors'
    ``torch.norm(qs, p=2)`` over ``[N, H, d]``):

    .. math::
        o_i^h = \frac{n_g\, v_i + \tilde q_i^\top \sum_{j\in g} \tilde k_j v_j^\top}
                     {n_g + \tilde q_i^\top \sum_{j\in g} \tilde k_j}
        = \Big[D^{-1}\big(V + \tfrac{1}{n_g}\tilde Q(\tilde K^\top V)\big)\Big]_i,
        \quad D = \operatorname{diag}\big(\mathbf 1 + \tfrac1{n_g}\tilde Q(\tilde K^\top
        \mathbf 1)\big),

    and :math:`y_i = \mathrm{Dropout}\big(\tfrac1H \sum_h o_i^h\big)` (heads averaged, no output
    projection, as the paper's code and PyG's ``SGFormerAttention``).

    Differences from PyG's ``SGFormerAttention`` (whose batched form pads to ``[B, N_max, ·]``):
    PyG scales each node's ``q_i``, ``k_j`` to unit norm per head (here ``qk_norm="row"``) and
    first replaces exact zeros by ``1e-6``; its ``N`` is the padded ``N_max`` and its key sum
    includes the padded rows (zero values are masked, keys are not), so a graph's output depends
    on the batch. Here ``n_g`` and the sums are the graph's own, and a norm below ``eps`` is
    raised to ``eps`` instead. The projections have biases by default (``nn.Linear``'s, as the
    paper's code; PyG's default is ``qkv_bias=False``).

    Args:
        hidden_dim: ``d`` (input width, each head's width, output width).
        num_heads: ``H`` (the paper's default 1); ``Q``, ``K``, ``V`` are ``d → H d``.
        dropout: dropout on the output (training only).
        qk_norm: ``"frobenius"`` (default, the paper) or ``"row"`` (PyG); see
            :func:`sgformer_attention`.
        bias: biases of the ``Q``, ``K``, ``V`` projections.
        eps: lower bound of the norms.

    Shapes:
        - x: ``[num_nodes, hidden_dim]``; batch: ``[num_nodes]`` graph ids (any order; ``None`` =
          one graph); ``edge_index``/``edge_attr`` are accepted (the layer convention) and unused.
        - returns ``[num_nodes, hidden_dim]``.

    Memory: :math:`O(N H d + H d^2)` for one graph, :math:`O(N H d^2)` for a batch of several
    (the per-node outer products); no ``N²`` term. ``num_graphs`` as
    :class:`LinearGlobalAttention`.

    Raises:
        ValueError: for an unknown ``qk_norm`` or ``num_heads < 1``; in ``forward``, for ``x``
            not ``[num_nodes, hidden_dim]``, a ``batch`` not ``[num_nodes]`` integer, a bad
            ``num_graphs``.

    Example:
        >>> import torch
        >>> from torch_geometric.data import Batch, Data
        >>> from graph_transformers.nn import SGFormerAttention
        >>> g1, g2 = Data(x=torch.randn(3, 8)), Data(x=torch.randn(5, 8))
        >>> data = Batch.from_data_list([g1, g2])
        >>> att = SGFormerAttention(8).eval()
        >>> out = att(data.x, batch=data.batch, num_graphs=data.num_graphs)
        >>> out.shape
        torch.Size([8, 8])
        >>> torch.allclose(out[3:], att(g2.x), atol=1e-6)
        True
    """

    def __init__(self, hidden_dim: int, num_heads: int = 1, *, dropout: float = 0.0,
                 qk_norm: str = "frobenius", bias: bool = True, eps: float = 1e-12) -> None:
        super().__init__()
        if qk_norm not in QK_NORMS:
            raise ValueError(f"unknown qk_norm {qk_norm!r}; expected one of {QK_NORMS}")
        if num_heads < 1:
            raise ValueError(f"num_heads must be >= 1, got {num_heads}")
        self.hidden_dim, self.num_heads = hidden_dim, num_heads
        self.qk_norm, self.eps = qk_norm, eps
        inner = num_heads * hidden_dim
        self.q = nn.Linear(hidden_dim, inner, bias=bias)
        self.k = nn.Linear(hidden_dim, inner, bias=bias)
        self.v = nn.Linear(hidden_dim, inner, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def reset_parameters(self) -> None:
        """``nn.Linear``'s defaults for the three projections (the paper's code and PyG)."""
        for lin in (self.q, self.k, self.v):
            lin.reset_parameters()

    def forward(self, x: Tensor, edge_index: Tensor | None = None,
                edge_attr: Tensor | None = None, batch: Tensor | None = None, *,
                num_graphs: int | None = None) -> Tensor:
        """See the class docstring."""
        _check_inputs(self, x, batch, num_graphs)
        n, H, d = x.size(0), self.num_heads, self.hidden_dim
        q, k, v = (lin(x).view(n, H, d) for lin in (self.q, self.k, self.v))
        dtype = acc_dtype(q.dtype)
        with autocast_off(x):
            o = sgformer_attention(q.to(dtype), k.to(dtype), v.to(dtype), batch, num_graphs,
                                   self.qk_norm, self.eps)
        return self.dropout(o.mean(1).to(q.dtype))

    def extra_repr(self) -> str:
        return f"{self.hidden_dim}, heads={self.num_heads}, qk_norm={self.qk_norm!r}"


__all__ = ["LinearGlobalAttention", "QK_NORMS", "SGFormerAttention", "elu_feature_map",
           "graph_frobenius_norm", "kernel_sums", "kernelized_attention", "segment_sum",
           "sgformer_attention"]
