"""Calendar arithmetic on plain ``(year, month, day)`` tuples (proleptic Gregorian calendar)."""

MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MIN_YEAR = 1
MAX_YEAR = 9999


def is_leap_year(year):
    """Return True if ``year`` has a February 29th."""
    if year % 400 == 0:
        return True
    if year % 100 == 0:
        return False
    return year % 4 == 0


def days_in_year(year):
    """Number of days in ``year`` (365 or 366)."""
    return 366 if is_leap_year(year) else 365


def days_in_month(year, month):
    """Number of days in ``month`` of ``year``; raises ValueError for a bad month."""
    if month < 1 or month > 12:
        raise ValueError(f"month must be in 1..12, got {month}")
    if month == 2 and is_leap_year(year):
        return 29
    return MONTH_DAYS[month - 1]


def validate(year, month, day):
    """Return ``(year, month, day)`` if it is a real date, else raise ValueError."""
    if year < MIN_YEAR or year > MAX_YEAR:
        raise ValueError(f"year must be in {MIN_YEAR}..{MAX_YEAR}, got {year}")
    last = days_in_month(year, month)
    if day < 1 or day > last:
        raise ValueError(f"day must be in 1..{last} for {year}-{month:02d}, got {day}")
    return (year, month, day)


def day_of_year(year, month, day):
    """1-based position of the date within its year."""
    validate(year, month, day)
    total = day
    for m in range(1, month):
        total += days_in_month(year, m)
    return total


def to_ordinal(year, month, day):
    """Days since 0000-12-31, so that 0001-01-01 has ordinal 1."""
    y = year - 1
    return y * 365 + y // 4 - y // 100 + y // 400 + day_of_year(year, month, day)


MAX_ORDINAL = 3652059  # to_ordinal(9999, 12, 31)


def from_ordinal(n):
    """Inverse of :func:`to_ordinal`."""
    if n < 1 or n > MAX_ORDINAL:
        raise ValueError(f"ordinal out of range: {n}")
    year = max(MIN_YEAR, (n - 1) * 400 // 146097 - 1)
    for _ in range(4):
        if year < MAX_YEAR and to_ordinal(year + 1, 1, 1) <= n:
            year += 1
        else:
            break
    remaining = n - to_ordinal(year, 1, 1) + 1
    month = 1
    for month in range(1, 13):
        length = days_in_month(year, month)
        if remaining <= length:
            break
        remaining -= length
    return (year, month, remaining)


def weekday(year, month, day):
    """Day of the week, Monday == 0 ... Sunday == 6."""
    return (to_ordinal(year, month, day) - 1) % 7


def zeller_weekday(year, month, day):
    """Day of the week by Zeller's congruence, with the same numbering as :func:`weekday`."""
    validate(year, month, day)
    if month < 3:
        month += 12
        year -= 1
    k = year % 100
    j = year // 100
    h = (day + 13 * (month + 1) // 5 + k + k // 4 + j // 4 + 5 * j) % 7
    return (h + 5) % 7


def weekday_name(date):
    """English name of the weekday of ``date``."""
    return WEEKDAY_NAMES[weekday(*date)]


def add_days(date, days):
    """Date ``days`` days after ``date`` (negative moves backwards)."""
    return from_ordinal(to_ordinal(*date) + days)


def add_months(date, months, clamp=True):
    """Move ``date`` by whole months; the day is clamped to the month end unless ``clamp`` is False."""
    year, month, day = validate(*date)
    total = year * 12 + (month - 1) + months
    new_year, new_month = divmod(total, 12)
    new_month += 1
    if clamp:
        day = min(day, days_in_month(new_year, new_month))
    return validate(new_year, new_month, day)


def add_years(date, years, clamp=True):
    """Move ``date`` by whole years (Feb 29 becomes Feb 28 when clamping)."""
    return add_months(date, 12 * years, clamp)


def days_between(start, end):
    """Signed number of days from ``start`` to ``end``."""
    return to_ordinal(*end) - to_ordinal(*start)
