r"""The published benchmark files, read by the loaders the community maintains: the machinery
every benchmark with a published form shares (finding, unpacking, downloading the files;
converting their graphs into this library's fields, :class:`ToBenchmarkFields`; the base class
:class:`PublishedFiles`; the body of a loader with both forms, :func:`published_or_generated`).
The dataset classes that read the files live with their families:
:class:`~graph_transformers.datasets.gnn_benchmark.GNNBenchmark` (PyG's
``GNNBenchmarkDataset``: PATTERN, CLUSTER, MNIST, CIFAR10, TSP, CSL),
:class:`~graph_transformers.datasets.molecules.zinc.CanonicalZINC` (PyG's ``ZINC``) and
:class:`~graph_transformers.datasets.molecules.ogb.OGBGraphPropPred` (OGB's loader, needs the
``[ogb]`` extra). Each benchmark's own loader (``load_pattern``, ``load_zinc``, ...) takes
``source="canonical"`` to read these files, ``source="generated"`` for this library's version.

Which one a run uses is ``data.source`` (:data:`~graph_transformers.data.registry.SOURCES`),
applied by :func:`graph_transformers.data.registry.load_splits`: ``auto`` (default) reads the
published files when they can be had and otherwise falls back to the generator /
reconstruction with a WARNING naming what was missing; ``canonical`` requires the published
files (else :class:`~graph_transformers.data.cache.DataNotFoundError`); ``generated`` always
uses the generator. ``metrics.json`` records the outcome under ``data_source``.

**Where the files are looked for** (``DATA_DIR`` = ``--data-dir`` / ``$GRAPH_TRANSFORMERS_DATA``,
``CACHE`` = the cache directory; the first complete match wins; files are read in place, never
copied or modified):

* PATTERN, CLUSTER, MNIST, CIFAR10, TSP: ``<NAME>_v2.pt`` (e.g. ``PATTERN_v2.pt``) in
  ``DATA_DIR/<NAME>/raw/`` or ``DATA_DIR/<NAME>/``; or the archive ``<NAME>_v2.zip`` there; or
  PyG's processed ``DATA_DIR/<NAME>/processed/{train,val,test}_data.pt``;
* CSL: ``graphs_Kary_Deterministic_Graphs.pkl`` + ``y_Kary_Deterministic_Graphs.pt`` in
  ``DATA_DIR/CSL/raw/`` or ``DATA_DIR/CSL/``; or benchmarking-gnns' ``CSL.zip`` there; or PyG's
  ``DATA_DIR/CSL/processed/data.pt``;
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
model config works with either source. Each family declares its field mapping beside its
dataset (:data:`BENCHMARK_FIELDS` names them, imported on first use):
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

import hashlib
import http.client
import importlib
import os
import shutil
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.io import fs
from torch_geometric.transforms import BaseTransform, Compose

from .._optional import require
from ..errors import DataError
from ..fileio import atomic_writer
from .cache import CheckedInMemoryDataset, DataNotFoundError, resolve_cache_dir
from .download import OFFLINE_ENV, fetch_url, offline
from .generated import PathLike, Transform, check_source, check_split
from .progress import progress

__all__ = [
    "BENCHMARK_FIELDS",
    "PublishedFiles",
    "ToBenchmarkFields",
    "canonical_root",
    "dir_with",
    "download_archive",
    "download_blocked",
    "extract_members",
    "files_tag",
    "link_together",
    "looked",
    "published_or_generated",
    "read_pyg_processed",
    "register_fields",
    "require_fields",
    "with_fields",
]

#: bumped whenever :class:`ToBenchmarkFields` changes what it produces (it is in the cache key)
_FIELDS_VERSION = 1


def canonical_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Where published files are downloaded to and processed: ``<cache>/canonical``."""
    return resolve_cache_dir(cache_dir) / "canonical"


# --------------------------------------------------------------------------------------------
# Field conversion
# --------------------------------------------------------------------------------------------
_F = "graph_transformers.datasets."

#: benchmark → its field mapping ``convert(data) -> Data``, as ``"package.module:function"``
#: beside the family's dataset (imported on first use, as :data:`~graph_transformers.data.
#: registry.DATASETS`) or a callable (:func:`register_fields`)
BENCHMARK_FIELDS: dict[str, Callable[[Data], Data] | str] = {
    "PATTERN": _F + "synthetic.sbm:pattern_fields",
    "CLUSTER": _F + "synthetic.sbm:cluster_fields",
    "CSL": _F + "synthetic.csl:csl_fields",
    "MNIST": _F + "images.superpixels:mnist_fields",
    "CIFAR10": _F + "images.superpixels:cifar10_fields",
    "TSP": _F + "synthetic.tsp:tsp_fields",
    "ZINC": _F + "molecules.zinc:zinc_fields",
    "ogbg-molhiv": _F + "molecules.ogb_files:molhiv_fields",
    # y [1, 128], NaN = missing label (OGB stores molpcba's labels as float32 for that)
    "ogbg-molpcba": _F + "molecules.ogb_files:molpcba_fields",
}


def register_fields(dataset: str, convert: Callable[[Data], Data] | str) -> None:
    """Declares the field mapping of a benchmark's published files (``convert(data) -> Data``,
    or ``"package.module:function"`` naming it), for :class:`ToBenchmarkFields`.

    Args:
        dataset: the benchmark's name (``ToBenchmarkFields(dataset)``).
        convert: the mapping; it raises :class:`~graph_transformers.errors.DataError` for a
            graph without the published layout.

    Raises:
        ValueError: ``dataset`` has a field mapping already.
    """
    if dataset in BENCHMARK_FIELDS:
        raise ValueError(f"the fields of {dataset!r} are registered already")
    BENCHMARK_FIELDS[dataset] = convert


