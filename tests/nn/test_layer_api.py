"""The layers' public API (issue 14): PyG-native ``forward`` of EGT, GRPE and Graphormer layers on a
plain ``Batch`` of directed graphs, against the library's models for the same weights; the dense
entry points (``forward_dense``) against PyG's ``to_dense_adj`` (dst-major = its transpose, and the
un-transposed input gives other outputs); padding independence and permutation equivariance of the
PyG path; the error for dense tensors given to ``forward``."""
from __future__ import annotations

import pytest
import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.utils import degree, to_dense_adj, to_dense_batch

from graph_transformers.encodings import AddShortestPaths
from graph_transformers.models.egt import EGT
from graph_transformers.models.graphormer import Graphormer
from graph_transformers.models.grpe import GRPE
from graph_transformers.nn import (DenseBatch, EGTLayer, GraphormerLayer, GRPEAttention,
                                   GRPEEncodings, GRPELayer)

D, DE, H, L, TYPES = 16, 8, 4, 3, 3  # hidden, EGT edge channels, heads, max distance, edge types
FEATS = 5


def _directed(n: int, gen: torch.Generator) -> Data:
    """A directed path 0 → 1 → … → n-1 plus random forward edges i → j (i < j): no reciprocal
    pair and no duplicate, so every pair's orientation matters."""
    src = list(range(n - 1))
    dst = list(range(1, n))
    extra = torch.triu(torch.rand(n, n, generator=gen) < 0.3, 2).nonzero()
    src += extra[:, 0].tolist()
    dst += extra[:, 1].tolist()
    ei = torch.tensor([src, dst], dtype=torch.long)
    return Data(x=torch.randn(n, FEATS, generator=gen, dtype=torch.double), edge_index=ei,
                edge_attr=torch.randint(0, TYPES, (ei.size(1),), generator=gen),
                num_nodes=n)


def _batch(sizes=(4, 6, 3), seed=0) -> Batch:
    gen = torch.Generator().manual_seed(seed)
    spd = AddShortestPaths(max_distance=L)
    return Batch.from_data_list([spd(_directed(n, gen)) for n in sizes])


def _randomize(module: nn.Module, seed: int) -> None:
    torch.manual_seed(seed)
    for p in module.parameters():
        nn.init.normal_(p, std=0.5)


# ----------------------------------------------------------------------------- (1) vs the models
class TinyEGT(nn.Module):
    """What a PyG user writes from EGTLayer: an embedding, the layers on (x, edge_index, edge_attr,
    batch), a LayerNorm and a linear head. EGT's adjacency-with-self-loops input (§3.3) is the
    self-loops added to edge_index, each edge's channels ``struct(1) + edge_emb(attr)`` (self-loops:
    ``struct(1) + no_edge``) and the other pairs ``struct(0) + no_edge``."""

    def __init__(self, num_layers: int) -> None:
        super().__init__()
        self.node_emb = nn.Linear(FEATS, D)
        self.struct = nn.Embedding(2, DE)
        self.edge_emb = nn.Embedding(TYPES, DE)
        self.no_edge = nn.Parameter(torch.zeros(DE))
        self.layers = nn.ModuleList(EGTLayer(D, H, edge_dim=DE, edge_output=i < num_layers - 1)
                                    for i in range(num_layers))
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, 3)

    def forward(self, data: Batch) -> torch.Tensor:
        n = data.num_nodes
        loops = torch.arange(n).repeat(2, 1)
        edge_index = torch.cat([data.edge_index, loops], 1)
        on = self.struct.weight[1]
        edge_attr = torch.cat([on + self.edge_emb(data.edge_attr),
                               (on + self.no_edge).expand(n, -1)])
        out = self.layers[0](self.node_emb(data.x), edge_index, edge_attr, data.batch,
                             non_edge=self.struct.weight[0] + self.no_edge)
        for layer in self.layers[1:]:
            out = layer(out.x, edge_index, batch=data.batch, pair_attr=out.pair_attr)
        return self.head(self.norm(out.x))


