"""A user's own graphs: in-memory lists and saved .pt files, graph / node / edge level."""
import json
import math

import pytest
import torch
from torch_geometric.data import Data, InMemoryDataset

import graph_transformers as gtr
from graph_transformers.datasets.user.graph_info import infer_info
from graph_transformers.datasets.user.graph_list import (GraphFile, GraphList, fold_split,
                                                         load_graph_file, make_split)
from graph_transformers.errors import DataError
from graph_transformers.training.config import ConfigError, build_config
from graph_transformers.training.trained import evaluate_run


def _ring(n: int) -> torch.Tensor:
    i = torch.arange(n)
    return torch.cat([torch.stack([i, (i + 1) % n]), torch.stack([(i + 1) % n, i])], dim=1)


def _graphs(num=60, seed=0):
    """Label = whether the node features' mean is positive: learnable from x."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(num):
        n = 4 + i % 5
        shift = 1.0 if i % 2 else -1.0
        out.append(Data(x=torch.randn(n, 3, generator=g) * 0.5 + shift, edge_index=_ring(n),
                        y=torch.tensor([i % 2])))
    return out


def _config(**data):
    return {"name": "user-graphs",
            "model": {"name": "gt", "hidden_dim": 16, "num_layers": 1, "num_heads": 2,
                      "pe": None},
            "data": {"batch_size": 8, **data}, "encodings": {"lap_pe": None},
            "optim": {"lr": 3e-3},
            "trainer": {"max_epochs": 4, "enable_progress_bar": False}}


def test_in_memory_graphs_train_and_evaluate(tmp_path):
    graphs = _graphs()
    metrics = gtr.train(_config(), dataset=graphs, out_dir=tmp_path / "run")
    assert metrics["test"]["accuracy"] >= 0.8  # the classes are separable from x
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    prov = saved["provenance"]["graph_list"]
    assert prov["task"] == "classification" and prov["level"] == "graph"
    assert prov["split_sizes"] == {"train": 48, "val": 6, "test": 6}
    assert "graph_list" in (tmp_path / "run" / "config.yaml").read_text()
    again = evaluate_run(tmp_path / "run", dataset=graphs)
    assert again["test"]["accuracy"] == pytest.approx(saved["test"]["accuracy"])
    with pytest.raises(ValueError, match="in-memory graphs"):
        evaluate_run(tmp_path / "run")
    # predictions from the trained run: the graphs give the task back
    run = gtr.load_run(tmp_path / "run", dataset=graphs)
    preds = run.predict(graphs[:7])
    assert list(preds.status) == ["ok"] * 7 and tuple(preds.values.shape) == (7, 2)
    with pytest.raises(ValueError, match="in-memory graphs"):
        gtr.load_run(tmp_path / "run")


@pytest.mark.parametrize("writer", ["in_memory_dataset", "torch_save"])
def test_graph_file_trains_from_the_config(tmp_path, writer):
    graphs = _graphs(40)
    path = tmp_path / "graphs.pt"
    if writer == "in_memory_dataset":
        InMemoryDataset.save(graphs, str(path))
    else:
        torch.save(graphs, path)
    from torch_geometric.data.storage import GlobalStorage
    torch.serialization.add_safe_globals([GlobalStorage])  # as another library may have done
    before = set(torch.serialization.get_safe_globals())
    loaded = load_graph_file(path)
    assert len(loaded) == 40 and torch.equal(loaded[3].x, graphs[3].x)
    # reading a graph file keeps every registered safe class (PyG's Data among them): dataset
    # caches still load with weights_only=True, without PyG's fallback to an unsafe load
    assert before <= set(torch.serialization.get_safe_globals())
    cfg = build_config(_config(path=str(path), cache_dir=str(tmp_path / "cache")))
    metrics = gtr.train(cfg, out_dir=tmp_path / "run")
    assert metrics["provenance"]["graph_file"]["sha256"]
    assert set(metrics["test"]) >= {"accuracy"}
    assert list((tmp_path / "cache" / "GraphFile" / "processed").iterdir())  # cached


def test_graph_file_refuses_other_pickles(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save([Data(x=torch.ones(2, 1)), math.pi, {"a": 1}, ValueError("x")], path)
    with pytest.raises(DataError, match="refusing to load .*evil.pt: it contains"):
        load_graph_file(path)
    torch.save({"x": torch.ones(2)}, tmp_path / "dict.pt")
    with pytest.raises(DataError, match="holds a dict, not graphs"):
        load_graph_file(tmp_path / "dict.pt")


def test_info_is_read_off_the_data():
    ring = _ring(5)
    graph_reg = [Data(x=torch.randint(0, 4, (5, 2)), edge_index=ring,
                      edge_attr=torch.randn(10, 3), y=torch.randn(1, 2)) for _ in range(3)]
    info = infer_info(graph_reg)
    assert (info.level, info.task, info.out_dim, info.metric) == ("graph", "regression", 2, "mae")
    assert info.node_types is not None and len(info.node_types) == 2 and info.edge_dim == 3
    node_cls = [Data(edge_index=ring, y=torch.tensor([0, 1, 2, 1, 0]))]
    info = infer_info(node_cls)
    assert (info.level, info.task, info.out_dim, info.constant_x) == ("node", "classification",
                                                                      3, True)
    edge_bin = [Data(x=torch.randn(5, 2), edge_index=ring, y=torch.randint(0, 2, (10, 2)))]
    info = infer_info(edge_bin, task="binary")
    assert (info.level, info.task, info.out_dim) == ("edge", "binary", 2)
    one_node = [Data(x=torch.randn(1, 2), edge_index=torch.empty(2, 0, dtype=torch.long),
                     y=torch.tensor([1]))] * 3
    with pytest.raises(DataError, match="set data.level"):
        infer_info(one_node)
    assert infer_info(one_node, level="graph").level == "graph"
    with pytest.raises(DataError, match="y must have 1 row per graph"):
        infer_info([Data(x=torch.randn(5, 2), edge_index=ring, y=torch.zeros(3))])
    with pytest.raises(DataError, match="negative category"):
        infer_info([Data(x=torch.tensor([[-1]]), edge_index=torch.empty(2, 0, dtype=torch.long),
                         y=torch.tensor([0.5]))], level="graph")
    with pytest.raises(DataError, match="binary needs labels 0, 1 or NaN"):
        infer_info([Data(x=torch.randn(5, 1), edge_index=ring, y=torch.tensor([[0.5]]))] * 2,
                   task="binary")


def test_splits_folds_files_and_masks(tmp_path):
    labels = torch.arange(100) % 4
    cut = fold_split(100, fold=3, seed=1, labels=labels.numpy())
    assert sorted(cut["train"] + cut["val"] + cut["test"]) == list(range(100))
    assert torch.bincount(labels[cut["test"]]).tolist() == [2, 3, 3, 2] or \
        max(torch.bincount(labels[cut["test"]]).tolist()) <= 3  # stratified: ≈ 10 / 4 each
    graphs = _graphs(20)
    info = infer_info(graphs)
    for s, ids in {"train": "0 1 2 3 4,5,6\n7", "val": "8,9", "test": "10 11"}.items():
        (tmp_path / f"{s}.txt").write_text(ids)
    files = {s: str(tmp_path / f"{s}.txt") for s in ("train", "val", "test")}
    split, how = make_split(graphs, info, split_files=files)
    assert split == {"train": list(range(8)), "val": [8, 9], "test": [10, 11]}
    assert "index files" in how
    (tmp_path / "test.txt").write_text("9 10")
    with pytest.raises(DataError, match="val and test splits share"):
        make_split(graphs, info, split_files=files)
    (tmp_path / "test.txt").write_text("10 99")
    with pytest.raises(DataError, match="id 99 is outside the 20 graphs"):
        make_split(graphs, info, split_files=files)
    with pytest.raises(DataError, match="needs several graphs"):
        make_split(graphs[:1], info)


def test_one_graph_node_task_with_masks_trains(tmp_path):
    g = torch.Generator().manual_seed(0)
    n = 60
    y = torch.arange(n) % 2
    x = torch.randn(n, 4, generator=g) * 0.3 + y.unsqueeze(1).float() * 2 - 1
    perm = torch.randperm(n, generator=g)
    masks = {s: torch.zeros(n, dtype=torch.bool) for s in ("train", "val", "test")}
    masks["train"][perm[:40]], masks["val"][perm[40:50]], masks["test"][perm[50:]] = \
        True, True, True
    graph = Data(x=x, edge_index=_ring(n), y=y, **{f"{s}_mask": m for s, m in masks.items()})
    ds = GraphList([graph], "val")
    assert ds.info.level == "node" and torch.equal(ds[0].node_mask, masks["val"])
    metrics = gtr.train(_config(), dataset=[graph], out_dir=tmp_path / "run",
                        overrides=["trainer.max_epochs=30", "data.batch_size=1"])
    assert metrics["test"]["accuracy"] >= 0.8


def test_one_graph_edge_task_uses_edge_masks(tmp_path):
    n = 30
    ei = _ring(n)
    y = (ei[0] < ei[1]).long()  # the direction of each edge
    graph = Data(x=torch.arange(n).float().unsqueeze(1) / n, edge_index=ei, y=y)
    splits = {s: GraphList([graph], s) for s in ("train", "val", "test")}
    assert splits["train"].info.level == "edge"
    masks = [splits[s][0].edge_mask for s in ("train", "val", "test")]
    assert int(sum(m.long() for m in masks).max()) == 1  # disjoint
    assert sum(int(m.sum()) for m in masks) == ei.size(1)
    metrics = gtr.train(_config(), dataset=[graph], out_dir=tmp_path / "run",
                        overrides=["trainer.max_epochs=2", "data.batch_size=1"])
    assert 0.0 <= metrics["test"]["accuracy"] <= 1.0


def test_config_rejects_graph_options_for_a_csv(tmp_path):
    with pytest.raises(ConfigError, match="apply to a graph file"):
        build_config({"data": {"path": "m.csv", "target_columns": ["y"], "level": "node"}})
    cfg = build_config(_config(path="graphs.pt"))  # no target columns needed
    assert cfg.data.path == "graphs.pt"


def test_graph_file_cache_follows_the_file(tmp_path):
    path = tmp_path / "g.pt"
    torch.save(_graphs(20), path)
    a = GraphFile(tmp_path / "c", "test", path=path)
    torch.save(_graphs(30, seed=1), path)
    b = GraphFile(tmp_path / "c", "test", path=path)
    assert len(a) == 2 and len(b) == 3


def test_one_graph_saved_by_in_memory_dataset_loads(tmp_path):
    """Issue 25: ``InMemoryDataset.save([graph], path)`` stores ``slices=None`` for one graph,
    which was refused as "holds a tuple, not graphs"."""
    graph = _graphs(1)[0]
    path = tmp_path / "one.pt"
    InMemoryDataset.save([graph], str(path))
    (loaded,) = load_graph_file(path)
    assert torch.equal(loaded.x, graph.x) and torch.equal(loaded.edge_index, graph.edge_index)
