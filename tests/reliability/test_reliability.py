"""Runs that never lie (issue 12): every numbered item of the issue has a test here that fails on
the code before it; the bad-input table of ``docs/reliability.md`` is checked in
``test_reliability_table.py``."""
from __future__ import annotations

import csv
import errno
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from graph_transformers.cli import main

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=2", "model.hidden_dim=16",
        "model.num_heads=2", "data.batch_size=30"]


def _train(out: Path, *sets: str, resume: bool = False) -> int:
    return main(["train", "--config", str(CONFIG), "--out", str(out),
                 *(["--resume"] if resume else []), "--set", *FAST, *sets])


def _errors(capsys) -> list[str]:
    """The CLI's error lines (log lines aside)."""
    return [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("graph-transformers: error:")]


def _rows(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def _env() -> dict:
    """The environment of a CLI subprocess: it imports the same package as this process."""
    import graph_transformers
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(graph_transformers.__file__).parents[1]),
                                         env.get("PYTHONPATH", "")])
    return env


# ----------------------------------------------------------------------------- 1. dataset cache
def _csl_file(root: Path) -> Path:
    (path,) = root.glob("processed/*/data.pt")
    return path


def test_corrupted_cache_is_detected_and_rebuilt(tmp_path, caplog):
    """Labels rewritten to one class in a processed CSL file (a valid file, another hash): the
    load logs one line naming the file and rebuilds, so the data keeps its 10 classes."""
    from torch_geometric.io import fs

    from graph_transformers.datasets.synthetic.csl import CSL
    original = CSL(root=tmp_path, split="train")
    path = _csl_file(tmp_path)
    assert (path.parent / "manifest.json").is_file()
    data, slices, cls = fs.torch_load(str(path))
    data["y"] = torch.zeros_like(data["y"])
    torch.save((data, slices, cls), path)
    with caplog.at_level(logging.WARNING, logger="graph_transformers"):
        again = CSL(root=tmp_path, split="train")
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and str(path) in lines[0] and "rebuilding" in lines[0], lines
    assert torch.equal(again.y, original.y) and again.y.unique().numel() == 10


@pytest.mark.parametrize("damage", ["truncate", "empty", "no-manifest"])
def test_truncated_or_unrecorded_cache_is_rebuilt(tmp_path, damage):
    from graph_transformers.datasets.synthetic.csl import CSL
    original = CSL(root=tmp_path, split="test")
    path = _csl_file(tmp_path)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        (path.parent / "manifest.json").unlink()
    again = CSL(root=tmp_path, split="test")
    assert torch.equal(again.y, original.y) and torch.equal(again.edge_index,
                                                            original.edge_index)


def test_corrupt_cache_without_raw_data_is_a_clear_error(tmp_path, monkeypatch):
    from graph_transformers.data.cache import DataNotFoundError
    from graph_transformers.datasets.synthetic.csl import CSL
    from graph_transformers.errors import DataError
    CSL(root=tmp_path)
    path = _csl_file(tmp_path)
    path.write_bytes(path.read_bytes()[:100])

    def no_raw(self):
        raise DataNotFoundError("raw files are gone")
    monkeypatch.setattr(CSL, "process", no_raw)
    with pytest.raises(DataError, match="cannot be rebuilt: raw files are gone"):
        CSL(root=tmp_path)


