"""The parity harness (benchmarks/parity): its missing-checkout message, the GRPE adapter's input
conversion, a one-epoch smoke of the shared training loop on a tiny synthetic stand-in for an
official checkout, and, when ``$GT_PARITY_EGT`` / ``$GT_PARITY_GRPE`` / ``$GT_PARITY_GPS`` /
``$GT_PARITY_GRIT`` point at official checkouts, each real adapter against our model on synthetic
ZINC-like graphs (GRIT also with our weights copied into the official model). No network, no
benchmark data."""
from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch, Data

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "parity"))

import adapters  # noqa: E402
import parity  # noqa: E402
from graph_transformers.data.registry import resolve_spec  # noqa: E402
from graph_transformers.encodings import AddRRWP, AddShortestPaths  # noqa: E402
from graph_transformers.encodings.rwse import AddRWSE  # noqa: E402
from graph_transformers.encodings.svd import AddSVDPE  # noqa: E402
from graph_transformers.models import GRIT, count_parameters  # noqa: E402
from graph_transformers.training.config import load_yaml  # noqa: E402
from graph_transformers.training.module import split_output  # noqa: E402


def molecule(n: int, seed: int) -> Data:
    """A ring of ``n`` atoms with one pendant chain: ZINC-like types, bond types 1-3."""
    g = torch.Generator().manual_seed(seed)
    ring = [(i, (i + 1) % (n - 2)) for i in range(n - 2)] + [(0, n - 2), (n - 2, n - 1)]
    src, dst = zip(*ring)
    ei = torch.tensor([src + dst, dst + src])
    bonds = torch.randint(1, 4, (len(ring),), generator=g)
    return Data(x=torch.randint(0, 28, (n, 1), generator=g), edge_index=ei,
                edge_attr=torch.cat([bonds, bonds]), y=torch.randn(1, generator=g))


def synthetic_zinc(count: int = 24) -> list[Data]:
    """ZINC-like graphs with every encoding the four configs use."""
    tfs = [AddShortestPaths(5), AddRWSE(20), AddSVDPE(8), AddRRWP(21)]
    out = []
    for k in range(count):
        d = molecule(6 + k % 7, k)
        for t in tfs:
            d = t(d)
        out.append(d)
    return out


