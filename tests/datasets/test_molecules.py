"""Tests of graph_transformers.datasets.molecules (featurization, scaffold, molecule_csv,
moleculenet): OGB-style featurization, the scaffold split, the CSV / MoleculeNet datasets and
the OGB-evaluator metrics.

Dataset tests need the shared data (``<repo>/../shared/data/MoleculeNet`` or
``$GRAPH_TRANSFORMERS_DATA``, via the ``data_dir`` fixture) and are skipped without it. HIV
(41,127 molecules) is tested on a prefix of the file to keep this module fast.
"""
from __future__ import annotations

import csv
import gzip
import logging
import math
from pathlib import Path

import pytest
import torch

from graph_transformers.data.cache import DataNotFoundError
from graph_transformers.datasets.molecules.featurization import (
    ATOM_FEATURE_DIMS,
    BOND_FEATURE_DIMS,
    atom_features,
    bond_features,
    mol_to_graph,
    smiles_to_graph,
)
from graph_transformers.datasets.molecules.moleculenet import MOLECULENET, MoleculeNetCSV
from graph_transformers.datasets.molecules.molecule_csv import MoleculeCSV
from graph_transformers.datasets.molecules.scaffold import murcko_scaffold, scaffold_split
from graph_transformers.training.metrics import mae, rmse, roc_auc_multitask, roc_auc_per_task

LOGGER = "graph_transformers.datasets.molecules.molecule_csv"


@pytest.fixture(scope="module")
def mn_root(tmp_path_factory) -> Path:
    """One MoleculeNet cache for this module, so each benchmark is processed once."""
    return tmp_path_factory.mktemp("moleculenet_cache")


def _mn(data_dir: Path) -> Path:
    d = data_dir / "MoleculeNet"
    if not d.is_dir():
        pytest.skip(f"MoleculeNet files not found in {d}")
    return d


def _csv_column(path: Path, column: str) -> list[str]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        return [row[column] for row in csv.DictReader(f)]


# --------------------------------------------------------------------------------------------
# Featurization
# --------------------------------------------------------------------------------------------
def test_feature_dims_are_ogbs():
    assert ATOM_FEATURE_DIMS == [119, 5, 12, 12, 10, 6, 6, 2, 2]
    assert BOND_FEATURE_DIMS == [5, 6, 2]


def test_ethanol():
    g = smiles_to_graph("CCO")
    # atomic_num-1, chirality, total degree, charge+5, total Hs, radicals, hybrid., arom., ring
    assert g.x.tolist() == [
        [5, 0, 4, 5, 3, 0, 2, 0, 0],  # CH3: C, degree 4 (3 H + 1), SP3
        [5, 0, 4, 5, 2, 0, 2, 0, 0],  # CH2
        [7, 0, 2, 5, 1, 0, 2, 0, 0],  # OH: O (atomic number 8 -> 7)
    ]
    assert g.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]  # (i, j), (j, i) per bond
    assert g.edge_attr.tolist() == [[0, 0, 0]] * 4  # single, no stereo, not conjugated
    assert g.num_nodes == 3 and g.x.dtype == torch.long and g.edge_attr.dtype == torch.long


def test_benzene():
    g = smiles_to_graph("c1ccccc1")
    assert g.x.tolist() == [[5, 0, 3, 5, 1, 0, 1, 1, 1]] * 6  # SP2, aromatic, in ring
    assert g.edge_index.shape == (2, 12)
    assert g.edge_attr.tolist() == [[3, 0, 1]] * 12  # aromatic, conjugated


