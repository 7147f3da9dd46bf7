"""Cluster-GCN mini-batches (Chiang et al. 2019): METIS parts, merged clusters as induced
subgraphs (checked against ``torch_geometric.utils.subgraph``), seeded epochs, DDP shares, the
partition cache, the config/CLI path, and the error without a METIS backend."""
from __future__ import annotations

import csv
import sys

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import subgraph

from graph_transformers._optional import MissingDependencyError
from graph_transformers.data import cluster as cl
from graph_transformers.data.cluster import (ClusterBatchSampler, ClusterPartition,
                                             cached_metis_partition, cluster_loader,
                                             metis_backend, metis_partition)
from graph_transformers.training.config import build_config

needs_metis = pytest.mark.skipif(metis_backend() is None,
                                 reason="no METIS backend: pip install 'graph-transformers[large]'")


def _graph(n=120, m=600, seed=0) -> Data:
    """A random directed multigraph with self-loops; ``edge_attr`` numbers the edges."""
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, m), generator=g)
    data = Data(x=torch.randn(n, 3, generator=g), edge_index=ei,
                edge_attr=torch.arange(m).float().unsqueeze(1),
                y=torch.randint(0, 4, (n,), generator=g), num_nodes=n)
    data.node_mask = torch.rand(n, generator=g) < 0.4
    return data


def _edges(src, dst, attr) -> list[tuple[int, int, int]]:
    return sorted(zip(src.tolist(), dst.tolist(), attr.view(-1).long().tolist()))


def _groups(loader) -> list[list[int]]:
    """The cluster groups of one pass of ``loader``'s batch sampler."""
    return [list(b) for b in loader.batch_sampler]


@needs_metis
def test_every_node_lands_in_exactly_one_part(tmp_path):
    data = _graph()
    part = metis_partition(data.edge_index, data.num_nodes, 8, seed=0)
    assert part.shape == (120,) and part.dtype == torch.long
    assert int(part.min()) >= 0 and int(part.max()) < 8
    sizes = torch.bincount(part, minlength=8)
    assert int(sizes.min()) > 0 and int(sizes.max()) <= 2 * 120 // 8  # balanced parts
    # ClusterData's layout: the parts' node lists are disjoint and cover every node
    partition = ClusterPartition(data, 8, seed=0, cache_dir=tmp_path)
    ptr, perm = partition.partition.partptr, partition.partition.node_perm
    members = [perm[ptr[i]:ptr[i + 1]] for i in range(8)]
    assert torch.equal(torch.sort(torch.cat(members)).values, torch.arange(120))
    for i, nodes in enumerate(members):
        assert bool((partition.assignment[nodes] == i).all())
    # METIS cuts few edges: far fewer than the (p - 1) / p of a random assignment
    und = data.edge_index[:, data.edge_index[0] != data.edge_index[1]]
    cut = (part[und[0]] != part[und[1]]).float().mean()
    assert cut < 0.8 * 7 / 8
    # an evaluation pass over all nodes visits each exactly once
    loader = cluster_loader(data, 8, 3, shuffle=False, cache_dir=tmp_path)
    seen = torch.cat([b.n_id for b in loader])
    assert torch.equal(torch.sort(seen).values, torch.arange(120))


