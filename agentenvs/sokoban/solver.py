"""Breadth-first Sokoban solver over the push-or-move actions (up, down, left, right).

This module holds :func:`solve`, used by the tests to prove generated rooms solvable, and handy for
building easy task panels (rooms with short solutions).

>>> from agentenvs.sokoban.generator import generate_room
>>> room = generate_room(42)
>>> solve(room.fixed, room.state)
['right', 'right']
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["solve"]

_NAMES = ("up", "down", "left", "right")


def solve(fixed: np.ndarray, state: np.ndarray, max_depth: int = 50) -> list[str] | None:
    """Shortest action sequence that puts every box on a target, or ``None`` within ``max_depth``.

    Args:
        fixed: static layout (0 wall, 1 floor, 2 target), bordered by walls.
        state: dynamic state (3 box on target, 4 box, 5 player; other codes as ``fixed``).
        max_depth: longest solution searched, in steps.
    """
    rows, cols = fixed.shape
    walls = frozenset(np.flatnonzero(fixed.ravel() == 0).tolist())
    targets = frozenset(np.flatnonzero(fixed.ravel() == 2).tolist())
    flat = state.ravel()
    player = int(np.flatnonzero(flat == 5)[0])
    boxes = frozenset(np.flatnonzero((flat == 3) | (flat == 4)).tolist())
    deltas = (-cols, cols, -1, 1)
    start = (player, boxes)
    parents: dict = {start: None}
    frontier = deque([(start, 0)])
    while frontier:
        (player, boxes), depth = frontier.popleft()
        if boxes <= targets:
            path = []
            node = (player, boxes)
            while parents[node] is not None:
                node, action = parents[node]
                path.append(_NAMES[action])
            return path[::-1]
        if depth >= max_depth:
            continue
        for action, delta in enumerate(deltas):
            nxt = player + delta
            if nxt in walls:
                continue
            new_boxes = boxes
            if nxt in boxes:
                behind = nxt + delta
                if behind in walls or behind in boxes:
                    continue
                new_boxes = (boxes - {nxt}) | {behind}
            node = (nxt, new_boxes)
            if node not in parents:
                parents[node] = ((player, boxes), action)
                frontier.append((node, depth + 1))
    return None
