"""Procedural generation of ALFWorld games (docs/alfworld.md, *Generator*).

This module holds :class:`GameSpec` (one generated game before verification: its task, room and
PDDL problem), :data:`PHRASINGS` and :func:`phrase_task` (the task sentence in one of several
everyday phrasings per task type), :func:`task_combos` (every (object, parent/toggle) pair a scene
supports for a task type), :func:`draw_game` (the game at position ``k`` of a task type's sequence,
deterministic in ``(seed, task_type, k, attempt, scene_split)``) and :func:`game_files` (the ``game.tw-pddl`` and
``traj_data.json`` contents, with the domain and grammar of the installed alfworld).

Determinism: every random choice comes from :class:`random.Random` seeded by a string that names the
panel seed, the task type, the position and the attempt, so one game can be regenerated without the
others. Scene and (object, parent) pairs are assigned by position: the ``k``-th game of a task type
uses scene ``perm[k % n]`` and that scene's ``(k // n)``-th pair, so no two games of a type repeat
(task, object, parent, scene) until a scene runs out of pairs. The phrasing of the task sentence is
drawn from a separate stream (``<seed>/<game id>/phrasing``); the PDDL goal does not depend on it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache

from agentenvs.alfworld.constants import LAMP_HOLDERS, TREATMENT_APPLIANCE
from agentenvs.alfworld.pddl import Item, Receptacle, Room, goal_pddl, mangle, problem_text
from agentenvs.alfworld.scenes import Scene, alfred_tables, load_scene, scene_numbers

__all__ = [
    "GameSpec",
    "PHRASINGS",
    "phrase_task",
    "task_combos",
    "draw_game",
    "game_files",
    "domain_and_grammar",
    "MAX_RECEPTACLES",
    "MAX_ITEMS",
]

#: Task-sentence phrasings per task type, written for this project in the style of ALFRED's human
#: goal annotations (docs/alfworld.md, *Task phrasing*). Fields: ``{a_obj}`` ("an apple"),
#: ``{obj}``, ``{objs}`` (plural), ``{recep}``, ``{prep}`` ("in" or "on" the receptacle), ``{toggle}``.
PHRASINGS: dict[str, tuple[str, ...]] = {
    "pick_and_place_simple": (
        "put {a_obj} {prep} the {recep}",
        "place {a_obj} {prep} the {recep}",
        "move {a_obj} to the {recep}",
        "pick up {a_obj} and leave it {prep} the {recep}",
        "take {a_obj} over to the {recep}",
        "set {a_obj} down {prep} the {recep}",
        "carry {a_obj} to the {recep} and put it there",
    ),
    "look_at_obj_in_light": (
        "examine {a_obj} by the light of the {toggle}",
        "pick up {a_obj} and turn on the {toggle}",
        "hold {a_obj} under the lit {toggle}",
        "switch on the {toggle} while holding {a_obj}",
        "take {a_obj} to the {toggle} and turn the light on",
        "check {a_obj} in the light of the {toggle}",
        "inspect {a_obj} with the {toggle} switched on",
    ),
    "pick_clean_then_place_in_recep": (
        "put a clean {obj} {prep} the {recep}",
        "rinse {a_obj} and put it {prep} the {recep}",
        "wash {a_obj} in the sink, then put it {prep} the {recep}",
        "clean {a_obj} and set it {prep} the {recep}",
        "give {a_obj} a wash and leave it {prep} the {recep}",
        "move a washed {obj} to the {recep}",
        "take {a_obj}, clean it at the sink and place it {prep} the {recep}",
    ),
    "pick_heat_then_place_in_recep": (
        "place a heated {obj} {prep} the {recep}",
        "heat {a_obj} in the microwave and put it {prep} the {recep}",
        "warm up {a_obj} and set it {prep} the {recep}",
        "microwave {a_obj}, then put it {prep} the {recep}",
        "bring a warm {obj} to the {recep}",
        "let {a_obj} heat in the microwave, then leave it {prep} the {recep}",
        "take {a_obj}, heat it up and place it {prep} the {recep}",
    ),
    "pick_cool_then_place_in_recep": (
        "place a chilled {obj} {prep} the {recep}",
        "cool {a_obj} in the fridge and put it {prep} the {recep}",
        "chill {a_obj}, then set it {prep} the {recep}",
        "put a cold {obj} {prep} the {recep}",
        "bring a cooled {obj} to the {recep}",
        "let {a_obj} cool in the fridge, then leave it {prep} the {recep}",
        "take {a_obj}, cool it down and place it {prep} the {recep}",
    ),
    "pick_two_obj_and_place": (
        "put two {objs} {prep} the {recep}",
        "place a pair of {objs} {prep} the {recep}",
        "move two {objs} to the {recep}",
        "collect two {objs} and set them {prep} the {recep}",
        "take two {objs} over to the {recep}",
        "gather two {objs} and leave them {prep} the {recep}",
        "carry two {objs} to the {recep}",
    ),
}
#: Receptacle classes one puts things *in* (the others: *on*).
_IN_RECEPTACLES = frozenset(
    "BathtubBasin Bowl Box Cabinet Cart CoffeeMachine Cup Drawer Fridge GarbageCan LaundryHamper "
    "Microwave Mug Pan Pot Safe SinkBasin Toaster".split()
)

#: Rooms with more static receptacles are not used (keeps the planner check bounded).
MAX_RECEPTACLES = 36
#: Most objects placed in a room (target instances, lamp and distractors together).
MAX_ITEMS = 18
_EXTRA_COUNTS = {"StoveBurner": (2, 4)}
_TREATMENT_CLASSES = {
    "pick_clean_then_place_in_recep": "cleanable",
    "pick_heat_then_place_in_recep": "heatable",
    "pick_cool_then_place_in_recep": "coolable",
}


@dataclass
class GameSpec:
    """A generated game (not yet verified).

    Attributes:
        game_id: stable id ``<task_type>-<Obj>-None-<Parent|Toggle>-<scene>/trial_G<k:06d>``.
        task_type, obj, parent, toggle: the task in ALFRED class names (``toggle`` only for look).
        scene: ALFRED scene number.
        task: the task sentence (no final period).
        room: receptacles, objects and start location.
        problem: the PDDL problem text.
        walkthrough: winning commands (filled by verification).
    """

    game_id: str
    task_type: str
    obj: str
    parent: str
    toggle: str
    scene: int
    task: str
    room: Room
    problem: str
    walkthrough: list[str] = field(default_factory=list)

    def traj_data(self) -> dict:
        """The ``traj_data.json`` content (the fields ALFWorld's text env and experts read)."""
        return {
            "task_id": self.game_id.rsplit("/", 1)[-1],
            "task_type": self.task_type,
            "pddl_params": {
                "object_target": self.obj,
                "parent_target": self.parent,
                "toggle_target": self.toggle,
                "mrecep_target": "",
                "object_sliced": False,
            },
            "scene": {"floor_plan": f"FloorPlan{self.scene}", "scene_num": self.scene},
            "turk_annotations": {
                "anns": [{"task_desc": self.task[0].upper() + self.task[1:] + "."}]
            },
        }


def _fits(scene: Scene) -> bool:
    return len(scene.receptacles) + len(scene.extra_receptacles) + 3 <= MAX_RECEPTACLES


def _receptacle_classes(scene: Scene) -> set[str]:
    return {cls for _, cls, _ in scene.receptacles} | set(scene.extra_receptacles)


def _candidates(scene: Scene) -> list[str]:
    """Pickupable classes of ``scene`` that some receptacle of the scene can hold."""
    tables = alfred_tables()
    recs = _receptacle_classes(scene)
    holdable = {o for r in recs for o in tables.can_contain.get(r, ())}
    return [c for c in scene.object_classes if c in tables.pickupable and c in holdable]


@lru_cache(maxsize=4096)
def task_combos(task_type: str, scene_number: int) -> tuple[tuple[str, str, str], ...]:
    """Every ``(obj, parent, toggle)`` the scene supports for ``task_type`` (sorted)."""
    tables = alfred_tables()
    scene = load_scene(scene_number)
    recs = _receptacle_classes(scene)
    objs = _candidates(scene)
    if task_type == "look_at_obj_in_light":
        if not recs & set(LAMP_HOLDERS):
            return ()
        toggle = "FloorLamp" if "FloorLamp" in scene.object_classes else "DeskLamp"
        return tuple((o, "", toggle) for o in objs)
    appliance = TREATMENT_APPLIANCE.get(task_type)
    if appliance is not None:
        if appliance not in recs:
            return ()
        prop = _TREATMENT_CLASSES[task_type]
        objs = [o for o in objs if prop in tables.props.get(o, ())]
    combos = []
    for o in objs:
        for p in sorted(recs):
            if p == appliance or o not in tables.can_contain.get(p, ()):
                continue
            # the object must also fit somewhere that is not a parent-type receptacle
            if any(o in tables.can_contain.get(r, ()) for r in recs if r != p):
                combos.append((o, p, ""))
    return tuple(combos)


@lru_cache(maxsize=64)
def _scene_order(seed: int, task_type: str, scene_split: str) -> tuple[int, ...]:
    tables = alfred_tables()
    numbers = [
        n
        for n in scene_numbers(tables.goals_valid[task_type], scene_split)
        if _fits(load_scene(n)) and task_combos(task_type, n)
    ]
    random.Random(f"{seed}/{task_type}/{scene_split}/scenes").shuffle(numbers)
    return tuple(numbers)


def _combo_at(
    seed: int, task_type: str, scene_split: str, k: int
) -> tuple[int, tuple[str, str, str]]:
    scenes = _scene_order(seed, task_type, scene_split)
    scene = scenes[k % len(scenes)]
    combos = list(task_combos(task_type, scene))
    random.Random(f"{seed}/{task_type}/{scene}/combos").shuffle(combos)
    return scene, combos[(k // len(scenes)) % len(combos)]


def _fresh_id(rng: random.Random, cls: str, used: set[str]) -> str:
    while True:
        xyz = [rng.uniform(-3.0, 3.0) for _ in range(3)]
        rid = cls + "".join(f"|{v:+06.2f}" for v in xyz)
        if rid not in used:
            used.add(rid)
            return rid


def _fresh_loc(
    rng: random.Random, used: set[tuple[int, int, int, int]]
) -> tuple[int, int, int, int]:
    while True:
        loc = (
            rng.randint(-12, 12),
            rng.randint(-12, 12),
            rng.randint(0, 3),
            rng.choice((0, 30, 60)),
        )
        if loc not in used:
            used.add(loc)
            return loc


def _build_room(
    rng: random.Random, scene: Scene, task_type: str, obj: str, parent: str, toggle: str
) -> Room:
    tables = alfred_tables()
    used_ids = {rid for rid, _, _ in scene.receptacles}
    used_locs = {loc for _, _, loc in scene.receptacles}
    recs = [Receptacle(rid, cls, loc) for rid, cls, loc in scene.receptacles]
    for cls in scene.extra_receptacles:
        lo, hi = _EXTRA_COUNTS.get(cls, (1, 1))
        for _ in range(rng.randint(lo, hi)):
            recs.append(Receptacle(_fresh_id(rng, cls, used_ids), cls, _fresh_loc(rng, used_locs)))
    recs.sort(key=lambda r: r.id)
    start = _fresh_loc(rng, used_locs)

    items: list[Item] = []

    def place(cls: str, allowed: list[Receptacle]) -> None:
        items.append(Item(_fresh_id(rng, cls, used_ids), cls, rng.choice(allowed).id))

    def holders(cls: str, forbid: str = "") -> list[Receptacle]:
        return [r for r in recs if cls in tables.can_contain.get(r.cls, ()) and r.cls != forbid]

    n_target = rng.randint(2, 3) if task_type == "pick_two_obj_and_place" else rng.randint(1, 2)
    for _ in range(n_target):
        place(obj, holders(obj, forbid=parent))
    if toggle:
        lamp_holders = [r for r in recs if r.cls in LAMP_HOLDERS]
        place(toggle, lamp_holders)
    distractors = [c for c in _candidates(scene) if c != obj]
    rng.shuffle(distractors)
    for cls in distractors[: rng.randint(4, 10)]:
        for _ in range(rng.randint(1, 2)):
            if len(items) < MAX_ITEMS:
                place(cls, holders(cls))
    items.sort(key=lambda i: i.id)
    props = {cls: tables.props.get(cls, ()) for cls in sorted({i.cls for i in items})}
    if toggle:
        props[toggle] = ("toggleable",)
    return Room(recs, items, start, props)


def _plural(word: str) -> str:
    """English plural of a lower-cased class name.

    >>> [_plural(w) for w in ("mug", "butterknife", "box", "watch", "tomato", "glass")]
    ['mugs', 'butterknives', 'boxes', 'watches', 'tomatoes', 'glasses']
    """
    if word.endswith("knife"):
        return word[:-2] + "ves"
    if word.endswith(("s", "x", "ch", "sh", "o")):
        return word + "es"
    return word + "s"


def phrase_task(task_type: str, obj: str, parent: str, toggle: str, rng: random.Random) -> str:
    """The task sentence (no final period) in a phrasing of :data:`PHRASINGS` drawn from ``rng``.

    >>> phrase_task("pick_two_obj_and_place", "Apple", "Fridge", "", random.Random(1))
    'place a pair of apples in the fridge'
    """
    name = obj.lower()
    return rng.choice(PHRASINGS[task_type]).format(
        a_obj=("an " if name[0] in "aeiou" else "a ") + name,
        obj=name,
        objs=_plural(name),
        recep=parent.lower(),
        prep="in" if parent in _IN_RECEPTACLES else "on",
        toggle=toggle.lower(),
    )


def draw_game(
    seed: int, task_type: str, k: int, attempt: int = 0, scene_split: str = "seen"
) -> GameSpec:
    """The ``k``-th game of ``task_type`` for panel ``seed`` (``attempt`` redraws the room).

    ``scene_split`` (``"seen"`` or ``"unseen"``, :data:`~agentenvs.alfworld.scenes.SCENE_SPLITS`)
    picks the floor plans. The task sentence comes from its own stream, seeded by ``seed`` and the
    game id, so it is the same for every attempt and draws nothing from the room's stream.
    """
    tables = alfred_tables()
    scene_number, (obj, parent, toggle) = _combo_at(seed, task_type, scene_split, k)
    rng = random.Random(f"{seed}/{task_type}/{scene_split}/{k}/{attempt}")
    room = _build_room(rng, load_scene(scene_number), task_type, obj, parent, toggle)
    game_id = f"{task_type}-{obj}-None-{parent or toggle}-{scene_number}/trial_G{k:06d}"
    task = phrase_task(task_type, obj, parent, toggle, random.Random(f"{seed}/{game_id}/phrasing"))
    otypes = (
        {i.cls for i in room.items}
        | {"Knife", "ButterKnife", obj}
        | ({toggle} if toggle else set())
    )
    rtypes = {r.cls for r in room.receptacles} | {"SinkBasin", "Microwave", "Fridge"}
    if parent:
        rtypes.add(parent)
    problem = problem_text(
        mangle(f"plan_{scene_number}_{k}").lower(),
        room,
        goal_pddl(task_type, obj, parent, toggle),
        otypes=otypes,
        rtypes=rtypes,
        can_contain=tables.can_contain,
        openable=tables.openable,
        receptacle_objects=tables.movable_receptacles,
    )
    return GameSpec(game_id, task_type, obj, parent, toggle, scene_number, task, room, problem)


@lru_cache(maxsize=1)
def domain_and_grammar() -> tuple[str, str]:
    """``alfred.pddl`` and ``alfred.twl2`` of the installed alfworld."""
    from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

    with open(ALFRED_PDDL_PATH) as f, open(ALFRED_TWL2_PATH) as g:
        return f.read(), g.read()


def game_files(
    task: str, problem: str, walkthrough: list[str] | None, solvable: bool | None = True
) -> dict:
    """The ``game.tw-pddl`` JSON object for a task sentence and PDDL problem."""
    domain, grammar = domain_and_grammar()
    return {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", task),
        "pddl_problem": problem,
        "solvable": solvable,
        "walkthrough": walkthrough,
    }