def test_missing_checkout_says_what_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GT_PARITY_GRPE", raising=False)
    with pytest.raises(adapters.OfficialCodeError, match="lenscloth/GRPE"):
        adapters.check_checkout("grpe", None)
    with pytest.raises(adapters.OfficialCodeError, match="missing grpe/model"):
        adapters.check_checkout("grpe", tmp_path)
    assert parity.main(["grpe", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "no official checkout" in err and "GT_PARITY_GRPE" in err
    assert not (tmp_path / "out").exists()


def test_grpe_inputs_follow_the_official_collator():
    # path 0-1-2-3-4-5-6-7 (distance 7 > L = 5) plus an isolated node 8
    n = 9
    ei = torch.tensor([[i for i in range(7)] + [i + 1 for i in range(7)],
                       [i + 1 for i in range(7)] + [i for i in range(7)]])
    d = Data(x=torch.arange(n).view(n, 1), edge_index=ei, edge_attr=torch.full((14,), 2),
             y=torch.zeros(1))
    small = Data(x=torch.zeros(2, 1, dtype=torch.long), edge_index=torch.tensor([[0, 1], [1, 0]]),
                 edge_attr=torch.tensor([3, 3]), y=torch.zeros(1))
    t = AddShortestPaths(5)
    b = Batch.from_data_list([t(d), t(small)])
    inp = adapters.GRPEAdapter.official_inputs(b, 5)
    assert inp.x.shape == (2, n, 1)
    assert inp.x[0, :, 0].tolist() == list(range(1, n + 1))      # type + 1
    assert inp.x[1, 2:, 0].tolist() == [-1] * (n - 2)             # padding
    assert inp.mask[1].tolist() == [False, False] + [True] * (n - 2)
    assert inp.distance[0, 0, :8].tolist() == [0, 1, 2, 3, 4, 5, 5, 5]  # far → L (clamp)
    assert inp.distance[0, 0, 8] == -1 and inp.distance[1, 0, 5] == -1  # unreachable, padding
    assert inp.edge_attr[0, 0, 1] == 2 and inp.edge_attr[0, 0, 2] == -1
    assert inp.edge_attr[0, 0, 0] == -1                           # self: the network sets it
    assert inp.edge_attr[1, 0, 1] == 3


STAND_IN_GRPE = '''
import torch
from torch import nn


class GRPENetwork(nn.Module):
    """Stand-in with the official signature: checks the collator format and pools."""

    def __init__(self, num_task=1, num_layer=6, d_model=512, nhead=8, dim_feedforward=2048,
                 dropout=0.1, attention_dropout=0.1, max_hop=256, num_node_type=25,
                 num_edge_type=25, use_independent_token=False, perturb_noise=0.0,
                 num_last_mlp=0):
        super().__init__()
        self.max_hop = max_hop
        self.node_emb = nn.Embedding(num_node_type, d_model)
        self.hop_emb = nn.Embedding(max_hop + 3, d_model)
        self.linear = nn.Linear(d_model, num_task)

    def forward(self, data):
        assert data.x.dim() == 3 and data.mask.dtype == torch.bool
        assert int(data.distance.max()) <= self.max_hop
        h = self.node_emb.weight[data.x].sum(dim=2)
        dist = data.distance.clamp(min=0)
        h = h + self.hop_emb(dist).mean(dim=2)
        keep = (~data.mask).unsqueeze(-1).float()
        return self.linear((h * keep).sum(1) / keep.sum(1))
'''


def tiny_grpe_config(tmp_path):
    raw = load_yaml(ROOT / "configs" / "zinc" / "grpe_small.yaml")
    path = tmp_path / "tiny.yaml"
    path.write_text(
        "base: " + str(ROOT / "configs" / "zinc" / "grpe_small.yaml") + "\n"
        "model: {hidden_dim: 16, num_layers: 1, num_heads: 2, ffn_dim: 16}\n"
        "data: {batch_size: 8}\n")
    assert raw["model"]["name"] == "grpe"
    return path


def test_one_epoch_smoke_on_a_stand_in_checkout(tmp_path):
    checkout = tmp_path / "GRPE"
    (checkout / "grpe" / "model").mkdir(parents=True)
    (checkout / "grpe" / "model" / "graph_self_attention.py").write_text(STAND_IN_GRPE)
    (checkout / "COMMIT").write_text("0123456789abcdef\n")
    config, schedule = parity.parity_config(tiny_grpe_config(tmp_path), 1, None)
    assert config.trainer.max_epochs == 1 and schedule["warmup_epochs"] == 0
    spec = resolve_spec(config.data)
    graphs = synthetic_zinc(24)
    splits = {"train": graphs[:16], "val": graphs[16:20], "test": graphs[20:]}
    evals = {s: parity.make_loader(config, splits[s], s) for s in ("val", "test")}
    path = adapters.check_checkout("grpe", checkout)
    runs = {}
    for side, build in (("ours", lambda: parity.make_model(config, spec, splits["train"])),
                        ("official", lambda: parity.build_official("grpe", path, config, spec))):
        runs[side] = parity.train_side(build, config, spec, splits, 0, "cpu", evals)
        assert len(runs[side]["val_curve"]) == len(runs[side]["test_curve"]) == 1
        assert runs[side]["seconds_per_step"] is None or runs[side]["seconds_per_step"] > 0
    ours, off = parity.summarize_side([runs["ours"]]), parity.summarize_side([runs["official"]])
    v = parity.verdict(ours, off, 1)
    assert v["label"] == "inconclusive (1 seed)"
    assert adapters.official_commit(checkout) == "0123456789abcdef"
    # the same seed gives both sides the same batches
    a = [b.y.tolist() for b in parity.train_loader(config, splits["train"], 3)]
    b = [b.y.tolist() for b in parity.train_loader(config, splits["train"], 3)]
    assert a == b


def test_a_training_stopped_and_resumed_equals_an_uninterrupted_one(tmp_path, monkeypatch):
    """--minutes / --resume inside one (seed, side): a training stopped after its first epoch
    and continued from its state gives the uninterrupted curves (same batches, dropout draws and
    schedule), with the curves of both slices in its result, and the device of each epoch (a
    slice resumed on another machine); a finished training returns them, an unfinished one
    None."""
    config, _ = parity.parity_config(tiny_grpe_config(tmp_path), 3, None)
    config.model.dropout = 0.1  # dropout draws must continue as they would have
    spec = resolve_spec(config.data)
    graphs = synthetic_zinc(24)
    splits = {"train": graphs[:16], "val": graphs[16:20], "test": graphs[20:]}
    evals = {s: parity.make_loader(config, splits[s], s) for s in ("val", "test")}
    build = lambda: parity.make_model(config, spec, splits["train"])  # noqa: E731
    whole = parity.train_side(build, config, spec, splits, 0, "cpu", evals,
                              state_dir=tmp_path / "whole")
    here = parity.device_name(torch.device("cpu"))
    assert whole["devices"] == {here: 3} and whole["epoch_devices"] == [here] * 3
    state = tmp_path / "sliced"
    monkeypatch.setattr(parity, "device_name", lambda device: "machine A")
    assert parity.train_side(build, config, spec, splits, 0, "cpu", evals, state_dir=state,
                             minutes=1e-6) is None  # at least one epoch, then the deadline
    assert (state / "last.ckpt").is_file()
    monkeypatch.setattr(parity, "device_name", lambda device: "machine B")
    resumed = parity.train_side(build, config, spec, splits, 0, "cpu", evals, state_dir=state)
    assert len(resumed["val_curve"]) == 3 and len(resumed["epoch_seconds"]) == 3
    assert resumed["epoch_devices"] == ["machine A", "machine B", "machine B"]
    assert resumed["devices"] == {"machine A": 1, "machine B": 2}
    assert parity.summarize_side([resumed, whole])["devices"] == {
        "machine A": 1, "machine B": 2, here: 3}
    # a state saved before devices were recorded: its epochs count as unrecorded
    rec = parity.Recorder(spec, evals["test"], spec.metric)
    old_state = {k: v for k, v in rec.state_dict().items() if k != "device"}
    rec.load_state_dict({**old_state, "val": [0.5, 0.4]})
    assert rec.device == [None, None]
    assert parity.count_devices(rec.device + ["machine B"]) == {"unrecorded": 2, "machine B": 1}
    monkeypatch.undo()
    for k in ("val_curve", "test_curve", "lr_curve"):
        assert resumed[k] == pytest.approx(whole[k], rel=1e-6, abs=1e-9), k
    # a training killed during its third epoch resumes from the second's end, as uninterrupted
    crashed = tmp_path / "crashed"

    class Killed(Exception):
        pass

    start = parity.Recorder.on_train_epoch_start

    def kill_in_epoch_3(self, trainer, module):
        if trainer.current_epoch == 2:
            raise Killed
        start(self, trainer, module)

    parity.Recorder.on_train_epoch_start = kill_in_epoch_3
    try:
        with pytest.raises(Killed):
            parity.train_side(build, config, spec, splits, 0, "cpu", evals, state_dir=crashed)
    finally:
        parity.Recorder.on_train_epoch_start = start
    assert (crashed / "last.ckpt").is_file()
    again = parity.train_side(build, config, spec, splits, 0, "cpu", evals, state_dir=crashed)
    for k in ("val_curve", "test_curve", "lr_curve"):
        assert again[k] == pytest.approx(whole[k], rel=1e-6, abs=1e-9), k
    # the batch order is restored too: without it the resumed epochs would see other batches
    loader = parity.train_loader(config, splits["train"], 0)
    saved = parity.loader_state(loader).state_dict()
    first = [b.y.tolist() for b in loader]
    parity.loader_state(loader).load_state_dict(saved)
    assert [b.y.tolist() for b in loader] == first


def test_a_stale_or_unwanted_state_is_cleared(tmp_path):
    """A resume state is continued only with --resume and under the same settings."""
    config, _ = parity.parity_config(ROOT / parity.CONFIGS["gps"], 3, None)
    args = parity.parse_args(["gps", "--epochs", "3", "--official", str(tmp_path)])
    key = parity.run_key(args, config, "abc123")
    state = parity.state_path(tmp_path, "gps", 0, "ours")
    parity.prepare_state(state, key, "ours", resume=True)
    (state / "last.ckpt").write_bytes(b"x")
    parity.prepare_state(state, key, "ours", resume=True)
    assert (state / "last.ckpt").exists()  # kept: same settings, --resume
    parity.prepare_state(state, {**key, "epochs": 4}, "ours", resume=True)
    assert not (state / "last.ckpt").exists()  # other settings: cleared
    (state / "last.ckpt").write_bytes(b"x")
    parity.prepare_state(state, {**key, "epochs": 4}, "ours", resume=False)
    assert not (state / "last.ckpt").exists()  # no --resume: a fresh start
    with pytest.raises(SystemExit):
        parity.parse_args(["gps", "--minutes", "0"])


def test_verdict_rule():
    """Welch's test on the per-seed test values: a difference inside the seeds' spread is
    parity, even where the means differ by more than either s.d. (the EGT row of issue 24)."""
    side = lambda *values: {"runs": [{"test_final": v} for v in values]}  # noqa: E731
    assert parity.verdict(side(0.300, 0.310), side(0.290, 0.320), 2)["label"] == "parity"
    assert parity.verdict(side(0.250, 0.251), side(0.290, 0.291), 2)["label"] == "better"
    assert parity.verdict(side(0.350, 0.351), side(0.290, 0.291), 2)["label"] == "worse"
    egt = parity.verdict(side(0.55272, 0.52246), side(0.56624, 0.57896), 2)
    assert egt["label"] == "parity" and 0.1 < egt["p_value"] < 0.4


def test_resume_reuses_only_runs_with_matching_settings(tmp_path):
    """--resume: a stored (seed, side) run is reused under the same settings, retrained under
    others (a different epoch budget or official commit)."""
    config, _ = parity.parity_config(ROOT / parity.CONFIGS["gps"], 3, None)
    args = parity.parse_args(["gps", "--epochs", "3", "--official", str(tmp_path)])
    key = parity.run_key(args, config, "abc123")
    path = parity.side_path(tmp_path, "gps", 0, "ours")
    assert parity.load_side(path, key) is None  # nothing stored yet
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"key": key, "run": {"test_final": 0.5}}))
    assert parity.load_side(path, key) == {"test_final": 0.5}
    assert parity.load_side(path, {**key, "official_commit": "def456"}) is None
    args.epochs = 4
    assert parity.load_side(path, parity.run_key(args, config, "abc123")) is None


