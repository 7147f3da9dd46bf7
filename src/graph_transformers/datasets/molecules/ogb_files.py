r"""Where OGB's published graph datasets (``ogbg-molhiv``, ``ogbg-molpcba``) are found or
downloaded (:func:`locate_ogb`, which needs no ``ogb``), and the field mapping of their graphs
(:func:`molhiv_fields`, :func:`molpcba_fields`, for
:class:`~graph_transformers.data.published.ToBenchmarkFields`). OGB's loader itself is
:class:`~graph_transformers.datasets.molecules.ogb.OGBGraphPropPred` (needs the ``[ogb]`` extra).
"""
from __future__ import annotations

import http.client
import os
import shutil
import zipfile
from pathlib import Path

from torch_geometric.data import Data

from ...data.cache import DataNotFoundError
from ...data.download import fetch_url
from ...data.published import download_blocked, looked, require_fields
from ...errors import DataError

__all__ = ["OGB_DATASETS", "locate_ogb", "molhiv_fields", "molpcba_fields", "ogb_folder"]

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


def molhiv_fields(data: Data, name: str = "ogbg-molhiv") -> Data:
    """A graph of OGB's published ``ogbg-molhiv`` (or ``name``) files in this library's fields:
    ``x`` ``LongTensor [N, 9]``, ``edge_attr`` ``LongTensor [E, 3]`` (OGB's featurization),
    ``y`` ``FloatTensor [1, num_tasks]``.

    Raises:
        DataError: a field is missing, or the feature columns are not OGB's 9 / 3.
    """
    require_fields(data, name, "x", "edge_index", "edge_attr", "y")
    if data.x.dim() != 2 or data.x.size(1) != 9 or data.edge_attr.size(-1) != 3:
        raise DataError(f"{name}: expected OGB's 9 atom / 3 bond feature columns, got x "
                        f"{list(data.x.shape)} and edge_attr {list(data.edge_attr.shape)}")
    return Data(x=data.x.long(), edge_index=data.edge_index.long(),
                edge_attr=data.edge_attr.long(), y=data.y.float().reshape(1, -1),
                num_nodes=int(data.num_nodes))


def molpcba_fields(data: Data) -> Data:
    """:func:`molhiv_fields` for ``ogbg-molpcba``: ``y`` ``FloatTensor [1, 128]``, NaN = a
    missing label (OGB stores molpcba's labels as float32 for that).

    Raises:
        DataError: as :func:`molhiv_fields`.
    """
    return molhiv_fields(data, name="ogbg-molpcba")
