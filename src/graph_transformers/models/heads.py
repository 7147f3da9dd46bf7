"""Output heads: graph readout and the benchmark's MLP."""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool

from ..nn.reset import reset_children

READOUTS = {"mean": global_mean_pool, "sum": global_add_pool, "max": global_max_pool}


class MLPReadout(nn.Module):
    """MLP whose width halves at each hidden layer (``d → d/2 → … → out``), ReLU between layers,
    as the task heads of Dwivedi et al., "Benchmarking GNNs" and GT.

    Shapes: ``[*, in_dim] → [*, out_dim]``.
    """

    def __init__(self, in_dim: int, out_dim: int, num_layers: int = 2) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        dim = in_dim
        for _ in range(num_layers):
            layers += [nn.Linear(dim, dim // 2), nn.ReLU()]
            dim //= 2
        layers.append(nn.Linear(dim, out_dim))
        self.mlp = nn.Sequential(*layers)

    def reset_parameters(self) -> None:
        reset_children(self)

    def forward(self, x: Tensor) -> Tensor:
        return self.mlp(x)


def graph_readout(x: Tensor, batch: Tensor, kind: str, num_graphs: int | None = None) -> Tensor:
    """Pools node features ``[num_nodes, d]`` into graph features ``[num_graphs, d]``.

    Raises:
        ValueError: for a readout other than mean, sum or max.
    """
    if kind not in READOUTS:
        raise ValueError(f"unknown readout {kind!r}; expected one of {sorted(READOUTS)}")
    return READOUTS[kind](x, batch, size=num_graphs)


def batch_vector(data: Any, h: Tensor) -> Tensor:
    """``data.batch``, or all zeros (one graph) for a ``Data`` without one (e.g. a
    ``NeighborLoader`` sample)."""
    batch = getattr(data, "batch", None)
    return batch if batch is not None else h.new_zeros(h.size(0), dtype=torch.long)


def level_head(head: nn.Module, h: Tensor, data: Any, level: str, readout: str) -> Tensor:
    """A sparse model's prediction from its node embeddings ``h [num_nodes, d]`` by ``level``:
    ``"node"``: ``head(h)``; ``"edge"``: ``head([h_i ∥ h_j])`` for each edge ``j -> i`` of
    ``data.edge_index`` (the benchmark's TSP edge classifier); ``"graph"``: ``head`` of the
    ``readout`` (:func:`graph_readout`) of each graph.

    Returns:
        ``[num_nodes | num_edges | num_graphs, out_dim]``.
    """
    if level == "node":
        return head(h)
    if level == "edge":
        src, dst = data.edge_index
        return head(torch.cat([h[dst], h[src]], dim=-1))
    return head(graph_readout(h, batch_vector(data, h), readout,
                              getattr(data, "num_graphs", 1)))
