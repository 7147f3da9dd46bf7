"""GRPE's fast (gather) path against the materialized one in float64: forward and gradients (of
x, the encodings and the layer weights), with padding, fused and unfused relations, every
Table 9 switch; the indices and tables prepared once per batch (``prepare_relations``,
``prepare_tables``) against those built by the layer, and their checks."""
from __future__ import annotations

import itertools

import pytest
import torch
from conftest import grpe_graph, grpe_inputs
from torch_geometric.data import Batch

import graph_transformers.nn.grpe as grpe
from graph_transformers.models import GRPE
from graph_transformers.nn.grpe import GRPEAttention, GRPEEncodings, GRPELayer
from graph_transformers.nn.grpe_gather import FUSE_LIMIT, fuse_relations

SWITCHES = list(itertools.product([True, False], repeat=3))  # topology, edge, value


def _run(module, enc, impl, x, topo, edge, mask, **kw):
    """Output at real nodes and the gradients of x, the encodings and the module's weights."""
    attn = module.attn if isinstance(module, GRPELayer) else module
    attn.attention_impl = impl
    params = list(module.parameters()) + list(enc.parameters())
    for p in params:
        p.grad = None
    x = x.clone().requires_grad_()
    out = module.forward_dense(x, topo, edge, enc, mask, **kw).x
    real = out[mask] if mask is not None else out.flatten(0, 1)
    (real * torch.linspace(-1, 1, real.numel(), dtype=out.dtype).view_as(real)).sum().backward()
    return [real.detach(), x.grad] + [p.grad for p in params]


