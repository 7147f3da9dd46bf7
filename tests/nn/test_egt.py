"""EGT: the layer against a naive implementation of eqs. 1-7 (and appendix C-D variants), the
network's padding independence and permutation equivariance, virtual nodes, SVD encodings, the
distance objective, and training on real ZINC."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Batch, Data

from graph_transformers.core.dense import DenseBatch
from graph_transformers.encodings.svd import random_svd_sign_flip, svd_pe
from graph_transformers.models.egt import EGT, ModelOutput, distance_labels
from graph_transformers.nn.egt import EGTLayer
from graph_transformers.training.config import ConfigError, build_config

VARIANT_FLAGS = {
    "egt": dict(edge_update=True, gated=True),
    "simple": dict(edge_update=False, gated=True),
    "constrained": dict(edge_update=True, gated=True),
    "ungated": dict(edge_update=True, gated=False),
}


# ----------------------------------------------------------------------------- naive reference
def _ln(x, m):
    return F.layer_norm(x, (x.size(-1),), m.weight, m.bias, m.eps)


def _ffn(x, f):
    return f.lin2(F.elu(f.lin1(x)))


def naive_egt_layer(layer: EGTLayer, h, e, allowed=None, num_virtual=0):
    """EGT eqs. 1-7 for ONE graph, one head / node pair at a time. h [n, d_h], e [n, n, d_e];
    allowed [n, n] bool (EGT-Constrained's N(i) ∪ {i}) or None (all pairs); with
    ``layer.scale_degree`` the aggregate of query i is scaled by log(1 + Σ_j σ(G_ij)) (rows of
    the first ``num_virtual`` nodes unscaled)."""
    n, dh = h.shape
    H, dk = layer.num_heads, layer.head_dim
    hh = _ln(h, layer.norm_h)
    eh = _ln(e, layer.norm_e)  # EGT-Simple too: LN_ℓ(e⁰), as the official code
    W, b = layer.qkv.weight, layer.qkv.bias
    Q, K, V = (hh @ W[s * dh:(s + 1) * dh].T + b[s * dh:(s + 1) * dh] for s in range(3))
    Wg, bg = layer.eg.weight, layer.eg.bias
    heads = torch.zeros(n, dh, dtype=h.dtype)
    Hhat = torch.zeros(n, n, H, dtype=h.dtype)
    for k in range(H):
        sl = slice(k * dk, (k + 1) * dk)
        for i in range(n):
            for j in range(n):
                a_hat = (Q[i, sl] @ K[j, sl]) / math.sqrt(dk)                      # eq. 3
                Hhat[i, j, k] = a_hat.clamp(-layer.clamp, layer.clamp) + eh[i, j] @ Wg[k] + bg[k]
            cols = [j for j in range(n) if allowed is None or allowed[i, j]]
            z = torch.stack([Hhat[i, j, k] for j in cols])
            soft = torch.exp(z - z.max()) / torch.exp(z - z.max()).sum()            # eq. 2/4
            degree = 0.0
            for c, j in enumerate(cols):
                w = soft[c]
                if layer.gated:
                    gate = torch.sigmoid(eh[i, j] @ Wg[H + k] + bg[H + k])
                    degree = degree + gate
                    w = w * gate                                                    # eq. 4
                heads[i, sl] += w * V[j, sl]                                        # eq. 1
            if layer.scale_degree and i >= num_virtual:
                heads[i, sl] *= torch.log(1 + degree)
    h1 = h + layer.out_h(heads)                                                     # eq. 6
    h2 = h1 + _ffn(_ln(h1, layer.ffn_norm_h), layer.ffn_h)
    if not layer.edge_update:
        return h2, e
    e1 = e + layer.out_e(Hhat)                                                      # eq. 7
    e2 = e1 + _ffn(_ln(e1, layer.ffn_norm_e), layer.ffn_e)
    return h2, e2


def _random_adj(n, p, gen):
    a = torch.rand(n, n, generator=gen) < p
    a = a | a.T
    return a | torch.eye(n, dtype=torch.bool)


@pytest.mark.parametrize("variant", sorted(VARIANT_FLAGS))
def test_layer_matches_naive_equations(variant):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    dh, de, H = 12, 6, 3
    layer = EGTLayer(dh, H, edge_dim=de, clamp=1.0, **VARIANT_FLAGS[variant]).double()
    for p in layer.parameters():  # non-trivial LayerNorm affine parameters too
        torch.nn.init.normal_(p, std=0.7)
    sizes = [5, 3]
    B, N = len(sizes), max(sizes)
    h = torch.randn(B, N, dh, dtype=torch.double)
    e = torch.randn(B, N, N, de, dtype=torch.double)
    mask = torch.arange(N).unsqueeze(0) < torch.tensor(sizes).unsqueeze(1)
    allowed = torch.zeros(B, N, N, dtype=torch.bool)
    for g, n in enumerate(sizes):
        allowed[g, :n, :n] = _random_adj(n, 0.4, gen)
    attn_mask = allowed | torch.eye(N, dtype=torch.bool) if variant == "constrained" else None
    out_h, out_e, _ = layer.forward_dense(h, e, mask, attn_mask)
    for g, n in enumerate(sizes):
        ref_h, ref_e = naive_egt_layer(layer, h[g, :n], e[g, :n, :n],
                                       allowed[g, :n, :n] if attn_mask is not None else None)
        torch.testing.assert_close(out_h[g, :n], ref_h, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(out_e[g, :n, :n], ref_e, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("num_virtual", [0, 2])
def test_degree_scalers_match_naive(num_virtual):
    torch.manual_seed(1)
    layer = EGTLayer(8, 2, edge_dim=4, scale_degree=True).double()
    sizes = [6, 4]
    h = torch.randn(2, 6, 8, dtype=torch.double)
    e = torch.randn(2, 6, 6, 4, dtype=torch.double)
    mask = torch.arange(6).unsqueeze(0) < torch.tensor(sizes).unsqueeze(1)
    out_h, out_e, _ = layer.forward_dense(h, e, mask, num_virtual=num_virtual)
    for g, n in enumerate(sizes):
        ref_h, ref_e = naive_egt_layer(layer, h[g, :n], e[g, :n, :n], num_virtual=num_virtual)
        torch.testing.assert_close(out_h[g, :n], ref_h)
        torch.testing.assert_close(out_e[g, :n, :n], ref_e)
    with pytest.raises(ValueError, match="gated"):
        EGTLayer(8, 2, edge_dim=4, gated=False, scale_degree=True)


def test_scores_are_clipped_before_the_bias():
    torch.manual_seed(0)
    layer = EGTLayer(8, 2, edge_dim=4, clamp=5.0).double()
    h = 100 * torch.randn(1, 4, 8, dtype=torch.double)  # huge scores: clipping matters
    e = torch.randn(1, 4, 4, 4, dtype=torch.double)
    mask = torch.ones(1, 4, dtype=torch.bool)
    ref_h, ref_e = naive_egt_layer(layer, h[0], e[0])
    out_h, out_e, _ = layer.forward_dense(h, e, mask)
    torch.testing.assert_close(out_h[0], ref_h)
    torch.testing.assert_close(out_e[0], ref_e)


def test_layer_rejects_bad_shapes():
    layer = EGTLayer(8, 2, edge_dim=4)
    with pytest.raises(ValueError, match="divisible"):
        EGTLayer(10, 3, edge_dim=4)
    with pytest.raises(ValueError, match=r"e must have shape"):
        layer.forward_dense(torch.randn(2, 3, 8), torch.randn(2, 3, 4, 4),
                            torch.ones(2, 3, dtype=torch.bool))


# ----------------------------------------------------------------------------- network
def _graph(n, gen, num_edge_types=3, p=0.35, connected=True):
    a = torch.rand(n, n, generator=gen) < p
    a = torch.triu(a, 1)
    if connected:  # a path keeps it connected
        idx = torch.arange(n - 1)
        a[idx, idx + 1] = True
    a = a | a.T
    edge_index = a.nonzero().T.contiguous()
    und = torch.randint(0, num_edge_types, (n, n), generator=gen)
    und = torch.triu(und) + torch.triu(und, 1).T
    edge_attr = und[edge_index[0], edge_index[1]]
    x = torch.randint(0, 5, (n,), generator=gen)
    return Data(x=x, edge_index=edge_index, edge_attr=edge_attr, num_nodes=n,
                svd_pe=svd_pe(edge_index, n, 3), y=torch.randn(1))


def _model(variant="egt", level="graph", **kw):
    torch.manual_seed(0)
    args = dict(hidden_dim=16, edge_hidden_dim=8, num_layers=2, num_heads=4, out_dim=3,
                level=level, num_node_types=5, num_edge_types=3, variant=variant, pe="svd",
                pe_dim=6)
    args.update(kw)
    model = EGT(**args).double().eval()
    return model


def _out(model, data):
    out = model(data)
    return out.out if isinstance(out, ModelOutput) else out


CASES = [dict(variant="egt"), dict(variant="simple"), dict(variant="constrained"),
         dict(variant="ungated"), dict(num_virtual_nodes=2),
         dict(structure="distance", max_hops=3), dict(distance_objective=True, distance_weight=1.0),
         dict(scale_degree=True, num_virtual_nodes=1)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_padding_never_changes_a_graphs_output(case):
    gen = torch.Generator().manual_seed(3)
    small = _graph(5, gen)
    big = [_graph(n, gen) for n in (11, 8)]
    model = _model(**case)
    for g in [small] + big:
        g.svd_pe = g.svd_pe.double()
    alone = _out(model, Batch.from_data_list([small]))
    batched = _out(model, Batch.from_data_list([big[0], small, big[1]]))
    torch.testing.assert_close(batched[1], alone[0], rtol=1e-10, atol=1e-10)
    node = _model(level="node", **{k: v for k, v in case.items() if k != "num_virtual_nodes"})
    alone = _out(node, Batch.from_data_list([small]))
    batched = _out(node, Batch.from_data_list([big[0], small, big[1]]))
    torch.testing.assert_close(batched[11:16], alone, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("variant", sorted(VARIANT_FLAGS))
@pytest.mark.parametrize("task", ["node", "edge"])
def test_permutation_equivariance(variant, task):
    gen = torch.Generator().manual_seed(5)
    g = _graph(7, gen)
    g.svd_pe = g.svd_pe.double()
    perm = torch.randperm(7, generator=gen)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(7)
    pg = Data(x=g.x[perm], edge_index=inv[g.edge_index], edge_attr=g.edge_attr, num_nodes=7,
              svd_pe=g.svd_pe[perm])
    model = _model(variant, level=task)
    out, pout = _out(model, Batch.from_data_list([g])), _out(model, Batch.from_data_list([pg]))
    if task == "node":
        torch.testing.assert_close(pout, out[perm], rtol=1e-10, atol=1e-10)
    else:  # same edge list order, relabelled nodes: same outputs per edge
        torch.testing.assert_close(pout, out, rtol=1e-10, atol=1e-10)
    gm = _model(variant, level="graph")
    torch.testing.assert_close(_out(gm, Batch.from_data_list([pg])),
                               _out(gm, Batch.from_data_list([g])), rtol=1e-10, atol=1e-10)


def test_virtual_node_edge_embeddings_follow_section_3_3():
    model = _model(num_virtual_nodes=3)
    B, N, d_e = 2, 4, 8
    h = torch.randn(B, N, 16, dtype=torch.double)
    e = torch.randn(B, N, N, d_e, dtype=torch.double)
    mask = torch.ones(B, N, dtype=torch.bool)
    h2, e2, mask2, _ = model._add_virtual_nodes(h, e, mask, None)
    ve = model.virtual_e
    q = 3
    assert h2.shape == (B, q + N, 16) and e2.shape == (B, q + N, q + N, d_e)
    torch.testing.assert_close(h2[:, :q], model.virtual_h.expand(B, -1, -1))
    torch.testing.assert_close(e2[:, q:, q:], e)
    for v in range(q):
        torch.testing.assert_close(e2[:, v, q:], ve[v].expand(B, N, -1))   # e_vj = ẽ_v
        torch.testing.assert_close(e2[:, q:, v], ve[v].expand(B, N, -1))   # e_jv = ẽ_v
        for w in range(q):
            torch.testing.assert_close(e2[:, v, w], (0.5 * (ve[v] + ve[w])).expand(B, -1))
    assert mask2.all()


def test_virtual_nodes_feed_the_graph_head():
    gen = torch.Generator().manual_seed(2)
    data = Batch.from_data_list([_graph(6, gen)])
    data.svd_pe = data.svd_pe.double()
    model = _model(num_virtual_nodes=2)
    assert model.head.mlp[0].in_features == 2 * 16
    out = model(data).out
    assert out.shape == (1, 3)
    with pytest.raises(ValueError, match="virtual nodes"):
        _model(level="node", num_virtual_nodes=1)


@pytest.mark.parametrize("labels", ["official", "spd"])
def test_distance_objective_uses_hops_up_to_nu(labels):
    gen = torch.Generator().manual_seed(4)
    data = Batch.from_data_list([_graph(9, gen, p=0.0), _graph(4, gen)])  # a path of 9 nodes
    data.svd_pe = data.svd_pe.double()
    model = _model(distance_objective=True, distance_hops=2, distance_weight=0.5,
                   structure="distance", distance_labels=labels)
    assert model.structure == "adjacency"  # §3.3: forced
    out = model(data)
    assert isinstance(out, ModelOutput) and out.aux_loss.ndim == 0
    # the weighted loss equals κ × (mean over graphs of the CE summed over the graph's pairs at
    # ≤ ν hops), the official reduction, computed by hand graph by graph and pair by pair
    h, e, dense, _ = model.encode(data)
    d = dense.shortest_paths()
    valid = (d >= 0) & (d <= 2)
    per_graph = []
    for b in range(2):
        total = torch.zeros((), dtype=e.dtype)
        for i in range(d.size(1)):
            for j in range(d.size(2)):
                if valid[b, i, j]:
                    logp = torch.log_softmax(model.distance_head(e[b, i, j]), -1)
                    dist = int(d[b, i, j])
                    # official: ν + 1 − max(d, 1) (self and neighbours share class ν = 2)
                    label = dist if labels == "spd" else {0: 2, 1: 2, 2: 1}[dist]
                    total = total - logp[label]
        per_graph.append(total)
    ref = 0.5 * torch.stack(per_graph).mean()
    torch.testing.assert_close(out.aux_loss, ref)
    # regression: a mean over pairs (the old reduction) is ≈ (pairs per graph) times weaker
    pair_mean = 0.5 * F.cross_entropy(model.distance_head(e[valid]),
                                      distance_labels(d[valid], 2, labels))
    assert out.aux_loss > 10 * pair_mean
    assert int(valid[0].sum()) == 9 + 2 * 8 + 2 * 7  # path: 0, 1 and 2 hops
    with pytest.raises(ValueError, match="Simple"):
        _model("simple", distance_objective=True)


def test_official_distance_labels_follow_the_authors_formula():
    """The official code's target, Σ_{k=1..ν} clip((A + I)^k, 0, 1) with pairs at 0 ignored
    (lib/models/graph_model_base.py, add_hops), computed with matrix powers on random graphs
    (disconnected ones included), equals ``distance_labels`` of the hop distances."""
    gen = torch.Generator().manual_seed(11)
    graphs = [_graph(n, gen, p=0.2, connected=c) for n, c in ((9, True), (7, False), (5, False))]
    dense = DenseBatch.from_batch(Batch.from_data_list(graphs))
    for nu in (1, 2, 3, 5):
        ours = distance_labels(dense.distances_within(nu), nu, "official")
        a = dense.adjacency(self_loops=False).double() + torch.diag_embed(dense.mask.double())
        hop, total = a, torch.zeros_like(a)
        for _ in range(nu):
            total = total + hop.clamp(0, 1)
            hop = (hop @ a).clamp(0, 1)
        official = total.round().long()
        official = torch.where(official > 0, official, torch.full_like(official, -1))
        assert torch.equal(ours, official)
    # a path 0-1-2-3-4, ν = 3, by hand: self and neighbour share class 3; beyond ν ignored
    path = Data(edge_index=torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4], [1, 0, 2, 1, 3, 2, 4, 3]]),
                num_nodes=5)
    row0 = distance_labels(DenseBatch.from_batch(Batch.from_data_list([path]))
                           .distances_within(3), 3)[0, 0]
    assert row0.tolist() == [3, 3, 2, 1, -1]
    with pytest.raises(ValueError, match="distance labels"):
        distance_labels(row0, 3, "hops")
    with pytest.raises(ValueError, match="distance_labels"):
        _model(distance_objective=True, distance_labels="hops")


def test_heads_are_the_official_mlp_out():
    """Head and distance head as the official ``mlp_out``: ELU, hidden widths round(d_h/2),
    round(d_h/4) from the node width, whatever the input width (virtual nodes, d_e ≠ d_h)."""
    model = _model(num_virtual_nodes=3, distance_objective=True, distance_weight=0.1,
                   hidden_dim=16, edge_hidden_dim=12)
    for head, in_dim, out_dim in ((model.head, 48, 3), (model.distance_head, 12, 4)):
        linears = [m for m in head.mlp if isinstance(m, torch.nn.Linear)]
        assert [(m.in_features, m.out_features) for m in linears] == [(in_dim, 8), (8, 4),
                                                                        (4, out_dim)]
        assert sum(isinstance(m, torch.nn.ELU) for m in head.mlp) == 2
    relu = _model(head_activation="relu")
    assert sum(isinstance(m, torch.nn.ReLU) for m in relu.head.mlp) == 2
    x = torch.linspace(-3, 3, 16, dtype=torch.double)
    torch.testing.assert_close(model.head.mlp[1](x), F.elu(x))


def _masked_layer(p, gated=True):
    torch.manual_seed(0)
    return EGTLayer(8, 2, edge_dim=4, gated=gated, random_mask_prob=p).double()


def test_random_mask_drops_pairs_in_training_only():
    torch.manual_seed(2)
    sizes = [7, 4]
    h = torch.randn(2, 7, 8, dtype=torch.double)
    e = torch.randn(2, 7, 7, 4, dtype=torch.double)
    mask = torch.arange(7).unsqueeze(0) < torch.tensor(sizes).unsqueeze(1)
    plain, masked = _masked_layer(0.0), _masked_layer(0.3)
    # evaluation: no masking, the same function as p = 0
    for a, b in zip(plain.eval().forward_dense(h, e, mask, return_attention_weights=True),
                    masked.eval().forward_dense(h, e, mask, return_attention_weights=True)):
        torch.testing.assert_close(a, b)
    # training: about p of the real pairs get weight exactly 0 (softmax and gate both closed);
    # padding keys stay at 0, and a padded graph's rows are as without padding
    masked.train()
    torch.manual_seed(5)
    out = masked.forward_dense(h, e, mask, return_attention_weights=True)
    attn = out.attention                                                # [B, H, N, N]
    real = mask[:, None, :, None] & mask[:, None, None, :]
    dropped = (attn == 0) & real.expand_as(attn)
    frac = dropped.sum() / real.expand_as(attn).sum()
    assert 0.2 < float(frac) < 0.4
    pad_key = ~mask[:, None, None, :].expand_as(attn)
    assert attn[pad_key].abs().max() == 0
    assert torch.isfinite(out.h).all() and torch.isfinite(out.e).all()
    # the kept weights are softmax over the kept keys times the gates: rows renormalized
    torch.manual_seed(5)
    ungated = _masked_layer(0.3, gated=False).train()
    attn_u = ungated.forward_dense(h, e, mask, return_attention_weights=True).attention
    rows = attn_u.sum(-1)[mask[:, None, :].expand(-1, 2, -1)]
    fully_dropped = ((attn_u == 0) | ~real).all(-1)[mask[:, None, :].expand(-1, 2, -1)]
    torch.testing.assert_close(rows[~fully_dropped], torch.ones_like(rows[~fully_dropped]))


def test_random_mask_is_the_official_additive_mask():
    """With the draw fixed, the layer equals the official formula: ``-1e9`` added to Ĥ and G
    where the uniform noise is below p (egt_layers.py), computed here in double precision."""
    torch.manual_seed(3)
    layer = _masked_layer(0.5).train()
    B, N, H = 1, 5, 2
    h = torch.randn(B, N, 8, dtype=torch.double)
    e = torch.randn(B, N, N, 4, dtype=torch.double)
    mask = torch.ones(B, N, dtype=torch.bool)
    torch.manual_seed(9)
    out = layer.forward_dense(h, e, mask, return_attention_weights=True)
    torch.manual_seed(9)
    noise = torch.rand(B, H, N, N)
    dk = layer.head_dim
    qkv = layer.qkv(_ln(h, layer.norm_h)).view(B, N, 3, H, dk).permute(2, 0, 3, 1, 4)
    eg = layer.eg(_ln(e, layer.norm_e)).permute(0, 3, 1, 2)
    scores = (qkv[0] @ qkv[1].transpose(-1, -2) / dk ** 0.5).clamp(-5, 5)
    extra = torch.where(noise < 0.5, -1e9, 0.0).double()
    ref = torch.softmax(scores + eg[:, :H] + extra, -1) * torch.sigmoid(eg[:, H:] + extra)
    torch.testing.assert_close(out.attention, ref)
    with pytest.raises(ValueError, match="random_mask_prob"):
        EGTLayer(8, 2, edge_dim=4, random_mask_prob=1.0)


def test_constrained_output_edge_channels_only_on_edges():
    gen = torch.Generator().manual_seed(6)
    data = Batch.from_data_list([_graph(6, gen)])
    data.svd_pe = data.svd_pe.double()
    model = _model("constrained", level="edge")
    _, e, dense, _ = model.encode(data)
    adj = dense.adjacency(self_loops=True)
    assert e[~adj].abs().max() == 0 and e[adj].abs().min() > 0


def test_last_layer_skips_unread_edge_update():
    model = _model(level="graph")
    assert not model.layers[-1].edge_output and model.layers[0].edge_output
    assert not hasattr(model.layers[-1], "out_e") and not hasattr(model.layers[-1], "ffn_e")
    assert _model(level="edge").layers[-1].edge_output
    assert _model(distance_objective=True, distance_weight=0.1).layers[-1].edge_output


def test_attention_maps_shapes_and_rows():
    gen = torch.Generator().manual_seed(8)
    data = Batch.from_data_list([_graph(5, gen), _graph(7, gen)])
    data.svd_pe = data.svd_pe.double()
    model = _model("ungated", num_virtual_nodes=1)
    maps, mask = model.attention_maps(data)
    assert len(maps) == 2 and maps[0].shape == (2, 7, 7) and mask.shape == (2, 7)
    assert maps[0][0, 5:].abs().sum() == 0 and maps[0][0, :, 5:].abs().sum() == 0
    rows = maps[0].sum(-1)
    assert bool((rows[mask] <= 1 + 1e-9).all()) and bool((rows[mask] > 0).all())
    assert model.training is False


def test_budget_error_before_allocation():
    gen = torch.Generator().manual_seed(9)
    data = Batch.from_data_list([_graph(30, gen), _graph(5, gen)])
    data.svd_pe = data.svd_pe.double()
    model = _model(memory_budget_gb=1e-6)
    with pytest.raises(ValueError, match=r"graph 0 of the batch has 30 nodes.*memory budget"):
        model(data)


# ----------------------------------------------------------------------------- SVD encodings
def test_svd_pe_reconstructs_adjacency_at_full_rank():
    gen = torch.Generator().manual_seed(0)
    g = _graph(8, gen)
    pe = svd_pe(g.edge_index, 8, r=8).double()
    u, v = pe[:, :8], pe[:, 8:]
    a = torch.zeros(8, 8, dtype=torch.double)
    a[g.edge_index[0], g.edge_index[1]] = 1
    a += torch.eye(8, dtype=torch.double)
    torch.testing.assert_close(u @ v.T, a, atol=1e-5, rtol=0)
    # pair-wise sign flips keep Û V̂ᵀ
    flipped = random_svd_sign_flip(pe, generator=torch.Generator().manual_seed(1))
    assert not torch.equal(flipped, pe)
    torch.testing.assert_close(flipped[:, :8] @ flipped[:, 8:].T, a, atol=1e-5, rtol=0)


def test_svd_sign_flips_are_drawn_per_graph_by_default():
    # the official code flips each (u, v) pair independently for every graph of a batch
    from graph_transformers.training.model_sections import model_section
    assert model_section("egt")().sign_flip == "graph"
    assert _model().sign_flip == "graph"
    gen = torch.Generator().manual_seed(0)
    graphs = [_graph(8, gen) for _ in range(16)]
    pes = [svd_pe(g.edge_index, 8, r=8).double() for g in graphs]
    pe, batch = torch.cat(pes), torch.arange(16).repeat_interleave(8)
    flipped = random_svd_sign_flip(pe, batch, per_graph=True,
                                   generator=torch.Generator().manual_seed(3))
    # the sign each graph got for each column: not one pattern for the whole batch
    ratio = torch.stack([(flipped[batch == b] * pes[b]).sum(0).sign() for b in range(16)])
    assert not torch.all(ratio == ratio[0])
    for b in range(16):  # each graph's Û V̂ᵀ is unchanged
        f = flipped[batch == b]
        torch.testing.assert_close(f[:, :8] @ f[:, 8:].T, pes[b][:, :8] @ pes[b][:, 8:].T)
        torch.testing.assert_close(ratio[b, :8], ratio[b, 8:])  # u_k and v_k flip together


def test_svd_pe_pads_small_graphs_and_checks_rank():
    pe = svd_pe(torch.tensor([[0, 1], [1, 0]]), 2, r=4)
    assert pe.shape == (2, 8) and pe[:, 2:4].abs().sum() == 0 and pe[:, 6:].abs().sum() == 0
    with pytest.raises(ValueError):
        svd_pe(torch.zeros(2, 0, dtype=torch.long), 3, r=0)


# ----------------------------------------------------------------------------- config
def test_config_validation():
    cfg = build_config({"model": {"name": "egt", "pe": "svd"}, "encodings": {"svd_pe": {"r": 4}}})
    assert cfg.model.edge_hidden_dim == 8
    with pytest.raises(ConfigError, match="svd_pe"):
        build_config({"model": {"name": "egt", "pe": "svd"}})
    with pytest.raises(ConfigError, match="distance_objective"):
        build_config({"model": {"name": "egt", "variant": "simple", "distance_objective": True}})
    with pytest.raises(ConfigError, match="unknown key"):
        build_config({"model": {"name": "egt", "edge_width": 8}})
    # bucketing under DDP: the distributed bucket sampler deals batches (test_distributed.py)
    ddp = build_config({"model": {"name": "egt"}, "data": {"bucket_by_size": True},
                        "trainer": {"devices": 2, "strategy": "ddp"}})
    assert ddp.data.bucket_by_size and ddp.trainer.devices == 2
    with pytest.raises(ConfigError, match="Ungated"):
        build_config({"model": {"name": "egt", "variant": "ungated", "scale_degree": True}})


# ----------------------------------------------------------------------------- real data
@pytest.mark.slow
def test_egt_trains_on_zinc(data_dir):
    """A small EGT-SPE + DO on 512 real ZINC graphs with size-bucketed batches: the training loss
    falls well below its start."""
    from graph_transformers.data.registry import resolve_spec
    from graph_transformers.datasets.molecules.zinc import ZINCSubset
    from graph_transformers.encodings import AddSVDPE
    from graph_transformers.training.module import split_output
    from graph_transformers.training.build import make_model
    from graph_transformers.training.loaders import make_loaders
    from graph_transformers.training.tasks import Task

    cfg = build_config({
        "model": {"name": "egt", "hidden_dim": 32, "edge_hidden_dim": 16, "num_layers": 2,
                  "num_heads": 4, "pe": "svd", "distance_objective": True,
                  "distance_weight": 0.05},
        "data": {"name": "zinc", "batch_size": 64, "bucket_by_size": True, "bucket_window": 4},
        "encodings": {"svd_pe": {"r": 4}}})
    spec = resolve_spec(cfg.data)
    train = ZINCSubset(split="val", data_dir=data_dir, pre_transform=AddSVDPE(4))[:512]
    loader = make_loaders(cfg, {"train": train})["train"]
    torch.manual_seed(0)
    model = make_model(cfg, spec)
    task = Task(spec)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(12):
        total = 0.0
        for batch in loader:
            out, aux = split_output(model(batch))
            loss = task.loss(out, batch)
            opt.zero_grad()
            (loss + aux).backward()
            opt.step()
            total += float(loss) * batch.num_graphs
        losses.append(total / len(train))
    assert losses[-1] < 0.85 * losses[0], losses


@pytest.mark.parametrize("case", [dict(), dict(distance_objective=True, distance_weight=0.5)])
def test_forward_returns_one_type(case):
    """Issue 14: EGT returns a ModelOutput whatever its options (aux_loss None without the
    distance objective), so callers never test the type."""
    data = Batch.from_data_list([_graph(5, torch.Generator().manual_seed(0))])
    data.svd_pe = data.svd_pe.double()
    out = _model(**case)(data)
    assert type(out) is ModelOutput and out.out.shape == (1, 3)
    assert (out.aux_loss is None) == (not case)
