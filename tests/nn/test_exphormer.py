"""Exphormer's sparse attention (Shirzad et al. 2023): the expander encoding
(``encodings.expander``) and ``nn.ExphormerAttention``, alone and as GPS's ``attention:
exphormer``.

- The expander generator: ``d``-regular (exactly, where a simple ``d``-regular graph exists),
  no self-loops, no repeated edge, symmetric, a good expander (second eigenvalue near the
  Ramanujan bound), seeded and deterministic (independent of the order graphs are processed in),
  and batched by PyG with the node offsets; its registry entry comes after the existing ones.
- The layer against a naive float64 reference that forms the dense ``N_tot × N_tot`` score
  tensor of the graph's nodes plus its virtual nodes, one slice per edge type, ``-inf`` outside
  the union pattern, and a softmax over each row's (source, type) entries; with and without
  edge features, expander and virtual nodes, both virtual states, the score clamp, and the
  returned weights.
- Permutation equivariance, per-graph isolation (alone = batched, with or without
  ``num_graphs``), gradients (``gradcheck``), no ``N × N`` tensor and no host reads, input errors.
- GPS with ``attention="exphormer"``: the layer (pre / post norm), the model trains a few steps
  on a tiny synthetic task with the loss going down, sampled subgraphs, and the config path
  (``model.attention: exphormer`` needs ``encodings.expander``; one epoch through
  :func:`graph_transformers.train`).
"""
from __future__ import annotations

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from conftest import HostReads
from torch_geometric.data import Batch, Data
from torch_geometric.utils import degree

import graph_transformers as gtr
from graph_transformers.device_check import synthetic_molecules
from graph_transformers.encodings import ENCODINGS, AddExpanderGraph, random_expander
from graph_transformers.models import GPS
from graph_transformers.nn import ExphormerAttention, GPSLayer

D, H = 8, 2
SIZES = (5, 7, 1, 6)  # a single-node graph included


# ----------------------------------------------------------------------------- the expander
def _pairs(ei: torch.Tensor) -> list[tuple[int, int]]:
    return list(zip(ei[0].tolist(), ei[1].tolist()))


@pytest.mark.parametrize("n,d", [(10, 3), (12, 4), (50, 5), (200, 3), (1000, 8)])
def test_expander_is_regular_simple_and_symmetric(n, d):
    ei = random_expander(n, d, seed=0)
    assert ei.dtype == torch.long and ei.shape == (2, n * d)
    pairs = _pairs(ei)
    assert all(i != j for i, j in pairs)  # no self-loops
    assert len(set(pairs)) == len(pairs)  # no repeated edge
    assert set(pairs) == {(j, i) for i, j in pairs}  # symmetric
    assert pairs == sorted(pairs)
    assert torch.equal(degree(ei[0], n), torch.full((n,), float(d)))


def test_expander_special_sizes():
    assert random_expander(0, 3).shape == (2, 0) and random_expander(1, 3).shape == (2, 0)
    ei = random_expander(4, 3)  # n <= d + 1: the complete graph
    assert set(_pairs(ei)) == {(i, j) for i in range(4) for j in range(4) if i != j}
    ei = random_expander(3, 5)
    assert ei.size(1) == 6
    ei = random_expander(11, 3)  # n·d odd: one node keeps d - 1 edges
    deg = degree(ei[0], 11)
    assert sorted(deg.tolist()) == [2.0] + [3.0] * 10


def test_expander_repairs_small_graphs_over_many_seeds():
    """The configuration model draws self-loops and repeated pairs (about (d²-1)/4 of them);
    the switch repairs remove them: every draw is simple and d-regular."""
    for seed in range(100):
        for n, d in ((6, 3), (8, 5), (9, 4)):
            ei = random_expander(n, d, seed)
            pairs = _pairs(ei)
            assert len(set(pairs)) == len(pairs) and all(i != j for i, j in pairs)
            assert torch.equal(degree(ei[0], n), torch.full((n,), float(d)))


def test_expander_has_a_spectral_gap():
    """Friedman: a random d-regular graph has second adjacency eigenvalue ≤ 2√(d-1) + ε whp;
    a ring of the same degree has one close to d."""
    n, d = 300, 4
    for seed in range(3):
        ei = random_expander(n, d, seed)
        a = torch.zeros(n, n, dtype=torch.float64)
        a[ei[0], ei[1]] = 1.0
        ev = torch.linalg.eigvalsh(a).abs().sort(descending=True).values
        assert ev[0].item() == pytest.approx(d)
        assert ev[1].item() < 2 * math.sqrt(d - 1) + 0.5


