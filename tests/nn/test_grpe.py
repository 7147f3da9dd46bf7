"""GRPE (Park et al. 2022): the layer against a naive implementation of eqs. 6-9, the Table 9
switches, equivariance, padding independence, the model, its config and a ZINC training smoke."""
from __future__ import annotations

import math

import pytest
import torch
from conftest import grpe_graph
from conftest import grpe_inputs
from torch_geometric.data import Batch, Data

from graph_transformers.core.dense import DenseBudgetError
from graph_transformers.encodings import AddShortestPaths
from graph_transformers.models import GRPE, count_parameters
from graph_transformers.models.grpe import size_groups
from graph_transformers.nn.grpe import GRPEAttention, GRPEEncodings, GRPELayer
from graph_transformers.nn.grpe_gather import FUSE_LIMIT
from graph_transformers.nn.prenorm import ByteDropout, attention_dropout_mask

#: GRPEAttention's switches (Table 9), in the order the tests list them
SWITCHES = ("topology_attention", "edge_attention", "graph_encoded_value")


def naive_grpe_attention(att: GRPEAttention, x, topo, edge, enc, mask, topology=True,
                         edge_att=True, value=True):
    """Eqs. 6-9 written out: the relative tables are materialized as ``[N, N, d]`` tensors per
    graph, each head computed separately, float64."""
    B, N, d = x.shape
    H, dk = att.num_heads, att.head_dim
    W, b = att.qkv.weight, att.qkv.bias
    out = torch.zeros(B, N, d, dtype=x.dtype)
    for g in range(B):
        q = x[g] @ W[:d].T + b[:d]
        k = x[g] @ W[d:2 * d].T + b[d:2 * d]
        v = x[g] @ W[2 * d:].T + b[2 * d:]
        Pq, Pk, Pv = (enc.topology[r][topo[g]] for r in range(3))  # [N, N, d] each
        Eq, Ek, Ev = (enc.edge[r][edge[g]] for r in range(3))
        heads = []
        for h in range(H):
            s = slice(h * dk, (h + 1) * dk)
            a = q[:, s] @ k[:, s].T
            if topology:
                a = a + (q[:, None, s] * Pq[:, :, s]).sum(-1) \
                    + (k[None, :, s] * Pk[:, :, s]).sum(-1)
            if edge_att:
                a = a + (q[:, None, s] * Eq[:, :, s]).sum(-1) \
                    + (k[None, :, s] * Ek[:, :, s]).sum(-1)
            a = a / math.sqrt(dk)
            a = a.masked_fill(~mask[g][None, :], float("-inf")).softmax(-1)
            vals = v[None, :, s].expand(N, N, dk)
            if value:
                vals = vals + Pv[:, :, s] + Ev[:, :, s]
            heads.append((a[:, :, None] * vals).sum(1))
        out[g] = torch.cat(heads, -1) @ att.out.weight.T + att.out.bias
    return out


@pytest.mark.parametrize("switches", [(True, True, True), (True, False, True),
                                      (False, True, False), (False, False, True),
                                      (False, False, False)])
@pytest.mark.parametrize("num_edge", [7, 40])  # 9 · 7 types fuse, 9 · 40 do not
def test_attention_matches_naive(switches, num_edge):
    torch.manual_seed(0)
    att = GRPEAttention(16, 4, **dict(zip(SWITCHES, switches))).double()
    enc = GRPEEncodings(9, num_edge, 16).double()
    x, topo, edge, mask = grpe_inputs(E=num_edge)
    ref = naive_grpe_attention(att, x, topo, edge, enc, mask, *switches)
    out = att.forward_dense(x, topo, edge, enc, mask).x
    real = mask.unsqueeze(-1).expand_as(out)
    torch.testing.assert_close(out[real], ref[real], rtol=1e-10, atol=1e-10)
    att.attention_impl = "materialized"
    torch.testing.assert_close(att.forward_dense(x, topo, edge, enc, mask).x[real], ref[real],
                               rtol=1e-10, atol=1e-10)
    assert (9 * num_edge <= FUSE_LIMIT) == (num_edge == 7)


