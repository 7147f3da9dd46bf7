"""The node features of a TU run (``data.node_features``: ``auto``, ``constant``, ``degree``;
see :mod:`graph_transformers.datasets.tu`): the pre-transform of a mode
(:func:`node_feature_transform`), its width (:func:`node_feature_dim`), the capped one-hot
degree (:class:`CappedOneHotDegree`) and the log line of the features used
(:func:`log_node_features`).
"""
from __future__ import annotations

import logging

import numpy as np
import torch
from torch_geometric.transforms import BaseTransform, Constant
from torch_geometric.utils import degree as node_degree
from torch_geometric.utils import one_hot

__all__ = ["DEFAULT_MAX_DEGREE", "NODE_FEATURES", "CappedOneHotDegree", "log_node_features",
           "node_feature_dim", "node_feature_transform"]

log = logging.getLogger(__name__)

#: values of ``data.node_features`` (see the module docstring)
NODE_FEATURES: tuple[str, ...] = ("auto", "constant", "degree")
#: default cap of the one-hot degree features (``data.options.max_degree``)
DEFAULT_MAX_DEGREE = 64


class CappedOneHotDegree(BaseTransform):
    """One-hot node degree with a cap: node ``i`` gets ``one_hot(min(deg(i), max_degree))``,
    ``max_degree + 1`` columns (degree ``0 .. max_degree - 1``, then ``>= max_degree`` in the
    last column). Unlike PyG's :class:`~torch_geometric.transforms.OneHotDegree`, a degree above
    the cap is not an error. The degree counts ``edge_index[0]`` (TU graphs store both
    directions, so it is the undirected degree). Appended after ``x`` when the graph has one,
    else it becomes ``x``.

    Input: ``data.edge_index`` ``LongTensor [2, E]``, ``data.x`` ``[N, F]`` or ``None``.
    Output: ``data.x`` ``FloatTensor [N, F + max_degree + 1]`` (``F = 0`` without ``x``).

    Args:
        max_degree (int): the cap (``>= 1``).

    Raises:
        ValueError: ``max_degree`` not a positive integer.
    """

    def __init__(self, max_degree: int = DEFAULT_MAX_DEGREE) -> None:
        if isinstance(max_degree, bool) or not isinstance(max_degree, (int, np.integer)) \
                or max_degree < 1:
            raise ValueError(f"data.options.max_degree must be a positive integer, got "
                             f"{max_degree!r}")
        self.max_degree = int(max_degree)

    def forward(self, data):
        """Adds the capped one-hot degree to ``data.x`` (see the class docstring)."""
        deg = node_degree(data.edge_index[0], data.num_nodes, dtype=torch.long)
        onehot = one_hot(deg.clamp(max=self.max_degree), self.max_degree + 1)
        x = data.x
        if x is None:
            data.x = onehot
        else:
            x = x.view(-1, 1) if x.dim() == 1 else x
            data.x = torch.cat([x, onehot.to(x.dtype)], dim=-1)
        return data

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(max_degree={self.max_degree})"


def _check_mode(mode: str) -> str:
    if mode not in NODE_FEATURES:
        raise ValueError(f"data.node_features must be one of {NODE_FEATURES}, got {mode!r}")
    return mode


def node_feature_transform(mode: str, featureless: bool,
                           max_degree: int = DEFAULT_MAX_DEGREE) -> BaseTransform | None:
    """The pre-transform of ``data.node_features`` for a TU set (module docstring).

    Args:
        mode: ``"auto"``, ``"constant"`` or ``"degree"``.
        featureless: the set has neither node labels nor node attributes (``x`` is ``None``).
        max_degree: the cap of ``degree``.

    Returns:
        ``None`` (``auto`` on a set with features: ``x`` as read), a
        :class:`~torch_geometric.transforms.Constant` (``x = 1``, ``[N, 1]``, replacing any
        ``x``) or a :class:`CappedOneHotDegree`.

    Raises:
        ValueError: an unknown ``mode`` or a bad ``max_degree``.
    """
    mode = _check_mode(mode)
    if mode == "degree":
        return CappedOneHotDegree(max_degree)
    if mode == "constant" or featureless:
        return Constant(value=1.0, cat=False)
    return None


def node_feature_dim(mode: str, num_features: int, max_degree: int = DEFAULT_MAX_DEGREE) -> int:
    """Width of ``x`` after :func:`node_feature_transform` (the spec's ``node_dim``).

    Args:
        mode: ``"auto"``, ``"constant"`` or ``"degree"``.
        num_features: the set's own node feature width (0 for a featureless set).
        max_degree: the cap of ``degree``.

    Raises:
        ValueError: an unknown ``mode``.
    """
    mode = _check_mode(mode)
    if mode == "degree":
        return int(num_features) + int(max_degree) + 1
    if mode == "constant":
        return 1
    return int(num_features) or 1


def log_node_features(name: str, featureless: bool, mode: str, cap: int) -> None:
    """One INFO line on the node features a TU run uses (``data.node_features``)."""
    if mode == "degree":
        log.info("TU %s: node features = one-hot node degree, %d columns (degree >= %d in the "
                 "last; data.options.max_degree)%s", name, cap + 1, cap,
                 "" if featureless else ", appended after the set's own node features")
    elif mode == "constant":
        log.info("TU %s: node features = one constant 1 per node (data.node_features: "
                 "constant)%s", name, "" if featureless else "; the set's own node features "
                 "are not used")
    elif featureless:
        log.info("TU %s has no node labels or attributes: each node gets one constant feature 1 "
                 "(data.node_features: auto); data.node_features=degree gives the one-hot node "
                 "degree instead (capped at data.options.max_degree, default %d), the usual "
                 "choice for such sets", name, cap)
