"""Fine-tuning from a trained run (``--init-from``; issue 25, item 5)."""
import csv
import json
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

import graph_transformers as gtr
from graph_transformers.errors import RunError
from graph_transformers.training import finetune
from graph_transformers.training.checkpoint import load_checkpoint
from graph_transformers.training.config import build_config
from graph_transformers.training.build import make_model
from test_graph_list import _ring
from conftest import data_root

DATA = data_root()



def _graphs(num=48, classes=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [Data(x=torch.randn(5, 3, generator=g) + (i % classes), edge_index=_ring(5),
                 y=torch.tensor([i % classes])) for i in range(num)]


def _config(epochs=1):
    return {"name": "ft", "model": {"name": "gt", "hidden_dim": 16, "num_layers": 1,
                                    "num_heads": 2, "pe": None},
            "data": {"batch_size": 8}, "encodings": {"lap_pe": None},
            "trainer": {"max_epochs": epochs, "enable_progress_bar": False}}


def test_same_task_loads_everything_and_another_task_reinitializes_the_head(tmp_path):
    graphs = _graphs()
    gtr.train(_config(), dataset=graphs, out_dir=tmp_path / "source")
    best = load_checkpoint(tmp_path / "source" / "checkpoints" / "best.ckpt")["state_dict"]

    # the same graphs: every tensor, head included, comes from the checkpoint
    metrics = gtr.train(_config(), dataset=graphs, out_dir=tmp_path / "same",
                        init_from=tmp_path / "source")
    rec = json.loads((tmp_path / "same" / "init_from.json").read_text())
    assert rec["same_task"] and not rec["skipped"] and not rec["unused"]
    assert any(n.startswith("head.") for n in rec["loaded"])
    assert metrics["init_from"]["loaded"] == len(rec["loaded"])
    assert metrics["init_from"]["loaded_parameters"] == metrics["init_from"]["total_parameters"]

    # three classes: the head is re-initialized (task differs); the body is the checkpoint's
    other = _graphs(classes=3, seed=1)
    cfg = build_config({**_config(), "data": {"batch_size": 8, "name": "graph_list"}})
    from graph_transformers.training.splits import graph_list_spec_of
    model = make_model(cfg, graph_list_spec_of(cfg, other))
    fresh_head = {k: v.clone() for k, v in model.state_dict().items() if k.startswith("head.")}
    rec = finetune.init_from(model, tmp_path / "source", cfg.to_dict(), {"train": "other"})
    assert not rec["same_task"]
    assert set(rec["skipped"]) == set(fresh_head)
    assert all("task head re-initialized" in r for r in rec["skipped"].values())
    state = model.state_dict()
    for name in rec["loaded"]:
        torch.testing.assert_close(state[name], best["model." + name])
    for name, value in fresh_head.items():  # untouched: the fresh initialization
        torch.testing.assert_close(state[name], value)
    # through train(): recorded in the run
    gtr.train(_config(), dataset=other, out_dir=tmp_path / "other",
              init_from=tmp_path / "source")
    rec = json.loads((tmp_path / "other" / "init_from.json").read_text())
    assert not rec["same_task"] and rec["skipped"]


def test_bad_sources_are_refused_in_one_line(tmp_path):
    model = torch.nn.Linear(2, 2)
    with pytest.raises(RunError, match="not a run directory"):
        finetune.init_from(model, tmp_path, {})
    graphs = _graphs(num=24)
    gtr.train(_config(), dataset=graphs, out_dir=tmp_path / "source")
    with pytest.raises(RunError, match="another architecture"):
        finetune.init_from(model, tmp_path / "source", {})


def _zinc_csv(tmp_path: Path) -> Path:
    import gzip
    src = DATA / "ZINC" / "zinc12k_val_smiles.csv.gz"
    out = tmp_path / "zinc.csv"
    with gzip.open(src, "rt") as f, open(out, "w", newline="") as g:
        rows = list(csv.DictReader(f))
        w = csv.writer(g)
        w.writerow(["smiles", "y"])
        w.writerows([[r["smiles"], r["y"]] for r in rows])
    return out


def _mol_config(path, target, epochs, lr=2e-3):
    return {"name": "mol", "seed": 0,
            "model": {"name": "gt", "hidden_dim": 32, "num_layers": 2, "num_heads": 4,
                      "pe": None},
            "data": {"name": "molecule_csv", "path": str(path), "target_columns": [target],
                     "task": "regression", "batch_size": 32},
            "encodings": {"lap_pe": None}, "optim": {"lr": lr},
            "trainer": {"max_epochs": epochs, "enable_progress_bar": False}}


def _logp_csv(tmp_path: Path, rows: int = 300) -> Path:
    """A small molecular regression CSV: Crippen logP (RDKit) of ESOL's first molecules, a
    property related to ZINC's target (penalized logP) on molecules from another set."""
    from rdkit import Chem
    from rdkit.Chem import Crippen
    with open(DATA / "MoleculeNet" / "esol.csv") as f:
        smiles = [r["smiles"] for r in csv.DictReader(f)][:rows]
    out = tmp_path / "logp.csv"
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["smiles", "logp"])
        w.writerows([s, round(Crippen.MolLogP(Chem.MolFromSmiles(s)), 4)] for s in smiles)
    return out


def _first_epoch(run: Path) -> dict[str, float]:
    with open(run / "epochs.csv") as f:
        row = next(csv.DictReader(f))
    return {k: float(row[k]) for k in ("train/loss", "val/loss")}


@pytest.mark.skipif(not (DATA / "ZINC" / "zinc12k_val_smiles.csv.gz").is_file() or
                    not (DATA / "MoleculeNet" / "esol.csv").is_file(),
                    reason="needs ../shared/data (ZINC SMILES and MoleculeNet ESOL)")
@pytest.mark.slow
def test_a_zinc_trained_gt_fine_tunes_from_a_lower_loss(tmp_path):
    pytest.importorskip("rdkit")
    # GT trained on 800 ZINC molecules and their target (penalized logP), from SMILES
    gtr.train(_mol_config(_zinc_csv(tmp_path), "y", epochs=10), out_dir=tmp_path / "zinc")
    small = _mol_config(_logp_csv(tmp_path), "logp", epochs=1)
    gtr.train(small, out_dir=tmp_path / "scratch")
    metrics = gtr.train(small, out_dir=tmp_path / "tuned", init_from=tmp_path / "zinc")
    rec = json.loads((tmp_path / "tuned" / "init_from.json").read_text())
    assert not rec["same_task"]  # another dataset: the head starts afresh
    assert set(rec["skipped"]) == {n for n in rec["skipped"] if n.startswith("head.")} | \
        {"target_mean", "target_std"}
    assert metrics["init_from"]["loaded_parameters"] > 0.9 * \
        metrics["init_from"]["total_parameters"]  # the body; the head is a small share
    tuned, scratch = _first_epoch(tmp_path / "tuned"), _first_epoch(tmp_path / "scratch")
    assert tuned["train/loss"] < scratch["train/loss"]
    assert tuned["val/loss"] < scratch["val/loss"]
