"""The ZINC target's ring term: the benchmark's cycle-basis rule (``largest_ring_jtvae``) against
the stored val/test targets in shared/data/ZINC (issue 10, 1b)."""
from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pytest

from graph_transformers.datasets.molecules import zinc_chemistry as ZC
from graph_transformers.data.cache import DATA_ENV
from conftest import data_root


def _data_dir() -> Path:
    return data_root()


ZDIR = _data_dir() / "ZINC"
needs_data = pytest.mark.skipif(
    not (ZDIR / "zinc12k_val_smiles.csv.gz").is_file(),
    reason=f"ZINC SMILES/target tables (zinc12k_{{val,test}}_smiles.csv.gz) not found in {ZDIR}; "
    f"set {DATA_ENV} to a folder laid out like shared/data",
)

#: The 4 val/test molecules the current networkx default cycle basis gets wrong (stored-target
#: error of the version-1 rule: 20.85, 6.95, 3.52, 3.50), as (split, subset index).
OUTLIERS = [("val", 172), ("val", 214), ("test", 924), ("test", 976)]
#: Further val/test molecules whose largest basis cycle depends on the traversal (root, neighbour
#: order, stored vs SMILES atom order) or on basis vs SSSR, measured on all 2,000.
RULE_SENSITIVE = [("val", 738), ("val", 753), ("val", 935), ("test", 230), ("test", 402),
                  ("test", 547), ("test", 670), ("test", 687), ("test", 728), ("test", 768)]


def _rows(split: str) -> list[dict[str, str]]:
    with gzip.open(ZDIR / f"zinc12k_{split}_smiles.csv.gz", "rt") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def rows():
    return {split: _rows(split) for split in ("val", "test")}


def _error(row: dict[str, str]) -> float:
    return abs(ZC.penalized_logp_target(row["smiles"]) - float(row["y"]))


@pytest.mark.parametrize(
    "smiles, ring",
    [
        ("CCO", 0),
        ("c1ccccc1", 6),
        ("C1CCCCCC1", 7),
        ("c1ccc2ccccc2c1", 6),  # fused 6+6: every basis has two 6-rings
        ("C1CCCCCCC1", 8),
        ("c1ccccc1.C1CCCCCC1", 7),  # each component rooted at its lowest atom
    ],
)
def test_largest_ring_simple_molecules(smiles, ring):
    assert ZC.largest_ring_jtvae(ZC.parse_molecule(smiles)) == ring


def test_largest_ring_depends_on_the_traversal():
    # Julolidine-like fused system: a basis rooted at atom 0 holds a 12-cycle, the current
    # networkx default (rooted at the last atom) only 6-cycles; the benchmark's target needs 12.
    mol = ZC.parse_molecule("Nc1cc2c3c(c1)CCC[NH+]3CCC2")
    assert ZC.largest_ring_jtvae(mol) == 12
    assert ZC.largest_ring_bond_graph(mol) == 6
    # Whatever the basis, its largest cycle is at least the largest SSSR ring.
    from rdkit import Chem

    assert ZC.largest_ring_jtvae(mol) >= max(len(r) for r in Chem.GetSymmSSSR(mol))


@needs_data
def test_known_outliers_reproduced(rows):
    for split, i in OUTLIERS + RULE_SENSITIVE:
        row = rows[split][i]
        err = _error(row)
        assert err < 0.15, f"{split}[{i}] {row['smiles']}: |target - stored y| = {err:.3f}"
    # ... and the version-1 rule (current networkx default basis) is off by >= 3.4 on the 4
    for split, i in OUTLIERS:
        row = rows[split][i]
        mol = ZC.parse_molecule(row["smiles"])
        y_v1 = ZC.penalized_logp_of_mol(mol, ZC.largest_ring_bond_graph(mol))
        assert abs(y_v1 - float(row["y"])) > 3.4, f"{split}[{i}] is no longer an outlier"


@needs_data
def test_random_sample_reproduced(rows):
    rng = np.random.default_rng(10)
    errs = []
    for split in ("val", "test"):
        for i in rng.choice(len(rows[split]), size=40, replace=False).tolist():
            errs.append(_error(rows[split][i]))
    errs = np.array(errs)
    # Measured on all 2,000: 95.7% within 0.01, 99.95% within 0.05, max 0.125.
    assert (errs < 0.05).all(), f"max error {errs.max():.3f}"
    assert (errs < 0.01).mean() >= 0.85, f"only {(errs < 0.01).mean():.2f} within 0.01"


@pytest.mark.slow
@needs_data
def test_all_val_test_targets_reproduced(rows):
    errs = np.array([_error(r) for split in ("val", "test") for r in rows[split]])
    assert errs.shape == (2000,)
    # Measured: 1,913 within 0.01, 1,999 within 0.05, max 0.125 (val[172]).
    assert (errs < 0.15).all(), f"max error {errs.max():.3f}"
    assert (errs < 0.05).sum() >= 1998
    assert (errs < 0.01).sum() >= 1890
