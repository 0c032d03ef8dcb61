"""Parsing and formatting of dates in a few common text formats."""

from .core import validate

MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _to_int(text, digits, what, exact=True):
    """Parse a field of exactly ``digits`` digits (at most ``digits`` when ``exact`` is False)."""
    if not text.isdigit():
        raise ValueError(f"{what} is not a number: {text!r}")
    if exact and len(text) != digits:
        raise ValueError(f"{what} must have {digits} digits: {text!r}")
    if len(text) > digits:
        raise ValueError(f"{what} has too many digits: {text!r}")
    return int(text)


def month_from_name(name):
    """Month number for a full English month name or an abbreviation of at least 3 letters."""
    key = name.strip().rstrip(".").lower()
    if len(key) < 3:
        raise ValueError(f"ambiguous month name: {name!r}")
    for index, full in enumerate(MONTH_NAMES):
        if full.lower().startswith(key):
            return index + 1
    raise ValueError(f"unknown month name: {name!r}")


def parse_iso(text):
    """Parse ``YYYY-MM-DD``."""
    parts = text.strip().split("-")
    if len(parts) != 3:
        raise ValueError(f"not an ISO date: {text!r}")
    year = _to_int(parts[0], 4, "year")
    month = _to_int(parts[1], 2, "month")
    day = _to_int(parts[2], 2, "day")
    return validate(year, month, day)


def parse_slash(text, dayfirst=True):
    """Parse ``DD/MM/YYYY`` (or ``MM/DD/YYYY`` when ``dayfirst`` is False); 1-digit fields allowed."""
    parts = text.strip().split("/")
    if len(parts) != 3:
        raise ValueError(f"not a slash date: {text!r}")
    first = _to_int(parts[0], 2, "day/month", exact=False)
    second = _to_int(parts[1], 2, "day/month", exact=False)
    year = _to_int(parts[2], 4, "year")
    if dayfirst:
        return validate(year, second, first)
    return validate(year, first, second)


def parse_long(text):
    """Parse ``March 1, 2024`` or ``Mar 1 2024``."""
    words = text.replace(",", " ").split()
    if len(words) != 3:
        raise ValueError(f"not a long date: {text!r}")
    month = month_from_name(words[0])
    day = _to_int(words[1], 2, "day", exact=False)
    year = _to_int(words[2], 4, "year")
    return validate(year, month, day)


def parse_date(text, dayfirst=True):
    """Parse any supported format, chosen by the separators present in ``text``."""
    text = text.strip()
    if not text:
        raise ValueError("empty date string")
    if "/" in text:
        return parse_slash(text, dayfirst)
    if text[0].isdigit() and "-" in text:
        return parse_iso(text)
    return parse_long(text)


def format_iso(date):
    """Format as ``YYYY-MM-DD``."""
    year, month, day = validate(*date)
    return f"{year:04d}-{month:02d}-{day:02d}"


def format_long(date, abbreviate=False):
    """Format as ``March 1, 2024`` (``Mar 1, 2024`` when ``abbreviate`` is True)."""
    year, month, day = validate(*date)
    name = MONTH_NAMES[month - 1]
    if abbreviate:
        name = name[:3]
    return f"{name} {day}, {year}"
