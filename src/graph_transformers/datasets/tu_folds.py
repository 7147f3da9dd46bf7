"""The cross-validation splits of the TU benchmarks (:mod:`graph_transformers.datasets.tu`): the
generated stratified folds (:func:`stratified_fold_split`) and the benchmark's index files
(:func:`~graph_transformers.data.split_rules.read_benchmark_index`, shared with a user's
``.index`` folds files; checked by :func:`check_index_folds`).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ..data.generated import SPLITS, stratified_kfold
from ..data.split_rules import read_benchmark_index  # the reader of every .index file

log = logging.getLogger(__name__)

__all__ = ["TU_NUM_FOLDS", "TU_SPLIT_SEED", "check_fold", "check_index_folds",
           "foreign_index_files", "index_files", "warn_foreign_index_files",
           "read_benchmark_index", "stratified_fold_split"]

#: Number of cross-validation folds of the benchmark.
TU_NUM_FOLDS = 10
#: Seed of the generated stratified folds (MUTAG, NCI1). Fixed: the split is part of the
#: benchmark, not of a training run, so it must not follow the training seed.
TU_SPLIT_SEED = 0


def stratified_fold_split(labels: Sequence[int] | np.ndarray | torch.Tensor, fold: int,
                          n_splits: int = TU_NUM_FOLDS,
                          seed: int = TU_SPLIT_SEED) -> dict[str, list[int]]:
    """Train/val/test graph ids of one fold of the generated split (MUTAG, NCI1).

    With ``folds = stratified_kfold(labels, n_splits, seed)``: test = ``folds[fold]``, val =
    ``folds[(fold + 1) % n_splits]``, train = all other folds (about 80 / 10 / 10 % for 10 folds,
    each stratified by class).

    Returns:
        dict ``{"train", "val", "test"}`` → sorted lists of graph ids.

    Raises:
        ValueError: ``fold`` not an integer in ``0..n_splits-1``.
    """
    fold = check_fold(fold, n_splits)
    folds = stratified_kfold(labels, n_splits, seed)
    val_fold = (fold + 1) % n_splits
    train = np.concatenate([f for k, f in enumerate(folds) if k not in (fold, val_fold)])
    return {"train": sorted(train.tolist()), "val": folds[val_fold].tolist(),
            "test": folds[fold].tolist()}


def check_fold(fold, n_splits: int = TU_NUM_FOLDS) -> int:
    """``fold`` as an int.

    Raises:
        ValueError: ``fold`` is not an integer in ``0..n_splits - 1``.
    """
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not (
        0 <= fold < n_splits
    ):
        raise ValueError(f"TU fold must be an integer in 0..{n_splits - 1}, got {fold!r}")
    return int(fold)


def check_index_folds(folds: dict[str, list[list[int]]], paths: dict[str, Path],
                      num_graphs: int) -> None:
    """Validates the folds of a set of index files (any TU name; no checksum is known for them).

    Args:
        folds: ``{"train", "val", "test"}`` → the file's lines (:func:`read_benchmark_index`),
            line ``k`` = fold ``k``.
        paths: the same keys → the files, for the messages.
        num_graphs: graphs in the dataset (ids must be in ``0..num_graphs-1``).

    Raises:
        ValueError: (one line, naming the file) the files have different numbers of lines or
            none; a line holds an id out of range or an id twice; a graph is in two splits of
            the same fold.
    """
    lines = {s: len(folds[s]) for s in SPLITS}
    if len(set(lines.values())) != 1 or not lines["train"]:
        counts = ", ".join(f"{paths[s].name}: {n}" for s, n in lines.items())
        raise ValueError(f"TU: the index files in {paths['train'].parent} have different numbers "
                         f"of lines ({counts}) or none; line k of each file is fold k, so the "
                         "three files need the same number of non-empty lines")
    for k in range(lines["train"]):
        seen: dict[int, str] = {}
        for s in SPLITS:
            ids = folds[s][k]
            bad = next((i for i in ids if not 0 <= i < num_graphs), None)
            if bad is not None:
                raise ValueError(f"TU: {paths[s]} fold {k} (line {k + 1}) holds graph id {bad}, "
                                 f"outside 0..{num_graphs - 1} (the dataset has {num_graphs} "
                                 "graphs; ids are 0-based positions in the TU file order)")
            if len(set(ids)) != len(ids):
                twice = next(i for i in ids if ids.count(i) > 1)
                raise ValueError(f"TU: {paths[s]} fold {k} (line {k + 1}) holds graph id "
                                 f"{twice} twice; each id may appear once per line")
            for i in ids:
                if i in seen:
                    raise ValueError(f"TU: graph {i} is in both {paths[seen[i]].name} and "
                                     f"{paths[s].name} in fold {k} (line {k + 1}); the "
                                     "train/val/test ids of a fold must be disjoint")
                seen[i] = s


def index_files(folder: Path, prefix: str, name: str) -> dict[str, Path] | None:
    """``<prefix>_{train,val,test}.index`` in ``folder`` when all three are there, ``None`` when
    none is (``name``: the dataset, for the message).

    Raises:
        ValueError: only one or two of the three files are there.
    """
    found = {s: folder / f"{prefix}_{s}.index" for s in SPLITS}
    present = [s for s in SPLITS if found[s].is_file()]
    if present and len(present) < len(SPLITS):
        missing = [found[s].name for s in SPLITS if s not in present]
        raise ValueError(
            f"TU {name}: {folder} holds {', '.join(found[s].name for s in present)} but not "
            f"{', '.join(missing)}; put all three index files there (line k = fold k) or remove "
            "them to use the seeded stratified folds")
    return found if present else None


_INDEX_FILE = re.compile(r"(.+)_(train|val|test)\.index")
_warned: set[tuple[str, str, str]] = set()


def foreign_index_files(folder: Path, name: str) -> dict[str, list[Path]]:
    """Fold index files in ``folder`` (``<PREFIX>_{train,val,test}.index``) that the dataset
    ``name`` does not read because their prefix is not its name, yet that seem meant for it:
    no other dataset of the folder has that name (no ``<PREFIX>.zip``, no ``<PREFIX>/``), and the
    prefix and ``name`` begin alike (``PROTEINS_full`` beside ``PROTEINS.zip``, any case) or
    ``name``'s archive is the folder's only one. Returns ``{prefix: files}``."""
    others = [z for z in folder.glob("*.zip") if z.stem != name]
    found: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.index")):
        m = _INDEX_FILE.fullmatch(path.name)
        if m is None or m.group(1) == name:
            continue
        prefix = m.group(1)
        if (folder / f"{prefix}.zip").is_file() or (folder / prefix).is_dir():
            continue  # another dataset's own folds
        a, b = prefix.lower(), name.lower()
        if a.startswith(b) or b.startswith(a) or not others:
            found.setdefault(prefix, []).append(path)
    return found


def warn_foreign_index_files(folder: Path, name: str, own: bool) -> None:
    """One WARNING per prefix (once per process) for the files of :func:`foreign_index_files`:
    they are not used, and ``data.options.index_prefix: PREFIX`` uses them (``own``: the dataset
    reads its own ``<name>_*.index`` instead of the seeded folds)."""
    for prefix, paths in foreign_index_files(folder, name).items():
        key = (str(folder), name, prefix)
        if key in _warned:
            continue
        _warned.add(key)
        log.warning("TU %s: %s holds the fold index files %s, whose prefix %r is not the "
                    "dataset's name, so they are not used (the split comes from %s); set "
                    "data.options.index_prefix: %s to use them", name, folder,
                    ", ".join(p.name for p in paths), prefix,
                    f"{name}_*.index" if own else "the seeded stratified folds", prefix)
