"""The one-command device check (issue 15, part 4); the same as ``graph-transformers
check-device``.

On a GPU machine, from the repository root:

    python benchmarks/gpu_check.py --data-dir /path/to/data          # ~10 min on one GPU
    python benchmarks/gpu_check.py --device cpu --synthetic --tiny --no-epoch --out /tmp/gc

writes ``benchmarks/results/gpu_check.{json,md}`` (or ``--out``). See ``docs/gpu.md`` and
:mod:`graph_transformers.device_check` for what is measured and the tolerances.
"""
from __future__ import annotations

import sys
from pathlib import Path

try:
    import graph_transformers  # noqa: F401
except ImportError:  # a source checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from graph_transformers.device_check import main

if __name__ == "__main__":
    sys.exit(main())
