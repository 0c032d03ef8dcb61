"""The report's intervals (docs/learner-report.md): inside the statistic's range, around the
estimate, and Tango's bounds solving its score equation (checked against a numerical maximum
likelihood, not the closed form the module uses)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from agentenvs.learners.llm.intervals import Z95, bootstrap_paired, paired_difference, tango_paired
from hypothesis import given
from hypothesis import strategies as st
from llm_fixtures import assert_intervals_in_range


def _score_by_likelihood(lost: int, gained: int, n: int, d: float) -> float:
    """Tango's statistic at ``d`` with the constrained MLE of the lost share found by a golden
    section search of the multinomial log-likelihood (cells: gained q + d, lost q, rest)."""

    def loglik(q: float) -> float:
        cells = ((gained, q + d), (lost, q), (n - lost - gained, 1 - 2 * q - d))
        return sum(k * math.log(p) for k, p in cells if k)

    lo, hi = max(0.0, -d) + 1e-13, (1 - d) / 2 - 1e-13
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        lo, hi = (lo, b) if loglik(a) > loglik(b) else (a, hi)
    q = (lo + hi) / 2
    return (gained - lost - n * d) / math.sqrt(n * (2 * q + d * (1 - d)))


@given(st.integers(1, 200), st.data())
def test_tango_bounds_are_in_range_and_solve_the_score_equation(n, data):
    lost = data.draw(st.integers(0, n))
    gained = data.draw(st.integers(0, n - lost))
    diff, low, high = tango_paired(lost, gained, n)
    assert -1.0 <= low <= diff <= high <= 1.0
    assert diff == (gained - lost) / n
    if -1.0 < low < diff:
        assert _score_by_likelihood(lost, gained, n, low) == pytest.approx(Z95, abs=1e-3)
    if diff < high < 1.0:
        assert _score_by_likelihood(lost, gained, n, high) == pytest.approx(-Z95, abs=1e-3)


def test_tango_matches_a_published_example_and_keeps_width_without_change():
    # 21 paired subjects, 1 gained and 7 lost: -0.286 (-0.517 to -0.026) in the textbook's table
    diff, low, high = tango_paired(lost=7, gained=1, n=21)
    assert (round(diff, 3), round(low, 3), round(high, 3)) == (-0.286, -0.517, -0.026)
    assert tango_paired(0, 0, 40)[1] < 0 < tango_paired(0, 0, 40)[2]


@given(st.lists(st.floats(0, 1), min_size=1, max_size=60), st.data())
def test_paired_difference_stays_in_range_for_any_rates(before, data):
    after = data.draw(st.lists(st.floats(0, 1), min_size=len(before), max_size=len(before)))
    b = {str(i): v for i, v in enumerate(before)}
    a = {str(i): v for i, v in enumerate(after)}
    mean, low, high, n = paired_difference(b, a)
    assert n == len(before)
    assert -1.0 <= low <= mean + 1e-12 and mean - 1e-12 <= high <= 1.0
    diffs = np.array(after) - np.array(before)
    assert mean == np.float64(diffs.mean())


def test_the_bootstrap_is_seeded_and_within_the_observed_changes():
    diffs = np.array([0.5, -0.25, 0.0, 0.75, 0.25])
    assert bootstrap_paired(diffs) == bootstrap_paired(diffs)
    _, low, high = bootstrap_paired(diffs)
    assert diffs.min() <= low < high <= diffs.max()


def test_the_normal_approximations_counterexample_is_fixed():
    before = dict.fromkeys(map(str, range(48)), 0.0)
    after = {t: float(int(t) < 46) for t in before}
    line = "gain {:+.3f} (95% interval {:+.3f} to {:+.3f})".format(
        *paired_difference(before, after)[:3]
    )
    assert assert_intervals_in_range([line]) == 1
