"""Tests of the generated CSL dataset (graph_transformers.datasets.synthetic.csl).

The comparisons with the original benchmark files need the shared data directory
(``<repo>/../shared/data`` or ``$GRAPH_TRANSFORMERS_DATA``); they are skipped without it.
"""
from __future__ import annotations

import io
import pickle
import zipfile
from importlib import resources
from itertools import combinations
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import torch

from graph_transformers.datasets.synthetic.csl import (
    CSL,
    CSL_SKIP_LENGTHS,
    csl_graph,
    csl_labels,
    csl_split_indices,
    generate_csl,
)
from conftest import data_root

N = 41


def _data_dir() -> Path:
    return data_root()


CSL_DIR = _data_dir() / "CSL"
needs_original = pytest.mark.skipif(
    not (CSL_DIR / "CSL.zip").is_file(),
    reason=f"original CSL files not found in {CSL_DIR} (set GRAPH_TRANSFORMERS_DATA)",
)


class _COOState:
    """Stand-in for scipy's coo_matrix: keeps the pickled attribute dict (row, col, ...)."""

    def __setstate__(self, state):
        self.state = state


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickles only the four globals the CSL pickle uses (numpy arrays + a COO stub)."""

    _ALLOWED = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("numpy.core.multiarray", "_reconstruct"): np._core.multiarray._reconstruct,
        ("scipy.sparse.coo", "coo_matrix"): _COOState,
    }

    def find_class(self, module, name):
        try:
            return self._ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed") from None


@pytest.fixture(scope="module")
def original():
    """(list of 150 networkx graphs without the diagonal self-loops, list of 150 labels)."""
    with zipfile.ZipFile(CSL_DIR / "CSL.zip") as z:
        raw = z.read("graphs_Kary_Deterministic_Graphs.pkl")
    mats = _RestrictedUnpickler(io.BytesIO(raw)).load()
    graphs = []
    for m in mats:
        assert tuple(m.state["_shape"]) == (N, N)
        g = nx.Graph()
        g.add_nodes_from(range(N))
        g.add_edges_from(
            (r, c) for r, c in zip(m.state["row"].tolist(), m.state["col"].tolist()) if r != c
        )
        graphs.append(g)
    # A plain tensor saved with the legacy serializer: the weights-only loader reads it.
    y = torch.load(CSL_DIR / "y_Kary_Deterministic_Graphs.pt", weights_only=True)
    return graphs, [int(v) for v in y.view(-1).tolist()]


@pytest.fixture(scope="module")
def generated():
    return generate_csl(seed=0)


def _to_nx(edge_index: torch.Tensor) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(N))
    g.add_edges_from(edge_index.t().tolist())
    return g


def _spectrum(g: nx.Graph) -> np.ndarray:
    """Sorted adjacency eigenvalues: equal for isomorphic graphs, so a clear difference proves
    non-isomorphism (VF2 takes seconds to refute isomorphism of these regular graphs)."""
    return np.sort(np.linalg.eigvalsh(nx.to_numpy_array(g, nodelist=range(N))))


def _cospectral(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, atol=1e-6))


# ----------------------------------------------------------------------------- csl_graph


def test_csl_graph_structure():
    for r in CSL_SKIP_LENGTHS:
        ei = csl_graph(N, r)
        assert ei.dtype == torch.long and ei.shape == (2, 4 * N)
        assert not (ei[0] == ei[1]).any()
        pairs = set(map(tuple, ei.t().tolist()))
        assert len(pairs) == ei.size(1)  # no duplicates
        assert all((c, r_) in pairs for r_, c in pairs)  # symmetric
        for i in range(N):
            assert (i, (i + 1) % N) in pairs and (i, (i + r) % N) in pairs
        assert torch.bincount(ei[0], minlength=N).eq(4).all()


def test_csl_graph_degenerate_and_invalid():
    assert csl_graph(8, 1).shape == (2, 16)  # just the cycle
    assert csl_graph(8, 4).shape == (2, 24)  # diameter chords counted once
    for n, r in [(2, 1), (8, 0), (8, 8), (8, -1)]:
        with pytest.raises(ValueError):
            csl_graph(n, r)


# ----------------------------------------------------------------------------- generation


def test_generated_graphs_shape_and_balance(generated):
    assert len(generated) == 150
    for d in generated:
        assert d.num_nodes == N
        assert d.x.dtype == torch.long and d.x.shape == (N, 1) and not d.x.any()
        assert d.y.dtype == torch.long and d.y.shape == (1,)
        assert d.edge_index.dtype == torch.long and d.edge_index.shape == (2, 164)
        assert d.edge_attr is None
        assert not (d.edge_index[0] == d.edge_index[1]).any()
        assert torch.bincount(d.edge_index[0], minlength=N).eq(4).all()
        assert torch.bincount(d.edge_index[1], minlength=N).eq(4).all()
    labels = torch.cat([d.y for d in generated])
    assert labels.tolist() == csl_labels()
    assert torch.bincount(labels, minlength=10).eq(15).all()


def test_generated_classes_pairwise_non_isomorphic(generated):
    spectra = [_spectrum(_to_nx(d.edge_index)) for d in generated]
    for c in range(10):  # copies of one class are relabellings: same spectrum
        assert all(_cospectral(spectra[15 * c], spectra[k]) for k in range(15 * c, 15 * c + 15))
    for a, b in combinations(range(10), 2):  # different spectra => not isomorphic
        assert not _cospectral(spectra[15 * a], spectra[15 * b]), (a, b)


def test_generation_deterministic_and_seed_dependent(generated):
    again = generate_csl(seed=0)
    other = generate_csl(seed=1)
    assert all(torch.equal(a.edge_index, b.edge_index) for a, b in zip(generated, again))
    assert any(not torch.equal(a.edge_index, b.edge_index) for a, b in zip(generated, other))
    assert [int(d.y) for d in other] == [int(d.y) for d in generated]
    # Each graph is a genuinely permuted copy, not the canonical labelling.
    assert not torch.equal(generated[0].edge_index, csl_graph(N, CSL_SKIP_LENGTHS[0]))


# ----------------------------------------------------------------------------- vs. original


@needs_original
def test_labels_match_original(original):
    _, y = original
    assert y == csl_labels()


@needs_original
def test_generated_isomorphic_to_original(original, generated):
    graphs, y = original
    for k, (g_orig, d) in enumerate(zip(graphs, generated)):
        assert int(d.y) == y[k]
        assert all(deg == 4 for _, deg in g_orig.degree())
        assert nx.is_isomorphic(_to_nx(d.edge_index), g_orig), f"graph {k} (label {y[k]})"


@needs_original
def test_skip_length_mapping_matches_original(original):
    graphs, y = original
    canon = {r: _to_nx(csl_graph(N, r)) for r in CSL_SKIP_LENGTHS}
    canon_spec = {r: _spectrum(h) for r, h in canon.items()}
    for k, g in enumerate(graphs):
        # Candidates by spectrum (a different spectrum rules a skip length out), then VF2.
        spec = _spectrum(g)
        cands = [r for r in CSL_SKIP_LENGTHS if _cospectral(spec, canon_spec[r])]
        matches = [r for r in cands if nx.is_isomorphic(g, canon[r])]
        assert matches == [CSL_SKIP_LENGTHS[y[k]]], f"graph {k}, label {y[k]}: skip {matches}"


# ----------------------------------------------------------------------------- splits


def test_fold_indices():
    for fold in range(5):
        idx = csl_split_indices(fold)
        assert set(idx) == {"train", "val", "test"}
        tr, va, te = (set(idx[s]) for s in ("train", "val", "test"))
        assert (len(idx["train"]), len(idx["val"]), len(idx["test"])) == (90, 30, 30)
        assert len(tr) == 90 and len(va) == 30 and len(te) == 30
        assert not (tr & va or tr & te or va & te)
        assert tr | va | te == set(range(150))
    tests = [set(csl_split_indices(f)["test"]) for f in range(5)]
    assert set().union(*tests) == set(range(150))  # test folds partition the data


@pytest.mark.parametrize("fold", [-1, 5, 1.0, "0", True])
def test_bad_fold(fold):
    with pytest.raises(ValueError, match="fold"):
        csl_split_indices(fold)


@needs_original
@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_packaged_index_files_equal_shared(split):
    name = f"CSL_{split}.index"
    packaged = resources.files("graph_transformers.datasets.synthetic").joinpath("csl_splits",
                                                                          name)
    assert packaged.read_bytes() == (CSL_DIR / name).read_bytes()


# ----------------------------------------------------------------------------- dataset


def test_dataset_splits_and_cache(tmp_path, generated):
    root = tmp_path / "csl"
    ds = CSL(root=root, split="train", fold=1)
    assert CSL.num_classes == 10 and ds.num_classes == 10 and CSL.metric == "accuracy"
    idx = csl_split_indices(1)
    assert len(ds) == 90
    for j in (0, 17, 89):
        k = idx["train"][j]
        assert torch.equal(ds[j].edge_index, generated[k].edge_index)
        assert torch.equal(ds[j].y, generated[k].y)
    processed = list((root / "processed").iterdir())
    assert len(processed) == 1 and processed[0].name.endswith("_seed0")
    data_file = processed[0] / "data.pt"
    mtime = data_file.stat().st_mtime_ns

    val = CSL(root=root, split="val", fold=1)
    test = CSL(root=root, split="test", fold=1)
    assert data_file.stat().st_mtime_ns == mtime  # reused, not re-processed
    assert len(val) == 30 and len(test) == 30
    assert sorted(int(d.y) for d in val) == sorted(int(generated[k].y) for k in idx["val"])
    assert not any(raw.name == "raw" for raw in root.iterdir())  # nothing downloaded

    other = CSL(root=root, split="test", fold=1, seed=3)
    assert len(list((root / "processed").iterdir())) == 2
    assert [int(d.y) for d in other] == [int(d.y) for d in test]


def test_dataset_pre_transform_and_transform(tmp_path):
    class AddDeg:
        def __call__(self, data):
            data.deg = torch.bincount(data.edge_index[0], minlength=data.num_nodes)
            return data

        def __repr__(self):
            return "AddDeg()"

    ds = CSL(root=tmp_path, split="val", fold=0, pre_transform=AddDeg())
    assert ds[0].deg.eq(4).all()
    plain = CSL(root=tmp_path, split="val", fold=0)
    assert "deg" not in plain[0]
    assert len(list((tmp_path / "processed").iterdir())) == 2

    def tf(data):
        data.flag = torch.ones(1)
        return data

    assert "flag" in CSL(root=tmp_path, split="val", fold=0, transform=tf)[0]


def test_dataset_bad_args(tmp_path):
    with pytest.raises(ValueError, match="split"):
        CSL(root=tmp_path, split="valid")
    with pytest.raises(ValueError, match="fold"):
        CSL(root=tmp_path, fold=5)
    assert not any(tmp_path.iterdir())
