"""The encoding registry: one entry per encoding is what the config section, the dataset
pre-transform and the models' input encoders read; a new encoding registered here flows through
config → transform → model; the built-in encodings keep their cache keys."""
from __future__ import annotations

import pytest
import torch
from torch import Tensor
from torch_geometric.data import Batch, Data
from torch_geometric.utils import degree

from graph_transformers.data.cache import pre_transform_key
from graph_transformers.data.registry import build_pre_transform, get_spec
from graph_transformers.encodings import ENCODINGS, Encoding, register_encoding
from graph_transformers.encodings.registry import EncodingSection, PositiveInt, pe_dim
from graph_transformers.encodings.transform import NodeEncodingTransform
from graph_transformers.models import build_model
from graph_transformers.models.encoders import LinearPEEncoder
from graph_transformers.training.config import ConfigError, build_config
from graph_transformers.training.model_sections import EncodingsConfig, encodings_config
from graph_transformers.training.build import model_kwargs


def test_config_section_lists_the_registered_encodings_in_registry_order():
    assert list(EncodingsConfig.model_fields) == list(ENCODINGS) == [
        "lap_pe", "wl_pe", "svd_pe", "spd", "rwse", "rrwp", "expander"]
    for name, encoding in ENCODINGS.items():
        assert EncodingsConfig.model_fields[name].default is None
        assert encoding.config().model_dump() == getattr(
            EncodingsConfig(**{name: {}}), name).model_dump()


def test_builtin_pre_transforms_keep_their_cache_keys():
    """The processed datasets on disk are named by the pre-transform's repr: the values below
    were computed on main before the registry existed."""
    every = build_pre_transform(EncodingsConfig(lap_pe={}, wl_pe={}, svd_pe={}, spd={}, rwse={}))
    assert repr(every) == ("Compose([\n  AddLaplacianPE(k=8, attr_name='lap_pe'),\n  AddWLPE("
                           "iterations=2, attr_name='wl_pe'),\n  AddSVDPE(r=8, attr_name="
                           "'svd_pe'),\n  AddShortestPaths(max_distance=5),\n  AddRWSE("
                           "walk_length=20, attr_name='rwse')\n])")
    assert pre_transform_key(every) == "2e109866067c"
    one = build_pre_transform(EncodingsConfig(lap_pe={"k": 3}))
    assert pre_transform_key(one) == "1dbeaa654938"
    assert build_pre_transform(EncodingsConfig()) is None


def test_pe_dim_follows_each_encodings_section():
    enc = EncodingsConfig(lap_pe={"k": 5}, wl_pe={"num_roles": 40}, svd_pe={"r": 3},
                          rwse={"walk_length": 7})
    assert [pe_dim(p, enc) for p in ("lap", "wl", "svd", "rwse")] == [5, 40, 6, 7]
    with pytest.raises(ValueError, match="unknown positional encoding pe='nope'; known: "):
        pe_dim("nope", enc)
    with pytest.raises(ValueError, match="encodings.svd_pe is not set"):
        pe_dim("svd", EncodingsConfig())


# ----------------------------------------------------------------------- a new encoding
def degree_powers(edge_index: Tensor, num_nodes: int, powers: int) -> Tensor:
    """``[num_nodes, powers]``: in-degree ``d`` as ``d, d², …`` scaled by ``1 / 10^p``."""
    d = degree(edge_index[1], num_nodes).unsqueeze(-1)
    return torch.cat([(d / 10) ** p for p in range(1, powers + 1)], dim=-1)


class AddDegreePE(NodeEncodingTransform):
    option, what, encode = "powers", "powers", staticmethod(degree_powers)

    def __init__(self, powers: int, attr_name: str = "deg_pe") -> None:
        super().__init__(powers, attr_name)


class DegreePEConfig(EncodingSection):
    powers: PositiveInt = 2


FLIPS: list[bool] = []


def negate(pe: Tensor, batch: Tensor | None, per_graph: bool = False,
           num_graphs: int | None = None) -> Tensor:
    FLIPS.append(per_graph)
    return -pe


@pytest.fixture
def degree_encoding():
    enc = register_encoding(Encoding("deg_pe", DegreePEConfig, AddDegreePE, ("powers",),
                                     pe="deg", dim=lambda s: s.powers, sign_flip=negate))
    FLIPS.clear()
    try:
        yield enc
    finally:
        del ENCODINGS["deg_pe"]


