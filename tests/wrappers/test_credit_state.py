"""The online state of credit: an object the wrapper owns (fresh, or passed in as ``state=``),
shown in its repr, saved and restored with ``state_dict()``; and the one group size default."""

import inspect
import io

import gymnasium as gym
import numpy as np
import pytest
import torch
from agentenvs.wrappers import (
    CreditState,
    CreditWrapper,
    GraphCreditWrapper,
    ProgressCreditWrapper,
    SPAConfig,
    VectorCreditWrapper,
    assign_advantages,
)
from agentenvs.wrappers.registry import METHODS

import agentenvs
from agentenvs.core import Step, Trajectory
from agentenvs.vector import DEFAULT_GROUP_SIZE, group_size_of


def _spa_env(group_size=2, state=None, config=None):
    config = config or SPAConfig(estimator="tabular", refit_every=1)
    env = gym.make("agentenvs/SokobanDiscrete-v0", max_steps=4)
    return ProgressCreditWrapper(env, group_size=group_size, config=config, state=state)


def _play_groups(env, n, seed=0):
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    groups = []
    while len(groups) < n:
        *_, terminated, truncated, info = env.step(int(rng.integers(4)))
        if terminated or truncated:
            groups += [info["credit"]] if "credit" in info else []
            env.reset()
    return groups


def _pair(task="t", group="g"):
    return [
        Trajectory(task, group, [Step("o", "a", 1.0), Step("p", "b", 0.0)], success=True),
        Trajectory(task, group, [Step("o", "b", 0.0)], success=False),
    ]


# -- fresh and shared ----------------------------------------------------------------------------------
def test_gym_make_of_the_spec_builds_a_fresh_state():
    env = _spa_env()
    _play_groups(env, 2)
    trained = env.credit_state.value
    assert trained.buffer.fits == 2 and trained.estimator.trained
    again = gym.make(env.spec)
    assert type(again) is ProgressCreditWrapper and again.config is env.config
    assert again.credit_state is not env.credit_state and again.credit_state.value is None
    _play_groups(again, 1)
    assert again.credit_state.value.buffer.fits == 1  # its own estimator, not the parent's
    assert trained.buffer.fits == 2
    assert "state" not in env.spec.additional_wrappers[-1].kwargs  # never recorded


def test_a_state_passed_in_is_shared_deliberately():
    shared = CreditState()
    a, b = _spa_env(state=shared), _spa_env(state=shared)
    assert a.credit_state is b.credit_state is shared
    _play_groups(a, 1)
    _play_groups(b, 1, seed=1)
    assert shared.value.buffer.fits == 2 and len(shared.value.buffer.items) == 4
    lone = _spa_env()
    assert lone.credit_state is not shared


def test_vector_wrapper_owns_or_shares_its_state():
    def grouped():
        return agentenvs.make_group_vec_env(
            "agentenvs/SokobanDiscrete-v0", num_groups=1, group_size=2, max_steps=3
        )

    config = SPAConfig(estimator="tabular", refit_every=1)
    shared = CreditState()
    envs = VectorCreditWrapper(grouped(), "spa", config, state=shared)
    other = VectorCreditWrapper(grouped(), "spa", config)
    assert envs.credit_state is shared and other.credit_state is not shared
    assert envs.group_size == group_size_of(envs) == 2
    envs.close()
    other.close()


def test_one_state_serves_one_method_and_config():
    state = CreditState()
    CreditWrapper(gym.make("agentenvs/Sokoban-v0"), method="spa", state=state)
    CreditWrapper(gym.make("agentenvs/Sokoban-v0"), method="spa", config=SPAConfig(), state=state)
    with pytest.raises(ValueError, match="serves credit method 'spa'; it cannot serve 'graphgpo'"):
        GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0"), state=state)
    with pytest.raises(ValueError, match="it cannot serve SPAConfig"):
        assign_advantages([_pair()], "spa", SPAConfig(alpha=0.5), state=state)


def test_repr_shows_the_state():
    env = _spa_env()
    assert repr(env).endswith("method='spa' group_size=2 state=CreditState('spa')>")
    _play_groups(env, 1)
    assert "state=CreditState('spa', SPAState(estimator=TabularProgressEstimator, trained=True, " \
        "buffered=2, fits=1))" in repr(env)  # fmt: skip
    graph = GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0"))
    assert repr(graph).endswith("method='graphgpo' group_size=8 state=CreditState('graphgpo')>")