def test_resume_reads_runs_from_a_summary_with_its_settings(tmp_path):
    """A committed summary is resumable: a seed's run is taken from ``<model>.json`` when the
    summary records matching settings for that side, never from one without them."""
    config, _ = parity.parity_config(ROOT / parity.CONFIGS["gps"], 3, None)
    args = parity.parse_args(["gps", "--epochs", "3", "--official", str(tmp_path)])
    key = parity.run_key(args, config, "abc123", "official")
    path = tmp_path / "gps.json"
    assert parity.load_summary_run(path, key, "official", 0) is None  # no file
    runs = [{"seed": 0, "test_final": 0.4}, {"seed": 1, "test_final": 0.3}]
    summary = {"official": {"runs": runs}, "ours": {"runs": runs}}
    path.write_text(json.dumps(summary))
    assert parity.load_summary_run(path, key, "official", 1) is None  # settings not recorded
    path.write_text(json.dumps({**summary, "run_keys": {"official": key}}))
    assert parity.load_summary_run(path, key, "official", 1) == runs[1]
    assert parity.load_summary_run(path, key, "official", 2) is None  # seed not run
    assert parity.load_summary_run(path, key, "ours", 0) is None  # ours not recorded
    args.epochs = 4
    other = parity.run_key(args, config, "abc123", "official")
    assert parity.load_summary_run(path, other, "official", 0) is None


