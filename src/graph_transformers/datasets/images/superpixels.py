r"""MNIST and CIFAR10 superpixel graphs: the image-classification benchmarks of Dwivedi et al.,
"Benchmarking Graph Neural Networks" (2020), built on the SLIC superpixels of Knyazev et al.,
"Understanding Attention and Generalization in Graph Neural Networks" (NeurIPS 2019).

Every image becomes one graph: a node per SLIC superpixel, edges from a Gaussian-kernel k-NN on
the superpixel centroids, graph label = image class (10 classes, metric accuracy). This module
holds the dataset classes; the image → graph construction (SLIC, node features, k-NN edges, and
how each step follows the benchmark's code) is in
:mod:`graph_transformers.datasets.images.superpixel_graph`, the raw-file readers and downloads in
:mod:`graph_transformers.datasets.images.image_files`. Both are re-exported here.

Splits: test = the 10,000 test images; val = the first 5,000 training images; train = the
other 55,000 (MNIST) / 45,000 (CIFAR10) — ``SuperPixDatasetDGL(num_val=5000)`` takes
``train_[:5000]`` as val (notebook outputs: 55000 / 5000 / 10000 for MNIST, 45000 / 5000 / 10000
for CIFAR10).

Other differences from the released data: features are stored as float32 (the benchmark stores
float16), and no self-loops are added (the benchmark adds them in the model code for GCN/GAT).

Raw files: MNIST's four IDX files and CIFAR-10's python archive (or its extracted batches), read
from ``resolve_data_dir(data_dir) / "MNIST"`` / ``"CIFAR10"`` (details and md5 checks in
:mod:`graph_transformers.datasets.images.image_files`).

Speed: about 30 MNIST images/s and 5 CIFAR10 images/s per core (``docs/datasets.md``,
"Superpixels: build time"); each split is processed once and cached, and ``num_workers`` spreads
the images over processes (default 0: serial).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from ...data.cache import (DATA_ENV, DataNotFoundError, KeyedCacheDataset, pre_transform_key,
                           resolve_cache_dir, resolve_data_dir, write_cache_json)
from ...data.download import OFFLINE_ENV, md5_of, offline
from ...data.generated import PathLike, Transform, check_split
from ...data.progress import progress
from ...data.registry import DatasetSpec
from ...data.published import published_or_generated, require_fields
from ...errors import DataError
from ..gnn_benchmark import GNNBenchmark
from .image_files import (
    CIFAR10_ARCHIVE,
    CIFAR10_BATCHES,
    CIFAR10_FOLDER,
    CIFAR10_MD5,
    CIFAR10_URL,
    MNIST_FILES,
    MNIST_MD5,
    MNIST_MIRRORS,
    download_cifar10,
    download_mnist,
    read_cifar10,
    read_idx,
    read_mnist,
)
from .superpixel_graph import (
    CIFAR10_COMPACTNESS,
    CIFAR10_NUM_SUPERPIXELS,
    CIFAR10_QUERY_EXTRA,
    KNN_K,
    KNN_RULES,
    MNIST_COMPACTNESS,
    MNIST_NUM_SUPERPIXELS,
    MNIST_QUERY_EXTRA,
    NODE_ORDER_SEED,
    image_to_superpixel_graph,
    slic_superpixels,
    superpixel_features,
    superpixel_graphs,
    superpixel_knn_graph,
)

__all__ = [
    "CIFAR10_PROFILE",
    "CIFAR10_SPEC",
    "CIFAR10Superpixels",
    "CIFAR10_ARCHIVE",
    "CIFAR10_COMPACTNESS",
    "CIFAR10_FOLDER",
    "CIFAR10_MD5",
    "CIFAR10_NUM_SUPERPIXELS",
    "CIFAR10_URL",
    "KNN_K",
    "MNIST_PROFILE",
    "MNIST_SPEC",
    "MNISTSuperpixels",
    "SuperpixelProfile",
    "MNIST_COMPACTNESS",
    "MNIST_FILES",
    "MNIST_MD5",
    "MNIST_MIRRORS",
    "MNIST_NUM_SUPERPIXELS",
    "NUM_VAL",
    "OFFLINE_ENV",
    "download_cifar10",
    "download_mnist",
    "image_to_superpixel_graph",
    "load_superpixels",
    "read_cifar10",
    "read_idx",
    "read_mnist",
    "slic_superpixels",
    "superpixel_features",
    "superpixel_graphs",
    "superpixel_knn_graph",
]

log = logging.getLogger(__name__)

#: Validation images: the first 5,000 training images (``num_val=5000``).
NUM_VAL = 5000
_SOURCE_ID = {"train": 0, "test": 1}  # which image file a split reads (node-order seeding)
_FORMAT_VERSION = 1  # bump when the processed format or the procedure changes


@dataclasses.dataclass(frozen=True)
class SuperpixelProfile:
    """What sets one superpixel benchmark apart: its ``name`` (the raw folder under the data
    directory), the width of ``x`` (``node_dim``), the SLIC parameters of
    :func:`~.superpixel_graph.superpixel_graphs` (``n_segments``, ``compactness``,
    ``query_extra``) and the images of each file (``file_sizes``: train file, test file)."""

    name: str
    node_dim: int
    n_segments: int
    compactness: float
    query_extra: int
    file_sizes: dict[str, int]


#: MNIST: 3 features (intensity, centroid), at most 75 superpixels
MNIST_PROFILE = SuperpixelProfile("MNIST", 3, MNIST_NUM_SUPERPIXELS, MNIST_COMPACTNESS,
                                  MNIST_QUERY_EXTRA, {"train": 60_000, "test": 10_000})
#: CIFAR10: 5 features (R, G, B, centroid), at most 150 superpixels
CIFAR10_PROFILE = SuperpixelProfile("CIFAR10", 5, CIFAR10_NUM_SUPERPIXELS, CIFAR10_COMPACTNESS,
                                    CIFAR10_QUERY_EXTRA, {"train": 50_000, "test": 10_000})


class _SuperpixelDataset(KeyedCacheDataset):
    """Shared machinery of :class:`MNISTSuperpixels` and :class:`CIFAR10Superpixels`."""

    #: Dataset name (raw folder under the data directory).
    name = ""
    num_classes = 10
    metric = "accuracy"
    level = "graph"
    task = "classification"
    node_dim = 0
    edge_dim = 1
    n_segments = 0
    compactness = 0.0
    query_extra = 0
    #: Images in each image file (train file, test file).
    file_sizes: dict[str, int] = {}

    def __init_subclass__(cls, *, profile: SuperpixelProfile | None = None,
                          **kwargs: Any) -> None:
        """A dataset's :class:`SuperpixelProfile`, given in its class statement, sets its
        class attributes (unset: inherited)."""
        super().__init_subclass__(**kwargs)
        if profile is not None:
            for key, value in dataclasses.asdict(profile).items():
                setattr(cls, key, value)

    def __init__(
        self, root: PathLike | None = None, split: str = "train", data_dir: PathLike | None = None,
        transform: Transform = None, pre_transform: Transform = None, force_reload: bool = False,
        download: bool = True, max_images: int | None = None, *, num_workers: int = 0,
        use_intensity: bool = False, knn_rule: str = "topk",
    ) -> None:
        check_split(self.name, split)
        if max_images is not None and (isinstance(max_images, bool) or int(max_images) < 1):
            raise ValueError(f"{self.name}: max_images must be None or >= 1, got {max_images!r}")
        if knn_rule not in KNN_RULES:
            raise ValueError(f"{self.name}: knn_rule must be one of {KNN_RULES}, got {knn_rule!r}")
        if int(num_workers) < 0:
            raise ValueError(f"{self.name}: num_workers must be >= 0, got {num_workers}")
        self.split = split
        self.max_images = None if max_images is None else int(max_images)
        self.num_workers = int(num_workers)
        self.use_intensity = bool(use_intensity)
        self.knn_rule = knn_rule
        self.allow_download = bool(download) and not offline()
        data = resolve_data_dir(data_dir)
        self._data_dirs = self._raw_dirs(data) if data is not None else []
        root = Path(root).expanduser() if root is not None else (
            resolve_cache_dir() / f"{self.name}Superpixels")
        params = json.dumps(self.params, sort_keys=True)
        self._key = (f"{pre_transform_key(pre_transform)}_"
                     f"{hashlib.sha256(params.encode()).hexdigest()[:8]}")
        super().__init__(str(root), transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[0])
        with open(self.processed_paths[1]) as f:
            #: What was processed: parameters, source files, image count and speed.
            self.info: dict[str, Any] = json.load(f)

    # -- parameters and paths ----------------------------------------------------------------
    @property
    def params(self) -> dict[str, Any]:
        """Everything the graphs depend on (hashed into the processed directory's name)."""
        return {
            "format_version": _FORMAT_VERSION, "n_segments": self.n_segments,
            "compactness": self.compactness, "query_extra": self.query_extra, "k": KNN_K,
            "use_intensity": self.use_intensity, "knn_rule": self.knn_rule,
            "node_order_seed": NODE_ORDER_SEED,
        }

    def _raw_dirs(self, data: Path) -> list[Path]:
        base = data / self.name
        return [base, base / "raw", data]

    @property
    def raw_dir(self) -> str:
        # Raw files are read in place from the data directory; root/raw only receives downloads.
        return os.path.join(self.root, "raw")

    @property
    def processed_file_names(self) -> list[str]:
        tag = self.split if self.max_images is None else f"{self.split}_first{self.max_images}"
        return [f"{tag}.pt", f"{tag}.json"]

    def _split_range(self) -> tuple[str, int, int]:
        """(image file, start, stop) of this split, after ``max_images``."""
        if self.split == "test":
            source, start, stop = "test", 0, self.file_sizes["test"]
        elif self.split == "val":
            source, start, stop = "train", 0, NUM_VAL
        else:
            source, start, stop = "train", NUM_VAL, self.file_sizes["train"]
        if self.max_images is not None:
            stop = min(stop, start + self.max_images)
        return source, start, stop

    def _search_dirs(self) -> list[Path]:
        """Where raw files are looked for: the data directory's folders, then ``root/raw``."""
        return self._data_dirs + [Path(self.raw_dir)]

    def _looked(self) -> str:
        return ", ".join(str(d) for d in self._search_dirs())

    def _locate(self, find: Callable[[], list[Path | None]],
                download: Callable[[list[Path | None]], object],
                what: str) -> tuple[list[Path | None], str]:
        """``find()`` (a path or ``None`` per file needed); when some are missing and downloads
        are allowed, ``download(found)`` and ``find()`` again. Returns the paths and why the
        missing ones are missing (for the error message; ``what``: "the files are" / "the
        archive is")."""
        found = find()
        why = "download disabled"
        if None in found and self.allow_download:
            try:
                download(found)
            except DataNotFoundError as e:
                why = f"download failed: {e}"
            else:
                found = find()
                why = f"download finished but {what} missing"
        return found, why

    # -- subclass hooks ------------------------------------------------------------------------
    def _read_source(self, source: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(images, labels, paths read) of the ``"train"`` or ``"test"`` image file."""
        raise NotImplementedError

    # -- processing ----------------------------------------------------------------------------
    def process(self) -> None:
        source, start, stop = self._split_range()
        images, labels, paths = self._read_source(source)
        if len(images) != self.file_sizes[source]:
            log.warning("%s: the %s file has %d images (the benchmark's has %d)", self.name,
                        source, len(images), self.file_sizes[source])
        stop = min(stop, len(images))
        t0 = time.perf_counter()
        graphs = superpixel_graphs(
            images[start:stop], labels[start:stop], n_segments=self.n_segments,
            compactness=self.compactness, k=KNN_K, query_extra=self.query_extra,
            use_intensity=self.use_intensity, knn_rule=self.knn_rule,
            source_id=_SOURCE_ID[source], first_index=start, num_workers=self.num_workers,
        )
        seconds = time.perf_counter() - t0
        if self.pre_transform is not None:
            graphs = [self.pre_transform(d) for d in progress(graphs, f"{type(self).__name__} "
                                                                      "encodings")]
        self.save(graphs, self.processed_paths[0])
        try:
            import skimage
            skimage_version = skimage.__version__
        except ImportError:  # pragma: no cover - slic_superpixels needs it
            skimage_version = None
        info = {
            "dataset": self.name, "split": self.split, "max_images": self.max_images,
            "num_graphs": len(graphs), "source_file": source, "source_range": [start, stop],
            "sources": paths, "params": self.params, "skimage_version": skimage_version,
            "seconds": round(seconds, 2),
            "images_per_second": round(len(graphs) / seconds, 2) if seconds > 0 else None,
            "num_workers": self.num_workers,
        }
        write_cache_json(self.processed_paths[1], info)
        log.info("%s %s: %d graphs in %.1f s (%.1f images/s)", self.name, self.split,
                 len(graphs), seconds, info["images_per_second"] or 0.0)

    def __repr__(self) -> str:
        extra = "" if self.max_images is None else f", max_images={self.max_images}"
        return f"{self.__class__.__name__}({len(self)}, split={self.split!r}{extra})"


class MNISTSuperpixels(_SuperpixelDataset, profile=MNIST_PROFILE):
    r"""MNIST as superpixel graphs (Dwivedi et al., "Benchmarking GNNs"; Knyazev et al. 2019):
    55,000 / 5,000 / 10,000 graphs (train / val / test), at most 75 nodes each, 10 classes,
    metric accuracy.

    Each graph: ``x`` float32 ``[N, 3]`` (mean intensity in [0, 1], centroid row / 28, column /
    28), ``pos`` float32 ``[N, 2]``, ``edge_index`` int64 ``[2, 8N]`` (each node → its 8 nearest
    by the Gaussian kernel), ``edge_attr`` float32 ``[8N, 1]`` (kernel weight in (0, 1]), ``y``
    int64 ``[1]``. The procedure and its sources are in
    :mod:`graph_transformers.datasets.images.superpixel_graph`.

    Raw files (IDX, ``.gz`` or not) are read from ``resolve_data_dir(data_dir) / "MNIST"`` (or its
    ``raw/``; or ``data_dir`` itself), then from ``root/raw`` (where downloads go): ``test`` needs
    ``t10k-images-idx3-ubyte`` + ``t10k-labels-idx1-ubyte``, ``train`` / ``val`` need
    ``train-images-idx3-ubyte`` + ``train-labels-idx1-ubyte``.

    Args:
        root: cache directory (default ``resolve_cache_dir() / "MNISTSuperpixels"``); graphs go to
            ``root/processed/<pre_transform key>_<parameter hash>/<split>[_first<n>].pt`` with a
            ``.json`` record (parameters, source files, scikit-image version, images/s).
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        data_dir: raw-data directory (default ``$GRAPH_TRANSFORMERS_DATA``).
        transform, pre_transform, force_reload: as in
            :class:`~torch_geometric.data.InMemoryDataset`.
        download (bool): allow downloading missing files from :data:`MNIST_MIRRORS` (also
            disabled by ``GRAPH_TRANSFORMERS_OFFLINE=1``).
        max_images (int, optional): build only the first ``max_images`` graphs of the split (a
            prefix, identical to the first graphs of the full split; cached separately) — for
            tests and smoke runs, since the full split takes a while (about 30 images/s per core).
        num_workers (int): processes for building the graphs (0: this process).
        use_intensity (bool): add the intensity term to the edge kernel (off in the benchmark).
        knn_rule (str): ``"topk"`` (default) or ``"benchmark"`` (see
            :func:`superpixel_knn_graph`).

    Attributes:
        info (dict): what was processed (parameters, sources, count, seconds, images/s).

    Raises:
        DataNotFoundError: the split's files are neither local nor downloadable; the message
            lists the directories searched and how to provide the data.
        ValueError: bad arguments, malformed or wrong-checksum raw files.
    """

    def _find(self, name: str) -> Path | None:
        for d in self._search_dirs():
            for candidate in (d / f"{name}.gz", d / name):
                if candidate.is_file():
                    return candidate
        return None

    def _read_source(self, source: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
        names = MNIST_FILES[source]
        found, download_error = self._locate(
            lambda: [self._find(n) for n in names],
            lambda found: download_mnist(
                self.raw_dir, [f"{n}.gz" for n, p in zip(names, found) if p is None]),
            "the files are")
        if None in found:
            missing = [n for n, p in zip(names, found) if p is None]
            raise DataNotFoundError(
                f"MNIST {self.split}: {', '.join(missing)}[.gz] not found; {download_error}. "
                f"Looked in: {self._looked()}. To get the data, pass data_dir=... (--data-dir) or "
                f"set ${DATA_ENV} to a folder whose MNIST/ holds {names[0]}.gz and {names[1]}.gz "
                f"(gzipped or not; torchvision's MNIST/raw/ layout works too), or allow the "
                f"download from {MNIST_MIRRORS[0]} (needs network; download=True and "
                f"${OFFLINE_ENV} unset).")
        for p in found:
            if p.name in MNIST_MD5 and md5_of(p) != MNIST_MD5[p.name]:
                raise ValueError(f"MNIST: {p} has md5 {md5_of(p)}, expected {MNIST_MD5[p.name]}")
        images, labels = read_mnist(found[0], found[1])
        return images, labels, [str(p) for p in found]


class CIFAR10Superpixels(_SuperpixelDataset, profile=CIFAR10_PROFILE):
    r"""CIFAR10 as superpixel graphs (Dwivedi et al., "Benchmarking GNNs"; Knyazev et al. 2019):
    45,000 / 5,000 / 10,000 graphs (train / val / test), at most 150 nodes each, 10 classes,
    metric accuracy.

    Each graph: ``x`` float32 ``[N, 5]`` (mean R, G, B in [0, 1], centroid row / 32, column / 32),
    ``pos`` float32 ``[N, 2]``, ``edge_index`` int64 ``[2, 8N]``, ``edge_attr`` float32
    ``[8N, 1]`` (kernel weight in (0, 1]), ``y`` int64 ``[1]``. The procedure and its sources are
    in :mod:`graph_transformers.datasets.images.superpixel_graph`.

    Raw files are read from ``resolve_data_dir(data_dir) / "CIFAR10"`` (or its ``raw/``; or
    ``data_dir`` itself), then from ``root/raw`` (where downloads go): ``cifar-10-python.tar.gz``
    (md5-checked, read in place) or the extracted ``cifar-10-batches-py/`` (``data_batch_1..5``
    for train / val, ``test_batch`` for test). The batches are pickles; they are loaded with an
    unpickler that accepts only numpy arrays (see :func:`read_cifar10`).

    Args:
        root: cache directory (default ``resolve_cache_dir() / "CIFAR10Superpixels"``); layout as
            in :class:`MNISTSuperpixels`.
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        data_dir: raw-data directory (default ``$GRAPH_TRANSFORMERS_DATA``).
        transform, pre_transform, force_reload: as in
            :class:`~torch_geometric.data.InMemoryDataset`.
        download (bool): allow downloading :data:`CIFAR10_URL` (about 163 MB; also disabled by
            ``GRAPH_TRANSFORMERS_OFFLINE=1``).
        max_images (int, optional): build only the first ``max_images`` graphs of the split (see
            :class:`MNISTSuperpixels`; CIFAR10 takes about 5 images/s per core).
        num_workers, use_intensity, knn_rule: as in :class:`MNISTSuperpixels`.

    Attributes:
        info (dict): what was processed.

    Raises:
        DataNotFoundError: the files are neither local nor downloadable (message: where it looked,
            how to get them).
        ValueError: bad arguments, a wrong-checksum archive or malformed batches.
    """

    def _find(self, source: str) -> Path | None:
        wanted = CIFAR10_BATCHES[source]
        for d in self._search_dirs():
            if (d / CIFAR10_ARCHIVE).is_file():
                return d / CIFAR10_ARCHIVE
            for folder in (d / CIFAR10_FOLDER, d):
                if all((folder / w).is_file() for w in wanted):
                    return folder
        return None

    def _read_source(self, source: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
        (found,), download_error = self._locate(
            lambda: [self._find(source)], lambda _: download_cifar10(self.raw_dir),
            "the archive is")
        if found is None:
            raise DataNotFoundError(
                f"CIFAR10 {self.split}: neither {CIFAR10_ARCHIVE} nor {CIFAR10_FOLDER}/"
                f"{{{','.join(CIFAR10_BATCHES[source])}}} found; {download_error}. Looked in: "
                f"{self._looked()}. To get the data, pass data_dir=... (--data-dir) or set "
                f"${DATA_ENV} to a folder whose CIFAR10/ holds {CIFAR10_ARCHIVE} (or its extracted "
                f"{CIFAR10_FOLDER}/), or allow the download of {CIFAR10_URL} (needs network; "
                f"download=True and ${OFFLINE_ENV} unset).")
        if found.is_file() and md5_of(found) != CIFAR10_MD5:
            raise ValueError(f"CIFAR10: {found} has md5 {md5_of(found)}, expected {CIFAR10_MD5}")
        images, labels = read_cifar10(found, source)
        return images, labels, [str(found)]


def _superpixel_fields(name: str, node_dim: int, data: Data) -> Data:
    """A graph of the published ``name`` superpixel files in the generated fields: ``x``
    ``FloatTensor [N, node_dim]`` = mean colour then the centroid (``cat(x, pos)`` when PyG
    stores the centroid in ``pos``), ``pos``, ``edge_attr`` ``FloatTensor [E, 1]``, ``y``
    ``LongTensor [1]``.

    Raises:
        DataError: a field is missing, or the node features are not ``node_dim`` wide.
    """
    require_fields(data, name, "x", "edge_index", "edge_attr", "y")
    n = int(data.num_nodes)
    x = data.x.float().reshape(n, -1)
    pos = data.get("pos")
    if x.size(1) != node_dim and pos is not None:
        x = torch.cat([x, pos.float().reshape(n, -1)], dim=1)  # colour, then the centroid
    if x.size(1) != node_dim:
        raise DataError(f"{name}: expected {node_dim} node features (mean colour and "
                        f"centroid), got x {list(data.x.shape)} and pos "
                        f"{None if pos is None else list(pos.shape)}")
    out = Data(x=x, edge_index=data.edge_index.long(),
               edge_attr=data.edge_attr.float().reshape(-1, 1),
               y=data.y.reshape(1).long())
    out.pos = x[:, -2:].clone()
    return out


def mnist_fields(data: Data) -> Data:
    """MNIST's published graph in the generated fields (``x`` ``[N, 3]``; see
    :func:`_superpixel_fields`), for :class:`~graph_transformers.data.published.ToBenchmarkFields`.

    Raises:
        DataError: a field is missing or of the wrong width.
    """
    return _superpixel_fields("MNIST", MNISTSuperpixels.node_dim, data)


def cifar10_fields(data: Data) -> Data:
    """CIFAR10's published graph in the generated fields (``x`` ``[N, 5]``; see
    :func:`_superpixel_fields`), for :class:`~graph_transformers.data.published.ToBenchmarkFields`.

    Raises:
        DataError: a field is missing or of the wrong width.
    """
    return _superpixel_fields("CIFAR10", CIFAR10Superpixels.node_dim, data)


# --------------------------------------------------------------------------------------------
# Loader and registry entries
# --------------------------------------------------------------------------------------------
_CLASSES: dict[str, type[_SuperpixelDataset]] = {"MNIST": MNISTSuperpixels,
                                                 "CIFAR10": CIFAR10Superpixels}


def load_superpixels(
    root: PathLike, name: str, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, source: str = "generated",
    data_dir: PathLike | None = None, max_images: int | None = None, num_workers: int = 0,
) -> GNNBenchmark | _SuperpixelDataset:
    """One split of ``name`` (``"MNIST"`` or ``"CIFAR10"``; ``data.name: mnist`` /
    ``cifar10``): the published ``<NAME>_v2.pt`` read by PyG's ``GNNBenchmarkDataset``
    (``source="canonical"``, under ``root/canonical/<NAME>/``) or the superpixel graphs rebuilt
    from the images (``source="generated"``, :class:`MNISTSuperpixels` /
    :class:`CIFAR10Superpixels`, cached under ``root/<class name>/``; needs scikit-image;
    ``max_images`` and ``num_workers`` apply to this one). The other arguments:
    :func:`~graph_transformers.data.published.published_or_generated`.

    Raises:
        KeyError: a ``name`` other than ``"MNIST"`` / ``"CIFAR10"``.
        DataNotFoundError: the files are neither local nor downloadable.
        MissingDependencyError: ``source="generated"`` without scikit-image.
    """
    cls = _CLASSES[name]
    return published_or_generated(
        name, source, root, split, transform, pre_transform, force_reload, data_dir=data_dir,
        generated=cls, published=partial(GNNBenchmark, name=name), folder=cls.__name__,
        shared_data_dir=True,
        requires=("skimage", f"the {name} superpixel dataset"), max_images=max_images,
        num_workers=num_workers)


def _spec(name: str) -> DatasetSpec:
    cls = _CLASSES[name]
    return DatasetSpec(name.lower(), "graph", "classification", cls.num_classes, "accuracy",
                       partial(load_superpixels, name=name), node_dim=cls.node_dim,
                       edge_dim=cls.edge_dim, source="reconstructed", published=True,
                       params=("data_dir", "max_images", "num_workers"))


#: ``data.name: mnist``
MNIST_SPEC = _spec("MNIST")
#: ``data.name: cifar10``
CIFAR10_SPEC = _spec("CIFAR10")
