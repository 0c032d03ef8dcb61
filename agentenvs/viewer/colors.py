"""The viewer's diverging colour scale for advantages.

This module holds :func:`advantage_color` and :func:`group_scale`.

An advantage ``a`` on a scale ``s > 0`` (the largest ``|a|`` of its group) is drawn as white blended
toward red (``a < 0``) or green (``a > 0``) by ``t = min(|a| / s, 1)``: white at 0, full colour at
``|a| = s``. Missing advantages (``None``, NaN) are light grey; a scale of 0 (every advantage of the
group is 0) leaves every cell white.

>>> advantage_color(0.0, 1.0), advantage_color(-1.0, 1.0), advantage_color(2.0, 1.0)
('#ffffff', '#dc503c', '#28a046')
>>> advantage_color(None, 1.0), group_scale([[0.5, -2.0], [float("nan")]])
('#e6e6e6', 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["advantage_color", "group_scale", "NEGATIVE", "POSITIVE", "MISSING"]

#: RGB of the most negative and most positive advantage; the colour of a missing one.
NEGATIVE = (220, 80, 60)
POSITIVE = (40, 160, 70)
MISSING = "#e6e6e6"


def advantage_color(value: float | None, scale: float) -> str:
    """``#rrggbb`` of ``value`` on a diverging scale reaching full colour at ``|value| = scale``."""
    if value is None or not math.isfinite(value):
        return MISSING
    t = min(abs(value) / scale, 1.0) if scale > 0 else 0.0
    end = NEGATIVE if value < 0 else POSITIVE
    r, g, b = (round(255 + (c - 255) * t) for c in end)
    return f"#{r:02x}{g:02x}{b:02x}"


def group_scale(advantages: Iterable[Iterable[float | None]]) -> float:
    """The largest finite ``|advantage|`` of a group (per trajectory, per step); 0.0 if none."""
    values = [abs(a) for row in advantages for a in row if a is not None and math.isfinite(a)]
    return max(values, default=0.0)