def test_resume_keeps_official_runs_when_only_our_layer_changes(tmp_path):
    """The official side is keyed on the model options its adapter reads: a change to our layer
    alone (norm_position) retrains ours and reuses the official run, also one stored with the
    whole config; a change the adapter reads (hidden_dim) retrains both."""
    config, _ = parity.parity_config(ROOT / parity.CONFIGS["gps"], 3, None)
    args = parity.parse_args(["gps", "--epochs", "3", "--official", str(tmp_path)])
    official = parity.side_path(tmp_path, "gps", 0, "official")
    official.parent.mkdir(parents=True)
    whole = parity.run_key(args, config, "abc123")  # a key stored before keys were per side
    official.write_text(json.dumps({"key": whole, "run": {"test_final": 0.4}}))
    ours = parity.side_path(tmp_path, "gps", 0, "ours")
    ours.write_text(json.dumps({"key": whole, "run": {"test_final": 0.5}}))

    other = parity.parity_config(ROOT / parity.CONFIGS["gps"], 3, None)[0]
    other.model.norm_position = "pre" if config.model.norm_position == "post" else "post"
    for side, want in (("official", {"test_final": 0.4}), ("ours", None)):
        key = parity.run_key(args, other, "abc123", side)
        assert parity.load_side(parity.side_path(tmp_path, "gps", 0, side), key, side) == want
    other.model.hidden_dim = 32
    key = parity.run_key(args, other, "abc123", "official")
    assert parity.load_side(official, key, "official") is None
    assert set(parity.run_key(args, config, "x", "official")["config"]["model"]) == set(
        parity.OFFICIAL_MODEL_KEYS["gps"])


