"""The MoleculeNet benchmarks (``tox21``, ``clintox``, ``sider``, ``esol``, ``freesolv``,
``lipo``, and ``hiv`` as ``ogbg-molhiv``, whose published files OGB's loader reads:
:mod:`graph_transformers.datasets.molecules.ogb`): :data:`MOLECULENET`, the dataset class
:class:`MoleculeNetCSV` (a :class:`~graph_transformers.datasets.molecules.molecule_csv.MoleculeCSV`
of a benchmark's file), their loader and registry entries. Metrics with the OGB evaluator's
semantics live in :mod:`graph_transformers.training.metrics`.

Graphs follow OGB's ``smiles2graph`` (:mod:`graph_transformers.datasets.molecules.featurization`);
splits are the deterministic scaffold split
(:func:`~graph_transformers.datasets.molecules.scaffold.scaffold_split`). The data files are
described in ``docs/datasets.md`` ("Raw files").
"""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch_geometric.data import InMemoryDataset

from ..._optional import require
from ...data.cache import DATA_ENV, DataNotFoundError, resolve_cache_dir, resolve_data_dir
from ...data.generated import PathLike, Transform, check_source
from ...data.published import canonical_root
from ...data.registry import DatasetSpec
from .featurization import OGB_MOL_TYPES
from .molecule_csv import MoleculeCSV
from .ogb_files import locate_ogb

