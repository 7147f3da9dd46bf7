"""Molecules from SMILES: OGB-style featurization, the Bemis-Murcko scaffold split, datasets read
from CSV files (a user's own, :class:`MoleculeCSV`, or the MoleculeNet benchmarks,
:class:`MoleculeNetCSV`), their loaders and registry entries (``tox21``, ..., ``ogbg-molhiv``,
whose published files OGB's loader reads: :mod:`graph_transformers.datasets.molecules.ogb`).
Metrics with the OGB evaluator's semantics live in :mod:`graph_transformers.training.metrics`.

Graphs follow the convention of OGB's ``smiles2graph`` (Hu et al., "Open Graph Benchmark", 2020),
reimplemented here with RDKit:

* ``x``: ``LongTensor [num_nodes, 9]``, one categorical index per column of
  :data:`ATOM_FEATURE_NAMES` (vocabulary sizes :data:`ATOM_FEATURE_DIMS`);
* ``edge_index``: ``LongTensor [2, num_edges]``, every bond stored twice, ``(i, j)`` then
  ``(j, i)``, in RDKit bond order (``num_edges = 2 * num_bonds``);
* ``edge_attr``: ``LongTensor [num_edges, 3]``, one index per column of
  :data:`BOND_FEATURE_NAMES` (sizes :data:`BOND_FEATURE_DIMS`);
* ``y`` (datasets only): ``FloatTensor [1, num_tasks]``, ``NaN`` where a label is missing.

Each column can be embedded with its own ``nn.Embedding(ATOM_FEATURE_DIMS[k], d)``; every index
is ``< ATOM_FEATURE_DIMS[k]`` (values outside OGB's allowable lists go to the column's last,
"misc", entry).

Splits are the deterministic scaffold split of :func:`scaffold_split` (the rule of DeepChem's
``ScaffoldSplitter`` and snap-stanford/pretrain-gnns ``scaffold_split``, which OGB used to make the
``ogbg-mol*`` splits). The data files are described in ``docs/datasets.md`` ("Raw files").
"""
from __future__ import annotations

import contextlib
import csv
import functools
import gzip
import hashlib
import json
import logging
import math
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data, InMemoryDataset

from ..._optional import require
from ...data.cache import (DATA_ENV, DataNotFoundError, FileBackedDataset, pre_transform_key,
                           resolve_cache_dir, resolve_data_dir, sha256_of, write_cache_json)
from ...data.generated import SPLITS, PathLike, Transform, check_source
from ...data.registry import DatasetSpec
from ...data.textfiles import check_header, check_text_head, csv_records, read_head
from ...errors import DataError
from ..canonical import canonical_root, locate_ogb

__all__ = [
    "ATOM_FEATURE_NAMES",
    "ATOM_FEATURE_VALUES",
    "ATOM_FEATURE_DIMS",
    "BOND_FEATURE_NAMES",
    "BOND_FEATURE_VALUES",
    "BOND_FEATURE_DIMS",
    "SPLITS",
    "MoleculeNetInfo",
    "MOLECULENET",
    "atom_features",
    "bond_features",
    "mol_to_graph",
    "smiles_to_graph",
    "murcko_scaffold",
    "scaffold_split",
    "MoleculeCSV",
    "MoleculeNetCSV",
    "csv_task",
    "load_molecule_csv",
    "load_moleculenet",
    "molecule_csv_spec",
    "CLINTOX_SPEC",
    "ESOL_SPEC",
    "FREESOLV_SPEC",
    "LIPO_SPEC",
    "MOLHIV_SPEC",
    "SIDER_SPEC",
    "TOX21_SPEC",
]

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Featurization (OGB smiles2graph semantics)
# --------------------------------------------------------------------------------------------
_MISC = "misc"

#: Names of the 9 atom-feature columns of ``x``, in order.
ATOM_FEATURE_NAMES: tuple[str, ...] = (
    "atomic_num",             # Atom.GetAtomicNum()
    "chirality",              # str(Atom.GetChiralTag())
    "degree",                 # Atom.GetTotalDegree()  (hydrogens included)
    "formal_charge",          # Atom.GetFormalCharge()
    "num_hs",                 # Atom.GetTotalNumHs()
    "num_radical_electrons",  # Atom.GetNumRadicalElectrons()
    "hybridization",          # str(Atom.GetHybridization())
    "is_aromatic",            # Atom.GetIsAromatic()
    "is_in_ring",             # Atom.IsInRing()
)

#: OGB's allowable values per atom column; the index of a value is the feature. A value not in
#: the list maps to the last entry (``"misc"``), e.g. atomic number 0 (``*``), chirality
#: ``CHI_ALLENE``/``CHI_SQUAREPLANAR``/..., degree > 10, |charge| > 5, hybridization ``S`` /
#: ``SP2D`` / ``OTHER`` / ``UNSPECIFIED``.
ATOM_FEATURE_VALUES: tuple[tuple[Any, ...], ...] = (
    tuple(range(1, 119)) + (_MISC,),
    ("CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW", "CHI_OTHER", _MISC),
    tuple(range(0, 11)) + (_MISC,),
    tuple(range(-5, 6)) + (_MISC,),
    tuple(range(0, 9)) + (_MISC,),
    tuple(range(0, 5)) + (_MISC,),
    ("SP", "SP2", "SP3", "SP3D", "SP3D2", _MISC),
    (False, True),
    (False, True),
)

#: Names of the 3 bond-feature columns of ``edge_attr``, in order.
BOND_FEATURE_NAMES: tuple[str, ...] = (
    "bond_type",      # str(Bond.GetBondType())
    "bond_stereo",    # str(Bond.GetStereo())
    "is_conjugated",  # Bond.GetIsConjugated()
)

#: OGB's allowable values per bond column. Bond types outside the list (dative, quadruple, ...)
#: map to ``"misc"``. OGB's stereo list has no misc entry; stereo values newer RDKit can produce
#: (``STEREOATROPCW`` / ``STEREOATROPCCW``) map to the last entry, ``STEREOANY``.
BOND_FEATURE_VALUES: tuple[tuple[Any, ...], ...] = (
    ("SINGLE", "DOUBLE", "TRIPLE", "AROMATIC", _MISC),
    ("STEREONONE", "STEREOZ", "STEREOE", "STEREOCIS", "STEREOTRANS", "STEREOANY"),
    (False, True),
)

