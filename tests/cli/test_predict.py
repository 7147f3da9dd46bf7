"""Predictions of a trained run (issue 11 §3): ``load_run(...).predict`` and
``graph-transformers predict``. Predicting a run's test split reproduces ``evaluate``'s test
metric; SMILES are featurized as the run's dataset was; invalid inputs keep their row."""
from __future__ import annotations

import csv
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch, Data, InMemoryDataset

from graph_transformers import Predictions, TrainedRun, load_run
from graph_transformers.cli import main
from graph_transformers.data.registry import load_splits
from graph_transformers.errors import DataError, RunError
from graph_transformers.training.config import build_config, load_yaml
from graph_transformers.training.build import make_model
from graph_transformers.training.trained import evaluate_run

REPO = Path(__file__).resolve().parents[2]
CSL_CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
CSV_CONFIG = REPO / "configs/moleculenet/gt_csv.yaml"
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=2", "model.hidden_dim=16",
        "model.num_heads=2"]
MOLECULES = [("C", "0.1", "1"), ("CC", "0.2", "2"), ("CCC", "0.3", "1"), ("CCCC", "0.5", "2"),
             ("CCO", "1.0", ""), ("CCN", "1.5", "3"), ("c1ccccc1", "2.0", "1"),
             ("C1CCCCC1", "2.5", "1"), ("c1ccncc1", "3.0", "2"), ("C1CCNCC1", "3.5", "2"),
             ("c1ccoc1", "1.0", "1"), ("C1CCOC1", "0.5", "1"), ("c1ccsc1", "0.2", "3"),
             ("C1CC1", "0.1", "2"), ("C1CCC1", "4.0", "1"), ("c1cnccn1", "3.0", "1")]


def _train(config: Path, out: Path, *sets: str) -> None:
    assert main(["train", "--config", str(config), "--out", str(out), "--set", *FAST,
                 *sets]) == 0


@pytest.fixture(scope="module")
def csv_run(tmp_path_factory) -> Path:
    """A 2-epoch GT (edge features, LapPE) on a 16-molecule CSV with two regression targets,
    one label blank."""
    pytest.importorskip("rdkit")
    root = tmp_path_factory.mktemp("csv_run")
    path = root / "m.csv"
    path.write_text("smiles,y,z\n" + "".join(f"{s},{y},{z}\n" for s, y, z in MOLECULES))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPH_TRANSFORMERS_CACHE", str(root / "cache"))
        _train(CSV_CONFIG, root / "run", f"data.path={path}", "data.target_columns=[y,z]",
               "data.batch_size=4", "encodings.lap_pe.k=3", "trainer.max_epochs=2")
    return root / "run"


@pytest.fixture(scope="module")
def csl_run(tmp_path_factory) -> Path:
    """A 1-epoch GT with LapPE on CSL (10 classes; not molecules)."""
    root = tmp_path_factory.mktemp("csl_run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPH_TRANSFORMERS_CACHE", str(root / "cache"))
        _train(CSL_CONFIG, root / "run", "data.batch_size=30", "trainer.max_epochs=1")
    return root / "run"


def _test_split(run):
    return load_splits(run.config.data, run.config.encodings)["test"]


def _read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ----------------------------------------------------------------------------- round trips
def test_predicting_the_test_split_reproduces_evaluate_regression(csv_run):
    """The test split's graphs and its SMILES give the same predictions, and their RMSE against
    the labels (blank ones left out) is evaluate's test RMSE."""
    run = load_run(csv_run)
    test = _test_split(run)
    lap_before = test[0].lap_pe.clone()
    from_graphs = run.predict(test)
    from_smiles = run.predict(test.smiles, batch_size=1)
    assert from_graphs.status == from_smiles.status == ("ok",) * len(test)
    assert from_graphs.columns == ("y", "z") and from_graphs.values.shape == (len(test), 2)
    torch.testing.assert_close(from_smiles.values, from_graphs.values)
    y = torch.cat([d.y for d in test])
    labelled = ~torch.isnan(y)
    err = (from_graphs.values - y)[labelled]
    rmse = float(err.square().mean().sqrt())
    assert rmse == pytest.approx(evaluate_run(csv_run)["test"]["rmse"], rel=1e-5)
    # the dataset's graphs are inputs, not scratch space
    assert torch.equal(test[0].lap_pe, lap_before) and test[0].y is not None


