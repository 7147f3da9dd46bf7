"""The split on the device (``data.on_device``, :mod:`graph_transformers.data.device_split`):
batches gathered from the stored split equal PyG ``DataLoader``'s batches of the same graphs
(every key, value, dtype, collation table), the loader covers each graph once per epoch and
consumes the RNG as the ``DataLoader`` does, a model's loss is the same on both batches, a run
with ``data.on_device: true`` gives the same metrics as without, and what cannot be stored gets
a one-line error. All on the CPU (and on PyTorch's ``meta`` device, where reading a value would
fail: the batch is built without reading any device value)."""
from __future__ import annotations

import pytest
import torch
from torch.utils.data import BatchSampler, RandomSampler
from torch_geometric.data import Batch, Data, HeteroData
from torch_geometric.loader import DataLoader

from graph_transformers.core.dense import host_num_nodes
from graph_transformers.data.device_split import DeviceLoader, DeviceSplit
from graph_transformers.data.sampler import SizeBucketBatchSampler, graph_sizes
from graph_transformers.device_check import synthetic_molecules
from graph_transformers.errors import ConfigError, DataError
from graph_transformers.training.config import build_config
from graph_transformers.training.splits import resolve_data

#: a GPS config whose encodings cover node (LapPE, RWSE, SVD), pair (SPD, pair edges, RRWP)
#: and graph-level (y) attributes
MODEL = {"name": "gps", "pe": "rwse", "pe_embed_dim": 4, "use_edge_features": True,
         "hidden_dim": 16, "num_layers": 1, "num_heads": 2}
ENCODINGS = {"rwse": {"walk_length": 4}, "lap_pe": {"k": 4}, "svd_pe": {"r": 2},
             "spd": {"max_distance": 3}, "rrwp": {"walk_length": 3}}


def _config(on_device: bool = False, **data):
    return build_config({"name": "on-device", "model": MODEL, "encodings": ENCODINGS,
                         "data": {"batch_size": 8, "task": "regression",
                                  "on_device": on_device, **data},
                         "optim": {"lr": 1e-3}, "seed": 0,
                         "trainer": {"max_epochs": 2, "enable_progress_bar": False}})


@pytest.fixture(scope="module")
def split():
    """The training split of 48 ZINC-shaped molecules with the library's cached encodings."""
    _, splits = resolve_data(_config(), synthetic_molecules(48, seed=3))
    return splits["train"]


class PairData(Data):
    """A ``Data`` subclass with its own increment: ``pair_index`` (indices into the graph's
    ``n²`` pairs) is shifted by ``n²``, which no attribute name tells."""

    def __inc__(self, key, value, *args, **kwargs):
        if key == "pair_ref":
            return self.num_nodes * self.num_nodes
        return super().__inc__(key, value, *args, **kwargs)


def _odd_graphs(num: int = 12) -> list[Data]:
    """Graphs with every kind of attribute PyG collates: node, edge, graph (0-dim and
    ``[1, d]``) and pair tensors, an increment of a subclass, Python numbers, strings, a graph
    with no edges and one with a single node."""
    g = torch.Generator().manual_seed(0)
    graphs = []
    for i in range(num):
        n = 1 if i == 5 else int(torch.randint(2, 7, (1,), generator=g))
        m = 0 if i == 3 else int(torch.randint(1, 9, (1,), generator=g))
        graphs.append(PairData(
            x=torch.randn(n, 3, generator=g), edge_index=torch.randint(0, n, (2, m), generator=g),
            edge_attr=torch.randint(0, 4, (m,), generator=g), y=torch.tensor(float(i)),
            u=torch.randn(1, 2, generator=g), pair=torch.randn(n * n, generator=g),
            pair_ref=torch.randint(0, n * n, (3,), generator=g), weight=0.5 * i, label=i,
            name=f"g{i}", num_nodes=n))
    return graphs


def assert_same_batch(a: Batch, b: Batch) -> None:
    """``a`` equals ``b``: keys in order, values, dtypes, graph count, collation tables."""
    assert type(a).__name__ == type(b).__name__
    assert list(a._store.keys()) == list(b._store.keys())
    for key in b._store.keys():
        va, vb = a[key], b[key]
        if isinstance(vb, torch.Tensor):
            assert va.dtype == vb.dtype and va.shape == vb.shape, key
            assert torch.equal(va.cpu(), vb), key
        else:
            assert va == vb, key
    assert a.num_graphs == b.num_graphs
    assert getattr(a._store, "_num_nodes", None) == getattr(b._store, "_num_nodes", None)
    assert a._slice_dict.keys() == b._slice_dict.keys()
    for key, sl in b._slice_dict.items():
        assert a._slice_dict[key].device.type == "cpu" and torch.equal(a._slice_dict[key], sl)
    for key, inc in b._inc_dict.items():
        assert (inc is None and a._inc_dict[key] is None) or torch.equal(a._inc_dict[key], inc)


