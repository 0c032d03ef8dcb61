"""ALFWorldEnv over the real engine: the info contract, rewards, budget, formats, compat mode,
shipped games replayed from their walkthroughs, official-data discovery, check_env and fuzzing."""

from __future__ import annotations

import json
import os
import random

import pytest

pytest.importorskip("alfworld")
pytest.importorskip("textworld")

import gymnasium as gym  # noqa: E402
from gymnasium.error import ResetNeeded  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

import agentenvs  # noqa: E402,F401
from agentenvs.alfworld import TASK_TYPE_NAMES, success_by_task_type  # noqa: E402
from agentenvs.alfworld.env import ALFWorldEnv  # noqa: E402
from agentenvs.alfworld.games import discover, official_games  # noqa: E402
from agentenvs.alfworld.panel import default_panel, export_official_layout  # noqa: E402

TAGGED = "<think>ok</think><action>{}</action>"


@pytest.fixture(scope="module")
def env():
    e = ALFWorldEnv(data_path="embedded", action_format="plain")
    yield e
    e.close()


def first_of_each_type(split: str = "train") -> list[dict]:
    seen, out = set(), []
    for r in default_panel():
        if r["split"] == split and r["task_type"] not in seen:
            seen.add(r["task_type"])
            out.append(r)
    return out


def test_registered_and_panel_balanced():
    assert "agentenvs/ALFWorld-v0" in gym.registry
    env = ALFWorldEnv(data_path="embedded")
    counts = {t: 0 for t in TASK_TYPE_NAMES}
    for tid in env.tasks.ids("train"):
        counts[next(t for t in TASK_TYPE_NAMES if tid.startswith(t))] += 1
    assert max(counts.values()) - min(counts.values()) <= 1 and min(counts.values()) > 0
    assert set(env.tasks.ids("train")).isdisjoint(env.tasks.ids("test"))


def test_test_split_is_an_alias_of_test_seen():
    env = ALFWorldEnv(data_path="embedded", split="test", action_format="plain")
    assert env.tasks.splits == ["train", "test_seen", "test_unseen"]
    env.reset(seed=3)
    assert env.tasks.split_of(env.task_id) == "test_seen"
    with pytest.raises(KeyError):
        ALFWorldEnv(data_path="embedded", split="valid_unseen")


@pytest.mark.parametrize("split", ["train", "test_seen", "test_unseen"])
def test_walkthroughs_win_one_game_per_type(env, split):
    records = first_of_each_type(split)
    assert sorted(r["task_type"] for r in records) == sorted(TASK_TYPE_NAMES)
    for record in records:
        obs, info = env.reset(options={"task_id": record["id"]})
        assert obs.startswith(
            "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room."
        )
        assert (
            obs.endswith(f"Your task is to: {record['task']}.") and info["task"] == record["task"]
        )
        assert info["task_type"] == record["task_type"] and "help" not in info["admissible_actions"]
        assert env.walkthrough() == record["walkthrough"]
        rewards = []
        for t, command in enumerate(record["walkthrough"], 1):
            assert command in info["admissible_actions"]
            obs, reward, terminated, truncated, info = env.step(command)
            rewards.append(reward)
            assert terminated == (t == len(record["walkthrough"])) and not truncated
            assert (info["goal_condition_success_rate"] == 1.0) == info["won"] == terminated
        assert rewards == [0.0] * (len(rewards) - 1) + [10.0]
        assert info["gamefile"] == f"embedded:{record['id']}"
        with pytest.raises(ResetNeeded):
            env.step("look")


def test_nothing_happens_is_valid_and_budget_truncates():
    env = ALFWorldEnv(data_path="embedded", max_steps=3)
    record = first_of_each_type()[0]
    obs, info = env.reset(options={"task_id": record["id"]})
    key0 = info["state_key"]
    obs, reward, term, trunc, info = env.step(TAGGED.format("Go To Nowhere 1"))
    assert (
        obs == "Nothing happens." and reward == 0.0 and info["action_valid"] and info["step"] == 1
    )
    assert info["action_executed"] is False  # the contract SPA/HISR grounding reads
    assert info["state_key"] != key0 and info["state_key"].startswith(
        "Nothing happens. Location: middle"
    )
    obs, reward, term, trunc, info = env.step("no tags at all")
    assert not info["action_valid"] and reward == -0.1 and obs.startswith("Invalid action:")
    assert info["state_key"].startswith("Nothing happens.")  # state unchanged
    obs, reward, term, trunc, info = env.step(TAGGED.format("look"))
    assert trunc and not term and info["step"] == 3