def test_egt_layer_on_a_batch_matches_the_egt_model():
    batch = _batch()
    model = EGT(D, DE, num_layers=2, num_heads=H, out_dim=3, level="node", num_node_features=FEATS,
                num_edge_types=TYPES, pe=None, mlp_layers=0, memory_budget_gb=None).double()
    _randomize(model, 1)
    model.eval()
    tiny = TinyEGT(2).double().eval()
    tiny.node_emb.load_state_dict(model.node_encoder.linear.state_dict())
    tiny.struct.load_state_dict(model.struct_encoder.state_dict())
    tiny.edge_emb.load_state_dict(model.edge_encoder.embeddings[0].state_dict())
    tiny.no_edge.data.copy_(model.no_edge)
    tiny.layers.load_state_dict(model.layers.state_dict())
    tiny.norm.load_state_dict(model.final_norm_h.state_dict())
    tiny.head.load_state_dict(model.head.mlp[-1].state_dict())
    with torch.no_grad():
        torch.testing.assert_close(tiny(batch), model(batch).out, rtol=1e-10, atol=1e-10)


def _mask_first_key(mask: torch.Tensor) -> torch.Tensor:
    keys = mask.clone()
    keys[:, 0] = False
    return keys


def _grpe_model_path(model: GRPE, batch: Batch, drop_virtual: bool) -> torch.Tensor:
    """GRPE's own dense path (its relation builder and the layers' forward_dense); with
    ``drop_virtual`` the virtual node is masked out of every key set."""
    rel = model.relations(batch)
    x = rel.dense.to_dense(model.node_encoder(batch.x))
    x = torch.cat([model.virtual_node.view(1, 1, -1).expand(x.size(0), 1, -1), x], 1)
    mask = _mask_first_key(rel.mask) if drop_virtual else rel.mask
    for layer in model.layers:
        x = layer.forward_dense(x, rel.topology, rel.edge, model.encodings[0], mask).x
    return model.head(rel.dense.to_sparse(model.final_norm(x)[:, 1:]))


def test_grpe_layer_on_a_batch_matches_the_grpe_model_path():
    batch = _batch()
    model = GRPE(D, num_layers=2, num_heads=H, out_dim=3, level="node", num_node_features=FEATS,
                 num_edge_types=TYPES, max_distance=L, dropout=0.0, attn_dropout=0.0,
                 memory_budget_gb=None, size_groups=1).double()
    _randomize(model, 2)
    model.eval()
    with torch.no_grad():  # the reference is the model's path: unmasked, it is the model
        torch.testing.assert_close(_grpe_model_path(model, batch, False), model(batch))
        ref = _grpe_model_path(model, batch, True)
        # a PyG model from the layer: no virtual node, the batch's cached spd, bond types
        enc = model.encodings[0]
        x = model.node_encoder.linear(batch.x)
        for layer in model.layers:
            x = layer(x, batch.edge_index, batch.edge_attr, batch.batch, encodings=enc,
                      topology=batch.spd)
        out = model.head(model.final_norm(x))
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    assert (out - model(batch)).abs().max() > 1e-3  # the virtual node matters: not vacuous


def _graphormer_model_path(model: Graphormer, batch: Batch, drop_token: bool) -> torch.Tensor:
    rel = model.relations(batch)
    deg = degree(batch.edge_index[1], batch.num_nodes, dtype=torch.long)
    h = model.node_encoder(batch.x) + model.degree_encoder(deg.clamp(max=model.max_degree))
    x = rel.dense.to_dense(h)
    x = torch.cat([model.graph_token.view(1, 1, -1).expand(x.size(0), 1, -1), x], 1)
    mask = _mask_first_key(rel.mask) if drop_token else rel.mask
    bias = model.spatial_bias(rel.topology) + model.edge_bias(rel.edge)
    bias = bias.permute(0, 3, 1, 2).masked_fill(~mask[:, None, None, :], float("-inf"))
    for layer in model.layers:
        x = layer.forward_dense(x, bias).x
    return model.head(rel.dense.to_sparse(model.final_norm(x)[:, 1:]))