def test_predicting_the_test_split_reproduces_evaluate_classification(csl_run):
    run = load_run(csl_run, checkpoint="last")
    test = _test_split(run)
    preds = run.predict([test[i] for i in range(len(test))], batch_size=7)
    assert preds.task == "classification" and preds.columns == tuple(f"prob_{k}"
                                                                     for k in range(10))
    torch.testing.assert_close(preds.values.sum(-1), torch.ones(len(test)))
    assert torch.equal(preds.classes, preds.values.argmax(-1))
    accuracy = float((preds.classes == torch.cat([d.y for d in test])).float().mean())
    assert accuracy == pytest.approx(evaluate_run(csl_run, checkpoint="last")["test"]["accuracy"])


# ----------------------------------------------------------------------------- invalid inputs
def test_invalid_smiles_keep_their_row_in_input_order(csv_run):
    run = load_run(csv_run)
    smiles = ["CCO", "not_a_smiles", "", "c1ccccc1", "C1CC", "CCO"]
    preds = run.predict(smiles, batch_size=2)
    assert len(preds) == 6 and preds.inputs == tuple(smiles) and preds.num_invalid == 3
    assert preds.status[1] == "invalid SMILES 'not_a_smiles': SMILES syntax error"
    assert preds.status[2] == "empty input"
    assert preds.status[4].startswith("invalid SMILES 'C1CC'")
    assert preds.ok.tolist() == [True, False, False, True, False, True]
    assert torch.isnan(preds.values[~preds.ok]).all()
    assert not torch.isnan(preds.values[preds.ok]).any()
    # row i is the prediction of input i, whatever the batching
    alone = [run.predict([s]).values[0] for s in ("CCO", "c1ccccc1")]
    torch.testing.assert_close(preds.values[0], alone[0])
    torch.testing.assert_close(preds.values[3], alone[1])
    torch.testing.assert_close(preds.values[5], alone[0])
    assert not torch.allclose(alone[0], alone[1])
    rows = preds.rows()
    assert [r["index"] for r in rows] == list(range(6))
    assert rows[1] == {"index": 1, "smiles": "not_a_smiles", "status": preds.status[1],
                       "y": None, "z": None}


def test_invalid_graphs_keep_their_row(csl_run):
    run = load_run(csl_run)
    good = _test_split(run)[0]
    good = Data(x=good.x, edge_index=good.edge_index, y=good.y, num_nodes=good.num_nodes)
    bad_type = Data(x=torch.ones_like(good.x), edge_index=good.edge_index)  # CSL has 1 node type
    no_x = Data(edge_index=good.edge_index, num_nodes=good.num_nodes)
    bad_edge = Data(x=good.x, edge_index=torch.tensor([[0], [99]]))
    float_x = Data(x=good.x.float(), edge_index=good.edge_index)
    preds = run.predict([good, bad_type, no_x, bad_edge, float_x, 3, good])
    assert preds.status[0] == preds.status[6] == "ok"
    assert "node feature column 0 has ids in [1, 1], outside [0, 1)" in preds.status[1]
    assert "no node features x" in preds.status[2]
    assert "edge_index has node ids in [0, 99]" in preds.status[3]
    assert "integer category ids" in preds.status[4]
    assert preds.status[5] == "not a SMILES string or a torch_geometric Data: int"
    assert preds.classes.tolist()[1:6] == [-1] * 5
    torch.testing.assert_close(preds.values[0], preds.values[6])
    assert "lap_pe" not in good and "y" in good  # the input was not modified


