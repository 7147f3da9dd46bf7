"""The device check (``benchmarks/gpu_check.py`` / ``graph-transformers check-device``) as a CPU
smoke run with tiny models on synthetic molecules (issue 15, part 4)."""
from __future__ import annotations

import json

import pytest

from graph_transformers import device_check, device_compiled, device_measure
from graph_transformers.cli.parser import build_parser

SDPA_MODELS = {"graphormer", "gps"}


@pytest.mark.slow
def test_cpu_smoke_run_writes_the_reports(tmp_path):
    import torch
    out = tmp_path / "gpu_check"
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        rc = device_check.main(["--device", "cpu", "--synthetic", "--tiny", "--batch-size", "8",
                                "--steps", "1", "--epoch-graphs", "16", "--out", str(out)])
        assert torch.backends.cuda.matmul.allow_tf32  # the check restores the global setting
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    result = json.loads((out / "gpu_check.json").read_text())
    report = (out / "gpu_check.md").read_text()
    assert rc == 0 and result["ok"], result
    assert set(result["models"]) == set(device_check.MODELS)
    assert result["data"].startswith("SYNTHETIC") and "SYNTHETIC" in report
    assert result["batch_graphs"] == 8
    for name, e in result["models"].items():
        assert "error" not in e, (name, e.get("error"))
        # CPU against CPU: the same kernels on the same inputs
        for key in ("output_rel", "loss_rel", "grad_rel"):
            assert e["parity_fp32"][key] <= device_measure.TOL_FP32
            assert e["parity_fp64"][key] <= device_measure.TOL_FP64
        assert e["bf16"]["finite"] and e["bf16"]["loss_rel"] <= device_measure.TOL_BF16_LOSS
        expected = {"cpu-flash", "math"} if name in SDPA_MODELS else {"none"}
        assert e["sdpa_fp32"] in expected, (name, e["sdpa_fp32"])
        assert e["speed_fp32"]["graphs_per_s"] > 0 and e["speed_bf16"]["graphs_per_s"] > 0
        assert e["speed_fp32"]["peak_mib"] is None  # CUDA only
        assert e["epoch_fp32"]["graphs"] == 16 and e["epoch_bf16"]["seconds"] > 0
        assert f"| {name} |" in report
    assert result["models"]["grit_batch_rrwp"]["computed_per_batch"] == ["rrwp_pair"]
    assert "computed_per_batch" not in result["models"]["grit"]


def test_grit_with_pairs_computed_on_the_device(tmp_path):
    """``grit_batch_rrwp`` (``encodings.rrwp.cache_pairs: false``): the shared batch is processed
    with the pairs cached (the union of the encodings), and this model's batches drop them, so
    the check runs the pair computation on the device; both GRIT entries pass."""
    configs = device_check.model_configs(["grit", "grit_batch_rrwp"],
                                         device_check.REPO / "configs" / "zinc", tiny=True)
    assert device_check._encodings_union(configs).rrwp.cache_pairs is True
    assert device_check.uncached_keys(configs["grit"]) == ()
    assert device_check.uncached_keys(configs["grit_batch_rrwp"]) == ("rrwp_pair",)
    data = device_check.load_data(configs, None, 4, None, synthetic=True)
    assert "rrwp_pair" in data.batch
    bare = device_measure.without_keys(data.batch, ("rrwp_pair",))
    assert "rrwp_pair" not in bare and "rrwp_pair" in data.batch
    out = tmp_path / "grit"
    rc = device_check.main(["--device", "cpu", "--synthetic", "--tiny", "--batch-size", "4",
                            "--steps", "1", "--epoch-graphs", "8", "--models", "grit",
                            "grit_batch_rrwp", "--out", str(out)])
    result = json.loads((out / "gpu_check.json").read_text())
    assert rc == 0 and result["ok"], result
    assert result["models"]["grit_batch_rrwp"]["computed_per_batch"] == ["rrwp_pair"]


