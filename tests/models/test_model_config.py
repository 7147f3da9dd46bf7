"""Models declare their own config (issue 27, item 3): each ``model:`` section is derived from
the model's constructor (:mod:`graph_transformers.models.registry`,
:func:`graph_transformers.training.config.model_section`), and resolves every committed config
exactly as the hand-written sections did; ``docs/adding_a_model.md`` runs as written."""
from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Literal

import pytest
from torch import nn

from graph_transformers.models import MODELS, build_model, model_config, register_model
from graph_transformers.models.registry import (WIRED_ARGUMENTS, PositiveInt, Probability,
                                                argument_docs, config_owner)
from graph_transformers.training.config import ConfigError, build_config, load_config
from graph_transformers.training.model_sections import MODEL_CONFIGS, model_section

REPO = Path(__file__).resolve().parents[2]
#: the sections resolved by the hand-written schema, before the derivation (see its "_about")
BEFORE = json.loads((REPO / "tests/fixtures/model_sections_before.json").read_text())
#: every encoding set, so that no section is refused for a missing one
ENCODINGS = {"spd": {}, "rrwp": {}, "lap_pe": {}, "rwse": {}, "svd_pe": {}, "wl_pe": {}}
PROBES = [-1, 0.5, 1.5, "nope", None]
#: keys added to a section after the snapshot, with their defaults (GPS's Exphormer attention,
#: issue 27; the MPNN baselines' GNN+ options, issue 57): the committed configs resolve them to
#: these
GNN_PLUS_KEYS = {"pe_embed_dim": None, "activation": None, "ffn": False, "ffn_multiplier": 2.0,
                 "ffn_norm": None, "train_eps": True, "gin_mlp_norm": True}
GNN_PLUS_MODELS = ("gat", "gatedgcn", "gcn", "gin", "gine", "pna")
ADDED_SINCE = {"gps": {"num_virtual_nodes": 1}, **{m: GNN_PLUS_KEYS for m in GNN_PLUS_MODELS}}
#: choices added to a key after the snapshot: (old wording, new wording) of its error message
CHOICES_ADDED_SINCE = {"gps.attention": ("'sgformer' or 'none'",
                                         "'sgformer', 'exphormer' or 'none'"),
                       # EGT's per-node flip of the paper's code (issue 53), shared by every
                       # model with a sign-flipped positional encoding
                       **{f"{m}.sign_flip": ("'graph' or 'none'", "'graph', 'node' or 'none'")
                          for m in ("egt", "gat", "gatedgcn", "gcn", "gin", "gine", "gps", "gt",
                                    "pna")},
                       # GNN+'s LRGB head and edge GCN (issue 57)
                       **{f"{m}.head": ("'mlp' or 'layer_sum'", "'mlp', 'layer_sum' or 'mlp_graph'")
                          for m in GNN_PLUS_MODELS},
                       **{f"{m}.gcn_norm": ("'sym_no_self_loops' or 'mean'",
                                            "'sym_no_self_loops', 'mean' or 'sum'")
                          for m in GNN_PLUS_MODELS}}


def _config_files() -> list[Path]:
    files = sorted((REPO / "configs").rglob("*.yaml"))
    files += sorted((REPO / "results").rglob("config.yaml"))
    return files + [REPO / "src/graph_transformers/configs/csl_gt.yaml"]


def _resolve(raw_or_path) -> dict | str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # old key names warn; their values are compared
        try:
            if isinstance(raw_or_path, Path):
                return load_config(raw_or_path).to_dict()["model"]
            return build_config(raw_or_path).to_dict()["model"]
        except ConfigError as err:
            return str(err).replace("invalid config: ", "", 1)


def _without_added(name: str, section: dict | str) -> dict | str:
    if isinstance(section, str):  # an error message
        return section
    added = ADDED_SINCE.get(name, {})
    for key, default in added.items():
        assert section.get(key) == default, (name, key, section.get(key))
    return {k: v for k, v in section.items() if k not in added}


