"""Names a package imports from its submodules on first use (PEP 562 module ``__getattr__``), so
that importing the package stays cheap (no torch for ``import graph_transformers`` or for the
encoding registry the config reads)."""
from __future__ import annotations

import importlib
import sys
from typing import Any
from collections.abc import Callable


def lazy_exports(package: str, names: dict[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` for ``names`` (public name →
    submodule defining it).

    Raises:
        AttributeError: from ``__getattr__``, for a name that is neither defined nor listed.
    """
    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(f".{names[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
