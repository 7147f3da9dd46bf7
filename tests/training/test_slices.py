"""Runs trained in wall-clock slices (``graph-transformers slice``, issue 24): a run sliced one
epoch at a time across scratch directories gives the epochs of an uninterrupted run, its state
folder holds what the next machine needs, and the checkpoints leave once the schedule ends."""
from __future__ import annotations

import csv
import json
import platform
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

from graph_transformers.cli import main
from graph_transformers.training.callbacks import SliceDeadline

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=2", "model.hidden_dim=16",
        "model.num_heads=2", "data.batch_size=30", "trainer.max_epochs=3", "model.dropout=0.1"]
#: a slice far shorter than an epoch: each slice trains exactly one epoch
ONE_EPOCH = "0.0001"


def _rows(path: Path) -> list[dict]:
    with open(path) as f:
        return [{k: v for k, v in r.items() if k not in ("epoch_time_s", "elapsed_s")}
                for r in csv.DictReader(f)]


def _slice(state: Path, *extra: str) -> int:
    return main(["slice", "--state", str(state), "--minutes", ONE_EPOCH, *extra])


def test_slices_equal_an_uninterrupted_run(tmp_path, capsys):
    whole = tmp_path / "whole"
    assert main(["train", "--config", str(CONFIG), "--out", str(whole), "--set", *FAST]) == 0
    state = tmp_path / "state"
    # the first slice needs the config; each slice trains one epoch in its own scratch directory
    assert _slice(state, "--config", str(CONFIG), "--set", *FAST) == 0
    assert "1 of at most 3 epochs, stopped by slice" in capsys.readouterr().out
    assert {p.name for p in state.iterdir()} >= {"config.yaml", "epochs.csv", "metrics.json",
                                                 "last.ckpt", "best.ckpt"}
    first = json.loads((state / "metrics.json").read_text())
    assert first["stopped_by"] == "slice" and first["epochs"] == 1
    assert torch.load(state / "last.ckpt", weights_only=True)["epoch"] == 0
    # the best weights travel without the optimizer state (a third of the size)
    best = torch.load(state / "best.ckpt", weights_only=True)
    assert "optimizer_states" not in best and "state_dict" in best
    assert (state / "best.ckpt").stat().st_size < 0.6 * (state / "last.ckpt").stat().st_size
    # the state alone is enough to continue, from another scratch directory (a moved run)
    carried = tmp_path / "carried"
    shutil.copytree(state, carried)
    assert _slice(carried, "--work", str(tmp_path / "elsewhere")) == 0
    assert json.loads((carried / "metrics.json").read_text())["epochs"] == 2
    assert _slice(carried) == 0
    final = json.loads((carried / "metrics.json").read_text())
    assert final["stopped_by"] == "max_epochs" and final["epochs"] == 3
    # finished: the checkpoints leave the state folder; another slice has nothing to do
    assert not (carried / "last.ckpt").exists() and not (carried / "best.ckpt").exists()
    capsys.readouterr()
    assert _slice(carried) == 0 and "already finished" in capsys.readouterr().out
    # the sliced epochs and metrics are those of the uninterrupted run, bit for bit
    assert _rows(carried / "epochs.csv") == _rows(whole / "epochs.csv")
    ref = json.loads((whole / "metrics.json").read_text())
    for key in ("train", "val", "test", "best_epoch", "last"):
        assert final[key] == ref[key], key


def test_slice_refuses_what_resume_refuses(tmp_path, capsys):
    state = tmp_path / "state"
    assert main(["slice", "--state", str(state)]) == 2  # no config for a first slice
    assert "--config for the first slice" in capsys.readouterr().err
    assert _slice(state, "--config", str(CONFIG), "--set", *FAST) == 0
    before = {p.name: p.read_bytes() for p in state.iterdir()}
    assert _slice(state, "--set", "optim.lr=0.5") == 2  # not a trainer.* key
    assert "only trainer.*" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in state.iterdir()} == before
    busy = tmp_path / "busy"
    (busy / "checkpoints").mkdir(parents=True)
    assert _slice(state, "--work", str(busy)) == 2
    assert "already holds a run" in capsys.readouterr().err


