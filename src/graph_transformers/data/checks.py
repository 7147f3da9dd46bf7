"""Input validation for batches entering a model: clear errors instead of crashes deep inside."""
from __future__ import annotations

import torch
from torch_geometric.data import Data


def check_batch(data: Data, need_edge_attr: bool = False) -> None:
    """Validates a PyG ``Data``/``Batch`` before a forward pass.

    Checks that ``x`` exists and is finite, every graph has at least one node (an empty graph has
    no defined output: its readout would divide by zero and dense models would attend over
    nothing), ``edge_index`` is ``[2, num_edges]`` integer with ids in ``[0, num_nodes)``,
    ``edge_attr`` (when needed) has one row per edge and is finite, and float positional /
    structural encodings (``lap_pe``, ``svd_pe``, ``rwse``, …) are finite.

    Raises:
        ValueError: naming the offending field (and graph, for an empty one).
    """
    x = getattr(data, "x", None)
    if x is None:
        raise ValueError("the batch has no node features x")
    num_nodes = x.size(0)
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError("node features x contain NaN or inf")
    if num_nodes == 0:
        raise ValueError("the input has no nodes (an empty graph has no defined output; drop "
                         "empty graphs from the dataset)")
    batch = getattr(data, "batch", None)
    num_graphs = getattr(data, "num_graphs", None)
    if batch is not None and num_graphs:
        counts = torch.bincount(batch, minlength=int(num_graphs))
        if bool((counts == 0).any()):
            empty = (counts == 0).nonzero().view(-1).tolist()
            raise ValueError(f"graph(s) {empty[:5]} of the batch have no nodes (an empty graph "
                             "has no defined output; drop empty graphs from the dataset)")
    ei = data.edge_index
    if ei is None or ei.dim() != 2 or ei.size(0) != 2:
        shape = None if ei is None else tuple(ei.shape)
        raise ValueError(f"edge_index must have shape [2, num_edges], got {shape}")
    if ei.is_floating_point():
        raise ValueError(f"edge_index must be an integer tensor, got {ei.dtype}")
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= num_nodes):
        raise ValueError(f"edge_index has node ids in [{int(ei.min())}, {int(ei.max())}] but the "
                         f"batch has {num_nodes} nodes")
    if need_edge_attr:
        ea = getattr(data, "edge_attr", None)
        if ea is None:
            raise ValueError("the model uses edge features but the batch has no edge_attr")
        if ea.size(0) != ei.size(1):
            raise ValueError(f"edge_attr has {ea.size(0)} rows but edge_index has {ei.size(1)} "
                             "edges")
        if ea.is_floating_point() and not bool(torch.isfinite(ea).all()):
            raise ValueError("edge features edge_attr contain NaN or inf")
    for name in ("lap_pe", "svd_pe", "rwse", "pos"):
        pe = getattr(data, name, None)
        if isinstance(pe, torch.Tensor) and pe.is_floating_point() and \
                not bool(torch.isfinite(pe).all()):
            raise ValueError(f"positional encoding {name} contains NaN or inf")
