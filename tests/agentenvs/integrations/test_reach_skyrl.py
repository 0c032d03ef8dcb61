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
from agentenvs.core import EpisodeMemory, agent_prompt_for  # noqa: E402
from agentenvs.integrations.skyrl_env import SkyRLTextEnv, register  # noqa: E402

ENV = "agentenvs/Sokoban-v0"
ACTIONS = ["up", "down", "left", "right", "jump"]  # "jump": invalid
PROMPT = [{"role": "system", "content": "You push boxes."}]


def test_every_text_id_registered_with_skyrl_gym():
    """Only the ids with text observations and actions: not ``SokobanDiscrete-v0``
    (``Discrete(4)`` actions) nor ``SokobanVisual-v0`` (image observations)."""
    ids = register()
    assert register() == ids  # idempotent
    assert set(ids) == {
        "agentenvs/Sokoban-v0", "agentenvs/ALFWorld-v0", "agentenvs/WebShop-v0",
        "agentenvs/WebShopBrowser-v0", "agentenvs/SearchQA-v0", "agentenvs/SWE-v0",
    }  # fmt: skip
    assert all(skyrl_gym.spec(i).kwargs == {"env_id": i} for i in ids)
    for other in ("agentenvs/SokobanDiscrete-v0", "agentenvs/SokobanVisual-v0"):
        assert other not in skyrl_gym.registry


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
        env = skyrl_gym.make(ENV, env_config={"prompt": None}, extras=extras)
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
        "agentenvs/SearchQA-v0",
        env_config={"env_kwargs": {"max_steps": 2}, "prompt": None},
        extras={"seed": 1},
    )
    assert env.max_turns == 2
    chat, meta = env.init([])
    assert chat[-1]["content"] == meta["info"]["question"]
    with pytest.raises(ValueError, match="env_id"):
        SkyRLTextEnv()


def play_prompted(env, local, style: str, seed: int, rng: np.random.Generator) -> int:
    """Play one episode of ``env`` (a SkyRL env) beside ``local`` (in process): the chat after
    ``PROMPT`` is the local prompt's first chat, each later user turn its rendered turn."""
    prompt = agent_prompt_for(local, style, 0)
    memory = EpisodeMemory()
    chat, meta = env.init(PROMPT)
    obs, info = local.reset(seed=seed)
    assert chat == [*PROMPT, *prompt.messages(memory, obs, info)]
    done, turns = False, 0
    while not done:
        move = ACTIONS[int(rng.integers(len(ACTIONS)))]
        action = f"<think>go</think><action>{move}</action>"
        memory.record(obs, prompt.project(action))
        out = env.step(action)
        obs, reward, terminated, truncated, info = local.step(action)
        done = terminated or truncated
        assert out["reward"] == reward and out["done"] == done
        expected = [] if done else [{"role": "user", "content": prompt.render(memory, obs, info)}]
        assert out["observations"] == expected
        turns += 1
    env.close()
    return turns


@pytest.mark.parametrize("style", ["reference", "compact"])
def test_the_first_message_is_the_in_process_agent_prompt(style):
    """By default (``env_config["prompt"]``: ``"reference"``) the chat ``init`` returns is the
    env's agent prompt (example turns, then the rendered first turn), as in process, and every
    later user turn is the prompt's rendered turn; 5 episodes with random moves."""
    register()
    rng = np.random.default_rng(0)
    local = gym.make(ENV)
    config = {} if style == "reference" else {"prompt": style}
    for seed in range(5):
        env = skyrl_gym.make(ENV, env_config=config, extras={"seed": seed})
        assert play_prompted(env, local, style, seed, rng) > 0


def test_over_the_network_the_chat_equals_in_process():
    """``env_config["url"]``: the env ``agentenvs serve --prompt reference --prompt-history 0``
    serves; SkyRL's chat, turns and rewards equal the in-process env's (the prompt comes over
    the wire); ``env_kwargs`` with a url is refused (the server's are the kwargs)."""
    pytest.importorskip("openenv")
    from agentenvs.serve.openenv import serve_in_subprocess

    register()
    rng = np.random.default_rng(1)
    local = gym.make(ENV)
    with serve_in_subprocess(ENV, timeout=60, prompt="reference", prompt_history_length=0) as (
        url,
        _,
    ):
        for seed in range(3):
            env = skyrl_gym.make(ENV, env_config={"url": url}, extras={"seed": seed})
            assert play_prompted(env, local, "reference", seed, rng) > 0
        with pytest.raises(ValueError, match="the server sets them"):
            skyrl_gym.make(ENV, env_config={"url": url, "env_kwargs": {"max_steps": 2}})
