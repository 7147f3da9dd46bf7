"""GPSLayer against a naive implementation of the survey's eqs. 40-41 (float64); full attention
(SDPA + padding mask) and Performer attention; padding independence, permutation equivariance,
attention maps, memory-budget errors."""
from __future__ import annotations

import math

import pytest
import torch
from conftest import randomize_norms
from torch_geometric.data import Batch, Data

from graph_transformers.models import GPS, GraphTransformer
from graph_transformers.nn import FullAttention, GPSLayer, PerformerAttention
from graph_transformers.nn.linear_attention import favor_features, orthogonal_gaussian_features


def _bn_eval(m, x):
    if isinstance(m, torch.nn.BatchNorm1d):
        return (x - m.running_mean) / torch.sqrt(m.running_var + m.eps) * m.weight + m.bias
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + m.eps) * m.weight + m.bias


def naive_softmax_attention(att: FullAttention, x):
    """Multi-head softmax attention over the rows of one graph's ``x [n, d]``, per head."""
    d, H = att.hidden_dim, att.num_heads
    dk = d // H
    W, b = att.qkv.weight, att.qkv.bias
    q, k, v = x @ W[:d].T + b[:d], x @ W[d:2 * d].T + b[d:2 * d], x @ W[2 * d:].T + b[2 * d:]
    heads = []
    for h in range(H):
        cols = slice(h * dk, (h + 1) * dk)
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(dk)
        heads.append(torch.softmax(scores, dim=1) @ v[:, cols])
    return torch.cat(heads, 1) @ att.out.weight.T + att.out.bias


def naive_gine(conv, x, edge_index, e):
    """GINE (Hu et al. 2020): ``MLP((1 + ε) x_i + Σ_{j→i} ReLU(x_j + e_ji))``, node by node."""
    agg = torch.zeros_like(x)
    for m in range(edge_index.size(1)):
        j, i = int(edge_index[0, m]), int(edge_index[1, m])
        agg[i] = agg[i] + torch.relu(x[j] + e[m])
    return conv.nn((1 + conv.eps) * x + agg)


def naive_gps_layer(layer: GPSLayer, x, edge_index, batch, e):
    """Eqs. 40-41 read literally: h = Attn(Norm(x)) + MPNN(Norm(x), A) + x; y = MLP(Norm(h)) + h,
    with the attention computed graph by graph."""
    xn = _bn_eval(layer.norm1, x)
    attn = torch.zeros_like(x)
    for g in batch.unique():
        idx = (batch == g).nonzero().view(-1)
        attn[idx] = naive_softmax_attention(layer.attention, xn[idx])
    h = attn + naive_gine(layer.mpnn.conv, xn, edge_index, e) + x
    lin1, lin2 = layer.mlp[0], layer.mlp[3]
    return lin2(torch.relu(lin1(_bn_eval(layer.norm2, h)))) + h


