"""Small utilities shared by the models: input checks and tensor helpers."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from ..core.checks import check_batch
from ..encodings.registry import float_encodings


def full_graph_edge_index(batch: Tensor, self_loops: bool = False,
                          host_sizes: Tensor | None = None, *, num_graphs: int | None = None,
                          num_pairs: int | None = None) -> Tensor:
    """All ordered node pairs inside each graph of a batch, built without Python loops.

    Args:
        batch: ``[num_nodes]`` graph id of each node, sorted (as in a PyG ``Batch``).
        self_loops: include the pairs ``(i, i)``.
        host_sizes: nodes per graph on the CPU
            (:func:`~graph_transformers.core.dense.host_num_nodes`); the number of pairs is then
            known without a device sync.
        num_graphs: graphs in the batch, with ``num_pairs`` instead of ``host_sizes`` (host
            ints known otherwise, e.g. from the shape of a cached pair encoding: no value is
            read, as ``torch.compile(fullgraph=True)`` needs).
        num_pairs: the number of pairs the result has (see ``num_graphs``).

    Returns:
        ``[2, sum_g n_g^2]`` (or ``sum_g n_g (n_g - 1)`` without self-loops) edge index.
    """
    num_nodes = batch.numel()
    if num_nodes == 0:
        return batch.new_zeros((2, 0))
    loop = 0 if self_loops else 1  # pairs per node: n (with self-loops) or n - 1
    if num_graphs is not None and num_pairs is not None:
        counts = torch.zeros(num_graphs, dtype=torch.long, device=batch.device)
        counts.index_add_(0, batch, torch.ones_like(batch))
        total = num_pairs
    elif host_sizes is not None:
        counts = torch.zeros(host_sizes.numel(), dtype=torch.long, device=batch.device)
        counts.index_add_(0, batch, torch.ones_like(batch))  # no bincount: it syncs on CUDA
        total = int((host_sizes * (host_sizes - loop)).sum())
    else:
        counts = torch.bincount(batch)
        total = None
    ptr = torch.cumsum(counts, 0) - counts  # first node of each graph
    per_node = counts[batch] - loop  # pairs of each node
    rows = torch.repeat_interleave(torch.arange(num_nodes, device=batch.device), per_node,
                                   output_size=total)
    starts = torch.cumsum(per_node, 0) - per_node
    offset = torch.arange(rows.numel(), device=batch.device) - torch.repeat_interleave(
        starts, per_node, output_size=total)
    if not self_loops:  # skip the row's own position: no boolean filtering (a device sync)
        pos = rows - ptr[batch][rows]
        offset = offset + (offset >= pos).long()
    cols = ptr[batch][rows] + offset
    edge_index = torch.stack([cols, rows])
    return edge_index


def check_inputs(data: Data, need_edge_attr: bool = False) -> None:
    """The input checks a model runs before its forward:
    :func:`~graph_transformers.core.checks.check_batch` with the float node encodings of the
    encoding registry (:func:`~graph_transformers.encodings.registry.float_encodings`, including
    any added with ``register_encoding``) value-checked too.

    Args:
        data: the PyG ``Batch`` (or ``Data``) given to the model.
        need_edge_attr: the model reads ``edge_attr``.

    Raises:
        ValueError: naming the offending field (see ``check_batch``).
    """
    check_batch(data, need_edge_attr=need_edge_attr, encodings=float_encodings())