def test_graphormer_layer_on_a_batch_matches_the_graphormer_model_path():
    batch = _batch()
    model = Graphormer(D, num_layers=2, num_heads=H, out_dim=3, level="node",
                       num_node_features=FEATS, num_edge_types=TYPES, max_distance=L, dropout=0.0,
                       attn_dropout=0.0, memory_budget_gb=None, size_groups=1).double()
    _randomize(model, 3)  # the biases start at zero: make them matter
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(_graphormer_model_path(model, batch, False), model(batch))
        ref = _graphormer_model_path(model, batch, True)
        # a PyG model: degree encoding, spatial + pair-edge bias from AddShortestPaths' cache
        deg = degree(batch.edge_index[1], batch.num_nodes, dtype=torch.long)
        x = model.node_encoder(batch.x) + model.degree_encoder(deg)
        raw = batch.pair_edge[:, 0].long()  # edge type, -1 no edge, -2 self
        pair_edge = torch.where(raw >= 0, raw + 3, torch.where(raw == -2, 1, 0))
        pair_bias = model.spatial_bias(batch.spd.long()) + model.edge_bias(pair_edge)
        for layer in model.layers:
            x = layer(x, batch.edge_index, batch=batch.batch, pair_bias=pair_bias)
        out = model.head(model.final_norm(x))
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- (2) to_dense_adj
def _dense_inputs(batch: Batch, x: torch.Tensor):
    xd, mask = to_dense_batch(x, batch.batch)
    return xd, mask, xd.size(1)


def _adj(batch, N, edge_attr=None, transpose=True):
    a = to_dense_adj(batch.edge_index, batch.batch, edge_attr, max_num_nodes=N)
    return a.transpose(1, 2) if transpose else a


def test_egt_forward_dense_is_to_dense_adj_transposed():
    batch = _batch((4, 6, 3))  # the first graph is the 4-node directed path (+ edges)
    torch.manual_seed(4)
    layer = EGTLayer(D, H, edge_dim=DE).double().eval()
    x = torch.randn(batch.num_nodes, D, dtype=torch.double)
    ea = torch.randn(batch.num_edges, DE, dtype=torch.double)
    out = layer(x, batch.edge_index, ea, batch.batch)
    xd, mask, N = _dense_inputs(batch, x)
    dense = layer.forward_dense(xd, _adj(batch, N, ea), mask)
    torch.testing.assert_close(dense.h[mask], out.x)
    flat = torch.cat([dense.e[g, :n, :n].reshape(n * n, -1)
                      for g, n in enumerate(mask.sum(1).tolist())])
    torch.testing.assert_close(flat, out.pair_attr)
    # PyG's source-major layout, un-transposed: other outputs (no error: why the path exists)
    wrong = layer.forward_dense(xd, _adj(batch, N, ea, transpose=False), mask)
    assert (wrong.h[mask] - out.x).abs().max() > 1e-3


def test_graphormer_forward_dense_is_to_dense_adj_transposed():
    batch = _batch((4, 6, 3), seed=5)
    torch.manual_seed(5)
    layer = GraphormerLayer(D, H).double().eval()
    x = torch.randn(batch.num_nodes, D, dtype=torch.double)
    eb = 2 * torch.randn(batch.num_edges, H, dtype=torch.double)  # a per-head edge bias
    out = layer(x, batch.edge_index, edge_bias=eb, batch=batch.batch)
    xd, mask, N = _dense_inputs(batch, x)

    def run(transpose):
        bias = _adj(batch, N, eb, transpose).permute(0, 3, 1, 2)
        bias = bias.masked_fill(~mask[:, None, None, :], float("-inf"))
        return layer.forward_dense(xd, bias).x[mask]
    torch.testing.assert_close(run(True), out)
    assert (run(False) - out).abs().max() > 1e-3


