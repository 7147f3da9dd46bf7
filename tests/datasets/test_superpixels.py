"""Tests of the MNIST / CIFAR10 superpixel graphs on the real MNIST test images (shared/data/MNIST)
and on small synthetic CIFAR-10 batches."""
from __future__ import annotations

import gzip
import hashlib
import os
import pickle
import shutil
import struct
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch

from graph_transformers.datasets.images import superpixels as S
from graph_transformers.data.cache import DataNotFoundError
from conftest import data_root

N_IMAGES = 50
K = S.KNN_K


def _mnist_test(data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    d = data_dir / "MNIST"
    if not (d / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"MNIST test images not found in {d}")
    return S.read_mnist(d / "t10k-images-idx3-ubyte.gz", d / "t10k-labels-idx1-ubyte.gz")


@pytest.fixture(scope="module")
def graphs_50():
    """Graphs of the first 50 MNIST test images, built as the dataset builds them (cached for the
    module: SLIC is the slow part)."""
    d = data_root()
    images, labels = _mnist_test(d)
    graphs = S.superpixel_graphs(images[:N_IMAGES], labels[:N_IMAGES], n_segments=75,
                                 compactness=0.25, source_id=1, first_index=0)
    return images[:N_IMAGES], labels[:N_IMAGES], graphs


def _reference_edges(coord: np.ndarray, k: int, keep: int | None = None
                     ) -> dict[int, dict[int, float]]:
    """Plain-loop version of the benchmark's kernel (scale from ``k`` neighbours) and the ``keep``
    (default ``k``) most similar nodes of each node: {i: {j: weight}}."""
    n = len(coord)
    dist = np.array([[float(np.hypot(*(coord[i] - coord[j]))) for j in range(n)]
                     for i in range(n)])
    sigma = [sum(sorted(dist[i][j] for j in range(n) if j != i)[:k]) / k + 1e-8
             for i in range(n)]
    a = np.array([[np.exp(-(dist[i, j] / sigma[i]) ** 2) for j in range(n)] for i in range(n)])
    a = 0.5 * (a + a.T)
    out = {}
    for i in range(n):
        order = sorted((j for j in range(n) if j != i), key=lambda j: (-a[i, j], j))
        out[i] = {j: a[i, j] for j in order[:keep or k]}
    return out


# ------------------------------------------------------------------------------------------------
# Readers
# ------------------------------------------------------------------------------------------------
def test_mnist_files_and_reader(data_dir):
    d = data_dir / "MNIST"
    images, labels = _mnist_test(data_dir)
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        assert hashlib.md5((d / name).read_bytes()).hexdigest() == S.MNIST_MD5[name]
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10000,) and labels.dtype == np.int64
    assert labels[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]  # the well-known first digits
    assert np.bincount(labels, minlength=10).sum() == 10000 and labels.max() == 9
    assert images.max() == 255 and images.min() == 0


def test_read_idx_roundtrip_and_corrupt_headers(tmp_path):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    good = b"\x00\x00\x08\x03" + struct.pack(">3I", 2, 3, 4) + arr.tobytes()
    (tmp_path / "ok-idx3-ubyte").write_bytes(good)
    with gzip.open(tmp_path / "ok-idx3-ubyte.gz", "wb") as f:
        f.write(good)
    assert np.array_equal(S.read_idx(tmp_path / "ok-idx3-ubyte"), arr)
    assert np.array_equal(S.read_idx(tmp_path / "ok-idx3-ubyte.gz"), arr)
    ints = np.array([1, -2, 300], dtype=">i4")
    (tmp_path / "ints").write_bytes(b"\x00\x00\x0c\x01" + struct.pack(">I", 3) + ints.tobytes())
    assert S.read_idx(tmp_path / "ints").tolist() == [1, -2, 300]

    bad = {
        "magic": (b"\x08\x03\x00\x00" + good[4:], "magic"),
        "typecode": (b"\x00\x00\x07\x03" + good[4:], "type code"),
        "truncated": (good[:-5], "data bytes"),
        "dims": (b"\x00\x00\x08\x03" + struct.pack(">3I", 2, 3, 5) + arr.tobytes(), "shape"),
        "header": (b"\x00\x00\x08\x03\x00", "truncated IDX header"),
        "tiny": (b"\x00\x00", "not an IDX file"),
    }
    for name, (payload, words) in bad.items():
        p = tmp_path / f"bad-{name}"
        p.write_bytes(payload)
        with pytest.raises(ValueError, match=words) as e:
            S.read_idx(p)
        assert str(p) in str(e.value)
    notgz = tmp_path / "plain.gz"
    notgz.write_bytes(good)
    with pytest.raises(ValueError, match="cannot read"):
        S.read_idx(notgz)