# ----------------------------------------------------------------------------- outputs per task
def _untrained(config: Path, *sets: str) -> TrainedRun:
    cfg = build_config(load_yaml(config), [*FAST, *sets])
    from graph_transformers.data.registry import resolve_spec
    spec = resolve_spec(cfg.data)
    torch.manual_seed(0)
    return TrainedRun(cfg, spec, make_model(cfg, spec))


def test_a_batch_the_model_refuses_is_retried_graph_by_graph():
    """A model's own input check failing on one graph of a batch costs only that graph's row."""
    pytest.importorskip("rdkit")

    class Picky(torch.nn.Module):
        def forward(self, batch):
            if bool((batch.x == 1).any()):  # ZINC atom type 1: oxygen
                raise ValueError("no oxygen, please")
            return torch.full((batch.num_graphs, 1), 0.5)

    run = _untrained(REPO / "configs/zinc/gt.yaml")
    run.model = Picky()
    preds = run.predict(["CCC", "CCO", "CCN"], batch_size=3)
    assert preds.status == ("ok", "no oxygen, please", "ok")
    assert preds.values[:, 0].tolist()[::2] == [0.5, 0.5]


def test_binary_tasks_give_one_probability_per_task():
    pytest.importorskip("rdkit")
    run = _untrained(CSV_CONFIG, "data.path=null", "data.name=tox21")
    preds = run.predict(["CCO", "c1ccccc1O"])
    assert preds.task == "binary" and len(preds.columns) == 12 and preds.columns[0] == "NR-AR"
    logits = run.model(Batch.from_data_list([run.prepare("CCO")]))
    torch.testing.assert_close(preds.values[0], torch.sigmoid(logits[0]).detach())
    assert ((preds.values > 0) & (preds.values < 1)).all()


def test_zinc_runs_featurize_smiles_with_the_28_zinc_atom_types():
    pytest.importorskip("rdkit")
    run = _untrained(REPO / "configs/zinc/gt.yaml")
    preds = run.predict(["CCO", "[Si](C)(C)(C)C", "c1ccccc1"])
    assert preds.columns == ("logP_SA_cycle_normalized",)
    assert preds.status[0] == preds.status[2] == "ok"
    assert "not one of the 28 ZINC atom types" in preds.status[1]
    graph = run.featurize("CCO")
    assert graph.x.tolist() == [[0], [0], [1]] and graph.edge_attr.tolist() == [1, 1, 1, 1]


def test_node_level_runs_are_refused_in_one_line():
    run = _untrained(CSL_CONFIG, "data.name=pattern", "model.pe=null", "encodings.lap_pe=null")
    with pytest.raises(ValueError, match="predict takes graph-level runs; .* node-level task on "
                                         "'pattern'"):
        run.predict([Data(x=torch.zeros(3, dtype=torch.long),
                          edge_index=torch.tensor([[0, 1], [1, 2]]))])


# ----------------------------------------------------------------------------- errors
def test_clear_errors_for_runs_that_cannot_predict(csl_run, tmp_path):
    with pytest.raises(RunError, match="is not a run directory"):
        load_run(tmp_path)
    seeds = tmp_path / "seeds"
    shutil.copytree(csl_run, seeds / "seed_0", ignore=shutil.ignore_patterns("checkpoints"))
    with pytest.raises(RunError, match="it holds the runs seed_0: pass one of them"):
        load_run(seeds)
    with pytest.raises(RunError, match="has no checkpoint best.ckpt"):
        load_run(seeds / "seed_0")
    with pytest.raises(ValueError, match="trained on 'csl', whose graphs are not molecules"):
        load_run(csl_run).predict(["CCO"])


