"""Sokoban room generation by reverse playing from the solved state (docs/sokoban.md, *Generator*).

This module holds :class:`Room` and :func:`generate_room` (with its retry chain
:func:`generate_room_with_retries`).

The algorithm follows the reference stack's generator call for call, with private
``random.Random(seed)`` and ``numpy.random.RandomState(seed)`` instances instead of the global
generators, so the same seed gives the same room as the reference and the caller's global random
state is never touched:

1. a random walk with 3x3 masks carves the floor (*Floor carving*);
2. the player and the boxes are placed on random floor cells, every box on its own target
   (*Placement*);
3. a depth-first search over *pulls* (reverse moves) keeps the reachable state with the largest
   ``box swaps x box displacement`` score (*Reverse-play search*);
4. the player takes a short random walk (*Player walk*).

The italic names are sections of docs/sokoban.md.

Every generated room is solvable: reversing the pulls that produced it is a solution.

>>> room = generate_room(42)
>>> print(room.text_rows())
######
#PX_O#
#____#
######
######
######
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Room", "generate_room", "generate_room_with_retries", "GenerationError"]

WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER, PLAYER_ON_TARGET = range(7)
#: (row, col) deltas of up, down, left, right.
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))
_WALK_DIRECTIONS = [(1, 0), (0, 1), (-1, 0), (0, -1)]
_MASKS = [
    np.array(m)
    for m in (
        [[0, 0, 0], [1, 1, 1], [0, 0, 0]],
        [[0, 1, 0], [0, 1, 0], [0, 1, 0]],
        [[0, 0, 0], [1, 1, 0], [0, 1, 0]],
        [[0, 0, 0], [1, 1, 0], [1, 1, 0]],
        [[0, 0, 0], [0, 1, 1], [0, 1, 0]],
    )
]
_MAX_EXPLORED = 300_000
_SYMBOLS = "#_O√XPS"


class GenerationError(RuntimeError):
    """No acceptable room could be generated for a seed."""


@dataclass(frozen=True)
class Room:
    """A generated room.

    Attributes:
        fixed: static layout, shape ``(rows, cols)``, int8: 0 wall, 1 floor, 2 target.
        state: initial dynamic state, int8: 0 wall, 1 floor, 2 empty target, 3 box on target,
            4 box, 5 player (the player's cell in ``fixed`` tells whether it stands on a target).
        box_mapping: target cell -> cell of the box pulled away from it, ``((r, c), (r, c))`` pairs.
        seed: the seed that produced this room.
    """

    fixed: np.ndarray
    state: np.ndarray
    box_mapping: tuple[tuple[tuple[int, int], tuple[int, int]], ...]
    seed: int

    def text_rows(self) -> str:
        """Compact symbols, one row per line (``#`` wall, ``_`` floor, ``O`` target, ``X`` box, ...)."""
        codes = np.where(
            (self.state == PLAYER) & (self.fixed == TARGET), PLAYER_ON_TARGET, self.state
        )
        return "\n".join("".join(_SYMBOLS[c] for c in row) for row in codes)


def _topology(
    dim: tuple[int, int], p_change: float, num_steps: int, rnd: random.Random
) -> np.ndarray:
    rows, cols = dim
    level = np.zeros(dim, dtype=np.int64)
    direction = rnd.sample(_WALK_DIRECTIONS, 1)[0]
    r, c = rnd.randint(1, rows - 1), rnd.randint(1, cols - 1)
    for _ in range(num_steps):
        if rnd.random() < p_change:
            direction = rnd.sample(_WALK_DIRECTIONS, 1)[0]
        r = max(min(r + direction[0], rows - 2), 1)
        c = max(min(c + direction[1], cols - 2), 1)
        level[r - 1 : r + 2, c - 1 : c + 2] += rnd.sample(_MASKS, 1)[0]
    level[level > 0] = FLOOR
    level[[0, -1], :] = WALL
    level[:, [0, -1]] = WALL
    return level


def _place(level: np.ndarray, num_boxes: int, nrs: np.random.RandomState) -> np.ndarray:
    room = level.copy()
    free = np.argwhere(room == FLOOR)
    if len(free) <= num_boxes + 1:
        raise GenerationError(
            f"Not enough free spots (#{len(free)}) to place 1 player and {num_boxes} boxes."
        )
    room[tuple(free[nrs.randint(len(free))])] = PLAYER
    for _ in range(num_boxes):
        free = np.argwhere(room == FLOOR)
        room[tuple(free[nrs.randint(len(free))])] = TARGET
    return room


class _ReversePlay:
    """Depth-first search over pulls from the solved state, the reference's variant
    (docs/sokoban.md, *Reverse-play search*)."""

    def __init__(self, fixed: np.ndarray, num_boxes: int) -> None:
        self.fixed = fixed
        self.num_boxes = num_boxes
        self.explored: set[bytes] = set()
        self.best_score = -1
        self.best_state: np.ndarray | None = None
        self.best_mapping: dict[tuple[int, int], tuple[int, int]] = {}

    def search(self, state: np.ndarray, depth: int) -> None:
        targets = [(int(r), int(c)) for r, c in np.argwhere(self.fixed == TARGET)]
        self.best_mapping = {t: t for t in targets}
        self._dfs(state, dict(self.best_mapping), 0, (-1, -1), depth)

    def _dfs(
        self, state: np.ndarray, mapping: dict, swaps: int, last_pull: tuple, ttl: int
    ) -> None:
        ttl -= 1
        if ttl <= 0 or len(self.explored) >= _MAX_EXPLORED:
            return
        key = state.tobytes()
        if key in self.explored:
            return
        score = swaps * sum(abs(b[0] - t[0]) + abs(b[1] - t[1]) for t, b in mapping.items())
        if np.count_nonzero(state == TARGET) != self.num_boxes:
            score = 0
        if score > self.best_score:
            self.best_score, self.best_state, self.best_mapping = score, state.copy(), dict(mapping)
        self.explored.add(key)
        for action in range(4):
            next_state, next_mapping, next_pull = self._pull(
                state.copy(), dict(mapping), last_pull, action
            )
            next_swaps = swaps + (next_pull != last_pull)
            self._dfs(next_state, next_mapping, next_swaps, next_pull, ttl)

    def _pull(
        self, state: np.ndarray, mapping: dict, last_pull: tuple, action: int
    ) -> tuple[np.ndarray, dict, tuple]:
        pr, pc = (int(x) for x in np.argwhere(state == PLAYER)[0])
        dr, dc = MOVES[action]
        nr, nc = pr + dr, pc + dc
        if state[nr, nc] in (FLOOR, TARGET):
            state[pr, pc] = self.fixed[pr, pc]
            state[nr, nc] = PLAYER
            br, bc = pr - dr, pc - dc
            if state[br, bc] in (BOX_ON_TARGET, BOX):
                state[pr, pc] = BOX_ON_TARGET
                state[br, bc] = self.fixed[br, bc]
                for target, box in mapping.items():
                    if box == (br, bc):
                        mapping[target] = (pr, pc)
                        last_pull = target
        return state, mapping, last_pull


def _random_player_walk(
    state: np.ndarray, fixed: np.ndarray, p_move: float, rnd: random.Random
) -> None:
    """Move the player up to 3 cells through free cells it has not visited, in place
    (docs/sokoban.md, *Player walk*)."""
    if rnd.random() > p_move:
        return
    pr, pc = (int(x) for x in np.argwhere(state == PLAYER)[0])
    visited = [(pr, pc)]
    for step in range(1, 4):
        options = [
            (pr + dr, pc + dc)
            for dr, dc in MOVES
            if state[pr + dr, pc + dc] in (FLOOR, TARGET) and (pr + dr, pc + dc) not in visited
        ]
        if not options:
            return
        nr, nc = rnd.choice(options)
        state[pr, pc] = fixed[pr, pc]
        state[nr, nc] = PLAYER
        pr, pc = nr, nc
        visited.append((pr, pc))
        if step == 3 or rnd.random() > 0.5:
            return


def generate_room(
    seed: int,
    dim: tuple[int, int] = (6, 6),
    num_boxes: int = 1,
    num_gen_steps: int | None = None,
    search_depth: int = 30,
    p_change_directions: float = 0.35,
    tries: int = 4,
) -> Room:
    """Generate the room of ``seed`` exactly as the reference stack does.

    The algorithm, step by step: docs/sokoban.md, *Generator*.

    Args:
        seed: non-negative integer seed.
        dim: ``(rows, cols)``, at least ``(3, 3)``.
        num_boxes: boxes (= targets).
        num_gen_steps: random-walk length; default ``int(1.7 * (rows + cols))``.
        search_depth: depth limit of the reverse-play search.
        p_change_directions: walk turn probability.
        tries: topologies tried before giving up.

    Raises:
        GenerationError: no topology of the ``tries`` gave a room with a displaced box.
    """
    rows, cols = dim
    if rows < 3 or cols < 3 or num_boxes < 1:
        raise ValueError(f"need dim >= (3, 3) and num_boxes >= 1, got {dim}, {num_boxes}")
    steps = int(1.7 * (rows + cols)) if num_gen_steps is None else num_gen_steps
    rnd, nrs = random.Random(seed), np.random.RandomState(seed % 2**32)
    for _ in range(tries):
        room = _place(_topology(dim, p_change_directions, steps, rnd), num_boxes, nrs)
        fixed = np.where(room == PLAYER, FLOOR, room)
        search = _ReversePlay(fixed, num_boxes)
        search.search(np.where(room == TARGET, BOX, room), search_depth)
        displacement = sum(
            abs(b[0] - t[0]) + abs(b[1] - t[1]) for t, b in search.best_mapping.items()
        )
        if displacement > 0:
            break
    else:
        raise GenerationError(f"seed {seed}: no room with a displaced box in {tries} tries")
    assert search.best_state is not None  # a displaced box was found
    state = np.where(search.best_state == BOX_ON_TARGET, BOX, search.best_state)
    _random_player_walk(state, fixed, 0.8 if displacement == 1 else 0.5, rnd)
    mapping = tuple(sorted(search.best_mapping.items()))
    return Room(fixed.astype(np.int8), state.astype(np.int8), mapping, seed)


def generate_room_with_retries(seed: int, max_retries: int = 100, **kwargs: Any) -> Room:
    """:func:`generate_room`, retrying a failed seed with a deterministic chain.

    Retry ``k`` uses ``int.from_bytes(sha256(f"{seed}:{k}").digest()[:4], "big")``; the returned
    room's ``seed`` records the seed that succeeded. Unlike the reference's hash-based retry seed,
    this chain is the same in every process (docs/sokoban.md, *Acceptance and retries*).
    """
    try:
        return generate_room(seed, **kwargs)
    except GenerationError:
        pass
    for k in range(1, max_retries + 1):
        retry_seed = int.from_bytes(hashlib.sha256(f"{seed}:{k}".encode()).digest()[:4], "big")
        try:
            return generate_room(retry_seed, **kwargs)
        except GenerationError:
            continue
    raise GenerationError(f"seed {seed}: no room after {max_retries} deterministic retries")
