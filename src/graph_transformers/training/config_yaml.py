"""Reading a run config's YAML: files (with ``base:`` inheritance), text, and the ``--set
key.sub=value`` overrides applied before validation (:func:`~.config.build_config`). Every
problem is a one-line :class:`~graph_transformers.errors.ConfigError` naming the file and line,
or the override.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"optim.lr=1e-3"`` → ``(["optim", "lr"], 0.001)``; the value is parsed as YAML.

    Raises:
        ConfigError: without ``=`` or with an empty key.
    """
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key.subkey=value")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".")]
    if not key.strip() or any(not p for p in parts):
        raise ConfigError(f"override {text!r} has an empty key")
    value = parse_yaml_text(raw, f"override {text!r}") if raw.strip() else None
    if isinstance(value, str):
        try:  # YAML 1.1 reads 1e-3 as a string
            value = float(value) if any(c in value for c in "eE.") else value
        except ValueError:
            pass
    return parts, value


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Returns a copy of ``raw`` with ``key.sub=value`` overrides applied (sections created as
    needed).

    Args:
        raw: the config mapping (not changed).
        overrides: ``key.subkey=value`` strings (:func:`parse_override`), applied in order.

    Returns:
        The updated copy.

    Raises:
        ConfigError: for a malformed override, or one whose path runs through a key that is not
            a section.
    """
    out = copy.deepcopy(raw)
    for text in overrides:
        parts, value = parse_override(text)
        node = out
        for p in parts[:-1]:
            if node.get(p) is None:
                node[p] = {}
            if not isinstance(node[p], dict):
                raise ConfigError(f"override {text!r}: {p!r} is not a section")
            node = node[p]
        node[parts[-1]] = value
    return out


def deep_merge(base: dict, update: dict) -> dict:
    """``base`` updated by ``update``, recursing into mappings (``update`` wins); neither is
    changed.

    Returns:
        The merged copy.
    """
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a key given twice in one mapping (plain PyYAML keeps
    the later value silently)."""


def _construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:  # (``key in seen`` raised TypeError for a list key, issue 54's fuzzing)
            first = seen.get(key)
        except TypeError:  # an unhashable key (``? [a]``): PyYAML reports it, with its line
            break
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice (first on line {first + 1})",
                key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_unique_mapping)


def parse_yaml_text(text: str, source: str = "<string>") -> Any:
    """Parses YAML with the safe loader, refusing duplicate keys.

    Raises:
        ConfigError: ``<source>: line L, column C: <problem>`` for a syntax error or a duplicate
            key.
    """
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        context = getattr(err, "context", None)
        cmark = getattr(err, "context_mark", None)
        if context and cmark is not None and cmark is not mark:
            context += f" (started on line {cmark.line + 1}, column {cmark.column + 1})"
        what = f"{context}: {problem}" if context and "twice" not in problem else problem
        raise ConfigError(f"{source}: {where}invalid YAML: {what}") from None


def _parse_yaml_file(path: Path) -> Any:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}: line {line}: not UTF-8 text (byte 0x{data[err.start]:02x} "
                          f"at offset {err.start}); save the config as UTF-8") from None
    return parse_yaml_text(text, str(path)) or {}


def load_yaml(path: str | os.PathLike, _seen: tuple[Path, ...] = ()) -> dict:
    """Reads a YAML mapping with the safe loader.

    A top-level ``base: other.yaml`` (relative to the file) names a config this one extends: the
    base is loaded first and this file's keys are merged over it, so a paper's variants state only
    what differs. The base's ``reference`` is not inherited: a variant is a different paper row.

    Raises:
        ConfigError: for a missing or empty file, a file that is not UTF-8 text, a YAML syntax
            error or a key given twice in one mapping (the message names file and line), a file
            that is not a mapping, a ``base`` that is not a path, or a ``base`` cycle.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path in _seen:
        raise ConfigError(f"config base cycle: {' -> '.join(map(str, _seen + (path,)))}")
    raw = _parse_yaml_file(path)
    if raw is None or raw == {}:
        raise ConfigError(f"{path}: the config is empty; a config needs at least a model and a "
                          "data section (see configs/)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a config must be a YAML mapping, got {type(raw).__name__}")
    base = raw.pop("base", None)
    if base is not None:
        if not isinstance(base, str) or not base.strip():
            raise ConfigError(f"{path}: base must be the path of a YAML config (relative to "
                              f"this file), got {type(base).__name__} {base!r}")
        inherited = load_yaml(path.parent / base, _seen + (path,))
        inherited.pop("reference", None)
        raw = deep_merge(inherited, raw)
    return raw
