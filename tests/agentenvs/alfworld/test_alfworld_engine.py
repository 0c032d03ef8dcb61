"""ALFWorld engine behaviour through our problem writer: the golden kitchen of
docs/alfworld.md (*Golden tests*), demangler numbering, gcsr along a trajectory, legacy grammar."""

from __future__ import annotations

import pytest

pytest.importorskip("alfworld")
pytest.importorskip("textworld")

from agentenvs.alfworld.engine import keep_argv, make_engine  # noqa: E402
from agentenvs.alfworld.gcsr import gcsr  # noqa: E402
from agentenvs.alfworld.generate import game_files  # noqa: E402
from agentenvs.alfworld.pddl import Item, Receptacle, Room, goal_pddl, problem_text  # noqa: E402

APPLE = "Apple|+01.00|+00.97|-01.10"
MUG = "Mug|+01.60|+02.00|+00.50"
RECEPTACLES = [
    Receptacle("CounterTop|+01.00|+00.95|-01.00", "CounterTop", (1, 1, 0, 30)),
    Receptacle("Fridge|-00.50|+00.00|-01.50", "Fridge", (2, 2, 0, 30)),
    Receptacle("Microwave|+01.70|+00.90|-00.80", "Microwave", (3, 3, 0, 30)),
    Receptacle("Cabinet|+01.60|+02.00|+00.60", "Cabinet", (4, 4, 0, 30)),
    Receptacle("Sink|+01.10|+00.90|-01.60|SinkBasin", "SinkBasin", (5, 5, 0, 30)),
]
PROPS = ("pickupable", "heatable", "coolable", "cleanable")


def kitchen(task_type: str, obj: str, parent: str, task: str) -> dict:
    room = Room(
        RECEPTACLES,
        [Item(APPLE, "Apple", RECEPTACLES[0].id), Item(MUG, "Mug", RECEPTACLES[3].id)],
        (0, 0, 0, 30),
        {"Apple": PROPS, "Mug": PROPS},
    )
    problem = problem_text(
        "kitchen",
        room,
        goal_pddl(task_type, obj, parent),
        otypes=["Apple", "Mug"],
        rtypes=[r.cls for r in RECEPTACLES],
        can_contain={r.cls: ["Apple", "Mug"] for r in RECEPTACLES},
        openable=["Fridge", "Microwave", "Cabinet"],
        receptacle_objects=["Mug"],
    )
    return game_files(task, problem, None)


@pytest.fixture(scope="module")
def engine():
    return make_engine()


GOLDEN = [
    ("look", "You are in the middle of a room. Looking quickly around you, you see nothing.", 0),
    (
        "go to countertop 1",
        "You arrive at countertop 1. On the countertop 1, you see a apple 1.",
        0,
    ),
    ("examine countertop 1", "On the countertop 1, you see a apple 1.", 0),
    ("take apple 1 from countertop 1", "You pick up the apple 1 from the countertop 1.", 0),
    ("inventory", "You are carrying: a apple 1.", 0),
    ("examine apple 1", "There's nothing special about apple 1.", 0),
    ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is closed.", 0),
    ("move apple 1 to fridge 1", "Nothing happens.", 0),
    ("open fridge 1", "You open the fridge 1. The fridge 1 is open. In it, you see nothing.", 0),
    ("put apple 1 in/on fridge 1", "Nothing happens.", 0),
    ("go to fridge 1", "Nothing happens.", 0),
    ("move apple 1 to fridge 1", "You move the apple 1 to the fridge 1.", 1),
]


def test_golden_kitchen_trajectory(engine):
    with keep_argv():
        engine.load(kitchen("pick_and_place_simple", "Apple", "Fridge", "put an apple in fridge"))
        state = engine.reset()
    assert state.feedback == (
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly "
        "around you, you see a cabinet 1, a countertop 1, a fridge 1, a microwave 1, and a "
        "sinkbasin 1.\n\nYour task is to: put an apple in fridge."
    )
    assert state["admissible_commands"] == [
        "go to cabinet 1",
        "go to countertop 1",
        "go to fridge 1",
        "go to microwave 1",
        "go to sinkbasin 1",
        "help",
        "inventory",
        "look",
    ]
    for t, (command, feedback, score) in enumerate(GOLDEN, 1):
        state, got_score, done = engine.step(command)
        assert (state.feedback, got_score, done) == (feedback, score, bool(score)), command
        if t == 9:
            assert state["admissible_commands"] == [
                "close fridge 1",
                "cool apple 1 with fridge 1",
                "examine apple 1",
                "examine fridge 1",
                "go to cabinet 1",
                "go to countertop 1",
                "go to microwave 1",
                "go to sinkbasin 1",
                "help",
                "inventory",
                "look",
                "move apple 1 to fridge 1",
            ]


