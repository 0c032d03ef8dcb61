"""A privileged rule-based judge: roles from the env's task progress and the trajectory's structure.

This module holds :class:`OracleJudge` and :func:`oracle_role` (the rule table of docs/triage.md,
section 7, applied to one step's :class:`~agentenvs.wrappers.models.judges.request.StepFacts`). It needs no model and
no network: it is the default judge of :class:`~agentenvs.wrappers.triage.TriageConfig`, and it reads what a
model judge never sees (``Step.progress``, state keys, action validity).

>>> from agentenvs.wrappers.models.judges.request import StepFacts
>>> oracle_role(StepFacts(0.5, True, None, False, True, True))
(<Role.D: 'D'>, 'progress rose by 0.5')
>>> oracle_role(StepFacts(None, True, 2, False, False, False))
(<Role.R: 'R'>, 'no progress signal; repeats step 2 (same state, same action)')
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from agentenvs.wrappers.models.judges.request import (
    JudgeRequest,
    JudgeResult,
    JudgeUsage,
    StepFacts,
)
from agentenvs.wrappers.models.judges.roles import ROLE_REWARDS, Role

__all__ = ["OracleJudge", "oracle_role"]


def _structural(facts: StepFacts) -> tuple[Role, str]:
    if not facts.valid:
        if facts.repeat_invalid:
            return Role.R, "repeats an invalid action"
        return Role.N, "invalid action (first time)"
    if facts.repeat_of is not None:
        return Role.R, f"repeats step {facts.repeat_of} (same state, same action)"
    if facts.new_state is True:
        return Role.E, "first visit of a new state"
    if facts.new_state is False:
        return Role.N, "returns to a visited state without progress"
    if facts.new_action:
        return Role.E, "a new action (states unknown)"
    return Role.N, "a repeated action (states unknown)"


def oracle_role(facts: StepFacts) -> tuple[Role, str]:
    """The role and evidence of one step (docs/triage.md, section 7).

    Progress rose: D. Progress fell: R. Otherwise the structural rules: an invalid action is N the
    first time and R when the same action text was invalid before; a valid action repeating an
    earlier (state, action) pair of the trajectory is R; one reaching a state not visited before is
    E, one returning to a visited state N; with unknown state keys, a new action signature is E and
    a repeated one N. Without a progress signal (``None``) the evidence says so.
    """
    progress = facts.progress
    if progress is not None and progress > 0:
        return Role.D, f"progress rose by {progress:.3g}"
    if progress is not None and progress < 0:
        return Role.R, f"progress fell by {-progress:.3g}"
    role, why = _structural(facts)
    return role, why if progress is not None else f"no progress signal; {why}"


class OracleJudge:
    """Labels every request with :func:`oracle_role` of its ``facts``.

    In ``"scalar"`` mode the score is the role's default reward
    (:data:`~agentenvs.wrappers.models.judges.roles.ROLE_REWARDS`). A request without facts gets
    ``role=None`` (the fallback). Keeps :attr:`usage` (no tokens).
    """

    def __init__(self) -> None:
        self.usage = JudgeUsage()

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        start = time.perf_counter()
        results = []
        for request in requests:
            if request.facts is None:
                results.append(JudgeResult(None, "no privileged facts in the request"))
                continue
            role, evidence = oracle_role(request.facts)
            score = ROLE_REWARDS[role] if request.mode == "scalar" else None
            results.append(JudgeResult(role, evidence, score=score))
        mode = requests[0].mode if requests else "roles"
        self.usage.add(results, time.perf_counter() - start, mode)
        return results

    def __repr__(self) -> str:
        return "OracleJudge()"
