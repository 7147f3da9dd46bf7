"""Predict-only splits: a split whose dataset has no labels for it by design (the official test
splits of PCQM4M-LSC and PCQM4Mv2, whose labels OGB-LSC keeps hidden) is kept in the run, but
no loss or metric is computed on it: training checks, the final evaluation and ``evaluate``
skip it, ``metrics.json`` gives it an empty metric dict and names it under ``predict_only``
with the reason, and one INFO line says so. Its predictions come from
``graph-transformers predict``.

A dataset marks such a split with ``predict_only = True`` (and ``predict_only_reason``); only
the ``test`` split may be predict-only (training needs labelled ``train`` and ``val`` splits).
"""
from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

#: the only split that may be predict-only
PREDICT_ONLY_SPLITS = ("test",)


def predict_only_splits(splits: dict[str, Any]) -> dict[str, str]:
    """``{split: reason}`` of the splits whose dataset says ``predict_only`` (``test`` only;
    a ``train`` or ``val`` split without labels stays an error of the run's checks)."""
    return {name: str(getattr(ds, "predict_only_reason", "") or "no labels")
            for name, ds in splits.items()
            if name in PREDICT_ONLY_SPLITS and getattr(ds, "predict_only", False)}


def log_predict_only(dataset: str, reasons: dict[str, str]) -> None:
    """One INFO line per predict-only split: it gets no metric, and why."""
    for name, why in reasons.items():
        log.info("%s: the %s split is predict-only, no metric is reported for it (%s)",
                 dataset, name, why)
