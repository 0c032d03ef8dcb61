"""Success rate per ALFWorld task type.

This module holds :func:`success_by_task_type`: from trajectories (``task_id`` and ``success``) or
``(task_id, won)`` pairs, the success rate of each task type named in the task ids (the same
substring rule verl-agent's per-type metrics use) plus ``"all"``.

>>> success_by_task_type([("pick_and_place_simple-Apple-None-Fridge-8/trial_G000001", True),
...                       ("pick_and_place_simple-Mug-None-Desk-301/trial_G000002", False),
...                       ("look_at_obj_in_light-Pen-None-DeskLamp-301/trial_G000003", True)])
{'pick_and_place_simple': 0.5, 'look_at_obj_in_light': 1.0, 'all': 0.6666666666666666}
"""

from __future__ import annotations

from collections.abc import Iterable

from agentenvs.alfworld.constants import TASK_TYPE_NAMES, task_type_of
from agentenvs.core.trajectory import Trajectory

__all__ = ["success_by_task_type"]


def success_by_task_type(results: Iterable[Trajectory | tuple[str, bool]]) -> dict[str, float]:
    """Success rate per task type (types that occur, in ALFWorld's order) and over all (``"all"``).

    Raises ``ValueError`` for a task id that names no ALFWorld task type.
    """
    wins: dict[str, list[bool]] = {}
    for item in results:
        task_id, won = (item.task_id, item.success) if isinstance(item, Trajectory) else item
        task_type = task_type_of(str(task_id))
        if task_type is None:
            raise ValueError(f"task id {task_id!r} names no ALFWorld task type")
        wins.setdefault(task_type, []).append(bool(won))
    out = {t: sum(wins[t]) / len(wins[t]) for t in TASK_TYPE_NAMES if t in wins}
    every = [w for ws in wins.values() for w in ws]
    if every:
        out["all"] = sum(every) / len(every)
    return out
