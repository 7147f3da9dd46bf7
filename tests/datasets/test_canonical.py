"""Published benchmark files first (``data.source``): tiny fake files in exactly the format each
well-kept loader reads (PyG's GNNBenchmarkDataset and ZINC, OGB's PygGraphPropPredDataset), read
through :func:`load_splits`; the generator as a logged fallback; the record in ``metrics.json``.
No network: downloads are disabled or replaced by a failing transport."""
from __future__ import annotations

import gzip
import json
import logging
import pickle
import shutil
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from graph_transformers.data import published
from graph_transformers.data.cache import DataNotFoundError
from graph_transformers.data.download import OFFLINE_ENV, fetch_url
from graph_transformers.data.registry import get_spec, load_splits
from graph_transformers.datasets.gnn_benchmark import GNNBenchmark
from graph_transformers.datasets.molecules import ogb_files
from graph_transformers.datasets.synthetic.sbm import generate_cluster, generate_pattern
from graph_transformers.training.model_sections import EncodingsConfig
from graph_transformers.training.reproduction import _provenance
from graph_transformers.training.sections import DataConfig

REPO = Path(__file__).resolve().parents[2]
PATTERN_URL = "https://data.pyg.org/datasets/benchmarking-gnns/PATTERN_v2.zip"


def _load(data_dir, name="pattern", **kw):
    return load_splits(DataConfig(name=name, data_dir=str(data_dir), **kw), EncodingsConfig())


def _pattern_graphs(seed=1):
    return generate_pattern((3, 2, 2), num_patterns=2, seed=seed)


def _write_raw(folder: Path, name: str, splits: dict[str, list[dict]]) -> Path:
    """``<name>_v2.pt`` as PyG's GNNBenchmarkDataset reads it: train / val / test lists of dicts."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_v2.pt"
    torch.save([splits[s] for s in ("train", "val", "test")], path)
    return path


def _pattern_raw(data_dir: Path, graphs=None) -> dict:
    """PATTERN's published layout: one-hot node types [N, 3] and the constant edge feature."""
    graphs = graphs or _pattern_graphs()
    _write_raw(data_dir / "PATTERN" / "raw", "PATTERN", {
        s: [{"x": torch.nn.functional.one_hot(g.x.view(-1), 3).float(),
             "edge_index": g.edge_index, "edge_attr": torch.ones(g.edge_index.size(1)),
             "y": g.y} for g in gs] for s, gs in graphs.items()})
    return graphs


def _same_graphs(got, want) -> bool:
    return len(got) == len(want) and all(
        torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
        and torch.equal(a.y, b.y) for a, b in zip(got, want))


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """Any download attempt fails as on a closed network (and is recorded)."""
    calls = []

    def refuse(url, dest, timeout=None):
        calls.append(url)
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(published, "fetch_url", refuse)  # the benchmarks' archives
    monkeypatch.setattr(ogb_files, "fetch_url", refuse)  # OGB's archives
    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    return calls


# ------------------------------------------------------------------ PyG's GNNBenchmarkDataset
def test_pattern_published_files_are_read_by_pyg(tmp_path, caplog, _no_network):
    graphs = _pattern_raw(tmp_path)
    with caplog.at_level(logging.WARNING):
        splits = _load(tmp_path)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert _no_network == []  # nothing downloaded: the local files were used
    for split, ds in splits.items():
        assert isinstance(ds, GNNBenchmark) and ds.provenance == {split: "exact"}
        assert _same_graphs(ds, graphs[split])
        # exactly the generated version's fields: categorical x [N, 1], no edge_attr
        g, ref = ds[0], graphs[split][0]
        assert set(g.keys()) == set(ref.keys()) == {"x", "edge_index", "y"}
        assert g.x.dtype == g.y.dtype == torch.long and g.x.shape == (g.num_nodes, 1)
    record = splits["train"].data_source
    assert record["requested"] == "auto" and record["source"] == "canonical"
    assert record["loader"] == "torch_geometric.datasets.GNNBenchmarkDataset('PATTERN')"
    assert record["files"] == str(tmp_path / "PATTERN" / "raw")
    assert "canonical_unavailable" not in record


