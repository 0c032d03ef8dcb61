"""CreditPPO (learners/sb3.py): the buffer holds exactly the credit advantages; GAE mode is plain PPO."""

from __future__ import annotations

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
from agentenvs.wrappers import GraphCreditWrapper
from agentenvs.wrappers.registry import METHODS
from sb3_fixtures import GroupCatcher  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402

import agentenvs  # noqa: E402, F401

ENV_ID = "agentenvs/SokobanDiscrete-v0"
SMALL = {"n_steps": 32, "batch_size": 32, "n_epochs": 2, "seed": 0}
#: Methods whose advantages are a pure function of the group (no model trained along the way).
STRUCTURAL = ("gigpo", "graph", "graphgpo", "grpo", "rtmc")


def _collect_one_rollout(model: CreditPPO, setup: bool = True) -> list:
    """Run one ``collect_rollouts`` (no training) and return the credited groups it consumed."""
    catcher = GroupCatcher()
    callback = model._setup_learn(10**6, catcher)[1] if setup else catcher
    catcher.init_callback(model)
    assert model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    return catcher.groups


@pytest.mark.parametrize("method", sorted(METHODS))
def test_buffer_holds_exactly_the_estimators_advantages(method: str) -> None:
    env = make_credit_vec_env(ENV_ID, method, n_envs=2, group_size=3, seed=1)
    model = CreditPPO("MlpPolicy", env, **SMALL)
    groups = _collect_one_rollout(model)
    buf = model.rollout_buffer
    steps = [s for g in groups for t in g for s in t.steps]
    assert buf.buffer_size == len(steps) >= model.n_steps * env.num_envs
    # the advantages the wrapper wrote into the steps, and for the structural methods (pure
    # functions of the group) the same recomputed from the recorded trajectories
    expected = np.array([s.advantage for s in steps])
    np.testing.assert_allclose(buf.advantages[:, 0], expected.astype(np.float32), rtol=1e-6)
    assert np.any(expected != 0.0)
    if method in STRUCTURAL:
        estimate, config = METHODS[method]
        again = np.concatenate([a for g in groups for a in estimate(g, config())])
        np.testing.assert_allclose(again, expected, rtol=1e-12)
    # observations and actions are the steps played; returns are the discounted rewards-to-go
    np.testing.assert_array_equal(buf.observations[:, 0], np.stack([s.observation for s in steps]))
    np.testing.assert_array_equal(buf.actions[:, 0, 0], [int(s.action) for s in steps])
    returns = np.concatenate(
        [discounted_returns([s.reward for s in t.steps], model.gamma) for g in groups for t in g]
    )
    np.testing.assert_allclose(buf.returns[:, 0], returns.astype(np.float32), rtol=1e-6)
    # log-probs and values are the collecting policy's
    with th.no_grad():
        obs = th.as_tensor(buf.observations[:, 0])
        values, log_prob, _ = model.policy.evaluate_actions(obs, th.as_tensor(buf.actions[:, 0, 0]))
    np.testing.assert_allclose(buf.log_probs[:, 0], log_prob.numpy(), atol=1e-5)
    np.testing.assert_allclose(buf.values[:, 0], values.flatten().numpy(), atol=1e-5)
    # each group is one task, played group_size times
    assert all(len(g) == 3 and len({t.task_id for t in g}) == 1 for g in groups)


def test_open_groups_carry_over_to_the_next_rollout() -> None:
    env = make_credit_vec_env(ENV_ID, "graph", n_envs=2, group_size=4, seed=0)
    model = CreditPPO("MlpPolicy", env, **SMALL)
    _collect_one_rollout(model)
    open_steps = sum(len(e) for eps in model._pending.episodes for e in eps)
    open_steps += sum(len(c) for c in model._pending.current)
    assert open_steps > 0
    _collect_one_rollout(model, setup=False)
    assert model.rollout_buffer.buffer_size >= model.n_steps * 2
    # steps sampled during the first rollout (older policy) entered the second one's buffer
    assert 0.0 < model.logger.name_to_value["credit/stale_fraction"] < 1.0


def test_short_training_runs_and_relearn_after_reset() -> None:
    env = make_credit_vec_env(ENV_ID, "graph", n_envs=2, group_size=2, seed=0)
    model = CreditPPO("MlpPolicy", env, **SMALL)
    assert model.credit == "graph" and model.normalize_advantage is False
    model.learn(128)
    assert model.num_timesteps >= 128
    model.learn(64)  # resets the env in the middle of groups: running episodes are dropped
    model.learn(64, reset_num_timesteps=False)
    assert model.num_timesteps >= 128


