"""GRIT (Ma et al. 2023): the layer against a naive per-pair implementation of its equations
(§3.2-3.3 as the official code computes them), the signed square root and its gradient,
permutation equivariance, batching independence, the pairs computed per batch against the cached
ones, the model's forward / backward, its parameter count against the official model's, and a
one-epoch run through the config."""
from __future__ import annotations

import math

import pytest
import torch
from torch_geometric.data import Batch, Data

from graph_transformers.encodings import AddRRWP
from graph_transformers.models import GRIT, count_parameters
from graph_transformers.models.grit import grit_pairs
from graph_transformers.models.utils import full_graph_edge_index
from graph_transformers.nn import GRITLayer
from graph_transformers.nn.grit import signed_sqrt

D, H, K, TYPES = 16, 4, 5, 3


def _graph(n: int, gen: torch.Generator, p: float = 0.4, isolated: bool = False) -> Data:
    """A random undirected graph on a path backbone (connected), node types and bond types;
    with ``isolated`` the last node has no edge."""
    m = n - 1 if isolated else n
    pairs = {(i, i + 1) for i in range(m - 1)}
    pairs |= {tuple(e) for e in torch.triu(torch.rand(m, m, generator=gen) < p, 2)
              .nonzero().tolist()}
    ei = torch.tensor(sorted(pairs), dtype=torch.long).t().reshape(2, -1)
    ei = torch.cat([ei, ei.flip(0)], 1)
    types = torch.randint(0, TYPES, (ei.size(1) // 2,), generator=gen)
    return Data(x=torch.randint(0, 7, (n,), generator=gen), edge_index=ei,
                edge_attr=torch.cat([types, types]), y=torch.randn(1, generator=gen),
                num_nodes=n)


def _batch(sizes=(5, 7, 4), seed=0, isolated=False) -> Batch:
    gen = torch.Generator().manual_seed(seed)
    rrwp = AddRRWP(K)
    return Batch.from_data_list([rrwp(_graph(n, gen, isolated=isolated and i == 0))
                                 for i, n in enumerate(sizes)])


def _nontrivial_norms(module: torch.nn.Module, seed: int) -> None:
    """Random affine parameters and running statistics for every BatchNorm (eval mode then
    normalizes with them; many tracked batches: no start-up bias correction)."""
    gen = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm1d):
            with torch.no_grad():
                m.weight.copy_(1 + 0.3 * torch.randn(m.num_features, generator=gen))
                m.bias.copy_(0.3 * torch.randn(m.num_features, generator=gen))
                m.running_mean.copy_(0.3 * torch.randn(m.num_features, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.num_features, generator=gen))
                m.num_batches_tracked.fill_(10_000)


# ----------------------------------------------------------------------------- signed sqrt
def test_signed_sqrt_and_its_gradient_match_the_relu_form():
    s = torch.tensor([-4.0, -0.25, 0.0, 1e-6, 2.25, 9.0], dtype=torch.double, requires_grad=True)
    ref_s = s.detach().clone().requires_grad_(True)
    out = signed_sqrt(s)
    ref = torch.sqrt(torch.relu(ref_s)) - torch.sqrt(torch.relu(-ref_s))  # the paper's ρ
    torch.testing.assert_close(out, ref)
    out.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(s.grad, ref_s.grad)
    assert s.grad[2] == 0.0 and torch.isfinite(s.grad).all()
    away = torch.tensor([-3.0, -0.7, 0.4, 2.0], dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(signed_sqrt, (away,))


# ----------------------------------------------------------------------------- naive reference
def naive_grit_layer(layer: GRITLayer, x, pairs, e, degree):
    """The layer's equations pair by pair (python loops, float64), from its weights: for each
    query ``i`` and head ``h`` over the keys ``j`` with a pair ``j → i`` in ``pairs``."""
    n, dk = x.size(0), layer.head_dim
    Wq, bq = layer.q.weight, layer.q.bias
    Wk, Wv = layer.k.weight, layer.v.weight
    We, be = layer.e.weight, layer.e.bias
    keys = {i: [] for i in range(n)}
    for row, (j, i) in enumerate(pairs.t().tolist()):
        keys[i].append((j, row))
    e_hat = torch.zeros(pairs.size(1), layer.hidden_dim, dtype=x.dtype)
    x_hat = torch.zeros(n, layer.hidden_dim, dtype=x.dtype)
    for i in range(n):
        for h in range(layer.num_heads):
            sl = slice(h * dk, (h + 1) * dk)
            w_sl = slice(2 * h * dk, 2 * h * dk + dk)
            b_sl = slice(2 * h * dk + dk, 2 * (h + 1) * dk)
            scores, values = [], []
            for j, row in keys[i]:
                qk = (Wq[sl] @ x[i] + bq[sl]) + (Wk[sl] @ x[j])
                ew = We[w_sl] @ e[row] + be[w_sl]
                eb = We[b_sl] @ e[row] + be[b_sl]
                s = qk * ew
                rho = torch.sign(s) * torch.sqrt(torch.abs(s))
                eh = torch.relu(rho + eb)                                  # ê_ij, head h
                e_hat[row, sl] = eh
                score = float(layer.attn_weight[h] @ eh)                    # W_A ê_ij
                scores.append(max(-layer.clamp, min(layer.clamp, score)))
                values.append(Wv[sl] @ x[j] + layer.value_edge[h].t() @ eh)  # W_V x_j + W_Ev ê
            m = max(scores)
            ex = [math.exp(s - m) for s in scores]
            for a, v in zip(ex, values):
                x_hat[i, sl] += a / sum(ex) * v
    log_deg = torch.log(1 + degree.double()).unsqueeze(-1)
    x_sc = x_hat * layer.degree_coef[0] + log_deg * x_hat * layer.degree_coef[1]
    h1 = layer.norm1_h(x + layer.out_h(x_sc))
    h2 = layer.norm2_h(h1 + layer.ffn2(torch.relu(layer.ffn1(h1))))
    e_new = layer.norm1_e(e + layer.out_e(e_hat)) if layer.edge_output else e
    return h2, e_new


@pytest.mark.parametrize("full", [True, False], ids=["all_pairs", "sparse_pairs"])
def test_layer_matches_the_naive_equations(full):
    batch = _batch()
    torch.manual_seed(1)
    layer = GRITLayer(D, H).double()
    _nontrivial_norms(layer, 2)
    layer.eval()
    pairs = (full_graph_edge_index(batch.batch, self_loops=True) if full
             else torch.cat([batch.edge_index, torch.arange(batch.num_nodes).repeat(2, 1)], 1))
    x = torch.randn(batch.num_nodes, D, dtype=torch.double)
    e = torch.randn(pairs.size(1), D, dtype=torch.double)
    degree = grit_pairs(batch.edge_index, batch.batch, torch.diff(batch.ptr)).degree
    with torch.no_grad():
        out, (index, weights) = layer(x, pairs, e, batch.batch, degree=degree,
                                      return_attention_weights=True)
        ref_x, ref_e = naive_grit_layer(layer, x, pairs, e, degree)
    assert index is pairs
    torch.testing.assert_close(out.x, ref_x, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(out.edge_attr, ref_e, rtol=1e-10, atol=1e-10)
    # the weights are a softmax over each query's pairs
    sums = torch.zeros(batch.num_nodes, H, dtype=torch.double).index_add_(0, pairs[1], weights)
    torch.testing.assert_close(sums, torch.ones_like(sums))
    # the scores are clamped: no weight falls below exp(-2c) / n of its row
    assert weights.min() > 0


def test_layer_options_and_errors():
    torch.manual_seed(0)
    x, pairs = torch.randn(3, D), full_graph_edge_index(torch.zeros(3, dtype=torch.long), True)
    e, deg = torch.randn(9, D), torch.tensor([1, 2, 1])
    last = GRITLayer(D, H, edge_output=False).eval()
    assert not hasattr(last, "out_e") and torch.equal(last(x, pairs, e, degree=deg).edge_attr, e)
    frozen = GRITLayer(D, H, edge_update=False).eval()
    assert torch.equal(frozen(x, pairs, e, degree=deg).edge_attr, e)
    plain = GRITLayer(D, H, deg_scaler=False, clamp=None, norm="layer").eval()
    assert plain(x, pairs, e).x.shape == (3, D)            # no degree needed, no clamp
    layer = GRITLayer(D, H)
    with pytest.raises(ValueError, match=r"needs degree=\[num_nodes=3\]"):
        layer(x, pairs, e)
    with pytest.raises(ValueError, match=r"needs the pair representations edge_attr"):
        layer(x, pairs, degree=deg)
    with pytest.raises(ValueError, match=r"x must be \[num_nodes, 16\]"):
        layer(x[None], pairs, e, degree=deg)
    with pytest.raises(ValueError, match="not divisible"):
        GRITLayer(18, 4)
    with pytest.raises(ValueError, match="attn_dropout must be in"):
        GRITLayer(D, H, attn_dropout=1.0)


# ----------------------------------------------------------------------------- the model
def _model(**kw) -> GRIT:
    torch.manual_seed(0)
    args = dict(hidden_dim=D, num_layers=2, num_heads=H, out_dim=3, level="node",
                num_node_types=7, num_edge_types=TYPES, walk_length=K)
    args.update(kw)
    model = GRIT(**args).double()
    _nontrivial_norms(model, 3)
    return model.eval()


def test_model_inputs_rrwp_and_edge_embeddings():
    """e_ij = W P_ij + edge embedding where an edge j → i exists; h_i = emb(x_i) + W P_ii."""
    batch = _batch()
    model = _model()
    h, index, e, degree, _ = model._inputs(batch)
    pair = batch.rrwp_pair.double()
    expect = model.rrwp_pair(pair)
    for k, (j, i) in enumerate(batch.edge_index.t().tolist()):
        row = ((index[0] == j) & (index[1] == i)).nonzero().view(-1)
        expect[row] += model.edge_encoder(batch.edge_attr[k:k + 1])
    torch.testing.assert_close(e, expect)
    torch.testing.assert_close(h, model.node_encoder(batch.x)
                               + model.rrwp_node(batch.rrwp.double()))
    assert torch.equal(degree, torch.bincount(batch.edge_index[0], minlength=batch.num_nodes)
                       .double())


def _permute(data: Data, perm: torch.Tensor) -> Data:
    """The graph with node ``u`` renamed ``perm[u]`` (features moved with it), RRWP recomputed."""
    inv = torch.argsort(perm)
    out = Data(x=data.x[inv], edge_index=perm[data.edge_index], edge_attr=data.edge_attr,
               y=data.y, num_nodes=data.num_nodes)
    return AddRRWP(K)(out)


def test_permutation_equivariance_and_invariance():
    gen = torch.Generator().manual_seed(5)
    g = AddRRWP(K)(_graph(7, gen))
    perm = torch.randperm(7, generator=gen)
    node = _model()
    torch.testing.assert_close(node(_permute(g, perm))[perm], node(g), rtol=1e-10, atol=1e-10)
    graph = _model(level="graph", readout="sum")
    torch.testing.assert_close(graph(_permute(g, perm)), graph(g), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("full_attention", [True, False])
def test_a_graph_alone_or_in_a_batch_gives_the_same_output(full_attention):
    gen = torch.Generator().manual_seed(6)
    graphs = [AddRRWP(K)(_graph(n, gen, isolated=n == 6)) for n in (5, 8, 6)]
    model = _model(full_attention=full_attention)
    together = model(Batch.from_data_list(graphs))
    start = 0
    for g in graphs:
        alone = model(Batch.from_data_list([g]))
        torch.testing.assert_close(together[start:start + g.num_nodes], alone,
                                   rtol=1e-10, atol=1e-10)
        start += g.num_nodes
    single = model(graphs[1])                                      # a Data, no batch vector
    torch.testing.assert_close(single, together[5:13], rtol=1e-10, atol=1e-10)


def test_sparse_attention_equals_full_where_every_pair_has_a_walk():
    """full_attention=False keeps the pairs with a walk of < K steps (and the edges): on a
    connected graph of diameter < K that is every pair; across components it is not."""
    gen = torch.Generator().manual_seed(7)
    connected = Batch.from_data_list([AddRRWP(K)(_graph(5, gen, p=0.9))])
    full, sparse = _model(), _model(full_attention=False)
    torch.testing.assert_close(sparse(connected), full(connected))
    split = _batch(isolated=True)  # its first graph has an isolated node
    assert not torch.allclose(sparse(split)[:5], full(split)[:5])


@pytest.mark.parametrize("full_attention", [True, False])
def test_pairs_computed_per_batch_equal_the_cached_ones(full_attention):
    """``encodings.rrwp.cache_pairs: false``: a batch without ``rrwp_pair`` gets its pairs
    computed in the forward; loss and gradients are the cached batch's (training mode: batch
    statistics over the pairs)."""
    cached = _batch(sizes=(5, 9, 4, 6), isolated=True)
    bare = cached.clone()
    del bare.rrwp_pair
    model = _model(full_attention=full_attention, attn_dropout=0.0).train()
    grads = []
    for b in (cached, bare):
        model.zero_grad()
        out = model(b)
        out.square().sum().backward()
        grads.append((out.detach(), [p.grad.clone() for p in model.parameters()]))
    torch.testing.assert_close(grads[1][0], grads[0][0], rtol=1e-10, atol=1e-10)
    for got, want in zip(grads[1][1], grads[0][1]):
        torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-10)


def test_forward_backward_every_parameter_learns():
    batch = _batch(isolated=True)
    for kw in (dict(level="graph", readout="mean"), dict(use_edge_features=False, head="graphgym"),
               dict(level="edge", dropout=0.1, attn_dropout=0.2)):
        model = _model(**kw).float().train()
        b = batch.clone()
        out = model(b)
        rows = {"graph": 3, "node": b.num_nodes, "edge": b.num_edges}[kw.get("level", "node")]
        assert out.shape == (rows, 3)
        out.square().sum().backward()
        missing = [n for n, p in model.named_parameters() if p.grad is None]
        assert not missing, missing
        assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_attention_maps_rows_sum_to_one():
    batch = _batch()
    maps, mask = _model().attention_maps(batch)
    assert len(maps) == 2 and maps[0].shape == (3, 7, 7)
    sums = maps[1].sum(-1)
    torch.testing.assert_close(sums[mask], torch.ones(int(mask.sum()), dtype=sums.dtype))


def test_model_errors():
    batch = _batch()
    model = _model()
    plain = Batch.from_data_list([Data(x=g.x, edge_index=g.edge_index, edge_attr=g.edge_attr)
                                  for g in batch.to_data_list()])
    with pytest.raises(ValueError, match="add encodings.rrwp to the config"):
        model(plain)
    with pytest.raises(ValueError, match="another encodings.rrwp.walk_length"):
        _model(walk_length=K + 1)(batch)
    from graph_transformers.core.dense import DenseBudgetError
    with pytest.raises(DenseBudgetError, match="lower data.batch_size"):
        _model(memory_budget_gb=1e-4)(batch)
    with pytest.raises(ValueError, match="head must be"):
        GRIT(D, 1, H, 1, num_node_types=3, head="wide")


def test_parameter_counts_against_the_official_models():
    """The configs' models against the official ones, counted from the official code's
    definitions (``grit/layer/grit_layer.py``, the ``rrwp_linear`` / TypeDict encoders, the
    san_graph and GraphGym heads): the official last layer carries an O_e and a pair BatchNorm
    whose output nothing reads (ours has none), and its encoders' vocabularies differ."""
    from graph_transformers.data.registry import get_spec
    from graph_transformers.training.config import load_config
    from graph_transformers.training.build import make_model

    def official_layer(d, heads):
        dk = d // heads
        return (d * d + d) + 2 * d * d + (2 * d * d + 2 * d) + dk * heads + heads * dk * dk \
            + 2 * (d * d + d) + 2 * d + 3 * 2 * d + (2 * d * d + 2 * d) + (2 * d * d + d)

    def count(path):
        cfg = load_config(path)
        return count_parameters(make_model(cfg, get_spec(cfg.data.name)))

    # ZINC: 21 atom types (TypeDictNode), 4 bond types, RRWP K = 21, san_graph 64-32-16-1
    official = 10 * official_layer(64, 8) + 21 * 64 + 4 * 64 + 2 * 21 * 64 + (64 * 32 + 32) \
        + (32 * 16 + 16) + (16 + 1)
    assert official == 473_473
    ours = count("configs/zinc/grit.yaml")
    assert ours == 469_633 == official - (64 * 64 + 64 + 2 * 64) + (28 - 21) * 64
    # PATTERN: Linear(3, 64) node encoder, DummyEdge, GraphGym head 64-64-64-2
    official = 10 * official_layer(64, 8) + (3 * 64 + 64) + 64 + 2 * 21 * 64 \
        + 2 * (64 * 64 + 64) + (64 * 2 + 2)
    assert count("configs/pattern/grit.yaml") == official - (64 * 64 + 64 + 2 * 64) - 64
    # CLUSTER: hidden 48, 16 layers, K = 32, Linear(7, 48), head 48-48-48-6
    official = 16 * official_layer(48, 8) + (7 * 48 + 48) + 48 + 2 * 32 * 48 \
        + 2 * (48 * 48 + 48) + (48 * 6 + 6)
    assert count("configs/cluster/grit.yaml") == official - (48 * 48 + 48 + 2 * 48) - 48


@pytest.mark.parametrize("cache_pairs", [True, False])
def test_one_epoch_through_the_config(tmp_path, cache_pairs):
    """The config wiring: ``model: grit`` with ``encodings.rrwp`` trains one epoch on in-memory
    graphs (the RRWP pre-transform computed and its walk length passed to the model), with the
    pairs cached or computed per batch."""
    import graph_transformers as gtr
    gen = torch.Generator().manual_seed(8)
    graphs = []
    for k in range(24):
        g = _graph(4 + k % 4, gen)
        graphs.append(Data(x=torch.randn(g.num_nodes, 3, generator=gen), edge_index=g.edge_index,
                           y=torch.tensor([k % 2])))
    config = {"model": {"name": "grit", "hidden_dim": 8, "num_layers": 1, "num_heads": 2,
                        "use_edge_features": False},
              "data": {"batch_size": 8},
              "encodings": {"rrwp": {"walk_length": 4, "cache_pairs": cache_pairs}},
              "trainer": {"max_epochs": 1, "enable_progress_bar": False}}
    metrics = gtr.train(config, dataset=graphs, out_dir=tmp_path / "run")
    assert metrics["epochs"] == 1 and math.isfinite(metrics["test"]["loss"])


@pytest.mark.slow
@pytest.mark.parametrize("deterministic", [False, True], ids=["default", "deterministic"])
def test_compiled_model_matches_eager(deterministic):
    """``model.compile: true`` (``torch.compile(dynamic=True)``, a graph break at the host read
    of the graph sizes) computes the eager loss and gradients in training mode (batch statistics;
    no dropout, whose masks differ), on two batches of different shapes; its checkpoint keys are
    unchanged. Also with deterministic algorithms (``trainer.deterministic: true``, the
    comparison's setting: inductor keeps ATen's scatter kernels). In float64: in float32 the
    reordered sums of the fused kernels move the pair path's gradients by ~1e-3 relative (the
    signed square root's conditioning, docs/grit.md), in float64 by ~1e-12."""
    import copy

    from graph_transformers.training.device import compile_model
    eager = _model(level="graph", attn_dropout=0.0).train()       # float64
    compiled = compile_model(copy.deepcopy(eager))
    assert compiled.state_dict().keys() == eager.state_dict().keys()
    prior = torch.are_deterministic_algorithms_enabled()
    for b in (_batch(), _batch(sizes=(6, 3, 8, 5), seed=1)):
        losses = []
        for m in (eager, compiled):
            m.zero_grad()
            torch.use_deterministic_algorithms(deterministic)
            try:
                loss = m(b.clone()).square().mean()
                loss.backward()
            finally:
                torch.use_deterministic_algorithms(prior)
            losses.append(loss)
        torch.testing.assert_close(losses[1], losses[0], rtol=1e-10, atol=1e-12)
        for (n, p), q in zip(eager.named_parameters(), compiled.parameters()):
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-8, atol=1e-10, msg=n)
