"""Which tasks the learner plays: a resumable task cursor and an easy Sokoban panel.

This module holds :class:`TaskCursor` (a deterministic, epoch-wise shuffled walk over task ids
whose whole state is one integer) and :func:`easy_sokoban_tasks` (rooms whose shortest solution
is at most ``max_solution_steps`` moves, found with the env's own solver).

>>> cursor = TaskCursor(["a", "b", "c"], seed=0)
>>> first = cursor.take(2); second = cursor.take(2)
>>> sorted(first + second[:1]) == ["a", "b", "c"], cursor.position
(True, 4)
>>> TaskCursor(["a", "b", "c"], seed=0, position=2).take(2) == second
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["TaskCursor", "easy_sokoban_tasks"]


class TaskCursor:
    """Walk ``task_ids`` in a fresh seeded permutation per epoch; ``position`` counts ids taken.

    Args:
        task_ids: the ids to cycle over (any non-empty sequence).
        seed: permutation seed; epoch ``e`` uses ``default_rng([seed, e])``.
        position: ids already taken (to resume).
    """

    def __init__(self, task_ids: Sequence[str], seed: int = 0, position: int = 0) -> None:
        if len(task_ids) == 0:
            raise ValueError("the task cursor needs at least one task id")
        self.task_ids, self.seed, self.position = task_ids, int(seed), int(position)

    def _order(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, epoch]).permutation(len(self.task_ids))

    def take(self, n: int) -> list[str]:
        """The next ``n`` task ids (crossing epochs as needed)."""
        out = []
        size = len(self.task_ids)
        for k in range(self.position, self.position + n):
            out.append(str(self.task_ids[int(self._order(k // size)[k % size])]))
        self.position += n
        return out


def easy_sokoban_tasks(
    split: str = "train", count: int = 64, max_solution_steps: int = 2, **env_kwargs
) -> list[str]:
    """The first ``count`` task ids of ``split`` whose rooms are solved in ``<= max_solution_steps``.

    ``env_kwargs`` are the generator options of :class:`~agentenvs.sokoban.env.SokobanEnv`
    (``dim_room``, ``num_boxes``, ``search_depth``). Deterministic; ~2 ms per room scanned.

    >>> easy_sokoban_tasks("train", count=3, max_solution_steps=2)
    ['seed-1', 'seed-3', 'seed-4']
    """
    from agentenvs.sokoban.env import SokobanEnv, room_for_task
    from agentenvs.sokoban.solver import solve

    ids = SokobanEnv(**env_kwargs).tasks.ids(split)
    generator = {
        k: env_kwargs[k] for k in ("dim_room", "num_boxes", "search_depth") if k in env_kwargs
    }
    if "dim_room" in generator:
        generator["dim_room"] = tuple(generator["dim_room"])
    out: list[str] = []
    for task_id in ids:
        room = room_for_task(task_id, **generator)
        if solve(room.fixed, room.state, max_depth=max_solution_steps) is not None:
            out.append(task_id)
            if len(out) == count:
                break
    return out