def _assert_equal(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        if u is None or v is None:
            assert u is None and v is None
            continue
        torch.testing.assert_close(u, v, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("switches", SWITCHES)
@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("block", [False, True])
def test_gather_equals_materialized_forward_and_gradients(switches, fuse, block, monkeypatch):
    monkeypatch.setattr(grpe, "fuse_relations", lambda *a: fuse)  # where GRPEAttention reads it
    torch.manual_seed(0)
    module = (GRPELayer(16, 4, dropout=0.0, attn_dropout=0.0) if block else
              GRPEAttention(16, 4))
    attn = module.attn if block else module
    attn.topology_attention, attn.edge_attention, attn.graph_encoded_value = switches
    module = module.double().train()  # dropout off: train mode changes nothing else
    enc = GRPEEncodings(9, 7, 16).double()
    inputs = grpe_inputs()
    fast = _run(module, enc, "gather", *inputs)
    ref = _run(module, enc, "materialized", *inputs)
    _assert_equal(fast, ref)
    if switches[0] and switches[1]:
        assert attn.prepare_relations(inputs[1], inputs[2], enc).fused is fuse


@pytest.mark.parametrize("num_edge", [3, 7, 40])  # 9·3 fuses at N = 30, 9·7 does not, 9·40 never
def test_fusion_rule_and_large_vocabularies(num_edge):
    torch.manual_seed(1)
    att = GRPEAttention(16, 4).double()
    enc = GRPEEncodings(9, num_edge, 16).double()
    x, topo, edge, mask = grpe_inputs(B=3, N=30, E=num_edge)
    rel = att.prepare_relations(topo, edge, enc)
    assert rel.fused is fuse_relations(9, num_edge, 30)
    assert rel.fused is (num_edge == 3)
    assert (rel.score_size, rel.value_size) == ((27, 27) if num_edge == 3 else
                                                (9 + num_edge, 9 + num_edge))
    _assert_equal(_run(att, enc, "gather", x, topo, edge, mask),
                  _run(att, enc, "materialized", x, topo, edge, mask))


def test_fuse_relations():
    assert fuse_relations(5, 4, 26) and not fuse_relations(9, 7, 38)  # 11 < 26, 47 ≥ 38
    assert fuse_relations(9, 7, 48)
    assert not fuse_relations(16, 17, 10 ** 6)  # 272 > FUSE_LIMIT
    assert 16 * 17 > FUSE_LIMIT


def test_without_mask_and_single_node():
    torch.manual_seed(2)
    att = GRPEAttention(16, 4).double()
    enc = GRPEEncodings(9, 7, 16).double()
    for B, N in [(2, 5), (1, 1)]:
        x, topo, edge, _ = grpe_inputs(B=B, N=N)
        full = torch.ones(B, N, dtype=torch.bool)
        a = _run(att, enc, "gather", x, topo, edge, None)
        b = _run(att, enc, "materialized", x, topo, edge, full)
        _assert_equal(a, b)


def test_prepared_relations_and_tables_equal_per_layer_ones():
    torch.manual_seed(3)
    layers = [GRPELayer(16, 4).double().eval() for _ in range(3)]
    enc = GRPEEncodings(9, 7, 16).double()
    x, topo, edge, mask = grpe_inputs()
    rel = layers[0].attn.prepare_relations(topo, edge, enc)
    tables = layers[0].attn.prepare_tables(enc, rel)
    h1 = h2 = x
    for layer in layers:
        h1 = layer.forward_dense(h1, topo, edge, enc, mask).x
        h2 = layer.forward_dense(h2, topo, edge, enc, mask, relations=rel, tables=tables).x
    assert torch.equal(h1, h2)


def test_prepared_mismatches_are_refused():
    att = GRPEAttention(16, 4).double()
    enc = GRPEEncodings(9, 7, 16).double()
    x, topo, edge, mask = grpe_inputs()
    rel = att.prepare_relations(topo, edge, enc)
    with pytest.raises(ValueError, match="prepare_relations"):  # another batch shape
        att.forward_dense(x[:2], topo[:2], edge[:2], enc, mask[:2], relations=rel)
    other = GRPEAttention(16, 4, edge_attention=False).double()
    with pytest.raises(ValueError, match="prepare_relations"):  # other switches
        other.forward_dense(x, topo, edge, enc, mask, relations=rel)
    tables = att.prepare_tables(GRPEEncodings(9, 7, 16).double(), rel)
    with pytest.raises(ValueError, match="prepare_tables"):  # other encodings
        att.forward_dense(x, topo, edge, enc, mask, relations=rel, tables=tables)
    with pytest.raises(ValueError, match=r"\[B, N, N\]"):
        att.prepare_relations(topo[:, :3], edge, enc)




@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize("fuse", [True, False])
def test_model_gather_equals_materialized(share, fuse, monkeypatch):
    """The whole model (size groups, the virtual node, relations prepared once per group, tables
    once per forward) in float64: outputs and every parameter's gradient."""
    monkeypatch.setattr(grpe, "fuse_relations", lambda *a: fuse)  # where GRPEAttention reads it
    graphs = [
        grpe_graph(5, [(0, 1), (1, 2), (2, 3), (3, 4)], [1, 2, 1, 3], [0, 1, 2, 1, 0]),
        grpe_graph(3, [(0, 1)], [2], [2, 2, 1]),  # node 2 isolated: unreachable pairs
        grpe_graph(7, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)], [1] * 6,
               [0, 0, 0, 0, 0, 0, 1]),  # distances up to 6 > L = 3: far
    ]
    batch = Batch.from_data_list(graphs * 2)
    torch.manual_seed(4)
    model = GRPE(hidden_dim=16, num_layers=2, num_heads=4, out_dim=2, num_node_types=3,
                 num_edge_types=4, max_distance=3, dropout=0.0, attn_dropout=0.0,
                 share_encodings=share, size_groups=3).double().train()
    results = []
    for impl in ("gather", "materialized"):
        for layer in model.layers:
            layer.attn.attention_impl = impl
        model.zero_grad(set_to_none=True)
        out = model(batch)
        (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)).sum().backward()
        results.append([out.detach()] + [p.grad for p in model.parameters()])
    _assert_equal(*results)


def test_non_contiguous_ids():
    """Ids given as a transposed view (e.g. ``to_dense_adj(...).transpose(1, 2)``)."""
    torch.manual_seed(5)
    att = GRPEAttention(16, 4).double()
    enc = GRPEEncodings(9, 7, 16).double()
    x, topo, edge, mask = grpe_inputs()
    topo_t, edge_t = topo.transpose(1, 2), edge.transpose(1, 2)
    assert not topo_t.is_contiguous()
    _assert_equal(_run(att, enc, "gather", x, topo_t, edge_t, mask),
                  _run(att, enc, "materialized", x, topo_t.contiguous(), edge_t.contiguous(),
                       mask))