def test_read_mnist_rejects_inconsistent_files(tmp_path):
    imgs = np.zeros((3, 4, 4), np.uint8)
    (tmp_path / "i").write_bytes(b"\x00\x00\x08\x03" + struct.pack(">3I", 3, 4, 4) + imgs.tobytes())
    (tmp_path / "l2").write_bytes(b"\x00\x00\x08\x01" + struct.pack(">I", 2) + bytes([1, 2]))
    (tmp_path / "l10").write_bytes(b"\x00\x00\x08\x01" + struct.pack(">I", 3) + bytes([1, 2, 10]))
    with pytest.raises(ValueError, match="3 images but"):
        S.read_mnist(tmp_path / "i", tmp_path / "l2")
    with pytest.raises(ValueError, match="0..9"):
        S.read_mnist(tmp_path / "i", tmp_path / "l10")
    with pytest.raises(ValueError, match=r"\[n\] labels"):
        S.read_mnist(tmp_path / "i", tmp_path / "i")


# ------------------------------------------------------------------------------------------------
# Superpixels and graphs on real MNIST test images
# ------------------------------------------------------------------------------------------------
def test_first_test_image_matches_benchmark(graphs_50):
    # benchmarking-gnns prepare_superpixels_MNIST.ipynb prints test[0] as 74 nodes, 592 edges,
    # label 7; Knyazev's README says SLIC gives 74 superpixels for this image.
    _, labels, graphs = graphs_50
    g = graphs[0]
    assert (g.num_nodes, g.edge_index.shape[1], int(g.y)) == (74, 592, 7)


def test_graphs_of_50_test_images(graphs_50):
    images, labels, graphs = graphs_50
    assert len(graphs) == N_IMAGES
    sizes = []
    for _img, label, g in zip(images, labels, graphs):
        n = g.num_nodes
        sizes.append(n)
        assert 40 <= n <= S.MNIST_NUM_SUPERPIXELS  # benchmark test set: 42..75 nodes
        assert g.x.shape == (n, 3) and g.x.dtype == torch.float32
        assert g.pos.shape == (n, 2) and torch.equal(g.pos, g.x[:, 1:])
        assert g.y.tolist() == [int(label)] and g.y.dtype == torch.long
        assert float(g.x[:, 0].min()) >= 0.0 and float(g.x[:, 0].max()) <= 1.0
        assert float(g.x[:, 0].max()) > 0.5  # some superpixel lies on the digit
        assert float(g.pos.min()) >= 0.0 and float(g.pos.max()) <= 27 / 28 + 1e-6
        src, dst = g.edge_index
        assert g.edge_index.shape == (2, K * n) and g.edge_index.dtype == torch.long
        assert torch.equal(torch.bincount(src, minlength=n), torch.full((n,), K))
        assert not bool((src == dst).any())
        pairs = set(zip(src.tolist(), dst.tolist()))
        assert len(pairs) == K * n  # distinct neighbours per node
        w = g.edge_attr
        assert w.shape == (K * n, 1) and w.dtype == torch.float32
        assert float(w.min()) > 0.0 and float(w.max()) <= 1.0
        # The kernel is symmetrized: an edge present in both directions has one weight.
        weight = {(a, b): float(v) for a, b, v in zip(src.tolist(), dst.tolist(), w.view(-1))}
        for (a, b), v in weight.items():
            if (b, a) in weight:
                assert weight[(b, a)] == pytest.approx(v, abs=1e-6)
    assert max(sizes) >= 70  # SLIC lands close to the cap