def test_chiral_charged_and_stereo():
    # Chiral carbon next to an E double bond.
    g = smiles_to_graph("Cl[C@H](/C=C/C)Br")
    assert g.x[1].tolist() == [5, 2, 4, 5, 1, 0, 2, 0, 0]  # CHI_TETRAHEDRAL_CCW
    double = (g.edge_index[0] == 2) & (g.edge_index[1] == 3)
    assert g.edge_attr[double].tolist() == [[1, 2, 0]]  # DOUBLE, STEREOE, not conjugated
    assert smiles_to_graph("C[C@@H](N)O").x[1, 1] == 1  # CHI_TETRAHEDRAL_CW
    assert smiles_to_graph("C[C@H](N)O").x[1, 1] == 2  # CHI_TETRAHEDRAL_CCW
    # Charges: quaternary ammonium (+1 -> 6), carboxylate O (-1 -> 4), U6+ (misc -> 11).
    assert smiles_to_graph("C[N+](C)(C)C").x[1].tolist() == [6, 0, 4, 6, 0, 0, 2, 0, 0]
    acetate = smiles_to_graph("[O-]C(=O)C")
    assert acetate.x[0, 3] == 4 and acetate.x[0, 1:3].tolist() == [0, 1]
    assert smiles_to_graph("[U+6]").x[0, 3] == 11
    # misc buckets: dummy atom (atomic number 0), hybridization "S" of Na+; a radical.
    assert smiles_to_graph("*C").x[0, 0] == 118
    salt = smiles_to_graph("[Na+].[Cl-]")
    assert salt.x[0, 6] == 5 and salt.edge_index.shape == (2, 0)
    assert salt.edge_attr.shape == (0, 3)
    assert smiles_to_graph("[CH2]C").x[0, 5] == 1
    assert smiles_to_graph("N#N").edge_attr[0, 0] == 2  # triple


def test_invalid_smiles_raise():
    for bad in ["not_a_smiles", "C1CC", "", "CC(=O)O[AlH3](O)O"]:
        with pytest.raises(ValueError, match="invalid SMILES"):
            smiles_to_graph(bad)
    with pytest.raises(ValueError):
        mol_to_graph(None)


def test_featurizer_on_esol(data_dir):
    """Every ESOL molecule: edges = 2 x bonds, values inside the vocabularies, and the bulk
    featurizer agrees with the per-atom / per-bond functions."""
    from rdkit import Chem

    smiles = _csv_column(_mn(data_dir) / "esol.csv", "smiles")
    assert len(smiles) == 1128
    dims_x, dims_e = torch.tensor(ATOM_FEATURE_DIMS), torch.tensor(BOND_FEATURE_DIMS)
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        g = mol_to_graph(mol)
        assert g.x.shape == (mol.GetNumAtoms(), 9)
        assert g.edge_index.shape == (2, 2 * mol.GetNumBonds())
        assert g.edge_attr.shape == (2 * mol.GetNumBonds(), 3)
        assert bool((g.x >= 0).all() and (g.x < dims_x).all()), s
        assert bool((g.edge_attr >= 0).all() and (g.edge_attr < dims_e).all()), s
        assert g.x.tolist() == [atom_features(a) for a in mol.GetAtoms()]
        assert g.edge_attr[::2].tolist() == [bond_features(b) for b in mol.GetBonds()]
        assert torch.equal(g.edge_index[:, ::2], g.edge_index[:, 1::2].flip(0))


# --------------------------------------------------------------------------------------------
# Scaffold split
# --------------------------------------------------------------------------------------------
def test_scaffold_split_rule_by_hand():
    smiles = ["c1ccccc1C", "CCO", "C1CCCCC1O", "c1ccccc1O", "CCN", "C1CCCCC1N", "c1ccncc1",
              "c1ccccc1N", "C1CC1", "C1CCC1"]
    # Groups: benzene {0,3,7}; acyclic "" {1,4}; cyclohexane {2,5}; singletons {6}, {8}, {9}.
    # Order by (size, first index) descending: benzene, cyclohexane (first 2) before "" (first
    # 1), then {9}, {8}, {6}. N=10, frac (0.6, 0.2, 0.2): train_cut 6, val_cut 8.
    # benzene->train (3), cyclohexane->train (5), ""->val (5+2>6; 5+0+2<=8), {9}->train (6),
    # {8}->test (6+1>6; 6+2+1>8), {6}->test.
    assert scaffold_split(smiles, (0.6, 0.2, 0.2)) == {
        "train": [0, 2, 3, 5, 7, 9], "val": [1, 4], "test": [6, 8]}
    assert murcko_scaffold("CCO") == ""
    assert murcko_scaffold("c1ccccc1CCC1CC1") == "c1ccc(CCC2CC2)cc1"
    with pytest.raises(ValueError, match="position 1"):
        scaffold_split(["CCO", "C1CC"])
    for frac in [(0.8, 0.1), (0.8, 0.3, 0.1), (-0.1, 0.6, 0.5)]:
        with pytest.raises(ValueError, match="frac"):
            scaffold_split(["CCO"], frac)


