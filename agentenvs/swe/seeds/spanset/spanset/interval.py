"""A single interval on the real line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """An interval from ``start`` to ``end``.

    By default the interval is half-open, ``[start, end)``. With ``closed=True`` it is the
    closed interval ``[start, end]`` and also contains its end point.
    """

    start: float
    end: float
    closed: bool = False

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"interval end {self.end} is before its start {self.start}")

    @property
    def length(self) -> float:
        """The distance between the two end points."""
        return self.end - self.start

    def is_empty(self) -> bool:
        """Return True if the interval contains no point at all."""
        return self.start == self.end and not self.closed

    def contains(self, point: float) -> bool:
        """Return True if ``point`` lies in the interval."""
        if point < self.start:
            return False
        if self.closed:
            return point <= self.end
        return point < self.end

    def covers(self, other: Interval) -> bool:
        """Return True if every point of ``other`` also lies in this interval."""
        if other.is_empty():
            return True
        if other.start < self.start:
            return False
        if other.end == self.end:
            return self.closed or not other.closed
        return other.end < self.end

    def overlaps(self, other: Interval) -> bool:
        """Return True if the two intervals share at least one point."""
        lo = max(self.start, other.start)
        hi = min(self.end, other.end)
        if lo < hi:
            return True
        return lo == hi and self.contains(lo) and other.contains(lo)

    def intersection(self, other: Interval) -> Interval | None:
        """Return the common part of both intervals, or None if they are disjoint."""
        if not self.overlaps(other):
            return None
        start = max(self.start, other.start)
        end = min(self.end, other.end)
        return Interval(start, end, self.contains(end) and other.contains(end))

    def hull(self, other: Interval) -> Interval:
        """Return the smallest interval that covers both intervals."""
        start = min(self.start, other.start)
        end = max(self.end, other.end)
        return Interval(start, end, self.contains(end) or other.contains(end))

    def shift(self, offset: float) -> Interval:
        """Return the interval moved by ``offset``."""
        return Interval(self.start + offset, self.end + offset, self.closed)

    def split(self, at: float) -> tuple[Interval, Interval]:
        """Split at ``at`` into ``[start, at)`` and the rest, which keeps ``closed``.

        The split point must lie strictly inside the interval.
        """
        if at <= self.start or at >= self.end:
            raise ValueError(f"split point {at} not inside ({self.start}, {self.end})")
        return Interval(self.start, at), Interval(at, self.end, self.closed)
