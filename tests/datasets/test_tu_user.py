"""A new user's TU runs (``--config configs/tu/gt_mutag.yaml --set data.name=tu:<NAME>``):
``model.use_edge_features: auto``, index files for any TU name, the split rule recorded in
``metrics.json``, and ``data.node_features`` for featureless sets.

Most tests build tiny TU-format zips in ``tmp_path`` (no network, no shared data); the few that
read the shared MUTAG / ENZYMES files skip when ``../shared/data/TU`` is absent.
"""
from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path

import pytest
import torch

from graph_transformers.cli import main
from graph_transformers.data.registry import get_spec, load_splits, resolve_spec
from graph_transformers.datasets.tu import TU
from graph_transformers.datasets.tu_features import CappedOneHotDegree
from graph_transformers.training.config import ConfigError, build_config, load_config
from graph_transformers.training.model_sections import model_section
from graph_transformers.training.build import model_kwargs
from conftest import shared_data_dir

REPO = Path(__file__).resolve().parents[2]
SPLITS = ("train", "val", "test")


@pytest.fixture(autouse=True)
def _logs_reach_caplog(monkeypatch):
    """The CLI turns off propagation of the package logger (its own stderr handler); caplog
    listens at the root, so turn it back on for these tests, without a CLI handler left by an
    earlier test (bound to that test's captured stderr); the CLI's own is removed afterwards."""
    ours = logging.getLogger("graph_transformers")
    monkeypatch.setattr(ours, "propagate", True)
    monkeypatch.setattr(ours, "handlers",
                        [h for h in ours.handlers if h.get_name() != "graph-transformers-cli"])


@pytest.fixture
def shared_tu() -> Path:
    c = shared_data_dir("TU/MUTAG.zip", "TU/ENZYMES_train.index")
    if c is not None:
        return c
    pytest.skip("shared TU data not found (../shared/data/TU with MUTAG.zip and the ENZYMES "
                "index files): set GRAPH_TRANSFORMERS_DATA or place the project's shared/data "
                "next to the repository")


def _tu_zip(data: Path, name: str, num_graphs: int = 20, node_labels: bool = False,
            edge_labels: bool = False, hub: bool = False) -> Path:
    """Cycles of 4-7 nodes in the TU text format (class = cycle length is odd); optional node
    labels (alternating 0/1) and edge labels; ``hub``: graph 0 is a star with 6 leaves."""
    a, indicator, labels, nlabels, elabels = [], [], [], [], []
    offset = 0
    for g in range(num_graphs):
        n = 7 if hub and g == 0 else 4 + g % 4
        pairs = ([(0, i) for i in range(1, n)] if hub and g == 0
                 else [(i, (i + 1) % n) for i in range(n)])
        for i in range(n):
            indicator.append(g + 1)
            nlabels.append(i % 2)
        for i, j in pairs:
            for u, v in ((i, j), (j, i)):
                a.append(f"{offset + u + 1}, {offset + v + 1}")
                elabels.append(u % 2)
        labels.append(n % 2)
        offset += n
    files = {f"{name}_A.txt": a, f"{name}_graph_indicator.txt": indicator,
             f"{name}_graph_labels.txt": labels}
    if node_labels:
        files[f"{name}_node_labels.txt"] = nlabels
    if edge_labels:
        files[f"{name}_edge_labels.txt"] = elabels
    path = data / "TU" / f"{name}.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for fname, rows in files.items():
            z.writestr(f"{name}/{fname}", "\n".join(map(str, rows)) + "\n")
    return path


def _index_files(data: Path, name: str, lines: dict[str, list[list[int]]]) -> None:
    for split, folds in lines.items():
        (data / "TU" / f"{name}_{split}.index").write_text(
            "\n".join(",".join(map(str, ids)) for ids in folds) + "\n")


# two folds of 20 graphs: fold 0 tests 0-3, fold 1 tests 16-19
GOOD = {"train": [list(range(6, 20)), list(range(0, 14))],
        "val": [[4, 5], [14, 15]],
        "test": [[0, 1, 2, 3], [16, 17, 18, 19]]}