@pytest.mark.slow
def test_sliced_seeds_and_folds_resume_instead_of_counting_as_finished(tmp_path, capsys):
    """Regression: a set of runs (``benchmark --seeds 2``, ``--folds``) under
    ``trainer.slice_minutes`` used to read a seed stopped by its slice back as finished on
    ``--resume`` and summarize it; now the slice's end exits 3 without a table, and ``--resume``
    continues that seed and the rest until every run has ended its schedule. ``compare`` flags
    such runs."""
    out = tmp_path / "bench"
    sliced = ["benchmark", "--config", str(CONFIG), "--seeds", "2", "--out", str(out), "--set",
              *FAST, f"trainer.slice_minutes={ONE_EPOCH}", "--resume"]
    assert main(sliced) == 3
    assert "stopped by slice after epoch 1 of 3" in capsys.readouterr().err
    run = next(out.iterdir())  # the config's name
    assert not (out / "table.json").exists() and not (run / "seed_1").exists()
    # `compare` reads the unfinished seed but says so, in the table and the plot's legend
    assert main(["compare", str(run), "--out", str(tmp_path / "cmp.png")]) == 0
    assert "| 1.0 (1 unfinished) |" in capsys.readouterr().out
    assert json.loads((tmp_path / "cmp.json").read_text())[0]["unfinished"] == 1
    for _ in range(5):  # 2 seeds x 3 epochs, one epoch per call
        if main(sliced) == 0:
            break
    seeds = [json.loads((run / f"seed_{s}" / "metrics.json").read_text())
             for s in (0, 1)]
    assert [(m["epochs"], m["stopped_by"]) for m in seeds] == [(3, "max_epochs")] * 2
    assert json.loads((out / "table.json").read_text())[0]["seeds"] == [0, 1]
    assert main(["compare", str(run), "--out", str(tmp_path / "cmp.png")]) == 0
    assert json.loads((tmp_path / "cmp.json").read_text())[0]["unfinished"] == 0
    # one seed per fold takes the same path: the second fold starts only after the first ends
    folds = ["train", "--config", str(CONFIG), "--folds", "2", "--out", str(tmp_path / "cv"),
             "--set", *FAST, f"trainer.slice_minutes={ONE_EPOCH}", "--resume"]
    codes = [main(folds) for _ in range(6)]
    # the slice is per training: the call that ends fold 0 also trains fold 1's first epoch
    assert codes == [3, 3, 3, 3, 0, 0]
    for k in (0, 1):
        m = json.loads((tmp_path / "cv" / f"fold_{k}" / "metrics.json").read_text())
        assert (m["epochs"], m["stopped_by"]) == (3, "max_epochs")


def test_slices_on_two_machines_record_each_epochs_device(tmp_path, monkeypatch):
    """A run continued on another machine: ``epochs.csv`` names each epoch's device, its
    ``metrics.json`` counts the epochs per device, the curves reader skips the text column and a
    benchmark table marks the mixed epoch times (regression: every CPU was ``CPU (x86_64, 2
    threads)``, so times from a machine twice as fast mixed in silently)."""
    import graph_transformers.training.device as device
    from graph_transformers.training.curves import read_epochs
    from graph_transformers.training.sets import summarize
    from graph_transformers.training.tables import markdown_table, table_row

    state = tmp_path / "state"
    two = [*FAST[:-2], "trainer.max_epochs=2"]
    monkeypatch.setattr(device, "cpu_name", lambda: "Machine A")
    assert _slice(state, "--config", str(CONFIG), "--set", *two) == 0
    monkeypatch.setattr(device, "cpu_name", lambda: "Machine B")
    assert _slice(state) == 0
    threads = torch.get_num_threads()
    a, b = (f"CPU (Machine {m}, {platform.machine()}, {threads} threads)" for m in "AB")
    with open(state / "epochs.csv") as f:
        assert [r["device"] for r in csv.DictReader(f)] == [a, b]
    metrics = json.loads((state / "metrics.json").read_text())
    assert metrics["epochs"] == 2 and metrics["devices"] == {a: 1, b: 1}
    assert metrics["device"] == b  # the machine that finished it
    assert all("device" not in row and row["epoch"] > 0
               for row in read_epochs(state / "epochs.csv"))
    summary = summarize([metrics, {**metrics, "seed": 1, "devices": {b: 2}}])
    assert summary["devices"] == {a: 1, b: 3}
    table = markdown_table([table_row("csl-gt", summary),
                            table_row("same-machine", {**summary, "devices": {b: 2}})])
    assert table.count("‡") == 2  # the mixed row's times and its note; the other row unmarked
    assert f"‡ csl-gt: epochs per device: {a}: 1; {b}: 3" in table
    # a log written before the column existed has no device record
    from graph_transformers.training.callbacks import epoch_devices
    legacy = tmp_path / "legacy.csv"
    legacy.write_text("epoch,lr,epoch_time_s,elapsed_s\n1,0.001,1.0,1.0\n")
    assert epoch_devices(legacy) == {} and epoch_devices(tmp_path / "missing.csv") == {}


