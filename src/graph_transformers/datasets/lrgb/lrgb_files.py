r"""The published files of the Long Range Graph Benchmark (Dwivedi et al., "Long Range Graph
Benchmark", NeurIPS 2022 Datasets and Benchmarks; github ``vijaydwivedi75/lrgb``) and what every
LRGB loader of this family does with them: find them in ``DATA_DIR`` in LRGB's own layout
(:func:`locate_lrgb`: a missing file is one line naming where it was expected and LRGB's URL),
compare them with LRGB's release (:func:`check_release`: LRGB's loaders record the MD5 of each
file) and read a split file (:func:`read_lrgb_split`: only through
:func:`~graph_transformers.data.safe_pickle.load_safe_pickle`, never plain ``pickle.load``).

**Layout.** LRGB's loaders (``PeptidesFunctionalDataset(root=DATA_DIR)``, ...) keep each
dataset in ``DATA_DIR/<folder>/``: the data file in ``raw/`` and the split pickle in the
folder itself, where their ``download`` puts it (``raw/`` is accepted for it too). Nothing is
downloaded here: the files are fetched once by hand from the URLs of :data:`LRGB_FILES` (the
ones LRGB's loaders download).
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...data.cache import DATA_ENV, DataNotFoundError
from ...data.generated import PathLike
from ...data.published import looked
from ...data.safe_pickle import load_safe_pickle
from ...data.split_rules import split_row_ids
from ...errors import DataError

__all__ = ["LRGBFile", "LRGB_FILES", "locate_lrgb", "md5_of", "check_release",
           "read_lrgb_split"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LRGBFile:
    """One published LRGB file.

    Attributes:
        name: its file name.
        folder: the dataset's folder under ``DATA_DIR`` (LRGB's ``root/<folder>``).
        places: where in ``folder`` it is looked for, in order (``"raw"``; ``""``: the folder
            itself).
        url: where LRGB publishes it (the URL LRGB's loader downloads).
        md5: its MD5 in LRGB's release (LRGB's loaders check it: ``self.version``,
            ``self.md5sum_stratified_split``).
    """

    name: str
    folder: str
    places: tuple[str, ...]
    url: str
    md5: str

    @classmethod
    def on_dropbox(cls, dropbox_id: str, name: str, folder: str, places: tuple[str, ...],
                   md5: str) -> LRGBFile:
        """A file LRGB publishes on Dropbox, whose URL is ``https://www.dropbox.com/s/<id>/<name>
        ?dl=1`` (so the name is written once)."""
        return cls(name, folder, places, f"https://www.dropbox.com/s/{dropbox_id}/{name}?dl=1",
                   md5)

    @property
    def expected(self) -> str:
        """Its first place, relative to ``DATA_DIR`` (``peptides-functional/raw/...``)."""
        return "/".join(p for p in (self.folder, self.places[0], self.name) if p)

    def candidates(self, data_dir: Path) -> list[Path]:
        """The paths it is looked for at, in order."""
        return [data_dir / self.folder / place / self.name if place else
                data_dir / self.folder / self.name for place in self.places]


#: the files of LRGB's release, by key (Dropbox ids and MD5s as LRGB's / GraphGPS's loaders name
#: them)
LRGB_FILES: dict[str, LRGBFile] = {
    "peptides-func-csv": LRGBFile.on_dropbox(
        "ol2v01usvaxbsr8", "peptide_multi_class_dataset.csv.gz",
        "peptides-functional", ("raw",), "701eb743e899f4d793f0e13c8fa5a1b4"),
    "peptides-func-split": LRGBFile.on_dropbox(
        "j4zcnx2eipuo0xz", "splits_random_stratified_peptide.pickle",
        "peptides-functional", ("", "raw"), "5a0114bdadc80b94fc7ae974f13ef061"),
    # the current release: the 11 targets standardized in the file (GraphGPS's loader)
    "peptides-struct-csv": LRGBFile.on_dropbox(
        "0d4aalmq4b4e2nh", "peptide_structure_normalized_dataset.csv.gz",
        "peptides-structural", ("raw",), "c240c1c15466b5c907c63e180fa8aa89"),
    # the first release: raw targets, standardized by the loader (LRGB's own loader)
    "peptides-struct-csv-raw": LRGBFile.on_dropbox(
        "464u3303eu2u4zp", "peptide_structure_dataset.csv.gz",
        "peptides-structural", ("raw",), "9786061a34298a0684150f2e4ff13f47"),
    "peptides-struct-split": LRGBFile.on_dropbox(
        "9dfifzft1hqgow6", "splits_random_stratified_peptide_structure.pickle",
        "peptides-structural", ("", "raw"), "5a0114bdadc80b94fc7ae974f13ef061"),
}


def _how(slots: Sequence[Sequence[LRGBFile]]) -> str:
    """How to get the files of ``slots``, for a message."""
    parts = []
    for choices in slots:
        first = choices[0]
        alt = "".join(f" (or {c.url} as DATA_DIR/{c.expected})" for c in choices[1:])
        parts.append(f"{first.url} as DATA_DIR/{first.expected}{alt}")
    return ("download LRGB's " + " and ".join(parts) +
            " (LRGB's layout); nothing is downloaded automatically")


def locate_lrgb(title: str, slots: Sequence[Sequence[LRGBFile]],
                data_dir: Path | None) -> list[tuple[LRGBFile, Path]]:
    """The files of one LRGB dataset in ``data_dir``.

    Args:
        title: the dataset, for messages (``"Peptides-func"``).
        slots: the files it needs; each slot is satisfied by the first of its choices found
            (Peptides-struct: the standardized data file, else the first release's).
        data_dir: the data directory (``None``: none was given).

    Returns:
        ``(file, path)`` of each slot, in order.

    Raises:
        DataNotFoundError: no data directory, or a slot with none of its files; one line
            naming the expected path(s) relative to ``DATA_DIR``, the folders searched and
            LRGB's URLs.
    """
    if data_dir is None:
        raise DataNotFoundError(f"{title}: no data directory (pass --data-dir or set "
                                f"${DATA_ENV}); to get the files, {_how(slots)}")
    found, missing, dirs = [], [], []
    for choices in slots:
        hit = next(((f, p) for f in choices for p in f.candidates(data_dir) if p.is_file()),
                   None)
        for f in choices:
            dirs += [p.parent for p in f.candidates(data_dir) if p.parent not in dirs]
        if hit is None:
            missing.append(" or ".join(str(data_dir / f.expected) for f in choices))
        else:
            found.append(hit)
    if missing:
        raise DataNotFoundError(f"{title}: {' and '.join(missing)} not found. Looked in: "
                                f"{looked(dirs)}. To use {title}, {_how(slots)}")
    return found


def md5_of(path: PathLike, chunk: int = 1 << 20) -> str:
    """Hex MD5 of a file's bytes (the checksum LRGB's loaders record)."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def check_release(title: str, file: LRGBFile, path: Path) -> bool:
    """Whether ``path`` is LRGB's released ``file`` (its MD5); logs one WARNING when it is not
    (a re-packed or edited copy: results may not be comparable with published ones)."""
    got = md5_of(path)
    if got == file.md5:
        return True
    log.warning("%s: %s has MD5 %s, not that of LRGB's release (%s, %s); results may not be "
                "comparable with published ones", title, path, got, file.md5, file.url)
    return False


