"""Tests of the TU (MUTAG, ENZYMES, NCI1) and Planetoid (Cora, CiteSeer) loaders.

The tests that read files need the shared data directory (``<repo>/../shared/data`` or
``$GRAPH_TRANSFORMERS_DATA``) and are skipped without it. Datasets that several tests read are
loaded once per module into a module-level cache directory.
"""
from __future__ import annotations

import socket
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.datasets import Planetoid, TUDataset

from graph_transformers.data.cache import DATA_ENV, DataNotFoundError
from graph_transformers.datasets.planetoid import PLANETOID_STATS, PlanetoidGraph
from graph_transformers.data.download import OFFLINE_ENV
from graph_transformers.data.generated import stratified_kfold
from graph_transformers.datasets.tu import TU, TU_STATS
from graph_transformers.datasets.tu_folds import (
    TU_NUM_FOLDS,
    read_benchmark_index,
    stratified_fold_split,
)
from conftest import shared_data_dir

SPLITS = ("train", "val", "test")


def _shared_data() -> Path | None:
    return shared_data_dir("TU", "Planetoid")


@pytest.fixture(scope="module")
def shared() -> Path:
    d = _shared_data()
    if d is None:
        pytest.skip("TU/Planetoid data not found: set GRAPH_TRANSFORMERS_DATA or place the "
                    "project's shared/data next to the repository")
    return d


@pytest.fixture(scope="module")
def tu_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tu_cache")


@pytest.fixture(autouse=True)
def _online_allowed_by_env(monkeypatch):
    monkeypatch.delenv(OFFLINE_ENV, raising=False)


def _raw_labels(shared: Path, name: str) -> np.ndarray:
    """Graph labels straight from the zip, mapped to 0..C-1 in sorted order."""
    with zipfile.ZipFile(shared / "TU" / f"{name}.zip") as z:
        raw = np.array(z.read(f"{name}/{name}_graph_labels.txt").split(), dtype=np.int64)
    return np.unique(raw, return_inverse=True)[1]


def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr("torch_geometric.data.download_url", refuse)
    monkeypatch.setattr("torch_geometric.data.download.download_url", refuse)
    monkeypatch.setattr("graph_transformers.datasets.tu.fetch_url", refuse)
    monkeypatch.setattr(TUDataset, "download", refuse)
    monkeypatch.setattr(Planetoid, "download", refuse)


# --------------------------------------------------------------------------------------------
# Split helpers (no data needed)
# --------------------------------------------------------------------------------------------
def test_stratified_kfold_properties():
    y = np.array([0] * 53 + [1] * 31 + [2] * 7)
    folds = stratified_kfold(y, 10, seed=3)
    assert len(folds) == 10
    allidx = np.concatenate(folds)
    assert sorted(allidx.tolist()) == list(range(len(y)))
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 1
    for c in range(3):
        n_c = int((y == c).sum())
        counts = [int((y[f] == c).sum()) for f in folds]
        assert all(n_c // 10 <= k <= -(-n_c // 10) for k in counts)
    again = stratified_kfold(torch.from_numpy(y), 10, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(folds, again))
    other = stratified_kfold(y, 10, seed=4)
    assert not all(np.array_equal(a, b) for a, b in zip(folds, other))
    with pytest.raises(ValueError):
        stratified_kfold(y, 1)
    with pytest.raises(ValueError):
        stratified_fold_split(y, 10)


# --------------------------------------------------------------------------------------------
# TU
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["MUTAG", "ENZYMES", "NCI1"])
def test_tu_loads(shared, tu_root, name):
    stats = TU_STATS[name]
    parts = {s: TU(name=name, root=tu_root, split=s, fold=0, data_dir=shared) for s in SPLITS}
    assert sum(len(d) for d in parts.values()) == stats["num_graphs"]
    ids = [i for d in parts.values() for i in d.indices_in_full]
    assert sorted(ids) == list(range(stats["num_graphs"]))
    labels = _raw_labels(shared, name)
    for d in parts.values():
        assert d.num_graphs_full == stats["num_graphs"]
        assert d.num_classes == stats["num_classes"]
        assert d.num_features == stats["num_features"]
        assert d.num_edge_features == stats["num_edge_features"]
        assert (d.metric, d.level) == ("accuracy", "graph")
        assert d._data.x.dtype == torch.float32 and d._data.y.dtype == torch.long
        # graph k of the split is graph indices_in_full[k] of the TU file
        assert np.array_equal(d._data.y.numpy(), labels[d.indices_in_full])
    g = parts["train"][0]
    assert g.x.shape[1] == stats["num_features"] and g.y.shape == (1,)
    assert g.edge_index.dtype == torch.long and g.edge_index.max() < g.num_nodes
    label_part = g.x[:, -{"MUTAG": 7, "ENZYMES": 3, "NCI1": 37}[name]:]
    assert torch.all(label_part.sum(1) == 1)  # one-hot node label
    if name == "MUTAG":
        assert g.edge_attr.shape == (g.edge_index.shape[1], 4)
    else:
        assert g.edge_attr is None