def test_scaffold_split_on_esol(data_dir):
    smiles = _csv_column(_mn(data_dir) / "esol.csv", "smiles")
    split = scaffold_split(smiles)
    assert split == scaffold_split(smiles)  # deterministic
    sets = {k: set(v) for k, v in split.items()}
    assert all(len(sets[k]) == len(split[k]) for k in split)
    assert not (sets["train"] & sets["val"] or sets["train"] & sets["test"]
                or sets["val"] & sets["test"])
    assert sets["train"] | sets["val"] | sets["test"] == set(range(len(smiles)))
    scaffolds = {k: {murcko_scaffold(smiles[i]) for i in v} for k, v in split.items()}
    assert not (scaffolds["train"] & scaffolds["val"] or scaffolds["train"] & scaffolds["test"]
                or scaffolds["val"] & scaffolds["test"])
    n = len(smiles)
    for k, f in zip(("train", "val", "test"), (0.8, 0.1, 0.1)):
        assert abs(len(split[k]) / n - f) < 0.02, (k, len(split[k]))


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------
def test_roc_auc_by_hand():
    # Positives {0.35, 0.8}, negatives {0.1, 0.4}: pairs ranked right 3 of 4 -> 0.75.
    y, s = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]
    assert roc_auc_multitask(y, s) == pytest.approx(0.75)
    # A tie between a positive and a negative counts one half: (1 + 0.5) / 2.
    assert roc_auc_multitask([0, 1, 0, 1], [0.2, 0.2, 0.1, 0.9]) == pytest.approx(0.875)
    # NaN labels are ignored whatever their scores.
    nan = float("nan")
    assert roc_auc_multitask(y + [nan, nan], s + [100.0, -100.0]) == pytest.approx(0.75)
    # Only the order of the scores matters: large logits do not saturate into ties.
    assert roc_auc_multitask([0, 1, 0, 1], [50.0, 60.0, 70.0, 80.0]) == pytest.approx(0.75)


def test_roc_auc_multitask_skips_one_class_tasks():
    nan = float("nan")
    y = torch.tensor([[0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, nan], [1, 0, nan, nan]])
    s = torch.tensor([[0.1, 0.5, 0.9, 0.3], [0.4, 0.2, 0.1, 0.6], [0.35, 0.7, 0.2, 0.9],
                      [0.8, 0.1, 0.5, 0.2]])
    # task 0: 0.75; task 1: only negatives -> skipped; task 2: 1 pos (0.9) vs negs {0.1, 0.2}
    # -> 1.0; task 3: pos 0.6 vs neg 0.3 -> 1.0 (NaN rows ignored).
    per = roc_auc_per_task(y, s)
    assert per[0] == pytest.approx(0.75) and math.isnan(per[1])
    assert per[2:] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert roc_auc_multitask(y, s) == pytest.approx((0.75 + 1 + 1) / 3)
    with pytest.raises(ValueError, match="no task has both"):
        roc_auc_multitask([[0], [0], [nan]], [[0.1], [0.2], [0.3]])
    with pytest.raises(ValueError, match="labels other than"):
        roc_auc_multitask([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="shape"):
        roc_auc_multitask([[0, 1]], [0.1, 0.2])


def test_rmse_mae():
    nan = float("nan")
    y = [[1.0, 0.0], [2.0, nan], [3.0, 4.0]]
    p = [[1.0, 1.0], [4.0, 123.0], [3.0, 1.0]]
    # task 0 errors (0, 2, 0); task 1 errors (1, 3) with the NaN row ignored.
    assert rmse(y, p) == pytest.approx((math.sqrt(4 / 3) + math.sqrt(10 / 2)) / 2)
    assert mae(y, p) == pytest.approx((2 / 3 + 2.0) / 2)
    assert rmse([1.0, 2.0], [1.0, 4.0]) == pytest.approx(math.sqrt(2.0))
    with pytest.raises(ValueError, match="every label is NaN"):
        rmse([nan], [1.0])


# --------------------------------------------------------------------------------------------
# MoleculeCSV
# --------------------------------------------------------------------------------------------
_ROWS = [
    ("CCO", "1", "0.5"),
    ("not_a_smiles", "0", "1.0"),      # syntax error
    ("c1ccccc1O", "0", ""),            # blank regression label -> NaN
    ("CC(=O)O[AlH3](O)O", "1", "2.0"),  # valence error (as in tox21)
    ("C1CCCCC1N", "", "3.0"),          # blank classification label -> NaN
    ("CCN", "1", "NA"),
    ("c1ccncc1", "0", "4.5"),
    ("C[C@H](N)C(=O)O", "1", "-1"),
]


def _write_csv(path: Path, rows=_ROWS) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["smiles", "active", "value"])
        w.writerows(rows)
    return path


