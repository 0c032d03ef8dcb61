"""Our envs as SkyRL-gym text envs (``agentenvs.integrations.skyrl_env``; the real skyrl-gym package, run in
the reach venv by scripts/test_reach.sh)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.reach
skyrl_gym = pytest.importorskip("skyrl_gym")

from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.integrations.skyrl_env import SkyRLTextEnv, register  # noqa: E402

ENV = "agentenvs/Sokoban-v0"
ACTIONS = ["up", "down", "left", "right", "jump"]  # "jump": invalid
PROMPT = [{"role": "system", "content": "You push boxes."}]


def test_every_id_registered_with_skyrl_gym():
    ids = register()
    assert ENV in ids and register() == ids  # idempotent
    assert all(skyrl_gym.spec(i).kwargs == {"env_id": i} for i in ids)


def test_skyrl_make_plays_episodes_like_in_process():
    """``skyrl_gym.make`` as SkyRL's generator calls it (``env_config``, ``extras`` with the task
    and seed): the chat it returns carries the in-process env's observations, its rewards per
    turn, done flags and ``info`` (state_key, won, action_valid, ...) in the metadata."""
    register()
    rng = np.random.default_rng(0)
    local = gym.make(ENV, action_format="plain")
    task_ids = list(local.unwrapped.tasks.ids("train"))[:20]
    turns = invalid = 0
    for seed, task_id in enumerate(task_ids):
        extras = {"task_id": task_id, "seed": seed, "env_kwargs": {"action_format": "plain"}}
        env = skyrl_gym.make(ENV, env_config={}, extras=extras)
        assert isinstance(env, BaseTextEnv) and env.max_turns == local.unwrapped.max_steps
        chat, meta = env.init(PROMPT)
        obs, info = local.reset(seed=seed, options={"task_id": task_id})
        assert chat == [*PROMPT, {"role": "user", "content": obs}] and meta == {"info": info}
        done = False
        while not done:
            action = ACTIONS[int(rng.integers(len(ACTIONS)))]
            out = env.step(action)
            obs, reward, terminated, truncated, info = local.step(action)
            done = terminated or truncated
            assert out["reward"] == reward and out["done"] == done
            assert out["observations"] == ([] if done else [{"role": "user", "content": obs}])
            assert out["metadata"] == {
                "info": info,
                "terminated": terminated,
                "truncated": truncated,
            }
            turns += 1
            invalid += not info["action_valid"]
        env.close()
    assert turns > len(task_ids) and 0 < invalid < turns


def test_env_config_kwargs_and_missing_id():
    register()
    env = skyrl_gym.make(
        "agentenvs/SearchQA-v0", env_config={"env_kwargs": {"max_steps": 2}}, extras={"seed": 1}
    )
    assert env.max_turns == 2
    chat, meta = env.init([])
    assert chat[-1]["content"] == meta["info"]["question"]
    with pytest.raises(ValueError, match="env_id"):
        SkyRLTextEnv()
