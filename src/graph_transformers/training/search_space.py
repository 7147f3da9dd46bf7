"""The search space of a sweep (``graph-transformers sweep --space SPACE.yaml``, :mod:`.sweep`):
a YAML mapping from dotted config keys, as ``--set`` takes them, to parameters, each one of
Optuna's distributions (``FloatDistribution``, ``IntDistribution``, ``CategoricalDistribution``,
https://optuna.readthedocs.io/en/stable/reference/distributions.html).

An example (``docs/sweep.md`` has more)::

    optim.lr: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}
    model.hidden_dim: {type: int, low: 16, high: 64, step: 16}
    model.num_layers: {type: categorical, choices: [2, 4, 6]}

The file is read with the project's safe YAML loader (a key given twice is an error). Every
problem is a one-line :class:`~graph_transformers.errors.ConfigError` that names the file and the
key: the space's form (:func:`parse_space`), and whether each key and value resolves in the base
config through the ``--set`` machinery (:func:`check_space`: an unknown key, a value of the wrong
type). A sampled trial becomes ``--set`` overrides (:func:`overrides`).
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .config import build_config
from .config_yaml import parse_yaml_text

#: parameter type → the options it takes (besides ``type``)
OPTIONS: dict[str, tuple[str, ...]] = {"float": ("low", "high", "log", "step"),
                                       "int": ("low", "high", "log", "step"),
                                       "categorical": ("choices",)}
#: a dotted config key (``optim.lr``, ``encodings.lap_pe.k``)
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_EXAMPLE = "optim.lr: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}"


@dataclass(frozen=True)
class Parameter:
    """One searched config key.

    Attributes:
        key: the dotted config key (``optim.lr``), also the Optuna parameter name.
        type: ``"float"``, ``"int"`` or ``"categorical"``.
        low / high: the bounds, both included (``float``, ``int``).
        log: sample on a log scale (``float``, ``int``).
        step: the grid spacing from ``low`` (``float``, ``int``; ``None``: continuous floats,
            step 1 for integers).
        choices: the values of a ``categorical`` parameter (null, booleans, numbers, strings).
    """

    key: str
    type: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple = ()

    def suggest(self, trial: Any) -> Any:
        """The value of this parameter for an Optuna trial (``trial.suggest_float``, ``_int``,
        ``_categorical``)."""
        if self.type == "float":
            return trial.suggest_float(self.key, self.low, self.high, log=self.log,
                                       step=self.step)
        if self.type == "int":
            return trial.suggest_int(self.key, self.low, self.high, log=self.log,
                                     step=self.step or 1)
        return trial.suggest_categorical(self.key, list(self.choices))

    def probes(self) -> list[Any]:
        """The values checked against the config (:func:`check_space`): both bounds, or every
        choice."""
        return [self.low, self.high] if self.type != "categorical" else list(self.choices)

    def to_dict(self) -> dict[str, Any]:
        """The parameter as its YAML mapping (what the study records, to refuse a resumed sweep
        over another space)."""
        if self.type == "categorical":
            return {"type": self.type, "choices": list(self.choices)}
        out = {"type": self.type, "low": self.low, "high": self.high, "log": self.log}
        return out | ({"step": self.step} if self.step is not None else {})


def load_space(path: str | os.PathLike) -> list[Parameter]:
    """Reads and checks a search-space file (:func:`parse_space`).

    Args:
        path: the YAML file.

    Returns:
        list[Parameter]: the parameters, in the file's order.

    Raises:
        ConfigError: a missing file, invalid YAML, a key given twice, or a malformed space.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"search space file not found: {path}")
    return parse_space(parse_yaml_text(path.read_text(encoding="utf-8"), str(path)), str(path))


def parse_space(raw: Any, source: str = "<space>") -> list[Parameter]:
    """Checks the form of a search space: a non-empty mapping of dotted keys, none a section of
    another, each to a parameter with a known ``type`` and only its options (:data:`OPTIONS`).

    Args:
        raw: the parsed YAML.
        source: where it came from, first in every message.

    Returns:
        list[Parameter]: the parameters, in order.

    Raises:
        ConfigError: one line naming ``source`` and the key: not a mapping, empty, a key that is
            not a dotted config key, overlapping keys, an unknown type or option, missing or
            non-numeric bounds, ``low >= high``, ``log`` with ``low <= 0`` (floats) or ``low < 1``
            (integers), ``log`` with ``step``, a ``step <= 0`` or one that does not divide
            ``high - low``, empty, repeated or non-scalar choices.
    """
    if raw is None or raw == {}:
        raise ConfigError(f"{source}: the search space is empty; give at least one parameter, "
                          f"e.g. {_EXAMPLE}")
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: a search space must be a YAML mapping of config keys to "
                          f"parameters (e.g. {_EXAMPLE}), got {type(raw).__name__}")
    space = [_parameter(key, spec, source) for key, spec in raw.items()]
    keys = sorted(p.key for p in space)
    for a, b in zip(keys, keys[1:]):
        if b.startswith(a + "."):
            raise ConfigError(f"{source}: {a} and {b} overlap (one is a section of the other); "
                              "search the inner key only")
    return space


