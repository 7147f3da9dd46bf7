"""Device and precision correctness, checked on the CPU (issue 15, part 2).

- Every model runs forward and backward with its weights and batch on PyTorch's ``meta`` device:
  a tensor created on another device and mixed in, or a value read back to the host (``.item()``,
  ``int(t)``, ``bool(t)``, boolean-mask indexing: a device sync on CUDA) fails there, and an
  ATen-level audit reports every op whose tensor inputs sit on different devices.
- Every model runs in float64 with an audit of every op for mixed floating dtypes (a tensor
  created in the default float32 and silently promoted).
- bf16 autocast vs float32: one training step (loss and gradients) per model on a fixed batch,
  with stated tolerances and a finite loss.
- ``torch.compile`` (``model.compile: true``) on one model, the debug switch of the value checks,
  the aligned SDPA bias, the allocator and DataLoader settings.
"""
from __future__ import annotations

import copy

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch_geometric.data import Batch
from torch_geometric.transforms import Compose

from graph_transformers.core import checks
from graph_transformers.core.checks import check_batch, set_debug, validate_dataset
from graph_transformers.device_check import synthetic_molecules
from graph_transformers.encodings import (AddLaplacianPE, AddRRWP, AddRWSE, AddShortestPaths,
                                          AddSVDPE)
from graph_transformers.models.utils import check_inputs
from graph_transformers.models import (EGT, GPS, GRIT, GatedGCN, Graphormer, GraphTransformer,
                                       GRPE, ModelOutput)
from graph_transformers.nn.attention import aligned_bias
from graph_transformers.training.module import split_output

COMMON = dict(out_dim=1, num_node_types=28)
EDGES = dict(num_edge_types=4, use_edge_features=True)
#: small versions of the checked models, with their optional paths on (virtual nodes, distance
#: objective, LapPE/SVD sign flips, size groups)
MODELS = {
    "gt": lambda: GraphTransformer(16, 2, 2, pe="lap", pe_dim=4, **COMMON),
    "gt_edge": lambda: GraphTransformer(16, 2, 2, pe="lap", pe_dim=4, sign_flip="graph",
                                        **COMMON, **EDGES),
    "gt_full": lambda: GraphTransformer(16, 2, 2, pe=None, full_graph=True, **COMMON),
    "egt": lambda: EGT(16, 8, 2, 2, pe="svd", pe_dim=4, num_virtual_nodes=1,
                       distance_objective=True, distance_weight=0.1, **COMMON, **EDGES),
    "egt_distance": lambda: EGT(16, 8, 2, 2, pe="lap", pe_dim=4, structure="distance",
                                max_hops=3, variant="constrained", **COMMON, **EDGES),
    "grpe": lambda: GRPE(16, 2, 2, max_distance=3, dropout=0.0, attn_dropout=0.0,
                         size_groups=2, **COMMON, **EDGES),
    "graphormer": lambda: Graphormer(16, 2, 2, max_distance=3, dropout=0.0,
                                     attn_dropout=0.0, size_groups=2, **COMMON, **EDGES),
    "gps": lambda: GPS(16, 2, 2, mpnn="gine", pe="rwse", pe_dim=4, pe_embed_dim=4, **COMMON,
                       **EDGES),
    "gatedgcn": lambda: GatedGCN(16, 2, **COMMON, **EDGES),
    "grit": lambda: GRIT(16, 2, 2, walk_length=4, attn_dropout=0.0, **COMMON, **EDGES),
}
#: the models of the bf16 test (one per family of the issue). GRIT is left out: its signed square
#: root's derivative 1 / (2 √|s|) is unbounded near 0, so its gradients are ill-conditioned (fp32
#: vs fp64: up to 1e-2 on some parameters); bf16 and fp16 steps differ from fp32 by about 4% in
#: gradient norm on this batch, too close to the tolerance to pin (docs/grit.md)
BF16_MODELS = ["gt", "gt_edge", "egt", "grpe", "graphormer", "gps", "gatedgcn"]


@pytest.fixture(scope="module")
def batch() -> Batch:
    pre = Compose([AddLaplacianPE(4), AddSVDPE(2), AddRWSE(4), AddShortestPaths(3), AddRRWP(4)])
    return Batch.from_data_list([pre(d) for d in synthetic_molecules(12, seed=3)])


def _loss(model, batch) -> torch.Tensor:
    out, aux = split_output(model(batch))
    loss = torch.nn.functional.l1_loss(out.view(-1).float(), batch.y.float())
    return loss + aux if aux is not None else loss


