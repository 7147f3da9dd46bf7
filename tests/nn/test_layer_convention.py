"""The one layer convention (issue 27, item 4; ``docs/layers.md``): every layer exported from
``graph_transformers.nn`` is called with the same keyword arguments on a PyG ``Batch``
(``x=``, ``edge_index=``, ``edge_attr=``, ``batch=``) and returns ``x``, or ``(x, edge_attr)`` when
it updates edge features; ``return_attention_weights=True`` adds PyG's ``(index, weights)``. The
constructors take sizes positionally and every option by keyword. The 0.1 orders the convention
replaced were removed in 0.2.0: each is a clear error (a ``TypeError``, or the ``ValueError`` that
names the new form), none runs on swapped arguments; every model and the README's PyG example
run in the convention."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

import graph_transformers.nn as gnn
from graph_transformers import models
from graph_transformers.encodings import AddRRWP, AddShortestPaths

REPO = Path(__file__).resolve().parents[2]
D, H, TYPES, L = 16, 4, 3, 3  # width, heads, edge types, max distance
#: exported modules that are no graph layers (a norm, the GRPE tables, the dense view)
NOT_LAYERS = {"BatchNorm", "GRPEEncodings", "DenseBatch"}
DEG = torch.tensor([0, 3, 5, 2])  # a PNA in-degree histogram


def _graph(n: int, gen: torch.Generator) -> Data:
    src = torch.arange(n - 1)
    ei = torch.cat([torch.stack([src, src + 1]), torch.stack([src + 1, src])], 1)
    return Data(x=torch.randn(n, D, generator=gen), edge_index=ei,
                edge_attr=torch.randn(ei.size(1), D, generator=gen),
                edge_type=torch.randint(0, TYPES, (ei.size(1),), generator=gen), num_nodes=n)


def _batch(sizes=(4, 6, 3), seed=0) -> Batch:
    gen = torch.Generator().manual_seed(seed)
    return Batch.from_data_list([_graph(n, gen) for n in sizes])


def _enc():
    return gnn.GRPEEncodings(L + 3, 3 + TYPES, D)


EDGES, PAIRS = "edges", "pairs"
#: name → [(constructor arguments, keywords (the constructor's, and FORWARD_KEYS for forward),
#: whether it returns (x, edge_attr), whether it takes return_attention_weights, the pairs its
#: weights are on: EDGES (edge_index), PAIRS (every pair of each graph) or None (its own))]
CASES = {
    # the node-only GT refuses edge features (it would ignore them): edge_attr=None
    "GraphTransformerLayer": [((D, H), dict(edge_attr=None), False, True, EDGES),
                              ((D, H), dict(edge_dim=D), True, True, EDGES)],
    "EGTLayer": [((D, H), dict(edge_dim=D), True, True, PAIRS)],
    "GRITLayer": [((D, H), dict(deg_scaler=False), True, True, EDGES)],
    "GRPELayer": [((D, H), dict(encodings=_enc), False, True, PAIRS)],
    "GRPEAttention": [((D, H), dict(encodings=_enc), False, True, PAIRS)],
    "GraphormerLayer": [((D, H), dict(edge_dim=D), False, True, PAIRS)],
    "GPSLayer": [((D, H), {}, False, False, None),
                 ((D, H), dict(mpnn="gatedgcn"), True, False, None),
                 ((D, H), dict(attention="performer", mpnn=None), False, False, None),
                 ((D, H), dict(attention="linear", mpnn="gin", use_edge_features=False),
                  False, False, None)],
    "MPNNBlock": [((D, "gine"), dict(use_edge_features=True), False, False, None),
                  ((D, "gatedgcn"), dict(use_edge_features=True), True, False, None),
                  ((D, "pna"), dict(use_edge_features=True, deg=DEG, pna_towers=4), False,
                   False, None)],
    "LocalMPNN": [((D, "gcn"), {}, False, False, None),
                  ((D, "gatedgcn"), dict(use_edge_features=True), True, False, None)],
    "GatedGCNConv": [((D,), {}, True, False, None)],
    "MeanGraphConv": [((D, D), {}, False, False, None)],
    "FullAttention": [((D, H), {}, False, False, None)],
    "PerformerAttention": [((D, H), {}, False, False, None)],
    "LinearGlobalAttention": [((D, H), {}, False, False, None)],
    "SGFormerAttention": [((D, H), {}, False, False, None)],
    "ExphormerAttention": [((D, H), dict(edge_dim=D), False, True, None)],
}
#: forward keywords (the rest go to the constructor)
FORWARD_KEYS = {"encodings", "edge_attr"}


def _layer_classes() -> list[str]:
    return [name for name in gnn.__all__
            if isinstance(getattr(gnn, name), type)
            and issubclass(getattr(gnn, name), torch.nn.Module) and name not in NOT_LAYERS]


def _split(kwargs: dict) -> tuple[dict, dict]:
    init = {k: v for k, v in kwargs.items() if k not in FORWARD_KEYS}
    fwd = {k: (v() if callable(v) else v) for k, v in kwargs.items() if k in FORWARD_KEYS}
    return init, fwd


def _edge_attr(name: str, batch: Batch) -> Tensor:
    # GRPE's edge features are categorical: integer edge types index its edge encodings (eq. 7)
    return batch.edge_type if name.startswith("GRPE") else batch.edge_attr


def test_every_exported_layer_has_a_case():
    missing = [name for name in _layer_classes() if name not in CASES]
    assert not missing, f"add the new layers to CASES (and docs/layers.md): {missing}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_constructor_takes_sizes_positionally_and_options_by_keyword(name):
    cls = getattr(gnn, name)
    params = list(inspect.signature(cls).parameters.values())
    positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert positional[0] in ("hidden_dim", "in_dim"), positional
    assert len(positional) <= 2, f"{name}: options after {positional[:2]} must be keyword-only"
    assert not any(p.name.endswith("ffn_multiplier") for p in params), \
        "the FFN width is ffn_dim (absolute)"


@pytest.mark.parametrize("name,case", [(n, c) for n in sorted(CASES) for c in CASES[n]],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_layer_takes_the_same_keywords_on_a_batch(name, case):
    args, kwargs, edges_out, has_weights, pairs = case
    init, fwd = _split(kwargs)
    torch.manual_seed(0)
    layer = getattr(gnn, name)(*args, **init).eval()
    batch = _batch()
    call = dict(x=batch.x, edge_index=batch.edge_index, edge_attr=_edge_attr(name, batch),
                batch=batch.batch)
    call.update(fwd)
    with torch.no_grad():
        out = layer(**call)
    n, e = batch.num_nodes, batch.num_edges
    if edges_out:
        assert isinstance(out, tuple) and len(out) == 2, type(out)
        x, edge_attr = out
        assert isinstance(edge_attr, Tensor) and edge_attr.size(0) == e
    else:
        assert isinstance(out, Tensor), type(out)
        x = out
    assert x.shape == (n, D)
    if hasattr(out, "_fields"):  # the named tuples keep named access
        assert out._fields == ("x", "edge_attr") and out.x is x
    if not has_weights:
        assert "return_attention_weights" not in inspect.signature(layer.forward).parameters
        return
    with torch.no_grad():
        res, (index, weights) = layer(**call, return_attention_weights=True)
    torch.testing.assert_close(res[0] if edges_out else res, x)
    assert index.dim() == 2 and index.size(0) == 2 and not index.is_floating_point()
    assert weights.shape == (index.size(1), H)
    if pairs == EDGES:
        assert torch.equal(index, batch.edge_index)
    elif pairs == PAIRS:
        sizes = torch.bincount(batch.batch)
        assert index.size(1) == int((sizes * sizes).sum())
        assert bool((batch.batch[index[0]] == batch.batch[index[1]]).all())
    if pairs is not None and name != "EGTLayer":  # EGT's weights are gated: Ã = softmax ⊙ σ(G)
        # each query's weights sum to 1 (over the pairs it attends)
        sums = torch.zeros(n, H).index_add_(0, index[1], weights.float())
        torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-5, rtol=0)


def test_pair_index_is_row_major_per_graph_dst_major():
    """Dense layers' ``(pair_index, weights)``: every pair ``j → i`` of each graph,
    ``k = i · n + j`` (the layout of AddShortestPaths' ``spd``): ``pair_index[1]`` (query) is the
    row."""
    batch = _batch((2, 3))
    layer = gnn.GraphormerLayer(D, H, edge_dim=D).eval()
    _, (index, _) = layer(batch.x, batch.edge_index, batch.edge_attr, batch.batch,
                          return_attention_weights=True)
    want = [(j, i) for i in range(2) for j in range(2)] + \
        [(2 + j, 2 + i) for i in range(3) for j in range(3)]
    assert index.t().tolist() == [list(p) for p in want]


# ------------------------------------------------------------- the 0.1 forms (removed in 0.2.0)
def _same_params(a: torch.nn.Module, b: torch.nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert sa[k].shape == sb[k].shape and torch.equal(sa[k], sb[k]), k


def _build(make):
    torch.manual_seed(0)
    return make()


#: (the 0.1 call, its 0.2 form), each old call a TypeError now
OLD_CONSTRUCTORS = [
    (lambda: gnn.EGTLayer(D, 8, H), "EGTLayer(D, H, edge_dim=8)"),
    (lambda: gnn.EGTLayer(D, 8, num_heads=H), "EGTLayer(D, H, edge_dim=8)"),
    (lambda: gnn.EGTLayer(D, 8, H, True, True, 3.0, 1.5),
     "EGTLayer(D, H, edge_dim=8, ffn_dim=48, edge_ffn_dim=12)"),
    (lambda: gnn.EGTLayer(D, H, edge_dim=8, node_ffn_multiplier=3.0),
     "EGTLayer(D, H, edge_dim=8, ffn_dim=48)"),
    (lambda: gnn.EGTLayer(D, H, edge_dim=8, edge_ffn_multiplier=1.5),
     "EGTLayer(D, H, edge_dim=8, edge_ffn_dim=12)"),
    (lambda: gnn.GraphTransformerLayer(D, H, D, 0.1, "layer"),
     "GraphTransformerLayer(D, H, edge_dim=D, dropout=0.1, norm='layer')"),
    (lambda: gnn.GraphTransformerLayer(D, H, D, edge_dim=D),
     "GraphTransformerLayer(D, H, edge_dim=D)"),
    (lambda: gnn.GraphTransformerLayer(D, H, ffn_multiplier=3.0),
     "GraphTransformerLayer(D, H, ffn_dim=48)"),
    (lambda: gnn.GPSLayer(D, H, "gatedgcn", "performer"),
     "GPSLayer(D, H, mpnn='gatedgcn', attention='performer')"),
    (lambda: gnn.GPSLayer(D, H, ffn_multiplier=1.5), "GPSLayer(D, H, ffn_dim=24)"),
    (lambda: gnn.GPSLayer(D, H, ffn_dim=8, ffn_multiplier=2.0), "GPSLayer(D, H, ffn_dim=8)"),
    (lambda: gnn.GRITLayer(D, H, 0.1, 0.2), "GRITLayer(D, H, dropout=0.1, attn_dropout=0.2)"),
    (lambda: gnn.GRPELayer(D, H, 32, 0.1), "GRPELayer(D, H, ffn_dim=32, dropout=0.1)"),
    (lambda: gnn.GRPEAttention(D, H, 0.0, False), "GRPEAttention(D, H, topology_attention=False)"),
    (lambda: gnn.GraphormerLayer(D, H, 32), "GraphormerLayer(D, H, ffn_dim=32)"),
    (lambda: gnn.MPNNBlock("gatedgcn", D, True),
     "MPNNBlock(D, 'gatedgcn', use_edge_features=True)"),
    (lambda: gnn.MPNNBlock("gin", D), "MPNNBlock(D, 'gin')"),
    (lambda: gnn.MPNNBlock(D, "gat", True), "MPNNBlock(D, 'gat', use_edge_features=True)"),
    (lambda: gnn.LocalMPNN("gat", D, num_heads=2), "LocalMPNN(D, 'gat', num_heads=2)"),
    (lambda: gnn.FullAttention(D, H, 0.1), "FullAttention(D, H, attn_dropout=0.1)"),
    (lambda: gnn.PerformerAttention(D, H, 8), "PerformerAttention(D, H, num_features=8)"),
    (lambda: gnn.LinearGlobalAttention(D, H, 0.1), "LinearGlobalAttention(D, H, dropout=0.1)"),
    (lambda: gnn.SGFormerAttention(D, H, 0.0, "row"), "SGFormerAttention(D, H, qk_norm='row')"),
]


@pytest.mark.parametrize("old,new", OLD_CONSTRUCTORS, ids=[new for _, new in OLD_CONSTRUCTORS])
def test_old_constructor_orders_are_type_errors(old, new):
    """0.2.0 removed the 0.1 positional orders and the renamed keywords (``*ffn_multiplier``):
    each is a ``TypeError`` before any weight is drawn; the new form builds."""
    with pytest.raises(TypeError):
        old()
    assert isinstance(eval(new, {"D": D, "H": H, **{n: getattr(gnn, n) for n in gnn.__all__}}),
                      torch.nn.Module)


def test_gps_layer_takes_pygs_gpsconv_order():
    from torch_geometric.nn import GINEConv
    mlp = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.ReLU(), torch.nn.Linear(D, D))
    layer = _build(lambda: gnn.GPSLayer(D, GINEConv(mlp), H))
    same = _build(lambda: gnn.GPSLayer(D, H, mpnn=GINEConv(mlp)))
    by_name = _build(lambda: gnn.GPSLayer(D, "gatedgcn"))       # heads: 1, as GPSConv
    no_mpnn = gnn.GPSLayer(D, None, H)
    _same_params(layer, same)
    assert by_name.mpnn_kind == "gatedgcn" and by_name.attention.num_heads == 1
    assert no_mpnn.mpnn is None
    assert list(inspect.signature(gnn.GPSLayer).parameters)[:3] == ["hidden_dim", "num_heads",
                                                                     "mpnn"]
    with pytest.raises(TypeError, match="both"):
        gnn.GPSLayer(D, GINEConv(mlp), H, mpnn="gine")
    with pytest.raises(TypeError, match="at most 3"):
        gnn.GPSLayer(D, "gine", H, "full")


def test_misused_forms_are_clear_errors():
    with pytest.raises(TypeError, match="edge_dim"):
        gnn.EGTLayer(D, H)  # EGT needs the width of its edge channels
    with pytest.raises(TypeError, match="width comes first"):
        gnn.LocalMPNN("gcn", D)
    batch = _batch()
    layer = gnn.GraphormerLayer(D, H)
    with pytest.raises(ValueError, match="edge_dim"):  # features to a layer without edge_dim
        layer(batch.x, batch.edge_index, batch.edge_attr, batch.batch)


def _old_forward_calls():
    """(name, the 0.1 call, the error it raises now, a pattern of its message)."""
    batch = _batch()
    x, ei, ea, b = batch.x, batch.edge_index, batch.edge_attr, batch.batch
    torch.manual_seed(0)
    gps = gnn.GPSLayer(D, H, mpnn="gatedgcn").eval()
    gps_gine = gnn.GPSLayer(D, H).eval()
    gps_none = gnn.GPSLayer(D, H, mpnn=None).eval()
    gt = gnn.GraphTransformerLayer(D, H).eval()
    graphormer = gnn.GraphormerLayer(D, H).eval()
    full = gnn.FullAttention(D, H).eval()
    performer = gnn.PerformerAttention(D, H).eval()
    eb = torch.randn(batch.num_edges, H)
    from torch_geometric.utils import to_dense_batch
    xd, mask = to_dense_batch(x, b)
    return [
        ("gps (x, ei, batch, e)", lambda: gps(x, ei, b, ea), TypeError, "edge_attr=None, batch"),
        ("gps gine", lambda: gps_gine(x, ei, b, ea), TypeError, "edge_attr=None, batch"),
        ("gps (x, ei, None, e)", lambda: gps_gine(x, ei, None, ea), TypeError, "as batch"),
        # a layer without edge features would otherwise attend across the graphs
        ("gps no edges (x, ei, batch)", lambda: gps_none(x, ei, b), TypeError, "graph ids"),
        ("gt weights positional", lambda: gt(x, ei, None, True), TypeError,
         "return_attention_weights"),
        ("graphormer bias as edge_attr", lambda: graphormer(x, ei, eb, b), ValueError,
         "edge_bias="),
        ("full (x [B, N, d], mask)", lambda: full(xd, mask), ValueError, "forward_dense"),
        ("performer (x [B, N, d], mask)", lambda: performer(xd, mask), ValueError,
         "forward_dense"),
    ]


@pytest.mark.parametrize("case", range(8))
def test_old_forward_orders_fail_clearly(case):
    """The 0.1 forward orders raise, naming the 0.2 form, rather than run on swapped arguments;
    the new forms (``test_every_layer_takes_the_same_keywords_on_a_batch``) run."""
    name, old, error, pattern = _old_forward_calls()[case]
    with torch.no_grad(), pytest.raises(error, match=pattern):
        old()


def test_no_deprecation_machinery_is_left():
    """No 0.1 shim survives in the layers: no ``FutureWarning`` helper, no old-order decorator."""
    import graph_transformers.nn.convention as convention
    for name in ("legacy_init", "warn_deprecated", "renamed_multiplier"):
        assert not hasattr(convention, name), name
    pkg = REPO / "src" / "graph_transformers"
    for floor in ("core", "encodings", "models", "nn"):
        for path in (pkg / floor).glob("*.py"):
            text = path.read_text()
            assert "FutureWarning" not in text and "legacy_init" not in text, path


def test_egt_output_unpacks_as_two_and_keeps_the_pairs():
    batch = _batch()
    layer = gnn.EGTLayer(D, H, edge_dim=D).eval()
    out = layer(batch.x, batch.edge_index, batch.edge_attr, batch.batch)
    x, e = out
    assert x is out.x and e is out.edge_attr and len(out) == 2
    sizes = torch.bincount(batch.batch)
    assert out.pair_attr.shape == (int((sizes * sizes).sum()), D)
    import pickle
    again = pickle.loads(pickle.dumps(out))
    assert torch.equal(again.pair_attr, out.pair_attr) and torch.equal(again.x, out.x)


# ----------------------------------------------------------------------------- models, README
def _model_batch() -> Batch:
    gen = torch.Generator().manual_seed(3)
    graphs = []
    for n in (5, 7):
        src = torch.arange(n - 1)
        ei = torch.cat([torch.stack([src, src + 1]), torch.stack([src + 1, src])], 1)
        graphs.append(Data(x=torch.randint(0, 5, (n, 1), generator=gen), edge_index=ei,
                           edge_attr=torch.randint(0, 3, (ei.size(1), 1), generator=gen),
                           y=torch.randn(1, 1, generator=gen), num_nodes=n))
    graphs = [AddRRWP(walk_length=4)(AddShortestPaths(max_distance=L)(g)) for g in graphs]
    return Batch.from_data_list(graphs)


MODEL_CASES = [
    ("GraphTransformer", dict(use_edge_features=True, pe=None)),
    ("GraphTransformer", dict(full_graph=True, pe=None)),
    ("EGT", dict(edge_hidden_dim=8, pe=None)),
    ("GRPE", dict(max_distance=L)),
    ("Graphormer", dict(max_distance=L)),
    ("GPS", dict(pe=None)),
    ("GPS", dict(pe=None, mpnn="gatedgcn", attention="performer")),
    ("GPS", dict(pe=None, attention="linear", norm_position="post")),
    ("GRIT", dict(walk_length=4)),
    ("GCN", {}), ("GAT", {}), ("GatedGCN", {}), ("GIN", {}),
    ("GINE", dict(use_edge_features=True)),
    ("PNA", dict(use_edge_features=True, deg=DEG, pna_towers=4)),
]


@pytest.mark.parametrize("name,kwargs", MODEL_CASES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(MODEL_CASES)])
def test_every_model_builds_and_runs_in_the_convention(name, kwargs):
    """The models call their layers in the convention (a 0.1 form would be a ``TypeError``):
    each builds, runs forward and backward, and gives its attention maps."""
    batch = _model_batch()
    cls = getattr(models, name)
    params = inspect.signature(cls).parameters
    base = dict(hidden_dim=D, num_layers=2, num_heads=H, out_dim=1, num_node_types=5,
                num_edge_types=3)
    base = {k: v for k, v in base.items() if k in params}
    torch.manual_seed(0)
    model = cls(**base, **kwargs)
    out = model(batch)
    out = getattr(out, "out", out)
    out.float().sum().backward()
    model.eval()
    with torch.no_grad():
        model(batch)
        if hasattr(model, "attention_maps") and kwargs.get("attention", "full") == "full":
            model.attention_maps(batch)  # GT and GRIT: return_attention_weights
    assert out.shape[0] == batch.num_graphs


def _readme_snippet() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("### Using the layers in your own PyG model"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_pyg_example_runs_in_the_convention():
    namespace: dict = {}
    exec(compile(_readme_snippet(), "README.md", "exec"), namespace)
    assert namespace["h"].shape == (8, 16)


def test_docs_page_lists_every_layer():
    page = (REPO / "docs" / "layers.md").read_text()
    missing = [name for name in _layer_classes() if f"`{name}" not in page]
    assert not missing, f"docs/layers.md has no row for {missing}"
    assert "layers.md" in (REPO / "docs" / "index.md").read_text()