def read_lrgb_split(path: PathLike, num_rows: int, keys: Sequence[str] = ("train", "val", "test")
                    ) -> dict[str, np.ndarray]:
    """An LRGB split file (``splits_random_stratified_*.pickle``: a dict of split name → the
    row ids of its graphs in the data file, NumPy arrays as LRGB wrote them; tensors and lists
    of ints are accepted too), read with
    :func:`~graph_transformers.data.safe_pickle.load_safe_pickle`: a pickle naming anything but
    containers, NumPy arrays and tensors is refused, never run.

    Args:
        path: the pickle.
        num_rows: rows of the data file: the ids must lie in ``0..num_rows-1``.
        keys: the splits it must hold.

    Returns:
        ``{key: int64 array}``, in the file's order.

    Raises:
        DataError: an unreadable or refused pickle, not a dict, a split missing, ids that are
            not 1-D integers, out of range, repeated, or shared by two splits; one line naming
            the file.
    """
    path = Path(path)
    obj = load_safe_pickle(path, what="LRGB split file")
    if not isinstance(obj, dict):
        raise DataError(f"{path}: holds a {type(obj).__name__}, not a dict of split indices "
                        f"(LRGB's split files map {', '.join(keys)} to row ids)")
    return split_row_ids(obj, keys, path, num_rows)
