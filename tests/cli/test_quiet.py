"""A quiet log (issue 57, items 5e-f): ``train --quiet`` leaves only warnings, errors and the
final result line; progress bars only on a terminal (or when asked); and none of the warnings
that told a user nothing: the cached-kernel line, the sanity check's undefined ROC-AUC, Lightning's
logging-interval and pytree deprecation warnings, PyG's ``torch.jit.script`` deprecation."""
from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path

import pytest
import torch

from graph_transformers._warnings import filter_cli_warnings, filter_library_warnings
from graph_transformers.cli import main
from graph_transformers.cli.quiet import DropLines, quiet_output
from graph_transformers.data import progress as progress_module
from graph_transformers.data.progress import counter, progress, progress_enabled, set_progress

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
FAST = ["model.num_layers=1", "model.hidden_dim=8", "model.num_heads=2", "data.batch_size=30",
        "trainer.threads=1", "trainer.max_epochs=1"]
LEAFSPEC = ("`isinstance(treespec, LeafSpec)` is deprecated, use `isinstance(treespec, "
            "TreeSpec) and treespec.is_leaf()` instead.")
JIT = "`torch.jit.script` is deprecated. Please switch to `torch.compile` or `torch.export`."


@pytest.fixture(autouse=True)
def _default_progress(monkeypatch):
    monkeypatch.delenv(progress_module.ENV, raising=False)
    set_progress(None)
    yield
    set_progress(None)


@pytest.mark.slow
def test_quiet_train_prints_the_result_line_and_nothing_else(tmp_path):
    """A fresh cache (PyG prints Processing... / Done! outside pytest), deprecation warnings on
    (``-W default``): stderr stays empty and stdout is one line."""
    env = {**os.environ, "GRAPH_TRANSFORMERS_CACHE": str(tmp_path / "cache"),
           "OMP_NUM_THREADS": "1"}
    env.pop("GRAPH_TRANSFORMERS_PROGRESS", None)
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-m", "graph_transformers.cli", "train", "--quiet",
         "--config", str(CONFIG), "--out", str(out), "--set", *FAST],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"gt on csl ({out}): train accuracy ")
    assert ", val accuracy " in lines[0] and ", test accuracy " in lines[0]
    assert (out / "metrics.json").is_file()


@pytest.mark.slow
def test_without_quiet_the_log_names_the_final_evaluation(tmp_path, capsys):
    """The CLI's log (its own stderr handler) says what the final evaluation evaluates, before
    it runs; the result is the usual block."""
    out = tmp_path / "run"
    assert main(["train", "--config", str(CONFIG), "--out", str(out), "--set", *FAST]) == 0
    printed = capsys.readouterr()
    assert "INFO graph_transformers.training.finish: final evaluation: best.ckpt (epoch 1) on " \
        "train, val, test (90/30/30 graphs)" in printed.err
    assert "final evaluation: last.ckpt (epoch 1)" in printed.err
    assert "epoch 1/1" in printed.err  # no terminal: one line per epoch, no bar
    assert f"gt on csl ({out}):\n  train accuracy:" in printed.out


def test_drop_lines_drops_pygs_lines_and_passes_the_rest():
    sink = io.StringIO()
    stream = DropLines(sink)
    for piece in ("Processing...", "\n", "Done!\n", "Warn", "ing: x\n", "Proc", "essing", "\n",
                  "Done!!\n", "Do", "ne\n", "a\nDone!\nb\n", "tail"):
        stream.write(piece)
    stream.close_pending()
    # held back only while it could still be a PyG line; "Processing" without dots is not one
    assert sink.getvalue() == "Warning: x\nProcessing\nDone!!\nDone\na\nb\ntail"


def test_quiet_output_restores_the_loggers_the_bars_and_stderr(monkeypatch):
    monkeypatch.setenv(progress_module.ENV, "1")
    before = sys.stderr, logging.getLogger("lightning.pytorch").level
    with quiet_output(True):
        assert isinstance(sys.stderr, DropLines) and not progress_enabled()
        assert logging.getLogger("lightning.pytorch").getEffectiveLevel() == logging.WARNING
    assert (sys.stderr, logging.getLogger("lightning.pytorch").level) == before
    assert progress_enabled()
    with quiet_output(False):
        assert sys.stderr is before[0]


