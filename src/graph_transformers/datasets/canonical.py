r"""The published benchmark files, read by the loaders the community maintains: the shared
machinery (finding, unpacking, downloading the files; :class:`ToBenchmarkFields`;
:class:`PublishedFiles`) and PyG's ``GNNBenchmarkDataset`` (:class:`GNNBenchmark`), which six
benchmarks of three families share. Each benchmark's own loader (``load_pattern``, ``load_zinc``,
...) takes ``source="canonical"`` to read these files, ``source="generated"`` for this library's
version.

Where the published files of a benchmark can be had — in the data directory, or by a download
that succeeds — they are read with the well-kept loaders instead of this library's generators and
reconstructions:

* PyG's :class:`~torch_geometric.datasets.GNNBenchmarkDataset` for PATTERN, CLUSTER, MNIST,
  CIFAR10, TSP and CSL (:class:`GNNBenchmark`);
* PyG's :class:`~torch_geometric.datasets.ZINC` (``subset=True``) for ZINC-12k
  (:class:`~graph_transformers.datasets.molecules.zinc.CanonicalZINC`);
* OGB's ``PygGraphPropPredDataset`` with its official split and ``Evaluator`` for
  ``ogbg-molhiv`` (:mod:`graph_transformers.datasets.molecules.ogb`, needs the ``[ogb]`` extra).

Which one a run uses is ``data.source`` (:data:`SOURCES`), applied by
:func:`graph_transformers.data.registry.load_splits`: ``auto`` (default) reads the published files
when they can be had and otherwise falls back to the generator / reconstruction with a WARNING
naming what was missing; ``canonical`` requires the published files (else
:class:`~graph_transformers.data.cache.DataNotFoundError`); ``generated`` always uses the
generator. ``metrics.json`` records the outcome under ``data_source``.

**Where the files are looked for** (``DATA_DIR`` = ``--data-dir`` / ``$GRAPH_TRANSFORMERS_DATA``,
``CACHE`` = the cache directory; the first complete match wins; files are read in place, never
copied or modified):

* PATTERN, CLUSTER, MNIST, CIFAR10, TSP: ``<NAME>_v2.pt`` (e.g. ``PATTERN_v2.pt``) in
  ``DATA_DIR/<NAME>/raw/`` or ``DATA_DIR/<NAME>/``; or the archive ``<NAME>_v2.zip`` there; or
  PyG's processed ``DATA_DIR/<NAME>/processed/{train,val,test}_data.pt``;
* CSL: ``graphs_Kary_Deterministic_Graphs.pkl`` + ``y_Kary_Deterministic_Graphs.pt`` in
  ``DATA_DIR/CSL/raw/`` or ``DATA_DIR/CSL/``; or benchmarking-gnns' ``CSL.zip`` there; or PyG's ``DATA_DIR/CSL/processed/data.pt``;
* ZINC: ``{train,val,test}.pickle`` + ``{train,val,test}.index`` in ``DATA_DIR/ZINC/raw/`` or
  ``DATA_DIR/ZINC/``, the pickles also in ``DATA_DIR/ZINC/molecules/`` (the benchmark's
  ``molecules.zip`` extracted); or PyG's ``DATA_DIR/ZINC/subset/processed/{train,val,test}.pt``;
* ogbg-molhiv: ``DATA_DIR/ogbg_molhiv/`` as OGB unpacks it: ``RELEASE_v1.txt``,
  ``raw/{edge,edge-feat,node-feat,num-node-list,num-edge-list,graph-label}.csv.gz`` and
  ``split/scaffold/{train,valid,test}.csv.gz`` (or ``split_dict.pt``); ogbg-molpcba the same
  in ``DATA_DIR/ogbg_molpcba/``.

This is PyG's own layout with ``root = DATA_DIR`` (``GNNBenchmarkDataset(root=DATA_DIR,
name=...)``, ``ZINC(root=DATA_DIR / "ZINC", subset=True)``, OGB's ``root = DATA_DIR``), so a
folder that PyG or OGB downloaded into can be used as it is. When nothing is found, the files are
downloaded from PyG's / OGB's URLs into ``CACHE/canonical/<NAME>/`` (socket timeout
:data:`~graph_transformers.data.cache.DOWNLOAD_TIMEOUT` seconds per operation, so a closed network
fails in seconds: PyG's and OGB's own download helpers have no timeout and are never called),
unless ``$GRAPH_TRANSFORMERS_OFFLINE`` is set.

**Fields.** A graph of the published files is converted by :class:`ToBenchmarkFields` (a
pre-transform, part of the cache key) into exactly the fields the generated version has, so a
model config works with either source:

* PATTERN / CLUSTER: ``x`` ``LongTensor [N, 1]`` node type (the published one-hot rows
  ``[N, 3]`` / ``[N, 7]`` or type ids are both accepted), ``edge_index``, ``y`` ``LongTensor
  [N]``; the constant edge feature is dropped (the generated sets have none);
* CSL: ``x`` ``LongTensor [41, 1]`` of zeros, ``edge_index`` (self-loops removed by PyG),
  ``y`` ``LongTensor [1]``; the split is the benchmark's 5 folds (``data.fold``);
* MNIST / CIFAR10: ``x`` ``FloatTensor [N, 3]`` / ``[N, 5]`` = mean colour then the centroid
  (``cat(x, pos)`` when PyG stores the centroid in ``pos``), ``pos``, ``edge_attr``
  ``FloatTensor [E, 1]``, ``y`` ``LongTensor [1]``;
* TSP: ``x`` ``FloatTensor [N, 2]``, ``edge_attr`` ``FloatTensor [E, 1]`` (edge length), ``y``
  ``LongTensor [E]``;
* ZINC: ``x`` ``LongTensor [N, 1]`` atom type, ``edge_attr`` ``LongTensor [E]`` bond type,
  ``y`` ``FloatTensor [1]`` (extra fields of a processed file are dropped);
* ogbg-molhiv: ``x`` ``LongTensor [N, 9]``, ``edge_attr`` ``LongTensor [E, 3]`` (OGB's
  featurization, the same columns as
  :mod:`graph_transformers.datasets.molecules.moleculenet`), ``y`` ``FloatTensor [1, 1]``;
  ogbg-molpcba the same with ``y`` ``FloatTensor [1, 128]`` (NaN = missing label).

Every canonical split records ``provenance = {split: "exact"}`` (the published graphs) and
``canonical_info`` (loader and files), which ``metrics.json`` carries.
"""
from __future__ import annotations

