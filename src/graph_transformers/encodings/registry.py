"""One registry of the encodings: what a run's ``encodings:`` section, the dataset pre-transform
and the models' input encoders read about each one.

An :class:`Encoding` names, for one encoding:

* ``name``: its key under ``encodings:`` in a config (``encodings: {lap_pe: {k: 8}}``) and, for a
  node encoding, the ``Data`` attribute its transform writes (``data.lap_pe``);
* ``config``: the pydantic model of its section (its options and their defaults);
* ``transform``: the section → the PyG pre-transform that computes it once per graph (its
  ``repr`` names the dataset's processed cache,
  :func:`~graph_transformers.data.cache.pre_transform_key`);
* for a node encoding a model can take as ``model.pe``: ``pe`` (that value, e.g. ``"lap"``),
  ``dim`` (the section → the width the model's ``pe_dim`` gets), ``sign_flip`` (the random
  augmentation applied in training, or ``None``), ``categorical`` (integer ids embedded with
  an ``nn.Embedding`` instead of features projected with a ``Linear``) and ``raw_norm`` (a
  ``BatchNorm`` of the raw values before the projection).

The built-in encodings are listed in :data:`ENCODINGS` in the order their transforms run (and are
named in a cache key); :func:`register_encoding` adds one (``docs/encodings.md``, "Adding an
encoding"). This module imports no torch: transforms and sign flips may be given as
``"module:attribute"`` paths, imported on first use.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

PositiveInt = Annotated[int, Field(gt=0)]


class EncodingSection(BaseModel):
    """Base of an encoding's config section: unknown keys, wrong types and NaN / infinite numbers
    are errors that name the key (as every config section)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class LapPEConfig(EncodingSection):
    """Laplacian eigenvectors (GT eq. 1): the ``k`` of the smallest non-trivial eigenvalues."""

    k: PositiveInt = 8
    #: within a repeated eigenvalue, ``solver``: the eigensolver's basis (LAPACK build- and
    #: thread-dependent); ``canonical``: a basis fixed by the eigenspace and the node order
    #: (``encodings.lappe.canonical_eigenbasis``; docs/encodings.md, "LapPE")
    basis: Literal["solver", "canonical"] = "solver"


class WLPEConfig(EncodingSection):
    """Weisfeiler-Lehman role ids (Graph-BERT): ``iterations`` of 1-WL refinement; the model
    embeds ``num_roles`` ids."""

    iterations: Annotated[int, Field(ge=0)] = 2
    num_roles: PositiveInt = 64


class SVDPEConfig(EncodingSection):
    """SVD of the adjacency matrix (EGT §3.2)."""

    #: number of singular triplets ``r`` (EGT: 8); the encoding has ``2r`` features
    r: PositiveInt = 8


class SPDConfig(EncodingSection):
    """All-pairs shortest-path distance ids (capped at ``max_distance`` = GRPE's ``L``) and pair
    edge types, for GRPE / Graphormer."""

    max_distance: Annotated[int, Field(ge=1, le=250)] = 5


class RWSEConfig(EncodingSection):
    """Random-walk structural encoding: return probabilities of walks of 1 … ``walk_length``
    steps."""

    walk_length: PositiveInt = 20


class RRWPConfig(EncodingSection):
    """Relative random-walk probabilities (GRIT §3.1): ``(M^k)_ij`` for ``k = 0 …
    walk_length - 1`` of every node pair, and their diagonal as a node encoding (GRIT's ZINC,
    PATTERN configs: 21; CLUSTER: 32)."""

    walk_length: PositiveInt = 21
    #: cache every pair with the dataset (``4 K n²`` bytes per graph); ``false`` caches the
    #: diagonal only and GRIT computes the pairs of each batch on its device (the same values;
    #: PATTERN / CLUSTER: ≈17–22 GB of cache otherwise)
    cache_pairs: bool = True


class ExpanderConfig(EncodingSection):
    """A random ``degree``-regular expander graph on each graph's nodes, stored as
    ``expander_index [2, E_exp]`` (Exphormer, Shirzad et al. 2023, §3.2; read by GPS with
    ``model.attention: exphormer``). ``seed`` fixes the draw (with each graph's own edges)."""

    degree: PositiveInt = 3
    seed: Annotated[int, Field(ge=0)] = 0


#: ``"module:attribute"`` → the attribute, for the targets :func:`resolve` imported already
_RESOLVED: dict[str, Any] = {}


def resolve(target: Any) -> Any:
    """``"package.module:attribute"`` → that attribute (imported on the first call, then read
    from a cache, so that a forward that resolved it before, e.g. a sign flip, runs no import
    under ``torch.compile``); anything else as is."""
    if not isinstance(target, str):
        return target
    found = _RESOLVED.get(target)
    if found is None:
        module, _, attr = target.partition(":")
        found = _RESOLVED[target] = getattr(importlib.import_module(module), attr)
    return found


