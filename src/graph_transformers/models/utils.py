"""Small tensor utilities shared by the models."""
from __future__ import annotations

import torch
from torch import Tensor


def full_graph_edge_index(batch: Tensor, self_loops: bool = False) -> Tensor:
    """All ordered node pairs inside each graph of a batch, built without Python loops.

    Args:
        batch: ``[num_nodes]`` graph id of each node, sorted (as in a PyG ``Batch``).
        self_loops: include the pairs ``(i, i)``.

    Returns:
        ``[2, sum_g n_g^2]`` (or ``sum_g n_g (n_g - 1)`` without self-loops) edge index.
    """
    num_nodes = batch.numel()
    if num_nodes == 0:
        return batch.new_zeros((2, 0))
    counts = torch.bincount(batch)
    ptr = torch.cumsum(counts, 0) - counts  # first node of each graph
    per_node = counts[batch]  # size of each node's graph
    rows = torch.repeat_interleave(torch.arange(num_nodes, device=batch.device), per_node)
    starts = torch.cumsum(per_node, 0) - per_node
    offset = torch.arange(rows.numel(), device=batch.device) - torch.repeat_interleave(starts, per_node)
    cols = ptr[batch][rows] + offset
    edge_index = torch.stack([cols, rows])
    if not self_loops:
        edge_index = edge_index[:, cols != rows]
    return edge_index