import functools
import hashlib
import http.client
import logging
import os
import os.path as osp
import shutil
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.io import fs
from torch_geometric.datasets import GNNBenchmarkDataset
from torch_geometric.transforms import BaseTransform, Compose

from ..errors import DataError
from ..fileio import atomic_writer
from ..data.cache import (CheckedInMemoryDataset, DataNotFoundError, pre_transform_key,
                          resolve_cache_dir, resolve_data_dir)
from ..data.download import OFFLINE_ENV, fetch_url, offline
from .._optional import require
from ..data.generated import SPLITS, PathLike, Transform, check_source, check_split
from ..data.legacy import accepts_old_order

__all__ = [
    "BENCHMARK_NAMES",
    "OGB_DATASETS",
    "SOURCES",
    "GNNBenchmark",
    "PublishedFiles",
    "ToBenchmarkFields",
    "canonical_root",
    "dir_with",
    "download_blocked",
    "files_tag",
    "link_together",
    "locate_ogb",
    "looked",
    "ogb_folder",
    "read_pyg_processed",
    "with_fields",
]

log = logging.getLogger(__name__)

#: values of ``data.source``: ``auto`` = the published files when they can be had, else the
#: generator (logged); ``canonical`` = the published files or an error; ``generated`` = always
#: this library's generator / reconstruction.
SOURCES: tuple[str, ...] = ("auto", "canonical", "generated")

#: the datasets of PyG's :class:`~torch_geometric.datasets.GNNBenchmarkDataset`
BENCHMARK_NAMES: tuple[str, ...] = tuple(GNNBenchmarkDataset.names)

#: bumped whenever :class:`ToBenchmarkFields` changes what it produces (it is in the cache key)
_FIELDS_VERSION = 1


