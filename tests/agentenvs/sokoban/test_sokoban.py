"""Sokoban-v0: generator, dynamics, rewards, rendering and golden vectors of the reference generator."""

import hashlib
import random
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.sokoban.env import SokobanEnv
from agentenvs.sokoban.game import SokobanGame
from agentenvs.sokoban.generator import (
    GenerationError,
    Room,
    generate_room,
    generate_room_with_retries,
)
from agentenvs.sokoban.render import render_rgb
from agentenvs.sokoban.solver import solve

HANDMADE_FIXED = np.array(
    [[0, 0, 0, 0, 0], [0, 1, 1, 1, 0], [0, 1, 1, 1, 0], [0, 1, 2, 1, 0], [0, 0, 0, 0, 0]]
)
HANDMADE_STATE = np.array(
    [[0, 0, 0, 0, 0], [0, 5, 1, 1, 0], [0, 1, 4, 1, 0], [0, 1, 2, 1, 0], [0, 0, 0, 0, 0]]
)
UP, DOWN, LEFT, RIGHT = 1, 2, 3, 4


def _rows(symbols: str) -> str:
    cell = {
        "#": " # \t",
        "_": " _ \t",
        "O": " O \t",
        "√": " √ \t",
        "X": " X \t",
        "P": " P \t",
        "S": " S \t",
    }
    return "\n".join("".join(cell[c] for c in row) for row in symbols.split())


# -- generator golden vectors (docs/sokoban.md, *Golden vectors*) ----------------------------------
GOLDEN_ROOMS = {
    0: (
        "000000/011110/002110/000110/000110/000000",
        "###### #____# ##O_P# ###X_# ###__# ######",
        {(2, 2): (3, 3)},
    ),
    1: (
        "000000/021000/010000/011000/011000/000000",
        "###### #O_### #_#### #X_### #P_### ######",
        {(1, 1): (3, 1)},
    ),
    2: (
        "000000/010110/010110/011120/011110/000000",
        "###### #_#_P# #_#X_# #___O# #____# ######",
        {(3, 4): (2, 3)},
    ),
    42: (
        "000000/011120/011110/000000/000000/000000",
        "###### #PX_O# #____# ###### ###### ######",
        {(1, 4): (1, 2)},
    ),
    12345: (
        "000000/011110/011210/000110/000010/000000",
        "###### #____# #PXO_# ###__# ####_# ######",
        {(2, 3): (2, 2)},
    ),
}


@pytest.mark.parametrize("seed", sorted(GOLDEN_ROOMS))
def test_generator_reproduces_reference_rooms(seed):
    fixed_rows, state_rows, mapping = GOLDEN_ROOMS[seed]
    room = generate_room(seed)
    assert "/".join("".join(map(str, r)) for r in room.fixed) == fixed_rows
    assert SokobanGame(room.fixed, room.state).text() == _rows(state_rows)
    assert dict(room.box_mapping) == mapping


def test_seed_42_text_observation_exact():
    env = SokobanEnv()
    obs, _ = env.reset(options={"task_id": "seed-42"})
    assert obs == (
        " # \t # \t # \t # \t # \t # \t\n # \t P \t X \t _ \t O \t # \t\n # \t _ \t _ \t _ \t _ \t # \t\n"
        " # \t # \t # \t # \t # \t # \t\n # \t # \t # \t # \t # \t # \t\n # \t # \t # \t # \t # \t # \t"
    )


def test_generator_leaves_global_random_state_alone():
    random.seed(5)
    np.random.seed(5)
    before = (random.getstate(), np.random.get_state()[1].copy())
    generate_room(3)
    assert random.getstate() == before[0] and np.array_equal(np.random.get_state()[1], before[1])


