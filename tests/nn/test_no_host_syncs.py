"""A static guard beside the meta-device test of ``test_device.py``: the layers and models never
call ``.item()``, ``.numpy()`` or ``.tolist()`` (host reads, device syncs on a GPU), nor ``.cpu()``,
except on lines marked ``# host:`` (fallbacks for hand-built batches without a host-side size
table, and reads of tensors that already live on the host, such as that table)."""
from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "graph_transformers"
FORBIDDEN = re.compile(r"\.(item|numpy|tolist)\(\)")
CPU = re.compile(r"\.cpu\(\)")


def test_no_host_reads_in_layers_and_models():
    found = []
    for path in sorted((SRC / "nn").glob("*.py")) + sorted((SRC / "models").glob("*.py")):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if (FORBIDDEN.search(code) or CPU.search(code)) and "# host:" not in line:
                found.append(f"{path.relative_to(SRC)}:{no}: {line.strip()}")
    assert not found, "host reads in forward code:\n" + "\n".join(found)
