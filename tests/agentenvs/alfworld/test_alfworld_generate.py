"""The ALFWorld game generator and the shipped panel: determinism, bit-identical regeneration,
well-formed games, the three splits (unseen floor plans), task phrasing, panel statistics; pure
helpers (mangling, tracker, gcsr, metrics)."""

from __future__ import annotations

import pytest

from agentenvs.alfworld.constants import TASK_TYPE_NAMES, task_type_of
from agentenvs.alfworld.gcsr import goal_conditions
from agentenvs.alfworld.metrics import success_by_task_type
from agentenvs.alfworld.pddl import mangle
from agentenvs.alfworld.tracker import StateTracker
from agentenvs.core.trajectory import Trajectory


def test_mangle_and_task_type_names():
    assert mangle("Sink|+01.10|+00.90|-01.60|SinkBasin").endswith("_bar_SinkBasin")
    assert task_type_of("pick_and_place_simple-Apple-None-Fridge-1/x") == "pick_and_place_simple"
    assert task_type_of("nothing here") is None


def test_gcsr_look_and_pick_two_conditions():
    base = [
        ("objecttype", ("m1", "mugtype")),
        ("objecttype", ("m2", "mugtype")),
        ("receptacletype", ("d1", "desktype")),
    ]
    params = {"object_target": "Mug", "parent_target": "Desk"}
    assert goal_conditions(base, "pick_two_obj_and_place", params) == (0, 2)
    one = base + [("inreceptacle", ("m1", "d1"))]
    assert goal_conditions(one, "pick_two_obj_and_place", params) == (1, 2)
    assert goal_conditions(
        one + [("inreceptacle", ("m2", "d1"))], "pick_two_obj_and_place", params
    ) == (2, 2)
    look = {"object_target": "Mug", "toggle_target": "DeskLamp"}
    lamp = [
        ("objecttype", ("l1", "desklamptype")),
        ("inreceptacle", ("l1", "s1")),
        ("receptacleatlocation", ("s1", "loc1")),
    ]
    assert goal_conditions(
        base + lamp + [("holds", ("agent1", "m1"))], "look_at_obj_in_light", look
    ) == (1, 2)
    lit = lamp + [
        ("istoggled", ("l1",)),
        ("atlocation", ("agent1", "loc1")),
        ("holds", ("agent1", "m1")),
    ]
    assert goal_conditions(base + lit, "look_at_obj_in_light", look) == (2, 2)
    with pytest.raises(ValueError):
        goal_conditions(base, "slice_it", params)


def test_tracker_ignores_failed_commands_and_records_legacy_puts():
    t = StateTracker()
    t.update("go to desk 1", "Nothing happens.")
    assert t.location == "middle of a room"
    t.update("take pen 1 from drawer 2", "You pick up the pen 1 from the drawer 2.")
    t.update("clean pen 1 with sinkbasin 1", "You clean the pen 1 using the sinkbasin 1.")
    t.update("heat pen 1 with microwave 1", "You heat the pen 1 using the microwave 1.")
    assert t.location_holding().endswith("Items in hand (status): pen 1(cleaned, heated).")
    t.update("put pen 1 in/on desk 1", "You put the pen 1 in/on the desk 1.")
    assert (
        t.item_moves()
        == "History moving list by you: pen 1(cleaned, heated) from drawer 2 move to desk 1;"
    )
    assert t.key("obs", ["b", "a"]).endswith(" a,b") and t.holding is None


def test_success_by_task_type_accepts_trajectories():
    trajs = [
        Trajectory(task_id="pick_two_obj_and_place-A-None-B-1/t", group_id="g", steps=[], success=s)
        for s in (True, False)
    ]
    assert success_by_task_type(trajs) == {"pick_two_obj_and_place": 0.5, "all": 0.5}
    with pytest.raises(ValueError):
        success_by_task_type([("what", True)])


# -- with alfworld --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def alfworld():
    return pytest.importorskip("alfworld")


def test_draw_game_is_deterministic_and_well_formed(alfworld):
    from agentenvs.alfworld.generate import MAX_ITEMS, draw_game

    for task_type in TASK_TYPE_NAMES:
        a, b = draw_game(7, task_type, 3), draw_game(7, task_type, 3)
        assert a.problem == b.problem and a.task == b.task and a.game_id == b.game_id
        assert a.game_id.startswith(task_type + "-") and task_type_of(a.game_id) == task_type
        again = draw_game(7, task_type, 3, attempt=1)
        assert again.problem != a.problem and again.task == a.task  # phrasing fixed per game
        unseen = draw_game(7, task_type, 3, scene_split="unseen")
        assert unseen.scene % 100 < 7 and unseen.game_id != a.game_id
        assert len(a.room.items) <= MAX_ITEMS
        targets = [i for i in a.room.items if i.cls == a.obj]
        assert len(targets) >= (2 if task_type == "pick_two_obj_and_place" else 1)
        assert all(a.room.receptacle(i.receptacle).cls != a.parent for i in targets)
        assert a.room.start not in {r.loc for r in a.room.receptacles}


def test_games_of_a_type_do_not_repeat_task_and_scene(alfworld):
    from agentenvs.alfworld.generate import draw_game

    keys = [
        (g.obj, g.parent, g.toggle, g.scene)
        for g in (draw_game(0, "pick_heat_then_place_in_recep", k) for k in range(40))
    ]
    assert len(set(keys)) == len(keys)


