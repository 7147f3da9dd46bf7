"""The dataset classes take PyG's argument order (issue 27) and only that one: the old orders that
0.1 still accepted with a FutureWarning were removed in 0.2.0 (issue 55), and a call in one of
them now fails at once with a one-line error (it is never read as another dataset)."""
from __future__ import annotations

import importlib.util
import inspect
import warnings

import pytest

from graph_transformers.data.cache import DataNotFoundError
from graph_transformers.datasets.gnn_benchmark import GNNBenchmark
from graph_transformers.datasets.molecules.zinc import CanonicalZINC
from graph_transformers.datasets.planetoid import PlanetoidGraph
from graph_transformers.datasets.tu import TU


@pytest.mark.parametrize("cls, first", [(TU, "name"), (PlanetoidGraph, "name"),
                                        (GNNBenchmark, "name"), (CanonicalZINC, "split")])
def test_signatures_follow_pyg(cls, first):
    params = list(inspect.signature(cls.__init__).parameters)
    assert params[1] == "root" and params[2] == first
    tail = ["transform", "pre_transform", "force_reload"]
    assert [p for p in params if p in tail] == tail
    assert params.index("force_reload") < params.index("data_dir")
    assert inspect.signature(cls.__init__).parameters["data_dir"].kind is \
        inspect.Parameter.KEYWORD_ONLY


def test_the_compatibility_layer_is_gone():
    assert importlib.util.find_spec("graph_transformers.data.legacy") is None


@pytest.fixture
def offline_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPH_TRANSFORMERS_OFFLINE", "1")
    empty = tmp_path / "empty"
    empty.mkdir()
    return empty, tmp_path / "cache"


@pytest.mark.parametrize("old", ["zinc", "benchmark", "tu", "planetoid"])
def test_an_old_order_call_fails_clearly(old, offline_dirs):
    """The old positional orders (``CanonicalZINC(split, data_dir, root)``, ``GNNBenchmark(name,
    split, data_dir, root)``, ``TU(name, root, split, fold, data_dir)``,
    ``PlanetoidGraph(name, root, data_dir)``) are one-line errors, without a FutureWarning."""
    empty, cache = offline_dirs
    call = {
        "zinc": lambda: CanonicalZINC("val", empty, cache),
        "benchmark": lambda: GNNBenchmark("PATTERN", "val", empty, cache),
        "tu": lambda: TU("MUTAG", cache, "val", 0, empty),
        "planetoid": lambda: PlanetoidGraph("Cora", cache, empty),
    }[old]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        with pytest.raises((TypeError, ValueError)) as info:
            call()
    assert "\n" not in str(info.value)


def test_the_pyg_order_reaches_the_files(offline_dirs):
    """The same calls in PyG's order get as far as looking for the files."""
    empty, cache = offline_dirs
    for call in [
        lambda: CanonicalZINC(cache, "val", data_dir=empty),
        lambda: GNNBenchmark(cache, "PATTERN", "val", data_dir=empty),
        lambda: TU(cache, "MUTAG", "val", fold=0, data_dir=empty),
        lambda: PlanetoidGraph(cache, "Cora", data_dir=empty),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            with pytest.raises(DataNotFoundError):
                call()


def test_ogb_keeps_its_own_order_with_split_after_root(offline_dirs):
    pytest.importorskip("ogb")  # the class subclasses OGB's
    from graph_transformers.datasets.molecules.ogb import OGBGraphPropPred
    params = list(inspect.signature(OGBGraphPropPred.__init__).parameters)
    assert params[1:4] == ["name", "root", "split"]
    empty, cache = offline_dirs
    with pytest.raises(ValueError, match="split must be one of"):
        OGBGraphPropPred("ogbg-molhiv", "val", empty, cache)  # the old order
    with pytest.raises(DataNotFoundError):
        OGBGraphPropPred("ogbg-molhiv", cache, "val", data_dir=empty)


def test_a_missing_name_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="TU: no dataset name"):
        TU(tmp_path)
    with pytest.raises(ValueError, match="PlanetoidGraph: no dataset name"):
        PlanetoidGraph(root=tmp_path)