def require_fields(data: Data, who: str, *keys: str) -> None:
    """Checks that a graph of the published files of ``who`` has every field of ``keys``.

    Raises:
        DataError: a field is missing (the message names it and the fields there are).
    """
    missing = [k for k in keys if data.get(k) is None]
    if missing:
        raise DataError(f"{who}: a graph of the published files has no {', '.join(missing)} "
                        f"(fields: {sorted(data.keys())})")


def _converter(dataset: str) -> Callable[[Data], Data]:
    convert = BENCHMARK_FIELDS[dataset]
    if isinstance(convert, str):
        module, _, attr = convert.partition(":")
        convert = getattr(importlib.import_module(module), attr)
    return convert


class ToBenchmarkFields(BaseTransform):
    r"""Converts a graph of a benchmark's published files into the fields this library's models
    expect, which are those of its generated / reconstructed version (the module docstring
    lists them; each family's mapping is named in :data:`BENCHMARK_FIELDS`). Fields the models
    do not use are dropped.

    Args:
        dataset (str): ``"PATTERN"``, ``"CLUSTER"``, ``"CSL"``, ``"MNIST"``, ``"CIFAR10"``,
            ``"TSP"``, ``"ZINC"``, ``"ogbg-molhiv"``, ``"ogbg-molpcba"`` (or one added by
            :func:`register_fields`).

    Raises:
        ValueError: an unknown dataset.
        DataError: (when called) a graph whose fields do not have the published layout; the
            message names the dataset, the field and its shape.
    """

    def __init__(self, dataset: str) -> None:
        if dataset not in BENCHMARK_FIELDS:
            raise ValueError(f"ToBenchmarkFields: unknown dataset {dataset!r}; known: "
                             f"{sorted(BENCHMARK_FIELDS)}")
        self.dataset = dataset

    def forward(self, data: Data) -> Data:
        return _converter(self.dataset)(data)

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


def extract_members(archive: Path, names: Sequence[str], dest: Path) -> None:
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


def download_archive(url: str, archive_name: str, names: Sequence[str], dest: Path,
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
        extract_members(archive, names, dest)
    except (OSError, http.client.HTTPException) as err:  # URLError, timeouts, a bad archive
        return f"download of {url} failed: {err}"
    finally:
        archive.unlink(missing_ok=True)
    return ""


def looked(dirs: Sequence[Path]) -> str:
    """The folders of ``dirs`` for a message (or a hint to pass ``--data-dir`` when none)."""
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
# The dataset classes of published files, and the loaders with both forms
# --------------------------------------------------------------------------------------------
class PublishedFiles(CheckedInMemoryDataset):
    """What :class:`~graph_transformers.datasets.gnn_benchmark.GNNBenchmark` and ZINC's
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
            self.save([self.pre_transform(d) for d in progress(
                graphs, f"{type(self).__name__} {Path(dst).stem}: encodings")], dst)



def published_or_generated(
    name: str, source: str, root: PathLike, split: str, transform: Transform,
    pre_transform: Transform, force_reload: bool, *, data_dir: PathLike | None,
    generated: Callable[..., InMemoryDataset], published: Callable[..., InMemoryDataset],
    folder: str | None = None,
    indices: Callable[[str], Sequence[int]] | None = None,
    requires: tuple[str, str] | None = None, shared_data_dir: bool = False, **options: Any,
) -> InMemoryDataset:
    """The body of a loader with both forms: for ``source="canonical"`` the published files of
    ``name`` through ``published`` (e.g. ``functools.partial(GNNBenchmark, name=name)``;
    ``indices(split)`` selects its graphs, CSL's folds) under ``canonical_root(root)``, else
    ``generated(root=root/folder, split=..., transform=..., pre_transform=...,
    force_reload=..., **options)`` (``folder`` defaults to ``name``; ``data_dir=data_dir`` too
    where ``shared_data_dir``, a generated form read from raw files) once the optional module
    of ``requires = (module, feature)`` is importable.

    The arguments every such loader shares (``load_pattern``, ``load_csl``, ``load_zinc``, ...):

    Args:
        name: the dataset's name (in messages; the default ``folder``).
        source: ``"canonical"`` (the published files) or ``"generated"`` (this library's).
        root: the cache directory.
        split: the split, as in PyG.
        transform: as in PyG.
        pre_transform: as in PyG.
        force_reload: as in PyG.
        data_dir: where the published files are looked for (``data.data_dir``).
        generated: the generated form, called as ``generated(root=root/folder, split=...,
            transform=..., pre_transform=..., force_reload=..., **options)``.
        published: the published form, called with ``canonical_root(root)``, ``split``,
            ``data_dir``, the transforms, ``force_reload`` and (with ``indices``) ``indices``.
        folder: the directory of the generated form under ``root`` (default: ``name``).
        indices: ``split`` → the indices of its graphs in the published files (CSL's folds);
            ``None``: ``published`` selects the split itself.
        requires: ``(module, feature)`` of an optional module the generated form needs
            (:func:`~graph_transformers._optional.require`); ``None``: none.
        shared_data_dir: also pass ``data_dir=data_dir`` to ``generated`` (a generated form read
            from raw files).
        **options: further keyword arguments of ``generated``.

    Raises:
        ValueError: an unknown ``source`` (:func:`check_source`) or ``split``.
        DataNotFoundError: ``source="canonical"`` and the published files cannot be had.
        MissingDependencyError: the generated form without its ``requires``.
    """
    if check_source(name, source):
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


