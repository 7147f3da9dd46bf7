"""Linear-time global attention per graph (``nn.kernel_attention``): the elu+1 linear attention of
Katharopoulos et al. (2020) and SGFormer's simple global attention (Wu et al. 2023).

Both against naive references that form the ``N × N`` kernel matrix of each graph explicitly
(float64); SGFormer against PyG's ``SGFormerAttention`` on one graph (``qk_norm="row"``); per-graph
isolation (a graph alone = the same graph batched with others, sorted or interleaved ids, with or
without ``num_graphs``); permutation equivariance; gradients (``gradcheck`` in float64); float32
against float64; no host reads on the meta device; bf16 autocast; input errors; the GPS layer and
model with ``attention="linear" | "sgformer"`` (forward + backward, batch independence); one epoch
through :func:`graph_transformers.train`."""
from __future__ import annotations

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from conftest import HostReads
from torch_geometric.data import Batch, Data

import graph_transformers as gtr
from graph_transformers.device_check import synthetic_molecules
from graph_transformers.models import GPS
from graph_transformers.nn import GPSLayer, LinearGlobalAttention, SGFormerAttention
from graph_transformers.nn.kernel_attention import segment_sum, sgformer_attention
from graph_transformers.training.model_sections import model_section

Tensor = torch.Tensor
D, H = 8, 2
SIZES = (4, 7, 1, 5)  # a single-node graph included
KINDS = ("linear", "sgformer", "sgformer_row")


def _layer(kind: str, dtype=torch.float64, seed: int = 0):
    torch.manual_seed(seed)
    if kind == "linear":
        layer = LinearGlobalAttention(D, H)
    else:
        layer = SGFormerAttention(D, H, qk_norm="row" if kind == "sgformer_row" else "frobenius")
    for p in layer.parameters():  # non-zero biases, larger weights: a stronger check
        torch.nn.init.normal_(p, std=0.5)
    return layer.to(dtype).eval()


def _graphs(sizes=SIZES, dtype=torch.float64, seed: int = 0) -> list[Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, D, generator=g, dtype=dtype) for n in sizes]


def _batch_of(xs) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.cat(xs)
    batch = torch.cat([torch.full((t.size(0),), i) for i, t in enumerate(xs)])
    return x, batch


# ----------------------------------------------------------------------------- naive references
def naive_linear(layer: LinearGlobalAttention, x: Tensor) -> Tensor:
    """One graph, per head: the ``n × n`` kernel matrix ``A = φ(Q)φ(K)ᵀ`` (φ = elu + 1), each
    row divided by its sum (+ ε), times ``V``; heads concatenated, output projection."""
    d, dk = layer.hidden_dim, layer.head_dim
    W, b = layer.qkv.weight, layer.qkv.bias
    q, k, v = (x @ W[i * d:(i + 1) * d].T + b[i * d:(i + 1) * d] for i in range(3))

    def phi(t):
        return torch.where(t > 0, t + 1, torch.exp(t))  # elu(t) + 1

    heads = []
    for h in range(layer.num_heads):
        c = slice(h * dk, (h + 1) * dk)
        A = phi(q[:, c]) @ phi(k[:, c]).T  # [n, n]
        heads.append(A @ v[:, c] / (A.sum(1, keepdim=True) + layer.eps))
    return torch.cat(heads, 1) @ layer.out.weight.T + layer.out.bias


def naive_sgformer(layer: SGFormerAttention, x: Tensor) -> Tensor:
    """One graph of ``n`` nodes, SGFormer's formula literally with the ``n × n`` matrix: ``Q̃``,
    ``K̃`` normalized (Frobenius over the graph's nodes and all heads, or per row),
    ``D = diag(1 + Q̃K̃ᵀ1 / n)``, ``D⁻¹(V + Q̃K̃ᵀV / n)`` per head, heads averaged."""
    n, d, Hn = x.size(0), layer.hidden_dim, layer.num_heads
    q, k, v = (lin(x).view(n, Hn, d) for lin in (layer.q, layer.k, layer.v))
    if layer.qk_norm == "frobenius":
        q, k = q / q.norm(), k / k.norm()  # torch.norm over the whole [n, H, d] tensor
    else:
        q, k = q / q.norm(dim=-1, keepdim=True), k / k.norm(dim=-1, keepdim=True)
    heads = []
    for h in range(Hn):
        A = q[:, h] @ k[:, h].T  # [n, n]
        Dg = 1 + A.sum(1, keepdim=True) / n
        heads.append((v[:, h] + A @ v[:, h] / n) / Dg)
    return torch.stack(heads).mean(0)


