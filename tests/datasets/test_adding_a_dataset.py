"""``docs/adding_a_dataset.md`` runs as written: its ``python`` blocks, in order (the graphs, the
dataset class, the loader, the spec, the registration, a run's splits and model), then the tests
it asks for. Blocks fenced ``py`` are excerpts (a line of the registry, CSL's loader) and are not
run; the CSL excerpt is checked against the real loader's signature."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from graph_transformers.data import registry

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "adding_a_dataset.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```$", GUIDE.read_text(), flags=re.S | re.M)


def test_the_adding_a_dataset_guide_runs(tmp_path, monkeypatch):
    blocks = _blocks("python")
    assert len(blocks) == 7
    namespace = {"__name__": "guide_cycles"}
    try:
        for i, code in enumerate(blocks):
            exec(compile(code, f"adding_a_dataset.md:block{i + 1}", "exec"), namespace)
        # what the guide prints
        splits, model = namespace["splits"], namespace["model"]
        assert {s: len(ds) for s, ds in splits.items()} == {"train": 40, "val": 10, "test": 10}
        g = splits["train"][0]
        assert g.x.shape == (18, 1) and g.lap_pe.shape == (18, 4) and g.y.shape == (1,)
        assert splits["train"].data_source == {"requested": "auto", "source": "generated",
                                               "loader": "guide_cycles.Cycles"}
        assert type(model).__name__ == "GraphTransformer"
        assert registry.get_spec("cycles") is namespace["CYCLES_SPEC"]
        # the tests the guide asks for
        namespace["test_cycles_graphs_unchanged"]()
        for name in ("test_cycles_cache_folder_unchanged", "test_cycles_arguments_are_checked"):
            folder = tmp_path / name
            folder.mkdir()
            namespace[name](folder)
    finally:
        registry.DATASETS.pop("cycles", None)
    with pytest.raises(ValueError, match="unknown dataset 'cycles'"):
        registry.get_spec("cycles")


def test_the_guide_excerpts_match_the_code():
    """The registry line and CSL's loader as the guide quotes them."""
    from graph_transformers.datasets.synthetic.csl import load_csl

    excerpts = "\n".join(_blocks("py"))
    assert '"cycles": _D + "synthetic.cycles:CYCLES_SPEC"' in excerpts
    assert registry.DATASETS["csl"] == registry._D + "synthetic.csl:CSL_SPEC"
    params = list(inspect.signature(load_csl).parameters)
    assert params == ["root", "split", "transform", "pre_transform", "force_reload", "source",
                      "fold", "seed", "data_dir"]
    assert "def load_csl(root, split=\"train\", transform=None, pre_transform=None, " \
           "force_reload=False, *,\n             source=\"generated\", fold=0, seed=0, " \
           "data_dir=None):" in excerpts
