"""A set of points stored as sorted, disjoint half-open spans."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator

from spanset.ops import Span, complement, intersect, merge, subtract


class IntervalSet:
    """A mutable set of real numbers made of half-open spans ``[start, end)``."""

    def __init__(self, spans: Iterable[Span] = ()) -> None:
        self._spans: list[Span] = merge(spans)

    @property
    def spans(self) -> list[Span]:
        """A copy of the sorted, disjoint spans."""
        return list(self._spans)

    def __repr__(self) -> str:
        return f"IntervalSet({self._spans!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IntervalSet):
            return NotImplemented
        return self._spans == other._spans

    def __len__(self) -> int:
        return len(self._spans)

    def __iter__(self) -> Iterator[Span]:
        return iter(self._spans)

    def __bool__(self) -> bool:
        return len(self._spans) > 0

    def __contains__(self, point: float) -> bool:
        index = bisect_right(self._spans, (point, float("inf"))) - 1
        if index < 0:
            return False
        start, end = self._spans[index]
        return start <= point < end

    def add(self, start: float, end: float) -> None:
        """Add the span ``[start, end)``."""
        self._spans = merge(self._spans + [(start, end)])

    def remove(self, start: float, end: float) -> None:
        """Remove the span ``[start, end)``; parts not in the set are ignored."""
        self._spans = subtract(self._spans, [(start, end)])

    def total_length(self) -> float:
        """Return the total length of the set."""
        return sum(end - start for start, end in self._spans)

    def bounds(self) -> Span | None:
        """Return ``(min start, max end)`` or None for the empty set."""
        if not self._spans:
            return None
        return self._spans[0][0], self._spans[-1][1]

    def union(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet(self._spans + other._spans)

    def intersection(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet(intersect(self._spans, other._spans))

    def difference(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet(subtract(self._spans, other._spans))

    def complement(self, lo: float, hi: float) -> IntervalSet:
        """Return the points of ``[lo, hi)`` that are not in the set."""
        return IntervalSet(complement(self._spans, lo, hi))

    __or__ = union
    __and__ = intersection
    __sub__ = difference