def test_csv_invalid_smiles_skipped_and_logged(tmp_path, caplog):
    path = _write_csv(tmp_path / "mine.csv")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        ds = MoleculeCSV(root=tmp_path / "cache", split="all", path=path,
                         target_columns=["active", "value"], task="regression")
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == LOGGER)
    assert "skipped 2 of 8 rows" in text
    assert "line 3 (row 1): 'not_a_smiles'" in text and "line 5 (row 3)" in text
    assert "CC(=O)O[AlH3](O)O" in text
    assert len(ds) == 6 and ds.provenance["num_molecules"] == 6
    assert [(s["row"], s["line"], s["smiles"]) for s in ds.skipped] == [
        (1, 3, "not_a_smiles"), (3, 5, "CC(=O)O[AlH3](O)O")]
    assert ds.smiles == ["CCO", "c1ccccc1O", "C1CCCCC1N", "CCN", "c1ccncc1", "C[C@H](N)C(=O)O"]
    assert ds.rows == [0, 2, 4, 5, 6, 7]
    y = ds.y
    assert y.shape == (6, 2) and y.dtype == torch.float32
    assert y[0].tolist() == [1.0, 0.5] and y[5].tolist() == [1.0, -1.0]
    assert math.isnan(y[1, 1]) and math.isnan(y[2, 0]) and math.isnan(y[3, 1])
    assert ds.num_tasks == 2 and ds.metric == "rmse"
    assert ds[0].x.shape == (3, 9) and ds[0].y.shape == (1, 2)

    # The splits partition the valid molecules; loading them uses the cache (no reprocessing)
    # and repeats a summary warning.
    caplog.clear()
    parts = {s: MoleculeCSV(root=tmp_path / "cache", split=s, path=path,
                            target_columns=["active", "value"], task="regression")
             for s in ("train", "val", "test")}
    assert sorted(sum((p.rows for p in parts.values()), [])) == ds.rows
    assert "were skipped (invalid SMILES)" in caplog.text and "lines 3, 5" in caplog.text
    assert len(list((tmp_path / "cache" / "processed").iterdir())) == 1

    # Same content gzipped: same graphs (own cache entry, since the bytes differ).
    gz = _write_csv(tmp_path / "mine.csv.gz")
    ds_gz = MoleculeCSV(root=tmp_path / "cache", split="all", path=gz,
                        target_columns=["active", "value"], task="regression")
    assert ds_gz.smiles == ds.smiles and torch.equal(ds_gz.x, ds.x)


