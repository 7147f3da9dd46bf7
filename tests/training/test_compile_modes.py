"""``model.compile: false | true | full | cudagraphs`` (issue 56, item 3): the values the config
takes, the static-shape requirement of ``full``, and ``cudagraphs`` on a CPU run."""
from __future__ import annotations

import logging

import pytest

from graph_transformers.training.config import ConfigError, build_config
from graph_transformers.training.device import compile_step, step_compile_mode

BASE = {"model": {"name": "gt"}, "encodings": {"lap_pe": {}}}


def _config(compile, **data):
    return build_config({**BASE, "model": {"name": "gt", "compile": compile},
                         **({"data": data} if data else {})})


def test_compile_values():
    assert _config(False).model.compile is False
    assert _config(True).model.compile is True
    with pytest.raises(ConfigError, match="model.compile"):
        _config("fastest")


@pytest.mark.parametrize("mode", ["full", "cudagraphs"])
def test_full_needs_static_shapes(mode):
    with pytest.raises(ConfigError, match="data.static_shapes: true") as err:
        _config(mode)
    assert "\n" not in str(err.value)


def test_full_with_static_shapes():
    try:
        cfg = _config("full", static_shapes=True)
    except ConfigError as err:
        if "static_shapes" in str(err) and "unknown key" in str(err):
            pytest.skip("data.static_shapes is not in this checkout yet")
        raise
    assert cfg.model.compile == "full"


def test_step_mode_by_setting_and_device(caplog):
    assert step_compile_mode(False, "cpu") is None
    assert step_compile_mode(True, "cpu") is None      # the model alone, dynamic shapes
    assert step_compile_mode("full", "cpu") == "full"
    with caplog.at_level(logging.WARNING, logger="graph_transformers.training.device"):
        assert step_compile_mode("cudagraphs", "cpu") == "full"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "cudagraphs" in warnings[0].getMessage()
    assert "\n" not in warnings[0].getMessage()


def test_compile_step_refuses_other_modes():
    with pytest.raises(ValueError, match="full"):
        compile_step(lambda x: x, "dynamic")


def test_how_each_speed_key_counts_against_a_stored_config():
    # data.on_device builds the same batches (tested in tests/data/test_device_split.py): a
    # resume, a stored split and the reproduction table's "config changed" check all accept a
    # change of it. data.static_shapes changes the batches (padding, packing) but not the split:
    # a resume refuses it, the split check accepts it, the reproduction table counts it.
    from graph_transformers.training.binding import check_same_split_config
    from graph_transformers.training.reproduction import _config_changed
    from graph_transformers.training.rundir import config_differences

    stored = _config(False).to_dict()
    on_device = _config(False, on_device=True).to_dict()
    static = _config(False, static_shapes=True).to_dict()
    assert config_differences(stored, on_device) == []
    assert config_differences(stored, static) == ["data.static_shapes: False -> True"]
    for new in (on_device, static):
        check_same_split_config(stored, new, "checkpoint best.ckpt", "config.yaml")
    assert not _config_changed(on_device, stored)
    assert _config_changed(static, stored)


def _tiny_gt_module(monkeypatch, scale):
    """A GraphTaskModule of a tiny GT with ``compile="full"`` whose "compiler" returns the step
    function with its task loss multiplied by ``scale`` (1.0: a faithful compiler), and a batch
    of synthetic molecules."""
    from torch_geometric.data import Batch

    from graph_transformers.device_check import REPO, load_data, model_configs
    from graph_transformers.data.registry import resolve_spec
    from graph_transformers.training import device
    from graph_transformers.training.build import make_model
    from graph_transformers.training.module import GraphTaskModule

    def fake_compile_step(fn, mode):
        def step(model, task, batch):
            out, aux, loss = fn(model, task, batch)
            return out, aux, loss * scale
        return step
    monkeypatch.setattr(device, "compile_step", fake_compile_step)
    cfg = model_configs(["gt"], REPO / "configs" / "zinc", tiny=True)["gt"]
    data = load_data({"gt": cfg}, None, 6, None, synthetic=True)
    spec = resolve_spec(cfg.data)
    module = GraphTaskModule(make_model(cfg, spec).eval(), spec, cfg.optim, compile="full")
    return module, Batch.from_data_list(data.batch.to_data_list())


