"""The deterministic Bemis-Murcko scaffold split (:func:`scaffold_split`: the rule of DeepChem's
``ScaffoldSplitter`` and snap-stanford/pretrain-gnns ``scaffold_split``, which OGB used to make the
``ogbg-mol*`` splits), with the scaffold of a molecule (:func:`murcko_scaffold`, RDKit).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...data.generated import SPLITS
from .featurization import parse_smiles

__all__ = ["check_frac", "min_molecules_per_split", "murcko_scaffold", "scaffold_split",
           "split_from_scaffolds"]



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


def check_frac(frac: Sequence[float]) -> tuple[float, float, float]:
    """The train / val / test fractions ``frac`` as three floats.

    Raises:
        ValueError: not three non-negative numbers summing to 1 (as the message says).
    """
    try:
        f = tuple(float(v) for v in frac)
    except (TypeError, ValueError):
        raise ValueError(f"frac must be three numbers (train, val, test), got {frac!r}") from None
    if len(f) != 3 or any(not (0.0 <= v <= 1.0) for v in f) or abs(sum(f) - 1.0) > 1e-6:
        raise ValueError(f"frac must be three fractions in [0, 1] summing to 1, got {frac!r}")
    return f  # type: ignore[return-value]


def split_from_scaffolds(
    scaffolds: Sequence[str], frac: Sequence[float] = (0.8, 0.1, 0.1)
) -> dict[str, list[int]]:
    """The scaffold-split rule of :func:`scaffold_split`, given each molecule's scaffold.

    Returns:
        ``{split: positions}`` for ``train`` / ``val`` / ``test``.

    Raises:
        ValueError: bad fractions (:func:`check_frac`).
    """
    f_train, f_val, _ = check_frac(frac)
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
    frac = check_frac(frac)
    for n in range(1, 10_001):
        if all(split_from_scaffolds([str(i) for i in range(n)], frac).values()):
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
    check_frac(frac)
    scaffolds = []
    for i, s in enumerate(smiles_list):
        try:
            scaffolds.append(murcko_scaffold(s))
        except ValueError as e:
            raise ValueError(f"scaffold_split: position {i}: {e}") from None
    return split_from_scaffolds(scaffolds, frac)
