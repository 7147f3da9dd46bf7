"""The split names of every dataset, the argument checks of the datasets (split, source, seed,
counts), the seeded stratified folds (:func:`stratified_kfold`: the TU sets, a user's graphs),
:class:`NodeSplitMask` (the split of a single-graph node task) and :class:`GeneratedDataset`, the
base class of the generated datasets (CSL, PATTERN, CLUSTER, TSP).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform, Compose

from .cache import KeyedCacheDataset, pre_transform_key, resolve_cache_dir
from .progress import progress

#: A dataset root, data folder or file, as the loaders and datasets take it.
PathLike = str | os.PathLike
#: A PyG ``transform`` / ``pre_transform`` argument: a callable on a ``Data``, or none.
Transform = Callable | None

#: The split names, in the order every dataset stores and generates them.
SPLITS: tuple[str, str, str] = ("train", "val", "test")


def check_split(name: str, split: str) -> int:
    """The position of ``split`` in :data:`SPLITS`.

    Raises:
        ValueError: naming dataset ``name`` for a split that is not in :data:`SPLITS`.
    """
    if split not in SPLITS:
        raise ValueError(f"{name} split must be one of {SPLITS}, got {split!r}")
    return SPLITS.index(split)


#: values of a loader's ``source`` argument: the published files, or this library's version
LOADER_SOURCES: tuple[str, str] = ("canonical", "generated")


def check_source(name: str, source: str) -> bool:
    """Whether a loader's ``source`` asks for the published files (``"canonical"``) rather than
    this library's version (``"generated"``).

    Raises:
        ValueError: naming dataset ``name`` for any other value.
    """
    if source not in LOADER_SOURCES:
        raise ValueError(f"{name}: source must be one of {LOADER_SOURCES}, got {source!r}")
    return source == "canonical"


class NodeSplitMask(BaseTransform):
    """Sets ``data.node_mask = data[f"{split}_mask"]`` so that a transductive single-graph dataset
    (Planetoid) trains and evaluates on the nodes of one split."""

    def __init__(self, split: str) -> None:
        self.split = split

    def forward(self, data):
        data.node_mask = data[f"{self.split}_mask"]
        return data

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.split!r})"


def chain(first: Transform, then: Transform) -> Transform:
    """``first`` then ``then`` as one transform: either alone where the other is ``None``, else
    ``Compose([first, then])`` (``None`` where both are)."""
    if first is None or then is None:
        return then if first is None else first
    return Compose([first, then])


def split_mask(split: str, transform: Transform) -> BaseTransform:
    """The transform of a single-graph node task's loader: :class:`NodeSplitMask` of ``split``,
    then ``transform``."""
    return chain(NodeSplitMask(split), transform)


def stratified_kfold(labels: Sequence[int] | np.ndarray | torch.Tensor, n_splits: int = 10,
                     seed: int = 0) -> list[np.ndarray]:
    """Cut ``range(len(labels))`` into ``n_splits`` stratified folds, deterministically.

    Recipe (numpy only): ``rng = numpy.random.default_rng(seed)``; for each class in increasing
    label order, its ids are shuffled with ``rng.permutation``; the class-wise shuffled lists are
    concatenated and position ``j`` of the concatenation goes to fold ``j % n_splits``. Hence every
    fold holds ``floor`` or ``ceil`` of ``n_c / n_splits`` graphs of each class ``c``, and the
    fold sizes differ by at most one.

    Args:
        labels: ``[N]`` integer class labels.
        n_splits (int): number of folds (``2 <= n_splits <= N``).
        seed (int): seed of the shuffles; the same seed gives the same folds.

    Returns:
        list of ``n_splits`` sorted ``int64`` arrays, disjoint, covering ``0..N-1``.

    Raises:
        ValueError: for labels that are not 1-D, or an ``n_splits`` outside ``[2, N]``.
    """
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels).reshape(-1)
    n = y.shape[0]
    if not 2 <= int(n_splits) <= n:
        raise ValueError(f"stratified_kfold needs 2 <= n_splits <= {n}, got {n_splits}")
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)])
    fold_of = np.empty(n, dtype=np.int64)
    fold_of[order] = np.arange(n) % int(n_splits)
    return [np.flatnonzero(fold_of == k).astype(np.int64) for k in range(int(n_splits))]


def check_count(name: str, value: int, minimum: int = 1) -> int:
    """``value`` as an ``int``, checked to be an integer (not a bool) ``>= minimum``.

    Raises:
        ValueError: naming ``name`` ("a positive integer" for ``minimum = 1``, "a non-negative
            integer" for ``minimum = 0``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = {0: "a non-negative integer", 1: "a positive integer"}.get(
            minimum, f"an integer >= {minimum}")
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    return int(value)


