"""A user's own data, its task read off the data: a list of PyG graphs in memory or in a ``.pt``
file (:mod:`.graph_list`, what they ask of a model: :mod:`.graph_info`), a node-level graph from
an edge list and a node table (:mod:`.node_table`; parser :mod:`.node_table_parser`, files
:mod:`.node_files`, columns :mod:`.node_columns`). A user's molecule CSV is read by
:mod:`graph_transformers.datasets.molecules.molecule_csv`."""
