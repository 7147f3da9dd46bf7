"""PCQM-Contact (LRGB, issue 57 item 1b) on tiny fixtures written here in exactly LRGB's
published layout (``pcqmcontact/{train,val,test}.pt``, each a ``torch.save``\\ d list of
``(x, edge_attr, edge_index, edge_label_index, edge_label)`` tuples; also PyG's
``pcqm-contact/raw/``): the graphs and the contacts are the files', the negative pairs follow
LRGB's ``resample_negative`` (redrawn in ``train``, fixed in ``val`` / ``test``), a missing,
malicious or damaged file is a one-line error (the malicious one is never run), and one epoch
through the CLI reports the filtered MRR for the MPNN and GPS models. Nothing is downloaded."""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch
from conftest import train_one_epoch
from torch_geometric.loader import DataLoader

from graph_transformers.data.cache import DataNotFoundError
from graph_transformers.data.registry import get_spec
from graph_transformers.datasets.lrgb.pcqm_contact import (NEGATIVES_PER_POSITIVE,
                                                           PCQM_CONTACT_URL, ContactNegatives,
                                                           load_pcqm_contact,
                                                           read_contact_graphs)
from graph_transformers.datasets.lrgb.peptides import (OGB_ATOM_FEATURE_DIMS,
                                                       OGB_BOND_FEATURE_DIMS)
from graph_transformers.errors import DataError

SIZES = {"train": 8, "val": 3, "test": 3}


def _graph(n: int, g: torch.Generator) -> tuple:
    """A chain molecule of ``n`` atoms as LRGB stores it: OGB features, both bond directions,
    contacts ``(i, i + 5)`` both ways (label 1, int32 as LRGB writes it) and two file negatives
    (label 0)."""
    x = torch.stack([torch.randint(0, d, (n,), generator=g) for d in OGB_ATOM_FEATURE_DIMS], 1)
    i = torch.arange(n - 1)
    edge_index = torch.stack([torch.cat([i, i + 1]), torch.cat([i + 1, i])])
    edge_attr = torch.stack([torch.randint(0, d, (edge_index.size(1),), generator=g)
                             for d in OGB_BOND_FEATURE_DIMS], 1)
    a = torch.arange(n - 5)
    pos = torch.cat([torch.stack([a, a + 5]), torch.stack([a + 5, a])], dim=1)
    neg = torch.tensor([[0, 1], [1, 2]])
    label = torch.cat([torch.ones(pos.size(1)), torch.zeros(2)]).int()
    return x, edge_attr, edge_index, torch.cat([pos, neg], dim=1), label


def write_contact(data_dir: Path, pyg_layout: bool = False) -> dict[str, list[tuple]]:
    folder = data_dir / ("pcqm-contact/raw" if pyg_layout else "pcqmcontact")
    folder.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    written = {}
    for split, count in SIZES.items():
        graphs = [_graph(7 + k, g) for k in range(count)]
        torch.save(graphs, folder / f"{split}.pt")
        written[split] = graphs
    return written


def _pairs(index: torch.Tensor) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in index.t()}


def test_the_official_layout_loads_the_graphs_and_contacts(tmp_path):
    data = tmp_path / "data"
    written = write_contact(data)
    for split, graphs in written.items():
        ds = load_pcqm_contact(tmp_path / "cache", split, data_dir=data)
        assert len(ds) == len(graphs) and ds.provenance == {split: "exact"}
        assert ds.canonical_info["split"] == f"LRGB's {split}.pt"
        for d, (x, edge_attr, edge_index, pairs, label) in zip(ds, graphs):
            assert torch.equal(d.x, x.long()) and torch.equal(d.edge_attr, edge_attr.long())
            assert torch.equal(d.edge_index, edge_index)
            pos = _pairs(d.edge_label_index[:, d.edge_label == 1])
            assert pos == _pairs(pairs[:, label == 1])  # the file's contacts, only those
            neg = d.edge_label_index[:, d.edge_label == 0]
            # LRGB's structured negatives: sources are contact sources, no negative is a contact
            assert not _pairs(neg) & pos and set(neg[0].tolist()) <= {a for a, _ in pos}
            assert 0 < neg.size(1) <= NEGATIVES_PER_POSITIVE * len(pos)
            assert len(_pairs(neg)) == neg.size(1)  # no duplicates


def test_train_negatives_are_redrawn_and_eval_negatives_fixed(tmp_path):
    data = tmp_path / "data"
    write_contact(data)
    train = load_pcqm_contact(tmp_path / "cache", "train", data_dir=data)
    torch.manual_seed(0)
    draws = [train[3].edge_label_index for _ in range(6)]
    assert any(not torch.equal(draws[0], d) for d in draws[1:])
    val = load_pcqm_contact(tmp_path / "cache", "val", data_dir=data)
    assert torch.equal(val[1].edge_label_index, val[1].edge_label_index)
    # the same draw when processed again elsewhere (seeded, not the global RNG's state)
    torch.manual_seed(123)
    again = load_pcqm_contact(tmp_path / "other-cache", "val", data_dir=data)
    assert all(torch.equal(a.edge_label_index, b.edge_label_index) for a, b in zip(val, again))