def test_csv_cache_key(tmp_path, monkeypatch):
    path = _write_csv(tmp_path / "mine.csv")
    kw = dict(root=tmp_path / "cache", split="all", path=path, target_columns=["active"])
    first = MoleculeCSV(**kw)
    assert first.task == "classification" and first.metric == "roc_auc"
    processed = tmp_path / "cache" / "processed"

    def fail(self):
        raise AssertionError("process() called although the cache is valid")

    with monkeypatch.context() as m:
        m.setattr(MoleculeCSV, "process", fail)
        again = MoleculeCSV(**kw)
    assert again.smiles == first.smiles
    assert torch.allclose(again.y, first.y, equal_nan=True)
    # Another target set, another pre-transform, or edited file contents: a new cache entry.
    MoleculeCSV(**{**kw, "target_columns": ["value"], "task": "regression"})
    MoleculeCSV(**kw, pre_transform=lambda d: d)
    _write_csv(path, _ROWS[:5])
    assert len(MoleculeCSV(**kw)) == 3
    assert len(list(processed.iterdir())) == 4
    # Default root: under the isolated cache (conftest), named after the file.
    assert "MoleculeCSV" in MoleculeCSV(split="all", path=path, target_columns=["active"]).root


def test_csv_errors(tmp_path):
    path = _write_csv(tmp_path / "mine.csv")
    with pytest.raises(DataNotFoundError, match="nope.csv"):
        MoleculeCSV(root=tmp_path, path=tmp_path / "nope.csv")
    with pytest.raises(ValueError, match="'missing' not in the header|not in the header"):
        MoleculeCSV(root=tmp_path, path=path, target_columns=["missing"])
    with pytest.raises(ValueError, match="SMILES column"):
        MoleculeCSV(root=tmp_path, path=path, smiles_column="SMILES")
    with pytest.raises(ValueError, match="split"):
        MoleculeCSV(root=tmp_path, path=path, split="valid")
    with pytest.raises(ValueError, match="task"):
        MoleculeCSV(root=tmp_path, path=path, task="ranking")
    # "value" holds 0.5 / 2.0 / ...: not a binary label.
    with pytest.raises(ValueError, match="line 2, column 'value'.*not 0 or 1"):
        MoleculeCSV(root=tmp_path, path=path, target_columns=["value"])
    bad = _write_csv(tmp_path / "bad.csv", [("CCO", "yes", "1")])
    with pytest.raises(ValueError, match="'yes' is not a number"):
        MoleculeCSV(root=tmp_path, path=bad, target_columns=["active"])
    empty = _write_csv(tmp_path / "empty.csv", [("xx", "1", "1")])
    with pytest.raises(ValueError, match="no valid molecule"):
        MoleculeCSV(root=tmp_path, path=empty, target_columns=["active"])


