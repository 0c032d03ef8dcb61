"""Goal-condition success rate of an ALFWorld state, from the engine's PDDL facts.

This module holds :func:`goal_conditions` (satisfied and total conditions per task type, ALFRED's
definitions, listed in docs/alfworld.md, *Goal-condition success*) and :func:`gcsr`. Facts are
``(predicate, args)`` pairs with lower-case names, as the engine's ``state["_facts"]`` holds them.

>>> facts = [("objecttype", ("a1", "appletype")), ("receptacletype", ("f1", "fridgetype")),
...          ("inreceptacle", ("a1", "f1"))]
>>> gcsr(facts, "pick_and_place_simple", {"object_target": "Apple", "parent_target": "Fridge"})
1.0
>>> gcsr(facts[:2], "pick_and_place_simple", {"object_target": "Apple", "parent_target": "Fridge"})
0.0
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

__all__ = ["goal_conditions", "gcsr"]

_TREATED = {
    "pick_clean_then_place_in_recep": "isclean",
    "pick_heat_then_place_in_recep": "ishot",
    "pick_cool_then_place_in_recep": "iscool",
}


def goal_conditions(
    facts: Iterable[tuple[str, tuple[str, ...]]], task_type: str | None, params: Mapping[str, str]
) -> tuple[int, int]:
    """``(satisfied, total)`` goal conditions of ``task_type`` with ALFRED ``params`` targets."""
    by_pred: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for name, args in facts:
        by_pred[name.lower()].add(tuple(args))
    otype = {o: t for o, t in by_pred["objecttype"]}
    rtype = {r: t for r, t in by_pred["receptacletype"]}
    obj_t = params.get("object_target", "").lower() + "type"
    parent_t = params.get("parent_target", "").lower() + "type"
    targets = {o for o, t in otype.items() if t == obj_t}
    placed = {o for o, r in by_pred["inreceptacle"] if o in targets and rtype.get(r) == parent_t}
    if task_type == "pick_and_place_simple":
        return int(bool(placed)), 1
    if task_type == "pick_two_obj_and_place":
        counts: dict[str, int] = defaultdict(int)
        for o, r in by_pred["inreceptacle"]:
            if o in targets and rtype.get(r) == parent_t:
                counts[r] += 1
        return min(max(counts.values(), default=0), 2), 2
    if task_type == "look_at_obj_in_light":
        toggle_t = params.get("toggle_target", "").lower() + "type"
        held = any(o in targets for _, o in by_pred["holds"])
        here = {loc for _, loc in by_pred["atlocation"]}
        rec_loc = {r: loc for r, loc in by_pred["receptacleatlocation"]}
        lit = any(
            otype.get(o) == toggle_t and (o,) in by_pred["istoggled"] and rec_loc.get(r) in here
            for o, r in by_pred["inreceptacle"]
        )
        return int(held) + int(lit), 2
    if task_type in _TREATED:
        treated = {o for (o,) in by_pred[_TREATED[task_type]] if o in targets}
        return int(bool(placed)) + int(bool(treated)) + int(bool(placed & treated)), 3
    raise ValueError(f"unknown task type {task_type!r}")


def gcsr(
    facts: Iterable[tuple[str, tuple[str, ...]]], task_type: str | None, params: Mapping[str, str]
) -> float:
    """Satisfied / total goal conditions (1.0 exactly when the goal holds)."""
    done, total = goal_conditions(facts, task_type, params)
    return done / total