def test_device_name_names_the_cpu():
    from graph_transformers.training.device import cpu_name, device_name
    name = cpu_name()
    assert name and name.strip() == name
    assert device_name("cpu") == (f"CPU ({name}, {platform.machine()}, "
                                  f"{torch.get_num_threads()} threads)")
    if not torch.cuda.is_available():
        assert device_name() == device_name("cpu")
    assert device_name(torch.device("meta")) == "META"


def test_slice_deadline_counts_the_longest_epoch():
    class Trainer:
        should_stop = False
        current_epoch = 0

    deadline = SliceDeadline(1.0)  # 60 s
    trainer = Trainer()
    deadline._fit_start, deadline._epoch_start = 0.0, 0.0
    import graph_transformers.training.callbacks as cb
    clock = iter([20.0, 50.0])  # epoch 1 ends at 20 s: 20 + 20 < 60, go on
    real = cb.time.perf_counter
    cb.time.perf_counter = lambda: next(clock)
    try:
        deadline.on_train_epoch_end(trainer, None)
        assert not trainer.should_stop
        deadline._epoch_start = 40.0  # epoch 2 took 10 s, but the longest (20 s) counts
        deadline.on_train_epoch_end(trainer, None)  # 50 + 20 > 60: stop
        assert trainer.should_stop and deadline.stopped
    finally:
        cb.time.perf_counter = real
    with pytest.raises(ValueError, match="more than 0 minutes"):
        SliceDeadline(0)