def test_cluster_type_ids_from_the_zip_archive(tmp_path):
    """CLUSTER given as PyG's download archive holding type ids [N]; it is unpacked into the
    cache, the data directory is left as it was."""
    graphs = generate_cluster((4, 2, 2), seed=3)
    raw = _write_raw(tmp_path / "build", "CLUSTER", {
        s: [{"x": g.x.view(-1), "edge_index": g.edge_index, "y": g.y} for g in gs]
        for s, gs in graphs.items()})
    (tmp_path / "data" / "CLUSTER").mkdir(parents=True)
    with zipfile.ZipFile(tmp_path / "data" / "CLUSTER" / "CLUSTER_v2.zip", "w") as zf:
        zf.write(raw, "CLUSTER_v2.pt")
        zf.writestr("__MACOSX/._CLUSTER_v2.pt", b"junk")
    splits = _load(tmp_path / "data", name="cluster")
    assert all(_same_graphs(splits[s], graphs[s]) for s in graphs)
    assert splits["val"].data_source["files"].endswith(str(Path("canonical/CLUSTER/raw")))
    assert sorted(p.name for p in (tmp_path / "data" / "CLUSTER").iterdir()) == ["CLUSTER_v2.zip"]


def test_pyg_processed_files_from_an_earlier_pyg_run(tmp_path):
    """A folder PyG itself processed (``GNNBenchmarkDataset(root=DATA_DIR)``), raw files gone."""
    from torch_geometric.datasets import GNNBenchmarkDataset

    graphs = _pattern_raw(tmp_path)
    GNNBenchmarkDataset(str(tmp_path), "PATTERN", split="train")  # PyG writes processed/
    shutil.rmtree(tmp_path / "PATTERN" / "raw")
    splits = _load(tmp_path)
    assert splits["test"].data_source["read_from"] == "PyG processed files"
    assert all(_same_graphs(splits[s], graphs[s]) for s in graphs)


def test_replaced_published_files_are_not_served_from_a_stale_cache(tmp_path):
    _pattern_raw(tmp_path, _pattern_graphs(seed=1))
    first = _load(tmp_path)
    other = generate_pattern((1, 1, 1), num_patterns=3, seed=2)
    _pattern_raw(tmp_path, other)  # another file under the same name
    second = _load(tmp_path)
    assert len(first["train"]) == 6 and _same_graphs(second["train"], other["train"])


def test_missing_files_fall_back_to_the_generator_with_one_warning(tmp_path, caplog,
                                                                   _no_network):
    opts = {"num_patterns": 2, "num_graphs_per_pattern": [2, 1, 1]}
    with caplog.at_level(logging.WARNING):
        splits = _load(tmp_path / "empty", options=opts)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "pattern: using the generated version (data.source: auto)" in warnings[0]
    assert "PATTERN_v2.pt" in warnings[0] and PATTERN_URL in warnings[0]  # what, and from where
    assert _no_network == [PATTERN_URL]  # one quick download attempt, refused
    assert type(splits["train"]).__name__ == "PATTERN" and len(splits["train"]) == 4
    assert splits["val"].provenance == {"val": "generated"}
    record = splits["test"].data_source
    assert record["source"] == "generated"
    assert record["loader"] == "graph_transformers.datasets.synthetic.sbm.PATTERN"
    assert "Name or service not known" in record["canonical_unavailable"]


def test_source_canonical_without_files_is_one_clear_error(tmp_path, monkeypatch, _no_network):
    monkeypatch.setenv(OFFLINE_ENV, "1")
    with pytest.raises(DataNotFoundError) as err:
        _load(tmp_path, source="canonical")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("data.source: canonical: PATTERN:")
    assert "PATTERN_v2.pt" in msg and PATTERN_URL in msg and "download disabled" in msg
    assert str(tmp_path / "PATTERN" / "raw") in msg
    assert _no_network == []  # offline: not even tried


def test_source_generated_ignores_published_files(tmp_path, caplog):
    _pattern_raw(tmp_path)
    with caplog.at_level(logging.WARNING):
        splits = _load(tmp_path, source="generated",
                       options={"num_patterns": 2, "num_graphs_per_pattern": [1, 1, 1]})
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert type(splits["train"]).__name__ == "PATTERN"
    assert splits["train"].data_source == {
        "requested": "generated", "source": "generated",
        "loader": "graph_transformers.datasets.synthetic.sbm.PATTERN"}