class _DeviceAudit(TorchDispatchMode):
    """Records ATen ops whose tensor arguments live on more than one device (0-dim CPU tensors,
    which PyTorch treats as scalars, excepted) and every read of a value to the host
    (``_local_scalar_dense``, behind ``.item()``, ``int()``, ``bool()``) of a non-CPU tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.mixed: list[str] = []
        self.host_reads: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [a for a in torch.utils._pytree.tree_leaves((args, kwargs))
                   if isinstance(a, torch.Tensor)]
        devices = {t.device.type for t in tensors if not (t.device.type == "cpu" and t.dim() == 0)}
        if len(devices) > 1:
            self.mixed.append(f"{func} on {sorted(devices)}")
        if func.overloadpacket.__name__ in ("_local_scalar_dense", "nonzero", "item") and \
                any(t.device.type != "cpu" for t in tensors):
            self.host_reads.append(str(func))
        return func(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_backward_on_meta_device_without_syncs(name, batch):
    """Weights and batch on ``meta``: no host reads, no tensors from another device."""
    torch.manual_seed(0)
    model = MODELS[name]().to("meta").train()
    b = batch.clone().to("meta")
    audit = _DeviceAudit()
    with audit:
        loss = _loss(model, b)
        loss.backward()
    assert loss.device.type == "meta"
    assert not audit.host_reads, f"{name}: values read to the host: {audit.host_reads}"
    assert not audit.mixed, f"{name}: ops mixing devices: {audit.mixed[:5]}"
    assert all(p.grad is not None and p.grad.device.type == "meta"
               for p in model.parameters() if p.requires_grad and p.grad is not None)


def test_grit_pairs_computed_per_batch_on_meta_device_without_syncs(batch):
    """GRIT with ``encodings.rrwp.cache_pairs: false`` computes the RRWP pairs in its forward
    (``encodings.rrwp.batch_rrwp``): on ``meta``, with no host reads and no other device; in
    float64, with no mixed dtypes."""
    torch.manual_seed(0)
    bare = batch.clone()
    del bare.rrwp_pair
    model = MODELS["grit"]().to("meta").train()
    audit = _DeviceAudit()
    with audit:
        loss = _loss(model, bare.clone().to("meta"))
        loss.backward()
    assert loss.device.type == "meta"
    assert not audit.host_reads and not audit.mixed, (audit.host_reads, audit.mixed[:5])
    model = MODELS["grit"]().double().train()
    b = bare.clone()
    b.rrwp, b.y = b.rrwp.double(), b.y.double()
    dtypes = _DtypeAudit()
    with dtypes:
        _loss(model, b).backward()
    assert not dtypes.mixed, dtypes.mixed[:5]


class _DtypeAudit(TorchDispatchMode):
    """Records ATen ops that mix floating dtypes among their tensor arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.mixed: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        dtypes = {a.dtype for a in torch.utils._pytree.tree_leaves((args, kwargs))
                  if isinstance(a, torch.Tensor) and a.is_floating_point() and a.dim() > 0}
        if len(dtypes) > 1:
            self.mixed.append(f"{func}: {sorted(map(str, dtypes))}")
        return func(*args, **kwargs)


def _as_double(batch: Batch) -> Batch:
    b = batch.clone()
    for key in ("lap_pe", "svd_pe", "rwse", "rrwp", "rrwp_pair", "y"):
        setattr(b, key, getattr(b, key).double())
    return b


@pytest.mark.parametrize("name", sorted(MODELS))
def test_float64_end_to_end_without_mixed_dtypes(name, batch):
    """A float64 model on a float64 batch: every float tensor it creates is float64."""
    torch.manual_seed(0)
    model = MODELS[name]().double().train()
    audit = _DtypeAudit()
    with audit:
        out, _ = split_output(model(_as_double(batch)))
        out.sum().backward()
    assert out.dtype == torch.float64
    assert not audit.mixed, f"{name}: ops mixing float dtypes: {audit.mixed[:5]}"


