"""Run configuration: a validated schema for the YAML files under ``configs/``.

Sections: ``model``, ``data``, ``encodings``, ``optim``, ``trainer``, ``seed`` (and an optional
run ``name``, ``param_budget``, ``protocol`` and ``reference``), put together in :class:`Config`.
Unknown keys and wrong types are errors that name the key (:class:`ConfigError`, one line);
``--set a.b=value`` overrides are applied before validation (:func:`build_config`). The other
sections are in :mod:`~graph_transformers.training.sections` (keys under ``trainer`` use
Lightning's ``Trainer`` argument names); the ``model`` section of each registered model is
derived from that model's constructor, and the ``encodings`` section from the registered
encodings (:mod:`~graph_transformers.training.model_sections`); the YAML is read by
:mod:`~graph_transformers.training.config_yaml`.
"""
from __future__ import annotations

import os
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from ..encodings.registry import node_encoding
from ..errors import ConfigError
from ..fileio import atomic_write_text, check_name
from .config_yaml import apply_overrides, load_yaml
from .model_sections import (default_model, encodings_config, former_key_hint,
                             missing_encodings, model_section, validate_model)
from .sections import (DataConfig, OptimConfig, PositiveInt, ProtocolConfig, ReferenceConfig,
                       Section, TrainerConfig)


class Config(Section):
    """A whole run."""

    name: str | None = None
    #: validated by :func:`~.model_sections.model_section` (the registered model ``name``;
    #: default :data:`~graph_transformers.models.registry.DEFAULT_MODEL`)
    model: Any = Field(default_factory=lambda: model_section(default_model())())
    data: DataConfig = Field(default_factory=DataConfig)
    #: validated by :func:`~.model_sections.encodings_config` (the registered encodings)
    encodings: Any = Field(default_factory=lambda: encodings_config()())
    optim: OptimConfig = Field(default_factory=OptimConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    #: seeds torch, numpy (which takes 0 … 2³² − 1) and Python
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    #: the papers' parameter budget (e.g. 100000 or 500000); runs refuse a model outside ±10%
    param_budget: PositiveInt | None = None
    #: evaluation details of the paper's code (see :class:`ProtocolConfig`)
    protocol: ProtocolConfig = Field(default_factory=ProtocolConfig)
    #: the published result this config reproduces (see :class:`ReferenceConfig`)
    reference: ReferenceConfig | None = None

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str | None) -> str | None:
        # the name becomes a run folder (runs/<name>, benchmark --out/<name>): a name, not a path
        return value if value is None else check_name(value, "config name")

    @field_validator("model", mode="before")
    @classmethod
    def _model_by_name(cls, value: Any) -> BaseModel:
        return validate_model(value)

    @field_validator("encodings", mode="before")
    @classmethod
    def _encodings(cls, value: Any) -> BaseModel:
        schema = encodings_config()
        if isinstance(value, schema):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if not isinstance(value, dict):
            raise ValueError("encodings must be a mapping of encoding name → options")
        return schema.model_validate(value)

    @model_validator(mode="after")
    def _cross_check(self) -> Config:
        pe = getattr(self.model, "pe", None)
        if pe is not None:
            name = node_encoding(pe).name
            if getattr(self.encodings, name, None) is None:
                raise ValueError(f"model.pe is {pe!r} but encodings.{name} is not set")
        missing = missing_encodings(self.model, self.encodings)
        if missing:  # what the model (and its values, e.g. GPS's exphormer) needs
            raise ValueError(missing[0])
        step = self.model.compile
        if step in ("full", "cudagraphs") and not getattr(self.data, "static_shapes", False):
            raise ValueError(f"model.compile: {step} compiles each step for fixed shapes "
                             "(dynamic=False): set data.static_shapes: true (or model.compile: "
                             "true for dynamic shapes)")
        return self

    def to_dict(self) -> dict:
        """Plain-Python form (what is saved as the resolved config)."""
        return self.model_dump(mode="json")


# ----------------------------------------------------------------------------- loading
def _format_errors(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"] if not str(p).endswith("Config")
                       and p not in ("plateau", "cosine", "linear"))
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
            if len(e["loc"]) > 1 and e["loc"][0] == "model":
                msg += former_key_hint(str(e["loc"][-1]))
        lines.append(f"{key or '<root>'}: {msg}" + (f" (got {e['input']!r})"
                                                   if e["type"] != "extra_forbidden"
                                                   and not isinstance(e["input"], dict) else ""))
    return "invalid config: " + "; ".join(lines)  # one line, as every CLI error


def build_config(raw: dict, overrides: list[str] | None = None,
                 source: str | os.PathLike | None = None) -> Config:
    """Validates a raw mapping (after overrides) into a :class:`Config`.

    Args:
        raw: the config mapping.
        overrides: ``key.subkey=value`` strings applied first.
        source: the file ``raw`` was read from (a config file, a run's ``config.yaml``, the
            checkpoint that stored it); the error message then starts with it:
            ``<source>: invalid config: model.clip: unknown key ...``.

    Returns:
        The validated config.

    Raises:
        ConfigError: listing every invalid or unknown key (an old key name with its new one),
            or for a malformed override.
    """
    raw = apply_overrides(raw, overrides or [])
    try:
        return Config.model_validate(raw)
    except ValidationError as err:
        where = f"{source}: " if source is not None else ""
        raise ConfigError(where + _format_errors(err)) from None


def load_config(path: str | os.PathLike, overrides: list[str] | None = None) -> Config:
    """:func:`~.config_yaml.load_yaml` then :func:`build_config`.

    Args:
        path: the YAML config file.
        overrides: ``key.subkey=value`` strings applied before validation.

    Returns:
        The validated config.

    Raises:
        ConfigError: as :func:`~.config_yaml.load_yaml` and :func:`build_config`.
    """
    return build_config(load_yaml(path), overrides)


def save_config(config: Config, path: str | os.PathLike) -> None:
    """Writes the resolved config as YAML, atomically.

    Args:
        config: the config.
        path: the file written (``<run>/config.yaml``).
    """
    atomic_write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
