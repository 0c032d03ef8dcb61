"""What a TRIAGE judge is asked and what it answers: the local window around one step.

This module holds:

* :class:`StepView` - one ``(action, observation)`` pair as a judge sees it (text).
* :class:`StepFacts` - privileged facts about the current step, read only by rule-based judges
  (:class:`~agentenvs.wrappers.models.judges.oracle.OracleJudge`); never rendered into a prompt.
* :class:`JudgeRequest` - task text, up to ``window_prev`` earlier views, the current view, up to
  ``window_future`` later views. It has no reward, success or outcome field, by design.
* :class:`JudgeResult` - a role (or ``None``: fallback), evidence, an optional score and the
  tokens the judge spent on it.
* :class:`Judge` - the protocol every judge follows: ``judge(requests) -> list[JudgeResult]``;
  :class:`JudgeUsage` - the running totals a judge keeps (calls, segments, tokens, seconds).
* :func:`render` - any observation or action as bounded text; :func:`task_text`;
  :func:`build_requests` - the requests of every step of a trajectory.

The window rules are in docs/triage.md, section 4.

>>> from agentenvs.core import Step, Trajectory
>>> t = Trajectory("t", "g", [Step(f"o{k}", f"a{k}", 0.0) for k in range(8)], final_observation="end")
>>> reqs = build_requests(t, window_prev=5, window_future=5)
>>> len(reqs), len(reqs[0].prev), len(reqs[0].future), reqs[7].current, reqs[7].future
(8, 0, 5, StepView(action='a7', observation='end'), ())
>>> [v.action for v in reqs[6].prev]
['a1', 'a2', 'a3', 'a4', 'a5']
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentenvs.wrappers.batch import action_signature, hashable_key
from agentenvs.wrappers.models.judges.roles import Role
from agentenvs.wrappers.rewards import next_observations

from agentenvs.core import Trajectory

__all__ = [
    "StepView",
    "StepFacts",
    "JudgeRequest",
    "JudgeResult",
    "JudgeUsage",
    "Judge",
    "MODES",
    "render",
    "task_text",
    "step_facts",
    "build_requests",
]

#: What a request asks for: a role (``"roles"``, TRIAGE) or a progress score in [-1, 1]
#: (``"scalar"``, the scalar process-reward baseline).
MODES = ("roles", "scalar")


@dataclass(frozen=True)
class StepView:
    """One environment step as a judge sees it: the action text and the observation it led to."""

    action: str
    observation: str


@dataclass(frozen=True)
class StepFacts:
    """Privileged facts about one step, for rule-based judges only (never shown to a model).

    Attributes:
        progress: the change of the env's privileged task progress over the step
            (``Step.progress``); ``None`` where the env reports none.
        valid: the env accepted the action (``Step.action_valid``).
        repeat_of: index of an earlier step of the trajectory with the same state key and action
            signature, or ``None`` (also ``None`` when the state key is unknown).
        repeat_invalid: the action is invalid and the same action text was invalid earlier.
        new_state: the state reached was not visited earlier in the trajectory (the initial state
            counts as visited); ``None`` when state keys are unknown.
        new_action: no earlier step had this action signature.
    """

    progress: float | None
    valid: bool
    repeat_of: int | None
    repeat_invalid: bool
    new_state: bool | None
    new_action: bool


@dataclass(frozen=True)
class JudgeRequest:
    """The judge's input for one segment (one env step). Hashable: it is its own cache key.

    Attributes:
        task: the task text (docs/triage.md, section 4).
        prev: up to ``window_prev`` earlier views, oldest first.
        current: the view to label.
        future: up to ``window_future`` later views.
        facts: privileged facts for rule-based judges (:class:`StepFacts`) or ``None``.
        mode: ``"roles"`` (ask for a role) or ``"scalar"`` (ask for a score in [-1, 1]).
        require_evidence: the prompt asks for an evidence phrase per label.

    There is deliberately no reward, success or outcome field.
    """

    task: str
    prev: tuple[StepView, ...]
    current: StepView
    future: tuple[StepView, ...]
    facts: StepFacts | None = None
    mode: str = "roles"
    require_evidence: bool = True

    @property
    def current_index(self) -> int:
        """Position of the current step among the shown steps (= ``len(prev)``)."""
        return len(self.prev)


@dataclass
class JudgeResult:
    """A judge's answer for one request.

    Attributes:
        role: the :class:`Role`, or ``None`` when the output was unusable (the segment then gets
            the config's ``fallback_reward``).
        evidence: the short reason the judge gave, if any.
        score: the progress score in [-1, 1] (``"scalar"`` mode), if any.
        aux: other numbers the judge returned (never used by the credit formula).
        raw: the judge's raw output text, if any.
        tokens: prompt plus generated tokens the judge spent on this request (0 for rule judges).
    """

    role: Role | None
    evidence: str | None = None
    score: float | None = None
    aux: dict[str, float] = field(default_factory=dict)
    raw: str | None = None
    tokens: int = 0


@dataclass
class JudgeUsage:
    """Running totals of a judge: ``calls`` (batched calls), ``segments`` (requests answered),
    ``tokens``, ``seconds`` (wall clock) and ``failures`` (results with no usable answer)."""

    calls: int = 0
    segments: int = 0
    tokens: int = 0
    seconds: float = 0.0
    failures: int = 0

    def add(self, results: Sequence[JudgeResult], seconds: float, mode: str = "roles") -> None:
        """Count one batched call that produced ``results`` in ``seconds``."""
        self.calls += 1
        self.segments += len(results)
        self.tokens += sum(r.tokens for r in results)
        self.seconds += seconds
        key = "role" if mode == "roles" else "score"
        self.failures += sum(getattr(r, key) is None for r in results)


@runtime_checkable
class Judge(Protocol):
    """Anything with ``judge(requests) -> list[JudgeResult]`` (one result per request, in order).

    A judge must not raise for a bad model answer or a failed request: it returns a result with
    ``role=None`` (and ``score=None``) instead.
    """

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]: ...


def render(value: Any, max_chars: int = 2000) -> str:
    """``value`` as text of at most ``max_chars`` characters: text as it is, anything else
    (numpy arrays, numbers, dicts) as a short ``repr``; longer text keeps its head and tail.

    >>> render("abc"), render(3), render("x" * 30, max_chars=11)
    ('abc', '3', 'xxxxx...xxx')
    """
    text = str(value) if isinstance(value, str) else _short_repr(value)
    if len(text) <= max_chars:
        return text
    head = max_chars // 2
    tail = max_chars - head - 3
    return f"{text[:head]}...{text[len(text) - tail :] if tail > 0 else ''}"


def _short_repr(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and getattr(value, "size", 0) > 16:
        return f"<{type(value).__name__} shape={tuple(shape)} dtype={getattr(value, 'dtype', '?')}>"
    return repr(value)


def task_text(trajectory: Trajectory, max_chars: int = 2000) -> str:
    """The task shown to the judge: ``trajectory.info["task"]`` where set (a goal text), else the
    episode's first observation (text envs state their goal there)."""
    task = trajectory.info.get("task")
    if task is None and trajectory.steps:
        task = trajectory.steps[0].observation
    return render("" if task is None else task, max_chars)


def step_facts(trajectory: Trajectory) -> list[StepFacts]:
    """The privileged :class:`StepFacts` of every step of ``trajectory`` (one pass)."""
    steps = trajectory.steps
    known = all(s.state_key is not None and s.next_state_key is not None for s in steps)
    visited: set[Hashable] = {hashable_key(steps[0].state_key)} if steps and known else set()
    pairs: dict[tuple[Hashable, Hashable], int] = {}
    actions: set[Hashable] = set()
    invalid: set[str] = set()
    out = []
    for k, step in enumerate(steps):
        sig = hashable_key(action_signature(step))
        text = render(step.action).strip()
        repeat_of = None
        new_state = None
        if known:
            pair = (hashable_key(step.state_key), sig)
            repeat_of = pairs.setdefault(pair, k)
            repeat_of = None if repeat_of == k else repeat_of
            nxt = hashable_key(step.next_state_key)
            new_state = nxt not in visited
            visited.add(nxt)
        out.append(
            StepFacts(
                progress=None if step.progress is None else float(step.progress),
                valid=bool(step.action_valid),
                repeat_of=repeat_of,
                repeat_invalid=not step.action_valid and text in invalid,
                new_state=new_state,
                new_action=sig not in actions,
            )
        )
        actions.add(sig)
        if not step.action_valid:
            invalid.add(text)
    return out


def build_requests(
    trajectory: Trajectory,
    window_prev: int = 5,
    window_future: int = 5,
    *,
    mode: str = "roles",
    require_evidence: bool = True,
    max_chars: int = 2000,
) -> list[JudgeRequest]:
    """One :class:`JudgeRequest` per step of ``trajectory``, in step order.

    Step ``k``'s view is ``(action_k, observation after step k)`` (the observation after the
    last step is ``trajectory.final_observation``); its window holds views
    ``k - window_prev .. k - 1`` and ``k + 1 .. k + window_future``, cut at the trajectory's ends
    (no padding). Texts are :func:`render`-ed to at most ``max_chars`` characters; an LLM answer
    is shown whole (reasoning included).
    """
    if window_prev < 0 or window_future < 0:
        raise ValueError("window_prev and window_future must be >= 0")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    task = task_text(trajectory, max_chars)
    after = next_observations(trajectory)
    views = tuple(
        StepView(render(s.action, max_chars), render(o, max_chars))
        for s, o in zip(trajectory.steps, after, strict=True)
    )
    facts = step_facts(trajectory)
    return [
        JudgeRequest(
            task=task,
            prev=views[max(0, k - window_prev) : k],
            current=views[k],
            future=views[k + 1 : k + 1 + window_future],
            facts=facts[k],
            mode=mode,
            require_evidence=require_evidence,
        )
        for k in range(len(views))
    ]
