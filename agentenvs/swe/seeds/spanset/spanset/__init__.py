"""Interval arithmetic: single intervals, span lists and interval sets."""

from spanset.interval import Interval
from spanset.intervalset import IntervalSet
from spanset.ops import complement, gaps, intersect, merge, normalize, subtract, total_length

__all__ = [
    "Interval",
    "IntervalSet",
    "complement",
    "gaps",
    "intersect",
    "merge",
    "normalize",
    "subtract",
    "total_length",
]
