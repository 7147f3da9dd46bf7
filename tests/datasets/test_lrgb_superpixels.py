"""PascalVOC-SP and COCO-SP (LRGB, issue 57 item 1b) on tiny fixtures written here in exactly
LRGB's published layout (``voc_superpixels_edge_wt_region_boundary/{train,val,test}.pickle``,
each a pickled list of ``(x, edge_attr, edge_index, y)`` tensor tuples; also PyG's
``pascalvoc-sp/raw/``): the graphs and splits are the files', COCO's category ids are mapped to
0..80 as LRGB's loader maps them, a missing, malicious or damaged pickle is a one-line error
(the malicious one is never run), and one epoch through the CLI reports the macro F1. Nothing
is downloaded (the test environment is offline, ``conftest.py``)."""
from __future__ import annotations

import math
import os
import pickle
from pathlib import Path

import pytest
import torch
from conftest import train_one_epoch

from graph_transformers.data.cache import DataNotFoundError
from graph_transformers.data.registry import get_spec
from graph_transformers.datasets.lrgb.superpixels_sp import (COCO_CATEGORY_IDS, SP_DATASETS,
                                                             load_coco_sp, load_pascalvoc_sp,
                                                             read_superpixel_graphs)
from graph_transformers.errors import DataError

SIZES = {"train": 6, "val": 3, "test": 3}


def _graph(n: int, g: torch.Generator, labels: list[int]) -> tuple:
    """A ring of ``n`` superpixels as LRGB stores it: x [n, 14], edge_attr [2n, 2] float,
    edge_index [2, 2n] both directions, y [n]."""
    x = torch.rand(n, 14, generator=g)
    i = torch.arange(n)
    edge_index = torch.stack([torch.cat([i, (i + 1) % n]), torch.cat([(i + 1) % n, i])])
    edge_attr = torch.rand(edge_index.size(1), 2, generator=g)
    y = torch.tensor(labels)[torch.randint(0, len(labels), (n,), generator=g)]
    return x, edge_attr, edge_index, y


def write_sp(data_dir: Path, name: str, pyg_layout: bool = False) -> dict[str, list[tuple]]:
    """LRGB's files of ``name``: the unpacked zip's folder (or PyG's ``<name>/raw/``)."""
    info = SP_DATASETS[name]
    folder = data_dir / (f"{info.pyg_name}/raw" if pyg_layout else info.folder)
    folder.mkdir(parents=True, exist_ok=True)
    labels = list(COCO_CATEGORY_IDS) if name == "coco-sp" else list(range(21))
    g = torch.Generator().manual_seed(0)
    written = {}
    for split, count in SIZES.items():
        graphs = [_graph(12 + 3 * k, g, labels) for k in range(count)]
        with open(folder / f"{split}.pickle", "wb") as f:
            pickle.dump(graphs, f)
        written[split] = graphs
    return written


@pytest.mark.parametrize("name, load", [("pascalvoc-sp", load_pascalvoc_sp),
                                        ("coco-sp", load_coco_sp)])
def test_the_official_layout_loads_exactly(name, load, tmp_path):
    data = tmp_path / "data"
    written = write_sp(data, name)
    for split, graphs in written.items():
        ds = load(tmp_path / "cache", split, data_dir=data)
        assert len(ds) == len(graphs) and ds.provenance == {split: "exact"}
        for d, (x, edge_attr, edge_index, y) in zip(ds, graphs):
            assert d.x.dtype == torch.float32 and torch.equal(d.x, x)
            assert d.edge_attr.dtype == torch.float32 and torch.equal(d.edge_attr, edge_attr)
            assert d.edge_index.dtype == torch.long and torch.equal(d.edge_index, edge_index)
            if name == "coco-sp":  # category ids -> their position in COCO_CATEGORY_IDS
                want = torch.tensor([COCO_CATEGORY_IDS.index(int(v)) for v in y])
            else:
                want = y
            assert d.y.dtype == torch.long and torch.equal(d.y, want)
        assert ds.canonical_info["split"] == f"LRGB's {split}.pickle"
        assert ds.canonical_info["files"] == str(data / SP_DATASETS[name].folder)


def test_coco_category_ids_map_to_81_contiguous_classes():
    assert len(COCO_CATEGORY_IDS) == 81 and list(COCO_CATEGORY_IDS) == sorted(COCO_CATEGORY_IDS)
    assert COCO_CATEGORY_IDS[0] == 0 and COCO_CATEGORY_IDS[-1] == 90
    # the 10 ids COCO 2017 leaves out
    assert sorted(set(range(91)) - set(COCO_CATEGORY_IDS)) == [12, 26, 29, 30, 45, 66, 68, 69,
                                                               71, 83]