def test_source_rules_for_datasets_with_one_form_only(tmp_path):
    with pytest.raises(ValueError, match="mutag has no generator"):
        _load(tmp_path, name="mutag", source="generated")
    with pytest.raises(ValueError, match="synthetic_large has no published files"):
        _load(tmp_path, name="synthetic_large", source="canonical")


def _superpixel_dict(n, channels, rng):
    return {"x": torch.from_numpy(rng.random((n, channels))).float(),
            "pos": torch.from_numpy(rng.random((n, 2))).float(),
            "edge_index": torch.from_numpy(rng.integers(0, n, (2, 8 * n))),
            "edge_attr": torch.from_numpy(rng.random(8 * n)).float(),
            "y": torch.tensor([int(rng.integers(10))])}


def _tsp_dict(n, rng):
    e = 3 * n
    return {"x": torch.from_numpy(rng.random((n, 2))).float(),
            "edge_index": torch.from_numpy(rng.integers(0, n, (2, e))),
            "edge_attr": torch.from_numpy(rng.random(e)).float(),
            "y": torch.from_numpy(rng.integers(0, 2, e))}


@pytest.mark.parametrize("name, make", [
    ("MNIST", lambda n, rng: _superpixel_dict(n, 1, rng)),
    ("CIFAR10", lambda n, rng: _superpixel_dict(n, 3, rng)),
    ("TSP", _tsp_dict),
])
def test_published_fields_are_the_ones_the_models_take(tmp_path, name, make):
    """MNIST / CIFAR10: ``x`` = mean colour then centroid (node_dim 3 / 5), edge weight [E, 1];
    TSP: coordinates [N, 2], edge length [E, 1], edge labels [E] — the generated layout."""
    rng = np.random.default_rng(0)
    raw = {s: [make(int(n), rng) for n in rng.integers(5, 12, 2)] for s in ("train", "val", "test")}
    _write_raw(tmp_path / name / "raw", name, raw)
    spec = get_spec(name.lower())
    splits = _load(tmp_path, name=name.lower(), source="canonical")
    g, src = splits["train"][0], raw["train"][0]
    n, e = src["x"].size(0), src["edge_index"].size(1)
    assert g.x.dtype == torch.float32 and g.x.shape == (n, spec.node_dim)
    assert g.edge_attr.dtype == torch.float32 and g.edge_attr.shape == (e, spec.edge_dim)
    assert torch.equal(g.edge_index, src["edge_index"])
    if name == "TSP":
        assert g.y.dtype == torch.long and g.y.shape == (e,)
    else:
        assert torch.equal(g.x, torch.cat([src["x"], src["pos"]], 1))  # colour, then centroid
        assert g.y.dtype == torch.long and g.y.shape == (1,)


def test_unexpected_published_layout_is_a_clear_data_error(tmp_path):
    from graph_transformers.errors import DataError

    bad = {"x": torch.rand(5, 4), "edge_index": torch.zeros(2, 0, dtype=torch.long),
           "y": torch.zeros(5, dtype=torch.long)}
    _write_raw(tmp_path / "PATTERN" / "raw", "PATTERN",
               {s: [bad] for s in ("train", "val", "test")})
    with pytest.raises(DataError, match=r"PATTERN: node features of shape \[5, 4\] are neither"):
        _load(tmp_path)


# ------------------------------------------------------------------------------------- CSL
def _csl_raw(folder: Path) -> None:
    """The benchmark's CSL files: 150 scipy COO adjacency matrices with ones on the diagonal
    (as in the original pickle) and the label tensor."""
    import scipy.sparse as sp

    from graph_transformers.datasets.synthetic.csl import CSL_SKIP_LENGTHS, csl_graph, csl_labels

    rng = np.random.default_rng(0)
    adjs = []
    for label in csl_labels():
        ei = csl_graph(41, CSL_SKIP_LENGTHS[label]).numpy()
        perm = rng.permutation(41)
        a = sp.coo_matrix((np.ones(ei.shape[1]), (perm[ei[0]], perm[ei[1]])), shape=(41, 41))
        adjs.append(sp.coo_matrix(a + sp.eye(41)))
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "graphs_Kary_Deterministic_Graphs.pkl", "wb") as f:
        pickle.dump(adjs, f)
    torch.save(torch.tensor(csl_labels()), folder / "y_Kary_Deterministic_Graphs.pt")


