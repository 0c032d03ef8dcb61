"""The per-step columns a verl batch carries for our credit methods, and their rows as trajectories.

One row of verl's ``DataProto`` is one *step* (one turn: a prompt and the response that acted).
The estimators read these ``non_tensor_batch`` columns (one value per row; verl-agent's name in
brackets, accepted too):

====================  ====================  ==================================================
key                   verl-agent            meaning
====================  ====================  ==================================================
``uid``               ``uid``               group id (same task, same initial state); required
``traj_uid``          ``traj_uid``          trajectory id inside its group; required
``step_index``        (row order)           position of the step in its trajectory (int)
``state_key``         ``anchor_obs``        ``info["state_key"]`` before the step
``next_state_key``    (next row's state)    ``info["state_key"]`` after the step
``won``               ``won``               ``info["won"]`` (the trajectory's last row counts)
``action_valid``      ``is_action_valid``   ``info["action_valid"]``
``action_key``        (none)                what the action did (RTMC's action signature)
``cost``              (none)                ``info["cost"]``, default 1.0
``progress``          (none)                ``info["progress"]`` after the step minus before
``observation``       (none)                the observation text the step acted on
``action``            (none)                the response text (the action sent to the env)
``next_observation``  (none)                the observation after the step
====================  ====================  ==================================================

The last four are the step's privileged progress and texts (the last row's ``next_observation``
is the trajectory's final observation): TRIAGE (its judge reads the actions and observations,
the oracle judge ``progress``) and HISR (its segments end where ``progress`` > 0; its models read
the texts) need them; the other methods read none of them.

verl's own ``compute_advantage`` hands an estimator ``token_level_rewards``, ``response_mask``,
``config`` and ``index`` (the ``uid`` column) only, so the columns travel inside ``uid``:
:func:`attach_step_uids` (call it on the batch before ``compute_advantage``) replaces each uid by a
:class:`StepUid`, a ``str`` equal to the group id (verl groups and logs it as before) that carries
the row's other columns. :func:`step_columns` is the glue from our side: the columns of recorded
:class:`~agentenvs.core.Trajectory` objects (which hold each step's ``info["state_key"]``), one
row per step; :func:`info_columns` builds one row's columns from the env's ``info`` dicts.

Nothing here imports verl. This module holds: :data:`KEYS`, :class:`StepUid`,
:func:`step_columns`, :func:`info_columns`, :func:`step_uids`, :func:`attach_step_uids`,
:func:`trajectories_of`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from agentenvs.wrappers.batch import action_signature, factorise

from agentenvs.core import Step, Trajectory

__all__ = [
    "KEYS",
    "StepUid",
    "step_columns",
    "info_columns",
    "step_uids",
    "attach_step_uids",
    "trajectories_of",
]

#: Our ``non_tensor_batch`` key -> verl-agent's name for it (read when ours is absent).
KEYS: Mapping[str, str | None] = {
    "uid": "uid",
    "traj_uid": "traj_uid",
    "step_index": None,
    "state_key": "anchor_obs",
    "next_state_key": None,
    "won": "won",
    "action_valid": "is_action_valid",
    "action_key": None,
    "cost": None,
    "progress": None,
    "observation": None,
    "action": None,
    "next_observation": None,
}
_FIELDS = tuple(k for k in KEYS if k != "uid")
_NO_NEXT = object()  # next_state_key not given: the next row's state key is used


class StepUid(str):
    """A verl ``uid``: equal (and hashing equal) to the group id, carrying one row's columns as
    attributes (``traj_uid``, ``step_index``, ``state_key``, ... as in :data:`KEYS`)."""

    def __new__(cls, uid: str, **columns: Any) -> StepUid:
        self = super().__new__(cls, uid)
        self.__dict__.update(columns)
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (Ray) with its columns
        return (_rebuild_uid, (str(self), self.__dict__))


def _rebuild_uid(uid: str, columns: dict[str, Any]) -> StepUid:
    return StepUid(uid, **columns)


def _objects(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def step_columns(trajectories: Sequence[Trajectory]) -> dict[str, np.ndarray]:
    """The ``non_tensor_batch`` columns of ``trajectories``, one row per step in order
    (trajectory by trajectory): ``uid`` = ``group_id``, ``traj_uid`` = ``traj_id`` (or the
    trajectory's position when empty), and the step's recorded keys (:data:`KEYS`)."""
    rows: dict[str, list[Any]] = {k: [] for k in KEYS}
    for i, traj in enumerate(trajectories):
        for t, step in enumerate(traj.steps):
            last = t == len(traj.steps) - 1
            after = traj.final_observation if last else traj.steps[t + 1].observation
            values = {
                "uid": str(traj.group_id),
                "traj_uid": traj.traj_id or str(i),
                "step_index": t,
                "state_key": step.state_key,
                "next_state_key": step.next_state_key,
                "won": bool(traj.success) and last,
                "action_valid": bool(step.action_valid),
                "action_key": action_signature(step),
                "cost": float(step.cost),
                "progress": step.progress,
                "observation": step.observation,
                "action": step.action,
                "next_observation": after,
            }
            for k, v in values.items():
                rows[k].append(v)
    return {k: _objects(v) for k, v in rows.items()}


def info_columns(info: Mapping[str, Any], next_info: Mapping[str, Any]) -> dict[str, Any]:
    """One row's env columns from the ``info`` of the reset/step before the action and the
    ``info`` the step returned: ``state_key``, ``next_state_key``, ``won``, ``action_valid``,
    ``action_key`` (``None`` when the env gives none), ``cost`` and ``progress`` (the change of
    ``info["progress"]``, ``None`` unless both infos hold it); add ``uid``, ``traj_uid`` and
    ``step_index`` from the rollout loop, and the texts (``observation``, ``action``,
    ``next_observation``) where TRIAGE or HISR run.

    >>> info_columns({"state_key": "A"}, {"state_key": "B", "won": True})
    {'state_key': 'A', 'next_state_key': 'B', 'won': True, 'action_valid': True, 'action_key': None, 'cost': 1.0, 'progress': None}
    >>> info_columns({"progress": 0.25}, {"progress": 0.75})["progress"]
    0.5
    """
    before, after = info.get("progress"), next_info.get("progress")
    return {
        "state_key": info.get("state_key"),
        "next_state_key": next_info.get("state_key"),
        "won": bool(next_info.get("won", False)),
        "action_valid": bool(next_info.get("action_valid", True)),
        "action_key": next_info.get("action_key"),
        "cost": float(next_info.get("cost", 1.0)),
        "progress": None if before is None or after is None else float(after) - float(before),
    }


def _column(batch: Mapping[str, np.ndarray], key: str, n: int) -> np.ndarray | None:
    for name in (key, KEYS[key]):
        if name is not None and name in batch:
            values = np.asarray(batch[name], dtype=object)
            if len(values) != n:
                raise ValueError(f"non_tensor_batch[{name!r}] has {len(values)} rows, not {n}")
            return values
    return None


def step_uids(non_tensor_batch: Mapping[str, np.ndarray]) -> np.ndarray:
    """The ``uid`` column as :class:`StepUid` objects carrying the other columns of
    ``non_tensor_batch`` (keys of :data:`KEYS`, or verl-agent's names).

    Raises:
        KeyError: no ``uid`` or ``traj_uid`` column.
    """
    if "uid" not in non_tensor_batch or "traj_uid" not in non_tensor_batch:
        raise KeyError("non_tensor_batch needs 'uid' (group id) and 'traj_uid' columns")
    uid = np.asarray(non_tensor_batch["uid"], dtype=object)
    n = len(uid)
    columns = {k: _column(non_tensor_batch, k, n) for k in _FIELDS}
    rows = []
    for i in range(n):
        values = {k: v[i] for k, v in columns.items() if v is not None}
        rows.append(StepUid(str(uid[i]), **values))
    return _objects(rows)


def attach_step_uids(data: Any) -> Any:
    """Replace ``data.non_tensor_batch["uid"]`` of a verl ``DataProto`` by :func:`step_uids`
    (in place; returns ``data``), so verl's own ``compute_advantage`` reaches the columns."""
    data.non_tensor_batch["uid"] = step_uids(data.non_tensor_batch)
    return data


def trajectories_of(
    uids: Sequence[Any] | np.ndarray, rewards: np.ndarray
) -> tuple[list[Trajectory], list]:
    """Our trajectories of the rows of ``uids`` (:class:`StepUid` objects; grouped by uid, in
    step-index order) with ``rewards`` (one per row), and per trajectory its group's index and its
    rows' positions in step order."""
    n = len(uids)
    group, _ = factorise([str(u) for u in uids])
    traj, _ = factorise([(str(u), u.__dict__["traj_uid"]) for u in uids])
    position = np.array([u.__dict__.get("step_index", i) for i, u in enumerate(uids)], np.int64)
    order = np.lexsort((np.arange(n), position, traj))  # by traj, step, row
    starts = np.flatnonzero(np.r_[True, np.diff(traj[order]) != 0])
    trajectories, rows = [], []
    for lo, hi in zip(starts, np.r_[starts[1:], n], strict=True):
        members = order[lo:hi].tolist()
        steps = []
        for k, i in enumerate(members):
            u = uids[i].__dict__
            nxt = u.get("next_state_key", _NO_NEXT)
            if nxt is _NO_NEXT:
                nxt = (
                    uids[members[k + 1]].__dict__.get("state_key") if k + 1 < len(members) else None
                )
            progress = u.get("progress")
            steps.append(
                Step(
                    u.get("observation"),
                    u.get("action"),
                    float(rewards[i]),
                    state_key=u.get("state_key"),
                    next_state_key=nxt,
                    action_valid=bool(u.get("action_valid", True)),
                    action_key=u.get("action_key"),
                    cost=float(u.get("cost", 1.0)),
                    progress=None if progress is None else float(progress),
                )
            )
        last = uids[members[-1]]
        trajectories.append(
            Trajectory(
                task_id=str(last),
                group_id=str(last),
                steps=steps,
                success=bool(last.__dict__.get("won", False)),
                traj_id=str(last.__dict__["traj_uid"]),
                final_observation=last.__dict__.get("next_observation"),
            )
        )
        rows.append((int(group[members[0]]), members))
    return trajectories, rows
