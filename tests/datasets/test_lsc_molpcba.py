"""PCQM4M-LSC, PCQM4Mv2 (OGB-LSC's files, a memory-mapped store) and ogbg-molpcba (OGB's files,
AP) on tiny fixtures written here in exactly the official layouts (issue 53, item 1): the
graphs equal ``ogb.utils.smiles2graph``'s, the splits are the files', the unlabelled test
splits are predict-only, missing or damaged files are one-line errors, AP is OGB's, and a
one-epoch run through the CLI exits 0 on each dataset. Nothing is downloaded (the test
environment is offline, ``conftest.py``)."""
from __future__ import annotations

import gzip
import json
import logging
import math
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import torch

ogb_utils = pytest.importorskip("ogb.utils")
pytest.importorskip("rdkit")

from graph_transformers.cli import main  # noqa: E402
from graph_transformers.data.cache import DataNotFoundError  # noqa: E402
from graph_transformers.data.ondisk import GraphStore, store_problem  # noqa: E402
from graph_transformers.datasets.molecules.molpcba import load_molpcba  # noqa: E402
from graph_transformers.datasets.molecules.pcqm4m import (LSC_DATASETS, load_pcqm4m,  # noqa: E402
                                                          load_pcqm4mv2, read_split_dict)
from graph_transformers.errors import DataError  # noqa: E402
from graph_transformers.training.metrics import (MultitaskAP, OGBEvaluatorAP,  # noqa: E402
                                                 OGBLSCEvaluatorMAE, average_precision_per_task)

SMILES = ["CCO", "c1ccccc1", "CC(=O)O", "CCN", "CCC", "C1CCCCC1", "CC(C)O", "c1ccncc1", "O=C=O",
          "CC#N", "C=CC=C", "CCOC", "c1ccc2ccccc2c1", "CC(=O)N", "OCCO", "c1cc[nH]c1", "CS",
          "CCCl", "FC(F)F", "c1ccoc1", "c1ccsc1", "CC(C)(C)O", "N#CC#N", "C[C@H](N)C(=O)O",
          "CC=O", "COC(=O)C", "Oc1ccccc1", "C1CC1", "C", "O"]
#: rows of the test splits (no gap in the file, as in OGB-LSC's)
TEST_ROWS = list(range(24, 30))


def gap(i: int) -> float:
    return round(3.0 + 0.37 * i, 6)


def write_lsc(root: Path, name: str, smiles=SMILES) -> dict[str, np.ndarray]:
    """OGB-LSC's layout: ``<folder>/raw/data.csv.gz`` and ``<folder>/split_dict.pt``."""
    info = LSC_DATASETS[name]
    folder = root / info.folder
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "raw" / "data.csv.gz", "wt") as f:
        f.write("idx,smiles,homolumogap\n")
        for i, s in enumerate(smiles):
            f.write(f"{i},{s},{'' if i in TEST_ROWS else gap(i)}\n")
    perm = np.random.default_rng(0).permutation(24)
    split = {"train": np.sort(perm[:18]), "valid": np.sort(perm[18:])}
    if name == "pcqm4m":
        split["test"] = np.array(TEST_ROWS)
    else:
        split["test-dev"], split["test-challenge"] = np.array(TEST_ROWS[:3]), \
            np.array(TEST_ROWS[3:])
    torch.save({k: torch.from_numpy(v) for k, v in split.items()}, folder / "split_dict.pt")
    return split


#: ogbg-molpcba fixture: molecules of each split (rows of SMILES) and the labels
PCBA_SPLIT = {"train": list(range(0, 20)), "valid": list(range(20, 25)),
              "test": list(range(25, 30))}


