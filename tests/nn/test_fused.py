"""The compiled fast paths (graph_transformers.nn.fused) against the plain PyTorch path.

Equality in float64 to 1e-10, forward and gradients, on inputs that exercise the kernels' edge
cases (isolated targets, repeated edges, self-loops, unsorted edges, strided q/k/v rows, clamped
scores, head dims with and without a compiled specialization); the fallback when the kernels
cannot be built (no compiler: CI stays green on the plain path); and the dispatch rules.
"""
from __future__ import annotations

import pytest
import torch

from graph_transformers.nn import GraphTransformerLayer, fused
from graph_transformers.nn.attention import _sparse_attention_plain, sparse_attention

TOL = dict(atol=1e-10, rtol=1e-10)


@pytest.fixture
def kernels(monkeypatch):
    monkeypatch.setenv(fused.ENV, "auto")
    if not fused.kernels_available():
        pytest.skip(f"the fused kernels could not be built here ({fused._state.get('error')}); "
                    "the fallback is tested below")
    return fused


@pytest.fixture
def fresh_state(monkeypatch):
    """An empty loader state (restored afterwards), for the fallback tests."""
    saved = dict(fused._state)
    fused._state.clear()
    yield
    fused._state.clear()
    fused._state.update(saved)


def graph(num_nodes=40, num_edges=170, seed=0):
    """Unsorted edges with repeats and self-loops; the last 4 nodes receive no edge."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    dst = torch.randint(0, num_nodes - 4, (num_edges,), generator=gen)
    src[:5], dst[:5] = dst[:5], dst[:5]              # self-loops
    src[5:10], dst[5:10] = src[10:15], dst[10:15]    # repeated edges
    return torch.stack([src, dst])


def inputs(heads, dim, num_nodes=40, edge_index=None, gate=True, seed=1):
    gen = torch.Generator().manual_seed(seed)
    # one [N, 3, H, D] buffer, as the fused QKV projection: q, k, v rows are strided views
    qkv = (torch.randn(num_nodes, 3, heads, dim, generator=gen, dtype=torch.float64) * 1.5)
    qkv.requires_grad_()
    g = None
    if gate:
        g = torch.randn(edge_index.size(1), heads, dim, generator=gen, dtype=torch.float64)
        g.requires_grad_()
    return qkv, g


@pytest.mark.parametrize("heads,dim", [(4, 8), (2, 5), (3, 16)])  # 5: the runtime-D kernel
@pytest.mark.parametrize("gate", [False, True])
@pytest.mark.parametrize("return_scores", [False, True])
def test_fused_equals_plain_float64(kernels, heads, dim, gate, return_scores):
    ei = graph()
    qkv, g = inputs(heads, dim, edge_index=ei, gate=gate)
    scale, clamp = dim ** -0.5, 2.0  # a small clamp: many scores on both sides of it
    outs = {}
    for name in ("plain", "fused"):
        q, k, v = qkv.unbind(1)
        if name == "plain":
            o, p, _ = _sparse_attention_plain(q, k, v, ei, scale, g, clamp, return_scores, False)
        else:
            o, p = kernels.fused_sparse_attention(q, k, v, ei, scale, g, clamp, return_scores)
        outs[name] = (o, p)
    (o1, p1), (o2, p2) = outs["plain"], outs["fused"]
    torch.testing.assert_close(o2, o1, **TOL)
    assert o2[-4:].abs().max() == 0  # isolated targets: zero output, as the plain path
    if return_scores:
        torch.testing.assert_close(p2, p1, **TOL)
        clamped = (p1.sum(-1).abs() > clamp).float().mean()
        assert 0.05 < clamped < 0.95, "the inputs must exercise the clamp's both sides"
    else:
        assert p2 is None
    gen = torch.Generator().manual_seed(2)
    w_o = torch.randn(o1.shape, generator=gen, dtype=torch.float64)
    w_p = torch.randn(ei.size(1), heads, dim, generator=gen, dtype=torch.float64)
    wrt = [qkv] + ([g] if gate else [])
    grads = []
    for o, p in (outs["plain"], outs["fused"]):
        loss = (o * w_o).sum() + ((p * w_p).sum() if return_scores else 0.0)
        grads.append(torch.autograd.grad(loss, wrt))
    for a, b in zip(*grads):
        assert a.abs().max() > 0
        torch.testing.assert_close(b, a, **TOL)


@pytest.mark.parametrize("edge_dim", [None, 12])
def test_gt_layer_same_with_and_without_kernels(kernels, monkeypatch, edge_dim):
    """The whole GT layer (the edge stream included): same outputs and parameter gradients."""
    torch.manual_seed(0)
    layer = GraphTransformerLayer(16, 4, edge_dim=edge_dim).double()
    ei = graph(30, 120)
    x = torch.randn(30, 16, dtype=torch.float64)
    ea = torch.randn(120, edge_dim, dtype=torch.float64) if edge_dim else None
    results = []
    for mode in ("off", "auto"):
        monkeypatch.setenv(fused.ENV, mode)
        layer.zero_grad()
        out = layer(x, ei, ea)
        out = out if edge_dim else (out, None)  # (x, edge_attr) with an edge stream, else x
        loss = out[0].pow(2).sum() + (out[1].pow(2).sum() if edge_dim else 0)
        loss.backward()
        results.append((out, [p.grad.clone() for p in layer.parameters()]))
    (a, ga), (b, gb) = results
    torch.testing.assert_close(b[0], a[0], **TOL)
    if edge_dim:
        torch.testing.assert_close(b[1], a[1], **TOL)
    for x1, x2 in zip(ga, gb):
        torch.testing.assert_close(x2, x1, **TOL)


@pytest.mark.parametrize("return_scores", [False, True])
def test_fake_shapes_agree_with_the_kernels(kernels, return_scores):
    """The ops' fake versions (what ``torch.compile`` traces with) give the shapes, dtypes and
    strides of the real outputs (``torch.library.opcheck``'s fake-tensor test), with and
    without a gate."""
    ei = graph()
    for gate in (False, True):
        qkv, g = inputs(4, 8, edge_index=ei, gate=gate)
        q, k, v = (t.detach().contiguous() for t in qkv.unbind(1))
        g = None if g is None else g.detach()
        src, dst = ei[0], ei[1]
        perm, rowptr = kernels.csr_index(dst, 40)
        perm_s, rowptr_s = kernels.csr_index(src, 40)
        ops = torch.ops.graph_transformers
        out, per_dim, scores, weights = ops.sparse_attention_forward(
            q, k, v, g, src, perm, rowptr, 0.35, 2.0, return_scores)
        grad_per_dim = torch.randn_like(per_dim) if return_scores else None
        cases = [
            (ops.csr_index, (dst, 40)),
            (ops.sparse_attention_forward, (q, k, v, g, src, perm, rowptr, 0.35, 2.0,
                                            return_scores)),
            (ops.sparse_attention_backward, (torch.randn_like(out), grad_per_dim, q, k, v, g,
                                             src, perm, rowptr, dst, perm_s, rowptr_s, out,
                                             scores, weights, 0.35, 2.0))]
        for op, args in cases:
            torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor"))


def test_compiled_graph_takes_the_kernels(kernels):
    """Under ``torch.compile(fullgraph=True)`` the attention runs the kernels inside the one
    graph (their fake versions trace it; before, the compiled graph fell back to the plain
    ops, which inductor's CPU code ran about 5x slower), and output and gradients equal the
    plain path's (float64, 1e-10)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    ei = graph()
    qkv, g = inputs(4, 8, edge_index=ei, gate=True)
    targets: list[str] = []

    def record(gm, _inputs):
        targets.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return make_boxed_func(gm)

    def f(qkv, g):
        q, k, v = qkv.unbind(1)
        return sparse_attention(q, k, v, ei, 0.35, edge_gate=g, clamp=2.0)[0]

    torch._dynamo.reset()
    compiled = torch.compile(f, backend=aot_autograd(fw_compiler=record, bw_compiler=record),
                             fullgraph=True, dynamic=False)
    out = compiled(qkv, g)
    grads = torch.autograd.grad(out.pow(2).sum(), (qkv, g))
    q, k, v = qkv.unbind(1)
    ref = _sparse_attention_plain(q, k, v, ei, 0.35, g, 2.0, False, False)[0]
    ref_grads = torch.autograd.grad(ref.pow(2).sum(), (qkv, g))
    torch._dynamo.reset()
    assert "graph_transformers.sparse_attention_forward.default" in targets
    assert "graph_transformers.sparse_attention_backward.default" in targets
    torch.testing.assert_close(out, ref, **TOL)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, **TOL)


def test_fused_rejects_node_ids_out_of_range(kernels):
    qkv = torch.randn(5, 3, 2, 4)
    q, k, v = qkv.unbind(1)
    with pytest.raises(RuntimeError, match="outside \\[0, 5\\)"):
        kernels.fused_sparse_attention(q, k, v, torch.tensor([[0, 7], [1, 2]]), 0.5)
    with pytest.raises(RuntimeError, match="outside \\[0, 5\\)"):
        kernels.fused_sparse_attention(q, k, v, torch.tensor([[0, 1], [1, 5]]), 0.5)


def test_dispatch_rules(kernels):
    """Attention weights, 16-bit inputs and CUDA take the plain path; float32 / float64 CPU
    without weights take the fused one."""
    x = torch.randn(3, 2, 4)
    assert fused.use_fused_sparse_attention(x, return_weights=False)
    assert fused.use_fused_sparse_attention(x.double(), return_weights=False)
    assert not fused.use_fused_sparse_attention(x, return_weights=True)
    assert not fused.use_fused_sparse_attention(x.bfloat16(), return_weights=False)
    ei = torch.tensor([[0, 1, 2], [1, 2, 0]])
    _, _, w = sparse_attention(x, x, x, ei, 0.5, return_weights=True)
    assert w is not None and w.shape == (3, 2)


# ------------------------------------------------------------------ without the kernels
def test_fallback_when_the_build_fails(monkeypatch, fresh_state):
    """No compiler (or any build failure): one warning, then the plain path, same results."""
    def no_compiler():
        raise RuntimeError("simulated: no C++ compiler")
    monkeypatch.setattr(fused, "_build", no_compiler)
    monkeypatch.setenv(fused.ENV, "auto")
    x = torch.randn(4, 2, 3, dtype=torch.float64)
    ei = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
    with pytest.warns(RuntimeWarning, match="could not be built"):
        out, _, _ = sparse_attention(x, x, x, ei, 0.5)
    ref, _, _ = _sparse_attention_plain(x, x, x, ei, 0.5, None, 5.0, False, False)
    torch.testing.assert_close(out, ref, atol=0, rtol=0)
    assert not fused.kernels_available()
    monkeypatch.setenv(fused.ENV, "require")
    with pytest.raises(fused.FusedKernelError, match="no C\\+\\+ compiler"):
        fused.load_kernels()


def test_off_never_builds(monkeypatch, fresh_state):
    def must_not_build():
        raise AssertionError("built with GRAPH_TRANSFORMERS_KERNELS=off")
    monkeypatch.setattr(fused, "_build", must_not_build)
    monkeypatch.setenv(fused.ENV, "off")
    assert fused.load_kernels() is None
    x = torch.randn(3, 2, 4)
    out, _, _ = sparse_attention(x, x, x, torch.tensor([[0, 1], [1, 2]]), 0.5)
    assert out.shape == (3, 2, 4)
    with pytest.raises(fused.FusedKernelError, match="unavailable"):
        fused.fused_sparse_attention(x, x, x, torch.tensor([[0, 1], [1, 2]]), 0.5)


def test_unknown_mode(monkeypatch):
    monkeypatch.setenv(fused.ENV, "fast")
    with pytest.raises(ValueError, match="GRAPH_TRANSFORMERS_KERNELS must be one of"):
        fused.kernel_mode()