#: bf16 vs fp32 on one training step: relative differences of the loss and of the gradients
#: (L2 over all parameters). bf16 keeps 8 mantissa bits (relative rounding 2^-9 ≈ 2e-3 per op).
#: Measured on this batch (CPU autocast): loss 2e-6 (EGT) to 1.5e-3 (Graphormer), gradients
#: 2.8e-3 (GT) to 1.7e-2 (GPS); the tolerances leave a factor of about 3-6. fp16 is closer: loss
#: 4e-6 to 5e-5, gradients 3e-4 to 2.3e-3.
BF16_LOSS_TOL = 1e-2
BF16_GRAD_TOL = 5e-2


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", BF16_MODELS)
def test_bf16_autocast_step_matches_fp32(name, half, batch):
    """bf16 (``bf16-mixed``) and fp16 (``16-mixed``; 5 more mantissa bits than bf16, range to
    65504) autocast steps against float32, with the same tolerances."""
    torch.manual_seed(0)
    model = MODELS[name]().train()
    results = {}
    for precision in ("fp32", "bf16"):
        m = copy.deepcopy(model)
        torch.manual_seed(1)  # the same sign flips in both steps
        with torch.autocast("cpu", dtype=half, enabled=precision == "bf16"):
            loss = _loss(m, batch)
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in m.parameters() if p.grad is not None])
        results[precision] = (loss.detach(), grads)
    (l32, g32), (l16, g16) = results["fp32"], results["bf16"]
    assert torch.isfinite(l16) and torch.isfinite(g16).all()
    loss_rel = float((l16 - l32).abs() / l32.abs())
    grad_rel = float((g16 - g32).norm() / g32.norm())
    print(f"{name}: {half} vs fp32 loss rel {loss_rel:.2e}, grad rel {grad_rel:.2e}")
    assert loss_rel < BF16_LOSS_TOL, f"{name}: loss {float(l16)} (bf16) vs {float(l32)}"
    assert grad_rel < BF16_GRAD_TOL, f"{name}: gradients differ by {grad_rel:.3f}"


def test_value_checks_follow_the_debug_switch(batch):
    bad = batch.clone()
    bad.lap_pe = bad.lap_pe.clone()
    bad.lap_pe[0, 0] = float("nan")
    with pytest.raises(ValueError, match="lap_pe contains NaN"):
        check_inputs(bad)  # CPU tensors: checked by default (a model's checks)
    with pytest.raises(ValueError, match="lap_pe contains NaN"):
        check_batch(bad, encodings=("lap_pe",))  # the ground floor's, told what to read
    check_batch(bad)  # an attribute nobody named is not read
    try:
        set_debug(False)
        check_inputs(bad)  # switched off: no value is read
        assert not checks.checks_enabled(bad.x)
        set_debug(True)
        assert checks.checks_enabled(bad.x.to("meta"))  # debug mode: every device
    finally:
        set_debug(None)
    assert not checks.checks_enabled(bad.x.to("meta"))  # default: accelerators skip them
    with pytest.raises(ValueError, match="graph 2: x contains NaN"):
        graphs = synthetic_molecules(3)
        graphs[2].x = graphs[2].x.float()
        graphs[2].x[0] = float("nan")
        validate_dataset(graphs)


def test_debug_env_variable_and_pyg_switch(monkeypatch):
    import torch_geometric
    meta = torch.zeros(2, device="meta")
    monkeypatch.setenv(checks.DEBUG_ENV, "1")
    assert checks.checks_enabled(meta)
    monkeypatch.delenv(checks.DEBUG_ENV)
    with torch_geometric.debug():
        assert checks.checks_enabled(meta)
    assert not checks.checks_enabled(meta)


def test_aligned_bias_keeps_values_and_aligns_strides():
    bias = torch.randn(3, 2, 13, 13)
    out = aligned_bias(bias, dtype=torch.bfloat16)
    assert out.shape == bias.shape and out.dtype == torch.bfloat16
    assert out.stride(-1) == 1 and all(s % 16 == 0 for s in out.stride()[:-1])
    assert torch.equal(out, bias.to(torch.bfloat16))
    same = aligned_bias(out, dtype=torch.bfloat16)
    assert same.data_ptr() == out.data_ptr()  # already aligned: no copy
    q, k, v = torch.randn(3, 2, 3, 13, 4).unbind(2)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    got = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=aligned_bias(bias))
    torch.testing.assert_close(got, ref, rtol=0, atol=1e-6)


def test_graphormer_uses_sdpa_with_its_bias(batch):
    from graph_transformers.device_measure import sdpa_backends
    torch.manual_seed(0)
    model = MODELS["graphormer"]().eval()
    with torch.no_grad():
        assert sdpa_backends(lambda: model(batch)) in ("cpu-flash", "math")
        assert sdpa_backends(lambda: MODELS["egt"]().eval()(batch)) == "none"


def test_allocator_only_for_cpu_training(monkeypatch):
    from graph_transformers.training import allocator
    calls = []
    monkeypatch.setattr(allocator, "keep_freed_memory", lambda enable=True: calls.append(1) or True)
    assert not allocator.configure_for_training("cuda")
    assert not allocator.configure_for_training("gpu")
    assert calls == []
    monkeypatch.setattr(allocator.sys, "platform", "linux")
    assert allocator.configure_for_training("cpu") and calls == [1]
    monkeypatch.setattr(allocator.sys, "platform", "darwin")
    assert not allocator.configure_for_training("cpu")