def test_csl_published_files_with_the_benchmark_folds(tmp_path):
    from graph_transformers.datasets.synthetic.csl import CSL, csl_split_indices

    _csl_raw(tmp_path / "CSL")  # flat layout: DATA_DIR/CSL/<files>
    splits = _load(tmp_path, name="csl", fold=2)
    generated = {s: CSL(split=s, fold=2) for s in splits}
    for s, ds in splits.items():
        assert len(ds) == len(csl_split_indices(2)[s])
        # same graph ids, same labels, same fields as the generated CSL
        assert [int(g.y) for g in ds] == [int(g.y) for g in generated[s]]
        g = ds[0]
        assert set(g.keys()) == set(generated[s][0].keys())
        assert torch.equal(g.x, torch.zeros(41, 1, dtype=torch.long)) and g.y.shape == (1,)
        assert g.edge_index.shape == (2, 164) and bool((g.edge_index[0] != g.edge_index[1]).all())
    assert splits["train"].data_source["loader"].endswith("GNNBenchmarkDataset('CSL')")


def test_csl_archive_of_the_shared_data(data_dir, tmp_path):
    """shared/data/CSL/CSL.zip (benchmarking-gnns' archive) is read by PyG: 4-regular graphs of
    41 nodes, the labels of the generated CSL fold by fold."""
    from graph_transformers.datasets.synthetic.csl import CSL

    splits = _load(data_dir, name="csl", cache_dir=str(tmp_path / "cache"))
    assert splits["train"].data_source["source"] == "canonical"
    for s, ds in splits.items():
        assert [int(g.y) for g in ds] == [int(g.y) for g in CSL(split=s)]
        deg = torch.bincount(ds[0].edge_index[0], minlength=41)
        assert bool((deg == 4).all())


# ------------------------------------------------------------------------------------ ZINC
def _zinc_mols(rng, count):
    mols = []
    for _ in range(count):
        n = int(rng.integers(3, 8))
        adj = torch.zeros(n, n, dtype=torch.long)
        for i in range(1, n):  # a tree with bond types 1..3
            j, b = int(rng.integers(0, i)), int(rng.integers(1, 4))
            adj[i, j] = adj[j, i] = b
        mols.append({"atom_type": torch.from_numpy(rng.integers(0, 28, n)), "bond_type": adj,
                     "logP_SA_cycle_normalized": torch.tensor([float(rng.normal())])})
    return mols


def _zinc_raw(pickles: Path, index: Path) -> None:
    rng = np.random.default_rng(0)
    pickles.mkdir(parents=True, exist_ok=True)
    index.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test"):
        with open(pickles / f"{split}.pickle", "wb") as f:
            pickle.dump(_zinc_mols(rng, 6), f)
        (index / f"{split}.index").write_text("4,0,2\n")  # the benchmark's one-line format


@pytest.mark.parametrize("layout", ["pyg_raw", "molecules_zip"])
def test_zinc_published_pickles_are_read_by_pyg(tmp_path, monkeypatch, layout):
    from graph_transformers.datasets.molecules import zinc as Z
    from graph_transformers.datasets.molecules import zinc_files as ZF

    monkeypatch.setattr(ZF, "_SHA256", {})  # this library's reader pins the real index files

    z = tmp_path / "ZINC"
    if layout == "pyg_raw":  # ZINC(root=DATA_DIR/ZINC, subset=True)'s raw/
        _zinc_raw(z / "raw", z / "raw")
        found = z / "raw"
    else:  # molecules.zip extracted: pickles in molecules/, index files beside it
        _zinc_raw(z / "molecules", z)
        found = tmp_path / "cache" / "canonical" / "ZINC" / "raw"  # linked together
    splits = _load(tmp_path, name="zinc", cache_dir=str(tmp_path / "cache"))
    for split, ds in splits.items():
        assert isinstance(ds, Z.CanonicalZINC) and ds.provenance == {split: "exact"}
        pk = next(p for p in (z / "raw", z / "molecules") if (p / f"{split}.pickle").exists())
        ix = z / "raw" / f"{split}.index" if layout == "pyg_raw" else z / f"{split}.index"
        want = ZF._graphs_from_pickle(pk / f"{split}.pickle", ix)  # this library's exact reader
        assert len(ds) == 3
        for g, w in zip(ds, want):
            assert torch.equal(g.x, w.x) and torch.equal(g.edge_attr, w.edge_attr)
            assert torch.equal(g.edge_index, w.edge_index) and torch.equal(g.y, w.y)
            assert g.x.shape == (g.num_nodes, 1) and g.edge_attr.dim() == 1 and g.y.shape == (1,)
    assert splits["train"].data_source["files"] == str(found)


