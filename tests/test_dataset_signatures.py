"""The dataset classes take PyG's argument order (issue 27); their old orders still work for one
release with a FutureWarning where a call can be told apart (``data/legacy.py``)."""
from __future__ import annotations

import inspect
import warnings

import pytest

from graph_transformers.data.cache import DataNotFoundError
from graph_transformers.data.legacy import accepts_old_order, looks_like_path, name_first
from graph_transformers.datasets.canonical import GNNBenchmark
from graph_transformers.datasets.molecules.zinc import CanonicalZINC
from graph_transformers.datasets.planetoid import PlanetoidGraph
from graph_transformers.datasets.tu import TU


class Toy:
    @accepts_old_order(("name", "root", "split"), name_first(lambda v: v in ("A", "B")),
                       "Toy(root, name, split)")
    def __init__(self, root=None, name=None, split="train", *, fold=0):
        self.args = (root, name, split, fold)


def test_new_order_and_keywords_pass_through_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Toy("/cache", "A").args == ("/cache", "A", "train", 0)
        assert Toy("cache", "A", "val", fold=2).args == ("cache", "A", "val", 2)
        assert Toy(name="A", root="/c").args == ("/c", "A", "train", 0)
        assert Toy(root="/c", name="Z").args == ("/c", "Z", "train", 0)


@pytest.mark.parametrize("args, kwargs, expected", [
    (("A",), {}, (None, "A", "train", 0)),                     # one positional: a name
    (("A",), {"root": "/c"}, ("/c", "A", "train", 0)),          # name positional, root keyword
    (("A", "/c", "val"), {}, ("/c", "A", "val", 0)),             # the whole old order
    (("custom", "/c"), {}, ("/c", "custom", "train", 0)),      # an unknown name before a path
    (("A", "cache"), {"fold": 1}, ("cache", "A", "train", 1)),  # a known name, then not one
])
def test_old_order_maps_onto_the_new_one_with_a_future_warning(args, kwargs, expected):
    with pytest.warns(FutureWarning, match=r"old order; call Toy\(root, name, split\)"):
        assert Toy(*args, **kwargs).args == expected


def test_old_order_errors_are_one_line_type_errors():
    with pytest.raises(TypeError, match="at most 3 positional arguments in its old order"):
        Toy("A", "/c", "val", 3)
    with pytest.raises(TypeError, match=r"\['split'\] both positionally"):
        Toy("A", "/c", "val", split="test")


def test_looks_like_path():
    from pathlib import Path
    assert looks_like_path(Path("x")) and looks_like_path("data/TU") and looks_like_path("~/c")
    assert not looks_like_path("MUTAG") and not looks_like_path("train")


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


def test_real_classes_accept_the_old_order(tmp_path, monkeypatch):
    """Without data and downloads every call ends in DataNotFoundError; the old orders warn
    first, the new ones do not."""
    monkeypatch.setenv("GRAPH_TRANSFORMERS_OFFLINE", "1")
    empty = tmp_path / "empty"
    empty.mkdir()
    cache = tmp_path / "cache"
    old_calls = [
        lambda: CanonicalZINC("val", empty, cache),
        lambda: GNNBenchmark("PATTERN", "val", empty, cache),
        lambda: TU("MUTAG", cache, "val", 0, empty),
        lambda: PlanetoidGraph("Cora", cache, empty),
    ]
    new_calls = [
        lambda: CanonicalZINC(cache, "val", data_dir=empty),
        lambda: GNNBenchmark(cache, "PATTERN", "val", data_dir=empty),
        lambda: TU(cache, "MUTAG", "val", fold=0, data_dir=empty),
        lambda: PlanetoidGraph(cache, "Cora", data_dir=empty),
    ]
    for call in old_calls:
        with pytest.warns(FutureWarning) as record, pytest.raises(DataNotFoundError):
            call()
        assert record[0].filename == __file__  # the caller's line, not the library's
    for call in new_calls:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            with pytest.raises(DataNotFoundError):
                call()


def test_ogb_keeps_its_own_order_with_split_after_root(tmp_path, monkeypatch):
    pytest.importorskip("ogb")  # the class subclasses OGB's
    from graph_transformers.datasets.molecules.ogb import OGBGraphPropPred
    params = list(inspect.signature(OGBGraphPropPred.__init__).parameters)
    assert params[1:4] == ["name", "root", "split"]
    monkeypatch.setenv("GRAPH_TRANSFORMERS_OFFLINE", "1")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.warns(FutureWarning), pytest.raises(DataNotFoundError):
        OGBGraphPropPred("ogbg-molhiv", "val", empty, tmp_path / "cache")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        with pytest.raises(DataNotFoundError):
            OGBGraphPropPred("ogbg-molhiv", tmp_path / "cache", "val", data_dir=empty)


def test_a_missing_name_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="TU: no dataset name"):
        TU(tmp_path)
    with pytest.raises(ValueError, match="PlanetoidGraph: no dataset name"):
        PlanetoidGraph(root=tmp_path)
