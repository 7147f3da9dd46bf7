r"""``ogbg-molpcba`` (Hu et al., "Open Graph Benchmark", NeurIPS 2020; Wu et al.'s MoleculeNet
PCBA): 437,929 molecules, 128 binary bioassay tasks with missing labels, OGB's scaffold split,
scored by average precision (AP) over the tasks.

Read from OGB's published files by OGB's own ``PygGraphPropPredDataset``, exactly as
``ogbg-molhiv`` (:class:`~graph_transformers.datasets.molecules.ogb.OGBGraphPropPred`, needs the
``[ogb]`` extra): ``DATA_DIR/ogbg_molpcba/`` as OGB unpacks ``pcba.zip`` (``RELEASE_v1.txt``,
``raw/{edge,edge-feat,node-feat,num-node-list,num-edge-list,graph-label}.csv.gz``,
``split/scaffold/{train,valid,test}.csv.gz``, ``mapping/``), located by
:func:`~graph_transformers.datasets.molecules.ogb_files.locate_ogb` (downloaded from OGB's URL
into the cache where the network allows and ``$GRAPH_TRANSFORMERS_OFFLINE`` is unset).

Each graph: ``x`` ``LongTensor [N, 9]``, ``edge_index`` ``LongTensor [2, E]``, ``edge_attr``
``LongTensor [E, 3]`` (OGB's featurization), ``y`` ``FloatTensor [1, 128]``, NaN where a task
is not measured. The loss is binary cross-entropy over the labelled entries
(:class:`~graph_transformers.training.tasks.Task`, as for tox21); the metric is OGB's
``Evaluator("ogbg-molpcba")`` AP: per task over its labelled molecules, tasks without both
classes in a split skipped, the mean over the rest
(:class:`~graph_transformers.training.metrics.OGBEvaluatorAP`).
"""
from __future__ import annotations

from ..._optional import require
from ...data.cache import resolve_data_dir
from ...data.generated import PathLike, Transform
from ...data.registry import DatasetSpec
from ...data.published import canonical_root
from .ogb_files import locate_ogb
from .featurization import ATOM_FEATURE_DIMS, BOND_FEATURE_DIMS, smiles_to_graph

__all__ = ["MOLPCBA_NUM_TASKS", "load_molpcba", "MOLPCBA_SPEC"]

#: binary tasks of ogbg-molpcba (OGB's ``master.csv``: ``num tasks``)
MOLPCBA_NUM_TASKS = 128


def load_molpcba(
    root: PathLike, split: str = "train", transform: Transform = None,
    pre_transform: Transform = None, force_reload: bool = False, *,
    data_dir: PathLike | None = None,
):
    """One split of ``data.name: ogbg-molpcba``: OGB's published files with the official
    scaffold split, read by OGB's loader
    (:class:`~graph_transformers.datasets.molecules.ogb.OGBGraphPropPred`, processed under
    ``root/canonical/ogbg_molpcba/processed/<key>/``; ``force_reload`` is not used: a processed
    file that fails its checksum is rebuilt).

    Raises:
        ValueError: an unknown split.
        DataNotFoundError: the files are neither in the data directory nor downloadable; the
            message names what is missing, where it looked and OGB's URL.
        MissingDependencyError: OGB is not installed (the ``[ogb]`` extra).
    """
    base = canonical_root(root)
    # the files first: without them, that is what the message must say (not the package)
    locate_ogb("ogbg-molpcba", resolve_data_dir(data_dir), base, download=True)
    require("ogb.graphproppred", "reading the published ogbg-molpcba files")
    from .ogb import OGBGraphPropPred  # imports OGB, an optional dependency
    return OGBGraphPropPred("ogbg-molpcba", base, split, data_dir=data_dir,
                            transform=transform, pre_transform=pre_transform)


#: ``data.name: ogbg-molpcba`` (OGB's published files; 128 binary tasks, AP)
MOLPCBA_SPEC = DatasetSpec("ogbg-molpcba", "graph", "binary", MOLPCBA_NUM_TASKS, "ap",
                           load_molpcba, node_types=tuple(ATOM_FEATURE_DIMS),
                           edge_types=tuple(BOND_FEATURE_DIMS), featurize=smiles_to_graph,
                           source="canonical", params=("data_dir",))
