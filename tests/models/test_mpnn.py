"""MPNN baselines and the GPS network on real ZINC graphs (a few optimizer steps each, loss must
fall), GatedGCN against its equations, PNA's degree histogram, and config validation."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from conftest import shared_data_dir
from graph_transformers.data.registry import get_spec
from graph_transformers.encodings import AddRWSE
from graph_transformers.models import BASELINES, GPS, build_model, count_parameters
from graph_transformers.nn import GatedGCNConv, MPNNBlock
from graph_transformers.training.config import ConfigError, build_config, load_config
from graph_transformers.training.build import degree_histogram, make_model, model_kwargs


@pytest.fixture(scope="module")
def zinc_batch(tmp_path_factory):
    """64 real ZINC molecules (the exact val split, no RDKit needed) with RWSE (8 steps)."""
    data = shared_data_dir()
    if data is None or not (data / "ZINC").is_dir():
        pytest.skip("ZINC data not found: set GRAPH_TRANSFORMERS_DATA or place shared/data next "
                    "to the repository")
    from graph_transformers.datasets.molecules.zinc import ZINCSubset
    root = tmp_path_factory.mktemp("zinc")
    ds = ZINCSubset(root=str(root), split="val", data_dir=str(data), pre_transform=AddRWSE(8),
              download=False)
    subset = ds[:64]
    return subset, next(iter(DataLoader(subset, batch_size=64)))


def _train_steps(model, batch, steps=20, lr=5e-3):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        loss = (model(batch).view(-1) - batch.y).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_trains_on_zinc(zinc_batch, name):
    subset, batch = zinc_batch
    torch.manual_seed(0)
    edges = name in ("gatedgcn", "gine", "pna")
    deg = degree_histogram(subset) if name == "pna" else None
    model = build_model(name, hidden_dim=40, num_layers=2, out_dim=1, num_node_types=28,
                        num_edge_types=4 if edges else None, use_edge_features=edges,
                        pe="rwse", pe_dim=8, deg=deg, num_heads=4)
    losses = _train_steps(model, batch)
    assert all(torch.isfinite(torch.tensor(losses)))
    assert sum(losses[-3:]) / 3 < 0.8 * losses[0], losses


@pytest.mark.parametrize("attention, mpnn", [("full", "gine"), ("performer", "gatedgcn"),
                                             ("none", "gine")])
def test_gps_trains_on_zinc(zinc_batch, attention, mpnn):
    _, batch = zinc_batch
    torch.manual_seed(0)
    model = GPS(32, 2, 4, out_dim=1, num_node_types=28, num_edge_types=4, mpnn=mpnn,
                attention=attention, pe="rwse", pe_dim=8, pe_embed_dim=8)
    losses = _train_steps(model, batch)
    assert sum(losses[-3:]) / 3 < 0.8 * losses[0], losses


def test_gated_gcn_matches_equations():
    torch.manual_seed(0)
    conv = GatedGCNConv(6).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 6, generator=g, dtype=torch.float64)
    ei = torch.tensor([[0, 1, 2, 3, 4, 0], [1, 2, 0, 0, 0, 4]])
    e = torch.randn(6, 6, generator=g, dtype=torch.float64)
    h, e_hat = conv(x, ei, e)
    for m in range(6):
        j, i = ei[:, m].tolist()
        want = conv.C(e[m]) + conv.D(x[i]) + conv.E(x[j])  # ê_ij = C e_ij + D h_i + E h_j
        torch.testing.assert_close(e_hat[m], want)
    for i in range(5):
        incoming = (ei[1] == i).nonzero().view(-1).tolist()
        num = sum((torch.sigmoid(e_hat[m]) * conv.B(x[ei[0, m]]) for m in incoming),
                  torch.zeros(6, dtype=torch.float64))
        den = sum((torch.sigmoid(e_hat[m]) for m in incoming), torch.zeros(6, dtype=torch.float64))
        torch.testing.assert_close(h[i], conv.A(x[i]) + num / (den + conv.eps))


def test_gated_gcn_block_edge_stream_is_residual():
    torch.manual_seed(0)
    block = MPNNBlock(8, "gatedgcn", use_edge_features=True, norm="none").eval()
    x, e = torch.randn(4, 8), torch.randn(3, 8)
    ei = torch.tensor([[0, 1, 2], [1, 2, 3]])
    _, e_hat = block.conv(x, ei, e)
    _, e_out = block(x, ei, e)
    torch.testing.assert_close(e_out, e + torch.relu(e_hat))


def test_baselines_without_edge_features_on_node_task():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    n = 20
    ei = torch.randint(0, n, (2, 60), generator=g)
    data = Batch.from_data_list([Data(x=torch.randint(0, 3, (n,), generator=g), edge_index=ei)])
    for name in ("gcn", "gat", "gatedgcn", "gin"):
        model = build_model(name, hidden_dim=16, num_layers=2, out_dim=2, level="node",
                            num_node_types=3, num_heads=4)
        assert model(data).shape == (n, 2)


def test_degree_histogram_counts_in_degrees():
    graphs = [Data(edge_index=torch.tensor([[0, 1, 2], [1, 2, 1]]), num_nodes=3),
              Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2)]
    # in-degrees: [0, 2, 1] and [0, 1] -> two nodes of degree 0, two of 1, one of 2
    assert degree_histogram(graphs).tolist() == [2, 2, 1]


def test_config_validation():
    with pytest.raises(ConfigError, match="gine needs edge features"):
        build_config({"model": {"name": "gine", "use_edge_features": False}})
    with pytest.raises(ConfigError, match="takes no edge features"):
        build_config({"model": {"name": "gcn", "use_edge_features": True}})
    with pytest.raises(ConfigError, match="divisible by model.num_heads"):
        build_config({"model": {"name": "gat", "hidden_dim": 30, "num_heads": 8}})
    with pytest.raises(ConfigError, match="pna_towers"):
        build_config({"model": {"name": "pna", "hidden_dim": 32}})
    with pytest.raises(ConfigError, match="encodings.rwse is not set"):
        build_config({"model": {"name": "gps", "pe": "rwse"}})
    with pytest.raises(ConfigError, match="at least one"):
        build_config({"model": {"name": "gps", "mpnn": None, "attention": "none", "pe": None}})
    with pytest.raises(ConfigError, match="attention"):
        build_config({"model": {"name": "gps", "attention": "sparse", "pe": None}})
    cfg = build_config({"model": {"name": "gps"}, "encodings": {"rwse": {"walk_length": 16}}})
    kw = model_kwargs(cfg, get_spec("zinc"))
    assert kw["pe_dim"] == 16 and kw["name"] == "gps" and kw["num_edge_types"] == 4


def test_zinc_configs_build_within_budget():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "configs" / "zinc"
    deg = torch.tensor([0, 40, 50, 30, 5])
    counts = {}
    for path in sorted(root.glob("*_[15]00k.yaml")):
        cfg = load_config(path)
        if cfg.param_budget is None:  # EGT-100k keeps the paper's widths (124,617 parameters)
            assert path.stem.startswith("egt") and path.stem.endswith("_100k"), path
            continue
        kw = model_kwargs(cfg, get_spec("zinc"))
        name = kw.pop("name")
        if name == "pna":
            kw["deg"] = deg
        n = count_parameters(build_model(name, **kw))
        counts[path.stem] = n
        assert abs(n - cfg.param_budget) <= 0.1 * cfg.param_budget, (path.name, n)
    assert {f"{m}_{b}" for m in BASELINES for b in ("100k", "500k")} <= set(counts)
    gps = load_config(root / "gps.yaml")
    assert gps.model.name == "gps" and gps.encodings.rwse.walk_length == 20


def test_make_model_computes_pna_degrees_from_train_split(zinc_batch):
    subset, _ = zinc_batch
    cfg = build_config({"model": {"name": "pna", "hidden_dim": 20, "num_layers": 1,
                                  "use_edge_features": True}, "data": {"name": "zinc"}})
    model = make_model(cfg, get_spec("zinc"), train_set=subset)
    hist = degree_histogram(subset).double()
    avg_lin = float((torch.arange(hist.numel()) * hist).sum() / hist.sum())
    aggr = model.layers[0].conv.conv.aggr_module
    assert float(aggr.avg_deg_lin) == pytest.approx(avg_lin, rel=1e-6)


def test_pna_without_degrees_runs_only_after_loading_a_checkpoint(zinc_batch):
    subset, batch = zinc_batch
    kw = dict(hidden_dim=20, num_layers=1, out_dim=1, num_node_types=28, num_edge_types=4,
              use_edge_features=True)
    trained = build_model("pna", deg=degree_histogram(subset), **kw).eval()
    bare = build_model("pna", **kw).eval()
    assert count_parameters(bare) == count_parameters(trained)
    with pytest.raises(ValueError, match="without the training in-degree histogram"):
        bare(batch)
    bare.load_state_dict(trained.state_dict())
    torch.testing.assert_close(bare(batch), trained(batch))
    # the check reads a host copy of the buffer, never the buffer (a device sync per step on a
    # GPU, issue 14): a buffer whose value cannot be read does not stop forward
    conv = bare.layers[0].conv
    conv.degree_known = torch.empty((), dtype=torch.bool, device="meta")
    torch.testing.assert_close(bare(batch), trained(batch))


# ----------------------------------------------------------------- the benchmark's own layers
# (issue 10: why our GCN/GIN beat benchmarking-gnns' published ZINC numbers)

def _tiny_graph():
    """A 5-node graph (both directions of 0-1, 1-2, 1-3, 3-4) and a node 5 without edges."""
    und = [(0, 1), (1, 2), (1, 3), (3, 4)]
    ei = torch.tensor([[a for a, b in und] + [b for a, b in und],
                       [b for a, b in und] + [a for a, b in und]])
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return x, ei


def test_gcn_norms_match_hand_computation():
    from graph_transformers.nn.mpnn import LocalMPNN
    x, ei = _tiny_graph()
    nbrs = {i: ei[0, ei[1] == i].tolist() for i in range(6)}
    deg = {i: len(v) for i, v in nbrs.items()}
    torch.manual_seed(0)
    for norm in ("sym", "sym_no_self_loops", "mean"):
        conv = LocalMPNN(4, "gcn", gcn_norm=norm).double()
        with torch.no_grad():  # a non-zero bias, so that it is checked too
            for name, p in conv.named_parameters():
                if name.endswith("bias"):
                    p.copy_(torch.arange(4, dtype=torch.float64))
        out = conv(x, ei)
        lin, b = conv.conv.lin.weight, conv.conv.bias
        wx = x @ lin.T
        for i in range(6):
            if norm == "mean":  # benchmark: W · mean_j h_j + b; no neighbours → b
                want = (wx[nbrs[i]].mean(0) if nbrs[i] else torch.zeros(4, dtype=x.dtype)) + b
            elif norm == "sym_no_self_loops":  # Σ_j W h_j / sqrt(d_i d_j) + b
                want = sum((wx[j] / (deg[i] * deg[j]) ** 0.5 for j in nbrs[i]),
                           torch.zeros(4, dtype=x.dtype)) + b
            else:  # Kipf & Welling: self-loop, d̂ = d + 1
                want = sum((wx[j] / ((deg[i] + 1) * (deg[j] + 1)) ** 0.5
                            for j in nbrs[i] + [i]), torch.zeros(4, dtype=x.dtype)) + b
            torch.testing.assert_close(out[i], want)


def test_mean_gcn_is_blind_to_degree_and_sym_gcn_is_not():
    """On a star with equal features the benchmark's mean layer gives the centre and the leaves
    the same output; PyG's GCNConv does not (the degree enters its weights)."""
    from graph_transformers.nn.mpnn import LocalMPNN
    ei = torch.tensor([[0, 0, 0, 1, 2, 3], [1, 2, 3, 0, 0, 0]])
    x = torch.ones(4, 3)
    torch.manual_seed(0)
    out_mean = LocalMPNN(3, "gcn", gcn_norm="mean")(x, ei)
    out_sym = LocalMPNN(3, "gcn", gcn_norm="sym")(x, ei)
    torch.testing.assert_close(out_mean[0], out_mean[1])
    assert not torch.allclose(out_sym[0], out_sym[1])