def _floyd_ids(adj: torch.Tensor, mask: torch.Tensor, max_distance: int) -> torch.Tensor:
    """spd ids from a dst-major adjacency ``adj[b, i, j]`` (edge j → i): D[i, j] is the length of a
    shortest path j → … → i, computed independently of DenseBatch (Floyd–Warshall)."""
    B, N, _ = adj.shape
    dist = torch.where(adj > 0, 1.0, float("inf")).double()
    idx = torch.arange(N)
    dist[:, idx, idx] = 0.0
    for k in range(N):
        dist = torch.minimum(dist, dist[:, :, k:k + 1] + dist[:, k:k + 1, :])
    ids = torch.where(dist <= max_distance, dist, torch.full_like(dist, max_distance + 1))
    ids = torch.where(torch.isinf(dist), torch.full_like(dist, max_distance + 2), ids).long()
    return ids.masked_fill(~(mask[:, :, None] & mask[:, None, :]), 0)


@pytest.mark.parametrize("cls", [GRPELayer, GRPEAttention])
def test_grpe_forward_dense_is_to_dense_adj_transposed(cls):
    batch = _batch((4, 6, 3), seed=6)
    torch.manual_seed(6)
    layer = cls(D, H).double().eval()
    enc = GRPEEncodings(L + 3, 3 + TYPES, D).double()  # topology built by the layer: L = T - 3
    x = torch.randn(batch.num_nodes, D, dtype=torch.double)
    out = layer(x, batch.edge_index, batch.edge_attr, batch.batch, encodings=enc)
    # the built topology is AddShortestPaths' spd (an independent BFS in SciPy)
    torch.testing.assert_close(out, layer(x, batch.edge_index, batch.edge_attr, batch.batch,
                                          encodings=enc, topology=batch.spd))
    xd, mask, N = _dense_inputs(batch, x)

    def run(transpose):
        topo = _floyd_ids(_adj(batch, N, transpose=transpose), mask, L)
        edge = _adj(batch, N, batch.edge_attr + 3, transpose).long()  # 0 = EDGE_NONE
        idx = torch.arange(N)
        edge[:, idx, idx] = torch.where(mask, 1, edge[:, idx, idx])  # EDGE_SELF
        return layer.forward_dense(xd, topo, edge, enc, mask).x[mask]
    torch.testing.assert_close(run(True), out)
    assert (run(False) - out).abs().max() > 1e-3


# ----------------------------------------------------------------------------- (3) invariances
def _egt(seed):
    torch.manual_seed(seed)
    layer = EGTLayer(D, H, edge_dim=DE).double().eval()
    return lambda d: layer(d.x, d.edge_index, d.ea, d.batch).x


def _graphormer(seed):
    torch.manual_seed(seed)
    layer = GraphormerLayer(D, H).double().eval()
    return lambda d: layer(d.x, d.edge_index, batch=d.batch, edge_bias=d.eb)


def _grpe(seed):
    torch.manual_seed(seed)
    layer = GRPELayer(D, H).double().eval()
    enc = GRPEEncodings(L + 3, 3 + TYPES, D).double()
    return lambda d: layer(d.x, d.edge_index, d.edge_attr, d.batch, encodings=enc)


def _features(data: Data, gen) -> Data:
    data = data.clone()
    data.x = torch.randn(data.num_nodes, D, generator=gen, dtype=torch.double)
    data.ea = torch.randn(data.num_edges, DE, generator=gen, dtype=torch.double)
    data.eb = torch.randn(data.num_edges, H, generator=gen, dtype=torch.double)
    del data.spd, data.pair_edge
    return data


@pytest.mark.parametrize("make", [_egt, _graphormer, _grpe])
def test_pyg_path_is_padding_independent_and_permutation_equivariant(make):
    gen = torch.Generator().manual_seed(7)
    small, big = (_features(g, gen) for g in _batch((4, 7), seed=7).to_data_list())
    run = make(8)
    alone = run(Batch.from_data_list([small]))
    padded = run(Batch.from_data_list([small, big]))  # small padded to 7 nodes
    torch.testing.assert_close(padded[:small.num_nodes], alone)
    perm = torch.randperm(small.num_nodes, generator=gen)  # new node k = old node perm[k]
    inv = torch.argsort(perm)
    moved = small.clone()
    moved.x = small.x[perm]
    moved.edge_index = inv[small.edge_index]
    torch.testing.assert_close(run(Batch.from_data_list([moved])), alone[perm])


