"""Static-shape batches (graph_transformers.data.static_shapes, issue 56): budgets, the packing
sampler, the padding of a collated batch, the padding report, the masked BatchNorm, the task's
masked loss and metrics, the loader of ``data.static_shapes`` and a short training on it."""
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from graph_transformers.data.static_shapes import (
    PackingBatchSampler,
    StaticBudget,
    choose_budget,
    pack,
    pad_batch,
    padding_report,
    static_loader,
)
from graph_transformers.device_check import synthetic_molecules
from graph_transformers.errors import DataError
from graph_transformers.nn.norm import BatchNorm, masked_batch_norm


def _graphs(n=30, seed=0):
    graphs = synthetic_molecules(n, seed=seed)
    g = torch.Generator().manual_seed(seed)
    for d in graphs:  # a node encoding, a pair-level attribute and a list attribute
        d.pe = torch.randn(d.num_nodes, 3, generator=g)
        d.pair = torch.randn(d.num_nodes ** 2, 2, generator=g)
        d.name = "mol"
    return graphs


def _sizes(graphs):
    return [d.num_nodes for d in graphs], [d.edge_index.size(1) for d in graphs]


def test_budget_and_padding_report_by_hand():
    nodes, edges = [2, 4, 6], [2, 6, 10]
    b = choose_budget(nodes, edges, batch_size=2)
    # Nn = ceil(2·4) + 6, Ne = ceil(2·6) + 10, G = ceil(1.25·14/4) + 1, N = 6
    assert b == StaticBudget(num_graphs=6, num_nodes=14, num_edges=22, max_nodes=6)
    report = padding_report(nodes, edges, b, [[0, 1], [2]])
    assert report["nodes"] == pytest.approx(1 - 12 / 28)
    assert report["edges"] == pytest.approx(1 - 18 / 44)
    assert report["graphs"] == pytest.approx(1 - 3 / 12)
    assert report["pairs"] == pytest.approx(1 - (4 + 16 + 36) / (2 * 6 * 36))
    assert report["graphs_per_batch"] == 1.5


def test_packing_covers_each_graph_once_within_budgets_and_is_deterministic():
    graphs = _graphs(60)
    nodes, edges = _sizes(graphs)
    budget = choose_budget(nodes, edges, batch_size=8)
    sampler = PackingBatchSampler(nodes, edges, budget, seed=3)
    first = list(sampler)
    second = list(sampler)  # the epoch advanced: another order
    assert first != second
    for batches in (first, second):
        assert sorted(i for b in batches for i in b) == list(range(60))
        for b in batches:
            assert len(b) <= budget.num_graphs - 1
            assert sum(nodes[i] for i in b) <= budget.num_nodes - (budget.num_graphs - len(b))
            assert sum(edges[i] for i in b) <= budget.num_edges
    again = PackingBatchSampler(nodes, edges, budget, seed=3)
    assert list(again) == first and len(again) == len(second)
    # greedy: the first graph of each batch did not fit the one before
    for prev, nxt in zip(first, first[1:]):
        n, e = sum(nodes[i] for i in prev) + nodes[nxt[0]], sum(edges[i] for i in prev)
        e += edges[nxt[0]]
        pad_graphs = budget.num_graphs - len(prev) - 1
        fits = (pad_graphs >= 1 and e <= budget.num_edges and
                pad_graphs <= budget.num_nodes - n <= pad_graphs * budget.max_nodes)
        assert not fits


def test_graph_larger_than_the_budget_is_a_one_line_error():
    budget = StaticBudget(num_graphs=4, num_nodes=40, num_edges=80, max_nodes=20)
    with pytest.raises(DataError, match=r"graph 2 \(25 nodes, 10 edges\).*20 nodes per graph"):
        pack([5, 6, 25], [4, 4, 10], budget, [0, 1, 2])
    with pytest.raises(DataError, match="graph 1 .*does not fit"):
        PackingBatchSampler([5, 6], [4, 200], budget)


