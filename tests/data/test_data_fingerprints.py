"""Fingerprints of the generated datasets and of the processed-cache directory names.

Generated graphs must stay bit-identical for a fixed seed (published numbers were measured on
them), and the processed-directory names under a cache root must not change (a new name makes
every existing cache, e.g. a CI cache, rebuild: ZINC's reconstructed train split and the
superpixel graphs take minutes to hours). Each test hashes every tensor of a small, seeded
generation, or the directory name a dataset class picks, and compares with the value recorded
before the data layer was reorganised. A failure means a silent change of the data: either a bug,
or a deliberate change that must also bump the dataset's format version and be documented.
"""
from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest
import torch


#: attributes computed by LAPACK (eigenvectors): their bits differ between CPUs and thread
#: counts, and within a repeated eigenvalue (CSL's circulant graphs) the basis itself does, so
#: the digests pin only their dtype and shape; ``tests/encodings/test_encodings.py`` checks
#: their values
#: with tolerances
LAPACK_KEYS = frozenset({"lap_pe"})


def _digest(graphs) -> str:
    """sha256 over every tensor (name, dtype, shape, bytes) of ``graphs``, in order; of the
    :data:`LAPACK_KEYS` tensors only the name, dtype and shape."""
    h = hashlib.sha256()
    for data in graphs:
        for key in sorted(data.keys()):
            value = data[key]
            if isinstance(value, torch.Tensor):
                t = value.detach().cpu().contiguous()
                h.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
                if key not in LAPACK_KEYS:
                    h.update(t.numpy().tobytes())
            else:
                h.update(f"{key}={value!r}|".encode())
    return h.hexdigest()[:16]


def _splits_digest(splits: dict) -> str:
    return _digest([g for s in ("train", "val", "test") for g in splits[s]])


def _relative(ds) -> str:
    return os.path.relpath(ds.processed_dir, ds.root)


def test_csl_graphs_unchanged():
    from graph_transformers.datasets.synthetic.csl import generate_csl
    assert _digest(generate_csl(seed=0)) == "99b8e9ca7f9dc9dd"
    assert _digest(generate_csl(seed=3)[:20]) == "f902c4404bc10afa"


def test_pattern_graphs_unchanged():
    from graph_transformers.datasets.synthetic.sbm import generate_pattern
    splits, patterns = generate_pattern((2, 1, 1), num_patterns=3, seed=0, return_patterns=True,
                                        keep_blocks=True)
    assert _splits_digest(splits) == "fe6739b607fdc1bd"
    assert _digest(patterns) == "b1b4c572351450c6"


def test_cluster_graphs_unchanged():
    from graph_transformers.datasets.synthetic.sbm import generate_cluster
    assert _splits_digest(generate_cluster((3, 2, 2), seed=1)) == "acc1ee4b9c4ed7c0"


def test_tsp_graphs_unchanged():
    pytest.importorskip("elkai")
    from graph_transformers.datasets.synthetic import tsp
    coords = [tsp.tsp_instance(5, split, i) for split in ("train", "val", "test") for i in (0, 7)]
    h = hashlib.sha256(b"".join(c.tobytes() for c in coords)).hexdigest()[:16]
    assert h == "89b9bffe69f2611f"
    rng = np.random.default_rng(0)
    small = [rng.random((n, 2)) for n in (5, 9, 30, 60)]
    graphs = [tsp.tsp_graph(c, tsp.solve_tour(c), k=k) for c, k in zip(small, (25, 3, 8, 25))]
    assert _digest(graphs) == "640d16de49afa6c0"


def test_superpixel_graphs_unchanged():
    pytest.importorskip("skimage")
    from graph_transformers.datasets.images import superpixels as sp
    rng = np.random.default_rng(0)
    gray = rng.integers(0, 256, size=(3, 28, 28), dtype=np.uint8)
    rgb = rng.integers(0, 256, size=(2, 32, 32, 3), dtype=np.uint8)
    mnist = sp.superpixel_graphs(gray, [1, 2, 3], n_segments=sp.MNIST_NUM_SUPERPIXELS,
                                 compactness=sp.MNIST_COMPACTNESS, source_id=1, first_index=4)
    cifar = sp.superpixel_graphs(rgb, [0, 9], n_segments=sp.CIFAR10_NUM_SUPERPIXELS,
                                 compactness=sp.CIFAR10_COMPACTNESS)
    bench = [sp.image_to_superpixel_graph(gray[0], 75, 0.25, knn_rule="benchmark",
                                          use_intensity=True)]
    assert _digest(mnist + cifar + bench) == "4fd65934fafa4f1b"


def test_synthetic_large_graph_unchanged():
    from graph_transformers.datasets.synthetic.large_graph import make_sbm_graph
    assert _digest([make_sbm_graph(500, avg_degree=6.0, seed=2)]) == "9528f38f17c94aa2"


