r"""The raw files of the superpixel benchmarks
(:mod:`graph_transformers.datasets.images.superpixels`): readers for MNIST's IDX files and
CIFAR-10's python batches, and their md5-checked downloads.

Raw files:

* MNIST: the four IDX files (``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``) in
  ``resolve_data_dir(data_dir) / "MNIST"`` (or its ``raw/`` folder, torchvision's layout), read with
  numpy only (:func:`read_idx`); ``.gz`` files are checked against their md5 (the values
  torchvision lists). Download: :func:`download_mnist` (torchvision's mirrors).
* CIFAR10: ``cifar-10-python.tar.gz`` (md5-checked, read without extracting) or its extracted
  ``cifar-10-batches-py/`` (``data_batch_1..5``, ``test_batch``) in
  ``resolve_data_dir(data_dir) / "CIFAR10"``, read by :func:`read_cifar10`. Download:
  :func:`download_cifar10` (the Toronto page).
"""
from __future__ import annotations

import gzip
import http.client
import io
import math
import os
import pickle
import struct
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...data.cache import DataNotFoundError
from ...data.download import fetch_checked, md5_of

__all__ = [
    "CIFAR10_ARCHIVE",
    "CIFAR10_BATCHES",
    "CIFAR10_FOLDER",
    "CIFAR10_MD5",
    "CIFAR10_URL",
    "MNIST_FILES",
    "MNIST_MD5",
    "MNIST_MIRRORS",
    "download_cifar10",
    "download_mnist",
    "read_cifar10",
    "read_idx",
    "read_mnist",
]

#: MNIST mirrors, in the order torchvision tries them.
MNIST_MIRRORS: tuple[str, ...] = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
#: The four MNIST files: (images, labels) per source file.
MNIST_FILES: dict[str, tuple[str, str]] = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
#: md5 of the gzipped MNIST files (as listed by torchvision; the shared copies match).
MNIST_MD5: dict[str, str] = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
#: The CIFAR-10 python archive and its published md5.
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"
CIFAR10_ARCHIVE = "cifar-10-python.tar.gz"
CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_BATCHES = {
    "train": tuple(f"data_batch_{i}" for i in range(1, 6)),
    "test": ("test_batch",),
}


