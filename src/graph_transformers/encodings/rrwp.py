r"""Relative random-walk probabilities (RRWP), the positional encodings of GRIT.

Ma et al., "Graph Inductive Biases in Transformers without Message Passing" (GRIT, ICML 2023),
§3.1: with :math:`A_{uv}` the number of edges :math:`u \to v`, :math:`D` the diagonal of its row
sums (out-degrees) and :math:`M = D^{-1} A` the random-walk transition matrix,

.. math::
    P_{ij} = \big[I,\ M,\ M^2,\ \ldots,\ M^{K-1}\big]_{ij} \in \mathbb{R}^K,

the probabilities that a random walk of ``0 … K - 1`` steps started at ``i`` (following edge
directions, ``edge_index[0] → edge_index[1]``) is at ``j``. ``K`` is ``walk_length``. GRIT uses the
diagonal :math:`P_{ii}` as a node encoding and every :math:`P_{ij}` to initialize the pair
representations :math:`e_{ij}` (the query is ``i``, the key ``j``).

Conventions (as the official code, ``grit/transform/rrwp.py``):

* ``k = 0`` is the identity (``add_identity``): :math:`P_{ii}` starts with 1, the other pairs
  with 0;
* a node without outgoing edges (degree 0) has an all-zero row of :math:`M` (its :math:`D^{-1}`
  entry is taken as 0): its walks stop, so :math:`P_{ii} = [1, 0, …, 0]` and every pair with it as
  the start is zero beyond ``k = 0``;
* pairs in different components (or unreachable along edge directions) are zero for every
  ``k``;
* multi-edges count with their multiplicity (a walk picks one of the node's edges uniformly) and
  self-loops are edges; edge weights are not read (the benchmark graphs have none).

Storage (:class:`AddRRWP`): ``rrwp [n, K]`` (the diagonal) and ``rrwp_pair [n², K]``, every pair
of the graph flattened row-major (``k = i · n + j``, pair ``(i, j)`` = query ``i``, key ``j``: the
edge ``j → i`` of :class:`~graph_transformers.core.dense.DenseBatch`'s convention), as the cached
``spd`` of :class:`~.spd.AddShortestPaths`, so that PyG batching concatenates them and the pairs
of a batch are, graph after graph, those of
:func:`~graph_transformers.models.utils.full_graph_edge_index` with ``self_loops=True``
(``DenseBatch.place_pairs`` gives the padded ``[B, N, N, K]`` view). The official code keeps a
sparse list of the pairs with a nonzero value plus their index; GRIT's shipped configs attend
over all pairs (``full_attn: True``), and on the benchmark graphs (connected, diameter below
``K``) nearly every pair is nonzero, so the dense layout stores less (no index) and needs no
coalescing in the model.

With ``AddRRWP(cache_pairs=False)`` (config ``encodings.rrwp.cache_pairs: false``) only the
diagonal is stored, and :func:`batch_rrwp` computes the pairs of each batch on the model's device,
in the same layout and to the same values (up to float64 rounding): the RRWP cache of PATTERN or
CLUSTER shrinks from ≈17–22 GB to ≈0.14–0.18 GB (``docs/grit.md``).
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from ..core.checks import check_edge_index
from ..core.dense import (PAIR_BUDGET_BYTES, GraphSizeLimit, check_pair_budget,
                          count_per_graph)

#: bytes per node pair while computing, besides the ``8 K`` of the float32 result and its copy
#: when the dataset is collated and saved: the float64 adjacency, transition matrix, current
#: power and product. Measured peaks (one graph of 3,000 nodes, computed, collated and saved):
#: 67 B per pair at K = 4 and 187 B at K = 21, against 72 and 208 estimated
_WORK_BYTES_PER_PAIR = 40


def _check_graph(edge_index: Tensor, num_nodes: int, walk_length: int) -> None:
    if walk_length < 1:
        raise ValueError(f"RRWP walk_length must be >= 1 (K = 1 keeps the identity only), got "
                         f"{walk_length}")
    check_edge_index(edge_index, num_nodes)


def rrwp_bytes(num_nodes: int, walk_length: int) -> int:
    """Peak bytes of :class:`AddRRWP` for a graph of ``num_nodes`` nodes: the float32 result,
    its copy in the collated dataset, and the float64 work matrices (an upper estimate)."""
    return num_nodes * num_nodes * (8 * walk_length + _WORK_BYTES_PER_PAIR)


def relative_random_walk_probabilities(edge_index: Tensor, num_nodes: int,
                                       walk_length: int) -> Tensor:
    """GRIT's RRWP of one graph, ``P[i, j, k] = (M^k)_{ij}`` for ``k = 0 … K - 1`` (§3.1; the
    conventions of the module docstring).

    Dense matrix powers in float64 (``K - 1`` products of ``[n, n]`` matrices), rounded to
    float32 once at the end.

    Args:
        edge_index: ``[2, num_edges]`` (source, target); an undirected graph lists both
            directions.
        num_nodes: ``n``.
        walk_length: ``K`` (the encoding's width; ``K - 1`` steps and the identity).

    Returns:
        ``[n, n, K]`` float32.

    Raises:
        ValueError: for ``walk_length < 1`` or a malformed ``edge_index``.
    """
    _check_graph(edge_index, num_nodes, walk_length)
    out = torch.zeros(num_nodes, num_nodes, walk_length)
    if num_nodes == 0:
        return out
    src, dst = edge_index.cpu()
    adj = torch.zeros(num_nodes, num_nodes, dtype=torch.float64)
    adj.index_put_((src, dst), torch.ones(src.numel(), dtype=torch.float64), accumulate=True)
    deg = adj.sum(1, keepdim=True)
    trans = adj / torch.where(deg > 0, deg, torch.ones_like(deg))  # rows of degree 0 stay 0
    idx = torch.arange(num_nodes)
    out[idx, idx, 0] = 1.0
    power = trans
    for k in range(1, walk_length):
        out[..., k] = power
        if k + 1 < walk_length:
            power = power @ trans
    return out


def batch_rrwp(edge_index: Tensor, batch: Tensor, host_sizes: Tensor, walk_length: int,
               pair_index: Tensor) -> tuple[Tensor, Tensor]:
    """RRWP of every graph of a batch, computed on the batch's device: what
    :class:`AddRRWP` would have cached, for a dataset processed with ``cache_pairs=False``
    (same conventions and values: float64 powers rounded to float32 once).

    The graphs' transition matrices are padded to ``[B, N, N]`` (``N`` the largest graph) and
    multiplied ``K - 2`` times; each power is read at the pairs of ``pair_index``. Work memory:
    three float64 ``[B, N, N]`` matrices plus the ``[P, K]`` result. No device sync: the sizes
    come from the host.

    Args:
        edge_index: ``[2, num_edges]`` of the batch (source, target).
        batch: ``[num_nodes]`` sorted graph ids.
        host_sizes: ``[B]`` nodes per graph on the CPU
            (:func:`~graph_transformers.core.dense.host_num_nodes`).
        walk_length: ``K``.
        pair_index: ``[2, P]`` pairs of nodes of the same graph (``pair_index[0] = j`` key,
            ``pair_index[1] = i`` query), e.g.
            :func:`~graph_transformers.models.utils.full_graph_edge_index` with
            ``self_loops=True``, the layout of the cached ``rrwp_pair``.

    Returns:
        ``(node [num_nodes, K], pair [P, K])`` float32: ``P_ii`` and ``P_ij`` (query ``i``, key
        ``j``).

    Raises:
        ValueError: for ``walk_length < 1``.

    Example:
        >>> from torch_geometric.data import Batch, Data
        >>> from graph_transformers.core.dense import host_num_nodes
        >>> from graph_transformers.models.utils import full_graph_edge_index
        >>> path = Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=3)
        >>> b = Batch.from_data_list([AddRRWP(4, cache_pairs=False)(path)] * 2)
        >>> sizes = host_num_nodes(b)
        >>> index = full_graph_edge_index(b.batch, self_loops=True, host_sizes=sizes)
        >>> node, pair = batch_rrwp(b.edge_index, b.batch, sizes, 4, index)
        >>> pair.shape, torch.allclose(node, b.rrwp)
        (torch.Size([18, 4]), True)
        >>> pair[1]  # query 0, key 1: from the path's end, walks are in the middle at odd steps
        tensor([0., 1., 0., 1.])
    """
    if walk_length < 1:
        raise ValueError(f"RRWP walk_length must be >= 1 (K = 1 keeps the identity only), got "
                         f"{walk_length}")
    device, num_graphs = batch.device, host_sizes.numel()
    n_max = int(host_sizes.max()) if num_graphs else 0
    counts = count_per_graph(batch, num_graphs)
    pos = torch.arange(batch.numel(), device=device) - (torch.cumsum(counts, 0) - counts)[batch]
    adj = torch.zeros(num_graphs, n_max, n_max, dtype=torch.float64, device=device)
    src, dst = edge_index[0], edge_index[1]
    adj.index_put_((batch[src], pos[src], pos[dst]),
                   torch.ones(src.numel(), dtype=torch.float64, device=device), accumulate=True)
    deg = adj.sum(-1, keepdim=True)
    trans = adj / torch.where(deg > 0, deg, torch.ones_like(deg))  # rows of degree 0 stay 0
    key, query = pair_index[0], pair_index[1]
    at_pairs = (batch[query], pos[query], pos[key])
    at_nodes = (batch, pos, pos)
    node = torch.zeros(batch.numel(), walk_length, dtype=torch.float32, device=device)
    pair = torch.zeros(key.numel(), walk_length, dtype=torch.float32, device=device)
    node[:, 0] = 1.0
    pair[:, 0] = (key == query).float()
    power = trans
    for k in range(1, walk_length):
        node[:, k] = power[at_nodes].float()
        pair[:, k] = power[at_pairs].float()
        if k + 1 < walk_length:
            power = torch.bmm(power, trans)
    return node, pair


class AddRRWP(BaseTransform):
    """PyG transform storing GRIT's RRWP (:func:`relative_random_walk_probabilities`).

    * ``data.rrwp``: ``[n, K]`` float32, the node encoding ``P_ii`` (the diagonal);
    * ``data.rrwp_pair``: ``[n², K]`` float32, every pair ``P_ij`` flattened row-major
      (``k = i · n + j``; batching concatenates them, see the module docstring).

    Meant as a ``pre_transform`` (computed once, cached with the dataset; the ``repr`` names
    ``walk_length`` and ``cache_pairs=False``, so the cache key changes with them). Source: GRIT
    (Ma et al. 2023), §3.1.

    The cached pairs take ``4 K n²`` bytes per graph: about 50 KB for a ZINC molecule (K = 21,
    0.6 GB for ZINC-12k) but about 1.2 MB for a PATTERN graph (K = 21, n ≈ 120; ≈ 17 GB for its
    14,000 graphs), see ``docs/grit.md``. With ``cache_pairs=False`` only ``rrwp`` is stored and
    the model computes the pairs of each batch (:func:`batch_rrwp`, the same values).

    Args:
        walk_length: ``K``.
        budget_bytes: refuse a graph whose computation would allocate more (``None``: no check).
        cache_pairs: store ``rrwp_pair`` (``False``: the diagonal only).
        size_limit: the largest graph the model that reads the encoding takes (its memory
            budget, :meth:`~graph_transformers.models.grit.GRIT.graph_size_limit`): a larger
            graph is refused before its encoding is computed (``None``: no such limit). Not
            part of the cache key.

    Raises:
        ValueError: for ``walk_length < 1``.
    """

    def __init__(self, walk_length: int = 21, budget_bytes: float | None = PAIR_BUDGET_BYTES,
                 *, cache_pairs: bool = True, size_limit: GraphSizeLimit | None = None
                 ) -> None:
        if walk_length < 1:
            raise ValueError(f"RRWP walk_length must be >= 1 (K = 1 keeps the identity only), "
                             f"got {walk_length}")
        self.walk_length = walk_length
        self.budget_bytes = budget_bytes
        self.cache_pairs = cache_pairs
        self.size_limit = size_limit

    def forward(self, data: Data) -> Data:
        """Adds ``rrwp`` and, with ``cache_pairs``, ``rrwp_pair`` to ``data``.

        Raises:
            DenseBudgetError: a graph over ``size_limit`` or ``budget_bytes`` (default 4 GiB:
                about 4,500 nodes at K = 21), refused before allocating by
                :func:`~graph_transformers.core.dense.check_pair_budget`.
            ValueError: for a malformed ``edge_index``.
        """
        n = int(data.num_nodes)
        if self.size_limit is not None:
            self.size_limit.check(n, f"RRWP encoding (encodings.rrwp, walk_length "
                                     f"{self.walk_length})")
        check_pair_budget(
            n, rrwp_bytes(1, self.walk_length), self.budget_bytes,
            "RRWP over all node pairs (encodings.rrwp, for GRIT) needs",
            "Lower encodings.rrwp.walk_length or use a model without pair encodings (GT, GPS)",
            setting=f" at walk_length {self.walk_length}")
        pairs = relative_random_walk_probabilities(data.edge_index, n, self.walk_length)
        idx = torch.arange(n)
        data.rrwp = pairs[idx, idx].clone()
        if self.cache_pairs:
            data.rrwp_pair = pairs.reshape(n * n, self.walk_length)
        return data

    def __repr__(self) -> str:
        # the cache key of the default (pairs cached) is the one it has always been
        extra = "" if self.cache_pairs else ", cache_pairs=False"
        return f"{self.__class__.__name__}(walk_length={self.walk_length}{extra})"
