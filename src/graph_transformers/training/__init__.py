"""Training: the config schema (:mod:`.config`), the Lightning module (:mod:`.module`), the run
(:mod:`.runner`; ``graph_transformers.train`` is its Python entry point), multi-seed statistics,
result tables and reproduction verdicts.

The names below are what users call (the API reference lists them); they are imported on first
use, so that importing the package (and reading a config) stays cheap.
"""
from .._lazy import lazy_exports

_LAZY = {"Config": "config", "ConfigError": "config", "load_config": "config",
         "build_config": "config", "save_config": "config", "model_section": "config",
         "GraphTaskModule": "module"}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