def _parameter(key: Any, spec: Any, source: str) -> Parameter:
    """One entry of the space, checked (:func:`parse_space`)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ConfigError(f"{source}: {key!r} is not a dotted config key such as optim.lr or "
                          "model.hidden_dim")
    where = f"{source}: {key}"
    if not isinstance(spec, dict) or "type" not in spec:
        raise ConfigError(f"{where}: a parameter is a mapping with type: float, int or "
                          f"categorical (e.g. {_EXAMPLE}), got {spec!r}")
    kind = spec["type"]
    if kind not in OPTIONS:
        raise ConfigError(f"{where}: unknown type {kind!r}; use float, int or categorical")
    unknown = sorted(str(k) for k in spec if k != "type" and k not in OPTIONS[kind])
    if unknown:
        raise ConfigError(f"{where}: unknown option {unknown[0]!r} for type {kind}; a {kind} "
                          f"parameter takes {', '.join(OPTIONS[kind])}")
    if kind == "categorical":
        return Parameter(key, kind, choices=_choices(spec.get("choices"), where))
    return _numeric(key, kind, spec, where)


def _choices(choices: Any, where: str) -> tuple:
    if not isinstance(choices, list) or not choices:
        raise ConfigError(f"{where}: a categorical parameter needs choices: a non-empty list, "
                          f"got {choices!r}")
    for c in choices:
        if c is not None and not isinstance(c, (bool, int, float, str)):
            raise ConfigError(f"{where}: choice {c!r} is a {type(c).__name__}; choices are "
                              "null, booleans, numbers or strings (Optuna's categorical values)")
    seen = [json.dumps(c) for c in choices]  # 1 and True are different choices
    if len(set(seen)) < len(seen):
        twice = next(c for c, s in zip(choices, seen) if seen.count(s) > 1)
        raise ConfigError(f"{where}: choice {twice!r} is given twice")
    return tuple(choices)


def _number(value: Any, kind: str, what: str, where: str) -> float | int:
    """``value`` as the parameter's number type; YAML 1.1 reads ``1e-4`` (no dot) as text, which
    is taken as the float it spells, as ``--set`` does."""
    if kind == "float" and isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    ok = (isinstance(value, int) if kind == "int" else isinstance(value, (int, float)))
    if not ok or isinstance(value, bool) or (kind == "float" and not math.isfinite(value)):
        need = "an integer" if kind == "int" else "a finite number"
        raise ConfigError(f"{where}: {what} must be {need}, got {value!r}")
    return float(value) if kind == "float" else value


def _numeric(key: str, kind: str, spec: dict, where: str) -> Parameter:
    if "low" not in spec or "high" not in spec:
        raise ConfigError(f"{where}: a {kind} parameter needs low and high")
    low = _number(spec["low"], kind, "low", where)
    high = _number(spec["high"], kind, "high", where)
    if low >= high:
        raise ConfigError(f"{where}: low must be below high (got low={low}, high={high})")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise ConfigError(f"{where}: log must be true or false, got {log!r}")
    step = spec.get("step")
    if step is not None:
        step = _number(step, kind, "step", where)
        if step <= 0:
            raise ConfigError(f"{where}: step must be positive, got {step}")
        if log and not (kind == "int" and step == 1):
            raise ConfigError(f"{where}: log and step cannot be combined (a log scale has no "
                              "fixed step)")
        intervals = (high - low) / step
        if abs(intervals - round(intervals)) > 1e-9 * max(1.0, intervals):
            raise ConfigError(f"{where}: high - low ({high - low:g}) is not a multiple of step "
                              f"({step:g})")
    if log and (low < 1 if kind == "int" else low <= 0):
        need = ">= 1" if kind == "int" else "> 0"
        raise ConfigError(f"{where}: a log scale needs low {need}, got low={low}")
    return Parameter(key, kind, low=low, high=high, log=log,
                     step=None if kind == "int" and step == 1 else step)


def override(key: str, value: Any) -> str:
    """``key=value`` for :func:`~.config_yaml.apply_overrides` (the value written as JSON, which
    YAML reads back as the same value)."""
    return f"{key}={json.dumps(value)}"


def overrides(values: dict[str, Any]) -> list[str]:
    """A trial's ``{key: value}`` as ``--set`` overrides (:func:`override`)."""
    return [override(k, v) for k, v in values.items()]


def check_space(space: list[Parameter], base: dict, source: str = "<space>") -> None:
    """Checks that every key of the space resolves in the base config with each of its bounds or
    choices, set alone through the ``--set`` machinery and validated by
    :func:`~.config.build_config` (so a misspelt key fails here, before any training).

    Args:
        space: the parameters (:func:`parse_space`).
        base: the base config mapping (after the command's own overrides).
        source: the space file, first in the message.

    Raises:
        ConfigError: ``<source>: <key>=<value>: invalid config: <key>: unknown key`` and the
            like (a key the config does not have, a value its schema refuses).
    """
    for p in space:
        for value in p.probes():
            try:
                build_config(base, [override(p.key, value)])
            except ConfigError as err:
                raise ConfigError(f"{source}: {p.key}={json.dumps(value)}: {err}") from None
