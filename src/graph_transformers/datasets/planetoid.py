"""Planetoid citation graphs (Cora, CiteSeer): transductive node classification on one graph
with the public split of Yang et al., "Revisiting Semi-Supervised Learning with Graph Embeddings"
(ICML 2016), as used by Kipf & Welling's GCN: 20 labelled nodes per class for training, 500 nodes
for validation, 1000 for test. The metric is accuracy on the test nodes.

The graph is read by PyTorch Geometric's own :class:`~torch_geometric.datasets.Planetoid`
(``split="public"``) from the eight Planetoid files ``ind.<name>.{x,tx,allx,y,ty,ally,graph,
test.index}`` (Python-2 pickles of scipy/numpy objects):

* **offline**: ``resolve_data_dir(data_dir) / "Planetoid"`` (``docs/datasets.md``, "Raw
  files"; kimiyoung/planetoid ``data/``). Each file's sha256 is checked against the pinned one,
  then it is copied into Planetoid's ``raw_dir`` (``<root>/<Name>/raw/``), so Planetoid finds
  its ``raw_file_names`` and never downloads;
* **online fallback**: Planetoid's own download from :attr:`Planetoid.url`
  (``https://github.com/kimiyoung/planetoid/raw/master/data``), unless ``download=False`` or
  ``$GRAPH_TRANSFORMERS_OFFLINE`` is set.

The split is by **boolean node masks**, not by separate datasets: every split of a training run
sees the same single graph, and a trainer for single-graph transductive tasks computes the loss on
``train_mask`` nodes and evaluates on ``val_mask`` / ``test_mask`` nodes.
"""
from __future__ import annotations

import os
import shutil
from functools import partial
from pathlib import Path

from torch_geometric.datasets import Planetoid

from ..data.cache import (DATA_ENV, DataNotFoundError, PreTransformKeyed, check_sha256,
                          resolve_cache_dir, resolve_data_dir)
from ..data.download import OFFLINE_ENV, offline
from ..data.generated import PathLike, Transform, split_mask
from ..data.registry import DatasetSpec

__all__ = ["CITESEER_SPEC", "CORA_SPEC", "PlanetoidGraph", "PLANETOID_NAMES", "PLANETOID_STATS",
           "OFFLINE_ENV", "load_planetoid"]

#: Names accepted (case-insensitive). PubMed is read like Cora and CiteSeer, or downloaded.
PLANETOID_NAMES: tuple[str, ...] = ("Cora", "CiteSeer", "PubMed")
#: Known sizes of the public split (checked by the tests).
PLANETOID_STATS: dict[str, dict[str, int]] = {
    "Cora": {"num_nodes": 2708, "num_classes": 7, "num_features": 1433,
             "num_train": 140, "num_val": 500, "num_test": 1000},
    "CiteSeer": {"num_nodes": 3327, "num_classes": 6, "num_features": 3703,
                 "num_train": 120, "num_val": 500, "num_test": 1000},
}
#: Set to ``1`` to forbid any download attempt (same as ``download=False``).

# sha256 of the benchmark's raw files in Planetoid (docs/datasets.md, 'Raw files').
_SHA256 = {
    "ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    "ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    "ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
    "ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
    "ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
    "ind.citeseer.test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    "ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
    "ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
    "ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
    "ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
}




def _canonical_name(name: str) -> str:
    for known in PLANETOID_NAMES:
        if str(name).lower() == known.lower():
            return known
    raise ValueError(f"Planetoid: unknown dataset {name!r}; known: {PLANETOID_NAMES}")


def _planetoid_dir(data_dir: Path) -> Path:
    """``data_dir/Planetoid`` if it exists, else ``data_dir`` when it holds ``ind.*`` files."""
    if (data_dir / "Planetoid").is_dir():
        return data_dir / "Planetoid"
    if any(data_dir.glob("ind.*")):
        return data_dir
    return data_dir / "Planetoid"


