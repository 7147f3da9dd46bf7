"""The CSL (Circular Skip Link) graph-classification benchmark, generated in code.

CSL was introduced by Murphy et al., "Relational Pooling for Graph Representations" (ICML 2019)
and used as a 5-fold benchmark by Dwivedi et al., "Benchmarking Graph Neural Networks", and by the
Graph Transformer paper (Dwivedi & Bresson, 2021). Every graph is a circular skip-link graph
:math:`G_{n,R}`: the cycle :math:`C_{41}` plus the chords :math:`i \\sim (i + R) \\bmod 41`. The
class is the skip length :math:`R \\in \\{2, 3, 4, 5, 6, 9, 11, 12, 13, 16\\}`; all graphs are
4-regular, so the task cannot be solved by 1-WL message passing without positional information.

The benchmark's graphs are just these ten graphs under random node permutations, so this module
regenerates them instead of shipping them: class ``c`` has skip length ``CSL_SKIP_LENGTHS[c]``
(checked against the original ``graphs_Kary_Deterministic_Graphs.pkl`` /
``y_Kary_Deterministic_Graphs.pt`` of graphdeeplearning/benchmarking-gnns by graph isomorphism),
and graph ``k`` has the label of original graph ``k`` (labels ``k // 15``). The benchmark's 5-fold
split files ``CSL_{train,val,test}.index`` ship inside the package, so the fold indices apply
unchanged. Nothing outside the installed package is needed. Where the published files are in the
data directory (benchmarking-gnns' ``CSL.zip``), :func:`load_csl` reads those instead, through
PyG (``data.source``, :mod:`graph_transformers.data.published`).
"""
from __future__ import annotations

from functools import partial
from collections.abc import Iterator
from importlib import resources

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from ...data.generated import SPLITS, GeneratedDataset, PathLike, Transform, check_split
from ...data.registry import DatasetSpec
from ...data.published import published_or_generated, require_fields
from ..gnn_benchmark import GNNBenchmark

__all__ = [
    "CSL",
    "CSL_SPEC",
    "CSL_GRAPHS_PER_CLASS",
    "CSL_NUM_CLASSES",
    "CSL_NUM_FOLDS",
    "CSL_NUM_GRAPHS",
    "CSL_NUM_NODES",
    "CSL_SKIP_LENGTHS",
    "csl_graph",
    "csl_labels",
    "csl_split_indices",
    "generate_csl",
    "load_csl",
]

#: Number of nodes of every CSL graph.
CSL_NUM_NODES = 41
#: Skip length of each class: class ``c`` is the graph ``C_41`` + chords of length
#: ``CSL_SKIP_LENGTHS[c]`` (verified against the benchmark's original files).
CSL_SKIP_LENGTHS: tuple[int, ...] = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)
CSL_NUM_CLASSES = len(CSL_SKIP_LENGTHS)
CSL_GRAPHS_PER_CLASS = 15
CSL_NUM_GRAPHS = CSL_NUM_CLASSES * CSL_GRAPHS_PER_CLASS
CSL_NUM_FOLDS = 5

_SPLIT_PACKAGE = "graph_transformers.datasets.synthetic"
_SPLIT_DIR = "csl_splits"