def pcba_labels() -> np.ndarray:
    """``[30, 128]`` labels in {0, 1, NaN}; tasks 0-3 have both classes in every split."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, size=(len(SMILES), 128)).astype(float)
    y[rng.random(y.shape) < 0.4] = np.nan
    for rows in PCBA_SPLIT.values():
        y[rows[0], :4], y[rows[1], :4] = 0.0, 1.0
    y[:, 127] = np.nan  # a task never measured
    return y


def _csv_gz(path: Path, rows) -> None:
    with gzip.open(path, "wt") as f:
        for r in rows:
            f.write(",".join("" if isinstance(v, float) and math.isnan(v) else
                             (str(int(v)) if isinstance(v, float) else str(v)) for v in r) + "\n")


def write_molpcba(root: Path) -> np.ndarray:
    """OGB's unpacked ``pcba.zip`` as ``root/ogbg_molpcba/``: ``RELEASE_v1.txt``, the raw CSVs
    (each bond once, OGB adds the reverse edges), ``split/scaffold/`` and ``mapping/``."""
    folder = root / "ogbg_molpcba"
    for sub in ("raw", "split/scaffold", "mapping"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "RELEASE_v1.txt").write_text("# Release note for ogbg-molpcba\n")
    graphs = [ogb_utils.smiles2graph(s) for s in SMILES]
    edges, edge_feat, node_feat = [], [], []
    for g in graphs:
        edges += g["edge_index"][:, ::2].T.tolist()  # one direction: (i, j) of every bond
        edge_feat += g["edge_feat"][::2].tolist()
        node_feat += g["node_feat"].tolist()
    _csv_gz(folder / "raw" / "edge.csv.gz", edges)
    _csv_gz(folder / "raw" / "edge-feat.csv.gz", edge_feat)
    _csv_gz(folder / "raw" / "node-feat.csv.gz", node_feat)
    _csv_gz(folder / "raw" / "num-node-list.csv.gz", [[g["num_nodes"]] for g in graphs])
    _csv_gz(folder / "raw" / "num-edge-list.csv.gz",
            [[g["edge_index"].shape[1] // 2] for g in graphs])
    labels = pcba_labels()
    _csv_gz(folder / "raw" / "graph-label.csv.gz", labels.tolist())
    for split, rows in PCBA_SPLIT.items():
        _csv_gz(folder / "split" / "scaffold" / f"{split}.csv.gz", [[r] for r in rows])
    header = [f"PCBA-{k}" for k in range(128)] + ["mol_id", "smiles"]
    with gzip.open(folder / "mapping" / "mol.csv.gz", "wt") as f:
        f.write(",".join(header) + "\n")
        for i, s in enumerate(SMILES):
            f.write(",".join(["" if math.isnan(v) else str(int(v)) for v in labels[i]]
                             + [f"mol{i}", s]) + "\n")
    return labels


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lsc-data")
    write_lsc(root, "pcqm4m")
    write_lsc(root, "pcqm4mv2")
    write_molpcba(root)
    return root


def _same_as_ogb(graph, smiles: str) -> None:
    ref = ogb_utils.smiles2graph(smiles)
    assert torch.equal(graph.x, torch.from_numpy(ref["node_feat"]).long())
    assert torch.equal(graph.edge_index, torch.from_numpy(ref["edge_index"]).long())
    assert torch.equal(graph.edge_attr, torch.from_numpy(ref["edge_feat"]).long())
    assert graph.num_nodes == ref["num_nodes"]
    assert graph.x.dtype == graph.edge_index.dtype == graph.edge_attr.dtype == torch.long


# ---------------------------------------------------------------------------- PCQM4M / PCQM4Mv2
@pytest.mark.parametrize("name,load,test_key", [("pcqm4m", load_pcqm4m, "test"),
                                                ("pcqm4mv2", load_pcqm4mv2, "test-dev")])
def test_lsc_loads_the_official_layout(name, load, test_key, data_root, tmp_path):
    split = read_split_dict(data_root / LSC_DATASETS[name].folder / "split_dict.pt",
                            LSC_DATASETS[name].split_keys, len(SMILES))
    for ours, theirs in (("train", "train"), ("val", "valid"), ("test", test_key)):
        ds = load(tmp_path, ours, data_dir=data_root, num_workers=1, chunk_size=7)
        assert isinstance(ds, GraphStore) and ds.official_split == theirs
        # CACHE/canonical/<set>/processed/<no encodings>_<files tag>_v<format>/<official split>
        rel = ds.store_dir.relative_to(tmp_path / "canonical").as_posix()
        assert re.fullmatch(rf"{LSC_DATASETS[name].cache_folder}/processed/140bedbf9c3f_"
                            rf"[0-9a-f]{{8}}_v1/{theirs}", rel), rel
        assert len(ds) == len(split[theirs])
        assert ds.source_ids.tolist() == split[theirs].tolist()
        for i, row in enumerate(split[theirs]):
            g = ds[i]
            _same_as_ogb(g, SMILES[row])
            assert g.y.shape == (1, 1) and g.y.dtype == torch.float32
            if theirs == test_key:
                assert math.isnan(float(g.y))
            else:
                assert float(g.y) == pytest.approx(gap(row), abs=1e-5)
        assert ds.predict_only is (ours == "test")
        assert ds.provenance == {ours: "exact"} and ds.ogb_evaluator == name
        # stored narrow (uint8 / int16 on disk), read back as int64; the collated fast path
        assert ds._data.x.dtype == torch.uint8 and ds._data.edge_index.dtype == torch.int16
        assert torch.diff(ds.slices["x"]).tolist() == [ds[i].num_nodes for i in range(len(ds))]


def test_pcqm4mv2_test_challenge_and_bad_options(data_root, tmp_path):
    ds = load_pcqm4mv2(tmp_path, "test", data_dir=data_root, test_split="test-challenge",
                       num_workers=1)
    assert ds.official_split == "test-challenge" and ds.source_ids.tolist() == TEST_ROWS[3:]
    assert ds.predict_only and "test-challenge" in ds.predict_only_reason
    with pytest.raises(ValueError, match="test_split must be one of"):
        load_pcqm4m(tmp_path, "test", data_dir=data_root, test_split="test-dev")
    with pytest.raises(ValueError, match="split must be one of"):
        load_pcqm4m(tmp_path, "valid", data_dir=data_root)
    with pytest.raises(TypeError, match="unexpected keyword"):
        load_pcqm4m(tmp_path, "train", data_dir=data_root, max_rows=3)


def test_lsc_store_is_parallel_cached_checked_and_pickles_by_path(data_root, tmp_path, caplog):
    """Two worker processes give the same store as one; a second load reuses it; a damaged file
    is noticed (checksum) and rebuilt with one WARNING; a pickled split maps the files again."""
    one = load_pcqm4m(tmp_path / "a", "train", data_dir=data_root, num_workers=1, chunk_size=5)
    two = load_pcqm4m(tmp_path / "b", "train", data_dir=data_root, num_workers=2, chunk_size=5)
    for i in range(len(one)):
        a, b = one[i], two[i]
        assert all(torch.equal(a[k], b[k]) for k in ("x", "edge_index", "edge_attr"))
    folder = one.store_dir
    assert (folder / "manifest.json").is_file() and store_problem(folder) is None
    stamp = (folder / "x.bin").stat().st_mtime_ns
    again = load_pcqm4m(tmp_path / "a", "train", data_dir=data_root, num_workers=1)
    assert (folder / "x.bin").stat().st_mtime_ns == stamp and len(again) == len(one)
    raw = bytearray((folder / "x.bin").read_bytes())
    raw[0] ^= 0xFF
    (folder / "x.bin").write_bytes(bytes(raw))
    assert "differs from its recorded sha256" in store_problem(folder)
    with caplog.at_level(logging.WARNING, logger="graph_transformers"):
        fixed = load_pcqm4m(tmp_path / "a", "train", data_dir=data_root, num_workers=1)
    assert [r for r in caplog.records if "rebuilding it" in r.getMessage()]
    _same_as_ogb(fixed[0], SMILES[int(fixed.source_ids[0])])
    copy = pickle.loads(pickle.dumps(fixed))
    assert "_data" not in fixed.__getstate__()  # the tensors are not pickled, the folder is
    assert torch.equal(copy[3].x, fixed[3].x) and len(copy[2:5]) == 3


def test_lsc_encodings_are_computed_per_graph_when_building(data_root, tmp_path):
    from graph_transformers.data.registry import build_pre_transform
    from graph_transformers.datasets.molecules.featurization import smiles_to_graph
    from graph_transformers.training.config import build_config

    config = build_config({"data": {"name": "pcqm4m"}, "encodings": {"lap_pe": {"k": 3},
                                                                       "spd": {"max_distance": 5}},
                           "model": {"name": "gt", "pe": "lap"}})
    pre = build_pre_transform(config.encodings)
    ds = load_pcqm4m(tmp_path, "val", pre_transform=pre, data_dir=data_root, num_workers=2,
                     chunk_size=2)
    plain = load_pcqm4m(tmp_path, "val", data_dir=data_root, num_workers=1)
    assert ds.store_dir != plain.store_dir  # the encodings are part of the cache key
    for i in range(len(ds)):
        want = pre(smiles_to_graph(SMILES[int(ds.source_ids[i])]))
        got = ds[i]
        for key in ("lap_pe", "spd", "pair_edge"):
            assert got[key].dtype == want[key].dtype and torch.equal(got[key], want[key]), key
        assert not hasattr(plain[i], "lap_pe") or plain[i].get("lap_pe") is None


def test_lsc_missing_files_are_one_line_errors(data_root, tmp_path, capsys):
    with pytest.raises(DataNotFoundError) as err:
        load_pcqm4mv2(tmp_path, "train", data_dir=tmp_path / "empty")
    text = str(err.value)
    assert "\n" not in text and "pcqm4m-v2/raw/data.csv.gz" in text
    assert f"Looked in: {tmp_path / 'empty' / 'pcqm4m-v2'}" in text
    assert "https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip" in text
    with pytest.raises(DataNotFoundError, match="no data directory"):
        load_pcqm4m(tmp_path, "train")
    # through the CLI: exit status 2, one line naming the file
    cfg = _config(tmp_path, "pcqm4m")
    assert main(["train", "--config", str(cfg), "--data-dir", str(tmp_path / "empty"),
                 "--out", str(tmp_path / "run")]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "error:" in ln]
    assert len(lines) == 1 and "pcqm4m_kddcup2021/raw/data.csv.gz" in lines[0], lines


def test_lsc_damaged_split_dict_and_csv_are_one_line_errors(tmp_path):
    split = write_lsc(tmp_path, "pcqm4m")
    folder = tmp_path / "pcqm4m_kddcup2021"
    keys = LSC_DATASETS["pcqm4m"].split_keys
    # numpy arrays are accepted (weights_only with NumPy's array types allowed)
    torch.save({k: v for k, v in split.items()}, tmp_path / "np.pt")
    assert read_split_dict(tmp_path / "np.pt", keys)["valid"].tolist() == split["valid"].tolist()

    class Evil:
        def __reduce__(self):
            return (print, ("unpickled!",))

    torch.save({"train": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(DataError, match=r"refused by torch.load\(weights_only=True\): it holds "
                                        r"print, not only tensors") as err:
        read_split_dict(tmp_path / "evil.pt", keys)
    assert "\n" not in str(err.value) and "evil.pt" in str(err.value)
    (tmp_path / "plain.pt").write_bytes(b"not a torch file")
    with pytest.raises(DataError, match="not a readable split_dict.pt"):
        read_split_dict(tmp_path / "plain.pt", keys)
    torch.save({"train": torch.arange(3)}, tmp_path / "short.pt")
    with pytest.raises(DataError, match=r"no split 'valid', 'test'"):
        read_split_dict(tmp_path / "short.pt", keys)
    torch.save({"train": torch.arange(3), "valid": torch.arange(2, 5), "test": torch.arange(6, 8)},
               tmp_path / "overlap.pt")
    with pytest.raises(DataError, match="shares row 2"):
        read_split_dict(tmp_path / "overlap.pt", keys, 30)
    with pytest.raises(DataError, match=r"row id 40, outside 0\.\.29 \(the data file has 30"):
        read_split_dict(_saved(tmp_path, {"train": [40], "valid": [1], "test": [2]}), keys, 30)
    with gzip.open(folder / "raw" / "data.csv.gz", "wt") as f:
        f.write("idx,smiles,homolumogap\n0,CCO,abc\n")
    with pytest.raises(DataError, match="line 2: homolumogap 'abc' is not a number"):
        load_pcqm4m(tmp_path / "cache", "train", data_dir=tmp_path)
    (folder / "raw" / "data.csv.gz").write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="gzip"):
        load_pcqm4m(tmp_path / "cache", "train", data_dir=tmp_path)


def _saved(folder: Path, split: dict) -> Path:
    path = folder / "custom.pt"
    torch.save({k: torch.tensor(v) for k, v in split.items()}, path)
    return path


def test_lsc_smiles_rdkit_rejects_are_left_out_with_a_warning(tmp_path, caplog):
    row = int(write_lsc(tmp_path, "pcqm4m")["train"][1])
    bad = list(SMILES)
    bad[row] = "C(C)(C)(C)(C)C"  # pentavalent carbon: RDKit's sanitization refuses it
    split = write_lsc(tmp_path, "pcqm4m", bad)
    with caplog.at_level(logging.WARNING, logger="graph_transformers"):
        ds = load_pcqm4m(tmp_path / "cache", "train", data_dir=tmp_path, num_workers=1)
    kept = [r for r in split["train"].tolist() if r != row]
    assert ds.source_ids.tolist() == kept and ds.canonical_info["num_skipped"] == 1
    assert ds.meta["skipped"][0]["id"] == row and "RDKit" in ds.meta["skipped"][0]["reason"]
    assert [r for r in caplog.records if "RDKit cannot parse" in r.getMessage()]


def test_lsc_mae_is_ogb_lscs_evaluator():
    from ogb.lsc import PCQM4Mv2Evaluator
    rng = np.random.default_rng(0)
    pred, true = rng.normal(5, 1, 50), rng.normal(5, 1, 50)
    metric = OGBLSCEvaluatorMAE("pcqm4mv2")
    metric.update(torch.tensor(pred[:20]).float(), torch.tensor(true[:20]).float())
    metric.update(torch.tensor(pred[20:]).float(), torch.tensor(true[20:]).float())
    p32, t32 = (torch.tensor(a).float().double().numpy() for a in (pred, true))
    want = PCQM4Mv2Evaluator().eval({"y_true": t32, "y_pred": p32})["mae"]
    assert float(metric.compute()) == pytest.approx(want, abs=1e-12)
    assert want == pytest.approx(float(np.mean(np.abs(p32 - t32))), abs=1e-12)
    with pytest.warns(UserWarning, match="before the ``update``"):  # torchmetrics' warning
        assert math.isnan(float(OGBLSCEvaluatorMAE("pcqm4m").compute()))
    with pytest.raises(ValueError, match="no OGB-LSC evaluator"):
        OGBLSCEvaluatorMAE("zinc")


# ---------------------------------------------------------------------------------- ogbg-molpcba
def test_molpcba_loads_ogbs_layout_with_missing_labels(data_root, tmp_path):
    labels = pcba_labels()
    for ours, theirs in (("train", "train"), ("val", "valid"), ("test", "test")):
        ds = load_molpcba(tmp_path, ours, data_dir=data_root)
        assert len(ds) == len(PCBA_SPLIT[theirs]) and ds.ogb_evaluator == "ogbg-molpcba"
        for i, row in enumerate(PCBA_SPLIT[theirs]):
            g = ds[i]
            _same_as_ogb(g, SMILES[row])
            assert g.y.shape == (1, 128) and g.y.dtype == torch.float32
            assert torch.equal(torch.isnan(g.y[0]), torch.from_numpy(np.isnan(labels[row])))
            np.testing.assert_array_equal(np.nan_to_num(g.y[0].numpy(), nan=-1),
                                          np.nan_to_num(labels[row], nan=-1))
        assert ds.provenance == {ours: "exact"} and not getattr(ds, "predict_only", False)


def test_molpcba_missing_files_name_ogbs_url(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        load_molpcba(tmp_path, "train", data_dir=tmp_path / "none")
    text = str(err.value)
    assert "\n" not in text and str(tmp_path / "none" / "ogbg_molpcba") in text
    assert "http://snap.stanford.edu/ogb/data/graphproppred/csv_mol_download/pcba.zip" in text
    assert "GRAPH_TRANSFORMERS_OFFLINE" in text  # no download was tried


def test_ap_equals_ogbs_evaluator_with_missing_labels():
    from ogb.graphproppred import Evaluator
    from sklearn.metrics import average_precision_score

    # hand example: 6 molecules, 2 tasks + 126 never measured; ties, NaN, a one-class task
    y = np.full((6, 128), np.nan)
    y[:, 0] = [1, 0, 1, np.nan, 0, 0]
    y[:, 1] = [0, np.nan, 1, 1, 0, 1]
    y[:, 2] = [1, 1, np.nan, 1, 1, np.nan]  # positives only: skipped
    s = np.zeros((6, 128))
    s[:, 0] = [0.9, 0.8, 0.8, 0.1, -2.0, 0.3]
    s[:, 1] = [3.0, 0.0, -1.0, 2.0, 0.5, 2.0]
    s[:, 2] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    ap0 = average_precision_score([1, 0, 1, 0, 0], [0.9, 0.8, 0.8, -2.0, 0.3])
    ap1 = average_precision_score([0, 1, 1, 0, 1], [3.0, -1.0, 2.0, 0.5, 2.0])
    per = average_precision_per_task(y, s)
    assert per[0] == pytest.approx(ap0) and per[1] == pytest.approx(ap1)
    assert all(math.isnan(v) for v in per[2:])
    want = Evaluator("ogbg-molpcba").eval({"y_true": y, "y_pred": s})["ap"]
    assert want == pytest.approx((ap0 + ap1) / 2)
    for metric in (MultitaskAP(), OGBEvaluatorAP("ogbg-molpcba")):
        metric.update(torch.tensor(s[:4]).float(), torch.tensor(y[:4]).float())
        metric.update(torch.tensor(s[4:]).float(), torch.tensor(y[4:]).float())
        assert float(metric.compute()) == pytest.approx(want, abs=1e-6)
    # larger random case against OGB's evaluator
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, (200, 128)).astype(float)
    y[rng.random(y.shape) < 0.5] = np.nan
    s = rng.normal(size=(200, 128))
    metric = MultitaskAP()
    metric.update(torch.tensor(s).float(), torch.tensor(y).float())
    want = Evaluator("ogbg-molpcba").eval({"y_true": y, "y_pred": torch.tensor(s).float()
                                           .double().numpy()})["ap"]
    assert float(metric.compute()) == pytest.approx(want, abs=1e-6)
    # undefined: NaN, not an exception
    none = OGBEvaluatorAP("ogbg-molpcba")
    none.update(torch.zeros(2, 128), torch.full((2, 128), float("nan")))
    assert math.isnan(float(none.compute()))


# --------------------------------------------------------------------------------- runs (CLI)
def _config(tmp_path: Path, dataset: str) -> Path:
    path = tmp_path / f"{dataset}.yaml"
    path.write_text(f"""name: test-{dataset}
