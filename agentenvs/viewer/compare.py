"""One group's advantages under several credit methods, for side-by-side display.

This module holds :data:`STRUCTURAL_METHODS`, :class:`MethodAdvantages`, :func:`parse_methods`
and :func:`compare_methods`.

The run's own method (the one the store recorded) is shown with the advantages stored in the run,
as they were used for training. Every other requested method re-credits a deep copy of the group
with :func:`agentenvs.wrappers.assign_advantages` and its default config (the stored trajectories are never
changed). Methods that consult a model or judge (the registry's ``needs_model`` entries: TRIAGE, SPA,
HISR) are not re-run here: they appear only when they are the run's own method.

>>> from agentenvs.core import Step, Trajectory
>>> g = [Trajectory("t", "g", [Step("o", "a", 10.0, state_key="A", advantage=0.5)], success=True),
...      Trajectory("t", "g", [Step("o", "b", 0.0, state_key="A", advantage=-0.5)])]
>>> views = compare_methods(g, ["grpo", "spa"], stored_method="graphgpo")
>>> [(v.method, v.source) for v in views]
[('graphgpo', 'stored'), ('grpo', 'recomputed'), ('spa', 'skipped')]
>>> [round(a, 3) for row in views[1].advantages for a in row], g[0].steps[0].advantage
([0.707, -0.707], 0.5)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentenvs.core import Trajectory
from agentenvs.wrappers import assign_advantages, registered_methods
from agentenvs.wrappers.registry import METHODS, canonical_name

__all__ = [
    "STRUCTURAL_METHODS",
    "MethodAdvantages",
    "parse_methods",
    "compare_methods",
]

#: The methods re-credited by default: the registry's pure ones (``needs_model=False``) at import,
#: in registration order (the built-ins: grpo, gigpo, graphgpo, rtmc).
STRUCTURAL_METHODS = tuple(m.name for m in registered_methods(needs_model=False))


@dataclass(frozen=True)
class MethodAdvantages:
    """One method's advantages of a group.

    Attributes:
        method: the canonical method name.
        source: ``"stored"`` (from the run), ``"recomputed"`` (default config, on a copy),
            ``"skipped"`` (needs a model) or ``"failed"``.
        advantages: per trajectory, per step (``None`` where a step has none); empty lists when
            skipped or failed.
        note: why it was skipped or how it failed (empty otherwise).
    """

    method: str
    source: str
    advantages: list[list[float | None]]
    note: str = ""


def parse_methods(text: str | Iterable[str]) -> list[str]:
    """Canonical method names from ``"grpo,gigpo"`` (or a list), duplicates removed, order kept.

    >>> parse_methods("grpo, graph,graphgpo")
    ['grpo', 'graphgpo']

    Raises:
        ValueError: an unknown method name (the message lists the known ones).
    """
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    out: list[str] = []
    for name in filter(None, names):
        if name not in METHODS:
            raise ValueError(f"unknown credit method {name!r}; known: {', '.join(sorted(METHODS))}")
        canonical = canonical_name(name)
        if canonical not in out:
            out.append(canonical)
    return out


def _read(trajectories: Sequence[Trajectory]) -> list[list[float | None]]:
    return [
        [
            None if s.advantage is None or not math.isfinite(s.advantage) else float(s.advantage)
            for s in t.steps
        ]
        for t in trajectories
    ]


def compare_methods(
    trajectories: Sequence[Trajectory],
    methods: Sequence[str] = STRUCTURAL_METHODS,
    stored_method: str | None = None,
) -> list[MethodAdvantages]:
    """The group's advantages under ``stored_method`` (first, as stored) and each of ``methods``.

    Args:
        trajectories: one group.
        methods: names or aliases of :data:`agentenvs.wrappers.registry.METHODS`.
        stored_method: the method that credited the stored advantages, or ``None`` (unknown:
            the stored advantages are not listed).

    Raises:
        ValueError: an unknown method name.
    """
    wanted = parse_methods(methods)
    own = (
        canonical_name(stored_method)
        if stored_method is not None and stored_method in METHODS
        else stored_method
    )
    views = [] if own is None else [MethodAdvantages(own, "stored", _read(trajectories))]
    for name in wanted:
        if name == own:
            continue
        if METHODS[name].needs_model:
            views.append(MethodAdvantages(name, "skipped", [], "needs a model or judge"))
            continue
        group = copy.deepcopy(list(trajectories))
        try:
            assign_advantages([group], name)
        except (ValueError, TypeError, RuntimeError) as exc:
            views.append(MethodAdvantages(name, "failed", [], f"{type(exc).__name__}: {exc}"))
            continue
        views.append(MethodAdvantages(name, "recomputed", _read(group)))
    return views
