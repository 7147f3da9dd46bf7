"""The model registry, and what a model declares about its ``model:`` config section.

A model's hyper-parameters have one home, its constructor. The ``model:`` section of a run
config is derived from the constructor's signature
(:func:`graph_transformers.training.model_sections.model_section`):

* one key per constructor argument, except :data:`WIRED_ARGUMENTS` (the run fills them in
  from the dataset and the encodings) and the arguments named in :func:`model_config`'s
  ``encoding_args`` and ``exclude``;
* the key's type is the argument's annotation: the aliases below (:data:`PositiveInt`,
  :data:`Probability`, :data:`SignFlip`, ...) carry the bounds and the choices, and are plain
  ``int`` / ``float`` / ``str`` for Python callers;
* its default is the argument's default (or, for an argument the constructor requires, the one
  :func:`model_config`'s ``defaults`` gives);
* its description is the argument's entry under ``Args:`` in the class docstring
  (:func:`argument_docs`).

Cross-checks between keys are a static method ``config_checks(section)`` of the model class
that raises ``ValueError`` with a message naming the keys (``model.<key>``); they run when a
config is validated. Encodings that a section's values call for (GPS's ``attention: exphormer``
needs ``encodings.expander``) are a static method ``config_encodings(section)`` returning
``{encoding name: why}``; a config without them is refused. :func:`register_model` enters the
class under its config name(s) in :data:`MODELS` (:data:`DEFAULT_MODEL`: the model of a config
that names none). ``docs/adding_a_model.md`` walks through one model end to end.
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, Field

from ..encodings.registry import node_encoding


def _registered_pe(pe: str) -> str:
    node_encoding(pe)  # ValueError naming the known ones
    return pe


# ----------------------------------------------------------------------------- argument types
#: an integer > 0 (sizes, counts)
PositiveInt = Annotated[int, Field(gt=0)]
#: an integer ≥ 0
NonNegativeInt = Annotated[int, Field(ge=0)]
#: a number > 0
PositiveFloat = Annotated[float, Field(gt=0)]
#: a number ≥ 0
NonNegativeFloat = Annotated[float, Field(ge=0)]
#: a dropout-like probability in [0, 1)
Probability = Annotated[float, Field(ge=0.0, lt=1.0)]
#: ``pe``: the ``pe`` name of a registered node encoding
#: (:data:`~graph_transformers.encodings.registry.ENCODINGS`: ``lap``, ``wl``, ``svd``,
#: ``rwse``, ...)
PEName = Annotated[str, AfterValidator(_registered_pe)]
#: ``sign_flip``: random sign flips of an encoding in training
SignFlip = Literal["batch", "graph", "node", "none"]
#: ``norm``: the normalization of the layers
Norm = Literal["batch", "layer", "none"]
#: ``readout``: the pooling of a graph task
Readout = Literal["mean", "sum", "max"]

#: constructor arguments the run passes from the dataset and the encodings
#: (``training.build.model_kwargs``), so no config keys: every registered model accepts
#: ``out_dim``, ``level``, ``num_node_types`` and ``num_node_features``; the others where it
#: has the key that calls for them (``num_edge_*`` with ``use_edge_features``, ``pe_dim`` with
#: ``pe``, ``deg`` where ``needs_degree_histogram`` says so).
WIRED_ARGUMENTS = ("out_dim", "level", "num_node_types", "num_node_features", "num_edge_types",
                   "num_edge_features", "pe_dim", "deg")


@dataclass(frozen=True)
class ModelConfigSpec:
    """What a model states about its config section beyond its signature (see
    :func:`model_config`)."""

    #: config defaults of arguments the constructor requires (sizes a Python caller must choose)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    #: constructor argument → ``"<encoding>.<key>"`` it is read from; the encoding is then
    #: required (``encodings: {<encoding>: {}}``)
    encoding_args: Mapping[str, str] = field(default_factory=dict)
    #: whether the config checks that ``num_heads`` divides ``hidden_dim``
    heads_divide_hidden: bool = True
    #: further constructor arguments that are no config keys (set by a subclass, say)
    exclude: tuple[str, ...] = ()

    @property
    def required_encodings(self) -> tuple[str, ...]:
        """The encodings the model reads arguments from, in order."""
        return tuple(dict.fromkeys(path.split(".")[0] for path in self.encoding_args.values()))


#: the spec of a model class that declares none (every argument with a default or required)
DEFAULT_SPEC = ModelConfigSpec()

T = TypeVar("T", bound=type)


def model_config(*, defaults: Mapping[str, Any] | None = None,
                 encoding_args: Mapping[str, str] | None = None,
                 heads_divide_hidden: bool = True,
                 exclude: tuple[str, ...] = ()) -> Callable[[T], T]:
    """Class decorator: what the model's config section needs besides the constructor's
    signature. Subclasses inherit it (the MPNN baselines share one section).

    Args:
        defaults: config defaults of arguments the constructor requires, e.g.
            ``{"hidden_dim": 64}``; an argument that has a default in the signature cannot get
            another here.
        encoding_args: constructor argument → ``"<encoding>.<key>"``, e.g.
            ``{"max_distance": "spd.max_distance"}``: the run passes that key of the
            ``encodings:`` section, and a config without the encoding is refused.
        heads_divide_hidden: check that ``num_heads`` divides ``hidden_dim``.
        exclude: further constructor arguments that are no config keys.

    Raises:
        ValueError: when decorating, for a name that is no argument of the constructor, or a
            default given twice.
    """
    spec = ModelConfigSpec(MappingProxyType(dict(defaults or {})),
                           MappingProxyType(dict(encoding_args or {})), heads_divide_hidden,
                           tuple(exclude))

    def wrap(cls: T) -> T:
        params = inspect.signature(cls.__init__).parameters
        for what, names in (("defaults", spec.defaults), ("encoding_args", spec.encoding_args),
                            ("exclude", spec.exclude)):
            unknown = [n for n in names if n not in params]
            if unknown:
                raise ValueError(f"{cls.__name__}: model_config {what} names {unknown}, which "
                                 "are no arguments of the constructor")
        twice = [n for n in spec.defaults if params[n].default is not inspect.Parameter.empty]
        if twice:
            raise ValueError(f"{cls.__name__}: {twice} have defaults in the constructor; "
                             "model_config defaults are for required arguments only")
        cls.config_spec = spec
        return cls

    return wrap


def config_owner(cls: type) -> type:
    """The class a registered class's section is derived from: the nearest class of its MRO
    that defines a constructor, a :func:`model_config` declaration, ``config_checks`` or
    ``config_encodings`` (the MPNN baselines, which only set ``conv``, share
    :class:`~graph_transformers.models.MPNN`'s)."""
    for klass in cls.__mro__:
        if {"__init__", "config_spec", "config_checks", "config_encodings"} & set(vars(klass)):
            return klass
    return cls


def config_spec(cls: type) -> ModelConfigSpec:
    """The :class:`ModelConfigSpec` of a model class (:data:`DEFAULT_SPEC` without one)."""
    return getattr(cls, "config_spec", DEFAULT_SPEC)


#: model name (``model.name`` of a config) → class; filled by :func:`register_model`
MODELS: dict[str, type] = {}
#: the model a config without ``model.name`` runs (the library's first model, GT)
DEFAULT_MODEL = "gt"


def register_model(*names: str) -> Callable[[T], T]:
    """Class decorator: registers the model under the config name(s) ``names``; its config
    section is derived from its constructor when a config names it.

    Raises:
        ValueError: for a name that is taken.
    """
    if not names:
        raise ValueError("register_model needs at least one name")

    def wrap(cls: T) -> T:
        taken = [n for n in names if n in MODELS and MODELS[n] is not cls]
        if taken:
            raise ValueError(f"model name(s) {taken} already registered")
        for name in names:
            MODELS[name] = cls
        return cls

    return wrap


# ----------------------------------------------------------------------------- edge features
@dataclass(frozen=True)
class EdgeFeatureUse:
    """What a model reads of a dataset's edge features, as its class declares it with a static
    (or class) method ``edge_feature_use(**kwargs)`` taking the constructor's keyword arguments
    (a model whose use depends on its options: GT with ``full_graph``, GPS by its ``mpnn``).
    ``model.use_edge_features: auto`` is resolved with it
    (:func:`graph_transformers.training.build.resolve_edge_features`).

    Attributes:
        reads: ``"none"`` (the model reads no edge features: ``auto`` resolves to off),
            ``"categorical"`` (only edge types, ``spec.edge_types``) or ``"any"`` (edge types or
            continuous edge features, ``spec.edge_dim``).
        needed_by: the part of the model that cannot run without edge features (e.g.
            ``"gine"``), ``None`` when the model runs without them.
        instead: the config change that runs without edge features (e.g.
            ``"model.mpnn=gin (or gcn)"``), named with ``needed_by`` in the error on a dataset
            that has none.
    """

    reads: Literal["none", "categorical", "any"] = "any"
    needed_by: str | None = None
    instead: str | None = None


def edge_feature_use(name: str, kwargs: Mapping[str, Any]) -> EdgeFeatureUse:
    """The :class:`EdgeFeatureUse` the model registered as ``name`` declares for ``kwargs`` (its
    constructor arguments, or a ``model:`` section as a dict); a model that declares nothing
    (or an unknown name) reads edge types and continuous edge features and runs without them.

    Args:
        name: a model name of :data:`MODELS`.
        kwargs: the model's keyword arguments; a ``name`` key is ignored.

    Returns:
        EdgeFeatureUse: what the model reads of edge features.
    """
    declare = getattr(MODELS.get(name), "edge_feature_use", None)
    if declare is None:
        return EdgeFeatureUse()
    return declare(**{k: v for k, v in kwargs.items() if k != "name"})


# ----------------------------------------------------------------------------- descriptions
#: one ``Args:`` entry: ``name: text``, ``a / b: text`` or ``a, b: text``
_ENTRY = re.compile(r"^(?P<names>[A-Za-z_]\w*(?:\s*[,/]\s*[A-Za-z_]\w*)*)\s*:\s*(?P<text>.*)$")


def argument_docs(cls: type) -> dict[str, str]:
    """Argument name → its description under ``Args:`` in the class docstring (else the
    constructor's), one line; the project's grouped entries (``a / b: ...``, ``a, b: ...``)
    give each name the shared text."""
    docs: dict[str, str] = {}
    for doc in (cls.__doc__, cls.__init__.__doc__):
        lines = inspect.cleandoc(doc or "").splitlines()
        try:
            start = next(i for i, line in enumerate(lines) if line.strip() == "Args:")
        except StopIteration:
            continue
        indent, names, text = None, [], []

        def flush() -> None:
            # reads `names` / `text` late on purpose (the entry the loop below is collecting);
            # flush() is only called within this iteration of the loop over the docstrings
            for name in names:  # noqa: B023 - late binding wanted (comment above)
                docs.setdefault(name, " ".join(text).strip())  # noqa: B023 - as above

        for line in lines[start + 1:]:
            if not line.strip():
                continue
            width = len(line) - len(line.lstrip())
            if indent is None:
                indent = width
            if width < indent:  # the next section
                break
            match = _ENTRY.match(line.strip()) if width == indent else None
            if match:
                flush()
                names = re.split(r"\s*[,/]\s*", match["names"])
                text = [match["text"]]
            else:
                text.append(line.strip())
        flush()
    return docs