def test_loaded_graphs_are_validated():
    from torch_geometric.data import Data, InMemoryDataset

    from graph_transformers.data.cache import validate_graph_storage
    from graph_transformers.errors import DataError
    graphs = [Data(x=torch.zeros(3, 1), edge_index=torch.tensor([[0, 1], [1, 2]]),
                   y=torch.tensor([1])) for _ in range(3)]
    data, slices = InMemoryDataset.collate(graphs)
    validate_graph_storage(data, slices, "ok", num_classes=2)
    bad = data.clone()
    bad.edge_index = bad.edge_index.clone()
    bad.edge_index[0, 3] = -7  # graph 1
    with pytest.raises(DataError, match=r"negative node id \(graph 1\)"):
        validate_graph_storage(bad, slices, "f")
    bad.edge_index[0, 3] = 3  # graph 1 has nodes 0..2
    with pytest.raises(DataError, match=r"node id 3 outside its graph of 3 nodes \(graph 1\)"):
        validate_graph_storage(bad, slices, "f")
    with pytest.raises(DataError, match="label 1 outside 0..0"):
        validate_graph_storage(data, slices, "f", num_classes=1)
    inf = data.clone()
    inf.x = inf.x.clone()
    inf.x[7, 0] = float("inf")  # graph 2
    with pytest.raises(DataError, match=r"x holds non-finite values \(graph 2\)"):
        validate_graph_storage(inf, slices, "f")


# ----------------------------------------------------------------------------- 2. NaN runs
def _molecule_csv(path: Path, labels: list[str]) -> Path:
    smiles = ["C", "CC", "CCC", "CCCC", "CCO", "CCN", "c1ccccc1", "C1CCCCC1", "c1ccncc1",
              "C1CCNCC1", "c1ccoc1", "C1CCOC1", "c1ccsc1", "C1CC1", "C1CCC1", "c1cnccn1"]
    rows = ["smiles,y"] + [f"{s},{y}" for s, y in zip(smiles, labels)]
    path.write_text("\n".join(rows) + "\n")
    return path


CSV_SETS = ["data.target_columns=[y]", "data.task=regression", "model.pe=null",
            "encodings.lap_pe=null", "data.batch_size=4", "trainer.max_epochs=2"]


def test_blank_regression_labels_are_masked(tmp_path, capsys):
    """Blank labels in a user CSV are missing: loss and metrics skip them, the run reports
    finite numbers; provenance is one INFO line, never a WARNING per key."""
    labels = [str(float(i % 5)) for i in range(16)]
    for i in (1, 5, 9, 13, 14):
        labels[i] = ""
    path = _molecule_csv(tmp_path / "m.csv", labels)
    out = tmp_path / "run"
    assert _train(out, f"data.path={path}", *CSV_SETS) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    for split in ("train", "val", "test"):
        assert all(v == v and abs(v) != float("inf") for v in metrics[split].values()), metrics
    from graph_transformers.training.curves import TEXT_COLUMNS
    for row in _rows(out / "epochs.csv"):
        assert all(float(v) == float(v) for k, v in row.items() if k not in TEXT_COLUMNS), row
    err = capsys.readouterr().err.splitlines()
    assert not [line for line in err if "WARNING graph_transformers.training" in line], err
    (line,) = [line for line in err if "INFO graph_transformers.training.splits: molecule_csv "
               "data:" in line]
    assert "num_molecules=16" in line


def test_regression_loss_and_metrics_mask_nan_targets():
    from graph_transformers.data.registry import DatasetSpec
    from graph_transformers.training.tasks import Task
    from torch_geometric.data import Batch, Data
    task = Task(DatasetSpec(name="t", level="graph", task="regression", out_dim=1, metric="rmse",
                            load=None))
    batch = Batch.from_data_list([Data(x=torch.zeros(1, 1), edge_index=torch.zeros(2, 0).long(),
                                       y=torch.tensor([[v]])) for v in (1.0, float("nan"), 3.0)])
    out = torch.tensor([[2.0], [100.0], [3.0]], requires_grad=True)
    loss = task.loss(out, batch)
    assert float(loss) == pytest.approx(0.5)  # |2-1| and |3-3| only
    loss.backward()
    assert out.grad[1, 0] == 0
    pred, y = task.metric_inputs(out, batch)
    assert y.tolist() == [1.0, 3.0] and pred.tolist() == [2.0, 3.0]
    all_missing = Batch.from_data_list([Data(x=torch.zeros(1, 1), y=torch.tensor([[float("nan")]]),
                                             edge_index=torch.zeros(2, 0).long())])
    assert float(task.loss(out[:1], all_missing)) == 0.0