def test_gpu_reproduce_packs_and_unpacks_a_slice(tmp_path):
    """benchmarks/gpu_reproduce.py on the CPU smoke run: one slice, its state packed into one
    tar (the device tool returns few files), unpacked in place elsewhere byte for byte."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_reproduce",
                                                  REPO / "benchmarks/gpu_reproduce.py")
    gr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gr)
    assert gr.PRIORITY == ("pattern-gt", "zinc-egt-spe-do", "cluster-gt", "zinc-grit")
    assert all((REPO / cfg).is_file() for cfg in gr.RUNS.values())
    root, out = tmp_path / "states", tmp_path / "out"
    assert gr.main(["--runs", "csl-smoke", "--minutes", ONE_EPOCH, "--state-root", str(root),
                    "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["csl-smoke.tar", "gpu_reproduce.json"]
    record = json.loads((out / "gpu_reproduce.json").read_text())[0]
    assert record["epochs"] == 1 and record["stopped_by"] == "slice"
    here = tmp_path / "here"
    (here / "csl-smoke").mkdir(parents=True)
    (here / "csl-smoke" / "last.ckpt").write_text("stale")
    assert gr.main(["--unpack", str(out), "--state-root", str(here)]) == 0
    # the state folder's lock file (held by each slice) is not part of the state
    assert (root / "csl-smoke" / ".lock").exists()
    with tarfile.open(out / "csl-smoke.tar") as tar:
        assert not [m.name for m in tar.getmembers() if ".lock" in m.name]
    for f in (root / "csl-smoke").iterdir():
        if f.name not in (".lock", ".lock.holder.json"):
            assert (here / "csl-smoke" / f.name).read_bytes() == f.read_bytes(), f.name
    assert not gr.finished(here / "csl-smoke")


# ----------------------------------------------------------------------------- issue 54
@pytest.fixture(scope="module")
def one_slice(tmp_path_factory) -> Path:
    """A state folder after one one-epoch slice of a 3-epoch run (copied by the tests)."""
    state = tmp_path_factory.mktemp("sliced") / "state"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPH_TRANSFORMERS_CACHE", str(tmp_path_factory.mktemp("cache")))
        assert _slice(state, "--config", str(CONFIG), "--set", *FAST) == 0
    return state


def _state(state: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(state.iterdir())
            if p.name not in (".lock", ".lock.holder.json")}


@pytest.mark.slow
def test_a_second_slice_of_a_state_in_use_is_refused(tmp_path, one_slice, capsys):
    """Two slices of one state both ran, and the last writer's files were kept; now the state
    folder is locked for the whole slice, as a run directory is (one mechanism, ``run_lock``)."""
    from test_reliability import _env
    state = tmp_path / "state"
    shutil.copytree(one_slice, state)
    before = _state(state)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from graph_transformers.training.rundir import run_lock\n"
         "with run_lock(sys.argv[1]):\n    print('locked', flush=True)\n    time.sleep(60)\n",
         str(state)], env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        capsys.readouterr()
        assert _slice(state) == 2
        errors = [x for x in capsys.readouterr().err.splitlines()
                  if x.startswith("graph-transformers: error:")]
        assert len(errors) == 1, errors
        assert f"{state} is in use by another run (pid {holder.pid} on " in errors[0], errors
        assert errors[0].endswith("wait for it to finish or choose another --state"), errors
        assert _state(state) == before
    finally:
        holder.kill()
        holder.wait()
    # the holder gone, the slice runs; no lock file travels into the scratch directory
    work = tmp_path / "work"
    assert _slice(state, "--work", str(work)) == 0
    assert json.loads((state / "metrics.json").read_text())["epochs"] == 2
    assert not (state / ".lock.holder.json").exists() and not (work / ".lock.holder.json").exists()


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside a tensor record: its CRC-32 no longer matches
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flipped-byte", "truncated", "weights-only", "missing"])
def test_an_unreadable_last_checkpoint_of_a_state_is_one_line(tmp_path, one_slice, capsys,
                                                               damage):
    """A flipped byte in the state's ``last.ckpt`` made the slice resume from the weights-only
    ``best.ckpt`` and end in a 46-line Lightning ``KeyError``; a missing one started the run
    again beside the state's ``best.ckpt``. Now: one CheckpointError naming the file and saying
    to restore it, and the state unchanged."""
    state = tmp_path / "state"
    shutil.copytree(one_slice, state)
    last = state / "last.ckpt"
    if damage == "flipped-byte":
        _flip_a_byte(last)
    elif damage == "truncated":
        last.write_bytes(last.read_bytes()[:1000])
    elif damage == "weights-only":
        shutil.copy(state / "best.ckpt", last)
    else:
        last.unlink()
    before = _state(state)
    capsys.readouterr()
    assert _slice(state) == 2
    err = capsys.readouterr().err
    errors = [x for x in err.splitlines() if x.startswith("graph-transformers: error:")]
    assert len(errors) == 1 and "Traceback" not in err and "KeyError" not in err, err[-3000:]
    why = {"flipped-byte": f"cannot read checkpoint {last}: its content does not match its "
                           "checksums",
           "truncated": f"cannot read checkpoint {last} (1,000 bytes): truncated or corrupt",
           "weights-only": f"{last} holds model weights only (no optimizer state)",
           "missing": f"{state} holds best.ckpt but no last.ckpt"}[damage]
    assert why in errors[0], errors[0]
    assert f"restore {last} (e.g. git checkout -- {last}" in errors[0], errors[0]
    assert errors[0].endswith("and run the slice again; nothing was changed"), errors[0]
    assert _state(state) == before


@pytest.mark.slow
@pytest.mark.parametrize("when", ["epoch", "final-evaluation"])
def test_a_sigterm_in_a_slice_says_which_slice_command_continues(tmp_path, when):
    """A SIGTERMed slice advised ``--resume --out <its temporary work dir>``, a directory removed
    on exit, with a command ``slice`` does not have. Now the message gives the ``slice`` command,
    the state keeps the last complete epoch, and that command finishes the run with the epochs
    of an uninterrupted one."""
    from test_reliability import _cli, _env
    from test_reliability_errors import SIGTERM_IN_EVALUATION
    whole = tmp_path / "whole"  # at the subprocesses' one thread (_env): the same numbers
    assert main(["train", "--config", str(CONFIG), "--out", str(whole), "--set", *FAST,
                 "trainer.threads=1"]) == 0
    state = tmp_path / "state"
    first = ["slice", "--state", str(state), "--minutes", "60", "--config", str(CONFIG),
             "--set", *FAST]
    if when == "epoch":  # batch 2 of epoch 2
        killed = _cli(first, kill_at="2,2")
    else:  # after the 3 epochs, as the splits are evaluated
        killed = subprocess.run([sys.executable, "-c", SIGTERM_IN_EVALUATION, *first],
                                env=_env(), capture_output=True, text=True, timeout=300)
    assert killed.returncode == 143, killed.stderr[-3000:]
    errors = [x for x in killed.stderr.splitlines()
              if x.startswith("graph-transformers: error:")]
    assert len(errors) == 1 and "--resume" not in errors[0], killed.stderr[-3000:]
    epochs = 1 if when == "epoch" else 3
    during = "during epoch 2" if when == "epoch" else "during the final evaluation"
    assert errors[0].startswith(f"graph-transformers: error: {state}: terminated by SIGTERM "
                                f"{during}"), errors[0]
    assert (f"the state folder keeps the run up to epoch {epochs}: continue with "
            f"graph-transformers slice --state {state} --minutes 60") in errors[0], errors[0]
    assert "gt-slice-" not in errors[0]  # the scratch directory is gone: not named
    assert torch.load(state / "last.ckpt", weights_only=True)["epoch"] == epochs - 1
    assert {"config.yaml", "run.json", "epochs.csv", "best.ckpt"} <= set(_state(state))
    assert len(_rows(state / "epochs.csv")) >= epochs
    # the advised command, without --config, continues from the state and ends the schedule
    resumed = _cli(["slice", "--state", str(state), "--minutes", "60"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    final = json.loads((state / "metrics.json").read_text())
    assert (final["epochs"], final["stopped_by"]) == (3, "max_epochs")
    assert not (state / "last.ckpt").exists()
    assert _rows(state / "epochs.csv") == _rows(whole / "epochs.csv")
    ref = json.loads((whole / "metrics.json").read_text())
    for key in ("train", "val", "test", "best_epoch", "last"):
        assert final[key] == ref[key], key


WRITE_BACK_SIGTERM = """
import os, signal, sys
from graph_transformers.training import slices
real = slices._save_weights
def save_weights(src, dst):  # the SIGTERM comes between last.ckpt and best.ckpt
    os.kill(os.getpid(), signal.SIGTERM)
    return real(src, dst)
