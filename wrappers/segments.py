"""Segments of a trajectory: runs of consecutive steps that serve one sub-goal (HISR's units).

A segmentation of a trajectory with ``n`` steps is a list of inclusive, 0-based step ranges
``(start, end)`` that are contiguous, ordered, non-overlapping and cover ``0..n-1`` (a
*partition*). docs/hisr.md, section 2 states the rules; this module holds:

* :data:`Segments` - the type, ``list[tuple[int, int]]``.
* :func:`is_partition`, :func:`check_partition` - test / assert that segments partition ``n`` steps.
* :func:`repair_segments` - turn any segmenter output into a partition (docs/hisr.md, section 2.2).
* :func:`parse_segments_text` - read the paper's segmenter answer
  (``"The segmented results are: [(1, 3), (4, 6), (7)]"``, 1-based) into 0-based ranges.
* :func:`segment_ends` - the inclusive last step of each segment (what progress estimators take).
* Segmenters, each ``(Trajectory) -> Segments``: :func:`per_turn`, :func:`progress_segments`,
  :class:`FixedLengthSegmenter`, and :func:`make_segmenter` (a spec or any callable).
* :func:`segment` - run a segmenter and repair its output.

>>> from agentenvs.core import Step, Trajectory
>>> t = Trajectory("t", "g", [Step("o", a, 0.0, progress=p) for a, p in
...                           [("go", 0.0), ("take", 0.5), ("go", 0.0), ("put", 0.5)]])
>>> progress_segments(t), per_turn(t)
([(0, 1), (2, 3)], [(0, 0), (1, 1), (2, 2), (3, 3)])
>>> repair_segments([(2, 9), (0, 0), (1, 0)], 4)  # clamped, sorted, the gap filled
[(0, 1), (2, 3)]
>>> parse_segments_text("... The segmented results are: [(1, 2), (3), (4, 4)]")
[(0, 1), (2, 2), (3, 3)]
>>> segment_ends([(0, 1), (2, 2), (3, 3)])
[1, 2, 3]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from agentenvs.core import Trajectory

__all__ = [
    "Segments",
    "Segmenter",
    "SEGMENTERS",
    "is_partition",
    "check_partition",
    "repair_segments",
    "parse_segments_text",
    "segment_ends",
    "per_turn",
    "progress_segments",
    "FixedLengthSegmenter",
    "make_segmenter",
    "segment",
]

log = logging.getLogger(__name__)

#: Inclusive 0-based step ranges ``(start, end)``.
Segments = list[tuple[int, int]]
#: ``(Trajectory) -> Segments``: any segmenter.
Segmenter = Callable[[Trajectory], Sequence[Any]]


def is_partition(segments: Sequence[tuple[int, int]], n: int) -> bool:
    """Whether ``segments`` are ordered, contiguous, non-empty ranges covering ``0..n-1``.

    >>> is_partition([(0, 1), (2, 2)], 3), is_partition([(0, 1), (1, 2)], 3), is_partition([], 0)
    (True, False, True)
    """
    expected = 0
    for start, end in segments:
        if start != expected or end < start:
            return False
        expected = end + 1
    return expected == n


def check_partition(segments: Sequence[tuple[int, int]], n: int) -> Segments:
    """``segments`` as a list of int pairs; ``ValueError`` unless they partition ``n`` steps."""
    out = [(int(a), int(b)) for a, b in segments]
    if not is_partition(out, n):
        raise ValueError(f"segments {out} do not partition {n} steps into contiguous ranges")
    return out


def _as_range(item: Any) -> tuple[int, int] | None:
    """``(start, end)`` from ``k``, ``(k,)`` or ``(a, b)``; ``None`` for anything else."""
    if isinstance(item, bool):
        return None
    if isinstance(item, int):
        return item, item
    if isinstance(item, (tuple, list)) and 1 <= len(item) <= 2:
        if all(isinstance(x, int) and not isinstance(x, bool) for x in item):
            return int(item[0]), int(item[-1])
    return None


def repair_segments(segments: Sequence[Any] | None, n: int) -> Segments:
    """Any segmenter output -> a partition of ``n`` steps (docs/hisr.md, section 2.2).

    Items may be ``(a, b)``, ``(k,)`` or ``k`` (0-based, inclusive). Unreadable items and empty
    ranges (``b < a``) are dropped; ranges are clamped to ``[0, n-1]`` and sorted by start; an
    overlap is cut by starting a range after its predecessor's end; a gap is filled by extending
    the range before it (a leading gap: the first range starts at 0). When nothing usable is left
    the result is :func:`per_turn` (logged at warning level).

    >>> repair_segments([(0, 2), (1, 3), 5], 6)  # overlap cut, gap after 3 given to (2, 3)
    [(0, 2), (3, 4), (5, 5)]
    >>> repair_segments("junk", 2)
    [(0, 0), (1, 1)]
    """
    if n <= 0:
        return []
    parsed = [_as_range(s) for s in segments] if isinstance(segments, (list, tuple)) else []
    ranges = sorted(
        (max(a, 0), min(b, n - 1)) for a, b in (r for r in parsed if r is not None) if a <= b
    )
    out: Segments = []
    for start, end in ranges:
        if start > n - 1 or end < 0:
            continue
        if out:
            start = max(start, out[-1][1] + 1)
            if start > end:
                continue
            if start > out[-1][1] + 1:  # a gap: the previous range absorbs it
                out[-1] = (out[-1][0], start - 1)
        out.append((start, end))
    if not out:
        log.warning("segmenter output %r is unusable; using per-turn segments", segments)
        return [(k, k) for k in range(n)]
    out[0] = (0, out[0][1])
    out[-1] = (out[-1][0], n - 1)
    return out


_RESULT = re.compile(r"\[([^\[\]]*)\]")
_ITEM = re.compile(r"\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)")


def parse_segments_text(text: str) -> Segments:
    """0-based ranges from the paper's segmenter answer: its last ``[...]`` list of 1-based
    ``(a, b)`` / ``(k)`` items (docs/hisr.md, section 2.1). No list gives ``[]`` (which
    :func:`repair_segments` turns into per-turn segments).

    >>> parse_segments_text("Boundaries ... The segmented results are: [(1, 3), (4, 6), (7)]")
    [(0, 2), (3, 5), (6, 6)]
    """
    lists = _RESULT.findall(text) if isinstance(text, str) else []
    if not lists:
        return []
    out = []
    for a, b in _ITEM.findall(lists[-1]):
        out.append((int(a) - 1, int(b or a) - 1))
    return out


def segment_ends(segments: Sequence[tuple[int, int]]) -> list[int]:
    """The inclusive last step of each segment."""
    return [int(end) for _, end in segments]


def per_turn(trajectory: Trajectory) -> Segments:
    """Every step its own segment (HISR "w/o SPR"; the fallback of every other segmenter)."""
    return [(k, k) for k in range(len(trajectory.steps))]


def progress_segments(trajectory: Trajectory) -> Segments:
    """A segment ends after each step that raised the env's privileged progress
    (``Step.progress > 0``: a sub-goal completed) and at the last step. Per-turn segments when no
    step reports progress (every ``Step.progress`` is ``None``)."""
    steps = trajectory.steps
    if all(s.progress is None for s in steps):
        return per_turn(trajectory)
    out, start = [], 0
    for k, step in enumerate(steps):
        if k == len(steps) - 1 or (step.progress is not None and step.progress > 0):
            out.append((start, k))
            start = k + 1
    return out


class FixedLengthSegmenter:
    """Segments of ``length`` steps (the last one may be shorter).

    >>> from agentenvs.core import Step, Trajectory
    >>> FixedLengthSegmenter(2)(Trajectory("t", "g", [Step("o", "a", 0.0)] * 5))
    [(0, 1), (2, 3), (4, 4)]
    """

    def __init__(self, length: int) -> None:
        if not isinstance(length, int) or isinstance(length, bool) or length < 1:
            raise ValueError(f"a segment length must be an int >= 1, got {length!r}")
        self.length = length

    def __call__(self, trajectory: Trajectory) -> Segments:
        n = len(trajectory.steps)
        return [(a, min(a + self.length, n) - 1) for a in range(0, n, self.length)]

    def __repr__(self) -> str:
        return f"FixedLengthSegmenter({self.length})"


#: The named segmenters :func:`make_segmenter` knows (besides ``"fixed:<k>"``).
SEGMENTERS: dict[str, Segmenter] = {"per_turn": per_turn, "progress": progress_segments}


def make_segmenter(spec: str | Segmenter) -> Segmenter:
    """A segmenter from ``spec``: ``"per_turn"``, ``"progress"``, ``"fixed:<k>"`` or any callable
    ``(Trajectory) -> list[(start, end)]`` (returned as is).

    >>> make_segmenter("fixed:3"), make_segmenter("progress") is progress_segments
    (FixedLengthSegmenter(3), True)
    """
    if callable(spec):
        return spec
    if isinstance(spec, str):
        if spec in SEGMENTERS:
            return SEGMENTERS[spec]
        if spec.startswith("fixed:") and spec[6:].isdigit():
            return FixedLengthSegmenter(int(spec[6:]))
    raise ValueError(
        f"unknown segmenter {spec!r}; use {sorted(SEGMENTERS)}, 'fixed:<k>' or a callable "
        "(Trajectory) -> list[(start, end)]"
    )


def segment(trajectory: Trajectory, segmenter: Segmenter) -> Segments:
    """``segmenter(trajectory)`` repaired into a partition of the trajectory's steps; an error
    raised by the segmenter propagates."""
    return repair_segments(segmenter(trajectory), len(trajectory.steps))