__all__ = [
    "CLINTOX_SPEC",
    "ESOL_SPEC",
    "FREESOLV_SPEC",
    "LIPO_SPEC",
    "MOLECULENET",
    "MOLHIV_SPEC",
    "MoleculeNetCSV",
    "MoleculeNetInfo",
    "SIDER_SPEC",
    "TOX21_SPEC",
    "load_moleculenet",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MoleculeNetInfo:
    """One MoleculeNet benchmark: its file in ``<data_dir>/MoleculeNet/``, label columns, task
    type, metric key (``"roc_auc"`` / ``"rmse"``, as in ``metrics.json``), and the sha256 and
    data-row count of the reference copy (``docs/datasets.md``, "Raw files")."""

    file: str
    target_columns: tuple[str, ...]
    task: str
    metric: str
    sha256: str
    num_rows: int
    smiles_column: str = "smiles"

    @property
    def num_tasks(self) -> int:
        return len(self.target_columns)


_TOX21_TASKS = (
    "NR-AR", "NR-AR-LBD", "NR-AhR", "NR-Aromatase", "NR-ER", "NR-ER-LBD", "NR-PPAR-gamma",
    "SR-ARE", "SR-ATAD5", "SR-HSE", "SR-MMP", "SR-p53",
)
_SIDER_TASKS = (
    "Hepatobiliary_disorders", "Metabolism_and_nutrition_disorders", "Product_issues",
    "Eye_disorders", "Investigations", "Musculoskeletal_and_connective_tissue_disorders",
    "Gastrointestinal_disorders", "Social_circumstances", "Immune_system_disorders",
    "Reproductive_system_and_breast_disorders",
    "Neoplasms_benign,_malignant_and_unspecified_(incl_cysts_and_polyps)",
    "General_disorders_and_administration_site_conditions", "Endocrine_disorders",
    "Surgical_and_medical_procedures", "Vascular_disorders", "Blood_and_lymphatic_system_disorders",
    "Skin_and_subcutaneous_tissue_disorders", "Congenital,_familial_and_genetic_disorders",
    "Infections_and_infestations", "Respiratory,_thoracic_and_mediastinal_disorders",
    "Psychiatric_disorders", "Renal_and_urinary_disorders",
    "Pregnancy,_puerperium_and_perinatal_conditions", "Ear_and_labyrinth_disorders",
    "Cardiac_disorders", "Nervous_system_disorders",
    "Injury,_poisoning_and_procedural_complications",
)

#: MoleculeNet benchmark → (file, label columns, task, metric, data rows of the reference copy)
_BENCHMARKS: dict[str, tuple[str, tuple[str, ...], str, str, int]] = {
    "hiv": ("HIV.csv.gz", ("HIV_active",), "classification", "roc_auc", 41127),
    "esol": ("esol.csv", ("logSolubility",), "regression", "rmse", 1128),
    "freesolv": ("freesolv.csv", ("freesolv",), "regression", "rmse", 642),
    "lipo": ("lipo.csv", ("lipo",), "regression", "rmse", 4200),
    "tox21": ("tox21.csv", _TOX21_TASKS, "classification", "roc_auc", 7831),
    "clintox": ("clintox.csv", ("FDA_APPROVED", "CT_TOX"), "classification", "roc_auc", 1478),
    "sider": ("sider.csv", _SIDER_TASKS, "classification", "roc_auc", 1427),
}
#: sha256 of each benchmark's reference copy (``docs/datasets.md``, "Raw files")
_SHA256: dict[str, str] = {
    "hiv": "81c0dc45814deb6ee9d8cc83078e06b95736fb2eb78d747b0d055fee1c6ec4c5",
    "esol": "9e2bf77f3fc2d0ced4572341e2094904b992c9edf3762795f77cfc2bfd4de5ac",
    "freesolv": "97d74c86228d4c16c0fbbf063bb8280354d8152db09a85ade8517a2f43bd9824",
    "lipo": "aa9bd9669188e35efd908758a75561bba402016d901fed2d0d949289abbcf31c",
    "tox21": "b58cc1f683e78e3c7a1bf7116e9aac0119804018d100f7b8cdb0857941c31aca",
    "clintox": "cc561402d058a0d996a9f5e5d02bc20f6652b7003525b32c3598b8da4b24e9b7",
    "sider": "87b937d1ddb1879bb14e8f23d94ceffcb9ad3e534ae59602820b3bcf03844fbf",
}
#: The MoleculeNet benchmarks: name → :class:`MoleculeNetInfo`. ``hiv`` is also ogbg-molhiv
#: (same molecules and label; scaffold split; metric ROC-AUC).
MOLECULENET: dict[str, MoleculeNetInfo] = {
    name: MoleculeNetInfo(file, columns, task, metric, _SHA256[name], rows)
    for name, (file, columns, task, metric, rows) in _BENCHMARKS.items()
}
_ALIASES = {"ogbg-molhiv": "hiv", "molhiv": "hiv", "delaney": "esol", "lipophilicity": "lipo"}


def _moleculenet_dir(data_dir: Path) -> Path:
    """``data_dir/MoleculeNet`` if it exists, else ``data_dir`` itself when it holds one of the
    MoleculeNet files."""
    if (data_dir / "MoleculeNet").is_dir():
        return data_dir / "MoleculeNet"
    if any((data_dir / info.file).is_file() for info in MOLECULENET.values()):
        return data_dir
    return data_dir / "MoleculeNet"


class MoleculeNetCSV(MoleculeCSV):
    r"""A MoleculeNet benchmark (:data:`MOLECULENET`): ``hiv`` (= ogbg-molhiv semantics), ``esol``,
    ``freesolv``, ``lipo`` (RMSE regression), ``tox21``, ``clintox``, ``sider`` (multi-task
    ROC-AUC), read from ``resolve_data_dir(data_dir) / "MoleculeNet" / <file>`` and split by
    scaffold 80 / 10 / 10 (:func:`scaffold_split`). See :class:`MoleculeCSV` for the graphs,
    skipped rows and caching. It is named after what it reads, the MoleculeNet CSV files, so that
    it does not shadow PyG's :class:`torch_geometric.datasets.MoleculeNet`.

    For ``hiv`` this is the ogbg-molhiv setting (same molecules in the same order, label
    ``HIV_active``, OGB featurization, scaffold split, ROC-AUC) but not necessarily its exact
    split: RDKit 2026.09 rejects 7 of the 41,127 molecules (Al / B / Ge valence; OGB's RDKit
    accepted them) and the split is computed over the 41,120 valid ones, giving
    32,896 / 4,112 / 4,112 molecules (1,232 / 81 / 130 actives); OGB's official split has
    32,901 / 4,113 / 4,113 and was not available here to compare index by index. The first build
    of ``hiv`` takes one to two minutes.

    Args:
        root: cache directory (default ``resolve_cache_dir() / "MoleculeNet"``); this dataset's
            files go to ``root/<name>/processed/<key>/``.
        name (str): a key of :data:`MOLECULENET` (case-insensitive; ``"ogbg-molhiv"`` = ``"hiv"``).
        split (str): ``"train"``, ``"val"``, ``"test"`` or ``"all"``.
        data_dir: raw-data directory holding ``MoleculeNet/`` (default
            ``$GRAPH_TRANSFORMERS_DATA``).
        transform, pre_transform, force_reload: as in PyG.
        max_rows (int, optional): use only the first ``max_rows`` rows of the file (the split is
            then the scaffold split of that prefix; for quick tests).

    Attributes:
        name (str), info (:class:`MoleculeNetInfo`), plus those of :class:`MoleculeCSV`.

    Raises:
        ValueError: unknown name or split.
        DataNotFoundError: no data directory, or the file is not in it; the message says where
            it looked and how to provide the data.
    """

    def __init__(
        self, root: PathLike | None = None, name: str = "esol", split: str = "train",
        data_dir: PathLike | None = None, transform: Transform = None,
        pre_transform: Transform = None, force_reload: bool = False, *, max_rows: int | None = None,
    ) -> None:
        key = str(name).lower()
        key = _ALIASES.get(key, key)
        if key not in MOLECULENET:
            raise ValueError(
                f"MoleculeNet: unknown name {name!r}; known: {sorted(MOLECULENET)} "
                f"(aliases {sorted(_ALIASES)})"
            )
        self.name = key
        self.info = info = MOLECULENET[key]
        data = resolve_data_dir(data_dir)
        if data is None:
            raise DataNotFoundError(
                f"MoleculeNet {key}: no data directory. Pass data_dir=... (CLI --data-dir) or set "
                f"${DATA_ENV} to a folder holding MoleculeNet/{info.file} (docs/datasets.md, "
                f"'Raw files')."
            )
        path = _moleculenet_dir(data) / info.file
        if not path.is_file():
            raise DataNotFoundError(
                f"MoleculeNet {key}: {info.file} not found; looked for {path} (data directory "
                f"{data}). Pass data_dir=... (CLI --data-dir) or set ${DATA_ENV} to a folder "
                f"holding MoleculeNet/{info.file} (see docs/datasets.md, 'Raw files')."
            )
        base = Path(root).expanduser() if root is not None else resolve_cache_dir() / "MoleculeNet"
        super().__init__(
            base / key, split, path, info.smiles_column, list(info.target_columns), info.task,
            transform, pre_transform, force_reload, max_rows=max_rows,
        )
        if self.file_sha256 != info.sha256:
            log.warning(
                "MoleculeNet %s: %s has sha256 %s, not the reference copy's %s "
                "(docs/datasets.md, 'Raw files'); results may not be comparable.",
                key, path, self.file_sha256[:16], info.sha256[:16],
            )

    @property
    def metric(self) -> str:
        return self.info.metric

    def __repr__(self) -> str:
        return f"MoleculeNetCSV({self.name}, {len(self)}, split={self.split!r})"


# --------------------------------------------------------------------------------------------
# Loaders and registry entries
# --------------------------------------------------------------------------------------------
#: the MoleculeNet sets with an OGB form: key of :data:`MOLECULENET` → OGB name
_OGB_NAMES = {"hiv": "ogbg-molhiv"}


def load_moleculenet(
    root: PathLike, name: str, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *, source: str = "generated",
    data_dir: PathLike | None = None, max_rows: int | None = None,
) -> InMemoryDataset:
    """One split of the MoleculeNet set ``name`` (a key of :data:`MOLECULENET`; ``data.name:
    tox21``, ..., ``ogbg-molhiv``): the CSV file featurized and split by scaffold
    (:class:`MoleculeNetCSV`, cached under ``root/MoleculeNet/``; needs RDKit), or, for ``hiv``
    with ``source="canonical"``, OGB's published files with the official split read by OGB's
    loader (:class:`~graph_transformers.datasets.molecules.ogb.OGBGraphPropPred`, under
    ``root/canonical/``; needs the ``[ogb]`` extra).

    Raises:
        ValueError: ``source="canonical"`` for a set without an OGB form.
        DataNotFoundError: the files are neither local nor downloadable.
        MissingDependencyError: RDKit (or OGB, for the published files) is not installed.
    """
    if check_source(name, source):
        if name not in _OGB_NAMES:
            raise ValueError(f"MoleculeNet {name}: no published OGB form; use source='generated'")
        ogb_name, base = _OGB_NAMES[name], canonical_root(root)
        # the files first: without them, that is what the message must say (not the package)
        locate_ogb(ogb_name, resolve_data_dir(data_dir), base, download=True)
        require("ogb.graphproppred", f"reading the published {ogb_name} files")
        from .ogb import OGBGraphPropPred  # imports OGB, an optional dependency
        return OGBGraphPropPred(ogb_name, base, split, data_dir=data_dir,
                                transform=transform, pre_transform=pre_transform)
    require("rdkit", f"the {name} dataset")
    return MoleculeNetCSV(root=str(Path(root) / "MoleculeNet"), name=name, split=split,
                          data_dir=data_dir, transform=transform, pre_transform=pre_transform,
                          force_reload=force_reload, max_rows=max_rows)


def _spec(name: str, key: str, task: str, metric: str, **kwargs: Any) -> DatasetSpec:
    """The spec of the MoleculeNet set ``key``: one output per label column of its file."""
    targets = MOLECULENET[key].target_columns
    return DatasetSpec(name, "graph", task, len(targets), metric,
                       functools.partial(load_moleculenet, name=key), targets=targets,
                       params=("data_dir", "max_rows"), **OGB_MOL_TYPES, **kwargs)


#: ``data.name: ogbg-molhiv`` (MoleculeNet's HIV: OGB's published files where they can be had)
MOLHIV_SPEC = _spec("ogbg-molhiv", "hiv", "binary", "roc_auc", source="reconstructed",
                    published=True)
#: ``data.name: tox21``
TOX21_SPEC = _spec("tox21", "tox21", "binary", "roc_auc")
#: ``data.name: clintox``
CLINTOX_SPEC = _spec("clintox", "clintox", "binary", "roc_auc")
#: ``data.name: sider``
SIDER_SPEC = _spec("sider", "sider", "binary", "roc_auc")
#: ``data.name: esol``
ESOL_SPEC = _spec("esol", "esol", "regression", "rmse", loss="mse")
#: ``data.name: freesolv``
FREESOLV_SPEC = _spec("freesolv", "freesolv", "regression", "rmse", loss="mse")
#: ``data.name: lipo``
LIPO_SPEC = _spec("lipo", "lipo", "regression", "rmse", loss="mse")
