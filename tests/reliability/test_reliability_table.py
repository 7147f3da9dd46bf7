"""The bad-input table of ``docs/reliability.md``, run row by row: each probe's exit status and
error message must be the documented ones, and every probe here has a row there (and back)."""
from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graph_transformers.cli import main

REPO = Path(__file__).resolve().parents[2]
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


#: the probes of issue 54 (inputs read loudly), run by :func:`_probe_input`
INPUT_PROBES = {"csv-repeated-column", "csv-pickle", "csv-open-quote", "nodes-repeated-column",
                "edges-empty", "edges-header-only", "split-file-binary", "yaml-unhashable-key",
                "model-name-list", "predict-pickle-csv", "predict-repeated-smiles"}
NODE_TABLE = REPO / "configs/graphs/gt_node_table.yaml"
GRAPH_FILE = REPO / "configs/graphs/gt_graph_file.yaml"


def _probe_input(name: str, tmp: Path, trained: Path) -> int:
    """A user's file that must be refused in one line
    (``tests/datasets/test_inputs_loud.py`` has the
    reader-level tests)."""
    import pickle
    if name.startswith("csv-"):
        path = tmp / ("m.pkl" if name == "csv-pickle" else "m.csv")
        if name == "csv-pickle":
            path.write_bytes(pickle.dumps({"smiles": ["CCO"], "y": [1.0]}))
        elif name == "csv-repeated-column":
            path.write_text("smiles,y,y\nCCO,1.0,2.0\nCCN,2.0,3.0\n")
        else:  # an open quote would swallow the rows below it
            path.write_text('smiles,y\nCCO,1.0\n"CCN,2.0\nCCC,3.0\n')
        return _train(tmp, f"data.path={path}", *CSV_SETS)
    if name.startswith(("nodes-", "edges-")):
        nodes, edges = tmp / "nodes.csv", tmp / "edges.csv"
        header = "id,label,label" if name == "nodes-repeated-column" else "id,label,f"
        nodes.write_text(header + "\n" + "".join(f"n{i},{'ab'[i % 2]},{i}\n" for i in range(8)))
        edges.write_text({"edges-empty": "", "edges-header-only": "source,target\n"}.get(
            name, "n0,n1\nn1,n2\n"))
        return main(["train", "--config", str(NODE_TABLE), "--out", str(tmp / "run"), "--set",
                     f"data.edges={edges}", f"data.nodes={nodes}",
                     "data.split=random:0.5,0.25,0.25", "trainer.max_epochs=1"])
    if name == "split-file-binary":
        import numpy as np
        import torch
        from torch_geometric.data import Data
        graphs = [Data(x=torch.zeros(3, 1), edge_index=torch.tensor([[0, 1], [1, 2]]),
                       y=torch.tensor([float(i)])) for i in range(12)]
        torch.save(graphs, tmp / "graphs.pt")
        np.save(tmp / "train.npy", np.arange(4))  # ids saved with numpy, not as text
        (tmp / "val.txt").write_text("4 5 6\n")
        (tmp / "test.txt").write_text("7 8 9\n")
        files = f"{{train: {tmp / 'train.npy'}, val: {tmp / 'val.txt'}, test: {tmp / 'test.txt'}}}"
        return main(["train", "--config", str(GRAPH_FILE), "--out", str(tmp / "run"), "--set",
                     f"data.path={tmp / 'graphs.pt'}", f"data.split_files={files}",
                     "trainer.max_epochs=1"])
    if name == "yaml-unhashable-key":
        (tmp / "bad.yaml").write_text("? [a]\n: 1\n")
        return _train(tmp, config=tmp / "bad.yaml")
    if name == "model-name-list":
        return _train(tmp, "model.name=[gt]")
    data = tmp / "in.csv"
    if name == "predict-pickle-csv":
        data.write_bytes(pickle.dumps(["CCO"]))
    else:  # predict-repeated-smiles
        data.write_text("smiles,name,smiles\nCCO,ethanol,CCN\n")
    return main(["predict", str(trained), "--data", str(data), "--out", str(tmp / "p.csv")])


def _probe(name: str, tmp: Path, trained: Path, monkeypatch) -> int:
    if name in INPUT_PROBES:
        return _probe_input(name, tmp, trained)
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
    if name == "name-dotdot":  # issue 54: the name became the parent of --out
        return main(["benchmark", "--config", str(CONFIG), "--seeds", "1", "--out",
                     str(tmp / "out"), "--set", "name=..", *FAST, "trainer.max_epochs=1"])
    if name == "out-foreign-files":
        (tmp / "mine").mkdir()
        (tmp / "mine" / "config.yaml").write_text("my: own\n")
        return _train(tmp, "trainer.max_epochs=1", out=tmp / "mine")
    if name == "tu-name-path":
        return _train(tmp, "data.name=tu:../x", "trainer.max_epochs=1")
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
        with _locked_by_another_process(out):
            return _train(tmp, out=out)
    if name == "resume-weights-only":
        from graph_transformers.training.slices import _save_weights
        run = _copy(trained, tmp)
        _truncate(run / "checkpoints/last.ckpt")
        _save_weights(run / "checkpoints/best.ckpt", run / "checkpoints/best.ckpt")
        return _train(tmp, "trainer.max_epochs=2", resume=True, out=run)
    if name.startswith("slice-"):
        state = tmp / "state"
        if name == "slice-corrupt-last":
            assert main(["slice", "--state", str(state), "--minutes", "0.0001", "--config",
                         str(CONFIG), "--set", *FAST, "trainer.max_epochs=2"]) == 0
            data = bytearray((state / "last.ckpt").read_bytes())
            data[len(data) // 2] ^= 0xFF
            (state / "last.ckpt").write_bytes(bytes(data))
            return main(["slice", "--state", str(state), "--minutes", "0.0001"])
        with _locked_by_another_process(state):
            return main(["slice", "--state", str(state), "--minutes", "0.0001", "--config",
                         str(CONFIG), "--set", *FAST, "trainer.max_epochs=2"])
    raise KeyError(name)


@contextlib.contextmanager
def _locked_by_another_process(folder: Path):
    """While the block runs, another live process holds ``folder``'s run lock."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    import graph_transformers
    env["PYTHONPATH"] = str(Path(graph_transformers.__file__).parents[1])
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from graph_transformers.training.rundir import run_lock\n"
         "with run_lock(sys.argv[1]):\n    print('locked', flush=True)\n    time.sleep(60)\n",
         str(folder)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()


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
          "run-locked", "resume-weights-only", "slice-corrupt-last", "slice-locked",
          "name-dotdot", "out-foreign-files", "tu-name-path"}

PROBES |= INPUT_PROBES


def test_the_table_lists_every_probe():
    assert {name for name, _, _ in _table()} == PROBES


@pytest.mark.slow
@pytest.mark.parametrize("name,status,message", _table(), ids=[r[0] for r in _table()])
def test_bad_input_gives_the_documented_error(name, status, message, tmp_path, trained,
                                              monkeypatch, capsys):
    assert _probe(name, tmp_path, trained, monkeypatch) == status
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("graph-transformers: error:")]
    assert len(lines) == 1, err
    assert message in lines[0], lines[0]
    assert "Traceback" not in err
