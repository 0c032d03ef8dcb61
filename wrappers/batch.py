"""Flat-array step batches: the form every credit estimator computes on.

This module holds:

* :class:`StepBatch` - a batch of trajectories as flat numpy arrays (integer codes for groups,
  states and actions; float64 rewards), built once from :class:`~agentenvs.core.Trajectory`
  objects by :meth:`StepBatch.from_trajectories` or directly from arrays (benchmarks, learners).
* :func:`hashable_key` - turn a state key (text, bytes, numpy array, list, dict) into a hashable value.
* :func:`action_signature`, :func:`default_signature`, :func:`state_signature` - what identifies an
  action / a step.
* :func:`estimate_trajectories` - the shared ``estimate`` driver: build a batch, run a flat-array
  estimator, split the result back per trajectory.

Codes are dense integers. A ``None`` state key means "unknown": it gets a fresh code per occurrence,
so it never matches another state.

>>> from agentenvs.core import Step, Trajectory, parse_action
>>> t = Trajectory("t", "g", [Step("o", "up", 0.0, state_key="A", next_state_key="B"),
...                           Step("o", "up", 10.0, state_key="B", next_state_key="C")], success=True)
>>> b = StepBatch.from_trajectories([t, t])
>>> b.n_steps, b.n_trajectories, b.n_groups, b.state.tolist(), b.next_state.tolist()
(4, 2, 1, [0, 1, 0, 1], [1, 2, 1, 2])
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from agentenvs.core import Step, Trajectory, parse_action

__all__ = [
    "StepBatch",
    "Signature",
    "INVALID_ACTION",
    "action_signature",
    "default_signature",
    "state_signature",
    "hashable_key",
    "estimate_trajectories",
]

#: ``signature(steps, t) -> (state_signature, action_signature)`` for step ``t`` of one trajectory.
Signature = Callable[[Sequence[Step], int], tuple[Hashable, Hashable]]


def hashable_key(key: Any) -> Hashable:
    """A hashable, value-equal stand-in for ``key``.

    numpy arrays become ``(dtype, shape, bytes)``; lists/tuples become tuples; dicts become sorted
    item tuples; sets become frozensets; anything already hashable is returned as is.

    >>> hashable_key([1, {"b": 2, "a": [3]}])
    (1, (('a', (3,)), ('b', 2)))
    >>> hashable_key(np.zeros(2, np.uint8)) == hashable_key(np.zeros(2, np.uint8))
    True
    """
    if isinstance(key, np.ndarray):
        return ("__ndarray__", key.dtype.str, key.shape, np.ascontiguousarray(key).tobytes())
    if isinstance(key, (list, tuple)):
        return tuple(hashable_key(k) for k in key)
    if isinstance(key, dict):
        return tuple(sorted((hashable_key(k), hashable_key(v)) for k, v in key.items()))
    if isinstance(key, (set, frozenset)):
        return frozenset(hashable_key(k) for k in key)
    return key


#: The action signature of every invalid action.
INVALID_ACTION = "<invalid>"


def action_signature(step: Step) -> Hashable:
    """What an action *did*, for matching: the command of a tagged LLM answer (its reasoning does not
    count), the stripped text of a plain one, :data:`INVALID_ACTION` for any invalid action, and the
    action itself (made hashable) when it is not text.

    >>> action_signature(Step("o", "<think>box is left</think><action>left</action>", -0.1))
    'left'
    >>> action_signature(Step("o", "I'd go left", -0.1, action_valid=False))
    '<invalid>'
    """
    if not step.action_valid:
        return INVALID_ACTION
    if isinstance(step.action, str):
        parsed = parse_action(step.action, require_think=False)
        return parsed.command if parsed.valid else step.action.strip()
    return hashable_key(step.action)


def default_signature(steps: Sequence[Step], t: int) -> tuple[Hashable, Hashable]:
    """``(steps[t].state_key, action_signature(steps[t]))``: the env's state key and the action."""
    return steps[t].state_key, action_signature(steps[t])


