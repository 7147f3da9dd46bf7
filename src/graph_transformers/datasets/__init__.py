"""The datasets, one package or module per family; each declares its registry entry
(:class:`~graph_transformers.data.registry.DatasetSpec`, ``<NAME>_SPEC``) next to its loader
(``load_<name>(root, [name], split, transform, pre_transform, force_reload, *, ...)``), and
:data:`graph_transformers.data.registry.DATASETS` names where (``docs/adding_a_dataset.md``):

* :mod:`.molecules`: ZINC-12k (:mod:`.molecules.zinc`), the MoleculeNet sets, ogbg-molhiv and a
  user's molecule CSV (:mod:`.molecules.moleculenet`; OGB's published files:
  :mod:`.molecules.ogb`);
* :mod:`.images`: the MNIST / CIFAR10 superpixel graphs (:mod:`.images.superpixels`, built by
  :mod:`.images.superpixel_graph` from the images :mod:`.images.image_files` reads);
* :mod:`.synthetic`: graphs generated in code: PATTERN / CLUSTER (:mod:`.synthetic.sbm`), CSL
  (:mod:`.synthetic.csl`), TSP (:mod:`.synthetic.tsp` and its solver
  :mod:`.synthetic.tsp_solver`), the large SBM graph (:mod:`.synthetic.large_graph`);
* :mod:`.tu` (the TU graph-classification sets) and :mod:`.planetoid` (Cora, CiteSeer);
* :mod:`.user`: a user's own graphs (:mod:`.user.graph_list`: a ``.pt`` file or in-memory
  graphs; :mod:`.user.node_table`: an edge list and a node table);
* :mod:`.canonical`: the benchmarks' published files read by PyG's and OGB's loaders (the
  ``source="canonical"`` of a loader; ``data.source``).
"""
from .._lazy import lazy_exports

#: what users call (the API reference lists them), imported on first use so that importing the
#: package stays cheap; everything else lives in its module
_LAZY = {
    "load_zinc": "molecules.zinc", "load_moleculenet": "molecules.moleculenet",
    "load_molecule_csv": "molecules.moleculenet", "load_superpixels": "images.superpixels",
    "load_pattern": "synthetic.sbm", "load_cluster": "synthetic.sbm", "load_csl": "synthetic.csl",
    "load_tsp": "synthetic.tsp", "load_synthetic_large": "synthetic.large_graph", "load_tu": "tu",
    "load_planetoid": "planetoid", "load_graph_file": "user.graph_list",
    "load_node_table": "user.node_table"
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
