"""Laplacian eigenvector positional encodings (LapPE).

Dwivedi & Bresson, "A Generalization of Transformer Networks to Graphs" (2020), eq. 1:

.. math::
    \\Delta = I - D^{-1/2} A D^{-1/2} = U^\\top \\Lambda U,

and each node's PE is its row of the ``k`` eigenvectors with the smallest non-trivial eigenvalues.
"Trivial" eigenvectors are those of the null space (eigenvalue 0: one per connected component with
at least one edge); they are skipped, so a disconnected graph gets its informative eigenvectors too.
Isolated nodes have degree 0; their ``D^{-1/2}`` entry is taken as 1 (their Laplacian row is the
unit vector), so they carry eigenvalue 1 and never produce NaNs. Graphs with fewer than ``k``
non-trivial eigenvectors are zero-padded on the right.

Eigenvectors have an arbitrary sign (and, within repeated eigenvalues, an arbitrary basis); the
paper flips signs at random during training. :func:`random_sign_flip` does that per batch, at run
time, so the stored encoding stays deterministic.

Within a repeated eigenvalue the eigensolver returns *some* orthonormal basis of the eigenspace,
and which one depends on the LAPACK build and its thread count (CSL's circulant graphs: every
non-trivial eigenvalue is repeated). ``basis="canonical"`` replaces it by a basis fixed by the
eigenspace alone (:func:`canonical_eigenbasis`), so that the encoding is the same whatever solver
computed it; ``basis="solver"`` (the default) keeps the solver's vectors, as the paper and the
committed results.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla
import torch
from torch import Tensor
from torch_geometric.data import Data

from .transform import NodeEncodingTransform

#: eigenvalues below this are treated as the null space (trivial eigenvectors).
NULL_SPACE_TOL = 1e-6
#: graphs up to this many nodes use a dense eigensolver; larger ones ARPACK (``eigsh``).
DENSE_EIGEN_MAX_NODES = 2048
#: seed of ARPACK's start vector, so that a large graph's encoding is the same in every process
EIGSH_SEED = 0
#: ARPACK's relative tolerance (``basis="solver"``; ``"canonical"`` asks for ``CANONICAL_EIGSH_TOL``
#: so that repeated eigenvalues are told apart from close ones by ``REPEATED_EIGEN_TOL``)
EIGSH_TOL = 1e-6
CANONICAL_EIGSH_TOL = 1e-10
#: ascending eigenvalues whose neighbours differ by at most this much (absolute; the spectrum lies
#: in ``[0, 2]``) form one repeated eigenvalue; a dense solver's eigenvalues are ~1e-13 exact
REPEATED_EIGEN_TOL = 1e-6
#: a node starts a new canonical basis vector when its projection residual exceeds this fraction
#: of the RMS row norm ``sqrt(m / n)`` of the eigenspace (``m`` = multiplicity)
PIVOT_TOL = 1e-3
#: ``basis="canonical"``, simple eigenvalues: entries within this fraction of the largest magnitude
#: count as tied for the sign rule, and the lowest node index among them decides the sign
SIGN_TIE_TOL = 1e-6
#: the values of ``basis``
LAPPE_BASES = ("solver", "canonical")


def normalized_laplacian(edge_index: Tensor, num_nodes: int) -> sp.csr_matrix:
    """Symmetric normalized Laplacian ``I - D^-1/2 A D^-1/2`` (GT eq. 1) as a SciPy CSR matrix.

    Args:
        edge_index: ``[2, num_edges]`` (directed pairs; the adjacency is symmetrized, duplicate
            edges and self-loops are dropped).
        num_nodes: number of nodes ``n``.

    Returns:
        ``[n, n]`` float64 CSR matrix. Isolated nodes use ``D^-1/2 = 1``.

    Raises:
        ValueError: if ``edge_index`` has the wrong shape or indices outside ``[0, n)``.
    """
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError("edge_index must have shape [2, num_edges], "
                         f"got {tuple(edge_index.shape)}")
    ei = edge_index.cpu().numpy()
    if ei.size and (ei.min() < 0 or ei.max() >= num_nodes):
        raise ValueError(
            f"edge_index has node ids in [{ei.min()}, {ei.max()}] but the graph has "
            f"{num_nodes} nodes")
    keep = ei[0] != ei[1]
    row, col = ei[0][keep], ei[1][keep]
    adj = sp.coo_matrix((np.ones(row.size), (row, col)), shape=(num_nodes, num_nodes)).tocsr()
    adj = ((adj + adj.T) > 0).astype(np.float64)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    inv_sqrt = 1.0 / np.sqrt(np.clip(deg, 1.0, None))
    d = sp.diags(inv_sqrt)
    return (sp.eye(num_nodes, format="csr") - d @ adj @ d).tocsr()


def smallest_eigenpairs(lap: sp.csr_matrix, count: int, tol: float = EIGSH_TOL
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The eigensolver call of :func:`laplacian_pe`: eigenpairs of the normalized Laplacian in
    ascending order of eigenvalue, all ``n`` of them (LAPACK ``syevd`` through
    ``numpy.linalg.eigh``, for ``n <= DENSE_EIGEN_MAX_NODES``) or the ``count`` smallest
    (ARPACK ``eigsh`` with relative tolerance ``tol`` and a seeded start vector).

    Within a repeated eigenvalue the vectors are whichever orthonormal basis the solver returns.

    Args:
        lap: ``[n, n]`` normalized Laplacian (:func:`normalized_laplacian`).
        count: eigenpairs wanted from ARPACK, ``1 <= count < n`` (ignored by the dense solver).
        tol: ARPACK's relative tolerance.

    Returns:
        ``(vals [m], vecs [n, m])`` float64, ``vals`` ascending, ``vecs`` orthonormal columns.
    """
    num_nodes = lap.shape[0]
    if num_nodes <= DENSE_EIGEN_MAX_NODES:
        return np.linalg.eigh(lap.toarray())
    # Smallest eigenvalues of a PSD matrix with spectrum in [0, 2]: shift-invert near 0 is
    # fragile (singular), so ask for the largest of (2I - L) instead.
    shifted = 2.0 * sp.eye(num_nodes, format="csr") - lap
    # a seeded start vector: without one, ARPACK draws its own, and two processes gave
    # encodings differing in their last bits (1e-9 on a 100,000-node graph)
    v0 = np.random.default_rng(EIGSH_SEED).uniform(-1.0, 1.0, num_nodes)
    vals, vecs = spla.eigsh(shifted, k=count, which="LA", tol=tol, v0=v0)
    vals = 2.0 - vals
    order = np.argsort(vals)
    return vals[order], vecs[:, order]


