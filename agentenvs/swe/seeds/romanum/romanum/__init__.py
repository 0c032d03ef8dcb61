"""Roman numerals: conversion, validation, arithmetic and an int-like Roman type."""

from romanum.arith import add, compare, roman_range, sort_numerals, subtract, successor
from romanum.convert import (
    MAX_VALUE,
    MIN_VALUE,
    check_range,
    components,
    from_roman,
    is_valid,
    to_roman,
)
from romanum.numeral import Roman

__all__ = [
    "MAX_VALUE",
    "MIN_VALUE",
    "Roman",
    "add",
    "check_range",
    "compare",
    "components",
    "from_roman",
    "is_valid",
    "roman_range",
    "sort_numerals",
    "subtract",
    "successor",
    "to_roman",
]
