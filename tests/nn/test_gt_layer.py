"""GraphTransformerLayer against a naive per-node implementation of GT eqs. 4-18 (float64),
permutation equivariance, and batch independence."""
from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import Batch, Data

from graph_transformers.models import GraphTransformer
from graph_transformers.nn import GraphTransformerLayer
from conftest import randomize_norms


def _norm(module, x):
    """Norm in eval mode, written out."""
    if isinstance(module, torch.nn.BatchNorm1d):
        return (x - module.running_mean) / torch.sqrt(module.running_var + module.eps) \
            * module.weight + module.bias
    if isinstance(module, torch.nn.LayerNorm):
        mu = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        return (x - mu) / torch.sqrt(var + module.eps) * module.weight + module.bias
    return x


def _ffn(seq, x):
    lin1, lin2 = seq[0], seq[3]
    return lin2.weight @ torch.relu(lin1.weight @ x + lin1.bias) + lin2.bias


def naive_gt_layer(layer: GraphTransformerLayer, x, edge_index, edge_attr=None):
    """Loops over nodes, heads and neighbours exactly as the paper's equations read."""
    d, H = layer.hidden_dim, layer.num_heads
    dk = d // H
    Wq, Wk, Wv = layer.qkv.weight[:d], layer.qkv.weight[d:2 * d], layer.qkv.weight[2 * d:]
    n = x.size(0)
    src, dst = edge_index.tolist()
    h_hat = torch.zeros(n, d, dtype=x.dtype)
    e_hat = torch.zeros(len(src), d, dtype=x.dtype) if edge_attr is not None else None
    for i in range(n):
        incoming = [m for m in range(len(src)) if dst[m] == i]
        heads = []
        for k in range(H):
            rows = slice(k * dk, (k + 1) * dk)
            q = Wq[rows] @ x[i]
            scores = []
            for m in incoming:
                j = src[m]
                w_vec = (q * (Wk[rows] @ x[j])) / math.sqrt(dk)          # eq. 5 / 12
                if edge_attr is not None:
                    w_vec = w_vec * (layer.proj_e.weight[rows] @ edge_attr[m])  # eq. 12
                    e_hat[m, rows] = w_vec                                # eq. 10 (before O_e)
                scores.append(torch.clamp(w_vec.sum(), -5, 5))
            if scores:
                w = torch.softmax(torch.stack(scores), 0)                 # eq. 11
                heads.append(sum(w[t] * (Wv[rows] @ x[src[m]]) for t, m in enumerate(incoming)))
            else:
                heads.append(torch.zeros(dk, dtype=x.dtype))
        h_hat[i] = layer.o_h.weight @ torch.cat(heads) + layer.o_h.bias  # eq. 4 / 9
    out = []
    for i in range(n):
        h1 = _norm(layer.norm1_h, x[i] + h_hat[i])                       # eq. 6 / 13
        out.append(_norm(layer.norm2_h, h1 + _ffn(layer.ffn_h, h1)))      # eqs. 7-8 / 14-15
    h_out = torch.stack(out)
    if edge_attr is None:
        return h_out
    e_out = []
    for m in range(len(src)):
        e1 = _norm(layer.norm1_e, edge_attr[m] + layer.o_e.weight @ e_hat[m] + layer.o_e.bias)
        e_out.append(_norm(layer.norm2_e, e1 + _ffn(layer.ffn_e, e1)))   # eqs. 16-18
    return h_out, torch.stack(e_out)


