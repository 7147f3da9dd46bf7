"""Tests of the ZINC-12k module against the offline benchmark files in shared/data/ZINC."""
from __future__ import annotations

import gzip
import hashlib
import json
import logging
import pickle
import shutil
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch

from graph_transformers.data.cache import DATA_ENV, DataNotFoundError, pre_transform_key
from graph_transformers.data.download import OFFLINE_ENV
from graph_transformers.datasets.molecules import zinc as Z
from graph_transformers.datasets.molecules import zinc_chemistry as ZC
from graph_transformers.datasets.molecules import zinc_files as ZF
from conftest import data_root


def _data_dir() -> Path:
    return data_root()


DATA = _data_dir()
ZDIR = DATA / "ZINC"
needs_data = pytest.mark.skipif(
    not (ZDIR / "zinc_subset_val.npz").is_file(),
    reason=f"ZINC raw files not found in {ZDIR} (set {DATA_ENV} to a folder laid out like "
    "shared/data)",
)
SMILES_FILE = {"val": "jtvae_zinc_valid.txt.gz", "test": "jtvae_zinc_test.txt.gz"}


def _smiles(name: str) -> list[str]:
    with gzip.open(ZDIR / name, "rt") as f:
        return f.read().split()


def _index(split: str) -> list[int]:
    return [int(t) for t in (ZDIR / f"{split}.index").read_text().strip().split(",")]


def _subset_smiles(split: str) -> list[str]:
    full = _smiles(SMILES_FILE[split])
    return [full[i] for i in _index(split)]


def _nx(d) -> nx.Graph:
    g = nx.Graph()
    for i, t in enumerate(d.x.view(-1).tolist()):
        g.add_node(i, t=t)
    for (a, b), e in zip(d.edge_index.t().tolist(), d.edge_attr.tolist()):
        g.add_edge(a, b, e=e)
    return g


def _node_match(a, b):
    return a["t"] == b["t"]


def _edge_match(a, b):
    return a["e"] == b["e"]


# ------------------------------------------------------------------------------------------------
# Constants and featurizer
# ------------------------------------------------------------------------------------------------
@needs_data
def test_constants_match_atom_dict():
    spec = json.loads((ZDIR / "atom_dict.json").read_text())
    assert list(ZC.ATOM_TYPES) == spec["idx2word"]
    assert len(ZC.ATOM_TYPES) == Z.ZINCSubset.num_atom_types == 28
    assert sorted(ZC.BOND_TYPES) == sorted(int(k) for k in spec["bond_types"]) == [0, 1, 2, 3]
    for k, name in ZC.BOND_TYPES.items():
        assert spec["bond_types"][str(k)].startswith(name)
    assert Z.ZINCSubset.num_bond_types == 4 and Z.ZINCSubset.metric == "mae"


@pytest.mark.parametrize(
    "smiles, tokens",
    [
        ("C[C@@H](O)[O-]", ["C", "C H1", "O", "O -"]),
        ("c1cc[nH]c1", ["C", "C", "C", "N", "C"]),  # aromatic [nH] -> "N"
        ("c1cc[nH+]cc1", ["C", "C", "C", "N H1 +", "C", "C"]),
        ("[NH3+]CC[NH2+]C", ["N H3 +", "C", "C", "N H2 +", "C"]),
        ("C[N+](=O)[O-]", ["C", "N +", "O", "O -"]),
    ],
)
def test_atom_tokens(smiles, tokens):
    d = ZC.smiles_to_graph(smiles)
    assert [ZC.ATOM_TYPES[i] for i in d.x.view(-1).tolist()] == tokens


def test_smiles_to_graph_layout():
    d = ZC.smiles_to_graph("c1ccccc1C#N")
    assert d.x.dtype == torch.long and d.x.shape == (8, 1)
    assert d.edge_index.dtype == torch.long and d.edge_index.shape == (2, 16)
    assert d.edge_attr.dtype == torch.long and d.edge_attr.shape == (16,)
    assert "y" not in d
    pairs = d.edge_index.t().tolist()
    assert pairs == sorted(pairs)  # PyG ZINC order: adjacency nonzero(), row-major
    bonds = {(a, b): e for (a, b), e in zip(pairs, d.edge_attr.tolist())}
    assert all(bonds[(b, a)] == e for (a, b), e in bonds.items())  # both directions, same type
    assert sorted(bonds.values()) == [1] * 8 + [2] * 6 + [3] * 2  # Kekulé benzene + nitrile
    # Benchmark alternation: first ring atom takes the double bond to its lowest-index neighbour.
    assert bonds[(0, 1)] == 2 and bonds[(0, 5)] == 1
    single = ZC.smiles_to_graph("C")
    assert single.x.shape == (1, 1) and single.edge_index.shape == (2, 0)


