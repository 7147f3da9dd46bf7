"""BatchNorm: BatchNorm1d in training; bias-corrected statistics and constant channels in eval."""
import math

import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import to_undirected

from graph_transformers.nn import BatchNorm, GraphTransformerLayer
from graph_transformers.nn.norm import make_norm


def _pair(c=6, **kw):
    torch.manual_seed(0)
    ours, ref = BatchNorm(c, **kw), torch.nn.BatchNorm1d(c, **kw)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
        ref.bias.normal_()
    ours.load_state_dict(ref.state_dict())
    return ours, ref


def test_training_mode_is_batchnorm1d():
    ours, ref = _pair()
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        x = torch.randn(32, 6, generator=g) * 3 + 1
        assert torch.equal(ours(x), ref(x))
    for name, buf in ref.state_dict().items():
        assert torch.equal(ours.state_dict()[name], buf), name
    # state dicts are interchangeable both ways
    torch.nn.BatchNorm1d(6).load_state_dict(ours.state_dict())


def test_eval_matches_batchnorm1d_once_the_start_bias_has_decayed():
    ours, ref = _pair()
    g = torch.Generator().manual_seed(2)
    for _ in range(250):
        x = torch.randn(64, 6, generator=g) * 2 - 1
        ours(x), ref(x)
    ours.eval(), ref.eval()
    x = torch.randn(20, 6, generator=g)
    torch.testing.assert_close(ours(x), ref(x), rtol=1e-5, atol=1e-6)


def test_running_stats_are_bias_corrected():
    ours, _ = _pair()
    x = torch.randn(50, 6) * 4 + 3
    ours(x)
    mean, var = ours.running_stats()
    torch.testing.assert_close(mean, x.mean(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(var, x.var(0, unbiased=True), rtol=1e-4, atol=1e-4)
    # BatchNorm1d's own buffers after one step still lean 90% towards (0, 1)
    assert (ours.running_mean - 0.1 * x.mean(0)).abs().max() < 1e-5


def test_untrained_or_hand_set_statistics_are_used_as_they_are():
    ours, ref = _pair()
    ours.running_mean.normal_()
    ours.running_var.uniform_(0.5, 1.5)
    ref.load_state_dict(ours.state_dict())
    ours.eval(), ref.eval()
    x = torch.randn(7, 6)
    torch.testing.assert_close(ours(x), ref(x))


def test_constant_channels_output_beta_in_eval():
    """Regression: inputs identical across items whose value drifts from step to step (weights
    changing during training) give BatchNorm1d a running mean that lags by ~drift/momentum and a
    running variance ~0, so evaluation returns lag / sqrt(eps): hundreds of times the input."""
    ours, ref = _pair(4)
    for step in range(300):
        x = torch.full((16, 4), 1.0 + 0.01 * step)
        ours(x), ref(x)
    ours.eval(), ref.eval()
    x = torch.full((3, 4), 4.0)
    torch.testing.assert_close(ours(x), ref.bias.detach().expand(3, 4))
    assert ref(x).abs().max() > 10  # what BatchNorm1d does
    # a channel with real variance next to constant ones is normalised as usual
    mixed, ref2 = _pair(2)
    g = torch.Generator().manual_seed(3)
    for _ in range(300):
        x = torch.stack([torch.full((16,), 2.0), torch.randn(16, generator=g)], dim=1)
        mixed(x), ref2(x)
    mixed.eval(), ref2.eval()
    x = torch.stack([torch.full((5,), 7.0), torch.randn(5, generator=g)], dim=1)
    out = mixed(x)
    assert torch.equal(out[:, 0], mixed.bias[0].detach().expand(5))
    torch.testing.assert_close(out[:, 1], ref2(x)[:, 1], rtol=1e-5, atol=1e-6)


def test_three_dimensional_input_and_cumulative_momentum():
    norm = BatchNorm(3, momentum=None)
    x = torch.randn(8, 3, 5)
    norm(x)
    norm.eval()
    ref = torch.nn.BatchNorm1d(3, momentum=None)
    ref(x)
    ref.eval()
    torch.testing.assert_close(norm(x), ref(x))


def test_bad_constant_var():
    with pytest.raises(ValueError, match="constant_var"):
        BatchNorm(3, constant_var=-1.0)
    assert isinstance(make_norm("batch", 4), BatchNorm)


def _cycle(n: int) -> Data:
    src = torch.arange(n)
    ei = to_undirected(torch.stack([src, (src + 1) % n]))
    return Data(x=torch.ones(n, 8), edge_index=ei, num_nodes=n)


def test_indistinguishable_graphs_evaluate_like_training():
    """Regression for the CSL no-PE demo (validation loss 1e16): graphs a 1-WL model cannot tell
    apart, ten balanced classes, a stack of BatchNorm GT layers. Evaluation must give the
    training-mode loss, ln 10, not an amplified one."""
    torch.manual_seed(0)
    layers = torch.nn.ModuleList(GraphTransformerLayer(8, 2, norm="batch") for _ in range(6))
    head = torch.nn.Linear(8, 10)
    params = list(layers.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-2)
    batch = Batch.from_data_list([_cycle(12) for _ in range(20)])
    y = torch.arange(20) % 10

    def loss_of():
        x = batch.x
        for layer in layers:
            x = layer(x, batch.edge_index)
            x = x[0] if isinstance(x, tuple) else x
        out = head(torch.zeros(20, 8).index_add_(0, batch.batch, x) / 12)
        return torch.nn.functional.cross_entropy(out, y)

    for _ in range(60):
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        opt.step()
    layers.eval()
    with torch.no_grad():
        val = loss_of().item()
    assert abs(val - math.log(10)) < 0.05, val
