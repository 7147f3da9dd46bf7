"""Two-rank CPU DDP on the PCQM4Mv2 fixture (issue 53, item 1): each rank draws its own shard of
the memory-mapped store's training split through the run's own loader
(:func:`~graph_transformers.training.loaders.make_loader`), and the gradients DDP leaves on both
ranks after one step equal a single process's: the mean of the two shards' gradients, which,
for shards of equal size, is the gradient of the loss over their union."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

pytest.importorskip("ogb.utils")
pytest.importorskip("rdkit")

from test_lsc_molpcba import write_lsc  # noqa: E402  (tests/datasets: the fixture's writer)
from torch_geometric.data import Batch  # noqa: E402

from graph_transformers.training.build import make_model, make_task  # noqa: E402
from graph_transformers.training.config import build_config  # noqa: E402
from graph_transformers.training.distributed import ddp_strategy, unused_parameters  # noqa: E402
from graph_transformers.training.loaders import make_loader  # noqa: E402
from graph_transformers.training.module import GraphTaskModule, split_output  # noqa: E402
from graph_transformers.training.splits import resolve_data  # noqa: E402

WORLD = 2
#: a model without batch statistics (LayerNorm): under DDP each rank normalizes its own batch, so
#: only a per-graph model makes the single-process gradient the mean of the shards' gradients
RAW = {"name": "ddp-pcqm4mv2", "seed": 3,
       "model": {"name": "gt", "hidden_dim": 16, "num_layers": 2, "num_heads": 2,
                 "norm": "layer", "use_edge_features": True, "pe": None},
       "data": {"name": "pcqm4mv2", "batch_size": 4, "num_workers": 0},
       "optim": {"lr": 1e-3}, "trainer": {"max_epochs": 1, "threads": 1}}


def _setup(data_dir: Path):
    config = build_config(RAW)
    config.data.data_dir = str(data_dir)
    spec, splits = resolve_data(config)
    torch.manual_seed(config.seed)
    model = make_model(config, spec, splits["train"]).double()
    return config, spec, splits, model, make_task(config, spec, splits["train"], model)


def _loss(model, task, batch):
    return task.loss(split_output(model(batch))[0], batch)


def _rank(rank: int, data_dir: str, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                                         world_size=WORLD)
    try:
        config, spec, splits, model, task = _setup(Path(data_dir))
        loader = make_loader(config, splits["train"], "train")
        loader.batch_sampler.set_epoch(0)
        shard = [list(b) for b in loader.batch_sampler]  # this rank's batches of epoch 0
        # what the trainer asks of DDP for this model (ddp_strategy): GT with edge features
        # leaves the last layer's edge-stream update without gradient
        module = GraphTaskModule(model, spec, config.optim, task)
        unused = unused_parameters(module, splits["train"], config.data.batch_size)
        assert unused and all(".layers.1." in n and n.split(".")[3].endswith("_e") for n in unused)
        ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
        loader.batch_sampler.set_epoch(0)  # as Lightning does: epoch 0's batches again
        batch = next(iter(loader))
        _loss(ddp, task, batch).backward()
        grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()
                 if p.grad is not None}
        torch.save({"shard": shard, "grads": grads, "y": batch.y,
                    "init": {n: p.detach().clone() for n, p in model.named_parameters()}},
                   Path(out_dir) / f"rank{rank}.pt")
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_two_rank_ddp_gradients_equal_one_process(tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    write_lsc(data_dir, "pcqm4mv2")
    monkeypatch.setenv("GRAPH_TRANSFORMERS_CACHE", str(tmp_path / "cache"))
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    config, spec, splits, model, task = _setup(data_dir)  # processes the store once, here
    train = splits["train"]
    assert len(train) == 18
    torch.multiprocessing.spawn(_rank, args=(str(data_dir), str(tmp_path / "init"),
                                             str(tmp_path)), nprocs=WORLD, join=True)
    got = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]

    # each rank sees its own shard: the epoch's batches dealt in turn, together the whole split
    shards = [g["shard"] for g in got]
    assert all(len(s) == len(shards[0]) for s in shards)  # padded to equal counts per rank
    seen = [i for s in shards for b in s for i in b]
    assert set(seen) == set(range(len(train)))
    first = [s[0] for s in shards]
    for g, idx in zip(got, first):  # the batch a rank trained on is its shard's first
        torch.testing.assert_close(g["y"], torch.cat([train[i].y for i in idx]))
    assert not set(first[0]) & set(first[1])

    # the same initial weights on both ranks and in this process
    for g in got:
        for name, p in model.named_parameters():
            torch.testing.assert_close(g["init"][name], p.detach(), rtol=0, atol=0)

    # DDP's gradients (the same on both ranks) == the mean of the shards' gradients here
    per_shard = []
    for idx in first:
        model.zero_grad()
        _loss(model, task, Batch.from_data_list([train[i] for i in idx])).backward()
        per_shard.append({n: p.grad.clone() for n, p in model.named_parameters()
                          if p.grad is not None})
    assert got[0]["grads"].keys() == per_shard[0].keys() and len(per_shard[0]) > 10
    for name in per_shard[0]:
        expected = (per_shard[0][name] + per_shard[1][name]) / WORLD
        for g in got:
            torch.testing.assert_close(g["grads"][name], expected, rtol=1e-9, atol=1e-12,
                                       msg=name)
    # shards of equal size: the union's gradient, as one process over both batches
    if len(first[0]) == len(first[1]):
        model.zero_grad()
        _loss(model, task, Batch.from_data_list([train[i] for b in first for i in b])).backward()
        for name, p in model.named_parameters():
            if p.grad is not None:
                torch.testing.assert_close(got[0]["grads"][name], p.grad, rtol=1e-9, atol=1e-12)
    assert os.environ.get("RANK") is None


def test_ddp_strategy_finds_unused_parameters_only_where_there_are(tmp_path, monkeypatch):
    """Regression (a 2-rank run of GT with edge features stopped at its second step: "parameters
    that were not used in producing the loss"): plain DDP names get the find-unused variant
    exactly when a step leaves parameters without gradient; the probe changes nothing."""
    data_dir = tmp_path / "data"
    write_lsc(data_dir, "pcqm4mv2")
    monkeypatch.setenv("GRAPH_TRANSFORMERS_CACHE", str(tmp_path / "cache"))
    config, spec, splits, model, task = _setup(data_dir)
    module = GraphTaskModule(model, spec, config.optim, task)
    before = {k: v.clone() for k, v in module.state_dict().items()}
    rng = torch.random.get_rng_state()
    assert ddp_strategy("ddp", module, splits["train"], 4) == "ddp_find_unused_parameters_true"
    assert ddp_strategy("ddp_spawn", module, splits["train"], 4) == \
        "ddp_spawn_find_unused_parameters_true"
    assert ddp_strategy("auto", module, splits["train"], 4) == "auto"
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert all(torch.equal(before[k], v) for k, v in module.state_dict().items())
    assert all(p.grad is None for p in module.parameters())
    node_only = build_config({**RAW, "model": {**RAW["model"], "use_edge_features": False}})
    node_only.data.data_dir = str(data_dir)
    torch.manual_seed(0)
    plain = GraphTaskModule(make_model(node_only, spec, splits["train"]), spec, node_only.optim,
                            make_task(node_only, spec, splits["train"]))
    assert unused_parameters(plain, splits["train"], 4) == []
    assert ddp_strategy("ddp", plain, splits["train"], 4) == "ddp"


@pytest.mark.slow
def test_two_process_ddp_run_of_gt_with_edges_on_pcqm4mv2(tmp_path):
    """Regression: a 2-rank CPU DDP run (Lightning's launcher) of GT with edge features on the
    PCQM4Mv2 fixture trains past its second step (unused parameters) and through validation (the
    OGB-LSC MAE's state, one tensor after the ranks' sync, was read as a list) to metrics.json."""
    import json
    import subprocess
    import sys
    data_dir = tmp_path / "data"
    write_lsc(data_dir, "pcqm4mv2")
    config = tmp_path / "ddp.yaml"
    config.write_text("""name: ddp-gt-edges
model: {name: gt, hidden_dim: 16, num_layers: 2, num_heads: 2, use_edge_features: true,
        pe: null, norm: layer}
data: {name: pcqm4mv2, batch_size: 4, num_workers: 0}
optim: {lr: 1.0e-3}
trainer: {max_epochs: 2, enable_progress_bar: false, threads: 1, accelerator: cpu, devices: 2,
          strategy: ddp}
""")
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GRAPH_TRANSFORMERS_CACHE": str(tmp_path / "c"),
           "PYTHONPATH": str(repo / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for key in ("RANK", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE", "MASTER_PORT"):
        env.pop(key, None)
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "graph_transformers.cli", "train", "--config",
                           str(config), "--data-dir", str(data_dir), "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DDP runs with find_unused_parameters=True" in proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs"] == 2 and metrics["val"]["mae"] > 0
