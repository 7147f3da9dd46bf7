r"""Random regular expander graphs over each graph's nodes, for Exphormer's sparse attention.

Shirzad, Velingker, Venkatachalam, Sutherland & Sinop, "Exphormer: Sparse Transformers for
Graphs" (ICML 2023), §3.2 and §4: besides the graph's own edges and a few virtual nodes, each node
attends over its neighbours in a random ``d``-regular graph on the same nodes. A random
``d``-regular graph is, with high probability, a good expander (Friedman's theorem: its second
adjacency eigenvalue is close to the Ramanujan bound :math:`2\sqrt{d-1}`), so a few layers of
attention along it connect every pair of nodes while keeping ``O(d·n)`` edges.

Construction (:func:`random_expander`): the configuration model. Each node gets ``d`` "stubs",
the ``n·d`` stubs are paired uniformly at random (one random permutation), and each pair is an
edge. The pairs that are self-loops or repeat an earlier pair are then repaired by degree-
preserving switches: a bad pair ``{a, b}`` and a random pair ``{c, e}`` become ``{a, c}, {b, e}``
(or ``{a, e}, {b, c}``); a switch that creates a new bad pair is repaired in a later round. The
expected number of bad pairs of the configuration model is a constant (about ``(d² − 1)/4``,
independent of ``n``), so a few rounds end with a simple ``d``-regular graph; whatever is still
bad after :data:`MAX_REPAIR_ROUNDS` rounds (only seen on tiny graphs, where a simple ``d``-regular
graph may not exist) is dropped, so those few nodes have degree below ``d``. Special cases:
``n·d`` odd drops one random stub (one node gets ``d − 1``); ``n ≤ d + 1`` gives the complete
graph (degree ``n − 1``); ``n ≤ 1`` gives no edge.

The paper builds its random regular graph from ``d/2`` random permutations
(:math:`\{i, \pi_k(i)\}`), which may contain self-loops and repeated edges and needs an even
``d``. The configuration model with repairs here gives a simple graph (no self-loop, no
repeated edge) and any ``d``.

Randomness: each graph's expander is drawn from a NumPy generator seeded by
``(seed, num_nodes, crc32(edge_index))``: deterministic for a given graph and seed, independent
of the order (or the process) in which the dataset's graphs are processed, and different for
different graphs of the same size.
"""
from __future__ import annotations

import zlib

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

#: switch rounds of the repair before the remaining self-loops / repeated pairs are dropped
MAX_REPAIR_ROUNDS = 100


