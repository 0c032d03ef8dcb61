"""RTMC: rollout-tree Monte Carlo advantages from first-visit (state, action) signature statistics.

Per group, every step maps to a (state signature, action signature) pair. First-visit Monte Carlo
over the group gives ``Q(s, a) = W(s, a) / N(s, a)`` and the smoothed baseline
``V(s) = (Ws(s) + alpha * p) / (Ns(s) + alpha)`` with ``p`` the group success rate; every step gets
``A = Q(s, a) - V(s)`` (looked up from the table, repeated occurrences included), optionally divided
by the group's population std. Groups whose rollouts all succeeded or all failed get 0. The
equations, defaults and worked examples are in docs/credit.md, section 6.

This module holds :class:`RTMCConfig`, the signature functions :func:`default_signature`
(re-exported from :mod:`agentenvs.wrappers.batch`), :func:`prefix_signature` and
:func:`cumulative_set_signature`, :func:`diagnostics`, :func:`estimate_batch` (trajectories:
:func:`agentenvs.wrappers.estimate`). Returns are
discounted sums of ``Step.reward`` (step rewards and any validation bonus are the environment's
business).

>>> from agentenvs.wrappers import estimate
>>> from agentenvs.core import Step, Trajectory
>>> def traj(actions, won):
...     steps = [Step("o", a, 0.0, state_key=i) for i, a in enumerate(actions)]
...     steps[-1].reward = float(won)
...     return Trajectory("t", "g", steps, success=won)
>>> cfg = RTMCConfig(gamma=1.0, normalize="none")
>>> [a.round(4).tolist() for a in estimate([traj("ab", True), traj("ac", False)], "rtmc", cfg)]
[[0.0, 0.5], [0.0, -0.5]]
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from agentenvs.wrappers.batch import (
    Signature,
    StepBatch,
    action_signature,
    default_signature,
)
from agentenvs.wrappers.grpo import check_choice
from agentenvs.wrappers.stats import dense_codes, discounted_returns, radix_argsort

from agentenvs.core import Step

__all__ = [
    "RTMCConfig",
    "default_signature",
    "prefix_signature",
    "cumulative_set_signature",
    "BATCH_COLUMNS",
    "diagnostics",
    "estimate_batch",
]


#: The :class:`~agentenvs.wrappers.batch.StepBatch` columns :func:`estimate_batch` reads.
BATCH_COLUMNS = ("state", "action")


def prefix_signature(steps: Sequence[Step], t: int) -> tuple[Hashable, Hashable]:
    """State = the sequence of action signatures before ``t`` (a rollout-tree prefix; very fine).

    >>> steps = [Step("o", a, 0.0) for a in ["look", "go", "look"]]
    >>> prefix_signature(steps, 2)
    (('look', 'go'), 'look')
    """
    return tuple(action_signature(s) for s in steps[:t]), action_signature(steps[t])


def cumulative_set_signature(steps: Sequence[Step], t: int) -> tuple[Hashable, Hashable]:
    """State = the set of distinct action signatures before ``t`` (order-invariant, RTMC-style).

    >>> a = [Step("o", x, 0.0) for x in ["look", "go", "look", "take"]]
    >>> b = [Step("o", x, 0.0) for x in ["go", "look", "take"]]
    >>> cumulative_set_signature(a, 3) == cumulative_set_signature(b, 2)
    True
    """
    return frozenset(action_signature(s) for s in steps[:t]), action_signature(steps[t])


@dataclass(frozen=True)
class RTMCConfig:
    """RTMC (docs/credit.md, section 6). The paper's discount and step rewards were lost from its
    text, so ``gamma`` is our default (docs/credit.md, section 7)."""

    gamma: float = 0.99
    """Return discount (the paper's value is lost; 0.99 is our default)."""
    alpha: float = 2.0
    """Prior pseudo-count of the smoothed baseline: the paper's "67% prior weight at one visit"
    gives alpha / (1 + alpha) = 2/3; 0 disables smoothing (the paper's "w/o prior" ablation)."""
    prior: str = "success_rate"
    """The baseline prior ``p``: ``"success_rate"`` (mean of ``success``, the paper) or
    ``"mean_return"`` (mean discounted return from the first step)."""
    normalize: str = "group_std"
    """``"group_std"`` divides by the population std of all the group's step advantages plus
    ``eps`` (left unchanged when that std < ``eps``); ``"none"``. The paper calls it optional."""
    filter_uniform_groups: bool = True
    """All-success / all-failure groups get advantage 0 (the paper filters them out of training)."""
    visit_mode: str = "first_visit"
    """Count only the first occurrence of a (state, action) pair per rollout (``"first_visit"``,
    the paper's first-visit Monte Carlo) or every occurrence (``"every_visit"``)."""
    eps: float = 1e-6
    """Added to the std in ``"group_std"`` normalisation."""
    signature: Signature | None = None
    """``(steps, t) -> (state_signature, action_signature)`` for step ``t`` of a trajectory
    (hashable values); ``None`` = :func:`~agentenvs.wrappers.batch.default_signature` (``Step.state_key``,
    :func:`~agentenvs.wrappers.batch.action_signature`). Generic alternatives: :func:`prefix_signature`,
    :func:`cumulative_set_signature`."""

    #: Fields where a reference implementation differs from the defaults: none, since RTMC has no
    #: public reference code (docs/credit.md, section 8).
    REFERENCE_FIELDS: ClassVar[dict[str, Any]] = {}

    @classmethod
    def reference(cls, **overrides: Any) -> RTMCConfig:
        """The reference preset, for symmetry with the other configs: RTMC has no public reference
        code, so this is the defaults (plus ``overrides``).

        >>> RTMCConfig.reference() == RTMCConfig(), RTMCConfig.reference(alpha=0.0).alpha
        (True, 0.0)
        """
        return cls(**{**cls.REFERENCE_FIELDS, **overrides})

    def __post_init__(self) -> None:
        check_choice("prior", self.prior, ("success_rate", "mean_return"))
        check_choice("normalize", self.normalize, ("group_std", "none"))
        check_choice("visit_mode", self.visit_mode, ("first_visit", "every_visit"))
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")
        if self.alpha < 0 or self.eps < 0:
            raise ValueError("alpha and eps must be >= 0")


def _first_visits(
    batch: StepBatch, sa: np.ndarray, n_sa: int, table: bool | None = None
) -> np.ndarray:
    """bool ``(n,)``: the step is the first occurrence of its (state, action) code in its rollout.

    ``table``: find first steps with a lookup table over (code, rank of the rollout in its group)
    (default when that table is small) or with a stable sort."""
    n = batch.n_steps
    sizes = np.bincount(batch.traj_group)
    order = radix_argsort(batch.traj_group)
    rank = np.empty(batch.n_trajectories, np.int64)
    rank[order] = np.arange(batch.n_trajectories) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    width = int(sizes.max())
    if table is None:
        table = n_sa * width <= 16 * n + 1024 and n < 1 << 31
    if table:
        key = sa * width + rank[batch.step_traj]
        steps = np.arange(n, dtype=np.int32)
        first_step = np.full(n_sa * width, n, np.int32)
        np.minimum.at(first_step, key, steps)
        return first_step[key] == steps
    key = dense_codes(batch.step_traj, sa)[0]
    order = radix_argsort(key)  # stable: within a run of equal keys, steps in order
    key_sorted = key[order]
    first = np.ones(n, bool)
    first[1:] = key_sorted[1:] != key_sorted[:-1]
    counted = np.zeros(n, bool)
    counted[order[first]] = True
    return counted


def diagnostics(batch: StepBatch, config: RTMCConfig | None = None) -> dict[str, np.ndarray]:
    """Every quantity of the estimate (docs/credit.md, section 6), as arrays.

    Per step: ``return`` (G_t), ``q`` (Q(s, a)), ``v`` (the smoothed V(s)), ``n_sa`` and ``n_s``
    (first-visit counts), ``counted`` (the step entered the table) and ``advantage`` (the result).
    Per group: ``prior`` (p) and ``uniform`` (all rollouts had one outcome).
    ``batch.state`` and ``batch.action`` hold the state and action signature codes.
    """
    config = config or RTMCConfig()
    n, n_groups = batch.n_steps, batch.n_groups
    returns = discounted_returns(batch.reward, batch.offsets, config.gamma)
    group = batch.step_group
    sa, n_sa = dense_codes(group, batch.state, batch.action)
    s, n_s = dense_codes(group, batch.state)
    if n and config.visit_mode == "first_visit":
        counted = _first_visits(batch, sa, n_sa)
    else:
        counted = np.ones(n, bool)
    w = np.where(counted, returns, 0.0)
    c = counted.astype(np.float64)
    count_sa = np.bincount(sa, weights=c, minlength=n_sa)
    count_s = np.bincount(s, weights=c, minlength=n_s)
    q = np.bincount(sa, weights=w, minlength=n_sa) / count_sa  # every code has a first visit
    traj_count = np.bincount(batch.traj_group, minlength=n_groups)
    wins = np.bincount(batch.traj_group, weights=batch.success, minlength=n_groups)
    if config.prior == "success_rate":
        prior_sum = wins
    else:
        starts = batch.offsets[:-1][batch.lengths > 0]
        prior_sum = np.bincount(group[starts], weights=returns[starts], minlength=n_groups)
    prior = prior_sum / np.maximum(traj_count, 1)
    s_group = np.zeros(n_s, np.int64)
    s_group[s] = group
    ws = np.bincount(s, weights=w, minlength=n_s) + config.alpha * prior[s_group]
    v = ws / (count_s + config.alpha)
    adv = q[sa] - v[s]
    if config.normalize == "group_std":
        size = np.maximum(np.bincount(group, minlength=n_groups), 1)
        dev = adv - (np.bincount(group, weights=adv, minlength=n_groups) / size)[group]
        std = np.sqrt(np.bincount(group, weights=dev * dev, minlength=n_groups) / size)
        adv = adv * np.where(std < config.eps, 1.0, 1.0 / (std + config.eps))[group]
    uniform = (wins == 0) | (wins == traj_count)
    if config.filter_uniform_groups:
        adv[uniform[group]] = 0.0
    return {
        "return": returns,
        "q": q[sa],
        "v": v[s],
        "n_sa": count_sa[sa],
        "n_s": count_s[s],
        "counted": counted,
        "advantage": adv,
        "prior": prior,
        "uniform": uniform,
    }


def estimate_batch(batch: StepBatch, config: RTMCConfig | None = None) -> np.ndarray:
    """RTMC advantages of a flat batch, float64 ``(n,)``.

    ``batch.state`` and ``batch.action`` hold the state and action signature codes.
    """
    return diagnostics(batch, config)["advantage"]
