"""Relations between all node pairs of a graph: shortest-path distance ids and pair edge types.

Park et al., "GRPE: Relative Positional Encoding for Graph Transformer" (2022), §"Implementation
details": the topological relation ``ψ(i, j)`` is the shortest-path distance, capped at ``L`` with
a special *far* id for longer paths, an *unreachable* id for pairs in different components and a
*virtual node* id for pairs with the virtual node (added inside the model); the edge relation
``e_ij`` is the bond type where an edge
exists, with special *no edge*, *self* and *virtual node* types. Graphormer (Ying et al. 2021,
eq. 6) biases attention with the same distances.

Both are computed once per graph and cached with the dataset by :class:`AddShortestPaths`. They
are stored flattened, row-major (``k = i · n + j``), so that PyG batching simply concatenates them
(``spd [n²]``, ``pair_edge [n², C]``); :meth:`graph_transformers.core.dense.DenseBatch.place_pairs`
puts them back into ``[B, N, N]``.

Pair convention (as :class:`~graph_transformers.core.dense.DenseBatch`): entry ``(i, j)`` describes
the relation *from* ``j`` *to* ``i`` (an edge ``j -> i``, a path ``j -> … -> i``); row ``i`` is what
query ``i`` sees.

Id layout of ``spd`` for ``max_distance = L``: ``0 … L`` exact distances, ``L + 1`` far,
``L + 2`` unreachable (:func:`spd_ids`); models add ``L + 3`` for the virtual node.
Raw layout of ``pair_edge``: the edge's feature columns where an edge ``j -> i`` exists
(``0`` when the graph has no categorical edge features), :data:`PAIR_NO_EDGE` (``-1``) elsewhere
and :data:`PAIR_SELF` (``-2``) on the diagonal; models map these to their own vocabulary.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from ..core.checks import check_edge_index
from ..core.dense import PAIR_BUDGET_BYTES, GraphSizeLimit, check_pair_budget

#: ``pair_edge`` value of a pair without an edge
PAIR_NO_EDGE = -1
#: ``pair_edge`` value on the diagonal
PAIR_SELF = -2
#: largest ``max_distance`` (ids are stored as ``uint8``)
MAX_DISTANCE_LIMIT = 250
#: bytes per node pair while computing: SciPy's float64 distances, the uint8 ids, and the int16
#: pair types with their intermediates (measured order of magnitude, not a bound)
_BYTES_PER_PAIR = 24


def num_spd_ids(max_distance: int) -> int:
    """Number of distinct :func:`spd_ids` values for ``max_distance = L``: ``L + 3`` (``0 … L``,
    far, unreachable); models with a virtual node use one more."""
    return max_distance + 3


def shortest_path_distances(edge_index: Tensor, num_nodes: int) -> np.ndarray:
    """All-pairs hop distances of one graph with SciPy's ``csgraph.shortest_path`` (a BFS per
    source on the unweighted graph, in C).

    Args:
        edge_index: ``[2, num_edges]`` (source, target); duplicate edges are merged.
        num_nodes: ``n``.

    Returns:
        ``[n, n]`` float64 array; ``D[i, j]`` is the length of a shortest path ``j -> … -> i``
        (the same both ways for undirected graphs), ``inf`` when ``i`` is unreachable from ``j``.

    Raises:
        ValueError: for a malformed ``edge_index``.
    """
    check_edge_index(edge_index, num_nodes)
    if num_nodes == 0:
        return np.zeros((0, 0))
    ei = edge_index.cpu().numpy()
    adj = sp.csr_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(num_nodes, num_nodes))
    dist = csgraph.shortest_path(adj, method="D", directed=True, unweighted=True)
    return dist.T  # scipy: dist[s, t] = path s -> t; ours: [i, j] = path j -> i


def spd_ids(edge_index: Tensor, num_nodes: int, max_distance: int) -> Tensor:
    """GRPE's topological relation ``ψ(i, j)`` of all pairs of one graph, as ids.

    Args:
        edge_index: ``[2, num_edges]``.
        num_nodes: ``n``.
        max_distance: ``L``; distances ``0 … L`` keep their own id.

    Returns:
        ``[n, n]`` uint8: the distance when ``<= L``, ``L + 1`` (far) when longer, ``L + 2``
        (unreachable) between components.

    Raises:
        ValueError: for ``max_distance`` outside ``[1, 250]`` or a malformed ``edge_index``.
    """
    if not 1 <= max_distance <= MAX_DISTANCE_LIMIT:
        raise ValueError(f"max_distance must be in [1, {MAX_DISTANCE_LIMIT}], got {max_distance}")
    dist = shortest_path_distances(edge_index, num_nodes)
    ids = np.where(np.isinf(dist), max_distance + 2,
                   np.minimum(np.nan_to_num(dist, posinf=0), max_distance + 1))
    return torch.from_numpy(ids.astype(np.uint8))


def pair_edge_types(edge_index: Tensor, num_nodes: int, edge_attr: Tensor | None = None) -> Tensor:
    """Edge relation of all pairs of one graph (raw layout, see the module docstring).

    Args:
        edge_index: ``[2, num_edges]``.
        num_nodes: ``n``.
        edge_attr: ``[num_edges]`` or ``[num_edges, C]`` integer edge types, or ``None`` /
            floating-point features (then every edge has type ``0``: only presence is kept).

    Returns:
        ``[n, n, C]`` int16 (``C = 1`` without categorical features): the edge ``j -> i``'s types
        at ``[i, j]``, :data:`PAIR_NO_EDGE` where there is none, :data:`PAIR_SELF` on the diagonal
        (which wins over a self-loop).

    Raises:
        ValueError: for a malformed ``edge_index``, ``edge_attr`` rows that do not match the edges,
            or negative / too large (``> 32767``) edge types.
    """
    check_edge_index(edge_index, num_nodes)
    if edge_attr is None or edge_attr.is_floating_point():
        types = torch.zeros(edge_index.size(1), 1, dtype=torch.long)
    else:
        types = edge_attr.view(-1, 1) if edge_attr.dim() == 1 else edge_attr
        if types.dim() != 2 or types.size(0) != edge_index.size(1):
            raise ValueError(f"edge_attr must have one row per edge ({edge_index.size(1)}), got "
                             f"shape {tuple(edge_attr.shape)}")
        if types.numel() and (int(types.min()) < 0 or int(types.max()) > 32767):
            raise ValueError(f"edge types must be in [0, 32767], got [{int(types.min())}, "
                             f"{int(types.max())}]")
    out = torch.full((num_nodes, num_nodes, types.size(1)), PAIR_NO_EDGE, dtype=torch.int16)
    src, dst = edge_index.cpu()
    out[dst, src] = types.cpu().to(torch.int16)
    idx = torch.arange(num_nodes)
    out[idx, idx] = PAIR_SELF
    return out


class AddShortestPaths(BaseTransform):
    """PyG transform storing the following, flattened row-major so that batching concatenates them.

    * ``data.spd``: ``[n²]`` uint8, :func:`spd_ids` with ``max_distance``;
    * ``data.pair_edge``: ``[n², C]`` int16, :func:`pair_edge_types` (``edge_attr`` used when it
      holds integer types).

    Meant as a ``pre_transform`` (computed once, cached with the dataset; the ``repr`` names
    ``max_distance``, so the cache key changes with it). Source: GRPE (Park et al. 2022), §
    Implementation details; Graphormer (Ying et al. 2021), eq. 6.
    """

    def __init__(self, max_distance: int = 5, budget_bytes: float | None = PAIR_BUDGET_BYTES,
                 *, size_limit: GraphSizeLimit | None = None) -> None:
        if not 1 <= max_distance <= MAX_DISTANCE_LIMIT:
            raise ValueError(f"max_distance must be in [1, {MAX_DISTANCE_LIMIT}], got "
                             f"{max_distance}")
        self.max_distance = max_distance
        self.budget_bytes = budget_bytes
        self.size_limit = size_limit

    def forward(self, data: Data) -> Data:
        """Adds ``spd`` and ``pair_edge`` to ``data``.

        Raises:
            DenseBudgetError: a graph over ``size_limit`` (the largest graph the model that
                reads the relations takes, from its memory budget; not part of the cache key)
                or ``budget_bytes`` (default 4 GiB: about 13,000 nodes), refused before
                allocating by :func:`~graph_transformers.core.dense.check_pair_budget`.
        """
        n = int(data.num_nodes)
        if self.size_limit is not None:
            self.size_limit.check(n, "shortest-path relations (encodings.spd)")
        check_pair_budget(
            n, _BYTES_PER_PAIR, self.budget_bytes,
            "all-pairs shortest paths (encodings.spd, for GRPE / Graphormer) need",
            "Use a model without pair encodings (GT, GPS)")
        data.spd = spd_ids(data.edge_index, n, self.max_distance).reshape(-1)
        pe = pair_edge_types(data.edge_index, n, getattr(data, "edge_attr", None))
        data.pair_edge = pe.reshape(n * n, pe.size(-1))
        return data

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(max_distance={self.max_distance})"
