"""The Python entry point: ``graph_transformers.train(config, dataset=...)``."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def train(config: Any, dataset: Any = None, out_dir: str | os.PathLike | None = None, *,
          seeds: int = 1, folds: int | None = None, resume: bool = False,
          overrides: list[str] | None = None,
          init_from: str | os.PathLike | None = None) -> dict[str, Any]:
    """Trains a config as ``graph-transformers train`` does and returns the run's metrics (one
    seed: ``metrics.json``; several seeds or folds: the ``summary.json`` mean ± s.d.).

    Args:
        config: a :class:`~graph_transformers.training.config.Config`, a dict in the YAML
            layout, or the path of a YAML config.
        dataset: a user's own graphs instead of the dataset the config names: a list of
            ``torch_geometric.data.Data`` (or a PyG dataset) with ``edge_index``, ``y`` and
            optionally ``x`` / ``edge_attr``. Level (graph / node / edge), task and feature
            vocabularies are read off them, and the split comes from ``data.split_files``, the
            graph's ``train_mask`` / ``val_mask`` / ``test_mask`` (one graph) or 10 seeded folds
            (:mod:`graph_transformers.datasets.user.graph_list`).
        out_dir: the run directory (default ``runs/<config name>``).
        seeds: seeds ``config.seed``, ``config.seed + 1``, …
        folds: cross-validation: folds ``0..folds-1`` (``data.fold``) × ``seeds``.
        resume: continue an interrupted run in ``out_dir`` (pass the same ``dataset``).
        overrides: ``KEY=VALUE`` strings as ``--set`` takes them.
        init_from: fine-tuning: a trained run's directory; every weight of matching name and
            shape is loaded, the task head re-initialized when the task differs, and what was
            loaded is logged and stored in ``init_from.json``
            (:mod:`graph_transformers.training.finetune`).

    Returns:
        dict: the run's metrics (``test``, ``val``, ``train`` keyed by metric name, …).

    Raises:
        ConfigError: an invalid config. DataError: graphs the task cannot be read off, or a bad
        split. RunError: ``out_dir`` already holds a run and ``resume`` is false.

    Example:
        >>> import torch, tempfile
        >>> from torch_geometric.data import Data
        >>> import graph_transformers as gtr
        >>> ring = torch.tensor([[0, 1, 2, 3, 1, 2, 3, 0], [1, 2, 3, 0, 0, 1, 2, 3]])
        >>> graphs = [Data(x=torch.randn(4, 3), edge_index=ring, y=torch.tensor([i % 2]))
        ...           for i in range(40)]
        >>> config = {"model": {"name": "gt", "hidden_dim": 16, "num_layers": 1,
        ...                     "num_heads": 2, "pe": None},
        ...           "data": {"batch_size": 8}, "encodings": {"lap_pe": None},
        ...           "trainer": {"max_epochs": 1, "enable_progress_bar": False}}
        >>> metrics = gtr.train(config, dataset=graphs, out_dir=tempfile.mkdtemp() + "/run")
        >>> sorted(metrics["test"])
        ['accuracy', 'loss']
    """
    from .fileio import path_inside
    from .training.config import Config, build_config, load_config
    from .training.sets import train_folds, train_seeds
    if isinstance(config, Config):
        cfg = build_config(config.to_dict(), overrides) if overrides else config
    elif isinstance(config, dict):
        cfg = build_config(config, overrides)
    else:
        cfg = load_config(config, overrides)
    out = Path(out_dir) if out_dir is not None else \
        path_inside("runs", cfg.name or f"{cfg.model.name}-{cfg.data.name}", what="run name")
    if folds is not None:
        return train_folds(cfg, out, folds, seeds, resume=resume, dataset=dataset,
                           init_from=init_from)
    return train_seeds(cfg, out, seeds, resume=resume, dataset=dataset, init_from=init_from)