@pytest.mark.parametrize("smiles", ["not_a_smiles", "C1CC", "C[Si](C)(C)C", "[Se]1C=CC=C1"])
def test_smiles_to_graph_errors_name_the_smiles(smiles):
    with pytest.raises(ValueError, match="ZINC") as info:
        ZC.smiles_to_graph(smiles)
    assert smiles in str(info.value)


# ------------------------------------------------------------------------------------------------
# The featurizer and target formula against the exact val/test graphs
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=["val", "test"])
def split_pairs(request):
    if not (ZDIR / "zinc_subset_val.npz").is_file():
        pytest.skip(f"ZINC raw files not found in {ZDIR}")
    split = request.param
    graphs = ZF.load_zinc_graphs(DATA, split)
    return split, graphs, _subset_smiles(split)


@pytest.mark.slow
def test_featurizer_reproduces_exact_graphs(split_pairs):
    split, graphs, smiles = split_pairs
    assert len(graphs) == len(smiles) == 1000
    iso = iso_bonds = identical = 0
    for g, smi in zip(graphs, smiles):
        h = ZC.smiles_to_graph(smi)
        a, b = _nx(g), _nx(h)
        iso += nx.is_isomorphic(a, b, node_match=_node_match)
        iso_bonds += nx.is_isomorphic(a, b, node_match=_node_match, edge_match=_edge_match)
        identical += (
            g.x.shape == h.x.shape and torch.equal(g.x, h.x)
            and torch.equal(g.edge_index, h.edge_index) and torch.equal(g.edge_attr, h.edge_attr)
        )
    # Measured: val 1000 / 998 / 835, test 1000 / 999 / 822.
    assert iso == 1000, f"{split}: only {iso}/1000 isomorphic with atom types"
    assert iso_bonds >= 990, f"{split}: only {iso_bonds}/1000 isomorphic with bond types"
    assert identical >= 800, f"{split}: only {identical}/1000 tensor-identical"


@pytest.mark.slow
def test_target_formula_matches_stored_y(split_pairs):
    split, graphs, smiles = split_pairs
    err = np.array([abs(ZC.penalized_logp_target(s) - g.y.item()) for g, s in zip(graphs, smiles)])
    # Measured with the benchmark's ring rule (largest_ring_jtvae): val 999, test 1000 within
    # 0.05, all within 0.125 (RDKit logP/SA drift); the current networkx default basis had
    # 998/1000 and errors up to 20.9.
    assert (err < 0.05).mean() >= 0.998, f"{split}: {(err < 0.05).mean():.3f} within 0.05"
    assert err.max() < 0.15, f"{split}: max error {err.max():.3f}"


@needs_data
@pytest.mark.parametrize("split", ["val", "test"])
def test_load_exact_split_layout(split):
    graphs = ZF.load_zinc_graphs(DATA, split)
    z = np.load(ZDIR / f"zinc_subset_{split}.npz")
    assert len(graphs) == 1000
    assert sum(g.num_nodes for g in graphs) == len(z["x"])
    assert sum(g.num_edges for g in graphs) == z["edge_index"].shape[1]
    g = graphs[0]
    assert g.x.dtype == torch.long and g.x.shape[1] == 1
    assert g.edge_attr.dtype == torch.long and g.edge_attr.dim() == 1
    assert g.y.dtype == torch.float32 and g.y.shape == (1,)
    assert int(g.edge_index.max()) < g.num_nodes
    assert torch.allclose(torch.cat([d.y for d in graphs]), torch.from_numpy(z["y"]))


