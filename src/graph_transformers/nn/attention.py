"""Attention kernels shared by the layers.

Sparse (edge-list) attention normalizes scores over the incoming edges of each node, as in
Dwivedi & Bresson (2020) eqs. 5 and 11. Scores are clamped to ``[-clamp, clamp]`` before the
exponential (the paper's numerical safeguard), which also bounds ``exp`` to
``[e^-clamp, e^clamp]``; no per-node max subtraction is then needed, which saves a scatter-max
and its backward on the hot path. The normalization is the exact softmax (the official GT code
adds ``1e-6`` to each normalizer, a relative difference of at most ~1.5e-4 with the clamp); a node
without incoming edges gets a zero output instead of ``0/0``. Under mixed precision the
exponentials, the normalizers and the weighted sum of values are accumulated in float32 (a bf16
sum over a node's incoming edges keeps only 8 bits of mantissa); the output is cast back to the
input's dtype.

Dense (all-pairs) attention, :class:`FullAttention`, works on a padded ``[batch, N, d]`` view with a
key-padding mask through PyTorch's ``scaled_dot_product_attention``, and refuses a call whose
``[batch, heads, N, N]`` tensors would exceed a memory budget before allocating them.
"""
from __future__ import annotations

import contextlib

import torch
from torch import Tensor, nn
from torch_geometric.utils import to_dense_batch

from .fused import fused_sparse_attention, use_fused_sparse_attention


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype sums and normalizers accumulate in: float32 for 16-bit inputs (autocast), the
    input's own dtype for float32 and float64."""
    return torch.promote_types(dtype, torch.float32)


def autocast_off(x: Tensor) -> contextlib.AbstractContextManager:
    """Autocast disabled on ``x``'s device (a no-op on a device without autocast, e.g. meta), for
    sums and products that must run in float32 at least."""
    try:
        return torch.autocast(x.device.type, enabled=False)
    except RuntimeError:
        return contextlib.nullcontext()


def _safe(denom: Tensor) -> Tensor:
    """Normalizers with zeros (nodes without incoming edges) replaced by ones."""
    return torch.where(denom > 0, denom, torch.ones_like(denom))


def clamped_edge_softmax(scores: Tensor, index: Tensor, num_nodes: int, clamp: float = 5.0
                         ) -> Tensor:
    """``softmax_j(clamp(s_ij))`` over the edges that share a target node.

    Args:
        scores: ``[num_edges, num_heads]`` raw scores.
        index: ``[num_edges]`` target node of each edge (PyG's ``edge_index[1]``).
        num_nodes: number of target nodes.
        clamp: scores are clamped to ``[-clamp, clamp]`` before ``exp``.

    Returns:
        ``[num_edges, num_heads]`` attention weights; each node's incoming weights sum to 1.
    """
    ex = scores.to(acc_dtype(scores.dtype)).clamp(-clamp, clamp).exp()  # fp32 under autocast
    denom = ex.new_zeros((num_nodes, ex.size(1))).index_add_(0, index, ex)
    return (ex / _safe(denom).index_select(0, index)).to(scores.dtype)


def sparse_attention(q: Tensor, k: Tensor, v: Tensor, edge_index: Tensor, scale: float,
                     edge_gate: Tensor | None = None, clamp: float = 5.0,
                     return_scores: bool = False, return_weights: bool = False,
                     ) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """Multi-head attention restricted to the edges of a graph.

    For each edge ``j -> i`` and head ``h``:
    ``s_ij = sum_d (q_i ⊙ k_j ⊙ g_ij)_d * scale`` (``g_ij = edge_gate`` when given, else 1; GT
    eqs. 5 and 12), ``w_ij = softmax_j(clamp(s_ij))`` and ``out_i = sum_j w_ij v_j`` (eqs. 4, 9).

    Args:
        q: queries ``[num_nodes, num_heads, head_dim]``.
        k: keys ``[num_nodes, num_heads, head_dim]``.
        v: values ``[num_nodes, num_heads, head_dim]``.
        edge_index: ``[2, num_edges]``; messages flow ``edge_index[0] -> edge_index[1]``.
        scale: score scale (``1/sqrt(head_dim)``).
        edge_gate: optional ``[num_edges, num_heads, head_dim]`` per-dimension multiplier.
        clamp: see :func:`clamped_edge_softmax`.
        return_scores: also return the per-dimension scores ``[num_edges, num_heads, head_dim]``
            (the input of the edge stream in GT eq. 10).
        return_weights: also return the normalized attention weights ``[num_edges, num_heads]``.

    Returns:
        ``(out [num_nodes, num_heads, head_dim], per_dim_scores or None, weights or None)``.

    On CPU in float32 / float64, without ``return_weights``, the compiled kernel of
    :func:`~graph_transformers.nn.fused.fused_sparse_attention` computes the same (one pass over
    each node's incoming edges; ``GRAPH_TRANSFORMERS_KERNELS=off`` forces this plain path, which
    every other case takes).
    """
    if use_fused_sparse_attention(q, return_weights):
        out, per_dim = fused_sparse_attention(q, k, v, edge_index, scale, edge_gate, clamp,
                                              return_scores)
        return out, per_dim, None
    return _sparse_attention_plain(q, k, v, edge_index, scale, edge_gate, clamp, return_scores,
                                   return_weights)


