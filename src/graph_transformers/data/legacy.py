"""The dataset classes' old argument orders, accepted for one release.

The dataset classes take PyG's order, ``(root, [name], split, transform, pre_transform,
force_reload, *, ...)`` (issue 27). For one more release they also take the order they had before
(``TU(name, root, split, fold, ...)``, ``PlanetoidGraph(name, root, ...)``,
``GNNBenchmark(name, split, data_dir, root, ...)``, ``CanonicalZINC(split, data_dir, root,
...)``) where a call can be told apart from the new one. Such calls give the same dataset, with
a :class:`FutureWarning` that shows the new call.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch_geometric

from ..core.deprecation import legacy_init

#: frames the warning skips: the dataset framework, the dataset classes and PyG's datasets
_SKIP = (os.path.dirname(os.path.abspath(__file__)),
         os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "datasets"),
         os.path.dirname(os.path.abspath(torch_geometric.__file__)))


def looks_like_path(value: Any) -> bool:
    """Whether a positional argument reads as a directory rather than a dataset name or split:
    a :class:`os.PathLike`, or a string with a path separator or a leading ``~`` or ``.``."""
    if isinstance(value, os.PathLike):
        return True
    return isinstance(value, str) and (
        os.sep in value or "/" in value or value.startswith(("~", ".")))


def name_first(is_name: Callable[[Any], bool]) -> Callable[[tuple, dict], bool]:
    """The test for an old name-first call (``Cls(name, root, ...)``): no ``name`` keyword, and
    either a ``root`` keyword, or a single positional argument that is not a path (the new
    order needs ``name`` after ``root``), or a first argument that is a known name
    (``is_name``) followed by one that is not, or a non-path followed by a path."""
    def is_old(args: tuple, kwargs: dict) -> bool:
        if "name" in kwargs or not args:
            return False
        if "root" in kwargs:
            return True
        if len(args) == 1:
            return not looks_like_path(args[0])
        first, second = args[0], args[1]
        return ((is_name(first) and not is_name(second))
                or (looks_like_path(second) and not looks_like_path(first)))
    return is_old


def accepts_old_order(old: Sequence[str], is_old: Callable[[tuple, dict], bool],
                      new_call: str) -> Callable:
    """Decorates a dataset's ``__init__`` (in PyG's order) so that a call in the old positional
    order ``old`` still works, with a :class:`FutureWarning` naming the caller's line, where
    ``is_old(args, kwargs)`` tells it apart (:func:`graph_transformers.core.deprecation.
    legacy_init`). ``new_call`` is how the call is written now, for the warning.

    Raises:
        TypeError: an old-order call that also passes one of its positional parameters by
            keyword, or more positional arguments than the old order had.
    """
    def legacy(args: tuple, kwargs: dict) -> bool:
        return bool(args) and is_old(args, kwargs)
    return legacy_init(tuple(old), new_form=f"{new_call} (PyG's order) or pass keywords",
                       see="docs/adding_a_dataset.md", skip=_SKIP, is_legacy=legacy)
