"""Output heads: graph readout and the benchmark's MLP."""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.utils import to_dense_adj, to_dense_batch

from ..nn.reset import reset_children

READOUTS = {"mean": global_mean_pool, "sum": global_add_pool, "max": global_max_pool}
#: what a model can predict: one output per graph, per node or per edge
LEVELS = ("graph", "node", "edge")


def check_level(level: str, allowed: tuple[str, ...] = LEVELS) -> str:
    """Returns ``level`` if the model predicts at it (one of ``allowed``).

    Raises:
        ValueError: for another level, naming the allowed ones.
    """
    if level not in allowed:
        names = [repr(a) for a in allowed]
        choices = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        raise ValueError(f"level must be {choices}, got {level!r}")
    return level


class MLPReadout(nn.Module):
    """MLP whose width halves at each hidden layer (``d → d/2 → … → out``) with an activation
    between layers: the task heads of Dwivedi et al., "Benchmarking GNNs" and GT (ReLU, widths
    from ``in_dim``), and of the official EGT code (``mlp_out``: ELU, widths
    ``round(d_h/2), round(d_h/4)`` from the node width ``d_h`` whatever the input width).

    Args:
        in_dim: input width.
        out_dim: output width.
        num_layers: hidden layers.
        activation: ``"relu"`` or ``"elu"``.
        width: the width the hidden layers halve from (layer ``k`` has ``round(width / 2^(k+1))``
            units); ``None``: from ``in_dim`` by integer halving (``in_dim // 2``, …).

    Shapes: ``[*, in_dim] → [*, out_dim]``.

    Raises:
        ValueError: for an unknown activation, or a hidden layer of width 0.
    """

    ACTIVATIONS = {"relu": nn.ReLU, "elu": nn.ELU}

    def __init__(self, in_dim: int, out_dim: int, num_layers: int = 2,
                 activation: str = "relu", width: int | None = None) -> None:
        super().__init__()
        if activation not in self.ACTIVATIONS:
            raise ValueError(f"unknown head activation {activation!r}; expected one of "
                             f"{sorted(self.ACTIVATIONS)}")
        if width is None:
            widths, dim = [], in_dim
            for _ in range(num_layers):
                dim //= 2
                widths.append(dim)
        else:
            widths = [round(width / 2 ** (k + 1)) for k in range(num_layers)]
        if any(w < 1 for w in widths):
            raise ValueError(f"head of {num_layers} hidden layers halving from "
                             f"{width or in_dim} has a layer of width 0: use fewer mlp_layers")
        layers: list[nn.Module] = []
        dim = in_dim
        for w in widths:
            layers += [nn.Linear(dim, w), self.ACTIVATIONS[activation]()]
            dim = w
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


def sparse_attention_maps(model: nn.Module, data: Any) -> tuple[list[Tensor], Tensor]:
    """Per-layer dense attention maps of a model whose ``encode(data,
    return_attention_weights=True)`` returns ``(h, [(edge_index, weights [num_pairs, num_heads]),
    ...])`` (GT, GRIT), computed in eval mode (the model's mode is restored).

    The weights of each layer are averaged over heads and scattered into ``[batch, N, N]``
    (``to_dense_adj`` with rows = target/query ``i``, columns = source/key ``j``; duplicate pairs
    add up); pairs that are not attended are 0.

    Returns:
        ``(maps, mask)``: ``maps[l]`` is ``[batch, N, N]`` (row ``i`` = query ``i``'s weights over
        keys ``j``; padding rows and columns 0), ``mask`` is ``[batch, N]`` bool (real nodes).
    """
    was_training = model.training
    model.eval()
    try:
        _, attentions = model.encode(data, return_attention_weights=True)
    finally:
        model.train(was_training)
    batch = batch_vector(data, data.x)
    _, mask = to_dense_batch(batch.new_zeros(batch.size(0), 1), batch)
    maps = [to_dense_adj(torch.stack([ei[1], ei[0]]), batch, w.float().mean(-1),
                         max_num_nodes=mask.size(1)) for ei, w in attentions]
    return maps, mask


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
