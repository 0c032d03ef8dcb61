"""Flat-array step batches: the form every credit estimator computes on.

This module holds:

* :class:`StepBatch` - a batch of trajectories as flat numpy arrays (integer codes for groups,
  states and actions; float64 rewards and step costs), built once from
  :class:`~agentenvs.core.Trajectory` objects by :meth:`StepBatch.from_trajectories` or directly
  from arrays (benchmarks, learners).
* :func:`hashable_key` - turn a state key (text, bytes, numpy array, list, dict) into a hashable value.
* :func:`action_signature`, :func:`default_signature`, :func:`state_signature` - what identifies an
  action / a step.

Codes are dense integers, numbered in order of first occurrence (states before next states). A
``None`` state key means "unknown": it gets a fresh code per occurrence, so it never matches
another state. How the batch is built fast (one pass over the steps, keys factorised in bulk) is
described in docs/credit.md, section 2. Actions are matched by the env's ``Step.action_key``
(:func:`action_signature`); nothing here parses an LLM answer.

>>> from agentenvs.core import Step, Trajectory
>>> t = Trajectory("t", "g", [Step("o", "up", 0.0, state_key="A", next_state_key="B"),
...                           Step("o", "up", 10.0, state_key="B", next_state_key="C")], success=True)
>>> b = StepBatch.from_trajectories([t, t])
>>> b.n_steps, b.n_trajectories, b.n_groups, b.state.tolist(), b.next_state.tolist()
(4, 2, 1, [0, 1, 0, 1], [1, 2, 1, 2])
>>> b.cost.tolist()
[1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from itertools import count
from typing import Any

import numpy as np
from agentenvs.wrappers.stats import dense_rank

from agentenvs.core import Step, Trajectory

__all__ = [
    "StepBatch",
    "Signature",
    "COLUMNS",
    "INVALID_ACTION",
    "action_signature",
    "action_signatures",
    "default_signature",
    "state_signature",
    "hashable_key",
    "factorise",
]

#: ``signature(steps, t) -> (state_signature, action_signature)`` for step ``t`` of one trajectory.
Signature = Callable[[Sequence[Step], int], tuple[Hashable, Hashable]]

#: The optional columns of :meth:`StepBatch.from_trajectories` (rewards, validity, lengths, groups
#: and success are always read).
COLUMNS = ("state", "next_state", "action", "cost")


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


def _action_signature(action: Any, valid: bool) -> Hashable:
    if not valid:
        return INVALID_ACTION
    return action.strip() if isinstance(action, str) else hashable_key(action)


def action_signature(step: Step) -> Hashable:
    """What an action *did*, for matching: the env's ``Step.action_key`` (``info["action_key"]``:
    every agentenvs text env reports the parsed command, so an LLM answer's reasoning does not
    count), :data:`INVALID_ACTION` for any invalid action, else the action itself (text stripped,
    other values made hashable). Wrappers never parse answers: that is the env's contract.

    >>> action_signature(Step("o", "<think>box is left</think><action>left</action>", -0.1,
    ...                       action_key="left"))
    'left'
    >>> action_signature(Step("o", "I'd go left", -0.1, action_valid=False))
    '<invalid>'
    >>> action_signature(Step("o", " up ", 0.0)), action_signature(Step("o", 2, 0.0))
    ('up', 2)
    """
    if step.action_key is not None:
        return step.action_key
    return _action_signature(step.action, step.action_valid)


def default_signature(steps: Sequence[Step], t: int) -> tuple[Hashable, Hashable]:
    """``(steps[t].state_key, action_signature(steps[t]))``: the env's state key and the action."""
    return steps[t].state_key, action_signature(steps[t])


def state_signature(steps: Sequence[Step], t: int) -> tuple[Hashable, Hashable]:
    """``(steps[t].state_key, 0)``: for estimators that never look at actions (cheaper to build)."""
    return steps[t].state_key, 0


