"""The data contract, JSON-lines storage, the action parser and task panels."""

import json
import subprocess
import sys

import numpy as np
import pytest

from agentenvs.core import (
    SeedTaskIds,
    Step,
    TaskPanel,
    Trajectory,
    decode,
    encode,
    parse_action,
    parse_action_verl,
    read_trajectories,
    write_trajectories,
)


def _trajectory() -> Trajectory:
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    steps = [
        Step(
            "grid ☃ √\t\n",
            "<think>x</think><action>up</action>",
            -0.1,
            state_key="a",
            next_state_key="b",
        ),
        Step(
            {"text": "t", "image": image},
            2,
            10.9,
            terminated=True,
            state_key=b"\x00\xff",
            next_state_key=("b", 1),
            action_valid=False,
            advantage=0.25,
            extras={
                "token_ids": [1, 2],
                "logprobs": np.array([-0.5, -1.25], dtype=np.float32),
                3: (1, 2),
            },
        ),
    ]
    return Trajectory("seed-7", "group-1", steps, success=True, traj_id="t0")


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_jsonl_round_trip_is_lossless(tmp_path, suffix):
    traj = _trajectory()
    path = tmp_path / f"run{suffix}"
    assert write_trajectories(path, [traj, traj]) == 2
    loaded = list(read_trajectories(path))
    assert loaded == [traj, traj]
    step = loaded[0].steps[1]
    assert step.observation["image"].dtype == np.uint8 and step.observation["image"].shape == (
        2,
        3,
        3,
    )
    assert step.extras["logprobs"].dtype == np.float32
    assert step.state_key == b"\x00\xff" and step.next_state_key == ("b", 1)
    assert loaded[0].total_return == pytest.approx(10.8)
    assert loaded[0].steps[0].observation == "grid ☃ √\t\n"


def test_encode_output_is_plain_json():
    assert json.loads(json.dumps(encode(_trajectory().to_dict()))) == encode(
        _trajectory().to_dict()
    )
    assert decode(encode({"__tuple__": 1})) == {"__tuple__": 1}  # reserved-looking keys survive


def test_encode_rejects_unknown_types():
    with pytest.raises(TypeError, match="losslessly"):
        encode(object())


def test_reader_reports_bad_lines(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"not": "a trajectory"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        list(read_trajectories(path))


def test_advantages_array_marks_uncredited_steps():
    adv = _trajectory().advantages
    assert np.isnan(adv[0]) and adv[1] == 0.25


@pytest.mark.parametrize(
    ("text", "command", "valid"),
    [
        ("<think>a</think><action>go north</action>", "go north", True),
        ("<THINK>a</THINK>\n<Action>  Up </Action>", "Up", True),
        ("<action>up</action>", "up", False),  # no think
        ("<think>a</think>", None, False),
        ("<think>a</think><action></action>", None, False),
        ("<think>a</think><action><action>up</action></action>", None, False),
        ("<think>a</think><action>up</action><action>down</action>", None, False),
        ("<think>a</think><action>up", None, False),
        ("<think>a<action>up</action></think>", "up", False),  # think not closed before the action
        ("<think>a</think><action>向上</action>", "向上", False),
        ("", None, False),
    ],
)
def test_parse_action_rule(text, command, valid):
    parsed = parse_action(text)
    assert (parsed.command, parsed.valid) == (command, valid)
    assert bool(parsed.reason) == (not valid)


def test_parse_action_non_text():
    assert not parse_action(None).valid and not parse_action(3).valid


def test_verl_projection_falls_back_to_the_tail():
    parsed = parse_action_verl("x" * 50 + "open the FRIDGE 1")
    assert parsed.command == ("x" * 50 + "open the fridge 1")[-30:] and not parsed.valid
    assert (
        parse_action_verl("<think>t</think><action>Open Fridge 1</action>").command
        == "open fridge 1"
    )


def test_task_panel_splits_are_disjoint_and_stable():
    panel = TaskPanel({"train": SeedTaskIds(0, 10), "test": ["seed-20", "seed-21"]})
    assert panel.split_of("seed-3") == "train" and panel.split_of("seed-21") == "test"
    assert "seed-10" not in panel and list(panel.ids("train"))[-1] == "seed-9"
    with pytest.raises(ValueError, match="share"):
        TaskPanel({"train": SeedTaskIds(0, 10), "test": SeedTaskIds(5, 20)})
    with pytest.raises(ValueError, match="share"):
        TaskPanel({"train": ["a", "b"], "test": ["b"]})
    with pytest.raises(KeyError):
        panel.ids("valid")


def test_task_panel_alias_names_a_split_but_is_not_one():
    panel = TaskPanel({"train": ["a"], "test_seen": ["b"]}, aliases={"test": "test_seen"})
    assert panel.splits == ["train", "test_seen"] and list(panel.ids("test")) == ["b"]
    assert panel.resolve("test") == "test_seen" and panel.split_of("b") == "test_seen"
    with pytest.raises(KeyError, match="test_seen"):
        panel.ids("valid")
    for aliases in ({"test": "nope"}, {"train": "test_seen"}):
        with pytest.raises(ValueError, match="alias"):
            TaskPanel({"train": ["a"], "test_seen": ["b"]}, aliases=aliases)


def test_seed_task_ids_reject_other_forms():
    ids = SeedTaskIds(0, 5)
    assert "seed-x" not in ids and "seed--1" not in ids and 3 not in ids
    assert ids[-1] == "seed-4" and ids[1:3] == ["seed-1", "seed-2"]
    with pytest.raises(IndexError):
        ids[5]


def test_reset_reproduces_the_same_state_in_another_process():
    code = (
        "import gymnasium as gym, agentenvs\n"
        "env = gym.make('agentenvs/Sokoban-v0')\n"
        "a = env.reset(options={'task_id': 'seed-123'})[1]['state_key']\n"
        "b = env.reset(seed=7)[1]\n"
        "print(repr((a, b['task_id'], b['state_key'])))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(h), "PATH": ""},
        ).stdout
        for h in (0, 1)
    }
    assert len(outputs) == 1 and "seed-" in outputs.pop()
