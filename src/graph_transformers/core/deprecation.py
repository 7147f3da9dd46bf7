"""Old call forms kept working for one release: the ``FutureWarning`` that names the caller's
line, and the decorator that maps an old positional order onto a new signature. The layers use
them through :mod:`graph_transformers.nn.convention` (``docs/layers.md``), the dataset classes
through :mod:`graph_transformers.data.legacy` (``docs/adding_a_dataset.md``)."""
from __future__ import annotations

import functools
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Sequence

import torch

_CORE_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def warn_deprecated(message: str, *, see: str, skip: Sequence[str] = ()) -> None:
    """A ``FutureWarning`` ``message`` (plus where to read more, ``see``), attributed to the first
    caller outside ``torch``, this module and the directories ``skip`` (the user's line, not the
    library's)."""
    inside = (_CORE_DIR, _TORCH_DIR, *skip)
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(inside):
        frame, level = frame.f_back, level + 1
    warnings.warn(f"{message} (deprecated: removed in the next release; see {see})",
                  FutureWarning, stacklevel=level)


def legacy_init(old_order: Sequence[str], *, new_form: str, see: str, skip: Sequence[str] = (),
                is_legacy: Callable[[tuple, dict], bool] | None = None,
                resolve: Callable[[tuple, dict], tuple[tuple, dict]] | None = None,
                renamed: Sequence[tuple[str, Callable[[tuple, dict], None]]] = ()):
    """Decorator of an ``__init__`` that accepts the positional order it replaced.

    Args:
        old_order: the old constructor's parameter names, in order.
        new_form: the new call, for the warning (e.g. ``"EGTLayer(hidden_dim, num_heads, *,
            edge_dim, ...)"``).
        see: the page that describes the new form, for the warning.
        skip: directories whose frames the warning skips (:func:`warn_deprecated`).
        is_legacy: ``(args, kwargs) → bool``, whether a call uses the old order; default: more
            positional arguments than the new signature has.
        resolve: ``(args, kwargs) → (args, kwargs)`` applied first, for call forms that stay
            valid without a warning (``GPSLayer(channels, conv, heads)``).
        renamed: ``(old keyword, fix)`` pairs; ``fix(args, kwargs)`` rewrites ``kwargs`` in
            place (with a warning).

    Old-order calls are mapped by name onto the new signature with a ``FutureWarning``; a name
    given both positionally and by keyword, or more positional arguments than the old order
    had, is a ``TypeError``.
    """
    def warn(message: str) -> None:
        warn_deprecated(message, see=see, skip=skip)

    def decorate(init):
        params = list(inspect.signature(init).parameters.values())[1:]
        num_positional = sum(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)

        @functools.wraps(init)
        def wrapper(self, *args, **kwargs):
            if resolve is not None:
                args, kwargs = resolve(args, kwargs)
            legacy = (is_legacy(args, kwargs) if is_legacy is not None
                      else len(args) > num_positional)
            if legacy:
                name = type(self).__name__
                if len(args) > len(old_order):
                    raise TypeError(f"{name}() takes at most {len(old_order)} positional "
                                    f"arguments in its old order, got {len(args)}")
                named = dict(zip(old_order, args))
                both = sorted(set(named) & set(kwargs))
                if both:
                    raise TypeError(f"{name}() got {both} both positionally (old order) and by "
                                    "keyword")
                warn(f"{name}({', '.join(old_order[:len(args)])}, ...) positionally is the old "
                     f"order; call {new_form}")
                args, kwargs = (), {**named, **kwargs}
            for old, fix in renamed:
                if old in kwargs:
                    fix(args, kwargs)  # raises first on a conflict
                    warn(f"{type(self).__name__}({old}=...): use {new_form}")
            init(self, *args, **kwargs)

        return wrapper
    return decorate