def test_goal_directed_marks_executed_commands_naming_a_goal_class(env):
    """``info["goal_directed"]``: the command ran and names a class of the task's goal (the
    walkthrough of "place an alarmclock on the desk" touches both; a detour touches neither)."""
    record = next(r for r in first_of_each_type() if r["task_type"] == "pick_and_place_simple")
    obs, info = env.reset(options={"task_id": record["id"]})
    assert info["goal_directed"] is False  # no command yet
    goal = env._goal_classes()
    for command in env.walkthrough():
        obs, reward, term, trunc, info = env.step(command)
        assert info["goal_directed"] == bool(goal & set(command.split())), command
    assert term and info["goal_directed"]  # the winning move names the object
    env.reset(options={"task_id": record["id"]})
    target = sorted(goal)[0]
    assert not env.step(f"go to {target}x 1")[4]["goal_directed"]  # "Nothing happens."
    assert not env.step("")[4]["goal_directed"]  # invalid


def test_state_key_tracks_location_holding_and_moves(env):
    record = next(r for r in first_of_each_type() if r["task_type"] == "pick_and_place_simple")
    env.reset(options={"task_id": record["id"]})
    for command in record["walkthrough"]:
        _, _, _, _, info = env.step(command)
    key = info["state_key"]
    assert "Items in hand (status): nothing." in key and "History moving list by you: " in key
    assert key.endswith(",".join(sorted(info["admissible_actions"] + ["help"])))


def test_same_task_same_initial_key_and_reuse(env):
    tid = first_of_each_type()[1]["id"]
    _, a = env.reset(options={"task_id": tid})
    env.step("look")
    _, b = env.reset(options={"task_id": tid})
    assert a["state_key"] == b["state_key"] and b["step"] == 0


def test_verl_compat_sends_fallback_text_to_the_engine():
    env = ALFWorldEnv(data_path="embedded", compat="verl-agent")
    env.reset(options={"task_id": first_of_each_type()[0]["id"]})
    obs, reward, _, _, info = env.step("I will just LOOK")
    assert obs == "Nothing happens." and reward == -0.1
    assert not info["action_valid"] and not info["is_action_valid"]
    obs, reward, _, _, info = env.step("<think>x</think><action>LOOK</action>")
    assert (
        obs.startswith("You are in the middle of a room") and info["action_valid"] and reward == 0.0
    )


def test_check_env_and_fuzz():
    env = gym.make("agentenvs/ALFWorld-v0", data_path="embedded")
    check_env(env.unwrapped, skip_render_check=True)
    rng = random.Random(0)
    junk = [
        "",
        "<action></action>",
        "<think></think><action>take</action>",
        "\x00",
        "<action>" * 3,
        42,
    ]
    task = {"task_id": first_of_each_type()[5]["id"]}  # one game: no reloads in the fast run
    obs, info = env.reset(seed=0, options=task)
    for _ in range(100):
        choice = rng.random()
        if choice < 0.6 and info["admissible_actions"]:
            action = TAGGED.format(rng.choice(info["admissible_actions"]))
        elif choice < 0.8:
            action = TAGGED.format(
                "".join(rng.choice("abc xyz19") for _ in range(rng.randint(0, 20)))
            )
        else:
            action = rng.choice(junk)
        obs, reward, term, trunc, info = env.step(action)
        assert isinstance(obs, str) and env.observation_space.contains(obs)
        if term or trunc:
            obs, info = env.reset(options=task)


