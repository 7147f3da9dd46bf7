"""Training: the config schema (:mod:`.config`, with :mod:`.sections`, :mod:`.model_sections`
and :mod:`.config_yaml`), the Lightning module (:mod:`.module`), the run
(``graph_transformers.train`` is its Python entry point): what it builds (:mod:`.build`: model,
task; :mod:`.splits` and :mod:`.loaders`: data), the training itself (:mod:`.fit`), its final
evaluation (:mod:`.finish`), sets of seeds and folds (:mod:`.sets`) and a trained run read back
(:mod:`.trained`); multi-seed statistics, result tables and reproduction verdicts.

The names below are what users call (the API reference lists them); they are imported on first
use, so that importing the package (and reading a config) stays cheap.
"""
from .._lazy import lazy_exports

_LAZY = {"Config": "config", "ConfigError": "config", "load_config": "config",
         "build_config": "config", "save_config": "config", "model_section": "model_sections",
         "GraphTaskModule": "module"}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