def test_zinc_pyg_processed_files_of_the_shared_data(data_dir, tmp_path):
    """PyG processed files of the ZINC subset, written by an old PyG (the CRaWl copies in
    shared/data, with extra fields): read, converted, and equal to the exact val/test graphs."""
    from graph_transformers.datasets.molecules.zinc_files import load_zinc_graphs

    proc = tmp_path / "ZINC" / "subset" / "processed"
    proc.mkdir(parents=True)
    for split in ("val", "test"):
        with gzip.open(data_dir / "ZINC" / f"pyg_subset_processed_{split}.pt.gz") as f, \
                open(proc / f"{split}.pt", "wb") as out:
            shutil.copyfileobj(f, out)
    shutil.copy(proc / "val.pt", proc / "train.pt")  # the train file is not in shared/data
    from graph_transformers.datasets.molecules.zinc import CanonicalZINC

    ds = CanonicalZINC(tmp_path / "cache", "val", data_dir=tmp_path)
    assert ds.canonical_info["read_from"] == "PyG processed files"
    want = load_zinc_graphs(data_dir, "val")
    assert len(ds) == len(want) == 1000
    for g, w in zip(ds, want):
        assert set(g.keys()) == {"x", "edge_index", "edge_attr", "y"}
        assert torch.equal(g.x, w.x) and torch.equal(g.edge_index, w.edge_index)
        assert torch.equal(g.edge_attr, w.edge_attr) and torch.allclose(g.y, w.y)


# ----------------------------------------------------------------------------- ogbg-molhiv
SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C1CCNCC1", "O=C(O)c1ccccc1", "CCN(CC)CC",
          "c1ccncc1", "C[C@H](N)C(=O)O", "C/C=C/C", "[NH3+]CC(=O)[O-]", "FC(F)(F)c1ccccc1",
          "C#N", "O=S(=O)(O)O", "c1ccc2[nH]ccc2c1"]
LABELS = [0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1]
OGB_SPLIT = {"train": [0, 2, 4, 6, 8, 10, 12, 13], "valid": [1, 5, 9], "test": [3, 7, 11]}


