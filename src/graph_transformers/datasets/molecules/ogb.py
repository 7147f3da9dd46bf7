r"""``ogbg-molhiv`` from OGB's published files, read by OGB's own loader (needs the ``[ogb]``
extra: ``pip install 'graph-transformers[ogb]'``).

OGB's ``PygGraphPropPredDataset`` reads the files (``raw/*.csv.gz``: OGB's featurization, every
bond as two directed edges) and gives the official split (``get_idx_split()``, OGB's scaffold
split), and OGB's ``Evaluator`` scores it
(:class:`graph_transformers.training.metrics.OGBEvaluatorROCAUC`). Where the files are looked
for: :func:`graph_transformers.datasets.molecules.ogb_files.locate_ogb`. Without them,
``data.source: auto`` falls back to
:class:`graph_transformers.datasets.molecules.moleculenet.MoleculeNetCSV`
(``hiv``: the same molecules and label, featurized by this library, with a re-derived scaffold
split); both come from one loader,
:func:`graph_transformers.datasets.molecules.moleculenet.load_moleculenet`.

OGB's node and edge features are the columns of
:mod:`graph_transformers.datasets.molecules.featurization` (``ATOM_FEATURE_DIMS``
``[119, 5, 12, 12, 10, 6, 6, 2, 2]`` = OGB's ``get_atom_feature_dims()``,
``BOND_FEATURE_DIMS`` ``[5, 6, 2]`` = ``get_bond_feature_dims()``;
``tests/datasets/test_canonical.py``
checks this, and that OGB's ``smiles2graph`` and
:func:`~graph_transformers.datasets.molecules.featurization.smiles_to_graph` give the same
tensors), so the same model config runs on either source.

OGB 1.3.6 loads its processed file with ``torch.load`` defaults, which since torch 2.6 refuse
PyG's data classes; the loader is run with exactly those classes allowed
(``torch.serialization.safe_globals``), keeping ``weights_only`` loading.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from ogb.graphproppred import PygGraphPropPredDataset
from torch_geometric.data.data import Data, DataEdgeAttr, DataTensorAttr
from torch_geometric.data.storage import GlobalStorage

from ...data.cache import cache_file_problem, pre_transform_key, record_cache_file, resolve_data_dir
from ...data.generated import PathLike, Transform
from ...data.published import canonical_root, files_tag, with_fields
from .ogb_files import OGB_DATASETS, locate_ogb, ogb_folder

__all__ = ["OGBGraphPropPred"]

log = logging.getLogger(__name__)

#: OGB's split names for ours
_OGB_SPLIT = {"train": "train", "val": "valid", "test": "test"}
#: the classes a processed file of PyG data holds (allowed for weights_only loading)
_PYG_CLASSES = [Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]


class OGBGraphPropPred(PygGraphPropPredDataset):
    r"""One split of an OGB graph property prediction dataset (``ogbg-molhiv``,
    ``ogbg-molpcba``) read by OGB's
    ``PygGraphPropPredDataset`` from its published files, with OGB's official split.

    The raw files are read in place (``DATA_DIR/ogbg_molhiv/``, or a download in
    ``root/ogbg_molhiv/``); every graph is converted by
    :class:`~graph_transformers.data.published.ToBenchmarkFields` (``y`` to float32
    ``[1, 1]``, the binary task's layout) before ``pre_transform``, and the processed file goes to
    ``root/<folder>/processed/<pre_transform key>_<files tag>/`` with a recorded checksum (a file
    that fails it is rebuilt).

    Each graph: ``x`` ``LongTensor [N, 9]``, ``edge_index`` ``LongTensor [2, E]``,
    ``edge_attr`` ``LongTensor [E, 3]``, ``y`` ``FloatTensor [1, num_tasks]`` (ogbg-molhiv: 1
    task; ogbg-molpcba: 128, NaN = missing label).

    Arguments in OGB's order (``PygGraphPropPredDataset(name, root, transform,
    pre_transform)``), with ``split`` after ``root``.

    Args:
        name (str): a key of :data:`~graph_transformers.datasets.molecules.ogb_files.OGB_DATASETS`.
        root: processing and download folder (default
            :func:`~graph_transformers.data.published.canonical_root`).
        split (str): ``"train"``, ``"val"`` (OGB's ``valid``) or ``"test"``.
        transform, pre_transform: as in PyG.
        data_dir: where OGB's folder is looked for (default ``$GRAPH_TRANSFORMERS_DATA``).
        download (bool): allow downloading OGB's archive (also disabled by
            ``$GRAPH_TRANSFORMERS_OFFLINE``).

    Attributes:
        provenance (dict): ``{split: "exact"}``.
        canonical_info (dict): loader, folder, split and evaluator.
        ogb_evaluator (str): the name for ``ogb.graphproppred.Evaluator``.

    Raises:
        ValueError: an unknown name or split.
        DataNotFoundError: the files are neither local nor downloadable.
    """

    def __init__(
        self, name: str = "ogbg-molhiv", root: PathLike | None = None, split: str = "train",
        transform: Transform = None, pre_transform: Transform = None, *,
        data_dir: PathLike | None = None, download: bool = True,
    ) -> None:
        if split not in _OGB_SPLIT:
            raise ValueError(f"{name}: split must be one of {tuple(_OGB_SPLIT)}, got {split!r}")
        base = Path(root).expanduser() if root is not None else canonical_root()
        ogb_root = locate_ogb(name, resolve_data_dir(data_dir), base, download)
        pre = with_fields(name, pre_transform)
        folder = ogb_folder(ogb_root, OGB_DATASETS[name][0])
        tag = files_tag([p for p in (folder / "raw").iterdir() if p.is_file()])
        self._processed = (base / OGB_DATASETS[name][0] / "processed"
                           / f"{pre_transform_key(pre)}_{tag}")
        cached = self._processed / "geometric_data_processed.pt"
        problem = cache_file_problem(cached) if cached.exists() else None
        if problem is not None:
            log.warning("dataset cache %s: %s; rebuilding it", cached, problem)
            cached.unlink()
        # only the classes not yet allowed: leaving the context removes what it added, and PyG
        # registers Data itself at import
        allowed = torch.serialization.get_safe_globals()
        with torch.serialization.safe_globals([c for c in _PYG_CLASSES if c not in allowed]):
            super().__init__(name=name, root=str(ogb_root), transform=transform,
                             pre_transform=pre)
            index = self.get_idx_split()[_OGB_SPLIT[split]]
        self.data, self.slices = self.collate([self.get(int(i)) for i in index])
        self.split = split
        self.provenance: dict[str, str] = {split: "exact"}
        self.ogb_evaluator = name
        self.canonical_info: dict[str, Any] = {
            "loader": f"ogb.graphproppred.PygGraphPropPredDataset({name!r})",
            "files": self.root,
            "split": f"OGB's official split ({self.meta_info['split']}, get_idx_split())",
            "evaluator": f"ogb.graphproppred.Evaluator({name!r})",
        }

    @property
    def processed_dir(self) -> str:
        return str(self._processed)

    @property
    def has_download(self) -> bool:
        return False  # locate_ogb finds or downloads the files (with a timeout)

    def process(self) -> None:
        super().process()  # OGB's reader; it writes the file with torch.save
        record_cache_file(self.processed_paths[0])

    def __repr__(self) -> str:
        return f"{self.name}({len(self)}, split={self.split!r}, published files)"
