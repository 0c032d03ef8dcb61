"""The judge's rubric prompt and a tolerant parser of its answer.

This module holds :func:`build_judge_prompt` (a :class:`~agentenvs.wrappers.models.judges.request.JudgeRequest` ->
the prompt text: rubric, calibration rules, the window, the output format),
:func:`judge_messages` (the same as a chat: one user message) and :func:`parse_judge_output`
(answer text -> :class:`~agentenvs.wrappers.models.judges.request.JudgeResult`). The prompt structure and the parser
rules are in docs/triage.md, sections 5 and 6.

>>> parse_judge_output('I think it explores. {"labels": ["E", "R"], "evidence": ["a", "b"]}', 1)
JudgeResult(role=<Role.R: 'R'>, evidence='b', score=None, aux={}, raw='I think it explores. {"labels": ["E", "R"], "evidence": ["a", "b"]}', tokens=0)
>>> parse_judge_output("no json here", 0).role is None
True
"""

from __future__ import annotations

import json
import math
from typing import Any

from agentenvs.wrappers.models.judges.request import JudgeRequest, JudgeResult, StepView
from agentenvs.wrappers.models.judges.roles import parse_role

__all__ = ["build_judge_prompt", "judge_messages", "parse_judge_output"]

_ROLES_RUBRIC = """\
You evaluate one step of a multi-turn agent trajectory. Below are the TASK, up to five PREVIOUS \
steps, the CURRENT step and up to five FUTURE steps, each written as "action -> observation". \
Classify ONLY the CURRENT step's action into exactly one role:

D = DECISIVE: the action changes the task state in a way the task requires: it completes a \
required sub-goal (takes, cleans, heats, cools or places the target object; selects an attribute \
the task demands; buys the right product; submits the correct answer; pushes a box onto a target).
E = EXPLORATION: first-time, sensible information gathering or a first visit to a new place or \
state, without completing a sub-goal (first look inside a container, first trip to a candidate \
location, a first or a refined search, reading a failing test).
N = NO-PROGRESS: changes neither the task state nor what the agent knows, and does no harm (an \
empty walk, passing through an irrelevant place, a harmless duplicate after the task is done).
R = REGRESSION: harms the task state (wrong object, wrong product or purchase, wrong edit, wrong \
transform, a box pushed off its target) OR repeats something already done with no new \
information (examining the same thing again, re-clicking a selected option, repeating an invalid \
action).

A step that only makes a later decisive step possible is still E, not D.

Calibration rules:
1. Judge only from the steps shown. Do not credit or blame the step for anything outside them.
2. Ground every label in the shown action and observation.
3. A first examine or inspect of a target is E; examining the same target again with no change \
is R.
4. An observation such as "Nothing happens." or "Invalid action" means the action did not \
execute; if such an action is repeated, it is R.
5. Taking, placing, heating, cooling or buying the correct target is D.
6. Re-clicking an option that is already selected is R, even when the observation reports \
success."""

_SCALAR_RUBRIC = """\
You evaluate one step of a multi-turn agent trajectory. Below are the TASK, up to five PREVIOUS \
steps, the CURRENT step and up to five FUTURE steps, each written as "action -> observation". \
Rate ONLY the CURRENT step's action with one progress score between -1 and 1: 1 = it directly \
completes what the task requires, 0 = no effect, -1 = it harms the task state or wastes a step \
repeating something already done. Judge only from the steps shown."""


def _steps(views: tuple[StepView, ...], first: int) -> str:
    if not views:
        return "(none)"
    return "\n".join(f"[{first + i}] {v.action} -> {v.observation}" for i, v in enumerate(views))


