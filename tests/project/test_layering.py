"""The floors of the package (docs: ARCHITECTURE, ``docs/api/core.md``): no arrow points up.

Walks every import statement (module level and inside functions) with ``ast``, so an import
hidden in a function body to dodge a cycle is caught too.

The data floors (issue 55): ``data/`` is the framework (registry, cache, published files,
samplers) and imports no dataset module (it names the datasets by ``"module:ATTRIBUTE"`` strings,
imported on first use); ``datasets/`` is the zoo and imports neither ``training/``, ``models/``,
``nn/``, ``encodings/``, the CLI nor the prediction code. Within ``datasets/`` the families
(``molecules/``, ``images/``, ``synthetic/``, ``user/``, ``tu*.py``, ``planetoid.py``) import no
other family: only their own modules and the shared modules of :data:`SHARED_DATASET_MODULES`
(PyG's ``GNNBenchmarkDataset``, which the synthetic and image families both read); the molecule
featurization every molecule dataset uses lives inside ``molecules/``.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "src" / "graph_transformers"

#: floor → package-internal modules it may import (prefixes of ``graph_transformers.*``)
ALLOWED = {
    "core": ("core", "errors"),
    "encodings": ("core", "encodings", "errors", "_lazy", "_optional", "fileio"),
    "nn": ("core", "encodings", "nn", "errors", "_lazy", "_optional"),
    "models": ("core", "encodings", "nn", "models", "errors", "_lazy", "_optional"),
    "data": ("core", "encodings", "data", "errors", "fileio", "_lazy", "_optional"),
    "datasets": ("core", "data", "datasets", "errors", "fileio", "_lazy", "_optional"),
}
#: modules of ``datasets/`` that several families share (every other module belongs to one)
SHARED_DATASET_MODULES = ("gnn_benchmark",)
#: function-level imports of the package's own modules that wrap an optional dependency
#: (importing :mod:`graph_transformers.datasets.molecules.ogb` imports ``ogb``)
OPTIONAL_IMPORTS = {"graph_transformers.datasets.molecules.ogb"}
#: third-party modules the ground floor may import besides the standard library
CORE_THIRD_PARTY = ("torch", "torch_geometric")


def _imports(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, absolute module, inside a function)`` for every import of ``path``."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    package = list(rel.parts[:-1])  # the package a relative import starts from
    tree = ast.parse(path.read_text(), str(path))
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((child.lineno, a.name, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[:len(package) - child.level + 1]
                    mod = ".".join(base + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                found.append((child.lineno, mod, in_function))
            visit(child, inside)

    visit(tree, False)
    return found


def _modules(floor: str) -> list[Path]:
    return sorted((PKG / floor).rglob("*.py"))


@pytest.mark.parametrize("floor", sorted(ALLOWED))
def test_no_floor_imports_a_floor_above_it(floor):
    bad = []
    for path in _modules(floor):
        for line, mod, _ in _imports(path):
            if mod.startswith("graph_transformers"):
                inner = mod.split(".")[1] if "." in mod else ""
                if inner not in ALLOWED[floor]:
                    bad.append(f"{path.relative_to(PKG)}:{line} imports {mod}")
    assert not bad, "\n".join(bad)


def test_the_ground_floor_imports_only_torch_and_pyg():
    stdlib = sys.stdlib_module_names
    bad = []
    for path in _modules("core"):
        for line, mod, _ in _imports(path):
            top = mod.split(".")[0]
            if top in stdlib or top == "__future__" or top == "graph_transformers":
                continue
            if top not in CORE_THIRD_PARTY:
                bad.append(f"{path.relative_to(PKG)}:{line} imports {mod}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("floor", sorted(ALLOWED))
def test_no_package_import_hides_inside_a_function(floor):
    """Imports of the package's own modules sit at module level (an import inside a function
    is how a cycle gets dodged); third-party imports inside functions stay allowed (optional,
    heavy dependencies)."""
    bad = [f"{path.relative_to(PKG)}:{line} imports {mod} inside a function"
           for path in _modules(floor) for line, mod, inside in _imports(path)
           if inside and mod.startswith("graph_transformers") and mod not in OPTIONAL_IMPORTS]
    assert not bad, "\n".join(bad)


def _family(module: str) -> str:
    """The family of a module of ``datasets/`` (``"graph_transformers.datasets.<x>..."``): its
    sub-package, or for a top-level module its stem up to ``_`` (``tu_folds`` → ``tu``)."""
    return module.split(".")[2].split("_")[0] if module.count(".") >= 2 else ""


def test_dataset_families_import_no_other_family():
    bad = []
    for path in _modules("datasets"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        own = _family(".".join(rel.parts))
        for line, mod, _ in _imports(path):
            if not mod.startswith("graph_transformers.datasets.") or own == "__init__":
                continue
            target = mod.split(".")[2]
            if target not in SHARED_DATASET_MODULES and _family(mod) not in (own, "__init__"):
                bad.append(f"{path.relative_to(PKG)}:{line} imports {mod} (another family)")
    assert not bad, "\n".join(bad)


def test_the_family_rule_can_fail(monkeypatch):
    """A planted import of one family by another is reported."""
    fake = PKG / "datasets" / "images" / "_family_probe.py"
    monkeypatch.setattr(sys.modules[__name__], "_modules", lambda floor: [fake])
    original = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: (
        "from ..molecules.zinc import ZINCSubset\n" if self == fake
        else original(self, *a, **k)))
    with pytest.raises(AssertionError, match="_family_probe.py:1 imports "
                                             "graph_transformers.datasets.molecules.zinc"):
        test_dataset_families_import_no_other_family()


def test_the_walker_sees_relative_and_function_level_imports(monkeypatch):
    """The check itself can fail: a planted upward import inside a function is reported."""
    fake = PKG / "nn" / "_layering_probe.py"
    monkeypatch.setattr(sys.modules[__name__], "_modules", lambda floor: [fake])
    source = "def f():\n    from ..training.fit import train\n"
    original = Path.read_text
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *a, **k: source if self == fake else original(self, *a, **k))
    with pytest.raises(AssertionError, match="nn/_layering_probe.py:2 imports "
                                             "graph_transformers.training.fit"):
        test_no_floor_imports_a_floor_above_it("nn")
    with pytest.raises(AssertionError, match="inside a function"):
        test_no_package_import_hides_inside_a_function("nn")


@pytest.mark.parametrize("package", ["nn", "data", "datasets", "training", "models"])
def test_the_public_names_resolve_and_the_api_docs_name_them(package):
    """A small public API (issue 27): each package's ``__all__`` resolves, and the API page of
    the package names every entry (the layers page is rendered from ``nn.__all__`` itself)."""
    import importlib
    module = importlib.import_module(f"graph_transformers.{package}")
    page = (PKG.parents[1] / "docs" / "api" / f"{package}.md").read_text()
    for name in module.__all__:
        assert getattr(module, name) is not None
        if package in ("data", "datasets", "training"):
            assert f"`{name}`" in page, f"docs/api/{package}.md does not name {name}"


def test_the_layer_package_exports_layers_and_their_inputs_only():
    import torch

    import graph_transformers.nn as layers
    for name in layers.__all__:
        obj = getattr(layers, name)
        assert isinstance(obj, type), f"{name}: functions stay in their modules"
        assert issubclass(obj, torch.nn.Module) or name in {
            "DenseBatch", "GTOutput", "EGTOutput", "EGTDenseOutput", "GRITOutput", "LayerOutput",
            "GRPERelations", "GRPETables"}, name