def _naive(kind, layer, x):
    return naive_linear(layer, x) if kind == "linear" else naive_sgformer(layer, x)


# ----------------------------------------------------------------------------- the layers
@pytest.mark.parametrize("kind", KINDS)
def test_matches_the_naive_quadratic_form_per_graph(kind):
    layer = _layer(kind)
    xs = _graphs()
    x, batch = _batch_of(xs)
    want = torch.cat([_naive(kind, layer, t) for t in xs])
    with torch.no_grad():
        got = layer(x, batch=batch, num_graphs=len(xs))
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
        # one graph without batch: the plain-matmul path
        torch.testing.assert_close(layer(xs[1]), _naive(kind, layer, xs[1]), rtol=1e-10,
                                   atol=1e-10)


def test_sgformer_row_matches_pyg_sgformer_attention_on_one_graph():
    """PyG's ``SGFormerAttention`` (no padding: one graph, float32 only) = ``qk_norm="row"``
    without biases, weights copied."""
    from torch_geometric.nn.attention import SGFormerAttention as PyGSGFormerAttention
    torch.manual_seed(0)
    ours = SGFormerAttention(D, H, qk_norm="row", bias=False).eval()
    pyg = PyGSGFormerAttention(D, H, head_channels=D).eval()
    for name in ("q", "k", "v"):
        getattr(pyg, name).load_state_dict(getattr(ours, name).state_dict())
    x = torch.randn(9, D)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), pyg(x.unsqueeze(0))[0], rtol=1e-5, atol=1e-6)


