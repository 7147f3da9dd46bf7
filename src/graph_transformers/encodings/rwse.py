"""Random-walk structural encodings (RWSE).

Dwivedi et al., "Graph Neural Networks with Learnable Structural and Positional Representations"
(ICLR 2022), §3 (RWPE), used as a structural encoding by Rampášek et al., "Recipe for a General,
Powerful, Scalable Graph Transformer" (GraphGPS, NeurIPS 2022), §3.1:

.. math::
    \\mathrm{RWSE}_i = \\big[(RW)_{ii}, (RW^2)_{ii}, \\ldots, (RW^k)_{ii}\\big],
    \\qquad RW = D^{-1} A,

the probability that a random walk of length ``1 … k`` started at node ``i`` returns to ``i``.
Isolated nodes (degree 0) get all-zero rows (their ``D^{-1}`` entry is taken as 1 and ``A`` has an
empty row). The computation is PyG's :class:`~torch_geometric.transforms.AddRandomWalkPE` (dense
matrix powers up to 2,000 nodes, sparse CSR products above); this module fixes the attribute name
and validates the input.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import AddRandomWalkPE

from ..core.checks import check_edge_index
from .transform import NodeEncodingTransform

#: PyG's dense path (matrix powers as dense n x n) is used up to this many nodes
DENSE_MAX_NODES = 2000
#: refuse sparse matrix powers estimated to exceed this many non-zeros (~2.4 GB)
MAX_POWER_NONZEROS = 2e8


def random_walk_se(edge_index: Tensor, num_nodes: int, walk_length: int) -> Tensor:
    """Return probabilities ``(D^{-1}A)^t_{ii}`` for ``t = 1 … walk_length``.

    Args:
        edge_index: ``[2, num_edges]`` (directed pairs; an undirected graph lists both directions).
        num_nodes: ``n``.
        walk_length: ``k``, the number of steps (the PE dimension).

    Returns:
        ``[n, k]`` float32.

    Raises:
        ValueError: for ``walk_length < 1``, a malformed ``edge_index``, or a large graph whose
            sparse matrix powers would exceed :data:`MAX_POWER_NONZEROS` (estimated before any
            work as ``min(n^2, n * avg_degree^k)``).
    """
    if walk_length < 1:
        raise ValueError(f"RWSE walk_length must be >= 1, got {walk_length}")
    check_edge_index(edge_index, num_nodes)
    if num_nodes == 0:
        return torch.zeros(0, walk_length)
    if num_nodes > DENSE_MAX_NODES:
        # the sparse path forms the matrix powers P^t, whose fill-in grows like n * deg^t
        avg_deg = max(edge_index.size(1) / num_nodes, 1.0)
        fill = min(float(num_nodes) ** 2, num_nodes * avg_deg ** walk_length)
        if fill > MAX_POWER_NONZEROS:
            raise ValueError(
                f"RWSE with {walk_length} steps on a graph of {num_nodes:,} nodes (average degree "
                f"{avg_deg:.1f}) forms matrix powers with up to ~{fill:.2g} non-zeros (~"
                f"{fill * 12 / 2**30:.0f} GiB): use fewer steps or a Laplacian PE (sparse "
                "eigensolver) for large graphs")
    data = AddRandomWalkPE(walk_length, attr_name="rwse")(
        Data(edge_index=edge_index, num_nodes=num_nodes))
    return data.rwse.float()


class AddRWSE(NodeEncodingTransform):
    """PyG transform storing :func:`random_walk_se` as ``data.rwse`` (``[num_nodes, k]``), meant
    as a ``pre_transform`` (:class:`~.transform.NodeEncodingTransform`).

    Raises:
        ValueError: for ``walk_length < 1``.
    """

    option, what, encode = "walk_length", "RWSE walk_length", staticmethod(random_walk_se)

    def __init__(self, walk_length: int, attr_name: str = "rwse") -> None:
        super().__init__(walk_length, attr_name)