def _ogb_molhiv(root: Path) -> Path:
    """A tiny ``ogbg_molhiv/`` in OGB's published layout, featurized by OGB's smiles2graph."""
    pd = pytest.importorskip("pandas")
    from ogb.utils import smiles2graph

    d = root / "ogbg_molhiv"
    for sub in ("raw", "split/scaffold", "mapping"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "RELEASE_v1.txt").write_text("ogbg-molhiv v1\n")
    graphs = [smiles2graph(s) for s in SMILES]

    def csv(name, arr):
        pd.DataFrame(np.asarray(arr)).to_csv(d / name, header=False, index=False,
                                             compression="gzip")

    csv("raw/edge.csv.gz", np.concatenate([g["edge_index"][:, ::2].T for g in graphs]))
    csv("raw/edge-feat.csv.gz", np.concatenate([g["edge_feat"][::2] for g in graphs]))
    csv("raw/node-feat.csv.gz", np.concatenate([g["node_feat"] for g in graphs]))
    csv("raw/num-node-list.csv.gz", [g["num_nodes"] for g in graphs])
    csv("raw/num-edge-list.csv.gz", [g["edge_index"].shape[1] // 2 for g in graphs])
    csv("raw/graph-label.csv.gz", LABELS)
    for name, idx in OGB_SPLIT.items():
        csv(f"split/scaffold/{name}.csv.gz", idx)
    pd.DataFrame({"HIV_active": LABELS, "smiles": SMILES}).to_csv(
        d / "mapping" / "mol.csv.gz", index=False, compression="gzip")
    return d


@pytest.fixture
def ogb():
    pytest.importorskip("rdkit")
    return pytest.importorskip("ogb")


def test_ogb_featurization_is_this_librarys(ogb):
    """OGB's atom / bond columns and smiles2graph = molecules.py's, tensor for tensor."""
    from ogb.utils import smiles2graph
    from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims

    from graph_transformers.datasets.molecules.featurization import (
        ATOM_FEATURE_DIMS,
        BOND_FEATURE_DIMS,
        smiles_to_graph,
    )
    assert get_atom_feature_dims() == ATOM_FEATURE_DIMS
    assert get_bond_feature_dims() == BOND_FEATURE_DIMS
    for s in SMILES:
        want, got = smiles2graph(s), smiles_to_graph(s)
        assert torch.equal(got.x, torch.from_numpy(want["node_feat"])), s
        assert torch.equal(got.edge_attr, torch.from_numpy(want["edge_feat"])), s
        assert torch.equal(got.edge_index, torch.from_numpy(want["edge_index"])), s


def test_molhiv_published_files_use_ogbs_loader_split_and_evaluator(ogb, tmp_path):
    from graph_transformers.datasets.molecules.featurization import smiles_to_graph
    from graph_transformers.datasets.molecules.ogb import OGBGraphPropPred
    from graph_transformers.training.metrics import OGBEvaluatorROCAUC
    from graph_transformers.training.build import make_task
    from graph_transformers.training.config import build_config, load_yaml

    _ogb_molhiv(tmp_path)
    splits = _load(tmp_path, name="ogbg-molhiv", source="canonical")
    for split, ogb_name in (("train", "train"), ("val", "valid"), ("test", "test")):
        ds = splits[split]
        assert isinstance(ds, OGBGraphPropPred) and ds.provenance == {split: "exact"}
        assert len(ds) == len(OGB_SPLIT[ogb_name])  # OGB's official split, as published
        for g, i in zip(ds, OGB_SPLIT[ogb_name]):
            want = smiles_to_graph(SMILES[i])
            assert torch.equal(g.x, want.x) and torch.equal(g.edge_attr, want.edge_attr)
            assert g.y.dtype == torch.float32 and g.y.shape == (1, 1)
            assert float(g.y) == LABELS[i]
    record = splits["train"].data_source
    assert record["loader"] == "ogb.graphproppred.PygGraphPropPredDataset('ogbg-molhiv')"
    assert record["evaluator"] == "ogb.graphproppred.Evaluator('ogbg-molhiv')"
    assert "official split" in record["split"]
    config = build_config(load_yaml(REPO / "configs/moleculenet/gt_molhiv.yaml"))
    task = make_task(config, get_spec("ogbg-molhiv"), splits["train"])
    assert isinstance(task.metrics()["roc_auc"], OGBEvaluatorROCAUC)
    # a second load reads the checksummed cache, no reprocessing
    again = _load(tmp_path, name="ogbg-molhiv")
    assert len(again["val"]) == 3
    # OGB's loader ran with PyG's classes allowed for weights_only loading; PyG's own
    # registration of Data is still in place afterwards
    from torch_geometric.data import Data
    assert Data in torch.serialization.get_safe_globals()


def test_ogb_evaluator_agrees_with_roc_auc(ogb):
    from graph_transformers.training.metrics import (MultitaskROCAUC, OGBEvaluatorROCAUC,
                                                     roc_auc_multitask)

    gen = torch.Generator().manual_seed(0)
    target = (torch.rand(500, 1, generator=gen) < 0.1).float()
    preds = torch.randn(500, 1, generator=gen) + 2 * target
    preds[:40] = preds[:40].round()  # ties
    ours, theirs = MultitaskROCAUC(), OGBEvaluatorROCAUC("ogbg-molhiv")
    for m in (ours, theirs):
        for chunk in range(0, 500, 128):  # batch by batch, as in evaluation
            m.update(preds[chunk:chunk + 128], target[chunk:chunk + 128])
    from ogb.graphproppred import Evaluator
    direct = Evaluator("ogbg-molhiv").eval({"y_true": target.numpy(), "y_pred": preds.numpy()})
    assert float(theirs.compute()) == pytest.approx(direct["rocauc"], abs=1e-7)  # float32
    assert float(ours.compute()) == pytest.approx(direct["rocauc"], abs=1e-6)
    assert roc_auc_multitask(target, preds) == pytest.approx(direct["rocauc"], abs=1e-6)
    one_class = OGBEvaluatorROCAUC("ogbg-molhiv")
    one_class.update(preds[:5], torch.zeros(5, 1))
    assert torch.isnan(one_class.compute())  # undefined: NaN, as MultitaskROCAUC


def _hiv_csv(data_dir: Path) -> None:
    (data_dir / "MoleculeNet").mkdir(parents=True)
    rows = "".join(f"{s},CI,{y}\n" for s, y in zip(SMILES, LABELS))
    with gzip.open(data_dir / "MoleculeNet" / "HIV.csv.gz", "wt") as f:
        f.write("smiles,activity,HIV_active\n" + rows)


def test_molhiv_without_ogb_files_falls_back_to_the_rederived_split(tmp_path, caplog):
    pytest.importorskip("rdkit")
    _hiv_csv(tmp_path)
    with caplog.at_level(logging.WARNING):
        splits = _load(tmp_path, name="ogbg-molhiv")
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno >= logging.WARNING and r.name.endswith("registry")]
    assert len(warnings) == 1 and "using the reconstructed version" in warnings[0]
    assert "ogbg_molhiv" in warnings[0] and "hiv.zip" in warnings[0]
    assert type(splits["train"]).__name__ == "MoleculeNetCSV"
    record = splits["train"].data_source
    assert record["source"] == "reconstructed"
    from graph_transformers.training.splits import collect_provenance
    metrics = {"provenance": collect_provenance(splits), "data_source": record}
    assert _provenance(metrics) == "reconstructed"  # the reproduction table's column


def test_molhiv_files_without_the_ogb_package(ogb, tmp_path, monkeypatch, caplog):
    from graph_transformers._optional import MissingDependencyError

    _ogb_molhiv(tmp_path)
    _hiv_csv(tmp_path)
    for mod in [m for m in sys.modules if m == "ogb" or m.startswith("ogb.")]:
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(MissingDependencyError, match=r"graph-transformers\[ogb\]"):
        _load(tmp_path, name="ogbg-molhiv", source="canonical")
    with caplog.at_level(logging.WARNING):
        splits = _load(tmp_path, name="ogbg-molhiv")
    assert any("graph-transformers[ogb]" in r.getMessage() for r in caplog.records)
    assert splits["test"].data_source["source"] == "reconstructed"


# ------------------------------------------------------------------ the run's record, downloads
def test_training_run_records_the_source_in_metrics_json(tmp_path):
    from graph_transformers.cli import main

    _pattern_raw(tmp_path / "data")
    out = tmp_path / "run"
    assert main(["train", "--config", str(REPO / "configs/pattern/gt.yaml"), "--out", str(out),
                 "--data-dir", str(tmp_path / "data"), "--set", "trainer.max_epochs=1",
                 "trainer.enable_progress_bar=false", "model.num_layers=1",
                 "param_budget=null", "data.batch_size=2"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["data_source"]["source"] == "canonical"
    assert metrics["data_source"]["requested"] == "auto"
    assert metrics["config"]["data"]["source"] == "auto"
    assert metrics["provenance"] == {"train": "exact", "val": "exact", "test": "exact"}
    assert _provenance(metrics) == "train, val, test: exact"
    assert metrics["num_graphs"] == {"train": 6, "val": 4, "test": 4}


def test_fetch_url_has_a_timeout_and_leaves_nothing_behind(tmp_path, monkeypatch):
    seen = []

    def unreachable(req, timeout=None):
        seen.append(timeout)
        raise urllib.error.URLError("unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    with pytest.raises(OSError):
        fetch_url("https://example.invalid/x.zip", tmp_path / "x.zip")
    assert seen == [15.0] and list(tmp_path.iterdir()) == []