# ------------------------------------------------------- the real official code, when given
def official_checkout(model: str, what: str) -> Path:
    """The checkout ``$GT_PARITY_<MODEL>`` names; skips the test, saying which variable to set,
    when it is unset or the path does not exist (a path without the official files fails)."""
    env, repo = adapters.OFFICIAL[model]["env"], adapters.OFFICIAL[model]["repo"]
    path = os.environ.get(env)
    if not path:
        pytest.skip(f"${env} not set: point it at a checkout of {repo} to test {what}")
    if not Path(path).expanduser().exists():
        pytest.skip(f"${env}={path} does not exist: point it at a checkout of {repo} to test "
                    f"{what}")
    return adapters.check_checkout(model, path)


@pytest.mark.parametrize("model", ["egt", "grpe", "gps", "grit"])
def test_official_adapter(model):
    path = official_checkout(model, f"the {model} adapter")
    config, _ = parity.parity_config(ROOT / parity.CONFIGS[model], 1, None)
    spec = resolve_spec(config.data)
    graphs = synthetic_zinc(8)
    batch = Batch.from_data_list(graphs)
    torch.manual_seed(0)
    ours = parity.make_model(config, spec, graphs)
    official = parity.build_official(model, path, config, spec)
    # sizes match to within 1% (the differences are listed in benchmarks/parity/README.md)
    assert abs(count_parameters(official) - count_parameters(ours)) < 0.01 * count_parameters(ours)
    opt = torch.optim.Adam(official.parameters(), lr=1e-3)
    official.train()
    pred, aux = split_output(official(batch))
    assert pred.shape == (len(graphs), 1)
    loss = (pred.view(-1) - batch.y).abs().mean() + (aux if aux is not None else 0.0)
    loss.backward()
    opt.step()
    assert all(torch.isfinite(p).all() for p in official.parameters())
    official.eval()
    with torch.no_grad():
        a = split_output(official(batch))[0]
        b = split_output(official(Batch.from_data_list(graphs[::-1])))[0]
    torch.testing.assert_close(a, b.flip(0), atol=1e-4, rtol=1e-4)  # batch order invariant


