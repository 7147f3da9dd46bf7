"""Molecules from SMILES as graphs with OGB's featurization (``smiles2graph`` semantics, Hu et
al., "Open Graph Benchmark", 2020), reimplemented here with RDKit; shared by the MoleculeNet
sets, a user's molecule CSV, ogbg-molpcba and PCQM4M.

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
"""
from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data

from ..._optional import require

__all__ = [
    "ATOM_FEATURE_DIMS",
    "ATOM_FEATURE_NAMES",
    "ATOM_FEATURE_VALUES",
    "BOND_FEATURE_DIMS",
    "BOND_FEATURE_NAMES",
    "BOND_FEATURE_VALUES",
    "OGB_MOL_TYPES",
    "atom_features",
    "bond_features",
    "mol_to_graph",
    "parse_smiles",
    "smiles_to_graph",
]

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


#: the spec fields of a dataset with OGB's featurization: the atom / bond vocabulary sizes (one
#: embedding table per column) and the SMILES featurizer
#: (:class:`~graph_transformers.data.registry.DatasetSpec`)
OGB_MOL_TYPES: dict[str, Any] = dict(node_types=tuple(ATOM_FEATURE_DIMS),
                                     edge_types=tuple(BOND_FEATURE_DIMS),
                                     featurize=smiles_to_graph)