def test_gradients_match_materialized():
    torch.manual_seed(1)
    att = GRPEAttention(16, 4).double()
    enc = GRPEEncodings(9, 7, 16).double()
    x, topo, edge, mask = grpe_inputs()
    grads = []
    for impl in ("gather", "materialized"):
        att.attention_impl = impl
        for p in list(att.parameters()) + list(enc.parameters()):
            p.grad = None
        (att.forward_dense(x, topo, edge, enc, mask).x[mask] ** 2).sum().backward()
        grads.append([p.grad.clone() for p in list(att.parameters()) + list(enc.parameters())])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)


def test_each_table9_switch_changes_output():
    torch.manual_seed(2)
    enc = GRPEEncodings(9, 7, 16).double()
    x, topo, edge, mask = grpe_inputs()
    full = GRPEAttention(16, 4).double()
    ref = full.forward_dense(x, topo, edge, enc, mask).x
    for switches in [(False, True, True), (True, False, True), (True, True, False)]:
        att = GRPEAttention(16, 4, **dict(zip(SWITCHES, switches))).double()
        att.load_state_dict(full.state_dict())
        out = att.forward_dense(x, topo, edge, enc, mask).x
        assert (out - ref)[mask].abs().max() > 1e-3, switches


def test_attention_weights_rows_sum_to_one_and_ignore_padding():
    att = GRPEAttention(16, 4).double()
    enc = GRPEEncodings(9, 7, 16).double()
    x, topo, edge, mask = grpe_inputs()
    _, w = att.forward_dense(x, topo, edge, enc, mask, return_attention_weights=True)
    assert w.shape == (3, 4, 7, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 4, 7, dtype=torch.float64))
    assert (w[1, :, :, 5:] == 0).all() and (w[2, :, :, 3:] == 0).all()


def test_layer_permutation_equivariant():
    torch.manual_seed(3)
    layer = GRPELayer(16, 4).double().eval()
    enc = GRPEEncodings(9, 7, 16).double()
    x, topo, edge, _ = (t[:1] for t in grpe_inputs())
    perm = torch.randperm(7)
    out = layer.forward_dense(x, topo, edge, enc).x
    out_p = layer.forward_dense(x[:, perm], topo[:, perm][:, :, perm],
                                edge[:, perm][:, :, perm], enc).x
    torch.testing.assert_close(out_p, out[:, perm])


def test_byte_dropout():
    keep, scale = attention_dropout_mask(torch.Size([200, 500]), 0.1)
    assert keep.dtype == torch.bool and keep.shape == (200, 500)
    assert abs(keep.float().mean().item() - (1 - 26 / 256)) < 0.01
    assert scale == pytest.approx(256 / 230)
    drop = ByteDropout(0.5)
    x = torch.ones(10000)
    assert torch.equal(drop.eval()(x), x)
    y = drop.train()(x)
    assert set(y.unique().tolist()) <= {0.0, 2.0} and abs(y.mean().item() - 1) < 0.05
    with pytest.raises(ValueError, match="dropout"):
        ByteDropout(1.0)


# ----------------------------------------------------------------------------- the model


def _graphs():
    return [
        grpe_graph(5, [(0, 1), (1, 2), (2, 3), (3, 4)], [1, 2, 1, 3], [0, 1, 2, 1, 0]),
        grpe_graph(3, [(0, 1)], [2], [2, 2, 1]),  # node 2 isolated: unreachable pairs
        grpe_graph(7, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)], [1] * 6,
               [0, 0, 0, 0, 0, 0, 1]),  # distances up to 6 > L = 3: far
    ]


def _model(**kw):
    torch.manual_seed(0)
    args = dict(hidden_dim=16, num_layers=2, num_heads=4, out_dim=2, num_node_types=3,
                num_edge_types=4, max_distance=3, dropout=0.0, attn_dropout=0.0)
    args.update(kw)
    return GRPE(**args).double().eval()


def test_model_padding_and_batch_independent():
    model = _model()
    graphs = _graphs()
    batch = Batch.from_data_list(graphs)
    out = model(batch)
    assert out.shape == (3, 2)
    for i, g in enumerate(graphs):
        torch.testing.assert_close(model(Batch.from_data_list([g]))[0], out[i])


@pytest.mark.parametrize("groups", [1, 2, 3])
def test_size_groups_give_the_same_output(groups):
    model = _model(size_groups=1)
    batch = Batch.from_data_list(_graphs() * 2)
    ref = model(batch)
    model.size_groups = groups
    torch.testing.assert_close(model(batch), ref)
    maps, mask = model.attention_maps(batch)
    model.size_groups = 1
    maps1, _ = model.attention_maps(batch)
    for a, b in zip(maps, maps1):
        torch.testing.assert_close(a, b)


