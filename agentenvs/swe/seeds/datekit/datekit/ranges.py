"""Sequences of dates and counting helpers."""

from .core import add_months, from_ordinal, to_ordinal, validate, weekday


def date_range(start, end, step=1, inclusive=False):
    """Dates from ``start`` towards ``end`` every ``step`` days; ``end`` included if ``inclusive``."""
    if step == 0:
        raise ValueError("step must not be zero")
    first = to_ordinal(*start)
    last = to_ordinal(*end)
    if inclusive:
        last += 1 if step > 0 else -1
    return [from_ordinal(n) for n in range(first, last, step)]


def month_starts(start, count):
    """The first day of ``count`` consecutive months, beginning with the month of ``start``."""
    if count < 0:
        raise ValueError("count must be non-negative")
    year, month, _ = validate(*start)
    first = (year, month, 1)
    return [add_months(first, i) for i in range(count)]


def is_weekend(date):
    """True on Saturdays and Sundays."""
    return weekday(*date) >= 5


def business_days_between(start, end):
    """Number of Monday-Friday dates in ``[start, end)``; negative when ``end`` is before ``start``."""
    first = to_ordinal(*start)
    last = to_ordinal(*end)
    if last < first:
        return -business_days_between(end, start)
    count = 0
    for n in range(first, last):
        if (n - 1) % 7 < 5:
            count += 1
    return count


def next_weekday(date, target, include_today=False):
    """The next date falling on weekday ``target`` (Monday == 0)."""
    if not 0 <= target <= 6:
        raise ValueError(f"weekday must be in 0..6, got {target}")
    n = to_ordinal(*date)
    ahead = (target - weekday(*date)) % 7
    if ahead == 0 and not include_today:
        ahead = 7
    return from_ordinal(n + ahead)


def overlap_days(first, second):
    """Number of days shared by two inclusive ``(start, end)`` date ranges."""
    lo = max(to_ordinal(*first[0]), to_ordinal(*second[0]))
    hi = min(to_ordinal(*first[1]), to_ordinal(*second[1]))
    if hi < lo:
        return 0
    return hi - lo + 1
