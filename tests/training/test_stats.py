"""The statistics behind the verdicts: the sample s.d., the reproduction rule and Welch's test
against hand computations."""
from __future__ import annotations

import math

import pytest

from graph_transformers.training.stats import mean_std, parity_verdict, welch_test, within_paper


def test_mean_std_is_the_sample_sd():
    mean, std = mean_std([1.0, 2.0, 4.0])
    assert mean == pytest.approx(7 / 3)
    assert std == pytest.approx(math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2
                                           + (4 - 7 / 3) ** 2) / 2))
    assert mean_std([0.3]) == (0.3, None)
    with pytest.raises(ValueError, match="at least one"):
        mean_std([])


def test_within_paper_combines_both_spreads():
    # 2·√(0.03² + 0.04²) = 0.1
    assert within_paper(1.1, 0.04, 1.0, 0.03, tol=1e-12)
    assert not within_paper(1.1001, 0.04, 1.0, 0.03)
    assert within_paper(0.941, None, 1.0, 0.03) and not within_paper(0.939, None, 1.0, 0.03)


def test_welch_test_by_hand():
    a, b = [1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 8.0]
    va, vb = 1.0, 20 / 3  # sample variances
    se2 = va / 3 + vb / 4
    t = (2.0 - 5.0) / math.sqrt(se2)
    df = se2 ** 2 / ((va / 3) ** 2 / 2 + (vb / 4) ** 2 / 3)
    t_ours, p_ours = welch_test(a, b)
    assert t_ours == pytest.approx(t)
    from scipy.stats import t as student
    assert p_ours == pytest.approx(2 * student.sf(abs(t), df))
    # no spread on either side: decided by the means alone
    assert welch_test([1.0, 1.0], [1.0, 1.0])[1] == 1.0
    assert welch_test([1.0, 1.0], [2.0, 2.0])[1] == 0.0
    with pytest.raises(ValueError, match="two values per side"):
        welch_test([1.0], [1.0, 2.0])


def test_parity_verdict_labels():
    assert parity_verdict([0.50, 0.51], [0.60, 0.61])["label"] == "better"
    assert parity_verdict([0.70, 0.71], [0.60, 0.61])["label"] == "worse"
    assert parity_verdict([0.5, 0.7], [0.6, 0.62])["label"] == "parity"
    assert parity_verdict([0.5, 0.51], [0.6, 0.61], lower_is_better=False)["label"] == "worse"
    one = parity_verdict([0.5], [0.6, 0.61])
    assert one["label"] == "inconclusive (1 seed)" and one["p_value"] is None