# ----------------------------------------------------------------------------- (4) misuse
def test_dense_tensors_given_to_forward_name_forward_dense():
    B, N = 2, 5
    h, mask = torch.randn(B, N, D), torch.ones(B, N, dtype=torch.bool)
    egt = EGTLayer(D, H, edge_dim=DE)
    with pytest.raises(ValueError, match=r"EGTLayer\.forward_dense"):
        egt(h, torch.randn(B, N, N, DE), mask)
    with pytest.raises(ValueError, match=r"EGTLayer\.forward_dense"):
        egt(h[0], torch.randn(N, N, DE))  # one graph's nodes, a dense pair tensor
    with pytest.raises(ValueError, match=r"GraphormerLayer\.forward_dense"):
        GraphormerLayer(D, H)(h, torch.zeros(B, H, N, N))
    enc = GRPEEncodings(6, 6, D)
    ids = torch.zeros(B, N, N, dtype=torch.long)
    for cls in (GRPELayer, GRPEAttention):
        with pytest.raises(ValueError, match=rf"{cls.__name__}\.forward_dense"):
            cls(D, H)(h, ids, ids, enc)
    with pytest.raises(ValueError, match="encodings"):
        GRPELayer(D, H)(h[0], torch.tensor([[0], [1]]))
    with pytest.raises(ValueError, match="not both"):
        egt(h[0], torch.tensor([[0], [1]]), torch.zeros(1, DE), pair_attr=torch.zeros(N * N, DE))
    with pytest.raises(ValueError, match=r"pair_attr.*Σ n²"):
        egt(h[0], torch.tensor([[0], [1]]), pair_attr=torch.zeros(7, DE))


def test_dense_batch_is_exported_with_the_orientation():
    batch = _batch((4, 3))
    dense = DenseBatch.from_batch(batch)
    vals = torch.arange(1, batch.num_edges + 1, dtype=torch.double)
    torch.testing.assert_close(dense.scatter_edges(vals),
                               _adj(batch, dense.max_num_nodes, vals))
    pairs = torch.randn(2, 4, 4, 3)
    real = dense.pair_mask[..., None]
    torch.testing.assert_close(dense.place_pairs(dense.flatten_pairs(pairs)) * real, pairs * real)
    same = DenseBatch.from_edge_index(batch.edge_index, batch.batch)
    assert torch.equal(same.mask, dense.mask) and torch.equal(same.pos, dense.pos)


def test_layers_without_edge_inputs_refuse_to_ignore_the_graph():
    """Issue 26, silent result 10: EGTLayer (and GraphormerLayer) given edge_index but no edge
    input gave every pair the same input, so the output did not depend on the edges. Now refused;
    with a learned non_edge vector, or EGT-Constrained, the output depends on the edges."""
    batch = _batch((5, 4), seed=3)
    torch.manual_seed(3)
    x = torch.randn(batch.num_nodes, D, dtype=torch.double)
    egt = EGTLayer(D, H, edge_dim=DE).double().eval()
    with pytest.raises(ValueError, match="would ignore the graph"):
        egt(x, batch.edge_index, batch=batch.batch)
    with pytest.raises(ValueError, match="ignores the graph"):
        GraphormerLayer(D, H).double()(x, batch.edge_index, batch=batch.batch)
    no_edges = batch.edge_index[:, :0]
    non_edge = torch.randn(DE, dtype=torch.double)
    for kwargs in (dict(non_edge=non_edge), dict(constrained=True)):
        with_graph = egt(x, batch.edge_index, batch=batch.batch, **kwargs).x
        without = egt(x, no_edges, batch=batch.batch, **kwargs).x
        assert (with_graph - without).abs().max() > 1e-3, kwargs
