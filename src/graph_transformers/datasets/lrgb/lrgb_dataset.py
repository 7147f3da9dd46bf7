"""What the LRGB datasets of this family share as PyG datasets: one split per instance
(:class:`LRGBDataset`), the split read from one LRGB file and cached as ``<split>.pt``
(:class:`LRGBSplitFile`: PascalVOC-SP / COCO-SP, PCQM-Contact), and their registry loaders
(:func:`lrgb_loader`), which process under ``root/canonical/`` as every published set does.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from torch_geometric.data import Data

from ...data.cache import KeyedCacheDataset, pre_transform_key
from ...data.generated import PathLike, Transform
from ...data.progress import progress
from ...data.published import canonical_root, files_tag

__all__ = ["LRGBDataset", "LRGBSplitFile", "lrgb_loader"]

log = logging.getLogger(__name__)


class LRGBDataset(KeyedCacheDataset):
    """A :class:`~graph_transformers.data.cache.KeyedCacheDataset` holding one split of an LRGB
    set. Subclasses set ``title`` (the set's name in messages, e.g. ``"PCQM-Contact"``) and
    ``split`` before this class's ``__init__`` runs."""

    title: str
    split: str

    def __repr__(self) -> str:
        return f"{self.title}({len(self)}, split={self.split!r})"


class LRGBSplitFile(LRGBDataset, ABC):
    """An :class:`LRGBDataset` whose split is one of LRGB's files, ``self.path``: processing
    reads its graphs (:meth:`read_graphs`), applies ``pre_transform`` to each and saves them as
    ``root/<title>/processed/<key>/<split>.pt``, the key naming the file's hash, the
    ``pre_transform`` and the format ``version``. Subclasses set ``title``, ``split`` and
    ``path``, then call this class's ``__init__``, which processes the split if needed, loads
    it and sets ``provenance`` to ``{split: "exact"}``."""

    path: Path

    def __init__(self, root: PathLike | None, transform: Transform, pre_transform: Transform,
                 force_reload: bool, *, version: int) -> None:
        base = Path(root).expanduser() if root is not None else canonical_root()
        self._key = f"{pre_transform_key(pre_transform)}_{files_tag([self.path])}_v{version}"
        super().__init__(str(base / self.title), transform, pre_transform,
                         force_reload=force_reload)
        self.load(self.processed_paths[0])
        self.provenance: dict[str, str] = {self.split: "exact"}

    @property
    def processed_file_names(self) -> list[str]:
        return [f"{self.split}.pt"]

    @abstractmethod
    def read_graphs(self) -> list[Data]:
        """The split's graphs as read from ``self.path``, before ``pre_transform``.

        Raises:
            DataError: a damaged, refused or malformed file.
        """

    def process(self) -> None:
        """Reads the split's file, applies ``pre_transform`` (with a progress bar) and saves the
        split."""
        log.info("%s %s: processing %s", self.title, self.split, self.path)
        graphs = self.read_graphs()
        if self.pre_transform is not None:
            graphs = [self.pre_transform(g)
                      for g in progress(graphs, f"{self.title} {self.split}: encodings")]
        self.save(graphs, self.processed_paths[0])


def lrgb_loader(cls: type[LRGBDataset], data_name: str, *args: str
                ) -> Callable[..., LRGBDataset]:
    """The registry loader of ``data.name: <data_name>``:
    ``load(root, split="train", transform=None, pre_transform=None, force_reload=False, *,
    data_dir=None)`` returns ``cls(canonical_root(root), *args, split, transform,
    pre_transform, force_reload, data_dir=data_dir)``, LRGB's files read from ``data_dir``
    (default ``$GRAPH_TRANSFORMERS_DATA``) and processed under ``root/canonical/``.

    Args:
        cls: the dataset class.
        data_name: the config name, for the loader's docstring.
        args: what ``cls`` takes between ``root`` and ``split`` (the set's name, where the
            class holds several).

    Example:
        >>> from graph_transformers.datasets.lrgb.peptides import Peptides
        >>> load = lrgb_loader(Peptides, "peptides-func", "peptides-func")
        >>> load.__name__
        'load_peptides_func'
    """

    def load(root: PathLike, split: str = "train", transform: Transform = None,
             pre_transform: Transform = None, force_reload: bool = False, *,
             data_dir: PathLike | None = None) -> LRGBDataset:
        return cls(canonical_root(root), *args, split, transform, pre_transform, force_reload,
                   data_dir=data_dir)

    load.__name__ = load.__qualname__ = "load_" + data_name.replace("-", "_")
    load.__module__ = cls.__module__
    load.__doc__ = (f"One split of ``data.name: {data_name}`` (LRGB's files in ``data_dir``) as "
                    f":class:`{cls.__name__}`, processed under ``root/canonical/``; it raises "
                    f"what :class:`{cls.__name__}` raises.")
    return load