def _sparse_attention_plain(q: Tensor, k: Tensor, v: Tensor, edge_index: Tensor, scale: float,
                            edge_gate: Tensor | None, clamp: float, return_scores: bool,
                            return_weights: bool) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """:func:`sparse_attention` in PyTorch ops (every device and dtype; autograd derives the
    backward)."""
    src, dst = edge_index[0], edge_index[1]
    num_nodes = q.size(0)
    per_dim = (q * scale).index_select(0, dst) * k.index_select(0, src)  # scale on N, not E rows
    if edge_gate is not None:
        per_dim = per_dim * edge_gate
    acc = acc_dtype(per_dim.dtype)
    scores = per_dim.sum(-1, dtype=acc)  # fp32 (or fp64) scores, sums and normalizers
    ex = scores.clamp(-clamp, clamp).exp()  # [E, H]
    denom = ex.new_zeros((num_nodes, ex.size(1))).index_add_(0, dst, ex)
    msg = v.index_select(0, src).to(acc) * ex.unsqueeze(-1)
    out = msg.new_zeros((num_nodes,) + msg.shape[1:]).index_add_(0, dst, msg)
    denom = _safe(denom)
    out = (out / denom.unsqueeze(-1)).to(v.dtype)
    weights = (ex / denom.index_select(0, dst)).to(v.dtype) if return_weights else None
    return out, (per_dim if return_scores else None), weights


# ----------------------------------------------------------------------------- dense attention
#: stride alignment (elements) of an additive attention bias that CUDA's memory-efficient SDPA
#: kernel reads in place; PyTorch pads (copies) a bias whose rows are not aligned (8 or 16
#: elements depending on the version: 16 satisfies both)
SDPA_BIAS_ALIGNMENT = 16


def aligned_bias(bias: Tensor, dtype: torch.dtype | None = None,
                 multiple: int = SDPA_BIAS_ALIGNMENT) -> Tensor:
    """``bias [..., N, N]`` as a view of a buffer whose rows are padded to a multiple of
    ``multiple`` elements (values identical, padding zeros never read), in ``dtype``.

    CUDA's memory-efficient ``scaled_dot_product_attention`` kernel (the fast one that accepts an
    additive bias; flash attention takes none) needs every stride of the bias but the last to be
    a multiple of 8/16 elements; otherwise PyTorch pads a copy on every call. Building the
    aligned bias once per batch, in the dtype the attention runs in (bf16 under autocast), lets
    every layer use it directly. A bias that is already aligned and of ``dtype`` is returned as
    is.
    """
    dtype = bias.dtype if dtype is None else dtype
    n = bias.size(-1)
    strides_ok = bias.stride(-1) == 1 and all(s % multiple == 0 for s in bias.stride()[:-1])
    if strides_ok and bias.dtype == dtype:
        return bias
    padded = n + (-n) % multiple
    buf = bias.new_zeros(tuple(bias.shape[:-1]) + (padded,), dtype=dtype)
    buf[..., :n] = bias
    return buf[..., :n]


