"""Tracebacks and unclear errors of the second probe round (issue 26) that the bad-input table
cannot express: a model refused before allocation, SIGTERM during the final evaluation, and a
renamed key reported with the file that holds it."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from graph_transformers.training.config import ConfigError, load_config
from graph_transformers.training.build import check_model_memory, physical_memory_bytes

from test_reliability import CONFIG, FAST, _env


def test_model_memory_is_checked_before_allocation():
    kw = dict(hidden_dim=64, num_layers=2, num_heads=4, out_dim=1, num_node_types=5, pe=None)
    check_model_memory("gt", kw, limit=10**9)  # ≈0.1M parameters: fits
    with pytest.raises(ConfigError, match=r"parameters: training it needs .* more than the"):
        check_model_memory("gt", kw, limit=10_000)
    assert physical_memory_bytes() is None or physical_memory_bytes() > 2**28


SIGTERM_IN_EVALUATION = textwrap.dedent("""
    import os, signal, sys
    from graph_transformers.training import fit
    real = fit.finish_run
    def finish_run(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # as a scheduler's preemption would
        return real(*args, **kwargs)
    fit.finish_run = finish_run
    from graph_transformers.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.slow
def test_sigterm_during_the_final_evaluation_says_what_to_do(tmp_path):
    """It used to exit 143 with no message and no metrics.json."""
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", SIGTERM_IN_EVALUATION, "train", "--config",
                           str(CONFIG), "--out", str(out), "--set", *FAST,
                           "trainer.max_epochs=1"], env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 143, proc.stderr[-2000:]
    errors = [x for x in proc.stderr.splitlines() if x.startswith("graph-transformers: error:")]
    assert len(errors) == 1 and "during the final evaluation" in errors[0], proc.stderr[-2000:]
    assert f"evaluate {out} --write" in errors[0]
    assert (out / "checkpoints" / "best.ckpt").is_file() and not (out / "metrics.json").exists()


def test_a_renamed_key_is_refused_naming_the_new_one(tmp_path):
    """0.2.0: an old run's config.yaml with a key renamed in issue 14 no longer loads with a
    warning: one line names the old key and the new one."""
    old = tmp_path / "config.yaml"
    old.write_text("model:\n  name: egt\n  clip: 5.0\ndata:\n  name: zinc\n")
    with pytest.raises(ConfigError) as err:
        load_config(old)
    assert str(err.value) == ("invalid config: model.clip: unknown key (renamed model.clamp; "
                              "the old name was removed in 0.2.0)")
