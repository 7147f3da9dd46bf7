"""SVD-based positional encodings (Hussain et al., EGT §3.2, eqs. 8-9)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import torch
from torch import Tensor

from .lappe import random_signs
from .transform import NodeEncodingTransform

#: above this many nodes the truncated SVD uses ARPACK on the sparse matrix
DENSE_SVD_MAX_NODES = 2048


def svd_pe(edge_index: Tensor, num_nodes: int, r: int, self_loops: bool = True) -> Tensor:
    """The rank-``r`` SVD encoding of one graph's adjacency matrix.

    ``A ≈ U Σ Vᵀ = (U √Σ)(V √Σ)ᵀ = Û V̂ᵀ`` (eq. 8) and ``Γ̂ = Û ∥ V̂`` (eq. 9): row ``i`` holds node
    ``i``'s left and right factors, so ``Û_i · V̂_j ≈ A_ij``. ``A[i, j] = 1`` for an edge ``i -> j``
    (source row), with ``A_ii = 1`` when ``self_loops`` (the paper's structural matrix).

    Singular triplets beyond the graph's size (``r > num_nodes``) are zero columns, so every graph
    gets ``2r`` features.

    Args:
        edge_index: ``[2, num_edges]``.
        num_nodes: ``N``.
        r: number of singular triplets.
        self_loops: add the identity to ``A``.

    Returns:
        ``[num_nodes, 2r]`` float32: columns ``0…r-1`` are ``Û``, ``r…2r-1`` are ``V̂``.

    Raises:
        ValueError: for ``r < 1``.
    """
    if r < 1:
        raise ValueError(f"SVD encoding rank r must be >= 1, got {r}")
    n = int(num_nodes)
    out = np.zeros((n, 2 * r), dtype=np.float64)
    if n == 0:
        return torch.from_numpy(out).float()
    ei = edge_index.cpu().numpy()
    a = sp.coo_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(n, n)).tocsr()
    a.data[:] = 1.0  # duplicate edges count once
    if self_loops:
        a = (a + sp.identity(n, format="csr")).tocsr()
        a.data[:] = 1.0
    k = min(r, n)
    if n <= DENSE_SVD_MAX_NODES or k >= n - 1:
        u, s, vt = np.linalg.svd(a.toarray())
        u, s, vt = u[:, :k], s[:k], vt[:k]
    else:
        u, s, vt = spla.svds(a.astype(np.float64), k=k, which="LM", random_state=0)
        order = np.argsort(-s)
        u, s, vt = u[:, order], s[order], vt[order]
    root = np.sqrt(np.clip(s, 0.0, None))
    out[:, :k] = u * root
    out[:, r:r + k] = vt.T * root
    return torch.from_numpy(out).float()


def random_svd_sign_flip(pe: Tensor, batch: Tensor | None = None, per_graph: bool = False,
                         generator: torch.Generator | None = None,
                         num_graphs: int | None = None) -> Tensor:
    """Flips the sign of each singular-vector *pair* ``(Û_k, V̂_k)`` at random (EGT §3.2).

    Flipping ``u_k`` and ``v_k`` together leaves ``Û V̂ᵀ`` unchanged, so the flip is a data
    augmentation over equally valid decompositions.

    Args:
        pe: ``[num_nodes, 2r]`` from :func:`svd_pe`.
        batch: ``[num_nodes]`` graph ids; needed when ``per_graph``.
        per_graph: independent signs per graph, else one sign per pair for the whole batch.
        generator: optional RNG; the signs are drawn on its device, else on ``pe``'s.
        num_graphs: graphs in the batch (read from ``batch``, a device sync, when omitted).

    Raises:
        ValueError: for an odd feature count, or ``per_graph`` without ``batch``.
    """
    if pe.size(-1) % 2:
        raise ValueError(f"SVD encodings have 2r columns, got {pe.size(-1)}")
    signs = random_signs(pe, pe.size(-1) // 2, batch, per_graph, generator, num_graphs)
    return pe * torch.cat([signs, signs], dim=-1)


class AddSVDPE(NodeEncodingTransform):
    """PyG transform storing :func:`svd_pe` as ``data.svd_pe`` (``[num_nodes, 2r]``), meant as a
    ``pre_transform`` (:class:`~.transform.NodeEncodingTransform`).

    Raises:
        ValueError: for ``r < 1``.
    """

    option, what, encode = "r", "SVD encoding rank r", staticmethod(svd_pe)

    def __init__(self, r: int, attr_name: str = "svd_pe") -> None:
        super().__init__(r, attr_name)