#: Vocabulary size of every atom column: ``[119, 5, 12, 12, 10, 6, 6, 2, 2]`` (= OGB's
#: ``get_atom_feature_dims()``); usable as ``num_types`` of one embedding per column.
ATOM_FEATURE_DIMS: list[int] = [len(v) for v in ATOM_FEATURE_VALUES]
#: Vocabulary size of every bond column: ``[5, 6, 2]`` (= OGB's ``get_bond_feature_dims()``).
BOND_FEATURE_DIMS: list[int] = [len(v) for v in BOND_FEATURE_VALUES]

_ATOM_LOOKUP = [{v: i for i, v in enumerate(vals)} for vals in ATOM_FEATURE_VALUES]
_BOND_LOOKUP = [{v: i for i, v in enumerate(vals)} for vals in BOND_FEATURE_VALUES]


def _lookup(table: dict, value: Any, size: int) -> int:
    """Index of ``value`` in a column's table; the last index (misc) when absent."""
    return table.get(value, size - 1)


def atom_features(atom: Any) -> list[int]:
    """The 9 OGB feature indices of an RDKit atom (columns :data:`ATOM_FEATURE_NAMES`)."""
    t = _ATOM_LOOKUP
    d = ATOM_FEATURE_DIMS
    return [
        _lookup(t[0], atom.GetAtomicNum(), d[0]),
        _lookup(t[1], str(atom.GetChiralTag()), d[1]),
        _lookup(t[2], atom.GetTotalDegree(), d[2]),
        _lookup(t[3], atom.GetFormalCharge(), d[3]),
        _lookup(t[4], atom.GetTotalNumHs(), d[4]),
        _lookup(t[5], atom.GetNumRadicalElectrons(), d[5]),
        _lookup(t[6], str(atom.GetHybridization()), d[6]),
        int(bool(atom.GetIsAromatic())),
        int(bool(atom.IsInRing())),
    ]


def bond_features(bond: Any) -> list[int]:
    """The 3 OGB feature indices of an RDKit bond (columns :data:`BOND_FEATURE_NAMES`)."""
    t = _BOND_LOOKUP
    d = BOND_FEATURE_DIMS
    return [
        _lookup(t[0], str(bond.GetBondType()), d[0]),
        _lookup(t[1], str(bond.GetStereo()), d[1]),
        int(bool(bond.GetIsConjugated())),
    ]


_ENUM_TABLES: tuple[dict, ...] | None = None


def _enum_tables() -> tuple[dict, ...]:
    """The string-valued columns re-keyed by RDKit enum value (chirality, hybridization, bond
    type, bond stereo), so the bulk featurizer in :func:`mol_to_graph` avoids ``str()`` calls.
    Same indices as :func:`atom_features` / :func:`bond_features`."""
    global _ENUM_TABLES
    if _ENUM_TABLES is None:
        from rdkit import Chem

        def table(enum, lookup: dict) -> dict:
            return {v: lookup[name] for name, v in enum.names.items() if name in lookup}

        _ENUM_TABLES = (
            table(Chem.ChiralType, _ATOM_LOOKUP[1]),
            table(Chem.HybridizationType, _ATOM_LOOKUP[6]),
            table(Chem.BondType, _BOND_LOOKUP[0]),
            table(Chem.BondStereo, _BOND_LOOKUP[1]),
        )
    return _ENUM_TABLES


def mol_to_graph(mol: Any) -> Data:
    r"""Featurize an RDKit molecule the way OGB's ``smiles2graph`` does.

    Nodes are the atoms of ``mol`` in RDKit order (the hydrogens RDKit keeps implicit are not
    nodes; they are counted in ``num_hs`` and ``degree``). Each bond gives two directed edges,
    ``(begin, end)`` then ``(end, begin)``, in bond order. Row ``i`` of ``x`` equals
    ``atom_features(mol.GetAtomWithIdx(i))``; edge rows equal :func:`bond_features`.

    Args:
        mol: an ``rdkit.Chem.Mol`` (sanitized, as ``Chem.MolFromSmiles`` returns it).

    Returns:
        :class:`~torch_geometric.data.Data` with ``x`` (``LongTensor [num_nodes, 9]``),
        ``edge_index`` (``LongTensor [2, 2 * num_bonds]``), ``edge_attr``
        (``LongTensor [2 * num_bonds, 3]``) and ``num_nodes``. Column ``k`` of ``x`` lies in
        ``[0, ATOM_FEATURE_DIMS[k])``, column ``k`` of ``edge_attr`` in
        ``[0, BOND_FEATURE_DIMS[k])``.

    Raises:
        ValueError: ``mol`` is ``None`` or has no atoms.
    """
    if mol is None:
        raise ValueError("mol_to_graph: got None (an RDKit parse failure?)")
    n = mol.GetNumAtoms()
    if n == 0:
        raise ValueError("mol_to_graph: the molecule has no atoms")
    chiral_t, hyb_t, btype_t, stereo_t = _enum_tables()
    num_t, deg_t, chg_t, nh_t, rad_t = (_ATOM_LOOKUP[k] for k in (0, 2, 3, 4, 5))
    d = ATOM_FEATURE_DIMS
    x: list[int] = []
    for i in range(n):
        a = mol.GetAtomWithIdx(i)
        x += (
            num_t.get(a.GetAtomicNum(), d[0] - 1),
            chiral_t.get(a.GetChiralTag(), d[1] - 1),
            deg_t.get(a.GetTotalDegree(), d[2] - 1),
            chg_t.get(a.GetFormalCharge(), d[3] - 1),
            nh_t.get(a.GetTotalNumHs(), d[4] - 1),
            rad_t.get(a.GetNumRadicalElectrons(), d[5] - 1),
            hyb_t.get(a.GetHybridization(), d[6] - 1),
            1 if a.GetIsAromatic() else 0,
            1 if a.IsInRing() else 0,
        )
    m = mol.GetNumBonds()
    db = BOND_FEATURE_DIMS
    ends: list[int] = []
    attr: list[int] = []
    for k in range(m):
        b = mol.GetBondWithIdx(k)
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        f = (
            btype_t.get(b.GetBondType(), db[0] - 1),
            stereo_t.get(b.GetStereo(), db[1] - 1),
            1 if b.GetIsConjugated() else 0,
        )
        ends += (i, j, j, i)
        attr += f + f
    edges = torch.tensor(ends, dtype=torch.long).view(m, 2, 2)  # [bond, direction, (src, dst)]
    return Data(
        x=torch.tensor(x, dtype=torch.long).view(n, len(d)),
        edge_index=edges.reshape(2 * m, 2).t().contiguous(),
        edge_attr=torch.tensor(attr, dtype=torch.long).view(2 * m, len(db)),
        num_nodes=n,
    )