# ------------------------------------------------------------------ same output as before
def test_every_committed_config_resolves_its_model_section_as_before():
    """configs/**.yaml and results/**/config.yaml: the resolved model section (keys, values and
    their order) is the one the hand-written sections gave."""
    files = _config_files()
    assert len(files) > 100
    known = 0
    for path in files:
        rel = str(path.relative_to(REPO))
        got = _resolve(path)
        assert isinstance(got, dict), f"{rel}: {got}"
        if rel not in BEFORE["configs"]:  # a config added since: it loads
            continue
        known += 1
        expected = BEFORE["sections"][BEFORE["configs"][rel]]
        got = _without_added(got["name"], got)
        assert got == expected, rel
        assert list(got) == list(expected), f"{rel}: key order"
    assert known >= 0.9 * len(BEFORE["configs"])  # the snapshot's files are still compared


@pytest.mark.parametrize("name", sorted(BEFORE["defaults"]))
def test_defaults_and_error_messages_are_as_before(name):
    """For every model name: the section of ``{name: <name>}``, and the outcome of each key set to
    -1, 0.5, 1.5, 'nope' and null (the value it resolves to, or the exact ConfigError)."""
    got = _without_added(name, _resolve({"model": {"name": name}, "encodings": ENCODINGS}))
    expected = BEFORE["defaults"][name]
    assert got == expected and (isinstance(got, str) or list(got) == list(expected))
    probes = {k: v for k, v in BEFORE["probes"].items() if k.startswith(f"{name}.")}
    assert probes
    for probe, before in probes.items():
        key = probe[len(name) + 1:].split("=", 1)[0]
        value = PROBES[[f"{name}.{key}={v!r}" for v in PROBES].index(probe)]
        got = _resolve({"model": {"name": name, key: value}, "encodings": ENCODINGS})
        if isinstance(got, dict):
            got = {"ok": got[key]}
        if isinstance(before, str) and f"{name}.{key}" in CHOICES_ADDED_SINCE:
            before = before.replace(*CHOICES_ADDED_SINCE[f"{name}.{key}"])
        if isinstance(before, str) and key == "compile":  # 'full' and 'cudagraphs' (issue 56)
            before = re.sub(r"valid boolean(, unable to interpret input)?",
                            "valid boolean, 'full' or 'cudagraphs'", before)
        assert got == before, probe


