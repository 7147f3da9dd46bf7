"""The debug-mode guard that names the first layer producing a non-finite value (issue 26)."""
from __future__ import annotations

import pytest
import torch
from torch import nn
from torch_geometric.data import Batch, Data

from graph_transformers.training.numerics import watch_nonfinite


def test_names_the_innermost_first_module():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 4), nn.Identity()),
                          nn.LogSigmoid())
    handles = watch_nonfinite(model)
    assert model(torch.ones(2, 3)).isfinite().all()  # finite: no error
    with torch.no_grad():
        model[1][0].weight[0, 0] = float("inf")
    with pytest.raises(FloatingPointError, match=r"produced by 1\.0 \(Linear\): 2 of 8 values"):
        model(torch.ones(2, 3))
    for h in handles:
        h.remove()
    model(torch.ones(2, 3))  # hooks removed: no check


def test_names_the_layer_of_a_graph_transformer_that_overflows():
    """A real model: a weight of EGT's second layer's node FFN set to inf is named as that
    linear layer, not as the model or its head; scaled by 1e38 (finite there), the overflow
    appears first where the final LayerNorm squares it, and that is what is named."""
    from graph_transformers.models import build_model
    torch.manual_seed(1)
    model = build_model("egt", hidden_dim=16, edge_hidden_dim=8, num_layers=2, num_heads=2,
                        out_dim=1, num_node_features=3, use_edge_features=False).eval()
    watch_nonfinite(model)
    g = Data(x=torch.randn(5, 3), edge_index=torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]]))
    model(Batch.from_data_list([g]))
    weight = model.layers[1].ffn_h.lin1.weight
    with torch.no_grad():
        weight.mul_(1e38)
    with pytest.raises(FloatingPointError, match=r"final_norm_h \(LayerNorm\)"):
        model(Batch.from_data_list([g]))
    with torch.no_grad():
        weight[0, 0] = float("inf")
    with pytest.raises(FloatingPointError, match=r"layers\.1\.ffn_h\.lin1 \(Linear\)"):
        model(Batch.from_data_list([g]))


def test_training_in_debug_mode_installs_the_guard(monkeypatch):
    from graph_transformers.training.numerics import watch_in_debug_mode
    calls = []
    monkeypatch.setenv("GRAPH_TRANSFORMERS_DEBUG", "1")
    monkeypatch.setattr("graph_transformers.training.numerics.watch_nonfinite",
                        lambda m: calls.append(m))
    model = nn.Linear(1, 1)
    watch_in_debug_mode(model)
    assert calls == [model]
    monkeypatch.setenv("GRAPH_TRANSFORMERS_DEBUG", "0")
    watch_in_debug_mode(model)
    assert calls == [model]
