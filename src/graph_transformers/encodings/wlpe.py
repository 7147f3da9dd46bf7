"""Weisfeiler-Lehman absolute role ids (WL-PE) of Graph-BERT.

Zhang et al., "Graph-Bert: Only Attention is Needed for Learning Graph Representations" (2020),
§3.1; used by Dwivedi & Bresson (2020) as the Table 3 alternative to LapPE. Each node gets the
colour it ends with after ``iterations`` rounds of 1-WL colour refinement, started from a uniform
colour; colours are numbered ``0..c-1`` within each graph in the order of their refinement hash, so
two nodes share an id exactly when 1-WL cannot tell them apart. The model embeds the ids with an
``nn.Embedding`` (the GT paper's parameter counts in Table 3 match one of 37 rows for ZINC).
"""
from __future__ import annotations

import hashlib

import numpy as np
import torch
from torch import Tensor

from .transform import NodeEncodingTransform


def wl_role_ids(edge_index: Tensor, num_nodes: int, iterations: int = 2) -> Tensor:
    """1-WL colour classes of the nodes of one graph.

    Args:
        edge_index: ``[2, num_edges]`` (treated as undirected).
        num_nodes: ``n``.
        iterations: rounds of refinement; refinement also stops early at a fixed point.

    Returns:
        ``[n]`` long tensor of role ids in ``[0, number of colours)``.
    """
    if iterations < 0:
        raise ValueError(f"iterations must be >= 0, got {iterations}")
    ei = edge_index.cpu().numpy()
    neighbours: list[list[int]] = [[] for _ in range(num_nodes)]
    for u, v in zip(ei[0].tolist(), ei[1].tolist()):
        if u != v:
            neighbours[u].append(v)
            neighbours[v].append(u)
    neighbours = [sorted(set(n)) for n in neighbours]
    colours = ["0"] * num_nodes
    for _ in range(iterations):
        new = [
            hashlib.sha1((colours[i] + "|" + ",".join(sorted(colours[j] for j in neighbours[i])))
                         .encode()).hexdigest()
            for i in range(num_nodes)
        ]
        if len(set(new)) == len(set(colours)):
            colours = new
            break
        colours = new
    palette = {c: i for i, c in enumerate(sorted(set(colours)))}
    return torch.tensor(np.array([palette[c] for c in colours], dtype=np.int64))


class AddWLPE(NodeEncodingTransform):
    """PyG transform storing :func:`wl_role_ids` as ``data.wl_pe`` (``[num_nodes]`` long), meant
    as a ``pre_transform`` (:class:`~.transform.NodeEncodingTransform`; a negative
    ``iterations`` is refused when the transform runs)."""

    option, encode = "iterations", staticmethod(wl_role_ids)

    def __init__(self, iterations: int = 2, attr_name: str = "wl_pe") -> None:
        super().__init__(iterations, attr_name)