def parse_smiles(smiles: str) -> tuple[Any, str | None]:
    """``(mol, None)`` when RDKit parses and sanitizes ``smiles`` (and it has atoms), else
    ``(None, reason)``: the one SMILES parser of the package (MoleculeNet, molecule CSVs, ZINC).
    RDKit's own log output is blocked while parsing (a scoped ``BlockLogs``: the caller's logging
    settings are left as they were).

    Raises:
        MissingDependencyError: when RDKit is not installed.
    """
    require("rdkit", "parsing SMILES")
    from rdkit import Chem, rdBase

    if not smiles:
        return None, "empty SMILES"
    blocker = rdBase.BlockLogs()
    try:
        mol = Chem.MolFromSmiles(smiles)
        if mol is not None:
            if mol.GetNumAtoms() == 0:
                return None, "no atoms"
            return mol, None
        raw = Chem.MolFromSmiles(smiles, sanitize=False)
        if raw is None:
            return None, "SMILES syntax error"
        try:
            Chem.SanitizeMol(raw)
        except Exception as e:  # noqa: BLE001 - RDKit raises several sanitization exceptions
            return None, f"RDKit sanitization failed: {e}"
        return None, "RDKit could not parse it"
    finally:
        del blocker


def smiles_to_graph(smiles: str) -> Data:
    """Featurize a SMILES string: ``Chem.MolFromSmiles`` (default sanitization) then
    :func:`mol_to_graph`.

    Returns:
        :class:`~torch_geometric.data.Data` as :func:`mol_to_graph` (no ``y``).

    Raises:
        ValueError: RDKit cannot parse or sanitize ``smiles``, or it has no atoms; the message
            names the SMILES and the reason.
    """
    mol, reason = parse_smiles(smiles.strip() if isinstance(smiles, str) else smiles)
    if mol is None:
        raise ValueError(f"invalid SMILES {smiles!r}: {reason}")
    return mol_to_graph(mol)


# --------------------------------------------------------------------------------------------
# Scaffold split
# --------------------------------------------------------------------------------------------


def murcko_scaffold(smiles_or_mol: Any) -> str:
    """The Bemis-Murcko scaffold SMILES with chirality
    (``MurckoScaffold.MurckoScaffoldSmiles(..., includeChirality=True)``); ``""`` for an acyclic
    molecule.

    Raises:
        ValueError: a SMILES RDKit cannot parse.
    """
    from rdkit.Chem.Scaffolds import MurckoScaffold

    mol = smiles_or_mol
    if isinstance(smiles_or_mol, str):
        mol, reason = parse_smiles(smiles_or_mol.strip())
        if mol is None:
            raise ValueError(f"murcko_scaffold: invalid SMILES {smiles_or_mol!r}: {reason}")
    return MurckoScaffold.MurckoScaffoldSmiles(mol=mol, includeChirality=True)


def _check_frac(frac: Sequence[float]) -> tuple[float, float, float]:
    try:
        f = tuple(float(v) for v in frac)
    except (TypeError, ValueError):
        raise ValueError(f"frac must be three numbers (train, val, test), got {frac!r}") from None
    if len(f) != 3 or any(not (0.0 <= v <= 1.0) for v in f) or abs(sum(f) - 1.0) > 1e-6:
        raise ValueError(f"frac must be three fractions in [0, 1] summing to 1, got {frac!r}")
    return f  # type: ignore[return-value]


def _split_from_scaffolds(
    scaffolds: Sequence[str], frac: Sequence[float] = (0.8, 0.1, 0.1)
) -> dict[str, list[int]]:
    """The scaffold-split rule of :func:`scaffold_split`, given each molecule's scaffold."""
    f_train, f_val, _ = _check_frac(frac)
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(scaffolds):
        groups.setdefault(s, []).append(i)  # indices ascend within a group
    ordered = sorted(groups.values(), key=lambda g: (len(g), g[0]), reverse=True)
    n = len(scaffolds)
    train_cut = f_train * n
    val_cut = (f_train + f_val) * n
    out: dict[str, list[int]] = {s: [] for s in SPLITS}
    for g in ordered:
        if len(out["train"]) + len(g) <= train_cut:
            out["train"] += g
        elif len(out["train"]) + len(out["val"]) + len(g) <= val_cut:
            out["val"] += g
        else:
            out["test"] += g
    return {s: sorted(v) for s, v in out.items()}


def min_molecules_per_split(frac: Sequence[float] = (0.8, 0.1, 0.1)) -> int:
    """The fewest molecules, all of distinct scaffolds, whose scaffold split with ``frac``
    leaves no split empty (6 for 80/10/10); molecules sharing a scaffold need more."""
    frac = _check_frac(frac)
    for n in range(1, 10_001):
        if all(_split_from_scaffolds([str(i) for i in range(n)], frac).values()):
            return n
    raise ValueError(f"frac={frac!r} leaves a split empty for any size")


def scaffold_split(
    smiles_list: Sequence[str], frac: Sequence[float] = (0.8, 0.1, 0.1)
) -> dict[str, list[int]]:
    r"""The deterministic Bemis-Murcko scaffold split (the DeepChem / pretrain-gnns rule OGB used
    for its ``ogbg-mol*`` splits).

    The exact rule, for ``N = len(smiles_list)``:

    1. scaffold of molecule ``i`` = :func:`murcko_scaffold` (``MurckoScaffoldSmiles`` with
       ``includeChirality=True``; all acyclic molecules share the scaffold ``""``);
    2. group the indices by scaffold (ascending inside each group);
    3. order the groups by the key ``(group size, first index)`` **descending**: larger groups
       first, and among groups of equal size the one whose first member comes *later* first
       (``sorted(..., key=lambda g: (len(g), g[0]), reverse=True)``, as in the reference code);
    4. with ``train_cut = frac[0] * N`` and ``val_cut = (frac[0] + frac[1]) * N``, place each
       group, in that order, whole into: train if ``len(train) + len(group) <= train_cut``, else
       val if ``len(train) + len(val) + len(group) <= val_cut``, else test. (A later, smaller
       group may still go to train or val after a larger one went further down.)

    No scaffold is shared between splits; sizes are close to ``frac`` but not exact.

    Args:
        smiles_list: the molecules, in dataset order.
        frac: ``(train, val, test)`` fractions, each in ``[0, 1]``, summing to 1.

    Returns:
        ``{"train": [...], "val": [...], "test": [...]}``: positions in ``smiles_list``, each
        list sorted ascending; disjoint and together covering ``range(N)``.

    Raises:
        ValueError: a SMILES RDKit cannot parse (the message gives its position), or bad
            ``frac``.
    """
    _check_frac(frac)
    scaffolds = []
    for i, s in enumerate(smiles_list):
        try:
            scaffolds.append(murcko_scaffold(s))
        except ValueError as e:
            raise ValueError(f"scaffold_split: position {i}: {e}") from None
    return _split_from_scaffolds(scaffolds, frac)