def test_generator_invariants_and_solvability_500_seeds():
    for seed in range(500):
        room = generate_room_with_retries(seed)
        fixed, state = room.fixed, room.state
        assert np.count_nonzero(state == 5) == 1
        assert np.count_nonzero(state == 4) == 1 and np.count_nonzero(state == 3) == 0
        assert np.count_nonzero(fixed == 2) == 1
        assert not np.concatenate([fixed[0], fixed[-1], fixed[:, 0], fixed[:, -1]]).any()
        path = solve(fixed, state, max_depth=15)
        assert path is not None, f"seed {seed} not solvable within 15 steps"


def test_rooms_identical_across_processes():
    code = (
        "from agentenvs.sokoban.generator import generate_room\n"
        "import hashlib\n"
        "print(hashlib.sha256(b''.join(generate_room(s).state.tobytes() for s in range(50))).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(h)},
        ).stdout
        for h in (1, 2)
    }
    local = hashlib.sha256(
        b"".join(generate_room(s).state.tobytes() for s in range(50))
    ).hexdigest()
    assert digests == {local + "\n"}


def test_retry_chain_is_deterministic():
    with pytest.raises(GenerationError):
        generate_room(0, dim=(3, 3), num_boxes=1)
    with pytest.raises(GenerationError):
        generate_room_with_retries(0, max_retries=3, dim=(3, 3))
    with pytest.raises(GenerationError):
        generate_room(6, dim=(8, 8), num_boxes=3)  # seed 6 fails; the chain's next seed works
    room = generate_room_with_retries(6, dim=(8, 8), num_boxes=3)
    again = generate_room_with_retries(6, dim=(8, 8), num_boxes=3)
    assert room.seed != 6 and again.seed == room.seed and np.array_equal(again.state, room.state)
    assert np.count_nonzero(room.state == 4) == 3


# -- dynamics and rewards (docs/sokoban.md, *Dynamics and rewards*, *Golden vectors*) --------------
def test_golden_handmade_two_move_solution():
    game = SokobanGame(HANDMADE_FIXED, HANDMADE_STATE)
    assert game.text() == (
        " # \t # \t # \t # \t # \t\n # \t P \t _ \t _ \t # \t\n # \t _ \t X \t _ \t # \t\n"
        " # \t _ \t O \t _ \t # \t\n # \t # \t # \t # \t # \t"
    )
    assert game.step(RIGHT) == (-0.1, False, True)
    assert game.text().split("\n")[1] == " # \t _ \t P \t _ \t # \t"
    assert game.step(DOWN) == (10.9, True, True)
    assert game.text() == (
        " # \t # \t # \t # \t # \t\n # \t _ \t _ \t _ \t # \t\n # \t _ \t P \t _ \t # \t\n"
        " # \t _ \t √ \t _ \t # \t\n # \t # \t # \t # \t # \t"
    )


def test_golden_handmade_other_sequence():
    game = SokobanGame(HANDMADE_FIXED, HANDMADE_STATE)
    assert game.step(UP) == (-0.1, False, False)
    assert game.step(LEFT) == (-0.1, False, False)
    assert game.step(DOWN) == (-0.1, False, True)
    assert game.step(RIGHT) == (-0.1, False, True)
    assert game.step(DOWN) == (-0.1, False, True)
    assert game.text().split("\n")[3] == " # \t _ \t S \t _ \t # \t"


def test_golden_two_boxes_push_on_then_off_target():
    fixed = np.array(
        [[0, 0, 0, 0, 0], [0, 1, 2, 1, 0], [0, 1, 1, 1, 0], [0, 2, 1, 1, 0], [0, 0, 0, 0, 0]]
    )
    state = np.array(
        [[0, 0, 0, 0, 0], [0, 1, 2, 1, 0], [0, 1, 4, 1, 0], [0, 2, 5, 4, 0], [0, 0, 0, 0, 0]]
    )
    game = SokobanGame(fixed, state)
    assert [game.step(a)[0] for a in (UP, LEFT, UP, RIGHT)] == [0.9, -0.1, -0.1, -1.1]
    assert not game.solved
    assert game.text().split("\n")[1] == " # \t _ \t S \t X \t # \t"


