"""graph-transformers: transformer networks on graphs (GT, EGT, GRPE, GPS) on PyTorch Geometric.

``train(config, dataset=...)`` trains a config (:mod:`graph_transformers.api`) and
``load_run(run_dir)`` loads a trained run for prediction (:mod:`graph_transformers.prediction`);
both are imported on first use, so ``import graph_transformers`` stays cheap.
"""
__version__ = "0.1.0"

__all__ = ["train", "load_run", "TrainedRun", "Predictions"]

_LAZY = {"train": "api", "load_run": "prediction", "TrainedRun": "prediction",
         "Predictions": "prediction"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
