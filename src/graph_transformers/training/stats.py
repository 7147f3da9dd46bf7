"""The statistics behind every "mean ± s.d." and every verdict of this library, in one place.

One convention everywhere: the **sample** standard deviation (``n − 1`` in the denominator) over
seeds (and folds), reported as ``None`` (not 0) for a single value, since one run says nothing of
the spread.

Two rules turn numbers into verdicts (printed under the reproduction table, :data:`RULES`):

- **Reproduction** (ours against a paper's ``mean ± σ``): *within* when
  ``|ours − paper| ≤ 2 · √(σ_paper² + σ_ours²)`` (:func:`within_paper`), else *outside* (better or
  worse). With one seed ``σ_ours`` is unknown: the test uses ``σ_paper`` alone and the verdict says
  "1 seed".
- **Parity** (ours against the official code, same budget, per-seed values on both sides):
  *better* or *worse* only where Welch's unequal-variance t-test gives ``p < 0.05``
  (:func:`welch_test`), else *parity*; with one seed per side there is no test
  (*inconclusive (1 seed)*).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

#: the significance level of the parity rule
ALPHA = 0.05

RULES = (
    "Verdict rules: s.d. is the sample s.d. (n − 1) over seeds (and folds). A reproduction row is "
    "\"within 2σ\" when |ours − paper| ≤ 2·√(σ_paper² + σ_ours²) after the paper's schedule ran "
    "to its end, else \"outside\" (better or worse); with one seed σ_ours is unknown, the test "
    "uses σ_paper alone and the row says \"1 seed\". A parity row says \"better\" or \"worse\" "
    "only where Welch's t-test on the per-seed test values at the last epoch gives p < 0.05, else "
    "\"parity\".")


def mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (``n − 1``) of ``values``; the s.d. is ``None`` for a
    single value.

    Raises:
        ValueError: for no values.
    """
    if not values:
        raise ValueError("mean_std needs at least one value")
    values = [float(v) for v in values]
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def format_mean_std(mean: float, std: float | None, digits: int = 3, scale: float = 1.0) -> str:
    """``"mean ± s.d."`` (scaled, ``digits`` decimals), or ``"mean (1 run)"`` without an s.d."""
    if std is None:
        return f"{mean * scale:.{digits}f} (1 run)"
    return f"{mean * scale:.{digits}f} ± {std * scale:.{digits}f}"


def within_paper(ours: float, ours_std: float | None, paper: float, paper_std: float,
                 tol: float = 0.0) -> bool:
    """The reproduction rule: ``|ours − paper| ≤ 2 · √(σ_paper² + σ_ours²) + tol`` (``σ_ours``
    taken as 0 when unknown, i.e. one seed). ``tol`` absorbs float32 rounding of the metrics."""
    spread = math.hypot(paper_std, ours_std or 0.0)
    return abs(ours - paper) <= 2.0 * spread + tol


def welch_test(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Welch's two-sided t-test of equal means with unequal variances (``scipy.stats.ttest_ind``,
    ``equal_var=False``).

    Returns:
        ``(t, p)``; for two samples without spread, ``p`` is 0 when the means differ and 1 when
        they are equal (SciPy returns NaN there).

    Raises:
        ValueError: when either side has fewer than two values.
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"Welch's test needs two values per side, got {len(a)} and {len(b)}")
    from scipy.stats import ttest_ind
    if statistics.pvariance(a) == 0 and statistics.pvariance(b) == 0:
        diff = statistics.fmean(a) - statistics.fmean(b)
        return (math.copysign(math.inf, diff) if diff else 0.0), (0.0 if diff else 1.0)
    result = ttest_ind(list(a), list(b), equal_var=False)
    return float(result.statistic), float(result.pvalue)


def parity_verdict(ours: Sequence[float], official: Sequence[float],
                   lower_is_better: bool = True, alpha: float = ALPHA) -> dict:
    """The parity rule on per-seed values of one metric (e.g. test MAE at the last epoch).

    Returns:
        ``{"label", "p_value", "t", "ours_minus_official", "alpha"}``: ``label`` is ``better`` /
        ``worse`` where Welch's test gives ``p < alpha``, else ``parity``; ``inconclusive (1
        seed)`` (``p_value``/``t`` ``None``) with fewer than two values on a side.
    """
    diff = statistics.fmean(ours) - statistics.fmean(official)
    if len(ours) < 2 or len(official) < 2:
        return {"label": "inconclusive (1 seed)", "p_value": None, "t": None,
                "ours_minus_official": diff, "alpha": alpha}
    t, p = welch_test(ours, official)
    if p < alpha:
        label = "better" if (diff < 0) == lower_is_better else "worse"
    else:
        label = "parity"
    return {"label": label, "p_value": p, "t": t, "ours_minus_official": diff, "alpha": alpha}