def test_sgformer_frobenius_is_the_paper_formula():
    """``sgformer_attention`` with ``(Q̃K̃ᵀ)`` made explicit on one graph, one head: the paper's
    ``D⁻¹[V + Q̃(K̃ᵀV)/N]``, with ``D = diag(1 + Q̃(K̃ᵀ1)/N)``."""
    g = torch.Generator().manual_seed(1)
    n, c = 6, 5
    q, k, v = (torch.randn(n, 1, c, generator=g, dtype=torch.float64) for _ in range(3))
    qt = q[:, 0] / torch.linalg.matrix_norm(q[:, 0])  # Frobenius
    kt = k[:, 0] / torch.linalg.matrix_norm(k[:, 0])
    Dm = torch.diag(1 + qt @ (kt.T @ torch.ones(n, dtype=torch.float64)) / n)
    want = torch.linalg.solve(Dm, v[:, 0] + qt @ (kt.T @ v[:, 0]) / n)
    torch.testing.assert_close(sgformer_attention(q, k, v)[:, 0], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_graphs_of_a_batch_never_attend_to_each_other(kind):
    layer = _layer(kind)
    xs = _graphs()
    x, batch = _batch_of(xs)
    with torch.no_grad():
        alone = [layer(t) for t in xs]
        for num_graphs in (len(xs), None):  # None: the sums get num_nodes rows, same result
            out = layer(x, batch=batch, num_graphs=num_graphs)
            torch.testing.assert_close(out, torch.cat(alone), rtol=1e-10, atol=1e-10)
        # changing another graph changes nothing in graph 0
        x2 = x.clone()
        x2[SIZES[0]:] += 3.0
        torch.testing.assert_close(layer(x2, batch=batch)[:SIZES[0]], alone[0], rtol=1e-10,
                                   atol=1e-10)
        # interleaved (unsorted) graph ids: segment sums need no sorting
        perm = torch.randperm(x.size(0), generator=torch.Generator().manual_seed(3))
        torch.testing.assert_close(layer(x[perm], batch=batch[perm], num_graphs=len(xs)),
                                   torch.cat(alone)[perm], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_permutation_equivariance_within_graphs(kind):
    layer = _layer(kind)
    xs = _graphs()
    x, batch = _batch_of(xs)
    with torch.no_grad():
        out = layer(x, batch=batch, num_graphs=len(xs))
        # a permutation inside each graph, the batch kept sorted
        g = torch.Generator().manual_seed(5)
        offsets = torch.cumsum(torch.tensor((0,) + SIZES[:-1]), 0)
        perm = torch.cat([o + torch.randperm(n, generator=g) for o, n in zip(offsets, SIZES)])
        torch.testing.assert_close(layer(x[perm], batch=batch, num_graphs=len(xs)), out[perm],
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_flow_and_gradcheck(kind):
    layer = _layer(kind)
    xs = _graphs((3, 2, 4))
    x, batch = _batch_of(xs)
    x.requires_grad_(True)
    layer(x, batch=batch, num_graphs=3).square().sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    small = x.detach()[:5].clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: layer(t, batch=batch[:5], num_graphs=2), (small,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_float32_agrees_with_float64(kind):
    layer64 = _layer(kind)
    layer32 = _layer(kind, dtype=torch.float32)
    xs = _graphs((30, 50, 20))
    x, batch = _batch_of(xs)
    with torch.no_grad():
        ref = layer64(x, batch=batch, num_graphs=3)
        got = layer32(x.float(), batch=batch, num_graphs=3)
    rel = (got.double() - ref).abs().max() / ref.abs().max()
    assert got.dtype == torch.float32 and rel < 1e-5, rel


@pytest.mark.parametrize("kind", KINDS)
def test_bf16_autocast_keeps_sums_in_float32(kind):
    layer = _layer(kind, dtype=torch.float32)
    xs = _graphs((6, 9), dtype=torch.float32)
    x, batch = _batch_of(xs)
    with torch.no_grad():
        ref = layer(x, batch=batch, num_graphs=2)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = layer(x, batch=batch, num_graphs=2)
    assert torch.isfinite(out).all()
    assert (out.float() - ref).abs().max() / ref.abs().max() < 5e-2


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("num_graphs", [3, None])
def test_no_host_reads_on_the_meta_device(kind, num_graphs):
    layer = _layer(kind, dtype=torch.float32).train().to("meta")
    x = torch.randn(9, D, device="meta", requires_grad=True)
    batch = torch.zeros(9, dtype=torch.long, device="meta")
    audit = HostReads()
    with audit:
        layer(x, batch=batch, num_graphs=num_graphs).sum().backward()
    assert not audit.reads, audit.reads


@pytest.mark.parametrize("attention", ["linear", "sgformer"])
def test_gps_model_on_the_meta_device_without_host_reads(attention):
    torch.manual_seed(0)
    model = GPS(16, 2, 2, out_dim=1, num_node_types=28, num_edge_types=4, pe=None,
                attention=attention).to("meta").train()
    batch = Batch.from_data_list(synthetic_molecules(4, seed=2)).to("meta")
    audit = HostReads()
    with audit:
        model(batch).sum().backward()
    assert not audit.reads, audit.reads


def test_input_errors():
    att = LinearGlobalAttention(D, H)
    with pytest.raises(ValueError, match=r"x \[num_nodes, 8\]"):
        att(torch.randn(2, 3, D))  # a padded dense batch
    with pytest.raises(ValueError, match="batch must be"):
        att(torch.randn(4, D), batch=torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="batch must be"):
        att(torch.randn(4, D), batch=torch.zeros(4))
    with pytest.raises(ValueError, match="num_graphs"):
        att(torch.randn(4, D), batch=torch.zeros(4, dtype=torch.long), num_graphs=0)
    with pytest.raises(ValueError, match="divisible"):
        LinearGlobalAttention(10, 3)
    with pytest.raises(ValueError, match="qk_norm"):
        SGFormerAttention(D, qk_norm="l1")
    with pytest.raises(ValueError, match=r"x \[num_nodes"):
        SGFormerAttention(D)(torch.randn(4, D + 1))


def test_segment_sum_and_reset_parameters():
    src = torch.arange(6.0).view(3, 2)
    torch.testing.assert_close(segment_sum(src, torch.tensor([1, 0, 1]), 2),
                               torch.tensor([[2.0, 3.0], [4.0, 6.0]]))
    torch.testing.assert_close(segment_sum(src, None), src.sum(0, keepdim=True))
    assert segment_sum(src, torch.tensor([1, 0, 1])).shape == (3, 2)  # num_nodes rows
    for layer in (LinearGlobalAttention(D, H), SGFormerAttention(D, H)):
        before = [p.clone() for p in layer.parameters()]
        layer.reset_parameters()
        assert any(not torch.equal(a, b) for a, b in zip(before, layer.parameters()))


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_of_one_graph_takes_the_one_graph_path(kind):
    """num_graphs=1 (a Cluster-GCN batch) gives the batch=None result through plain products:
    no [num_nodes, heads, m, d_v] outer product is formed (it made GPS-linear 2× slower than
    GPS-Performer on 10⁴-node cluster batches)."""
    layer = _layer(kind)
    x = _graphs((9,))[0]
    shapes = []

    class _Shapes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            shapes.extend(tuple(t.shape) for t in torch.utils._pytree.tree_leaves(out)
                          if isinstance(t, torch.Tensor))
            return out

    with torch.no_grad(), _Shapes():
        got = layer(x, batch=torch.zeros(9, dtype=torch.long), num_graphs=1)
    torch.testing.assert_close(got, _naive(kind, layer, x), rtol=1e-10, atol=1e-10)
    # no per-node outer product [num_nodes, heads, m, d_v]
    assert not [s for s in shapes if len(s) == 4 and s[:2] == (9, H) and min(s[2:]) > 1], shapes


def test_memory_is_linear_in_the_number_of_nodes():
    """One graph of 20,000 nodes: the N × N matrix (1.6 GB in float32) is never formed; the
    forward + backward peak stays far below it (measured via the largest tensor created)."""
    sizes = []

    class _Largest(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in torch.utils._pytree.tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    sizes.append(t.numel())
            return out

    n = 20_000
    for layer in (LinearGlobalAttention(16, 4), SGFormerAttention(16, 1)):
        x = torch.randn(n, 16, requires_grad=True)
        with _Largest():
            layer(x).sum().backward()
        with _Largest():  # a batch of two graphs: per-node outer products, still O(N d d_k)
            layer(x, batch=torch.arange(n) // (n // 2), num_graphs=2).sum().backward()
    assert max(sizes) <= n * 16 * 16


# ----------------------------------------------------------------------------- GPS
@pytest.mark.parametrize("attention", ["linear", "sgformer"])
@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_gps_layer_forward_backward_and_batch_independence(attention, norm_position):
    torch.manual_seed(0)
    layer = GPSLayer(16, 4, mpnn="gine", attention=attention, norm="layer",
                     norm_position=norm_position).double()
    graphs = []
    g = torch.Generator().manual_seed(0)
    for n in (5, 8, 3):
        ei = torch.stack([torch.arange(n - 1), torch.arange(1, n)])
        ei = torch.cat([ei, ei.flip(0)], 1)
        graphs.append(Data(x=torch.randn(n, 16, generator=g, dtype=torch.float64),
                           edge_index=ei,
                           edge_attr=torch.randn(ei.size(1), 16, generator=g,
                                                 dtype=torch.float64)))
    b = Batch.from_data_list(graphs)
    layer.eval()
    with torch.no_grad():
        out = layer(b.x, b.edge_index, b.edge_attr, b.batch, num_graphs=b.num_graphs)
        alone = layer(graphs[1].x, graphs[1].edge_index, graphs[1].edge_attr)
        torch.testing.assert_close(out[5:13], alone, rtol=1e-10, atol=1e-10)
        out2 = layer(b.x, b.edge_index, b.edge_attr, b.batch)  # num_graphs not given
        torch.testing.assert_close(out2, out, rtol=1e-10, atol=1e-10)
    layer.train()
    out = layer(b.x, b.edge_index, b.edge_attr, b.batch, num_graphs=b.num_graphs)
    out.square().sum().backward()
    for name, p in layer.attention.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    with pytest.raises(NotImplementedError, match="full softmax attention"):
        layer.attention_map(b.x, b.batch)


@pytest.mark.parametrize("attention", ["linear", "sgformer"])
def test_gps_model_forward_backward(attention):
    torch.manual_seed(0)
    graphs = synthetic_molecules(6, seed=2)
    batch = Batch.from_data_list(graphs)
    model = GPS(16, 2, 2, out_dim=1, num_node_types=28, num_edge_types=4, pe=None,
                attention=attention, norm="layer")
    out = model(batch)
    assert out.shape == (6, 1) and torch.isfinite(out).all()
    out.square().mean().backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if "attention" in n)
    model.eval()
    with torch.no_grad():  # each graph's prediction is independent of the rest of the batch
        alone = torch.cat([model(Batch.from_data_list([g])) for g in graphs])
        torch.testing.assert_close(model(batch), alone, rtol=1e-5, atol=1e-5)


def test_config_accepts_the_new_attentions():
    for attention in ("linear", "sgformer"):
        assert model_section("gps")(attention=attention).attention == attention
    with pytest.raises(ValueError):
        model_section("gps")(attention="linformer")


@pytest.mark.parametrize("attention", ["linear", "sgformer"])
def test_one_epoch_through_train(attention, tmp_path):
    config = {"name": f"gps-{attention}",
              "model": {"name": "gps", "hidden_dim": 16, "num_layers": 1, "num_heads": 2,
                        "pe": None, "use_edge_features": True, "attention": attention},
              "data": {"batch_size": 8, "task": "regression"},
              "encodings": {"lap_pe": None}, "seed": 0,
              "trainer": {"max_epochs": 1, "enable_progress_bar": False}}
    metrics = gtr.train(config, dataset=synthetic_molecules(32, seed=1), out_dir=tmp_path / "run")
    assert all(math.isfinite(v) for split in ("val", "test") for v in metrics[split].values())