# ------------------------------------------------------------------------------------------------
# Reconstructed train split (built once per module through the dataset class)
# ------------------------------------------------------------------------------------------------
# Fingerprint of the reconstruction (seed 0), pinned from a first build: the first source
# positions in jtvae_zinc_valid.txt.gz, the sha256 of the whole position list (json), and the
# sha256 of the collated x / edge_index / edge_attr bytes (RDKit 2026.09). The targets depend on
# the RDKit version (sascorer, Crippen), so only their mean is pinned, loosely.
FIRST_POSITIONS = [7612, 10773, 14990, 17610, 1610, 13922, 2840, 14444]
POSITIONS_SHA256 = "1fee47d2c7e98c3ff8ed79944f0e1ddfdefe53baceb3c5241842ba19754d116f"
GRAPHS_SHA256 = "a9ca19af789a67335d1191fa201d74a42f777c0676fdad59f000ba0bdbe52737"
# Format version 2 (ring term from largest_ring_jtvae): 14 labels changed against version 1, the
# mean moved from 0.01217 by -0.01364.
Y_MEAN = -0.00147
#: source positions of the 14 train molecules whose label depends on the cycle-basis rule
RING_RULE_SENSITIVE = {1964, 2699, 3091, 4879, 5583, 6357, 6803, 7052, 8701, 10349, 17494, 20081,
                       22680, 22717}


@pytest.fixture(scope="module")
def train_root(tmp_path_factory):
    if not (ZDIR / "jtvae_zinc_valid.txt.gz").is_file():
        pytest.skip(f"ZINC raw files not found in {ZDIR}")
    root = tmp_path_factory.mktemp("zinc_cache")
    t0 = time.perf_counter()
    ds = Z.ZINCSubset(root=root, split="train", data_dir=DATA, download=False)
    return root, ds, time.perf_counter() - t0


@pytest.mark.slow
def test_reconstructed_train(train_root):
    _, ds, seconds = train_root
    print(f"reconstructed train built in {seconds:.1f}s")
    assert len(ds) == ZF.NUM_TRAIN == 10_000
    assert ds.provenance == {"train": "reconstructed"}
    info = ds.provenance_info
    assert info["seed"] == ZF.RECONSTRUCTED_TRAIN_SEED
    positions = info["source_positions"]
    assert len(positions) == len(set(positions)) == 10_000
    assert not set(positions) & set(_index("val"))
    assert positions[: len(FIRST_POSITIONS)] == FIRST_POSITIONS
    assert hashlib.sha256(json.dumps(positions).encode()).hexdigest() == POSITIONS_SHA256
    h = hashlib.sha256()
    for t in (ds._data.x, ds._data.edge_index, ds._data.edge_attr):
        h.update(t.contiguous().numpy().tobytes())
    assert h.hexdigest() == GRAPHS_SHA256
    assert abs(ds._data.y.double().mean().item() - Y_MEAN) < 5e-3
    flagged = info["ring_rule_sensitive"]
    assert {f["source_position"] for f in flagged} == RING_RULE_SENSITIVE
    for f in flagged:
        assert positions[f["index"]] == f["source_position"]
        assert max(f["largest_ring"] - 6, 0) != max(f["largest_ring_current_networkx"] - 6, 0)

    valid = _smiles("jtvae_zinc_valid.txt.gz")
    first = ZC.smiles_to_graph(valid[positions[0]])
    g = ds[0]
    assert torch.equal(g.x, first.x) and torch.equal(g.edge_index, first.edge_index)
    assert torch.equal(g.edge_attr, first.edge_attr)
    assert g.y.shape == (1,) and g.y.dtype == torch.float32
    assert abs(g.y.item() - ZC.penalized_logp_target(valid[positions[0]])) < 1e-5

    x, ea, y = ds._data.x, ds._data.edge_attr, ds._data.y
    assert x.shape[1] == 1 and int(x.min()) >= 0 and int(x.max()) < 28
    assert set(ea.unique().tolist()) <= {1, 2, 3}
    assert y.shape == (10_000,) and torch.isfinite(y).all()


@pytest.mark.slow
def test_reconstructed_train_disjoint_from_val_and_test(train_root):
    from rdkit import Chem

    _, ds, _ = train_root
    valid = _smiles("jtvae_zinc_valid.txt.gz")

    def keys(smiles):  # canonical SMILES with and without stereo
        mols = [Chem.MolFromSmiles(s) for s in smiles]
        return [{Chem.MolToSmiles(m, isomericSmiles=iso) for m in mols} for iso in (True, False)]

    train = keys([valid[p] for p in ds.provenance_info["source_positions"]])
    val, test = keys(_subset_smiles("val")), keys(_subset_smiles("test"))
    for train_keys, val_keys, test_keys in zip(train, val, test):
        assert len(train_keys) == 10_000  # no duplicate molecule either
        assert not train_keys & val_keys
        assert not train_keys & test_keys