@dataclass(frozen=True)
class Encoding:
    """One encoding of the registry (see the module docstring).

    Args:
        name: config key under ``encodings:``; for a node encoding also the ``Data`` attribute.
        config: the section's pydantic model (a subclass of :class:`EncodingSection`).
        transform: a callable or ``"module:Class"``, called with the section's ``args``
            values (positionally) and ``kwargs`` values (by name) to build the pre-transform.
        args: the section fields passed to ``transform``, in order.
        pe: the ``model.pe`` value that selects this node encoding (``None``: no model reads it
            as a positional encoding, e.g. the pair encodings ``spd``).
        dim: the section → the model's ``pe_dim`` (the feature width, or the number of ids of a
            categorical encoding).
        sign_flip: ``f(pe, batch, per_graph=, num_graphs=)`` drawing the training-time random
            sign flip (a callable or ``"module:function"``), or ``None``.
        categorical: the encoding holds integer ids ``[num_nodes]`` (embedded) rather than
            features ``[num_nodes, dim]`` (projected).
        raw_norm: models normalise the raw values with a ``BatchNorm`` before projecting them
            (GraphGPS's RWSE encoder: return probabilities span orders of magnitude).
        kwargs: the section fields passed to ``transform`` by name.
        all_pairs: the encoding is computed over all node pairs of a graph (``n²`` memory):
            its transform takes the model's ``size_limit``
            (:class:`~graph_transformers.core.dense.GraphSizeLimit`).
    """

    name: str
    config: type[EncodingSection]
    transform: Any
    args: tuple[str, ...]
    pe: str | None = None
    dim: Callable[[Any], int] | None = None
    sign_flip: Any = None
    categorical: bool = False
    raw_norm: bool = False
    kwargs: tuple[str, ...] = ()
    all_pairs: bool = False

    def build_transform(self, section: BaseModel, size_limit: Any = None) -> Any:
        """The PyG pre-transform of a validated section; ``size_limit`` (a
        :class:`~graph_transformers.core.dense.GraphSizeLimit`) goes to an all-pairs one."""
        extra = {"size_limit": size_limit} if self.all_pairs and size_limit is not None else {}
        return resolve(self.transform)(*(getattr(section, a) for a in self.args),
                                       **{k: getattr(section, k) for k in self.kwargs}, **extra)

    def flip(self) -> Callable[..., Any] | None:
        """The sign-flip function, imported (``None`` when the encoding has none)."""
        return resolve(self.sign_flip)


_PKG = __name__.rpartition(".")[0]

#: name → encoding, in the order the pre-transforms run (this order is part of the processed
#: datasets' cache keys: append new encodings, never reorder)
ENCODINGS: dict[str, Encoding] = {e.name: e for e in (
    Encoding("lap_pe", LapPEConfig, f"{_PKG}.lappe:AddLaplacianPE", ("k",), pe="lap",
             dim=lambda s: s.k, sign_flip=f"{_PKG}.lappe:random_sign_flip", kwargs=("basis",)),
    Encoding("wl_pe", WLPEConfig, f"{_PKG}.wlpe:AddWLPE", ("iterations",), pe="wl",
             dim=lambda s: s.num_roles, categorical=True),
    Encoding("svd_pe", SVDPEConfig, f"{_PKG}.svd:AddSVDPE", ("r",), pe="svd",
             dim=lambda s: 2 * s.r, sign_flip=f"{_PKG}.svd:random_svd_sign_flip"),
    Encoding("spd", SPDConfig, f"{_PKG}.spd:AddShortestPaths", ("max_distance",),
             all_pairs=True),
    Encoding("rwse", RWSEConfig, f"{_PKG}.rwse:AddRWSE", ("walk_length",), pe="rwse",
             dim=lambda s: s.walk_length, raw_norm=True),
    Encoding("rrwp", RRWPConfig, f"{_PKG}.rrwp:AddRRWP", ("walk_length",),
             kwargs=("cache_pairs",), all_pairs=True),
    Encoding("expander", ExpanderConfig, f"{_PKG}.expander:AddExpanderGraph",
             ("degree", "seed")),
)}


def register_encoding(encoding: Encoding) -> Encoding:
    """Adds an encoding after the built-in ones; config sections, pre-transforms and model
    encoders built afterwards know it.

    Raises:
        ValueError: when its ``name`` or ``pe`` is taken.
    """
    if encoding.name in ENCODINGS:
        raise ValueError(f"an encoding named {encoding.name!r} is already registered")
    if encoding.pe is not None and any(e.pe == encoding.pe for e in ENCODINGS.values()):
        raise ValueError(f"model.pe={encoding.pe!r} already selects another encoding")
    ENCODINGS[encoding.name] = encoding
    return encoding


def float_encodings() -> tuple[str, ...]:
    """``Data`` attributes of the registered float node encodings (``lap_pe``, ``svd_pe``,
    ``rwse``, and any encoding added with :func:`register_encoding`), in registry order: what
    the input checks (:func:`graph_transformers.core.checks.check_batch`) value-check for NaN /
    inf besides the features."""
    return tuple(name for name, e in ENCODINGS.items() if e.pe is not None and not e.categorical)


def node_encoding(pe: str) -> Encoding:
    """The encoding a model reads for ``model.pe = pe``.

    Raises:
        ValueError: for a ``pe`` no registered encoding has (listing the known ones).
    """
    for encoding in ENCODINGS.values():
        if encoding.pe == pe:
            return encoding
    known = sorted(e.pe for e in ENCODINGS.values() if e.pe is not None)
    raise ValueError(f"unknown positional encoding pe={pe!r}; known: {known}")


def pe_dim(pe: str, encodings: Any) -> int:
    """The model's ``pe_dim`` for ``model.pe = pe`` from a config's ``encodings`` section.

    Raises:
        ValueError: for an unknown ``pe``, or when the section does not set its encoding.
    """
    encoding = node_encoding(pe)
    section = getattr(encodings, encoding.name, None)
    if section is None:
        raise ValueError(f"model.pe is {pe!r} but encodings.{encoding.name} is not set")
    return encoding.dim(section)


def build_transforms(encodings: Any, size_limit: Any = None) -> list[Any]:
    """A config's ``encodings`` section → its pre-transforms, in registry order (the sections
    that are unset or ``null`` skipped); ``size_limit`` (the model's
    :class:`~graph_transformers.core.dense.GraphSizeLimit`, or ``None``) goes to the all-pairs
    encodings."""
    return [e.build_transform(section, size_limit) for e in ENCODINGS.values()
            if (section := getattr(encodings, e.name, None)) is not None]