def test_edges_match_plain_reference(graphs_50):
    images = graphs_50[0]
    for img in images[:4]:
        g = S.image_to_superpixel_graph(img, 75, 0.25)  # SLIC raster order, no shuffling
        labels = S.slic_superpixels(img, 75, 0.25)
        _, centroid, _ = S.superpixel_features(img, labels)
        ref = _reference_edges(centroid / 28.0, K)
        got: dict[int, dict[int, float]] = {}
        for a, b, v in zip(*g.edge_index.tolist(), g.edge_attr.view(-1).tolist()):
            got.setdefault(a, {})[b] = v
        assert sorted(got) == list(range(g.num_nodes))
        for i in ref:
            assert set(got[i]) == set(ref[i])
            for j, v in ref[i].items():
                assert got[i][j] == pytest.approx(v, rel=1e-5)


def test_node_shuffling_is_a_relabelling(graphs_50):
    images, _, graphs = graphs_50
    img, shuffled = images[1], graphs[1]
    plain = S.image_to_superpixel_graph(img, 75, 0.25)
    rows = {tuple(r) for r in plain.x.tolist()}
    assert rows == {tuple(r) for r in shuffled.x.tolist()}
    assert not torch.equal(plain.x, shuffled.x)  # a different order
    assert sorted(plain.edge_attr.view(-1).tolist()) == pytest.approx(
        sorted(shuffled.edge_attr.view(-1).tolist()), abs=1e-6)


def test_superpixel_means_reproduce_image_statistics(graphs_50):
    images = graphs_50[0]
    for img in images[:20]:
        labels = S.slic_superpixels(img, 75, 0.25)
        n = labels.max() + 1
        assert labels.shape == (28, 28) and labels.min() == 0 and n <= 75
        intensity, centroid, size = S.superpixel_features(img, labels)
        assert size.sum() == 28 * 28 and size.min() >= 1 and intensity.shape == (n, 1)
        # Pixel-count-weighted superpixel means give back the image mean and the grid centre.
        assert (intensity[:, 0] * size).sum() / size.sum() == pytest.approx(img.mean() / 255,
                                                                            abs=1e-9)
        assert (centroid * size[:, None]).sum(0) / size.sum() == pytest.approx([13.5, 13.5])
        g = S.image_to_superpixel_graph(img, 75, 0.25)
        assert np.allclose(g.x[:, 0].numpy(), intensity[:, 0], atol=1e-6)
        assert np.allclose(g.pos.numpy(), centroid / 28, atol=1e-6)


def test_superpixels_do_not_straddle_flat_regions():
    yy, xx = np.mgrid[:28, :28]
    cases = [
        (np.where(xx < 14, 0, 255).astype(np.uint8), 75, 0.25),
        (np.where(yy + xx < 30, 30, 220).astype(np.uint8), 75, 0.25),
        (np.where((yy - 14) ** 2 + (xx - 13) ** 2 < 64, 255, 0).astype(np.uint8), 75, 0.25),
    ]
    yy, xx = np.mgrid[:32, :32]
    rgb = np.zeros((32, 32, 3), np.uint8)
    rgb[yy > xx], rgb[yy <= xx] = [200, 30, 30], [20, 60, 180]
    cases.append((rgb, 150, 10.0))
    for img, n_sp, c in cases:
        labels = S.slic_superpixels(img, n_sp, c)
        pixels = img.reshape(labels.size, -1)
        flat = labels.reshape(-1)
        assert 2 <= labels.max() + 1 <= n_sp
        for s in range(labels.max() + 1):
            values = pixels[flat == s]
            assert (values == values[0]).all(), f"superpixel {s} straddles the boundary"
        g = S.image_to_superpixel_graph(img, n_sp, c)
        colours = np.unique(pixels, axis=0) / 255.0
        means = g.x[:, :-2].double().numpy()
        gap = np.abs(means[:, None, :] - colours[None, :, :]).max(axis=2).min(axis=1)
        assert gap.max() < 1e-6  # every superpixel's mean is one of the two colours


