"""Tests of the generated SBM benchmarks PATTERN and CLUSTER
(graph_transformers.datasets.synthetic.sbm).

Statistics are checked against the generation procedure of Dwivedi et al. (see the module
docstring and ``shared/data/README.md`` section 7) on a few hundred generated graphs; statistical
tolerances are 5 binomial (or sampling) standard deviations.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.utils import coalesce, contains_self_loops, is_undirected

import graph_transformers.datasets.synthetic.sbm as sbm
from graph_transformers.datasets.synthetic.sbm import (
    CLUSTER,
    CLUSTER_P,
    CLUSTER_Q,
    PATTERN,
    PATTERN_P,
    PATTERN_P_INSIDE,
    PATTERN_Q,
    PATTERN_Q_PATTERN,
    generate_cluster,
    generate_pattern,
)
from graph_transformers.datasets.synthetic.sbm_graph import sbm_graph
from graph_transformers.training.metrics import weighted_accuracy

SIZE_MEAN = (5 + 34) / 2  # uniform on 5..34
SIZE_STD = math.sqrt((30**2 - 1) / 12)


@pytest.fixture(scope="module")
def pattern():
    """40 pattern instances x (3, 1, 1) graphs = 200 graphs, with hidden blocks, + patterns."""
    splits, patterns = generate_pattern((3, 1, 1), num_patterns=40, seed=0,
                                        return_patterns=True, keep_blocks=True)
    return splits, patterns


@pytest.fixture(scope="module")
def cluster():
    return generate_cluster((150, 25, 25), seed=0)


def _all(splits):
    return [d for split in ("train", "val", "test") for d in splits[split]]


def _upper(data):
    row, col = data.edge_index
    keep = row < col
    return row[keep], col[keep]


def _close(edges: int, pairs: int, p: float) -> None:
    tol = 5 * math.sqrt(p * (1 - p) / pairs)
    assert abs(edges / pairs - p) < tol, (edges / pairs, p, tol)


def _check_edges(data):
    ei, n = data.edge_index, data.num_nodes
    assert ei.dtype == torch.long and ei.dim() == 2 and ei.shape[0] == 2
    assert int(ei.min()) >= 0 and int(ei.max()) < n
    assert is_undirected(ei, num_nodes=n)
    assert not contains_self_loops(ei)
    # coalesced: sorted by (row, col), no duplicates
    assert torch.equal(coalesce(ei, num_nodes=n), ei)


# --------------------------------------------------------------------------------------------
# sbm_graph
# --------------------------------------------------------------------------------------------


def test_sbm_graph_extremes():
    rng = np.random.default_rng(0)
    ei, block = sbm_graph(rng, [3, 4], 1.0, 0.0)  # two cliques
    assert block.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert ei.shape[1] == 2 * (3 + 6)
    assert bool((block[ei[0]] == block[ei[1]]).all())
    ei, _ = sbm_graph(rng, [3, 4], 0.0, 1.0)  # complete bipartite
    assert ei.shape[1] == 2 * 12
    ei, _ = sbm_graph(rng, [3, 4], 1.0, 1.0)  # complete graph
    assert ei.shape[1] == 7 * 6
    for e in (ei,):
        assert not contains_self_loops(e) and is_undirected(e)
    ei, block = sbm_graph(rng, [], 0.5, 0.5)
    assert ei.shape == (2, 0) and block.numel() == 0
    with pytest.raises(ValueError):
        sbm_graph(rng, [3, -1], 0.5, 0.5)
    with pytest.raises(ValueError):
        sbm_graph(rng, [3, 4], 1.5, 0.5)


def test_sbm_graph_densities():
    rng = np.random.default_rng(1)
    ei, block = sbm_graph(rng, [100, 120, 80], 0.3, 0.1)
    n = block.numel()
    assert torch.equal(coalesce(ei, num_nodes=n), ei) and is_undirected(ei)
    row, col = ei[:, ei[0] < ei[1]]
    same = block[row] == block[col]
    within_pairs = sum(s * (s - 1) // 2 for s in (100, 120, 80))
    _close(int(same.sum()), within_pairs, 0.3)
    _close(int((~same).sum()), n * (n - 1) // 2 - within_pairs, 0.1)


# --------------------------------------------------------------------------------------------
# PATTERN
# --------------------------------------------------------------------------------------------


def test_pattern_format_and_sizes(pattern):
    splits, patterns = pattern
    assert [len(splits[s]) for s in ("train", "val", "test")] == [120, 40, 40]
    assert len(patterns) == 40
    sbm_sizes = []
    for d in _all(splits):
        n = d.num_nodes
        assert set(d.keys()) == {"x", "edge_index", "y", "block"}
        assert d.x.dtype == torch.long and d.x.shape == (n, 1)
        assert d.y.dtype == torch.long and d.y.shape == (n,)
        assert set(d.x.view(-1).tolist()) <= {0, 1, 2}
        assert set(d.y.tolist()) == {0, 1}
        _check_edges(d)
        counts = torch.bincount(d.block, minlength=6)
        assert counts.numel() == 6
        assert bool(((counts >= 5) & (counts <= 34)).all())
        assert 30 <= n <= 6 * 34
        assert torch.equal(d.y, (d.block == 5).long())
        sbm_sizes += counts[:5].tolist()
    # block sizes ~ randint(5, 35): uniform on 5..34 (upper bound exclusive)
    assert min(sbm_sizes) == 5 and max(sbm_sizes) == 34
    assert abs(np.mean(sbm_sizes) - SIZE_MEAN) < 5 * SIZE_STD / math.sqrt(len(sbm_sizes))
    sizes = [p.num_nodes for p in patterns]
    assert min(sizes) >= 5 and max(sizes) <= 34 and len(set(sizes)) > 5


def test_pattern_edge_densities(pattern):
    splits, patterns = pattern
    e = dict.fromkeys(("within", "between", "pattern_sbm"), 0)
    pairs = dict.fromkeys(e, 0)
    for d in _all(splits):
        row, col = _upper(d)
        br, bc = d.block[row], d.block[col]
        pat_r, pat_c = br == 5, bc == 5
        sbm_pair = ~pat_r & ~pat_c
        e["within"] += int((sbm_pair & (br == bc)).sum())
        e["between"] += int((sbm_pair & (br != bc)).sum())
        e["pattern_sbm"] += int((pat_r ^ pat_c).sum())
        counts = torch.bincount(d.block, minlength=6).tolist()
        n_sbm, n0 = sum(counts[:5]), counts[5]
        w = sum(s * (s - 1) // 2 for s in counts[:5])
        pairs["within"] += w
        pairs["between"] += n_sbm * (n_sbm - 1) // 2 - w
        pairs["pattern_sbm"] += n_sbm * n0
    _close(e["within"], pairs["within"], PATTERN_P)
    _close(e["between"], pairs["between"], PATTERN_Q)
    _close(e["pattern_sbm"], pairs["pattern_sbm"], PATTERN_Q_PATTERN)
    # inside the pattern: each instance is one G(n0, 0.5) draw, pooled over the instances
    pe = sum(p.edge_index.shape[1] // 2 for p in patterns)
    pp = sum(p.num_nodes * (p.num_nodes - 1) // 2 for p in patterns)
    _close(pe, pp, PATTERN_P_INSIDE)
    for p in patterns:
        _check_edges(p)


def test_pattern_features_and_labels(pattern):
    splits, patterns = pattern
    nodes = _all(splits)
    # SBM-node features ~ randint(3)
    u = torch.cat([d.x.view(-1)[d.y == 0] for d in nodes])
    freq = torch.bincount(u, minlength=3).double() / u.numel()
    assert torch.allclose(freq, torch.full((3,), 1 / 3, dtype=torch.double),
                          atol=5 * math.sqrt(2 / 9 / u.numel()))
    # positives: exactly the pattern's nodes, with the pattern's features
    pos = sum(int(d.y.sum()) for d in nodes)
    total = sum(d.num_nodes for d in nodes)
    expected = 0
    for split, per in (("train", 3), ("val", 1), ("test", 1)):
        for i, d in enumerate(splits[split]):
            p = patterns[i // per]
            assert int(d.y.sum()) == p.num_nodes
            assert sorted(d.x.view(-1)[d.y == 1].tolist()) == sorted(p.x.view(-1).tolist())
            expected += p.num_nodes
    assert pos == expected
    # expected positive fraction ~ E[n0] / E[n] = 19.5 / 117; std ~ 0.011 over 40 instances
    assert abs(pos / total - SIZE_MEAN / (6 * SIZE_MEAN)) < 0.06


def test_pattern_shuffled(pattern):
    splits, _ = pattern
    for d in _all(splits):
        assert not torch.equal(d.y, torch.sort(d.y).values)  # pattern nodes not all at the end
        assert not torch.equal(d.block, torch.sort(d.block).values)


def _pattern_nx(x, edge_index, n):
    g = nx.Graph()
    g.add_nodes_from((i, {"f": int(x[i])}) for i in range(n))
    g.add_edges_from(edge_index.t().tolist())
    return g


def test_pattern_instances_shared_across_splits(pattern):
    """Each graph's pattern-induced subgraph (with features) is isomorphic to its instance, in
    train, val and test alike, and graphs of different instances carry different patterns."""
    splits, patterns = pattern
    ref = [_pattern_nx(p.x.view(-1), p.edge_index, p.num_nodes) for p in patterns]
    match = nx.algorithms.isomorphism.categorical_node_match("f", None)
    for split, per in (("train", 3), ("val", 1), ("test", 1)):
        for i, d in enumerate(splits[split]):
            idx = torch.nonzero(d.y).view(-1)
            relabel = torch.full((d.num_nodes,), -1, dtype=torch.long)
            relabel[idx] = torch.arange(idx.numel())
            keep = (d.y[d.edge_index[0]] == 1) & (d.y[d.edge_index[1]] == 1)
            sub = _pattern_nx(d.x.view(-1)[idx], relabel[d.edge_index[:, keep]], idx.numel())
            k = i // per
            assert nx.is_isomorphic(sub, ref[k], node_match=match), (split, i)
            if split == "val":
                other = ref[(k + 1) % len(ref)]
                assert not nx.is_isomorphic(sub, other, node_match=match)


def test_pattern_split_sizes_determinism_and_args():
    a = generate_pattern((3, 2, 1), num_patterns=4, seed=5)
    assert [len(a[s]) for s in ("train", "val", "test")] == [12, 8, 4]
    b = generate_pattern((3, 2, 1), num_patterns=4, seed=5)
    c = generate_pattern((3, 2, 1), num_patterns=4, seed=6)
    for s in a:
        for d1, d2 in zip(a[s], b[s]):
            assert torch.equal(d1.x, d2.x) and torch.equal(d1.y, d2.y)
            assert torch.equal(d1.edge_index, d2.edge_index)
    assert not torch.equal(a["train"][0].edge_index, c["train"][0].edge_index) or not (
        torch.equal(a["train"][0].y, c["train"][0].y))
    # a split's stream does not depend on the other splits' counts
    d = generate_pattern((0, 2, 0), num_patterns=4, seed=5)
    assert len(d["train"]) == len(d["test"]) == 0
    assert all(torch.equal(g1.edge_index, g2.edge_index) for g1, g2 in zip(a["val"], d["val"]))
    for bad in ((1, 2), (1, -1, 1), (1.5, 1, 1), "abc", 3):
        with pytest.raises(ValueError):
            generate_pattern(bad, num_patterns=2)
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError):
            generate_pattern((1, 1, 1), num_patterns=bad)
    with pytest.raises(ValueError):
        generate_pattern((1, 1, 1), num_patterns=2, seed=-1)


# --------------------------------------------------------------------------------------------
# CLUSTER
# --------------------------------------------------------------------------------------------


def test_cluster_format_sizes_and_features(cluster):
    assert [len(cluster[s]) for s in ("train", "val", "test")] == [150, 25, 25]
    sizes = []
    for d in _all(cluster):
        n = d.num_nodes
        assert set(d.keys()) == {"x", "edge_index", "y"}
        assert d.x.dtype == torch.long and d.x.shape == (n, 1)
        assert d.y.dtype == torch.long and d.y.shape == (n,)
        _check_edges(d)
        counts = torch.bincount(d.y, minlength=6)
        assert counts.numel() == 6 and bool(((counts >= 5) & (counts <= 34)).all())
        assert 30 <= n <= 6 * 34
        sizes += counts.tolist()
        # exactly one nonzero feature per community, equal to community + 1
        x = d.x.view(-1)
        nz = torch.nonzero(x).view(-1)
        assert nz.numel() == 6
        assert sorted(d.y[nz].tolist()) == list(range(6))
        assert torch.equal(x[nz], d.y[nz] + 1)
        assert not torch.equal(d.y, torch.sort(d.y).values)  # shuffled
    assert min(sizes) == 5 and max(sizes) == 34
    assert abs(np.mean(sizes) - SIZE_MEAN) < 5 * SIZE_STD / math.sqrt(len(sizes))


def test_cluster_densities_and_balance(cluster):
    e_in = e_out = p_in = p_out = 0
    label_counts = torch.zeros(6, dtype=torch.long)
    for d in _all(cluster):
        row, col = _upper(d)
        same = d.y[row] == d.y[col]
        e_in += int(same.sum())
        e_out += int((~same).sum())
        counts = torch.bincount(d.y, minlength=6)
        label_counts += counts
        w = sum(s * (s - 1) // 2 for s in counts.tolist())
        p_in += w
        p_out += d.num_nodes * (d.num_nodes - 1) // 2 - w
    _close(e_in, p_in, CLUSTER_P)
    _close(e_out, p_out, CLUSTER_Q)
    frac = label_counts.double() / label_counts.sum()
    assert torch.allclose(frac, torch.full((6,), 1 / 6, dtype=torch.double), atol=0.03)


def test_cluster_determinism_and_args():
    a = generate_cluster((4, 2, 2), seed=3)
    b = generate_cluster((4, 2, 2), seed=3)
    c = generate_cluster((4, 2, 2), seed=4)
    for s in a:
        for d1, d2 in zip(a[s], b[s]):
            assert torch.equal(d1.x, d2.x) and torch.equal(d1.y, d2.y)
            assert torch.equal(d1.edge_index, d2.edge_index)
    assert any(d1.num_nodes != d2.num_nodes or not torch.equal(d1.y, d2.y)
               for d1, d2 in zip(a["train"], c["train"]))
    assert a["train"][0].num_nodes != a["val"][0].num_nodes or not torch.equal(
        a["train"][0].y, a["val"][0].y)
    d = generate_cluster((0, 0, 2), seed=3)
    assert all(torch.equal(g1.edge_index, g2.edge_index) for g1, g2 in zip(a["test"], d["test"]))
    for bad in ((1, 2), (1, -1, 1), None):
        with pytest.raises(ValueError):
            generate_cluster(bad)
    with pytest.raises(ValueError):
        generate_cluster((1, 1, 1), seed=-2)


# --------------------------------------------------------------------------------------------
# weighted_accuracy
# --------------------------------------------------------------------------------------------


def _benchmark_reference(pred: np.ndarray, target: np.ndarray) -> float:
    """The benchmark's definition written out: the confusion-matrix classes are those occurring
    in target or prediction (assumed to be 0..m-1); mean over them of TP_c / #(target == c),
    0 for classes without targets; divided by 100 here."""
    m = int(max(pred.max(), target.max())) + 1
    recalls = [
        ((pred == c) & (target == c)).sum() / (target == c).sum() if (target == c).any() else 0.0
        for c in range(m)
    ]
    return float(np.mean(recalls))


def test_weighted_accuracy_hand_computed():
    target = torch.tensor([0, 0, 0, 1, 1, 2])
    pred = torch.tensor([0, 1, 0, 1, 1, 0])
    # recalls 2/3, 2/2, 0/1
    assert weighted_accuracy(pred, target, 3) == pytest.approx((2 / 3 + 1 + 0) / 3)
    # a class absent from both target and prediction does not count
    assert weighted_accuracy(pred, target, 5) == pytest.approx((2 / 3 + 1 + 0) / 3)
    # a class predicted but absent from the targets counts with recall 0 (the benchmark's
    # confusion matrix has a row for it): (1/2 + 1 + 0) / 3, not (1/2 + 1) / 2
    t2, p2 = torch.tensor([0, 0, 1, 1]), torch.tensor([0, 2, 1, 1])
    assert weighted_accuracy(p2, t2, 3) == pytest.approx(0.5)
    assert _benchmark_reference(p2.numpy(), t2.numpy()) == pytest.approx(0.5)
    # perfect and all-wrong
    assert weighted_accuracy(target, target, 3) == pytest.approx(1.0)
    assert weighted_accuracy(torch.tensor([1, 0]), torch.tensor([0, 1]), 2) == 0.0
    # unbalanced binary: plain accuracy 0.9, balanced accuracy (1 + 0) / 2
    t3 = torch.tensor([0] * 9 + [1])
    assert weighted_accuracy(torch.zeros(10, dtype=torch.long), t3, 2) == pytest.approx(0.5)


def test_weighted_accuracy_scores_and_reference():
    gen = torch.Generator().manual_seed(0)
    for num_classes in (2, 6):
        for _ in range(20):
            n = int(torch.randint(num_classes, 300, (1,), generator=gen))
            target = torch.cat([torch.arange(num_classes),
                                torch.randint(num_classes, (n,), generator=gen)])
            scores = torch.randn(target.numel(), num_classes, generator=gen)
            scores[torch.arange(target.numel()), target] += 1.0
            pred = scores.argmax(1)
            value = weighted_accuracy(scores, target, num_classes)
            assert value == pytest.approx(weighted_accuracy(pred, target, num_classes))
            assert value == pytest.approx(_benchmark_reference(pred.numpy(), target.numpy()))
            assert 0.0 <= value <= 1.0


def test_weighted_accuracy_bad_inputs():
    with pytest.raises(ValueError):
        weighted_accuracy(torch.tensor([0, 1]), torch.tensor([0]), 2)
    with pytest.raises(ValueError):
        weighted_accuracy(torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long), 2)
    with pytest.raises(ValueError):
        weighted_accuracy(torch.tensor([0, 2]), torch.tensor([0, 1]), 2)
    with pytest.raises(ValueError):
        weighted_accuracy(torch.randn(2, 3), torch.tensor([0, 1]), 2)


# --------------------------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------------------------


def _same_graphs(dataset, data_list):
    assert len(dataset) == len(data_list)
    for i, ref in enumerate(data_list):
        d = dataset[i]
        assert torch.equal(d.x, ref.x) and torch.equal(d.y, ref.y)
        assert torch.equal(d.edge_index, ref.edge_index)


def test_dataset_class_attributes():
    assert (PATTERN.num_classes, PATTERN.num_node_types) == (2, 3)
    assert (CLUSTER.num_classes, CLUSTER.num_node_types) == (6, 7)
    for cls in (PATTERN, CLUSTER):
        assert cls.metric == "weighted_accuracy" and cls.level == "node"


def test_pattern_dataset_cache(tmp_path, monkeypatch):
    sizes = dict(num_patterns=3, num_graphs_per_pattern=(4, 2, 2))
    ds = PATTERN(root=tmp_path, split="train", **sizes)
    ref = generate_pattern((4, 2, 2), num_patterns=3, seed=0)
    _same_graphs(ds, ref["train"])
    assert ds.num_classes == 2 and "split='train'" in repr(ds)
    (proc,) = list((tmp_path / "processed").iterdir())
    assert proc.name.endswith("_seed0_p3x4-2-2")
    files = {s: proc / f"{s}.pt" for s in ("train", "val", "test")}
    mtimes = {s: f.stat().st_mtime_ns for s, f in files.items()}

    def boom(*args, **kwargs):
        raise AssertionError("re-processed")

    monkeypatch.setattr(sbm, "_pattern_split", boom)
    for split in ("val", "test", "train"):
        ds = PATTERN(root=tmp_path, split=split, **sizes)
        _same_graphs(ds, ref[split])
    assert {s: f.stat().st_mtime_ns for s, f in files.items()} == mtimes
    monkeypatch.undo()
    # another seed or pre_transform gets its own directory
    PATTERN(root=tmp_path, split="val", seed=1, **sizes)
    assert len(list((tmp_path / "processed").iterdir())) == 2


def test_cluster_dataset_cache_and_transforms(tmp_path, monkeypatch):
    ref = generate_cluster((5, 3, 2), seed=2)
    ds = CLUSTER(root=tmp_path, split="test", seed=2, num_graphs=(5, 3, 2))
    _same_graphs(ds, ref["test"])
    (proc,) = list((tmp_path / "processed").iterdir())
    assert proc.name.endswith("_seed2_n5-3-2")
    monkeypatch.setattr(sbm, "_cluster_split", lambda *a, **k: pytest.fail("re-processed"))
    _same_graphs(CLUSTER(root=tmp_path, split="train", seed=2, num_graphs=(5, 3, 2)),
                 ref["train"])
    monkeypatch.undo()

    def pre(d):
        d.deg = torch.bincount(d.edge_index[0], minlength=d.num_nodes)
        return d

    def tf(d):
        d.flag = torch.ones(1)
        return d

    ds = CLUSTER(root=tmp_path, split="val", seed=2, num_graphs=(5, 3, 2),
                 pre_transform=pre, transform=tf)
    assert len(list((tmp_path / "processed").iterdir())) == 2
    assert hasattr(ds[0], "deg") and hasattr(ds[0], "flag")
    assert int(ds[0].deg.sum()) == ds[0].edge_index.shape[1]


def test_dataset_default_root_and_bad_args(tmp_path):
    ds = CLUSTER(split="val", num_graphs=(1, 2, 1))
    assert len(ds) == 2
    assert Path(ds.root) == Path(os.environ["GRAPH_TRANSFORMERS_CACHE"]) / "CLUSTER"
    ds = PATTERN(split="test", num_patterns=2, num_graphs_per_pattern=(1, 1, 1))
    assert Path(ds.root) == Path(os.environ["GRAPH_TRANSFORMERS_CACHE"]) / "PATTERN"
    with pytest.raises(ValueError):
        PATTERN(root=tmp_path, split="valid", num_patterns=1, num_graphs_per_pattern=(1, 1, 1))
    with pytest.raises(ValueError):
        CLUSTER(root=tmp_path, split="train", seed=-1, num_graphs=(1, 1, 1))
    with pytest.raises(ValueError):
        CLUSTER(root=tmp_path, num_graphs=(1, 1))
    with pytest.raises(ValueError):
        PATTERN(root=tmp_path, num_patterns=0)


def test_datasets_record_generated_provenance(tmp_path):
    # The reproduction table reads `provenance`: generated sets must not pass for exact ones.
    ds = CLUSTER(root=tmp_path, split="val", num_graphs=(1, 2, 1))
    assert ds.provenance == {"val": "generated"}
    assert ds.provenance_info["seed"] == 0
    ds = PATTERN(root=tmp_path, split="test", num_patterns=3, num_graphs_per_pattern=(1, 1, 1))
    assert ds.provenance == {"test": "generated"}
    _, patterns = generate_pattern((0, 0, 0), num_patterns=3, seed=0, return_patterns=True)
    mean = float(np.mean([p.num_nodes for p in patterns]))
    assert ds.provenance_info["pattern_size_mean"] == pytest.approx(mean, abs=0.01)
    assert "21.0" in ds.provenance_info["pattern_note"]


def test_benchmark_patterns_mean_size_seed0():
    # The draw documented in the provenance note and docs/datasets.md: seed 0's 100 patterns.
    _, patterns = generate_pattern((0, 0, 0), seed=0, return_patterns=True)
    sizes = np.array([p.num_nodes for p in patterns])
    assert len(sizes) == 100 and sizes.min() >= 5 and sizes.max() <= 34
    assert round(float(sizes.mean()), 1) == 19.8
