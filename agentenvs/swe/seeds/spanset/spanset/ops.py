"""Operations on lists of half-open spans ``(start, end)``.

Each span stands for ``[start, end)``. Results are always sorted, non-overlapping and free
of empty spans.
"""

from __future__ import annotations

from collections.abc import Iterable

Span = tuple[float, float]


def normalize(spans: Iterable[Span]) -> list[Span]:
    """Validate spans, drop empty ones and sort the rest by start (then end)."""
    result = []
    for start, end in spans:
        if end < start:
            raise ValueError(f"span ({start}, {end}) ends before it starts")
        if start == end:
            continue
        result.append((start, end))
    return sorted(result)


def merge(spans: Iterable[Span], touching: bool = True) -> list[Span]:
    """Merge overlapping spans.

    With ``touching=True`` (the default) spans that only meet at an end point, such as
    ``(1, 2)`` and ``(2, 3)``, are merged as well.
    """
    merged: list[Span] = []
    for start, end in normalize(spans):
        if merged:
            last_start, last_end = merged[-1]
            if start < last_end or (touching and start == last_end):
                merged[-1] = (last_start, max(last_end, end))
                continue
        merged.append((start, end))
    return merged


def total_length(spans: Iterable[Span]) -> float:
    """Return the length covered by the spans, counting overlaps once."""
    total = 0
    for start, end in merge(spans):
        total += end - start
    return total


def intersect(a: Iterable[Span], b: Iterable[Span]) -> list[Span]:
    """Return the spans covered by both ``a`` and ``b``."""
    right = merge(b)
    result = []
    for start, end in merge(a):
        for other_start, other_end in right:
            if other_start >= end:
                break
            lo = max(start, other_start)
            hi = min(end, other_end)
            if lo < hi:
                result.append((lo, hi))
    return result


def subtract(a: Iterable[Span], b: Iterable[Span]) -> list[Span]:
    """Return the parts of ``a`` that are not covered by ``b``."""
    holes = merge(b)
    result = []
    for start, end in merge(a):
        cursor = start
        for hole_start, hole_end in holes:
            if hole_end <= cursor:
                continue
            if hole_start >= end:
                break
            if hole_start > cursor:
                result.append((cursor, hole_start))
            cursor = hole_end
            if cursor >= end:
                break
        if cursor < end:
            result.append((cursor, end))
    return result


def complement(spans: Iterable[Span], lo: float, hi: float) -> list[Span]:
    """Return the parts of ``[lo, hi)`` not covered by ``spans``.

    Raises ValueError if ``hi < lo``.
    """
    return subtract([(lo, hi)], spans)


def gaps(spans: Iterable[Span], min_size: float = 0) -> list[Span]:
    """Return the holes between the merged spans that are longer than ``min_size``."""
    merged = merge(spans)
    holes = []
    for index in range(1, len(merged)):
        gap = (merged[index - 1][1], merged[index][0])
        if gap[1] - gap[0] > min_size:
            holes.append(gap)
    return holes
