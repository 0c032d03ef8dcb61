"""SPA (stepwise progress attribution): a progress estimator splits each trajectory's outcome into
per-step contributions, fused with a grounding reward for executable actions (docs/spa.md).

Method ``"spa"``. Per trajectory with outcome ``R`` and steps ``t = 0..n-1``:

* contribution ``c_t``: the estimator's share of ``R`` for step ``t`` (trained so that
  ``sum_t c_t ~ R``), or a baseline source (``mean``: ``R/n``; ``sparse``: ``R`` on the last step;
  ``random``: U[0, 1]; ``loo_baseline``: ``R`` minus the mean outcome of the rest of the group);
* grounding ``g_t``: 1 where the action executed, else 0, as the env reports it
  (:func:`agentenvs.wrappers.rewards.grounding`);
* fused step reward ``r_t = alpha * c_t + beta * g_t`` with the paper's indicator ``g_t``
  (``grounding_mode="indicator"``), or ``alpha * c_t + beta * (g_t - 1)`` (``"penalty"``, the
  default: no bonus for long episodes under the critic-free reward-to-go);
* advantage: the reward-to-go of ``r`` normalised over the group's steps (``advantage=
  "group_relative"``), or ``r`` itself (``advantage="rewards"``) for a learner running its own GAE.

This module holds :class:`SPAConfig` (frozen values), :class:`SPAState` (the online state: the
estimator built from the config's spec and its :class:`ProgressBuffer`, kept in the wrapper's
:class:`~agentenvs.wrappers.state.CreditState`), the pure
maths (:func:`fuse`, :func:`outcomes`, :func:`baseline_contributions`; :func:`gae`, the GAE a
learner with a critic runs on ``r``, is :func:`agentenvs.wrappers.stats.gae`) and
:func:`estimate_batch` (trajectories: :func:`agentenvs.wrappers.estimate`).

>>> from agentenvs.wrappers import estimate
>>> from agentenvs.core import Step, Trajectory
>>> won = Trajectory("t", "g", [Step("o", "go", 0.0), Step("o", "take", 1.0)], success=True,
...                  final_observation="You take the mug.")
>>> lost = Trajectory("t", "g", [Step("o", "go", 0.0),
...                               Step("o", "eat", 0.0, extras={"action_executed": False})],
...                   final_observation="Nothing happens.")
>>> config = SPAConfig(contribution_source="mean", advantage="rewards")
>>> [a.tolist() for a in estimate([won, lost], "spa", config)]
[[0.5, 0.5], [0.0, -0.5]]
>>> won.steps[1].extras["spa"]
{'contribution': 0.5, 'grounding': 1.0, 'reward': 0.5}
>>> paper = SPAConfig(contribution_source="mean", advantage="rewards", grounding_mode="indicator")
>>> [a.tolist() for a in estimate([won, lost], "spa", paper)]
[[1.0, 1.0], [0.5, 0.0]]
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.models.fit import FitReport
from agentenvs.wrappers.models.progress import (
    ProgressEstimator,
    check_estimator_spec,
    make_estimator,
)
from agentenvs.wrappers.rewards import grounding, group_relative_returns
from agentenvs.wrappers.stats import gae

from agentenvs.core import Trajectory

__all__ = [
    "SPAConfig",
    "ProgressBuffer",
    "SPAState",
    "BATCH_COLUMNS",
    "OUTCOMES",
    "SOURCES",
    "fuse",
    "outcomes",
    "baseline_contributions",
    "gae",
    "estimate_batch",
]

#: SPA reads whole trajectories (``StepBatch.trajectories``), no state or action codes.
BATCH_COLUMNS: tuple[str, ...] = ()
#: What ``R`` is: the env's ``won`` flag (1/0) or the trajectory's env return.
OUTCOMES = ("success", "return")
#: Where contributions come from (``estimator`` is SPA; the rest are the paper's ablations).
SOURCES = ("estimator", "mean", "sparse", "random", "loo_baseline")
_GROUNDING = ("indicator", "penalty")
_ADVANTAGES = ("group_relative", "rewards")
_UNTRAINED = ("sparse", "mean", "raise")


class ProgressBuffer:
    """The online training state: the most recent trajectories and their outcomes (at most
    ``capacity``), the groups seen since the last fit and the last :class:`FitReport`."""

    def __init__(self, capacity: int) -> None:
        self.items: deque[tuple[Trajectory, float]] = deque(maxlen=capacity)
        self.groups_since_fit = 0
        self.fits = 0
        self.last: FitReport | None = None

    def add(
        self,
        trajectories: Sequence[Trajectory],
        targets: Sequence[float] | np.ndarray,
        groups: int,
    ) -> None:
        """Keep ``trajectories`` (with their targets) and count ``groups`` new groups."""
        self.items.extend(zip(trajectories, map(float, targets), strict=True))
        self.groups_since_fit += groups

    def fit(self, estimator: ProgressEstimator, epochs: int | None = None) -> FitReport:
        """Fit ``estimator`` on the whole buffer: the estimator's own epochs the first time,
        ``epochs`` (``None``: its own) for later refits, which continue from its weights; resets
        the group count."""
        trajectories, targets = zip(*self.items, strict=True) if self.items else ((), ())
        passes = epochs if self.fits and estimator.trained else None
        self.last = estimator.fit(list(trajectories), list(targets), epochs=passes)
        self.groups_since_fit = 0
        self.fits += 1
        return self.last

    def state_dict(self) -> dict[str, Any]:
        """The buffered ``(trajectory, target)`` pairs, the counts and the last report."""
        return {
            "items": list(self.items),
            "groups_since_fit": self.groups_since_fit,
            "fits": self.fits,
            "last": self.last,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.items.clear()
        self.items.extend(state["items"])
        self.groups_since_fit = int(state["groups_since_fit"])
        self.fits = int(state["fits"])
        self.last = state["last"]


@dataclass(frozen=True)
class SPAConfig:
    """Options of ``"spa"`` (docs/spa.md, section 7 lists each default and where it comes from).

    Attributes:
        alpha: weight of the contribution (paper: 1.0). beta: weight of grounding (paper: 0.5).
        grounding_mode: ``"penalty"`` (default: ``g - 1``, 0 for an executable action and -1
            otherwise) or ``"indicator"`` (the paper: ``g`` in {0, 1}). Under the critic-free
            reward-to-go, the indicator's constant reward per executable step is a bonus for long
            episodes (docs/spa.md, section 6).
        use_action_valid: count ``Step.action_valid = False`` as not executed (default ``True``);
            an env's ``info["action_executed"] = False`` always counts
            (:func:`agentenvs.wrappers.rewards.executed`).
        outcome: ``"success"`` (1/0 from the ``won`` flag, default) or ``"return"`` (the env return,
            env units; e.g. WebShop's score, with any invalid-action penalties in it).
        contribution_source: one of :data:`SOURCES` (default ``"estimator"``).
        contribution_clip: clamp ``|c_t|`` to this bound (``None``: no clamp, default).
        gamma: discount of the reward-to-go (default 1.0: undiscounted, so the contributions
            telescope to the outcome; the papers' 0.99 is a critic's GAE setting).
        advantage: ``"group_relative"`` (default) or ``"rewards"`` (the fused rewards themselves).
        eps: added to the group std (default 1e-6).
        estimator: a progress estimator, or a spec for :func:`agentenvs.wrappers.models.progress.make_estimator`
            (``"features"``, default; ``"tabular"``; ``"hf:<dir>"``; a saved file); checked here,
            built by the online state (:class:`SPAState`).
        estimator_options: keyword options for an estimator built from a spec (e.g.
            ``{"epochs": 50, "lr": 1e-3}``).
        online: train the estimator on the groups it credits (default ``True``).
        buffer_size: trajectories kept for fitting (default 512, most recent).
        refit_every: fit after this many new groups (default 4).
        refit_epochs: passes of every fit after the first, which continue from the current
            weights (default 10; ``None``: the estimator's own, e.g. 200 for ``"features"``, which
            costs ~5 s per fit on a 512-trajectory buffer).
        untrained: contributions before the first fit: ``"sparse"`` (default), ``"mean"``, or
            ``"raise"`` (``RuntimeError``); never random.
        seed: seed of the ``random`` source (default 0).
    """

    alpha: float = 1.0
    beta: float = 0.5
    grounding_mode: str = "penalty"
    use_action_valid: bool = True
    outcome: str = "success"
    contribution_source: str = "estimator"
    contribution_clip: float | None = None
    gamma: float = 1.0
    advantage: str = "group_relative"
    eps: float = 1e-6
    estimator: Any = "features"
    estimator_options: dict[str, Any] | None = None
    online: bool = True
    buffer_size: int = 512
    refit_every: int = 4
    refit_epochs: int | None = 10
    untrained: str = "sparse"
    seed: int = 0

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("grounding_mode", self.grounding_mode, _GROUNDING),
            ("outcome", self.outcome, OUTCOMES),
            ("contribution_source", self.contribution_source, SOURCES),
            ("advantage", self.advantage, _ADVANTAGES),
            ("untrained", self.untrained, _UNTRAINED),
        ):
            if value not in allowed:
                raise ValueError(f"SPAConfig.{name} must be one of {allowed}, got {value!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")
        if self.contribution_clip is not None and self.contribution_clip <= 0:
            raise ValueError("contribution_clip must be > 0 or None")
        if self.buffer_size < 1 or self.refit_every < 1:
            raise ValueError("buffer_size and refit_every must be >= 1")
        if self.refit_epochs is not None and self.refit_epochs < 1:
            raise ValueError("refit_epochs must be >= 1 or None")
        if self.contribution_source == "estimator":
            check_estimator_spec(self.estimator, **(self.estimator_options or {}))


class SPAState:
    """SPA's online state for one config: ``estimator`` (built from ``config.estimator``; ``None``
    for a baseline contribution source) and ``buffer`` (a :class:`ProgressBuffer` of
    ``config.buffer_size``). The registry makes it in the wrapper's
    :class:`~agentenvs.wrappers.state.CreditState` on the first group credited."""

    def __init__(self, config: SPAConfig) -> None:
        self.estimator: ProgressEstimator | None = None
        if config.contribution_source == "estimator":
            self.estimator = make_estimator(config.estimator, **(config.estimator_options or {}))
        self.buffer = ProgressBuffer(config.buffer_size)

    def state_dict(self) -> dict[str, Any]:
        """The estimator's weights (``None`` while untrained) and the buffer."""
        estimator = self.estimator
        return {
            "estimator": estimator.state_dict()
            if estimator is not None and estimator.trained
            else None,
            "buffer": self.buffer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state["estimator"] is not None:
            if self.estimator is None:
                raise ValueError("the saved SPA state has an estimator; this config has none")
            self.estimator.load_state_dict(state["estimator"])
        self.buffer.load_state_dict(state["buffer"])

    def __repr__(self) -> str:
        estimator = self.estimator
        model = "None" if estimator is None else type(estimator).__name__
        trained = estimator is not None and estimator.trained
        return (
            f"SPAState(estimator={model}, trained={trained}, buffered={len(self.buffer.items)}, "
            f"fits={self.buffer.fits})"
        )


# -- pure maths --------------------------------------------------------------------------------------
def fuse(
    contributions: np.ndarray,
    grounded: np.ndarray,
    alpha: float = 1.0,
    beta: float = 0.5,
    mode: str = "indicator",
) -> np.ndarray:
    """float64 ``(n,)`` fused step rewards ``alpha * c + beta * g`` (``mode="penalty"``: ``g - 1``).

    >>> fuse(np.array([0.2, 0.3, 0.5]), np.array([1.0, 0.0, 1.0])).tolist()
    [0.7, 0.3, 1.0]
    >>> fuse(np.array([0.2, 0.3]), np.array([1.0, 0.0]), mode="penalty").tolist()
    [0.2, -0.2]
    """
    g = np.asarray(grounded, np.float64)
    if mode == "penalty":
        g = g - 1.0
    elif mode != "indicator":
        raise ValueError(f"mode must be 'indicator' or 'penalty', got {mode!r}")
    return alpha * np.asarray(contributions, np.float64) + beta * g


def outcomes(trajectories: Sequence[Trajectory], outcome: str = "success") -> np.ndarray:
    """float64 ``(m,)``: ``R`` per trajectory, 1/0 from ``success`` or the env ``total_return``."""
    if outcome == "success":
        return np.array([float(bool(t.success)) for t in trajectories])
    if outcome == "return":
        return np.array([t.total_return for t in trajectories], np.float64)
    raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")


def baseline_contributions(
    source: str,
    targets: np.ndarray,
    lengths: np.ndarray,
    groups: np.ndarray,
    rng: np.random.Generator | None = None,
) -> list[np.ndarray]:
    """Contributions of a non-estimator source, one float64 array per trajectory.

    ``mean``: ``R/n`` on every step; ``sparse``: ``R`` on the last step, 0 elsewhere; ``random``:
    U[0, 1] from ``rng``; ``loo_baseline``: ``R`` minus the mean ``R`` of the other trajectories of
    the group (0 for a one-trajectory group) on every step.

    >>> R, n, grp = np.array([1.0, 0.0, 0.5]), np.array([2, 1, 2]), np.array([0, 0, 0])
    >>> [c.tolist() for c in baseline_contributions("sparse", R, n, grp)]
    [[0.0, 1.0], [0.0], [0.0, 0.5]]
    >>> [c.tolist() for c in baseline_contributions("loo_baseline", R, n, grp)]
    [[0.75, 0.75], [-0.75], [0.0, 0.0]]
    """
    targets = np.asarray(targets, np.float64)
    lengths = np.asarray(lengths, np.int64)
    if source == "mean":
        return [np.full(n, r / max(n, 1)) for r, n in zip(targets, lengths, strict=True)]
    if source == "sparse":
        out = [np.zeros(n) for n in lengths]
        for c, r in zip(out, targets, strict=True):
            if len(c):
                c[-1] = r
        return out
    if source == "random":
        rng = rng or np.random.default_rng(0)
        return [rng.uniform(0.0, 1.0, int(n)) for n in lengths]
    if source == "loo_baseline":
        groups = np.asarray(groups, np.int64)
        total = np.bincount(groups, weights=targets)[groups]
        size = np.bincount(groups)[groups]
        others = np.where(size > 1, (total - targets) / np.maximum(size - 1, 1), targets)
        return [np.full(n, r - o) for r, o, n in zip(targets, others, lengths, strict=True)]
    raise ValueError(f"unknown contribution source {source!r}; choose from {SOURCES[1:]}")


# -- the estimator -----------------------------------------------------------------------------------
def _share(trajectories: Sequence[Trajectory], values: dict[str, float]) -> None:
    """Add each value, split evenly, to every trajectory's ``info["credit"]``."""
    m = len(trajectories)
    for traj in trajectories:
        credit = traj.info.setdefault("credit", {})
        for key, value in values.items():
            credit[key] = credit.get(key, 0.0) + value / m


def _contributions(
    trajectories: Sequence[Trajectory],
    batch: StepBatch,
    targets: np.ndarray,
    config: SPAConfig,
    state: SPAState,
) -> list[np.ndarray]:
    """Per-trajectory contributions from the configured source (online fitting first)."""
    lengths = batch.lengths
    source = config.contribution_source
    if source != "estimator":
        rng = np.random.default_rng(config.seed)
        return baseline_contributions(source, targets, lengths, batch.traj_group, rng)
    estimator = state.estimator
    assert estimator is not None  # SPAState builds one for the "estimator" source
    costs: dict[str, float] = {"estimator_fallbacks": 0.0, "estimator_seconds": 0.0}
    if config.online:
        state.buffer.add(trajectories, targets, batch.n_groups)
        if state.buffer.groups_since_fit >= config.refit_every:
            report = state.buffer.fit(estimator, config.refit_epochs)
            costs.update(
                estimator_fits=1.0,
                estimator_loss=report.loss_after,
                estimator_loss_before=report.loss_before,
                estimator_fit_seconds=report.seconds,
            )
    if not estimator.trained:
        if config.untrained == "raise":
            raise RuntimeError(
                "the SPA progress estimator is untrained: fit it, set online=True, or choose "
                "untrained='sparse' / 'mean'"
            )
        costs["estimator_fallbacks"] = float(len(trajectories))
        _share(trajectories, costs)
        return baseline_contributions(config.untrained, targets, lengths, batch.traj_group)
    start = time.perf_counter()
    found = [np.asarray(c, np.float64) for c in estimator.contributions(trajectories)]
    costs["estimator_seconds"] = time.perf_counter() - start
    if [len(c) for c in found] != lengths.tolist():
        raise ValueError("the progress estimator returned a wrong number of contributions")
    _share(trajectories, costs)
    return found


def estimate_batch(
    batch: StepBatch, config: SPAConfig | None = None, online: SPAState | None = None
) -> np.ndarray:
    """SPA advantages of a flat batch, float64 ``(n,)`` (see the module docstring).

    ``online``: the online state to use and train (the registry passes the wrapper's; ``None``: a
    fresh one, dropped after the call). Reads ``batch.trajectories`` (``ValueError`` when the batch was built from arrays), writes
    ``step.extras["spa"] = {"contribution", "grounding", "reward"}`` for every step and the
    estimator's costs into ``Trajectory.info["credit"]`` (``estimator_*`` keys, split evenly over
    the batch's trajectories).
    """
    config = config or SPAConfig()
    trajectories = batch.trajectories
    if trajectories is None:
        raise ValueError("SPA reads whole trajectories: build the batch with from_trajectories")
    targets = outcomes(trajectories, config.outcome)
    state = online if online is not None else SPAState(config)
    contributions = _contributions(trajectories, batch, targets, config, state)
    if config.contribution_clip is not None:
        bound = config.contribution_clip
        contributions = [np.clip(c, -bound, bound) for c in contributions]
    rewards = []
    for traj, c in zip(trajectories, contributions, strict=True):
        g = grounding(traj, config.use_action_valid)
        r = fuse(c, g, config.alpha, config.beta, config.grounding_mode)
        for step, ct, gt, rt in zip(traj.steps, c.tolist(), g.tolist(), r.tolist(), strict=True):
            step.extras["spa"] = {"contribution": ct, "grounding": gt, "reward": rt}
        rewards.append(r)
    if config.advantage == "rewards":
        advantages = rewards
    else:
        advantages = [np.zeros(0)] * len(rewards)
        for k in range(batch.n_groups):
            members = np.flatnonzero(batch.traj_group == k).tolist()
            relative = group_relative_returns(
                [rewards[i] for i in members], config.gamma, config.eps
            )
            for i, a in zip(members, relative, strict=True):
                advantages[i] = a
    return np.concatenate(advantages) if advantages else np.zeros(0)