# -- bulk helpers ------------------------------------------------------------------------------------
def factorise(keys: Sequence[Any]) -> tuple[np.ndarray, Sequence[Any]]:
    """Dense codes of ``keys`` in order of first occurrence, and the key of each code.

    Equal keys (by hash and ``==``, after :func:`hashable_key` for unhashable ones) share a code;
    every ``None`` gets a fresh code. One dict pass over the keys, the rest in numpy.

    >>> codes, uniq = factorise(["b", "a", "b", None, None])
    >>> codes.tolist(), uniq
    ([0, 1, 0, 2, 3], ['b', 'a', None, None])
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64), []
    table: dict[Hashable, int] = {}
    try:  # raw code = position of the key's first occurrence
        raw = np.fromiter(map(table.setdefault, keys, count()), np.int64, n)
    except TypeError:  # an unhashable key (numpy array, list, dict): hash a stand-in for each
        table = {}
        raw = np.fromiter(map(table.setdefault, map(hashable_key, keys), count()), np.int64, n)
    if None in table:
        unknown = raw == table[None]
        raw[unknown] = np.flatnonzero(unknown)
    codes, first = dense_rank(raw)
    return codes, _Keys(first, keys)


class _Keys(Sequence[Any]):
    """The key of each code: ``positions[code]`` indexes ``keys`` (built lazily, on access)."""

    def __init__(self, positions: np.ndarray, keys: Sequence[Any], more: Sequence[Any] = ()):
        self._positions, self._keys, self._more = positions, keys, more

    def __len__(self) -> int:
        return len(self._positions)

    def __getitem__(self, code: Any) -> Any:
        if isinstance(code, slice):
            return [self[i] for i in range(*code.indices(len(self)))]
        i = int(self._positions[code])
        n = len(self._keys)
        return self._keys[i] if i < n else self._more[i - n]

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))


def _factorise_pair(
    states: list[Any], next_states: list[Any]
) -> tuple[np.ndarray, np.ndarray, Sequence[Any]]:
    """Codes of ``states`` and ``next_states`` in one code space, and the key of each code.

    A step's next state is usually the very object the next step records as its state (the
    episode recorder stores one key per observation), so an identity check settles most next
    states and only the others are looked up.
    """
    n = len(states)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    table: dict[Hashable, int] = {}
    try:
        raw = np.fromiter(map(table.setdefault, states, count()), np.int64, n)
        unknown_state = np.zeros(n, bool)
        if None in table:
            unknown_state = raw == table[None]
            raw[unknown_state] = np.flatnonzero(unknown_state)
        same = np.fromiter(map(operator.is_, next_states, states[1:] + [_NO_KEY]), bool, n)
        same[:-1] &= ~unknown_state[1:]  # an unknown state never matches
        next_raw = np.empty(n, np.int64)
        next_raw[same] = raw[1:][same[:-1]]
        others = np.flatnonzero(~same)
        rest = [next_states[i] for i in others.tolist()]
        had_none = None in table
        next_raw[others] = np.fromiter(
            map(table.setdefault, rest, (n + others).tolist()), np.int64, len(rest)
        )
    except TypeError:  # unhashable keys: hash a stand-in for each
        codes, keys = factorise(list(states) + list(next_states))
        return codes[:n], codes[n:], keys
    if had_none or None in table:
        unknown = np.fromiter((k is None for k in rest), bool, len(rest))
        next_raw[others[unknown]] = n + others[unknown]
    codes, first = dense_rank(np.concatenate([raw, next_raw]))
    return codes[:n], codes[n:], _Keys(first, states, next_states)


class _NoKey:
    """The position after a batch's last state: no next state is this object."""


_NO_KEY = _NoKey()


def _with_env_keys(env_keys: list[Any], derived: Callable[[], list[Hashable]]) -> list[Hashable]:
    """The env's action keys where given (``Step.action_key``), the ``derived`` ones elsewhere
    (computed only when some step has no env key)."""
    missing = env_keys.count(None)
    if missing == 0:
        return env_keys
    keys = derived()
    if missing == len(env_keys):
        return keys
    return [k if e is None else e for e, k in zip(env_keys, keys, strict=True)]


def action_signatures(actions: Sequence[Any], valid: Sequence[bool] | np.ndarray) -> list[Hashable]:
    """The signature of each action that has no env key: :data:`INVALID_ACTION` where invalid,
    else the action itself (text stripped, other values made hashable).

    >>> action_signatures([" up ", 3, "<action>a"], [1, 1, 0])
    ['up', 3, '<invalid>']
    """
    return [_action_signature(a, bool(v)) for a, v in zip(actions, valid, strict=True)]