def _graphs(sizes, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    xs, eis, es, bs, off = [], [], [], [], 0
    for gi, n in enumerate(sizes):
        m = 3 * n
        ei = torch.randint(0, n, (2, m), generator=g)
        xs.append(torch.randn(n, d, generator=g, dtype=torch.float64))
        eis.append(ei + off)
        es.append(torch.randn(m, d, generator=g, dtype=torch.float64))
        bs.append(torch.full((n,), gi))
        off += n
    return torch.cat(xs), torch.cat(eis, 1), torch.cat(bs), torch.cat(es)


@pytest.mark.parametrize("norm", ["batch", "layer"])
def test_gps_layer_matches_equations_40_41(norm):
    torch.manual_seed(0)
    layer = GPSLayer(16, 4, mpnn="gine", attention="full", norm=norm).double()
    randomize_norms(layer)
    for p in layer.parameters():  # non-zero biases everywhere
        if p.dim() == 1:
            p.data.add_(0.1 * torch.randn_like(p))
    layer.mpnn.conv.eps.data.fill_(0.3)
    layer.eval()
    x, ei, batch, e = _graphs([5, 9, 3], 16, seed=1)
    got = layer(x, ei, e, batch)  # GINE does not update the edges: x alone
    want = naive_gps_layer(layer, x, ei, batch, e)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


def test_attention_init_is_multihead_attentions_draw_for_draw():
    """Regression (2026-11-26): the output projection was Xavier-uniform, √3× wider than
    ``nn.MultiheadAttention``'s (which GraphGPS uses); ours now draws the same numbers."""
    d, h = 64, 4
    for cls in (FullAttention, PerformerAttention):
        att = cls(d, h)
        torch.manual_seed(7)
        att.reset_parameters()
        torch.manual_seed(7)
        mha = torch.nn.MultiheadAttention(d, h)
        assert torch.equal(att.qkv.weight, mha.in_proj_weight)
        assert torch.equal(att.qkv.bias, mha.in_proj_bias)
        assert torch.equal(att.out.weight, mha.out_proj.weight)
        assert torch.equal(att.out.bias, mha.out_proj.bias)
    bound = 1 / math.sqrt(d)  # nn.Linear's default; Xavier would reach √(3/d) = 0.217
    assert 0.9 * bound < att.out.weight.abs().max() <= bound


def test_full_attention_padding_independence_and_equivariance():
    torch.manual_seed(0)
    layer = GPSLayer(16, 4, mpnn="gine", attention="full").double().eval()
    randomize_norms(layer)
    x, ei, batch, e = _graphs([4, 11, 7], 16, seed=2)
    together = layer(x, ei, e, batch)
    # graph 0 alone (N=4, no padding) vs batched with larger graphs (padded to 11)
    alone = layer(x[:4], ei[:, :12], e[:12], torch.zeros(4, dtype=torch.long))
    torch.testing.assert_close(alone, together[:4], rtol=1e-12, atol=1e-12)
    # permuting the nodes of one graph permutes the output
    n = x.size(0)
    perm = torch.cat([torch.arange(4), 4 + torch.randperm(11), torch.arange(15, 22)])
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n)
    out_p = layer(x[perm], inv[ei], e, batch[perm])
    torch.testing.assert_close(out_p, together[perm], rtol=1e-12, atol=1e-12)


def _exact_attention(q, k, v, mask):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
    return torch.softmax(scores, -1) @ v


def test_performer_approaches_softmax_attention_as_features_grow():
    from graph_transformers.nn.linear_attention import linear_attention
    g = torch.Generator().manual_seed(0)
    b, h, n, dk = 2, 2, 12, 8
    q = 0.5 * torch.randn(b, h, n, dk, generator=g, dtype=torch.float64)
    k = 0.5 * torch.randn(b, h, n, dk, generator=g, dtype=torch.float64)
    v = torch.randn(b, h, n, dk, generator=g, dtype=torch.float64)
    mask = torch.ones(b, n, dtype=torch.bool)
    mask[1, 9:] = False  # graph 1 has 9 real nodes
    exact = _exact_attention(q, k, v, mask)
    errors = {}
    for m in (8, 64, 4096):
        errs = []
        for seed in range(3):
            w = orthogonal_gaussian_features(m, dk, torch.Generator().manual_seed(seed)).double()
            approx = linear_attention(q, k, v, w, mask)
            errs.append(float((approx - exact)[mask[:, None, :, None].expand_as(exact)].abs()
                              .mean()))
        errors[m] = sum(errs) / len(errs)
    assert errors[4096] < errors[64] < errors[8]
    assert errors[4096] < 0.02, errors


def test_favor_features_estimate_the_softmax_kernel_without_bias():
    # E[φ(x)·φ(y)] = exp(x·y): the mean over many feature draws matches the kernel
    g = torch.Generator().manual_seed(1)
    x = 0.25 * torch.randn(1, 1, 5, 4, generator=g, dtype=torch.float64)
    y = 0.25 * torch.randn(1, 1, 5, 4, generator=g, dtype=torch.float64)
    w = torch.randn(200000, 4, generator=g, dtype=torch.float64)

    # without stabilization (plain φ): compute directly from the definition
    def phi(z):
        return torch.exp(z @ w.T - 0.5 * (z * z).sum(-1, keepdim=True)) / math.sqrt(w.size(0))

    est = phi(x) @ phi(y).transpose(-1, -2)
    torch.testing.assert_close(est, torch.exp(x @ y.transpose(-1, -2)), rtol=0.03, atol=0.0)
    # the stabilized features differ only by a per-query row factor and one key-wide factor
    fq = favor_features(x, w, is_query=True)
    fk = favor_features(y, w, is_query=False)
    ratio = (fq @ fk.transpose(-1, -2)) / est
    torch.testing.assert_close(ratio / ratio[..., :1], torch.ones_like(ratio))