@needs_metis
@pytest.mark.parametrize("shuffle", [True, False])
def test_merged_batches_are_the_induced_subgraph_of_the_chosen_clusters(tmp_path, shuffle):
    data = _graph(seed=1)
    loader = cluster_loader(data, 10, 3, node_mask=data.node_mask, shuffle=shuffle, seed=4,
                            cache_dir=tmp_path)
    groups = ClusterBatchSampler(cl.active_clusters(loader.cluster_data, data.node_mask), 3,
                                 shuffle=shuffle, seed=4).batches()
    assignment = loader.cluster_data.assignment
    batches = list(loader)
    assert len(batches) == len(groups) == len(loader)
    for batch, group in zip(batches, groups):
        # the batch's nodes are exactly the union of the chosen clusters
        want = torch.nonzero(torch.isin(assignment, torch.tensor(group))).view(-1)
        assert torch.equal(torch.sort(batch.n_id).values, want)
        # its edges are those of the induced subgraph (between-cluster edges restored), with
        # their own features
        ref_ei, ref_attr = subgraph(batch.n_id, data.edge_index, data.edge_attr,
                                    relabel_nodes=False, num_nodes=data.num_nodes)
        got = _edges(batch.n_id[batch.edge_index[0]], batch.n_id[batch.edge_index[1]],
                     batch.edge_attr)
        assert got == _edges(ref_ei[0], ref_ei[1], ref_attr)
        between = assignment[batch.n_id[batch.edge_index[0]]] != \
            assignment[batch.n_id[batch.edge_index[1]]]
        if len(group) > 1:
            assert bool(between.any())  # the edges between the merged clusters are there
        # node attributes follow their nodes; node_mask is the split's mask on the batch
        assert torch.equal(batch.x, data.x[batch.n_id])
        assert torch.equal(batch.y, data.y[batch.n_id])
        assert torch.equal(batch.node_mask, data.node_mask[batch.n_id])
        assert bool(batch.node_mask.any())  # no batch without a target node
    # every target node is in exactly one batch of the epoch
    targets = torch.cat([b.n_id[b.node_mask] for b in batches])
    assert torch.equal(torch.sort(targets).values, torch.nonzero(data.node_mask).view(-1))


@needs_metis
def test_batches_are_seeded_by_seed_and_epoch(tmp_path):
    data = _graph(seed=2)

    def epoch(seed, t):
        """Epoch ``t``'s groups and batches from a fresh loader (as a new process would)."""
        loader = cluster_loader(data, 12, 3, node_mask=data.node_mask, shuffle=True, seed=seed,
                                cache_dir=tmp_path)
        loader.batch_sampler.set_epoch(t)
        groups = _groups(loader)
        loader.batch_sampler.set_epoch(t)
        return groups, [b.n_id.tolist() for b in loader]

    a_groups, a_nodes = epoch(0, 3)
    assert epoch(0, 3) == (a_groups, a_nodes)  # same seed and epoch: the same batches
    other = epoch(0, 4)[0]
    assert other != a_groups  # another epoch: another draw
    assert epoch(1, 3)[0] != a_groups  # another seed: another draw
    # each epoch draws every cluster that holds a target node, once
    assert sorted(c for g in a_groups for c in g) == sorted(c for g in other for c in g)
    # without set_epoch, consecutive passes still differ (the sampler advances itself)
    sampler = ClusterBatchSampler(range(12), 3, shuffle=True, seed=0)
    first, second = list(sampler), list(sampler)
    assert first != second and sampler.state_dict() == {"epoch": 2, "seed": 0}
    # evaluation order is fixed
    fixed = ClusterBatchSampler(range(7), 3, shuffle=False)
    assert list(fixed) == list(fixed) == [[0, 1, 2], [3, 4, 5], [6]]


@needs_metis
@pytest.mark.parametrize("world", [2, 3])
def test_rank_shares_are_disjoint_and_cover_the_epoch(tmp_path, world):
    data = _graph(seed=3)
    data.node_mask = torch.ones(data.num_nodes, dtype=torch.bool)

    def loader(rank, shuffle):
        ld = cluster_loader(data, 10, 2, node_mask=data.node_mask, shuffle=shuffle, seed=7,
                            cache_dir=tmp_path, num_replicas=world, rank=rank)
        ld.batch_sampler.set_epoch(5)
        return ld

    single = cluster_loader(data, 10, 2, node_mask=data.node_mask, shuffle=True, seed=7,
                            cache_dir=tmp_path, num_replicas=1, rank=0)
    single.batch_sampler.set_epoch(5)
    everything = _groups(single)  # 5 groups of 2 of the 10 clusters
    # training: every rank gets the same number of batches; apart from the (-B) mod W padded
    # repeats, the shares are disjoint, and together they cover the epoch
    shares = [_groups(loader(r, True)) for r in range(world)]
    assert len({len(s) for s in shares}) == 1 and len(shares[0]) == len(loader(0, True))
    dealt = [tuple(g) for s in shares for g in s]
    assert set(dealt) == {tuple(g) for g in everything}
    assert len(dealt) - len(everything) == (-len(everything)) % world
    own = [share[:len(everything[r::world])] for r, share in enumerate(shares)]
    for r in range(world):  # rank r: global batches r, r + W, …
        assert own[r] == everything[r::world]
    owned = [c for share in own for g in share for c in g]
    assert len(owned) == len(set(owned)) == 10  # no cluster on two ranks, none left out
    # evaluation: each batch exactly once over the ranks, nothing padded
    evals = [[b.n_id for b in loader(r, False)] for r in range(world)]
    nodes = torch.cat([n for share in evals for n in share])
    assert torch.equal(torch.sort(nodes).values, torch.arange(data.num_nodes))