def check_split_counts(name: str, counts: Sequence[int]) -> tuple[int, int, int]:
    """Validates ``(train, val, test)`` sizes of a generated dataset.

    Raises:
        ValueError: naming ``name`` unless ``counts`` are three non-negative integers.
    """
    try:
        values = tuple(counts)
    except TypeError:
        msg = f"{name} must be three counts (train, val, test), got {counts!r}"
        raise ValueError(msg) from None
    if len(values) != 3 or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0 for v in values
    ):
        raise ValueError(
            f"{name} must be three non-negative integers (train, val, test), got {counts!r}"
        )
    return tuple(int(v) for v in values)  # type: ignore[return-value]


def check_seed(seed: int) -> int:
    """Validates a generation seed.

    Raises:
        ValueError: unless ``seed`` is a non-negative integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def size_tag(prefix: str, counts: Sequence[int], default: Sequence[int]) -> str:
    """The processed-directory suffix of non-benchmark sizes: ``""`` when ``counts`` equal the
    benchmark's ``default``, else ``prefix`` followed by the counts joined by ``-``
    (``size_tag("_n", (2, 1, 1), ...) == "_n2-1-1"``)."""
    if tuple(counts) == tuple(default):
        return ""
    return prefix + "-".join(map(str, counts))


class GeneratedDataset(KeyedCacheDataset):
    """A dataset generated in code from a seed: ``root`` is only a cache.

    The processed files live in
    ``root/processed/<pre_transform_key(pre_transform)>_seed<seed><_size_tag()>/`` (one
    ``<split>.pt`` per split unless a subclass names other files); the first instantiation
    generates them all (:meth:`_generate`, one file at a time so that peak memory stays at one
    split), later ones load them. Subclasses set ``name`` and implement :meth:`_generate_split`
    (or :meth:`_generate`); non-benchmark sizes override :meth:`_size_tag`.

    Args:
        root (str or PathLike, optional): cache directory (default
            ``resolve_cache_dir() / name``).
        split (str): one of :data:`SPLITS`.
        seed (int): generation seed, a non-negative integer.
        transform, pre_transform (callable, optional): as in PyG.
        force_reload (bool): regenerate the processed files.

    Raises:
        ValueError: for an unknown ``split`` or a negative ``seed``.
    """

    name = ""

    def __init__(
        self, root: PathLike | None, split: str, seed: int, transform: Transform,
        pre_transform: Transform, force_reload: bool,
    ) -> None:
        check_split(self.name, split)
        self.split = split
        self.seed = check_seed(seed)
        if root is None:
            root = resolve_cache_dir() / self.name
        super().__init__(os.fspath(root), transform, pre_transform, force_reload=force_reload)
        self.load(self.processed_paths[self._file_index()])

    def _size_tag(self) -> str:
        """Suffix of the processed directory for non-benchmark sizes (``""`` by default)."""
        return ""

    def _file_index(self) -> int:
        """Which processed file holds this split's graphs."""
        return SPLITS.index(self.split)

    def _generate_split(self, split: str) -> list[Data]:
        """The graphs of ``split`` (before ``pre_transform``): the hook a subclass implements
        unless it overrides :meth:`_generate` (CSL, TSP generate all splits at once).

        Raises:
            NotImplementedError: for a subclass that implements neither hook.
        """
        raise NotImplementedError(f"{type(self).__name__} implements neither _generate_split "
                                  "nor _generate")

    def _generate(self) -> Iterator[list[Data]]:
        """The graphs of each processed file, in :attr:`processed_file_names` order."""
        for split in SPLITS:
            yield self._generate_split(split)

    @property
    def _key(self) -> str:
        return f"{pre_transform_key(self.pre_transform)}_seed{self.seed}{self._size_tag()}"

    @property
    def processed_file_names(self) -> list[str]:
        return [f"{split}.pt" for split in SPLITS]

    def process(self) -> None:
        for path, data_list in zip(self.processed_paths, self._generate()):
            if self.pre_transform is not None:
                data_list = [self.pre_transform(d) for d in progress(
                    data_list, f"{type(self).__name__} {os.path.basename(path)}: encodings")]
            self.save(data_list, path)
            del data_list

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({len(self)}, split={self.split!r}, seed={self.seed})"
