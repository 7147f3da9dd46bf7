"""The datasets, one package or module per family; each declares its registry entry
(:class:`~graph_transformers.data.registry.DatasetSpec`, ``<NAME>_SPEC``) next to its loader
(``load_<name>(root, [name], split, transform, pre_transform, force_reload, *, ...)``), and
:data:`graph_transformers.data.registry.DATASETS` names where (``docs/adding_a_dataset.md``).

* :mod:`.molecules`: ZINC-12k (:mod:`.molecules.zinc`, its chemistry
  :mod:`.molecules.zinc_chemistry` and raw files :mod:`.molecules.zinc_files`), the MoleculeNet
  sets and ogbg-molhiv (:mod:`.molecules.moleculenet`), a user's molecule CSV
  (:mod:`.molecules.molecule_csv`, read by :mod:`.molecules.csv_reading`), all featurized by
  :mod:`.molecules.featurization` and split by :mod:`.molecules.scaffold`; OGB's published files
  (:mod:`.molecules.ogb`, found by :mod:`.molecules.ogb_files`), ogbg-molpcba and PCQM4M;
* :mod:`.images`: the MNIST / CIFAR10 superpixel graphs (:mod:`.images.superpixels`, built by
  :mod:`.images.superpixel_graph` from the images :mod:`.images.image_files` reads);
* :mod:`.synthetic`: graphs generated in code: PATTERN / CLUSTER (:mod:`.synthetic.sbm`, drawn
  by :mod:`.synthetic.sbm_graph`), CSL
  (:mod:`.synthetic.csl`), TSP (:mod:`.synthetic.tsp` and its solver
  :mod:`.synthetic.tsp_solver`), the large SBM graph (:mod:`.synthetic.large_graph`);
* :mod:`.tu` (the TU graph-classification sets; their folds :mod:`.tu_folds` and node features
  :mod:`.tu_features`) and :mod:`.planetoid` (Cora, CiteSeer);
* :mod:`.user`: a user's own graphs (:mod:`.user.graph_list`: a ``.pt`` file or in-memory
  graphs, what they ask of a model read by :mod:`.user.graph_info`; :mod:`.user.node_table`: an
  edge list and a node table, parsed by :mod:`.user.node_table_parser` with
  :mod:`.user.node_files` and :mod:`.user.node_columns`);
* :mod:`.gnn_benchmark`: PyG's ``GNNBenchmarkDataset`` over the published files of six
  benchmarks (the ``source="canonical"`` of their loaders; ``data.source``), shared by the
  synthetic and image families. The machinery of published files is
  :mod:`graph_transformers.data.published`.
"""
from .._lazy import lazy_exports

#: what users call (the API reference lists them), imported on first use so that importing the
#: package stays cheap; everything else lives in its module
_LAZY = {
    "load_zinc": "molecules.zinc", "load_moleculenet": "molecules.moleculenet",
    "load_molecule_csv": "molecules.molecule_csv", "load_superpixels": "images.superpixels",
    "load_pattern": "synthetic.sbm", "load_cluster": "synthetic.sbm", "load_csl": "synthetic.csl",
    "load_tsp": "synthetic.tsp", "load_synthetic_large": "synthetic.large_graph", "load_tu": "tu",
    "load_planetoid": "planetoid", "load_graph_file": "user.graph_list",
    "load_node_table": "user.node_table"
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