@pytest.mark.parametrize("model, message", [
    ({"name": "gt", "full_graph": True, "use_edge_features": True},
     "model.full_graph discards edge features (GT paper, Table 1): set "
     "model.use_edge_features=false"),
    ({"name": "gt", "hidden_dim": 60}, "model.hidden_dim=60 must be divisible by "
                                       "model.num_heads=8"),
    ({"name": "egt", "scale_degree": True, "variant": "ungated"},
     "model.scale_degree sums the sigmoid gates; EGT-Ungated has none"),
    ({"name": "egt", "distance_objective": True, "variant": "simple"},
     "model.distance_objective needs edge channels; EGT-Simple has none"),
    ({"name": "egt", "pe": "wl"}, "model.pe='wl' holds categorical ids; EGT projects features "
                                  "(W_enc, §3.2): use svd, lap or rwse"),
    ({"name": "egt", "distance_objective": True, "structure": "distance"},
     "model.distance_objective uses the adjacency as input (EGT §3.3): set "
     "model.structure=adjacency"),
    ({"name": "gps", "mpnn": None, "attention": "none"},
     "model.mpnn is null and model.attention is 'none': a GPS layer needs at least one of them"),
    ({"name": "gps", "pe_embed_dim": 64}, "model.pe_embed_dim=64 must be smaller than "
                                          "model.hidden_dim=64"),
    ({"name": "gps", "mpnn": "gin", "use_edge_features": True},
     "model.mpnn='gin' takes no edge features: set model.use_edge_features=false"),
    ({"name": "gps", "mpnn": "gatedgcn", "use_edge_features": False},
     "model.mpnn='gatedgcn' needs edge features: set model.use_edge_features=true, or, for "
     "graphs without edge features, model.mpnn=gin (or gcn)"),
    ({"name": "gat", "gcn_norm": "mean"}, "model.gcn_norm applies to gcn only "
                                          "(model.name='gat')"),
    ({"name": "gcn", "gat_self_loops": False}, "model.gat_self_loops applies to gat only "
                                               "(model.name='gcn')"),
    ({"name": "gat", "hidden_dim": 60}, "model.hidden_dim=60 must be divisible by "
                                        "model.num_heads=8 (GAT)"),
    ({"name": "pna", "hidden_dim": 64, "pna_towers": 3}, "model.hidden_dim=64 must be divisible "
                                                         "by model.pna_towers=3 (PNA)"),
    ({"name": "gin", "use_edge_features": True}, "gin takes no edge features: set "
                                                 "model.use_edge_features=false"),
    ({"name": "gine", "use_edge_features": False}, "gine needs edge features: set "
                                                   "model.use_edge_features=true (or use gin)"),
])
def test_the_models_cross_checks_fire_with_their_messages(model, message):
    """The hand-written sections' validator messages, now each model's ``config_checks``."""
    with pytest.raises(ConfigError) as err:
        build_config({"model": model, "encodings": ENCODINGS})
    assert str(err.value) == f"invalid config: model: Value error, {message}"


def test_heads_need_not_divide_hidden_for_the_mpnn_baselines_but_gat():
    assert build_config({"model": {"name": "gcn", "hidden_dim": 60}}).model.hidden_dim == 60
    assert model_section("gcn").heads_divide_hidden is False
    assert model_section("gt").heads_divide_hidden is True


@pytest.mark.parametrize("name, encoding", [("grpe", "spd"), ("graphormer", "spd"),
                                            ("grit", "rrwp")])
def test_encoding_arguments_require_the_encoding_and_are_wired(name, encoding):
    from graph_transformers.data.registry import get_spec
    from graph_transformers.training.build import model_kwargs
    with pytest.raises(ConfigError, match=rf"model '{name}' needs encodings.{encoding} "):
        build_config({"model": {"name": name}})
    arg, key, value = (("max_distance", "max_distance", 7) if encoding == "spd" else
                       ("walk_length", "walk_length", 9))
    cfg = build_config({"model": {"name": name}, "encodings": {encoding: {key: value}}})
    assert arg not in cfg.to_dict()["model"]
    assert model_kwargs(cfg, get_spec("zinc"))[arg] == value


# ------------------------------------------------------------------ the derivation itself
class _Toy(nn.Module):
    """A model to derive a section from.

    Args:
        width: the width.
        out_dim: outputs.
        level: graph / node / edge.
        num_node_types / num_node_features: node features.
        mode: ``"a"`` or ``"b"``.
        dropout, noise: two rates sharing a line.
        walks: from an encoding.
        kind: set by a subclass.
    """

    def __init__(self, width: PositiveInt, out_dim: int, level: str = "graph",
                 num_node_types: int | None = None, num_node_features: int | None = None,
                 use_edge_features: bool = False, mode: Literal["a", "b"] = "a",
                 dropout: Probability = 0.0, noise: float | None = None, walks: int = 3,
                 kind: str = "x", undocumented: int = 1) -> None:
        super().__init__()
        self.lin = nn.Linear(1, out_dim)

    @staticmethod
    def config_checks(model) -> None:
        if model.mode == "b" and model.dropout > 0:
            raise ValueError("model.dropout applies to mode a only")


@pytest.fixture
def toy():
    cls = register_model("toy")(model_config(
        defaults={"width": 16}, encoding_args={"walks": "rwse.walk_length"},
        exclude=("kind",))(_Toy))
    try:
        yield cls
    finally:
        del MODELS["toy"]