def test_loader_options(monkeypatch):
    from graph_transformers.training import device
    cpu = device.loader_options("auto", "auto", "cpu")
    assert cpu == dict(num_workers=0, persistent_workers=False, pin_memory=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(device.os, "sched_getaffinity", lambda _: set(range(16)), raising=False)
    gpu = device.loader_options("auto", "auto", "gpu", devices=2)
    assert gpu == dict(num_workers=4, persistent_workers=True, pin_memory=True)
    assert device.loader_options(3, False, "gpu") == dict(num_workers=3, persistent_workers=True,
                                                          pin_memory=False)


def test_eval_device_is_where_the_run_trained(monkeypatch):
    from graph_transformers.training import device
    assert device.eval_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert device.eval_device("auto") == torch.device("cpu")
    assert device.eval_device("gpu") == torch.device("cpu")  # a GPU run evaluated on a laptop
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for accelerator in ("auto", "gpu", "cuda"):
        assert device.eval_device(accelerator) == torch.device("cuda", 0)
    assert device.eval_device("cpu") == torch.device("cpu")


def test_final_evaluation_runs_on_the_training_device(monkeypatch, tmp_path):
    """Regression: Lightning hands the model back on the CPU after ``fit``, and the final
    evaluation of every split ran there even for a GPU run (minutes for PATTERN on the first
    lent H200, which the device command's time limit then cut off)."""
    from graph_transformers.training import finish
    seen = []
    monkeypatch.setattr(finish, "eval_device", lambda acc: seen.append(acc) or torch.device("cpu"))
    real = finish.evaluate
    devices = []

    def spy(model, spec, loader, device="cpu", task=None):
        devices.append(device)
        return real(model, spec, loader, device=device, task=task)

    monkeypatch.setattr(finish, "evaluate", spy)
    from pathlib import Path

    from graph_transformers.cli import main
    config = Path(finish.__file__).resolve().parents[1] / "configs" / "csl_gt.yaml"
    assert main(["train", "--config", str(config), "--out", str(tmp_path / "run"), "--set",
                 "trainer.max_epochs=1", "trainer.accelerator=cpu", "model.num_layers=1",
                 "model.hidden_dim=8", "model.num_heads=2", "data.batch_size=30",
                 "trainer.enable_progress_bar=false"]) == 0
    assert seen and set(seen) == {"cpu"}
    assert devices and all(d == torch.device("cpu") for d in devices)


@pytest.mark.slow
def test_torch_compile_option_matches_eager(batch, tmp_path):
    """``model.compile: true`` compiles in place (checkpoint keys unchanged) and gives the eager
    loss and gradients on two batches of different shapes (dynamic shapes)."""
    from graph_transformers.training.device import compile_model
    torch.manual_seed(0)
    eager = MODELS["gatedgcn"]().train()
    compiled = compile_model(copy.deepcopy(eager))
    assert compiled.state_dict().keys() == eager.state_dict().keys()
    small = Batch.from_data_list(batch.to_data_list()[:5])
    for b in (batch, small):
        for m in (eager, compiled):
            m.zero_grad()
        l_e, l_c = _loss(eager, b), _loss(compiled, b)
        l_e.backward()
        l_c.backward()
        torch.testing.assert_close(l_c, l_e, rtol=1e-5, atol=1e-6)
        for (n, p), q in zip(eager.named_parameters(), compiled.parameters()):
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=n)


def test_model_output_type_is_kept():
    assert ModelOutput._fields == ("out", "aux_loss")


def test_sdpa_head_padding_gives_the_same_attention():
    from graph_transformers.nn.attention import sdpa
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 4, 7, 10).unbind(0)
    bias = torch.randn(2, 4, 7, 7)
    bias[..., -1] = float("-inf")
    ref = sdpa(q, k, v, bias, pad_head_dim=False)
    got = sdpa(q, k, v, aligned_bias(bias), pad_head_dim=True)
    assert got.shape == ref.shape
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)


def test_validate_dataset_reads_the_collated_storage():
    from torch_geometric.data import InMemoryDataset

    class Graphs(InMemoryDataset):
        def __init__(self, graphs):
            super().__init__(None)
            self._data, self.slices = self.collate(graphs)

    graphs = synthetic_molecules(4)
    validate_dataset(Graphs(graphs))  # clean data passes
    graphs[1].edge_index = graphs[1].edge_index.clone()
    graphs[1].edge_index[0, 0] = graphs[1].num_nodes  # one past its own graph
    with pytest.raises(ValueError, match="outside their graph"):
        validate_dataset(Graphs(graphs), "toy")