def test_progress_bars_only_on_a_terminal_or_when_asked(monkeypatch):
    items = [1, 2, 3]
    assert progress(items, "x") is items  # pytest's stderr is no terminal
    assert type(counter("x")).__name__ == "_NoBar"
    tty = types.SimpleNamespace(isatty=lambda: True)
    assert progress_enabled(tty) and not progress_enabled(io.StringIO())
    monkeypatch.setenv(progress_module.ENV, "1")
    buf = io.StringIO()
    bar = progress(items, "encodings", file=buf, delay=0, mininterval=0)
    assert list(bar) == items and "encodings" in buf.getvalue() and "3/3" in buf.getvalue()
    set_progress(False)  # --quiet wins over the environment
    assert progress(items, "x") is items
    set_progress(None)
    monkeypatch.setenv(progress_module.ENV, "maybe")
    with pytest.raises(ValueError, match="GRAPH_TRANSFORMERS_PROGRESS must be 1"):
        progress_enabled()


def test_the_kernel_line_says_building_only_when_it_builds(monkeypatch, caplog, tmp_path):
    from graph_transformers.nn import fused
    # the check itself: the library in torch's build folder, newer than the source
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    source = tmp_path / "src.cpp"
    source.write_text("// kernel")
    assert not fused._is_cached("probe", source)
    lib = tmp_path / "probe" / "probe.so"
    lib.write_bytes(b"")
    assert fused._is_cached("probe", source)
    old = time.time() - 3600
    os.utime(lib, (old, old))
    assert not fused._is_cached("probe", source)  # an edited source is built again
    # the log line, with torch's build replaced
    import torch.utils.cpp_extension as cpp
    monkeypatch.setattr(cpp, "load", lambda **kwargs: None)
    monkeypatch.setattr(logging.getLogger("graph_transformers"), "propagate", True)
    for cached, level, text in ((True, logging.DEBUG, "loading the fused CPU kernels"),
                                (False, logging.INFO, "building the fused CPU kernels")):
        monkeypatch.setattr(fused, "_is_cached", lambda name, src, c=cached: c)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="graph_transformers.nn.fused"):
            fused._build()
        got = [(r.levelno, r.getMessage()[:len(text)]) for r in caplog.records
               if r.name == "graph_transformers.nn.fused"]
        # one line per kernel built or loaded; at this level, and no other
        assert got and set(got) == {(level, text)}


def test_the_sanity_check_computes_no_metric(caplog):
    """A binary task's sanity batch of one class: the ROC-AUC it would report is undefined
    (a WARNING each run); the sanity check now resets the metric without computing it."""
    from graph_transformers.data.registry import DatasetSpec
    from graph_transformers.training.module import GraphTaskModule
    from graph_transformers.training.sections import OptimConfig
    spec = DatasetSpec("toy", "graph", "binary", 1, "roc_auc", load=lambda **kw: None)
    module = GraphTaskModule(torch.nn.Linear(1, 1), spec, OptimConfig())
    module.trainer = types.SimpleNamespace(sanity_checking=True)
    roc = module.val_metrics["roc_auc"]
    roc.update(torch.tensor([[0.3], [0.8]]), torch.tensor([[1.0], [1.0]]))
    with caplog.at_level(logging.WARNING):
        module.on_validation_epoch_end()
    assert not caplog.records and roc.preds == []  # reset, nothing computed
    roc.update(torch.tensor([[0.3], [0.8]]), torch.tensor([[1.0], [1.0]]))
    with caplog.at_level(logging.WARNING):
        roc.compute()  # what the sanity check used to do
    assert "ROC-AUC is undefined" in caplog.text


def _shown(message: str, category: type[Warning], module: str) -> bool:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        install()
        warnings.warn_explicit(message, category, "probe.py", 1, module=module)
    return bool(seen)


def test_third_party_warnings_are_filtered_by_message_and_module():
    global install
    install = filter_cli_warnings
    assert not _shown(LEAFSPEC, FutureWarning, "lightning.pytorch.utilities._pytree")
    assert not _shown(JIT, DeprecationWarning, "torch.jit._script")
    # the same messages from elsewhere, and other messages from there, are shown
    assert _shown(LEAFSPEC, FutureWarning, "my_project.trees")
    assert _shown("something else is deprecated", FutureWarning,
                  "lightning.pytorch.utilities._pytree")
    assert _shown(JIT, DeprecationWarning, "my_project.scripting")
    # imported as a library, the torch.jit deprecation stays: it may be the user's own
    install = filter_library_warnings
    assert not _shown(LEAFSPEC, FutureWarning, "lightning.pytorch.utilities._pytree")
    assert _shown(JIT, DeprecationWarning, "torch.jit._script")


install = filter_cli_warnings