# ----------------------------------------------------------------------------- files and CLI
def test_cli_writes_one_row_per_input(csv_run, tmp_path, capsys):
    data = tmp_path / "new.csv"
    data.write_text("id,SMILES\na,CCO\nb,xyz\n\nc,c1ccccc1\nd,\n")
    out = tmp_path / "sub" / "preds.csv"
    assert main(["predict", str(csv_run), "--data", str(data), "--smiles-column", "SMILES",
                 "--out", str(out), "--batch-size", "2"]) == 0
    assert capsys.readouterr().out.strip() == (f"2 of 4 inputs predicted, 2 invalid (reason in "
                                               f"the status column): {out}")
    rows = _read(out)
    # the input's other columns (an ID) are carried through, row for row
    assert list(rows[0]) == ["index", "id", "smiles", "status", "y", "z"]
    assert [(r["index"], r["id"], r["smiles"], r["status"] == "ok") for r in rows] == [
        ("0", "a", "CCO", True), ("1", "b", "xyz", False), ("2", "c", "c1ccccc1", True),
        ("3", "d", "", False)]
    assert rows[3]["status"] == "empty input" and rows[1]["y"] == rows[1]["z"] == ""
    expected = load_run(csv_run).predict(["CCO"]).values[0]
    assert [float(rows[0][c]) for c in ("y", "z")] == pytest.approx(expected.tolist(), rel=1e-6)
    assert sorted(p.name for p in out.parent.iterdir()) == ["preds.csv"]


