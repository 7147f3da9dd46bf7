"""End-to-end: the CLI trains, writes a complete run directory, resumes, evaluates, runs seeds."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch

from graph_transformers.cli import main

FAST = ["trainer.enable_progress_bar=false", "model.num_layers=2", "model.hidden_dim=16",
        "model.num_heads=2", "data.batch_size=30"]
CONFIG = Path(__file__).resolve().parents[2] / "src/graph_transformers/configs/csl_gt.yaml"


def _rows(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_train_writes_run_directory_and_resumes(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "--config", str(CONFIG), "--out", str(out),
                 "--set", "trainer.max_epochs=2", *FAST]) == 0
    for name in ("config.yaml", "epochs.csv", "metrics.json", "checkpoints/best.ckpt",
                 "checkpoints/last.ckpt"):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    for key in ("model", "dataset", "config", "num_params", "num_graphs", "epochs",
                "wall_time_s", "train", "val", "test"):
        assert key in metrics, key
    assert metrics["num_graphs"] == {"train": 90, "val": 30, "test": 30}
    assert metrics["epochs"] == 2 and 0.0 <= metrics["test"]["accuracy"] <= 1.0
    assert [r["epoch"] for r in _rows(out / "epochs.csv")] == ["1", "2"]
    # checkpoints load with weights_only=True
    torch.load(out / "checkpoints/last.ckpt", weights_only=True)

    # an existing run is never overwritten silently
    assert main(["train", "--config", str(CONFIG), "--out", str(out),
                 "--set", "trainer.max_epochs=2", *FAST]) == 2

    # --resume continues from the last checkpoint up to the new epoch budget
    assert main(["train", "--config", str(CONFIG), "--out", str(out), "--resume",
                 "--set", "trainer.max_epochs=4", *FAST]) == 0
    rows = _rows(out / "epochs.csv")
    assert [r["epoch"] for r in rows] == ["1", "2", "3", "4"]
    assert float(rows[-1]["elapsed_s"]) >= float(rows[1]["elapsed_s"])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs"] == 4

    # evaluate re-computes the best checkpoint's test metric
    from graph_transformers.training.trained import evaluate_run
    again = evaluate_run(out)
    assert again["test"]["accuracy"] == pytest.approx(metrics["test"]["accuracy"])
    assert main(["evaluate", str(out)]) == 0

    # a run stopped before it finished gets its metrics.json from the best checkpoint
    (out / "metrics.json").unlink()
    assert main(["evaluate", str(out), "--write"]) == 0
    written = json.loads((out / "metrics.json").read_text())
    assert written["epochs"] == 4
    assert written["test"]["accuracy"] == pytest.approx(metrics["test"]["accuracy"])


def test_resume_without_checkpoint_is_an_error(tmp_path, capsys):
    assert main(["train", "--config", str(CONFIG), "--out", str(tmp_path / "none"),
                 "--resume", "--set", *FAST]) == 2
    assert "no checkpoint to resume" in capsys.readouterr().err


def test_bad_override_is_reported(tmp_path, capsys):
    assert main(["train", "--config", str(CONFIG), "--out", str(tmp_path / "x"),
                 "--set", "model.depth=3"]) == 2
    assert "model.depth: unknown key" in capsys.readouterr().err


def test_seeds_report_mean_and_std(tmp_path):
    out = tmp_path / "seeds"
    assert main(["train", "--config", str(CONFIG), "--out", str(out), "--seeds", "2",
                 "--set", "trainer.max_epochs=1", *FAST]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"] == [0, 1]
    assert set(summary["test"]["accuracy"]) == {"mean", "std"}
    assert (out / "seed_0" / "metrics.json").is_file()
    assert (out / "seed_1" / "metrics.json").is_file()


def test_default_run_compares_pe_and_no_pe(tmp_path, capsys):
    assert main(["train", "--out", str(tmp_path / "demo"), "--set", "trainer.max_epochs=1",
                 *FAST]) == 0
    text = capsys.readouterr().out
    assert "GT + LapPE" in text and "GT, no PE" in text
    assert (tmp_path / "demo/gt-lappe/metrics.json").is_file()
    cfg = json.loads((tmp_path / "demo/gt-nope/metrics.json").read_text())["config"]
    assert cfg["model"]["pe"] is None


def test_loss_goes_down_on_real_zinc(data_dir):
    """A small GT on 512 real ZINC graphs: the training loss falls well below its start."""
    from torch_geometric.loader import DataLoader

    from graph_transformers.datasets.molecules.zinc import ZINCSubset
    from graph_transformers.encodings import AddLaplacianPE
    from graph_transformers.models import GraphTransformer

    torch.manual_seed(0)
    ds = ZINCSubset(split="val", data_dir=data_dir, pre_transform=AddLaplacianPE(4))[:512]
    loader = DataLoader(ds, batch_size=64, shuffle=True)
    model = GraphTransformer(32, 3, 4, 1, num_node_types=28, num_edge_types=4,
                             use_edge_features=True, pe="lap", pe_dim=4)
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    losses = []
    for _ in range(8):
        total = 0.0
        for b in loader:
            loss = (model(b).view(-1) - b.y).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * b.num_graphs
        losses.append(total / len(ds))
    assert losses[-1] < 0.75 * losses[0], losses


def test_benchmark_writes_tables(tmp_path):
    out = tmp_path / "bench"
    assert main(["benchmark", "--config", str(CONFIG), "--seeds", "2", "--out", str(out),
                 "--set", "trainer.max_epochs=1", *FAST]) == 0
    rows = json.loads((out / "table.json").read_text())
    assert len(rows) == 1 and rows[0]["seeds"] == [0, 1] and rows[0]["epochs"] == 1
    text = (out / "table.md").read_text()
    assert "test ± s.d." in text and "csl-gt-lappe" in text and " ± " in text.splitlines()[2]
    # resuming reuses the finished seeds
    assert main(["benchmark", "--config", str(CONFIG), "--seeds", "2", "--out", str(out),
                 "--resume", "--set", "trainer.max_epochs=1", *FAST]) == 0
    # issue 26, silent result 8: another config into the same --out adds its row, keeping the
    # first config's (it used to replace table.md); the same config again is refused
    assert main(["benchmark", "--config", str(CONFIG), "--seeds", "2", "--out", str(out),
                 "--set", "trainer.max_epochs=1", "name=csl-other", *FAST]) == 0
    rows = json.loads((out / "table.json").read_text())
    assert [r["name"] for r in rows] == ["csl-gt-lappe", "csl-other"]
    assert "csl-gt-lappe" in (out / "table.md").read_text()
    assert main(["benchmark", "--config", str(CONFIG), "--seeds", "2", "--out", str(out),
                 "--set", "trainer.max_epochs=1", *FAST]) == 2
    assert len(json.loads((out / "table.json").read_text())) == 2


def test_params_reports_counts_and_budgets(tmp_path, capsys):
    repo = Path(__file__).resolve().parents[2]
    assert main(["params", str(repo / "configs/zinc/gt.yaml"),
                 str(repo / "configs/cluster/gt.yaml")]) == 0
    out = capsys.readouterr().out
    assert "588,929" in out and "524,026" in out and "within 500,000 ± 10%" in out
    assert main(["params", str(repo / "configs/cluster/gt.yaml"),
                 "--set", "model.hidden_dim=32", "model.num_heads=4"]) == 1
    assert "OUTSIDE 500,000" in capsys.readouterr().out


def test_last_checkpoint_is_written_every_epoch(tmp_path):
    """--resume continues from the last epoch, not from the last improvement: with a zero
    learning rate the validation accuracy never improves after epoch 1, yet last.ckpt holds
    epoch 3."""
    out = tmp_path / "run"
    assert main(["train", "--config", str(CONFIG), "--out", str(out),
                 "--set", "trainer.max_epochs=3", "optim.lr=1e-30", "optim.scheduler=null",
                 *FAST]) == 0
    last = torch.load(out / "checkpoints/last.ckpt", weights_only=True)
    best = torch.load(out / "checkpoints/best.ckpt", weights_only=True)
    assert last["epoch"] == 2 and best["epoch"] == 0
    # metrics.json reports the best-validation epoch and, separately, the final epoch (the GT
    # benchmark's protocol reports the last one)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["best_epoch"] == 1 and metrics["last"]["epoch"] == 3
    assert set(metrics["last"]) == {"epoch", "train", "val", "test"}


def test_folds_train_every_fold_and_summarize_over_all_runs(tmp_path):
    """--folds K: the benchmark's cross-validation (CSL: 5 folds), fold_<k>/seed_<s>/ dirs, one
    summary over every (fold, seed) run; the reproduction table groups them as one row."""
    from graph_transformers.training.reproduction import find_runs
    out = tmp_path / "cv"
    assert main(["train", "--config", str(CONFIG), "--out", str(out), "--folds", "2",
                 "--seeds", "2", "--set", "trainer.max_epochs=1", *FAST]) == 0
    runs = sorted(p.parent.relative_to(out).as_posix() for p in out.rglob("metrics.json"))
    assert runs == ["fold_0/seed_0", "fold_0/seed_1", "fold_1/seed_0", "fold_1/seed_1"]
    folds = {json.loads((out / r / "metrics.json").read_text())["config"]["data"]["fold"]
             for r in runs}
    assert folds == {0, 1}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["folds"] == 2 and len(summary["seeds"]) == 4
    assert list(find_runs(tmp_path)) == [out] and len(find_runs(tmp_path)[out]) == 4


@pytest.mark.parametrize("command", ["train", "benchmark", "params", "evaluate", "analyze",
                                     "table", "predict"])
def test_every_subcommand_help_shows_an_example(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "Example" in out and f"graph-transformers {command}" in out


@pytest.mark.slow
def test_output_to_a_file_gets_one_line_per_epoch_not_a_progress_bar(tmp_path):
    """Logged to a file (not a TTY), a run writes one readable line per epoch and no
    carriage-return fragments of a progress bar."""
    import subprocess
    import sys
    log_file = tmp_path / "train.log"
    with open(log_file, "w") as f:
        proc = subprocess.run(
            [sys.executable, "-m", "graph_transformers.cli", "train", "--config", str(CONFIG),
             "--out", str(tmp_path / "run"), "--set", "trainer.max_epochs=2",
             "trainer.enable_progress_bar=true", "model.num_layers=1", "model.hidden_dim=8"],
            stdout=f, stderr=subprocess.STDOUT, timeout=600)
    text = log_file.read_text()
    assert proc.returncode == 0, text[-2000:]
    assert "\r" not in text
    lines = [line for line in text.splitlines() if "epoch 1/2" in line or "epoch 2/2" in line]
    assert len(lines) == 2 and all("val/loss" in line and "train/loss" in line for line in lines)


def test_trainer_arguments_reach_lightning(tmp_path):
    """Arguments outside the validated fields go to lightning.Trainer: no sanity check, value
    clipping, and a TensorBoard logger when asked for (when its package is installed)."""
    import importlib.util
    extra = ["trainer.num_sanity_val_steps=0", "trainer.gradient_clip_algorithm=value",
             "trainer.gradient_clip_val=0.5"]
    if importlib.util.find_spec("tensorboard") is not None:
        extra.append("trainer.logger=[csv,tensorboard]")
    out = tmp_path / "run"
    assert main(["train", "--config", str(CONFIG), "--out", str(out), "--set",
                 "trainer.max_epochs=1", *extra, *FAST]) == 0
    assert (out / "metrics.json").is_file() and (out / "lightning_logs").is_dir()
    if "trainer.logger=[csv,tensorboard]" in extra:
        assert list((out / "tensorboard").rglob("events.out.tfevents.*"))


def test_runs_write_curves_and_compare_reports_them(tmp_path, capsys):
    """Every run writes curves.png beside epochs.csv; `compare` prints one table over runs
    (seeds pooled) and writes the overlay of their validation curves."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["train", "--config", str(CONFIG), "--out", str(a), "--set",
                 "trainer.max_epochs=2", *FAST]) == 0
    assert main(["train", "--config", str(CONFIG), "--out", str(b), "--seeds", "2", "--set",
                 "trainer.max_epochs=2", "name=csl-other", *FAST]) == 0
    assert (a / "curves.png").stat().st_size > 1000
    assert (b / "seed_1" / "curves.png").is_file()
    capsys.readouterr()
    out = tmp_path / "cmp" / "overlay.png"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    # issue 25: runs are labelled by their directory (two runs of one config stay apart)
    assert "| a | csl-gt-lappe | gt | csl | accuracy |" in text and "| b | csl-other |" in text
    rows = json.loads(out.with_suffix(".json").read_text())
    assert [r["runs"] for r in rows] == [1, 2] and len(rows[1]["val_curves"]) == 2
    assert len(rows[0]["val_curves"][0]) == 2 and out.stat().st_size > 1000
    assert main(["compare", str(a), str(b), "--labels", "GT", "GT seeds", "--out", str(out)]) == 0
    assert [r["label"] for r in json.loads(out.with_suffix(".json").read_text())] == \
        ["GT", "GT seeds"]
    assert main(["compare", str(a), str(b), "--labels", "GT"]) == 2
    assert main(["compare", str(tmp_path / "nothing")]) == 2


