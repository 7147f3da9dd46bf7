r"""``pascalvoc-sp`` and ``coco-sp`` of the Long Range Graph Benchmark (Dwivedi et al., "Long Range
Graph Benchmark", NeurIPS 2022 Datasets and Benchmarks, §3.1): node classification of image
superpixels, one node per SLIC superpixel of a Pascal VOC 2011 (SBD annotations) / MS COCO image,
labelled with the semantic class of the pixel at the superpixel's centre; 21 classes (VOC, with
background) / 81 (COCO). Read from LRGB's published pickles in ``DATA_DIR`` (never downloaded, no
generator: ``data.source: generated`` is a config error).

**Files.** LRGB publishes each dataset as a zip of three pickles; the version every later paper
and PyG's ``LRGBDataset`` use is the region-boundary graph (two superpixels are joined when they
share a boundary, ``edge_wt_region_boundary``) of SLIC with compactness 30 (GraphGPS's configs
``slic_compactness: 30``, the URLs of :data:`SP_DATASETS`; LRGB's loaders default to
compactness 10 but its published runs and the zip PyG downloads are the compactness-30 graphs;
the folder inside the zip does not name the compactness, so a compactness-10 download in the
same place is read alike). Looked for, in order:

* ``DATA_DIR/voc_superpixels_edge_wt_region_boundary/{train,val,test}.pickle`` (the zip
  unpacked into ``DATA_DIR``; COCO: ``coco_superpixels_edge_wt_region_boundary/``);
* ``DATA_DIR/pascalvoc-sp/raw/{train,val,test}.pickle`` (PyG's ``LRGBDataset(root=DATA_DIR,
  name="PascalVOC-SP")`` layout; COCO: ``coco-sp/raw/``).

Each pickle is a list of graphs, each the tuple ``(x, edge_attr, edge_index, y)`` of tensors
(LRGB's / PyG's ``process``): ``x`` ``[num_nodes, 14]`` (the superpixel's colour statistics and
centre coordinates), ``edge_attr`` ``[num_edges, 2]`` (the region-boundary edge weights),
``edge_index`` ``[2, num_edges]`` (both directions), ``y`` ``[num_nodes]`` class ids. It is read
with :func:`~graph_transformers.data.safe_pickle.load_safe_pickle` only (containers, NumPy
arrays and tensors; a pickle naming anything else is refused, never run). The splits are LRGB's
files: VOC 8,498 / 1,428 / 1,429 graphs, COCO 113,286 / 5,000 / 5,000.

**Graphs**, as PyG's ``LRGBDataset`` stores them: ``x`` ``FloatTensor [N, 14]``, ``edge_attr``
``FloatTensor [E, 2]``, ``edge_index`` ``LongTensor [2, E]``, ``y`` ``LongTensor [N]``. COCO's
files hold COCO's 81 category ids (0 = background, then the 80 object ids between 1 and 90 with
gaps); they are mapped to ``0..80`` in increasing order (:data:`COCO_CATEGORY_IDS`), as LRGB's
and PyG's loaders do. The features are not normalized (as in LRGB and GraphGPS; Tönshoff et al.
2023 report that normalizing them helps).

**Task and metric** as LRGB: the loss is the class-weighted cross-entropy with weights
``(V − V_c) / V`` counted per batch (GraphGym's ``weighted_cross_entropy``, the configs'
``loss_fun``; ``spec.loss = "weighted_ce"``), the metric the macro F1 over all nodes of a split
(``f1_macro``, :mod:`graph_transformers.training.lrgb_metrics`), by which the best checkpoint is
chosen.

**Cache.** Each split is processed on first use into
``CACHE/canonical/<PascalVOC-SP|COCO-SP>/processed/<pre_transform key>_<files tag>_v<format>/
<split>.pt`` (checksummed; other files or other encodings give another folder).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data

from ...data.cache import DATA_ENV, DataNotFoundError, resolve_data_dir
from ...data.generated import PathLike, Transform, check_split
from ...data.published import dir_with, looked
from ...data.registry import DatasetSpec
from ...data.safe_pickle import load_safe_pickle
from ...errors import DataError
from .graph_tuples import as_tensor, check_node_ids, graph_tuple, integral, shaped
from .lrgb_dataset import LRGBSplitFile, lrgb_loader

__all__ = ["COCO_CATEGORY_IDS", "COCO_SP_SPEC", "LRGBSuperpixels", "PASCALVOC_SP_SPEC",
           "SP_DATASETS", "SuperpixelSet", "load_coco_sp", "load_pascalvoc_sp",
           "read_superpixel_graphs"]


#: bumped when the stored fields change (it is in the cache key)
_FORMAT = 1
#: node / edge feature widths of the region-boundary graphs
NODE_DIM, EDGE_DIM = 14, 2

#: COCO's category ids in the COCO-SP files (0 = background), in order: id ``COCO_CATEGORY_IDS[k]``
#: becomes class ``k`` (LRGB's ``label_remap``; the 80 object ids of COCO 2017 run from 1 to 90
#: with 10 gaps)
COCO_CATEGORY_IDS: tuple[int, ...] = (
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27,
    28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53,
    54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80,
    81, 82, 84, 85, 86, 87, 88, 89, 90)


@dataclass(frozen=True)
class SuperpixelSet:
    """One LRGB superpixel dataset: its ``data.name``, title, the folder LRGB's zip unpacks to,
    PyG's ``LRGBDataset`` name (its raw folder ``DATA_DIR/<pyg_name>/raw``), the number of
    classes, the class ids of its files when they are not ``0..num_classes-1`` (COCO), and the
    zip's URL (the one PyG's ``LRGBDataset`` downloads)."""

    name: str
    title: str
    folder: str
    pyg_name: str
    num_classes: int
    label_ids: tuple[int, ...] | None
    url: str


#: the superpixel sets: ``data.name`` → :class:`SuperpixelSet`
SP_DATASETS: dict[str, SuperpixelSet] = {
    "pascalvoc-sp": SuperpixelSet(
        "pascalvoc-sp", "PascalVOC-SP", "voc_superpixels_edge_wt_region_boundary",
        "pascalvoc-sp", 21, None,
        "https://www.dropbox.com/s/8x722ai272wqwl4/pascalvocsp.zip?dl=1"),
    "coco-sp": SuperpixelSet(
        "coco-sp", "COCO-SP", "coco_superpixels_edge_wt_region_boundary", "coco-sp", 81,
        COCO_CATEGORY_IDS, "https://www.dropbox.com/s/r6ihg1f4pmyjjy0/cocosp.zip?dl=1"),
}
_SPLIT_FILES = tuple(f"{s}.pickle" for s in ("train", "val", "test"))


def _locate(info: SuperpixelSet, data_dir: Path | None) -> Path:
    """The folder holding ``{train,val,test}.pickle`` of ``info`` (module docstring).

    Raises:
        DataNotFoundError: no data directory, or no folder with the three pickles; one line
            naming the expected paths, the folders searched and LRGB's URL.
    """
    how = (f"download LRGB's {info.url} and unpack it into DATA_DIR, giving DATA_DIR/"
           f"{info.folder}/{{train,val,test}}.pickle (or use PyG's layout DATA_DIR/"
           f"{info.pyg_name}/raw/); nothing is downloaded automatically")
    if data_dir is None:
        raise DataNotFoundError(f"{info.title}: no data directory (pass --data-dir or set "
                                f"${DATA_ENV}); to get the files, {how}")
    dirs = [data_dir / info.folder, data_dir / info.pyg_name / "raw"]
    found = dir_with(dirs, _SPLIT_FILES)
    if found is None:
        raise DataNotFoundError(f"{info.title}: {data_dir / info.folder}/{{train,val,test}}"
                                f".pickle not found. Looked in: {looked(dirs)}. To use "
                                f"{info.title}, {how}")
    return found


# ------------------------------------------------------------------------------ the pickles
def _graph(item: Any, where: str, info: SuperpixelSet, lut: Tensor | None) -> Data:
    """One graph tuple ``(x, edge_attr, edge_index, y)`` of an LRGB pickle as a ``Data``, checked.

    Raises:
        DataError: not a 4-tuple, a tensor of the wrong shape or type, a node id outside the
            graph, a non-finite feature, or a label outside the dataset's classes.
    """
    fields = graph_tuple(item, ("x", "edge_attr", "edge_index", "y"), where)
    x, edge_attr, edge_index, y = (as_tensor(v, f, where) for v, f in
                                   zip(fields, ("x", "edge_attr", "edge_index", "y")))
    x = shaped(x, "x", where, None, NODE_DIM).to(torch.float32)
    num_nodes = x.size(0)
    edge_index = integral(shaped(edge_index, "edge_index", where, 2, None), "edge_index", where)
    check_node_ids(edge_index, num_nodes, "edge_index", where)
    edge_attr = shaped(edge_attr, "edge_attr", where, edge_index.size(1), EDGE_DIM)
    edge_attr = edge_attr.to(torch.float32)
    for name, t in (("x", x), ("edge_attr", edge_attr)):
        if not bool(torch.isfinite(t).all()):
            raise DataError(f"{where}: {name} holds non-finite values")
    y = integral(y.reshape(-1), "y", where)
    if y.numel() != num_nodes:
        raise DataError(f"{where}: y has {y.numel()} labels for {num_nodes} nodes")
    if lut is not None:  # COCO's category ids -> 0..80
        inside = (y >= 0) & (y < lut.numel())
        mapped = torch.where(inside, lut[y.clamp(0, lut.numel() - 1)], -1)
        if bool((mapped < 0).any()):
            raise DataError(f"{where}: label {int(y[mapped < 0][0])} is not one of COCO-SP's "
                            f"{info.num_classes} category ids (COCO_CATEGORY_IDS)")
        y = mapped
    elif y.numel() and (int(y.min()) < 0 or int(y.max()) >= info.num_classes):
        bad = int(y.min()) if int(y.min()) < 0 else int(y.max())
        raise DataError(f"{where}: label {bad} outside 0..{info.num_classes - 1} "
                        f"({info.title} has {info.num_classes} classes)")
    return Data(x=x, edge_index=edge_index, edge_attr=edge_attr, y=y)


def read_superpixel_graphs(path: PathLike, name: str = "pascalvoc-sp") -> list[Data]:
    """The graphs of one LRGB superpixel pickle (module docstring), checked and converted to
    PyG's ``LRGBDataset`` fields, COCO's category ids mapped to ``0..80``.

    Args:
        path: ``train.pickle``, ``val.pickle`` or ``test.pickle``.
        name: ``"pascalvoc-sp"`` or ``"coco-sp"`` (:data:`SP_DATASETS`).

    Returns:
        One ``Data`` per graph, in the file's order: ``x [N, 14]`` float32, ``edge_attr
        [E, 2]`` float32, ``edge_index [2, E]`` int64, ``y [N]`` int64.

    Raises:
        ValueError: an unknown name.
        DataError: an unreadable, damaged or refused pickle
            (:func:`~graph_transformers.data.safe_pickle.load_safe_pickle`), a file that is not
            a list of graph tuples, or a graph that fails the checks; one line naming the file
            and the graph.
    """
    if name not in SP_DATASETS:
        raise ValueError(f"unknown LRGB superpixel set {name!r}; known: {sorted(SP_DATASETS)}")
    info, path = SP_DATASETS[name], Path(path)
    graphs = load_safe_pickle(path, what=f"{info.title} file")
    if not isinstance(graphs, (list, tuple)):
        raise DataError(f"{path}: holds a {type(graphs).__name__}, not LRGB's list of "
                        "(x, edge_attr, edge_index, y) graphs")
    if not graphs:
        raise DataError(f"{path}: holds no graph")
    lut = None
    if info.label_ids is not None:
        lut = torch.full((max(info.label_ids) + 1,), -1, dtype=torch.long)
        lut[torch.tensor(info.label_ids)] = torch.arange(len(info.label_ids))
    return [_graph(g, f"{path}: graph {i}", info, lut) for i, g in enumerate(graphs)]


# ----------------------------------------------------------------------------- the dataset
class LRGBSuperpixels(LRGBSplitFile):
    r"""One split of PascalVOC-SP or COCO-SP read from LRGB's published pickles (module
    docstring), with ``pre_transform`` (the encodings) computed per graph when the split is first
    processed, cached and checksummed.

    Each graph: ``x`` ``FloatTensor [N, 14]``, ``edge_attr`` ``FloatTensor [E, 2]``,
    ``edge_index`` ``LongTensor [2, E]``, ``y`` ``LongTensor [N]`` (classes ``0..20`` /
    ``0..80``), plus the encodings.

    Args:
        root: the processing folder (default ``canonical_root()``); the split goes to
            ``root/<PascalVOC-SP|COCO-SP>/processed/<key>/<split>.pt``.
        name (str): ``"pascalvoc-sp"`` or ``"coco-sp"`` (:data:`SP_DATASETS`).
        split (str): ``"train"``, ``"val"`` or ``"test"`` (LRGB's files of that name).
        transform, pre_transform, force_reload: as in PyG.
        data_dir: where LRGB's folder is (default ``$GRAPH_TRANSFORMERS_DATA``).

    Attributes:
        provenance (dict): ``{split: "exact"}``.
        canonical_info (dict): the loader and the file read.

    Raises:
        ValueError: an unknown name or split.
        DataNotFoundError: the pickles are not in the data directory.
        DataError: a damaged, refused or malformed pickle (:func:`read_superpixel_graphs`).
    """

    def __init__(self, root: PathLike | None = None, name: str = "pascalvoc-sp",
                 split: str = "train", transform: Transform = None,
                 pre_transform: Transform = None, force_reload: bool = False, *,
                 data_dir: PathLike | None = None) -> None:
        if name not in SP_DATASETS:
            raise ValueError(f"unknown LRGB superpixel set {name!r}; known: "
                             f"{sorted(SP_DATASETS)}")
        info = self.info = SP_DATASETS[name]
        check_split(info.title, split)
        self.name, self.split, self.title = name, split, info.title
        self.path = _locate(info, resolve_data_dir(data_dir)) / f"{split}.pickle"
        super().__init__(root, transform, pre_transform, force_reload, version=_FORMAT)
        self.canonical_info: dict[str, Any] = {
            "loader": f"{__name__}.LRGBSuperpixels({name!r})",
            "files": str(self.path.parent),
            "split": f"LRGB's {split}.pickle",
        }

    def read_graphs(self) -> list[Data]:
        return read_superpixel_graphs(self.path, self.name)


#: the loader of ``data.name: pascalvoc-sp``
load_pascalvoc_sp = lrgb_loader(LRGBSuperpixels, "pascalvoc-sp", "pascalvoc-sp")
#: the loader of ``data.name: coco-sp``
load_coco_sp = lrgb_loader(LRGBSuperpixels, "coco-sp", "coco-sp")


_COMMON = dict(node_dim=NODE_DIM, edge_dim=EDGE_DIM, loss="weighted_ce", source="canonical",
               params=("data_dir",))

#: ``data.name: pascalvoc-sp`` (LRGB; 21 classes per node, macro F1)
PASCALVOC_SP_SPEC = DatasetSpec("pascalvoc-sp", "node", "classification", 21, "f1_macro",
                                load_pascalvoc_sp, **_COMMON)
#: ``data.name: coco-sp`` (LRGB; 81 classes per node, macro F1)
COCO_SP_SPEC = DatasetSpec("coco-sp", "node", "classification", 81, "f1_macro", load_coco_sp,
                           **_COMMON)
