"""An int-like roman numeral type."""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import total_ordering

from romanum.convert import check_range, from_roman, to_roman


@total_ordering
class Roman:
    """A number in 1..3999 that prints as a roman numeral.

    ``Roman`` instances compare and hash like their integer value and support ``+``, ``-``,
    ``*`` and ``//`` with other ``Roman`` instances, ints and numeral strings (``"xiv"``).
    Results that leave the valid range raise ValueError.
    """

    __slots__ = ("_value",)

    def __init__(self, value: int | str | Roman) -> None:
        if isinstance(value, Roman):
            value = value._value
        elif isinstance(value, str):
            value = from_roman(value, strict=False)
        self._value = check_range(value)

    @property
    def value(self) -> int:
        return self._value

    def __int__(self) -> int:
        return self._value

    def __index__(self) -> int:
        return self._value

    def __str__(self) -> str:
        return to_roman(self._value)

    def __repr__(self) -> str:
        return f"Roman({to_roman(self._value)!r})"

    def __hash__(self) -> int:
        return hash(self._value)

    @staticmethod
    def _coerce(other: object) -> int | None:
        if isinstance(other, Roman):
            return other._value
        if isinstance(other, int) and not isinstance(other, bool):
            return other
        if isinstance(other, str):
            try:
                return from_roman(other, strict=False)
            except ValueError:
                return None
        return None

    def __eq__(self, other: object) -> bool:
        value = self._coerce(other)
        if value is None:
            return NotImplemented
        return self._value == value

    def __lt__(self, other: object) -> bool:
        value = self._coerce(other)
        if value is None:
            return NotImplemented
        return self._value < value

    def _apply(self, other: object, operation: Callable[[int, int], int]) -> Roman:
        value = self._coerce(other)
        if value is None:
            return NotImplemented
        return Roman(operation(self._value, value))

    def __add__(self, other: object) -> Roman:
        return self._apply(other, operator.add)

    __radd__ = __add__

    def __sub__(self, other: object) -> Roman:
        return self._apply(other, operator.sub)

    def __rsub__(self, other: object) -> Roman:
        return self._apply(other, lambda left, right: right - left)

    def __mul__(self, other: object) -> Roman:
        return self._apply(other, operator.mul)

    __rmul__ = __mul__

    def __floordiv__(self, other: object) -> Roman:
        return self._apply(other, operator.floordiv)
