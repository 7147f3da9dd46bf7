"""The config sections that follow the registries: the ``model:`` section of each registered
model, derived from that model's constructor (:func:`model_section`,
:mod:`graph_transformers.models.registry`), and the ``encodings:`` section of the registered
encodings (:func:`encodings_config`).

A model section's keys, types, defaults and descriptions are the constructor's arguments; its
cross-checks are the model's ``config_checks(section)``, and the encodings its values call for
the model's ``config_encodings(section)`` (:func:`missing_encodings`). The model classes (and
torch) are imported on first use, so that reading a config stays cheap.
"""
from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (BaseModel, BeforeValidator, Field, TypeAdapter, ValidationError,
                      create_model, model_validator)
from pydantic_core import PydanticCustomError

from ..encodings.registry import ENCODINGS
from .sections import Section

#: ``model.use_edge_features``: ``true``, ``false`` or ``auto`` (on exactly where the dataset has
#: edge features and the model can read them; resolved by ``runner.model_kwargs``, which logs
#: the value). The schema defaults stay booleans, so existing configs resolve as before.
EdgeFeatures = bool | Literal["auto"]

#: keys whose config type is wider than the constructor argument's, because the run resolves
#: the config value into an argument value: ``use_edge_features: auto``
#: (``runner.model_kwargs``). Config-only keys are ``name`` and ``compile``
#: (:class:`ModelSection`).
CONFIG_TYPES: dict[str, Any] = {"use_edge_features": EdgeFeatures}

#: model keys renamed by issue 14, old → new, whose old names 0.2.0 no longer accepts (an
#: unknown key like any other); only the error names the new key (:func:`former_key_hint`)
FORMER_MODEL_KEYS: dict[str, str] = {
    "clip": "model.clamp",                              # EGT's score clamp
    "attention_dropout": "model.attn_dropout",          # GRPE, Graphormer
    "max_attention_bytes": "model.memory_budget_gb, in GiB",  # GPS: bytes → GiB
}


def _compile_setting(value: Any) -> bool | str:
    """``model.compile``: a boolean (as pydantic reads one) or ``"full"`` / ``"cudagraphs"``.

    Raises:
        PydanticCustomError: one message naming the accepted values.
    """
    if isinstance(value, str) and value in ("full", "cudagraphs"):
        return value
    try:
        return TypeAdapter(bool).validate_python(value)
    except ValidationError:
        raise PydanticCustomError("compile_setting", "Input should be a valid boolean, 'full' "
                                  "or 'cudagraphs'") from None


#: the type of ``model.compile``
CompileSetting = Annotated[bool | Literal["full", "cudagraphs"], BeforeValidator(_compile_setting)]


class ModelSection(Section):
    """Base of every derived model section (:func:`model_section`): the keys every model
    section has besides its model's constructor arguments, and the checks that call the
    model's own."""

    #: the model class the section is derived from (set on each derived section)
    model_class: ClassVar[type | None] = None
    #: whether ``num_heads`` must divide ``hidden_dim`` (every attention model; the MPNN
    #: baselines check it for GAT only)
    heads_divide_hidden: ClassVar[bool] = True
    #: the encodings the model reads constructor arguments from (``encodings.<name>``)
    required_encodings: ClassVar[tuple[str, ...]] = ()

    #: ``torch.compile`` of the training step (:func:`~.device.compile_mode`): ``false``;
    #: ``true`` (the model, dynamic shapes); ``"full"`` (forward + loss as one graph, static
    #: shapes: needs ``data.static_shapes: true``); ``"cudagraphs"`` (``full`` in CUDA graphs)
    compile: CompileSetting = Field(
        False, description="torch.compile: false; true (the model, dynamic shapes); 'full' (the "
        "model's forward and the loss as one graph, fullgraph=True and dynamic=False: needs "
        "data.static_shapes: true); 'cudagraphs' ('full' with mode='reduce-overhead', CUDA "
        "graphs, and the fused Adam/AdamW; on a CPU run it warns and runs as 'full'). See "
        "docs/speed.md, 'One compiled graph per step'")

    @model_validator(mode="after")
    def _check_heads(self) -> ModelSection:
        hidden, heads = getattr(self, "hidden_dim", None), getattr(self, "num_heads", None)
        if self.heads_divide_hidden and hidden is not None and heads and hidden % heads:
            raise ValueError(f"model.hidden_dim={self.hidden_dim} must be divisible by "
                             f"model.num_heads={self.num_heads}")
        return self

    @model_validator(mode="after")
    def _model_checks(self) -> ModelSection:
        checks = getattr(self.model_class, "config_checks", None)
        if checks is not None:  # the model's cross-checks: ValueError naming the keys
            checks(self)
        return self


