"""Credit assignment over a grouped vector env (blocks of sub-envs that share a task sequence).

This module holds :class:`VectorCreditWrapper`. Over a :class:`agentenvs.GroupedVectorEnv` it
records every sub-env's episodes; group ``k`` of block ``b`` is the k-th episode of each member of
block ``b`` (the members play the same task). When all ``group_size`` members have finished their
k-th episode the group is credited and emitted in ``infos["credit"]`` (a list of groups, each a list
of :class:`~agentenvs.core.Trajectory` in member order) of that step, and kept for
:meth:`VectorCreditWrapper.pop_groups`. Gymnasium's ``NEXT_STEP`` autoreset is handled: the step after
a sub-env's episode ended is its reset, not a transition.

>>> import agentenvs
>>> envs = VectorCreditWrapper(agentenvs.make_group_vec_env(
...     "agentenvs/Sokoban-v0", num_groups=2, group_size=2, action_format="plain"), "graph")
>>> obs, infos = envs.reset(seed=0)
>>> groups = []
>>> while len(groups) < 2:
...     obs, rewards, terms, truncs, infos = envs.step(["up"] * 4)
...     groups += infos.get("credit", [])
>>> [len(g) for g in groups], all(len(t.steps) == 15 for g in groups for t in g)
([2, 2], True)
>>> envs.close()
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import gymnasium as gym
import numpy as np

from agentenvs.core import Trajectory
from wrappers.recorder import EpisodeRecorder, GroupOutbox
from wrappers.registry import assign_advantages, get_method

__all__ = ["VectorCreditWrapper"]

_INFO_KEYS = ("task_id", "state_key", "won", "action_valid")


def _sub_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """The entries of sub-env ``i`` in a vector ``infos`` dict (only the keys credit needs)."""
    out = {}
    for key in _INFO_KEYS:
        if key in infos and infos.get(f"_{key}", np.ones(i + 1, bool))[i]:
            out[key] = infos[key][i]
    return out


class VectorCreditWrapper(gym.vector.VectorWrapper):
    """Credit groups formed by the blocks of a grouped vector env.

    Args:
        env: a :class:`agentenvs.GroupedVectorEnv` (anything with ``group_size`` and Gymnasium's
            ``NEXT_STEP`` autoreset), e.g. from :func:`agentenvs.make_group_vec_env`.
        method: a key of :data:`wrappers.METHODS` (``"grpo"``, ``"gigpo"``, ``"graph"``, ``"rtmc"``).
        config: the method's config (default when ``None``).

    ``reset`` restarts every sub-env and drops unfinished groups.
    """

    def __init__(
        self, env: gym.vector.VectorEnv, method: str = "graph", config: Any = None
    ) -> None:
        super().__init__(env)
        group_size = getattr(env, "group_size", None)
        if not isinstance(group_size, int) or group_size < 1:
            raise ValueError(
                "VectorCreditWrapper needs a GroupedVectorEnv (use agentenvs.make_group_vec_env)"
            )
        mode = env.metadata.get("autoreset_mode")  # absent before gymnasium 1.1: NEXT_STEP only
        if mode is not None and getattr(mode, "value", mode) != "NextStep":
            raise ValueError(
                f"VectorCreditWrapper supports the NEXT_STEP autoreset mode, got {mode}"
            )
        self.method = method
        _, self.config = get_method(method, config)
        self.group_size = group_size
        self._resets = 0
        self._clear()
        self._outbox = GroupOutbox()

    def _clear(self) -> None:
        self._recorders = [EpisodeRecorder() for _ in range(self.num_envs)]
        self._episode = np.zeros(self.num_envs, np.int64)
        self._needs_reset = np.zeros(self.num_envs, bool)
        self._pending: dict[tuple[int, int], dict[int, Trajectory]] = defaultdict(dict)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, infos = self.env.reset(seed=seed, options=options)
        self._resets += 1
        self._clear()
        for i in range(self.num_envs):
            self._recorders[i].begin(obs[i], _sub_info(infos, i))
        return obs, infos

    def step(self, actions: Any):
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        finished: list[list[Trajectory]] = []
        for i in range(self.num_envs):
            info = _sub_info(infos, i)
            if self._needs_reset[i]:
                self._recorders[i].begin(obs[i], info)
                self._needs_reset[i] = False
                continue
            traj = self._recorders[i].record(
                actions[i], obs[i], rewards[i], terms[i], truncs[i], info
            )
            if traj is None:
                continue
            self._needs_reset[i] = True
            group = self._add(i, traj)
            if group is not None:
                finished.append(group)
        if finished:
            infos = {**infos, "credit": finished}
        return obs, rewards, terms, truncs, infos

    def _add(self, i: int, traj: Trajectory) -> list[Trajectory] | None:
        block, k = i // self.group_size, int(self._episode[i])
        self._episode[i] += 1
        members = self._pending[(block, k)]
        members[i] = traj
        if len(members) < self.group_size:
            return None
        del self._pending[(block, k)]
        group = [members[j] for j in sorted(members)]
        tasks = {t.task_id for t in group}
        if len(tasks) != 1:
            raise RuntimeError(
                f"block {block} played different tasks {sorted(tasks)} in episode {k}; "
                "build the env with agentenvs.make_group_vec_env"
            )
        for j, t in enumerate(group):
            t.group_id, t.traj_id = f"{t.task_id}#r{self._resets}b{block}e{k}", str(j)
        assign_advantages([group], self.method, self.config)
        self._outbox.put(group)
        return group

    def pop_groups(self) -> list[list[Trajectory]]:
        """The credited groups finished since the last call (oldest first); clears the list."""
        return self._outbox.pop_all()
