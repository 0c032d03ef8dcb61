"""Assembling credited groups: the one path shared by the single-env and the vector wrappers.

This module holds :func:`group_id` (the id format), :class:`GroupAssembler`, which collects the
finished member trajectories of open groups, checks that each group plays one task, gives the group
and its members their ids, credits it with the resolved method (:meth:`~agentenvs.wrappers.registry.CreditMethod.assign`), puts the group into the
bounded outbox (:class:`~agentenvs.wrappers.recorder.GroupOutbox`), appends it to the optional
:class:`~agentenvs.core.TrajectoryStore` (method: the canonical name; no iteration) and returns it.

Ids. A group's ``group_id`` is ``f"{task_id}#{serial}"``, where ``serial`` counts the groups an
assembler (so: one wrapper) has credited, from 0, never reset (it survives env resets, so ids stay
unique within a wrapper). A member's ``traj_id`` is its member index within the group: the episode
number (0..group_size-1) for :class:`~agentenvs.wrappers.CreditWrapper`, the sub-env's index within its block
for :class:`~agentenvs.wrappers.VectorCreditWrapper`. Groups come out in completion order, members in member
order.

>>> from agentenvs.core import Step, Trajectory
>>> asm = GroupAssembler(group_size=2, method="grpo")
>>> asm.add("slot", 1, Trajectory("seed-4", "", [Step("o", "up", 0.0)], success=False)) is None
True
>>> group = asm.add("slot", 0, Trajectory("seed-4", "", [Step("o", "up", 10.0)], success=True))
>>> [(t.group_id, t.traj_id, t.success) for t in group], group[0].steps[0].advantage > 0
([('seed-4#0', '0', True), ('seed-4#0', '1', False)], True)
>>> asm.pop_groups() == [group]
True
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable
from typing import Any

from agentenvs.wrappers.recorder import GroupOutbox
from agentenvs.wrappers.registry import STATE_KEY_POLICIES, CreditMethod, get_method
from agentenvs.wrappers.state import CreditState

from agentenvs.core import Trajectory, TrajectoryStore
from agentenvs.vector import check_group_size

__all__ = ["group_id", "GroupAssembler"]


def group_id(task_id: str, serial: int) -> str:
    """The id of a wrapper's ``serial``-th credited group (of task ``task_id``).

    >>> group_id("seed-3", 12)
    'seed-3#12'
    """
    return f"{task_id}#{serial}"


class GroupAssembler:
    """Open groups, keyed by a slot, that are credited and handed out once complete.

    Args:
        group_size: members per group.
        method: a credit method name or alias (:data:`agentenvs.wrappers.registry.METHODS`), or its resolved
            :class:`~agentenvs.wrappers.registry.CreditMethod` (kept: the registry is not consulted again).
        config: the method's config (default when ``None``).
        capacity: the outbox bound (oldest credited groups dropped beyond it).
        store: where every credited group is also appended, right after it is credited (``None``:
            nowhere); the assembler does not close it.
        state_keys: ``"required"`` or ``"none"`` (:func:`~agentenvs.wrappers.registry.assign_advantages`).
        state: the :class:`~agentenvs.wrappers.state.CreditState` the method credits with
            (``None``: a fresh one); bound here to the method and config.

    The assembler is where a wrapper's group size lives (``group_size``; the wrappers read it
    from here, and :func:`agentenvs.vector.group_size_of` reads it from them).

    ``group_size`` must be an int >= 1 (``TypeError`` / ``ValueError`` otherwise); 1 warns, since a
    group of one episode gives every group-relative term 0 (GRPO, GiGPO, GraphGPO and RTMC then
    give all-zero advantages), except for a config that hands out rewards (``advantage="rewards"``:
    SPA and HISR with frozen models for a learner with a critic), which needs no group.

    A *slot* is any hashable naming an open group (the single wrapper has one, the vector wrapper
    one per block and round); a *member* is an index in ``range(group_size)``.
    """

    def __init__(
        self,
        group_size: int,
        method: str | CreditMethod,
        config: Any = None,
        capacity: int = 256,
        store: TrajectoryStore | None = None,
        state_keys: str = "required",
        state: CreditState | None = None,
    ) -> None:
        group_size = check_group_size(group_size)
        if isinstance(method, CreditMethod):
            self.credit_method, self.config = method, method.check_config(config)
        else:
            self.credit_method, self.config = get_method(method, config)
        if group_size == 1 and getattr(self.config, "advantage", None) != "rewards":
            warnings.warn(
                "group_size=1: each group holds one episode, so every group-relative advantage "
                "is 0 (GRPO, GiGPO, GraphGPO, RTMC); use group_size >= 2",
                stacklevel=3,
            )
        if state_keys not in STATE_KEY_POLICIES:
            raise ValueError(f"state_keys must be one of {STATE_KEY_POLICIES}, got {state_keys!r}")
        self.state_keys = state_keys
        self.state = (state if state is not None else CreditState()).bind(
            self.credit_method, self.config
        )
        self.group_size = group_size
        self.serial = 0  # groups credited so far
        self.outbox = GroupOutbox(capacity)
        self.store = store
        self._open: dict[Hashable, dict[int, Trajectory]] = {}

    def add(
        self, slot: Hashable, member: int, trajectory: Trajectory, credit: bool = True
    ) -> list[Trajectory] | None:
        """File ``trajectory`` as ``member`` of the group in ``slot``; return the credited group
        when this completes it (the slot is then free), else ``None``. With ``credit=False`` the
        completed group is returned with its ids set but not yet credited: pass it (with the other
        groups completed at the same time) to :meth:`credit`, so that they form one batch.

        Raises:
            ValueError: ``member`` out of range or already filed in this slot.
            RuntimeError: the completed group's members played different tasks.
        """
        if not 0 <= member < self.group_size:
            raise ValueError(f"member {member} out of range for group_size {self.group_size}")
        members = self._open.setdefault(slot, {})
        if member in members:
            raise ValueError(f"member {member} of group slot {slot!r} was already filed")
        members[member] = trajectory
        if len(members) < self.group_size:
            return None
        del self._open[slot]
        group = [members[j] for j in range(self.group_size)]
        tasks = sorted({str(t.task_id) for t in group})
        if len(tasks) != 1:
            raise RuntimeError(
                f"group slot {slot!r} played different tasks {tasks}; a group must replay one task "
                "(build vector envs with agentenvs.make_group_vec_env, reset whole blocks, and "
                "have the env draw its tasks from task_stream_seed: docs/custom-env.md)"
            )
        gid = group_id(tasks[0], self.serial)
        self.serial += 1
        for j, traj in enumerate(group):
            traj.group_id, traj.traj_id = gid, str(j)
        if credit:
            self.credit([group])
        return group

    def credit(self, groups: list[list[Trajectory]]) -> None:
        """Credit complete ``groups`` in one :meth:`~agentenvs.wrappers.registry.CreditMethod.assign` call
        (one batch: methods that whiten over the batch, such as TRIAGE, see them together) and
        put them into the outbox (and the store)."""
        if not groups:
            return
        self.credit_method.assign(groups, self.config, state_keys=self.state_keys, state=self.state)
        for group in groups:
            self.outbox.put(group)
            if self.store is not None:
                self.store.append(group, method=self.credit_method.name)

    def members(self, slot: Hashable) -> list[Trajectory]:
        """The members filed so far in ``slot``'s open group, in member order."""
        members = self._open.get(slot, {})
        return [members[j] for j in sorted(members)]

    def discard(self, where: Callable[[Hashable], bool] | None = None) -> int:
        """Drop the open groups whose slot satisfies ``where`` (all when ``None``); return how many."""
        slots = [s for s in self._open if where is None or where(s)]
        for slot in slots:
            del self._open[slot]
        return len(slots)

    def pop_groups(self) -> list[list[Trajectory]]:
        """The credited groups since the last call, oldest first; clears the outbox."""
        return self.outbox.pop_all()
