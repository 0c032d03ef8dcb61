"""Gymnasium's conventions: every registered id and every wrapper of ours is rebuilt from its spec
(``gym.make(env.spec)``) and keeps Gymnasium's passive env checker quiet, and the ``infos`` of the
ids' vector envs and of the vector credit wrapper keep Gymnasium's per-sub-env layout
(``DictInfoToList`` unbatches them).

Each env plays one reset and one step here (the heavy ids included): the full ``check_env`` of
every id is in tests/wrappers/test_credit_registry.py.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import CreditWrapper, VectorCreditWrapper, credited_groups
from agentenvs.wrappers.registry import METHODS, method_names
from gymnasium.vector.utils import iterate
from gymnasium.wrappers import PassiveEnvChecker
from gymnasium.wrappers.vector import DictInfoToList
from lost_worker import LostWorker

import agentenvs
from agentenvs import GroupedVectorEnv
from agentenvs.adapters import DiscreteActions
from agentenvs.registration import ENV_IDS
from agentenvs.sokoban.adapters import SokobanPlanes

SOKOBAN = "agentenvs/Sokoban-v0"
MOVES = ["up", "down", "left", "right"]


def _skip_unavailable(env_id: str) -> None:
    if env_id == "agentenvs/ALFWorld-v0":
        pytest.importorskip("alfworld")
    if env_id == "agentenvs/WebShopBrowser-v0":
        pytest.importorskip("selenium")
        if not all(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromedriver")):
            pytest.skip("Chromium and chromium-driver are not installed")


def _an_action(env: gym.Env, info: dict[str, Any]) -> Any:
    """An admissible action when the env lists them, else a sample of its action space."""
    if isinstance(env.action_space, gym.spaces.Text):
        return (info.get("admissible_actions") or ["look"])[0]
    return env.action_space.sample()


def _reset_and_step_quietly(env: gym.Env) -> tuple[Any, dict[str, Any]]:
    """One seeded reset and one step; any warning (the passive checker's included) fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obs, info = env.reset(seed=0)
        env.step(_an_action(env, info))
    return obs, info


def _layers(env: gym.Env) -> list[type]:
    out = []
    while isinstance(env, gym.Wrapper):
        out.append(type(env))
        env = env.env
    return out


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_every_id_keeps_the_passive_checker_and_is_rebuilt_from_its_spec(env_id):
    """The spec rebuilds the env as the sub-env of a vector env (``gym.make_vec`` calls
    ``gym.make(spec)``), whose ``infos`` pass through ``DictInfoToList``."""
    _skip_unavailable(env_id)
    env = gym.make(env_id)
    vec = gym.make_vec(env.spec, num_envs=1)
    listed = DictInfoToList(vec)
    try:
        [again] = vec.envs
        assert PassiveEnvChecker in _layers(env)  # registration leaves gym.make's checker on
        assert again.spec == env.spec and _layers(again) == _layers(env)
        obs, info = _reset_and_step_quietly(env)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            batch, [info_again] = listed.reset(seed=0)
            *_, [step_info] = listed.step([_an_action(env, info_again)])
        assert info_again["task_id"] == info["task_id"] == step_info["task_id"]
        first = next(iterate(vec.observation_space, batch))
        np.testing.assert_equal(first, obs)  # dicts, arrays and text alike
    finally:
        env.close()
        listed.close()


def _credit_wrapper(cls: type[CreditWrapper]) -> gym.Env:
    return cls(gym.make("agentenvs/SokobanDiscrete-v0", max_steps=3), group_size=2)


WRAPPERS = {
    "DiscreteActions": lambda: DiscreteActions(gym.make(SOKOBAN, action_format="plain"), MOVES),
    "SokobanPlanes": lambda: SokobanPlanes(
        DiscreteActions(gym.make(SOKOBAN, action_format="plain"), MOVES)
    ),
    "CreditWrapper": lambda: CreditWrapper(
        gym.make("agentenvs/SokobanDiscrete-v0"), "rtmc", group_size=3
    ),
    **{
        METHODS[name].wrapper.__name__: (lambda cls=METHODS[name].wrapper: _credit_wrapper(cls))
        for name in method_names()
        if METHODS[name].wrapper is not None
    },
}


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_every_wrapper_is_rebuilt_from_its_spec_and_passes_the_passive_checker(name):
    env = WRAPPERS[name]()
    again = gym.make(env.spec)
    assert type(again) is type(env) and again.spec == env.spec
    assert again.spec.additional_wrappers[-1].kwargs == env.spec.additional_wrappers[-1].kwargs
    for made in (env, again):
        checked = PassiveEnvChecker(made)  # the wrapper itself, as gym.make checks an env
        obs, info = _reset_and_step_quietly(checked)
        assert checked.observation_space.contains(obs)
        checked.close()


def test_the_named_credit_wrappers_are_all_covered():
    named = {m.wrapper.__name__ for m in METHODS.values() if m.wrapper is not None}
    assert len(named) == 7 and named <= set(WRAPPERS)


def _play_until(envs: gym.vector.VectorEnv, done) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    for _ in range(100):
        infos = envs.step(list(rng.choice(MOVES, envs.num_envs)))[-1]
        if done(infos):
            return infos
    raise AssertionError("nothing happened in 100 steps")


def test_vector_credit_infos_unbatch_with_dict_info_to_list():
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env(SOKOBAN, 2, 2, action_format="plain", max_steps=3), "graph"
    )
    listed = DictInfoToList(envs)
    _, reset_infos = listed.reset(seed=0)
    assert [info["task_id"] for info in reset_infos][::2] == [i["task_id"] for i in reset_infos][
        1::2
    ]
    infos = _play_until(listed, lambda infos: any("credit" in i for i in infos))
    # every member ends its 3-step episode on the same step: the last member of each block
    # completes its group, so the group lies in that sub-env's info, as a single wrapper's would
    assert ["credit" in info for info in infos] == [False, True, False, True]
    groups = [info["credit"] for info in infos if "credit" in info]
    assert [[t.traj_id for t in g] for g in groups] == [["0", "1"], ["0", "1"]]
    assert all(s.advantage is not None for g in groups for t in g for s in t.steps)
    assert envs.pop_groups() == groups
    listed.close()


def test_credited_groups_reads_the_dict_layout():
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env(SOKOBAN, 2, 2, action_format="plain", max_steps=3)
    )
    envs.reset(seed=0)
    infos = _play_until(envs, lambda infos: "credit" in infos)
    assert infos["_credit"].tolist() == [False, True, False, True]
    assert infos["credit"].dtype == object and infos["credit"][0] is None
    assert credited_groups(infos) == envs.pop_groups() == list(infos["credit"][1::2])
    assert envs.credit_method.name == "grpo"  # the default, as for CreditWrapper
    envs.close()


def test_dropped_groups_are_marked_per_sub_env():
    def sokoban() -> gym.Env:
        return gym.make(SOKOBAN, action_format="plain", max_steps=3)

    fns = [lambda: LostWorker(sokoban()), sokoban, sokoban, sokoban]
    envs = VectorCreditWrapper(GroupedVectorEnv(gym.vector.SyncVectorEnv(fns), 2))
    listed = DictInfoToList(envs)
    listed.reset(seed=0)
    infos = _play_until(listed, lambda infos: any("credit" in i for i in infos))
    # block 0 held the lost episode: dropped whole, marked at the sub-env that completed it
    assert [info.get("credit_dropped", False) for info in infos] == [False, True, False, False]
    assert ["credit" in info for info in infos] == [False, False, False, True]
    assert envs.dropped_groups == 1
    listed.close()
