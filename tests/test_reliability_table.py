"""The bad-input table of ``docs/reliability.md``, run row by row: each probe's exit status and
error message must be the documented ones, and every probe here has a row there (and back)."""
from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graph_transformers.cli import main

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "reliability.md"
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
FAST = ["trainer.enable_progress_bar=false", "model.num_layers=2", "model.hidden_dim=16",
        "model.num_heads=2", "data.batch_size=30"]
CSV_SETS = ["data.target_columns=[y]", "data.task=regression", "model.pe=null",
            "encodings.lap_pe=null", "trainer.max_epochs=1"]
_ROW = re.compile(r"^\| `([a-z0-9-]+)` \| (.+?) \| (\d+) \| `(.+)` \|$")


def _table() -> list[tuple[str, int, str]]:
    rows = []
    for line in DOC.read_text().splitlines():
        m = _ROW.match(line.strip())
        if m:
            rows.append((m.group(1), int(m.group(3)), m.group(4)))
    return rows


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """One finished 1-epoch CSL run (copied by the probes that damage it)."""
    out = tmp_path_factory.mktemp("trained") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPH_TRANSFORMERS_CACHE", str(tmp_path_factory.mktemp("cache")))
        assert main(["train", "--config", str(CONFIG), "--out", str(out), "--set",
                     "trainer.max_epochs=1", *FAST]) == 0
    return out


def _train(tmp: Path, *sets: str, config: Path = CONFIG, out: Path | None = None,
           resume: bool = False) -> int:
    return main(["train", "--config", str(config), "--out", str(out or tmp / "run"),
                 *(["--resume"] if resume else []), "--set", *FAST, *sets])


def _csv(tmp: Path, rows: list[tuple[str, str]]) -> Path:
    path = tmp / "m.csv"
    path.write_text("smiles,y\n" + "".join(f"{s},{y}\n" for s, y in rows))
    return path


def _copy(run: Path, tmp: Path) -> Path:
    dst = tmp / "copy"
    shutil.copytree(run, dst)
    return dst


def _truncate(path: Path, size: int = 1000) -> None:
    path.write_bytes(path.read_bytes()[:size])


class _Evil:
    def __reduce__(self):
        return (eval, ("1 + 1",))


