"""Sokoban dynamics and rewards (docs/sokoban.md, *Dynamics and rewards*), on a flat list for speed.

This module holds :class:`SokobanGame`, the mutable game state with gym-sokoban's transition and
reward rules (and its privileged progress, docs/sokoban.md, *Progress*), :func:`target_distances`
(each cell's walking distance to the nearest target) and :data:`CELL_TEXT`, the text cell of each
state code.

>>> import numpy as np
>>> fixed = np.array([[0,0,0,0,0],[0,1,1,1,0],[0,1,1,1,0],[0,1,2,1,0],[0,0,0,0,0]])
>>> state = np.array([[0,0,0,0,0],[0,5,1,1,0],[0,1,4,1,0],[0,1,2,1,0],[0,0,0,0,0]])
>>> game = SokobanGame(fixed, state)
>>> round(game.progress(), 3)   # the box is 1 move from the target, the far corner 3
0.667
>>> game.step(4), game.step(2)   # push right = move right; push down solves
((-0.1, False, True), (10.9, True, True))
>>> game.progress()
1.0
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Sequence

import numpy as np

__all__ = [
    "SokobanGame",
    "CELL_TEXT",
    "PUSH_UP",
    "PUSH_DOWN",
    "PUSH_LEFT",
    "PUSH_RIGHT",
    "target_distances",
]

WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER, PLAYER_ON_TARGET = range(7)
#: gym-sokoban action ids: 1-4 push (or move) up/down/left/right, 5-8 move only.
PUSH_UP, PUSH_DOWN, PUSH_LEFT, PUSH_RIGHT = 1, 2, 3, 4
#: The reference stack's text cell per state code (space, symbol, space, TAB).
CELL_TEXT = (" # \t", " _ \t", " O \t", " √ \t", " X \t", " P \t", " S \t")
STEP_PENALTY, BOX_ON_REWARD, BOX_OFF_PENALTY, FINISH_REWARD = -0.1, 1.0, -1.0, 10.0


def target_distances(fixed: Sequence[int], cols: int) -> tuple[int, ...]:
    """Each cell's walking distance to the nearest target, in moves through non-wall cells.

    ``fixed`` is the flat static layout (row-major, ``cols`` per row, codes as in
    :class:`SokobanGame`). Walls get 0; a floor cell with no path to any target gets one more
    than the largest finite distance (no such cell in a generated room).

    >>> target_distances([0, 0, 0, 0, 0,
    ...                   0, 1, 1, 2, 0,
    ...                   0, 0, 0, 0, 0], 5)
    (0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0)
    """
    distance = [-1] * len(fixed)
    queue = deque(i for i, code in enumerate(fixed) if code == TARGET)
    for i in queue:
        distance[i] = 0
    while queue:
        i = queue.popleft()
        for j in (i - cols, i + cols, i - 1, i + 1):
            if 0 <= j < len(fixed) and fixed[j] != WALL and distance[j] < 0:
                distance[j] = distance[i] + 1
                queue.append(j)
    unreachable = max(distance, default=0) + 1
    return tuple(
        0 if code == WALL else (d if d >= 0 else unreachable)
        for code, d in zip(fixed, distance, strict=True)
    )


_room_distances = functools.lru_cache(maxsize=4096)(target_distances)  # one BFS per room layout


class SokobanGame:
    """One room in play.

    Args:
        fixed: static layout ``(rows, cols)``: 0 wall, 1 floor, 2 target; the border must be wall.
        state: dynamic state: 0 wall, 1 floor, 2 empty target, 3 box on target, 4 box, 5 player.
    """

    def __init__(self, fixed: np.ndarray, state: np.ndarray) -> None:
        fixed, state = np.asarray(fixed), np.asarray(state)
        if fixed.shape != state.shape or fixed.ndim != 2:
            raise ValueError(
                f"fixed and state must be equal 2-D shapes, got {fixed.shape}, {state.shape}"
            )
        border = np.concatenate([fixed[0], fixed[-1], fixed[:, 0], fixed[:, -1]])
        if border.any() or np.count_nonzero(state == PLAYER) != 1:
            raise ValueError("a room needs a wall border and exactly one player")
        self.rows, self.cols = fixed.shape
        self.fixed: list[int] = fixed.ravel().tolist()
        self.cells: list[int] = state.ravel().tolist()
        self.player = self.cells.index(PLAYER)
        self.num_boxes = self.fixed.count(TARGET)
        self.boxes_on_target = self.cells.count(BOX_ON_TARGET)
        self._prev_on_target = 0  # the reference starts from 0, not from the room
        self._deltas = (-self.cols, self.cols, -1, 1)
        self._text: str | None = None
        self._distance = _room_distances(tuple(self.fixed), self.cols)
        boxes = [i for i, code in enumerate(self.cells) if code in (BOX, BOX_ON_TARGET)]
        self._spread = sum(self._distance[i] for i in boxes)  # kept up to date by step()
        self._worst = len(boxes) * max(self._distance, default=0)

    @property
    def solved(self) -> bool:
        return self.boxes_on_target == self.num_boxes

    def step(self, action: int) -> tuple[float, bool, bool]:
        """Apply gym-sokoban action ``1..8``; return ``(reward, solved, player_moved)``."""
        delta = self._deltas[(action - 1) % 4]
        target = self.player + delta
        cells, fixed = self.cells, self.fixed
        moved = False
        if (
            action <= 4
            and cells[target] in (BOX, BOX_ON_TARGET)
            and cells[target + delta] in (FLOOR, TARGET)
        ):
            behind = target + delta
            if cells[target] == BOX_ON_TARGET:
                self.boxes_on_target -= 1
            if fixed[behind] == TARGET:
                cells[behind] = BOX_ON_TARGET
                self.boxes_on_target += 1
            else:
                cells[behind] = BOX
            self._spread += self._distance[behind] - self._distance[target]
            moved = True
        elif cells[target] in (FLOOR, TARGET):
            moved = True
        if moved:
            self._text = None
            cells[self.player] = fixed[self.player]
            cells[target] = PLAYER
            self.player = target
        reward = STEP_PENALTY
        if self.boxes_on_target > self._prev_on_target:
            reward += BOX_ON_REWARD
        elif self.boxes_on_target < self._prev_on_target:
            reward += BOX_OFF_PENALTY
        solved = self.solved
        if solved:
            reward += FINISH_REWARD
        self._prev_on_target = self.boxes_on_target
        return reward, solved, moved

    def progress(self) -> float:
        """``1 - D / D_max`` (docs/sokoban.md, *Progress*): ``D`` sums each box's
        :func:`target_distances` entry (0 on a target), ``D_max`` is the number of boxes times the
        largest entry. 1.0 exactly when every box is on a target; a move without a push leaves it
        unchanged, and with one target a push toward it adds ``1 / D_max``, away subtracts it."""
        return 1.0 if self._worst == 0 else 1.0 - self._spread / self._worst

    def codes(self) -> np.ndarray:
        """State codes ``(rows, cols)``, int8, with 6 for the player standing on a target."""
        out = np.array(self.cells, dtype=np.int8)
        if self.fixed[self.player] == TARGET:
            out[self.player] = PLAYER_ON_TARGET
        return out.reshape(self.rows, self.cols)

    def offsets(self) -> tuple[int, int, int, int]:
        """``(box row, box col, target row, target col)`` offsets of a one-box room: the box's
        position minus the player's, then the target's minus the box's (rows count down, columns
        right; docs/sokoban.md, *Observations*). ``ValueError`` for more than one box.

        >>> fixed = np.array([[0,0,0,0,0],[0,1,1,2,0],[0,1,1,1,0],[0,0,0,0,0]])
        >>> state = np.array([[0,0,0,0,0],[0,1,1,2,0],[0,5,4,1,0],[0,0,0,0,0]])
        >>> SokobanGame(fixed, state).offsets()
        (0, 1, -1, 1)
        """
        if self.num_boxes != 1:
            raise ValueError(f"offsets describe one box, this room has {self.num_boxes}")
        box = next(i for i, code in enumerate(self.cells) if code in (BOX, BOX_ON_TARGET))
        target = self.fixed.index(TARGET)
        cols = self.cols
        (pr, pc), (br, bc), (tr, tc) = (divmod(i, cols) for i in (self.player, box, target))
        return br - pr, bc - pc, tr - br, tc - bc

    def text(self) -> str:
        """The reference stack's text grid: :data:`CELL_TEXT` cells, rows joined by newlines."""
        if self._text is None:
            self._text = self._render_text()
        return self._text

    def _render_text(self) -> str:
        cells = [CELL_TEXT[c] for c in self.cells]
        if self.fixed[self.player] == TARGET:
            cells[self.player] = CELL_TEXT[PLAYER_ON_TARGET]
        cols = self.cols
        return "\n".join("".join(cells[i : i + cols]) for i in range(0, len(cells), cols))