def sdpa(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None,
         dropout_p: float = 0.0, pad_head_dim: bool | None = None, multiple: int = 8) -> Tensor:
    """``scaled_dot_product_attention`` with the head dimension zero-padded to a multiple of
    ``multiple`` (8) when it is not one, so CUDA's fused kernels (which need ``d_k % 8 == 0`` in
    16-bit dtypes) are reachable for heads such as Graphormer-small's ``d_k = 10``. The softmax
    scale stays ``1 / sqrt(d_k)`` of the real dimension; zero query/key columns add nothing to
    the scores and the padded output columns (sums of zero values) are dropped, so the result is
    the same. ``pad_head_dim=None`` pads on CUDA only (elsewhere it would only cost a copy).

    Shapes: ``q [..., L, d_k]``, ``k, v [..., S, d_k]``, ``attn_mask`` broadcastable to
    ``[..., L, S]`` → ``[..., L, d_k]``.
    """
    dk = q.size(-1)
    pad = (-dk) % multiple
    if pad_head_dim is None:
        pad_head_dim = q.is_cuda
    if not pad or not pad_head_dim:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
    q, k, v = (torch.nn.functional.pad(t, (0, pad)) for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, scale=dk ** -0.5)
    return out[..., :dk]


def attention_dtype(x: Tensor) -> torch.dtype:
    """The dtype matrix products of ``x`` run in: the autocast dtype of ``x``'s device when
    autocast is on there, else ``x.dtype``."""
    kind = x.device.type
    try:
        enabled = torch.is_autocast_enabled(kind)
    except RuntimeError:  # a device type without autocast (e.g. meta)
        enabled = False
    if enabled and x.is_floating_point():
        return torch.get_autocast_dtype(kind)
    return x.dtype


#: default memory budget of one full-attention call (the ``[batch, heads, N, N]`` score tensors),
#: in GiB
DEFAULT_ATTENTION_BUDGET_GB = 4.0


def full_attention_bytes(batch: int, num_heads: int, max_nodes: int, head_dim: int,
                         itemsize: int = 4, math_kernel: bool = True) -> int:
    """Bytes one forward + backward of :class:`FullAttention` needs for its attention tensors.

    - ``math_kernel`` (SDPA's reference path: attention dropout in training, or a non-CPU device,
      where the kernel choice is not checked here): the ``[batch, heads, N, N]`` scores, softmax,
      dropout mask and gradient; 4 such tensors (measured on CPU: 4.06 x one ``N x N`` tensor).
    - otherwise (CPU without dropout: SDPA's flash kernel, which never forms the ``N x N`` matrix):
      ``q, k, v``, the output, their gradients and the row log-sum-exp, linear in ``N``.
    """
    if math_kernel:
        return 4 * batch * num_heads * max_nodes * max_nodes * itemsize
    return batch * num_heads * max_nodes * (8 * head_dim + 2) * itemsize


def head_dim(hidden_dim: int, num_heads: int) -> int:
    """The per-head width ``hidden_dim // num_heads``.

    Raises:
        ValueError: when ``num_heads`` does not divide ``hidden_dim``.
    """
    if hidden_dim % num_heads:
        raise ValueError(f"hidden_dim={hidden_dim} is not divisible by num_heads={num_heads}")
    return hidden_dim // num_heads


def check_node_features(layer: nn.Module, x: Tensor) -> None:
    """Checks that ``x`` is PyG-native ``[num_nodes, layer.hidden_dim]`` (no padded batch).

    Raises:
        ValueError: naming ``layer``'s class and the shape it got.
    """
    name, dim = type(layer).__name__, layer.hidden_dim
    if not isinstance(x, Tensor) or x.dim() != 2 or x.size(1) != dim:
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"{name} takes PyG-native node features x [num_nodes, {dim}] (with "
                         f"batch [num_nodes] for several graphs, no padding), got {shape}")


def check_batch(batch: Tensor | None, num_nodes: int, num_graphs: int | None) -> None:
    """Checks the shapes of a PyG ``batch`` vector (``[num_nodes]`` integer, or ``None``) and of
    ``num_graphs`` (a positive ``int`` or ``None``); the graph ids themselves are not read.

    Raises:
        ValueError: for either one malformed.
    """
    if batch is not None and (not isinstance(batch, Tensor) or batch.dim() != 1
                              or batch.numel() != num_nodes or batch.is_floating_point()
                              or batch.dtype == torch.bool):
        shape = (f"{batch.dtype} {tuple(batch.shape)}" if isinstance(batch, Tensor)
                 else type(batch).__name__)
        raise ValueError(f"batch must be an integer tensor [num_nodes={num_nodes}], got {shape}")
    if num_graphs is not None and (not isinstance(num_graphs, int) or num_graphs < 1):
        raise ValueError(f"num_graphs must be a positive int or None, got {num_graphs!r}")