def test_size_groups_split_only_where_padding_pays():
    """The fewest equal-count groups with as few padded pairs as ``max_groups`` (within a
    tolerance)."""
    def count(sizes, max_groups, **kw):
        n = torch.tensor(sizes)
        groups = size_groups(n, max_groups, n, **kw)
        assert sorted(torch.cat([i for i, _ in groups]).tolist()) == list(range(len(sizes)))
        for idx, top in groups:
            assert top == int(n[idx].max())
        return len(groups)
    assert count([23] * 128, 4) == 1                     # a size-bucketed batch: no padding
    assert count([20, 21, 22, 23] * 32, 4) == 4          # every split removes padding
    assert count([20, 21, 22, 23] * 32, 4, padding_tolerance=0.25) == 1  # 1.14x: tolerated
    assert count([5, 5, 5, 5, 30, 30, 30, 30], 4) == 2   # two sizes: two groups
    assert count([3, 5, 7, 3, 5, 7], 3) == 3              # the equivalence test's batch
    assert count([5] * 4 + [9] * 4, 4) == 2                # 4 groups would remove no more
    assert count([9], 4) == 1


def test_model_graph_output_invariant_node_output_equivariant():
    g = _graphs()[0]
    perm = torch.tensor([3, 0, 4, 1, 2])
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(5)
    gp = Data(x=g.x[perm], edge_index=inv[g.edge_index], edge_attr=g.edge_attr,
              y=g.y, num_nodes=5)
    gp = AddShortestPaths(3)(gp)
    graph_model = _model()
    torch.testing.assert_close(graph_model(Batch.from_data_list([gp])),
                               graph_model(Batch.from_data_list([g])))
    node_model = _model(level="node")
    out = node_model(Batch.from_data_list([g]))
    torch.testing.assert_close(node_model(Batch.from_data_list([gp])), out[perm])


def test_relations_ids():
    model = _model()
    rel = model.relations(Batch.from_data_list(_graphs()))
    L = 3
    t, e = rel.topology, rel.edge
    assert t.shape == (3, 8, 8)
    assert (t[:, 0, :] == L + 3).all() and (t[:, :, 0] == L + 3).all()  # virtual node
    assert (e[:, 0, :] == 2).all() and (e[:, :, 0] == 2).all()
    g0 = t[0, 1:6, 1:6]
    assert g0[0, 1] == 1 and g0[0, 3] == 3 and g0[0, 4] == L + 1  # distance 4 > L: far
    assert t[1, 1, 3] == L + 2 and t[1, 3, 3] == 0  # isolated node: unreachable, self 0
    # edge ids: self 1, no edge 0, bond type b → 3 + b
    assert e[0, 1, 1] == 1 and e[0, 1, 3] == 0 and e[0, 1, 2] == 3 + 1 and e[0, 2, 3] == 3 + 2


def test_attention_maps_shape_and_rows():
    model = _model()
    batch = Batch.from_data_list(_graphs())
    maps, mask = model.attention_maps(batch)
    assert len(maps) == 2 and mask.tolist()[1] == [True] * 3 + [False] * 4
    for a in maps:
        assert a.shape == (3, 7, 7)
        assert (a[1, 3:] == 0).all() and (a[1, :, 3:] == 0).all()
        row = a.sum(-1)[mask]
        assert (row > 0).all() and (row < 1 + 1e-9).all()  # the virtual node's share dropped


def test_share_encodings_option():
    shared, per_layer = _model(), _model(share_encodings=False)
    assert len(shared.encodings) == 1 and len(per_layer.encodings) == 2
    diff = count_parameters(per_layer) - count_parameters(shared)
    assert diff == 3 * (3 + 4 + 3 + 4) * 16  # one more (q, k, v) × (T_ψ + T_e) × d


