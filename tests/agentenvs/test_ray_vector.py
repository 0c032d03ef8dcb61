"""RayVectorEnv: the same groups as the local vector env, and crash recovery that biases nothing."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import VectorCreditWrapper, credited_groups

import agentenvs
from agentenvs.ray_vector import RayVectorEnv, make_env
from agentenvs.workers import EnvWorker, Journal, same_observation

ray = pytest.importorskip("ray")

MOVES = ["up", "down", "left", "right"]


def rollout(envs: gym.vector.VectorEnv, steps: int, seed: int = 0, hook=None):
    """Credited groups from ``steps`` random moves (the same moves for every backend)."""
    envs = VectorCreditWrapper(envs, "graph")
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    groups = []
    for t in range(steps):
        if hook is not None:
            hook(t, envs.unwrapped)
        *_, infos = envs.step(list(rng.choice(MOVES, envs.num_envs)))
        groups += credited_groups(infos)
    return groups, envs


def sokoban(num_groups: int, group_size: int, mode: str = "sync", **vector_kwargs):
    return agentenvs.make_group_vec_env(
        "agentenvs/Sokoban-v0",
        num_groups,
        group_size,
        mode,
        vector_kwargs=vector_kwargs or None,
        action_format="plain",
        max_steps=12,
    )


def test_worker_rebuilds_an_episode_and_the_task_stream():
    """A fresh worker replaying the journal continues exactly like the original, across resets."""
    make = functools.partial(make_env, "agentenvs/Sokoban-v0", action_format="plain", max_steps=5)
    a, journal = EnvWorker([make]), Journal()
    a.set_attr([(0, 1234)], "task_stream_seed")
    journal.on_set_attr("task_stream_seed", 1234)
    (obs, info, snap) = a.reset([(0, None, None)])[0]
    journal.on_reset(None, None, info, snap)
    rng = np.random.default_rng(0)
    for _ in range(7):  # past the end of the first episode: the autoreset draws from the stream
        action = str(rng.choice(MOVES))
        obs, *_, info, was_reset, snap, _ = a.step([(0, action)])[0]
        if was_reset:
            journal.on_reset(None, None, info, snap)
        else:
            journal.on_step(action)
    assert journal.entries[0] == ("set_attr", "task_stream_seed", 1234)
    assert len(journal.entries) < 7  # cut at the last reset
    b = EnvWorker([make])
    assert same_observation(b.restore(0, journal.entries), obs)
    for _ in range(12):  # two more episodes: same tasks, same observations
        action = str(rng.choice(MOVES))
        ra, rb = a.step([(0, action)])[0], b.step([(0, action)])[0]
        assert same_observation(ra[0], rb[0]) and ra[1:4] == rb[1:4]
        assert ra[4]["task_id"] == rb[4]["task_id"]


def test_same_groups_as_the_local_vector_env(ray_session):
    local, _ = rollout(sokoban(2, 4), 60)
    remote, envs = rollout(sokoban(2, 4, "ray", num_workers=3), 60)
    assert len(local) >= 6 and remote == local
    assert envs.unwrapped.restarts == 0
    envs.close()


def test_vector_api_matches_sync(ray_session, actor_gone):
    sync, remote = sokoban(1, 4).unwrapped, sokoban(1, 4, "ray", num_workers=2).unwrapped
    for envs in (sync, remote):
        envs.set_attr("max_steps", [3, 4, 5, 6])
    assert remote.get_attr("max_steps") == sync.get_attr("max_steps") == (3, 4, 5, 6)
    obs_s, info_s = sync.reset(seed=3)
    obs_r, info_r = remote.reset(seed=3)
    assert obs_r == obs_s and list(info_r["task_id"]) == list(info_s["task_id"])
    mask = np.array([False, True, False, True])
    obs_s, info_s = sync.reset(options={"reset_mask": mask.copy(), "task_id": "seed-9"})
    obs_r, info_r = remote.reset(options={"reset_mask": mask.copy(), "task_id": "seed-9"})
    assert obs_r == obs_s and info_r["_task_id"].tolist() == mask.tolist()
    for _ in range(8):
        out_s, out_r = sync.step(["up"] * 4), remote.step(["up"] * 4)
        assert out_r[0] == out_s[0]
        for a, b in zip(out_r[1:4], out_s[1:4], strict=True):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="reset_mask"):
        remote.reset(options={"reset_mask": np.zeros(4, bool)})
    actors = list(remote._actors)
    remote.close()
    sync.close()
    assert all(actor_gone(actor) for actor in actors)  # close() stops the actors


def test_a_killed_worker_loses_and_biases_nothing(ray_session):
    """Killing workers between steps (and again later) gives exactly the uninterrupted groups."""
    local, _ = rollout(sokoban(2, 4), 60)

    def kill(t, envs):
        if t in (7, 23):  # mid-episode (steps 7 and 23 of 12-step episodes)
            ray.kill(envs._actors[t % envs.num_workers], no_restart=True)

    remote, envs = rollout(sokoban(2, 4, "ray", num_workers=4), 60, hook=kill)
    assert remote == local
    assert envs.unwrapped.restarts == 2 and envs.unwrapped.infra_failures == 0
    assert envs.dropped_groups == 0
    envs.close()


class DieOnce(gym.Wrapper):
    """Kills its process at its ``at``-th step, once per ``marker`` file (a crash mid-step)."""

    def __init__(self, env: gym.Env, marker: str, at: int) -> None:
        super().__init__(env)
        self.marker, self.at, self.steps = marker, at, 0

    def step(self, action):
        self.steps += 1
        if self.steps == self.at and not Path(self.marker).exists():
            Path(self.marker).write_text("died")
            os._exit(1)
        return self.env.step(action)


def dying(marker: str, at: int) -> gym.Env:
    return DieOnce(
        make_env("agentenvs/Sokoban-v0", action_format="plain", max_steps=12), marker, at
    )


def grouped(env_fns, group_size: int, **kwargs) -> agentenvs.GroupedVectorEnv:
    return agentenvs.GroupedVectorEnv(RayVectorEnv(env_fns, **kwargs), group_size)


def test_a_worker_dying_inside_a_step_is_rebuilt(ray_session, tmp_path):
    local, _ = rollout(sokoban(2, 2), 40)
    fns = [functools.partial(dying, str(tmp_path / "died"), 17)] + [
        functools.partial(make_env, "agentenvs/Sokoban-v0", action_format="plain", max_steps=12)
    ] * 3
    remote, envs = rollout(grouped(fns, 2, num_workers=2), 40)
    assert (tmp_path / "died").exists()
    assert remote == local and envs.unwrapped.restarts == 1
    envs.close()


class Clock(gym.ObservationWrapper):
    """An observation that no replay reproduces (it counts this process's observations)."""

    calls = 0

    def observation(self, observation):
        Clock.calls += 1
        return f"{observation}\n[{os.getpid()}:{Clock.calls}]"


def clocked() -> gym.Env:
    return Clock(make_env("agentenvs/Sokoban-v0", action_format="plain", max_steps=12))


def test_an_episode_that_cannot_be_rebuilt_drops_its_group_whole(ray_session):
    plain = functools.partial(make_env, "agentenvs/Sokoban-v0", action_format="plain", max_steps=12)
    fns = [clocked, plain, plain, plain]  # worker 0 holds block 0 (clocked + plain)

    def kill(t, envs):
        if t == 5:
            ray.kill(envs._actors[0], no_restart=True)

    groups, envs = rollout(grouped(fns, 2, num_workers=2), 30, hook=kill)
    vector = envs.unwrapped
    assert vector.restarts == 1 and vector.infra_failures == 1
    assert envs.dropped_groups == 1
    # block 0's first group held the lost episode: dropped; its second group and block 1's two
    # groups are credited (30 steps: every sub-env ends episodes at steps 12 and 25; the rebuilt
    # sub-env's next episode plays the task its block plays next)
    assert len(groups) == 3
    assert all(len(t.steps) == 12 for g in groups for t in g)
    envs.close()


class AlwaysDie(gym.Wrapper):
    """Kills its process on every step."""

    def step(self, action):
        os._exit(1)


def always_dying() -> gym.Env:
    return AlwaysDie(make_env("agentenvs/Sokoban-v0", action_format="plain"))


def test_a_worker_that_keeps_dying_raises(ray_session):
    envs = RayVectorEnv([always_dying], max_restarts=2)
    envs.reset(seed=0)
    with pytest.raises(RuntimeError, match="died 2 times in a row"):
        envs.step(["up"])
    assert envs.restarts == 2
    envs.close()


@pytest.mark.slow
def test_64_workers_give_the_local_groups(ray_session):
    local, _ = rollout(sokoban(8, 8), 40)
    remote, envs = rollout(sokoban(8, 8, "ray", num_workers=64), 40)
    assert len(local) == 8 * 3 and remote == local
    envs.close()