@pytest.mark.slow
def test_train_cache_is_reused(train_root, monkeypatch, caplog):
    root, ds, _ = train_root

    def boom(self):
        raise AssertionError("process() called although the split is cached")

    monkeypatch.setattr(Z.ZINCSubset, "process", boom)
    with caplog.at_level(logging.WARNING, logger=Z.__name__):
        t0 = time.perf_counter()
        again = Z.ZINCSubset(root=root, split="train", data_dir=DATA, download=False)
        seconds = time.perf_counter() - t0
    assert seconds < 10
    assert again.provenance == {"train": "reconstructed"}  # read from the cached json
    assert torch.equal(again._data.y, ds._data.y)
    assert any("ZINC train: reconstructed (" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------------------------
# Dataset class
# ------------------------------------------------------------------------------------------------
class _AddDegree:
    """A tiny pre-transform with a stable repr."""

    def __call__(self, data):
        data.deg = torch.bincount(data.edge_index[0], minlength=data.num_nodes)
        return data

    def __repr__(self):
        return "AddDegree()"


@needs_data
def test_dataset_val_exact_cached_and_keyed_by_pre_transform(tmp_path, monkeypatch):
    ds = Z.ZINCSubset(root=tmp_path, split="val", data_dir=DATA, download=False)
    assert len(ds) == 1000 and ds.provenance == {"val": "exact"}
    assert Path(ds.processed_dir) == tmp_path / "processed" / pre_transform_key(None)
    assert (Path(ds.processed_dir) / "val.pt").is_file()
    assert (Path(ds.processed_dir) / "val_provenance.json").is_file()
    ref = ZF.load_zinc_graphs(DATA, "val")
    for i in (0, 1, 999):
        for key in ("x", "edge_index", "edge_attr", "y"):
            assert torch.equal(ds[i][key], ref[i][key])

    enc = Z.ZINCSubset(root=tmp_path, split="val", data_dir=DATA, pre_transform=_AddDegree(),
                 download=False)
    assert enc.processed_dir != ds.processed_dir
    assert Path(enc.processed_dir).name == pre_transform_key(_AddDegree())
    assert enc[0].deg.shape == (enc[0].num_nodes,)
    assert "deg" not in ds[0]

    monkeypatch.setattr(Z.ZINCSubset, "process", lambda self: pytest.fail("re-processed"))
    cached = Z.ZINCSubset(root=tmp_path, split="val", data_dir=DATA, download=False)
    assert cached.provenance == {"val": "exact"} and len(cached) == 1000


def test_missing_data_raises_without_download(tmp_path, monkeypatch):
    def no_download(*args, **kwargs):
        pytest.fail("download attempted although disabled")

    monkeypatch.setattr(ZF, "download_zinc", no_download)
    missing = tmp_path / "nowhere"
    for split in ("val", "train"):
        with pytest.raises(DataNotFoundError) as info:
            Z.ZINCSubset(root=tmp_path / "cache", split=split, data_dir=missing, download=False)
        msg = str(info.value)
        assert str(missing / "ZINC") in msg and str(tmp_path / "cache" / "raw") in msg
        assert DATA_ENV in msg and "--data-dir" in msg and "download disabled" in msg
    # The environment switch disables the download too.
    monkeypatch.setenv(OFFLINE_ENV, "1")
    with pytest.raises(DataNotFoundError):
        Z.ZINCSubset(root=tmp_path / "cache", split="test", data_dir=missing)
    # No data dir at all: the message still names where it looked.
    monkeypatch.delenv(DATA_ENV, raising=False)
    with pytest.raises(DataNotFoundError, match="Looked in"):
        Z.ZINCSubset(root=tmp_path / "cache2", split="val")


def test_closed_network_fails_fast(tmp_path, monkeypatch):
    def unreachable(*args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    with pytest.raises(DataNotFoundError, match="could not download"):
        ZF.download_zinc(tmp_path / "dl")
    with pytest.raises(DataNotFoundError, match="download failed"):
        Z.ZINCSubset(root=tmp_path / "cache", split="val", data_dir=tmp_path / "nowhere")


def _pyg_mol(g) -> dict:
    """A graph in the benchmark's pickle format (dense bond-type adjacency)."""
    n = g.num_nodes
    adj = torch.zeros(n, n, dtype=torch.long)
    adj[g.edge_index[0], g.edge_index[1]] = g.edge_attr
    return {"atom_type": g.x.view(-1).clone(), "bond_type": adj,
            "logP_SA_cycle_normalized": g.y.clone()}


@needs_data
def test_download_checks_archive_structure(tmp_path, monkeypatch):
    val = ZF.load_zinc_graphs(DATA, "val")
    good_zip = tmp_path / "good.zip"
    with zipfile.ZipFile(good_zip, "w") as zf:
        for split in ("train", "val", "test"):
            zf.writestr(f"molecules/{split}.pickle", pickle.dumps([_pyg_mol(val[0])]))
    bad_zip = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad_zip, "w") as zf:
        zf.writestr("something/else.txt", "x")
    served = {"zip": bad_zip}

    def fake_fetch(url, dest, timeout):
        if url.endswith(".index"):
            shutil.copy(ZDIR / Path(url).name, dest)
        else:
            shutil.copy(served["zip"], dest)

    monkeypatch.setattr(ZF, "_fetch", fake_fetch)
    with pytest.raises(DataNotFoundError, match="not the benchmark's archive"):
        ZF.download_zinc(tmp_path / "dl")
    served["zip"] = good_zip
    out = ZF.download_zinc(tmp_path / "dl")
    assert all((out / "molecules" / f"{s}.pickle").is_file() for s in ("train", "val", "test"))
    assert all((out / f"{s}.index").is_file() for s in ("train", "val", "test"))
    assert not (out / "molecules.zip").exists()


@needs_data
def test_exact_splits_from_benchmark_pickles(tmp_path, caplog):
    """The PyG/benchmark layout (molecules/<split>.pickle + <split>.index) is read exactly; a
    cached reconstruction is replaced once the exact train file appears."""
    data = tmp_path / "data" / "ZINC"
    (data / "molecules").mkdir(parents=True)
    val = ZF.load_zinc_graphs(DATA, "val")
    val_idx = _index("val")
    filler = _pyg_mol(val[0])
    mols = [filler] * (max(val_idx) + 1)
    for i, g in zip(val_idx, val):
        mols[i] = _pyg_mol(g)
    with open(data / "molecules" / "val.pickle", "wb") as f:
        pickle.dump(mols, f)
    shutil.copy(ZDIR / "val.index", data / "val.index")
    ds = Z.ZINCSubset(root=tmp_path / "cache", split="val", data_dir=tmp_path / "data",
                      download=False)
    assert ds.provenance == {"val": "exact"}
    for i in (0, 500, 999):
        for key in ("x", "edge_index", "edge_attr", "y"):
            assert torch.equal(ds[i][key], val[i][key])

    # Exact train: a (mostly filler) ZINC-full train pickle plus the real train.index.
    train_idx = _index("train")
    mols = [filler] * (max(train_idx) + 1)
    mols[train_idx[0]] = _pyg_mol(val[1])
    with open(data / "molecules" / "train.pickle", "wb") as f:
        pickle.dump(mols, f)
    shutil.copy(ZDIR / "train.index", data / "train.index")
    with caplog.at_level(logging.WARNING, logger=Z.__name__):
        tr = Z.ZINCSubset(root=tmp_path / "cache", split="train", data_dir=tmp_path / "data",
                    download=False)
    assert tr.provenance == {"train": "exact"} and len(tr) == 10_000
    assert torch.equal(tr[0].x, val[1].x) and torch.equal(tr[0].edge_attr, val[1].edge_attr)
    assert not any("reconstructed" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_cached_reconstruction_upgraded_when_exact_train_appears(train_root, tmp_path):
    root, _, _ = train_root
    cache = tmp_path / "cache"
    shutil.copytree(root, cache)
    data = tmp_path / "data"
    shutil.copytree(ZDIR, data / "ZINC")
    val = ZF.load_zinc_graphs(DATA, "val")
    train_idx = _index("train")
    (data / "ZINC").chmod(0o755)
    (data / "ZINC" / "molecules").mkdir()
    with open(data / "ZINC" / "molecules" / "train.pickle", "wb") as f:
        pickle.dump([_pyg_mol(val[0])] * (max(train_idx) + 1), f)
    tr = Z.ZINCSubset(root=cache, split="train", data_dir=data, download=False)
    assert tr.provenance == {"train": "exact"}


def test_smiles_parsing_leaves_rdkit_logging_as_the_caller_set_it():
    """zinc's parser silences RDKit only inside its own scope (issue 14)."""
    pytest.importorskip("rdkit")
    from rdkit import RDLogger, rdBase

    from graph_transformers.datasets.molecules.zinc_chemistry import parse_molecule as _parse
    RDLogger.DisableLog("rdApp.*")
    try:
        before = rdBase.LogStatus()
        _parse("CCO")
        assert rdBase.LogStatus() == before
    finally:
        RDLogger.EnableLog("rdApp.*")