def test_post_norm_gps_layer_equals_the_official_layer():
    """Our ``GPSLayer(norm_position="post", train_eps=False)`` computes GraphGPS's own layer:
    with the weights copied across, the official ``GPSLayer`` gives the same output (float64)."""
    env = adapters.OFFICIAL["gps"]["env"]
    path = os.environ.get(env)
    if not path:
        pytest.skip(f"${env} not set: point it at a checkout of rampasek/GraphGPS to compare "
                    "the post-norm GPS layer with the official one")
    from types import SimpleNamespace

    from graph_transformers.nn import GPSLayer

    official_cls = adapters.import_gps_layer(adapters.check_checkout("gps", path))
    torch.manual_seed(0)
    d = 16
    ours = GPSLayer(d, 4, mpnn="gine", attention="full", norm_position="post",
                    train_eps=False).double()
    official = official_cls(dim_h=d, local_gnn_type="GINE", global_model_type="Transformer",
                            num_heads=4, act="relu", dropout=0.0, attn_dropout=0.0,
                            layer_norm=False, batch_norm=True).double()
    g = torch.Generator().manual_seed(1)
    for norm in (ours.norm1, ours.norm1_local, ours.norm2):  # non-trivial statistics and affine
        norm.weight.data = torch.rand(d, generator=g, dtype=torch.float64) + 0.5
        norm.bias.data = torch.randn(d, generator=g, dtype=torch.float64)
        norm.running_mean = torch.randn(d, generator=g, dtype=torch.float64)
        norm.running_var = torch.rand(d, generator=g, dtype=torch.float64) + 0.5
    pairs = [(official.local_model.nn[0], ours.mpnn.conv.nn[0]),
             (official.local_model.nn[2], ours.mpnn.conv.nn[2]),
             (official.ff_linear1, ours.mlp[0]), (official.ff_linear2, ours.mlp[3]),
             (official.self_attn.out_proj, ours.attention.out)]
    with torch.no_grad():
        for theirs, mine in pairs:
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
        official.self_attn.in_proj_weight.copy_(ours.attention.qkv.weight)
        official.self_attn.in_proj_bias.copy_(ours.attention.qkv.bias)
        for theirs, mine in ((official.norm1_local, ours.norm1_local),
                             (official.norm1_attn, ours.norm1), (official.norm2, ours.norm2)):
            theirs.load_state_dict(mine.state_dict())
    ours.eval()
    official.eval()
    sizes = [5, 9, 3]
    x = torch.randn(sum(sizes), d, generator=g, dtype=torch.float64)
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    ei = torch.cat([torch.randint(0, n, (2, 3 * n), generator=g) + off
                    for n, off in zip(sizes, [0, 5, 14])], 1)
    e = torch.randn(ei.size(1), d, generator=g, dtype=torch.float64)
    want = official(SimpleNamespace(x=x, edge_index=ei, edge_attr=e, batch=batch)).x
    torch.testing.assert_close(ours(x, ei, e, batch), want, rtol=1e-10, atol=1e-10)


# ------------------------------------------------------- GRIT
def test_grit_dependency_stand_ins_compute_what_the_packages_compute():
    """The stand-ins the GRIT import uses where torch_scatter / torch_sparse / opt_einsum are not
    installed, against direct computations (no checkout needed)."""
    g = torch.Generator().manual_seed(0)
    src = torch.randn(7, 3, 2, generator=g)
    index = torch.tensor([0, 2, 2, 0, 4, 2, 0])
    want = torch.zeros(5, 3, 2).index_add_(0, index, src)
    torch.testing.assert_close(adapters._scatter(src, index, dim=0, reduce="add"), want)
    out = torch.ones(5, 3, 2)
    assert adapters._scatter(src, index, 0, out=out, reduce="add") is out  # in place, as
    torch.testing.assert_close(out, want + 1)                            # torch_scatter
    assert adapters._scatter_add(src, index, 0).shape == (5, 3, 2)       # index.max() + 1 rows
    assert adapters._scatter_add(src, index, 0, dim_size=6).shape == (6, 3, 2)
    mx = adapters._scatter_max(src, index, dim=0, dim_size=6)[0]
    for row in range(6):
        sel = src[index == row]
        torch.testing.assert_close(mx[row], sel.max(0).values if len(sel) else torch.zeros(3, 2))
    ones = torch.ones(4, dtype=torch.long)
    counts = adapters._scatter(ones, torch.tensor([1, 1, 0, 2]), 0, dim_size=4, reduce="add")
    assert counts.tolist() == [1, 2, 1, 0]
    # torch_sparse.coalesce: sorted by (row, column), duplicates summed
    idx = torch.tensor([[2, 0, 2, 1, 0], [1, 3, 1, 0, 3]])
    val = torch.arange(10.0).view(5, 2)
    out_idx, out_val = adapters._coalesce(idx, val, 3, 4, op="add")
    assert out_idx.tolist() == [[0, 1, 2], [3, 0, 1]]
    assert out_val.tolist() == [[2 + 8, 3 + 9], [6, 7], [0 + 4, 1 + 5]]
    a, b = torch.randn(5, 4, 3, generator=g), torch.randn(3, 4, 2, generator=g)
    torch.testing.assert_close(adapters._contract("ehd, dhc->ehc", a, b, backend="torch"),
                               torch.einsum("ehd,dhc->ehc", a, b))
    node = adapters._CfgNode(attn=adapters._CfgNode(clamp=5.0))
    assert node.attn.get("clamp") == 5.0 and node.get("rezero", False) is False
    with pytest.raises(AttributeError):
        _ = node.missing


