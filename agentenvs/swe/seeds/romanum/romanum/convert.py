"""Conversion between integers and roman numerals."""

from __future__ import annotations

MIN_VALUE = 1
MAX_VALUE = 3999

_SYMBOLS = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)
_DIGITS = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def check_range(value: int) -> int:
    """Return ``value`` if it is an int that a roman numeral can represent.

    Raises TypeError for non-integers (bool included) and ValueError outside 1..3999.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {type(value).__name__}")
    if value < MIN_VALUE or value > MAX_VALUE:
        raise ValueError(f"{value} is outside the range {MIN_VALUE}..{MAX_VALUE}")
    return value


def components(value: int) -> list[str]:
    """Split ``value`` into its roman building blocks, largest first.

    ``components(1994) == ["M", "CM", "XC", "IV"]``.
    """
    check_range(value)
    parts = []
    remaining = value
    for amount, symbol in _SYMBOLS:
        count, remaining = divmod(remaining, amount)
        parts.extend([symbol] * count)
        if remaining == 0:
            break
    return parts


def to_roman(value: int, lowercase: bool = False) -> str:
    """Return the canonical roman numeral for ``value`` (1..3999)."""
    text = "".join(components(value))
    return text.lower() if lowercase else text


def from_roman(text: str, strict: bool = True) -> int:
    """Parse a roman numeral.

    In strict mode (the default) only canonical upper-case numerals are accepted, so
    ``"IIII"`` and ``"iv"`` are rejected. With ``strict=False`` the text may be lower case,
    surrounded by blanks and use non-canonical forms such as ``"IIII"`` or ``"IC"``.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected a str, got {type(text).__name__}")
    cleaned = text if strict else text.strip().upper()
    if not cleaned:
        raise ValueError("empty roman numeral")
    total = 0
    for index, char in enumerate(cleaned):
        value = _DIGITS.get(char)
        if value is None:
            raise ValueError(f"invalid roman digit {char!r} in {text!r}")
        if index + 1 < len(cleaned) and value < _DIGITS.get(cleaned[index + 1], 0):
            total -= value
        else:
            total += value
    if total < MIN_VALUE or total > MAX_VALUE:
        raise ValueError(f"{text!r} is outside the range {MIN_VALUE}..{MAX_VALUE}")
    if strict and to_roman(total) != cleaned:
        raise ValueError(f"{text!r} is not canonical; expected {to_roman(total)!r}")
    return total


def is_valid(text: str) -> bool:
    """Return True if ``text`` is a canonical roman numeral."""
    try:
        from_roman(text)
    except (TypeError, ValueError):
        return False
    return True