@pytest.mark.filterwarnings("ignore:You are trying to `self.log\\(\\)`")
def test_a_compiled_loss_unlike_eager_stops_the_run(monkeypatch):
    """The first training batch of a compiled run is also computed eagerly (evaluation mode):
    a "compiler" whose loss is 1% off (as torch 2.13's CPU inductor on GPS, 6.5e-3) raises a
    one-line TrainingError naming the fix before any step; a faithful one passes, the check
    runs once, the model is back in training mode, and evaluation never calls the compiled
    function (its batches are not padded to one shape)."""
    import torch

    from graph_transformers.errors import TrainingError
    module, batch = _tiny_gt_module(monkeypatch, 1.01)
    module.model.train()
    with pytest.raises(TrainingError, match="model.compile: false") as err:
        module.training_step(batch, 0)
    assert "\n" not in str(err.value) and "relative difference 1.0e-02" in str(err.value)
    assert module.model.training
    module, batch = _tiny_gt_module(monkeypatch, 1.0)
    module.model.train()
    checks, compiled = [], []
    original_check, original_fn = module.check_compiled_loss, module._forward_loss
    monkeypatch.setattr(module, "check_compiled_loss",
                        lambda *a: (checks.append(1), original_check(*a))[1])
    monkeypatch.setattr(module, "_forward_loss",
                        lambda *a: (compiled.append(1), original_fn(*a))[1])
    module.training_step(batch, 0)
    module.training_step(batch, 1)
    assert checks == [1] and len(compiled) == 3 and module.model.training  # check + 2 steps
    module.model.eval()
    with torch.no_grad():
        module.validation_step(batch, 0)
    assert len(compiled) == 3


@pytest.mark.slow
def test_a_compiled_run_trains_and_evaluates_to_the_end(tmp_path):
    """A whole run with ``model.compile: full`` and static shapes (tiny GT on CSL, 2 epochs):
    the compiled step, the eager check, validation, the final evaluation, finite metrics. The
    bug of 2026-12-03 (the compiled function also ran the validation batches, whose shapes
    change from batch to batch, so a ZINC run recompiled until TorchDynamo's limit and failed,
    ``FailOnRecompileLimitHit``) is held by the test above: CSL's graphs all have 41 nodes, so
    its validation batches share one shape."""
    import math

    import graph_transformers as gtr
    cfg = {"model": {"name": "gt", "hidden_dim": 16, "num_layers": 1, "num_heads": 2,
                     "compile": "full"},
           "data": {"name": "csl", "batch_size": 10, "static_shapes": True},
           "encodings": {"lap_pe": {"k": 4}}, "trainer": {"max_epochs": 2}}
    metrics = gtr.train(build_config(cfg), out_dir=tmp_path / "run")
    assert metrics["epochs"] == 2
    assert all(math.isfinite(metrics[s]["loss"]) for s in ("train", "val", "test"))


@pytest.mark.filterwarnings("ignore:You are trying to `self.log\\(\\)`")
def test_a_step_that_recompiles_too_often_is_a_one_line_error(monkeypatch):
    """TorchDynamo's recompile limit under ``fullgraph=True`` (a model whose static-shape
    batches still change shape: GRIT's pair count) becomes a TrainingError naming the fix, not
    a traceback from inside torch."""
    from graph_transformers.errors import TrainingError
    module, batch = _tiny_gt_module(monkeypatch, 1.0)
    module.model.train()
    module._compiled_loss_checked = True

    class FailOnRecompileLimitHit(Exception):  # the name torch._dynamo.exc raises
        pass

    def recompiles(*args):
        raise FailOnRecompileLimitHit("Hard failure due to fullgraph=True")
    monkeypatch.setattr(module, "_forward_loss", recompiles)
    with pytest.raises(TrainingError, match="recompile limit.*model.compile: false") as err:
        module.training_step(batch, 0)
    assert "\n" not in str(err.value)