def test_trainer_threads_sets_the_runs_threads(tmp_path, monkeypatch):
    """Issue 25: trainer.threads sets torch's CPU threads for the run (recorded in the device
    column) and gives the caller its own setting back."""
    import torch
    before = torch.get_num_threads()
    seen = []
    from graph_transformers.training import fit
    real = fit._train_locked

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(fit, "_train_locked", spy)
    assert main(["train", "--config", str(CONFIG), "--out", str(tmp_path / "r"), "--set",
                 "trainer.max_epochs=1", "trainer.threads=1", *FAST]) == 0
    assert seen == [1] and torch.get_num_threads() == before
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["device"].endswith("1 threads)") or "CPU" not in metrics["device"]


def test_default_run_directory_follows_a_changed_dataset(tmp_path, monkeypatch):
    """Issue 25: a config pointed at another dataset by --set ran into runs/<config name>, so a
    second such run was refused as "already holds a run"; it now gets <dataset>-<model>."""
    from graph_transformers.cli.training_commands import default_run_name
    from graph_transformers.training.config import load_config
    repo = Path(__file__).resolve().parents[2]
    mutag = repo / "configs/tu/gt_mutag.yaml"
    assert default_run_name(mutag, load_config(mutag)) == load_config(mutag).name
    other = load_config(mutag, ["data.name=tu:PROTEINS"])
    assert default_run_name(mutag, other) == "tu-PROTEINS-gt"