def _random_graph(n, e, d, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    ei = torch.randint(0, n, (2, e), generator=g)
    ea = torch.randn(e, d, generator=g, dtype=torch.float64)
    return x, ei, ea


@pytest.mark.parametrize("norm", ["batch", "layer"])
@pytest.mark.parametrize("edges", [False, True])
def test_layer_matches_naive_equations(norm, edges):
    torch.manual_seed(0)
    layer = GraphTransformerLayer(16, 4, edge_dim=16 if edges else None, norm=norm).double()
    randomize_norms(layer)
    layer.eval()
    # node 9 has no incoming edge: its attention output must be zero, not NaN
    x, ei, ea = _random_graph(10, 40, 16, seed=1)
    ei = ei[:, ei[1] != 9]
    ea = ea[: ei.size(1)]
    # large projections push some scores past the ±5 clamp
    layer.qkv.weight.data *= 3.0
    got = layer(x, ei, ea if edges else None)
    want = naive_gt_layer(layer, x, ei, ea if edges else None)
    if edges:
        torch.testing.assert_close(got[0], want[0], rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(got[1], want[1], rtol=1e-9, atol=1e-9)
    else:  # the node-only layer returns x alone
        assert isinstance(got, torch.Tensor)
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


def test_scores_are_clamped():
    layer = GraphTransformerLayer(8, 2).double().eval()
    layer.qkv.weight.data *= 100.0  # huge scores: without the clamp softmax would be one-hot
    x, ei, _ = _random_graph(6, 20, 8, seed=3)
    _, (index, w) = layer(x, ei, return_attention_weights=True)
    assert index is ei and torch.isfinite(w).all()
    # the ratio of two weights of one node is at most e^10 when scores are clamped to [-5, 5]
    ratios = []
    for i in ei[1].unique():
        wi = w[ei[1] == i]
        assert torch.all(wi > 0)
        torch.testing.assert_close(wi.sum(0), torch.ones(2, dtype=wi.dtype))
        ratios.append(float(wi.max(0).values.div(wi.min(0).values).max()))
    assert max(ratios) <= math.exp(10) * (1 + 1e-6)
    assert max(ratios) > math.exp(9)  # the clamp is active here


@pytest.mark.parametrize("edges", [False, True])
def test_permutation_equivariance(edges):
    torch.manual_seed(0)
    layer = GraphTransformerLayer(16, 4, edge_dim=16 if edges else None).double().eval()
    randomize_norms(layer)
    x, ei, ea = _random_graph(12, 50, 16, seed=2)
    perm = torch.randperm(12)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(12)
    out = layer(x, ei, ea if edges else None)
    out_p = layer(x[perm], inv[ei], ea if edges else None)
    if edges:
        torch.testing.assert_close(out_p[0], out[0][perm])
        torch.testing.assert_close(out_p[1], out[1])  # edges keep their order
    else:
        torch.testing.assert_close(out_p, out[perm])


def _molecule_like(n, seed):
    g = torch.Generator().manual_seed(seed)
    src = torch.arange(n - 1)
    ei = torch.cat([torch.stack([src, src + 1]), torch.stack([src + 1, src])], 1)
    return Data(x=torch.randint(0, 5, (n, 1), generator=g), edge_index=ei,
                edge_attr=torch.randint(1, 4, (ei.size(1),), generator=g),
                lap_pe=torch.randn(n, 4, generator=g), y=torch.randn(1, generator=g))


@pytest.mark.parametrize("full_graph", [False, True])
def test_graph_output_independent_of_batch(full_graph):
    torch.manual_seed(0)
    model = GraphTransformer(32, 3, 4, out_dim=2, num_node_types=5, num_edge_types=4,
                             use_edge_features=not full_graph, pe="lap", pe_dim=4,
                             full_graph=full_graph).double().eval()
    graphs = [_molecule_like(n, s) for s, n in enumerate([7, 15, 4, 30])]
    for g in graphs:
        g.lap_pe = g.lap_pe.double()
    together = model(Batch.from_data_list(graphs))
    for i, g in enumerate(graphs):
        alone = model(Batch.from_data_list([g]))
        torch.testing.assert_close(alone[0], together[i], rtol=1e-10, atol=1e-10)


def test_layer_rejects_bad_input():
    layer = GraphTransformerLayer(8, 2, edge_dim=8)
    x = torch.randn(4, 8)
    ei = torch.tensor([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="edge_attr"):
        layer(x, ei)
    with pytest.raises(ValueError, match="num_edges"):
        layer(x, ei, torch.randn(3, 8))
    with pytest.raises(ValueError, match="divisible"):
        GraphTransformerLayer(10, 3)


def test_node_task_is_equivariant_and_sign_flips_only_in_training():
    torch.manual_seed(0)
    model = GraphTransformer(16, 2, 2, out_dim=3, level="node", num_node_types=5, pe="lap",
                             pe_dim=4).double()
    g = _molecule_like(9, 0)
    g.lap_pe = g.lap_pe.double()
    model.eval()
    out = model(Batch.from_data_list([g]))
    assert out.shape == (9, 3)
    torch.testing.assert_close(out, model(Batch.from_data_list([g])))  # no flips in eval
    perm = torch.randperm(9)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(9)
    gp = Data(x=g.x[perm], edge_index=inv[g.edge_index], lap_pe=g.lap_pe[perm])
    torch.testing.assert_close(model(Batch.from_data_list([gp])), out[perm])
    # training mode draws random signs: the PE projection changes between calls
    enc = model.pe_encoder.train()
    outs = {tuple(enc(g.lap_pe).sum(0).round(decimals=6).tolist()) for _ in range(20)}
    assert len(outs) > 1