def _check(num_nodes: int, degree: int, seed: int) -> None:
    if not isinstance(num_nodes, int) or num_nodes < 0:
        raise ValueError(f"num_nodes must be a non-negative int, got {num_nodes!r}")
    if not isinstance(degree, int) or degree < 1:
        raise ValueError(f"expander degree must be a positive int, got {degree!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"expander seed must be a non-negative int, got {seed!r}")


def _bad_pairs(pairs: np.ndarray, num_nodes: int) -> np.ndarray:
    """Boolean mask of the pairs ``[m, 2]`` that are self-loops or repeat an earlier pair."""
    lo, hi = pairs.min(1), pairs.max(1)
    key = lo * num_nodes + hi
    order = np.argsort(key, kind="stable")
    repeat = np.zeros(len(key), dtype=bool)
    repeat[order[1:]] = key[order[1:]] == key[order[:-1]]
    return (lo == hi) | repeat


def random_regular_pairs(num_nodes: int, degree: int, rng: np.random.Generator) -> np.ndarray:
    """The undirected edges ``[m, 2]`` of a random (nearly) ``degree``-regular simple graph on
    ``num_nodes`` nodes drawn with ``rng`` (configuration model with switch repairs; module
    docstring). ``m = ⌊n·d/2⌋`` minus the pairs dropped after the repairs.

    Raises:
        ValueError: for a negative ``num_nodes`` or ``degree < 1``.
    """
    _check(num_nodes, degree, 0)
    n, d = num_nodes, degree
    if n <= 1:
        return np.zeros((0, 2), dtype=np.int64)
    if n <= d + 1:  # no simple d-regular graph (or exactly one): the complete graph
        i, j = np.triu_indices(n, 1)
        return np.stack([i, j], 1).astype(np.int64)
    stubs = np.repeat(np.arange(n, dtype=np.int64), d)
    rng.shuffle(stubs)
    if stubs.size % 2:  # n·d odd: one random node keeps d − 1 edges
        stubs = stubs[:-1]
    pairs = stubs.reshape(-1, 2)
    m = len(pairs)
    for _ in range(MAX_REPAIR_ROUNDS):
        bad = _bad_pairs(pairs, n)
        worst = np.flatnonzero(bad)
        if worst.size == 0:
            break
        partner = rng.integers(0, m, size=worst.size)
        # each switch touches two pairs; keep switches whose partner is good and used once
        _, first = np.unique(partner, return_index=True)
        keep = np.zeros(worst.size, dtype=bool)
        keep[first] = True
        keep &= ~bad[partner]
        worst, partner = worst[keep], partner[keep]
        a, b = pairs[worst, 0].copy(), pairs[worst, 1].copy()
        c, e = pairs[partner, 0].copy(), pairs[partner, 1].copy()
        cross = rng.random(worst.size) < 0.5
        pairs[worst, 0], pairs[worst, 1] = a, np.where(cross, e, c)
        pairs[partner, 0], pairs[partner, 1] = b, np.where(cross, c, e)
    bad = _bad_pairs(pairs, n)
    return pairs[~bad]


def graph_seed(seed: int, edge_index: Tensor, num_nodes: int) -> list[int]:
    """The entropy a graph's expander is drawn with: ``[seed, num_nodes, crc32(edge_index)]``
    (a NumPy ``SeedSequence`` entropy; module docstring)."""
    ei = np.ascontiguousarray(edge_index.detach().cpu().numpy().astype(np.int64))
    return [int(seed), int(num_nodes), zlib.crc32(ei.tobytes())]


def random_expander(num_nodes: int, degree: int = 3, seed: int = 0,
                    edge_index: Tensor | None = None) -> Tensor:
    """A random ``degree``-regular expander on ``num_nodes`` nodes, both directions of each edge.

    Shirzad et al. 2023, §3.2 (module docstring for the construction and where it differs).

    Args:
        num_nodes: ``n``.
        degree: ``d`` (Exphormer's expander degree; the config's ``encodings.expander.degree``).
        seed: with ``num_nodes`` and ``edge_index``, fixes the draw.
        edge_index: ``[2, num_edges]`` of the graph, mixed into the seed so that graphs of the
            same size get different expanders (``None``: only ``seed`` and ``num_nodes``).

    Returns:
        ``expander_index [2, E_exp]`` int64, symmetric (``(i, j)`` and ``(j, i)``), no
        self-loops, no repeated edge, sorted by source then target; ``E_exp = n·d`` for most
        graphs (module docstring for the exceptions).

    Raises:
        ValueError: for a negative ``num_nodes``, ``degree < 1``, a negative ``seed`` or an
            ``edge_index`` not ``[2, num_edges]``.

    Example:
        >>> from graph_transformers.encodings.expander import random_expander
        >>> ei = random_expander(10, degree=3, seed=0)
        >>> ei.shape
        torch.Size([2, 30])
        >>> bool((ei[0] != ei[1]).all())
        True
    """
    _check(num_nodes, degree, seed)
    if edge_index is None:
        entropy = [int(seed), int(num_nodes)]
    else:
        if edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ValueError(f"edge_index must have shape [2, num_edges], got "
                             f"{tuple(edge_index.shape)}")
        entropy = graph_seed(seed, edge_index, num_nodes)
    rng = np.random.default_rng(np.random.SeedSequence(entropy))
    pairs = random_regular_pairs(num_nodes, degree, rng)
    both = np.concatenate([pairs, pairs[:, ::-1]], 0)
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    return torch.from_numpy(np.ascontiguousarray(both.T)).long()


class AddExpanderGraph(BaseTransform):
    """PyG transform storing :func:`random_expander` of a graph as ``data.expander_index``
    (``[2, E_exp]``), meant as a ``pre_transform``: computed once, cached with the dataset in a
    directory named by the ``repr`` ``AddExpanderGraph(degree=3, seed=0)``.

    The attribute name contains ``index``, so PyG's ``Batch`` offsets it by each graph's node
    count and concatenates it along the last dimension, as ``edge_index``.

    Args:
        degree: ``d``.
        seed: see :func:`random_expander`.
        attr_name: the ``Data`` attribute (must contain ``"index"`` for batching).

    Raises:
        ValueError: for ``degree < 1``, a negative ``seed``, or an ``attr_name`` without
            ``"index"``.

    Example:
        >>> import torch
        >>> from torch_geometric.data import Data
        >>> from graph_transformers.encodings.expander import AddExpanderGraph
        >>> g = Data(x=torch.randn(8, 4), edge_index=torch.tensor([[0, 1], [1, 0]]))
        >>> AddExpanderGraph(degree=3, seed=0)(g).expander_index.shape
        torch.Size([2, 24])
    """

    def __init__(self, degree: int = 3, seed: int = 0, attr_name: str = "expander_index") -> None:
        _check(0, degree, seed)
        if "index" not in attr_name:
            raise ValueError(f"attr_name must contain 'index' (PyG offsets such attributes when "
                             f"batching), got {attr_name!r}")
        self.degree, self.seed, self.attr_name = degree, seed, attr_name

    def forward(self, data: Data) -> Data:
        data[self.attr_name] = random_expander(int(data.num_nodes), self.degree, self.seed,
                                               data.edge_index)
        return data

    def __repr__(self) -> str:
        extra = "" if self.attr_name == "expander_index" else f", attr_name={self.attr_name!r}"
        return f"{type(self).__name__}(degree={self.degree}, seed={self.seed}{extra})"


__all__ = ["AddExpanderGraph", "MAX_REPAIR_ROUNDS", "graph_seed", "random_expander",
           "random_regular_pairs"]