def test_pad_batch_shapes_masks_and_zero_padding():
    graphs = _graphs(5)
    nodes, edges = _sizes(graphs)
    budget = StaticBudget(num_graphs=8, num_nodes=sum(nodes) + 9, num_edges=sum(edges) + 7,
                          max_nodes=max(nodes) + 2)
    plain = Batch.from_data_list(graphs)
    b = pad_batch(Batch.from_data_list(graphs), budget)
    n, e = sum(nodes), sum(edges)
    assert b.num_graphs == 8 and b.num_nodes == budget.num_nodes
    assert b.x.shape[0] == b.pe.shape[0] == b.batch.numel() == budget.num_nodes
    assert b.edge_index.shape == (2, budget.num_edges) and b.edge_attr.shape[0] == budget.num_edges
    assert b.y.shape == (8,) and b.static_max_nodes == budget.max_nodes
    assert b.real_node_mask.sum() == n and bool(b.real_node_mask[:n].all())
    assert b.real_edge_mask.sum() == e and b.real_graph_mask.tolist() == [True] * 5 + [False] * 3
    # the real part is the plain batch, unchanged
    for key in ("x", "pe", "edge_attr", "y", "pair", "batch"):
        assert torch.equal(b[key][:plain[key].shape[0]], plain[key])
    assert torch.equal(b.edge_index[:, :e], plain.edge_index)
    # padding: zero features and targets, self-loops on padding nodes of one padding graph
    assert not b.x[n:].any() and not b.pe[n:].any() and not b.y[5:].any()
    src, dst = b.edge_index[:, e:]
    assert torch.equal(src, dst) and bool((src >= n).all())
    sizes = torch.diff(b._slice_dict["x"])
    assert int(sizes.min()) >= 1 and int(sizes.max()) <= budget.max_nodes
    assert torch.equal(sizes, torch.bincount(b.batch, minlength=8))
    assert b.pair.shape[0] == int((sizes ** 2).sum())  # pair-level: n² rows per graph
    assert b.name == ["mol"] * 5 + [None] * 3
    with pytest.raises(DataError, match="already padded"):
        pad_batch(b, budget)
    with pytest.raises(DataError, match="does not fit"):
        pad_batch(Batch.from_data_list(graphs), StaticBudget(6, n, e + 5, max(nodes)))


def test_pad_batch_reads_no_value_of_a_device_batch():
    """Regression (issue 56): ``pad_batch`` read ``batch.ptr`` to the host, a device sync per
    step for a batch on a GPU. On the ``meta`` device no value can be read at all: padding such a
    batch must work from the host's collation tables alone and give the CPU padding's shapes and
    tables."""
    graphs = _graphs(5)
    nodes, edges = _sizes(graphs)
    budget = StaticBudget(num_graphs=8, num_nodes=sum(nodes) + 9, num_edges=sum(edges) + 7,
                          max_nodes=max(nodes) + 2)
    on_cpu = pad_batch(Batch.from_data_list(graphs), budget)
    on_meta = pad_batch(Batch.from_data_list(graphs).to("meta"), budget)
    assert on_meta.x.device.type == "meta" and on_meta.num_graphs == on_cpu.num_graphs
    for key in on_cpu.keys():
        if isinstance(on_cpu[key], torch.Tensor):
            assert on_meta[key].shape == on_cpu[key].shape, key
    for key, sl in on_cpu._slice_dict.items():
        assert torch.equal(on_meta._slice_dict[key], sl), key


def test_padding_a_clone_leaves_the_original_batch_intact():
    """Regression: ``Batch.clone`` shares the collation tables, and ``pad_batch`` once extended
    them in place, so the original batch's ``to_data_list`` failed on ``real_node_mask``."""
    graphs = _graphs(4)
    nodes, edges = _sizes(graphs)
    budget = StaticBudget(num_graphs=6, num_nodes=sum(nodes) + 5, num_edges=sum(edges) + 5,
                          max_nodes=max(nodes) + 1)
    original = Batch.from_data_list(graphs)
    slices_before = {k: v.clone() for k, v in original._slice_dict.items()
                     if isinstance(v, torch.Tensor)}
    padded = pad_batch(original.clone(), budget)
    assert padded.num_graphs == 6 and original.num_graphs == 4
    assert set(original._slice_dict) == set(slices_before) | {
        k for k, v in original._slice_dict.items() if not isinstance(v, torch.Tensor)}
    for key, sl in slices_before.items():
        assert torch.equal(original._slice_dict[key], sl), key
    back = original.to_data_list()
    assert len(back) == 4 and torch.equal(back[2].x, graphs[2].x)


