"""Regression targets standardized with the training split's statistics (issue 25, item 1), and
``data.metric``."""
import copy
import json
import math

import pytest
import torch
from torch import nn
from torch_geometric.data import Data

import graph_transformers as gtr
from graph_transformers.data.registry import DatasetSpec, choose_metric, get_spec
from graph_transformers.models import ModelOutput
from graph_transformers.training import targets
from graph_transformers.training.binding import check_same_split_config
from graph_transformers.training.config import DataConfig, build_config
from graph_transformers.training.trained import evaluate_run
from graph_transformers.training.tasks import Task
from test_graph_list import _ring


def _spec(out_dim=2, level="graph", task="regression", source="user", metric="mae"):
    return DatasetSpec("user", level, task, out_dim, metric, load=None, source=source)


def test_statistics_match_a_hand_computation_and_skip_missing_labels():
    ys = [[1.0, 10.0], [3.0, float("nan")], [5.0, 30.0], [7.0, 20.0]]
    graphs = [Data(y=torch.tensor([y])) for y in ys]
    mean, std = targets.target_statistics(graphs, _spec())
    col0, col1 = [1.0, 3.0, 5.0, 7.0], [10.0, 30.0, 20.0]
    m0, m1 = sum(col0) / 4, sum(col1) / 3
    s0 = math.sqrt(sum((v - m0) ** 2 for v in col0) / 4)
    s1 = math.sqrt(sum((v - m1) ** 2 for v in col1) / 3)
    assert mean.tolist() == pytest.approx([m0, m1])
    assert std.tolist() == pytest.approx([s0, s1])
    # a column without spread, or with one label, keeps s.d. 1 (no division by zero)
    flat = [Data(y=torch.tensor([[2.0, float("nan")]])), Data(y=torch.tensor([[2.0, 4.0]]))]
    assert targets.target_statistics(flat, _spec())[1].tolist() == [1.0, 1.0]


def test_node_statistics_count_the_training_nodes_only():
    graph = Data(y=torch.tensor([0.0, 2.0, 100.0, 4.0]),
                 node_mask=torch.tensor([True, True, False, True]))
    mean, std = targets.target_statistics([graph], _spec(out_dim=1, level="node"))
    assert mean.item() == pytest.approx(2.0)
    assert std.item() == pytest.approx(math.sqrt(8 / 3))


def test_the_loss_is_taken_on_standardized_values():
    std = torch.tensor([2.0, 0.5])
    task = Task(_spec(), target_std=std)
    out = torch.tensor([[1.0, 3.0], [4.0, -1.0]])
    batch = Data(y=torch.tensor([[0.0, 2.0], [1.0, float("nan")]]))
    batch.num_graphs = 2
    # by hand: |1-0|/2, |3-2|/0.5, |4-1|/2 over the three labelled entries
    assert task.loss(out, batch).item() == pytest.approx((0.5 + 2.0 + 1.5) / 3)
    # the metrics stay in the original units
    preds, target = task.metric_inputs(out, batch)
    assert preds.tolist() == [1.0, 3.0, 4.0] and target.tolist() == [0.0, 2.0, 1.0]
    with pytest.raises(ValueError, match="regression targets"):
        Task(_spec(task="classification", metric="accuracy"), target_std=std)


class _Net(nn.Module):
    def __init__(self, aux=False):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.aux = aux

    def forward(self, x):
        out = self.lin(x)
        return ModelOutput(out, out.sum()) if self.aux else out


@pytest.mark.parametrize("aux", [False, True])
def test_the_model_predicts_in_the_original_units(aux):
    net = _Net(aux)
    x = torch.randn(5, 3)
    raw = net(x)
    mean, std = torch.tensor([-5.0, 100.0]), torch.tensor([0.5, 20.0])
    targets.attach(net, mean, std)
    out = net(x)
    z = raw[0] if aux else raw
    got = out[0] if aux else out
    torch.testing.assert_close(got, z * std + mean)
    if aux:  # the auxiliary loss is kept as it was
        assert isinstance(out, ModelOutput) and out[1].item() == pytest.approx(raw[1].item())
    assert {"target_mean", "target_std"} <= set(net.state_dict())
    assert targets.record(net) == {"mean": [-5.0, 100.0], "std": [0.5, 20.0]}
    # a copy keeps the scaling (device_check deep-copies models)
    torch.testing.assert_close(copy.deepcopy(net)(x)[0] if aux else copy.deepcopy(net)(x), got)
    # a checkpoint without the buffers (trained before standardization) is loaded as it was
    targets.match_weights(net, {"lin.weight": None})
    assert not targets.is_attached(net) and "target_mean" not in net.state_dict()
    torch.testing.assert_close(net(x)[0] if aux else net(x), z)
    targets.match_weights(net, {"target_mean": torch.zeros(2)})
    assert targets.is_attached(net)


