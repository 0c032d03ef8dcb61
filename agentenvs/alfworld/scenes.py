"""ALFRED scene data from the alfworld wheel: which receptacles and object classes a floor plan has.

This module holds :class:`Scene` (one floor plan's receptacles and object classes),
:func:`load_scene`, :func:`scene_numbers` (ALFRED's scene numbers per split and scene type) and
:func:`alfred_tables` (the class tables of ``alfworld.gen.constants``: containment, properties,
openable and movable classes). Everything here imports ``alfworld`` lazily.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Scene", "AlfredTables", "alfred_tables", "load_scene", "scene_numbers", "SCENE_SPLITS"]

#: Our split name -> ALFRED scene numbers per scene type ("seen" = ALFRED train scenes).
SCENE_SPLITS = {"seen": (7, 31), "unseen": (1, 7)}

_SCENE_BASE = {"Kitchen": 0, "LivingRoom": 200, "Bedroom": 300, "Bathroom": 400}


@dataclass(frozen=True)
class AlfredTables:
    """Class tables from ``alfworld.gen.constants`` (frozen, sorted)."""

    can_contain: dict[str, tuple[str, ...]]  # receptacle class -> object classes
    props: dict[str, tuple[str, ...]]  # object class -> property facts (cleanable, pickupable, ...)
    openable: tuple[str, ...]
    movable_receptacles: tuple[str, ...]
    pickupable: tuple[str, ...]
    static_receptacles: tuple[str, ...]
    goals_valid: dict[str, tuple[str, ...]]  # task type -> scene types


@lru_cache(maxsize=1)
def alfred_tables() -> AlfredTables:
    """The class tables of the installed alfworld (``ImportError`` if it is not installed)."""
    from alfworld.gen import constants as c

    can_contain = {
        rc: tuple(sorted(o for o in objs if "Sliced" not in o))
        for rc, objs in sorted(c.VAL_RECEPTACLE_OBJECTS.items())
    }
    pickupable = tuple(sorted({o for objs in can_contain.values() for o in objs}))
    prop_names = {
        "Cleanable": "cleanable",
        "Heatable": "heatable",
        "Coolable": "coolable",
        "Toggleable": "toggleable",
        "Sliceable": "sliceable",
    }
    props: dict[str, list[str]] = {}
    for cls in pickupable:
        props[cls] = ["pickupable"]
    for action, classes in sorted(c.VAL_ACTION_OBJECTS.items()):
        for cls in sorted(classes):
            if "Sliced" not in cls:
                props.setdefault(cls, []).append(prop_names[action])
    movable = tuple(sorted(c.MOVABLE_RECEPTACLES))
    return AlfredTables(
        can_contain=can_contain,
        props={k: tuple(v) for k, v in sorted(props.items())},
        openable=tuple(sorted(c.OPENABLE_CLASS_LIST)),
        movable_receptacles=movable,
        pickupable=pickupable,
        static_receptacles=tuple(sorted(set(can_contain) - set(movable))),
        goals_valid={k: tuple(sorted(v)) for k, v in sorted(c.GOALS_VALID.items())},
    )


@dataclass(frozen=True)
class Scene:
    """One ALFRED floor plan as the generator needs it.

    Attributes:
        number: ALFRED scene number (``FloorPlan<number>``).
        scene_type: ``Kitchen``, ``LivingRoom``, ``Bedroom`` or ``Bathroom``.
        receptacles: ``(ALFRED id, class, (x, z, rotation, horizon))`` for every static receptacle
            with a recorded interaction pose, sorted by id.
        extra_receptacles: static receptacle classes present in the scene but without a pose.
        object_classes: classes present in the scene (sorted).
    """

    number: int
    scene_type: str
    receptacles: tuple[tuple[str, str, tuple[int, int, int, int]], ...]
    extra_receptacles: tuple[str, ...]
    object_classes: tuple[str, ...]


def _layout_dir() -> str:
    import alfworld.gen

    return os.path.join(os.path.dirname(alfworld.gen.__file__), "layouts")


def scene_type_of(number: int) -> str:
    """The scene type of ALFRED scene ``number``."""
    for name, base in sorted(_SCENE_BASE.items(), key=lambda kv: -kv[1]):
        if number > base:
            return name
    raise ValueError(f"bad scene number {number}")


def scene_numbers(scene_types: tuple[str, ...], split: str = "seen") -> list[int]:
    """ALFRED scene numbers of ``scene_types`` in ``split`` (``seen`` or ``unseen``) with layouts."""
    lo, hi = SCENE_SPLITS[split]
    layout = _layout_dir()
    return [
        _SCENE_BASE[t] + k
        for t in sorted(scene_types)
        for k in range(lo, hi)
        if os.path.exists(os.path.join(layout, f"FloorPlan{_SCENE_BASE[t] + k}-openable.json"))
    ]


def _receptacle_class(alfred_id: str) -> str:
    parts = alfred_id.split("|")
    return parts[-1] if parts[-1] in ("SinkBasin", "BathtubBasin") else parts[0]


def _pose_to_loc(pose: list[float]) -> tuple[int, int, int, int]:
    x, z, rot, horizon = pose
    return (round(x / 0.25), round(z / 0.25), round(rot / 90) % 4, round(horizon))


@lru_cache(maxsize=256)
def load_scene(number: int) -> Scene:
    """Read ``FloorPlan<number>-{openable,objects}.json`` from the alfworld wheel."""
    tables = alfred_tables()
    layout = _layout_dir()
    with open(os.path.join(layout, f"FloorPlan{number}-openable.json")) as f:
        poses = json.load(f)
    with open(os.path.join(layout, f"FloorPlan{number}-objects.json")) as f:
        classes = sorted(set(json.load(f)))
    statics = set(tables.static_receptacles)
    recs = tuple(
        (rid, _receptacle_class(rid), _pose_to_loc(pose))
        for rid, pose in sorted(poses.items())
        if _receptacle_class(rid) in statics
    )
    have = {cls for _, cls, _ in recs}
    extra = tuple(c for c in classes if c in statics and c not in have)
    return Scene(number, scene_type_of(number), recs, extra, tuple(classes))
