"""Optional dependencies: each belongs to an extra of the package, and a missing one is named.

The core (``nn``, ``encodings``, ``models``, ``training``) needs only torch, PyG, numpy, scipy
and the packages of ``pyproject.toml``'s ``dependencies``. Molecules need RDKit (``[chem]``),
superpixel graphs scikit-image (``[superpixels]``), TSP tours elkai (``[tsp]``), OGB's published
files and evaluator ogb (``[ogb]``), plots matplotlib (``[analysis]``), METIS partitions for
Cluster-GCN batches pymetis (``[large]``, unless PyG's own METIS backend is installed); the
optional loggers their own extras (``[tensorboard]``, ``[wandb]``, ``[mlflow]``: MLflow's client
and the SQLAlchemy of its SQLite store), all three ``[loggers]``; hyperparameter sweeps Optuna
and its Lightning pruning callback (``[sweep]``); ``[all]`` installs the data, partitioning,
plotting and sweep extras and TensorBoard.
"""
from __future__ import annotations

import importlib
from types import ModuleType

#: import name → (PyPI distribution, extra)
EXTRAS: dict[str, tuple[str, str]] = {
    "rdkit": ("rdkit", "chem"),
    "skimage": ("scikit-image", "superpixels"),
    "elkai": ("elkai", "tsp"),
    "ogb": ("ogb", "ogb"),
    "matplotlib": ("matplotlib", "analysis"),
    "pymetis": ("pymetis", "large"),
    "tensorboard": ("tensorboard", "tensorboard"),
    "wandb": ("wandb", "wandb"),
    "mlflow": ("mlflow", "mlflow"),
    "sqlalchemy": ("sqlalchemy", "mlflow"),  # MLflow's SQLite tracking store
    "optuna": ("optuna", "sweep"),
    "optuna_integration": ("optuna-integration", "sweep"),
}


class MissingDependencyError(ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def require(module: str, feature: str) -> ModuleType:
    """Imports the optional dependency ``module`` (a key of :data:`EXTRAS`, or a submodule of
    one) for ``feature`` (what the user asked for, e.g. ``"the ZINC dataset"``).

    Raises:
        MissingDependencyError: when it is not installed, e.g. ``the ZINC dataset needs rdkit:
            pip install 'graph-transformers[chem]'``.
    """
    top = module.split(".")[0]
    if top not in EXTRAS:
        raise ValueError(f"{top!r} is not an optional dependency; known: {sorted(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ImportError as err:
        dist, extra = EXTRAS[top]
        raise MissingDependencyError(
            f"{feature} needs {dist}: pip install 'graph-transformers[{extra}]'") from err
