"""Filters for third-party warnings that tell a user of this package nothing, each by its
message, category and the module it is raised from (never a blanket filter).

- :data:`LIBRARY_FILTERS`, installed on ``import graph_transformers``: Lightning 2.6's own use
  of a deprecated ``torch.utils._pytree`` class (``isinstance(treespec, LeafSpec)``, a
  ``FutureWarning`` raised from ``lightning/pytorch/utilities/_pytree.py`` on every fit:
  nothing a user can change);
- :data:`CLI_FILTERS`, installed by the command line only (its process runs no user code):
  ``torch.jit.script`` is deprecated, a ``DeprecationWarning`` torch raises when PyG's
  ``torch_geometric.nn.pool.select`` scripts a class at import (shown where deprecation
  warnings are on, ``python -W default``). Filtering it by its module would hide it from a
  user's own scripting too, so a library import leaves it alone.

Other warnings keep their default treatment.
"""
from __future__ import annotations

import warnings

__all__ = ["CLI_FILTERS", "LIBRARY_FILTERS", "filter_cli_warnings", "filter_library_warnings"]

#: ``(message regex, category, module regex)`` of each warning filtered wherever the package is
#: imported
LIBRARY_FILTERS: tuple[tuple[str, type[Warning], str], ...] = (
    (r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning,
     r"lightning\.pytorch\.utilities\._pytree"),
)
#: the same, for the command line's process only
CLI_FILTERS: tuple[tuple[str, type[Warning], str], ...] = (
    (r"`torch\.jit\.script` is deprecated", DeprecationWarning, r"torch\.jit\._script"),
)


def _install(filters: tuple[tuple[str, type[Warning], str], ...]) -> None:
    for message, category, module in filters:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)


def filter_library_warnings() -> None:
    """Ignores the warnings of :data:`LIBRARY_FILTERS` (and only those)."""
    _install(LIBRARY_FILTERS)


def filter_cli_warnings() -> None:
    """Ignores the warnings of :data:`LIBRARY_FILTERS` and :data:`CLI_FILTERS` (the command
    line's process)."""
    _install(LIBRARY_FILTERS + CLI_FILTERS)