def test_performer_ignores_padding_and_is_equivariant():
    torch.manual_seed(0)
    att = PerformerAttention(16, 2, num_features=32).double().eval()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 10, 16, generator=g, dtype=torch.float64)
    mask = torch.ones(2, 10, dtype=torch.bool)
    mask[0, 6:] = False
    out = att.forward_dense(x, mask)
    alone = att.forward_dense(x[:1, :6], mask[:1, :6])
    torch.testing.assert_close(out[0, :6], alone[0])
    perm = torch.randperm(10)
    torch.testing.assert_close(att.forward_dense(x[1:, perm], mask[1:]), out[1:, perm])
    # the PyG-native call pads per graph itself: the same rows
    batch = torch.tensor([0] * 6 + [1] * 10)
    torch.testing.assert_close(att(torch.cat([x[0, :6], x[1]]), batch=batch),
                               torch.cat([out[0, :6], out[1]]))


def test_full_attention_refuses_oversized_batches_before_allocating():
    # with attention dropout in training SDPA takes its N x N path: 4 x [1, 4, 300, 300] floats
    att = FullAttention(16, 4, attn_dropout=0.1, memory_budget_gb=2**-10).train()
    x = torch.zeros(1, 300, 16)
    mask = torch.ones(1, 300, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"needs about 0.01 GiB .*performer"):
        att.forward_dense(x, mask)
    att.forward_dense(torch.zeros(1, 100, 16), torch.ones(1, 100, dtype=torch.bool))  # 0.6 MiB
    att.eval()  # no dropout: SDPA's flash kernel on CPU, memory linear in N
    assert att.forward_dense(x, mask).shape == (1, 300, 16)
    with pytest.raises(ValueError, match="budget"):  # the weights themselves are N x N
        att.attention_weights(x, mask)


def naive_graphgps_layer(layer: GPSLayer, x, edge_index, batch, e):
    """GraphGPS's post-norm layer read literally (``graphgps/layer/gps_layer.py``, BatchNorm):
    h = BN_l(x + GINE(x)) + BN_a(x + Attn(x)); y = BN_2(h + MLP(h)), attention graph by graph."""
    attn = torch.zeros_like(x)
    for g in batch.unique():
        idx = (batch == g).nonzero().view(-1)
        attn[idx] = naive_softmax_attention(layer.attention, x[idx])
    h = (_bn_eval(layer.norm1_local, x + naive_gine(layer.mpnn.conv, x, edge_index, e))
         + _bn_eval(layer.norm1, x + attn))
    lin1, lin2 = layer.mlp[0], layer.mlp[3]
    return _bn_eval(layer.norm2, h + lin2(torch.relu(lin1(h))))