class QKVAttention(nn.Module):
    """What the dense self-attentions (:class:`FullAttention`, and
    :class:`~graph_transformers.nn.linear_attention.PerformerAttention`) share: the fused Q/K/V
    projection ``qkv`` (``d → 3d``) and the output projection ``out`` (``d → d``) over
    ``num_heads`` heads of ``head_dim`` channels, initialised as ``nn.MultiheadAttention``
    (see :meth:`reset_parameters`), the check of their dense input ``x [batch, N, d]`` with its
    key-padding ``mask [batch, N]`` (``forward_dense``), and the PyG-native ``forward(x,
    edge_index=None, edge_attr=None, batch=None)`` of the layer convention, which pads
    ``x [num_nodes, d]`` per graph of ``batch`` and calls ``forward_dense``.

    Raises:
        ValueError: for ``hidden_dim`` not divisible by ``num_heads``.
    """

    def __init__(self, hidden_dim: int, num_heads: int, bias: bool = True) -> None:
        super().__init__()
        self.head_dim = head_dim(hidden_dim, num_heads)
        self.hidden_dim, self.num_heads = hidden_dim, num_heads
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim, bias=bias)
        self.out = nn.Linear(hidden_dim, hidden_dim, bias=bias)

    def reset_parameters(self) -> None:
        """As ``nn.MultiheadAttention``, draw for draw: the output projection keeps
        ``nn.Linear``'s default (Kaiming-uniform, bound ``1/√d``), the fused Q/K/V weight
        ``[3d, d]`` is Xavier-uniform (bound ``√(6 / 4d)``), all biases zero. Before 2026-11-26
        the output weight was Xavier too, ``√3×`` wider than GraphGPS's; see
        ``docs/reproduction.md``."""
        self.out.reset_parameters()
        nn.init.xavier_uniform_(self.qkv.weight)
        for lin in (self.qkv, self.out):
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)

    def _check(self, x: Tensor, mask: Tensor) -> None:
        if x.dim() != 3 or x.size(-1) != self.hidden_dim:
            raise ValueError(f"x must be [batch, N, {self.hidden_dim}], got {tuple(x.shape)}")
        if mask.shape != x.shape[:2] or mask.dtype != torch.bool:
            raise ValueError(f"mask must be a bool tensor [batch, N] = {tuple(x.shape[:2])}, got "
                             f"{mask.dtype} {tuple(mask.shape)}")

    def forward(self, x: Tensor, edge_index: Tensor | None = None,
                edge_attr: Tensor | None = None, batch: Tensor | None = None) -> Tensor:
        """PyG-native: ``x [num_nodes, d]`` with ``batch [num_nodes]`` (sorted graph ids; ``None``
        = one graph) → ``[num_nodes, d]``, attention over the nodes of each graph;
        ``edge_index`` and ``edge_attr`` are accepted (the layer convention) and unused."""
        if not isinstance(x, Tensor) or x.dim() != 2 or x.size(1) != self.hidden_dim:
            shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must be [num_nodes, {self.hidden_dim}] (padded [B, N, d]: "
                             f"forward_dense), got {shape}")
        if batch is None:
            xd = x.unsqueeze(0)
            mask = torch.ones(1, x.size(0), dtype=torch.bool, device=x.device)
        else:
            xd, mask = to_dense_batch(x, batch)
        return self.forward_dense(xd, mask)[mask]

    def forward_dense(self, x: Tensor, mask: Tensor) -> Tensor:
        """Padded attention ``x [B, N, d]``, ``mask [B, N]`` → ``[B, N, d]``: what the
        PyG-native :meth:`forward` above calls. Full and Performer attention define it; the
        layers that attend over an edge pattern or per graph (Exphormer, linear, SGFormer)
        define their own ``forward`` instead.

        Raises:
            NotImplementedError: for a subclass without a padded form.
        """
        raise NotImplementedError(f"{type(self).__name__} has no padded forward_dense; call "
                                  "forward(x, edge_index, edge_attr, batch)")

    def _qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return q, k, v  # each [B, H, N, dk]


