"""Positional and structural encodings, as pure functions on one graph plus PyG transforms.

:mod:`.registry` lists them (config section, pre-transform, what models read); the names below
are imported on first use, so the registry (read by the config) loads without torch.
"""
from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .registry import ENCODINGS, Encoding, register_encoding

if TYPE_CHECKING:  # what the names below are, for type checkers and the API reference
    from .expander import AddExpanderGraph, random_expander
    from .lappe import AddLaplacianPE, laplacian_pe, normalized_laplacian, random_sign_flip
    from .rrwp import AddRRWP, batch_rrwp, relative_random_walk_probabilities
    from .rwse import AddRWSE, random_walk_se
    from .spd import (AddShortestPaths, num_spd_ids, pair_edge_types, shortest_path_distances,
                      spd_ids)
    from .svd import AddSVDPE, random_svd_sign_flip, svd_pe
    from .wlpe import AddWLPE, wl_role_ids

#: public name → submodule that defines it
_LAZY = {
    "AddLaplacianPE": "lappe", "laplacian_pe": "lappe", "normalized_laplacian": "lappe",
    "random_sign_flip": "lappe",
    "AddShortestPaths": "spd", "num_spd_ids": "spd", "pair_edge_types": "spd",
    "shortest_path_distances": "spd", "spd_ids": "spd",
    "AddRWSE": "rwse", "random_walk_se": "rwse",
    "AddRRWP": "rrwp", "batch_rrwp": "rrwp", "relative_random_walk_probabilities": "rrwp",
    "AddSVDPE": "svd", "random_svd_sign_flip": "svd", "svd_pe": "svd",
    "AddWLPE": "wlpe", "wl_role_ids": "wlpe",
    "AddExpanderGraph": "expander", "random_expander": "expander",
}

__all__ = ["AddExpanderGraph", "AddLaplacianPE", "AddRRWP", "AddRWSE", "AddSVDPE",
           "AddShortestPaths", "AddWLPE", "ENCODINGS", "Encoding", "batch_rrwp", "laplacian_pe",
           "normalized_laplacian", "num_spd_ids", "pair_edge_types", "random_expander",
           "random_sign_flip", "random_svd_sign_flip", "random_walk_se", "register_encoding",
           "relative_random_walk_probabilities", "shortest_path_distances", "spd_ids", "svd_pe",
           "wl_role_ids"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