def test_no_state_given_means_a_fresh_one_per_call():
    config = SPAConfig(estimator="tabular", refit_every=1)
    assign_advantages([_pair()], "spa", config)
    assign_advantages([_pair()], "spa", config)  # nothing kept between the calls
    kept = CreditState()
    for _ in range(2):
        assign_advantages([_pair()], "spa", config, state=kept)
    assert kept.value.buffer.fits == 2


# -- checkpoints ---------------------------------------------------------------------------------------
def _round_trip(state: CreditState) -> dict:
    """``state.state_dict()`` through ``torch.save`` / ``torch.load``, as a checkpoint holds it."""
    buffer = io.BytesIO()
    torch.save(state.state_dict(), buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


@pytest.mark.parametrize("estimator", ["tabular", "features"])
def test_state_dict_round_trip_restores_the_trained_estimator(estimator):
    options = {"epochs": 5, "hidden": 8} if estimator == "features" else None
    config = SPAConfig(estimator=estimator, estimator_options=options, refit_every=1)
    env = _spa_env(config=config)
    groups = _play_groups(env, 2)
    saved = _round_trip(env.credit_state)
    assert saved["method"] == "spa"
    restored = _spa_env(config=config)
    restored.credit_state.load_state_dict(saved)
    assert repr(restored.credit_state) == "CreditState('spa', loaded)"
    value = restored.credit_state.get(METHODS["spa"], config)  # built, then loaded
    trained = env.credit_state.value
    trajectories = [t for g in groups for t in g]
    for a, b in zip(
        value.estimator.contributions(trajectories),
        trained.estimator.contributions(trajectories),
        strict=True,
    ):
        np.testing.assert_allclose(a, b)
    assert value.buffer.fits == trained.buffer.fits == 2
    assert len(value.buffer.items) == len(trained.buffer.items) == 4


def test_state_dict_of_an_unused_state_and_of_the_other_methods():
    assert CreditState().state_dict() == {"method": None, "state": None}
    graph = GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0"))
    assert graph.credit_state.state_dict() == {"method": "graphgpo", "state": None}
    for method in ("triage", "hisr"):
        state = CreditState()
        assign_advantages([_pair()], method, state=state)
        saved = _round_trip(state)
        again = CreditState()
        again.load_state_dict(saved)
        assign_advantages([_pair()], method, state=again)
        assert type(again.value) is type(state.value)
    with pytest.raises(ValueError, match="the saved credit state is method 'hisr'"):
        graph.credit_state.load_state_dict(saved)


# -- group size ----------------------------------------------------------------------------------------
def test_group_size_has_one_default_and_one_accessor():
    assert DEFAULT_GROUP_SIZE == 8
    env = CreditWrapper(gym.make("agentenvs/Sokoban-v0"))
    assert env.group_size == group_size_of(env) == DEFAULT_GROUP_SIZE
    assert group_size_of(METHODS["spa"].wrap(gym.make("agentenvs/Sokoban-v0"))) == 8
    defaults = [
        inspect.signature(CreditWrapper).parameters["group_size"].default,
        inspect.signature(METHODS["grpo"].wrap).parameters["group_size"].default,
        inspect.signature(agentenvs.make_group_vec_env).parameters["group_size"].default,
    ]
    pytest.importorskip("stable_baselines3")
    from agentenvs.learners.sb3 import make_credit_vec_env

    defaults.append(inspect.signature(make_credit_vec_env).parameters["group_size"].default)
    assert defaults == [DEFAULT_GROUP_SIZE] * 4


def test_group_size_lives_in_one_place():
    env = CreditWrapper(gym.make("agentenvs/Sokoban-v0"), group_size=3)
    with pytest.raises(AttributeError):
        env.group_size = 4  # read-only: the wrapper's assembler holds it
    outer = gym.wrappers.RecordEpisodeStatistics(env)
    assert group_size_of(outer) == 3  # found through other wrappers


def test_a_missing_group_size_is_a_clear_error():
    with pytest.raises(ValueError, match="has no group size: wrap the env in a credit wrapper"):
        group_size_of(gym.make("agentenvs/Sokoban-v0"))
    plain = gym.make_vec("agentenvs/Sokoban-v0", num_envs=2)
    with pytest.raises(ValueError, match="has no group size"):
        group_size_of(plain)
    with pytest.raises(ValueError, match="needs a GroupedVectorEnv"):
        VectorCreditWrapper(plain)
    plain.close()


def test_a_state_pickles_into_a_copy_of_its_own():
    import pickle

    state = CreditState()
    copy = pickle.loads(pickle.dumps(state))
    assert isinstance(copy, CreditState) and copy is not state and copy.method is None
