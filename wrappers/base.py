"""Credit wrappers for a single Gymnasium env: repeat a task for a group, credit the group.

This module holds :class:`CreditWrapper` and its named forms :class:`OutcomeCreditWrapper` (GRPO),
:class:`GiGPOCreditWrapper`, :class:`GraphCreditWrapper` (GraphGPO) and
:class:`RolloutTreeCreditWrapper` (RTMC).

The wrapper plays ``group_size`` consecutive episodes of one task: the first reset of a group picks
a task as the env does, resets 2..group_size pass ``options={"task_id": <that task>}``. It records
every step; when the group's last episode ends it runs the estimator and puts the credited
trajectories (each ``Step.advantage`` set) into ``info["credit"]`` of that final step, and keeps them
for :meth:`CreditWrapper.pop_groups`.

>>> import gymnasium as gym, agentenvs
>>> env = GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0", action_format="plain"), group_size=2)
>>> obs, info = env.reset(seed=0)
>>> credited = []
>>> while not credited:
...     obs, reward, terminated, truncated, info = env.step("up")
...     if terminated or truncated:
...         credited = info.get("credit", [])
...         obs, info = env.reset()
>>> len(credited), credited[0].task_id == credited[1].task_id, credited[0].steps[0].advantage
(2, True, 0.0)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentenvs.core import Trajectory
from wrappers.recorder import EpisodeRecorder, GroupOutbox
from wrappers.registry import assign_advantages, get_method

__all__ = [
    "CreditWrapper",
    "OutcomeCreditWrapper",
    "GiGPOCreditWrapper",
    "GraphCreditWrapper",
    "RolloutTreeCreditWrapper",
]


class CreditWrapper(gym.Wrapper):
    """Group episodes of one task and hand out per-step advantages at the group's end.

    Args:
        env: an env whose ``reset`` accepts ``options={"task_id": ...}`` and whose ``info`` carries
            ``task_id``, ``state_key``, ``won`` and ``action_valid`` (every agentenvs env does).
        group_size: episodes per group (M), >= 1.
        config: the method's config (default config when ``None``).
        method: a key of :data:`wrappers.METHODS`; the named subclasses fix it.

    Resetting in the middle of an episode abandons that episode (it is not part of any group); once
    a group has a finished episode, every reset replays its task. An explicit
    ``options["task_id"]`` that contradicts the group's task raises ``ValueError``.
    """

    method = "grpo"

    def __init__(
        self, env: gym.Env, group_size: int = 8, config: Any = None, method: str | None = None
    ) -> None:
        super().__init__(env)
        if group_size < 1:
            raise ValueError(f"group_size must be >= 1, got {group_size}")
        self.method = method or type(self).method
        _, self.config = get_method(self.method, config)
        self.group_size = group_size
        self._recorder = EpisodeRecorder()
        self._group: list[Trajectory] = []
        self._group_task: str | None = None
        self._groups_started = 0
        self._outbox = GroupOutbox()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        if self._group:
            asked = options.get("task_id")
            if asked is not None and asked != self._group_task:
                raise ValueError(
                    f"task_id {asked!r} conflicts with the group's task {self._group_task!r}; "
                    f"the group needs {self.group_size - len(self._group)} more episodes"
                )
            options["task_id"] = self._group_task
        obs, info = self.env.reset(seed=seed, options=options or None)
        task = info.get("task_id")
        if task is None:
            raise ValueError(
                "the env must report info['task_id'] (and accept options={'task_id': ...}) "
                "so that a group replays one task"
            )
        if not self._group:
            self._group_task = task
            self._groups_started += 1
        elif task != self._group_task:
            raise RuntimeError(
                f"the env ignored options['task_id']={self._group_task!r} and played {task!r}"
            )
        self._recorder.begin(obs, info)
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        traj = self._recorder.record(action, obs, reward, terminated, truncated, info)
        if traj is not None:
            traj.group_id = f"{self._group_task}#{self._groups_started}"
            traj.traj_id = str(len(self._group))
            self._group.append(traj)
            if len(self._group) == self.group_size:
                group, self._group = self._group, []
                assign_advantages([group], self.method, self.config)
                self._outbox.put(group)
                info = {**info, "credit": group}
        return obs, reward, terminated, truncated, info

    def pop_groups(self) -> list[list[Trajectory]]:
        """The credited groups finished since the last call (oldest first); clears the list."""
        return self._outbox.pop_all()


class OutcomeCreditWrapper(CreditWrapper):
    """GRPO: every step gets its trajectory's group-normalised outcome (:mod:`wrappers.grpo`)."""

    method = "grpo"


class GiGPOCreditWrapper(CreditWrapper):
    """GiGPO: episode advantage plus anchor-state step advantage (:mod:`wrappers.gigpo`)."""

    method = "gigpo"


class GraphCreditWrapper(CreditWrapper):
    """GraphGPO: episode advantage plus graph distance-to-success advantage (:mod:`wrappers.graphgpo`)."""

    method = "graph"


class RolloutTreeCreditWrapper(CreditWrapper):
    """RTMC: first-visit rollout-tree Monte Carlo advantages (:mod:`wrappers.rtmc`)."""

    method = "rtmc"
