"""A user's own data, its task read off the data: a list of PyG graphs in memory or in a ``.pt``
file (:mod:`.graph_list`), a node-level graph from an edge list and a node table
(:mod:`.node_table`). A user's molecule CSV is read by
:mod:`graph_transformers.datasets.molecules.moleculenet`."""