def test_generated_cache_directories_unchanged(tmp_path):
    """The processed-directory names of the generated datasets (relative to their root)."""
    pytest.importorskip("elkai")
    from graph_transformers.datasets.synthetic import tsp
    from graph_transformers.datasets.synthetic.csl import CSL
    from graph_transformers.datasets.synthetic.sbm import CLUSTER, PATTERN
    from graph_transformers.datasets.synthetic.large_graph import SyntheticLargeGraph

    datasets = [
        CSL(tmp_path / "csl", split="val", fold=1, seed=0),
        PATTERN(tmp_path / "p", split="val", num_graphs_per_pattern=(1, 1, 1), num_patterns=2),
        CLUSTER(tmp_path / "c", split="test", seed=2, num_graphs=(2, 1, 1)),
        SyntheticLargeGraph(str(tmp_path / "s"), num_nodes=200, seed=1),
    ]
    names = [_relative(ds) for ds in datasets]
    tsp_root = tmp_path / "t"
    old = tsp.TSP_MAX_NODES
    tsp.TSP_MAX_NODES = 52  # small instances: the names do not depend on the sizes
    try:
        ds = tsp.TSP(tsp_root, split="val", seed=0, num_graphs=(1, 1, 1), num_workers=1)
    finally:
        tsp.TSP_MAX_NODES = old
    names += [_relative(ds), os.path.relpath(ds.tour_dir, ds.root)]
    assert _digest([g for d in datasets + [ds] for g in d]) == "3b8522496a1057da"
    assert names == [
        "processed/140bedbf9c3f_seed0",
        "processed/140bedbf9c3f_seed0_p2x1-1-1",
        "processed/140bedbf9c3f_seed2_n2-1-1",
        "processed/7610e67b0a37",
        "processed/140bedbf9c3f_seed0_n1-1-1",
        "tours/lkh3-elkai-runs1-scale1e6_seed0",
    ]


def test_file_backed_cache_directories_unchanged(tmp_path, data_dir):
    """The processed-directory names of ZINC, a MoleculeNet set and MNIST superpixels."""
    pytest.importorskip("rdkit")
    pytest.importorskip("skimage")
    from graph_transformers.datasets.images import superpixels
    from graph_transformers.datasets.molecules import moleculenet as molecules
    from graph_transformers.datasets.molecules import zinc

    names = [
        _relative(zinc.ZINCSubset(tmp_path / "z", split="val", data_dir=data_dir)),
        _relative(molecules.MoleculeNetCSV(tmp_path / "m", name="esol", split="test",
                                           data_dir=data_dir)),
        _relative(superpixels.MNISTSuperpixels(tmp_path / "x", split="test", data_dir=data_dir,
                                               max_images=2)),
    ]
    assert names == [
        "processed/140bedbf9c3f",
        "processed/9e2bf77f3fc2d0ce_b8e55b17_140bedbf9c3f",
        "processed/140bedbf9c3f_388c192d",
    ]


def test_registry_cache_folders_unchanged(tmp_path, data_dir):
    """The processed folders a run's ``load_splits`` uses, relative to the cache directory (the
    folder each loader picks under ``data.cache_dir`` and the key of the encodings as the
    pre-transform): pinned to the values recorded before the datasets moved from
    ``graph_transformers.data`` to ``graph_transformers.datasets`` (issue 27), so that existing
    caches (and the graphs in them) stay valid. The graphs' digests leave LapPE's bits out
    (:data:`LAPACK_KEYS`): with them, the values pinned first held on one CPU and failed on an
    AMD EPYC machine (2026-11-27), whose LAPACK gives other eigenvectors for CSL's repeated
    eigenvalues."""
    pytest.importorskip("rdkit")
    from graph_transformers.data.cache import resolve_cache_dir
    from graph_transformers.data.registry import build_pre_transform, get_spec, load_splits
    from graph_transformers.training.model_sections import EncodingsConfig
    from graph_transformers.training.sections import DataConfig

    lap, plain = EncodingsConfig(lap_pe={"k": 3}), EncodingsConfig()

    def folder(name, encodings=plain, **data):
        cache = tmp_path / name
        splits = load_splits(DataConfig(name=name, cache_dir=str(cache), **data), encodings)
        folders = {os.path.relpath(ds.processed_dir, cache) for ds in splits.values()}
        assert len(folders) == 1
        return folders.pop(), _splits_digest(splits)

    got = {
        "csl": folder("csl", lap, source="generated", fold=1),
        "csl published": folder("csl", lap, data_dir=str(data_dir), fold=2),
        "pattern": folder("pattern", EncodingsConfig(rwse={"walk_length": 4}),
                          source="generated",
                          options={"num_graphs_per_pattern": [2, 1, 1], "num_patterns": 3}),
        "mutag degree": folder("mutag", lap, data_dir=str(data_dir), node_features="degree",
                               options={"max_degree": 3}),
        "esol": folder("esol", data_dir=str(data_dir), options={"max_rows": 120}),
    }
    zinc = get_spec("zinc").load(resolve_cache_dir(tmp_path / "zinc"), "val",
                                 pre_transform=build_pre_transform(lap), source="generated",
                                 data_dir=str(data_dir))
    got["zinc val"] = (os.path.relpath(zinc.processed_dir, tmp_path / "zinc"), _digest(zinc))
    assert got == {
        "csl": ("CSL/processed/1dbeaa654938_seed0", "cee8f4eff5e9adf6"),
        "csl published": ("canonical/CSL/processed/90e2b28d9799_715b1391", "c1a012a9cd8bcde8"),
        "pattern": ("PATTERN/processed/58f6a21aa7de_seed0_p3x2-1-1", "b471adcb0d4e68f6"),
        "mutag degree": ("TU/MUTAG/processed/f632c36eaa69", "36a40760a10b5f95"),
        "esol": ("MoleculeNet/esol/processed/9e2bf77f3fc2d0ce_4e84b62d_140bedbf9c3f",
                 "a2be6f8ebd1efb9f"),
        "zinc val": ("ZINC/processed/1dbeaa654938", "2168614547b78391"),
    }