# --------------------------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------------------------
_TASKS = ("classification", "regression")
_FORMAT_VERSION = 2  # bump when the processed format, the featurization or label parsing changes
#: cells read as a missing label (NaN, masked in loss and metrics); ``nan`` / ``inf`` written
#: out are data errors, as a non-finite label is more often a bug upstream than a blank
_MISSING = {"", "na", "n/a", "none", "null"}
_MAX_LOGGED_ROWS = 20


def _open_text(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


@contextlib.contextmanager
def _reading(path: Path):
    """Turns what a damaged file raises while it is read (a truncated or corrupt gzip stream,
    bytes that are not UTF-8, a malformed CSV line) into one :class:`DataError` naming it."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise DataError(f"{path}: cannot read it: truncated or corrupt gzip file ({err})") from None
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text (byte {err.object[err.start]:#04x} at offset "
                        f"{err.start}); save it as UTF-8") from None
    except csv.Error as err:
        raise DataError(f"{path}: not a readable CSV file ({err})") from None


def _read_header(path: Path) -> list[str]:
    """The stripped column names of a CSV's first line, once its first bytes show text (not a
    pickle, a zip archive, ...: :func:`~graph_transformers.data.textfiles.check_text_head`).

    Raises:
        DataError: not UTF-8 text, an unreadable file, or an empty one.
    """
    check_text_head(path, read_head(path, gzip_ok=True), gzip_ok=True)
    with _reading(path), _open_text(path) as f:
        header = next((rec for _, rec in csv_records(path, f)), None)
    if not header:
        raise DataError(f"{path}: empty file (expected a CSV header line)")
    return [h.strip() for h in header]


#: labels beyond this become inf in float32 tensors (issue 26: a label of 1e30 gave RMSE inf)
_FLOAT32_MAX = 3.4028234663852886e38


def _parse_label(text: str, task: str, path: Path, line: int, column: str) -> float:
    t = text.strip()
    if t.lower() in _MISSING:
        return float("nan")
    try:
        v = float(t)
    except ValueError:
        raise DataError(
            f"{path}: line {line}, column {column!r}: label {text!r} is not a number "
            f"(leave the cell blank for a missing label)"
        ) from None
    if not math.isfinite(v):
        raise DataError(
            f"{path}: line {line}, column {column!r}: label {text!r} is not a finite number "
            f"(leave the cell blank for a missing label)"
        )
    if abs(v) > _FLOAT32_MAX:
        raise DataError(
            f"{path}: line {line}, column {column!r}: label {text!r} is beyond float32's range "
            f"(±3.4e38), where training and metrics compute: rescale the column"
        )
    if task == "classification" and v not in (0.0, 1.0):
        raise DataError(
            f"{path}: line {line}, column {column!r}: classification label {text!r} is not 0 or "
            f"1 (leave the cell blank for a missing label)"
        )
    return v


def _short(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _format_skipped(skipped: Sequence[dict]) -> str:
    """``line L (row R): 'SMILES' (reason); ...`` for the first rows, then a count."""
    shown = "; ".join(
        f"line {s['line']} (row {s['row']}): {_short(s['smiles'])!r} ({_short(s['reason'])})"
        for s in skipped[:_MAX_LOGGED_ROWS]
    )
    more = len(skipped) - _MAX_LOGGED_ROWS
    return shown + (f"; ... and {more} more (see .skipped)" if more > 0 else "")


def _format_lines(skipped: Sequence[dict]) -> str:
    lines = ", ".join(str(s["line"]) for s in skipped[:_MAX_LOGGED_ROWS])
    return lines + (", ..." if len(skipped) > _MAX_LOGGED_ROWS else "")


def _check_csv_arguments(name: str, split: str, task: str, path: Any, max_rows: Any) -> None:
    """The arguments of :class:`MoleculeCSV` that need no file: split, task, path, max_rows."""
    if split not in SPLITS + ("all",):
        raise ValueError(f"{name}: split must be one of {SPLITS + ('all',)}, got {split!r}")
    if task not in _TASKS:
        raise ValueError(f"{name}: task must be one of {_TASKS}, got {task!r}")
    if path is None:
        raise ValueError(f"{name}: path (the CSV file) is required")
    if max_rows is not None and (isinstance(max_rows, bool) or int(max_rows) < 1):
        raise ValueError(
            f"{name}: max_rows must be a positive integer or None, got {max_rows!r}")


def _target_columns(name: str, path: Path, smiles_column: str,
                    target_columns: Sequence[str] | str | None) -> list[str]:
    """The label columns (default: every column but the SMILES one), checked against the
    header of ``path``: each is in it, once (a name given twice, where it is used, would be
    read from its first copy silently).

    Raises:
        DataError: an unreadable or empty file, a column not in the header, or a used column
            whose name the header gives twice (naming both positions).
    """
    header = _read_header(path)
    if smiles_column not in header:
        raise DataError(
            f"{name}: SMILES column {smiles_column!r} not in the header of {path}; "
            f"columns: {header}"
        )
    if target_columns is None:
        target_columns = [c for c in header if c != smiles_column]
    elif isinstance(target_columns, str):
        target_columns = [target_columns]
    target_columns = list(target_columns)
    missing = [c for c in target_columns if c not in header]
    if missing or not target_columns:
        raise DataError(
            f"{name}: target columns {missing or target_columns} not in the header of "
            f"{path}; columns: {header}"
        )
    check_header(path, header, used=[smiles_column, *target_columns])
    return target_columns


class MoleculeCSV(FileBackedDataset):
    r"""Molecular graph property prediction from a CSV file of SMILES and labels (``.csv`` or
    ``.csv.gz``), featurized like OGB (:func:`mol_to_graph`) and split by scaffold
    (:func:`scaffold_split`).

    Each graph: ``x`` ``LongTensor [num_nodes, 9]``, ``edge_index`` ``LongTensor [2, num_edges]``,
    ``edge_attr`` ``LongTensor [num_edges, 3]``, ``y`` ``FloatTensor [1, num_tasks]`` (``NaN`` for
    a blank / ``NA`` label).

    Rows whose SMILES RDKit cannot parse or sanitize (or that has no atoms) are **skipped**, never
    fatal and never silent: they are listed in :attr:`skipped`, a WARNING on
    ``logging.getLogger(__name__)`` gives their count, line numbers, SMILES and RDKit's reason
    when the cache is built, and a shorter WARNING (count + line numbers) each time the dataset is
    loaded from the cache. The scaffold split is computed over the remaining (valid) molecules in
    file order. Building takes about 1.5 ms per molecule (parse, featurize, scaffold) on one CPU
    core; loading from the cache is fast.

    The file is read in place. Processed graphs are cached in
    ``root/processed/<sha256 of file>_<settings hash>_<pre_transform_key(pre_transform)>/``
    (``data.pt`` with all valid molecules + ``meta.json`` with the split, skipped rows and
    provenance), so editing the file, the columns, the task, ``frac``, ``max_rows`` or the
    pre-transform gives a new cache entry, never a stale one.

    Args:
        root: cache directory (default ``resolve_cache_dir() / "MoleculeCSV" / <file stem>``).
        split (str): ``"train"``, ``"val"``, ``"test"`` or ``"all"`` (every valid molecule in
            file order).
        path: the CSV file (required). First line = header.
        smiles_column (str): the SMILES column.
        target_columns: label columns (default: every column but ``smiles_column``).
        task (str): ``"classification"`` (labels 0 / 1 / blank) or ``"regression"``.
        transform, pre_transform, force_reload: as in
            :class:`~torch_geometric.data.InMemoryDataset`.
        frac: ``(train, val, test)`` fractions of the scaffold split.
        max_rows (int, optional): read only the first ``max_rows`` data rows (a prefix, e.g. for
            quick tests); the split is then the scaffold split of that prefix.

    Attributes:
        skipped (list[dict]): skipped rows: ``row`` (0-based data row), ``line`` (line in the
            file, the header being line 1), ``smiles``, ``reason``.
        provenance (dict): source path and sha256, settings, row / valid / skipped counts and
            split sizes.
        smiles (list[str]): SMILES of this split's molecules, in dataset order.
        rows (list[int]): 0-based data-row number in the file of each molecule of this split.
        split_indices (dict[str, list[int]]): positions of each split among the valid molecules.
        task_names (list[str]), num_tasks (int), task (str), metric (str): the targets, and
            ``"roc_auc"`` for classification / ``"rmse"`` for regression.

    Raises:
        DataNotFoundError: ``path`` does not exist.
        DataError: a file that is not CSV text (a pickle, a zip archive, not UTF-8; named as
            such), a column not in the header, a used column whose name the header gives twice,
            a quoted cell over several lines, a label that is not a number (or not 0 / 1 for
            classification; the message gives line and column), or no valid molecule at all.
        ValueError: unknown split / task, or bad ``frac``.
    """

    _missing = "CSV file"

    def __init__(
        self,
        root: str | os.PathLike | None = None,
        split: str = "train",
        path: str | os.PathLike | None = None,
        smiles_column: str = "smiles",
        target_columns: Sequence[str] | None = None,
        task: str = "classification",
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        force_reload: bool = False,
        *,
        frac: Sequence[float] = (0.8, 0.1, 0.1),
        max_rows: int | None = None,
    ) -> None:
        name = type(self).__name__
        _check_csv_arguments(name, split, task, path, max_rows)
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise DataNotFoundError(f"{name}: CSV file not found: {self.path}")
        target_columns = _target_columns(name, self.path, smiles_column, target_columns)
        self.split = split
        self.smiles_column = smiles_column
        self.task_names = target_columns
        self.task = task
        self.frac = _check_frac(frac)
        self.max_rows = None if max_rows is None else int(max_rows)
        self.file_sha256 = sha256_of(self.path)
        self._key = self._cache_key(pre_transform)
        if root is None:
            stem = self.path.name.split(".")[0] or "data"
            root = resolve_cache_dir() / "MoleculeCSV" / stem
        super().__init__(os.fspath(root), transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[0])  # verifies data.pt and meta.json, rebuilds if needed
        self._select_split(self._read_meta())

    def _cache_key(self, pre_transform: Callable | None) -> str:
        """``<sha256 of the file>_<settings hash>_<pre_transform key>``: the processed folder."""
        settings = json.dumps(
            {"format": _FORMAT_VERSION, "smiles": self.smiles_column,
             "targets": self.task_names, "task": self.task, "frac": self.frac,
             "max_rows": self.max_rows},
            sort_keys=True,
        )
        return "_".join((
            self.file_sha256[:16],
            hashlib.sha256(settings.encode()).hexdigest()[:8],
            pre_transform_key(pre_transform),
        ))

    def _read_meta(self) -> dict[str, Any]:
        """Reads ``meta.json`` (skipped rows, split, provenance) and, on a load from the cache,
        repeats the skipped-rows summary as a WARNING."""
        with open(self.processed_paths[1]) as f:
            meta = json.load(f)
        self.skipped: list[dict] = meta["skipped"]
        self.split_indices: dict[str, list[int]] = meta["split"]
        self.provenance: dict[str, Any] = meta["provenance"]
        if self.skipped and not getattr(self, "_logged_skipped", False):
            # process() logged the details just now; a load from the cache repeats a summary.
            log.warning(
                "%s(%s): %d of %d rows were skipped (invalid SMILES) when this cache was built; "
                "%d molecules kept; lines %s; details in .skipped", type(self).__name__,
                self.path, len(self.skipped), self.provenance["num_rows"],
                self.provenance["num_molecules"], _format_lines(self.skipped),
            )
        return meta

    def _select_split(self, meta: dict[str, Any]) -> None:
        """Keeps this split's molecules (all of them for ``"all"``) and their SMILES and rows."""
        idx = (list(range(len(meta["smiles"]))) if self.split == "all"
               else self.split_indices[self.split])
        self.smiles: list[str] = [meta["smiles"][i] for i in idx]
        self.rows: list[int] = [meta["rows"][i] for i in idx]
        if self.split != "all":
            if idx:
                self.data, self.slices = self.collate([self.get(i) for i in idx])
            else:
                log.warning("%s(%s): split %r is empty (%d molecules are too few for frac=%s)",
                            type(self).__name__, self.path, self.split, len(meta["smiles"]),
                            self.frac)
                self.data, self.slices = Data(), {}
            self._data_list = None

    # -- task description -----------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return len(self.task_names)

    @property
    def metric(self) -> str:
        return "roc_auc" if self.task == "classification" else "rmse"

    def _read_rows(self):
        """Yield ``(row, line, smiles, labels)`` for the data rows (up to ``max_rows``)."""
        with _reading(self.path), _open_text(self.path) as f:
            records = csv_records(self.path, f)  # a quoted cell over several lines: DataError
            header = [h.strip() for h in next(records)[1]]
            s_col = header.index(self.smiles_column)
            t_cols = [header.index(c) for c in self.task_names]
            row = 0
            for line, record in records:
                if not record or all(not c.strip() for c in record):
                    continue  # blank line
                if self.max_rows is not None and row >= self.max_rows:
                    break
                cell = lambda j: record[j] if j < len(record) else ""  # noqa: E731
                labels = [
                    _parse_label(cell(j), self.task, self.path, line, self.task_names[k])
                    for k, j in enumerate(t_cols)
                ]
                yield row, line, cell(s_col).strip(), labels
                row += 1

    def process(self) -> None:
        """Parse every row, featurize the valid molecules, compute their scaffolds and the
        split, apply ``pre_transform`` and save graphs + metadata."""
        graphs, smiles, rows, scaffolds, skipped, num_rows = self._featurize_rows()
        if skipped:
            log.warning(
                "%s(%s): skipped %d of %d rows whose SMILES RDKit cannot use; %d molecules "
                "kept: %s", type(self).__name__, self.path, len(skipped), num_rows, len(graphs),
                _format_skipped(skipped),
            )
            self._logged_skipped = True
        if not graphs:
            raise DataError(
                f"{type(self).__name__}: no valid molecule in {self.path} "
                f"({num_rows} rows, {len(skipped)} skipped)"
            )
        split = _split_from_scaffolds(scaffolds, self.frac)
        if self.pre_transform is not None:
            graphs = [self.pre_transform(g) for g in graphs]
        self.save(graphs, self.processed_paths[0])
        provenance = self._provenance(num_rows, len(graphs), len(skipped), split)
        meta = {"provenance": provenance, "skipped": skipped, "split": split,
                "smiles": smiles, "rows": rows}
        write_cache_json(self.processed_paths[1], meta)

    def _featurize_rows(self) -> tuple[list[Data], list[str], list[int], list[str], list[dict],
                                       int]:
        """Parses and featurizes every row: ``(graphs, smiles, rows, scaffolds)`` of the valid
        molecules (``y`` set, before ``pre_transform``), the skipped rows and the row count."""
        graphs: list[Data] = []
        smiles: list[str] = []
        rows: list[int] = []
        scaffolds: list[str] = []
        skipped: list[dict] = []
        num_rows = 0
        for row, line, smi, labels in self._read_rows():
            num_rows += 1
            mol, reason = parse_smiles(smi)
            graph = None
            if mol is not None:
                try:
                    graph = mol_to_graph(mol)
                    scaffold = murcko_scaffold(mol)
                except Exception as e:  # noqa: BLE001 - RDKit errors on exotic molecules
                    reason = f"featurization failed: {e}"
                    graph = None
            if graph is None:
                skipped.append({"row": row, "line": line, "smiles": smi, "reason": reason})
                continue
            graph.y = torch.tensor(labels, dtype=torch.float32).view(1, -1)
            graphs.append(graph)
            smiles.append(smi)
            rows.append(row)
            scaffolds.append(scaffold)
        return graphs, smiles, rows, scaffolds, skipped, num_rows

    def _provenance(self, num_rows: int, num_molecules: int, num_skipped: int,
                    split: dict[str, list[int]]) -> dict[str, Any]:
        """The ``provenance`` record of ``meta.json``: source, settings, counts, split rule."""
        return {
            "source": str(self.path),
            "sha256": self.file_sha256,
            "smiles_column": self.smiles_column,
            "target_columns": self.task_names,
            "task": self.task,
            "frac": list(self.frac),
            "max_rows": self.max_rows,
            "num_rows": num_rows,
            "num_molecules": num_molecules,
            "num_skipped": num_skipped,
            "split_sizes": {s: len(v) for s, v in split.items()},
            "split_rule": "scaffold (MurckoScaffoldSmiles includeChirality=True; groups by "
                          "(size, first index) descending; greedy train/val/test fill)",
            "featurization": "OGB smiles2graph (9 atom / 3 bond categorical features)",
            "format_version": _FORMAT_VERSION,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}, split={self.split!r}, tasks={self.num_tasks})"