def _registered_models() -> dict[str, type]:
    from ..models import MODELS  # the model classes (torch): imported on first use
    return MODELS


def default_model() -> str:
    """The model a config without ``model.name`` runs
    (:data:`graph_transformers.models.registry.DEFAULT_MODEL`)."""
    from ..models.registry import DEFAULT_MODEL
    return DEFAULT_MODEL


_SECTIONS: dict[tuple, type[ModelSection]] = {}


def model_section(name: str) -> type[ModelSection]:
    """The ``model:`` section of the registered model ``name``, derived from its constructor
    (:mod:`graph_transformers.models.registry`): one key per argument except the wired ones
    (:data:`~graph_transformers.models.registry.WIRED_ARGUMENTS`, the spec's
    ``encoding_args`` and ``exclude``), typed by the annotation (:data:`CONFIG_TYPES` widens
    ``use_edge_features``), with the argument's default (or the spec's ``defaults``; else
    required) and its ``Args:`` description; plus ``name`` and ``compile``. Classes sharing a
    declaration (the MPNN baselines) share one section, whose ``name`` is one of theirs. The
    model's ``config_checks(section)`` runs after the fields are valid. Cached per
    registration.

    Args:
        name: a registered model name (``model.name`` of a config).

    Returns:
        The section class (a pydantic model).

    Raises:
        ValueError: for an unknown name (listing the known ones).
    """
    from ..models.registry import WIRED_ARGUMENTS, argument_docs, config_owner, config_spec
    models = _registered_models()
    if name not in models:
        raise ValueError(f"unknown model name {name!r}; known: {sorted(models)}")
    owner = config_owner(models[name])
    names = tuple(n for n, cls in models.items() if config_owner(cls) is owner)
    key = (owner, names)
    if key in _SECTIONS:
        return _SECTIONS[key]
    spec = config_spec(owner)
    docs = argument_docs(owner)
    # the annotations evaluated in the constructor's module (``from __future__ import
    # annotations`` leaves strings); include_extras keeps the bounds of ``Annotated``
    hints = typing.get_type_hints(owner.__init__, include_extras=True)
    skip = {"self", *WIRED_ARGUMENTS, *spec.encoding_args, *spec.exclude}
    fields: dict[str, Any] = {"name": (Literal[names], Field(
        names[0] if len(names) == 1 else ..., description="the registered model name"))}
    for param in inspect.signature(owner.__init__).parameters.values():
        if param.name in skip or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        kind = CONFIG_TYPES.get(param.name) or hints.get(param.name, Any)
        default = (param.default if param.default is not param.empty
                   else spec.defaults.get(param.name, ...))
        fields[param.name] = (kind, Field(default, description=docs.get(param.name)))
    what = ", ".join(names)
    section = create_model(
        f"{owner.__name__}ModelConfig", __base__=ModelSection, __module__=__name__,
        __doc__=f"The ``model:`` section of {what}: the arguments of "
                f":class:`{owner.__module__}.{owner.__qualname__}` (derived from its "
                "constructor).",
        **fields)
    section.model_class = owner
    section.heads_divide_hidden = spec.heads_divide_hidden
    section.required_encodings = spec.required_encodings
    _SECTIONS[key] = section
    return section