@needs_metis
def test_partition_is_cached_by_graph_parts_and_seed(tmp_path, monkeypatch):
    data = _graph(seed=5)
    first = cached_metis_partition(data.edge_index, data.num_nodes, 6, seed=1,
                                   cache_dir=tmp_path)
    files = sorted(p.name for p in tmp_path.glob("metis-*.pt"))
    assert len(files) == 1 and "-p6-s1-" in files[0]

    def no_metis(*args, **kwargs):
        raise AssertionError("METIS ran again")
    monkeypatch.setattr(cl, "metis_partition", no_metis)
    assert torch.equal(cached_metis_partition(data.edge_index, data.num_nodes, 6, seed=1,
                                              cache_dir=tmp_path), first)
    # another num_parts, seed or graph is another cache entry
    for args in ((data.edge_index, 120, 5, 1), (data.edge_index, 120, 6, 2),
                 (data.edge_index[:, :-1], 120, 6, 1)):
        with pytest.raises(AssertionError, match="METIS ran again"):
            cached_metis_partition(*args, cache_dir=tmp_path)
    monkeypatch.undo()
    # a damaged cache file is recomputed, not trusted
    torch.save(torch.zeros(3, dtype=torch.long), tmp_path / files[0])
    assert torch.equal(cached_metis_partition(data.edge_index, data.num_nodes, 6, seed=1,
                                              cache_dir=tmp_path), first)
    with pytest.raises(ValueError, match="num_parts must be in 1..120"):
        metis_partition(data.edge_index, 120, 121)


def test_missing_backend_names_the_extra(monkeypatch, tmp_path):
    import torch_geometric.typing as pyg_typing
    monkeypatch.setattr(pyg_typing, "WITH_TORCH_SPARSE", False)
    monkeypatch.setattr(pyg_typing, "WITH_METIS", False, raising=False)
    monkeypatch.setitem(sys.modules, "pymetis", None)  # import fails
    assert metis_backend() is None
    data = _graph()
    msg = r"data.sampler: cluster .*needs pymetis: pip install 'graph-transformers\[large\]'"
    with pytest.raises(MissingDependencyError, match=msg):
        metis_partition(data.edge_index, data.num_nodes, 4)
    with pytest.raises(MissingDependencyError, match=msg):
        cluster_loader(data, 4, 2, cache_dir=tmp_path)


def test_config_checks_the_cluster_keys():
    from graph_transformers.training.config import ConfigError
    base = {"model": {"name": "gt", "pe": None}}

    def cfg(**data):
        return build_config({**base, "data": {"name": "cora", **data}})

    c = cfg(sampler="cluster", num_parts=50, clusters_per_batch=5)
    assert (c.data.sampler, c.data.num_parts, c.data.clusters_per_batch) == ("cluster", 50, 5)
    for data, match in (({"sampler": "cluster"}, "needs data.num_parts"),
                        ({"num_parts": 10}, "apply to data.sampler: cluster"),
                        ({"sampler": "cluster", "num_parts": 4, "clusters_per_batch": 5},
                         "exceeds data.num_parts"),
                        ({"sampler": "cluster", "num_parts": 4, "num_neighbors": [5]},
                         "num_neighbors applies to data.sampler: neighbor"),
                        ({"sampler": "neighbor"}, "needs data.num_neighbors")):
        with pytest.raises((ConfigError, ValueError), match=match):
            cfg(**data)


def test_cluster_batches_need_a_single_graph_with_masks():
    from graph_transformers.training.loaders import make_loader
    c = build_config({"model": {"name": "gt", "pe": None},
                      "data": {"name": "zinc", "sampler": "cluster", "num_parts": 2}})
    with pytest.raises(ValueError, match="cluster .*single-graph node task"):
        make_loader(c, [Data(x=torch.zeros(2, 1)), Data(x=torch.zeros(2, 1))], "train")