def test_tu_class_counts(shared):
    assert np.bincount(_raw_labels(shared, "MUTAG")).tolist() == [63, 125]
    assert np.bincount(_raw_labels(shared, "ENZYMES")).tolist() == [100] * 6
    assert np.bincount(_raw_labels(shared, "NCI1")).tolist() == [2053, 2057]


def test_enzymes_folds_match_index_files(shared, tu_root):
    files = {s: read_benchmark_index(shared / "TU" / f"ENZYMES_{s}.index") for s in SPLITS}
    assert all(len(v) == TU_NUM_FOLDS for v in files.values())
    for k in range(TU_NUM_FOLDS):
        lines = {s: files[s][k] for s in SPLITS}
        assert [len(lines[s]) for s in SPLITS] == [480, 60, 60]
        assert sorted(lines["train"] + lines["val"] + lines["test"]) == list(range(600))
        d = TU(name="ENZYMES", root=tu_root, split="test", fold=k, data_dir=shared)
        assert d.split_source == "benchmark index files"
        assert d.split_indices == lines
        assert d.indices_in_full == lines["test"] and len(d) == 60
    tests = sorted(i for k in range(TU_NUM_FOLDS) for i in files["test"][k])
    assert tests == list(range(600))  # the 10 test folds partition the graphs


@pytest.mark.parametrize("name", ["MUTAG", "NCI1"])
def test_generated_folds(shared, tu_root, name):
    y = _raw_labels(shared, name)
    n = len(y)
    counts = np.bincount(y)
    splits = [stratified_fold_split(y, k) for k in range(TU_NUM_FOLDS)]
    for k, sp in enumerate(splits):
        tr, va, te = (set(sp[s]) for s in SPLITS)
        assert not (tr & va) and not (tr & te) and not (va & te)
        assert len(tr | va | te) == n
        for part in ("val", "test"):
            c = np.bincount(y[sp[part]], minlength=len(counts))
            assert np.all(np.abs(c - counts / TU_NUM_FOLDS) < 1.0), (k, part, c)
        frac = np.bincount(y[sp["train"]], minlength=len(counts)) / len(sp["train"])
        assert np.allclose(frac, counts / n, atol=0.01)
        assert abs(len(sp["train"]) - 0.8 * n) <= 2
    assert sorted(i for sp in splits for i in sp["test"]) == list(range(n))
    assert sorted(i for sp in splits for i in sp["val"]) == list(range(n))
    assert splits == [stratified_fold_split(y, k) for k in range(TU_NUM_FOLDS)]  # deterministic
    for k in (0, 7):
        d = TU(name=name, root=tu_root, split="val", fold=k, data_dir=shared)
        assert d.split_indices == splits[k]
        assert d.indices_in_full == splits[k]["val"]


class Mark:
    """A pre-transform that marks each graph."""

    def __call__(self, data):
        data.mark = torch.ones(1)
        return data

    def __repr__(self):
        return "Mark()"


def test_tu_pre_transform_gets_own_cache(shared, tu_root):
    d = TU(tu_root, "mutag", split="test", fold=2, data_dir=shared, pre_transform=Mark())
    assert d.name == "MUTAG" and hasattr(d[0], "mark")
    plain = TU(name="MUTAG", root=tu_root, split="test", fold=2, data_dir=shared)
    assert not hasattr(plain[0], "mark")


def test_tu_processing_counts_the_pre_transform_on_a_bar(shared, tmp_path, monkeypatch):
    """Regression (issue 57): PyG's own processing of a TU set ran its pre-transform with no
    count; the bar counts every graph, and the cache folder is the pre-transform's own."""
    from graph_transformers.data import progress as progress_module
    from graph_transformers.data.cache import pre_transform_key

    monkeypatch.setenv(progress_module.ENV, "1")
    bars = []

    def recording_counter(what, total=None, unit="graph"):
        bars.append(real_counter(what, total, unit))
        return bars[-1]

    real_counter = progress_module.counter
    monkeypatch.setattr(progress_module, "counter", recording_counter)
    d = TU(tmp_path, "MUTAG", split="test", fold=0, data_dir=shared, pre_transform=Mark())
    assert [(b.desc, b.n) for b in bars] == [("TU MUTAG: encodings", 188)]  # all graphs counted
    assert repr(d.pre_transform) == "Mark()" and type(d.pre_transform).__name__ == "Mark"
    assert Path(d.processed_dir).name == pre_transform_key(Mark())
    assert hasattr(d[0], "mark")


