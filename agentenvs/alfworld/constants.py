"""ALFWorld names shared by the generator, the env and the metrics (no alfworld import needed).

This module holds :data:`TASK_TYPES` (ALFWorld's six task types, by their config ids),
:data:`TASK_TYPE_NAMES`, :func:`task_type_of` (the task type named in a game path or task id) and
the small class lists the generator needs beyond ``alfworld.gen.constants``.

>>> task_type_of("train/pick_two_obj_and_place-Mug-None-Desk-312/trial_G000007")
'pick_two_obj_and_place'
>>> task_type_of("look_at_obj_in_light-Book-None-DeskLamp-301/trial_T2019")
'look_at_obj_in_light'
"""

from __future__ import annotations

__all__ = [
    "TASK_TYPES",
    "TASK_TYPE_NAMES",
    "task_type_of",
    "LAMP_HOLDERS",
    "TREATMENT_APPLIANCE",
    "TREATMENT_VERB",
]

#: ALFWorld's task types by config id (``env.task_types``).
TASK_TYPES: dict[int, str] = {
    1: "pick_and_place_simple",
    2: "look_at_obj_in_light",
    3: "pick_clean_then_place_in_recep",
    4: "pick_heat_then_place_in_recep",
    5: "pick_cool_then_place_in_recep",
    6: "pick_two_obj_and_place",
}

#: The six task type names in config-id order.
TASK_TYPE_NAMES: tuple[str, ...] = tuple(TASK_TYPES[i] for i in sorted(TASK_TYPES))

#: Treatment task type -> the receptacle class that treats (the goal's parent never is this class).
TREATMENT_APPLIANCE: dict[str, str] = {
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
}

#: Treatment task type -> the command verb (``clean``/``heat``/``cool``).
TREATMENT_VERB: dict[str, str] = {
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
}

#: Receptacle classes a desk lamp may stand in (look tasks).
LAMP_HOLDERS: tuple[str, ...] = ("Desk", "SideTable", "Dresser", "Shelf", "CoffeeTable", "TVStand")


def task_type_of(path: str) -> str | None:
    """The ALFWorld task type whose name occurs in ``path`` (longest match), else ``None``."""
    found = [name for name in TASK_TYPE_NAMES if name in path]
    return max(found, key=len) if found else None
