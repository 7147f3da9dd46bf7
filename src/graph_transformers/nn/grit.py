r"""The GRIT layer: attention over node pairs that updates the pair representations, with
degree scalers (Ma et al., "Graph Inductive Biases in Transformers without Message Passing",
ICML 2023, §3.2-3.3, and the official code ``LiamMa/GRIT``, ``grit/layer/grit_layer.py``)."""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.utils import softmax as scatter_softmax

from .attention import acc_dtype, autocast_off, clamped_edge_softmax, head_dim
from .convention import with_attention
from .norm import apply_norm, make_norm
from .reset import reset_children


class GRITOutput(NamedTuple):
    """What :meth:`GRITLayer.forward` returns: ``(x, edge_attr)``, a named tuple (it unpacks as
    two). With ``return_attention_weights=True`` the layer returns ``(GRITOutput, (edge_index,
    weights [num_pairs, num_heads]))``: the weights ``α_ij`` of each pair ``j → i`` (after the
    softmax, before attention dropout).

    Attributes:
        x: ``[num_nodes, hidden_dim]`` updated node representations.
        edge_attr: ``[num_pairs, hidden_dim]`` updated pair representations ``e_ij`` (the input
            ones when the layer has ``edge_update=False`` or ``edge_output=False``).
    """

    x: Tensor
    edge_attr: Tensor


class _SignedSqrt(torch.autograd.Function):
    """``ρ(s) = sign(s) √|s|`` with the backward ``1 / (2 √|s|)`` computed from the saved
    ``√|s|`` (one tensor saved instead of the two ReLUs and square roots of the equivalent
    ``√ReLU(s) − √ReLU(−s)``), and 0 at ``s = 0``, where that form's autograd gradient is 0 too
    (ReLU's backward discards the infinite derivative of the square root)."""

    @staticmethod
    def forward(ctx, s: Tensor) -> Tensor:
        root = torch.abs(s).sqrt_()                                  # √|s|
        ctx.save_for_backward(root)
        return torch.copysign(root, s)

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        (root,) = ctx.saved_tensors
        # the division is inf / nan where √|s| = 0; those entries are replaced by 0
        return torch.where(root != 0, grad / (2 * root), grad.new_zeros(()))


def signed_sqrt(s: Tensor) -> Tensor:
    """GRIT's signed square root ``ρ(s) = √ReLU(s) − √ReLU(−s)`` (§3.2), elementwise, unclamped
    (as the official code; its derivative ``1 / (2 √|s|)`` is large near 0 and set to 0 at 0).

    Shapes: any → same.
    """
    return _SignedSqrt.apply(s)