class _ModelSections(Mapping):
    """Model name → its section (:func:`model_section`), following the model registry."""

    def __getitem__(self, name: str) -> type[ModelSection]:
        if name not in _registered_models():
            raise KeyError(name)
        return model_section(name)

    def __iter__(self) -> Iterator[str]:
        return iter(_registered_models())

    def __len__(self) -> int:
        return len(_registered_models())


#: model name → config section, derived from the registered models
#: (:data:`graph_transformers.models.MODELS`); a model registered later is included.
MODEL_CONFIGS: Mapping[str, type[ModelSection]] = _ModelSections()


def validate_model(value: Any) -> BaseModel:
    """The ``model:`` section of a config, validated by the section of the model it names
    (``name``; without one :func:`default_model`).

    Args:
        value: a mapping in the YAML layout, or a section already validated (returned as is).

    Returns:
        The validated section.

    Raises:
        ValueError: for a value that is no mapping or an unknown model name.
        pydantic.ValidationError: for invalid or unknown keys of the section.
    """
    if isinstance(value, BaseModel):
        return value
    if not isinstance(value, dict):
        raise ValueError("model must be a mapping with a 'name'")
    name = value.get("name", default_model())
    if not isinstance(name, str) or name not in MODEL_CONFIGS:  # a list: not a TypeError
        raise ValueError(f"unknown model name {name!r}; known: {sorted(MODEL_CONFIGS)}")
    return MODEL_CONFIGS[name].model_validate(value)


def former_key_hint(key: str) -> str:
    """The hint added to the unknown-key error of a model key's old name
    (:data:`FORMER_MODEL_KEYS`).

    Args:
        key: the unknown key of the ``model:`` section.

    Returns:
        ``" (renamed model.clamp; the old name was removed in 0.2.0)"`` for ``clip``; ``""``
        for a key never renamed.
    """
    new = FORMER_MODEL_KEYS.get(key)
    return f" (renamed {new}; the old name was removed in 0.2.0)" if new is not None else ""


def missing_encodings(model: BaseModel, encodings: BaseModel) -> list[str]:
    """What the model section ``model`` needs from the ``encodings`` section and does not get,
    one message per missing encoding: the encodings its model reads arguments from
    (``required_encodings``), and those its values call for, as the model's
    ``config_encodings(section)`` declares them (encoding name → why it is needed: GPS's
    ``attention: exphormer`` attends over the ``expander`` graph).

    Args:
        model: a validated model section.
        encodings: a validated encodings section.

    Returns:
        The messages (empty: nothing is missing).
    """
    missing = []
    for enc in getattr(type(model), "required_encodings", ()):
        if getattr(encodings, enc, None) is None:
            missing.append(f"model {model.name!r} needs encodings.{enc} (e.g. "
                           f"'encodings: {{{enc}: {{}}}}')")
    declared = getattr(getattr(type(model), "model_class", None), "config_encodings", None)
    for enc, why in (declared(model) if declared is not None else {}).items():
        if getattr(encodings, enc, None) is None:
            missing.append(f"{why}: set encodings.{enc} (e.g. 'encodings: {{{enc}: {{}}}}')")
    return missing


def encodings_config() -> type[Section]:
    """The schema of the ``encodings`` section: one optional field per registered encoding
    (:data:`~graph_transformers.encodings.registry.ENCODINGS`, in registry order), typed by that
    encoding's section; rebuilt when an encoding is registered.

    Returns:
        The section class (a pydantic model).
    """
    key = tuple(ENCODINGS.items())
    if key not in _ENCODINGS_SCHEMAS:
        _ENCODINGS_SCHEMAS[key] = create_model(
            "EncodingsConfig", __base__=Section, __module__=__name__,
            __doc__="Encodings precomputed (and cached) with the dataset; ``null`` disables one.",
            **{name: (e.config | None, None) for name, e in ENCODINGS.items()})
    return _ENCODINGS_SCHEMAS[key]


_ENCODINGS_SCHEMAS: dict[tuple, type[Section]] = {}
#: the ``encodings`` section of the built-in encodings (:func:`encodings_config` follows the
#: registry)
EncodingsConfig = encodings_config()