def test_model_errors():
    model = _model()
    g = _graphs()[0]
    bare = Batch.from_data_list([Data(x=g.x, edge_index=g.edge_index, edge_attr=g.edge_attr,
                                      num_nodes=5)])
    with pytest.raises(ValueError, match="encodings.spd"):
        model(bare)
    with pytest.raises(ValueError, match="max_distance"):
        _model(max_distance=2)(Batch.from_data_list(_graphs()))
    with pytest.raises(ValueError, match="edge type"):
        _model(num_edge_types=2)(Batch.from_data_list(_graphs()))
    with pytest.raises(DenseBudgetError, match="memory budget"):
        _model(memory_budget_gb=1e-6)(Batch.from_data_list(_graphs()))
    with pytest.raises(ValueError, match="continuous"):
        GRPE(16, 2, 4, 1, num_node_types=3, num_edge_features=2, num_edge_types=None)
    with pytest.raises(ValueError, match="level"):
        GRPE(16, 2, 4, 1, level="edge", num_node_types=3)


def test_reset_parameters_reinitializes():
    model = _model()
    before = {n: p.clone() for n, p in model.named_parameters()}
    torch.manual_seed(123)
    model.reset_parameters()
    for n, p in model.named_parameters():  # LayerNorms go back to the same ones / zeros
        assert torch.equal(before[n], p) == ("norm" in n), n


# ----------------------------------------------------------------------------- configs, training
def test_configs_parameter_budgets():
    from graph_transformers.data.registry import get_spec
    from graph_transformers.training.config import load_config
    from graph_transformers.training.build import check_param_budget, make_model
    counts = {}
    for name in ("grpe_tiny", "grpe_small"):
        cfg = load_config(f"configs/zinc/{name}.yaml")
        model = make_model(cfg, get_spec("zinc"))
        counts[name] = count_parameters(model)
        check_param_budget(counts[name], cfg.param_budget)
        assert model.relations.max_distance == cfg.encodings.spd.max_distance == 5
    assert counts == {"grpe_tiny": 105_985, "grpe_small": 476_801}


def test_config_requires_spd_encoding():
    from graph_transformers.training.config import ConfigError, build_config
    with pytest.raises(ConfigError, match="encodings.spd"):
        build_config({"model": {"name": "grpe"}, "data": {"name": "zinc"}})


def test_linear_schedule():
    import lightning as L
    from graph_transformers.data.registry import get_spec
    from graph_transformers.training.config import OptimConfig
    from graph_transformers.training.module import GraphTaskModule
    optim = OptimConfig(optimizer="adamw", lr=2e-4,
                        scheduler={"name": "linear", "warmup_epochs": 1, "end_lr": 1e-9})
    module = GraphTaskModule(torch.nn.Linear(2, 1), get_spec("zinc"), optim)

    class _Trainer:
        estimated_stepping_batches = 100
        max_epochs = 10
    module._trainer = _Trainer()
    conf = module.configure_optimizers()
    opt, sched = conf["optimizer"], conf["lr_scheduler"]["scheduler"]
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == pytest.approx(2e-5) and lrs[9] == pytest.approx(2e-4)
    assert lrs[55] == pytest.approx(2e-4 + (1e-9 - 2e-4) * 45 / 90)
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-9)
    assert L is not None


def test_zinc_training_smoke(data_dir, tmp_path):
    from graph_transformers.data.registry import build_pre_transform, get_spec
    from graph_transformers.training.config import load_config
    from graph_transformers.training.build import make_model
    from torch_geometric.loader import DataLoader
    cfg = load_config("configs/zinc/grpe_tiny.yaml",
                      ["model.dropout=0.0", "model.attn_dropout=0.0",
                       "model.input_noise=0.0"])
    spec = get_spec("zinc")
    val = spec.load(tmp_path, "val", pre_transform=build_pre_transform(cfg.encodings),
                    source="generated", data_dir=str(data_dir))
    assert val[0].spd.numel() == val[0].num_nodes ** 2
    torch.manual_seed(0)
    model = make_model(cfg, spec)
    batch = next(iter(DataLoader(val, batch_size=64)))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = []
    for _ in range(25):
        b = batch
        loss = (model(b).squeeze(-1) - b.y).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert sum(losses[-3:]) < 0.8 * sum(losses[:3])


def test_node_task_without_edge_types():
    """PATTERN / CLUSTER style: no edge features, edges count by presence (4 edge ids)."""
    model = _model(level="node", num_edge_types=None, use_edge_features=False)
    assert model.relations.num_edge == 4
    batch = Batch.from_data_list(_graphs())
    out = model(batch)
    assert out.shape == (15, 2)
    rel = model.relations(batch)
    assert set(rel.edge.unique().tolist()) == {0, 1, 2, 3}