def test_batching_offsets_the_pairs_and_pyg_s_layout_loads(tmp_path):
    data = tmp_path / "data"
    write_contact(data, pyg_layout=True)
    ds = load_pcqm_contact(tmp_path / "cache", "test", data_dir=data)
    assert ds.canonical_info["files"] == str(data / "pcqm-contact" / "raw")
    batch = next(iter(DataLoader(ds, batch_size=3)))
    offset = 0
    cols = 0
    for d in ds:
        k = d.edge_label_index.size(1)
        assert torch.equal(batch.edge_label_index[:, cols:cols + k], d.edge_label_index + offset)
        offset, cols = offset + d.num_nodes, cols + k
    spec = get_spec("pcqm-contact")
    assert (spec.level, spec.task, spec.out_dim, spec.metric) == ("pair", "binary", 1, "mrr")
    assert spec.node_types == OGB_ATOM_FEATURE_DIMS and spec.edge_types == OGB_BOND_FEATURE_DIMS


def test_ogb_feature_vocabularies_are_ogb_s():
    features = pytest.importorskip("ogb.utils.features")
    assert list(OGB_ATOM_FEATURE_DIMS) == features.get_atom_feature_dims()
    assert list(OGB_BOND_FEATURE_DIMS) == features.get_bond_feature_dims()


def test_the_negative_sampler_never_draws_a_contact():
    from torch_geometric.data import Data
    pos = torch.tensor([[0, 0, 0, 1], [1, 2, 3, 0]])  # node 0 touches every other node
    d = Data(num_nodes=4, edge_label_index=pos, edge_label=torch.ones(4, dtype=torch.long))
    torch.manual_seed(1)
    for _ in range(20):
        out = ContactNegatives()(d.clone())
        neg = out.edge_label_index[:, out.edge_label == 0]
        assert not _pairs(neg) & _pairs(pos)
        assert _pairs(neg[:, neg[0] == 0]) <= {(0, 0)}  # only itself is left for node 0
    assert torch.equal(out.edge_label_index[:, out.edge_label == 1], pos)


def test_missing_files_are_one_line_errors(tmp_path):
    with pytest.raises(DataNotFoundError) as err:
        load_pcqm_contact(tmp_path / "cache", "train", data_dir=tmp_path / "empty")
    text = str(err.value)
    assert "\n" not in text and "pcqmcontact/{train,val,test}.pt" in text
    assert str(tmp_path / "empty" / "pcqm-contact" / "raw") in text and PCQM_CONTACT_URL in text
    with pytest.raises(DataNotFoundError, match="no data directory"):
        load_pcqm_contact(tmp_path / "cache", "train")


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_malicious_file_is_refused_and_never_run(tmp_path):
    data = tmp_path / "data"
    write_contact(data)
    marker = tmp_path / "ran"
    torch.save([_Payload(marker)], data / "pcqmcontact" / "val.pt")
    with pytest.raises(DataError) as err:
        load_pcqm_contact(tmp_path / "cache", "val", data_dir=data)
    text = str(err.value)
    assert "\n" not in text and text.startswith("refusing to load") and "system" in text
    assert not marker.exists()


def test_damaged_or_malformed_files_are_one_line_errors(tmp_path):
    data = tmp_path / "data"
    written = write_contact(data)
    path = data / "pcqmcontact" / "train.pt"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError, match="not a torch file or damaged") as err:
        read_contact_graphs(path)
    assert "\n" not in str(err.value)

    def refused(graphs, match):
        torch.save(graphs, path)
        with pytest.raises(DataError, match=match) as info:
            read_contact_graphs(path)
        assert "\n" not in str(info.value)

    x, edge_attr, edge_index, pairs, label = written["train"][2]
    refused({"train": []}, "not LRGB's list")
    refused([(x, edge_attr, edge_index, pairs)], "graph 0 is a 4-tuple")
    refused([(x[:, :8], edge_attr, edge_index, pairs, label)], r"x has shape \[9, 8\]")
    big = x.clone()
    big[4, 0] = 119
    refused([(big, edge_attr, edge_index, pairs, label)],
            "x column 0 holds 119, outside OGB's vocabulary 0..118")
    refused([(x, edge_attr[:-1], edge_index, pairs, label)], "edge_attr has 15 rows for 16 edges")
    refused([(x, edge_attr, edge_index, pairs + 5, label)], "edge_label_index holds node id")
    refused([(x, edge_attr, edge_index, pairs, label[:-1])], "edge_label has 9 entries for 10")
    refused([(x, edge_attr, edge_index, pairs, label * 2)], "values other than 0 and 1")
    loop = pairs.clone()
    loop[1, 0] = loop[0, 0]
    refused([(x, edge_attr, edge_index, loop, label)], "an atom in contact with itself")


@pytest.mark.slow
@pytest.mark.parametrize("model", [
    "{name: gcn, hidden_dim: 16, num_layers: 2, mlp_layers: 0}",
    "{name: gatedgcn, hidden_dim: 16, num_layers: 2, use_edge_features: true, mlp_layers: 0}",
    "{name: gps, hidden_dim: 16, num_layers: 1, num_heads: 2, mpnn: gatedgcn, attention: full, "
    "use_edge_features: true, pe: lap, pe_embed_dim: 4, norm_position: post, mlp_layers: 0}"])
def test_one_epoch_through_the_cli_reports_the_filtered_mrr(model, tmp_path):
    data = tmp_path / "data"
    write_contact(data)
    metrics = train_one_epoch(tmp_path, data, "pcqm-contact", model)
    assert metrics["metric"] == "mrr" and metrics["epochs"] == 1
    assert metrics["num_graphs"] == SIZES
    for split in ("train", "val", "test"):
        value = metrics[split]["mrr"]
        # each graph has at most 9 atoms: a contact's rank is at most 9
        assert math.isfinite(value) and 1 / 9 <= value <= 1.0, metrics[split]
