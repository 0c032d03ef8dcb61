"""Writing ALFWorld PDDL problems: identifier mangling and the problem text (pure functions).

This module holds :class:`Receptacle`, :class:`Item` and :class:`Room` (a generated room: where
every receptacle and object is), :func:`mangle` (ALFRED id -> PDDL symbol), :func:`loc_symbol`,
:func:`goal_pddl` (the goal formula of a task type) and :func:`problem_text` (the whole
``pddl_problem`` string of a ``game.tw-pddl`` file).

>>> mangle("Apple|+01.00|+00.97|-01.10")
'Apple_bar__plus_01_dot_00_bar__plus_00_dot_97_bar__minus_01_dot_10'
>>> loc_symbol((-4, 9, 3, 15))
'loc_bar__minus_4_bar_9_bar_3_bar_15'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["Receptacle", "Item", "Room", "mangle", "loc_symbol", "goal_pddl", "problem_text"]

_MANGLE = (("|", "_bar_"), ("+", "_plus_"), ("-", "_minus_"), (".", "_dot_"), (",", "_comma_"))


def mangle(alfred_id: str) -> str:
    """The PDDL symbol of an ALFRED id (``|`` -> ``_bar_``, ``+`` -> ``_plus_``, ...)."""
    for old, new in _MANGLE:
        alfred_id = alfred_id.replace(old, new)
    return alfred_id


def loc_symbol(loc: tuple[int, int, int, int]) -> str:
    """The PDDL symbol of a location ``(x, z, rotation, horizon)`` in ALFRED grid units."""
    return mangle("loc|" + "|".join(str(v) for v in loc))


@dataclass(frozen=True)
class Receptacle:
    """A static receptacle: ALFRED id, class name and the agent pose that reaches it."""

    id: str
    cls: str
    loc: tuple[int, int, int, int]


@dataclass(frozen=True)
class Item:
    """A pickupable (or toggleable) object: ALFRED id, class name and the id of its receptacle."""

    id: str
    cls: str
    receptacle: str


@dataclass
class Room:
    """A generated room: receptacles, objects and the agent's start location."""

    receptacles: list[Receptacle]
    items: list[Item]
    start: tuple[int, int, int, int]
    props: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # class -> property facts

    def receptacle(self, rid: str) -> Receptacle:
        """The receptacle with id ``rid``."""
        return next(r for r in self.receptacles if r.id == rid)


_GOALS = {
    "pick_and_place_simple": (
        "(exists (?r - receptacle) (exists (?o - object) (and (inReceptacle ?o ?r)"
        " (objectType ?o {obj}Type) (receptacleType ?r {recep}Type))))"
    ),
    "pick_two_obj_and_place": (
        "(exists (?r - receptacle) (exists (?o1 - object) (and (objectType ?o1 {obj}Type)"
        " (receptacleType ?r {recep}Type) (inReceptacle ?o1 ?r) (exists (?o2 - object)"
        " (and (not (= ?o1 ?o2)) (objectType ?o2 {obj}Type) (receptacleType ?r {recep}Type)"
        " (inReceptacle ?o2 ?r))))))"
    ),
    "look_at_obj_in_light": (
        "(and (exists (?ot - object ?r - receptacle ?a - agent ?l - location)"
        " (and (objectType ?ot {toggle}Type) (toggleable ?ot) (isToggled ?ot)"
        " (receptacleAtLocation ?r ?l) (atLocation ?a ?l) (inReceptacle ?ot ?r)))"
        " (exists (?o - object ?a - agent) (and (objectType ?o {obj}Type) (holds ?a ?o))))"
    ),
}
for _task, (_able, _is) in {
    "pick_clean_then_place_in_recep": ("cleanable", "isClean"),
    "pick_heat_then_place_in_recep": ("heatable", "isHot"),
    "pick_cool_then_place_in_recep": ("coolable", "isCool"),
}.items():
    _GOALS[_task] = (
        "(exists (?r - receptacle) (exists (?o - object) (and (" + _able + " ?o)"
        " (objectType ?o {obj}Type) (receptacleType ?r {recep}Type) (" + _is + " ?o)"
        " (inReceptacle ?o ?r))))"
    )


def goal_pddl(task_type: str, obj: str, recep: str = "", toggle: str = "") -> str:
    """The ``(:goal ...)`` formula of ``task_type`` for ALFRED class names (ALFWorld's goal library).

    >>> goal_pddl("pick_and_place_simple", "Apple", "Fridge")[:60]
    '(:goal (exists (?r - receptacle) (exists (?o - object) (and '
    """
    body = _GOALS[task_type].format(obj=obj, recep=recep, toggle=toggle)
    return f"(:goal {body})"


def _block(lines: Iterable[str], indent: str = "        ") -> str:
    return "\n".join(indent + line for line in lines)


def problem_text(
    name: str,
    room: Room,
    goal: str,
    *,
    otypes: Iterable[str],
    rtypes: Iterable[str],
    can_contain: Mapping[str, Iterable[str]],
    openable: Iterable[str],
    receptacle_objects: Iterable[str],
) -> str:
    """The PDDL problem of ``room`` with ``goal`` (a ``(:goal ...)`` string).

    Args:
        name: problem name (free text without spaces).
        room: receptacles, objects, start location and per-class property facts (``room.props``).
        otypes / rtypes: object / receptacle classes to declare as ``XType``.
        can_contain: receptacle class -> object classes it may hold (``canContain`` facts are
            written for declared pairs only).
        openable: receptacle classes that open and close (they start closed).
        receptacle_objects: object classes that get ``isReceptacleObject``.
    """
    otypes, rtypes = sorted(set(otypes)), sorted(set(rtypes))
    openable, rec_objs = set(openable), set(receptacle_objects)
    locs = sorted({r.loc for r in room.receptacles} | {room.start})
    objects = ["agent1 - agent"]
    objects += [f"{t}Type - otype" for t in otypes] + [f"{t}Type - rtype" for t in rtypes]
    objects += [f"{mangle(i.id)} - object" for i in room.items]
    objects += [f"{mangle(r.id)} - receptacle" for r in room.receptacles]
    objects += [f"{loc_symbol(loc)} - location" for loc in locs]
    facts = [f"(atLocation agent1 {loc_symbol(room.start)})"]
    for r in room.receptacles:
        sym = mangle(r.id)
        facts.append(f"(receptacleType {sym} {r.cls}Type)")
        facts.append(f"(receptacleAtLocation {sym} {loc_symbol(r.loc)})")
        if r.cls in openable:
            facts.append(f"(openable {sym})")
    for item in room.items:
        sym = mangle(item.id)
        facts.append(f"(objectType {sym} {item.cls}Type)")
        facts.append(f"(inReceptacle {sym} {mangle(item.receptacle)})")
        facts.append(f"(objectAtLocation {sym} {loc_symbol(room.receptacle(item.receptacle).loc)})")
        facts.extend(f"({prop} {sym})" for prop in room.props.get(item.cls, ()))
        if item.cls in rec_objs:
            facts.append(f"(isReceptacleObject {sym})")
    present_r = sorted({r.cls for r in room.receptacles})
    present_o = set(otypes)
    for rt in present_r:
        facts.extend(
            f"(canContain {rt}Type {ot}Type)"
            for ot in sorted(set(can_contain.get(rt, ())) & present_o)
        )
    return (
        f"(define (problem {name})\n    (:domain alfred)\n    (:objects\n{_block(objects)}\n        )\n"
        f"    (:init\n{_block(facts)}\n        )\n    {goal}\n)\n"
    )