def test_expander_is_seeded_and_deterministic():
    ring = torch.stack([torch.arange(20), (torch.arange(20) + 1) % 20])
    a = random_expander(20, 3, 0, ring)
    assert torch.equal(a, random_expander(20, 3, 0, ring))
    assert not torch.equal(a, random_expander(20, 3, 1, ring))
    assert not torch.equal(a, random_expander(20, 3, 0, ring[:, :-1]))  # another graph
    # the transform gives each graph the same expander whatever order the dataset is processed
    graphs = [Data(x=torch.randn(n, 2), edge_index=torch.stack(
        [torch.arange(n - 1), torch.arange(1, n)])) for n in (9, 12, 9, 15)]
    graphs[2].edge_index = torch.stack([torch.arange(9), (torch.arange(9) + 1) % 9])  # a ring
    t = AddExpanderGraph(degree=3, seed=7)
    forward = [t(g.clone()).expander_index for g in graphs]
    backward = [t(g.clone()).expander_index for g in reversed(graphs)][::-1]
    assert all(torch.equal(f, b) for f, b in zip(forward, backward))
    assert not torch.equal(forward[0], forward[2])  # same size, different edges


def test_expander_transform_batching_and_errors():
    t = AddExpanderGraph(degree=3, seed=0)
    assert repr(t) == "AddExpanderGraph(degree=3, seed=0)"
    g1 = t(Data(x=torch.randn(5, 2), edge_index=torch.zeros(2, 0, dtype=torch.long)))
    g2 = t(Data(x=torch.randn(6, 2), edge_index=torch.zeros(2, 0, dtype=torch.long)))
    b = Batch.from_data_list([g1, g2])
    assert torch.equal(b.expander_index, torch.cat([g1.expander_index, g2.expander_index + 5], 1))
    assert bool((b.batch[b.expander_index[0]] == b.batch[b.expander_index[1]]).all())
    with pytest.raises(ValueError, match="degree"):
        AddExpanderGraph(degree=0)
    with pytest.raises(ValueError, match="seed"):
        AddExpanderGraph(seed=-1)
    with pytest.raises(ValueError, match="index"):
        AddExpanderGraph(attr_name="expander")
    with pytest.raises(ValueError, match="num_nodes"):
        random_expander(-1, 3)


def test_expander_is_appended_to_the_encoding_registry():
    from graph_transformers.data.registry import build_pre_transform
    from graph_transformers.training.model_sections import EncodingsConfig, encodings_config
    names = list(ENCODINGS)
    assert names[:6] == ["lap_pe", "wl_pe", "svd_pe", "spd", "rwse", "rrwp"]
    assert "expander" in names and names.index("expander") >= 6
    assert list(encodings_config().model_fields) == names
    section = encodings_config()(expander={"degree": 4, "seed": 2})
    assert repr(build_pre_transform(section)) == "AddExpanderGraph(degree=4, seed=2)"
    assert EncodingsConfig(expander={}).expander.degree == 3
    both = repr(build_pre_transform(encodings_config()(rwse={}, expander={})))
    assert both.index("AddRWSE") < both.index("AddExpanderGraph")  # appended: old keys kept
    with pytest.raises(ValueError):
        encodings_config()(expander={"degree": 0})


# ----------------------------------------------------------------------------- inputs
def _graph(n: int, gen: torch.Generator, dtype=torch.float64, edge_dim=D) -> Data:
    """A random directed graph without repeated edges (a pair's edge feature is unique)."""
    a = torch.rand(n, n, generator=gen) < 0.35
    a.fill_diagonal_(False)
    if n > 1:
        a[0, 1] = True  # at least one edge
    ei = a.nonzero().T.contiguous()
    data = Data(x=torch.randn(n, D, generator=gen, dtype=dtype), edge_index=ei,
                edge_attr=torch.randn(ei.size(1), edge_dim, generator=gen, dtype=dtype))
    return AddExpanderGraph(degree=3, seed=0)(data)