def eigenvalue_groups(vals: np.ndarray, tol: float = REPEATED_EIGEN_TOL) -> list[np.ndarray]:
    """The repeated eigenvalues of an ascending spectrum: runs of consecutive eigenvalues whose
    neighbours differ by at most ``tol`` (single linkage).

    Args:
        vals: ``[m]`` eigenvalues in ascending order.
        tol: the largest gap between neighbours of one group (absolute).

    Returns:
        The groups as index arrays into ``vals``, in order; a simple eigenvalue is a group of one.

    Raises:
        ValueError: ``vals`` is not 1-D or not ascending.
    """
    vals = np.asarray(vals, dtype=np.float64)
    if vals.ndim != 1:
        raise ValueError(f"eigenvalues must be 1-D, got shape {vals.shape}")
    gaps = np.diff(vals)
    if (gaps < 0).any():
        raise ValueError("eigenvalues must be in ascending order")
    return np.split(np.arange(vals.size), np.flatnonzero(gaps > tol) + 1)


def canonical_eigenbasis(vecs: np.ndarray) -> np.ndarray:
    """The canonical orthonormal basis of the space spanned by ``vecs``: a function of the space
    alone (the same for ``vecs @ R`` with any orthogonal ``R``), fixed by the node order.

    The standard basis vectors ``e_i`` are projected onto the space, ``P e_i`` with
    ``P = vecs vecs^T``, in node order ``i = 0, 1, ...``, and orthonormalized (Gram-Schmidt);
    a projection whose residual is below ``PIVOT_TOL · sqrt(m / n)`` is skipped. The result is
    the one orthonormal basis ``b_1 … b_m`` of the space with, for the pivot nodes
    ``i_1 < … < i_m``, ``b_c[i_l] = 0`` for ``l < c`` and ``b_c[i_c] > 0``. Computed on the rows
    of ``vecs`` (``P e_i = vecs · vecs[i]``), in ``O(n m²)``.

    This is canonicalization by a fixed rule on the node order, not a permutation-equivariant
    one: relabelling the nodes can rotate the basis within the space. No equivariant choice
    exists for graphs whose automorphisms act on an eigenspace (the cyclic shift of a circulant
    rotates each of its 2-dimensional eigenspaces); cf. the basis ambiguity of Lim et al.,
    "Sign and Basis Invariant Networks" (2022), and MAP (Ma et al., "Laplacian Canonization",
    2023), whose basis rule tells nodes apart by ``||P e_i||`` (all equal on a vertex-transitive
    graph).

    Args:
        vecs: ``[n, m]`` orthonormal columns spanning the space (``m >= 1``).

    Returns:
        ``[n, m]`` float64 orthonormal basis of the same space.

    Raises:
        ValueError: ``vecs`` is not 2-D with ``1 <= m <= n``, or its rows do not span ``m``
            dimensions (the columns are not orthonormal).
    """
    vecs = np.asarray(vecs, dtype=np.float64)
    if vecs.ndim != 2 or not 1 <= vecs.shape[1] <= vecs.shape[0]:
        raise ValueError(f"vecs must be [n, m] with 1 <= m <= n, got shape {vecs.shape}")
    n, m = vecs.shape
    rows = vecs.copy()  # residuals of the rows (coordinates of P e_i) after each pivot
    threshold = PIVOT_TOL * np.sqrt(m / n)
    coords = np.zeros((m, m))
    pivots: list[int] = []
    start = 0
    for c in range(m):
        norms = np.linalg.norm(rows[start:], axis=1)
        above = np.flatnonzero(norms > threshold)
        if not above.size:
            raise ValueError(f"the rows of vecs span {c} dimensions, not {m}: are its columns "
                             "orthonormal?")
        pivot = start + int(above[0])
        q = rows[pivot] / np.linalg.norm(rows[pivot])
        coords[:, c] = q
        rows -= np.outer(rows @ q, q)
        pivots.append(pivot)
        start = pivot + 1
    basis = vecs @ coords
    for c in range(1, m):  # zero by construction: exactly zero, not rounding noise
        basis[pivots[:c], c] = 0.0
    return basis