@dataclass(frozen=True)
class MoleculeNetInfo:
    """One MoleculeNet benchmark: its file in ``<data_dir>/MoleculeNet/``, label columns, task
    type, metric key (``"roc_auc"`` / ``"rmse"``, as in ``metrics.json``), and the sha256 and
    data-row count of the reference copy (``docs/datasets.md``, "Raw files")."""

    file: str
    target_columns: tuple[str, ...]
    task: str
    metric: str
    sha256: str
    num_rows: int
    smiles_column: str = "smiles"

    @property
    def num_tasks(self) -> int:
        return len(self.target_columns)


_TOX21_TASKS = (
    "NR-AR", "NR-AR-LBD", "NR-AhR", "NR-Aromatase", "NR-ER", "NR-ER-LBD", "NR-PPAR-gamma",
    "SR-ARE", "SR-ATAD5", "SR-HSE", "SR-MMP", "SR-p53",
)
_SIDER_TASKS = (
    "Hepatobiliary_disorders", "Metabolism_and_nutrition_disorders", "Product_issues",
    "Eye_disorders", "Investigations", "Musculoskeletal_and_connective_tissue_disorders",
    "Gastrointestinal_disorders", "Social_circumstances", "Immune_system_disorders",
    "Reproductive_system_and_breast_disorders",
    "Neoplasms_benign,_malignant_and_unspecified_(incl_cysts_and_polyps)",
    "General_disorders_and_administration_site_conditions", "Endocrine_disorders",
    "Surgical_and_medical_procedures", "Vascular_disorders", "Blood_and_lymphatic_system_disorders",
    "Skin_and_subcutaneous_tissue_disorders", "Congenital,_familial_and_genetic_disorders",
    "Infections_and_infestations", "Respiratory,_thoracic_and_mediastinal_disorders",
    "Psychiatric_disorders", "Renal_and_urinary_disorders",
    "Pregnancy,_puerperium_and_perinatal_conditions", "Ear_and_labyrinth_disorders",
    "Cardiac_disorders", "Nervous_system_disorders",
    "Injury,_poisoning_and_procedural_complications",
)

