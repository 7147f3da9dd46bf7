"""Neighbour sampling for node tasks on one large graph (GraphSAGE-style mini-batches: Hamilton,
Ying & Leskovec, "Inductive Representation Learning on Large Graphs", NeurIPS 2017, Alg. 2).

:func:`neighbor_loader` returns PyG's ``NeighborLoader`` when its sampling backend (``pyg-lib`` or
``torch-sparse``) is installed. Without either (the pinned CPU environment has neither), it
returns PyG's ``NodeLoader`` (the class ``NeighborLoader`` is built on) driven by
:class:`UniformNeighborSampler`, a pure-PyTorch sampler with the same semantics: for each hop
``k``, every node first reached at the previous hop (the seeds at hop 0) keeps up to
``num_neighbors[k]`` of its incoming edges, drawn uniformly without replacement (``-1``: all of
them). The batch is a ``Data`` whose first ``batch_size`` nodes are the seeds, with ``n_id``,
``e_id``, ``input_id`` and ``batch_size`` as ``NeighborLoader`` sets them.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch_geometric.typing as pyg_typing
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader, NodeLoader
from torch_geometric.sampler import BaseSampler, NodeSamplerInput, SamplerOutput


def has_pyg_sampler() -> bool:
    """Whether PyG's own neighbour sampler can run (``pyg-lib`` or ``torch-sparse`` present)."""
    return bool(pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE)


class UniformNeighborSampler(BaseSampler):
    """Uniform neighbour sampling over incoming edges (module docstring), vectorized per hop.

    Args:
        edge_index: ``[2, num_edges]`` of the whole graph (messages flow ``[0] → [1]``).
        num_nodes: ``N``.
        num_neighbors: neighbours kept per node at each hop (``-1`` = all).
        generator: optional RNG for reproducible samples.

    ``sample_from_nodes`` returns a :class:`~torch_geometric.sampler.SamplerOutput` whose ``node``
    lists the seeds first, then the nodes first reached at each hop; ``row``/``col`` are local
    source/target indices and ``edge`` the original edge ids (so edge features are sliced).

    Raises:
        ValueError: for a malformed ``edge_index`` or a count below ``-1``.
    """

    def __init__(self, edge_index: Tensor, num_nodes: int, num_neighbors: Sequence[int],
                 generator: torch.Generator | None = None) -> None:
        if edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ValueError(f"edge_index must be [2, num_edges], got {tuple(edge_index.shape)}")
        if any(k < -1 for k in num_neighbors):
            raise ValueError(f"num_neighbors must be >= -1, got {list(num_neighbors)}")
        self.num_nodes = num_nodes
        self.num_neighbors = list(num_neighbors)
        self.generator = generator
        dst = edge_index[1]
        perm = torch.argsort(dst, stable=True)  # edges grouped by target (CSC)
        self.src_sorted = edge_index[0][perm]
        self.eid_sorted = perm
        self.ptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=dst.device)
        self.ptr[1:] = torch.cumsum(torch.bincount(dst, minlength=num_nodes), 0)

    def _hop(self, frontier: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """Sampled incoming edges of ``frontier``: positions into the CSC arrays and the index of
        each edge's target in ``frontier``."""
        start = self.ptr[frontier]
        deg = self.ptr[frontier + 1] - start
        dev = frontier.device
        seg = torch.repeat_interleave(torch.arange(frontier.numel(), device=dev), deg)
        first = torch.cumsum(deg, 0) - deg
        offset = torch.arange(seg.numel(), device=dev) - first[seg]
        pos = start[seg] + offset
        if k >= 0 and seg.numel():
            # random order inside each segment; segments stay contiguous and in order
            order = torch.argsort(seg.double() + torch.rand(seg.numel(), generator=self.generator,
                                                            dtype=torch.float64, device=dev))
            pos = pos[order]
            keep = offset < k  # the first k of each shuffled segment
            pos, seg = pos[keep], seg[keep]
        return pos, seg

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs) -> SamplerOutput:
        seeds = index.node
        local = torch.full((self.num_nodes,), -1, dtype=torch.long, device=seeds.device)
        local[seeds] = torch.arange(seeds.numel(), device=seeds.device)
        nodes, rows, cols, eids = [seeds], [], [], []
        num_sampled_nodes, num_sampled_edges = [seeds.numel()], []
        count, frontier = seeds.numel(), seeds
        for k in self.num_neighbors:
            pos, seg = self._hop(frontier, k)
            src = self.src_sorted[pos]
            new = torch.unique(src[local[src] < 0])
            local[new] = torch.arange(count, count + new.numel(), device=seeds.device)
            count += new.numel()
            rows.append(local[src])
            cols.append(local[frontier[seg]])
            eids.append(self.eid_sorted[pos])
            nodes.append(new)
            num_sampled_nodes.append(new.numel())
            num_sampled_edges.append(pos.numel())
            frontier = new
        empty = seeds.new_zeros(0)
        return SamplerOutput(node=torch.cat(nodes), row=torch.cat(rows) if rows else empty,
                             col=torch.cat(cols) if cols else empty,
                             edge=torch.cat(eids) if eids else empty, batch=None,
                             num_sampled_nodes=num_sampled_nodes,
                             num_sampled_edges=num_sampled_edges,
                             metadata=(index.input_id, index.time))

    def sample_from_edges(self, index, neg_sampling=None):
        raise NotImplementedError("UniformNeighborSampler samples around seed nodes only; use "
                                  "PyG's LinkNeighborLoader (with pyg-lib) for link tasks")


def neighbor_loader(data: Data, num_neighbors: Sequence[int], batch_size: int,
                    input_nodes: Tensor | None = None, shuffle: bool = False,
                    transform: Callable | None = None, **kwargs) -> NodeLoader:
    """A neighbour-sampling loader over the seed nodes ``input_nodes`` (bool mask or ids) of one
    graph: PyG's ``NeighborLoader`` where its backend exists, else ``NodeLoader`` with
    :class:`UniformNeighborSampler` (module docstring). ``kwargs`` go to the DataLoader."""
    if has_pyg_sampler():
        return NeighborLoader(data, num_neighbors=list(num_neighbors), batch_size=batch_size,
                              input_nodes=input_nodes, shuffle=shuffle, transform=transform,
                              **kwargs)
    sampler = UniformNeighborSampler(data.edge_index, data.num_nodes, num_neighbors)
    return NodeLoader(data, node_sampler=sampler, input_nodes=input_nodes, batch_size=batch_size,
                      shuffle=shuffle, transform=transform, **kwargs)
