"""The cross-validation splits of the TU benchmarks (:mod:`graph_transformers.datasets.tu`): the
generated stratified folds (:func:`stratified_fold_split`) and the benchmark's index files
(:func:`read_benchmark_index`, checked by :func:`check_index_folds`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ..data.generated import SPLITS, stratified_kfold

__all__ = ["TU_NUM_FOLDS", "TU_SPLIT_SEED", "check_fold", "check_index_folds",
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


def read_benchmark_index(path: str | os.PathLike) -> list[list[int]]:
    """Parse a benchmarking-gnns ``<NAME>_<split>.index`` file: one line per fold, each a
    comma-separated list of 0-based graph ids (blank lines are skipped).

    Returns:
        list (one per fold, in file order) of lists of graph ids.

    Raises:
        ValueError: a token that is not an integer (the message names the file and the line).
    """
    folds = []
    for lineno, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            folds.append([int(tok) for tok in line.split(",")])
        except ValueError:
            bad = next(t for t in line.split(",") if not t.strip().lstrip("-").isdigit())
            raise ValueError(f"TU: {path} line {lineno} holds {bad.strip()!r}, not a graph id; "
                             "each line must be a comma-separated list of 0-based graph ids"
                             ) from None
    return folds


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