#: The MoleculeNet benchmarks: name → :class:`MoleculeNetInfo`. ``hiv`` is also ogbg-molhiv
#: (same molecules and label; scaffold split; metric ROC-AUC).
MOLECULENET: dict[str, MoleculeNetInfo] = {
    "hiv": MoleculeNetInfo(
        "HIV.csv.gz", ("HIV_active",), "classification", "roc_auc",
        "81c0dc45814deb6ee9d8cc83078e06b95736fb2eb78d747b0d055fee1c6ec4c5", 41127),
    "esol": MoleculeNetInfo(
        "esol.csv", ("logSolubility",), "regression", "rmse",
        "9e2bf77f3fc2d0ced4572341e2094904b992c9edf3762795f77cfc2bfd4de5ac", 1128),
    "freesolv": MoleculeNetInfo(
        "freesolv.csv", ("freesolv",), "regression", "rmse",
        "97d74c86228d4c16c0fbbf063bb8280354d8152db09a85ade8517a2f43bd9824", 642),
    "lipo": MoleculeNetInfo(
        "lipo.csv", ("lipo",), "regression", "rmse",
        "aa9bd9669188e35efd908758a75561bba402016d901fed2d0d949289abbcf31c", 4200),
    "tox21": MoleculeNetInfo(
        "tox21.csv", _TOX21_TASKS, "classification", "roc_auc",
        "b58cc1f683e78e3c7a1bf7116e9aac0119804018d100f7b8cdb0857941c31aca", 7831),
    "clintox": MoleculeNetInfo(
        "clintox.csv", ("FDA_APPROVED", "CT_TOX"), "classification", "roc_auc",
        "cc561402d058a0d996a9f5e5d02bc20f6652b7003525b32c3598b8da4b24e9b7", 1478),
    "sider": MoleculeNetInfo(
        "sider.csv", _SIDER_TASKS, "classification", "roc_auc",
        "87b937d1ddb1879bb14e8f23d94ceffcb9ad3e534ae59602820b3bcf03844fbf", 1427),
}
_ALIASES = {"ogbg-molhiv": "hiv", "molhiv": "hiv", "delaney": "esol", "lipophilicity": "lipo"}