def _probe(name: str, tmp: Path, trained: Path, monkeypatch) -> int:
    bad = tmp / "bad.yaml"
    if name == "yaml-syntax":
        bad.write_text("model:\n [1, 2\n")
        return _train(tmp, config=bad)
    if name == "yaml-duplicate-key":
        bad.write_text("optim:\n  lr: 1.0e-3\n  lr: 1.0\n")
        return _train(tmp, config=bad)
    if name == "yaml-not-utf8":
        bad.write_bytes(b"name: x\nmodel: {name: gt}  # caf\xe9\n")
        return _train(tmp, config=bad)
    if name == "yaml-not-mapping":
        bad.write_text("- 1\n- 2\n")
        return _train(tmp, config=bad)
    if name == "unknown-key":
        return _train(tmp, "model.depth=3")
    if name == "bad-override":
        return _train(tmp, "optim.lr")
    if name == "lr-inf":
        return _train(tmp, "optim.lr=.inf")
    if name == "lr-zero":
        return _train(tmp, "optim.lr=0")
    if name == "epochs-zero":
        return _train(tmp, "trainer.max_epochs=0")
    if name == "csv-1-row":
        return _train(tmp, f"data.path={_csv(tmp, [('CCO', '1.0')])}", *CSV_SETS)
    if name == "csv-3-rows":
        path = _csv(tmp, [("CCO", "1.0"), ("CCN", "2.0"), ("c1ccccc1", "3.0")])
        return _train(tmp, f"data.path={path}", *CSV_SETS)
    if name == "csv-inf-label":
        path = _csv(tmp, [("CCO", "1.0"), ("CCN", "2.0"), ("CCC", "inf")])
        return _train(tmp, f"data.path={path}", *CSV_SETS)
    if name == "csv-blank-labels":
        rows = [(s, "") for s in ("C", "CC", "CCC", "CCCC", "CCO", "CCN", "c1ccccc1", "C1CCCCC1",
                                  "c1ccncc1", "C1CCNCC1")]
        return _train(tmp, f"data.path={_csv(tmp, rows)}", *CSV_SETS)
    if name == "csv-huge-label":
        path = _csv(tmp, [("CCO", "1.0"), ("CCN", "2.0"), ("CCC", "1e39")])
        return _train(tmp, f"data.path={path}", *CSV_SETS)
    if name == "csv-text-label":
        return _train(tmp, f"data.path={_csv(tmp, [('CCO', 'abc')])}", *CSV_SETS)
    if name == "csv-missing-column":
        path = _csv(tmp, [("CCO", "1.0")])
        return _train(tmp, f"data.path={path}", *CSV_SETS, "data.target_columns=[nope]")
    if name == "csv-missing-file":
        return _train(tmp, f"data.path={tmp / 'absent.csv'}", *CSV_SETS)
    if name == "existing-run":
        return _train(tmp, "trainer.max_epochs=1", out=_copy(trained, tmp))
    if name == "resume-below-epochs":
        out = tmp / "two"
        assert _train(tmp, "trainer.max_epochs=2", out=out) == 0
        return _train(tmp, "trainer.max_epochs=1", resume=True, out=out)
    if name == "hidden-dim-huge":
        return _train(tmp, "model.hidden_dim=1000000000", "model.num_heads=1")
    if name == "seed-negative":
        return _train(tmp, "seed=-5")
    if name == "out-is-a-file":
        (tmp / "afile").write_text("x")
        return _train(tmp, out=tmp / "afile")
    if name == "base-not-a-path":
        bad.write_text("base: 5\n")
        return _train(tmp, config=bad)
    if name == "config-empty":
        bad.write_text("")
        return _train(tmp, config=bad)
    if name == "csv-gz-truncated":
        import gzip
        path = tmp / "m.csv.gz"
        rows = b"".join(f"{'C' * (i % 9 + 1)}O{'N' * (i % 4)},{i}.5\n".encode()
                        for i in range(400))
        packed = gzip.compress(b"smiles,y\n" + rows)
        path.write_bytes(packed[:len(packed) // 2])
        return _train(tmp, f"data.path={path}", *CSV_SETS)
    if name == "batch-one-atom":
        rows = [("C", "1.0")] + [(s, "2.0") for s in ("CC", "CCC", "CCO", "CCN", "CCCC",
                                                      "c1ccccc1", "C1CCCCC1", "c1ccncc1")]
        return _train(tmp, f"data.path={_csv(tmp, rows)}", *CSV_SETS, "data.batch_size=1")
    if name == "resume-nothing":
        return _train(tmp, resume=True, out=tmp / "empty")
    if name == "resume-incompatible":
        return _train(tmp, "trainer.max_epochs=2", "model.hidden_dim=32", resume=True,
                      out=_copy(trained, tmp))
    if name == "resume-unreadable":
        run = _copy(trained, tmp)
        for ckpt in (run / "checkpoints").glob("*.ckpt"):
            _truncate(ckpt)
        return _train(tmp, "trainer.max_epochs=2", resume=True, out=run)
    if name == "evaluate-truncated":
        run = _copy(trained, tmp)
        _truncate(run / "checkpoints/best.ckpt")
        return main(["evaluate", str(run)])
    if name == "evaluate-empty":
        run = _copy(trained, tmp)
        (run / "checkpoints/best.ckpt").write_bytes(b"")
        return main(["evaluate", str(run)])
    if name == "evaluate-unsafe-pickle":
        import torch
        run = _copy(trained, tmp)
        torch.save({"state_dict": {}, "payload": _Evil()}, run / "checkpoints/best.ckpt")
        return main(["evaluate", str(run)])
    if name == "evaluate-not-a-run":
        (tmp / "nothing").mkdir()
        return main(["evaluate", str(tmp / "nothing")])
    if name.startswith("predict-"):
        data, run = tmp / "in.csv", trained
        data.write_text("smiles\nCCO\n")
        if name == "predict-unsafe-pickle":
            import torch
            data = tmp / "in.pt"
            torch.save([_Evil()], data)
        elif name == "predict-no-column":
            data.write_text("SMILES\nCCO\n")
        elif name == "predict-no-checkpoint":
            run = _copy(trained, tmp)
            (run / "checkpoints/last.ckpt").unlink()
            return main(["predict", str(run), "--data", str(data), "--checkpoint", "last"])
        return main(["predict", str(run), "--data", str(data), "--out", str(tmp / "p.csv")])
    if name == "analyze-truncated":
        run = _copy(trained, tmp)
        _truncate(run / "checkpoints/best.ckpt")
        return main(["analyze", str(run)])
    if name == "out-permission":
        locked = tmp / "readonly"
        real = Path.mkdir

        def refuse(self, *a, **kw):
            if str(self).startswith(str(locked)):
                raise PermissionError(errno.EACCES, "Permission denied", str(self))
            return real(self, *a, **kw)
        monkeypatch.setattr(Path, "mkdir", refuse)
        return _train(tmp, out=locked / "run")
    if name == "run-locked":
        out = tmp / "busy"
        env = dict(os.environ, OMP_NUM_THREADS="1")
        import graph_transformers
        env["PYTHONPATH"] = str(Path(graph_transformers.__file__).parents[1])
        holder = subprocess.Popen(
            [sys.executable, "-c", "import sys, time\n"
             "from graph_transformers.training.rundir import run_lock\n"
             "with run_lock(sys.argv[1]):\n    print('locked', flush=True)\n    time.sleep(60)\n",
             str(out)], env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "locked"
            return _train(tmp, out=out)
        finally:
            holder.kill()
            holder.wait()
    raise KeyError(name)


PROBES = {"yaml-syntax", "yaml-duplicate-key", "yaml-not-utf8", "yaml-not-mapping",
          "unknown-key", "bad-override", "lr-inf", "lr-zero", "epochs-zero", "csv-1-row",
          "csv-3-rows", "csv-inf-label", "csv-blank-labels", "csv-huge-label", "csv-text-label",
          "csv-missing-column", "csv-missing-file", "csv-gz-truncated", "batch-one-atom",
          "existing-run", "resume-below-epochs", "hidden-dim-huge", "seed-negative",
          "out-is-a-file", "base-not-a-path", "config-empty", "resume-nothing",
          "resume-incompatible",
          "resume-unreadable", "evaluate-truncated", "evaluate-empty", "evaluate-unsafe-pickle",
          "evaluate-not-a-run", "predict-not-molecular", "predict-unsafe-pickle",
          "predict-no-column", "predict-no-checkpoint", "analyze-truncated", "out-permission",
          "run-locked"}


def test_the_table_lists_every_probe():
    assert {name for name, _, _ in _table()} == PROBES


@pytest.mark.parametrize("name,status,message", _table(), ids=[r[0] for r in _table()])
def test_bad_input_gives_the_documented_error(name, status, message, tmp_path, trained,
                                              monkeypatch, capsys):
    assert _probe(name, tmp_path, trained, monkeypatch) == status
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("graph-transformers: error:")]
    assert len(lines) == 1, err
    assert message in lines[0], lines[0]
    assert "Traceback" not in err
