"""Every config in ``configs/`` loads and trains one tiny epoch through the CLI
(``graph-transformers train --config ...``) and reports a finite test metric.

Kept cheap (a few seconds a config) by three choices, each stated where it is made:

* Each run trains on the first :data:`GRAPHS_PER_SPLIT` graphs of each split of the config's
  dataset (binary tasks, scored by ROC-AUC, on their whole ``max_rows``-capped val and test
  splits), and the config's encodings are computed for those graphs as a PyG ``transform``
  instead of being precomputed over the whole dataset as a ``pre_transform``
  (:func:`_small_splits`). The precomputed, cached path is trained end to end by
  ``tests/datasets/test_smoke_datasets.py`` and the encodings are tested in their own files.
* The datasets (without encodings) are built once per module in a shared cache.
* Configs that differ only in model size (``*_100k`` / ``*_500k``: ``hidden_dim``,
  ``num_layers``, ``param_budget``, ``name``, ``reference``) train once per group
  (:func:`_groups`); every config still builds its model in
  ``tests/training/test_config.py::test_every_shipped_config_validates``.

Generated datasets are shrunk through ``data.options``; datasets read from files need the shared
data directory (``$GRAPH_TRANSFORMERS_DATA`` or ``../shared/data``) and skip, saying which file
is missing, without it. The superpixel configs train on image files written for the test
(:func:`_image_files`): the shared data holds MNIST's test images only and no CIFAR-10.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from graph_transformers.cli import main
from graph_transformers.training.config import load_yaml

from conftest import shared_data_dir

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "configs").rglob("*.yaml"))
#: graphs of each split a run trains and evaluates on
GRAPHS_PER_SPLIT = 16
SHORT = ["trainer.max_epochs=1", "trainer.limit_train_batches=1", "trainer.limit_val_batches=1",
         "trainer.limit_test_batches=1", "trainer.enable_progress_bar=false",
         "model.num_layers=1", "param_budget=null"]
#: data.name → overrides that shrink a generated dataset (or the rows read of a large one)
SHRINK = {
    "pattern": ["data.options={num_graphs_per_pattern: [2, 1, 1], num_patterns: 3}"],
    "cluster": ["data.options={num_graphs: [8, 4, 4]}"],
    "tsp": ["data.options={num_graphs: [3, 1, 1]}", "data.batch_size=2"],
    "synthetic_large": ["data.options={num_nodes: 2000, avg_degree: 10}"],
    **{name: ["data.options={max_rows: 400}"]
       for name in ("esol", "freesolv", "lipo", "sider", "tox21")},  # ClinTox: all 1,478 rows
    "ogbg-molhiv": ["data.options={max_rows: 2000}"],  # 3.5% positives: some in every split
    **{name: ["data.options={max_images: 40}"] for name in ("mnist", "cifar10")},
}
#: what makes a config a model-size variant of another (dropped before grouping)
SIZE_KEYS = {"name": None, "param_budget": None, "reference": None,
             "model": ("hidden_dim", "num_layers")}


def _size_free(raw: dict) -> str:
    """A config's YAML content without what sets its model size, as a comparable string."""
    rest = {k: v for k, v in raw.items() if k not in SIZE_KEYS or SIZE_KEYS[k] is not None}
    rest["model"] = {k: v for k, v in raw.get("model", {}).items() if k not in SIZE_KEYS["model"]}
    return json.dumps(rest, sort_keys=True, default=str)


def _groups(configs: list[str]) -> dict[str, list[str]]:
    """Configs grouped by :func:`_size_free` content, keyed by the first of each group."""
    groups: dict[str, list[str]] = {}
    for config in configs:
        key = _size_free(load_yaml(REPO / config))
        groups.setdefault(key, []).append(config)
    return {members[0]: members for members in groups.values()}


GROUPS = _groups(CONFIGS)