# --------------------------------------------------------------------------------------------
# MoleculeNet
# --------------------------------------------------------------------------------------------
# name -> (rows in the file, rows RDKit 2026.09 rejects)
EXPECTED = {
    "esol": (1128, 0),
    "freesolv": (642, 0),
    "lipo": (4200, 0),
    "tox21": (7831, 8),
    "clintox": (1478, 0),
    "sider": (1427, 0),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_moleculenet_loads_and_caches(name, data_dir, mn_root, monkeypatch):
    _mn(data_dir)
    rows, invalid = EXPECTED[name]
    info = MOLECULENET[name]
    ds = MoleculeNetCSV(root=mn_root, name=name, split="all", data_dir=data_dir)
    assert ds.provenance["num_rows"] == rows
    assert len(ds) == rows - invalid == ds.provenance["num_molecules"]
    assert len(ds.skipped) == invalid
    assert ds.y.shape == (rows - invalid, info.num_tasks)
    assert ds.metric == info.metric and ds.task == info.task
    sizes = ds.provenance["split_sizes"]
    assert sum(sizes.values()) == len(ds)
    assert abs(sizes["train"] / len(ds) - 0.8) < 0.02
    labelled = ds.y[~torch.isnan(ds.y)]
    if info.task == "classification":
        assert bool(((labelled == 0) | (labelled == 1)).all())
    # A split loads from the cache without processing again.
    monkeypatch.setattr(MoleculeCSV, "process", lambda self: pytest.fail("reprocessed"))
    train = MoleculeNetCSV(root=mn_root, name=name, split="train", data_dir=data_dir)
    assert len(train) == sizes["train"]
    assert train[0].x.shape[1] == 9 and train[0].edge_attr.shape[1] == 3


def test_tox21_missing_labels_are_nan(data_dir, mn_root):
    path = _mn(data_dir) / "tox21.csv"
    ds = MoleculeNetCSV(root=mn_root, name="tox21", split="all", data_dir=data_dir)
    with open(path, newline="") as f:
        table = list(csv.DictReader(f))
    blanks = torch.tensor([[row[t] == "" for t in MOLECULENET["tox21"].target_columns]
                           for row in table])[ds.rows]
    assert torch.equal(torch.isnan(ds.y), blanks)
    assert 0 < int(blanks.sum()) < blanks.numel()
    # The first row: CCOc1ccc2nc(S(N)(=O)=O)sc2c1,0,0,1,,,0,0,1,0,0,0,0
    assert ds.smiles[0] == "CCOc1ccc2nc(S(N)(=O)=O)sc2c1"
    assert torch.equal(torch.isnan(ds.y[0]), torch.tensor([False] * 3 + [True] * 2 + [False] * 7))
    # ROC-AUC ignores the NaNs: equal to a pairwise (Mann-Whitney) count on labelled rows only.
    gen = torch.Generator().manual_seed(0)
    scores = torch.rand(ds.y.shape, generator=gen) + 0.3 * torch.nan_to_num(ds.y)
    expected = []
    for k in range(ds.y.shape[1]):
        yk, sk = ds.y[:, k], scores[:, k]
        pos, neg = sk[yk == 1], sk[yk == 0]
        diff = pos[:, None] - neg[None, :]
        expected.append(float(((diff > 0).double() + 0.5 * (diff == 0).double()).mean()))
    # torchmetrics computes in float32: agreement to ~1e-7.
    assert roc_auc_per_task(ds.y, scores) == pytest.approx(expected, abs=1e-6)
    assert roc_auc_multitask(ds.y, scores) == pytest.approx(sum(expected) / len(expected), abs=1e-6)


def test_hiv_prefix(data_dir, tmp_path):
    """HIV (= ogbg-molhiv molecules and label) on the first 1,000 rows of the file: rows 137 and
    987 are rejected by current RDKit (Al / B valence)."""
    _mn(data_dir)
    ds = MoleculeNetCSV(root=tmp_path, name="ogbg-molhiv", split="all", data_dir=data_dir,
                     max_rows=1000)
    assert ds.name == "hiv" and ds.metric == "roc_auc" and ds.num_tasks == 1
    assert ds.provenance["num_rows"] == 1000 and len(ds) == 998
    assert [s["row"] for s in ds.skipped] == [137, 987]
    assert bool(((ds.y == 0) | (ds.y == 1)).all()) and 0 < int(ds.y.sum()) < len(ds)
    labels = _csv_column(data_dir / "MoleculeNet" / "HIV.csv.gz", "HIV_active")
    assert ds.y.view(-1).tolist() == [float(labels[r]) for r in ds.rows]
    splits = {s: MoleculeNetCSV(root=tmp_path, name="hiv", split=s, data_dir=data_dir,
                             max_rows=1000) for s in ("train", "val", "test")}
    all_smiles = [s for part in splits.values() for s in part.smiles]
    assert sorted(all_smiles) == sorted(ds.smiles)
    assert scaffold_split(ds.smiles) == ds.split_indices


def test_moleculenet_not_found(tmp_path, monkeypatch):
    with pytest.raises(DataNotFoundError, match=r"MoleculeNet.HIV\.csv\.gz"):
        MoleculeNetCSV(root=tmp_path / "c", name="hiv", data_dir=tmp_path)
    monkeypatch.delenv("GRAPH_TRANSFORMERS_DATA", raising=False)
    with pytest.raises(DataNotFoundError, match="GRAPH_TRANSFORMERS_DATA"):
        MoleculeNetCSV(root=tmp_path / "c", name="esol")
    with pytest.raises(ValueError, match="unknown name"):
        MoleculeNetCSV(root=tmp_path / "c", name="bbbp", data_dir=tmp_path)
