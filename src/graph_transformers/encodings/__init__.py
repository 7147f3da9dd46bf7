"""Positional and structural encodings, as pure functions on one graph plus PyG transforms."""
from .lappe import AddLaplacianPE, laplacian_pe, normalized_laplacian, random_sign_flip
from .spd import (AddShortestPaths, num_spd_ids, pair_edge_types, shortest_path_distances,
                  spd_ids)
from .rwse import AddRWSE, random_walk_se
from .svd import AddSVDPE, random_svd_sign_flip, svd_pe
from .wlpe import AddWLPE, wl_role_ids

__all__ = ["AddLaplacianPE", "AddRWSE", "AddSVDPE", "AddShortestPaths", "AddWLPE",
           "laplacian_pe", "normalized_laplacian", "num_spd_ids", "pair_edge_types",
           "random_sign_flip", "random_svd_sign_flip", "random_walk_se",
           "shortest_path_distances", "spd_ids", "svd_pe", "wl_role_ids"]