def copy_grit_weights(ours: GRIT, official: torch.nn.Module) -> None:
    """Our GRIT's weights into the official model (the layout of docs/grit.md)."""
    with torch.no_grad():
        official.encoder.node_encoder.encoder.weight.copy_(ours.node_encoder.embeddings[0].weight)
        official.encoder.edge_encoder.encoder.weight.copy_(ours.edge_encoder.embeddings[0].weight)
        official.rrwp_abs_encoder.fc.weight.copy_(ours.rrwp_node.weight)
        official.rrwp_rel_encoder.fc.weight.copy_(ours.rrwp_pair.weight)
        for mine, theirs in zip(ours.layers, official.layers):
            att = theirs.attention
            linears = [(mine.q, att.Q), (mine.k, att.K), (mine.v, att.V), (mine.e, att.E),
                       (mine.out_h, theirs.O_h), (mine.ffn1, theirs.FFN_h_layer1),
                       (mine.ffn2, theirs.FFN_h_layer2)]
            if mine.edge_output:
                linears.append((mine.out_e, theirs.O_e))
            for a, b in linears:
                b.weight.copy_(a.weight)
                if a.bias is not None:
                    b.bias.copy_(a.bias)
            att.Aw.copy_(mine.attn_weight.t().unsqueeze(-1))              # [d', H, 1]
            att.VeRow.copy_(mine.value_edge.permute(1, 0, 2))             # [d', H, d']
            theirs.deg_coef.copy_(mine.degree_coef.t().unsqueeze(0))      # [1, D, 2]
            norms = [(mine.norm1_h, theirs.batch_norm1_h), (mine.norm2_h, theirs.batch_norm2_h)]
            if mine.edge_output:
                norms.append((mine.norm1_e, theirs.batch_norm1_e))
            for a, b in norms:
                b.load_state_dict(a.state_dict())
        for a, b in zip(ours.head.mlp[::2], official.post_mp.FC_layers):
            b.weight.copy_(a.weight)
            b.bias.copy_(a.bias)


def grit_pair(path: Path, D: int, L: int, H: int) -> tuple[GRIT, torch.nn.Module]:
    """Our GRIT (seed 0, ZINC vocabularies, K = 21, no dropout) and the official model with its
    weights copied in, both float64 in training mode."""
    torch.manual_seed(0)
    kwargs = dict(num_node_types=28, num_edge_types=4, walk_length=21, attn_dropout=0.0)
    ours = GRIT(D, L, H, out_dim=1, **kwargs).double().train()
    official = adapters.build_official_grit(path, hidden_dim=D, num_layers=L, num_heads=H,
                                            **kwargs).double().train()
    copy_grit_weights(ours, official)
    return ours, official


def test_official_grit_trains_the_parameters_ours_has():
    """The ZINC config: the official model has our parameters plus its last layer's O_e and
    pair BatchNorm (D² + D + 2D = 4,288), which get no gradient (nothing reads that layer's pair
    output); the parameters that do are as many as ours."""
    path = official_checkout("grit", "the GRIT adapter")
    config, schedule = parity.parity_config(ROOT / parity.CONFIGS["grit"], 40, None)
    assert schedule["name"] == "cosine" and schedule["warmup_epochs"] == 1   # 50 of 2000
    spec = resolve_spec(config.data)
    graphs = synthetic_zinc(6)
    ours = parity.make_model(config, spec, graphs)
    official = parity.build_official("grit", path, config, spec)
    D = config.model.hidden_dim
    assert count_parameters(official) == count_parameters(ours) + D * D + D + 2 * D
    official.train()
    official(Batch.from_data_list(graphs)).sum().backward()
    trained = sum(p.numel() for p in official.parameters() if p.grad is not None)
    assert trained == count_parameters(ours)
    assert official.layers[-1].O_e.weight.grad is None


