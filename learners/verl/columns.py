"""The per-step columns a verl batch carries for our credit methods, and their rows as trajectories.

One row of verl's ``DataProto`` is one *step* (one turn: a prompt and the response that acted).
The estimators read these ``non_tensor_batch`` columns (one value per row; verl-agent's name,
accepted too, in the second column; the third says what stands in when neither is given):

====================  ===================  =========================  ==================================
key                   verl-agent           when absent                meaning
====================  ===================  =========================  ==================================
``uid``               ``uid``              required                   group id (same task, same start)
``traj_uid``          ``traj_uid``         required                   trajectory id inside its group
``step_index``        (none)               row order in the traj      the step's position (int)
``state_key``         ``anchor_obs``       missing                    ``info["state_key"]`` before
``next_state_key``    (none)               next row's ``state_key``;  ``info["state_key"]`` after
                                           last row: missing
``won``               ``won``              missing                    ``info["won"]`` (last row counts)
``action_valid``      ``is_action_valid``  missing                    ``info["action_valid"]``
``action_key``        (none)               ``action_key=(text)``;     what the action did (RTMC's
                                           else the text itself       action signature)
``cost``              (none)               1.0                        ``info["cost"]``
``progress``          (none)               missing                    change of ``info["progress"]``
``observation``       (none)               missing                    observation the step acted on
``action``            (none)               ``responses`` decoded      the response text (the action
                                           (``tokenizer=``)           sent to the env)
``next_observation``  (none)               missing                    observation after the step
====================  ===================  =========================  ==================================

"Row order in the traj", "next row": the rows of one ``(uid, traj_uid)`` as :func:`step_uids`
sees them (verl-agent's rollout gathers them trajectory by trajectory, in step order: call
:func:`attach_step_uids` on that batch, before verl-agent's ``adjust_batch`` or verl's
``balance_batch`` reorder or copy rows; each :class:`StepUid` then carries its derived step index
and next state through any reordering). The last row of a trajectory has no next row: the state
after the episode's last step is not in verl-agent's batch (its rollout keeps only active steps).
The response text: verl-agent's rollout sends ``tokenizer.batch_decode(responses,
skip_special_tokens=True)`` to its envs and keeps only the token ids, so :func:`attach_step_uids`
decodes ``responses`` under ``response_mask`` the same way when given ``tokenizer=``. An agentenvs
env reports ``info["action_key"]``, the parsed command of a valid action: pass its parser as
``action_key=`` (e.g. ``lambda text: parse_action(text).command``, from
:mod:`agentenvs.core.parsing`) to match it; invalid rows get no key (every invalid action shares
one signature, as in our wrappers).

Besides ``cost`` (1.0: the unit cost, and no agentenvs env reports another), a *missing* value is
never replaced by a default: each method's registry entry declares the step facts it reads
(``CreditMethod.reads``, ``success_sink``), and :func:`trajectories_of` (given ``method=``) raises a ``ValueError`` that names the columns a method
needs and the batch lacks (``next_state_key``: on a trajectory's last row, except where GraphGPO
ties a won trajectory's last step to its success sink and reads no next state). :func:`step_columns`
gives every column, so batches of our recorded steps always pass (:func:`info_columns` gives the
env's; a rollout loop adds ``uid``, ``traj_uid``, and the texts where SPA, TRIAGE or HISR run).

verl's own ``compute_advantage`` hands an estimator ``token_level_rewards``, ``response_mask``,
``config`` and ``index`` (the ``uid`` column) only, so the columns travel inside ``uid``:
:func:`attach_step_uids` (call it on the batch before ``compute_advantage``) replaces each uid by a
:class:`StepUid`, a ``str`` equal to the group id (verl groups and logs it as before) that carries
the row's other columns. :func:`step_columns` is the glue from our side: the columns of recorded
:class:`~agentenvs.core.Trajectory` objects (which hold each step's ``info["state_key"]``), one
row per step; :func:`info_columns` builds one row's columns from the env's ``info`` dicts.

Nothing here imports verl or torch (``responses`` and ``response_mask`` are used through their
tensor methods). This module holds: :data:`KEYS`, :class:`StepUid`,
:func:`step_columns`, :func:`info_columns`, :func:`response_texts`, :func:`step_uids`,
:func:`attach_step_uids`, :func:`trajectories_of`.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from agentenvs.wrappers.batch import action_signature, factorise
from agentenvs.wrappers.registry import get_method

from agentenvs.core import Step, Trajectory

__all__ = [
    "KEYS",
    "StepUid",
    "step_columns",
    "info_columns",
    "response_texts",
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

_STEP_FIELDS = tuple(f.name for f in dataclasses.fields(Step))
_FAST_STEP = not hasattr(Step, "__post_init__") and set(_STEP_FIELDS) == {
    "observation",
    "action",
    "reward",
    "terminated",
    "truncated",
    "state_key",
    "next_state_key",
    "action_valid",
    "action_key",
    "advantage",
    "extras",
    "cost",
    "progress",
}


class StepUid(str):
    """A verl ``uid``: equal (and hashing equal) to the group id, carrying one row's columns as
    attributes (``traj_uid``, ``step_index``, ``state_key``, ... as in :data:`KEYS`; a column the
    row lacks is no attribute).

    >>> u = StepUid("g1", traj_uid="t", step_index=0)
    >>> u == "g1", u.traj_uid, hasattr(u, "state_key")
    (True, 't', False)
    """

    def __new__(cls, uid: str, **columns: Any) -> StepUid:
        self = super().__new__(cls, uid)
        self.__dict__.update(columns)
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (Ray) with its columns
        return (_rebuild_uid, (str(self), self.__dict__))


def _rebuild_uid(uid: str, columns: dict[str, Any]) -> StepUid:
    return StepUid(uid, **columns)


def _step_uid(uid: str, columns: dict[str, Any]) -> StepUid:
    """A :class:`StepUid` owning ``columns`` as its attribute dict (no copy: the fast path)."""
    self = str.__new__(StepUid, uid)
    self.__dict__ = columns
    return self


@contextmanager
def _no_gc() -> Iterator[None]:
    """Cyclic garbage collection paused: building one object per row makes none to collect, and
    its passes over the growing heap would cost more than the building."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
    ``next_observation``) where TRIAGE, HISR or SPA run.

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


