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
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla
import torch
from torch import Tensor

from .transform import NodeEncodingTransform

#: eigenvalues below this are treated as the null space (trivial eigenvectors).
NULL_SPACE_TOL = 1e-6
#: graphs up to this many nodes use a dense eigensolver; larger ones ARPACK (``eigsh``).
DENSE_EIGEN_MAX_NODES = 2048
#: seed of ARPACK's start vector, so that a large graph's encoding is the same in every process
EIGSH_SEED = 0


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


def laplacian_pe(edge_index: Tensor, num_nodes: int, k: int) -> Tensor:
    """The ``k`` eigenvectors of the smallest non-trivial eigenvalues of the normalized Laplacian.

    Args:
        edge_index: ``[2, num_edges]``.
        num_nodes: ``n``.
        k: number of eigenvectors (PE dimension).

    Returns:
        ``[n, k]`` float32; columns beyond the available non-trivial eigenvectors are zero.
        Each eigenvector has unit L2 norm; its sign is fixed so its largest-magnitude entry is
        positive (a deterministic convention; training flips signs at random anyway).

    Raises:
        ValueError: for ``k < 1`` or a malformed ``edge_index``.
    """
    if k < 1:
        raise ValueError(f"LapPE dimension k must be >= 1, got {k}")
    out = np.zeros((num_nodes, k), dtype=np.float64)
    if num_nodes == 0:
        return torch.from_numpy(out).float()
    lap = normalized_laplacian(edge_index, num_nodes)
    if num_nodes <= DENSE_EIGEN_MAX_NODES:
        vals, vecs = np.linalg.eigh(lap.toarray())
    else:
        # Smallest eigenvalues of a PSD matrix with spectrum in [0, 2]: shift-invert near 0 is
        # fragile (singular), so ask for the largest of (2I - L) instead. The null space has one
        # vector per connected component with an edge; ask for those on top of the k wanted.
        _, labels = csgraph.connected_components(lap, directed=False)
        sizes = np.bincount(labels)
        null_dim = int((sizes > 1).sum())
        num = min(num_nodes - 1, k + null_dim + 8)
        shifted = 2.0 * sp.eye(num_nodes, format="csr") - lap
        # a seeded start vector: without one, ARPACK draws its own, and two processes gave
        # encodings differing in their last bits (1e-9 on a 100,000-node graph)
        v0 = np.random.default_rng(EIGSH_SEED).uniform(-1.0, 1.0, num_nodes)
        vals, vecs = spla.eigsh(shifted, k=num, which="LA", tol=1e-6, v0=v0)
        vals = 2.0 - vals
        order = np.argsort(vals)
        vals, vecs = vals[order], vecs[:, order]
    nontrivial = vals > NULL_SPACE_TOL
    vecs = vecs[:, nontrivial][:, :k]
    if vecs.shape[1]:
        idx = np.abs(vecs).argmax(axis=0)
        signs = np.sign(vecs[idx, np.arange(vecs.shape[1])])
        signs[signs == 0] = 1.0
        vecs = vecs * signs
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
    as a ``pre_transform`` (:class:`~.transform.NodeEncodingTransform`).

    Raises:
        ValueError: for ``k < 1``.
    """

    option, what, encode = "k", "LapPE dimension k", staticmethod(laplacian_pe)

    def __init__(self, k: int, attr_name: str = "lap_pe") -> None:
        super().__init__(k, attr_name)
