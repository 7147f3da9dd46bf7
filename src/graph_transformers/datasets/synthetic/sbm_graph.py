"""Stochastic-block-model graphs, the primitive PATTERN and CLUSTER
(:mod:`graph_transformers.datasets.synthetic.sbm`) are drawn from: :func:`sbm_graph` and the
vectorized pair draws it is made of.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import torch
from torch import Tensor

__all__ = ["block_pairs", "check_prob", "sbm_graph", "sbm_prob", "triu_pairs", "undirected_edges"]


@lru_cache(maxsize=256)
def triu_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the strict upper triangle of an ``n x n`` matrix (cached)."""
    iu, ju = np.triu_indices(n, k=1)
    iu.setflags(write=False)
    ju.setflags(write=False)
    return iu, ju


def block_pairs(
    rng: np.random.Generator, block: np.ndarray, prob: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Independent Bernoulli edges over all pairs ``i < j``: pair ``(i, j)`` is an edge with
    probability ``prob[block[i], block[j]]`` (``prob`` symmetric). One uniform draw per pair, all
    at once. Returns the edges' ``(i, j)`` with ``i < j``."""
    iu, ju = triu_pairs(block.shape[0])
    keep = rng.random(iu.shape[0]) < prob[block[iu], block[ju]]
    return iu[keep], ju[keep]


def sbm_prob(num_blocks: int, p: float, q: float) -> np.ndarray:
    """``num_blocks x num_blocks`` matrix with ``p`` on the diagonal and ``q`` elsewhere."""
    prob = np.full((num_blocks, num_blocks), float(q))
    np.fill_diagonal(prob, float(p))
    return prob


def undirected_edges(src: np.ndarray, dst: np.ndarray, n: int,
                     perm: np.ndarray | None = None) -> Tensor:
    """Both directions of the edges ``src[k] - dst[k]`` (``src != dst``, no duplicate pairs),
    nodes relabelled ``i -> perm[i]`` when ``perm`` is given, sorted by ``(row, col)``."""
    if perm is not None:
        src, dst = perm[src], perm[dst]
    key = np.sort(np.concatenate([src * n + dst, dst * n + src]))
    return torch.from_numpy(np.stack([key // n, key % n])).long()


def check_prob(name: str, value: float) -> float:
    """``value`` as a float.

    Raises:
        ValueError: ``value`` is not a probability in ``[0, 1]`` (the message names ``name``).
    """
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return value


def sbm_graph(
    rng: np.random.Generator, block_sizes: Sequence[int], p: float, q: float
) -> tuple[Tensor, Tensor]:
    """A stochastic-block-model graph, nodes ordered by block (not shuffled).

    Block ``r`` holds the ``block_sizes[r]`` consecutive nodes starting at
    ``sum(block_sizes[:r])``. Each pair ``i < j`` is an edge independently with probability ``p``
    when both nodes are in the same block and ``q`` otherwise; the strict upper triangle of the
    Bernoulli adjacency matrix is drawn in one vectorized call (one ``rng.random`` value per
    pair, in ``np.triu_indices`` order) and mirrored.

    Args:
        rng (numpy.random.Generator): source of randomness.
        block_sizes (sequence of int): non-negative block sizes.
        p (float): intra-block edge probability.
        q (float): inter-block edge probability.

    Returns:
        ``(edge_index, block)``: LongTensor ``[2, E]`` with both directions of every edge, sorted
        by ``(row, col)``, without self-loops or duplicates; LongTensor ``[n]`` with the block of
        each node.

    Raises:
        ValueError: for a negative block size or a probability outside ``[0, 1]``.
    """
    sizes = np.asarray(block_sizes, dtype=np.int64).reshape(-1)
    if (sizes < 0).any():
        raise ValueError(f"block sizes must be non-negative, got {list(block_sizes)}")
    p, q = check_prob("p", p), check_prob("q", q)
    block = np.repeat(np.arange(sizes.shape[0]), sizes)
    src, dst = block_pairs(rng, block, sbm_prob(sizes.shape[0], p, q))
    return undirected_edges(src, dst, block.shape[0]), torch.from_numpy(block).long()