def _moleculenet_dir(data_dir: Path) -> Path:
    """``data_dir/MoleculeNet`` if it exists, else ``data_dir`` itself when it holds one of the
    MoleculeNet files."""
    if (data_dir / "MoleculeNet").is_dir():
        return data_dir / "MoleculeNet"
    if any((data_dir / info.file).is_file() for info in MOLECULENET.values()):
        return data_dir
    return data_dir / "MoleculeNet"


class MoleculeNetCSV(MoleculeCSV):
    r"""A MoleculeNet benchmark (:data:`MOLECULENET`): ``hiv`` (= ogbg-molhiv semantics), ``esol``,
    ``freesolv``, ``lipo`` (RMSE regression), ``tox21``, ``clintox``, ``sider`` (multi-task
    ROC-AUC), read from ``resolve_data_dir(data_dir) / "MoleculeNet" / <file>`` and split by
    scaffold 80 / 10 / 10 (:func:`scaffold_split`). See :class:`MoleculeCSV` for the graphs,
    skipped rows and caching. (Named after what it reads, the MoleculeNet CSV files, so that it
    does not shadow PyG's :class:`torch_geometric.datasets.MoleculeNet`.)

    For ``hiv`` this is the ogbg-molhiv setting (same molecules in the same order, label
    ``HIV_active``, OGB featurization, scaffold split, ROC-AUC) but not necessarily its exact
    split: RDKit 2026.09 rejects 7 of the 41,127 molecules (Al / B / Ge valence; OGB's RDKit
    accepted them) and the split is computed over the 41,120 valid ones, giving
    32,896 / 4,112 / 4,112 molecules (1,232 / 81 / 130 actives); OGB's official split has
    32,901 / 4,113 / 4,113 and was not available here to compare index by index. The first build
    of ``hiv`` takes one to two minutes.

    Args:
        root: cache directory (default ``resolve_cache_dir() / "MoleculeNet"``); this dataset's
            files go to ``root/<name>/processed/<key>/``.
        name (str): a key of :data:`MOLECULENET` (case-insensitive; ``"ogbg-molhiv"`` = ``"hiv"``).
        split (str): ``"train"``, ``"val"``, ``"test"`` or ``"all"``.
        data_dir: raw-data directory holding ``MoleculeNet/`` (default
            ``$GRAPH_TRANSFORMERS_DATA``).
        transform, pre_transform, force_reload: as in PyG.
        max_rows (int, optional): use only the first ``max_rows`` rows of the file (the split is
            then the scaffold split of that prefix; for quick tests).

    Attributes:
        name (str), info (:class:`MoleculeNetInfo`), plus those of :class:`MoleculeCSV`.

    Raises:
        ValueError: unknown name or split.
        DataNotFoundError: no data directory, or the file is not in it; the message says where
            it looked and how to provide the data.
    """

    def __init__(
        self, root: PathLike | None = None, name: str = "esol", split: str = "train",
        data_dir: PathLike | None = None, transform: Transform = None,
        pre_transform: Transform = None, force_reload: bool = False, *, max_rows: int | None = None,
    ) -> None:
        key = str(name).lower()
        key = _ALIASES.get(key, key)
        if key not in MOLECULENET:
            raise ValueError(
                f"MoleculeNet: unknown name {name!r}; known: {sorted(MOLECULENET)} "
                f"(aliases {sorted(_ALIASES)})"
            )
        self.name = key
        self.info = info = MOLECULENET[key]
        data = resolve_data_dir(data_dir)
        if data is None:
            raise DataNotFoundError(
                f"MoleculeNet {key}: no data directory. Pass data_dir=... (CLI --data-dir) or set "
                f"${DATA_ENV} to a folder holding MoleculeNet/{info.file} (docs/datasets.md, "
                f"'Raw files')."
            )
        path = _moleculenet_dir(data) / info.file
        if not path.is_file():
            raise DataNotFoundError(
                f"MoleculeNet {key}: {info.file} not found; looked for {path} (data directory "
                f"{data}). Pass data_dir=... (CLI --data-dir) or set ${DATA_ENV} to a folder "
                f"holding MoleculeNet/{info.file} (see docs/datasets.md, 'Raw files')."
            )
        base = Path(root).expanduser() if root is not None else resolve_cache_dir() / "MoleculeNet"
        super().__init__(
            base / key, split, path, info.smiles_column, list(info.target_columns), info.task,
            transform, pre_transform, force_reload, max_rows=max_rows,
        )
        if self.file_sha256 != info.sha256:
            log.warning(
                "MoleculeNet %s: %s has sha256 %s, not the reference copy's %s "
                "(docs/datasets.md, 'Raw files'); results may not be comparable.",
                key, path, self.file_sha256[:16], info.sha256[:16],
            )

    @property
    def metric(self) -> str:
        return self.info.metric

    def __repr__(self) -> str:
        return f"MoleculeNetCSV({self.name}, {len(self)}, split={self.split!r})"


