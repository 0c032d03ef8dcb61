"""Formatting quantities with a fixed precision and explicit rounding rules."""

from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

from .units import convert, get_unit

ROUNDING = {"half_up": ROUND_HALF_UP, "half_even": ROUND_HALF_EVEN, "down": ROUND_DOWN}
LADDERS = {
    "length": ("mm", "cm", "m", "km"),
    "mass": ("mg", "g", "kg", "t"),
    "time": ("ms", "s", "min", "h", "day"),
}


def round_value(value, precision=2, rounding="half_up"):
    """Round ``value`` (taken at its decimal repr) to ``precision`` places; returns a Decimal."""
    if precision < 0:
        raise ValueError("precision must be non-negative")
    if rounding not in ROUNDING:
        raise ValueError(f"unknown rounding mode: {rounding!r}")
    quantum = Decimal(1).scaleb(-precision)
    return Decimal(repr(value)).quantize(quantum, rounding=ROUNDING[rounding])


def format_quantity(value, unit, precision=2, rounding="half_up", trim=False):
    """``format_quantity(2.345, "km") == "2.35 km"``; ``trim`` drops trailing zeros."""
    rounded = round_value(value, precision, rounding)
    if rounded == 0:
        rounded = abs(rounded)
    text = f"{rounded:f}"
    if trim and "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} {unit}"


def humanize(value, unit, precision=1):
    """Express a length, mass or time in the largest ladder unit where it is at least 1."""
    dimension = get_unit(unit).dimension
    if dimension not in LADDERS:
        raise ValueError(f"no unit ladder for {dimension}")
    ladder = LADDERS[dimension]
    best = ladder[0]
    for candidate in reversed(ladder):
        if abs(convert(value, unit, candidate)) >= 1:
            best = candidate
            break
    return format_quantity(convert(value, unit, best), best, precision, trim=True)