def test_cli_one_column_input_keeps_a_row_for_every_empty_input(csv_run, tmp_path, capsys):
    """Issue 54: in a CSV of SMILES alone, a row holding "" or only spaces is an input (status
    "empty input"), so output row i is input row i; an empty line is no row, as in training."""
    data = tmp_path / "one.csv"
    data.write_text('smiles\nCCO\n""\n   \n\nc1ccccc1\n')
    out = tmp_path / "preds.csv"
    assert main(["predict", str(csv_run), "--data", str(data), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith("2 of 4 inputs predicted, 2 invalid")
    rows = _read(out)
    assert [(r["index"], r["smiles"], r["status"]) for r in rows] == [
        ("0", "CCO", "ok"), ("1", "", "empty input"), ("2", "", "empty input"),
        ("3", "c1ccccc1", "ok")]
    assert rows[1]["y"] == rows[2]["z"] == "" and rows[3]["y"] != ""


def test_cli_keeps_the_input_columns_asked_for(csv_run, tmp_path, capsys):
    data = tmp_path / "new.csv"
    data.write_text("name,smiles,y,batch\nethanol,CCO,0.5,7\n\nbenzene,c1ccccc1,2.0,8\n")
    out = tmp_path / "preds.csv"
    run = ["predict", str(csv_run), "--data", str(data), "--out", str(out)]
    assert main(run) == 0
    rows = _read(out)  # a measured y beside the predicted one: input_y
    assert list(rows[0]) == ["index", "name", "input_y", "batch", "smiles", "status", "y", "z"]
    assert [(r["name"], r["input_y"]) for r in rows] == [("ethanol", "0.5"), ("benzene", "2.0")]
    assert main(run + ["--keep-columns", "name"]) == 0
    assert list(_read(out)[0]) == ["index", "name", "smiles", "status", "y", "z"]
    assert main(run + ["--keep-columns", "none"]) == 0
    assert list(_read(out)[0]) == ["index", "smiles", "status", "y", "z"]
    assert main(run + ["--keep-columns", "name,nope"]) == 2  # an input error
    assert "column(s) ['nope'] not in the header" in capsys.readouterr().err


def test_cli_output_is_written_atomically(csv_run, tmp_path, monkeypatch, capsys):
    """A failure while writing (a full disk) leaves the previous file whole and no temporary
    file behind."""
    import errno

    import graph_transformers.prediction.results as results
    data = tmp_path / "new.csv"
    data.write_text("smiles\nCCO\nCCN\n")
    out = tmp_path / "preds.csv"
    out.write_text("previous\n")

    def full(value):
        raise OSError(errno.ENOSPC, "No space left on device", str(out))
    monkeypatch.setattr(results, "_cell", full)
    assert main(["predict", str(csv_run), "--data", str(data), "--out", str(out)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert out.read_text() == "previous\n" and [p.name for p in tmp_path.iterdir()
                                                 if p.name.startswith(".")] == []


def test_cli_predicts_a_pt_file_of_graphs(csl_run, tmp_path, capsys):
    run = load_run(csl_run)
    test = _test_split(run)
    graphs = [test[i] for i in range(5)]
    path = tmp_path / "graphs.pt"
    torch.save(graphs, path)
    out = tmp_path / "preds.csv"
    assert main(["predict", str(csl_run), "--data", str(path), "--out", str(out)]) == 0
    rows = _read(out)
    assert list(rows[0]) == ["index", "status", "class"] + [f"prob_{k}" for k in range(10)]
    expected = run.predict(graphs)
    assert [int(r["class"]) for r in rows] == expected.classes.tolist()
    # PyG's InMemoryDataset file format reads to the same graphs
    InMemoryDataset.save(graphs, str(tmp_path / "data.pt"))
    from graph_transformers.prediction import load_graphs
    loaded = load_graphs(tmp_path / "data.pt")
    assert len(loaded) == 5 and all(torch.equal(a.edge_index, b.edge_index)
                                    for a, b in zip(loaded, graphs))


@pytest.mark.parametrize("case", ["dataset-object", "not-a-run", "unknown-type"])
def test_cli_bad_inputs_are_one_line_errors(case, csl_run, tmp_path, capsys):
    """More bad inputs are rows of the table in docs/reliability.md (predict-*)."""
    from graph_transformers.datasets.synthetic.csl import CSL
    data, run = tmp_path / "in.pt", csl_run
    if case == "dataset-object":
        torch.save(CSL(root=str(tmp_path / "csl"), split="test"), data)
        expected = "save a dataset as torch.save(list(dataset), path)"
    elif case == "not-a-run":
        data = tmp_path / "in.csv"
        data.write_text("smiles\nCCO\n")
        run = tmp_path
        expected = "is not a run directory (no config.yaml)"
    else:
        data = tmp_path / "in.json"
        data.write_text("{}")
        expected = "unknown input type; expected a SMILES CSV"
    assert main(["predict", str(run), "--data", str(data), "--out",
                 str(tmp_path / "p.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err, err
    assert not (tmp_path / "p.csv").exists()


def test_load_graphs_rejects_files_without_graphs(tmp_path):
    from graph_transformers.prediction import load_graphs
    torch.save({"weights": torch.zeros(2)}, tmp_path / "w.pt")
    with pytest.raises(DataError, match="holds a dict, not graphs"):
        load_graphs(tmp_path / "w.pt")
    torch.save([], tmp_path / "e.pt")
    with pytest.raises(DataError, match="holds no graphs"):
        load_graphs(tmp_path / "e.pt")


def test_predictions_to_csv_leaves_invalid_cells_empty(tmp_path):
    preds = Predictions("classification", ("prob_0", "prob_1"),
                        torch.tensor([[0.25, 0.75], [math.nan, math.nan]]), ("ok", "bad"),
                        torch.tensor([1, -1]), None)
    rows = _read(preds.to_csv(tmp_path / "p.csv"))
    assert rows == [{"index": "0", "status": "ok", "class": "1", "prob_0": "0.25",
                     "prob_1": "0.75"},
                    {"index": "1", "status": "bad", "class": "", "prob_0": "", "prob_1": ""}]
    assert b"\r" not in (tmp_path / "p.csv").read_bytes()  # \n line endings (issue 25)


def test_import_stays_cheap_and_load_run_is_exported():
    """``import graph_transformers`` loads no torch; ``load_run`` is imported on first use."""
    import graph_transformers
    code = ("import sys, graph_transformers as g\n"
            "assert 'torch' not in sys.modules, 'torch imported eagerly'\n"
            "assert callable(g.load_run) and 'torch' in sys.modules\n"
            "assert 'load_run' in dir(g)\n")
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=str(Path(graph_transformers.__file__).parents[1]))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
