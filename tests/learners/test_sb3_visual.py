"""CreditPPO with SB3's CnnPolicy on the image-only Sokoban (``agentenvs/SokobanDiscreteVisual-v0``):
the buffer holds the credit wrapper's advantages, and the credit groups' states are the text env's."""

from __future__ import annotations

import io

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import torch as th  # noqa: E402
from agentenvs.learners.sb3 import (  # noqa: E402
    CreditPPO,
    discounted_returns,
    evaluate_success,
    make_credit_vec_env,
)
from agentenvs.wrappers.registry import METHODS
from sb3_fixtures import GroupCatcher  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402
from stable_baselines3.common.vec_env import VecTransposeImage  # noqa: E402

import agentenvs  # noqa: E402, F401
from agentenvs.cli.play import play  # noqa: E402
from agentenvs.sokoban.adapters import SokobanImage  # noqa: E402
from agentenvs.sokoban.env import ACTIONS  # noqa: E402

MOVES = list(ACTIONS)  # Discrete(4): up, down, left, right

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VISUAL_ID = "agentenvs/SokobanDiscreteVisual-v0"
#: Small enough for a 2-core CPU: NatureCNN on 96x96 images, 64-step rollouts.
SMALL = {"n_steps": 32, "batch_size": 32, "n_epochs": 2, "seed": 0, "device": "cpu"}


def test_visual_discrete_env_is_the_visual_image_with_discrete_moves() -> None:
    env = gym.make(VISUAL_ID)
    check_env(env)  # SB3's checker: an image Box it can feed to CnnPolicy, Discrete(4) actions
    assert env.observation_space == gym.spaces.Box(0, 255, (96, 96, 3), np.uint8)
    assert env.action_space == gym.spaces.Discrete(4)
    visual = gym.make("agentenvs/SokobanVisual-v0", action_format="plain")
    text = gym.make("agentenvs/Sokoban-v0", action_format="plain")
    image, info = env.reset(options={"task_id": "seed-42"})
    both, visual_info = visual.reset(options={"task_id": "seed-42"})
    assert info["state_key"] == visual_info["state_key"] == both["text"]  # the grid, not pixels
    np.testing.assert_array_equal(image, both["image"])
    text.reset(options={"task_id": "seed-42"})
    for action in (0, 3, 3):  # up (into the wall), right, right: solved
        image, reward, terminated, _, info = env.step(action)
        both, visual_reward, *_ = visual.step(MOVES[action])
        *_, text_info = text.step(MOVES[action])
        np.testing.assert_array_equal(image, both["image"])
        assert reward == visual_reward and info["state_key"] == text_info["state_key"]
    assert terminated and info["won"]
    with pytest.raises(ValueError, match="visual Sokoban env"):
        SokobanImage(gym.make("agentenvs/Sokoban-v0"))
    # a person playing it in the terminal reads the grid (its ansi rendering), not pixels
    out = io.StringIO()
    assert play(VISUAL_ID, task="seed-42", stdin=io.StringIO("4\n4\n"), stdout=out) == 0
    assert visual_info["state_key"] in out.getvalue() and "array(" not in out.getvalue()
    assert "reward 10.900  won True  done True" in out.getvalue()


def test_cnn_policy_trains_on_the_credit_advantages_of_text_states() -> None:
    # rooms of at most 2 moves, so that the untrained policy's first groups hold successes (with
    # none, GraphGPO's advantages are all 0)
    easy = {"max_solution_steps": 2}
    env = make_credit_vec_env(VISUAL_ID, "graph", n_envs=2, group_size=2, seed=0, env_kwargs=easy)
    model = CreditPPO("CnnPolicy", env, **SMALL)
    assert model.credit == "graph" and isinstance(model.env, VecTransposeImage)
    catcher = GroupCatcher()
    callback = model._setup_learn(10**6, catcher)[1]
    catcher.init_callback(model)
    assert model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    groups = catcher.groups
    steps = [s for g in groups for t in g for s in t.steps]
    buf = model.rollout_buffer
    assert buf.buffer_size == len(steps) >= model.n_steps * env.num_envs
    # the buffer holds the wrapper's advantages, which are GraphGPO's of the recorded groups
    expected = np.array([s.advantage for s in steps])
    np.testing.assert_allclose(buf.advantages[:, 0], expected.astype(np.float32), rtol=1e-6)
    assert np.any(expected != 0.0)
    estimate, config = METHODS["graph"]
    again = np.concatenate([a for g in groups for a in estimate(g, config())])
    np.testing.assert_allclose(again, expected, rtol=1e-12)
    # observations are the images played (channel-first in the buffer: VecTransposeImage)
    played = np.stack([s.observation for s in steps])
    assert played.shape[1:] == (96, 96, 3) and played.dtype == np.uint8
    np.testing.assert_array_equal(buf.observations[:, 0], played.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(buf.actions[:, 0, 0], [int(s.action) for s in steps])
    returns = np.concatenate(
        [discounted_returns([s.reward for s in t.steps], model.gamma) for g in groups for t in g]
    )
    np.testing.assert_allclose(buf.returns[:, 0], returns.astype(np.float32), rtol=1e-6)
    with th.no_grad():
        obs = th.as_tensor(buf.observations[:, 0])
        values, log_prob, _ = model.policy.evaluate_actions(obs, th.as_tensor(buf.actions[:, 0, 0]))
    np.testing.assert_allclose(buf.log_probs[:, 0], log_prob.numpy(), atol=1e-5)
    np.testing.assert_allclose(buf.values[:, 0], values.flatten().numpy(), atol=1e-5)
    # the groups' state keys are the text env's for the same moves (grids, never pixels)
    text = gym.make("agentenvs/Sokoban-v0", action_format="plain")
    for traj in (t for g in groups for t in g):
        _, info = text.reset(options={"task_id": traj.task_id})
        for step in traj.steps:
            assert step.state_key == info["state_key"]
            *_, info = text.step(MOVES[int(step.action)])
            assert step.next_state_key == info["state_key"]
    assert all(len(g) == 2 and len({t.task_id for t in g}) == 1 for g in groups)
    # and it learns a few hundred steps; the greedy policy plays from images
    before = th.nn.utils.parameters_to_vector(model.policy.parameters()).detach().clone()
    model.learn(256)
    assert model.num_timesteps >= 256
    after = th.nn.utils.parameters_to_vector(model.policy.parameters()).detach()
    assert not th.equal(before, after)
    won = evaluate_success(model, lambda: gym.make(VISUAL_ID, split="test"), ["seed-65536"] * 2)
    assert won.shape == (2,) and won[0] == won[1]  # greedy: the same room, the same play