def test_a_section_is_derived_from_the_constructor(toy):
    section = MODEL_CONFIGS["toy"]
    assert section is model_section("toy") and "toy" in MODEL_CONFIGS
    assert section.model_class is toy and section.required_encodings == ("rwse",)
    fields = section.model_fields
    # wired, encoding and excluded arguments are no keys; name and compile are in every section
    assert list(fields) == ["compile", "name", "width", "use_edge_features", "mode", "dropout",
                            "noise", "undocumented"]
    assert not set(fields) & set(WIRED_ARGUMENTS)
    # defaults: the signature's, the spec's for a required argument
    assert {k: f.default for k, f in fields.items() if k != "compile"} == {
        "name": "toy", "width": 16, "use_edge_features": False, "mode": "a", "dropout": 0.0,
        "noise": None, "undocumented": 1}
    # descriptions: the Args lines, grouped entries sharing theirs
    assert fields["width"].description == "the width."
    assert fields["dropout"].description == fields["noise"].description == \
        "two rates sharing a line."
    assert fields["undocumented"].description is None
    # types: the annotations (use_edge_features widened to auto)
    section(name="toy", mode="b", use_edge_features="auto", noise=0.5)
    with pytest.raises(ValueError, match="Input should be 'a' or 'b'"):
        section(mode="c")
    with pytest.raises(ValueError, match="greater than 0"):
        section(width=0)
    schema = section.model_json_schema()["properties"]
    assert schema["mode"]["enum"] == ["a", "b"] and schema["width"]["description"] == "the width."


def test_a_registered_model_is_configured_like_the_builtin_ones(toy):
    from graph_transformers.data.registry import get_spec
    from graph_transformers.training.build import model_kwargs
    cfg = build_config({"model": {"name": "toy", "width": 8}, "encodings": {"rwse": {}}})
    assert cfg.to_dict()["model"] == {"compile": False, "name": "toy", "width": 8,
                                      "use_edge_features": False, "mode": "a", "dropout": 0.0,
                                      "noise": None, "undocumented": 1}
    kw = model_kwargs(cfg, get_spec("zinc"))
    assert kw["walks"] == 20 and kw["out_dim"] == 1 and "kind" not in kw
    assert isinstance(build_model(**kw), toy)
    # the same clear errors as the built-in sections
    for model, message in [
            ({"widht": 8}, "model.widht: unknown key"),
            ({"width": "wide"}, "model.width: Input should be a valid integer, unable to parse "
                                "string as an integer (got 'wide')"),
            ({"mode": "b", "dropout": 0.5}, "model: Value error, model.dropout applies to mode "
                                            "a only"),
            ({"walks": 4}, "model.walks: unknown key")]:
        with pytest.raises(ConfigError) as err:
            build_config({"model": {"name": "toy", **model}, "encodings": {"rwse": {}}})
        assert str(err.value) == f"invalid config: {message}"
    with pytest.raises(ConfigError, match="model 'toy' needs encodings.rwse"):
        build_config({"model": {"name": "toy"}})


def test_a_required_argument_without_a_config_default_is_a_required_key():
    class Sized(nn.Module):
        def __init__(self, depth: PositiveInt, out_dim: int, level: str = "graph",
                     num_node_types=None, num_node_features=None) -> None:
            super().__init__()

    register_model("sized")(Sized)
    try:
        with pytest.raises(ConfigError, match="model.depth: Field required"):
            build_config({"model": {"name": "sized"}})
        assert build_config({"model": {"name": "sized", "depth": 2}}).model.depth == 2
    finally:
        del MODELS["sized"]