def test_masked_batch_norm_equals_batchnorm1d_on_the_real_rows():
    torch.manual_seed(0)
    x = torch.randn(12, 4, dtype=torch.float64)
    x[8:] = float("nan")  # padding rows reach no statistic
    mask = torch.arange(12) < 8
    for momentum in (0.1, None):
        ours = BatchNorm(4, momentum=momentum).double()
        ref = torch.nn.BatchNorm1d(4, momentum=momentum).double()
        for _ in range(3):
            out = ours(x, mask)
            want = ref(x[:8])
            assert torch.allclose(out[:8], want, atol=1e-12, rtol=0)
        for a, b in ((ours.running_mean, ref.running_mean), (ours.running_var, ref.running_var)):
            assert torch.allclose(a, b, atol=1e-12, rtol=0)
        assert int(ours.num_batches_tracked) == int(ref.num_batches_tracked) == 3
        ours.eval()
        ref.eval()
        clean = torch.randn(5, 4, dtype=torch.float64)
        assert torch.equal(ours(clean, torch.ones(5, dtype=torch.bool)), ours(clean))
    plain = torch.nn.BatchNorm1d(4).double()  # torch's own module through the helper
    out = masked_batch_norm(plain, x, mask)
    assert torch.allclose(out[:8], torch.nn.BatchNorm1d(4).double()(x[:8]), atol=1e-12)
    with pytest.raises(ValueError, match="mask must be"):
        masked_batch_norm(plain, x, mask[:5])


def _task(kind="regression", out_dim=1):
    from graph_transformers.data.registry import DatasetSpec
    from graph_transformers.training.tasks import Task
    return Task(DatasetSpec(name="toy", level="graph", task=kind, out_dim=out_dim,
                            metric="mae" if kind == "regression" else "accuracy", load=None))


@pytest.mark.parametrize("kind", ["regression", "classification"])
def test_task_loss_and_metrics_ignore_padding_graphs(kind):
    graphs = _graphs(6)
    if kind == "classification":
        for i, d in enumerate(graphs):
            d.y = torch.tensor([i % 3])
    task = _task(kind, 1 if kind == "regression" else 3)
    nodes, edges = _sizes(graphs)
    budget = StaticBudget(9, sum(nodes) + 5, sum(edges) + 3, max(nodes))
    plain, padded = Batch.from_data_list(graphs), pad_batch(Batch.from_data_list(graphs), budget)
    out = torch.randn(6, task.spec.out_dim, dtype=torch.float64, requires_grad=True)
    junk = torch.full((3, task.spec.out_dim), float("nan"), dtype=torch.float64)
    out_pad = torch.cat([out, junk])
    loss, loss_pad = task.loss(out, plain), task.loss(out_pad, padded)
    assert torch.allclose(loss, loss_pad, atol=1e-12) and torch.isfinite(loss_pad)
    g, = torch.autograd.grad(loss, out)
    g_pad, = torch.autograd.grad(task.loss(out_pad, padded), out)
    assert torch.allclose(g, g_pad, atol=1e-12)
    p, t = task.metric_inputs(out, plain)
    p_pad, t_pad = task.metric_inputs(out_pad, padded)
    assert torch.equal(p, p_pad) and torch.equal(t, t_pad)
    assert int(task.count(padded)) == 6


def _gatedgcn(seed=0):
    from graph_transformers.models import build_model
    torch.manual_seed(seed)
    return build_model("gatedgcn", hidden_dim=16, num_layers=2, out_dim=1,
                       num_node_types=28, num_edge_types=4, use_edge_features=True)


