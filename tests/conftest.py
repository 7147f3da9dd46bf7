"""Shared fixtures: the shared data directory (skips when absent) and an isolated cache."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """``$GRAPH_TRANSFORMERS_DATA`` or ``../shared/data`` next to the repository, if present."""
    env = os.environ.get("GRAPH_TRANSFORMERS_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "data")
    for c in candidates:
        if (c / "ZINC").is_dir() or (c / "CSL").is_dir():
            return c
    return None


@pytest.fixture
def data_dir() -> Path:
    d = shared_data_dir()
    if d is None:
        pytest.skip("benchmark data not found: set GRAPH_TRANSFORMERS_DATA or place the "
                    "project's shared/data next to the repository")
    return d


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets a fresh processed-data cache (never the user's ~/.cache) and no network:
    downloads are disabled (tests of the download code unset it and replace the transport)."""
    monkeypatch.setenv("GRAPH_TRANSFORMERS_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("GRAPH_TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _no_cli_log_handler_left_behind():
    """A CLI test attaches the CLI's stderr handler to the package logger (bound to that test's
    captured stderr) and turns propagation off; restore the logger afterwards, so that later
    tests neither write to a closed stream ("Logging error") nor miss records in ``caplog``."""
    import logging
    ours = logging.getLogger("graph_transformers")
    handlers, propagate, level = list(ours.handlers), ours.propagate, ours.level
    yield
    for h in [h for h in ours.handlers if h not in handlers]:
        ours.removeHandler(h)
    ours.propagate, ours.level = propagate, level