def test_knn_graph_edge_cases_and_rules():
    ei, w = S.superpixel_knn_graph(np.array([[0.5, 0.5]]))
    assert ei.tolist() == [[0], [0]] and w.tolist() == [1.0]
    coord = np.random.default_rng(0).random((5, 2))
    ei, w = S.superpixel_knn_graph(coord, k=8)  # fewer nodes than k: all other nodes
    assert ei.shape == (2, 20) and set(zip(*ei.tolist())) == {
        (i, j) for i in range(5) for j in range(5) if i != j}
    coord = np.random.default_rng(1).random((40, 2))
    top, wt = S.superpixel_knn_graph(coord, k=8)
    lit, wl = S.superpixel_knn_graph(coord, k=8, knn_rule="benchmark")
    ref = _reference_edges(coord, 8)
    ref9 = _reference_edges(coord, 8, keep=9)
    for i in range(40):
        assert set(top[1][top[0] == i].tolist()) == set(ref[i])
        got = lit[1][lit[0] == i].tolist()
        assert len(set(got)) == 8 and set(got) <= set(ref9[i])  # 8 of the 9 most similar
    assert (np.diff(wt.reshape(40, 8), axis=1) <= 0).all()  # topk: decreasing weight
    ei, w = S.superpixel_knn_graph(coord, np.random.default_rng(2).random((40, 1)), k=8)
    assert ei.shape == (2, 320) and (w >= 0).all() and (w <= 1).all()
    with pytest.raises(ValueError, match="knn_rule"):
        S.superpixel_knn_graph(coord, knn_rule="nearest")
    with pytest.raises(ValueError, match="image must be"):
        S.image_to_superpixel_graph(np.zeros((4, 4, 2), np.uint8), 75, 0.25)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        S.image_to_superpixel_graph(np.full((8, 8), 2.0), 75, 0.25)


# ------------------------------------------------------------------------------------------------
# Dataset classes
# ------------------------------------------------------------------------------------------------
def test_mnist_dataset_caches_a_prefix(data_dir, monkeypatch):
    images, labels = _mnist_test(data_dir)
    ds = S.MNISTSuperpixels(split="test", data_dir=data_dir, download=False, max_images=12)
    assert len(ds) == 12 and ds.info["num_graphs"] == 12 and ds.info["images_per_second"] > 0
    assert ds.info["source_range"] == [0, 12] and ds.info["params"]["n_segments"] == 75
    assert (ds.num_classes, ds.metric, ds.level, ds.node_dim, ds.edge_dim) == (
        10, "accuracy", "graph", 3, 1)
    assert [int(d.y) for d in ds] == labels[:12].tolist()
    direct = S.superpixel_graphs(images[:12], labels[:12], n_segments=75, compactness=0.25,
                                 source_id=1)
    for a, b in zip(ds, direct):
        assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
        assert torch.equal(a.edge_attr, b.edge_attr)
    small = S.MNISTSuperpixels(split="test", data_dir=data_dir, download=False, max_images=5)
    for a, b in zip(small, ds):  # a prefix is the start of the longer build
        assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
    assert Path(ds.processed_paths[0]).is_file()
    assert Path(ds.processed_paths[0]).name == "test_first12.pt"

    def no_rebuild(*args, **kwargs):
        raise AssertionError("cache not used")

    monkeypatch.setattr(S, "superpixel_graphs", no_rebuild)
    again = S.MNISTSuperpixels(split="test", data_dir=data_dir, download=False, max_images=12)
    assert len(again) == 12 and torch.equal(again[3].x, ds[3].x)
    with pytest.raises(AssertionError, match="cache not used"):
        S.MNISTSuperpixels(split="test", data_dir=data_dir, download=False, max_images=12,
                           force_reload=True)


def test_mnist_dataset_missing_data(data_dir, tmp_path):
    with pytest.raises(DataNotFoundError) as e:
        S.MNISTSuperpixels(split="test", data_dir=tmp_path / "nothing", download=False)
    msg = str(e.value)
    assert "t10k-images-idx3-ubyte" in msg and str(tmp_path / "nothing" / "MNIST") in msg
    assert "download disabled" in msg
    # Only the test files and the train labels: val/train need the train images.
    partial = tmp_path / "partial" / "MNIST"
    partial.mkdir(parents=True)
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(data_dir / "MNIST" / name, partial / name)
    (partial / "train-labels-idx1-ubyte.gz").write_bytes(b"")
    with pytest.raises(DataNotFoundError, match="train-images-idx3-ubyte"):
        S.MNISTSuperpixels(split="val", data_dir=partial.parent, download=False)
    with pytest.raises(ValueError, match="split"):
        S.MNISTSuperpixels(split="valid", data_dir=partial.parent)
    with pytest.raises(ValueError, match="max_images"):
        S.MNISTSuperpixels(split="test", data_dir=partial.parent, max_images=0)