def _facts(state):
    return [(f.name, tuple(a.name for a in f.arguments)) for f in state["_facts"]]


def test_heat_task_gcsr_partial_then_full(engine):
    with keep_argv():
        engine.load(
            kitchen(
                "pick_heat_then_place_in_recep",
                "Mug",
                "CounterTop",
                "heat some mug and put it in countertop",
            )
        )
        state = engine.reset()
    params = {"object_target": "Mug", "parent_target": "CounterTop"}
    plan = [
        "go to cabinet 1",
        "open cabinet 1",
        "take mug 1 from cabinet 1",
        "go to microwave 1",
        "heat mug 1 with microwave 1",
        "go to countertop 1",
        "move mug 1 to countertop 1",
    ]
    rates = [gcsr(_facts(state), "pick_heat_then_place_in_recep", params)]
    for command in plan:
        state, _, done = engine.step(command)
        rates.append(gcsr(_facts(state), "pick_heat_then_place_in_recep", params))
        assert (rates[-1] == 1.0) == bool(state["won"])
    assert state.feedback == "You move the mug 1 to the countertop 1." and done
    assert rates[5] == pytest.approx(1 / 3) and rates[0] == 0.0 and rates[-1] == 1.0


def test_demangler_numbers_ids_in_descending_order(engine):
    recs = [
        Receptacle("Cabinet|+00.10|+00.00|+00.00", "Cabinet", (1, 0, 0, 0)),
        Receptacle("Cabinet|+00.20|+00.00|+00.00", "Cabinet", (2, 0, 0, 0)),
        Receptacle("Cabinet|+00.30|+00.00|+00.00", "Cabinet", (3, 0, 0, 0)),
        Receptacle("Sink|+01.10|+00.90|-01.60|SinkBasin", "SinkBasin", (4, 0, 0, 0)),
    ]
    room = Room(recs, [Item(APPLE, "Apple", recs[0].id)], (0, 0, 0, 0), {"Apple": ("pickupable",)})
    problem = problem_text(
        "d",
        room,
        goal_pddl("pick_and_place_simple", "Apple", "SinkBasin"),
        otypes=["Apple"],
        rtypes=["Cabinet", "SinkBasin"],
        can_contain={"Cabinet": ["Apple"], "SinkBasin": ["Apple"]},
        openable=[],
        receptacle_objects=[],
    )
    with keep_argv():
        engine.load(game_files("put a apple in sinkbasin", problem, None))
        intro = engine.reset().feedback
    assert "you see a cabinet 3, a cabinet 2, a cabinet 1, and a sinkbasin 1." in intro
    state, _, _ = engine.step("go to cabinet 3")  # cabinet 3 = the smallest id, holding the apple
    assert state.feedback == "You arrive at cabinet 3. On the cabinet 3, you see a apple 1."


def test_legacy_put_grammar_still_loads_and_wins(engine):
    game = kitchen("pick_and_place_simple", "Apple", "Fridge", "put an apple in fridge")
    # the patch_tw-pddl.py direction, reversed: new "move {o} to {r}" -> legacy "put {o} in/on {r}"
    assert "move {o} to {r}" in game["grammar"]
    game["grammar"] = game["grammar"].replace("move {o} to {r}", "put {o} in/on {r}")
    with keep_argv():
        engine.load(game)
        engine.reset()
    for command in [
        "go to countertop 1",
        "take apple 1 from countertop 1",
        "go to fridge 1",
        "open fridge 1",
    ]:
        engine.step(command)
    state, _, _ = engine.step("move apple 1 to fridge 1")
    assert state.feedback == "Nothing happens."
    state, score, done = engine.step("put apple 1 in/on fridge 1")
    assert score == 1 and done