def test_static_loader_training_learns_and_metrics_count_real_graphs_only():
    graphs = _graphs(48, seed=1)
    for d in graphs:  # a learnable target: the share of atoms of the first 14 types
        d.y = 4 * (d.x < 14).double().mean().view(1) - 2
    task = _task()
    loader = static_loader(graphs, batch_size=8, seed=0)
    model = _gatedgcn().double()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    epochs = []
    for _ in range(10):
        total = count = 0.0
        for batch in loader:
            assert batch.num_nodes == loader.budget.num_nodes  # one shape for every batch
            assert batch.edge_index.size(1) == loader.budget.num_edges
            loss = task.loss(model(batch).double(), batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * int(task.count(batch))
            count += int(task.count(batch))
        assert count == 48  # every graph once per epoch
        epochs.append(total / count)
    assert epochs[-1] < 0.6 * epochs[0]
    model.eval()
    eval_loader = static_loader(graphs, budget=loader.budget, shuffle=False)

    def metric(batches):
        m = task.metrics()
        m.set_dtype(torch.float64)  # sums in float64: the batches differ, the result must not
        with torch.no_grad():
            for b in batches:
                m.update(*task.metric_inputs(model(b), b))
        return float(m.compute()["mae"])

    padded = metric(eval_loader)
    plain = metric(DataLoader(graphs, batch_size=8))
    assert padded == pytest.approx(plain, abs=1e-12)
    # the padding graphs' predictions are not the zero targets: counted, they would move the MAE
    b = next(iter(eval_loader))
    with torch.no_grad():
        junk = model(b).view(-1)[~b.real_graph_mask]
    assert bool((junk.abs() > 1e-6).all())


def test_make_loader_static_shapes():
    from graph_transformers.training.config import build_config
    from graph_transformers.training.loaders import make_loader
    graphs = _graphs(20)
    config = build_config({"model": {"name": "gatedgcn", "hidden_dim": 16, "num_layers": 1},
                           "data": {"batch_size": 4, "static_shapes": True}})
    train = make_loader(config, graphs, "train")
    shapes = {(b.num_graphs, b.num_nodes, b.edge_index.size(1)) for b in train}
    assert len(shapes) == 1 and all(hasattr(b, "real_graph_mask") for b in train)
    val = make_loader(config, graphs, "val")  # evaluation: ordinary PyG batches
    assert not hasattr(next(iter(val)), "real_graph_mask")
    bad = build_config({"model": {"name": "gatedgcn", "hidden_dim": 16, "num_layers": 1},
                        "data": {"batch_size": 4, "static_shapes": True,
                                 "bucket_by_size": True}})
    from graph_transformers.errors import ConfigError
    with pytest.raises(ConfigError, match="static_shapes"):
        make_loader(bad, graphs, "train")


def test_single_node_padding_graph_data():
    """A batch whose real graphs leave exactly one padding node per padding graph."""
    graphs = [Data(x=torch.zeros(3, 1, dtype=torch.long),
                   edge_index=torch.tensor([[0, 1], [1, 0]]), y=torch.ones(1))] * 2
    b = pad_batch(Batch.from_data_list(graphs), StaticBudget(4, 8, 6, 3))
    assert torch.diff(b._slice_dict["x"]).tolist() == [3, 3, 1, 1]
    assert b.edge_index[:, 4:].tolist() == [[6, 7], [6, 7]]


def test_training_run_with_static_shapes_learns(tmp_path, caplog):
    """``data.static_shapes: true`` through ``graph_transformers.train``: the budgets are logged,
    the training loss goes down over a few epochs."""
    import csv
    import logging

    import graph_transformers as gtr
    graphs = _graphs(64, seed=4)
    for d in graphs:
        d.y = 4 * (d.x < 14).float().mean().view(1) - 2
        del d.pe, d.pair, d.name
    config = {"model": {"name": "gatedgcn", "hidden_dim": 16, "num_layers": 2},
              "data": {"batch_size": 8, "static_shapes": True},
              "optim": {"lr": 3e-3},
              "trainer": {"max_epochs": 6, "enable_progress_bar": False}}
    with caplog.at_level(logging.INFO, logger="graph_transformers.training.loaders"):
        metrics = gtr.train(config, dataset=graphs, out_dir=tmp_path / "run")
    assert any("static shapes:" in r.getMessage() and "padding" in r.getMessage()
               for r in caplog.records)
    with open(tmp_path / "run" / "epochs.csv") as f:
        rows = list(csv.DictReader(f))
    losses = [float(r["train/loss"]) for r in rows if r.get("train/loss")]
    assert len(losses) == 6 and losses[-1] < 0.8 * losses[0]
    assert "mae" in metrics["test"]


def test_gin_mlp_batchnorm_refuses_static_batches():
    """PyG's GINConv calls its MLP (with a BatchNorm) without a mask: a one-line error, not
    statistics that count the padding."""
    from graph_transformers.errors import ConfigError
    from graph_transformers.models import build_model
    graphs = _graphs(4)
    nodes, edges = _sizes(graphs)
    batch = pad_batch(Batch.from_data_list(graphs),
                      StaticBudget(6, sum(nodes) + 4, sum(edges) + 2, max(nodes)))
    model = build_model("gin", hidden_dim=16, num_layers=1, out_dim=1, num_node_types=28)
    with pytest.raises(ConfigError, match="gin_mlp_norm"):
        model(batch)
    free = build_model("gin", hidden_dim=16, num_layers=1, out_dim=1, num_node_types=28,
                       gin_mlp_norm=False)
    assert free(batch).shape == (6, 1)
