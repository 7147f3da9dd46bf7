"""The folds of a cross-validation (``train --folds``): ``--folds K`` trains ``data.fold``
``0..K-1`` and is refused where the split does not change with the fold
(:func:`fixed_split_reason`: a split file, ``data.split_files``, a molecule CSV's scaffold
split, a benchmark's fixed split such as ZINC's), so that it never reports ``± 0.000`` over K
copies of one split; ``--folds FILE`` trains every fold of a folds file (the fair-comparison
JSON of Errica et al. 2020, a folder of benchmarking-gnns ``.index`` files;
:mod:`graph_transformers.data.split_rules`) as ``data.split: FILE`` with ``data.fold: k``
(:func:`plan_folds`)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..data.registry import is_graph_file
from ..data.split_rules import SPLIT_FORMS, count_folds, parse_split_rule, read_split_file
from ..errors import ConfigError
from .config import Config
from .sections import DataConfig

log = logging.getLogger(__name__)

_ADVICE = ("give --folds FILE (a folds file: the fair-comparison JSON, a .json list of "
           "{train, val, test} folds, or a folder of *_train/_val/_test.index files) to "
           "cross-validate, or --seeds N to repeat this split with other seeds")


def fixed_split_reason(config: Config, dataset: Any = None) -> str | None:
    """Why the run's split is the same for every ``data.fold``, or ``None`` when it changes with
    the fold (seeded folds of a TU set, CSL, a graph file or in-memory graphs; a folds file).

    A one-graph file (or in-memory graph) with its own ``train_mask`` / ``val_mask`` /
    ``test_mask`` also ignores the fold; that is not seen without reading the graphs.

    Args:
        config: the run's config.
        dataset: a user's in-memory graphs, or ``None``.

    Returns:
        str | None: the reason, for the message of ``--folds K``.

    Raises:
        DataNotFoundError, DataError: ``data.split`` names a file that cannot be read.
        ValueError: an unknown dataset.
    """
    d = config.data
    if d.split_files is not None:
        return "its split is fixed by data.split_files (one split)"
    if d.split is not None:
        rule = parse_split_rule(d.split, tuple(SPLIT_FORMS))
        if rule.kind == "file":
            return None if count_folds(rule.path) is not None else \
                f"data.split is the split file {rule.path} (one split, not folds)"
        return f"data.split is {d.split!r} (one split, not folds)"
    if d.name == "node_table":
        return ("a node table is split once (its mask columns, or data.split: random drawn "
                "from data.seed)")
    if dataset is not None:
        return None  # in-memory graphs: 10 seeded folds
    if d.path is not None and not is_graph_file(d.path):
        return "a molecule CSV is split by scaffold (one split)"
    from .splits import run_spec
    spec = run_spec(config)
    if "fold" not in spec.params:
        return f"{spec.name} has a fixed train/val/test split"
    return None


def _with_data(config: Config, **update: Any) -> Config:
    """``config`` with ``data`` keys replaced, validated again."""
    data = DataConfig.model_validate({**config.data.model_dump(), **update})
    return config.model_copy(update={"data": data})


def plan_folds(config: Config, folds: int | str | Path, dataset: Any = None
               ) -> tuple[list[Config], dict[str, Any]]:
    """The config of each fold of ``--folds`` and what ``summary.json`` records about them.

    Args:
        config: the run's config.
        folds: ``K`` (``data.fold`` ``0..K-1``) or a folds file (``data.split`` = the file,
            ``data.fold`` = each of its folds).
        dataset: a user's in-memory graphs, or ``None``.

    Returns:
        tuple: one config per fold, and ``{"folds": K}`` (with ``folds_file``: path and
        sha256, for a file).

    Raises:
        ValueError: ``K`` < 1.
        ConfigError: ``--folds K`` on a split that does not change with the fold
            (:func:`fixed_split_reason`), more folds than a folds file holds, a file of one
            split given to ``--folds``, ``data.split_files`` set with ``--folds FILE``, or a
            dataset that takes no split file.
        DataNotFoundError, DataError: a folds file that cannot be read.
    """
    if isinstance(folds, int):
        if folds < 1:
            raise ValueError(f"--folds must be >= 1, got {folds}")
        reason = fixed_split_reason(config, dataset)
        if reason is not None:
            raise ConfigError(f"--folds {folds}: {reason}, so every fold would train the same "
                              f"split; {_ADVICE}")
        if config.data.split is not None:
            have = count_folds(parse_split_rule(config.data.split, ("file",)).path) or 0
            if folds > have:
                raise ConfigError(f"--folds {folds}: data.split {config.data.split} holds "
                                  f"{have} folds")
        return [_with_data(config, fold=k) for k in range(folds)], {"folds": folds}
    path = str(folds)
    found = read_split_file(path)
    if not found.is_folds:
        raise ConfigError(f"--folds {path}: the file holds one split, not folds; train it with "
                          f"--set data.split={path}, or give a file of folds")
    if config.data.split_files is not None:
        raise ConfigError(f"--folds {path} gives the split, and data.split_files is set too: "
                          "leave data.split_files out")
    if config.data.split not in (None, path):
        log.warning("--folds %s replaces data.split %r", path, config.data.split)
    if dataset is None and config.data.name != "node_table":
        from .splits import run_spec
        spec = run_spec(_with_data(config, split=None, split_files=None))
        if "split_rule" not in spec.params:
            raise ConfigError(f"--folds {path}: {spec.name} has its own fixed split and takes "
                              "no split file (data.split)")
    configs = [_with_data(config, split=path, fold=k) for k in range(len(found.folds))]
    return configs, {"folds": len(found.folds),
                     "folds_file": {"path": path, "format": found.format,
                                    "sha256": found.sha256}}