def build_judge_prompt(request: JudgeRequest, require_evidence: bool | None = None) -> str:
    """The whole prompt for ``request`` (``require_evidence`` defaults to the request's own).

    Steps are numbered from 0 in the order shown; the CURRENT step's number is
    ``request.current_index``. The answer format asks for reasoning first and a one-line JSON
    object last, with one label (and one evidence phrase) per shown step in ``"roles"`` mode, or
    a ``"score"`` in ``"scalar"`` mode. Reward and outcome never appear (the request has none).
    """
    if require_evidence is None:
        require_evidence = request.require_evidence
    k = request.current_index
    shown = len(request.prev) + 1 + len(request.future)
    window = (
        f"TASK:\n{request.task}\n\n"
        f"PREVIOUS STEPS:\n{_steps(request.prev, 0)}\n\n"
        f"CURRENT STEP:\n{_steps((request.current,), k)}\n\n"
        f"FUTURE STEPS:\n{_steps(request.future, k + 1)}"
    )
    if request.mode == "scalar":
        fields = '{"score": <number in [-1, 1]>'
        fields += ', "evidence": "<short reason>"}' if require_evidence else "}"
        answer = f"Reason briefly, then write as your LAST line one JSON object: {fields}"
        return f"{_SCALAR_RUBRIC}\n\n{window}\n\n{answer}"
    fields = '{"labels": [<one of "D", "E", "N", "R" per step>]'
    if require_evidence:
        fields += ', "evidence": [<a short reason grounded in the step, per step>]}'
    else:
        fields += "}"
    answer = (
        "Reason first, then write as your LAST line one JSON object: "
        f"{fields}. Give {shown} labels, one per shown step in the order shown; the label at "
        f"position {k} is the CURRENT step's role."
    )
    return f"{_ROLES_RUBRIC}\n\n{window}\n\n{answer}"


def judge_messages(request: JudgeRequest) -> list[dict[str, str]]:
    """``build_judge_prompt(request)`` as chat messages (one user message)."""
    return [{"role": "user", "content": build_judge_prompt(request)}]


def _last_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object that ends last in ``text`` (the outermost one when several end there)."""
    decoder = json.JSONDecoder()
    best: tuple[int, int, dict[str, Any]] | None = None
    start = text.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            obj, end = None, -1
        if isinstance(obj, dict) and (best is None or end > best[0]):
            best = (end, start, obj)
        start = text.find("{", start + 1)
    return None if best is None else best[2]


def _pick(value: Any, index: int) -> Any:
    """A list's single item, else its ``index``-th (``None`` out of range); a scalar as it is."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return value[0]
        return value[index] if 0 <= index < len(value) else None
    return value


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        score = float(value)
    except ValueError:
        return None
    return min(1.0, max(-1.0, score)) if math.isfinite(score) else None


def parse_judge_output(text: str, current_index: int, max_chars: int = 20_000) -> JudgeResult:
    """Read a judge's answer; never raises.

    The last JSON object in the text counts (reasoning before it is ignored; of several objects,
    the one that ends last; only the last ``max_chars`` characters are read). Its ``"labels"``
    (also ``"label"`` or ``"role"``): a single label, a one-item list, or a list from which item
    ``current_index`` is taken. A label is a role letter or name
    (:func:`~agentenvs.wrappers.models.judges.roles.parse_role`); anything else gives ``role=None``.
    ``"evidence"`` is picked the same way, ``"score"`` is read as a number clipped to [-1, 1], and
    numbers under ``"aux"`` are kept.
    """
    text = text if isinstance(text, str) else ""
    obj = _last_json_object(text[-max_chars:]) or {}
    label = next((obj[k] for k in ("labels", "label", "role", "roles") if k in obj), None)
    evidence = _pick(obj.get("evidence"), current_index)
    aux = obj.get("aux")
    if not isinstance(aux, dict):
        aux = {}
    numbers = {str(k): v for k, v in aux.items() if isinstance(v, (int, float))}
    return JudgeResult(
        role=parse_role(_pick(label, current_index)),
        evidence=None if evidence is None else str(evidence),
        score=_score(obj.get("score")),
        aux={k: float(v) for k, v in numbers.items() if not isinstance(v, bool)},
        raw=text,
    )