#: The ``Step`` fields :func:`_scan` may read.
_STEP_FIELDS = (
    "reward",
    "action_valid",
    "state_key",
    "next_state_key",
    "action",
    "action_key",
    "cost",
)


@cache
def _scanner(fields: tuple[str, ...]) -> Callable[[Sequence[Trajectory]], list[list[Any]]]:
    """A loop that appends ``step.<field>`` of every step to one list per field.

    Generated per field tuple so that each value costs one attribute load and one append: no
    per-step call, no per-step container (so no garbage collection is triggered), and no access to
    the instance ``__dict__`` (which would make CPython build a dict for every step).
    """
    if not set(fields) <= set(_STEP_FIELDS):
        raise ValueError(f"unknown Step fields {sorted(set(fields) - set(_STEP_FIELDS))}")
    k = range(len(fields))
    lines = ["def scan(trajectories):"]
    lines += [f"    c{i} = []; a{i} = c{i}.append" for i in k]
    lines += ["    for t in trajectories:", "        for s in t.steps:"]
    lines += [f"            a{i}(s.{f})" for i, f in zip(k, fields, strict=True)]
    lines += [f"    return [{', '.join(f'c{i}' for i in k)}]"]
    namespace: dict[str, Any] = {}
    exec("\n".join(lines), namespace)  # noqa: S102 - fixed field names only
    return namespace["scan"]