# --------------------------------------------------------------------------------------------
# Raw-file readers
# --------------------------------------------------------------------------------------------
#: IDX type codes (yann.lecun.com/exdb/mnist): big-endian element types.
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    r"""Read an IDX file (the MNIST format), gzipped (``.gz``) or not, with numpy only.

    Layout: two zero bytes, a type byte (``0x08`` ubyte, ``0x09`` byte, ``0x0B`` short,
    ``0x0C`` int, ``0x0D`` float, ``0x0E`` double), the number of dimensions, then one big-endian
    uint32 per dimension, then the data (big-endian, row-major).

    Args:
        path: the file.

    Returns:
        ``np.ndarray`` of the stored shape, in native byte order.

    Raises:
        ValueError: not valid gzip, a bad header (magic, type code, dimensions) or a data size
            that does not match the header; the message names the file.
        FileNotFoundError: the file does not exist.
    """
    path = Path(path)
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            raw = path.read_bytes()
    except (gzip.BadGzipFile, EOFError, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot read ({e})") from e
    if len(raw) < 4:
        raise ValueError(f"{path}: not an IDX file ({len(raw)} bytes, header needs 4)")
    if raw[0] != 0 or raw[1] != 0:
        raise ValueError(
            f"{path}: not an IDX file (magic number starts with {raw[0]:#04x} {raw[1]:#04x}, "
            "expected 0x00 0x00)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX type code {code:#04x}")
    if ndim < 1:
        raise ValueError(f"{path}: IDX header declares {ndim} dimensions")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header ({len(raw)} bytes, needs {header})")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(_IDX_DTYPES[code])
    expected = math.prod(shape) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(
            f"{path}: IDX header says shape {shape} ({expected} data bytes) but the file has "
            f"{len(raw) - header} data bytes")
    arr = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return arr.astype(dtype.newbyteorder("="))


def read_mnist(images_path: str | os.PathLike,
               labels_path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    r"""Read one MNIST image file and its label file.

    Returns:
        ``(images, labels)``: uint8 ``[n, 28, 28]`` (any ``[n, H, W]`` is accepted) and int64
        ``[n]`` in ``0..9``.

    Raises:
        ValueError: malformed files (see :func:`read_idx`), wrong element types or ranks, labels
            outside 0..9, or different counts.
    """
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise ValueError(f"{images_path}: expected uint8 [n, H, W] images, got {images.dtype} "
                         f"{images.shape}")
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise ValueError(f"{labels_path}: expected uint8 [n] labels, got {labels.dtype} "
                         f"{labels.shape}")
    if len(images) != len(labels):
        raise ValueError(f"{images_path} has {len(images)} images but {labels_path} has "
                         f"{len(labels)} labels")
    if labels.size and labels.max() > 9:
        raise ValueError(f"{labels_path}: labels must be 0..9, found {int(labels.max())}")
    return images, labels.astype(np.int64)


def _latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    """``codecs.encode`` restricted to latin-1: how protocol-2 pickles written by Python 3 store
    ``bytes`` (and numpy array buffers)."""
    if encoding.lower().replace("-", "").replace("_", "") != "latin1" or not isinstance(text, str):
        raise pickle.UnpicklingError(f"refusing codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


class _BatchUnpickler(pickle.Unpickler):
    """Unpickler for the CIFAR-10 python batches. A pickle can run arbitrary code through the
    globals it names, so only what a batch needs is allowed: numpy's array reconstruction
    (``_reconstruct``, ``ndarray``, ``dtype``, ``scalar``, ``_frombuffer``) and latin-1
    ``codecs.encode`` (bytes in protocol-2 pickles written by Python 3). A batch is a dict of
    str/bytes keys to numpy arrays, lists of ints and bytes; anything else is refused."""

    def find_class(self, module: str, name: str) -> Any:
        core = getattr(np, "_core", None) or np.core
        allowed = {
            ("_codecs", "encode"): _latin1_encode,
            ("numpy", "ndarray"): np.ndarray,
            ("numpy", "dtype"): np.dtype,
            ("numpy.core.multiarray", "_reconstruct"): core.multiarray._reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): core.multiarray._reconstruct,
            ("numpy.core.multiarray", "scalar"): core.multiarray.scalar,
            ("numpy._core.multiarray", "scalar"): core.multiarray.scalar,
            ("numpy.core.numeric", "_frombuffer"): core.numeric._frombuffer,
            ("numpy._core.numeric", "_frombuffer"): core.numeric._frombuffer,
        }
        if (module, name) in allowed:
            return allowed[(module, name)]
        raise pickle.UnpicklingError(
            f"CIFAR-10 batch refers to {module}.{name}, which a CIFAR batch never needs; refusing "
            "to load it")


def _load_batch(fileobj: io.BufferedIOBase, where: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        # latin1: the batches are Python-2 pickles; latin1 gives str keys and intact arrays.
        batch = _BatchUnpickler(fileobj, encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as e:
        raise ValueError(f"{where}: not a CIFAR-10 batch ({e})") from e
    if not isinstance(batch, dict):
        raise ValueError(f"{where}: not a CIFAR-10 batch (a {type(batch).__name__}, not a dict)")
    batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    data, labels = batch.get("data"), batch.get("labels")
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or (
            data.shape[1] != 3 * 32 * 32):
        raise ValueError(f"{where}: 'data' must be a uint8 array [n, 3072]")
    labels = np.asarray(labels, dtype=np.int64) if labels is not None else None
    if labels is None or labels.shape != (data.shape[0],):
        raise ValueError(f"{where}: 'labels' must hold one label per image")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(f"{where}: labels must be 0..9")
    # Rows are 1024 red, 1024 green, 1024 blue values of a row-major 32x32 image.
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def read_cifar10(source: str | os.PathLike, split: str) -> tuple[np.ndarray, np.ndarray]:
    r"""Read the CIFAR-10 training (``data_batch_1..5``, in order) or test (``test_batch``) images.

    Args:
        source: ``cifar-10-python.tar.gz`` (read in place, nothing is extracted), its extracted
            ``cifar-10-batches-py`` folder, or a folder containing that folder.
        split (str): ``"train"`` (50,000 images) or ``"test"`` (10,000).

    Returns:
        ``(images, labels)``: uint8 ``[n, 32, 32, 3]`` (RGB) and int64 ``[n]`` in ``0..9``.

    Raises:
        ValueError: unknown split, a batch that is not a CIFAR-10 batch (including one that names
            anything besides numpy's array reconstruction: it is refused, not run), or an archive
            that is not a tar file.
        FileNotFoundError: a batch is missing.
    """
    if split not in CIFAR10_BATCHES:
        raise ValueError(f"CIFAR-10 file split must be 'train' or 'test', got {split!r}")
    names = CIFAR10_BATCHES[split]
    src = Path(source)
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    if src.is_file():
        try:
            with tarfile.open(src, "r:*") as tf:
                members = {Path(m.name).name: m for m in tf.getmembers()
                           if m.isfile() and Path(m.name).parent.name == CIFAR10_FOLDER}
                for name in names:
                    if name not in members:
                        raise FileNotFoundError(f"{src}: no {CIFAR10_FOLDER}/{name} in the archive")
                    f = tf.extractfile(members[name])
                    parts.append(_load_batch(f, f"{src}:{members[name].name}"))
        except tarfile.TarError as e:
            raise ValueError(f"{src}: not a tar archive ({e})") from e
    else:
        folder = src / CIFAR10_FOLDER if (src / CIFAR10_FOLDER).is_dir() else src
        for name in names:
            path = folder / name
            if not path.is_file():
                raise FileNotFoundError(f"no CIFAR-10 batch {path}")
            with open(path, "rb") as f:
                parts.append(_load_batch(f, str(path)))
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


# --------------------------------------------------------------------------------------------
# Downloads
# --------------------------------------------------------------------------------------------
def download_mnist(
    dest_dir: str | os.PathLike,
    files: Sequence[str] | None = None,
    timeout: float = 15.0,
) -> Path:
    r"""Download MNIST's gzipped IDX files from :data:`MNIST_MIRRORS` into ``dest_dir``.

    Each file is checked against :data:`MNIST_MD5`; files already there with the right md5 are
    kept. Mirrors are tried in order.

    Args:
        dest_dir: target folder (created if needed).
        files: names from :data:`MNIST_MD5` (default: all four).
        timeout (float): socket timeout in seconds for connecting and for each read, so a closed
            network fails fast.

    Returns:
        ``dest_dir`` as a :class:`~pathlib.Path`.

    Raises:
        DataNotFoundError: a file could not be fetched from any mirror (the message lists each
            mirror's error).
    """
    dest = Path(dest_dir).expanduser()
    dest.mkdir(parents=True, exist_ok=True)
    for name in files if files is not None else list(MNIST_MD5):
        if name not in MNIST_MD5:
            raise ValueError(f"unknown MNIST file {name!r}; known: {sorted(MNIST_MD5)}")
        path = dest / name
        if path.is_file() and md5_of(path) == MNIST_MD5[name]:
            continue
        errors = []
        for mirror in MNIST_MIRRORS:
            try:
                fetch_checked(mirror + name, path, MNIST_MD5[name], timeout)
                break
            except (OSError, http.client.HTTPException, ValueError) as e:  # URLError is OSError
                errors.append(f"{mirror}{name}: {e}")
        else:
            raise DataNotFoundError(f"MNIST: could not download {name}: " + "; ".join(errors))
    return dest


def download_cifar10(dest_dir: str | os.PathLike, timeout: float = 15.0) -> Path:
    r"""Download ``cifar-10-python.tar.gz`` (:data:`CIFAR10_URL`, about 163 MB) into ``dest_dir``
    and check its md5 (:data:`CIFAR10_MD5`). An existing archive with the right md5 is kept.

    Args:
        dest_dir: target folder (created if needed).
        timeout (float): socket timeout in seconds (connect and each read).

    Returns:
        the archive's path.

    Raises:
        DataNotFoundError: the download failed or the md5 did not match.
    """
    dest = Path(dest_dir).expanduser()
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / CIFAR10_ARCHIVE
    if path.is_file() and md5_of(path) == CIFAR10_MD5:
        return path
    try:
        fetch_checked(CIFAR10_URL, path, CIFAR10_MD5, timeout)
    except (OSError, http.client.HTTPException, ValueError) as e:
        raise DataNotFoundError(f"CIFAR10: could not download {CIFAR10_URL}: {e}") from e
    return path