def _graphs(num: int = 3) -> list[Data]:
    g = torch.Generator().manual_seed(0)
    out = []
    for n in (4, 6, 5)[:num]:
        src = torch.arange(n - 1)
        ei = torch.stack([torch.cat([src, src + 1]), torch.cat([src + 1, src])])
        out.append(Data(x=torch.randint(0, 28, (n, 1), generator=g), edge_index=ei,
                        edge_attr=torch.randint(0, 4, (ei.size(1), 1), generator=g),
                        y=torch.randn(1, generator=g)))
    return out


def test_a_registered_encoding_flows_through_config_transform_and_model(degree_encoding):
    cfg = build_config({"model": {"name": "gt", "pe": "deg", "hidden_dim": 16, "num_heads": 2,
                                  "num_layers": 1},
                        "encodings": {"deg_pe": {"powers": 3}}})
    assert cfg.encodings.deg_pe.powers == 3
    assert list(cfg.to_dict()["encodings"])[-1] == "deg_pe"  # appended after the built-ins
    pre = build_pre_transform(cfg.encodings)
    assert repr(pre) == "AddDegreePE(powers=3, attr_name='deg_pe')"
    graphs = [pre(g) for g in _graphs()]
    assert graphs[0].deg_pe.shape == (4, 3)
    torch.testing.assert_close(graphs[0].deg_pe[:, 0], torch.tensor([0.1, 0.2, 0.2, 0.1]))

    kw = model_kwargs(cfg, get_spec("zinc"))
    assert kw["pe_dim"] == 3
    torch.manual_seed(0)
    model = build_model(**kw).eval()
    assert isinstance(model.pe_encoder, LinearPEEncoder)
    assert model.pe_encoder.linear.in_features == 3
    batch = Batch.from_data_list(graphs)
    out = model(batch)
    assert out.shape == (3, 1) and FLIPS == []  # no flips in evaluation
    moved = batch.clone()
    moved.deg_pe = moved.deg_pe + 1.0
    assert not torch.allclose(model(moved), out)  # the encoding reaches the output
    model.train()
    model(batch)
    assert FLIPS == [False]  # the registry's sign flip, once per batch (sign_flip="batch")


def test_a_registered_encoding_is_checked_like_the_builtin_ones(degree_encoding):
    with pytest.raises(ConfigError, match="model.pe is 'deg' but encodings.deg_pe is not set"):
        build_config({"model": {"name": "gt", "pe": "deg"}})
    with pytest.raises(ConfigError, match=r"encodings.deg_pe.powers: Input should be greater"):
        build_config({"model": {"name": "gt", "pe": None}, "encodings": {"deg_pe": {"powers": 0}}})
    with pytest.raises(ValueError, match="already registered"):
        register_encoding(degree_encoding)
    model = build_model("gt", hidden_dim=8, num_layers=1, num_heads=2, out_dim=1,
                        num_node_types=28, pe="deg", pe_dim=2)
    with pytest.raises(ValueError, match="batch has no deg_pe: add encodings.deg_pe"):
        model(Batch.from_data_list(_graphs(1)))


def test_unregistered_names_are_refused():
    with pytest.raises(ConfigError, match="encodings.deg_pe: unknown key"):
        build_config({"model": {"name": "gt", "pe": None}, "encodings": {"deg_pe": {}}})
    with pytest.raises(ConfigError, match="model.pe: Value error, unknown positional encoding "
                                          "pe='deg'"):
        build_config({"model": {"name": "gt", "pe": "deg"}})
    assert encodings_config() is EncodingsConfig  # the built-in schema is the cached one


def test_a_registered_float_encoding_is_value_checked(degree_encoding):
    """The batch and dataset checks read the registry: NaN in a new encoding is named."""
    from graph_transformers.core.checks import validate_dataset
    from graph_transformers.encodings.registry import float_encodings
    from graph_transformers.models.utils import check_inputs
    assert float_encodings()[:3] == ("lap_pe", "svd_pe", "rwse") and "deg_pe" in float_encodings()
    assert "wl_pe" not in float_encodings()  # categorical ids
    graphs = [AddDegreePE(2)(g) for g in _graphs()]
    graphs[1].deg_pe[0, 0] = float("nan")
    with pytest.raises(ValueError, match="positional encoding deg_pe contains NaN"):
        check_inputs(Batch.from_data_list(graphs))
    with pytest.raises(ValueError, match="deg_pe"):
        validate_dataset(graphs, encodings=float_encodings())
