"""Every dataset config trains GT (and EGT) for one (short) epoch through the CLI on real or
generated data."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from graph_transformers.cli import main

REPO = Path(__file__).resolve().parents[2]
SHORT = ["trainer.max_epochs=1", "trainer.limit_train_batches=2",
         "trainer.enable_progress_bar=false", "model.num_layers=1", "param_budget=null"]

# config, extra overrides, needs the shared data directory
CASES = [
    ("configs/pattern/gt.yaml",
     ["data.options={num_graphs_per_pattern: [2, 1, 1], num_patterns: 3}"], False),
    ("configs/cluster/gt.yaml", ["data.options={num_graphs: [8, 4, 4]}"], False),
    ("configs/tu/gt_mutag.yaml", [], True),
    ("configs/tu/gt_enzymes.yaml", [], True),
    ("configs/tu/gt_nci1.yaml", [], True),
    ("configs/planetoid/gt_cora.yaml", [], True),
    ("configs/planetoid/gt_citeseer.yaml", [], True),
    ("configs/tsp/gt.yaml", ["data.options={num_graphs: [3, 1, 1]}", "data.batch_size=2"], False),
    ("configs/moleculenet/gt_esol.yaml", ["data.options={max_rows: 200}"], True),
    ("configs/moleculenet/gt_tox21.yaml", ["data.options={max_rows: 400}"], True),
    ("configs/moleculenet/gt_sider.yaml", ["data.options={max_rows: 400}"], True),
    # EGT: bucketed batches, SVD/Lap encodings, the distance objective, an edge head (TSP)
    ("configs/pattern/egt_spe.yaml",
     ["data.options={num_graphs_per_pattern: [2, 1, 1], num_patterns: 3}"], False),
    ("configs/cluster/egt_spe_do.yaml", ["data.options={num_graphs: [8, 4, 4]}"], False),
    ("configs/tsp/egt.yaml", ["data.options={num_graphs: [3, 1, 1]}", "data.batch_size=2"], False),
    ("configs/moleculenet/gt_esol.yaml",
     ["data.options={max_rows: 200}", "model={name: egt, num_layers: 1, pe: svd, "
      "distance_objective: true, distance_weight: 0.05, num_virtual_nodes: 2}",
      "encodings={svd_pe: {r: 4}}"], True),
]


@pytest.mark.slow
@pytest.mark.parametrize("config, extra, needs_data", CASES, ids=[c[0] for c in CASES])
def test_config_trains_one_epoch(tmp_path, request, config, extra, needs_data):
    args = ["train", "--config", str(REPO / config), "--out", str(tmp_path / "run"),
            "--set", *SHORT, *extra]
    if needs_data:
        args += ["--data-dir", str(request.getfixturevalue("data_dir"))]
    assert main(args) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["epochs"] == 1
    value = metrics["test"][metrics["metric"]]
    assert math.isfinite(value) and value >= 0.0
    if metrics["metric"] not in ("mae", "rmse"):
        assert value <= 1.0


@pytest.mark.slow
def test_gt_trains_on_mnist_superpixels(data_dir):
    """Only the MNIST test images ship with the shared data: one epoch on graphs built from them."""
    import lightning as L
    import torch
    from torch_geometric.loader import DataLoader

    from graph_transformers.data.registry import get_spec
    from graph_transformers.datasets.images.superpixels import MNISTSuperpixels
    from graph_transformers.encodings import AddLaplacianPE
    from graph_transformers.models import GraphTransformer
    from graph_transformers.training.config import OptimConfig
    from graph_transformers.training.module import GraphTaskModule, evaluate

    torch.manual_seed(0)
    spec = get_spec("mnist")
    ds = MNISTSuperpixels(split="test", data_dir=data_dir, max_images=64,
                          pre_transform=AddLaplacianPE(4))
    model = GraphTransformer(32, 2, 4, 10, num_node_types=None, num_node_features=3,
                             num_edge_features=1, use_edge_features=True, pe="lap", pe_dim=4)
    module = GraphTaskModule(model, spec, OptimConfig(lr=1e-3, scheduler=None))
    L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False).fit(module, DataLoader(ds[:48], batch_size=16))
    result = evaluate(model, spec, DataLoader(ds[48:], batch_size=16))
    assert 0.0 <= result["accuracy"] <= 1.0 and math.isfinite(result["loss"])


@pytest.mark.slow
def test_user_csv_through_the_cli(tmp_path, data_dir, capsys):
    """--set data.path=... data.smiles_column=... data.target_columns=[...] trains on a user's CSV;
    invalid SMILES are skipped and reported."""
    import csv as _csv
    import gzip
    rows = []
    with open(data_dir / "MoleculeNet" / "esol.csv") as f:
        for i, r in enumerate(_csv.DictReader(f)):
            rows.append({"mol": r["smiles"], "sol": r["logSolubility"]})
            if i == 149:
                break
    rows[3]["mol"] = "C1CC(not a smiles"
    path = tmp_path / "mine.csv.gz"
    with gzip.open(path, "wt", newline="") as f:
        w = _csv.DictWriter(f, fieldnames=["mol", "sol"])
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "run"
    assert main(["train", "--config", str(REPO / "configs/moleculenet/gt_csv.yaml"),
                 "--out", str(out), "--set", *SHORT, f"data.path={path}",
                 "data.smiles_column=mol", "data.target_columns=[sol]"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert sum(metrics["num_graphs"].values()) == 149 and metrics["metric"] == "rmse"
    assert "skipped 1 of 150 rows" in capsys.readouterr().err
