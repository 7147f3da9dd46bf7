"""The API reference builds: ``mkdocs build --strict`` (every warning, e.g. a malformed docstring
section or a broken link, is an error), as ``make docs`` runs it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_api_reference_builds_strict(tmp_path):
    pytest.importorskip("mkdocstrings_handlers.python",
                        reason="the docs extra is not installed (pip install -e '.[docs]')")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    problems = [line for line in proc.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(
        problems or proc.stderr.splitlines()[-20:])
    for page in ("index.html", "api/nn/index.html", "api/models/index.html",
                 "api/encodings/index.html", "api/data/index.html", "api/datasets/index.html",
                 "adding_a_dataset/index.html",
                 "api/training/index.html", "api/graph_transformers/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    nn_page = (tmp_path / "site" / "api" / "nn" / "index.html").read_text()
    from graph_transformers import nn
    missing = [name for name in nn.__all__ if f'id="graph_transformers.nn.{name}"' not in nn_page
               and f'id="graph_transformers.nn.{name}.{name}"' not in nn_page]
    assert not missing, f"exported layers missing from the API reference: {missing}"