@pytest.mark.parametrize("train_eps", [True, False])
def test_gps_layer_post_norm_matches_graphgps_layer(train_eps):
    torch.manual_seed(0)
    layer = GPSLayer(16, 4, mpnn="gine", attention="full", norm_position="post",
                     train_eps=train_eps).double()
    randomize_norms(layer)
    for p in layer.parameters():
        if p.dim() == 1:
            p.data.add_(0.1 * torch.randn_like(p))
    if train_eps:
        layer.mpnn.conv.eps.data.fill_(0.3)
    else:  # GraphGPS's GINE: ε is a buffer fixed at 0, not a parameter
        assert float(layer.mpnn.conv.eps) == 0.0
        assert not any(n.endswith("eps") for n, _ in layer.named_parameters())
    layer.eval()
    x, ei, batch, e = _graphs([5, 9, 3], 16, seed=1)
    got = layer(x, ei, e, batch)
    torch.testing.assert_close(got, naive_graphgps_layer(layer, x, ei, batch, e),
                               rtol=1e-10, atol=1e-10)
    # three BatchNorms per layer, as GraphGPS's (norm1_local, norm1_attn, norm2)
    norms = [m for m in layer.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    assert len(norms) == 3


def test_gps_layer_post_norm_single_branch_and_gatedgcn_edges():
    """Post-norm with one branch is BN(x + branch(x)) then the MLP block; GatedGCN's edge update
    is normalized after its residual."""
    torch.manual_seed(0)
    x, ei, batch, e = _graphs([6, 4], 16, seed=2)
    layer = GPSLayer(16, 4, mpnn=None, attention="full", norm_position="post").double().eval()
    randomize_norms(layer)
    assert layer.norm1_local is None
    attn = torch.cat([naive_softmax_attention(layer.attention, x[batch == g]) for g in (0, 1)])
    h = _bn_eval(layer.norm1, x + attn)
    want = _bn_eval(layer.norm2, h + layer.mlp(h))
    torch.testing.assert_close(layer(x, ei, batch=batch), want, rtol=1e-10, atol=1e-10)

    layer = GPSLayer(16, 4, mpnn="gatedgcn", attention="none",
                     norm_position="post").double().eval()
    randomize_norms(layer)
    assert layer.norm1 is None
    local, e_hat = layer.mpnn(x, ei, e)
    h = _bn_eval(layer.norm1_local, x + local)
    got, e_out = layer(x, ei, e, batch)  # GatedGCN updates the edges: (x, edge_attr)
    torch.testing.assert_close(got, _bn_eval(layer.norm2, h + layer.mlp(h)),
                               rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(e_out, _bn_eval(layer.norm_e, e + e_hat), rtol=1e-10, atol=1e-10)


def test_gps_post_norm_network_has_no_final_norm_and_is_batch_independent():
    torch.manual_seed(0)
    model = GPS(32, 2, 4, out_dim=1, num_node_types=5, num_edge_types=4, pe="rwse", pe_dim=6,
                pe_embed_dim=8, norm_position="post", train_eps=False).double()
    assert isinstance(model.final_norm, torch.nn.Identity)
    randomize_norms(model)
    model.eval()
    graphs = [_molecule(n, s) for s, n in enumerate([7, 15, 4])]
    together = model(Batch.from_data_list(graphs))
    for i, g in enumerate(graphs):
        torch.testing.assert_close(model(Batch.from_data_list([g]))[0], together[i],
                                   rtol=1e-9, atol=1e-9)
    maps, mask = model.attention_maps(Batch.from_data_list(graphs))
    assert len(maps) == 2 and torch.allclose(maps[0].sum(-1)[mask], torch.ones(()).double())


def test_layer_rejects_bad_options_and_input():
    with pytest.raises(ValueError, match="needs an MPNN"):
        GPSLayer(16, 4, mpnn=None, attention="none")
    with pytest.raises(ValueError, match="unknown attention"):
        GPSLayer(16, 4, attention="sparse")
    with pytest.raises(ValueError, match="unknown norm_position"):
        GPSLayer(16, 4, norm_position="sandwich")
    with pytest.raises(ValueError, match="needs edge features"):
        GPSLayer(16, 4, mpnn="gine", use_edge_features=False)
    layer = GPSLayer(16, 4, mpnn="gine")
    with pytest.raises(ValueError, match="edge_attr"):
        layer(torch.randn(3, 16), torch.tensor([[0, 1], [1, 2]]))


def _molecule(n, seed):
    g = torch.Generator().manual_seed(seed)
    src = torch.arange(n - 1)
    ei = torch.cat([torch.stack([src, src + 1]), torch.stack([src + 1, src])], 1)
    return Data(x=torch.randint(0, 5, (n,), generator=g), edge_index=ei,
                edge_attr=torch.randint(0, 4, (ei.size(1),), generator=g),
                rwse=torch.rand(n, 6, generator=g, dtype=torch.float64),
                y=torch.randn(1, generator=g))


@pytest.mark.parametrize("attention, mpnn", [("full", "gine"), ("performer", "gatedgcn"),
                                             ("none", "pna"), ("full", None)])
def test_gps_graph_outputs_independent_of_batch(attention, mpnn):
    torch.manual_seed(0)
    deg = torch.tensor([0, 5, 20])
    model = GPS(32, 2, 4, out_dim=1, num_node_types=5, num_edge_types=4, mpnn=mpnn,
                attention=attention, use_edge_features=mpnn is not None and mpnn != "gcn",
                pe="rwse", pe_dim=6, pe_embed_dim=8, deg=deg, pna_towers=4).double()
    randomize_norms(model)
    model.eval()
    graphs = [_molecule(n, s) for s, n in enumerate([7, 15, 4, 30])]
    together = model(Batch.from_data_list(graphs))
    assert together.shape == (4, 1)
    for i, g in enumerate(graphs):
        alone = model(Batch.from_data_list([g]))
        torch.testing.assert_close(alone[0], together[i], rtol=1e-9, atol=1e-9)


def test_gps_attention_maps():
    torch.manual_seed(0)
    model = GPS(32, 3, 4, out_dim=1, num_node_types=5, num_edge_types=4, pe="rwse", pe_dim=6,
                pe_embed_dim=8).double()
    graphs = [_molecule(n, s) for s, n in enumerate([7, 12])]
    batch = Batch.from_data_list(graphs)
    model.train()
    maps, mask = model.attention_maps(batch)
    assert model.training  # restored
    assert len(maps) == 3 and maps[0].shape == (2, 12, 12) and mask.shape == (2, 12)
    assert mask.sum(1).tolist() == [7, 12]
    for w in maps:
        torch.testing.assert_close(w[0, :7].sum(-1), torch.ones(7, dtype=w.dtype))
        assert torch.all(w[0, 7:] == 0) and torch.all(w[0, :, 7:] == 0)
        assert torch.all(w >= 0)
    # layer 0's map equals a naive softmax over the first layer's normalized input
    layer = model.layers[0]
    model.eval()
    h, _, _ = model._inputs(batch)
    xn = _bn_eval(layer.norm1, h[:7])
    att = layer.attention
    d, H = 32, 4
    q = xn @ att.qkv.weight[:d].T + att.qkv.bias[:d]
    k = xn @ att.qkv.weight[d:2 * d].T + att.qkv.bias[d:2 * d]
    want = sum(torch.softmax(q[:, i * 8:(i + 1) * 8] @ k[:, i * 8:(i + 1) * 8].T / math.sqrt(8), 1)
               for i in range(H)) / H
    torch.testing.assert_close(maps[0][0, :7, :7], want)
    performer = GPS(32, 1, 4, out_dim=1, num_node_types=5, num_edge_types=4, pe=None,
                    attention="performer")
    with pytest.raises(NotImplementedError, match="full softmax attention"):
        performer.attention_maps(batch)


def test_gt_attention_maps_scatter_sparse_weights():
    torch.manual_seed(0)
    model = GraphTransformer(16, 2, 4, out_dim=1, num_node_types=5, pe=None)
    graphs = [_molecule(n, s) for s, n in enumerate([5, 8])]
    batch = Batch.from_data_list(graphs)
    maps, mask = model.attention_maps(batch)
    _, att = model.encode(batch, return_attention_weights=True)
    assert len(maps) == 2 and maps[0].shape == (2, 8, 8) and mask.sum().item() == 13
    ei, w = att[0]
    w = w.mean(-1)
    ptr = batch.ptr
    for m in range(ei.size(1)):
        j, i = int(ei[0, m]), int(ei[1, m])
        gi = int(batch.batch[i])
        assert maps[0][gi, i - ptr[gi], j - ptr[gi]] == pytest.approx(float(w[m].detach()),
                                                                      abs=1e-6)
    # each node of a path graph has incoming edges: rows of real nodes sum to 1
    torch.testing.assert_close(maps[1][0, :5].sum(-1), torch.ones(5))
    assert torch.all(maps[1][0, 5:] == 0)


def test_gps_on_graphs_without_edge_features_names_the_fix():
    """Issue 25: GPS (GINE) on a graph set without edge features said to enable edge features,
    and turning them off was refused in turn; both messages now point to model.mpnn=gin."""
    from graph_transformers.data.registry import resolve_spec
    from graph_transformers.training.config import ConfigError, build_config
    from graph_transformers.training.build import model_kwargs
    config = build_config({"model": {"name": "gps", "mpnn": "gine", "use_edge_features": True,
                                     "pe": None},
                           "data": {"name": "csl", "source": "generated"}})
    with pytest.raises(ValueError, match=r"use_edge_features=false and model\.mpnn=gin"):
        model_kwargs(config, resolve_spec(config.data))
    with pytest.raises(ConfigError, match=r"model\.mpnn=gin \(or gcn\)"):
        build_config({"model": {"name": "gps", "mpnn": "gine", "use_edge_features": False,
                                "pe": None},
                      "data": {"name": "csl", "source": "generated"}})