# --------------------------------------------------------------------------------------------
# Loaders and registry entries
# --------------------------------------------------------------------------------------------
#: the MoleculeNet sets with an OGB form: key of :data:`MOLECULENET` → OGB name
_OGB_NAMES = {"hiv": "ogbg-molhiv"}


def load_moleculenet(
    root: PathLike, name: str, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, source: str = "generated",
    data_dir: PathLike | None = None, max_rows: int | None = None,
) -> InMemoryDataset:
    """One split of the MoleculeNet set ``name`` (a key of :data:`MOLECULENET`; ``data.name:
    tox21``, ..., ``ogbg-molhiv``): the CSV file featurized and split by scaffold
    (:class:`MoleculeNetCSV`, cached under ``root/MoleculeNet/``; needs RDKit), or, for ``hiv``
    with ``source="canonical"``, OGB's published files with the official split read by OGB's
    loader (:class:`~graph_transformers.datasets.molecules.ogb.OGBGraphPropPred`, under
    ``root/canonical/``; needs the ``[ogb]`` extra).

    Raises:
        ValueError: ``source="canonical"`` for a set without an OGB form.
        DataNotFoundError: the files are neither local nor downloadable.
        MissingDependencyError: RDKit (or OGB, for the published files) is not installed.
    """
    if check_source(name, source):
        if name not in _OGB_NAMES:
            raise ValueError(f"MoleculeNet {name}: no published OGB form; use source='generated'")
        ogb_name, base = _OGB_NAMES[name], canonical_root(root)
        # the files first: without them, that is what the message must say (not the package)
        locate_ogb(ogb_name, resolve_data_dir(data_dir), base, download=True)
        require("ogb.graphproppred", f"reading the published {ogb_name} files")
        from .ogb import OGBGraphPropPred  # imports OGB, an optional dependency
        return OGBGraphPropPred(ogb_name, base, split, data_dir=data_dir,
                                transform=transform, pre_transform=pre_transform)
    require("rdkit", f"the {name} dataset")
    return MoleculeNetCSV(root=str(Path(root) / "MoleculeNet"), name=name, split=split,
                          data_dir=data_dir, transform=transform, pre_transform=pre_transform,
                          force_reload=force_reload, max_rows=max_rows)


def csv_task(task: str | None) -> str:
    """``data.task`` of a molecule CSV → :class:`MoleculeCSV`'s task: label columns of 0 / 1 are
    binary tasks (``classification`` or ``binary``), the default is regression."""
    return "classification" if task in ("classification", "binary") else "regression"


def load_molecule_csv(
    root: PathLike, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, path: PathLike,
    smiles_column: str = "smiles", target_columns: Sequence[str] | None = None,
    task: str | None = None, **options: Any,
) -> MoleculeCSV:
    """One split of a user's molecule CSV (``data.path``: ``data.smiles_column``,
    ``data.target_columns``, ``data.task`` as :func:`csv_task` reads it), cached under
    ``root/MoleculeCSV/``; ``options`` (``data.options``: ``frac``, ``max_rows``) go to
    :class:`MoleculeCSV`, which refuses a key it does not take (``TypeError``)."""
    require("rdkit", "a molecule CSV dataset")
    return MoleculeCSV(root=str(Path(root) / "MoleculeCSV"), split=split, path=path,
                       smiles_column=smiles_column, target_columns=list(target_columns or ()),
                       task=csv_task(task), transform=transform, pre_transform=pre_transform,
                       force_reload=force_reload, **options)


#: OGB's atom / bond vocabulary sizes, one embedding table per column
_MOL_TYPES = dict(node_types=tuple(ATOM_FEATURE_DIMS), edge_types=tuple(BOND_FEATURE_DIMS),
                  featurize=smiles_to_graph)


def molecule_csv_spec(task: str | None = None,
                      target_columns: Sequence[str] | None = None) -> DatasetSpec:
    """The spec of a user's molecule CSV (``data.path`` set): ``data.task``
    ``classification`` / ``binary`` gives binary tasks scored by ROC-AUC, else regression with
    RMSE (MSE loss); one output per target column."""
    targets = tuple(target_columns or ())
    if csv_task(task) == "regression":
        return DatasetSpec("molecule_csv", "graph", "regression", len(targets), "rmse",
                           load_molecule_csv, loss="mse", targets=targets, source="user",
                           **_MOL_TYPES)
    return DatasetSpec("molecule_csv", "graph", "binary", len(targets), "roc_auc",
                       load_molecule_csv, targets=targets, source="user", **_MOL_TYPES)


def _spec(name: str, key: str, task: str, metric: str, **kwargs: Any) -> DatasetSpec:
    """The spec of the MoleculeNet set ``key``: one output per label column of its file."""
    targets = MOLECULENET[key].target_columns
    return DatasetSpec(name, "graph", task, len(targets), metric,
                       functools.partial(load_moleculenet, name=key), targets=targets,
                       **_MOL_TYPES, **kwargs)


#: ``data.name: ogbg-molhiv`` (MoleculeNet's HIV: OGB's published files where they can be had)
MOLHIV_SPEC = _spec("ogbg-molhiv", "hiv", "binary", "roc_auc", source="reconstructed",
                    published=True)
#: ``data.name: tox21``
TOX21_SPEC = _spec("tox21", "tox21", "binary", "roc_auc")
#: ``data.name: clintox``
CLINTOX_SPEC = _spec("clintox", "clintox", "binary", "roc_auc")
#: ``data.name: sider``
SIDER_SPEC = _spec("sider", "sider", "binary", "roc_auc")
#: ``data.name: esol``
ESOL_SPEC = _spec("esol", "esol", "regression", "rmse", loss="mse")
#: ``data.name: freesolv``
FREESOLV_SPEC = _spec("freesolv", "freesolv", "regression", "rmse", loss="mse")
#: ``data.name: lipo``
LIPO_SPEC = _spec("lipo", "lipo", "regression", "rmse", loss="mse")
