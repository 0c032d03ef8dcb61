"""Unit table and conversions. Arithmetic uses fractions so that results are exact."""

from fractions import Fraction
from typing import NamedTuple

LENGTH = "length"
MASS = "mass"
TIME = "time"
TEMPERATURE = "temperature"


class Unit(NamedTuple):
    """A unit: ``base_value = value * factor + offset`` (base units: m, kg, s, K)."""

    symbol: str
    dimension: str
    factor: Fraction
    offset: Fraction = Fraction(0)


def _unit(symbol, dimension, factor, offset="0"):
    return Unit(symbol, dimension, Fraction(factor), Fraction(offset))


UNITS = {
    u.symbol: u
    for u in [
        _unit("mm", LENGTH, "0.001"),
        _unit("cm", LENGTH, "0.01"),
        _unit("m", LENGTH, "1"),
        _unit("km", LENGTH, "1000"),
        _unit("in", LENGTH, "0.0254"),
        _unit("ft", LENGTH, "0.3048"),
        _unit("mi", LENGTH, "1609.344"),
        _unit("mg", MASS, "0.000001"),
        _unit("g", MASS, "0.001"),
        _unit("kg", MASS, "1"),
        _unit("t", MASS, "1000"),
        _unit("lb", MASS, "0.45359237"),
        _unit("ms", TIME, "0.001"),
        _unit("s", TIME, "1"),
        _unit("min", TIME, "60"),
        _unit("h", TIME, "3600"),
        _unit("day", TIME, "86400"),
        _unit("K", TEMPERATURE, "1"),
        _unit("C", TEMPERATURE, "1", "273.15"),
        _unit("F", TEMPERATURE, "5/9", Fraction("273.15") - Fraction(160, 9)),
    ]
}

ALIASES = {
    "meter": "m",
    "meters": "m",
    "kilometer": "km",
    "kilometers": "km",
    "gram": "g",
    "grams": "g",
    "sec": "s",
    "hr": "h",
    "hour": "h",
    "hours": "h",
    "days": "day",
    "°C": "C",
    "degC": "C",
    "°F": "F",
    "degF": "F",
}


def get_unit(name):
    """Look up a unit by symbol or alias; ValueError if unknown."""
    symbol = ALIASES.get(name.strip(), name.strip())
    if symbol not in UNITS:
        raise ValueError(f"unknown unit: {name!r}")
    return UNITS[symbol]


def exact(value):
    """``value`` as a Fraction; floats are taken at their shortest decimal representation."""
    if isinstance(value, float):
        return Fraction(repr(value))
    return Fraction(value)


def convert(value, from_unit, to_unit):
    """Convert ``value`` between two units of the same dimension; returns a float."""
    source = get_unit(from_unit)
    target = get_unit(to_unit)
    if source.dimension != target.dimension:
        raise ValueError(f"cannot convert {source.dimension} to {target.dimension}")
    base = exact(value) * source.factor + source.offset
    return float((base - target.offset) / target.factor)


def parse_compound(expr):
    """Parse ``km/h``, ``m/s^2`` or ``kg*m/s^2`` into ``(factor, {dimension: power})``."""
    groups = expr.split("/")
    if len(groups) > 2 or not all(group.strip() for group in groups):
        raise ValueError(f"bad compound unit: {expr!r}")
    factor = Fraction(1)
    dims = {}
    for index, group in enumerate(groups):
        sign = 1 if index == 0 else -1
        for term in group.split("*"):
            name, _, power_text = term.partition("^")
            power = int(power_text) if power_text else 1
            unit = get_unit(name)
            if unit.offset != 0:
                raise ValueError(f"offset unit {unit.symbol!r} cannot be used in {expr!r}")
            factor *= unit.factor ** (sign * power)
            dims[unit.dimension] = dims.get(unit.dimension, 0) + sign * power
    return factor, {dim: power for dim, power in dims.items() if power != 0}


def convert_compound(value, from_expr, to_expr):
    """Convert between compound units with matching dimensions, e.g. km/h to m/s."""
    from_factor, from_dims = parse_compound(from_expr)
    to_factor, to_dims = parse_compound(to_expr)
    if from_dims != to_dims:
        raise ValueError(f"incompatible units: {from_expr!r} and {to_expr!r}")
    return float(exact(value) * from_factor / to_factor)
