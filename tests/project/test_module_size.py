"""Module size (issue 55, the developers' guide): no module under ``src/`` over 600 lines unless
its docstring says why, in a sentence starting ``Longer than 600 lines:``."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "src" / "graph_transformers"
MAX_LINES = 600
REASON = "Longer than 600 lines:"


def _long_modules(pkg: Path = PKG) -> dict[str, int]:
    """Modules over :data:`MAX_LINES` lines whose docstring gives no reason, by path."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        n = text.count("\n")
        if n > MAX_LINES and REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            out[str(path.relative_to(pkg))] = n
    return out


def test_no_module_is_over_600_lines_without_a_reason():
    assert _long_modules() == {}, "split these modules, or say why in their docstring"


def test_the_check_sees_a_long_module(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "long.py").write_text('"""A module."""\n' + "x = 1\n" * MAX_LINES)
    (pkg / "excused.py").write_text(f'"""A module. {REASON} one table."""\n' + "x = 1\n" * 700)
    (pkg / "short.py").write_text('"""A module."""\n' + "x = 1\n" * 10)
    assert _long_modules(pkg) == {"long.py": MAX_LINES + 1}