def _fix_signs(vecs: np.ndarray, tie_tol: float | None) -> np.ndarray:
    """Each column times ±1 so that its largest-magnitude entry is positive; with ``tie_tol``,
    entries within ``tie_tol · max|v|`` of the largest are tied and the first of them decides."""
    if not vecs.shape[1]:
        return vecs
    mag = np.abs(vecs)
    if tie_tol is None:
        idx = mag.argmax(axis=0)
    else:
        idx = (mag >= mag.max(axis=0) * (1.0 - tie_tol)).argmax(axis=0)
    signs = np.sign(vecs[idx, np.arange(vecs.shape[1])])
    signs[signs == 0] = 1.0
    return vecs * signs


def _eigenpairs(lap: sp.csr_matrix, k: int, canonical: bool) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs for :func:`laplacian_pe`: for ARPACK, the null space (one vector per connected
    component with an edge) and ``k`` more, plus 8; with ``canonical``, twice as many each time
    until the group of the last wanted eigenvalue ends before the last one computed (a repeated
    eigenvalue is never cut), the dense solver where that would take ``n - 1`` of them.

    Raises:
        ValueError: that repeated eigenvalue needs the dense solver on more than
            ``4 · DENSE_EIGEN_MAX_NODES`` nodes.
    """
    num_nodes = lap.shape[0]
    if num_nodes <= DENSE_EIGEN_MAX_NODES:
        return smallest_eigenpairs(lap, num_nodes)
    _, labels = csgraph.connected_components(lap, directed=False)
    wanted = int((np.bincount(labels) > 1).sum()) + k
    num = min(num_nodes - 1, wanted + 8)
    if not canonical:
        return smallest_eigenpairs(lap, num, EIGSH_TOL)
    while True:
        vals, vecs = smallest_eigenpairs(lap, num, CANONICAL_EIGSH_TOL)
        last = min(wanted, vals.size) - 1
        if eigenvalue_groups(vals)[-1][0] > last:
            return vals, vecs
        if num == num_nodes - 1:
            break
        num = min(num_nodes - 1, 2 * num)
    if num_nodes > 4 * DENSE_EIGEN_MAX_NODES:
        raise ValueError(f"the eigenvalue {vals[last]:.6g} of a {num_nodes}-node graph repeats "
                         f"past the {num} ARPACK can return: use basis 'solver' or a smaller k")
    return np.linalg.eigh(lap.toarray())


def laplacian_pe(edge_index: Tensor, num_nodes: int, k: int, basis: str = "solver") -> Tensor:
    """The ``k`` eigenvectors of the smallest non-trivial eigenvalues of the normalized Laplacian.

    Args:
        edge_index: ``[2, num_edges]``.
        num_nodes: ``n``.
        k: number of eigenvectors (PE dimension).
        basis: ``"solver"``: the eigensolver's vectors, its sign fixed so that its
            largest-magnitude entry is positive (a deterministic convention; training flips
            signs at random anyway); within a repeated eigenvalue the basis is the solver's
            (LAPACK build- and thread-dependent). ``"canonical"``: each repeated eigenvalue
            (:func:`eigenvalue_groups`, whole even where ``k`` cuts it) gets
            :func:`canonical_eigenbasis`, a simple one the same sign rule with ties within
            ``SIGN_TIE_TOL`` broken by the lowest node index: the same encoding whatever
            orthonormal basis the solver returned (to float precision).

    Returns:
        ``[n, k]`` float32; columns beyond the available non-trivial eigenvectors are zero.
        Each eigenvector has unit L2 norm.

    Raises:
        ValueError: for ``k < 1``, an unknown ``basis`` or a malformed ``edge_index``.
    """
    if k < 1:
        raise ValueError(f"LapPE dimension k must be >= 1, got {k}")
    if basis not in LAPPE_BASES:
        raise ValueError(f"LapPE basis must be one of {LAPPE_BASES}, got {basis!r}")
    canonical = basis == "canonical"
    out = np.zeros((num_nodes, k), dtype=np.float64)
    if num_nodes == 0:
        return torch.from_numpy(out).float()
    lap = normalized_laplacian(edge_index, num_nodes)
    vals, vecs = _eigenpairs(lap, k, canonical)
    nontrivial = vals > NULL_SPACE_TOL
    vals, vecs = vals[nontrivial], vecs[:, nontrivial]
    if canonical:
        vecs = vecs.copy()
        for group in eigenvalue_groups(vals):
            if group[0] >= k:
                break
            if group.size == 1:
                vecs[:, group] = _fix_signs(vecs[:, group], SIGN_TIE_TOL)
            else:
                vecs[:, group] = canonical_eigenbasis(vecs[:, group])
        vecs = vecs[:, :k]
    else:
        vecs = _fix_signs(vecs[:, :k], None)
    out[:, : vecs.shape[1]] = vecs
    return torch.from_numpy(out).float()


def random_sign_flip(pe: Tensor, batch: Tensor | None = None, per_graph: bool = False,
                     generator: torch.Generator | None = None,
                     num_graphs: int | None = None) -> Tensor:
    """Multiply each eigenvector column by a random ±1 (GT §2.2: sign flips during training).

    The signs are drawn on ``pe``'s device (or the generator's), so no host-device transfer or
    sync happens on an accelerator.

    Args:
        pe: ``[num_nodes, k]`` positional encodings of a batch.
        batch: ``[num_nodes]`` graph id of each node; needed when ``per_graph``.
        per_graph: draw independent signs per graph (``True``) or one sign per column for the
            whole batch (``False``, as in the official GT code).
        generator: optional RNG.
        num_graphs: graphs in the batch (read from ``batch``, a device sync, when omitted).

    Returns:
        ``[num_nodes, k]`` tensor with flipped columns.
    """
    return pe * random_signs(pe, pe.size(-1), batch, per_graph, generator, num_graphs)


def random_signs(pe: Tensor, num_signs: int, batch: Tensor | None = None,
                 per_graph: bool = False, generator: torch.Generator | None = None,
                 num_graphs: int | None = None) -> Tensor:
    """Random ±1 in ``pe``'s dtype: ``[num_nodes, num_signs]`` (one row per graph, gathered by
    ``batch``) when ``per_graph``, else ``[1, num_signs]`` for the whole batch. Drawn on the
    generator's device, else on ``pe``'s (no host sync; ``num_graphs`` spares reading it from
    ``batch``).

    Raises:
        ValueError: for ``per_graph`` without ``batch``.
    """
    device = generator.device if generator is not None else pe.device
    if not per_graph:
        return (torch.randint(0, 2, (1, num_signs), generator=generator, device=device) * 2
                - 1).to(pe)
    if batch is None:
        raise ValueError("per-graph sign flips need the batch vector")
    if num_graphs is None:
        num_graphs = int(batch.max()) + 1 if batch.numel() else 0
    signs = torch.randint(0, 2, (num_graphs, num_signs), generator=generator, device=device)
    return (signs * 2 - 1).to(pe)[batch]


class AddLaplacianPE(NodeEncodingTransform):
    """PyG transform storing :func:`laplacian_pe` as ``data.lap_pe`` (``[num_nodes, k]``), meant
    as a ``pre_transform`` (:class:`~.transform.NodeEncodingTransform`). ``basis``: as
    :func:`laplacian_pe`; the ``repr`` (the processed cache's name) names it only when it is not
    the default, so the caches of ``basis="solver"`` keep their names.

    Raises:
        ValueError: for ``k < 1`` or an unknown ``basis``.
    """

    option, what, encode = "k", "LapPE dimension k", staticmethod(laplacian_pe)

    def __init__(self, k: int, attr_name: str = "lap_pe", basis: str = "solver") -> None:
        super().__init__(k, attr_name)
        if basis not in LAPPE_BASES:
            raise ValueError(f"LapPE basis must be one of {LAPPE_BASES}, got {basis!r}")
        self.basis = basis

    def forward(self, data: Data) -> Data:
        data[self.attr_name] = laplacian_pe(data.edge_index, data.num_nodes, self.k, self.basis)
        return data

    def __repr__(self) -> str:
        basis = "" if self.basis == "solver" else f", basis={self.basis!r}"
        return f"{self.__class__.__name__}(k={self.k}{basis}, attr_name={self.attr_name!r})"