class GRITLayer(nn.Module):
    r"""One GRIT layer: multi-head attention over the node pairs of ``edge_index`` whose pair
    representations are updated by the queries and keys, degree scalers, residuals, BatchNorm and
    an FFN (GRIT §3.2-3.3; details from the official ``GritTransformerLayer``).

    Per head (``d' = hidden_dim / num_heads`` channels; :math:`\rho` the signed square root,
    :math:`\sigma` = ReLU), for each pair :math:`j \to i` of ``edge_index`` (query ``i``, key
    ``j``):

    .. math::
        \hat e_{ij} = \sigma\big(\rho\big((W_Q x_i + W_K x_j) \odot W_{Ew} e_{ij}\big)
                      + W_{Eb} e_{ij}\big) \in \mathbb{R}^{d'}

        \alpha_{ij} = \operatorname{softmax}_{j}\big(\mathrm{clamp}(W_A \hat e_{ij}, \pm c)\big)

        \hat x_i = \sum_j \alpha_{ij} \, (W_V x_j + W_{Ev} \hat e_{ij})

    then, on the heads concatenated (``D = hidden_dim`` channels), the degree scaler with the
    node's degree :math:`d_i` (§3.3) and the residual blocks:

    .. math::
        \tilde x_i = \theta_1 \odot \hat x_i + \log(1 + d_i)\, \theta_2 \odot \hat x_i

        x_i' = \mathrm{BN}(x_i + O_h \tilde x_i), \qquad
        x_i'' = \mathrm{BN}(x_i' + W_2 \,\mathrm{ReLU}(W_1 x_i'))

        e_{ij}' = \mathrm{BN}(e_{ij} + O_e \hat e_{ij})

    As the official code (and its weight shapes): ``W_Q`` has a bias, ``W_K`` and ``W_V`` none;
    ``W_Ew`` and ``W_Eb`` are one ``Linear(D, 2D)`` whose output holds, per head, ``d'`` channels
    of ``W_Ew`` then ``d'`` of ``W_Eb``; ``W_A`` (``attn_weight [H, d']``) and ``W_Ev``
    (``value_edge [H, d', d']``) are per head; the scores are not scaled by ``1/√d'`` and are
    clamped to ``±clamp`` before the softmax; attention dropout (``attn_dropout``) acts on
    :math:`\alpha` for both value terms; ``dropout`` acts on :math:`\hat x` (before the degree
    scaler), on :math:`\hat e` (before ``O_e``) and inside the FFN (width ``ffn_dim``, ``2D`` by
    default).

    The attending pairs are whatever ``edge_index`` lists: all pairs of each graph for GRIT's
    full attention (the official ``full_attn: True``; :class:`~graph_transformers.models.GRIT`
    builds them), or a sparse set.

    Args:
        hidden_dim: ``D``, node and pair channels (must be divisible by ``num_heads``); the pair
            representations ``edge_attr`` are ``D`` wide too (GRIT builds them from RRWP).
        num_heads: ``H``.
        ffn_dim: hidden width of the FFN (default ``2D``, the official code's).
        dropout: see above (official ``gt.dropout``).
        attn_dropout: dropout on :math:`\alpha` (official ``gt.attn_dropout``).
        clamp: ``c``; ``None``: no clamp (a max-subtracted softmax).
        deg_scaler: the degree scaler (§3.3; ``forward`` then needs ``degree``).
        edge_update: pass the updated :math:`e'` on (``False``: the input ``e`` is returned, as
            the official ``update_e: False``).
        edge_output: compute :math:`e'` at all; a network's last layer skips it when nothing
            reads it (and has no ``O_e`` and pair norm).
        norm: ``"batch"`` (the paper's), ``"layer"`` or ``"none"``
            (:func:`~graph_transformers.nn.norm.make_norm`).

    Shapes:
        - x: ``[num_nodes, D]``
        - edge_index: ``[2, num_pairs]``, pairs ``j → i`` (``edge_index[0] = j`` key,
          ``edge_index[1] = i`` query); each query's softmax runs over its pairs
        - edge_attr: ``[num_pairs, D]``, the pair representations ``e_ij``
        - batch: ``[num_nodes]`` or ``None``: accepted for the PyG-native signature and unused
          (the softmax groups pairs by their query node)
        - degree: ``[num_nodes]`` the nodes' degrees in the *graph* (not the number of pairs
          they attend over), any real or integer dtype
        - output: :class:`GRITOutput` ``(x [num_nodes, D], edge_attr [num_pairs, D])``; with
          ``return_attention_weights=True``, ``(output, (edge_index, weights [num_pairs, H]))``

    Memory: ``O(num_pairs · D)`` per layer (about 11 ``[num_pairs, D]`` tensors kept for the
    backward, :func:`pair_bytes`), ``O(D²)`` weights; no ``[B, N, N]`` padding.

    Raises:
        ValueError: at construction for ``hidden_dim`` not divisible by ``num_heads`` or a
            dropout outside ``[0, 1)``; in ``forward`` for ``x``, ``edge_index`` or ``edge_attr``
            of the wrong shape, or a missing ``degree`` with ``deg_scaler``.

    Example:
        >>> import torch
        >>> from graph_transformers.models.utils import full_graph_edge_index
        >>> from graph_transformers.nn import GRITLayer
        >>> batch = torch.tensor([0, 0, 0, 1, 1])                     # graphs of 3 and 2 nodes
        >>> pairs = full_graph_edge_index(batch, self_loops=True)     # [2, 3² + 2²]
        >>> degree = torch.tensor([1, 2, 1, 1, 1])                    # path 0-1-2, edge 3-4
        >>> layer = GRITLayer(hidden_dim=16, num_heads=4).eval()
        >>> out, (index, weights) = layer(torch.randn(5, 16), pairs, torch.randn(13, 16), batch,
        ...                               degree=degree, return_attention_weights=True)
        >>> out.x.shape, out.edge_attr.shape, weights.shape
        (torch.Size([5, 16]), torch.Size([13, 16]), torch.Size([13, 4]))
        >>> x, e = layer(out.x, pairs, out.edge_attr, batch, degree=degree)
    """

    def __init__(self, hidden_dim: int, num_heads: int, *, ffn_dim: int | None = None,
                 dropout: float = 0.0, attn_dropout: float = 0.0, clamp: float | None = 5.0,
                 deg_scaler: bool = True, edge_update: bool = True, edge_output: bool = True,
                 norm: str = "batch") -> None:
        super().__init__()
        self.head_dim = head_dim(hidden_dim, num_heads)
        for name, p in (("dropout", dropout), ("attn_dropout", attn_dropout)):
            if not 0.0 <= p < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {p}")
        self.hidden_dim, self.num_heads = hidden_dim, num_heads
        self.dropout, self.attn_dropout, self.clamp = dropout, attn_dropout, clamp
        self.deg_scaler, self.edge_update = deg_scaler, edge_update
        self.edge_output = edge_output and edge_update
        D, H, dk = hidden_dim, num_heads, self.head_dim
        self.q = nn.Linear(D, D)
        self.k = nn.Linear(D, D, bias=False)
        self.v = nn.Linear(D, D, bias=False)
        self.e = nn.Linear(D, 2 * D)                       # per head: W_Ew (d'), W_Eb (d')
        self.attn_weight = nn.Parameter(torch.empty(H, dk))        # W_A
        self.value_edge = nn.Parameter(torch.empty(H, dk, dk))     # W_Ev
        self.degree_coef = (nn.Parameter(torch.empty(2, D)) if deg_scaler  # θ1, θ2
                            else None)
        self.out_h = nn.Linear(D, D)
        self.norm1_h = make_norm(norm, D)
        width = 2 * D if ffn_dim is None else ffn_dim
        self.ffn1 = nn.Linear(D, width)
        self.ffn2 = nn.Linear(width, D)
        self.norm2_h = make_norm(norm, D)
        if self.edge_output:
            self.out_e = nn.Linear(D, D)
            self.norm1_e = make_norm(norm, D)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's defaults for the output, FFN and norm layers; the official code's Xavier
        normal for ``W_Q, W_K, W_V, W_E`` (weights) and, with the official tensors' fans,
        for ``W_A`` (``[d', H, 1]``), ``W_Ev`` (``[d', H, d']``) and ``θ`` (``[1, D, 2]``)."""
        reset_children(self)
        for lin in (self.q, self.k, self.v, self.e):
            nn.init.xavier_normal_(lin.weight)
        H, dk, D = self.num_heads, self.head_dim, self.hidden_dim
        with torch.no_grad():
            self.attn_weight.normal_(0.0, math.sqrt(2.0 / (H + dk)))
            self.value_edge.normal_(0.0, math.sqrt(2.0 / (H * dk + dk * dk)))
            if self.degree_coef is not None:
                self.degree_coef.normal_(0.0, math.sqrt(2.0 / (2 * D + 2)))

    def _drop(self, x: Tensor, p: float) -> Tensor:
        return F.dropout(x, p, True) if p and self.training else x

    def forward(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None = None,
                batch: Tensor | None = None, *, degree: Tensor | None = None,
                return_attention_weights: bool = False, real_node_mask: Tensor | None = None,
                real_pair_mask: Tensor | None = None):
        """Applies the layer; see the class docstring for the shapes. ``real_node_mask
        [num_nodes]`` / ``real_pair_mask [num_pairs]`` (bool; a static-shape batch's real nodes
        and the pairs of real nodes, :mod:`graph_transformers.data.static_shapes`) restrict the
        node and pair BatchNorm statistics to them (``None``: every row).

        Raises:
            ValueError: as the class docstring says.
        """
        D, H, dk = self.hidden_dim, self.num_heads, self.head_dim
        if x.dim() != 2 or x.size(1) != D:
            raise ValueError(f"x must be [num_nodes, {D}], got {tuple(x.shape)}")
        if (edge_index.dim() != 2 or edge_index.size(0) != 2 or edge_index.is_floating_point()
                or edge_index.dtype == torch.bool):
            raise ValueError(f"edge_index must be an integer [2, num_pairs] tensor, got "
                             f"{tuple(edge_index.shape)} {edge_index.dtype}")
        P = edge_index.size(1)
        if edge_attr is None or edge_attr.shape != (P, D):
            got = None if edge_attr is None else tuple(edge_attr.shape)
            raise ValueError(f"GRITLayer needs the pair representations edge_attr [num_pairs={P}, "
                             f"{D}] (GRIT initializes them from RRWP), got {got}")
        if self.deg_scaler and (degree is None or degree.shape != (x.size(0),)):
            got = None if degree is None else tuple(degree.shape)
            raise ValueError(f"GRITLayer(deg_scaler=True) needs degree=[num_nodes={x.size(0)}], "
                             f"the nodes' degrees in the graph (edge_index lists the attending "
                             f"pairs, not the edges), got {got}")
        n = x.size(0)
        src, dst = edge_index[0], edge_index[1]

        # --- pair update ê_ij (§3.2) -------------------------------------------------------
        qk = self.q(x).index_select(0, dst) + self.k(x).index_select(0, src)    # [P, D]
        ew, eb = self.e(edge_attr).view(P, H, 2, dk).unbind(2)                  # [P, H, d']
        e_hat = F.relu(signed_sqrt(qk.view(P, H, dk) * ew) + eb)                # [P, H, d']

        # --- attention α_ij over each query's pairs -----------------------------------------
        # W_A per head as one product with the block-diagonal [D, H] matrix, in float32 at
        # least (autocast off): fewer [P, D] passes than a product and a sum
        acc = acc_dtype(e_hat.dtype)
        with autocast_off(x):
            w_a = torch.block_diag(*self.attn_weight.to(acc).unsqueeze(-1))     # [D, H]
            scores = e_hat.reshape(P, D).to(acc) @ w_a                          # [P, H]
        if self.clamp is not None:
            alpha = clamped_edge_softmax(scores, dst, n, self.clamp)
        else:
            alpha = scatter_softmax(scores, dst, num_nodes=n)
        weights = alpha.to(x.dtype) if return_attention_weights else None
        alpha = self._drop(alpha, self.attn_dropout).unsqueeze(-1)              # [P, H, 1]

        # --- x̂_i = Σ_j α_ij (W_V x_j + W_Ev ê_ij), accumulated in float32 under autocast ------
        v = self.v(x).view(n, H, dk).index_select(0, src)                       # [P, H, d']
        agg_v = alpha.new_zeros(n, H, dk).index_add_(0, dst, v.to(acc) * alpha)
        agg_e = alpha.new_zeros(n, H, dk).index_add_(0, dst, e_hat.to(acc) * alpha)
        value_edge = self.value_edge.to(acc)
        h = (agg_v + torch.einsum("nhd,hdc->nhc", agg_e, value_edge)).to(x.dtype).reshape(n, D)

        # --- degree scaler (§3.3), residuals, norms, FFN ---------------------------------
        h = self._drop(h, self.dropout)
        if self.degree_coef is not None:
            log_deg = torch.log1p(degree.to(h.dtype)).unsqueeze(-1)             # [n, 1]
            h = h * self.degree_coef[0] + (h * log_deg) * self.degree_coef[1]
        h = apply_norm(self.norm1_h, x + self.out_h(h), real_node_mask)
        f = self._drop(F.relu(self.ffn1(h)), self.dropout)
        h = apply_norm(self.norm2_h, h + self.ffn2(f), real_node_mask)

        e = edge_attr
        if self.edge_output:
            e_new = self.out_e(self._drop(e_hat.reshape(P, D), self.dropout))
            e = apply_norm(self.norm1_e, edge_attr + e_new, real_pair_mask)
        return with_attention(GRITOutput(h, e), edge_index, weights, return_attention_weights)

    def extra_repr(self) -> str:
        return (f"hidden_dim={self.hidden_dim}, num_heads={self.num_heads}, clamp={self.clamp}, "
                f"deg_scaler={self.deg_scaler}, edge_update={self.edge_update}, "
                f"edge_output={self.edge_output}")


def pair_bytes(num_layers: int, hidden_dim: int, training: bool = True) -> float:
    """Estimated bytes a GRIT network keeps per attending pair (float32): 14 ``[num_pairs, D]``
    tensors per layer (about 11 are saved for the backward, measured with autograd's
    saved-tensor hooks: the gathered queries and keys, ``W_E e``, the signed square root, ``ê``,
    the messages, ``O_e`` and the pair norm's input and output; the rest leaves room for the
    temporaries) plus the pair input; in evaluation a few layers' worth are alive at once. Used
    for the memory budget of :class:`~graph_transformers.models.GRIT`."""
    per_layer = 14 * hidden_dim
    layers = num_layers if training else 2
    return 4.0 * (layers * per_layer + 2 * hidden_dim)


__all__ = ["GRITLayer", "GRITOutput", "pair_bytes", "signed_sqrt"]