def _cfg(tmp_path: Path, name: str, **data) -> object:
    return build_config({"model": {"name": "gt", "pe": None, "use_edge_features": "auto"},
                         "data": {"name": f"tu:{name}", "data_dir": str(tmp_path / "data"),
                                  "cache_dir": str(tmp_path / "cache"), **data}})


# ------------------------------------------------------------------ model.use_edge_features: auto
def test_auto_edge_features_follow_the_dataset(caplog):
    """auto → on for MUTAG (one-hot bond labels), off for NCI1; the value is logged; a model
    that cannot read edge features resolves to off; GINE without edge features names the fix."""
    gt = build_config({"model": {"name": "gt", "pe": None, "use_edge_features": "auto"},
                       "data": {"name": "mutag"}})
    assert gt.model.use_edge_features == "auto"
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        kw = model_kwargs(gt, get_spec("mutag"))
    assert kw["use_edge_features"] is True and kw["num_edge_features"] == 4
    assert "model.use_edge_features: auto -> true (dataset mutag has edge features" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        kw = model_kwargs(gt, get_spec("nci1"))
    assert kw["use_edge_features"] is False and "num_edge_features" not in kw
    assert "auto -> false (dataset nci1 has no edge features)" in caplog.text

    gin = build_config({"model": {"name": "gps", "mpnn": "gin", "pe": None,
                                  "use_edge_features": "auto"}, "data": {"name": "mutag"}})
    assert model_kwargs(gin, get_spec("mutag"))["use_edge_features"] is False
    mpnn_gin = build_config({"model": {"name": "gin", "use_edge_features": "auto"},
                             "data": {"name": "mutag"}})
    assert model_kwargs(mpnn_gin, get_spec("mutag"))["use_edge_features"] is False
    gine = build_config({"model": {"name": "gps", "mpnn": "gine", "pe": None,
                                   "use_edge_features": "auto"}, "data": {"name": "nci1"}})
    with pytest.raises(ValueError, match=r"is auto but dataset 'nci1' has no edge features.*"
                                         r"model\.mpnn=gin"):
        model_kwargs(gine, get_spec("nci1"))


def test_explicit_true_without_edge_features_still_errors_and_defaults_are_unchanged():
    gt = build_config({"model": {"name": "gt", "pe": None, "use_edge_features": True},
                       "data": {"name": "nci1"}})
    with pytest.raises(ValueError, match=r"model.use_edge_features is set but dataset 'nci1' "
                                         r"has no edge features; set model.use_edge_features="
                                         r"false"):
        model_kwargs(gt, get_spec("nci1"))
    # the schema defaults stay booleans: benchmark configs resolve exactly as before
    assert model_section("gt")().use_edge_features is False
    assert model_section("gps")().use_edge_features is True
    assert model_section("gcn")(name="gcn").use_edge_features is False
    benchmark = [p for p in sorted((REPO / "configs").rglob("*.yaml")) if p.parent.name != "tu"]
    assert benchmark and all(isinstance(load_config(p).model.use_edge_features, bool)
                             for p in benchmark)
    with pytest.raises(ConfigError, match="use_edge_features"):
        build_config({"model": {"name": "gt", "use_edge_features": "maybe"}})


# ------------------------------------------------------------------------------- index files
def test_index_files_of_any_tu_name_are_used_and_recorded(tmp_path, caplog):
    data = tmp_path / "data"
    _tu_zip(data, "TOYIDX")
    _index_files(data, "TOYIDX", GOOD)
    cfg = _cfg(tmp_path, "TOYIDX", fold=1)
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        splits = load_splits(cfg.data, cfg.encodings)
    assert [splits[s].indices_in_full for s in SPLITS] == [GOOD[s][1] for s in SPLITS]
    rule = splits["test"].split_rule
    assert rule["rule"] == "index_files" and (rule["num_folds"], rule["fold"]) == (2, 1)
    assert [Path(f).name for f in rule["files"]] == [f"TOYIDX_{s}.index" for s in SPLITS]
    assert set(rule["sha256"]) == {f"TOYIDX_{s}.index" for s in SPLITS}
    assert all(ds.split_rule == rule for ds in splits.values())
    assert caplog.text.count("tu:TOYIDX split: fold 1 of 2 from the index files") == 1
    with pytest.raises(ValueError, match=r"fold 2 asked for, but the index files .* have 2 "
                                         r"lines \(folds 0..1\)"):
        TU(name="TOYIDX", root=tmp_path / "cache" / "TU", split="train", fold=2, data_dir=data)