def _graphs(sizes=SIZES, seed=0, dtype=torch.float64) -> list[Data]:
    gen = torch.Generator().manual_seed(seed)
    return [_graph(n, gen, dtype) for n in sizes]


def _layer(num_virtual_nodes=1, virtual_state="mean", clamp=None, dtype=torch.float64,
           seed=0) -> ExphormerAttention:
    torch.manual_seed(seed)
    layer = ExphormerAttention(D, H, num_virtual_nodes=num_virtual_nodes,
                               virtual_state=virtual_state, clamp=clamp)
    for p in layer.parameters():  # non-zero biases, larger weights: a stronger check
        torch.nn.init.normal_(p, std=0.5)
    return layer.to(dtype).eval()


def _call(layer, b, edges=True, expander=True, **kw):
    return layer(b.x, b.edge_index, b.edge_attr if edges else None, getattr(b, "batch", None),
                 expander_index=b.expander_index if expander else None, **kw)


# ----------------------------------------------------------------------------- naive reference
def naive_exphormer(layer: ExphormerAttention, x, edge_index, edge_attr, batch, expander_index,
                    num_graphs):
    """The dense reading of the module docstring, per head: the real nodes and then the
    ``G·V`` virtual nodes (``N_tot`` in all), their states ``X_all``, and for each edge type
    ``t`` (graph, expander, virtual) an ``N_tot × N_tot`` score matrix
    ``S_t[i, j] = (q_i ⊙ k_j ⊙ W_E e^t_ji)·1 / √d_k`` with ``-inf`` wherever ``j → i`` is no
    edge of type ``t``; each real row's softmax runs over all ``(j, t)`` jointly. Returns the
    output ``[N, d]`` and the weights ``[N_tot, N_tot, 3, H]``."""
    n, d, Hn, dk, V = x.size(0), layer.hidden_dim, layer.num_heads, layer.head_dim, \
        layer.num_virtual_nodes
    batch = torch.zeros(n, dtype=torch.long) if batch is None else batch
    G = num_graphs
    states = [x]
    if V:
        for g in range(G):
            mean = x[batch == g].mean(0) if (batch == g).any() else torch.zeros(d, dtype=x.dtype)
            for u in range(V):
                c = layer.virtual_emb[u]
                states.append((c + mean if layer.virtual_state == "mean" else c).view(1, d))
    xa = torch.cat(states)
    nt = xa.size(0)
    W, bq = layer.qkv.weight, layer.qkv.bias
    q, k, v = (xa @ W[i * d:(i + 1) * d].T + bq[i * d:(i + 1) * d] for i in range(3))

    def proj(e):
        return e @ layer.edge_proj.weight.T + layer.edge_proj.bias

    # gate[t][i, j]: the projected feature of the edge j → i of type t (dense, zero elsewhere)
    mask = torch.zeros(3, nt, nt, dtype=torch.bool)
    gate = torch.zeros(3, nt, nt, d, dtype=x.dtype)
    for e, (j, i) in enumerate(edge_index.T.tolist()):
        mask[0, i, j] = True
        gate[0, i, j] = proj(edge_attr[e]) if edge_attr is not None else proj(layer.edge_emb)
    if expander_index is not None:
        for j, i in expander_index.T.tolist():
            mask[1, i, j] = True
            gate[1, i, j] = proj(layer.expander_emb)
    for i in range(n):
        for u in range(V):
            j = n + int(batch[i]) * V + u
            mask[2, i, j] = True
            gate[2, i, j] = proj(layer.virtual_edge_emb)
    out = torch.zeros(n, d, dtype=x.dtype)
    weights = torch.zeros(nt, nt, 3, Hn, dtype=x.dtype)
    for h in range(Hn):
        c = slice(h * dk, (h + 1) * dk)
        s = torch.einsum("ic,jc,tijc->tij", q[:, c], k[:, c], gate[..., c]) / math.sqrt(dk)
        if layer.clamp is not None:
            s = s.clamp(-layer.clamp, layer.clamp)
        s = s.masked_fill(~mask, float("-inf"))
        flat = s.permute(1, 2, 0).reshape(nt, nt * 3)  # row i: every (j, t)
        has = mask.any(0).any(1)  # rows with at least one entry
        a = torch.zeros_like(flat)
        a[has] = torch.softmax(flat[has], dim=1)
        a = a.view(nt, nt, 3)
        weights[..., h] = a
        out[:, c] = a.sum(2)[:n] @ v[:, c]
    return out @ layer.out.weight.T + layer.out.bias, weights


