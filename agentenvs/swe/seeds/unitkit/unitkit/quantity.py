"""Parsing quantities such as ``"3.5 km"``, ``"-40 °C"`` or ``"1.2e3 m/s"``."""

from .units import convert, convert_compound


def _number_end(text):
    """Length of the numeric prefix of ``text`` (sign, digits, fraction, exponent)."""
    pos = 0
    if pos < len(text) and text[pos] in "+-":
        pos += 1
    digits_start = pos
    seen_dot = False
    for pos in range(digits_start, len(text) + 1):
        if pos == len(text):
            break
        ch = text[pos]
        if ch == "." and not seen_dot:
            seen_dot = True
        elif not ch.isdigit():
            break
    if pos - digits_start - int(seen_dot) <= 0:
        return 0
    if pos + 1 < len(text) and text[pos] in "eE":
        exp = pos + 1
        if text[exp] in "+-":
            exp += 1
        if exp < len(text) and text[exp].isdigit():
            for pos in range(exp, len(text) + 1):
                if pos == len(text) or not text[pos].isdigit():
                    break
    return pos


def parse_quantity(text):
    """Split ``"3.5 km"`` into ``(3.5, "km")``; integers stay ints. ValueError if malformed."""
    text = text.strip()
    end = _number_end(text)
    if end == 0:
        raise ValueError(f"no number in {text!r}")
    number = text[:end]
    unit = text[end:].strip()
    if not unit:
        raise ValueError(f"no unit in {text!r}")
    if "." in number or "e" in number.lower():
        return float(number), unit
    return int(number), unit


def convert_quantity(text, to_unit):
    """Parse ``text`` and convert it to ``to_unit`` (simple or compound units)."""
    value, unit = parse_quantity(text)
    if "/" in unit or "*" in unit or "^" in unit:
        return convert_compound(value, unit, to_unit)
    return convert(value, unit, to_unit)