@pytest.mark.parametrize("case, match", [
    ("lines", r"have different numbers of lines \(TOYBAD_train.index: 2, TOYBAD_val.index: 1, "
              r"TOYBAD_test.index: 2\)"),
    ("range", r"TOYBAD_test.index fold 1 \(line 2\) holds graph id 20, outside 0..19"),
    ("twice", r"TOYBAD_val.index fold 0 \(line 1\) holds graph id 4 twice"),
    ("overlap", r"graph 0 is in both TOYBAD_train.index and TOYBAD_test.index in fold 0"),
    ("token", r"TOYBAD_train.index line 1 holds 'x', not a graph id"),
    ("partial", r"holds TOYBAD_train.index, TOYBAD_val.index but not TOYBAD_test.index"),
])
def test_bad_index_files_give_one_line_errors(tmp_path, case, match):
    data = tmp_path / "data"
    _tu_zip(data, "TOYBAD")
    lines = {s: [list(f) for f in GOOD[s]] for s in SPLITS}
    if case == "lines":
        lines["val"] = lines["val"][:1]
    elif case == "range":
        lines["test"][1][0] = 20
    elif case == "twice":
        lines["val"][0] = [4, 4]
    elif case == "overlap":
        lines["train"][0].append(0)
    _index_files(data, "TOYBAD", lines)
    if case == "token":
        path = data / "TU" / "TOYBAD_train.index"
        path.write_text("x," + path.read_text())
    if case == "partial":
        (data / "TU" / "TOYBAD_test.index").unlink()
    with pytest.raises(ValueError, match=match) as err:
        TU(name="TOYBAD", root=tmp_path / "cache", split="train", fold=0, data_dir=data)
    assert "\n" not in str(err.value)


def test_enzymes_keeps_its_checksummed_index_files(shared_tu, tmp_path):
    d = TU(name="ENZYMES", root=tmp_path / "cache", split="val", fold=3, data_dir=shared_tu)
    assert d.split_source == "benchmark index files"
    assert d.split_rule["rule"] == "index_files" and d.split_rule["num_folds"] == 10
    assert d.split_rule["sha256"]["ENZYMES_val.index"] == (
        "9301b77fb3d7238cd863a4ac954bad997f8c40927d5fc77ec6deaab4dd25d2c7")


# ------------------------------------- README example, stratified fallback, metrics.json split
def test_readme_tu_example_on_a_set_without_edge_or_node_features(tmp_path, capsys):
    """`--config configs/tu/gt_mutag.yaml --set data.name=tu:<NAME>` on a set with neither edge
    nor node labels trains (it stopped with 'has no edge features'); metrics.json records the
    seeded stratified folds under ``split``; the log says what auto chose."""
    _tu_zip(tmp_path / "data", "TOYPLAIN")
    out = tmp_path / "run"
    assert main(["train", "--config", str(REPO / "configs/tu/gt_mutag.yaml"), "--out", str(out),
                 "--set", "data.name=tu:TOYPLAIN", f"data.data_dir={tmp_path / 'data'}",
                 f"data.cache_dir={tmp_path / 'cache'}", "data.fold=3", "model.num_layers=1",
                 "model.hidden_dim=8", "model.num_heads=2", "encodings.lap_pe.k=2",
                 "trainer.max_epochs=1", "trainer.enable_progress_bar=false",
                 "data.batch_size=8"]) == 0
    err = capsys.readouterr().err
    assert "model.use_edge_features: auto -> false (dataset tu:TOYPLAIN has no edge features)" \
        in err
    assert "TU TOYPLAIN has no node labels or attributes: each node gets one constant " \
           "feature 1" in err and "data.node_features=degree" in err
    assert err.count("tu:TOYPLAIN split: fold 3 of 10 seeded stratified folds (seed 0") == 1
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["split"] == {"rule": "stratified_folds", "seed": 0, "num_folds": 10,
                                "fold": 3}
    assert metrics["data_source"]["source"] == "canonical"
    assert metrics["config"]["model"]["use_edge_features"] == "auto"
    assert metrics["config"]["data"]["node_features"] == "auto"