@pytest.mark.parametrize("label", ["inf", "-inf", "nan", "1e999"])
def test_non_finite_csv_label_is_a_data_error_naming_the_row(tmp_path, label, capsys):
    labels = [str(float(i)) for i in range(16)]
    labels[6] = label
    path = _molecule_csv(tmp_path / "m.csv", labels)
    assert _train(tmp_path / "run", f"data.path={path}", *CSV_SETS) == 2
    err = capsys.readouterr().err
    assert "line 8" in err and "'y'" in err and "not a finite number" in err, err
    assert len(err.strip().splitlines()) == 1


def test_non_finite_training_loss_stops_the_run(tmp_path, monkeypatch, capsys):
    from graph_transformers.training import tasks
    real = tasks.Task.loss
    steps = []

    def counting(self, out, batch):  # training steps run with gradients, validation without
        loss = real(self, out, batch)
        if torch.is_grad_enabled():
            steps.append(1)
            if len(steps) > 3:  # epoch 1 has 3 batches
                return loss * float("nan")
        return loss
    monkeypatch.setattr(tasks.Task, "loss", counting)
    out = tmp_path / "run"
    assert _train(out, "trainer.max_epochs=3") == 1
    err = capsys.readouterr().err
    assert "training loss is nan at epoch 2, batch 1" in err, err
    assert not (out / "metrics.json").exists()
    # the last checkpoint is the last good epoch
    assert torch.load(out / "checkpoints/last.ckpt", weights_only=True)["epoch"] == 0


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "0", "-1e-3"])
def test_non_finite_or_non_positive_lr_is_rejected(value):
    from graph_transformers.training.config import ConfigError, build_config, load_yaml
    with pytest.raises(ConfigError, match="optim.lr"):
        build_config(load_yaml(CONFIG), [f"optim.lr={value}"])


def test_duplicate_yaml_keys_are_an_error(tmp_path):
    from graph_transformers.training.config import ConfigError, load_yaml
    path = tmp_path / "c.yaml"
    path.write_text("optim:\n  lr: 1.0e-3\n  lr: 1.0\n")
    with pytest.raises(ConfigError, match=r"c.yaml: line 3, column 3: .*'lr' is given twice"):
        load_yaml(path)