def test_tu_bad_arguments(shared, tu_root):
    with pytest.raises(ValueError, match="split"):
        TU(name="MUTAG", root=tu_root, split="dev", data_dir=shared)
    with pytest.raises(ValueError, match="fold"):
        TU(name="MUTAG", root=tu_root, fold=10, data_dir=shared)


def test_tu_bad_checksum(tmp_path):
    (tmp_path / "TU").mkdir()
    with zipfile.ZipFile(tmp_path / "TU" / "MUTAG.zip", "w") as z:
        z.writestr("MUTAG/MUTAG_A.txt", "1, 2\n2, 1\n")
        z.writestr("MUTAG/MUTAG_graph_indicator.txt", "1\n1\n")
    with pytest.raises(ValueError, match="sha256"):
        TU(name="MUTAG", root=tmp_path / "cache", data_dir=tmp_path, download=False)


# --------------------------------------------------------------------------------------------
# Planetoid
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["Cora", "CiteSeer"])
def test_planetoid_loads(shared, name):
    stats = PLANETOID_STATS[name]
    d = PlanetoidGraph(name=name.lower(), data_dir=shared)
    assert len(d) == 1 and d.name == name
    assert (d.metric, d.level) == ("accuracy", "node")
    assert d.num_classes == stats["num_classes"] and d.num_features == stats["num_features"]
    g = d[0]
    assert g.num_nodes == stats["num_nodes"]
    assert g.x.shape == (stats["num_nodes"], stats["num_features"]) and g.x.dtype == torch.float32
    assert g.y.shape == (stats["num_nodes"],) and int(g.y.max()) == stats["num_classes"] - 1
    m = [g.train_mask, g.val_mask, g.test_mask]
    assert [int(x.sum()) for x in m] == [stats["num_train"], stats["num_val"], stats["num_test"]]
    assert not (m[0] & m[1]).any() and not (m[0] & m[2]).any() and not (m[1] & m[2]).any()
    assert torch.all(torch.bincount(g.y[g.train_mask]) == 20)  # public split: 20 per class
    assert g.is_undirected()


# --------------------------------------------------------------------------------------------
# Offline behaviour and errors
# --------------------------------------------------------------------------------------------
def test_no_network_when_files_present(shared, monkeypatch):
    _no_network(monkeypatch)
    # fresh cache (conftest): raw files must come from the data directory
    assert len(TU(name="ENZYMES", split="val", fold=4, data_dir=shared)) == 60
    assert len(TU(name="MUTAG", split="test", fold=1, data_dir=shared)) in (18, 19)
    assert PlanetoidGraph(name="Cora", data_dir=shared)[0].num_nodes == 2708
    monkeypatch.setenv(DATA_ENV, str(shared))  # the environment variable works too
    assert PlanetoidGraph(name="CiteSeer")[0].num_nodes == 3327


def test_missing_data_raises(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    empty = tmp_path / "nodata"
    empty.mkdir()
    with pytest.raises(DataNotFoundError) as e:
        TU(name="MUTAG", data_dir=empty, download=False)
    msg = str(e.value)
    assert str(empty / "TU") in msg and "MUTAG.zip" in msg and DATA_ENV in msg
    with pytest.raises(DataNotFoundError, match="no data directory"):
        TU(name="NCI1", download=False)
    monkeypatch.setenv(OFFLINE_ENV, "1")
    with pytest.raises(DataNotFoundError) as e:
        PlanetoidGraph(name="Cora", data_dir=empty)
    msg = str(e.value)
    assert str(empty / "Planetoid") in msg and "ind.cora.x" in msg and DATA_ENV in msg


def test_failed_download_raises_data_not_found(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(TUDataset, "download", offline)
    monkeypatch.setattr(Planetoid, "download", offline)
    with pytest.raises(DataNotFoundError, match="download .*failed"):
        TU(name="MUTAG", data_dir=tmp_path)
    with pytest.raises(DataNotFoundError, match="download .*failed"):
        PlanetoidGraph(name="CiteSeer", data_dir=tmp_path)
    monkeypatch.setattr("graph_transformers.datasets.tu.fetch_url", offline)
    with pytest.raises(DataNotFoundError, match="ENZYMES_train.index.*benchmarking-gnns"):
        TU(name="ENZYMES", data_dir=tmp_path)


def test_enzymes_without_index_files(shared, tmp_path):
    (tmp_path / "TU").mkdir()
    (tmp_path / "TU" / "ENZYMES.zip").symlink_to(shared / "TU" / "ENZYMES.zip")
    with pytest.raises(DataNotFoundError, match="ENZYMES_train.index"):
        TU(name="ENZYMES", root=tmp_path / "cache", data_dir=tmp_path, download=False)
    assert not (tmp_path / "cache" / "ENZYMES").exists()  # failed before extracting anything