def state_signature(steps: Sequence[Step], t: int) -> tuple[Hashable, Hashable]:
    """``(steps[t].state_key, 0)``: for estimators that never look at actions (cheaper to build)."""
    return steps[t].state_key, 0


class _Codebook:
    """Dense integer codes for hashable keys; ``None`` gets a fresh code each time."""

    def __init__(self) -> None:
        self.codes: dict[Hashable, int] = {}
        self.keys: list[Any] = []

    def __call__(self, key: Any) -> int:
        if key is None:
            self.keys.append(None)
            return len(self.keys) - 1
        try:  # hashable keys (text, numbers, tuples of those) need no conversion
            hk, code = key, self.codes.get(key)
        except TypeError:
            hk = hashable_key(key)
            code = self.codes.get(hk)
        if code is None:
            code = self.codes[hk] = len(self.keys)
            self.keys.append(key)
        return code


@dataclass(frozen=True)
class StepBatch:
    """Trajectories as flat arrays. ``n`` = number of steps, ``m`` = number of trajectories.

    Attributes:
        offsets: int64 ``(m + 1,)``; the steps of trajectory ``i`` are ``offsets[i]:offsets[i+1]``.
        traj_group: int64 ``(m,)``; dense group code (``0..n_groups-1``) of each trajectory.
        success: bool ``(m,)``; the env's ``won`` flag per trajectory.
        reward: float64 ``(n,)``; env reward per step (env units, invalid-action penalty included).
        valid: bool ``(n,)``; ``Step.action_valid``.
        state: int64 ``(n,)``; code of the state (signature) each step was taken in.
        next_state: int64 ``(n,)``; code of the state each step led to (same code space as ``state``).
        action: int64 ``(n,)``; code of the action (signature).
        state_keys: the key of each state code, when built from trajectories (needed only for
            similarity matching); ``None`` for batches built from arrays.
    """

    offsets: np.ndarray
    traj_group: np.ndarray
    success: np.ndarray
    reward: np.ndarray
    valid: np.ndarray
    state: np.ndarray
    next_state: np.ndarray
    action: np.ndarray
    state_keys: Sequence[Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        m, n = len(self.traj_group), len(self.reward)
        if self.offsets.shape != (m + 1,) or self.offsets[0] != 0 or self.offsets[-1] != n:
            raise ValueError(f"offsets must have shape ({m + 1},), start at 0 and end at {n}")
        if np.any(np.diff(self.offsets) < 0):
            raise ValueError("offsets must be non-decreasing")
        if len(self.success) != m:
            raise ValueError(f"success must have length {m} (one flag per trajectory)")
        for name in ("valid", "state", "next_state", "action"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} must have length {n} (one entry per step)")
        if not np.all(np.isfinite(self.reward)):
            raise ValueError("rewards must be finite (got NaN or inf)")
        if m and self.traj_group.min() < 0:
            raise ValueError("group codes must be >= 0")

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        lengths: Sequence[int] | np.ndarray,
        traj_group: Sequence[int] | np.ndarray,
        success: Sequence[bool] | np.ndarray,
        reward: Sequence[float] | np.ndarray,
        state: Sequence[int] | np.ndarray,
        next_state: Sequence[int] | np.ndarray | None = None,
        action: Sequence[int] | np.ndarray | None = None,
        valid: Sequence[bool] | np.ndarray | None = None,
    ) -> StepBatch:
        """Build from per-trajectory ``lengths`` and flat per-step arrays of integer codes.

        ``traj_group`` may hold any non-negative integers (re-coded densely). ``next_state``
        defaults to fresh unique codes, ``action`` to zeros and ``valid`` to all true.
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        n = int(offsets[-1])
        state = np.asarray(state, dtype=np.int64)
        if next_state is None:
            next_state = state.max(initial=-1) + 1 + np.arange(n, dtype=np.int64)
        _, groups = np.unique(np.asarray(traj_group, dtype=np.int64), return_inverse=True)
        return cls(
            offsets=offsets,
            traj_group=groups.astype(np.int64).reshape(-1),
            success=np.asarray(success, dtype=bool),
            reward=np.asarray(reward, dtype=np.float64),
            valid=np.ones(n, bool) if valid is None else np.asarray(valid, dtype=bool),
            state=state,
            next_state=np.asarray(next_state, dtype=np.int64),
            action=np.zeros(n, np.int64) if action is None else np.asarray(action, dtype=np.int64),
        )

    @classmethod
    def from_trajectories(
        cls,
        trajectories: Sequence[Trajectory],
        signature: Signature | None = None,
        groups: Sequence[int] | None = None,
    ) -> StepBatch:
        """Factorise ``trajectories`` into a batch.

        Args:
            trajectories: any mix of groups; a group is all trajectories with one ``group_id``.
            signature: ``(steps, t) -> (state_signature, action_signature)``; default
                ``(steps[t].state_key, steps[t].action)``. ``next_state`` always comes from
                ``Step.next_state_key`` (in the same code space when the default is used).
            groups: explicit group index per trajectory, overriding ``group_id``.
        """
        sig = signature or default_signature
        states, actions, group_codes = _Codebook(), _Codebook(), _Codebook()
        lengths = [len(t.steps) for t in trajectories]
        n = sum(lengths)
        state = np.empty(n, np.int64)
        next_state = np.empty(n, np.int64)
        action = np.empty(n, np.int64)
        reward = np.empty(n, np.float64)
        valid = np.empty(n, bool)
        i = 0
        for traj in trajectories:
            steps = traj.steps
            for t, step in enumerate(steps):
                s_key, a_key = sig(steps, t)
                state[i] = states(s_key)
                next_state[i] = states(step.next_state_key)
                action[i] = actions(a_key)
                reward[i] = step.reward
                valid[i] = bool(step.action_valid)
                i += 1
        if groups is None:
            traj_group = [group_codes(t.group_id) for t in trajectories]
        else:
            if len(groups) != len(trajectories):
                raise ValueError("groups must give one group index per trajectory")
            traj_group = [group_codes(int(g)) for g in groups]
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(
            offsets=offsets,
            traj_group=np.asarray(traj_group, np.int64).reshape(-1),
            success=np.asarray([bool(t.success) for t in trajectories], bool).reshape(-1),
            reward=reward,
            valid=valid,
            state=state,
            next_state=next_state,
            action=action,
            state_keys=states.keys,
        )

    # -- derived arrays ----------------------------------------------------------------------------
    @property
    def n_steps(self) -> int:
        return len(self.reward)

    @property
    def n_trajectories(self) -> int:
        return len(self.traj_group)

    @property
    def n_groups(self) -> int:
        return int(self.traj_group.max()) + 1 if self.n_trajectories else 0

    @cached_property
    def lengths(self) -> np.ndarray:
        """int64 ``(m,)``: steps per trajectory."""
        return np.diff(self.offsets)

    @cached_property
    def step_traj(self) -> np.ndarray:
        """int64 ``(n,)``: trajectory index of each step."""
        return np.repeat(np.arange(self.n_trajectories, dtype=np.int64), self.lengths)

    @cached_property
    def step_group(self) -> np.ndarray:
        """int64 ``(n,)``: group code of each step."""
        return np.repeat(self.traj_group, self.lengths)

    @cached_property
    def is_last(self) -> np.ndarray:
        """bool ``(n,)``: the step is its trajectory's last."""
        last = np.zeros(self.n_steps, bool)
        ends = self.offsets[1:][self.lengths > 0] - 1
        last[ends] = True
        return last

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """Cut a per-step array into one float64 array per trajectory."""
        values = np.asarray(values, dtype=np.float64)
        return [
            values[a:b].copy() for a, b in zip(self.offsets[:-1], self.offsets[1:], strict=True)
        ]


def estimate_trajectories(
    trajectories: Sequence[Trajectory],
    estimate_batch: Callable[[StepBatch, Any], np.ndarray],
    config: Any,
    signature: Signature = state_signature,
) -> list[np.ndarray]:
    """Run a flat-array estimator on trajectories; one float64 array of advantages per trajectory."""
    trajectories = list(trajectories)
    if not trajectories:
        return []
    batch = StepBatch.from_trajectories(trajectories, signature=signature)
    return batch.split(estimate_batch(batch, config))