model:
  name: gt
  hidden_dim: 16
  num_layers: 1
  num_heads: 2
  use_edge_features: true
  pe: null
data:
  name: {dataset}
  batch_size: 8
  num_workers: 0
  options: {{}}
optim:
  lr: 1.0e-3
trainer:
  max_epochs: 1
  enable_progress_bar: false
  threads: 1
""")
    return path


@pytest.mark.parametrize("dataset", ["pcqm4m", "pcqm4mv2", "ogbg-molpcba"])
def test_one_epoch_through_the_cli(dataset, data_root, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["train", "--config", str(_config(tmp_path, dataset)), "--data-dir",
                 str(data_root), "--out", str(out)])
    assert code == 0
    log = capsys.readouterr().err  # the CLI logs to stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs"] == 1
    if dataset == "ogbg-molpcba":
        assert metrics["metric"] == "ap" and "predict_only" not in metrics
        assert all(0.0 <= metrics[s]["ap"] <= 1.0 for s in ("train", "val", "test"))
        return
    assert metrics["metric"] == "mae" and math.isfinite(metrics["val"]["mae"])
    assert metrics["test"] == {} and "test" in metrics["predict_only"]  # no MAE on NaN labels
    assert metrics["num_graphs"]["test"] == (6 if dataset == "pcqm4m" else 3)
    assert f"{dataset}: the test split is predict-only, no metric is reported for it" in log
    from graph_transformers.training.trained import evaluate_run
    again = evaluate_run(out, data_dir=str(data_root))  # `evaluate`: no metric for it either
    assert again["test"] == {} and again["val"]["mae"] == pytest.approx(metrics["val"]["mae"])


def test_lsc_configs_reference_the_validation_mae():
    """The papers report PCQM4M's validation MAE (test labels hidden): the configs say
    ``reference.split: val`` and the reproduction table reads that split."""
    from graph_transformers.training.config import load_config
    from graph_transformers.training.reproduction import _scores
    repo = Path(__file__).resolve().parents[2]
    paths = sorted((repo / "configs").glob("pcqm4m*/*.yaml"))
    names = {p.relative_to(repo / "configs").as_posix() for p in paths}
    assert {"pcqm4m/egt_small.yaml", "pcqm4m/egt.yaml", "pcqm4m/grpe_standard.yaml",
            "pcqm4mv2/grpe_standard.yaml", "pcqm4mv2/grpe_large.yaml"} <= names
    for path in paths:
        config = load_config(path)
        assert config.reference.split == "val" and config.reference.metric is None, path
    ref = load_config(repo / "configs/pcqm4m/egt_small.yaml").reference.model_dump()
    run = {"metric": "mae", "epochs": 42, "stopped_by": "max_epochs", "train": {"mae": 0.07},
           "val": {"mae": 0.13}, "test": {}, "last": {"train": {"mae": 0.07},
                                                      "val": {"mae": 0.1301}, "test": {}}}
    row = _scores([run], ref, {"trainer": {"max_epochs": 42}})
    assert row["ours"]["values"] == [0.1301] and row["paper"]["split"] == "val"


def _two_graphs(job):
    from torch_geometric.data import Data
    graphs = [Data(x=torch.tensor([[1], [2]]), edge_index=torch.tensor([[0, 1], [1, 0]]),
                   y=torch.tensor([[0.5]])) for _ in job]
    return graphs, list(job), []


def test_graph_store_refuses_what_it_cannot_hold(tmp_path):
    from torch_geometric.data import Data

    from graph_transformers.data.ondisk import build_graph_store, pack_graphs
    a = Data(x=torch.zeros(2, 1, dtype=torch.long), edge_index=torch.tensor([[0], [1]]))
    b = Data(x=torch.zeros(2, 1, dtype=torch.long), edge_index=torch.tensor([[0], [1]]),
             extra=torch.ones(2))
    with pytest.raises(DataError, match="differ from the first graph's"):
        pack_graphs([a, b], [0, 1])
    big = Data(x=torch.tensor([[300]]), edge_index=torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(DataError, match="outside the torch.uint8"):
        pack_graphs([big], [7], {"x": torch.uint8})
    with pytest.raises(DataError, match="0-dimensional"):
        pack_graphs([Data(x=torch.zeros(1, 1), y=torch.tensor(1.0))], [0])
    # a store of two jobs, read back; and one with no graph at all
    folder = build_graph_store(tmp_path / "s", [[0, 1], [2]], _two_graphs, num_workers=1)
    store = GraphStore(folder)
    assert len(store) == 3 and store.source_ids.tolist() == [0, 1, 2]
    assert torch.equal(store[2].edge_index, torch.tensor([[0, 1], [1, 0]]))
    empty = GraphStore(build_graph_store(tmp_path / "e", [], _two_graphs, num_workers=1))
    assert len(empty) == 0


def test_benchmark_table_of_seeds_with_a_predict_only_test_split(data_root, tmp_path, capsys):
    """``benchmark --seeds 2`` on PCQM4M: the summary has no test MAE (the test split has no
    labels), and the table says so instead of failing on the missing key."""
    out = tmp_path / "bench"
    assert main(["benchmark", "--config", str(_config(tmp_path, "pcqm4m")), "--seeds", "2",
                 "--data-dir", str(data_root), "--out", str(out)]) == 0
    table = (out / "table.md").read_text()
    assert "– (no labels)" in table
    rows = json.loads((out / "table.json").read_text())
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert rows[0]["test"] is None and rows[0]["train"]["mean"] >= 0
