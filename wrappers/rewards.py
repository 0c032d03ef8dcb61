"""Step rewards -> advantages, and the action-grounding signal: what SPA and HISR share.

SPA and HISR turn an outcome into dense per-step *rewards* (progress contributions, hindsight-
modulated segment rewards) fused with a *grounding* reward for executable actions. The papers
train on those rewards with PPO + GAE and a learned critic; our learners take advantages straight
from the credit wrapper, so the rewards become advantages here, critic-free, as docs/credit.md
states (section 12, "Dense rewards to advantages").

This module holds:

* :func:`next_observations` - the observation each step led to (``Trajectory.final_observation``
  for the last step).
* :func:`grounding` - 1.0 where a step's action executed, else 0.0, as the env reported it
  (:func:`executed`).
* :func:`reward_to_go` - discounted reward-to-go of one trajectory's rewards.
* :func:`group_relative_returns` - the reward-to-go of every step of a group, normalised over the
  group's steps (mean 0, std 1): the advantage a critic-free learner consumes.

>>> from agentenvs.core import Step, Trajectory
>>> t = Trajectory("t", "g", [Step("o0", "go", 0.0),
...                            Step("o1", "take", 1.0, extras={"action_executed": False})])
>>> grounding(t).tolist()
[1.0, 0.0]
>>> reward_to_go(np.array([0.0, 1.0]), gamma=0.5).tolist()
[0.5, 1.0]
>>> won, lost = group_relative_returns([np.array([0.0, 1.0]), np.array([0.0])])
>>> won.round(4).tolist(), lost.round(4).tolist()
([0.7071, 0.7071], [-1.4142])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from agentenvs.wrappers.stats import discounted_returns

from agentenvs.core import Step, Trajectory

__all__ = [
    "EXECUTED_KEY",
    "executed",
    "next_observations",
    "grounding",
    "reward_to_go",
    "group_relative_returns",
]

#: The key of ``info`` (and of ``Step.extras``) where an env reports that a well-formed action did
#: not take effect (e.g. ALFWorld's "Nothing happens."); absent means it did.
EXECUTED_KEY = "action_executed"


def next_observations(trajectory: Trajectory) -> list[Any]:
    """The observation after each step: ``steps[t + 1].observation``, and
    ``trajectory.final_observation`` after the last step."""
    steps = trajectory.steps
    return [s.observation for s in steps[1:]] + [trajectory.final_observation][: len(steps)]


def executed(step: Step, use_action_valid: bool = True) -> bool:
    """Whether ``step``'s action executed, by the env's contract: not when
    ``Step.action_valid`` is ``False`` (read when ``use_action_valid``), nor when the env reported
    ``info["action_executed"] = False`` (the recorder keeps it in ``Step.extras``)."""
    if use_action_valid and not step.action_valid:
        return False
    return bool(step.extras.get(EXECUTED_KEY, True))


def grounding(trajectory: Trajectory, use_action_valid: bool = True) -> np.ndarray:
    """float64 ``(n,)``: 1.0 where step ``t``'s action executed, 0.0 where it did not
    (:func:`executed`)."""
    return np.array([float(executed(s, use_action_valid)) for s in trajectory.steps], np.float64)


def reward_to_go(rewards: Sequence[float] | np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """float64 ``(n,)``: ``G_t = sum_{k >= t} gamma^(k - t) r_k`` of one trajectory's rewards."""
    rewards = np.asarray(rewards, np.float64).reshape(-1)
    return discounted_returns(rewards, np.array([0, len(rewards)]), gamma)


def group_relative_returns(
    rewards: Sequence[np.ndarray], gamma: float = 1.0, eps: float = 1e-6
) -> list[np.ndarray]:
    """Per-trajectory advantages of one group from per-step rewards.

    Each step's reward-to-go (:func:`reward_to_go`), minus the mean and divided by the population
    std (``+ eps``) of all the group's reward-to-go values (each step counted once). A group whose
    values are all equal gets zeros; an empty group, empty arrays.
    """
    returns = [reward_to_go(r, gamma) for r in rewards]
    flat = np.concatenate(returns) if returns else np.zeros(0)
    if flat.size == 0:
        return returns
    mean, std = flat.mean(), flat.std()
    return [(g - mean) / (std + eps) for g in returns]
