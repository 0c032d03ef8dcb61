"""Credit assignment over a grouped vector env (blocks of sub-envs that share a task sequence).

This module holds :class:`VectorCreditWrapper` and :func:`credited_groups`. Over a
:class:`agentenvs.GroupedVectorEnv` the wrapper records every sub-env's episodes; group ``k`` of
block ``b`` is the k-th episode each member of block ``b`` finishes since the block was last reset
(the members play the same task). When all ``group_size`` members have finished their k-th episode
the group is credited (the groups completed by one ``step`` are credited together, in one batch)
(:mod:`agentenvs.wrappers.grouping`: ids ``f"{task_id}#{serial}"``, ``traj_id`` = the member's index in its
block), handed out in that step's ``infos`` and kept for :meth:`VectorCreditWrapper.pop_groups`.
Gymnasium's ``NEXT_STEP`` autoreset is handled: the step after a sub-env's episode ended is its
reset, not a transition.

``infos`` keeps Gymnasium's per-sub-env layout (each key a batch of ``num_envs`` entries with a
``_key`` mask, as ``VectorEnv._add_info`` builds it), so
``gymnasium.wrappers.vector.DictInfoToList`` works on it: ``infos["credit"][i]``, where
``infos["_credit"][i]`` is true, is the credited group (a list of
:class:`~agentenvs.core.Trajectory` in member order, like a single
:class:`~agentenvs.wrappers.CreditWrapper`'s ``info["credit"]``) that sub-env ``i``'s finished episode
completed. At most one group per block completes on a step; :func:`credited_groups` lists a
step's groups in sub-env order.

Resets:

* ``reset()`` (no mask) restarts every sub-env and drops every unfinished group.
* ``reset(options={"reset_mask": mask, ...})`` (Gymnasium's partial reset; ``mask`` a bool array of
  ``num_envs``, other options such as ``"task_id"`` go to the masked sub-envs) restarts the recorders
  of the masked sub-envs only. Every block with a masked member drops its unfinished groups and
  starts counting its episodes afresh: the episode a member of such a block is playing (unmasked
  members keep recording theirs) or starts next is its episode 0. Blocks without a masked member are
  untouched. Reset whole blocks (or give the masked members their block's task): a group whose
  members played different tasks raises ``RuntimeError``.

Group ids stay unique across resets (the serial is never reset).

Infrastructure failures. A sub-env whose episode ends with ``info["infra_failure"]`` (a remote
worker died and the episode could not be rebuilt, :class:`agentenvs.RayVectorEnv`) did not fail
at the task: its whole group is dropped instead of credited, counted in ``dropped_groups`` and
marked in ``infos["credit_dropped"]`` (true at the sub-env whose episode completed a dropped group,
with its ``_credit_dropped`` mask).

>>> import agentenvs
>>> envs = VectorCreditWrapper(agentenvs.make_group_vec_env(
...     "agentenvs/Sokoban-v0", num_groups=2, group_size=2, action_format="plain"), "graph")
>>> obs, infos = envs.reset(seed=0)
>>> groups = []
>>> while len(groups) < 2:
...     obs, rewards, terms, truncs, infos = envs.step(["up"] * 4)
...     groups += credited_groups(infos)
>>> [len(g) for g in groups], all(len(t.steps) == 15 for g in groups for t in g)
([2, 2], True)
>>> from gymnasium.wrappers.vector import DictInfoToList
>>> listed = DictInfoToList(VectorCreditWrapper(agentenvs.make_group_vec_env(
...     "agentenvs/Sokoban-v0", num_groups=1, group_size=2, action_format="plain")))
>>> _ = listed.reset(seed=0)
>>> infos = [{}]
>>> while not any("credit" in info for info in infos):
...     infos = listed.step(["up"] * 2)[-1]
>>> [len(info.get("credit", [])) for info in infos]  # sub-env 1's episode completed the group
[0, 2]
>>> listed.close()
>>> import numpy as np
>>> obs, infos = envs.reset(options={"reset_mask": np.array([True, True, False, False]),
...                                  "task_id": "seed-7"})
>>> list(infos["task_id"][:2]), infos["_task_id"].tolist()
(['seed-7', 'seed-7'], [True, True, False, False])
>>> envs.close()
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from agentenvs.wrappers.base import refuse_double_credit
from agentenvs.wrappers.grouping import GroupAssembler
from agentenvs.wrappers.recorder import EpisodeRecorder
from agentenvs.wrappers.registry import get_method
from agentenvs.wrappers.state import CreditState

from agentenvs.core import Trajectory, TrajectoryStore
from agentenvs.vector import group_size_of, sub_info, sub_observation

__all__ = ["VectorCreditWrapper", "credited_groups"]


class VectorCreditWrapper(gym.vector.VectorWrapper):
    """Credit groups formed by the blocks of a grouped vector env.

    Args:
        env: a :class:`agentenvs.GroupedVectorEnv` (anything with ``group_size`` and Gymnasium's
            ``NEXT_STEP`` autoreset), e.g. from :func:`agentenvs.make_group_vec_env`.
        method: a name or alias in :data:`agentenvs.wrappers.registry.METHODS` (``"grpo"``, ``"gigpo"``,
            ``"graphgpo"`` alias ``"graph"``, ``"rtmc"``, or one registered by the user); default
            ``"grpo"``, as for :class:`~agentenvs.wrappers.CreditWrapper` (GRPO needs nothing
            from the env but the outcome).
        config: the method's config (default when ``None``).
        store: a :class:`~agentenvs.core.TrajectoryStore` that gets every credited group right
            after it is credited (method: the canonical name; no iteration); ``None``: none. The
            wrapper does not close it.
        state_keys: ``"required"`` or ``"none"``, as for :class:`~agentenvs.wrappers.CreditWrapper`.
        state: the :class:`~agentenvs.wrappers.state.CreditState` to credit with, as for
            :class:`~agentenvs.wrappers.CreditWrapper` (``None``: a fresh one).

    Raises ``ValueError`` when ``env`` already has a credit wrapper, or is not a grouped vector
    env (:func:`~agentenvs.vector.group_size_of` finds no group size).

    Attributes: ``method`` (as given), ``credit_method`` (the registry entry), ``config``,
    ``group_size`` (the grouped vector env's, read-only), ``credit_state`` (in ``repr``). See the
    module docstring for resets and the ``infos`` layout.

    The signature is :class:`~agentenvs.wrappers.CreditWrapper`'s (``env, method, config``, then keyword
    options) without ``group_size``, which the grouped vector env fixes.
    """

    def __init__(
        self,
        env: gym.vector.VectorEnv,
        method: str = "grpo",
        config: Any = None,
        *,
        store: TrajectoryStore | None = None,
        state_keys: str = "required",
        state: CreditState | None = None,
    ) -> None:
        refuse_double_credit(env, type(self).__name__)
        super().__init__(env)
        try:
            group_size = group_size_of(env)
        except ValueError:
            raise ValueError(
                "VectorCreditWrapper needs a GroupedVectorEnv (use agentenvs.make_group_vec_env)"
            ) from None
        mode = env.metadata.get("autoreset_mode")  # absent before gymnasium 1.1: NEXT_STEP only
        if mode is not None and getattr(mode, "value", mode) != "NextStep":
            raise ValueError(
                f"VectorCreditWrapper supports the NEXT_STEP autoreset mode, got {mode}"
            )
        self.credit_method, self.config = get_method(method, config)
        self.method = method
        self._assembler = GroupAssembler(
            group_size,
            self.credit_method,
            self.config,
            store=store,
            state_keys=state_keys,
            state=state,
        )
        self.credit_state = self._assembler.state
        self._recorders = [EpisodeRecorder() for _ in range(self.num_envs)]
        self._episode = np.zeros(self.num_envs, np.int64)  # finished episodes since block reset
        self._needs_reset = np.zeros(self.num_envs, bool)  # NEXT_STEP: the next step is a reset
        self._failed_slots: set[tuple[int, int]] = set()  # open groups an infra failure spoiled
        self.dropped_groups = 0

    @property
    def group_size(self) -> int:
        """Sub-envs per block (kept by the wrapper's group assembler; read-only)."""
        return self._assembler.group_size

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__}, {self.env} method={self.credit_method.name!r} "
            f"group_size={self.group_size} state={self.credit_state!r}>"
        )

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or those of ``options["reset_mask"]`` (see the module docstring)."""
        mask = None if options is None else options.get("reset_mask")
        # the vector env pops "reset_mask" from the dict it gets: give it a copy
        # Gymnasium's sync and async vector envs take a seed per sub-env; the base class says int
        obs, infos = self.env.reset(
            seed=seed,  # type: ignore[arg-type]
            options=None if options is None else dict(options),
        )
        if mask is None:
            mask = np.ones(self.num_envs, bool)
            self._assembler.discard()
            self._failed_slots.clear()
        else:
            mask = np.asarray(mask, bool)
            touched = {i // self.group_size for i in np.flatnonzero(mask)}
            self._assembler.discard(lambda slot: slot[0] in touched)  # type: ignore[index]  # (block, member) slots
            self._failed_slots = {s for s in self._failed_slots if s[0] not in touched}
        for block in {i // self.group_size for i in np.flatnonzero(mask)}:
            self._episode[block * self.group_size : (block + 1) * self.group_size] = 0
        for i in map(int, np.flatnonzero(mask)):
            self._recorders[i].begin(
                sub_observation(obs, i), sub_info(infos, i, EpisodeRecorder.INFO_KEYS)
            )
            self._needs_reset[i] = False
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        obs, rewards, terms, truncs, infos = self.env.step(actions)
        finished: list[list[Trajectory]] = []
        completed_by: list[int] = []  # the sub-env whose episode completed each finished group
        dropped_by: list[int] = []
        for i in range(self.num_envs):
            info = sub_info(infos, i, EpisodeRecorder.INFO_KEYS)
            if self._needs_reset[i]:
                self._recorders[i].begin(sub_observation(obs, i), info)
                self._needs_reset[i] = False
                continue
            traj = self._recorders[i].record(
                actions[i], sub_observation(obs, i), rewards[i], terms[i], truncs[i], info
            )
            if traj is None:
                continue
            self._needs_reset[i] = True
            block, member = divmod(i, self.group_size)
            slot = (block, int(self._episode[i]))
            if "infra_failure" in infos and sub_info(infos, i, ("infra_failure",)).get(
                "infra_failure"
            ):
                self._failed_slots.add(slot)  # lost with its worker: the group is dropped whole
            group = self._assembler.add(slot, member, traj, credit=False)
            self._episode[i] += 1
            if group is None:
                continue
            if slot in self._failed_slots:
                self._failed_slots.discard(slot)
                dropped_by.append(i)
            else:
                finished.append(group)
                completed_by.append(i)
        if finished or dropped_by:
            infos = dict(infos)  # Gymnasium's _add_info fills it in place: not the inner env's
        if finished:
            self._assembler.credit(finished)  # one batch: the groups completed by this step
            for i, group in zip(completed_by, finished, strict=True):
                self._add_info(infos, {"credit": group}, i)
        for i in dropped_by:
            self._add_info(infos, {"credit_dropped": True}, i)
        self.dropped_groups += len(dropped_by)
        return obs, rewards, terms, truncs, infos

    def pop_groups(self) -> list[list[Trajectory]]:
        """The credited groups finished since the last call (oldest first); clears the list."""
        return self._assembler.pop_groups()


def credited_groups(infos: dict[str, Any]) -> list[list[Trajectory]]:
    """The groups a :class:`VectorCreditWrapper` step handed out in ``infos``, in sub-env order.

    >>> import numpy as np
    >>> credited_groups({"credit": np.array([None, ["a", "b"]], object), "_credit": [False, True]})
    [['a', 'b']]
    >>> credited_groups({})
    []
    """
    if "credit" not in infos:
        return []
    return [group for group, has in zip(infos["credit"], infos["_credit"], strict=True) if has]