def canonical_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Where published files are downloaded to and processed: ``<cache>/canonical``."""
    return resolve_cache_dir(cache_dir) / "canonical"


# --------------------------------------------------------------------------------------------
# Field conversion
# --------------------------------------------------------------------------------------------
_NODE_TYPES = {"PATTERN": 3, "CLUSTER": 7}
_NODE_DIM = {"MNIST": 3, "CIFAR10": 5}


def _node_types(x: Tensor | None, num_types: int, who: str) -> Tensor:
    """Categorical node features ``[N, 1]`` from type ids (``[N]`` / ``[N, 1]``) or one-hot rows
    ``[N, num_types]``."""
    if x is None:
        raise DataError(f"{who}: a graph has no node features x")
    if x.dim() == 2 and x.size(1) == num_types:
        if not bool(((x == 0) | (x == 1)).all() and (x.sum(1) == 1).all()):
            raise DataError(f"{who}: node features [N, {num_types}] are not one-hot rows")
        return x.argmax(1).view(-1, 1)
    if x.dim() == 1 or (x.dim() == 2 and x.size(1) == 1):
        t = x.reshape(-1)
        if t.is_floating_point() and not bool((t == t.round()).all()):
            raise DataError(f"{who}: node type ids must be integers")
        t = t.long()
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= num_types):
            raise DataError(f"{who}: node types must lie in 0..{num_types - 1}, got "
                            f"{int(t.min())}..{int(t.max())}")
        return t.view(-1, 1)
    raise DataError(f"{who}: node features of shape {list(x.shape)} are neither type ids [N] / "
                    f"[N, 1] nor one-hot rows [N, {num_types}]")


def _require(data: Data, who: str, *keys: str) -> None:
    missing = [k for k in keys if data.get(k) is None]
    if missing:
        raise DataError(f"{who}: a graph of the published files has no {', '.join(missing)} "
                        f"(fields: {sorted(data.keys())})")


def _sbm_fields(name: str) -> Callable[[Data], Data]:
    def convert(data: Data) -> Data:
        _require(data, name, "x", "edge_index", "y")
        return Data(x=_node_types(data.x, _NODE_TYPES[name], name),
                    edge_index=data.edge_index.long(), y=data.y.reshape(-1).long())
    return convert


def _csl_fields(data: Data) -> Data:
    _require(data, "CSL", "edge_index", "y")
    n = int(data.num_nodes)
    return Data(x=torch.zeros(n, 1, dtype=torch.long), edge_index=data.edge_index.long(),
                y=torch.as_tensor(data.y).reshape(1).long(), num_nodes=n)


def _superpixel_fields(name: str) -> Callable[[Data], Data]:
    def convert(data: Data) -> Data:
        _require(data, name, "x", "edge_index", "edge_attr", "y")
        n = int(data.num_nodes)
        x = data.x.float().reshape(n, -1)
        pos = data.get("pos")
        if x.size(1) != _NODE_DIM[name] and pos is not None:
            x = torch.cat([x, pos.float().reshape(n, -1)], dim=1)  # colour, then the centroid
        if x.size(1) != _NODE_DIM[name]:
            raise DataError(f"{name}: expected {_NODE_DIM[name]} node features (mean colour and "
                            f"centroid), got x {list(data.x.shape)} and pos "
                            f"{None if pos is None else list(pos.shape)}")
        out = Data(x=x, edge_index=data.edge_index.long(),
                   edge_attr=data.edge_attr.float().reshape(-1, 1),
                   y=data.y.reshape(1).long())
        out.pos = x[:, -2:].clone()
        return out
    return convert


def _tsp_fields(data: Data) -> Data:
    _require(data, "TSP", "x", "edge_index", "edge_attr", "y")
    if data.x.dim() != 2 or data.x.size(1) != 2:
        raise DataError(f"TSP: expected node coordinates [N, 2], got {list(data.x.shape)}")
    return Data(x=data.x.float(), edge_index=data.edge_index.long(),
                edge_attr=data.edge_attr.float().reshape(-1, 1), y=data.y.reshape(-1).long())


def _zinc_fields(data: Data) -> Data:
    _require(data, "ZINC", "x", "edge_index", "edge_attr", "y")
    return Data(x=data.x.long().reshape(-1, 1), edge_index=data.edge_index.long(),
                edge_attr=data.edge_attr.long().reshape(-1), y=data.y.float().reshape(1))


def _ogb_mol_fields(data: Data, name: str = "ogbg-molhiv") -> Data:
    _require(data, name, "x", "edge_index", "edge_attr", "y")
    if data.x.dim() != 2 or data.x.size(1) != 9 or data.edge_attr.size(-1) != 3:
        raise DataError(f"{name}: expected OGB's 9 atom / 3 bond feature columns, got x "
                        f"{list(data.x.shape)} and edge_attr {list(data.edge_attr.shape)}")
    return Data(x=data.x.long(), edge_index=data.edge_index.long(),
                edge_attr=data.edge_attr.long(), y=data.y.float().reshape(1, -1),
                num_nodes=int(data.num_nodes))


_CONVERTERS: dict[str, Callable[[Data], Data]] = {
    "PATTERN": _sbm_fields("PATTERN"),
    "CLUSTER": _sbm_fields("CLUSTER"),
    "CSL": _csl_fields,
    "MNIST": _superpixel_fields("MNIST"),
    "CIFAR10": _superpixel_fields("CIFAR10"),
    "TSP": _tsp_fields,
    "ZINC": _zinc_fields,
    "ogbg-molhiv": _ogb_mol_fields,
    # y [1, 128], NaN = missing label (OGB stores molpcba's labels as float32 for that)
    "ogbg-molpcba": functools.partial(_ogb_mol_fields, name="ogbg-molpcba"),
}


class ToBenchmarkFields(BaseTransform):
    r"""Converts a graph of a benchmark's published files into the fields this library's models
    expect, which are those of its generated / reconstructed version (see the module docstring
    for each dataset). Fields the models do not use are dropped.

    Args:
        dataset (str): ``"PATTERN"``, ``"CLUSTER"``, ``"CSL"``, ``"MNIST"``, ``"CIFAR10"``,
            ``"TSP"``, ``"ZINC"``, ``"ogbg-molhiv"`` or ``"ogbg-molpcba"``.

    Raises:
        ValueError: an unknown dataset.
        DataError: (when called) a graph whose fields do not have the published layout; the
            message names the dataset, the field and its shape.
    """

    def __init__(self, dataset: str) -> None:
        if dataset not in _CONVERTERS:
            raise ValueError(f"ToBenchmarkFields: unknown dataset {dataset!r}; known: "
                             f"{sorted(_CONVERTERS)}")
        self.dataset = dataset

    def forward(self, data: Data) -> Data:
        return _CONVERTERS[self.dataset](data)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.dataset!r}, v{_FIELDS_VERSION})"


def with_fields(dataset: str, pre_transform: Callable | None) -> Compose:
    """:class:`ToBenchmarkFields` then ``pre_transform`` (the encodings), as one pre-transform."""
    steps: list[Callable] = [ToBenchmarkFields(dataset)]
    if pre_transform is not None:
        steps.append(pre_transform)
    return Compose(steps)


# --------------------------------------------------------------------------------------------
# Finding, unpacking and downloading the published files
# --------------------------------------------------------------------------------------------
def read_pyg_processed(path: str | os.PathLike) -> list[Data]:
    """The graphs of a processed file written by a PyG ``InMemoryDataset``: the current format
    (``(dict, slices, class)``), PyG 2's ``(Data, slices)``, and PyG 1's pickled ``Data`` (whose
    plain attributes are taken over), read with PyG's ``fs.torch_load``.

    Raises:
        DataError: the file is not a PyG processed file.
    """
    out = fs.torch_load(str(path))
    if not isinstance(out, tuple) or len(out) not in (2, 3):
        raise DataError(f"{path} is not a processed file of a PyG InMemoryDataset")
    data, slices = out[0], out[1]
    if isinstance(data, dict):
        data = (out[2] if len(out) == 3 else Data).from_dict(data)
    elif "_store" not in vars(data):  # pickled by PyG 1.x: the fields are plain attributes
        data = Data.from_dict({k: v for k, v in vars(data).items()
                               if not k.startswith("_") and v is not None})
    shell = InMemoryDataset()
    shell.data, shell.slices = data, slices
    return [shell.get(i) for i in range(len(shell))]


def files_tag(paths: Sequence[Path]) -> str:
    """A short hash of the files' names and sizes, part of a processed folder's name, so that
    different published files (another data directory, a replaced file) never share a cache."""
    text = ";".join(f"{p.name}:{p.stat().st_size}" for p in sorted(paths))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def dir_with(dirs: Sequence[Path], names: Sequence[str]) -> Path | None:
    """The first directory of ``dirs`` holding every file of ``names``."""
    for d in dirs:
        if all((d / n).is_file() for n in names):
            return d
    return None


def _extract(archive: Path, names: Sequence[str], dest: Path) -> None:
    """Extracts the members of ``archive`` whose file names are ``names`` (in any folder but
    macOS' ``__MACOSX``) into ``dest``, each written atomically.

    Raises:
        DataNotFoundError: the archive is unreadable or lacks one of ``names``.
    """
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as err:
        raise DataNotFoundError(f"{archive} is not a readable zip archive: {err}") from None
    with zf:
        members = {PurePosixPath(m).name: m for m in zf.namelist()
                   if "__MACOSX" not in m and not m.endswith("/")}
        missing = [n for n in names if n not in members]
        if missing:
            raise DataNotFoundError(f"{archive} holds no {', '.join(missing)}")
        for n in names:
            with zf.open(members[n]) as src, atomic_writer(dest / n, "wb") as f:
                shutil.copyfileobj(src, f, length=1 << 20)


def download_blocked(download: bool) -> str:
    """Why no download may be tried (``""`` when one may)."""
    if offline():
        return f"download disabled (${OFFLINE_ENV} is set)"
    return "" if download else "download disabled (download=False)"


def _download_archive(url: str, archive_name: str, names: Sequence[str], dest: Path,
                      download: bool) -> str:
    """Downloads ``url`` (a zip) and extracts ``names`` into ``dest``; returns ``""`` on
    success, else why not (``"download disabled"``, ``"download failed: ..."``)."""
    blocked = download_blocked(download)
    if blocked:
        return blocked
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / archive_name
    try:
        fetch_url(url, archive)
        _extract(archive, names, dest)
    except (OSError, http.client.HTTPException) as err:  # URLError, timeouts, a bad archive
        return f"download of {url} failed: {err}"
    finally:
        archive.unlink(missing_ok=True)
    return ""


def looked(dirs: Sequence[Path]) -> str:
    return ", ".join(str(d) for d in dirs) if dirs else "(no data directory: pass --data-dir)"


def link_together(files: dict[str, Path], dest: Path) -> Path:
    """A folder holding every file of ``files`` under its key: their common folder, or ``dest``
    filled with symbolic links (copies where links cannot be made)."""
    parents = {p.parent for p in files.values()}
    if len(parents) == 1:
        return parents.pop()
    dest.mkdir(parents=True, exist_ok=True)
    for name, src in files.items():
        link = dest / name
        if link.is_symlink() or link.exists():
            if link.resolve() == src.resolve():
                continue
            link.unlink()
        try:
            link.symlink_to(src.resolve())
        except OSError:
            with open(src, "rb") as s, atomic_writer(link, "wb") as f:
                shutil.copyfileobj(s, f, length=1 << 20)
    return dest


# --------------------------------------------------------------------------------------------
# PyG's GNNBenchmarkDataset
# --------------------------------------------------------------------------------------------
def _benchmark_files(name: str) -> tuple[list[str], str, str, list[str]]:
    """(raw file names, archive name, download URL, PyG processed file names) of a
    :class:`~torch_geometric.datasets.GNNBenchmarkDataset` dataset."""
    url = GNNBenchmarkDataset.urls[name]
    if name == "CSL":
        return (["graphs_Kary_Deterministic_Graphs.pkl", "y_Kary_Deterministic_Graphs.pt"],
                "CSL.zip", url, ["data.pt"])
    stem = url.rsplit("/", 1)[-1][:-4]  # PATTERN_v2
    return [f"{stem}.pt"], f"{stem}.zip", url, [f"{s}_data.pt" for s in SPLITS]


def _locate_benchmark(name: str, data_dir: Path | None, download_dir: Path,
                      download: bool) -> tuple[str, Path]:
    """``("raw", folder)`` holding the raw files or ``("processed", folder)`` holding PyG's
    processed files of ``name``; unpacks an archive or downloads when needed.

    Raises:
        DataNotFoundError: nothing found and no download; the message names the files, where
            they were looked for and the URL.
    """
    raw, archive, url, processed = _benchmark_files(name)
    base = [data_dir / name / "raw", data_dir / name] if data_dir is not None else []
    found = dir_with(base + [download_dir], raw)
    if found is not None:
        return "raw", found
    for d in base:
        if (d / archive).is_file():
            _extract(d / archive, raw, download_dir)
            return "raw", download_dir
    if data_dir is not None and dir_with([data_dir / name / "processed"], processed):
        return "processed", data_dir / name / "processed"
    why = _download_archive(url, archive, raw, download_dir, download)
    if not why:
        return "raw", download_dir
    raise DataNotFoundError(
        f"{name}: the published files ({' + '.join(raw)}, or {archive}, or PyG's "
        f"processed/{{{','.join(processed)}}}) were not found; {why}. Looked in: "
        f"{looked(base + [download_dir])}. To use them, put them in DATA_DIR/{name}/raw/ "
        f"(PyG's layout, GNNBenchmarkDataset(root=DATA_DIR)), or let them be downloaded from "
        f"{url}")


class PublishedFiles(CheckedInMemoryDataset):
    """What :class:`GNNBenchmark` and ZINC's
    :class:`~graph_transformers.datasets.molecules.zinc.CanonicalZINC` share: a PyG class that
    reads the published files in place from ``self._found`` (its raw files, or PyG's processed
    files when ``self._from_processed``), never downloads through PyG's hook (the ``_locate_*``
    functions find or download the files, with a timeout), and records
    ``provenance = {split: "exact"}`` and ``canonical_info``. Subclasses set ``_found`` and
    ``_from_processed`` before ``__init__`` of this class runs, and name PyG's processed files
    in :meth:`_pyg_processed_files`."""

    _found: Path
    _from_processed: bool

    def _record(self, split: str, loader: str) -> None:
        """Sets ``split``, ``provenance`` and ``canonical_info`` (``loader``: PyG's class)."""
        self.split = split
        self.provenance: dict[str, str] = {split: "exact"}
        self.canonical_info: dict[str, Any] = {
            "loader": loader,
            "files": str(self._found),
            "read_from": "PyG processed files" if self._from_processed else "raw files",
        }

    @property
    def raw_dir(self) -> str:
        return str(self._found)

    @property
    def has_download(self) -> bool:
        return False

    def _pyg_processed_files(self) -> list[str]:
        """PyG's processed files in ``self._found``, in :attr:`processed_paths` order; each
        published-file dataset (GNNBenchmark, CanonicalZINC) names its own.

        Raises:
            NotImplementedError: for a subclass that does not name them.
        """
        raise NotImplementedError(f"{type(self).__name__} must name PyG's processed files "
                                  "(_pyg_processed_files)")

    def process(self) -> None:
        if not self._from_processed:
            super().process()  # PyG's reader of the raw files
            return
        for src, dst in zip(self._pyg_processed_files(), self.processed_paths):
            graphs = read_pyg_processed(self._found / src)
            if self.pre_filter is not None:
                graphs = [d for d in graphs if self.pre_filter(d)]
            self.save([self.pre_transform(d) for d in graphs], dst)


class GNNBenchmark(PublishedFiles, GNNBenchmarkDataset):
    r"""One split of a benchmark of Dwivedi et al., "Benchmarking Graph Neural Networks" (PATTERN,
    CLUSTER, MNIST, CIFAR10, TSP, CSL), read from its published files by PyG's
    :class:`~torch_geometric.datasets.GNNBenchmarkDataset`.

    PyG's class does the reading (``process``: the raw ``<NAME>_v2.pt`` / the CSL pickles); this
    subclass reads the raw files in place from where :mod:`graph_transformers.datasets.canonical`
    finds them, converts every graph with :class:`ToBenchmarkFields` before ``pre_transform``,
    and writes the processed splits atomically, checksummed, into
    ``root/<NAME>/processed/<pre_transform key>_<files tag>/`` (so each set of encodings, and
    each set of published files, has its own cache).
    PyG's processed files from an earlier PyG run (``DATA_DIR/<NAME>/processed/``) are accepted
    in place of the raw files. CSL has no split in PyG: the benchmark's 5 folds select the
    graphs (``indices``, as :class:`~graph_transformers.datasets.synthetic.csl.CSL`).

    Arguments in PyG's order (``GNNBenchmarkDataset(root, name, split, ...)``); the old order
    ``GNNBenchmark(name, split, data_dir, root, ...)`` still works for one more release, with a
    ``FutureWarning`` (:mod:`graph_transformers.data.legacy`).

    Args:
        root: processing and download folder (default ``canonical_root()``).
        name (str): one of :data:`BENCHMARK_NAMES`.
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        transform, pre_transform: as in PyG (``pre_transform`` runs after the field conversion).
        force_reload (bool): process again.
        data_dir: where the published files are looked for (default
            ``$GRAPH_TRANSFORMERS_DATA``; see the module docstring for the layout).
        indices (sequence of int, optional): the graphs of the published file to keep, in
            this order: CSL, which PyG stores unsplit, is split by its loader
            (:func:`~graph_transformers.datasets.synthetic.csl.load_csl`) with the benchmark's
            folds (required for CSL, ignored by the others).
        download (bool): allow downloading from PyG's URL when the files are not local (also
            disabled by ``$GRAPH_TRANSFORMERS_OFFLINE``).

    Attributes:
        provenance (dict): ``{split: "exact"}``.
        canonical_info (dict): the loader and the folder the published files were read from.

    Raises:
        ValueError: an unknown name or split.
        DataNotFoundError: the published files are neither local nor downloadable.
        DataError: a graph whose fields do not have the published layout.
    """

    @accepts_old_order(("name", "split", "data_dir", "root", "transform", "pre_transform"),
                       lambda args, kwargs: "name" not in kwargs and args[0] in BENCHMARK_NAMES,
                       "GNNBenchmark(root, name, split, data_dir=...)")
    def __init__(
        self, root: PathLike | None = None, name: str | None = None, split: str = "train",
        transform: Transform = None, pre_transform: Transform = None, force_reload: bool = False,
        *, data_dir: PathLike | None = None, indices: Sequence[int] | None = None,
        download: bool = True,
    ) -> None:
        if name not in BENCHMARK_NAMES:
            raise ValueError(f"GNNBenchmark: unknown name {name!r}; known: {BENCHMARK_NAMES}")
        check_split(f"GNNBenchmark {name}", split)
        if name != "CSL":
            indices = None
        elif indices is None:
            raise ValueError("GNNBenchmark(name='CSL') needs indices: PyG stores CSL unsplit; "
                             "load_csl(source='canonical', fold=...) passes a benchmark fold's")
        base = Path(root).expanduser() if root is not None else canonical_root()
        data = resolve_data_dir(data_dir)
        kind, self._found = _locate_benchmark(name, data, base / name / "raw", download)
        self._from_processed = kind == "processed"
        pre = with_fields(name, pre_transform)
        files = _benchmark_files(name)[3 if self._from_processed else 0]
        self._key = f"{pre_transform_key(pre)}_{files_tag([self._found / f for f in files])}"
        # PyG has a single CSL file (no split): every split loads it, the fold selects graphs
        super().__init__(str(base), name, "train" if name == "CSL" else split, transform, pre,
                         force_reload=force_reload)
        if indices is not None:
            self.data, self.slices = self.collate([self.get(i) for i in indices])
        self._record(split, f"torch_geometric.datasets.GNNBenchmarkDataset({name!r})")

    @property
    def processed_dir(self) -> str:
        return osp.join(self.root, self.name, "processed", self._key)

    def _pyg_processed_files(self) -> list[str]:
        return _benchmark_files(self.name)[3]

    def __repr__(self) -> str:
        return f"{self.name}({len(self)}, split={self.split!r}, published files)"


def published_or_generated(
    name: str, source: str, root: PathLike, split: str, transform: Transform,
    pre_transform: Transform, force_reload: bool, *, data_dir: PathLike | None,
    generated: Callable[..., InMemoryDataset], folder: str | None = None,
    published: Callable[..., InMemoryDataset] | None = None,
    indices: Callable[[str], Sequence[int]] | None = None,
    requires: tuple[str, str] | None = None, shared_data_dir: bool = False, **options: Any,
) -> InMemoryDataset:
    """The body of a loader with both forms: for ``source="canonical"`` the published files of
    ``name`` through ``published`` (default :class:`GNNBenchmark` of ``name``; ``indices(split)``
    selects its graphs, CSL's folds) under ``canonical_root(root)``, else
    ``generated(root=root/folder, split=..., transform=..., pre_transform=...,
    force_reload=..., **options)`` (``folder`` defaults to ``name``; ``data_dir=data_dir`` too
    where ``shared_data_dir``, a generated form read from raw files) once the optional module
    of ``requires = (module, feature)`` is importable.

    The arguments every such loader shares (``load_pattern``, ``load_csl``, ``load_zinc``, ...):

    Args:
        root: the cache directory.
        split, transform, pre_transform, force_reload: as in PyG.
        source: ``"canonical"`` (the published files) or ``"generated"`` (this library's).
        data_dir: where the published files are looked for (``data.data_dir``).

    Raises:
        ValueError: an unknown ``source`` (:func:`check_source`) or ``split``.
        DataNotFoundError: ``source="canonical"`` and the published files cannot be had.
        MissingDependencyError: the generated form without its ``requires``.
    """
    if check_source(name, source):
        if published is None:
            published = functools.partial(GNNBenchmark, name=name)
        selected = {}
        if indices is not None:
            check_split(f"GNNBenchmark {name}", split)  # before indices() reads the split
            selected["indices"] = indices(split)
        return published(canonical_root(root), split=split, data_dir=data_dir,
                         transform=transform, pre_transform=pre_transform,
                         force_reload=force_reload, **selected)
    if requires is not None:
        require(*requires)
    if shared_data_dir:
        options["data_dir"] = data_dir
    return generated(root=str(Path(root) / (folder or name)), split=split, transform=transform,
                     pre_transform=pre_transform, force_reload=force_reload, **options)


# --------------------------------------------------------------------------------------------
# OGB (the dataset class is in graph_transformers.datasets.molecules.ogb: it needs ogb)
# --------------------------------------------------------------------------------------------
#: OGB graph datasets read from their published files: name → (folder, download URL, the folder
#: inside the archive)
OGB_DATASETS: dict[str, tuple[str, str, str]] = {
    "ogbg-molhiv": ("ogbg_molhiv",
                    "http://snap.stanford.edu/ogb/data/graphproppred/csv_mol_download/hiv.zip",
                    "hiv"),
    "ogbg-molpcba": ("ogbg_molpcba",
                     "http://snap.stanford.edu/ogb/data/graphproppred/csv_mol_download/pcba.zip",
                     "pcba"),
}
_OGB_RAW = ["edge.csv.gz", "edge-feat.csv.gz", "node-feat.csv.gz", "num-node-list.csv.gz",
            "num-edge-list.csv.gz", "graph-label.csv.gz"]


def _ogb_missing(folder: Path) -> list[str]:
    """What OGB's loader needs and ``folder`` lacks (the version marker, the raw CSVs, the
    official split)."""
    need = ["RELEASE_v1.txt"] + [f"raw/{f}" for f in _OGB_RAW]
    missing = [n for n in need if not (folder / n).is_file()]
    split = folder / "split" / "scaffold"
    if not (split / "split_dict.pt").is_file():
        missing += [f"split/scaffold/{s}.csv.gz" for s in ("train", "valid", "test")
                    if not (split / f"{s}.csv.gz").is_file()]
    return missing


def ogb_folder(root: Path, folder: str) -> Path:
    """The folder OGB's loader reads under ``root`` (it prefers an older ``<folder>_pyg``)."""
    return root / f"{folder}_pyg" if (root / f"{folder}_pyg").is_dir() else root / folder


def locate_ogb(name: str, data_dir: Path | None, download_root: Path, download: bool) -> Path:
    """The OGB root (the folder holding ``ogbg_molhiv/``) with the published files of ``name``:
    ``data_dir`` (OGB's own layout with ``root = DATA_DIR``), else ``download_root``, downloading
    OGB's archive there when allowed.

    Raises:
        ValueError: an unknown name.
        DataNotFoundError: the files are neither local nor downloadable; the message names what
            is missing, where it looked and the URL.
    """
    if name not in OGB_DATASETS:
        raise ValueError(f"unknown OGB dataset {name!r}; known: {sorted(OGB_DATASETS)}")
    folder, url, inner = OGB_DATASETS[name]
    roots = ([data_dir] if data_dir is not None else []) + [download_root]
    problems = []
    for r in roots:
        d = ogb_folder(r, folder)
        missing = _ogb_missing(d)
        if not missing:
            return r
        if d.is_dir():
            problems.append(f"{d} lacks {', '.join(missing)}")
    why = download_blocked(download)
    if not why:
        download_root.mkdir(parents=True, exist_ok=True)
        archive = download_root / f"{inner}.zip"
        unpacked = download_root / f".{inner}.{os.getpid()}.unpack"
        try:
            fetch_url(url, archive)
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(unpacked)  # member paths are sanitized by zipfile
            target = download_root / folder
            if target.exists():
                shutil.rmtree(target)
            (unpacked / inner).rename(target)
            if not _ogb_missing(target):
                return download_root
            why = f"the archive {url} lacks {', '.join(_ogb_missing(target))}"
        except (OSError, http.client.HTTPException, zipfile.BadZipFile) as err:
            why = f"download of {url} failed: {err}"
        finally:
            archive.unlink(missing_ok=True)
            shutil.rmtree(unpacked, ignore_errors=True)
    found = f" ({'; '.join(problems)})" if problems else ""
    raise DataNotFoundError(
        f"{name}: OGB's published files were not found{found}; {why}. Looked in: "
        f"{looked([ogb_folder(r, folder) for r in roots])}. To use them, unpack OGB's {url} "
        f"as DATA_DIR/{folder}/ (OGB's layout with root=DATA_DIR: RELEASE_v1.txt, raw/, "
        f"split/scaffold/)")
