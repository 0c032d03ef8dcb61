"""GiGPO: GRPO episode advantage plus an anchor-state step advantage.

Steps of one group that start from the same state (the *anchor*) form a step group; their
discounted step returns ``R_t = r_t + gamma * R_{t+1}`` (over each trajectory's actual length) are
normalised within it, a singleton step group gets 0, and ``A = episode_weight * A^E +
step_weight * A^S``. The equations, defaults and worked examples are in docs/credit.md, section 4.

This module holds :class:`GiGPOConfig`, :func:`step_advantages`, :func:`estimate_batch` (trajectories:
:func:`agentenvs.wrappers.estimate`).

>>> from agentenvs.wrappers import estimate
>>> from agentenvs.core import Step, Trajectory
>>> def traj(keys, won):
...     steps = [Step("o", "a", 0.0, state_key=k) for k in keys]
...     steps[-1].reward = 10.0 if won else 0.0
...     return Trajectory("t", "g", steps, success=won)
>>> adv = estimate([traj("AB", True), traj("AC", False)], "gigpo", GiGPOConfig(eps=0.0))
>>> [a.round(4).tolist() for a in adv]
[[1.4142, 0.7071], [-1.4142, -0.7071]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.grpo import GRPOConfig, episode_advantages, step_scores
from agentenvs.wrappers.matching import similarity_codes
from agentenvs.wrappers.stats import dense_codes, discounted_returns, group_zscore

__all__ = [
    "GiGPOConfig",
    "BATCH_COLUMNS",
    "step_returns",
    "step_advantages",
    "estimate_batch",
]

#: The :class:`~agentenvs.wrappers.batch.StepBatch` columns :func:`estimate_batch` reads.
BATCH_COLUMNS = ("state",)


@dataclass(frozen=True)
class GiGPOConfig(GRPOConfig):
    """GiGPO (docs/credit.md, section 4). Inherits the episode-term fields of :class:`~agentenvs.wrappers.grpo.GRPOConfig`; ``norm``
    applies to both terms (the reference ``mode``: ``"mean_std"`` = ``mean_std_norm``, ``"mean"`` =
    ``mean_norm``)."""

    gamma: float = 0.95
    """Step-return discount (gamma in the GiGPO paper, lambda in GraphGPO's; 0.95 in both)."""
    step_weight: float = 1.0
    """Weight of ``A^S`` (the GiGPO paper's omega, verl-agent's ``step_advantage_w``; 1)."""
    episode_weight: float = 1.0
    """Weight of ``A^E`` (0 = the GraphGPO paper's "-A^E" ablation of GiGPO)."""
    similarity_threshold: float | None = None
    """``None`` = exact anchor matching; a value such as 0.95 (verl-agent's ``similarity_thresh``)
    merges text anchors whose ``SequenceMatcher`` ratio reaches it (docs/credit.md, section 5.6)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")


def step_returns(batch: StepBatch, config: GiGPOConfig) -> np.ndarray:
    """Discounted step returns ``R_t``, float64 ``(n,)``; under ``penalty_scope="step"`` the
    penalty is docked from the invalid step's own return after discounting, as verl-agent's
    trainer does."""
    rewards, _ = step_scores(batch, config)
    returns = discounted_returns(rewards, batch.offsets, config.gamma)
    if config.penalty_scope == "step":
        returns = returns - config.invalid_penalty * ~batch.valid
    return returns


def step_advantages(batch: StepBatch, config: GiGPOConfig) -> np.ndarray:
    """The anchor-state step advantage ``A^S``, float64 ``(n,)``."""
    state = batch.state
    if config.similarity_threshold is not None:
        state, _ = similarity_codes(batch, config.similarity_threshold, include_next=False)
    anchors, n_anchors = dense_codes(batch.step_group, state)
    return group_zscore(
        step_returns(batch, config),
        anchors,
        n_anchors,
        norm=config.norm,
        ddof=config.ddof,
        eps=config.eps,
        singleton="zero",
    )


def estimate_batch(batch: StepBatch, config: GiGPOConfig | None = None) -> np.ndarray:
    """GiGPO advantages of a flat batch, float64 ``(n,)``."""
    config = config or GiGPOConfig()
    out = config.step_weight * step_advantages(batch, config)
    if config.episode_weight:
        out += config.episode_weight * episode_advantages(batch, config)
    return out