def csl_graph(num_nodes: int, skip: int) -> Tensor:
    r"""The circular skip-link graph :math:`G_{n,R}`: the cycle :math:`C_n` plus the chords
    :math:`i \sim (i + R) \bmod n`.

    Args:
        num_nodes (int): number of nodes :math:`n` (at least 3).
        skip (int): skip length :math:`R`, with :math:`1 \le R < n`. ``R = 1`` or ``n - 1`` adds
            no new edge; ``R = n / 2`` adds :math:`n / 2` chords.

    Returns:
        LongTensor ``[2, E]``: undirected edges stored in both directions, sorted by
        ``(row, col)``, without self-loops or duplicates (``E = 4n`` for the CSL skip lengths).

    Raises:
        ValueError: if ``num_nodes < 3`` or ``skip`` is outside ``[1, num_nodes - 1]``.
    """
    n, r = int(num_nodes), int(skip)
    if n < 3:
        raise ValueError(f"csl_graph needs num_nodes >= 3, got {num_nodes}")
    if not 1 <= r < n:
        raise ValueError(f"csl_graph needs 1 <= skip < num_nodes = {n}, got skip={skip}")
    i = torch.arange(n)
    src = torch.cat([i, i])
    dst = torch.cat([(i + 1) % n, (i + r) % n])
    row, col = torch.cat([src, dst]), torch.cat([dst, src])
    key = torch.unique(row * n + col)  # sorted, deduplicated
    return torch.stack([key // n, key % n])


def csl_labels() -> list[int]:
    """The 150 class labels in the benchmark's graph order (``y_Kary_Deterministic_Graphs.pt``):
    graph ``k`` has label ``k // 15``."""
    return [k // CSL_GRAPHS_PER_CLASS for k in range(CSL_NUM_GRAPHS)]


def _permute(edge_index: Tensor, perm: Tensor, num_nodes: int) -> Tensor:
    """Relabel node ``i`` as ``perm[i]`` and sort the edges by ``(row, col)``."""
    ei = perm[edge_index]
    key = torch.sort(ei[0] * num_nodes + ei[1]).values
    return torch.stack([key // num_nodes, key % num_nodes])


def generate_csl(seed: int = 0) -> list[Data]:
    """Generate the 150 CSL graphs.

    Graph ``k`` is ``csl_graph(41, CSL_SKIP_LENGTHS[k // 15])`` with its nodes relabelled by a
    random permutation drawn from ``numpy.random.default_rng(seed)`` (one per graph, in order), so
    graph ``k`` has the same label as graph ``k`` of the original benchmark file.

    Args:
        seed (int): seed of the node permutations. The same seed gives identical graphs.

    Returns:
        list of 150 :class:`~torch_geometric.data.Data` with ``x`` LongTensor ``[41, 1]`` of zeros
        (one categorical node type: CSL has no informative node features), ``edge_index``
        LongTensor ``[2, 164]`` and ``y`` LongTensor ``[1]`` (class ``0..9``). No ``edge_attr``.
    """
    rng = np.random.default_rng(seed)
    n = CSL_NUM_NODES
    bases = [csl_graph(n, r) for r in CSL_SKIP_LENGTHS]
    data_list = []
    for label in csl_labels():
        perm = torch.from_numpy(rng.permutation(n)).long()
        data_list.append(
            Data(
                x=torch.zeros(n, 1, dtype=torch.long),
                edge_index=_permute(bases[label], perm, n),
                y=torch.tensor([label], dtype=torch.long),
                num_nodes=n,
            )
        )
    return data_list


def _read_index_file(split: str) -> list[list[int]]:
    text = resources.files(_SPLIT_PACKAGE).joinpath(_SPLIT_DIR, f"CSL_{split}.index").read_text()
    return [[int(tok) for tok in line.split(",")] for line in text.splitlines() if line.strip()]


def csl_split_indices(fold: int) -> dict[str, list[int]]:
    """The benchmark's train/val/test graph ids for one of the 5 cross-validation folds.

    Read from the packaged copies of benchmarking-gnns' ``CSL_{train,val,test}.index`` (line
    ``fold`` of each file).

    Args:
        fold (int): fold number in ``0..4``.

    Returns:
        dict with keys ``"train"``, ``"val"``, ``"test"`` mapping to lists of graph ids in
        ``0..149`` (90 / 30 / 30 ids, disjoint, covering all 150 graphs).

    Raises:
        ValueError: if ``fold`` is not an integer in ``0..4``.
    """
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not (
        0 <= fold < CSL_NUM_FOLDS
    ):
        raise ValueError(f"CSL fold must be an integer in 0..{CSL_NUM_FOLDS - 1}, got {fold!r}")
    return {split: _read_index_file(split)[int(fold)] for split in SPLITS}


class CSL(GeneratedDataset):
    r"""The CSL (Circular Skip Link) dataset of Murphy et al. (2019) with the 5-fold splits of
    Dwivedi et al., "Benchmarking Graph Neural Networks": 150 graphs of 41 nodes, 10 classes
    (skip lengths ``CSL_SKIP_LENGTHS``), 15 randomly permuted copies per class.

    The graphs are generated in code (:func:`generate_csl`) and the split files ship with the
    package, so no data directory or download is needed; ``root`` is only a cache. The processed
    file holds all 150 graphs (after ``pre_transform``) in
    ``root/processed/<pre_transform_key(pre_transform)>_seed<seed>/``; ``split`` and ``fold``
    select graphs by the benchmark's index files.

    Each graph has ``x`` LongTensor ``[41, 1]`` (zeros: a single node type), ``edge_index``
    ``[2, 164]`` and ``y`` LongTensor ``[1]``. Metric: accuracy (report mean ± std over folds).

    Args:
        root (str or PathLike, optional): cache directory (default
            ``resolve_cache_dir() / "CSL"``).
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        fold (int): cross-validation fold ``0..4``.
        seed (int): seed of the node permutations (see :func:`generate_csl`).
        transform, pre_transform (callable, optional): as in PyG.
        force_reload (bool): re-generate the processed file.

    Raises:
        ValueError: for an unknown ``split`` or a ``fold`` outside ``0..4``.
    """

    name = "CSL"
    num_classes = CSL_NUM_CLASSES
    metric = "accuracy"

    def __init__(
        self, root: PathLike | None = None, split: str = "train", fold: int = 0, seed: int = 0,
        transform: Transform = None, pre_transform: Transform = None, force_reload: bool = False,
    ) -> None:
        check_split("CSL", split)
        indices = csl_split_indices(fold)[split]  # validates fold before any work
        self.fold = int(fold)
        super().__init__(root, split, seed, transform, pre_transform, force_reload)
        data_list = [self.get(i) for i in indices]
        self._data_list = None
        self.data, self.slices = self.collate(data_list)

    def _file_index(self) -> int:
        return 0  # one file holds all 150 graphs; the fold's index files select the split

    @property
    def processed_file_names(self) -> list[str]:
        return ["data.pt"]

    def _generate(self) -> Iterator[list[Data]]:
        yield generate_csl(self.seed)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({len(self)}, split={self.split!r}, fold={self.fold})"


def csl_fields(data: Data) -> Data:
    """A graph of CSL's published files in the generated fields: ``x`` ``LongTensor [41, 1]`` of
    zeros, ``edge_index`` (self-loops removed by PyG), ``y`` ``LongTensor [1]``
    (:class:`~graph_transformers.data.published.ToBenchmarkFields`).

    Raises:
        DataError: a field is missing.
    """
    require_fields(data, "CSL", "edge_index", "y")
    n = int(data.num_nodes)
    return Data(x=torch.zeros(n, 1, dtype=torch.long), edge_index=data.edge_index.long(),
                y=torch.as_tensor(data.y).reshape(1).long(), num_nodes=n)


def load_csl(
    root: PathLike, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, source: str = "generated",
    fold: int = 0, seed: int = 0, data_dir: PathLike | None = None,
) -> GNNBenchmark | CSL:
    """One split of one fold of CSL (``data.name: csl``): the published files read by PyG's
    ``GNNBenchmarkDataset`` (``source="canonical"``, processed under ``root/canonical/CSL/``,
    split by the benchmark's folds) or the graphs generated in code (``source="generated"``,
    :class:`CSL`, cached under ``root/CSL/``).

    ``fold``: cross-validation fold ``0..4`` (``data.fold``); ``seed``: seed of the generated
    node permutations (``data.seed``). The other arguments:
    :func:`~graph_transformers.data.published.published_or_generated`.

    Raises:
        ValueError: a ``fold`` outside ``0..4`` (or as ``published_or_generated``).
        DataNotFoundError: ``source="canonical"`` and the published files cannot be had.
    """
    return published_or_generated(
        "CSL", source, root, split, transform, pre_transform, force_reload, data_dir=data_dir,
        generated=CSL, published=partial(GNNBenchmark, name="CSL"),
        indices=lambda s: csl_split_indices(fold)[s], fold=fold, seed=seed)


#: ``data.name: csl``
CSL_SPEC = DatasetSpec("csl", "graph", "classification", CSL_NUM_CLASSES, "accuracy", load_csl,
                       node_types=1, source="generated", published=True,
                       params=("fold", "seed", "data_dir"))
