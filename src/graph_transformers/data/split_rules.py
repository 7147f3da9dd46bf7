"""``data.split``: how a user's data is cut into train / val / test, one rule parsed once
(:func:`parse_split_rule`).

Each kind of data takes the forms that apply to it (``docs/datasets.md``, "Splits of your own
data"):

- ``random`` or ``random:TRAIN,VAL,TEST`` — fractions (each > 0, summing to at most 1; default
  ``0.8,0.1,0.1``, a node table's ``0.6,0.2,0.2``) of a permutation drawn from ``data.seed``
  (:func:`random_split`; a node table stratifies by class);
- ``scaffold`` or ``scaffold:TRAIN,VAL,TEST`` — a molecule CSV's Bemis–Murcko scaffold split;
- ``columns`` — a node table's ``train_mask`` / ``val_mask`` / ``test_mask`` columns;
- a column name (or ``column:NAME``) — a molecule CSV column whose cells say ``train``,
  ``val`` (also ``valid`` / ``validation``) or ``test`` (a blank cell: the row is in no set);
- a file (:func:`read_split_file`): **one split** as index arrays keyed ``train``, ``val`` (or
  ``valid`` / ``validation``), ``test`` in an ``.npz`` (``numpy.savez``), a ``.json`` object or
  a ``.pickle`` / ``.pkl`` (``.gz``; LRGB's split files, read only by
  :func:`~graph_transformers.data.safe_pickle.load_safe_pickle`), or **folds**, of which
  ``data.fold`` picks one: a ``.json`` (or pickle) list of such objects — or of the folds of the
  fair-comparison protocol (Errica et al. 2020, ``{"test": [...], "model_selection":
  [{"train": [...], "validation": [...]}]}``, whose first model-selection split is used) — or a
  folder, glob or one of the ``<NAME>_train.index`` / ``_val.index`` / ``_test.index`` files of
  benchmarking-gnns (line ``k`` = fold ``k``, :func:`read_benchmark_index`).

Ids are 0-based positions in the data's order (a CSV's data rows, a graph file's graphs, or the
nodes / edges of a one-graph file). A set that is empty, holds an id twice or out of range, or
shares ids with another set is one :class:`~graph_transformers.errors.DataError` naming the file
and the set (:func:`check_index_sets`). What a run used is recorded in ``metrics.json`` under
``split`` (:func:`file_split`, :func:`rule_record`): the rule, and for files their sha256.

Framework floor (``data/``): NumPy, the safe pickle reader and the text checks.
"""
from __future__ import annotations

import glob
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError
from .cache import DataNotFoundError, sha256_of
from .generated import SPLITS
from .safe_pickle import load_safe_pickle
from .textfiles import decode_text

__all__ = ["DEFAULT_FRACTIONS", "SPLIT_FORMS", "SplitFile", "SplitRule", "check_index_sets",
           "split_row_ids",
           "count_folds", "file_split", "format_fractions", "parse_fractions",
           "parse_split_rule", "random_split", "read_benchmark_index", "read_split_file",
           "rule_record", "split_row_ids"]

#: fractions of ``random`` / ``scaffold`` without any
DEFAULT_FRACTIONS: tuple[float, float, float] = (0.8, 0.1, 0.1)
#: what each form of ``data.split`` is, for the messages
SPLIT_FORMS: dict[str, str] = {
    "scaffold": "scaffold[:TRAIN,VAL,TEST] (Bemis-Murcko scaffold groups)",
    "random": "random[:TRAIN,VAL,TEST] (fractions > 0 summing to at most 1, drawn from "
              "data.seed)",
    "columns": "columns (the table's train_mask / val_mask / test_mask)",
    "column": "a column name (cells train / val / test)",
    "file": "a split file (.npz, .json or .pickle of index arrays train / val / test) or a "
            "folds file (a .json list of folds, or a folder of *_train / _val / _test.index "
            "files; data.fold picks the fold)",
}
#: suffixes of a split file (``.index`` files and folders are recognised too)
SPLIT_FILE_SUFFIXES = (".npz", ".json", ".pickle", ".pkl", ".pickle.gz", ".pkl.gz")
#: names of a set in a split file → the set
_SET_NAMES = {"train": "train", "val": "val", "valid": "val", "validation": "val",
              "test": "test"}
