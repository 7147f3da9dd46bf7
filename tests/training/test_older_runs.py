"""Run directories written before 0.2.0 still load under it: the committed GPU slice state of GT
on PATTERN (written by 0.1.0 on an H200, commit e3e5e8e) resolves its config with the 0.2.0
loader, builds its model from the 0.2.0 build room, and both checkpoints load into it with
``weights_only=True`` and every key matched (``strict=True``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from graph_transformers.training.build import make_model
from graph_transformers.training.checkpoint import load_checkpoint
from graph_transformers.training.config import load_config
from graph_transformers.training.splits import run_spec

REPO = Path(__file__).resolve().parents[2]
OLDER = REPO / "results" / "gpu_runs" / "pattern-gt"


@pytest.mark.parametrize("checkpoint", ["best.ckpt", "last.ckpt"])
def test_a_0_1_gpu_slice_state_loads_into_the_0_2_model(checkpoint):
    config = load_config(OLDER / "config.yaml")
    model = make_model(config, run_spec(config))
    state = load_checkpoint(OLDER / checkpoint)
    weights = {k.removeprefix("model."): v for k, v in state["state_dict"].items()
               if k.startswith("model.")}
    assert weights, "the checkpoint holds no model weights"
    result = model.load_state_dict(weights, strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    assert state["epoch"] >= 0 and config.model.name == "gt"
