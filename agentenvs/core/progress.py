"""Privileged task progress: the rules of every env's ``info["progress"]`` (docs/credit.md, section 11).

This module holds :data:`PENDING_SHARE` (the most progress a state can show before the task's final
commitment), :func:`pending_progress` (a fraction of the work scaled below that cap) and
:func:`check_progress` (the contract check :class:`~agentenvs.core.TextAgentEnv` applies).

Progress is a float in ``[0, 1]``, a function of the current state, and exactly 1 when the task is
won. Some tasks end with a commitment (WebShop's purchase, SearchQA's answer, SWE's submission): a
state before it holds at most ``PENDING_SHARE``, so only the commitment itself reaches 1.

>>> pending_progress(1.0), pending_progress(0.5), pending_progress(0.0)
(0.9, 0.45, 0.0)
>>> check_progress(0.25)
0.25
>>> check_progress(1.5)
Traceback (most recent call last):
...
ValueError: info['progress'] must be a finite float in [0, 1], got 1.5
"""

from __future__ import annotations

__all__ = ["PENDING_SHARE", "pending_progress", "check_progress"]

#: Progress of a state that has done all the work but not yet committed (bought, answered,
#: submitted); committing then takes it to the outcome (1.0 when won).
PENDING_SHARE = 0.9


def pending_progress(fraction: float) -> float:
    """``PENDING_SHARE * fraction`` for the ``fraction`` (in ``[0, 1]``) of the work a state before
    the commitment has done; ``ValueError`` outside ``[0, 1]``."""
    return PENDING_SHARE * check_progress(fraction)


def check_progress(value: float) -> float:
    """``value`` as a float when it is a finite number in ``[0, 1]``, else ``ValueError``."""
    progress = float(value)
    if not 0.0 <= progress <= 1.0:  # also false for NaN
        raise ValueError(f"info['progress'] must be a finite float in [0, 1], got {value!r}")
    return progress
