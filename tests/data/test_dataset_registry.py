"""The dataset registry and the layout of issue 27 (ARCHITECTURE: ``data/`` is the framework,
``datasets/`` the zoo by family): the registry imports no dataset module until a run names one,
every registered dataset declares its spec next to a loader in PyG's signature order, and the
config's ``data`` section reaches a loader as plain keyword arguments."""
from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from graph_transformers.data import registry
from graph_transformers.data.registry import DatasetSpec, dataset_arguments, get_spec
from graph_transformers.training.config import DataConfig
from test_layering import PKG, _imports

#: PyG's order: ``root``, the dataset's name where a loader serves several, ``split``, then the
#: ``InMemoryDataset`` arguments
PYG_ORDER = ["root", "split", "transform", "pre_transform", "force_reload"]


def test_data_imports_no_dataset_module():
    """``data/`` names the datasets by ``"module:ATTRIBUTE"`` strings only."""
    bad = [f"{p.relative_to(PKG)}:{line} imports {mod}"
           for p in sorted((PKG / "data").rglob("*.py")) for line, mod, _ in _imports(p)
           if mod.startswith("graph_transformers.datasets") or mod.startswith(
               "graph_transformers.training")]
    assert not bad, "\n".join(bad)
    code = ("import sys; import graph_transformers.data.registry as r; r.get_spec('csl'); "
            "print(sorted(m for m in sys.modules if m.startswith('graph_transformers.datasets')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    # naming one dataset imports its family module and what it builds on, nothing else
    assert out == str(["graph_transformers.datasets", "graph_transformers.datasets.gnn_benchmark",
                       "graph_transformers.datasets.synthetic",
                       "graph_transformers.datasets.synthetic.csl"])


def test_no_data_module_imports_a_package_module_inside_a_function():
    """Imports of the package's own modules in ``data/`` sit at module level (an import inside a
    function is how a cycle gets dodged)."""
    bad = [f"{p.relative_to(PKG)}:{line} imports {mod} inside a function"
           for p in sorted((PKG / "data").glob("*.py"))
           for line, mod, inside in _imports(p)
           if inside and mod.startswith("graph_transformers")]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(registry.DATASETS))
def test_every_dataset_declares_its_spec_next_to_a_pyg_ordered_loader(name):
    ref = registry.DATASETS[name]
    module, _, attr = ref.partition(":")
    assert module.startswith("graph_transformers.datasets.") and attr.endswith("_SPEC")
    spec = get_spec(name)
    assert isinstance(spec, DatasetSpec) and spec.name == name
    load = spec.load.func if hasattr(spec.load, "func") else spec.load  # a functools.partial
    assert load.__module__ == module and load.__name__.startswith("load_")
    params = [p for p in inspect.signature(load).parameters.values()
              if p.kind is not p.VAR_KEYWORD]
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional in (PYG_ORDER, PYG_ORDER[:1] + ["name"] + PYG_ORDER[1:]), positional
    keyword = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    assert "source" in keyword or not spec.published  # one loader, both forms


def test_the_data_section_is_read_once_into_plain_arguments():
    cfg = DataConfig(name="node_table", edges="e.csv", nodes="n.csv", split="columns",
                     seed=3, options={"id_base": 1})
    name, args, options = dataset_arguments(cfg)
    assert name == "node_table" and options == {"id_base": 1}
    assert args["edges"] == "e.csv" and args["split_rule"] == "columns" and args["seed"] == 3
    assert all(not hasattr(v, "model_fields") for v in args.values())  # no config objects

    seen = {}

    def load(root, split="train", transform=None, pre_transform=None, force_reload=False, *,
             seed=0, id_base=None, **options):
        seen.update(root=root, split=split, seed=seed, id_base=id_base, **options)

    registry.call_with(load, ("seed", "id_base", "extra"), args,
                       {**options, "extra": 2, "fold": 9}, root=Path("r"), split="val",
                       pre_transform=None)
    # exactly the declared arguments, from the section or data.options; fold is not declared
    assert seen == {"root": Path("r"), "split": "val", "seed": 3, "id_base": 1, "extra": 2}


def test_an_undeclared_option_is_one_line_naming_the_accepted_ones():
    registry.check_options("pattern", get_spec("pattern").params, {"seed": 1, "num_patterns": 3})
    registry.check_options("zinc", ("data_dir",), {"fold": 2})  # fold / seed: ignored if unused
    with pytest.raises(ValueError) as info:
        registry.check_options("pattern", get_spec("pattern").params, {"num_pattern": 3})
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("data.options: dataset 'pattern' takes no option "
                                                "'num_pattern'; it accepts")
    assert "'num_patterns'" in msg and "'num_graphs_per_pattern'" in msg and "data_dir" not in msg
    with pytest.raises(ValueError, match="'max_rows'; it accepts no options"):
        registry.check_options("zinc", get_spec("zinc").params, {"max_rows": 3})


@pytest.mark.parametrize("name", sorted(registry.DATASETS))
def test_every_declared_parameter_is_one_the_loader_takes(name):
    """The registry reads nothing off a loader's signature: a registration declares its
    parameters (``DatasetSpec.params``); this checks each declaration against its loader."""
    spec = get_spec(name)
    load = spec.load.func if hasattr(spec.load, "func") else spec.load
    fixed = set(getattr(spec.load, "keywords", {}))
    sig = inspect.signature(load).parameters
    takes_all = any(p.kind is p.VAR_KEYWORD for p in sig.values())
    named = {n for n, p in sig.items() if p.kind is not p.VAR_KEYWORD}
    assert spec.params, f"{name} declares no parameters"
    assert not set(spec.params) & fixed
    assert takes_all or set(spec.params) <= named, set(spec.params) - named
    assert all(p in named or p not in registry.SECTION_KEYS or takes_all for p in spec.params)


def test_the_registry_inspects_no_signature():
    import ast
    tree = ast.parse(Path(registry.__file__).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "inspect" not in imported and "inspect" not in names


def test_register_dataset_refuses_a_taken_name():
    with pytest.raises(ValueError, match="registered already"):
        registry.register_dataset("zinc", get_spec("csl"))
    with pytest.raises(ValueError, match="registered already"):
        registry.register_dataset("tu:DD", get_spec("csl"))
