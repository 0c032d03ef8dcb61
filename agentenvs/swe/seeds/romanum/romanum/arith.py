"""Arithmetic helpers that take and return roman numeral strings."""

from __future__ import annotations

from collections.abc import Iterable

from romanum.convert import from_roman, to_roman


def add(*numerals: str) -> str:
    """Return the sum of one or more numerals as a numeral."""
    if not numerals:
        raise ValueError("add() needs at least one numeral")
    total = 0
    for numeral in numerals:
        total += from_roman(numeral)
    return to_roman(total)


def subtract(minuend: str, subtrahend: str) -> str:
    """Return ``minuend - subtrahend``; the result must be positive."""
    difference = from_roman(minuend) - from_roman(subtrahend)
    if difference <= 0:
        raise ValueError(f"{minuend} - {subtrahend} is not positive; romans have no zero")
    return to_roman(difference)


def successor(numeral: str, steps: int = 1) -> str:
    """Return the numeral ``steps`` places after ``numeral``."""
    return to_roman(from_roman(numeral) + steps)


def compare(left: str, right: str) -> int:
    """Return -1, 0 or 1 as ``left`` is smaller than, equal to or larger than ``right``."""
    a = from_roman(left, strict=False)
    b = from_roman(right, strict=False)
    return (a > b) - (a < b)


def roman_range(start: int, stop: int, step: int = 1) -> list[str]:
    """Like ``range(start, stop, step)`` but yielding numerals."""
    if step == 0:
        raise ValueError("step must not be zero")
    return [to_roman(value) for value in range(start, stop, step)]


def sort_numerals(numerals: Iterable[str], reverse: bool = False) -> list[str]:
    """Sort numerals by their value."""
    return sorted(numerals, key=from_roman, reverse=reverse)
