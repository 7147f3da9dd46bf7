"""``model.use_edge_features: auto`` comes from what each model class declares it reads
(``edge_feature_use``, :class:`~graph_transformers.models.registry.EdgeFeatureUse`), not from
model names written into the training code (issue 55)."""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
from torch import nn

from graph_transformers.models import MODELS, register_model
from graph_transformers.models.registry import EdgeFeatureUse, edge_feature_use
from graph_transformers.training.build import _no_edge_features_error, resolve_edge_features

TRAINING = Path(__file__).resolve().parents[2] / "src" / "graph_transformers" / "training"

TYPES = SimpleNamespace(name="types", edge_types=4, edge_dim=None)
COLUMNS = SimpleNamespace(name="columns", edge_types=None, edge_dim=3)
NONE = SimpleNamespace(name="plain", edge_types=None, edge_dim=None)


@pytest.fixture
def declared():
    """Two models registered for the test: one reading edge types only, one needing edge
    features unless its ``mode`` is ``"plain"``."""

    class Categorical(nn.Module):
        @staticmethod
        def edge_feature_use(**_):
            return EdgeFeatureUse("categorical")

    class Needy(nn.Module):
        @staticmethod
        def edge_feature_use(mode: str = "edges", **_):
            if mode == "plain":
                return EdgeFeatureUse("none")
            return EdgeFeatureUse("any", needed_by="the edge layer", instead="model.mode=plain")

    register_model("_categorical_probe")(Categorical)
    register_model("_needy_probe")(Needy)
    try:
        yield
    finally:
        del MODELS["_categorical_probe"], MODELS["_needy_probe"]


def test_auto_follows_the_models_declaration(declared):
    auto = {"name": "_categorical_probe", "use_edge_features": "auto"}
    assert resolve_edge_features(auto, TYPES) is True
    assert resolve_edge_features(auto, COLUMNS) is False  # continuous ones it cannot read
    assert resolve_edge_features(auto, NONE) is False
    needy = {"name": "_needy_probe", "use_edge_features": "auto"}
    assert resolve_edge_features(needy, COLUMNS) is True
    assert resolve_edge_features({**needy, "mode": "plain"}, COLUMNS) is False
    # an explicit value is taken as given
    assert resolve_edge_features({**auto, "use_edge_features": True}, COLUMNS) is True


def test_the_error_names_the_declared_fix(declared):
    err = _no_edge_features_error("_needy_probe", {}, NONE, "auto")
    assert str(err) == ("model.use_edge_features is auto but dataset 'plain' has no edge "
                        "features; set model.use_edge_features=false and model.mode=plain: the "
                        "edge layer needs edge features")
    err = _no_edge_features_error("_categorical_probe", {}, NONE, "set")
    assert str(err).endswith("has no edge features; set model.use_edge_features=false")


def test_a_model_that_declares_nothing_reads_any_edge_features():
    assert edge_feature_use("_not_registered", {}) == EdgeFeatureUse("any")
    assert resolve_edge_features({"name": "_not_registered", "use_edge_features": "auto"},
                                 COLUMNS) is True


@pytest.mark.parametrize("name, kwargs, reads, needed", [
    ("gt", {}, "any", False), ("gt", {"full_graph": True}, "none", False),
    ("gps", {"mpnn": None}, "none", False), ("gps", {"mpnn": "gin"}, "none", False),
    ("gps", {"mpnn": "gine"}, "any", True), ("gps", {"mpnn": "gatedgcn"}, "any", True),
    ("gps", {"mpnn": "gat"}, "any", False), ("grpe", {}, "categorical", False),
    ("graphormer", {}, "categorical", False), ("gcn", {}, "none", False),
    ("gin", {}, "none", False), ("gine", {}, "any", True), ("gatedgcn", {}, "any", False),
    ("egt", {}, "any", False), ("grit", {}, "any", False)])
def test_the_builtin_models_declare_what_they_read(name, kwargs, reads, needed):
    use = edge_feature_use(name, kwargs)
    assert use.reads == reads and (use.needed_by is not None) == needed


def test_no_model_name_is_written_into_the_training_code():
    """The run asks the model classes (``edge_feature_use``, ``needs_degree_histogram``, the
    config section they declare); coverage and reproduction describe the papers' cells."""
    found = []
    for path in sorted(TRAINING.glob("*.py")):
        if path.name in ("coverage.py", "reproduction.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in MODELS:
                found.append(f"{path.name}:{node.lineno} {node.value!r}")
    assert not found, found