def response_texts(responses: Any, response_mask: Any, tokenizer: Any) -> list[str]:
    """Each row's response text: its token ids where ``response_mask`` is set, decoded by
    ``tokenizer.batch_decode(..., skip_special_tokens=True)`` (how verl-agent's rollout decodes
    the text it sends to its envs).

    Args:
        responses: int tensor ``(batch, response_length)`` (verl's ``batch["responses"]``).
        response_mask: ``(batch, response_length)``, nonzero on the response's tokens.
        tokenizer: a Hugging Face tokenizer (anything with ``batch_decode``).
    """
    ids = [row[keep != 0].tolist() for row, keep in zip(responses, response_mask, strict=True)]
    return list(tokenizer.batch_decode(ids, skip_special_tokens=True))


def _column(batch: Mapping[str, Any], key: str, n: int) -> np.ndarray | None:
    for name in (key, KEYS[key]):
        if name is not None and name in batch:
            values = np.asarray(batch[name], dtype=object)
            if len(values) != n:
                raise ValueError(f"non_tensor_batch[{name!r}] has {len(values)} rows, not {n}")
            return values
    return None


def _in_step_order(traj: np.ndarray, position: np.ndarray | None) -> np.ndarray:
    """Row indices by trajectory code, then ``position`` (row order where ``None``), then row."""
    rows = np.arange(len(traj))
    if position is None:
        return np.argsort(traj, kind="stable")
    return np.lexsort((rows, position, traj))


def _last_in_trajectory(traj_sorted: np.ndarray) -> np.ndarray:
    """bool ``(n,)`` over sorted rows: the row is its trajectory's last."""
    return (
        np.r_[traj_sorted[1:] != traj_sorted[:-1], True] if len(traj_sorted) else np.zeros(0, bool)
    )