def test_gat_without_self_loops_attends_over_neighbours_only():
    from graph_transformers.nn.mpnn import LocalMPNN
    x, ei = _tiny_graph()
    x = x.float()
    torch.manual_seed(0)
    with_self = LocalMPNN(8, "gat", num_heads=2)
    without = LocalMPNN(8, "gat", num_heads=2, gat_self_loops=False)
    without.load_state_dict(with_self.state_dict())
    a = with_self(x.repeat(1, 2), ei)
    b = without(x.repeat(1, 2), ei)
    # node 5 has no neighbours: without self-loops it receives nothing (bias only)
    torch.testing.assert_close(b[5], without.conv.bias)
    assert not torch.allclose(a[5], with_self.conv.bias)
    # a leaf (node 0, one neighbour) takes its single neighbour's projection: attention weight 1
    lin = without.conv.lin if hasattr(without.conv, "lin") else without.conv.lin_src
    torch.testing.assert_close(b[0], lin(x.repeat(1, 2)[1]) + without.conv.bias)


def test_layer_sum_head_matches_hand_computation():
    """The benchmark GIN's head: Σ_l Linear_l(sum-pool(h^l)) over the embedding and each layer."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    graphs = [Data(x=torch.randint(0, 5, (n,), generator=g),
                   edge_index=torch.randint(0, n, (2, 2 * n), generator=g)) for n in (4, 7, 5)]
    batch = Batch.from_data_list(graphs)
    model = build_model("gin", hidden_dim=8, num_layers=3, out_dim=2, num_node_types=5,
                        readout="sum", head="layer_sum").eval()
    hs = model.encode_layers(batch)
    assert len(hs) == 4 and len(model.head) == 4
    want = torch.zeros(3, 2)
    for lin, h in zip(model.head, hs):
        for k in range(3):
            want[k] += lin(h[batch.batch == k].sum(0))
    torch.testing.assert_close(model(batch), want)
    with pytest.raises(ValueError, match="graph tasks"):
        build_model("gin", hidden_dim=8, num_layers=2, out_dim=2, num_node_types=5,
                    level="node", head="layer_sum")


def test_benchmark_zinc_configs_have_the_benchmarks_parameter_counts():
    """The counts benchmarking-gnns' ZINC_100k configs give with its code (no DGL needed):
    GCN, d = 145: Embedding(28, d) + 4 × (Linear(d, d) + BatchNorm(d)) + MLP d → 72 → 36 → 1;
    GIN, d = 110: Embedding(28, d) + 4 × (ε + Linear(d, d) + BatchNorm(d) + Linear(d, d) +
    BatchNorm(d)) + 5 × Linear(d, 1)."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "configs" / "zinc"
    d = 145
    gcn = 28 * d + 4 * (d * d + d + 2 * d) + (d * 72 + 72) + (72 * 36 + 36) + (36 + 1)
    d = 110
    gin = 28 * d + 4 * (1 + 2 * (d * d + d) + 2 * 2 * d) + 5 * (d + 1)
    assert (gcn, gin) == (103_077, 103_079)
    for stem, want in (("gcn_100k_benchmark", gcn), ("gin_100k_benchmark", gin)):
        cfg = load_config(root / f"{stem}.yaml")
        assert count_parameters(make_model(cfg, get_spec("zinc"))) == want, stem
    cfg = load_config(root / "gcn_100k_benchmark.yaml")
    assert cfg.model.gcn_norm == "mean" and cfg.reference.value == pytest.approx(0.459)
    cfg = load_config(root / "gin_100k_benchmark.yaml")
    assert (cfg.model.head, cfg.model.readout, cfg.model.hidden_dim) == ("layer_sum", "sum", 110)


def test_benchmark_options_are_validated():
    with pytest.raises(ConfigError, match="gcn_norm applies to gcn only"):
        build_config({"model": {"name": "gin", "gcn_norm": "mean"}})
    with pytest.raises(ConfigError, match="gat_self_loops applies to gat only"):
        build_config({"model": {"name": "gcn", "gat_self_loops": False}})
    with pytest.raises(ConfigError, match="model.gcn_norm"):
        build_config({"model": {"name": "gcn", "gcn_norm": "rw"}})