def test_diagnostic_options_are_recorded_and_restored(tmp_path):
    """--initial-norm-stats and --deterministic (for the GT-with-edges gap of the first GPU run):
    recorded in the report, and the global deterministic setting is restored."""
    import torch
    before = torch.are_deterministic_algorithms_enabled()
    out = tmp_path / "diag"
    rc = device_check.main(["--device", "cpu", "--synthetic", "--tiny", "--batch-size", "4",
                            "--steps", "1", "--no-epoch", "--models", "gt_edge",
                            "--initial-norm-stats", "--deterministic", "--out", str(out)])
    assert torch.are_deterministic_algorithms_enabled() == before
    result = json.loads((out / "gpu_check.json").read_text())
    assert rc == 0 and result["norm_statistics"] == "initial"
    assert result["deterministic_algorithms"] is True
    report = (out / "gpu_check.md").read_text()
    assert "at their initial values, deterministic algorithms on" in report


def test_calibrate_norms_takes_the_batch_statistics():
    import torch
    from torch_geometric.data import Batch
    graphs = device_check.synthetic_molecules(6, seed=2)
    bn = torch.nn.BatchNorm1d(3)
    x = torch.randn(40, 3) * 5 + 2

    class Wrap(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = bn

        def forward(self, batch):
            return self.bn(batch.x_float)
    batch = Batch.from_data_list(graphs)
    batch.x_float = x[:batch.num_nodes]
    wrap = device_measure.calibrate_norms(Wrap(), batch)
    assert not wrap.training and bn.momentum == 0.1
    torch.testing.assert_close(bn.running_mean, x[:batch.num_nodes].mean(0))
    torch.testing.assert_close(bn.running_var, x[:batch.num_nodes].var(0))


def test_cli_subcommand_and_unknown_model():
    args = build_parser().parse_args(["check-device", "--device", "cpu", "--models", "gt", "egt",
                                 "--no-epoch"])
    assert args.command == "check-device" and args.models == ["gt", "egt"] and not args.epoch
    with pytest.raises(SystemExit):
        build_parser().parse_args(["check-device", "--models", "transformer"])


def test_synthetic_molecules_are_molecule_sized():
    graphs = device_check.synthetic_molecules(20, seed=1)
    for g in graphs:
        assert 9 <= g.num_nodes <= 38
        assert int(g.x.max()) < 28 and int(g.edge_attr.min()) >= 1 and int(g.edge_attr.max()) <= 3
        assert g.edge_index.size(1) == g.edge_attr.size(0)
        assert int(g.edge_index.max()) < g.num_nodes


@pytest.mark.slow
def test_cpu_smoke_run_of_the_compiled_mode(tmp_path):
    """``--compiled`` beside the eager mode (issue 56, item 5): GT compiles as one graph whose
    padded loss equals the eager one, with speed and epoch figures; GRIT computing its RRWP
    pairs per batch (graph breaks) is reported as failing the compiled mode, not a crash."""
    out = tmp_path / "compiled"
    rc = device_check.main(["--device", "cpu", "--synthetic", "--tiny", "--batch-size", "8",
                            "--steps", "1", "--epoch-graphs", "16", "--compiled",
                            "--models", "gt", "grit_batch_rrwp", "--out", str(out)])
    result = json.loads((out / "gpu_check.json").read_text())
    report = (out / "gpu_check.md").read_text()
    assert rc == 1 and result["compiled_mode"] == "full"
    gt = result["models"]["gt"]
    c = gt["compiled"]
    assert gt["ok"] and c["ok"] and c["graph_breaks"] == 0 and "error" not in c
    assert c["parity"]["loss_rel"] <= device_compiled.TOL_COMPILED_LOSS
    assert c["speed_fp32"]["graphs_per_s"] > 0 and c["speed_bf16"]["step_ms"] > 0
    assert c["epoch_fp32"]["graphs"] == 16 and c["epoch_bf16"]["seconds"] > 0
    b = c["budget"]
    assert b["max_nodes"] <= 38 and b["num_nodes"] >= 16 * 9 and 0 <= c["padding"]["nodes"] < 1
    grit = result["models"]["grit_batch_rrwp"]
    assert grit["compiled"]["graph_breaks"] > 0 and not grit["compiled"]["ok"]
    assert "error" in grit["compiled"] and not grit["ok"]
    assert "## Compiled mode" in report and "| gt | 0 |" in report
    assert "Graph breaks:" in report
