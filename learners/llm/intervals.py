"""Confidence intervals for the change of a per-task outcome between two evaluations.

This module holds:

* :func:`paired_difference` - the mean per-task change ``after - before`` and its 95% interval,
  by the method that suits the values (below).
* :func:`tango_paired` - Tango's score interval for the difference of two paired proportions
  (0/1 outcomes of the same tasks).
* :func:`bootstrap_paired` - the percentile bootstrap interval of the mean paired difference (any
  values; seeded, so a report is reproducible).

Both intervals stay inside the range the statistic can take: a change of a rate in ``[0, 1]`` never
gets a bound outside ``[-1, 1]``, unlike the normal approximation ``mean +- 1.96 sd / sqrt(n)``
(which gives ``+0.958 (+0.877 to +1.040)`` for 46 of 48 tasks gained). docs/learner-report.md says
when each is used.

>>> before = {"a": 0.0, "b": 0.0, "c": 1.0, "d": 0.0}
>>> after = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0, "e": 1.0}  # "e" has no pair
>>> [round(x, 3) for x in paired_difference(before, after)]
[0.5, -0.235, 0.85, 4]
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

__all__ = ["paired_difference", "tango_paired", "bootstrap_paired"]

#: The two-sided 95% normal quantile.
Z95 = 1.959963984540054

#: Resamples of :func:`bootstrap_paired`.
BOOTSTRAP_RESAMPLES = 10_000


def tango_paired(lost: int, gained: int, n: int, z: float = Z95) -> tuple[float, float, float]:
    """The change of a paired proportion and its interval: Tango's asymptotic score interval
    (Tango 1998) for the difference of two proportions measured on the same ``n`` tasks.

    Args:
        lost: tasks won before and lost after.
        gained: tasks lost before and won after.
        n: all paired tasks (the concordant ones count only here).

    Returns:
        ``(difference, low, high)`` with ``difference = (gained - lost) / n`` and
        ``-1 <= low <= difference <= high <= 1``. Each bound solves ``T(d) = +-z`` for the score
        statistic ``T(d) = (gained - lost - n d) / sqrt(n (2 q(d) + d (1 - d)))``, where ``q(d)`` is
        the maximum-likelihood share of lost tasks under the difference ``d``; found by bisection.

    >>> [round(x, 3) for x in tango_paired(lost=0, gained=46, n=48)]  # 46 of 48 tasks gained
    [0.958, 0.813, 0.988]
    >>> [round(x, 3) for x in tango_paired(lost=0, gained=0, n=10)]  # nothing changed
    [0.0, -0.278, 0.278]
    """
    if n <= 0 or lost < 0 or gained < 0 or lost + gained > n:
        raise ValueError(f"need 0 <= lost + gained <= n and n >= 1, got {lost}, {gained}, {n}")

    def score(d: float) -> float:
        b = -gained - lost + (2 * n - gained + lost) * d
        c = -lost * d * (1 - d)
        q = (math.sqrt(max(0.0, b * b - 8 * n * c)) - b) / (4 * n)
        return (gained - lost - n * d) / math.sqrt(max(1e-300, n * (2 * q + d * (1 - d))))

    def solve(target: float, lo: float, hi: float) -> float:  # score falls from lo to hi
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if score(mid) > target else (lo, mid)
        return (lo + hi) / 2

    diff = (gained - lost) / n
    low = -1.0 if lost == n else solve(z, -1.0 + 1e-12, diff)
    high = 1.0 if gained == n else solve(-z, diff, 1.0 - 1e-12)
    return diff, low, high


def bootstrap_paired(
    diffs: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float, float]:
    """The mean of the paired differences ``diffs`` (shape ``(n,)``) and its 95% percentile
    bootstrap interval: ``resamples`` resamples of the tasks with replacement, seeded by ``seed``.
    The bounds lie within ``[diffs.min(), diffs.max()]``.

    >>> [round(x, 3) for x in bootstrap_paired(np.array([0.5, 0.25, 0.0, 0.5]))]
    [0.312, 0.125, 0.5]
    """
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, diffs.size, size=(resamples, diffs.size))
    means = diffs[picks].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(diffs.mean()), float(low), float(high)


def paired_difference(
    before: Mapping[str, float], after: Mapping[str, float]
) -> tuple[float, float, float, int]:
    """Mean of ``after[t] - before[t]`` over the tasks ``t`` both hold, and its 95% interval.

    Pairing by task removes the between-task variance. With 0/1 outcomes on every task (success,
    goal-directed episodes) the interval is :func:`tango_paired`'s; with any other values
    (a per-task share such as the valid-action rate) it is :func:`bootstrap_paired`'s. Returns
    ``(mean, low, high, n)``; NaNs when ``n == 0``.
    """
    tasks = [t for t in before if t in after]
    if not tasks:
        return math.nan, math.nan, math.nan, 0
    b = np.array([before[t] for t in tasks], dtype=np.float64)
    a = np.array([after[t] for t in tasks], dtype=np.float64)
    if np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all():
        lost, gained = int(((b == 1) & (a == 0)).sum()), int(((b == 0) & (a == 1)).sum())
        mean, low, high = tango_paired(lost, gained, len(tasks))
    else:
        mean, low, high = bootstrap_paired(a - b)
    return mean, low, high, len(tasks)