def test_download_fails_fast_offline(tmp_path, monkeypatch):
    calls = []

    def no_network(req, timeout=None):
        calls.append((req.full_url, timeout))
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    monkeypatch.delenv(S.OFFLINE_ENV, raising=False)
    with pytest.raises(DataNotFoundError) as e:
        S.MNISTSuperpixels(split="test", data_dir=tmp_path / "none", download=True)
    assert "download failed" in str(e.value) and "unreachable" in str(e.value)
    # Every mirror was tried for the first missing file, then the loader gave up.
    assert [u for u, _ in calls] == [m + "t10k-images-idx3-ubyte.gz" for m in S.MNIST_MIRRORS]
    assert all(t is not None and t <= 60 for _, t in calls)
    with pytest.raises(DataNotFoundError, match="could not download"):
        S.download_cifar10(tmp_path / "dl")
    calls.clear()
    monkeypatch.setenv(S.OFFLINE_ENV, "1")
    with pytest.raises(DataNotFoundError, match="download disabled"):
        S.CIFAR10Superpixels(split="test", data_dir=tmp_path / "none", download=True)
    assert calls == []


# ------------------------------------------------------------------------------------------------
# CIFAR-10 (synthetic batches in the original layout)
# ------------------------------------------------------------------------------------------------
def _synthetic_cifar(n: int, seed: int) -> tuple[np.ndarray, list[int]]:
    """Smooth colour images (blocks + gradient) in CIFAR's row layout [n, 3072]."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:32, :32]
    imgs = []
    for _ in range(n):
        img = np.zeros((32, 32, 3))
        for c in range(3):
            a, b = rng.uniform(0, 255, 2)
            img[..., c] = np.where(yy * rng.uniform(0.2, 2) + xx > 24, a, b) + 0.5 * xx
        imgs.append(np.clip(img, 0, 255).astype(np.uint8))
    hwc = np.stack(imgs)
    data = hwc.transpose(0, 3, 1, 2).reshape(n, 3072)  # R plane, G plane, B plane
    return data, rng.integers(0, 10, n).tolist()


def _write_batch(path: Path, data: np.ndarray, labels: list[int], bytes_keys: bool) -> None:
    batch = {"data": data, "labels": labels, "batch_label": "synthetic",
             "filenames": [f"img_{i}.png" for i in range(len(labels))]}
    if bytes_keys:
        batch = {k.encode(): v for k, v in batch.items()}
    path.write_bytes(pickle.dumps(batch, protocol=2))


def test_cifar_reader_layouts(tmp_path):
    folder = tmp_path / "CIFAR10" / S.CIFAR10_FOLDER
    folder.mkdir(parents=True)
    data, labels = _synthetic_cifar(4, 0)
    _write_batch(folder / "test_batch", data, labels, bytes_keys=True)
    for i in range(1, 6):
        d, lab = _synthetic_cifar(2, i)
        _write_batch(folder / f"data_batch_{i}", d, lab, bytes_keys=False)
    images, got = S.read_cifar10(tmp_path / "CIFAR10", "test")
    assert images.shape == (4, 32, 32, 3) and images.dtype == np.uint8 and got.tolist() == labels
    assert images[1, 5, 7, 0] == data[1, 5 * 32 + 7] and images[1, 5, 7, 2] == data[
        1, 2048 + 5 * 32 + 7]
    train, train_labels = S.read_cifar10(folder, "train")
    assert train.shape == (10, 32, 32, 3) and len(train_labels) == 10
    with tarfile.open(tmp_path / "c.tar.gz", "w:gz") as tf:
        tf.add(folder / "test_batch", arcname=f"{S.CIFAR10_FOLDER}/test_batch")
    from_tar, tar_labels = S.read_cifar10(tmp_path / "c.tar.gz", "test")
    assert np.array_equal(from_tar, images) and tar_labels.tolist() == labels
    with pytest.raises(FileNotFoundError, match="data_batch_1"):
        S.read_cifar10(tmp_path / "c.tar.gz", "train")


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_cifar_reader_refuses_code_in_pickles(tmp_path):
    folder = tmp_path / S.CIFAR10_FOLDER
    folder.mkdir()
    (folder / "test_batch").write_bytes(pickle.dumps({"data": _Evil(), "labels": [1]}))
    with pytest.raises(ValueError, match="refusing"):
        S.read_cifar10(tmp_path, "test")
    (folder / "test_batch").write_bytes(pickle.dumps({"data": np.zeros((2, 5), np.uint8),
                                                      "labels": [1, 2]}, protocol=2))
    with pytest.raises(ValueError, match="3072"):
        S.read_cifar10(tmp_path, "test")


def test_cifar_dataset_on_synthetic_batches(tmp_path):
    folder = tmp_path / "data" / "CIFAR10" / S.CIFAR10_FOLDER
    folder.mkdir(parents=True)
    data, labels = _synthetic_cifar(3, 7)
    _write_batch(folder / "test_batch", data, labels, bytes_keys=True)
    ds = S.CIFAR10Superpixels(split="test", data_dir=tmp_path / "data", download=False,
                              max_images=2)
    assert len(ds) == 2 and [int(d.y) for d in ds] == labels[:2]
    assert (ds.node_dim, ds.edge_dim, ds.num_classes) == (5, 1, 10)
    for g in ds:
        n = g.num_nodes
        assert 2 <= n <= S.CIFAR10_NUM_SUPERPIXELS and g.x.shape == (n, 5)
        assert float(g.x[:, :3].min()) >= 0 and float(g.x[:, :3].max()) <= 1
        assert float(g.pos.max()) <= 31 / 32 + 1e-6 and torch.equal(g.pos, g.x[:, 3:])
        assert g.edge_index.shape == (2, K * n) and float(g.edge_attr.min()) > 0
    # A local archive must be the real one (md5).
    (tmp_path / "data" / "CIFAR10" / S.CIFAR10_ARCHIVE).write_bytes(b"not the archive")
    with pytest.raises(ValueError, match="md5"):
        S.CIFAR10Superpixels(split="test", data_dir=tmp_path / "data", download=False,
                             max_images=1)
    with pytest.raises(DataNotFoundError, match="cifar-10-python.tar.gz"):
        S.CIFAR10Superpixels(split="train", data_dir=tmp_path / "empty", download=False)


def test_gt_trains_one_epoch_on_cifar_superpixels(tmp_path):
    """No CIFAR-10 images ship with the shared data: GT trains one epoch on superpixel graphs of
    synthetic images written in the original batch layout."""
    import lightning as L
    from torch_geometric.loader import DataLoader

    from graph_transformers.data.registry import get_spec
    from graph_transformers.encodings import AddLaplacianPE
    from graph_transformers.models import GraphTransformer
    from graph_transformers.training.config import OptimConfig
    from graph_transformers.training.module import GraphTaskModule, evaluate

    folder = tmp_path / "data" / "CIFAR10" / S.CIFAR10_FOLDER
    folder.mkdir(parents=True)
    data, labels = _synthetic_cifar(12, 3)
    _write_batch(folder / "test_batch", data, labels, bytes_keys=True)
    ds = S.CIFAR10Superpixels(split="test", data_dir=tmp_path / "data", download=False,
                              pre_transform=AddLaplacianPE(4))
    spec = get_spec("cifar10")
    torch.manual_seed(0)
    model = GraphTransformer(16, 1, 2, 10, num_node_features=5, num_edge_features=1,
                             use_edge_features=True, pe="lap", pe_dim=4)
    module = GraphTaskModule(model, spec, OptimConfig(lr=1e-3, scheduler=None))
    L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False).fit(module, DataLoader(ds[:8], batch_size=4))
    result = evaluate(model, spec, DataLoader(ds[8:], batch_size=4))
    assert 0.0 <= result["accuracy"] <= 1.0