def test_declarations_are_checked():
    with pytest.raises(ValueError, match=r"model_config defaults names \['nope'\]"):
        model_config(defaults={"nope": 1})(_Toy)
    with pytest.raises(ValueError, match=r"\['walks'\] have defaults in the constructor"):
        model_config(defaults={"walks": 4})(_Toy)
    with pytest.raises(ValueError, match=r"model name\(s\) \['gt'\] already registered"):
        register_model("gt")(_Toy)
    with pytest.raises(ConfigError, match="unknown model name 'nope'; known: \\['egt', "):
        build_config({"model": {"name": "nope"}})


def test_the_mpnn_baselines_share_one_section():
    section = model_section("gcn")
    assert all(model_section(n) is section for n in ("gat", "gatedgcn", "gin", "gine", "pna"))
    assert config_owner(MODELS["pna"]).__name__ == "MPNN"
    assert section.model_fields["name"].is_required()
    assert "conv" not in section.model_fields
    assert section(name="gat").name == "gat"
    import graph_transformers.training.config as config
    assert not hasattr(config, "MPNNModelConfig")  # the pre-issue-27 name is gone in 0.2.0


@pytest.mark.parametrize("name", sorted({config_owner(c).__name__: n
                                         for n, c in MODELS.items()}.values()))
def test_every_key_of_the_builtin_models_is_described(name):
    """Each constructor documents each of its config keys under ``Args:``: the description of
    the key in the JSON schema and the API reference."""
    schema = model_section(name).model_json_schema()
    assert schema["description"].startswith("The ``model:`` section of")
    undescribed = [k for k, v in schema["properties"].items() if not v.get("description")]
    assert not undescribed, f"{name}: {undescribed}"


def test_argument_docs_reads_the_projects_grouped_entries():
    class Doc:
        """Summary.

        Args:
            a: first
                continued.
            b / c: shared.
            d, e: also shared.

        Returns:
            f: not an argument.
        """

        def __init__(self, a, b, c, d, e) -> None: ...

    assert argument_docs(Doc) == {"a": "first continued.", "b": "shared.", "c": "shared.",
                                  "d": "also shared.", "e": "also shared."}


def test_the_config_json_schema_still_builds():
    from graph_transformers.training.config import Config
    assert "model" in Config.model_json_schema()["properties"]
    for name in MODEL_CONFIGS:
        assert model_section(name).model_json_schema()["properties"]["name"]


# ------------------------------------------------------------------ docs/adding_a_model.md
def test_the_adding_a_model_guide_runs(tmp_path, monkeypatch):
    """Every code block of the guide, in order: the model module, the section checks, the YAML
    config (saved where the guide says), and the tests it asks for, which are then run."""
    text = (REPO / "docs/adding_a_model.md").read_text()
    blocks = re.findall(r"^```(python|yaml)\n(.*?)^```$", text, flags=re.S | re.M)
    assert [kind for kind, _ in blocks] == ["python", "python", "yaml", "python"]
    module, checks, config, tests = (code for _, code in blocks)
    namespace = {"__name__": "guide_deepsets"}
    try:
        exec(compile(module, "adding_a_model.md:model", "exec"), namespace)
        exec(compile(checks, "adding_a_model.md:section", "exec"), dict(namespace))
        monkeypatch.chdir(tmp_path)
        (tmp_path / "configs/zinc").mkdir(parents=True)
        (tmp_path / "configs/zinc/deepsets.yaml").write_text(config)
        cfg = load_config("configs/zinc/deepsets.yaml")
        assert cfg.model.name == "deepsets" and cfg.model.hidden_dim == 128
        with pytest.raises(ConfigError, match=re.escape(
                "invalid config: model.dropout: Input should be less than 1 (got 1.5)")):
            load_config("configs/zinc/deepsets.yaml", ["model.dropout=1.5"])
        test_space = {"__name__": "guide_tests"}
        exec(compile(tests, "adding_a_model.md:tests", "exec"), test_space)
        ran = [name for name in test_space if name.startswith("test_")]
        assert len(ran) == 2
        for name in ran:
            test_space[name]()
    finally:
        MODELS.pop("deepsets", None)
