"""Packaging like a library: ranges not pins, optional extras named when missing, a wheel that
installs beside the user's own torch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

# Makes the optional dependencies unimportable in a child interpreter, as on a machine without
# the extras (the code runs after it). matplotlib stays: Lightning reads its installed metadata
# and imports it; its message is checked in-process below.
_BLOCK = """
import sys
for name in ('rdkit', 'skimage', 'elkai', 'ogb'):
    sys.modules[name] = None  # `import name` raises ImportError; find_spec returns None
"""


def _run_blocked(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _BLOCK + code], capture_output=True, text=True,
                          cwd=REPO, timeout=300)


def test_dependencies_are_ranges_and_extras_exist():
    deps = PYPROJECT["dependencies"]
    assert deps and not [d for d in deps if "==" in d], "exact pins belong in constraints.txt"
    names = {d.split(">")[0].split("<")[0].split("=")[0].strip().lower() for d in deps}
    assert {"torch", "torch_geometric", "lightning", "numpy", "scipy"} <= names
    assert not names & {"rdkit", "scikit-image", "elkai", "matplotlib", "tqdm", "tensorboard"}
    extras = PYPROJECT["optional-dependencies"]
    assert {"chem", "superpixels", "tsp", "ogb", "analysis", "test", "all"} <= set(extras)
    floor = PYPROJECT["requires-python"].removeprefix(">=")
    assert sys.version_info[:2] >= tuple(map(int, floor.split(".")))
    pins = (REPO / "constraints.txt").read_text()
    assert "torch==" in pins and "torch_geometric==" in pins.replace("-", "_")


@pytest.mark.slow
def test_core_imports_without_optional_dependencies_and_names_the_extra():
    proc = _run_blocked("""
import graph_transformers.nn, graph_transformers.encodings, graph_transformers.models
import graph_transformers.training.sets, graph_transformers.cli
from graph_transformers._optional import MissingDependencyError, require
try:
    require('rdkit', 'the ZINC dataset')
except MissingDependencyError as err:
    print('ERR', err)
from graph_transformers.cli import main
print('RC', main(['train', '--config', 'configs/zinc/gt.yaml', '--set', 'trainer.max_epochs=1']))
""")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ERR the ZINC dataset needs rdkit: pip install 'graph-transformers[chem]'" in proc.stdout
    assert "RC 2" in proc.stdout
    assert "the ZINC dataset needs rdkit: pip install 'graph-transformers[chem]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_extra_messages(monkeypatch):
    from graph_transformers._optional import MissingDependencyError, require
    for module, extra in (("matplotlib", "analysis"), ("elkai", "tsp"), ("skimage", "superpixels"),
                          ("ogb", "ogb")):
        monkeypatch.setitem(sys.modules, module, None)
        with pytest.raises(MissingDependencyError,
                           match=rf"pip install 'graph-transformers\[{extra}\]'"):
            require(module, "this feature")
    with pytest.raises(ValueError, match="not an optional dependency"):
        require("numpy", "x")


@pytest.mark.slow
def test_wheel_installs_beside_the_installed_torch(tmp_path):
    """The built wheel declares ranges, and pip resolves it against the torch already installed
    (nothing torch-related would be installed or replaced)."""
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                    str(tmp_path), str(REPO)], check=True, capture_output=True, timeout=600)
    wheel = next(tmp_path.glob("graph_transformers-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
        # the fused kernels' C++ source ships with the wheel (compiled on first use)
        assert "graph_transformers/nn/csrc/sparse_attention.cpp" in z.namelist()
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    assert core and not [r for r in core if "==" in r], core
    report = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                    "--report", str(report), str(wheel)], check=True, capture_output=True,
                   timeout=600)
    to_install = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    assert to_install == {"graph-transformers"}, to_install


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("GT_OTHER_TORCH_VENV"),
                    reason="$GT_OTHER_TORCH_VENV not set: point it at a venv holding a torch "
                           "other than the pinned one (tests/packaging/install_beside_torch.sh)")
def test_wheel_and_sdist_install_beside_another_torch(tmp_path):
    """Wheel and sdist install into a venv whose torch differs from ours, and leave it alone."""
    venv = Path(os.environ["GT_OTHER_TORCH_VENV"])
    version = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import torch; print(torch.__version__.split('+')[0])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    out = tmp_path / "record.json"
    proc = subprocess.run(["bash", str(REPO / "tests" / "packaging" / "install_beside_torch.sh"),
                           str(venv), version, str(out)], capture_output=True, text=True,
                          timeout=1800, env={**os.environ, "BUILD_PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    record = json.loads(out.read_text())
    assert record["torch_unchanged"]
    assert {r["torch"] for r in record["installs"].values()} == {record["torch_before"]}