@needs_metis
def test_cli_trains_by_cluster_batches_and_the_loss_goes_down(tmp_path):
    """``data.sampler: cluster`` through the config and the CLI on a small synthetic graph."""
    import yaml

    from graph_transformers.cli import main
    from graph_transformers.data.cache import resolve_cache_dir
    config = {
        "name": "synthetic-gt-cluster-test",
        "model": {"name": "gt", "hidden_dim": 16, "num_layers": 1, "num_heads": 2, "pe": None,
                  "norm": "layer", "dropout": 0.0, "mlp_layers": 1},
        "data": {"name": "synthetic_large", "sampler": "cluster", "num_parts": 16,
                 "clusters_per_batch": 4, "eval_clusters_per_batch": 8,
                 "options": {"num_nodes": 1500, "avg_degree": 8, "signal": 1.0}},
        "optim": {"optimizer": "adamw", "lr": 5e-3, "scheduler": None},
        "trainer": {"max_epochs": 6, "enable_progress_bar": False},
        "seed": 0}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "run"
    assert main(["train", "--config", str(path), "--out", str(out)]) == 0
    with open(out / "epochs.csv") as f:
        rows = list(csv.DictReader(f))
    losses = [float(r["train/loss"]) for r in rows]
    assert len(losses) == 6 and losses[-1] < 0.9 * losses[0], losses
    import json
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test"]["accuracy"] > 0.3, metrics["test"]  # 10 classes: chance is 0.1
    # the partition was computed once and cached next to the dataset's processed files
    cached = list((resolve_cache_dir() / "SyntheticLarge").rglob("partitions/metis-*-p16-s0-*.pt"))
    assert len(cached) == 1


@needs_metis
@pytest.mark.slow
def test_two_process_cpu_ddp_cluster_batches_match_single_process_evaluation(tmp_path):
    """Two-process CPU DDP (as ``tests/training/test_distributed.py``) with
    ``data.sampler: cluster``: each
    rank trains on its share of the cluster batches; the validation accuracy logged under DDP
    (each evaluation batch on one rank, states summed) equals rank 0's single-process
    evaluation of the same checkpoint in metrics.json, which covers every validation node."""
    import json
    import os
    import subprocess
    from pathlib import Path

    import yaml
    repo = Path(__file__).resolve().parents[2]
    config = tmp_path / "cluster.yaml"
    config.write_text(yaml.safe_dump({
        "model": {"name": "gt", "hidden_dim": 16, "num_layers": 1, "num_heads": 2, "pe": None,
                  "norm": "layer", "dropout": 0.0, "mlp_layers": 1},
        "data": {"name": "synthetic_large", "sampler": "cluster", "num_parts": 16,
                 "clusters_per_batch": 4, "eval_clusters_per_batch": 4,
                 "options": {"num_nodes": 1500, "avg_degree": 8, "signal": 1.0}},
        "optim": {"optimizer": "adamw", "lr": 5e-3, "scheduler": None},
        "trainer": {"max_epochs": 3, "accelerator": "cpu", "devices": 2, "strategy": "ddp",
                    "enable_progress_bar": False},
        "seed": 0}))
    env = {**os.environ, "PYTHONPATH": str(repo / "src") + os.pathsep +
           os.environ.get("PYTHONPATH", ""), "OMP_NUM_THREADS": "1",
           "GRAPH_TRANSFORMERS_CACHE": str(tmp_path / "cache")}
    for key in ("RANK", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE", "MASTER_PORT",
                "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID"):
        env.pop(key, None)
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "graph_transformers.cli", "train", "--config",
                           str(config), "--out", str(out)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    with open(out / "epochs.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3]
    assert metrics["val"]["accuracy"] > 0.15, metrics["val"]  # 10 classes: chance is 0.1
    for ckpt_eval, epoch in ((metrics["last"]["val"], metrics["last"]["epoch"]),
                             (metrics["val"], metrics["best_epoch"])):
        logged = rows[epoch - 1]
        assert float(logged["val/accuracy"]) == ckpt_eval["accuracy"]
        assert float(logged["val/loss"]) == pytest.approx(ckpt_eval["loss"], rel=1e-5)
