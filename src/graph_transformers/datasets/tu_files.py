"""The raw files of the TU datasets (:mod:`graph_transformers.datasets.tu`, "Where the raw files
come from"): where they are in the data directory, their recorded sha256, and their extraction
flat into ``TUDataset``'s ``raw_dir`` from a zip (:func:`extract_tu_zip`) or a folder of text
files.
"""
from __future__ import annotations

import logging
import os
import os.path as osp
import shutil
import zipfile
from pathlib import Path

from ..data.cache import check_sha256, sha256_of

__all__ = ["extract_tu_zip"]

log = logging.getLogger(__name__)

# sha256 of the benchmark's raw files in TU (docs/datasets.md, 'Raw files').
_SHA256 = {
    "MUTAG.zip": "e6f234cb1487781d0b6411175fb0489ed4142cf8a103570526114e1fd4eebdf0",
    "ENZYMES.zip": "f9530114781f6d3b02e12fce1b58f2a9d33b419bcc8932904067e55c60b02cf2",
    "NCI1.zip": "8c43fc45bdc599cc2eaa74966590425087a6cf19628a5507c76d174bc054f98c",
    "ENZYMES_train.index": "529cef68e6a4ff122224b7ad300437d08d1f02ac54a7abdd95803fb20dad7cdf",
    "ENZYMES_val.index": "9301b77fb3d7238cd863a4ac954bad997f8c40927d5fc77ec6deaab4dd25d2c7",
    "ENZYMES_test.index": "1f7cff482f173ecc8940c56b8dce70a4766ddd90bf69cc16506fdca8b3aa292f",
}


def _tu_dir(data_dir: Path) -> Path:
    """``data_dir/TU`` if it exists, else ``data_dir`` itself when it already holds TU files."""
    if (data_dir / "TU").is_dir():
        return data_dir / "TU"
    if any(data_dir.glob("*.zip")) or any(data_dir.glob("*.index")):
        return data_dir
    return data_dir / "TU"


def _check_sha(path: Path) -> None:
    """Checks a file with a recorded sha256; any other file is used as found, its sha256 logged
    (so that a run records which file it read)."""
    want = _SHA256.get(path.name)
    if want is None:
        log.info("TU: %s has no recorded checksum; used as found (sha256 %s)", path,
                 sha256_of(path))
    check_sha256(path, want, "TU")


def extract_tu_zip(zip_path: str | os.PathLike, raw_dir: str | os.PathLike, name: str) -> None:
    """Extract the TU text files of ``name`` from ``zip_path`` flat into ``raw_dir``.

    Only members whose base name is ``<name>_*.txt`` or ``README.txt`` are taken (their folder
    inside the zip is dropped, so ``MUTAG/MUTAG_A.txt`` becomes ``raw_dir/MUTAG_A.txt``, the layout
    TUDataset expects). Each file is written to a temporary name and renamed, the ``_A.txt`` /
    ``_graph_indicator.txt`` files that TUDataset checks for last, so an interrupted extraction is
    redone. The sha256 of a zip named like a benchmark's (MUTAG, ENZYMES, NCI1) is checked first.

    Raises:
        ValueError: a sha256 mismatch, a bad zip, or a zip without ``<name>_A.txt`` /
            ``<name>_graph_indicator.txt``.
    """
    zip_path = Path(zip_path)
    _check_sha(zip_path)
    raw = Path(raw_dir)
    raw.mkdir(parents=True, exist_ok=True)
    required = {f"{name}_A.txt", f"{name}_graph_indicator.txt"}
    try:
        with zipfile.ZipFile(zip_path) as zf:
            members = {}
            for info in zf.infolist():
                base = osp.basename(info.filename)
                if info.is_dir() or info.filename.startswith("__MACOSX"):
                    continue
                if (base.startswith(f"{name}_") and base.endswith(".txt")) or base == "README.txt":
                    members[base] = info
            missing = required - members.keys()
            if missing:
                raise ValueError(f"TU: {zip_path} holds no {sorted(missing)}")
            for base in sorted(members, key=lambda b: (b in required, b)):
                tmp = raw / f".{base}.part"
                with zf.open(members[base]) as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst, length=1 << 20)
                os.replace(tmp, raw / base)
    except zipfile.BadZipFile as e:
        raise ValueError(f"TU: {zip_path} is not a valid zip archive: {e}") from e


def _copy_txt_folder(folder: Path, raw_dir: Path, name: str) -> None:
    raw_dir.mkdir(parents=True, exist_ok=True)
    required = {f"{name}_A.txt", f"{name}_graph_indicator.txt"}
    files = sorted(folder.glob(f"{name}_*.txt"), key=lambda p: (p.name in required, p.name))
    for src in files:
        tmp = raw_dir / f".{src.name}.part"
        shutil.copyfile(src, tmp)
        os.replace(tmp, raw_dir / src.name)


def _local_txt_folder(tu_dir: Path, name: str) -> Path | None:
    for folder in (tu_dir / name, tu_dir / name / name, tu_dir / name / "raw"):
        if (folder / f"{name}_A.txt").is_file() and (
                folder / f"{name}_graph_indicator.txt").is_file():
            return folder
    return None
