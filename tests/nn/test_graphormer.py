"""Graphormer-style attention biases (Ying et al. 2021): the layer against the equations, the
bias terms, equivariance, padding independence and a training smoke."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data

from graph_transformers.encodings import AddShortestPaths
from graph_transformers.models import Graphormer, count_parameters
from graph_transformers.nn import GraphormerLayer


def naive_layer(layer: GraphormerLayer, x, bias):
    """Eqs. 6-8 per graph and head, float64."""
    B, N, d = x.shape
    H = layer.num_heads
    dk = d // H
    out = torch.empty_like(x)
    for g in range(B):
        h = layer.attn_norm(x[g])
        qkv = h @ layer.qkv.weight.T + layer.qkv.bias
        heads = []
        for i in range(H):
            q = qkv[:, i * dk:(i + 1) * dk]
            k = qkv[:, d + i * dk:d + (i + 1) * dk]
            v = qkv[:, 2 * d + i * dk:2 * d + (i + 1) * dk]
            a = torch.softmax(q @ k.T / dk ** 0.5 + bias[g, i], -1)
            heads.append(a @ v)
        y = x[g] + layer.out(torch.cat(heads, -1))
        out[g] = y + layer.ffn(layer.ffn_norm(y))
    return out


def test_layer_matches_naive():
    torch.manual_seed(0)
    layer = GraphormerLayer(16, 4).double().eval()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    bias = torch.randn(2, 4, 6, 6, dtype=torch.float64)
    bias[1, :, :, 4:] = float("-inf")
    ref = naive_layer(layer, x, bias)
    torch.testing.assert_close(layer.forward_dense(x, bias).x, ref)
    out, w = layer.forward_dense(x, bias, return_attention_weights=True)
    torch.testing.assert_close(out, ref)
    assert (w[1, :, :, 4:] == 0).all()
    with pytest.raises(ValueError, match="bias"):
        layer.forward_dense(x, bias[:, :2])


def _graph(n, edges, types, x, L=3):
    ei = torch.tensor(edges, dtype=torch.long).T
    ei = torch.cat([ei, ei.flip(0)], 1)
    return AddShortestPaths(L)(Data(x=torch.tensor(x), edge_index=ei,
                                    edge_attr=torch.tensor(types + types), y=torch.zeros(1),
                                    num_nodes=n))


def _graphs():
    return [_graph(5, [(0, 1), (1, 2), (2, 3), (3, 4)], [1, 2, 1, 3], [0, 1, 2, 1, 0]),
            _graph(3, [(0, 1)], [2], [2, 2, 1]),
            _graph(6, [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5)], [1] * 5, [0, 0, 1, 1, 2, 2])]


def _model(**kw):
    torch.manual_seed(0)
    args = dict(hidden_dim=16, num_layers=2, num_heads=4, out_dim=2, num_node_types=3,
                num_edge_types=4, max_distance=3, dropout=0.0, attn_dropout=0.0)
    args.update(kw)
    model = Graphormer(**args).double().eval()
    with torch.no_grad():  # non-zero biases (they start at zero)
        for emb in (model.spatial_bias, model.edge_bias):
            if emb is not None:
                emb.weight.normal_()
    return model


def test_padding_batch_and_group_independence():
    model = _model()
    graphs = _graphs()
    out = model(Batch.from_data_list(graphs))
    for i, g in enumerate(graphs):
        torch.testing.assert_close(model(Batch.from_data_list([g]))[0], out[i])
    model.size_groups = 1
    torch.testing.assert_close(model(Batch.from_data_list(graphs)), out)


def test_permutation():
    g = _graphs()[0]
    perm = torch.tensor([2, 4, 0, 3, 1])
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(5)
    gp = AddShortestPaths(3)(Data(x=g.x[perm], edge_index=inv[g.edge_index],
                                  edge_attr=g.edge_attr, num_nodes=5))
    model = _model()
    torch.testing.assert_close(model(Batch.from_data_list([gp])),
                               model(Batch.from_data_list([g])))
    node = _model(level="node")
    torch.testing.assert_close(node(Batch.from_data_list([gp])),
                               node(Batch.from_data_list([g]))[perm])


@pytest.mark.parametrize("switch", ["spatial_bias", "edge_bias", "degree_encoding"])
def test_each_encoding_matters(switch):
    batch = Batch.from_data_list(_graphs())
    full = _model()
    off = _model(**{switch: False})
    state = {k: v for k, v in full.state_dict().items() if k in off.state_dict()}
    off.load_state_dict(state)
    assert (full(batch) - off(batch)).abs().max() > 1e-4
    assert count_parameters(off) < count_parameters(full)


def test_attention_maps():
    model = _model()
    maps, mask = model.attention_maps(Batch.from_data_list(_graphs()))
    assert len(maps) == 2 and maps[0].shape == (3, 6, 6)
    assert (maps[0][1, 3:] == 0).all() and (maps[0][1, :, 3:] == 0).all()
    assert mask.sum().item() == 14


def test_errors_and_config():
    from graph_transformers.data.registry import get_spec
    from graph_transformers.training.config import load_config
    from graph_transformers.training.build import check_param_budget, make_model
    with pytest.raises(ValueError, match="encodings.spd"):
        _model()(Batch.from_data_list([Data(x=torch.zeros(2, dtype=torch.long),
                                            edge_index=torch.tensor([[0], [1]]), num_nodes=2)]))
    cfg = load_config("configs/zinc/graphormer_small.yaml")
    model = make_model(cfg, get_spec("zinc"))
    check_param_budget(count_parameters(model), cfg.param_budget)
    assert count_parameters(model) == 478_289


def test_training_smoke():
    torch.manual_seed(0)
    model = Graphormer(16, 2, 4, 1, num_node_types=3, num_edge_types=4, max_distance=3,
                       dropout=0.0, attn_dropout=0.0)
    graphs = _graphs() * 4
    for i, g in enumerate(graphs):
        g.y = torch.tensor([float(g.num_nodes) + 0.1 * i])
    batch = Batch.from_data_list(graphs)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = (model(batch).squeeze(-1) - batch.y).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]