def test_move_actions_never_push_and_boxes_block_boxes():
    fixed = np.zeros((3, 7), int)
    fixed[1, 1:4], fixed[1, 4:6] = 1, 2
    state = fixed.copy()
    state[1, 1], state[1, 2], state[1, 3] = 5, 4, 4
    game = SokobanGame(fixed, state)
    assert game.step(8) == (-0.1, False, False)  # move right into a box: nothing
    assert game.step(RIGHT) == (-0.1, False, False)  # box behind box blocks


def test_invalid_rooms_are_rejected():
    with pytest.raises(ValueError, match="wall border"):
        SokobanGame(np.ones((3, 3)), np.full((3, 3), 5))


def test_rgb_render_golden_hash():
    codes = HANDMADE_STATE.astype(np.int8)
    image = render_rgb(codes)
    assert image.shape == (80, 80, 3) and image.dtype == np.uint8
    assert (
        hashlib.sha256(image.tobytes()).hexdigest()
        == "f73234ba41fd8306100d622d9109223cb43f1926bdee63c3811fa1e705d2fc6e"
    )


# -- the Gymnasium env ------------------------------------------------------------------------------
def test_env_episode_win_and_info_contract():
    env = gym.make("agentenvs/Sokoban-v0")
    obs, info = env.reset(options={"task_id": "seed-1"})
    assert set(info) >= {"won", "action_valid", "state_key", "task_id", "admissible_actions"}
    assert info["task_id"] == "seed-1" and info["state_key"] == obs
    assert info["admissible_actions"] == ["up", "down", "left", "right"]
    _, r1, term1, trunc1, _ = env.step("<think>push</think><action>up</action>")
    _, r2, term2, trunc2, info = env.step("<think>again</think><action>UP</action>")
    assert (r1, term1, r2, term2, trunc2) == (-0.1, False, 10.9, True, False)
    assert info["won"] and info["boxes_on_target"] == 1
    with pytest.raises(ResetNeeded):
        env.step("<think>x</think><action>up</action>")


def test_env_truncates_at_max_steps_counting_invalid_actions():
    env = SokobanEnv(max_steps=3)
    _, info = env.reset(options={"task_id": "seed-42"})
    key = info["state_key"]
    results = [
        env.step(a)
        for a in ("<think>t</think><action>left</action>", "garbage", "<action>up</action>")
    ]
    assert [r[1] for r in results] == [-0.1, -0.1, -0.1]
    assert [r[3] for r in results] == [False, False, True] and not any(r[2] for r in results)
    assert results[1][4]["state_key"] == key and not results[1][4]["action_valid"]
    assert "Invalid action" in results[1][0]


def test_unknown_action_word_is_invalid():
    env = SokobanEnv()
    _, info = env.reset(options={"task_id": "seed-42"})
    obs, reward, *_, info2 = env.step("<think>t</think><action>jump</action>")
    assert not info2["action_valid"] and "unknown action" in info2["invalid_reason"]
    assert info2["state_key"] == info["state_key"] and reward == -0.1


def test_verl_compat_projection_and_free_invalid_steps():
    env = SokobanEnv(compat="verl-agent", max_steps=2)
    env.reset(options={"task_id": "seed-42"})
    _, _, _, _, info = env.step("<think>x</think><action>Right then up</action>")
    assert (
        info["action_valid"] and info["step"] == 1 and not info["action_is_effective"]
    )  # "up" matched first
    assert info["state_key"].split("\n")[1].split("\t")[1] == " P "
    _, reward, _, trunc, info = env.step("<think>x</think><action>still</action>")
    assert info["action_valid"] and reward == -0.1 and info["step"] == 1 and not trunc
    _, reward, _, trunc, info = env.step("no tags")
    assert not info["action_valid"] and info["step"] == 1 and not trunc


def test_visual_variant_observation():
    env = gym.make("agentenvs/SokobanVisual-v0", render_mode="rgb_array")
    obs, _ = env.reset(options={"task_id": "seed-42"})
    assert obs["image"].shape == (96, 96, 3) and obs["text"].startswith(" # ")
    assert np.array_equal(env.render(), obs["image"])