class FullAttention(QKVAttention):
    r"""Multi-head softmax self-attention over all nodes of each graph (Vaswani et al. 2017,
    eq. 1; the "Transformer" global attention of GraphGPS, Rampášek et al. 2022, eq. 2 / survey
    eq. 40), computed with ``torch.nn.functional.scaled_dot_product_attention`` on the padded
    dense batch with a key-padding mask.

    .. math::
        \mathrm{Attn}(X) = \big\Vert_k \operatorname{softmax}\Big(\frac{Q^k (K^k)^\top}{\sqrt{d_k}}
        + M\Big) V^k \, W_O, \qquad M_{ij} = -\infty \text{ for padded keys } j.

    Padded query rows attend to the real keys (never to nothing, which would give NaN); their
    outputs are discarded by the caller.

    Args:
        hidden_dim: ``d``; divisible by ``num_heads``.
        num_heads: ``H``.
        attn_dropout: dropout on the attention weights (training only).
        bias: biases of the Q/K/V and output projections (``nn.MultiheadAttention`` has them).
        memory_budget_gb: memory budget of the attention tensors in GiB (see
            :func:`full_attention_bytes`: the ``[B, H, N, N]`` tensors on SDPA's reference path,
            linear memory on its CPU flash kernel); a larger call raises before allocating.
            ``None``: unchecked.

    Shapes: ``forward(x [num_nodes, hidden_dim], edge_index=None, edge_attr=None, batch=None)``
    → ``[num_nodes, hidden_dim]`` (PyG-native, the layer convention; ``edge_index`` and
    ``edge_attr`` unused); ``forward_dense(x [batch, N, hidden_dim], mask [batch, N])`` (bool, True
    = real node) → ``[batch, N, hidden_dim]``.

    Raises:
        ValueError: for ``hidden_dim`` not divisible by ``num_heads``; in ``forward`` for a
            shape mismatch or a batch whose attention would exceed ``memory_budget_gb``.
    """

    def __init__(self, hidden_dim: int, num_heads: int, *, attn_dropout: float = 0.0,
                 bias: bool = True,
                 memory_budget_gb: float | None = DEFAULT_ATTENTION_BUDGET_GB) -> None:
        super().__init__(hidden_dim, num_heads, bias)
        self.attn_dropout = attn_dropout
        self.memory_budget_gb = memory_budget_gb
        self.reset_parameters()

    def _check_memory(self, b: int, n: int, itemsize: int, math_kernel: bool) -> None:
        if self.memory_budget_gb is None:
            return
        need = full_attention_bytes(b, self.num_heads, n, self.head_dim, itemsize, math_kernel)
        if need > self.memory_budget_gb * 2**30:
            raise ValueError(
                f"full attention over a batch of {b} graph(s) padded to N={n} nodes needs about "
                f"{need / 2**30:.2f} GiB for its attention tensors, over the budget of "
                f"{self.memory_budget_gb:.2f} GiB: use linear attention (attention='linear', "
                "'sgformer' or 'performer'), "
                "smaller batches or neighbour sampling, or raise the budget (memory_budget_gb)")

    def _math_kernel(self, x: Tensor) -> bool:
        """Whether SDPA takes its ``N x N`` reference path (see :func:`full_attention_bytes`)."""
        return x.device.type != "cpu" or (self.training and self.attn_dropout > 0)

    def forward_dense(self, x: Tensor, mask: Tensor) -> Tensor:
        """Padded input; see the class docstring."""
        self._check(x, mask)
        self._check_memory(x.size(0), x.size(1), x.element_size(), self._math_kernel(x))
        q, k, v = self._qkv(x)
        attn_mask = mask[:, None, None, :]  # [B, 1, 1, N]: keys only
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, dropout_p=self.attn_dropout if self.training else 0.0)
        b, n = x.shape[:2]
        return self.out(out.transpose(1, 2).reshape(b, n, self.hidden_dim))

    @torch.no_grad()
    def attention_weights(self, x: Tensor, mask: Tensor) -> Tensor:
        """The softmax weights ``[batch, num_heads, N, N]`` (row i = query i over keys j) the
        forward pass uses (without dropout); rows and columns of padded nodes are 0.

        Raises:
            ValueError: as ``forward``; the ``[batch, heads, N, N]`` weights are always formed.
        """
        self._check(x, mask)
        self._check_memory(x.size(0), x.size(1), x.element_size(), math_kernel=True)
        q, k, _ = self._qkv(x)
        scores = (q @ k.transpose(-1, -2)) / (self.head_dim ** 0.5)
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        w = torch.softmax(scores, dim=-1)
        return w * mask[:, None, :, None]
