"""Recording Gymnasium transitions as :class:`~agentenvs.core.Step` / :class:`~agentenvs.core.Trajectory`.

This module holds :class:`EpisodeRecorder` (feed it the reset and each step of one episode and it
returns the finished :class:`Trajectory` when the episode ends) and :class:`GroupOutbox` (the
credited groups waiting for ``pop_groups()``).

>>> rec = EpisodeRecorder()
>>> rec.begin("grid0", {"state_key": "k0", "task_id": "seed-1", "progress": 0.0})
>>> rec.record("up", "grid1", -0.1, False, False, {"state_key": "k1", "progress": 0.5})
>>> traj = rec.record("left", "grid2", 10.0, True, False, {"state_key": "k2", "won": True,
...                                                         "progress": 1.0})
>>> [(s.state_key, s.next_state_key) for s in traj.steps], traj.success, traj.task_id
([('k0', 'k1'), ('k1', 'k2')], True, 'seed-1')
>>> [s.progress for s in traj.steps], traj.final_observation
([0.5, 0.5], 'grid2')
"""

from __future__ import annotations

import warnings
from collections import deque
from typing import Any, SupportsFloat

from agentenvs.wrappers.rewards import EXECUTED_KEY

from agentenvs.core import Step, Trajectory, episode_success

__all__ = ["EpisodeRecorder", "GroupOutbox"]


class GroupOutbox:
    """Credited groups kept for ``pop_groups()``, at most ``capacity`` of them.

    Every group is also handed out in ``info["credit"]``; a loop that only reads ``info`` never calls
    ``pop_groups()``, so the outbox drops its oldest group when full (with one warning) instead of
    growing without bound.
    """

    def __init__(self, capacity: int = 256) -> None:
        self._groups: deque[list[Trajectory]] = deque(maxlen=capacity)
        self._warned = False

    def put(self, group: list[Trajectory]) -> None:
        if len(self._groups) == self._groups.maxlen and not self._warned:
            warnings.warn(
                f"{self._groups.maxlen} credited groups were never taken with pop_groups(); dropping "
                "the oldest (each was delivered in info['credit'])",
                stacklevel=3,
            )
            self._warned = True
        self._groups.append(group)

    def pop_all(self) -> list[list[Trajectory]]:
        """The groups put since the last call, oldest first; empties the outbox."""
        groups = list(self._groups)
        self._groups.clear()
        return groups


class EpisodeRecorder:
    """Turns one episode's Gymnasium stream into a :class:`Trajectory`.

    A step records the observation *before* the action, the action (the very object passed to
    ``step``: no copy, no conversion), reward, terminated, truncated, ``state_key`` (the previous
    info's), ``next_state_key`` (this info's), ``action_valid`` and ``action_key`` (where the env
    describes the action itself); an env's ``info["action_executed"] = False`` (a well-formed action
    that did not take effect) becomes ``Step.extras["action_executed"] = False``. Success is
    ``info["won"]`` at
    the last step (``terminated`` when the env gives no ``won``). ``info["cost"]``, where the env
    reports one, becomes ``Step.cost`` (otherwise the field's default); where the env reports
    ``info["progress"]`` (at the reset and each step), ``Step.progress`` is its change over the
    step. The observation after the last step becomes ``Trajectory.final_observation``. The info
    keys read are :attr:`INFO_KEYS`.
    """

    #: The ``info`` entries the recorder reads (a vector wrapper extracts these per sub-env).
    INFO_KEYS = (
        "task_id",
        "state_key",
        "won",
        "action_valid",
        "action_executed",
        "action_key",
        "cost",
        "progress",
    )

    def __init__(self) -> None:
        self.task_id: str | None = None
        self.steps: list[Step] = []
        self._obs: Any = None
        self._state_key: Any = None
        self._progress: float | None = None
        self.active = False

    def begin(self, observation: Any, info: dict[str, Any]) -> None:
        """Start an episode from a reset's ``(observation, info)``; drops any unfinished one."""
        self.task_id = info.get("task_id")
        self.steps = []
        self._obs = observation
        self._state_key = info.get("state_key")
        self._progress = _progress(info)
        self.active = True

    def record(
        self,
        action: Any,
        observation: Any,
        reward: SupportsFloat,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> Trajectory | None:
        """Record one transition; return the trajectory (group id unset) when the episode ended."""
        if not self.active:
            raise RuntimeError("record() before begin(): reset the environment first")
        next_key = info.get("state_key")
        progress = _progress(info)
        gain = None if progress is None or self._progress is None else progress - self._progress
        self.steps.append(
            Step(
                observation=self._obs,
                action=action,
                reward=float(reward),
                terminated=bool(terminated),
                truncated=bool(truncated),
                state_key=self._state_key,
                next_state_key=next_key,
                action_valid=bool(info.get("action_valid", True)),
                action_key=info.get("action_key"),
                cost=float(info.get("cost", 1.0)),
                progress=gain,
                extras={} if info.get(EXECUTED_KEY, True) else {EXECUTED_KEY: False},
            )
        )
        self._obs, self._state_key, self._progress = observation, next_key, progress
        if not (terminated or truncated):
            return None
        self.active = False
        won = episode_success(info, terminated)
        return Trajectory(
            task_id=str(self.task_id),
            group_id="",
            steps=self.steps,
            success=won,
            final_observation=observation,
        )


def _progress(info: dict[str, Any]) -> float | None:
    """``info["progress"]`` as a float, or ``None`` when the env reports none."""
    value = info.get("progress")
    return None if value is None else float(value)