slices._save_weights = save_weights
from graph_transformers.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_sigterm_while_the_state_is_written_back_waits_for_a_complete_state(tmp_path):
    """Killed between two files, the state held a ``last.ckpt`` of one epoch beside the
    ``best.ckpt`` of another (whose best score the next slice would then trust). Now the signal
    waits until the state is complete, then ends the slice (143) with the continuing command."""
    from test_reliability import _env
    state = tmp_path / "state"
    proc = subprocess.run([sys.executable, "-c", WRITE_BACK_SIGTERM, "slice", "--state",
                           str(state), "--minutes", ONE_EPOCH, "--config", str(CONFIG), "--set",
                           *FAST], env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 143, proc.stderr[-3000:]
    errors = [x for x in proc.stderr.splitlines() if x.startswith("graph-transformers: error:")]
    assert errors == [f"graph-transformers: error: {state}: terminated by SIGTERM while the state "
                      "was written back; the state folder keeps the run up to epoch 1: continue "
                      f"with graph-transformers slice --state {state} --minutes {ONE_EPOCH}"], \
        proc.stderr[-3000:]
    for name in ("last.ckpt", "best.ckpt"):
        assert torch.load(state / name, weights_only=True)["epoch"] == 0, name
    assert json.loads((state / "metrics.json").read_text())["epochs"] == 1
    assert _slice(state) == 0  # and it continues
    assert json.loads((state / "metrics.json").read_text())["epochs"] == 2