def step_uids(
    non_tensor_batch: Mapping[str, Any],
    *,
    actions: Sequence[str] | None = None,
    action_key: Callable[[str], Hashable] | None = None,
) -> np.ndarray:
    """The ``uid`` column as :class:`StepUid` objects (object array ``(batch,)``) carrying the
    other columns of ``non_tensor_batch`` (keys of :data:`KEYS`, or verl-agent's names) and the
    ones derived from the row order (module docstring): ``step_index`` and ``next_state_key``.

    Args:
        non_tensor_batch: the batch's columns, one value per row.
        actions: the response text of each row (:func:`response_texts`), used as ``action`` when
            there is no such column.
        action_key: ``text -> key``, applied to each valid row's ``action`` where there is no
            ``action_key`` column (an env's parser; invalid rows get none).

    Raises:
        KeyError: no ``uid`` or ``traj_uid`` column.
        ValueError: a column (or ``actions``) of the wrong length.
    """
    if "uid" not in non_tensor_batch or "traj_uid" not in non_tensor_batch:
        raise KeyError("non_tensor_batch needs 'uid' (group id) and 'traj_uid' columns")
    uid = [str(u) for u in np.asarray(non_tensor_batch["uid"], dtype=object).tolist()]
    n = len(uid)
    columns = {k: v for k in _FIELDS if (v := _column(non_tensor_batch, k, n)) is not None}
    traj, _ = factorise(list(zip(uid, columns["traj_uid"].tolist(), strict=True)))
    position = columns.get("step_index")
    order = _in_step_order(traj, None if position is None else position.astype(np.int64))
    last = np.empty(n, bool)
    last[order] = _last_in_trajectory(traj[order])
    if position is None:
        starts = np.flatnonzero(np.r_[True, last[order][:-1]]) if n else np.zeros(0, np.int64)
        rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
        columns["step_index"] = np.empty(n, object)
        columns["step_index"][order] = rank.tolist()
    derived_next = "next_state_key" not in columns and "state_key" in columns
    if derived_next:
        nxt = np.empty(n, object)
        nxt[order[:-1]] = columns["state_key"][order[1:]]  # last rows: dropped below
        columns["next_state_key"] = nxt
    if "action" not in columns and actions is not None:
        if len(actions) != n:
            raise ValueError(f"actions has {len(actions)} rows, not {n}")
        columns["action"] = _objects(actions)
    if "action_key" not in columns and action_key is not None and "action" in columns:
        valid = columns.get("action_valid", np.ones(n, object)).tolist()
        texts = columns["action"].tolist()
        keys = [action_key(a) if v else None for a, v in zip(texts, valid, strict=True)]
        columns["action_key"] = _objects(keys)
    names = list(columns)
    values = [columns[k].tolist() for k in names]
    with _no_gc():
        rows = [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
        if derived_next:
            for i in np.flatnonzero(last).tolist():
                del rows[i]["next_state_key"]
        return _objects(list(map(_step_uid, uid, rows)))


def attach_step_uids(
    data: Any, tokenizer: Any = None, action_key: Callable[[str], Hashable] | None = None
) -> Any:
    """Replace ``data.non_tensor_batch["uid"]`` of a verl ``DataProto`` by :func:`step_uids`
    (in place; returns ``data``), so verl's own ``compute_advantage`` reaches the columns.

    Args:
        data: the batch, rows of one trajectory in step order unless it has ``step_index``.
        tokenizer: where the batch has no ``action`` column, decode each row's
            ``batch["responses"]`` under ``batch["response_mask"]`` (or the response part of
            ``attention_mask``) into its action text (:func:`response_texts`).
        action_key: ``text -> key`` for rows without an ``action_key`` (:func:`step_uids`).
    """
    nt = data.non_tensor_batch
    actions = None
    if tokenizer is not None and "action" not in nt:
        responses = data.batch["responses"]
        if "response_mask" in data.batch.keys():
            mask = data.batch["response_mask"]
        else:
            mask = data.batch["attention_mask"][:, -responses.shape[-1] :]
        actions = response_texts(responses, mask, tokenizer)
    nt["uid"] = step_uids(nt, actions=actions, action_key=action_key)
    return data


def _missing(method: str, dicts: list[dict], last: np.ndarray, won: np.ndarray) -> list[str]:
    """The columns of ``method``'s ``reads`` (its registry entry) some row lacks (``last``/``won``: per row, the
    row ends its trajectory / its trajectory is won)."""
    entry = get_method(method)[0]
    out = []
    for key in entry.reads or ():
        if key == "action_key":
            lacking = [d for d in dicts if "action_key" not in d and "action" not in d]
        elif key == "next_state_key":  # other rows: the next row's state_key
            ends = last & ~won if entry.success_sink else last
            lacking = [i for i in np.flatnonzero(ends).tolist() if key not in dicts[i]]
        else:
            lacking = [d for d in dicts if key not in d]
        if lacking:
            out.append(key)
    return out


_HOW = {
    "next_state_key": "a trajectory's last row has no next row to take it from: give the column "
    "(in verl-agent's rollout loop, each step's next_obs['anchor'])",
    "action_key": "give an 'action_key' or 'action' column, or decode the responses: "
    "attach_step_uids(data, tokenizer=...)",
    "won": "give each row's info['won'] (verl-agent's rollout keeps only a batch success rate)",
}


def _new_step(values: dict[str, Any]) -> Step:
    if not _FAST_STEP:
        return Step(**values)
    step = object.__new__(Step)
    step.__dict__ = values
    return step


def trajectories_of(
    uids: Sequence[Any] | np.ndarray, rewards: np.ndarray, *, method: str | None = None
) -> tuple[list[Trajectory], list]:
    """Our trajectories of the rows of ``uids`` (:class:`StepUid` objects; grouped by uid, in
    step-index order) with ``rewards`` (one per row), and per trajectory its group's index and its
    rows' positions in step order.

    A row without ``next_state_key`` gets the next row's ``state_key`` (``None`` on the last);
    absent columns otherwise read ``None`` (``cost`` 1.0, ``action_valid`` true, ``won`` false).

    Args:
        method: the registry name of the method the trajectories are for: the facts it reads are
            checked; ``None``: no check.

    Raises:
        ValueError: a column ``method`` reads is missing from some row (the message names it),
            or two rows are the same step (same uid, ``traj_uid`` and ``step_index``).
    """
    n = len(uids)
    dicts = [u.__dict__ for u in uids]
    keys = [str(u) for u in uids]
    group, _ = factorise(keys)
    traj, _ = factorise(list(zip(keys, [d["traj_uid"] for d in dicts], strict=True)))
    position = np.fromiter((d.get("step_index", i) for i, d in enumerate(dicts)), np.int64, n)
    order = _in_step_order(traj, position)
    t_sorted, p_sorted = traj[order], position[order]
    same = (t_sorted[1:] == t_sorted[:-1]) & (p_sorted[1:] == p_sorted[:-1])
    if same.any():
        k = int(np.flatnonzero(same)[0])
        raise ValueError(
            f"rows {int(order[k])} and {int(order[k + 1])} are the same step (uid, traj_uid, "
            "step_index): copied rows (verl-agent's adjust_batch mode 'copy') are not supported"
        )
    last_sorted = _last_in_trajectory(t_sorted)
    starts = np.flatnonzero(np.r_[True, last_sorted[:-1]]) if n else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], n] if n else starts
    if method is not None and get_method(method)[0].reads is not None:
        last = np.empty(n, bool)
        last[order] = last_sorted
        won_traj = np.array([bool(dicts[order[e - 1]].get("won", False)) for e in ends], bool)
        won = np.empty(n, bool)
        won[order] = np.repeat(won_traj, ends - starts)
        missing = _missing(method, dicts, last, won)
        if missing:
            how = "".join(f"; {k}: {_HOW[k]}" for k in missing if k in _HOW)
            raise ValueError(
                f"{method} reads the column(s) {missing}, which rows of this batch lack (see "
                f"agentenvs.learners.verl.columns for what is derived how){how}"
            )
    with _no_gc():
        return _trajectories(dicts, keys, group, order, starts, ends, rewards)


