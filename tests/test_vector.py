"""Vector envs and the grouped vector env."""

import gymnasium as gym
import numpy as np
import pytest

import agentenvs
from agentenvs import make_group_vec_env


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_modes(mode):
    envs = gym.make_vec(
        "agentenvs/Sokoban-v0", num_envs=2, vectorization_mode=mode, action_format="plain"
    )
    obs, infos = envs.reset(seed=0)
    assert len(obs) == 2 and list(infos["task_id"]) != [None, None]
    obs, rewards, term, trunc, infos = envs.step(["up", "garbage"])
    assert rewards.shape == (2,) and not infos["action_valid"][1]
    envs.reset(
        options={"task_id": "seed-1"}
    )  # two pushes up put the box on its target: "√" in shared memory
    envs.step(["up", "up"])
    obs, rewards, term, *_ = envs.step(["up", "<action>" + "\U0001f600" * 60 + "</action>"])
    assert term[0] and "√" in obs[0] and rewards[0] == 10.9
    envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_group_blocks_share_every_episode_task(mode):
    envs = make_group_vec_env(
        "agentenvs/Sokoban-v0",
        num_groups=2,
        group_size=3,
        vectorization_mode=mode,
        action_format="plain",
        max_steps=4,
    )
    _, infos = envs.reset(seed=1)
    rng = np.random.default_rng(0)
    episodes: list[list[str]] = [[infos["task_id"][i]] for i in range(6)]
    states = [infos["state_key"][i] for i in range(6)]
    assert states[0] == states[1] == states[2] and states[3] == states[4] == states[5]
    done_prev = np.zeros(6, bool)
    for _ in range(30):
        actions = [str(a) for a in rng.choice(["up", "down", "left", "right"], size=6)]
        _, _, term, trunc, infos = envs.step(actions)
        for i in np.flatnonzero(done_prev):  # NEXT_STEP autoreset: this step was a reset
            episodes[i].append(infos["task_id"][i])
        done_prev = term | trunc
    for block in (range(0, 3), range(3, 6)):
        k = min(len(episodes[i]) for i in block)
        assert k >= 3
        for i in block:
            assert episodes[i][:k] == episodes[block[0]][:k]
    assert episodes[0][0] != episodes[3][0]
    envs.close()


def test_group_size_must_divide():
    with pytest.raises(ValueError, match="divide"):
        agentenvs.GroupedVectorEnv(gym.make_vec("agentenvs/Sokoban-v0", num_envs=4), group_size=3)


def test_group_reset_with_same_seed_is_reproducible():
    a = make_group_vec_env("agentenvs/Sokoban-v0", num_groups=3, group_size=2)
    b = make_group_vec_env("agentenvs/Sokoban-v0", num_groups=3, group_size=2)
    assert list(a.reset(seed=9)[1]["task_id"]) == list(b.reset(seed=9)[1]["task_id"])
    a.close()
    b.close()
