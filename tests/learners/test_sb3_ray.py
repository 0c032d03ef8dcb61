"""CreditPPO on Ray workers: the same training as on local sub-envs, a killed worker included."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray")
th = pytest.importorskip("torch")

from agentenvs.learners.sb3 import CreditPPO, RayVecEnv, make_credit_vec_env  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402

from agentenvs.ray_vector import make_env  # noqa: E402


class KillWorker(BaseCallback):
    """Kills one Ray worker at the given call counts (mid-group: groups span many steps)."""

    def __init__(self, at: tuple[int, ...]) -> None:
        super().__init__()
        self.at = at

    def _on_step(self) -> bool:
        if self.n_calls in self.at:
            ray.kill(self.training_env.envs._actors[self.n_calls % 2], no_restart=True)
        return True


def train(vec_env_cls=None, callback=None, **vec_env_kwargs):
    env = make_credit_vec_env(
        "agentenvs/SokobanDiscrete-v0",
        "graph",
        n_envs=4,
        group_size=2,
        seed=0,
        vec_env_cls=vec_env_cls,
        vec_env_kwargs=vec_env_kwargs or None,
    )
    th.manual_seed(0)
    model = CreditPPO("MlpPolicy", env, n_steps=32, batch_size=64, n_epochs=1, seed=0)
    model.learn(256, callback=callback)
    params = th.nn.utils.parameters_to_vector(model.policy.parameters()).detach()
    env.close()
    return model, params


def test_credit_ppo_trains_the_same_on_ray_workers_and_survives_a_kill(ray_session):
    _, local = train()
    _, remote = train(RayVecEnv, num_workers=2)
    assert th.equal(remote, local)
    model, killed = train(RayVecEnv, callback=KillWorker((5, 40)), num_workers=2)
    assert model.env.envs.restarts == 2
    assert th.equal(killed, local)


class Noisy(gym.ObservationWrapper):
    """Observations no replay in another process reproduces (they carry the process id)."""

    def observation(self, observation):
        return observation + np.float32(os.getpid())


def noisy_sokoban() -> gym.Env:
    return Noisy(make_env("agentenvs/SokobanDiscrete-v0"))


def test_an_episode_that_cannot_be_rebuilt_stops_sb3_with_a_clear_error(ray_session, actor_gone):
    env = RayVecEnv([noisy_sokoban], num_workers=1)
    env.reset()
    env.step(np.array([0]))
    actor = env.envs._actors[0]
    ray.kill(actor, no_restart=True)
    assert actor_gone(actor)  # the kill took effect before the step that must rebuild it
    with pytest.raises(RuntimeError, match="could not be rebuilt"):
        env.step(np.array([0]))
    assert env.envs.infra_failures == 1
    env.close()