# ------------------------------------------------------------------------- data.node_features
def test_degree_features_are_one_hot_with_a_cap_and_have_their_own_cache(tmp_path, caplog):
    data = tmp_path / "data"
    _tu_zip(data, "TOYSTAR", hub=True)
    cfg = _cfg(tmp_path, "TOYSTAR", node_features="degree", options={"max_degree": 3})
    spec = resolve_spec(cfg.data)
    assert spec.node_dim == 4  # degrees 0, 1, 2, >= 3
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        splits = load_splits(cfg.data, cfg.encodings)
    assert "one-hot node degree, 4 columns (degree >= 3 in the last" in caplog.text
    graphs = {i: g for ds in splits.values() for i, g in zip(ds.indices_in_full, ds)}
    star, ring = graphs[0], graphs[1]
    assert star.x.shape == (7, 4) and torch.equal(star.x.sum(1), torch.ones(7))
    assert star.x[0].tolist() == [0, 0, 0, 1]  # the hub (degree 6) in the last column
    assert torch.equal(star.x[1:].argmax(1), torch.ones(6, dtype=torch.long))
    assert torch.equal(ring.x.argmax(1), torch.full((ring.num_nodes,), 2))
    # auto: the constant is added as each graph is read (stored x and fingerprints as before)
    auto = _cfg(tmp_path, "TOYSTAR")
    assert resolve_spec(auto.data).node_dim == 1
    ds = load_splits(auto.data, auto.encodings)["train"]
    assert ds._data.x is None and torch.equal(ds[0].x, torch.ones(ds[0].num_nodes, 1))
    # the constant features of the same set are processed into another cache folder
    const = _cfg(tmp_path, "TOYSTAR", node_features="constant")
    assert load_splits(const.data, const.encodings)["train"][0].x.shape[1] == 1
    assert len(list((tmp_path / "cache" / "TU" / "TOYSTAR" / "processed").iterdir())) >= 3
    with pytest.raises(ValueError, match="data.options.max_degree must be a positive integer"):
        resolve_spec(_cfg(tmp_path, "TOYSTAR", node_features="degree",
                          options={"max_degree": 0}).data)
    assert repr(CappedOneHotDegree(3)) == "CappedOneHotDegree(max_degree=3)"


def test_degree_is_appended_and_constant_replaces_own_features(tmp_path, caplog):
    data = tmp_path / "data"
    _tu_zip(data, "TOYLAB", node_labels=True)
    deg = _cfg(tmp_path, "TOYLAB", node_features="degree", options={"max_degree": 3})
    assert resolve_spec(deg.data).node_dim == 2 + 4
    g = load_splits(deg.data, deg.encodings)["train"][0]
    assert g.x.shape[1] == 6 and torch.equal(g.x[:, :2].sum(1), torch.ones(g.num_nodes))
    assert torch.equal(g.x[:, 2:].argmax(1), torch.full((g.num_nodes,), 2))  # cycles: degree 2
    const = _cfg(tmp_path, "TOYLAB", node_features="constant")
    assert resolve_spec(const.data).node_dim == 1
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        g = load_splits(const.data, const.encodings)["train"][0]
    assert torch.equal(g.x, torch.ones(g.num_nodes, 1))
    assert "TU TOYLAB: node features = one constant 1 per node (data.node_features: constant); " \
           "the set's own node features are not used" in caplog.text
    with pytest.raises(ValueError, match=r"data.node_features='degree' applies to the TU sets"):
        resolve_spec(build_config({"model": {"name": "gt", "pe": None},
                                   "data": {"name": "csl", "node_features": "degree"}}).data)


def test_degree_on_mutag_appends_to_the_atom_types(shared_tu):
    cfg = build_config({"model": {"name": "gt", "pe": None},
                        "data": {"name": "mutag", "node_features": "degree",
                                 "data_dir": str(shared_tu)}})
    spec = resolve_spec(cfg.data)
    assert spec.node_dim == 7 + 65 and spec.edge_dim == 4 and get_spec("mutag").node_dim == 7
    g = load_splits(cfg.data, cfg.encodings)["test"][0]
    assert g.x.shape[1] == 72 and torch.equal(g.x[:, 7:].sum(1), torch.ones(g.num_nodes))