def test_save_load_and_set_env(tmp_path) -> None:
    env = make_credit_vec_env(ENV_ID, "rtmc", n_envs=2, group_size=2, seed=0)
    model = CreditPPO("MlpPolicy", env, **SMALL).learn(64)
    model.save(tmp_path / "model.zip")
    loaded = CreditPPO.load(tmp_path / "model.zip", env=env)
    assert loaded.credit == "rtmc" and loaded._pending is None
    for a, b in zip(
        model.policy.state_dict().values(), loaded.policy.state_dict().values(), strict=True
    ):
        assert th.equal(a, b)
    loaded.learn(64)
    with pytest.raises(ValueError, match="credit"):
        loaded.set_env(make_credit_vec_env(ENV_ID, "gae", n_envs=2))


def test_gae_mode_is_plain_ppo() -> None:
    def make() -> object:
        return make_vec_env(ENV_ID, n_envs=2, seed=0)

    ours = CreditPPO("MlpPolicy", make(), **SMALL)
    assert ours.credit == "gae" and ours.normalize_advantage is True
    ours.learn(128)
    ref = PPO("MlpPolicy", make(), **SMALL).learn(128)
    for a, b in zip(
        ours.policy.state_dict().values(), ref.policy.state_dict().values(), strict=True
    ):
        assert th.equal(a, b)
    assert make_credit_vec_env(ENV_ID, "gae", n_envs=1).env_is_wrapped(GraphCreditWrapper) == [
        False
    ]


def test_bad_configurations_fail_clearly() -> None:
    with pytest.raises(ValueError, match="unknown credit"):
        make_credit_vec_env(ENV_ID, "gea", n_envs=1)
    mixed = make_vec_env(ENV_ID, n_envs=2, wrapper_class=lambda e: e)
    mixed.envs[0] = GraphCreditWrapper(mixed.envs[0], group_size=2)
    with pytest.raises(ValueError, match="all sub-envs or none"):
        CreditPPO("MlpPolicy", mixed, **SMALL)


class _Always:
    """A model stand-in that always predicts one action."""

    def __init__(self, action: int) -> None:
        self.action = action

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> tuple[np.ndarray, None]:
        return np.full(len(obs), self.action), None


def test_evaluate_success_plays_each_task_once() -> None:
    def make() -> gym.Env:
        return gym.make(ENV_ID)

    # seed-42 is solved by right, right; seed-1 by up, up; seed-12345 by right
    won = evaluate_success(_Always(3), make, ["seed-42", "seed-1", "seed-12345"], batch=2)
    assert won.tolist() == [True, False, True]
    assert evaluate_success(_Always(0), make, ["seed-42", "seed-1"]).tolist() == [False, True]


@pytest.mark.parametrize("method", ["spa", "hisr"])
def test_frozen_rewards_reach_gae_with_the_critic(method: str) -> None:
    """The paper pipeline: a frozen SPA / HISR wrapper hands out fused rewards (advantage="rewards");
    the buffer holds exactly those rewards and GAE of them with the collection-time values."""
    from agentenvs.wrappers.models.progress import make_estimator
    from agentenvs.wrappers.offline import collect_rollouts, fit_offline, frozen_config
    from agentenvs.wrappers.stats import gae

    class Random:
        rng = np.random.default_rng(0)

        def predict(self, obs, deterministic=False):
            return self.rng.integers(4, size=len(obs)), None

    groups = collect_rollouts(
        lambda: gym.make(ENV_ID), Random(), [f"seed-{i}" for i in range(8)], m=4
    )
    options = {"epochs": 20} if method == "spa" else {"sprm": make_estimator(epochs=20)}
    config = frozen_config(fit_offline(method, groups, **options))
    env = make_credit_vec_env(ENV_ID, method, n_envs=2, group_size=3, config=config, seed=1)
    model = CreditPPO("MlpPolicy", env, gamma=0.99, gae_lambda=0.95, **SMALL)
    assert model.credit_rewards and model.normalize_advantage
    credited = _collect_one_rollout(model)
    buf = model.rollout_buffer
    key = "spa" if method == "spa" else "hisr"
    fused = [s.extras[key]["reward"] for g in credited for t in g for s in t.steps]
    np.testing.assert_allclose(buf.rewards[:, 0], fused, atol=1e-6)
    assert np.abs(fused).max() > 0
    values, start = buf.values[:, 0].astype(np.float64), 0
    for traj in (t for g in credited for t in g):
        n = len(traj.steps)
        last = traj.steps[-1]
        if last.terminated:  # truncated episodes bootstrap on the critic; checked via returns
            want = gae(fused[start : start + n], 0.99, 0.95, values[start : start + n])
            np.testing.assert_allclose(buf.advantages[start : start + n, 0], want, atol=1e-4)
        start += n
    np.testing.assert_allclose(buf.returns - buf.values, buf.advantages, atol=1e-4)
    model.learn(64)  # and it trains


def test_gae_bootstraps_a_truncation() -> None:
    from agentenvs.wrappers.stats import gae

    np.testing.assert_allclose(gae([1.0], 0.9, 0.8, [0.5], bootstrap=2.0), [1 + 1.8 - 0.5])
    with pytest.raises(ValueError, match="values must have shape"):
        gae([1.0, 2.0], 0.9, 0.8, [0.5])
