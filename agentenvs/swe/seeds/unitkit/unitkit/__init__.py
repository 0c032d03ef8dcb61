"""unitkit: unit conversion, quantity parsing and formatting."""

from .formatting import format_quantity, humanize, round_value
from .quantity import convert_quantity, parse_quantity
from .units import UNITS, Unit, convert, convert_compound, get_unit, parse_compound

__all__ = [
    "UNITS",
    "Unit",
    "convert",
    "convert_compound",
    "convert_quantity",
    "format_quantity",
    "get_unit",
    "humanize",
    "parse_compound",
    "parse_quantity",
    "round_value",
]