def test_groups_cover_every_config_and_differ_only_in_size():
    assert sorted(c for members in GROUPS.values() for c in members) == CONFIGS
    for members in GROUPS.values():
        models = [load_yaml(REPO / c)["model"] for c in members]
        assert len({m["name"] for m in models}) == 1
        assert all(Path(c).parent == Path(members[0]).parent for c in members)
    assert len(GROUPS) < len(CONFIGS)  # the *_100k / *_500k pairs


@pytest.fixture(scope="module")
def smoke_cache(tmp_path_factory) -> Path:
    """One processed-data cache for the module: each dataset is built once."""
    return tmp_path_factory.mktemp("smoke-cache")


def _small_splits(monkeypatch, graphs: int) -> None:
    """Makes the run's data the first ``graphs`` graphs of each split, with the config's
    encodings computed on access (PyG ``transform``) rather than precomputed for the whole
    dataset; a dataset whose files are missing skips the test with the loader's message."""
    from torch_geometric.transforms import Compose

    from graph_transformers.data.cache import DataNotFoundError
    from graph_transformers.data.registry import build_pre_transform, load_splits, resolve_spec
    from graph_transformers.training import fit

    def resolve_data(config, dataset=None):
        assert dataset is None
        try:
            splits = load_splits(config.data, None)
        except DataNotFoundError as err:
            pytest.skip(f"data files not found: {err}")
        spec = resolve_spec(config.data)
        encode = build_pre_transform(config.encodings)
        if encode is not None and all(len(ds) <= graphs for ds in splits.values()):
            # small already (e.g. one large graph): the config's own path, encodings precomputed
            return spec, load_splits(config.data, config.encodings)
        small = {}
        for split, ds in splits.items():
            # ROC-AUC needs both labels: binary tasks are scored on whole (max_rows-capped) splits
            keep = len(ds) if spec.metric == "roc_auc" and split != "train" else graphs
            small[split] = view = ds[:keep]
            if encode is not None:
                view.transform = Compose([t for t in (encode, ds.transform) if t is not None])
        return spec, small

    monkeypatch.setattr(fit, "resolve_data", resolve_data)


def _user_files(config: str, tmp_path: Path, data_dir: Path | None) -> list[str]:
    """Overrides pointing a config that trains on the user's own file at a small one."""
    raw = load_yaml(REPO / config)
    if raw.get("data", {}).get("name") == "node_table":  # an edge list and a node table
        return _node_table_files(tmp_path)
    path = raw.get("data", {}).get("path")
    if path is None:
        return []
    if path.endswith(".pt"):  # a saved list of PyG graphs: CSL's graphs
        import torch

        from graph_transformers.datasets.synthetic.csl import generate_csl
        graphs = generate_csl(seed=0)[::3]
        target = tmp_path / "graphs.pt"
        torch.save(graphs, target)
        return [f"data.path={target}"]
    if data_dir is None:  # a molecule CSV: rows of ESOL
        pytest.skip("a molecule CSV config: the shared data (MoleculeNet/esol.csv) is not found")
    rows = []
    with open(data_dir / "MoleculeNet" / "esol.csv") as f:
        for i, row in enumerate(csv.DictReader(f)):
            rows.append({"smiles": row["smiles"], "target": row["logSolubility"]})
            if i == 199:
                break
    target = tmp_path / "molecules.csv"
    with open(target, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["smiles", "target"])
        writer.writeheader()
        writer.writerows(rows)
    cols = raw["data"]
    assert cols.get("smiles_column", "smiles") == "smiles" and cols["target_columns"] == ["target"]
    return [f"data.path={target}"]


def _node_table_files(tmp_path: Path) -> list[str]:
    """The three keys of the node-table template, pointed at a 40-node ring of two classes."""
    n = 40
    (tmp_path / "edges.csv").write_text("".join(f"n{i},n{(i + 1) % n}\n" for i in range(n)))
    (tmp_path / "nodes.csv").write_text("id,label,f\n" + "".join(
        f"n{i},{'ab'[i % 2]},{i % 2 + 0.1 * (i % 3)}\n" for i in range(n)))
    return [f"data.edges={tmp_path / 'edges.csv'}", f"data.nodes={tmp_path / 'nodes.csv'}",
            "data.split=random:0.6,0.2,0.2"]