CASES = [dict(V=1, state="mean"), dict(V=2, state="mean"), dict(V=1, state="learned"),
         dict(V=0, state="mean"), dict(V=2, state="mean", clamp=0.5),
         dict(V=1, state="mean", edges=False), dict(V=1, state="mean", expander=False)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_matches_the_naive_dense_masked_attention(case):
    layer = _layer(case["V"], case["state"], case.get("clamp"))
    edges, expander = case.get("edges", True), case.get("expander", True)
    b = Batch.from_data_list(_graphs())
    with torch.no_grad():
        out, (index, w) = _call(layer, b, edges, expander, num_graphs=b.num_graphs,
                                return_attention_weights=True)
        ref, ref_w = naive_exphormer(layer, b.x, b.edge_index, b.edge_attr if edges else None,
                                     b.batch, b.expander_index if expander else None,
                                     b.num_graphs)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    # the returned sparse weights are the dense ones at (target, source, edge type)
    ne = b.edge_index.size(1)
    nx = b.expander_index.size(1) if expander else 0
    types = torch.cat([torch.zeros(ne), torch.ones(nx),
                       torch.full((index.size(1) - ne - nx,), 2.0)]).long()
    assert index.size(1) == ne + nx + b.num_nodes * case["V"]
    torch.testing.assert_close(w, ref_w[index[1], index[0], types], rtol=1e-10, atol=1e-10)
    sums = torch.zeros(b.num_nodes, H, dtype=w.dtype).index_add_(0, index[1], w)
    has = torch.zeros(b.num_nodes, dtype=torch.bool)
    has[index[1]] = True
    torch.testing.assert_close(sums[has], torch.ones_like(sums[has]))


def test_a_node_without_any_entry_gets_zero_output():
    layer = _layer(num_virtual_nodes=0)
    x = torch.randn(3, D, dtype=torch.float64)
    out = layer(x, torch.tensor([[0], [1]]))  # node 0 and 2 receive nothing; only 0 → 1
    assert torch.allclose(out[0], layer.out.bias) and torch.allclose(out[2], layer.out.bias)
    assert not torch.allclose(out[1], layer.out.bias)


def test_repeated_pair_counts_once_per_edge_type():
    """A pair that is both a graph edge and an expander edge is two entries of the softmax,
    each with its own edge feature (the naive reference's per-type slices)."""
    layer = _layer(num_virtual_nodes=1)
    x = torch.randn(3, D, dtype=torch.float64)
    ei = torch.tensor([[0, 1], [1, 2]])
    ea = torch.randn(2, D, dtype=torch.float64)
    xi = torch.tensor([[0, 2, 1, 2], [1, 1, 2, 0]])  # 0 → 1 repeats a graph edge
    with torch.no_grad():
        out = layer(x, ei, ea, expander_index=xi, num_graphs=1)
        ref, _ = naive_exphormer(layer, x, ei, ea, None, xi, 1)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- properties
@pytest.mark.parametrize("num_graphs", ["given", None])
def test_graphs_of_a_batch_never_attend_to_each_other(num_graphs):
    layer = _layer(2)
    graphs = _graphs()
    b = Batch.from_data_list(graphs)
    with torch.no_grad():
        out = _call(layer, b, num_graphs=b.num_graphs if num_graphs else None)
        start = 0
        for g in graphs:
            alone = layer(g.x, g.edge_index, g.edge_attr, expander_index=g.expander_index)
            torch.testing.assert_close(out[start:start + g.num_nodes], alone,
                                       rtol=1e-10, atol=1e-10)
            start += g.num_nodes
        # the other graphs' features change, this graph's output does not
        x2 = b.x.clone()
        x2[5:] = torch.randn_like(x2[5:])
        out2 = layer(x2, b.edge_index, b.edge_attr, b.batch, expander_index=b.expander_index)
        torch.testing.assert_close(out2[:5], out[:5], rtol=1e-10, atol=1e-10)


def test_permutation_equivariance():
    layer = _layer(2)
    b = Batch.from_data_list(_graphs())
    n = b.num_nodes
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(3))  # mixes the graphs too
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n)
    with torch.no_grad():
        out = _call(layer, b, num_graphs=b.num_graphs)
        eperm = torch.randperm(b.edge_index.size(1), generator=torch.Generator().manual_seed(4))
        out_p = layer(b.x[perm], inv[b.edge_index][:, eperm], b.edge_attr[eperm], b.batch[perm],
                      expander_index=inv[b.expander_index], num_graphs=b.num_graphs)
    torch.testing.assert_close(out_p, out[perm], rtol=1e-10, atol=1e-10)


