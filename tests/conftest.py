"""Shared fixtures (the shared data directory, skipping when absent; an isolated cache) and the
helpers several test files use (``from conftest import ...``)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

REPO = Path(__file__).resolve().parents[1]


def data_root() -> Path:
    """Where the tests look for the shared benchmark files: ``$GRAPH_TRANSFORMERS_DATA``, else
    ``../shared/data`` next to the repository (the path may not exist: tests reading it skip)."""
    env = os.environ.get("GRAPH_TRANSFORMERS_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def shared_data_dir(*needs: str) -> Path | None:
    """:func:`data_root` if it holds every one of ``needs`` (paths below it; default: a
    ``ZINC`` or ``CSL`` folder), else ``None``."""
    root = data_root()
    if needs:
        return root if all((root / n).exists() for n in needs) else None
    return root if (root / "ZINC").is_dir() or (root / "CSL").is_dir() else None


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


def randomize_norms(module, seed=0):
    """Random BatchNorm / LayerNorm affine weights and running statistics (float64), so that a
    naive reference tests the norms' parameters too (shared by the layer tests)."""
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.LayerNorm)):
            m.weight.data = torch.rand(m.weight.shape, generator=g, dtype=m.weight.dtype) + 0.5
            m.bias.data = torch.randn(m.bias.shape, generator=g, dtype=m.bias.dtype)
        if isinstance(m, torch.nn.BatchNorm1d):
            m.running_mean = torch.randn(m.running_mean.shape, generator=g, dtype=torch.float64)
            m.running_var = torch.rand(m.running_var.shape, generator=g, dtype=torch.float64) + 0.5


def grpe_inputs(B=3, N=7, d=16, T=9, E=7, seed=0):
    """Padded GRPE inputs (float64): ``x [B, N, d]``, topology and edge type ids ``[B, N, N]``
    (``T`` and ``E`` types), ``mask [B, N]`` padding the end of every graph but the first."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, N, d, generator=g, dtype=torch.float64)
    topo = torch.randint(0, T, (B, N, N), generator=g)
    edge = torch.randint(0, E, (B, N, N), generator=g)
    mask = torch.ones(B, N, dtype=torch.bool)
    for b in range(1, B):  # padding at the end of every graph but the first
        mask[b, max(1, N - 2 * b):] = False
    return x, topo, edge, mask


class HostReads(TorchDispatchMode):
    """Records the operations that read a tensor's value to the host (``.item()``, ``int()``,
    boolean indexing's ``nonzero``): what makes a GPU step wait. ``reads`` lists them."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ in ("_local_scalar_dense", "nonzero", "item"):
            self.reads.append(str(func))
        return func(*args, **(kwargs or {}))


def train_one_epoch(tmp_path: Path, data_dir: Path, name: str, model: str) -> dict[str, Any]:
    """``metrics.json`` of ``graph-transformers train`` for one epoch of ``data.name: name``
    (files in ``data_dir``; batches of 4, LapPE with k = 3, one thread) with ``model`` (a YAML
    flow mapping, ``{name: gcn, ...}``), run under ``tmp_path/run``; asserts exit code 0."""
    from graph_transformers.cli import main

    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"""name: test-{name}
model: {model}
data:
  name: {name}
  batch_size: 4
  num_workers: 0
encodings:
  lap_pe:
    k: 3
trainer:
  max_epochs: 1
  enable_progress_bar: false
  threads: 1
""")
    out = tmp_path / "run"
    assert main(["train", "--config", str(cfg), "--data-dir", str(data_dir), "--out",
                 str(out)]) == 0
    return json.loads((out / "metrics.json").read_text())


def grpe_graph(n: int, edges: list[tuple[int, int]], types: list[int], x: list) -> Any:
    """A small undirected graph for GRPE (``edges`` one way, typed by ``types``, both ways in
    ``edge_index``) with its shortest paths (``AddShortestPaths(3)``) and a dummy ``y``."""
    from torch_geometric.data import Data

    from graph_transformers.encodings import AddShortestPaths

    ei = torch.tensor(edges, dtype=torch.long).T
    ei = torch.cat([ei, ei.flip(0)], 1)
    ea = torch.tensor(types + types, dtype=torch.long)
    return AddShortestPaths(3)(Data(x=torch.tensor(x), edge_index=ei, edge_attr=ea,
                                    y=torch.zeros(1), num_nodes=n))