@pytest.mark.parametrize("env_id", ["agentenvs/Sokoban-v0", "agentenvs/SokobanVisual-v0"])
def test_gymnasium_check_env(env_id):
    from gymnasium.utils.env_checker import check_env

    check_env(gym.make(env_id).unwrapped, skip_render_check=True)


def test_sb3_check_env_discrete_adapter():
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    env = gym.make("agentenvs/SokobanDiscrete-v0")
    sb3_checker.check_env(env)
    obs, info = env.reset(options={"task_id": "seed-42"})
    assert obs.sum() == 1 + 1 + 1 + np.count_nonzero(env.unwrapped.game.codes() == 0)
    assert info["task_id"] == "seed-42"


def test_reset_seed_picks_deterministic_train_task_and_split_option():
    env = SokobanEnv()
    a = env.reset(seed=3)[1]["task_id"]
    b = env.reset(seed=3)[1]["task_id"]
    assert a == b and env.tasks.split_of(a) == "train"
    test_env = SokobanEnv(split="test")
    assert test_env.tasks.split_of(test_env.reset(seed=0)[1]["task_id"]) == "test"
    with pytest.raises(ValueError, match="unknown task id"):
        env.reset(options={"task_id": "nope"})


# -- curriculum (max_solution_steps) -----------------------------------------------------------------
def test_curriculum_first_ids_match_the_easy_panel():
    from agentenvs.sokoban.env import curriculum_task_ids

    # the rooms learners' easy panel picked: first train rooms solved in <= 2 moves
    assert curriculum_task_ids("train", 2, 3) == ("seed-1", "seed-3", "seed-4")
    assert curriculum_task_ids("train", 1, 5) == (
        "seed-15",
        "seed-22",
        "seed-40",
        "seed-46",
        "seed-47",
    )
    assert curriculum_task_ids("train", 1, 5) is curriculum_task_ids("train", 1, 5)  # cached
    with pytest.raises(ValueError, match="max_solution_steps"):
        curriculum_task_ids("train", 0, 5)


def test_curriculum_option_restricts_both_splits():
    env = SokobanEnv(max_solution_steps=1, curriculum_size=(12, 5))
    train, test = env.tasks.ids("train"), env.tasks.ids("test")
    assert (len(train), len(test)) == (12, 5)
    assert train[:3] == ("seed-15", "seed-22", "seed-40")
    assert all(SokobanEnv().tasks.split_of(t) == "train" for t in train)
    assert all(SokobanEnv().tasks.split_of(t) == "test" for t in test)
    assert set(train).isdisjoint(test)
    seeds = [int(t[5:]) for t in train]
    assert seeds == sorted(seeds)
    for task_id in (*train[:4], *test[:2]):
        env.reset(options={"task_id": task_id})
        room = env._room
        solution = solve(room.fixed, room.state, max_depth=1)
        assert solution is not None and len(solution) == 1
        _, _, terminated, _, info = env.step(f"<think>t</think><action>{solution[0]}</action>")
        assert terminated and info["won"]
    drawn = {env.reset(seed=s)[1]["task_id"] for s in range(60)}
    assert drawn <= set(train) and len(drawn) > 5
    test_env = SokobanEnv(max_solution_steps=1, curriculum_size=(12, 5), split="test")
    assert {test_env.reset(seed=s)[1]["task_id"] for s in range(30)} <= set(test)
    with pytest.raises(ValueError, match="unknown task id"):
        env.reset(options={"task_id": "seed-0"})  # a room outside the curriculum