_SHOWN = 5


@dataclass(frozen=True)
class SplitRule:
    """One parsed ``data.split``.

    Attributes:
        kind: ``"random"``, ``"scaffold"``, ``"columns"``, ``"column"`` or ``"file"``.
        text: the value as given.
        fractions: ``(train, val, test)`` of ``random`` / ``scaffold`` (``None`` when not
            written: the dataset's default).
        column: the column of ``column``.
        path: the file, folder or glob of ``file``.
    """

    kind: str
    text: str
    fractions: tuple[float, float, float] | None = None
    column: str | None = None
    path: str | None = None


def split_row_ids(obj: dict, keys: Sequence[str], path: Path, num_rows: int | None = None
                  ) -> dict[str, np.ndarray]:
    """The row ids of each split of a published split file (OGB-LSC's ``split_dict.pt``, LRGB's
    split pickles), checked: every split of ``keys`` present, each a 1-D array of integers (a
    tensor, NumPy array or list; not a boolean mask), within ``0..num_rows-1`` when
    ``num_rows`` is given, no id twice, no row in two splits.

    Args:
        obj: the file's dict, split name → ids.
        keys: the splits it must hold, in order.
        path: the file (named in every error).
        num_rows: rows of the data file the ids index; ``None``: the range is not checked.

    Returns:
        ``{key: int64 array}`` in ``keys``' order.

    Raises:
        DataError: one line naming the file and the split.
    """
    missing = [k for k in keys if k not in obj]
    if missing:
        raise DataError(f"{path}: no split {', '.join(map(repr, missing))} (keys: "
                        f"{sorted(map(str, obj))}; expected {list(keys)})")
    seen = np.zeros(num_rows, dtype=bool) if num_rows is not None else None
    out: dict[str, np.ndarray] = {}
    for key in keys:
        value = obj[key]
        arr = value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) \
            else np.asarray(value)
        if arr.dtype == np.bool_:
            raise DataError(f"{path}: split {key!r} is a boolean mask, not an array of row ids")
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise DataError(f"{path}: split {key!r} is {arr.dtype} of shape {list(arr.shape)}, "
                            "not a 1-D array of row ids")
        arr = arr.astype(np.int64)
        if arr.size and (int(arr.min()) < 0 or (num_rows is not None
                                                and int(arr.max()) >= num_rows)):
            bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
            rows = "" if num_rows is None else (f", outside 0..{num_rows - 1} (the data file has "
                                                f"{num_rows} rows)")
            raise DataError(f"{path}: split {key!r} holds row id {bad}{rows or ', a negative id'}")
        if np.unique(arr).size != arr.size:
            raise DataError(f"{path}: split {key!r} lists a row id twice")
        if seen is not None:
            if seen[arr].any():
                raise DataError(f"{path}: split {key!r} shares row {int(arr[seen[arr]][0])} "
                                "with an earlier split")
            seen[arr] = True
        out[key] = arr
    return out


def usage(forms: Sequence[str], got: Any) -> str:
    """The one-line message listing the forms of ``data.split`` a dataset takes."""
    return (f"data.split must be {'; or '.join(SPLIT_FORMS[f] for f in forms)}; "
            f"got {str(got)!r}")


def parse_fractions(body: str, message: str) -> tuple[float, float, float]:
    """``"0.8,0.1,0.1"`` → ``(0.8, 0.1, 0.1)``.

    Raises:
        DataError: ``message``, for anything but three fractions > 0 summing to at most 1.
    """
    try:
        fractions = tuple(float(v) for v in body.split(","))
    except ValueError:
        raise DataError(message) from None
    if len(fractions) != 3 or not all(np.isfinite(fractions)) or min(fractions) <= 0 \
            or sum(fractions) > 1 + 1e-9:
        raise DataError(message)
    return fractions  # type: ignore[return-value]


def format_fractions(fractions: Sequence[float]) -> str:
    """``(0.8, 0.1, 0.1)`` → ``"0.8,0.1,0.1"``."""
    return ",".join(f"{f:g}" for f in fractions)


def _is_path(text: str) -> bool:
    low = text.lower()
    return (low.endswith(SPLIT_FILE_SUFFIXES) or low.endswith(".index") or "/" in text
            or os.sep in text or any(c in text for c in "*?[")
            or Path(text).expanduser().is_dir())