# ------------------------------------------------------------- 3 + 7. SIGTERM, exact resume
KILL_AT = textwrap.dedent("""
    import os, signal, sys
    from graph_transformers.training.module import GraphTaskModule
    epoch, batch = (int(v) for v in os.environ["KILL_AT"].split(","))
    step = GraphTaskModule.training_step
    def killing_step(self, b, i):
        if self.current_epoch + 1 == epoch and i + 1 == batch:
            os.kill(os.getpid(), signal.SIGTERM)  # as a scheduler's preemption would
        return step(self, b, i)
    GraphTaskModule.training_step = killing_step
    from graph_transformers.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _cli(args: list[str], kill_at: str | None = None) -> subprocess.CompletedProcess:
    env = _env()
    if kill_at:
        env["KILL_AT"] = kill_at
    code = KILL_AT if kill_at else "import sys; from graph_transformers.cli import main; " \
                                   "sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("bucketing", [False, True], ids=["shuffle", "bucket_by_size"])
def test_sigterm_exits_143_and_resume_equals_uninterrupted(tmp_path, bucketing):
    """SIGTERM in the middle of epoch 3 (batch 2 of 3): exit 143 with a line saying how to
    resume; last.ckpt is epoch 2; the resumed run's epochs 3-4 and final metrics equal those of
    an uninterrupted run with the same seed, bit for bit (RNG and sampler states restored)."""
    sets = [*FAST, "trainer.max_epochs=4", "model.dropout=0.1",
            f"data.bucket_by_size={str(bucketing).lower()}", "data.bucket_window=1"]
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    base = ["train", "--config", str(CONFIG), "--set", *sets]
    assert _cli([*base, "--out", str(whole)]).returncode == 0
    killed = _cli([*base, "--out", str(cut)], kill_at="3,2")
    assert killed.returncode == 143, killed.stderr
    assert f"--resume --out {cut}" in killed.stderr and "SIGTERM" in killed.stderr
    assert torch.load(cut / "checkpoints/last.ckpt", weights_only=True)["epoch"] == 1
    assert not (cut / "metrics.json").exists()
    resumed = _cli([*base, "--out", str(cut), "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    drop = ("epoch_time_s", "elapsed_s")
    a = [{k: v for k, v in r.items() if k not in drop} for r in _rows(whole / "epochs.csv")]
    b = [{k: v for k, v in r.items() if k not in drop} for r in _rows(cut / "epochs.csv")]
    assert a == b
    ma, mb = (json.loads((d / "metrics.json").read_text()) for d in (whole, cut))
    assert (ma["train"], ma["val"], ma["test"]) == (mb["train"], mb["val"], mb["test"])


@pytest.mark.slow
def test_sigterm_in_a_set_of_runs_says_to_rerun_the_sets_command(tmp_path):
    """SIGTERM during the first of two seeds: exit 143 naming that seed's directory and telling
    to rerun the same command with --resume (the single run's advice, ``--out <seed dir>``, would
    nest a new set inside it); the rerun finishes both seeds."""
    out = tmp_path / "set"
    base = ["train", "--config", str(CONFIG), "--seeds", "2", "--out", str(out), "--set",
            *FAST, "trainer.max_epochs=4"]
    killed = _cli(base, kill_at="3,2")
    assert killed.returncode == 143, killed.stderr
    assert f"{out / 'seed_0'}: terminated by SIGTERM during epoch 3" in killed.stderr
    assert "the same command with --resume" in killed.stderr and "--out" not in killed.stderr
    resumed = _cli([*base, "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    for seed in (0, 1):
        assert json.loads((out / f"seed_{seed}" / "metrics.json").read_text())["epochs"] == 4


def test_rng_state_round_trips_through_a_weights_only_checkpoint(tmp_path):
    import random

    import numpy as np

    from graph_transformers.training.callbacks import RunState
    torch.manual_seed(1), np.random.seed(2), random.seed(3)
    state = RunState({}).state_dict()
    torch.save(state, tmp_path / "s.pt")
    expected = (torch.rand(3), np.random.rand(3), random.random())
    RunState({}).load_state_dict(torch.load(tmp_path / "s.pt", weights_only=True))
    again = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(expected[0], again[0]) and np.array_equal(expected[1], again[1])
    assert expected[2] == again[2]


# ----------------------------------------------------------------------------- 4. run lock
@pytest.mark.slow
def test_second_run_on_a_locked_directory_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from graph_transformers.training.rundir import run_lock\n"
         "with run_lock(sys.argv[1]):\n    print('locked', flush=True)\n    time.sleep(60)\n",
         str(out)], env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert _train(out, "trainer.max_epochs=1") == 2
        err = capsys.readouterr().err
        assert f"is in use by another run (pid {holder.pid}" in err, err
        assert not (out / "config.yaml").exists() and not (out / "epochs.csv").exists()
    finally:
        holder.kill()
        holder.wait()
    # a killed holder leaves no stale lock
    assert _train(out, "trainer.max_epochs=1") == 0


def test_temporary_files_have_unique_names(tmp_path):
    """A fixed temporary name (``.epochs.csv.tmp``) is shared by concurrent writers; occupy
    the old names with directories: writes still succeed."""
    from graph_transformers.training.callbacks import EpochLog
    from graph_transformers.training.checkpoint import save_checkpoint
    (tmp_path / ".epochs.csv.tmp").mkdir()
    (tmp_path / ".last.ckpt.tmp").mkdir()
    EpochLog(tmp_path / "epochs.csv")._append({"epoch": 1, "lr": 0.1})
    save_checkpoint({"epoch": 0}, tmp_path / "last.ckpt")
    assert _rows(tmp_path / "epochs.csv")[0]["epoch"] == "1"
    assert torch.load(tmp_path / "last.ckpt", weights_only=True) == {"epoch": 0}
    leftovers = {p.name for p in tmp_path.iterdir()} - {".epochs.csv.tmp", ".last.ckpt.tmp",
                                                         "epochs.csv", "last.ckpt"}
    assert not leftovers


# ----------------------------------------------------------------------------- 5. failed resume
@pytest.fixture
def finished_run(tmp_path) -> Path:
    out = tmp_path / "run"
    assert _train(out, "trainer.max_epochs=2") == 0
    return out


def _snapshot(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and "lightning_logs" not in p.parts}


def test_incompatible_resume_changes_nothing(finished_run, capsys):
    before = _snapshot(finished_run)
    assert _train(finished_run, "trainer.max_epochs=3", "model.hidden_dim=32",
                  "optim.lr=0.5", resume=True) == 2
    err = capsys.readouterr().err
    assert "model.hidden_dim: 16 -> 32" in err and "optim.lr: 0.001 -> 0.5" in err, err
    assert "trainer.max_epochs" not in err.split("only trainer")[0]
    assert _snapshot(finished_run) == before
    assert main(["evaluate", str(finished_run)]) == 0
    # what may change on resume does
    assert _train(finished_run, "trainer.max_epochs=3", resume=True) == 0
    assert json.loads((finished_run / "metrics.json").read_text())["epochs"] == 3


# ----------------------------------------------------------------------------- 6. moved run dir
def test_moved_run_keeps_best_checkpoint_tracking(finished_run, tmp_path):
    """After moving a run directory, the resumed epoch may only replace best.ckpt if it beats
    the recorded best score (made unbeatable here: accuracy 2.0)."""
    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(finished_run, moved)
    shutil.rmtree(finished_run)
    last = moved / "checkpoints/last.ckpt"
    state = torch.load(last, weights_only=True)
    (key,) = [k for k in state["callbacks"] if "val/accuracy" in k]
    assert key.startswith("ModelCheckpoint{")  # Lightning's key: older checkpoints still restore
    state["callbacks"][key]["best_model_score"] = torch.tensor(2.0)
    torch.save(state, last)
    best_before = (moved / "checkpoints/best.ckpt").read_bytes()
    assert _train(moved, "trainer.max_epochs=3", resume=True) == 0
    assert (moved / "checkpoints/best.ckpt").read_bytes() == best_before
    assert json.loads((moved / "metrics.json").read_text())["epochs"] == 3


# ----------------------------------------------------------------------------- 8. bad model inputs
def _graph(n: int):
    from torch_geometric.data import Data
    src = list(range(max(n - 1, 0)))
    ei = torch.tensor([src + [i + 1 for i in src], [i + 1 for i in src] + src],
                      dtype=torch.long).view(2, -1)
    return Data(x=torch.randn(n, 3), edge_index=ei, lap_pe=torch.randn(n, 4))


@pytest.mark.parametrize("name", ["gt", "egt"])
def test_empty_graphs_and_inf_inputs_are_clear_errors(name):
    from torch_geometric.data import Batch

    from graph_transformers.models import build_model
    kw = dict(hidden_dim=16, num_layers=1, num_heads=2, out_dim=1, num_node_features=3)
    kw.update(pe="lap", pe_dim=4) if name == "gt" else kw.update(pe=None, edge_hidden_dim=8,
                                                                     use_edge_features=False)
    model = build_model(name, **kw).eval()
    with pytest.raises(ValueError, match=r"graph\(s\) \[1\] of the batch have no nodes"):
        model(Batch.from_data_list([_graph(4), _graph(0), _graph(3)]))
    with pytest.raises(ValueError, match="the input has no nodes"):
        model(Batch.from_data_list([_graph(0)]))
    bad = _graph(3)
    bad.x[1, 2] = float("inf")
    with pytest.raises(ValueError, match="node features x contain NaN or inf"):
        model(Batch.from_data_list([bad]))
    if name == "gt":
        bad = _graph(3)
        bad.lap_pe[0, 0] = float("-inf")
        with pytest.raises(ValueError, match="lap_pe contains NaN or inf"):
            model(Batch.from_data_list([bad]))
    # issue 26, silent result 9: finite but huge features gave NaN outputs with no error
    huge = _graph(3)
    huge.x = huge.x * 1e30
    with pytest.raises(ValueError, match=r"node features x reach .* standardize them"):
        model(Batch.from_data_list([huge]))
    fine = _graph(3)
    fine.x = fine.x * 1e6  # large but harmless: no error, finite outputs
    out = model(Batch.from_data_list([fine]))
    assert torch.isfinite(out[0] if isinstance(out, tuple) else out).all()


# ------------------------------------------------------------- tracebacks → errors
def test_resume_falls_back_from_a_truncated_last_checkpoint(finished_run, caplog):
    last = finished_run / "checkpoints/last.ckpt"
    last.write_bytes(last.read_bytes()[:1000])
    with caplog.at_level(logging.WARNING, logger="graph_transformers"):
        assert _train(finished_run, "trainer.max_epochs=3", resume=True) == 0
    assert any("truncated or corrupt" in r.getMessage() and "best.ckpt" in r.getMessage()
               for r in caplog.records)
    assert torch.load(last, weights_only=True)["epoch"] == 2


def test_full_disk_while_saving_a_checkpoint(tmp_path, monkeypatch, capsys):
    from graph_transformers.errors import CheckpointWriteError
    from graph_transformers.training import checkpoint
    path = tmp_path / "last.ckpt"
    checkpoint.save_checkpoint({"epoch": 1}, path)
    old = path.read_bytes()
    real_save = torch.save

    def full(obj, f):
        f.write(b"x" * 100)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(checkpoint.torch, "save", full)
    with pytest.raises(CheckpointWriteError, match=r"cannot write checkpoint .*last.ckpt: the "
                                                   r"disk is full; the previous checkpoint"):
        checkpoint.save_checkpoint({"epoch": 2}, path)
    assert path.read_bytes() == old and [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]

    # during a run: the disk fills up at the end of epoch 2 -> exit 1, epoch 1 kept
    def full_from_epoch_2(obj, f):
        if isinstance(obj, dict) and obj.get("epoch", 0) >= 1:  # a checkpoint, not a cache
            full(obj, f)
        real_save(obj, f)
    monkeypatch.setattr(checkpoint.torch, "save", full_from_epoch_2)
    out = tmp_path / "run"
    assert _train(out, "trainer.max_epochs=3") == 1
    err = capsys.readouterr().err
    assert "the disk is full; the previous checkpoint there is untouched" in err, err
    assert torch.load(out / "checkpoints/last.ckpt", weights_only=True)["epoch"] == 0
    assert not [p for p in (out / "checkpoints").iterdir() if p.suffix == ".tmp"]


def test_permission_error_on_the_cache_dir_is_one_line(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("GRAPH_TRANSFORMERS_CACHE", str(cache))
    real = os.makedirs

    def refuse(path, *a, **kw):
        if str(path).startswith(str(cache)):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *a, **kw)
    monkeypatch.setattr(os, "makedirs", refuse)
    # data.source=generated: the CSL generator chosen explicitly, so no fallback warning precedes
    assert _train(tmp_path / "run", "trainer.max_epochs=1", "data.source=generated") == 2
    err = capsys.readouterr().err
    assert err.startswith("graph-transformers: error: Permission denied: " + str(cache)), err
    assert len(err.strip().splitlines()) == 1


def test_shortest_paths_refuse_a_huge_graph_before_allocating():
    from torch_geometric.data import Data

    from graph_transformers.core.dense import DenseBudgetError
    from graph_transformers.encodings.spd import AddShortestPaths
    huge = Data(edge_index=torch.tensor([[0], [1]]), num_nodes=200_000)
    with pytest.raises(DenseBudgetError, match="200,000 nodes: all-pairs shortest paths"):
        AddShortestPaths()(huge)
    assert AddShortestPaths(budget_bytes=None)(Data(edge_index=torch.tensor([[0], [1]]),
                                                    num_nodes=3)).spd.numel() == 9