def test_gradients_flow_and_gradcheck():
    layer = _layer(1)
    b = Batch.from_data_list(_graphs((4, 3)))
    x = b.x.clone().requires_grad_(True)
    ea = b.edge_attr.clone().requires_grad_(True)

    def f(x, ea):
        return layer(x, b.edge_index, ea, b.batch, expander_index=b.expander_index, num_graphs=2)

    assert torch.autograd.gradcheck(f, (x, ea))
    layer.train()
    f(x, ea).square().sum().backward()
    for name, p in layer.named_parameters():
        if name != "edge_emb":  # graph edges carry edge_attr here
            assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_float32_and_bf16_autocast_agree_with_float64():
    ref_layer = _layer(1)
    b = Batch.from_data_list(_graphs())
    with torch.no_grad():
        ref = _call(ref_layer, b, num_graphs=b.num_graphs)
        layer = _layer(1).float()
        b32 = b.clone()
        b32.x, b32.edge_attr = b.x.float(), b.edge_attr.float()
        out = _call(layer, b32, num_graphs=b.num_graphs)
        torch.testing.assert_close(out.double(), ref, rtol=1e-4, atol=1e-4)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = _call(layer, b32, num_graphs=b.num_graphs)
    assert torch.isfinite(low).all()
    assert (low.double() - ref).abs().max() / ref.abs().max() < 5e-2


@pytest.mark.parametrize("num_graphs", [2, None])
def test_no_host_reads_on_the_meta_device(num_graphs):
    layer = _layer(2, dtype=torch.float32).train().to("meta")
    x = torch.randn(9, D, device="meta", requires_grad=True)
    ei = torch.zeros(2, 12, dtype=torch.long, device="meta")
    audit = HostReads()
    with audit:
        layer(x, ei, torch.randn(12, D, device="meta"), torch.zeros(9, dtype=torch.long,
                                                                     device="meta"),
              expander_index=torch.zeros(2, 27, dtype=torch.long, device="meta"),
              num_graphs=num_graphs).sum().backward()
    assert not audit.reads, audit.reads


