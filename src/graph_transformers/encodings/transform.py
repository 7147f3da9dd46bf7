"""What the node-encoding pre-transforms share: store one encoding of a graph as a ``Data``
attribute, with a ``repr`` that names the dataset's processed cache."""
from __future__ import annotations

from typing import ClassVar
from collections.abc import Callable

from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform


class NodeEncodingTransform(BaseTransform):
    """Base of the PyG transforms storing ``encode(edge_index, num_nodes, value)`` as
    ``data[attr_name]``, ``value`` being the encoding's one option (the class's ``option``, e.g.
    ``k``). Meant as a ``pre_transform``: computed once and cached with the dataset, in a
    directory named by the ``repr`` ``Name(option=value, attr_name='...')``
    (:func:`~graph_transformers.data.cache.pre_transform_key`).

    A subclass sets ``option``, ``encode`` (``staticmethod`` of the encoding's function) and,
    to refuse values below ``minimum``, ``what`` (how the error names the option).

    Raises:
        ValueError: ``"<what> must be >= <minimum>, got <value>"``.
    """

    option: ClassVar[str]
    encode: ClassVar[Callable[[Tensor, int, int], Tensor]]
    what: ClassVar[str | None] = None
    minimum: ClassVar[int] = 1

    def __init__(self, value: int, attr_name: str) -> None:
        if self.what is not None and value < self.minimum:
            raise ValueError(f"{self.what} must be >= {self.minimum}, got {value}")
        setattr(self, self.option, value)
        self.attr_name = attr_name

    def forward(self, data: Data) -> Data:
        data[self.attr_name] = self.encode(data.edge_index, data.num_nodes,
                                           getattr(self, self.option))
        return data

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.option}={getattr(self, self.option)}, "
                f"attr_name={self.attr_name!r})")