def test_pyg_s_layout_and_the_spec(tmp_path):
    data = tmp_path / "data"
    written = write_sp(data, "pascalvoc-sp", pyg_layout=True)
    ds = load_pascalvoc_sp(tmp_path / "cache", "val", data_dir=data)
    assert len(ds) == len(written["val"])
    assert ds.canonical_info["files"] == str(data / "pascalvoc-sp" / "raw")
    for name, classes in (("pascalvoc-sp", 21), ("coco-sp", 81)):
        spec = get_spec(name)
        assert (spec.level, spec.task, spec.out_dim, spec.metric, spec.loss) == (
            "node", "classification", classes, "f1_macro", "weighted_ce")
        assert (spec.node_dim, spec.edge_dim, spec.node_types, spec.edge_types) == (14, 2, None,
                                                                                   None)


def test_missing_files_are_one_line_errors(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        load_pascalvoc_sp(tmp_path / "cache", "train", data_dir=tmp_path / "empty")
    text = str(err.value)
    assert "\n" not in text
    assert "voc_superpixels_edge_wt_region_boundary/{train,val,test}.pickle" in text
    assert str(tmp_path / "empty" / "pascalvoc-sp" / "raw") in text
    assert SP_DATASETS["pascalvoc-sp"].url in text
    with pytest.raises(DataNotFoundError, match="no data directory"):
        load_coco_sp(tmp_path / "cache", "train")


class _Payload:
    """Pickles as a call of ``os.system`` (a pickle may name any function)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_malicious_pickle_is_refused_and_never_run(tmp_path):
    data = tmp_path / "data"
    write_sp(data, "pascalvoc-sp")
    marker = tmp_path / "ran"
    path = data / SP_DATASETS["pascalvoc-sp"].folder / "train.pickle"
    with open(path, "wb") as f:
        pickle.dump([_Payload(marker)], f)
    with pytest.raises(DataError) as err:
        load_pascalvoc_sp(tmp_path / "cache", "train", data_dir=data)
    text = str(err.value)
    assert "\n" not in text and text.startswith("refusing to load PascalVOC-SP file")
    assert "system" in text and not marker.exists()


def test_damaged_or_malformed_pickles_are_one_line_errors(tmp_path):
    data = tmp_path / "data"
    written = write_sp(data, "pascalvoc-sp")
    path = data / SP_DATASETS["pascalvoc-sp"].folder / "train.pickle"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])  # truncated
    with pytest.raises(DataError, match="not a pickle or damaged") as err:
        read_superpixel_graphs(path)
    assert "\n" not in str(err.value)

    def refused(graphs, match, name="pascalvoc-sp"):
        with open(path, "wb") as f:
            pickle.dump(graphs, f)
        with pytest.raises(DataError, match=match) as info:
            read_superpixel_graphs(path, name)
        assert "\n" not in str(info.value)

    x, edge_attr, edge_index, y = written["train"][1]
    refused({"graphs": []}, "not LRGB's list")
    refused([], "holds no graph")
    refused([written["train"][0], (x, edge_attr, edge_index)], r"graph 1 is a 3-tuple")
    refused([(x[:, :13], edge_attr, edge_index, y)], r"graph 0: x has shape \[15, 13\]")
    refused([(x, edge_attr[:, :1], edge_index, y)], r"edge_attr has shape \[30, 1\]")
    bad = edge_index.clone()
    bad[0, 3] = x.size(0)
    refused([(x, edge_attr, bad, y)], "edge_index holds node id 15 outside the graph's 15 nodes")
    refused([(x, edge_attr, edge_index, y[:-1])], "y has 14 labels for 15 nodes")
    refused([(x, edge_attr, edge_index, torch.full_like(y, 21))], r"label 21 outside 0..20")
    nan = x.clone()
    nan[0, 0] = float("nan")
    refused([(nan, edge_attr, edge_index, y)], "x holds non-finite values")
    refused([(x, edge_attr, edge_index, torch.full_like(y, 12))],
            "label 12 is not one of COCO-SP's 81 category ids", name="coco-sp")
    # NumPy arrays and label lists, as older pickles may hold them, are read alike
    with open(path, "wb") as f:
        pickle.dump([(x.numpy(), edge_attr.numpy(), edge_index.numpy(), y.tolist())], f)
    (d,) = read_superpixel_graphs(path)
    assert torch.equal(d.x, x) and torch.equal(d.y, y) and torch.equal(d.edge_index, edge_index)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pascalvoc-sp", "coco-sp"])
def test_one_epoch_through_the_cli_reports_macro_f1(name, tmp_path):
    data = tmp_path / "data"
    write_sp(data, name)
    model = ("{name: gps, hidden_dim: 16, num_layers: 1, num_heads: 2, mpnn: gatedgcn, "
             "attention: full, use_edge_features: true, pe: lap, pe_embed_dim: 4, "
             "norm_position: post, mlp_layers: 1}")
    metrics = train_one_epoch(tmp_path, data, name, model)
    assert metrics["metric"] == "f1_macro" and metrics["epochs"] == 1
    assert metrics["num_graphs"] == SIZES
    for split in ("train", "val", "test"):
        value = metrics[split]["f1_macro"]
        assert math.isfinite(value) and 0.0 <= value <= 1.0, metrics[split]