INDEX_LISTS = [[0], [5, 3, 17, 0], [2, 2, 7], list(range(30)), [29, 1, 14, 8, 8, 22]]


@pytest.mark.parametrize("index", INDEX_LISTS)
def test_batch_equals_pyg_collation_with_encodings(split, index):
    stored = DeviceSplit(split)
    expected = Batch.from_data_list([split[i] for i in index])
    got = stored.batch(index)
    assert {"lap_pe", "rwse", "svd_pe", "spd", "pair_edge", "rrwp", "rrwp_pair",
            "edge_attr"} <= set(got.keys())
    assert_same_batch(got, expected)
    assert torch.equal(host_num_nodes(got), torch.diff(expected.ptr))
    for k in range(len(index)):  # PyG separates the batch back into the stored graphs
        assert_same_batch(Batch.from_data_list([got.get_example(k)]),
                          Batch.from_data_list([split[index[k]]]))


@pytest.mark.parametrize("index", [[0], [3, 5, 1], [11, 0, 4, 4, 9, 2, 7]])
def test_batch_equals_pyg_for_every_attribute_kind(index):
    graphs = _odd_graphs()
    got = DeviceSplit(graphs).batch(index)
    expected = Batch.from_data_list([graphs[i] for i in index])
    assert_same_batch(got, expected)
    assert got.name == [f"g{i}" for i in index]


def test_batch_reads_no_device_value():
    """On the ``meta`` device a value read (``.item()``, ``.cpu()``, a Python branch) fails, so
    a batch built there proves that sizes come from the host tables alone."""
    graphs = _odd_graphs()
    got = DeviceSplit(graphs, "meta").batch([4, 0, 7])
    expected = Batch.from_data_list([graphs[i] for i in (4, 0, 7)])
    assert got.x.device.type == "meta" and got.batch.device.type == "meta"
    for key in ("x", "edge_index", "pair", "pair_ref", "batch", "ptr"):
        assert got[key].shape == expected[key].shape and got[key].dtype == expected[key].dtype
    assert torch.equal(host_num_nodes(got), torch.diff(expected.ptr))


def _epoch_ids(loader) -> list[list[float]]:
    return [b.y.view(-1).tolist() for b in loader]


