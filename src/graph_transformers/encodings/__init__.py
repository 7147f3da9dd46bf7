"""Positional and structural encodings, as pure functions on one graph plus PyG transforms."""
from .lappe import AddLaplacianPE, laplacian_pe, normalized_laplacian, random_sign_flip
from .rwse import AddRWSE, random_walk_se
from .wlpe import AddWLPE, wl_role_ids

__all__ = ["AddLaplacianPE", "AddRWSE", "AddWLPE", "random_walk_se", "laplacian_pe", "normalized_laplacian",
           "random_sign_flip", "wl_role_ids"]