def _idx(path: Path, array, kind: int) -> None:
    """Writes an uncompressed IDX file (MNIST's format: ``0x0008``, ``kind`` dims, big-endian
    sizes, then the unsigned bytes)."""
    import numpy as np
    header = bytes([0, 0, 8, kind]) + np.array(array.shape, dtype=">i4").tobytes()
    path.write_bytes(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def _image_files(name: str, tmp_path: Path, data_dir: Path | None) -> Path | None:
    """A data directory for the superpixel configs, whose training images the shared data does
    not hold: MNIST's training files are written from its test images (the validation split is
    the first 5,000 training images, so 5,000 + 40 are written), CIFAR-10's batches from smooth
    synthetic images (``tests/datasets/test_superpixels.py``). ``None`` for other datasets."""
    import numpy as np
    root = tmp_path / "images"
    if name == "mnist":
        if data_dir is None or not (data_dir / "MNIST" / "t10k-images-idx3-ubyte.gz").is_file():
            pytest.skip("MNIST configs: the shared data's MNIST test images are not found")
        from graph_transformers.datasets.images.image_files import read_mnist
        images, labels = read_mnist(data_dir / "MNIST" / "t10k-images-idx3-ubyte.gz",
                                    data_dir / "MNIST" / "t10k-labels-idx1-ubyte.gz")
        folder = root / "MNIST"
        folder.mkdir(parents=True)
        for split, (img, lab) in {"t10k": (images, labels),
                                  "train": (images[:5040], labels[:5040])}.items():
            _idx(folder / f"{split}-images-idx3-ubyte", img, 3)
            _idx(folder / f"{split}-labels-idx1-ubyte", lab, 1)
        return root
    if name == "cifar10":
        from graph_transformers.datasets.images.image_files import CIFAR10_FOLDER
        from test_superpixels import _synthetic_cifar, _write_batch
        folder = root / "CIFAR10" / CIFAR10_FOLDER
        folder.mkdir(parents=True)
        data, labels = _synthetic_cifar(80, seed=0)
        _write_batch(folder / "test_batch", data[:40], labels[:40], bytes_keys=True)
        # training images 0-4999 (validation: the first 40 read) and 5000-5039 (training)
        train = np.zeros((5040, 3072), np.uint8)
        train[:40], train[5000:] = data[:40], data[40:]
        train_labels = (labels[:40] + [0] * 4960 + labels[40:])
        for k in range(5):
            sl = slice(k * 1008, (k + 1) * 1008)
            _write_batch(folder / f"data_batch_{k + 1}", train[sl], train_labels[sl],
                         bytes_keys=False)
        return root
    return None


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(GROUPS), ids=lambda c: c.removeprefix("configs/"))
def test_config_trains_a_smoke_epoch(config, tmp_path, smoke_cache, monkeypatch):
    monkeypatch.setenv("GRAPH_TRANSFORMERS_CACHE", str(smoke_cache))
    _small_splits(monkeypatch, GRAPHS_PER_SPLIT)
    data_dir = shared_data_dir()
    name = load_yaml(REPO / config).get("data", {}).get("name")
    args = ["train", "--config", str(REPO / config), "--out", str(tmp_path / "run"),
            "--set", *SHORT, *SHRINK.get(name, []), *_user_files(config, tmp_path, data_dir)]
    data_root = _image_files(name, tmp_path, data_dir) or data_dir
    if data_root is not None:
        args += ["--data-dir", str(data_root)]
    assert main(args) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["epochs"] == 1
    # a predict-only test split (PCQM4M's: no labels) has no metric: check the validation one
    split = "val" if "test" in (metrics.get("predict_only") or {}) else "test"
    value = metrics[split][metrics["metric"]]
    assert math.isfinite(value) and value >= 0.0, metrics[split]
    if metrics["metric"] not in ("mae", "rmse"):
        assert value <= 1.0, metrics[split]
