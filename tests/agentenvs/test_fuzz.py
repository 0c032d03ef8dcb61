"""Bad actions never raise: they are invalid, cost the penalty and leave the state unchanged."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentenvs.core import parse_action
from agentenvs.sokoban.env import SokobanEnv

ENV = SokobanEnv(max_steps=10**9)
TAGS = st.sampled_from(
    ["<think>", "</think>", "<action>", "</action>", "<ACTION>", "up", "left", " ", "\n"]
)
TAGGY = st.lists(st.one_of(TAGS, st.text(max_size=5)), max_size=12).map("".join)


def _check(action):
    _, info = ENV.reset(options={"task_id": "seed-42"})
    before = info["state_key"]
    obs, reward, terminated, truncated, info = ENV.step(action)
    expected_valid = parse_action(action).valid and parse_action(
        action
    ).command.strip().lower() in ("up", "down", "left", "right")
    assert info["action_valid"] == expected_valid
    assert ENV.observation_space.contains(obs)
    if not expected_valid:
        assert info["state_key"] == before and reward == -0.1 and not terminated
        assert info["invalid_reason"] and "Invalid action" in obs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_arbitrary_unicode(action):
    _check(action)


@settings(max_examples=300, deadline=None)
@given(TAGGY)
def test_nested_and_unbalanced_tags(action):
    _check(action)


@pytest.mark.parametrize(
    "action",
    [
        "",
        "x" * 1_000_000,
        "<think>" + "a" * 1_000_000 + "</think><action>" + "u" * 1000 + "</action>",
        "<think>t</think><action><action>up</action></action>",
        "<think>t</think><action>up</action></action>",
        "<think>t</think></action>up<action>",
        "<think>t</think><action>\x00up</action>",
        "<think>t</think><action>" + "\U0001f600" * 50 + "</action>",
        None,
        42,
        b"<action>up</action>",
        ["up"],
    ],
)
def test_edge_cases(action):
    _, info = ENV.reset(options={"task_id": "seed-42"})
    obs, reward, terminated, _, info2 = ENV.step(action)
    assert not info2["action_valid"] and reward == -0.1 and not terminated
    assert info2["state_key"] == info["state_key"] and ENV.observation_space.contains(obs)
