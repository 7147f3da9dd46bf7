"""graph-transformers: transformer networks on graphs (GT, EGT, GRPE, GPS) on PyTorch Geometric.

``train(config, dataset=...)`` trains a config (:mod:`graph_transformers.api`) and
``load_run(run_dir)`` loads a trained run for prediction (:mod:`graph_transformers.prediction`);
both are imported on first use, so ``import graph_transformers`` stays cheap.
"""
from ._lazy import lazy_exports
from ._warnings import filter_library_warnings

filter_library_warnings()  # third-party warnings that say nothing to a user (precise filters)

__version__ = "0.2.0"

__all__ = ["train", "load_run", "TrainedRun", "Predictions", "NodePredictions"]

_LAZY = {"train": "api", "load_run": "prediction", "TrainedRun": "prediction",
         "Predictions": "prediction", "NodePredictions": "prediction"}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