def _trajectories(
    dicts: list[dict[str, Any]],
    keys: list[str],
    group: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    rewards: np.ndarray,
) -> tuple[list[Trajectory], list]:
    """:func:`trajectories_of`'s objects: trajectory ``k`` is rows ``order[starts[k]:ends[k]]``."""
    reward = np.asarray(rewards, np.float64).tolist()
    trajectories, rows = [], []
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        members = order[lo:hi].tolist()
        steps = []
        for k, i in enumerate(members):
            get = dicts[i].get
            nxt = get("next_state_key", _NO_NEXT)
            if nxt is _NO_NEXT:
                nxt = dicts[members[k + 1]].get("state_key") if k + 1 < len(members) else None
            progress = get("progress")
            steps.append(
                _new_step(
                    {
                        "observation": get("observation"),
                        "action": get("action"),
                        "reward": reward[i],
                        "terminated": False,
                        "truncated": False,
                        "state_key": get("state_key"),
                        "next_state_key": nxt,
                        "action_valid": bool(get("action_valid", True)),
                        "action_key": get("action_key"),
                        "advantage": None,
                        "extras": {},
                        "cost": float(get("cost", 1.0)),
                        "progress": None if progress is None else float(progress),
                    }
                )
            )
        last_row = dicts[members[-1]]
        name = keys[members[-1]]
        trajectories.append(
            Trajectory(
                task_id=name,
                group_id=name,
                steps=steps,
                success=bool(last_row.get("won", False)),
                traj_id=str(last_row["traj_uid"]),
                final_observation=last_row.get("next_observation"),
            )
        )
        rows.append((int(group[members[0]]), members))
    return trajectories, rows


_NO_NEXT = object()  # no next_state_key: the next row's state key is used