def _scan(trajectories: Sequence[Trajectory], fields: tuple[str, ...]) -> list[list[Any]]:
    """One list per ``Step`` field, the values of all steps in order, in one pass over the steps."""
    return _scanner(fields)(trajectories)


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
        cost: float64 ``(n,)``; ``Step.cost``, the step's positive cost (GraphGPO's ``c(s, a)``);
            ``None`` at construction means unit costs. Must be finite and > 0.
        state_keys: the key of each state code, when built from trajectories (needed only for
            similarity matching); ``None`` for batches built from arrays.
        trajectories: the trajectories the batch was built from (in batch order), for estimators
            that read more than the codes (a judge reads the texts, a progress estimator the
            observations); ``None`` for batches built from arrays.
    """

    offsets: np.ndarray
    traj_group: np.ndarray
    success: np.ndarray
    reward: np.ndarray
    valid: np.ndarray
    state: np.ndarray
    next_state: np.ndarray
    action: np.ndarray
    cost: np.ndarray | None = None
    state_keys: Sequence[Any] | None = field(default=None, compare=False, repr=False)
    trajectories: Sequence[Trajectory] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        m, n = len(self.traj_group), len(self.reward)
        if self.offsets.shape != (m + 1,) or self.offsets[0] != 0 or self.offsets[-1] != n:
            raise ValueError(f"offsets must have shape ({m + 1},), start at 0 and end at {n}")
        if np.any(np.diff(self.offsets) < 0):
            raise ValueError("offsets must be non-decreasing")
        if len(self.success) != m:
            raise ValueError(f"success must have length {m} (one flag per trajectory)")
        cost = np.ones(n, np.float64) if self.cost is None else self.cost
        object.__setattr__(self, "cost", cost)
        for name in ("valid", "state", "next_state", "action", "cost"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} must have length {n} (one entry per step)")
        if not np.all(np.isfinite(self.reward)):
            raise ValueError("rewards must be finite (got NaN or inf)")
        if not np.all(np.isfinite(cost) & (cost > 0)):
            bad = cost[~(np.isfinite(cost) & (cost > 0))][0]
            raise ValueError(f"step costs must be finite and > 0 (got {bad})")
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
        cost: Sequence[float] | np.ndarray | None = None,
    ) -> StepBatch:
        """Build from per-trajectory ``lengths`` and flat per-step arrays of integer codes.

        ``traj_group`` may hold any non-negative integers (re-coded densely). ``next_state``
        defaults to fresh unique codes, ``action`` to zeros, ``valid`` to all true and ``cost`` to
        ones.

        Raises:
            ValueError: inconsistent lengths, non-finite rewards, or a cost that is not finite and
                positive.
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
            cost=None if cost is None else np.asarray(cost, dtype=np.float64),
        )

    @classmethod
    def from_trajectories(
        cls,
        trajectories: Sequence[Trajectory],
        signature: Signature | None = None,
        groups: Sequence[int] | None = None,
        columns: Collection[str] = COLUMNS,
    ) -> StepBatch:
        """Factorise ``trajectories`` into a batch.

        Args:
            trajectories: any mix of groups; a group is all trajectories with one ``group_id``.
            signature: ``(steps, t) -> (state_signature, action_signature)``; default
                :func:`default_signature` (``Step.state_key`` and :func:`action_signature`).
                ``next_state`` always comes from ``Step.next_state_key``, in the same code space.
                :func:`default_signature` and :func:`state_signature` are computed in bulk; any
                other function is called once per step.
            groups: explicit group index per trajectory, overriding ``group_id``.
            columns: which of :data:`COLUMNS` to read (an estimator that does not use a column
                skips its cost). Columns left out are filled as "unknown": every step gets its own
                ``state`` / ``next_state`` code, ``action`` codes are 0 and costs are 1.

        Raises:
            ValueError: a non-finite reward, a cost that is not finite and > 0, or ``groups`` of
                the wrong length.
        """
        trajectories = list(trajectories)
        unknown = set(columns) - set(COLUMNS)
        if unknown:
            raise ValueError(f"columns must be among {COLUMNS}, got {sorted(unknown)}")
        sig = signature or default_signature
        bulk = sig is default_signature or sig is state_signature
        want_state = "state" in columns
        want_next = "next_state" in columns
        want_action = "action" in columns and sig is not state_signature
        want_cost = "cost" in columns
        fields = ["reward", "action_valid"]
        if want_state and bulk:
            fields.append("state_key")
        if want_next:
            fields.append("next_state_key")
        if want_action and bulk:
            fields += ["action", "action_key"]
        if want_cost:
            fields.append("cost")
        values = dict(zip(fields, _scan(trajectories, tuple(fields)), strict=True))
        lengths = np.fromiter(map(len, [t.steps for t in trajectories]), np.int64)
        n = int(lengths.sum())
        reward = np.array(values["reward"], np.float64).reshape(n)
        valid_list = values["action_valid"]
        valid = np.array(valid_list, bool).reshape(n)

        state_keys: Sequence[Any] | None = None
        action_keys: list[Any] | None = None
        if bulk:
            s_keys = values.get("state_key")
            if want_action:
                action_keys = _with_env_keys(
                    values["action_key"], lambda: action_signatures(values["action"], valid)
                )
        else:
            s_keys, a_list = [], []
            for traj in trajectories:
                steps = traj.steps
                for t in range(len(steps)):
                    s_key, a_key = sig(steps, t)
                    s_keys.append(s_key)
                    a_list.append(a_key)
            s_keys = s_keys if want_state else None
            action_keys = a_list if want_action else None
        fresh = np.arange(n, dtype=np.int64)
        if s_keys is not None and want_next:
            state, next_state, state_keys = _factorise_pair(s_keys, values["next_state_key"])
        elif s_keys is not None:
            state, state_keys = factorise(s_keys)
            next_state = fresh + len(state_keys)
        elif want_next:
            next_state, _ = factorise(values["next_state_key"])
            state = fresh + (int(next_state.max()) + 1 if n else 0)
        else:
            state, next_state = fresh, fresh + n
        action = factorise(action_keys)[0] if action_keys is not None else np.zeros(n, np.int64)
        cost = None
        if want_cost and values["cost"].count(1.0) != n:
            cost = np.array(values["cost"], np.float64).reshape(n)

        if groups is None:
            traj_group, _ = factorise([t.group_id for t in trajectories])
        else:
            if len(groups) != len(trajectories):
                raise ValueError("groups must give one group index per trajectory")
            traj_group, _ = factorise([int(g) for g in groups])
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(
            offsets=offsets,
            traj_group=traj_group,
            success=np.array([bool(t.success) for t in trajectories], bool).reshape(-1),
            reward=reward,
            valid=valid,
            state=state,
            next_state=next_state,
            action=action,
            cost=cost,
            state_keys=state_keys,
            trajectories=trajectories,
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
    def unit_cost(self) -> bool:
        """Every step costs exactly 1 (GraphGPO then uses its breadth-first search)."""
        return bool(np.all(self.cost == 1.0))

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
        values = np.array(values, dtype=np.float64)  # a copy: the pieces do not alias the input
        bounds = self.offsets.tolist()
        return [values[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
