r"""PyG's ``GNNBenchmarkDataset`` over the published files of Dwivedi et al., "Benchmarking Graph
Neural Networks", which six benchmarks of two families share (PATTERN, CLUSTER, TSP, CSL:
:mod:`.synthetic`; MNIST, CIFAR10: :mod:`.images`): :class:`GNNBenchmark`, and where its files
are found (:func:`locate_benchmark`). The machinery of published files (finding, unpacking,
downloading, the field conversion) is :mod:`graph_transformers.data.published`; each
benchmark's field mapping lives beside its generated dataset.
"""
from __future__ import annotations

import os.path as osp
from collections.abc import Sequence
from pathlib import Path

from torch_geometric.datasets import GNNBenchmarkDataset

from ..data.cache import DataNotFoundError, pre_transform_key, resolve_data_dir
from ..data.generated import SPLITS, PathLike, Transform, check_split
from ..data.published import (PublishedFiles, canonical_root, dir_with, download_archive,
                              extract_members, files_tag, looked, with_fields)

__all__ = ["BENCHMARK_NAMES", "GNNBenchmark", "benchmark_files", "locate_benchmark"]

#: the datasets of PyG's :class:`~torch_geometric.datasets.GNNBenchmarkDataset`
BENCHMARK_NAMES: tuple[str, ...] = tuple(GNNBenchmarkDataset.names)


def benchmark_files(name: str) -> tuple[list[str], str, str, list[str]]:
    """(raw file names, archive name, download URL, PyG processed file names) of a
    :class:`~torch_geometric.datasets.GNNBenchmarkDataset` dataset."""
    url = GNNBenchmarkDataset.urls[name]
    if name == "CSL":
        return (["graphs_Kary_Deterministic_Graphs.pkl", "y_Kary_Deterministic_Graphs.pt"],
                "CSL.zip", url, ["data.pt"])
    stem = url.rsplit("/", 1)[-1][:-4]  # PATTERN_v2
    return [f"{stem}.pt"], f"{stem}.zip", url, [f"{s}_data.pt" for s in SPLITS]


def locate_benchmark(name: str, data_dir: Path | None, download_dir: Path,
                      download: bool) -> tuple[str, Path]:
    """``("raw", folder)`` holding the raw files or ``("processed", folder)`` holding PyG's
    processed files of ``name``; unpacks an archive or downloads when needed.

    Raises:
        DataNotFoundError: nothing found and no download; the message names the files, where
            they were looked for and the URL.
    """
    raw, archive, url, processed = benchmark_files(name)
    base = [data_dir / name / "raw", data_dir / name] if data_dir is not None else []
    found = dir_with(base + [download_dir], raw)
    if found is not None:
        return "raw", found
    for d in base:
        if (d / archive).is_file():
            extract_members(d / archive, raw, download_dir)
            return "raw", download_dir
    if data_dir is not None and dir_with([data_dir / name / "processed"], processed):
        return "processed", data_dir / name / "processed"
    why = download_archive(url, archive, raw, download_dir, download)
    if not why:
        return "raw", download_dir
    raise DataNotFoundError(
        f"{name}: the published files ({' + '.join(raw)}, or {archive}, or PyG's "
        f"processed/{{{','.join(processed)}}}) were not found; {why}. Looked in: "
        f"{looked(base + [download_dir])}. To use them, put them in DATA_DIR/{name}/raw/ "
        f"(PyG's layout, GNNBenchmarkDataset(root=DATA_DIR)), or let them be downloaded from "
        f"{url}")



class GNNBenchmark(PublishedFiles, GNNBenchmarkDataset):
    r"""One split of a benchmark of Dwivedi et al., "Benchmarking Graph Neural Networks" (PATTERN,
    CLUSTER, MNIST, CIFAR10, TSP, CSL), read from its published files by PyG's
    :class:`~torch_geometric.datasets.GNNBenchmarkDataset`.

    PyG's class does the reading (``process``: the raw ``<NAME>_v2.pt`` / the CSL pickles); this
    subclass reads the raw files in place from where :func:`locate_benchmark`
    finds them, converts every graph with :class:`ToBenchmarkFields` before ``pre_transform``,
    and writes the processed splits atomically, checksummed, into
    ``root/<NAME>/processed/<pre_transform key>_<files tag>/`` (so each set of encodings, and
    each set of published files, has its own cache).
    PyG's processed files from an earlier PyG run (``DATA_DIR/<NAME>/processed/``) are accepted
    in place of the raw files. CSL has no split in PyG: the benchmark's 5 folds select the
    graphs (``indices``, as :class:`~graph_transformers.datasets.synthetic.csl.CSL`).

    Arguments in PyG's order (``GNNBenchmarkDataset(root, name, split, ...)``).

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
        kind, self._found = locate_benchmark(name, data, base / name / "raw", download)
        self._from_processed = kind == "processed"
        pre = with_fields(name, pre_transform)
        files = benchmark_files(name)[3 if self._from_processed else 0]
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
        return benchmark_files(self.name)[3]

    def __repr__(self) -> str:
        return f"{self.name}({len(self)}, split={self.split!r}, published files)"