class PlanetoidGraph(PreTransformKeyed, Planetoid):
    r"""The Cora or CiteSeer citation graph with the public Planetoid split, loaded by PyG's
    :class:`~torch_geometric.datasets.Planetoid` (``split="public"``; see the module docstring
    for the sources).

    =========  =====  =======  ========  ===========================
    name       nodes  classes  features  train / val / test nodes
    =========  =====  =======  ========  ===========================
    Cora       2708   7        1433      140 / 500 / 1000
    CiteSeer   3327   6        3703      120 / 500 / 1000
    =========  =====  =======  ========  ===========================

    The dataset holds one graph (``len == 1``): ``x`` ``FloatTensor [N, F]`` (0/1 bag-of-words
    indicators as stored in the files, *not* row-normalized; GCN-style row normalization is
    ``transform=torch_geometric.transforms.NormalizeFeatures()``), ``edge_index``
    ``LongTensor [2, E]`` (undirected, both directions; Cora ``E = 10556``, CiteSeer ``9104``),
    ``y`` ``LongTensor [N]`` and the ``BoolTensor [N]`` masks ``train_mask`` / ``val_mask`` /
    ``test_mask`` (disjoint). CiteSeer's 15 isolated test-set nodes without features in the raw
    files get zero features and label 0, outside every mask (PyG's handling).

    The node-level split is by masks: use the same graph for every split and select the nodes
    of a split with its mask (a single-graph transductive trainer does this).

    Layout under ``root`` (default ``resolve_cache_dir() / "Planetoid"``): raw files in
    ``root/<Name>/raw/`` (Planetoid's ``raw_dir``), the processed graph (after ``pre_transform``)
    in ``root/<Name>/processed/<pre_transform_key(pre_transform)>/data.pt``.

    Arguments in PyG's order (``Planetoid(root, name, ...)``).

    Args:
        root (str or PathLike, optional): cache directory.
        name (str): ``"Cora"`` or ``"CiteSeer"`` (case-insensitive; ``"PubMed"`` by download only).
        transform, pre_transform (callable, optional): as in PyG.
        force_reload (bool): re-process the raw files.
        data_dir (str or PathLike, optional): data directory holding ``Planetoid/`` (default
            ``$GRAPH_TRANSFORMERS_DATA``; ``None`` → download).
        download (bool): allow Planetoid's download when the files are not local (also off with
            ``$GRAPH_TRANSFORMERS_OFFLINE=1``).

    Attributes:
        metric (str): ``"accuracy"``. level (str): ``"node"``.

    Raises:
        TypeError: a ``name`` that is not a string (a call in the removed order
            ``PlanetoidGraph(name, root, ...)``).
        ValueError: no or an unknown name, or a raw file whose sha256 is not the pinned one.
        DataNotFoundError: the raw files are neither local nor downloadable; the message lists
            where it looked and how to get them.
    """

    metric = "accuracy"
    level = "node"
    task = "node_classification"

    def __init__(
        self, root: PathLike | None = None, name: str | None = None, transform: Transform = None,
        pre_transform: Transform = None, force_reload: bool = False, *,
        data_dir: PathLike | None = None, download: bool = True,
    ) -> None:
        if name is None:
            raise ValueError(f"PlanetoidGraph: no dataset name; pass name= (one of "
                             f"{', '.join(PLANETOID_NAMES)})")
        if not isinstance(name, str):  # e.g. a path: the removed order (name, root, ...)
            raise TypeError(f"PlanetoidGraph: name must be a dataset name (str), got {name!r}; "
                            "the arguments are in PyG's order, PlanetoidGraph(root, name, ...)")
        name = _canonical_name(name)
        self.allow_download = bool(download) and not offline()
        data = resolve_data_dir(data_dir)
        self._source_dir = _planetoid_dir(data) if data is not None else None
        root = Path(root).expanduser() if root is not None else resolve_cache_dir() / "Planetoid"
        super().__init__(str(root), name, split="public", transform=transform,
                         pre_transform=pre_transform, force_reload=force_reload)

    def download(self) -> None:
        """Called by PyG only when ``raw_dir`` lacks a raw file: copy the eight files from the
        data directory (sha256 checked), else use Planetoid's own download."""
        raw = Path(self.raw_dir)
        if self._source_dir is not None:
            sources = [self._source_dir / f for f in self.raw_file_names]
            if all(p.is_file() for p in sources):
                raw.mkdir(parents=True, exist_ok=True)
                for src in sources:
                    check_sha256(src, _SHA256.get(src.name), "Planetoid")
                    tmp = raw / f".{src.name}.part"
                    shutil.copyfile(src, tmp)
                    os.replace(tmp, raw / src.name)
                return
        if not self.allow_download:
            raise DataNotFoundError(f"Planetoid {self.name}: raw files not found. "
                                    f"{self._how_to_get()}")
        try:
            super().download()
        except Exception as e:  # fsspec/aiohttp/urllib errors differ by backend
            raise DataNotFoundError(
                f"Planetoid {self.name}: the download from {self.url} failed ({e!r}). "
                f"{self._how_to_get()}"
            ) from e

    def _how_to_get(self) -> str:
        looked = (str(self._source_dir) if self._source_dir is not None
                  else "(no data directory given)")
        files = ", ".join(self.raw_file_names)
        return (
            f"Looked in: {looked} and {self.raw_dir} for {files}. To get the data, pass "
            f"--data-dir (data_dir=...) or set ${DATA_ENV} to a folder whose Planetoid/ holds "
            "these files (see docs/datasets.md, 'Raw files'), or allow Planetoid's download "
            f"from {self.url} (needs network; download=True and ${OFFLINE_ENV} unset)."
        )

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.name})"


def load_planetoid(
    root: PathLike, name: str, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *,
    data_dir: PathLike | None = None,
) -> PlanetoidGraph:
    """The graph of a Planetoid set (``data.name: cora`` / ``citeseer``), cached under
    ``root/Planetoid/``, with ``node_mask`` selecting the nodes of ``split``
    (:func:`~graph_transformers.data.generated.split_mask`, then ``transform``)."""
    return PlanetoidGraph(str(Path(root) / "Planetoid"), name, data_dir=data_dir,
                          pre_transform=pre_transform, force_reload=force_reload,
                          transform=split_mask(split, transform))


def _spec(name: str, pyg_name: str) -> DatasetSpec:
    stats = PLANETOID_STATS[pyg_name]
    return DatasetSpec(name, "node", "classification", stats["num_classes"], "accuracy",
                       partial(load_planetoid, name=pyg_name), node_dim=stats["num_features"],
                       params=("data_dir",))


#: ``data.name: cora``
CORA_SPEC = _spec("cora", "Cora")
#: ``data.name: citeseer``
CITESEER_SPEC = _spec("citeseer", "CiteSeer")