def test_auto_standardizes_user_regression_only():
    cfg = DataConfig()
    assert targets.standardizes(cfg, _spec())
    assert not targets.standardizes(cfg, _spec(task="classification", metric="accuracy"))
    # the papers' benchmarks keep their published protocol
    assert not targets.standardizes(DataConfig(name="zinc"), get_spec("zinc"))
    assert not targets.standardizes(DataConfig(name="esol"), get_spec("esol"))
    assert targets.standardizes(DataConfig(standardize_targets=True), get_spec("zinc"))
    assert not targets.standardizes(DataConfig(standardize_targets=False), _spec())
    with pytest.raises(ValueError, match="regression targets only"):
        targets.standardizes(DataConfig(standardize_targets=True), get_spec("csl"))


def test_metric_choice():
    spec = _spec(out_dim=1, metric="rmse")
    assert choose_metric(spec, "mae").metric == "mae" and choose_metric(spec, None) is spec
    with pytest.raises(ValueError, match=r"data.metric='accuracy'.*\['mae', 'rmse'\]"):
        choose_metric(spec, "accuracy")
    with pytest.raises(ValueError, match="choose one of"):  # f1 needs two classes
        choose_metric(_spec(out_dim=3, task="classification", metric="accuracy"), "f1")
    assert choose_metric(_spec(out_dim=2, task="classification", metric="accuracy"),
                         "f1").metric == "f1"
    with pytest.raises(Exception, match="data.metric"):
        build_config({"data": {"metric": "r2"}})



def _offset_graphs(num=80, seed=0):
    """Targets centred at -5.2 with s.d. about 0.8, learnable from the node features' mean."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(num):
        n = 4 + i % 4
        signal = torch.randn(1, generator=g)
        x = torch.randn(n, 2, generator=g) * 0.1 + signal
        out.append(Data(x=x, edge_index=_ring(n), y=(-5.2 + 0.78 * signal).view(1, 1)))
    return out


def _config(**data):
    return {"name": "offset", "seed": 0,
            "model": {"name": "gin", "hidden_dim": 32, "num_layers": 2},
            "data": {"batch_size": 8, **data}, "encodings": {"lap_pe": None},
            "optim": {"lr": 3e-3}, "trainer": {"max_epochs": 5, "enable_progress_bar": False}}


def test_five_epochs_beat_the_train_mean_predictor(tmp_path):
    graphs = _offset_graphs()
    metrics = gtr.train(_config(metric="rmse"), dataset=graphs, out_dir=tmp_path / "run")
    assert metrics["metric"] == "rmse" and set(metrics["test"]) == {"rmse", "loss"}
    rec = metrics["target_standardization"]
    assert rec["mean"][0] == pytest.approx(-5.2, abs=0.3)
    # the mean predictor's test RMSE, with the training split's mean
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["target_standardization"] == rec
    from graph_transformers.datasets.user.graph_info import infer_info
    from graph_transformers.datasets.user.graph_list import GraphList
    info = infer_info(graphs, None, None)
    train = GraphList(graphs, "train", info=info)
    test = torch.cat([d.y.view(-1) for d in GraphList(graphs, "test", info=info)])
    train_mean = torch.cat([d.y.view(-1) for d in train]).mean()
    mean_rmse = (test - train_mean).square().mean().sqrt().item()
    assert metrics["test"]["rmse"] < 0.8 * mean_rmse
    # predict and evaluate read the scaling back from the checkpoint: original units
    again = evaluate_run(tmp_path / "run", dataset=graphs)
    assert again["test"]["rmse"] == pytest.approx(metrics["test"]["rmse"], rel=1e-5)
    run = gtr.load_run(tmp_path / "run", dataset=graphs)
    values = run.predict(graphs[:4]).values.view(-1)
    assert values.mean().item() == pytest.approx(-5.2, abs=1.0)


def test_standardize_false_keeps_the_raw_output(tmp_path):
    graphs = _offset_graphs(num=40)
    cfg = _config(standardize_targets=False)
    cfg["trainer"]["max_epochs"] = 1
    metrics = gtr.train(cfg, dataset=graphs, out_dir=tmp_path / "run")
    assert metrics["target_standardization"] is None and metrics["metric"] == "mae"


def test_an_old_checkpoint_config_compares_with_new_keys_at_their_defaults():
    # a checkpoint written before data.standardize_targets / data.metric existed still fits
    current = build_config(_config()).to_dict()
    stored = copy.deepcopy(current)
    for key in ("standardize_targets", "metric"):
        del stored["data"][key]
    check_same_split_config(stored, current, "checkpoint best.ckpt", "config.yaml")
    stored["data"]["fold"] = 3  # a key that did change is still refused
    with pytest.raises(Exception, match="data.fold"):
        check_same_split_config(stored, current, "checkpoint best.ckpt", "config.yaml")