def test_loader_covers_each_graph_once_deterministic_per_seed(split):
    def loader(seed):
        return DeviceLoader(split, batch_size=7, shuffle=True,
                            generator=torch.Generator().manual_seed(seed))
    targets = sorted(float(split[i].y) for i in range(len(split)))
    first = loader(0)
    assert len(first) == -(-len(split) // 7)
    epochs = [_epoch_ids(first) for _ in range(2)]
    for epoch in epochs:
        assert sorted(v for b in epoch for v in b) == targets  # every graph once
    assert epochs[0] != epochs[1]  # a new order each epoch
    assert _epoch_ids(loader(0)) == epochs[0]  # the same seed, the same batches
    assert _epoch_ids(loader(1)) != epochs[0]


def test_loader_equals_dataloader_with_the_bucketing_sampler(split):
    def sampler():
        return SizeBucketBatchSampler(graph_sizes(split), 6, window=2, seed=4)
    ours = DeviceLoader(split, batch_sampler=sampler())
    theirs = DataLoader(split, batch_sampler=sampler())
    assert len(ours) == len(theirs)
    for _ in range(2):  # two epochs: the sampler's epoch advances in both
        pairs = list(zip(ours, theirs, strict=True))
        for a, b in pairs:
            assert_same_batch(a, b)


def test_loader_consumes_the_global_rng_as_the_dataloader(split):
    """Shuffled from the global RNG, with a draw per epoch as the DataLoader's worker seed: the
    same batches, and the same RNG state afterwards (so the same dropout masks follow)."""
    runs = []
    for make in (lambda: DataLoader(split, batch_size=5, shuffle=True),
                 lambda: DeviceLoader(split, batch_size=5, shuffle=True)):
        torch.manual_seed(11)
        loader = make()
        runs.append(([_epoch_ids(loader) for _ in range(2)], torch.rand(3)))
    assert runs[0][0] == runs[1][0]
    assert torch.equal(runs[0][1], runs[1][1])
    # Lightning calls iter() once on a loader that is not a DataLoader, to check it: that
    # iterator is never advanced and must draw nothing
    torch.manual_seed(11)
    iter(DeviceLoader(split, batch_size=5, shuffle=True))
    assert torch.equal(torch.rand(3), (torch.manual_seed(11), torch.rand(3))[1])


def test_model_loss_is_the_same_on_the_stored_batch(split):
    from graph_transformers.training.build import make_model, make_task
    config = _config()
    spec, _ = resolve_data(config, synthetic_molecules(48, seed=3))
    torch.manual_seed(0)
    model = make_model(config, spec, split).eval()
    task = make_task(config, spec, split, model)
    sampler = BatchSampler(RandomSampler(range(len(split)),
                                         generator=torch.Generator().manual_seed(2)), 9, False)
    index = next(iter(sampler))
    ours = DeviceLoader(split, batch_sampler=[index])
    theirs = DataLoader(split, batch_sampler=[index])
    a, b = next(iter(ours)), next(iter(theirs))
    with torch.no_grad():
        loss_a, loss_b = task.loss(model(a), a), task.loss(model(b), b)
    assert torch.isfinite(loss_b) and torch.equal(loss_a, loss_b)


def test_run_with_on_device_gives_the_same_metrics(tmp_path):
    """Same seed, same batches, same RNG draws: the same training losses and metrics, bit for
    bit (the evaluation batches are the same too)."""
    import csv

    import graph_transformers as gtr
    graphs = synthetic_molecules(48, seed=1)
    results = {}
    for on in (False, True):
        cfg = _config(on).to_dict()
        cfg["model"]["dropout"] = 0.1  # dropout draws from the global RNG: its stream must match
        cfg["encodings"] = {"rwse": {"walk_length": 4}, "lap_pe": None}
        metrics = gtr.train(cfg, dataset=graphs, out_dir=tmp_path / str(on))
        with open(tmp_path / str(on) / "epochs.csv") as f:
            losses = [r["train/loss"] for r in csv.DictReader(f)]
        results[on] = (losses, metrics["val"], metrics["test"])
    assert len(results[True][0]) == 2
    assert results[True] == results[False]


def test_make_loader_uses_the_device_loader_and_refuses_what_it_cannot_store(split):
    from graph_transformers.training.loaders import make_loader
    loader = make_loader(_config(True), split, "train")
    assert isinstance(loader, DeviceLoader) and loader.dataset is split
    assert len(loader) == len(make_loader(_config(False), split, "train"))
    val = make_loader(_config(True), split, "val")
    assert_same_batch(next(iter(val)), next(iter(make_loader(_config(False), split, "val"))))
    with pytest.raises(ConfigError, match="data.on_device") as err:
        make_loader(_config(True, num_neighbors=[5]), split, "train")
    assert "\n" not in str(err.value)

    class WithTransform(list):
        transform = staticmethod(lambda d: d)
    with pytest.raises(ConfigError, match="transform on every access") as err:
        make_loader(_config(True), WithTransform(split[i] for i in range(4)), "train")
    assert "\n" not in str(err.value)


def test_static_shapes_on_the_device_equal_the_static_loader(split):
    """``data.static_shapes`` with ``data.on_device``: the packing sampler drives the device
    loader and the padding is applied to the gathered batch: the static loader's batches."""
    from graph_transformers.training.loaders import make_loader
    pytest.importorskip("graph_transformers.data.static_shapes")
    ours = make_loader(_config(True, static_shapes=True), split, "train")
    theirs = make_loader(_config(False, static_shapes=True), split, "train")
    assert isinstance(ours, DeviceLoader)
    for a, b in zip(ours, theirs, strict=True):
        assert_same_batch(a, b)
        assert int(a.static_max_nodes) == int(b.static_max_nodes)


def _bad(kind: str):
    graphs = _odd_graphs(4)
    if kind == "empty":
        return []
    if kind == "keys":
        del graphs[2].u
    elif kind == "hetero":
        h = HeteroData()
        h["a"].x = torch.zeros(2, 1)
        return [h]
    elif kind == "edge_index_class":
        from torch_geometric import EdgeIndex
        graphs[0].edge_index = EdgeIndex(graphs[0].edge_index,
                                         sparse_size=(graphs[0].num_nodes,) * 2)
    elif kind == "shapes":
        graphs[1].x = torch.zeros(graphs[1].num_nodes, 5)
    elif kind == "dict":
        for g in graphs:
            g.extra = {"a": torch.zeros(1)}
    elif kind == "dtype":
        graphs[2].edge_attr = graphs[2].edge_attr.int()
    elif kind == "number":
        graphs[1].label = 0.5
    return graphs


@pytest.mark.parametrize("kind,match", [
    ("empty", "no graphs"), ("keys", "other attributes"), ("hetero", "HeteroData"),
    ("edge_index_class", "EdgeIndex"), ("shapes", "do not concatenate"),
    ("dict", "dict of tensors"), ("dtype", "has dtype torch.int32"),
    ("number", "is a float, of graph 0 a int")])
def test_what_cannot_be_stored_is_a_one_line_data_error(kind, match):
    with pytest.raises(DataError, match=match) as err:
        DeviceSplit(_bad(kind))
    assert "\n" not in str(err.value)


def test_bad_indices_are_one_line_errors():
    stored = DeviceSplit(_odd_graphs(4))
    for index, match in (([], "non-empty"), ([0, 4], "out of range"), ([-1], "out of range")):
        with pytest.raises(DataError, match=match) as err:
            stored.batch(index)
        assert "\n" not in str(err.value)
    assert stored.nbytes > sum(g.x.numel() * 4 for g in _odd_graphs(4))
