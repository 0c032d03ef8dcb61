"""The four TRIAGE roles of an environment step and their fixed process rewards.

This module holds :class:`Role` (D, E, N, R), :data:`ROLE_REWARDS` (the default reward of each
role) and :func:`parse_role` (a judge's label text -> :class:`Role` or ``None``). The taxonomy and
the provenance of the constants are in docs/triage.md, sections 1 and 3.

>>> parse_role("d"), parse_role("Regression"), parse_role("maybe")
(<Role.D: 'D'>, <Role.R: 'R'>, None)
>>> ROLE_REWARDS[Role.E]
0.5
"""

from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = ["Role", "ROLE_REWARDS", "ROLE_NAMES", "parse_role"]


class Role(str, Enum):
    """The local role of one environment step (docs/triage.md, section 3)."""

    D = "D"
    """Decisive progress: a required sub-goal or task-state change."""
    E = "E"
    """Useful exploration: first-time information gathering or a first visit."""
    N = "N"
    """No-progress infrastructure: harmless, changes neither task nor information state."""
    R = "R"
    """Regression: corrupts the task state, or repeats something without new information."""


#: Default process reward of each role: D +1.0, E +0.5, N -0.1, R -0.5 (docs/triage.md, section 1).
ROLE_REWARDS: dict[Role, float] = {Role.D: 1.0, Role.E: 0.5, Role.N: -0.1, Role.R: -0.5}

#: Role -> its long name, as the judge prompt spells it.
ROLE_NAMES: dict[Role, str] = {
    Role.D: "DECISIVE",
    Role.E: "EXPLORATION",
    Role.N: "NO-PROGRESS",
    Role.R: "REGRESSION",
}

_LOOKUP = {
    **{r.value: r for r in Role},
    **{name: r for r, name in ROLE_NAMES.items()},
    "NO_PROGRESS": Role.N,
    "NOPROGRESS": Role.N,
    "DECISIVE PROGRESS": Role.D,
}


def parse_role(label: Any) -> Role | None:
    """The :class:`Role` a label names (a letter or a long name, any case, surrounding space and
    quotes ignored); ``None`` for anything else (other text, numbers, ``None``)."""
    if isinstance(label, Role):
        return label
    if not isinstance(label, str):
        return None
    return _LOOKUP.get(label.strip().strip("\"'`*[]().").strip().upper())
