"""Positional and structural encodings, as pure functions on one graph plus PyG transforms."""
from .lappe import AddLaplacianPE, laplacian_pe, normalized_laplacian, random_sign_flip
from .spd import (AddShortestPaths, num_spd_ids, pair_edge_types, shortest_path_distances,
                  spd_ids)
from .wlpe import AddWLPE, wl_role_ids

__all__ = ["AddLaplacianPE", "AddShortestPaths", "AddWLPE", "num_spd_ids", "pair_edge_types",
           "shortest_path_distances", "spd_ids", "laplacian_pe", "normalized_laplacian",
           "random_sign_flip", "wl_role_ids"]