def test_official_layout_discovery(tmp_path):
    records = first_of_each_type("train")[:3] + first_of_each_type("test_seen")[:2]
    export_official_layout(
        records, str(tmp_path / "json_2.1.1"), {"train": "train", "test_seen": "valid_seen"}
    )
    os.makedirs(tmp_path / "json_2.1.1" / "valid_unseen")
    train_dir = tmp_path / "json_2.1.1" / "train"
    # loader filters: movable/Sliced paths, missing or false "solvable", unwanted task types
    bad = sorted(p.parent for p in train_dir.rglob("game.tw-pddl"))
    for name, edit in [("movable", None), ("Sliced", None), ("nosolv", "drop"), ("unsolv", False)]:
        dst = train_dir / f"pick_and_place_with_{name}-X-None-Y-1" / "trial_T0"
        dst.mkdir(parents=True)
        for f in ("game.tw-pddl", "traj_data.json"):
            data = json.loads((bad[0] / f).read_text())
            if f == "game.tw-pddl" and edit == "drop":
                data.pop("solvable")
            elif f == "game.tw-pddl" and edit is False:
                data["solvable"] = False
            (dst / f).write_text(json.dumps(data))
    kept = discover(str(train_dir))
    assert kept == sorted(r["id"] for r in records[:3])
    assert discover(str(train_dir), task_types=[1]) == [
        r["id"] for r in records[:3] if r["task_type"] == "pick_and_place_simple"
    ]
    games = official_games(str(tmp_path))
    assert list(games.panel.ids("valid_seen")) == sorted(r["id"] for r in records[3:])
    env = ALFWorldEnv(data_path=str(tmp_path), split="valid_seen", action_format="plain")
    record = records[3]
    _, info = env.reset(options={"task_id": record["id"]})
    assert info["gamefile"].endswith(os.path.join(record["id"], "game.tw-pddl"))
    for command in record["walkthrough"]:
        _, reward, term, _, info = env.step(command)
    assert term and reward == 10.0 and info["task_type"] == record["task_type"]


def test_success_by_task_type_from_env_ids():
    ids = [r["id"] for r in first_of_each_type()]
    rates = success_by_task_type([(t, i % 2 == 0) for i, t in enumerate(ids)])
    assert set(rates) == set(TASK_TYPE_NAMES) | {"all"} and rates["all"] == 0.5


def test_expert_plan_follows_the_state():
    env = ALFWorldEnv(data_path="embedded", action_format="plain", expert_plan=True)
    record = first_of_each_type()[0]
    _, info = env.reset(options={"task_id": record["id"]})
    assert info["expert_plan"] == record["walkthrough"]
    _, _, _, _, info = env.step(record["walkthrough"][0])
    assert info["expert_plan"] == record["walkthrough"][1:]


# -- the expert (docs/custom-env.md, expert_action) -----------------------------------------------
def _play_expert(env: ALFWorldEnv, limit: int = 60) -> tuple[list[str], dict]:
    commands, info = [], {}
    while (command := env.expert_action()) is not None and len(commands) < limit:
        commands.append(command)
        _, _, _, _, info = env.step(command)
        assert info["action_valid"] and info.get("action_executed", True), command
    return commands, info


def test_the_expert_follows_the_walkthrough_and_wins(env):
    for record in first_of_each_type()[:3]:  # pick-and-place, look-at-in-light, clean (~1 s each)
        env.reset(options={"task_id": record["id"]})
        walkthrough = env.walkthrough()
        commands, info = _play_expert(env)
        assert commands == walkthrough and info["won"], record["id"]
        assert env.expert_action() is None


def test_the_expert_replans_after_a_detour(env, monkeypatch):
    """Off its plan, the expert asks the planner once, from the current state, and still wins."""
    from agentenvs.alfworld import engine

    calls, real = [], engine.replan
    monkeypatch.setattr(engine, "replan", lambda *args: calls.append(args) or real(*args))
    record = first_of_each_type()[0]
    _, info = env.reset(options={"task_id": record["id"]})
    plan = env.walkthrough()
    detour = next(a for a in info["admissible_actions"] if a.startswith("go to") and a != plan[0])
    env.step(detour)
    commands, info = _play_expert(env)
    assert info["won"] and len(calls) == 1 and commands[0] == plan[0]  # back, then on its way
