"""Names are names, not paths (issue 54, item 1): a config's ``name``, run and fold folders and
dataset names in cache paths are checked by one helper (``fileio.check_name`` /
``fileio.path_inside``), and a run only writes into a new, empty or its own folder.

Each CLI case here wrote outside ``--out`` (or over a user's own files) before the fix."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from graph_transformers.cli import main
from graph_transformers.errors import UnsafeNameError
from graph_transformers.fileio import check_name, path_inside

CONFIG = Path(__file__).resolve().parents[2] / "src/graph_transformers/configs/csl_gt.yaml"
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=1", "model.hidden_dim=8",
        "model.num_heads=2", "data.batch_size=30", "trainer.max_epochs=1"]


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, lock files left out."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".lock")}


@pytest.mark.parametrize("name", ["..", ".", "a/b", "../../x", "/etc/x", "a\\b", "x\x00y",
                                  "x\ny", "", "  ", " x", "x "])
def test_check_name_refuses_what_is_not_a_plain_name(name):
    with pytest.raises(UnsafeNameError) as err:
        check_name(name, "config name")
    assert "config name" in str(err.value) and "\n" not in str(err.value).replace(repr(name), "")


@pytest.mark.parametrize("name", ["zinc-gt", "tu:PROTEINS", "gt_v2.1", "..x", "a..b", "seed_0"])
def test_check_name_keeps_plain_names(name):
    assert check_name(name, "config name") == name


def test_path_inside_refuses_a_symlink_that_leaves_the_root(tmp_path):
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir(), elsewhere.mkdir()
    (root / "link").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafeNameError, match="outside"):
        path_inside(root, "link", what="run name")
    assert path_inside(root, "run", what="run name") == root / "run"
    with pytest.raises(UnsafeNameError):
        path_inside(root, "..", what="run name")


def _config(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"cfg_{abs(hash(name))}.yaml"
    text = CONFIG.read_text()
    lines = [ln for ln in text.splitlines() if not ln.startswith("name:")]
    path.write_text(f"name: {json.dumps(name)}\n" + "\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", ["..", "../../x", "/absolute/run"])
def test_benchmark_refuses_a_config_name_that_leaves_out(tmp_path, name, capsys):
    """The data loss of issue 54: ``name: ".."`` wrote a run into the parent of ``--out`` and
    overwrote the user's ``config.yaml`` and ``epochs.csv`` there."""
    parent = tmp_path / "mine"
    parent.mkdir()
    (parent / "config.yaml").write_text("my: own config\n")
    (parent / "epochs.csv").write_text("my,own,log\n")
    config = _config(tmp_path, name)
    before = _tree(tmp_path)
    code = main(["benchmark", "--config", str(config), "--seeds", "1",
                 "--out", str(parent / "out"), "--set", *FAST])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "config name" in err[0]
    assert _tree(tmp_path) == before  # nothing written, nothing overwritten


def test_train_without_out_refuses_a_name_that_leaves_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["train", "--config", str(CONFIG), "--set", "name=../outside", *FAST])
    assert code == 2 and "config name" in capsys.readouterr().err
    assert not (tmp_path / "outside").exists()


def test_a_run_refuses_a_folder_holding_files_no_run_wrote(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.yaml").write_text("my: own config\n")
    (mine / "notes.txt").write_text("mine\n")
    before = _tree(mine)
    assert main(["train", "--config", str(CONFIG), "--out", str(mine), "--set", *FAST]) == 2
    err = capsys.readouterr().err
    assert "holds files that no run wrote (config.yaml, notes.txt)" in err
    assert _tree(mine) == before
    # a set of runs' folder too: seed folders and summary.json only
    assert main(["train", "--config", str(CONFIG), "--out", str(mine), "--seeds", "2",
                 "--set", *FAST]) == 2
    assert _tree(mine) == before and not (mine / "seed_0").exists()


def test_a_run_may_reuse_its_own_unfinished_folder(tmp_path):
    """A folder with the run's own marker (``run.json``) but no checkpoint (the run stopped
    before training began) is the run's own: a new run may start there."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"run_id": "x"}) + "\n")
    (out / "config.yaml").write_text("name: old\n")
    assert main(["train", "--config", str(CONFIG), "--out", str(out), "--set", *FAST]) == 0
    assert (out / "metrics.json").is_file()


def test_tu_dataset_name_is_a_name(tmp_path, capsys):
    code = main(["train", "--config", str(CONFIG), "--out", str(tmp_path / "run"),
                 "--set", "data.name=tu:../../escape", *FAST])
    assert code == 2 and "TU dataset name" in capsys.readouterr().err
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_checkpoint_name_is_a_name(tmp_path):
    """The CLI offers ``best`` / ``last`` only; the Python API took any string as a path."""
    from graph_transformers.training.trained import load_trained_model
    out = tmp_path / "run"
    assert main(["train", "--config", str(CONFIG), "--out", str(out), "--set", *FAST]) == 0
    (tmp_path / "x.ckpt").write_bytes((out / "checkpoints" / "best.ckpt").read_bytes())
    with pytest.raises(UnsafeNameError, match="checkpoint name"):
        load_trained_model(out, checkpoint="../../x")


def test_a_first_slice_refuses_a_state_folder_holding_files_no_run_wrote(tmp_path, capsys):
    state = tmp_path / "state"
    state.mkdir()
    (state / "config.yaml").write_text("my: own config\n")
    before = _tree(state)
    assert main(["slice", "--config", str(CONFIG), "--state", str(state), "--minutes", "1",
                 "--set", *FAST]) == 2
    err = capsys.readouterr().err
    assert "holds files that no run wrote (config.yaml)" in err and "--state" in err
    assert _tree(state) == before


def test_a_slice_refuses_an_unfinished_state_without_its_last_checkpoint(tmp_path, capsys):
    """A state whose ``metrics.json`` says the run is unfinished but whose ``last.ckpt`` is
    gone is not started again over its epochs."""
    state = tmp_path / "state"
    assert main(["slice", "--config", str(CONFIG), "--state", str(state), "--minutes", "0.0001",
                 "--set", *FAST, "trainer.max_epochs=50"]) == 0
    assert json.loads((state / "metrics.json").read_text())["stopped_by"] == "slice"
    (state / "last.ckpt").unlink()
    (state / "best.ckpt").unlink()
    before = _tree(state)
    capsys.readouterr()
    assert main(["slice", "--state", str(state), "--minutes", "1"]) == 2
    assert "holds an unfinished run (metrics.json) but no last.ckpt" in capsys.readouterr().err
    assert _tree(state) == before