def test_curriculum_through_gym_make_and_int_size():
    env = gym.make("agentenvs/Sokoban-v0", max_solution_steps=2, curriculum_size=4)
    tasks = env.unwrapped.tasks
    assert tasks.ids("train") == ("seed-1", "seed-3", "seed-4", "seed-6")
    assert len(tasks.ids("test")) == 4
    assert env.reset(seed=0)[1]["task_id"] in tasks.ids("train")
    bigger = SokobanEnv(max_solution_steps=3, curriculum_size=(3, 2), dim_room=(7, 7))
    for task_id in bigger.tasks.ids("train") + bigger.tasks.ids("test"):
        bigger.reset(options={"task_id": task_id})
        assert solve(bigger._room.fixed, bigger._room.state, max_depth=3) is not None
    with pytest.raises(ValueError, match="curriculum_size"):
        SokobanEnv(max_solution_steps=1, curriculum_size=(1, 2, 3))


def test_curriculum_lower_bound_and_validation_split():
    """``min_solution_steps`` leaves out rooms solved in fewer moves; ``validation_size`` adds
    the next train-range rooms as a ``validation`` split, disjoint from train and test."""
    env = SokobanEnv(
        max_solution_steps=4, min_solution_steps=2, curriculum_size=(6, 3), validation_size=4
    )
    tasks = env.tasks
    train, val = tasks.ids("train"), tasks.ids("validation")
    assert len(train) == 6 and len(val) == 4 and not set(train) & set(val)
    assert not set(tasks.ids("test")) & set(train + val)
    for task_id in train + val:
        env.reset(options={"task_id": task_id})
        assert 2 <= len(solve(env._room.fixed, env._room.state, max_depth=4)) <= 4
    assert "validation" not in SokobanEnv(max_solution_steps=1, curriculum_size=3).tasks.splits
    with pytest.raises(ValueError, match="min_solution_steps"):
        SokobanEnv(max_solution_steps=2, min_solution_steps=3)


def test_no_curriculum_keeps_the_full_splits():
    env = SokobanEnv()
    assert env.max_solution_steps is None
    assert len(env.tasks.ids("train")) == 2**16 - 1 and len(env.tasks.ids("test")) == 2**16
    assert env.reset(options={"task_id": "seed-0"})[1]["task_id"] == "seed-0"


# -- the expert (docs/custom-env.md, expert_action) -----------------------------------------------
def _tagged(move: str) -> str:
    return f"<think></think><action>{move}</action>"


@pytest.mark.parametrize("task", ["seed-0", "seed-1", "seed-2", "seed-42", "seed-12345"])
def test_the_expert_solves_each_room_in_its_shortest_number_of_moves(task):
    env = gym.make("agentenvs/Sokoban-v0")
    env.reset(options={"task_id": task})
    room = env.unwrapped._room
    shortest = len(solve(room.fixed, room.state))
    for turn in range(1, shortest + 1):
        move = env.unwrapped.expert_action()
        assert move in env.unwrapped._admissible_actions()
        _, _, terminated, _, info = env.step(_tagged(move))
        assert info["action_valid"] and terminated == (turn == shortest)
    assert info["won"] and env.unwrapped.expert_action() is None  # solved: no move left


def test_the_expert_recovers_after_a_detour_and_gives_up_on_a_dead_room():
    env = SokobanEnv(max_steps=30)
    env.reset(options={"task_id": "seed-42"})  # #PX_O#: right, right wins
    env.step(_tagged("down"))  # a detour: the player leaves the box's row
    moves = []
    while not env.game.solved:
        moves.append(env.expert_action())
        env.step(_tagged(moves[-1]))
    assert moves == ["up", "right", "right"]
    assert SokobanEnv().expert_action() is None  # before any reset
    fixed = np.array([[0, 0, 0, 0, 0], [0, 1, 1, 1, 0], [0, 1, 1, 2, 0], [0, 0, 0, 0, 0]])
    state = np.array([[0, 0, 0, 0, 0], [0, 4, 5, 1, 0], [0, 1, 1, 2, 0], [0, 0, 0, 0, 0]])
    env.game, env._room = SokobanGame(fixed, state), Room(fixed, state, (), 0)
    assert env.expert_action() is None  # the box is in a corner: no solution is left