def test_build_command_regenerates_shipped_games_bit_identically(alfworld, tmp_path):
    from agentenvs.alfworld.build_panel import main
    from agentenvs.alfworld.panel import default_panel, encode_record, read_panel

    out = tmp_path / "p.jsonl.gz"
    sizes = ["--train", "1", "--test-seen", "0", "--test-unseen", "0"]
    assert main(["--out", str(out), *sizes, "--cache", str(tmp_path / "c")]) == 0
    (again,) = read_panel(str(out))  # position k=0 of the first task type: its first train game
    shipped = {r["id"]: r for r in default_panel()}
    assert again["k"] == 0 and encode_record(again) == encode_record(shipped[again["id"]])


def test_build_record_regenerates_a_shipped_test_game_of_each_test_split(alfworld):
    from agentenvs.alfworld.build_panel import build_record
    from agentenvs.alfworld.engine import make_engine
    from agentenvs.alfworld.panel import default_panel, encode_record

    engine = make_engine()
    for split, task_type in (
        ("test_seen", TASK_TYPE_NAMES[5]),
        ("test_unseen", TASK_TYPE_NAMES[2]),
    ):
        r = next(r for r in default_panel() if r["split"] == split and r["task_type"] == task_type)
        again = build_record(r["seed"], task_type, r["k"], split, engine)
        assert encode_record(again) == encode_record(r)


def test_shipped_splits_sizes_and_unseen_floor_plans(alfworld):
    from agentenvs.alfworld.games import embedded_games
    from agentenvs.alfworld.panel import default_panel
    from agentenvs.alfworld.scenes import SCENE_SPLITS

    records = default_panel()
    by_split = {
        s: [r for r in records if r["split"] == s] for s in ("train", "test_seen", "test_unseen")
    }
    assert {s: len(rs) for s, rs in by_split.items()} == {
        "train": 600,
        "test_seen": 140,
        "test_unseen": 60,
    }
    assert len(records) == 800 and len({r["id"] for r in records}) == 800
    unseen = by_split["test_unseen"]
    assert sorted(r["task_type"] for r in unseen) == sorted(TASK_TYPE_NAMES * 10)
    scenes = {s: {r["traj_data"]["scene"]["scene_num"] for r in rs} for s, rs in by_split.items()}
    assert (
        scenes["train"].isdisjoint(scenes["test_unseen"]) and scenes["test_seen"] <= scenes["train"]
    )
    lo, hi = SCENE_SPLITS["unseen"]
    assert (
        all(lo <= n % 100 < hi for n in scenes["test_unseen"]) and len(scenes["test_unseen"]) > 10
    )
    panel = embedded_games().panel
    assert panel.splits == ["train", "test_seen", "test_unseen"]
    assert (
        panel.ids("test")
        == panel.ids("test_seen")
        == sorted(r["id"] for r in by_split["test_seen"])
    )


def test_phrasings_are_deterministic_varied_and_name_the_goal(alfworld):
    import random

    from agentenvs.alfworld.generate import PHRASINGS, phrase_task
    from agentenvs.alfworld.panel import default_panel

    for task_type, phrasings in PHRASINGS.items():
        assert len(phrasings) == len(set(phrasings)) >= 6
        for i in range(len(phrasings)):
            rng = random.Random()
            rng.choice = lambda seq, i=i: seq[i]  # every phrasing in turn
            toggle = "DeskLamp" if task_type == "look_at_obj_in_light" else ""
            parent = "" if toggle else "Drawer"
            text = phrase_task(task_type, "AlarmClock", parent, toggle, rng)
            assert "alarmclock" in text and ("desklamp" if toggle else "the drawer") in text
            assert "on the drawer" not in text and "a alarmclock" not in text
            assert not set(text) & set('"#\\.') and text == text.strip()
    sentences: dict[str, set[str]] = {t: set() for t in TASK_TYPE_NAMES}
    for r in default_panel():
        params = r["traj_data"]["pddl_params"]
        rng = random.Random(f"{r['seed']}/{r['id']}/phrasing")
        expected = phrase_task(
            r["task_type"],
            params["object_target"],
            params["parent_target"],
            params["toggle_target"],
            rng,
        )
        assert r["task"] == expected
        assert (
            r["traj_data"]["turk_annotations"]["anns"][0]["task_desc"]
            == expected.capitalize() + "."
        )
        sentences[r["task_type"]].add(r["task"].split(params["object_target"].lower())[0])
    assert all(len(v) >= 3 for v in sentences.values()), sentences
    by_goal: dict[tuple, set[str]] = {}
    for r in default_panel():
        params = r["traj_data"]["pddl_params"]
        goal = (r["task_type"], params["object_target"], params["parent_target"])
        by_goal.setdefault(goal, set()).add(r["task"])
    assert any(len(v) > 1 for v in by_goal.values())  # one goal, different words


def test_panel_file_is_byte_stable(alfworld, tmp_path):
    from agentenvs.alfworld.panel import PANEL_PATH, default_panel, read_panel, write_panel

    write_panel(default_panel(), str(tmp_path / "p.jsonl.gz"))
    assert (tmp_path / "p.jsonl.gz").read_bytes() == open(PANEL_PATH, "rb").read()
    assert read_panel(str(tmp_path / "p.jsonl.gz")) == list(default_panel())