def test_memory_is_linear_in_nodes_and_edges():
    """20,000 nodes, a ring and a 3-regular expander: no tensor has anywhere near N² = 4e8
    elements (forward and backward); the largest is a few per-entry tensors
    ``[E_tot, H, d_k]``."""
    sizes: list[int] = []

    class _Largest(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in torch.utils._pytree.tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    sizes.append(t.numel())
            return out

    n, d = 20_000, 16
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    layer = ExphormerAttention(d, 4, num_virtual_nodes=2)
    x = torch.randn(n, d, requires_grad=True)
    half = random_expander(n // 2, 3)
    ex = torch.cat([half, half + n // 2], 1)  # one expander per graph of the batch
    with _Largest():
        layer(x, ring, torch.randn(n, d), torch.arange(n) // (n // 2),
              expander_index=ex, num_graphs=2).sum().backward()
    e_tot = n + ex.size(1) + 2 * n
    assert max(sizes) <= e_tot * d
    assert max(sizes) < n * n / 100


def test_input_errors_and_reset_parameters():
    att = ExphormerAttention(D, H)
    x, ei = torch.randn(4, D), torch.tensor([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match=r"x \[num_nodes, 8\]"):
        att(torch.randn(2, 4, D), ei)
    with pytest.raises(ValueError, match="edge_index must be"):
        att(x, ei.float())
    with pytest.raises(ValueError, match="needs edge_index"):
        att(x, None)
    with pytest.raises(ValueError, match="edge_attr must be"):
        att(x, ei, torch.randn(3, D))
    with pytest.raises(ValueError, match="batch must be"):
        att(x, ei, batch=torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="expander_index must be"):
        att(x, ei, expander_index=torch.zeros(3, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="expander_index has node ids"):
        att(x, ei, expander_index=torch.tensor([[0], [4]]))
    with pytest.raises(ValueError, match="between different graphs"):
        att(x, ei, batch=torch.tensor([0, 0, 1, 1]), expander_index=torch.tensor([[0], [3]]))
    with pytest.raises(ValueError, match="num_graphs"):
        att(x, ei, batch=torch.tensor([0, 0, 1, 1]), num_graphs=0)
    with pytest.raises(ValueError, match="outside"):
        att(x, ei, batch=torch.tensor([0, 0, 1, 2]), num_graphs=2)
    with pytest.raises(ValueError, match="divisible"):
        ExphormerAttention(10, 3)
    with pytest.raises(ValueError, match="num_virtual_nodes"):
        ExphormerAttention(D, num_virtual_nodes=-1)
    with pytest.raises(ValueError, match="virtual_state"):
        ExphormerAttention(D, virtual_state="max")
    with pytest.raises(ValueError, match="clamp"):
        ExphormerAttention(D, clamp=0.0)
    before = [p.clone() for p in att.parameters()]
    att.reset_parameters()
    assert all(not torch.equal(a, b) for a, b in zip(before, att.parameters())
               if a.abs().sum() > 0)  # the zero biases stay zero
    assert "virtual_nodes=1" in repr(att)
    assert ExphormerAttention(D, num_virtual_nodes=0).virtual_emb is None


# ----------------------------------------------------------------------------- GPS
@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_gps_layer_forward_backward_and_batch_independence(norm_position):
    torch.manual_seed(0)
    layer = GPSLayer(16, 4, mpnn="gine", attention="exphormer", norm="layer",
                     norm_position=norm_position, num_virtual_nodes=2).double()
    gen = torch.Generator().manual_seed(0)
    graphs = []
    for n in (5, 8, 3):
        ei = torch.stack([torch.arange(n - 1), torch.arange(1, n)])
        ei = torch.cat([ei, ei.flip(0)], 1)
        graphs.append(AddExpanderGraph(3, 0)(Data(
            x=torch.randn(n, 16, generator=gen, dtype=torch.float64), edge_index=ei,
            edge_attr=torch.randn(ei.size(1), 16, generator=gen, dtype=torch.float64))))
    b = Batch.from_data_list(graphs)
    layer.eval()
    with torch.no_grad():
        out = layer(b.x, b.edge_index, b.edge_attr, b.batch, num_graphs=b.num_graphs,
                    expander_index=b.expander_index)
        alone = layer(graphs[1].x, graphs[1].edge_index, graphs[1].edge_attr,
                      expander_index=graphs[1].expander_index)
        torch.testing.assert_close(out[5:13], alone, rtol=1e-10, atol=1e-10)
    layer.train()
    out = layer(b.x, b.edge_index, b.edge_attr, b.batch, num_graphs=b.num_graphs,
                expander_index=b.expander_index)
    out.square().sum().backward()
    for name, p in layer.attention.named_parameters():
        if name != "edge_emb":
            assert p.grad is not None and p.grad.abs().sum() > 0, name
    # the attention read the layer's edge features (the vector for graph edges without any
    # went unused)
    assert layer.attention.edge_emb.grad is None
    with pytest.raises(NotImplementedError, match="return_attention_weights"):
        layer.attention_map(b.x, b.batch)
    # without an MPNN the layer takes no edge features: graph edges get the learned vector
    bare = GPSLayer(16, 4, mpnn=None, attention="exphormer", norm="layer",
                    norm_position=norm_position).double()
    bare(b.x, b.edge_index, batch=b.batch, expander_index=b.expander_index).sum().backward()
    assert bare.attention.edge_emb.grad is not None


def _molecules(num, seed):
    t = AddExpanderGraph(degree=3, seed=0)
    return [t(g) for g in synthetic_molecules(num, seed=seed)]


def test_gps_model_forward_batch_independence_and_missing_expander():
    torch.manual_seed(0)
    graphs = _molecules(6, seed=2)
    batch = Batch.from_data_list(graphs)
    model = GPS(16, 2, 2, out_dim=1, num_node_types=28, num_edge_types=4, pe=None,
                attention="exphormer", norm="layer", num_virtual_nodes=1)
    out = model(batch)
    assert out.shape == (6, 1) and torch.isfinite(out).all()
    out.square().mean().backward()
    assert all(p.grad is not None for n, p in model.named_parameters()
               if "attention" in n and not n.endswith("edge_emb"))
    model.eval()
    with torch.no_grad():
        alone = torch.cat([model(Batch.from_data_list([g])) for g in graphs])
        torch.testing.assert_close(model(batch), alone, rtol=1e-5, atol=1e-5)
    bare = Batch.from_data_list(synthetic_molecules(2, seed=2))
    with pytest.raises(ValueError, match="encodings.expander"):
        model(bare)
    with pytest.raises(NotImplementedError, match="exphormer"):
        model.attention_maps(batch)


def test_gps_model_trains_and_the_loss_goes_down():
    """A tiny synthetic regression (each molecule's number of carbon-type-0 atoms, summed
    readout): 40 Adam steps on 16 graphs lower the training loss well below its start."""
    torch.manual_seed(0)
    graphs = _molecules(16, seed=5)
    for g in graphs:
        g.y = (g.x.view(-1) == 0).sum().float().view(1, 1)
    batch = Batch.from_data_list(graphs)
    model = GPS(16, 2, 2, out_dim=1, num_node_types=28, num_edge_types=4, pe=None,
                attention="exphormer", mpnn="gine", norm="layer", num_virtual_nodes=1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(batch), batch.y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.2 * losses[0], losses


def test_gps_model_on_a_sampled_subgraph_restricts_the_expander():
    """PyG's NodeLoader copies ``expander_index`` of the whole graph unchanged; the model keeps
    the expander edges between sampled nodes, relabelled."""
    torch.manual_seed(0)
    n = 40
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    ring = torch.cat([ring, ring.flip(0)], 1)
    full = AddExpanderGraph(3, 0)(Data(x=torch.randint(0, 5, (n, 1)), edge_index=ring,
                                       edge_attr=torch.zeros(ring.size(1), 1, dtype=torch.long)))
    n_id = torch.tensor([3, 17, 4, 30, 2, 25, 18, 16])
    sample = full.subgraph(n_id)  # relabels edge_index; copy the expander as NodeLoader does
    sample.expander_index, sample.n_id = full.expander_index, n_id
    index = GPS._expander_index(sample)
    pos = {int(v): i for i, v in enumerate(n_id)}
    want = sorted((pos[i], pos[j]) for i, j in _pairs(full.expander_index)
                  if i in pos and j in pos)
    assert sorted(_pairs(index)) == want
    model = GPS(8, 1, 2, out_dim=2, level="node", num_node_types=5, num_edge_types=1,
                pe=None, attention="exphormer", norm="layer")
    assert model(sample).shape == (8, 2)


# ----------------------------------------------------------------------------- the config
def test_config_accepts_exphormer_and_requires_the_expander():
    from graph_transformers.training.config import Config
    config = Config(model={"name": "gps", "attention": "exphormer", "pe": None,
                           "num_virtual_nodes": 2},
                    encodings={"expander": {"degree": 4, "seed": 1}})
    assert config.model.attention == "exphormer" and config.model.num_virtual_nodes == 2
    assert config.encodings.expander.degree == 4
    with pytest.raises(ValueError, match="encodings.expander"):
        Config(model={"name": "gps", "attention": "exphormer", "pe": None})
    with pytest.raises(ValueError):
        Config(model={"name": "gps", "attention": "exphormer", "pe": None,
                      "num_virtual_nodes": -1}, encodings={"expander": {}})


def test_one_epoch_through_train(tmp_path):
    config = {"name": "gps-exphormer",
              "model": {"name": "gps", "hidden_dim": 16, "num_layers": 1, "num_heads": 2,
                        "pe": None, "use_edge_features": True, "attention": "exphormer",
                        "num_virtual_nodes": 1},
              "data": {"batch_size": 8, "task": "regression"},
              "encodings": {"lap_pe": None, "expander": {"degree": 3, "seed": 0}}, "seed": 0,
              "trainer": {"max_epochs": 1, "enable_progress_bar": False}}
    metrics = gtr.train(config, dataset=synthetic_molecules(32, seed=1), out_dir=tmp_path / "run")
    assert all(math.isfinite(v) for split in ("val", "test") for v in metrics[split].values())