def parse_split_rule(text: str, forms: Sequence[str]) -> SplitRule:
    """``data.split`` as a :class:`SplitRule` (module docstring), one of ``forms`` (keys of
    :data:`SPLIT_FORMS`).

    Args:
        text: the value of ``data.split``.
        forms: the forms the dataset takes.

    Returns:
        SplitRule: the rule (a file is not read here).

    Raises:
        DataError: a value in none of ``forms`` (listing them), or bad fractions.
    """
    value = str(text).strip()
    low = value.lower()
    message = usage(forms, value)
    head, _, body = value.partition(":")
    if head.lower() in ("random", "scaffold"):
        rule = SplitRule(head.lower(), value,
                         parse_fractions(body, message) if ":" in value else None)
    elif low == "columns":
        rule = SplitRule("columns", value)
    elif head.lower() == "column" and body.strip():
        rule = SplitRule("column", value, column=body.strip())
    elif value and _is_path(value):
        rule = SplitRule("file", value, path=value)
    elif value and "column" in forms:
        rule = SplitRule("column", value, column=value)
    else:
        raise DataError(message)
    if rule.kind not in forms:
        raise DataError(message)
    return rule


def random_split(ids: Sequence[int] | np.ndarray, fractions: Sequence[float], seed: int
                 ) -> dict[str, list[int]]:
    """Train / val / test of ``ids`` cut from ``numpy.random.default_rng(seed).permutation``:
    the first ``round(train × n)`` ids, the next up to ``round((train + val) × n)``, then test
    up to ``round((train + val + test) × n)`` (all the rest when the fractions sum to 1).

    Args:
        ids: the ids to split (``n`` of them).
        fractions: ``(train, val, test)``.
        seed: the seed (``data.seed``).

    Returns:
        dict: ``{"train", "val", "test"}`` → sorted ids.
    """
    ids = np.asarray(ids, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(ids)
    n = order.size
    a = int(round(fractions[0] * n))
    b = int(round((fractions[0] + fractions[1]) * n))
    c = n if abs(sum(fractions) - 1.0) < 1e-9 else min(int(round(sum(fractions) * n)), n)
    return {s: sorted(order[lo:hi].tolist()) for s, lo, hi in
            zip(SPLITS, (0, a, b), (a, b, c))}


# ------------------------------------------------------------------------------ split files
@dataclass(frozen=True)
class SplitFile:
    """What a split or folds file holds (:func:`read_split_file`).

    Attributes:
        path: the file (folder, glob) as given.
        folds: one ``{"train", "val", "test"}`` → ids (unchecked ``int64`` arrays) per fold; one
            entry for a file of one split.
        is_folds: the file holds folds (``data.fold`` picks one), not one split.
        format: ``"npz"``, ``"json"``, ``"pickle"``, ``"fair-comparison json"`` (or pickle)
            or ``"index files"``.
        sha256: the file's sha256 (index files: ``{file name: sha256}``).
        note: how the sets were read, where it needs saying (the fair-comparison inner folds).
    """

    path: str
    folds: list[dict[str, np.ndarray]]
    is_folds: bool
    format: str
    sha256: str | dict[str, str]
    note: str = field(default="")


def _ids(value: Any, where: str, name: str) -> np.ndarray:
    """One set of a split file as an ``int64`` array of ids."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: the {name} set is not a list of ids") from None
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a.ndim != 1:
        raise DataError(f"{where}: the {name} set has shape {list(a.shape)}; give a flat list "
                        "of 0-based ids")
    if a.dtype == bool:
        raise DataError(f"{where}: the {name} set holds booleans (a mask); give 0-based ids "
                        "(numpy.flatnonzero(mask))")
    if np.issubdtype(a.dtype, np.integer):
        return a.astype(np.int64)
    if np.issubdtype(a.dtype, np.floating):
        whole = np.isfinite(a) & (a == np.round(a))
        if whole.all():
            return a.astype(np.int64)
        bad = a[~whole][0].item()
    else:
        bad = next((v for v in a.tolist() if not isinstance(v, int) or isinstance(v, bool)),
                   a.flat[0])
    raise DataError(f"{where}: the {name} set holds {bad!r}, not an integer id")


def _sets(obj: Any, where: str) -> tuple[dict[str, np.ndarray], str]:
    """``({"train", "val", "test"} → ids, note)`` of one split: a dict keyed by set names, or a
    fair-comparison fold (its test ids and its first model-selection split)."""
    if isinstance(obj, dict) and "model_selection" in obj and "test" in obj:
        inner = obj["model_selection"]
        if not isinstance(inner, (list, tuple)) or not inner or not isinstance(inner[0], dict) \
                or not {"train", "validation"} <= set(inner[0]):
            raise DataError(f"{where}: model_selection must be a list of "
                            "{\"train\": [...], \"validation\": [...]} objects")
        note = (f"model_selection[0] of {len(inner)} (the first inner split)" if len(inner) > 1
                else "")
        return {"train": _ids(inner[0]["train"], where, "train"),
                "val": _ids(inner[0]["validation"], where, "validation"),
                "test": _ids(obj["test"], where, "test")}, note
    if not isinstance(obj, dict):
        raise DataError(f"{where}: holds a {type(obj).__name__}; expected index arrays keyed "
                        "train, val (or valid / validation) and test, or a list of such folds")
    out: dict[str, np.ndarray] = {}
    for key, value in obj.items():
        name = _SET_NAMES.get(str(key).lower())
        if name is None:
            continue
        if name in out:
            raise DataError(f"{where}: gives the {name} set twice (keys {sorted(map(str, obj))})")
        out[name] = _ids(value, where, name)
    missing = [s for s in SPLITS if s not in out]
    if missing:
        raise DataError(f"{where}: no {missing[0]} set (keys: {sorted(map(str, obj))}); expected "
                        "train, val (or valid / validation) and test")
    return out, ""


def read_benchmark_index(path: str | os.PathLike) -> list[list[int]]:
    """Parse a benchmarking-gnns ``<NAME>_<split>.index`` file: one line per fold, each a
    comma-separated list of 0-based graph ids (blank lines are skipped).

    Returns:
        list (one per fold, in file order) of lists of graph ids.

    Raises:
        DataError: a file that is not text, or a token that is not an integer (the message
            names the file and the line).
    """
    path = Path(path)
    folds = []
    for lineno, line in enumerate(decode_text(path, path.read_bytes()).splitlines(), 1):
        if not line.strip():
            continue
        try:
            folds.append([int(tok) for tok in line.split(",")])
        except ValueError:
            bad = next(t for t in line.split(",") if not t.strip().lstrip("-").isdigit())
            raise DataError(f"{path} line {lineno} holds {bad.strip()!r}, not a graph id; each "
                            "line must be a comma-separated list of 0-based graph ids") from None
    return folds


def _index_files(text: str) -> dict[str, Path]:
    """The ``*_train.index``, ``*_val.index``, ``*_test.index`` of a folder, a glob or one of
    them."""
    p = Path(text).expanduser()
    if p.is_dir():
        found = sorted(p.glob("*.index"))
    elif any(c in text for c in "*?["):
        found = sorted(Path(f) for f in glob.glob(os.path.expanduser(text)))
    else:
        stem = next((p.name[: -len(f"_{s}.index")] for s in SPLITS
                     if p.name.endswith(f"_{s}.index")), None)
        if stem is None:
            raise DataError(f"{text}: an .index split file must be named <NAME>_train.index, "
                            "<NAME>_val.index or <NAME>_test.index (benchmarking-gnns format)")
        found = [p.parent / f"{stem}_{s}.index" for s in SPLITS]
        found = [f for f in found if f.is_file()]
    files = {s: [f for f in found if f.name.endswith(f"_{s}.index")] for s in SPLITS}
    if any(len(v) != 1 for v in files.values()):
        names = ", ".join(f.name for f in found) or "none"
        raise DataError(f"{text}: expected one *_train.index, one *_val.index and one "
                        f"*_test.index (benchmarking-gnns format), found {names}")
    return {s: v[0] for s, v in files.items()}


def _read_index_folds(text: str) -> SplitFile:
    paths = _index_files(text)
    lines = {s: read_benchmark_index(paths[s]) for s in SPLITS}
    counts = {s: len(v) for s, v in lines.items()}
    if len(set(counts.values())) != 1 or not counts["train"]:
        shown = ", ".join(f"{paths[s].name}: {n}" for s, n in counts.items())
        raise DataError(f"{text}: the index files have different numbers of lines ({shown}) or "
                        "none; line k of each file is fold k")
    folds = [{s: np.asarray(lines[s][k], dtype=np.int64) for s in SPLITS}
             for k in range(counts["train"])]
    return SplitFile(text, folds, True, "index files",
                     {paths[s].name: sha256_of(paths[s]) for s in SPLITS})


def read_split_file(text: str | os.PathLike) -> SplitFile:
    """The sets of a split or folds file (module docstring): ``.npz``, ``.json``, ``.pickle`` /
    ``.pkl`` (``.gz``), or benchmarking-gnns ``.index`` files (a folder, a glob or one of them).

    Args:
        text: the file, folder or glob (``data.split``).

    Returns:
        SplitFile: its folds (one for a file of one split), unchecked (:func:`check_index_sets`).

    Raises:
        DataNotFoundError: no such file.
        DataError: a file that cannot be read, an unknown suffix, a set that is missing or not a
            list of integer ids, a pickle naming anything but containers, arrays and tensors.
    """
    text = os.fspath(text)
    low = text.lower()
    p = Path(text).expanduser()
    if low.endswith(".index") or p.is_dir() or any(c in text for c in "*?["):
        return _read_index_folds(text)
    if not p.is_file():
        raise DataNotFoundError(f"split file not found: {p} (data.split)")
    if low.endswith(".npz"):
        try:
            with np.load(p, allow_pickle=False) as z:
                obj: Any = {k: np.asarray(z[k]) for k in z.files}
        except Exception as err:  # noqa: BLE001 - zip, pickle and format errors
            raise DataError(f"{p}: not a readable .npz file ({' '.join(str(err).split())[:120]})"
                            "; write it with numpy.savez(path, train=..., val=..., test=...)"
                            ) from None
        fmt = "npz"
    elif low.endswith(".json"):
        try:
            obj = json.loads(decode_text(p, p.read_bytes()))
        except json.JSONDecodeError as err:
            raise DataError(f"{p}: not valid JSON ({err})") from None
        fmt = "json"
    elif low.endswith((".pickle", ".pkl", ".pickle.gz", ".pkl.gz")):
        obj = load_safe_pickle(p, "split file")
        fmt = "pickle"
    else:
        raise DataError(f"{p}: unknown split file type; use .npz, .json, .pickle / .pkl or "
                        "benchmarking-gnns .index files")
    sha = sha256_of(p)
    if isinstance(obj, (list, tuple)):
        if not obj:
            raise DataError(f"{p}: holds no folds (an empty list)")
        read = [_sets(fold, f"{p} fold {k}") for k, fold in enumerate(obj)]
        fair = isinstance(obj[0], dict) and "model_selection" in obj[0]
        note = next((n for _, n in read if n), "")
        return SplitFile(text, [s for s, _ in read], True,
                         f"fair-comparison {fmt}" if fair else fmt, sha, note)
    sets, note = _sets(obj, str(p))
    return SplitFile(text, [sets], False, fmt, sha, note)


def count_folds(text: str | os.PathLike) -> int | None:
    """The number of folds of a folds file, ``None`` for a file of one split.

    Raises:
        DataNotFoundError, DataError: as :func:`read_split_file`.
    """
    found = read_split_file(text)
    return len(found.folds) if found.is_folds else None


def check_index_sets(sets: dict[str, np.ndarray], size: int, where: str,
                     what: str = "items") -> dict[str, list[int]]:
    """Checks the train / val / test ids of one split against ``size`` items.

    Args:
        sets: ``{"train", "val", "test"}`` → ids.
        size: the number of items (ids must lie in ``0..size-1``).
        where: the file (and fold), for the messages.
        what: what the ids count (``"rows"``, ``"graphs"``, ``"nodes"``).

    Returns:
        dict: each set's ids, sorted.

    Raises:
        DataError: (one line naming ``where`` and the set) an empty set, an id out of range or
            twice in a set, or ids in two sets.
    """
    for s in SPLITS:
        a = sets[s]
        if a.size == 0:
            raise DataError(f"{where}: the {s} set is empty; every set needs at least one id")
        out = a[(a < 0) | (a >= size)]
        if out.size:
            raise DataError(f"{where}: the {s} set holds id {int(out[0])}, outside 0..{size - 1} "
                            f"(the data has {size} {what}; ids are 0-based)")
        uniq, counts = np.unique(a, return_counts=True)
        if (counts > 1).any():
            raise DataError(f"{where}: the {s} set holds id {int(uniq[counts > 1][0])} "
                            f"{int(counts.max())} times; each id may appear once")
    for a, b in (("train", "val"), ("train", "test"), ("val", "test")):
        both = np.intersect1d(sets[a], sets[b])
        if both.size:
            shown = ", ".join(str(i) for i in both[:_SHOWN].tolist())
            raise DataError(f"{where}: the {a} and {b} sets share {both.size} id(s) ({shown}"
                            f"{', ...' if both.size > _SHOWN else ''}); each id belongs to one "
                            "set at most")
    return {s: sorted(sets[s].tolist()) for s in SPLITS}


def file_split(text: str, size: int, fold: int = 0, what: str = "items"
               ) -> tuple[dict[str, list[int]], dict[str, Any]]:
    """The checked sets of a split file, or of fold ``fold`` of a folds file, and their record.

    Args:
        text: the file (``data.split``).
        size: the number of items the ids index.
        fold: the fold of a folds file (``data.fold``; unused for one split).
        what: what the ids count, for the messages.

    Returns:
        tuple: ``{"train", "val", "test"}`` → sorted ids, and the record for ``metrics.json``
        ``split``: ``{"rule": "file PATH"}`` or ``{"rule": "folds PATH fold k", "fold": k,
        "num_folds": K}``, with ``format``, ``sha256`` and ``sizes``.

    Raises:
        DataNotFoundError, DataError: as :func:`read_split_file` and :func:`check_index_sets`;
            a fold outside the file's folds; a fair-comparison fold that does not cover all
            ``size`` items (its ids index another list of graphs).
    """
    found = read_split_file(text)
    if found.is_folds:
        k = len(found.folds)
        if isinstance(fold, bool) or not 0 <= int(fold) < k:
            raise DataError(f"data.fold {fold}: {text} holds {k} folds (0..{k - 1})")
        where = f"{text} fold {fold}"
        ids = check_index_sets(found.folds[fold], size, where, what)
        covered = sum(len(v) for v in ids.values())
        if found.format.startswith("fair-comparison") and covered != size:
            raise DataError(f"{where}: its sets hold {covered} of the {size} {what}, but a "
                            "fair-comparison fold covers every graph, so its ids do not index "
                            "this data (that protocol's loader drops graphs with fewer than 2 "
                            "nodes or no edges, which shifts the ids)")
        record: dict[str, Any] = {"rule": f"folds {text} fold {fold}", "fold": int(fold),
                                  "num_folds": k}
    else:
        ids = check_index_sets(found.folds[0], size, text, what)
        record = {"rule": f"file {text}"}
    record.update(format=found.format, sha256=found.sha256,
                  sizes={s: len(v) for s, v in ids.items()})
    if found.note:
        record["note"] = found.note
    return ids, record


def rule_record(rule: SplitRule, split: dict[str, Sequence[int]], *, seed: int | None = None,
                fractions: Sequence[float] | None = None) -> dict[str, Any]:
    """The ``metrics.json`` ``split`` record of a rule that is not a file: ``{"rule":
    "random:0.8,0.1,0.1 seed 0"}``, ``{"rule": "scaffold", "frac": [...]}`` or ``{"rule":
    "column NAME"}``, with ``sizes``.

    Args:
        rule: the rule.
        split: the sets it gave.
        seed: the seed of ``random``.
        fractions: the fractions used (``rule.fractions`` or the dataset's default).

    Returns:
        dict: the record.
    """
    fractions = tuple(fractions or rule.fractions or DEFAULT_FRACTIONS)
    if rule.kind == "random":
        record: dict[str, Any] = {"rule": f"random:{format_fractions(fractions)} seed {seed}"}
    elif rule.kind == "scaffold":
        record = {"rule": "scaffold", "frac": list(fractions)}
    elif rule.kind == "column":
        record = {"rule": f"column {rule.column}"}
    else:
        record = {"rule": rule.text}
    record["sizes"] = {s: len(split[s]) for s in SPLITS}
    return record