def test_official_grit_equals_ours_with_the_same_weights():
    """With our weights copied into the official model (float64, training mode: BatchNorm on
    the batch's statistics, no dropout), the two predict the same, and the adapter's conversion
    of our RRWP to the official rrwp_index / rrwp_val gives the official layers our pairs."""
    path = official_checkout("grit", "the GRIT adapter against our GRIT")
    ours, official = grit_pair(path, 32, 3, 4)
    K = 21
    graphs = synthetic_zinc(7)
    graphs[3].edge_index = graphs[3].edge_index[:, :2]   # a graph with unreachable pairs:
    graphs[3].edge_attr = graphs[3].edge_attr[:2]        # padded with zero-valued pairs
    graphs[3] = AddRRWP(K)(graphs[3])
    batch = Batch.from_data_list(graphs)
    for key in ("rrwp", "rrwp_pair"):
        batch[key] = batch[key].double()
    torch.testing.assert_close(official(batch), ours(batch), rtol=1e-10, atol=1e-10)


def test_official_grit_initial_weights_have_the_official_spreads():
    """Built from the ZINC config, our GRIT and the official model draw each weight tensor with
    the same spread: per tensor of ≥ 1,000 values, the standard deviation averaged over four seeds
    agrees within 10% (the sampling noise is ≤ 5%; a Xavier-uniform instead of PyTorch's default
    Linear init, the GPS bug of docs/reproduction.md, is a factor √3)."""
    path = official_checkout("grit", "the GRIT adapter's initialization against ours")
    config, _ = parity.parity_config(ROOT / parity.CONFIGS["grit"], 40, None)
    spec = resolve_spec(config.data)
    graphs = synthetic_zinc(6)
    spreads: dict[str, list[list[float]]] = {}
    for seed in range(4):
        torch.manual_seed(seed)
        ours = parity.make_model(config, spec, graphs)
        official = parity.build_official("grit", path, config, spec)
        mapped = copy.deepcopy(official)
        copy_grit_weights(ours, mapped)
        for (name, mine), (_, theirs) in zip(mapped.named_parameters(),
                                             official.named_parameters()):
            if theirs.numel() >= 1000:   # the never-trained last O_e is not copied: ratio 1
                pair = spreads.setdefault(name, [[], []])
                pair[0].append(mine.std().item())
                pair[1].append(theirs.std().item())
    assert len(spreads) > 50
    for name, (mine, theirs) in spreads.items():
        ratio = sum(mine) / sum(theirs)
        assert 0.9 < ratio < 1.1, f"{name}: ours / official initial std {ratio:.3f}"


def test_official_grit_gradients_equal_ours():
    """The ZINC widths (D = 64, 10 layers, 8 heads): with our weights copied in, an L1 loss gives
    the official parameters the gradients of ours (float64), mapped through the same layout. The
    biases in front of a BatchNorm get only rounding (≈1e-17 on both sides), hence the
    absolute tolerance on the scale of the largest gradient."""
    path = official_checkout("grit", "the GRIT adapter's gradients against ours")
    ours, official = grit_pair(path, 64, 10, 8)
    batch = Batch.from_data_list(synthetic_zinc(16))
    for key in ("rrwp", "rrwp_pair"):
        batch[key] = batch[key].double()
    y = torch.randn(16, 1, dtype=torch.float64)
    (ours(batch) - y).abs().mean().backward()
    (official(batch) - y).abs().mean().backward()
    grads = copy.deepcopy(ours)                 # our gradients, laid out as the official tensors
    with torch.no_grad():
        for holder, p in zip(grads.parameters(), ours.parameters()):
            holder.copy_(p.grad)
    mapped = copy.deepcopy(official)
    copy_grit_weights(grads, mapped)
    pairs = [(n, a, b.grad) for (n, a), (_, b) in zip(mapped.named_parameters(),
                                                      official.named_parameters())
             if b.grad is not None]
    assert len(pairs) > 100
    scale = max(g.abs().max().item() for _, _, g in pairs)
    for name, mine, theirs in pairs:
        torch.testing.assert_close(mine, theirs, rtol=1e-7, atol=1e-10 * scale, msg=name)
