"""The open credit registry (wrappers/registry.py) and the wrappers' Gymnasium protocol.

A toy method is registered inside the tests and used through every route a built-in has: the
single and vector wrappers, a one-line named wrapper, ``assign_advantages`` and an alias. Every
registered env id passes Gymnasium's ``check_env`` inside a credit wrapper, and ``gym.make(spec)``
rebuilds a wrapped env.
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import (
    CreditMethod,
    CreditWrapper,
    GiGPOCreditWrapper,
    GraphCreditWrapper,
    GraphGPOConfig,
    OutcomeCreditWrapper,
    RolloutTreeCreditWrapper,
    RTMCConfig,
    VectorCreditWrapper,
    assign_advantages,
    credited_groups,
    get_method,
    gigpo,
    graphgpo,
    grpo,
    register_method,
    rtmc,
    unregister_method,
)
from agentenvs.wrappers.batch import default_signature, state_signature
from agentenvs.wrappers.registry import ALIASES, METHODS, canonical_name, method_names, states_only
from gymnasium.utils.env_checker import check_env

import agentenvs
from agentenvs.core import Step, Trajectory
from agentenvs.registration import ENV_IDS

ENV_ID = "agentenvs/Sokoban-v0"


@dataclasses.dataclass
class ToyConfig:
    scale: float = 1.0
    by_action: bool = False


def toy_estimate_batch(batch, config):
    """``scale * success`` of the step's trajectory, plus the step's action code."""
    return config.scale * np.repeat(batch.success, batch.lengths) + batch.action


def toy_signature(config):
    return default_signature if config.by_action else state_signature


@pytest.fixture
def toy():
    entry = register_method(
        "toy_success",
        toy_estimate_batch,
        ToyConfig,
        signature=toy_signature,
        aliases=("toy",),
    )
    yield entry
    unregister_method("toy_success")


def traj(actions, success, task="t"):
    steps = [Step("o", a, 0.0, state_key=k) for k, a in enumerate(actions)]
    return Trajectory(task, "", steps, success=success)


def advantages(group):
    return [[s.advantage for s in t.steps] for t in group]


# -- the registry ----------------------------------------------------------------------------------
def test_builtins_names_aliases_and_entries():
    # the model-based methods (spa, triage, hisr) are registered too; each has its own tests
    assert {"gigpo", "graphgpo", "grpo", "rtmc"} <= set(method_names())
    assert sorted(set(METHODS) - set(method_names())) == ["graph"]
    assert dict(ALIASES) == {"graph": "graphgpo"}
    assert METHODS["graph"] is METHODS["graphgpo"] and canonical_name("graph") == "graphgpo"
    modules = {"grpo": grpo, "gigpo": gigpo, "graphgpo": graphgpo, "rtmc": rtmc}
    wrappers = {
        "grpo": OutcomeCreditWrapper,
        "gigpo": GiGPOCreditWrapper,
        "graphgpo": GraphCreditWrapper,
        "rtmc": RolloutTreeCreditWrapper,
    }
    group = [traj(["up", "down", "up"], True), traj(["up", "left"], False), traj(["up"], True)]
    for name, module in modules.items():
        entry = METHODS[name]
        assert entry.name == name and entry.estimate_batch is module.estimate_batch
        assert entry.wrapper is wrappers[name] and wrappers[name].method == name
        estimate, config = entry  # unpacks as (estimate, Config)
        batch = entry.batch(group, config())
        got, want = estimate(group, config()), batch.split(module.estimate_batch(batch, config()))
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    assert METHODS["rtmc"].signature(RTMCConfig()) is default_signature
    assert METHODS["grpo"].signature(None) is states_only(None) is state_signature


def test_get_method_errors():
    with pytest.raises(ValueError, match="unknown credit method 'nope'"):
        get_method("nope")
    with pytest.raises(TypeError, match="GraphGPOConfig"):
        get_method("graph", RTMCConfig())
    with pytest.raises(ValueError, match="unknown credit method"):
        assign_advantages([[traj(["up"], True)]], "nope")
    with pytest.raises(TypeError, match="sequence of groups"):
        assign_advantages([traj(["up"], True)], "grpo")


def test_register_a_method_of_ones_own(toy):
    assert isinstance(toy, CreditMethod) and toy.name == "toy_success"
    assert {"toy", "toy_success"} <= set(METHODS) and ALIASES["toy"] == "toy_success"
    assert "toy_success" in method_names() and "toy" not in method_names()
    assert get_method("toy")[0] is toy is METHODS["toy_success"]
    entry, config = get_method("toy")
    assert config == ToyConfig()
    with pytest.raises(TypeError, match="ToyConfig"):
        get_method("toy", GraphGPOConfig())
    # assign_advantages by alias and by name; the signature rule follows the config
    group = [traj(["up", "down", "up"], True), traj(["left"], False)]
    assign_advantages([group], "toy", ToyConfig(scale=10.0))
    assert advantages(group) == [[10.0, 10.0, 10.0], [0.0]]  # state_signature: no action codes
    assign_advantages([group], "toy_success", ToyConfig(scale=10.0, by_action=True))
    assert advantages(group) == [[10.0, 11.0, 10.0], [2.0]]  # codes up=0, down=1, left=2
    estimate, config_cls = METHODS["toy"]
    assert [a.tolist() for a in estimate(group, config_cls(10.0, by_action=True))] == advantages(
        group
    )


def test_register_refuses_taken_names_unless_replace(toy):
    for name, aliases in [("toy_success", ()), ("other", ("toy",)), ("other", ("graph",))]:
        with pytest.raises(ValueError, match="already registered"):
            register_method(name, toy_estimate_batch, ToyConfig, aliases=aliases)
    assert "other" not in METHODS and ALIASES["graph"] == "graphgpo"
    replaced = register_method(
        "toy_success", toy_estimate_batch, ToyConfig, aliases=("toy2",), replace=True
    )
    assert METHODS["toy_success"] is replaced and "toy" not in METHODS and "toy2" in METHODS
    taker = register_method(
        "toy_taker", toy_estimate_batch, ToyConfig, aliases=("toy2",), replace=True
    )
    assert METHODS["toy2"] is taker and METHODS["toy_success"].aliases == ()  # alias moved over
    unregister_method("toy_taker")
    with pytest.raises(ValueError, match="non-empty"):
        register_method("", toy_estimate_batch, ToyConfig)
    with pytest.raises(TypeError, match="class"):
        register_method("x", toy_estimate_batch, ToyConfig())


def test_unregister_removes_name_and_aliases():
    register_method("tmp_method", toy_estimate_batch, ToyConfig, aliases=("tmp",))
    unregister_method("tmp")
    assert "tmp_method" not in METHODS and "tmp" not in METHODS and "tmp" not in ALIASES
    with pytest.raises(ValueError, match="unknown"):
        unregister_method("tmp_method")


def test_reads_declare_step_facts_and_are_checked():
    """Every built-in declares what it reads (adapters check those columns); an unknown fact is
    refused at registration; a user's method may leave it undeclared."""
    from agentenvs.wrappers.registry import STEP_FACTS

    assert all(set(get_method(m)[0].reads) <= set(STEP_FACTS) for m in method_names())
    assert get_method("graphgpo")[0].success_sink and not get_method("gigpo")[0].success_sink
    assert "action_key" in get_method("rtmc")[0].reads
    with pytest.raises(ValueError, match="unknown step facts \\['colour'\\]"):
        register_method("tmp_reads", toy_estimate_batch, ToyConfig, reads=("won", "colour"))
    assert "tmp_reads" not in METHODS
    entry = register_method("tmp_reads", toy_estimate_batch, ToyConfig)
    assert entry.reads is None
    unregister_method("tmp_reads")


# -- a user's method through the wrappers ----------------------------------------------------------
def play_group(env, moves, seed=0):
    """Play ``env`` (a single credit wrapper) until a group is credited; return it."""
    env.reset(seed=seed)
    k = 0
    while True:
        _, _, term, trunc, info = env.step(moves[k % len(moves)])
        k += 1
        if term or trunc:
            if "credit" in info:
                return info["credit"]
            env.reset()


def test_toy_method_through_the_single_wrapper(toy):
    env = CreditWrapper(
        gym.make(ENV_ID, action_format="plain", max_steps=3),
        group_size=2,
        config=ToyConfig(scale=5.0, by_action=True),
        method="toy",
    )
    assert env.method == "toy" and env.credit_method is toy and env.config.scale == 5.0
    group = play_group(env, ["up", "down", "up", "left"])
    assert len(group) == 2 and len({t.group_id for t in group}) == 1
    # action codes by first appearance over the group: up=0, down=1, left=2; no room is solved
    codes = {"up": 0.0, "down": 1.0, "left": 2.0}
    for t in group:
        assert not t.success
        assert [s.advantage for s in t.steps] == [codes[s.action] for s in t.steps]
    assert env.pop_groups() == [group]


def test_named_wrapper_of_a_users_method_in_one_line(toy):
    class ToyCreditWrapper(CreditWrapper, method="toy"): ...

    assert ToyCreditWrapper.method == "toy_success" and toy.name == "toy_success"
    assert METHODS["toy"].wrapper is ToyCreditWrapper  # the first named wrapper binds
    env = METHODS["toy"].wrap(gym.make(ENV_ID, action_format="plain", max_steps=2), group_size=2)
    assert type(env) is ToyCreditWrapper and env.group_size == 2 and env.config == ToyConfig()
    group = play_group(env, ["up"])
    assert [s.advantage for t in group for s in t.steps] == [0.0] * 4
    with pytest.raises(ValueError, match="unknown credit method"):

        class Nope(CreditWrapper, method="no_such_method"): ...


def test_toy_method_through_the_vector_wrapper(toy):
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env(
            ENV_ID, num_groups=1, group_size=2, action_format="plain", max_steps=2
        ),
        "toy",
        ToyConfig(scale=2.0),
    )
    envs.reset(seed=0, options={"task_id": "seed-1"})  # two pushes up solve seed-1
    envs.step(["up", "down"])
    _, _, _, _, infos = envs.step(["up", "down"])
    [group] = credited_groups(infos)
    assert [t.success for t in group] == [True, False]
    assert [[s.advantage for s in t.steps] for t in group] == [[2.0, 2.0], [0.0, 0.0]]
    envs.close()


# -- the Gymnasium protocol ------------------------------------------------------------------------
def assert_passes_check_env(env):
    """``check_env`` raises on a protocol error; other findings are warnings: allow only the one
    about checking a wrapped env (the wrapper is what is checked here)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    others = [
        str(w.message) for w in caught if "different from the unwrapped" not in str(w.message)
    ]
    assert others == []


SLOW_CHECK_ENV = ("agentenvs/ALFWorld-v0", "agentenvs/WebShopBrowser-v0")


@pytest.mark.integration
@pytest.mark.parametrize(
    "env_id",
    [
        pytest.param(
            env_id,
            marks=[pytest.mark.slow] if env_id in SLOW_CHECK_ENV else [],
        )
        for env_id in ENV_IDS
    ],
)
def test_check_env_on_every_registered_id(env_id):
    if env_id == "agentenvs/ALFWorld-v0":  # check_env loads ~15 games: 6 s warm, 14 s cold
        pytest.importorskip("alfworld")
    if env_id == "agentenvs/WebShopBrowser-v0":  # starts Chromium: a few seconds
        pytest.importorskip("selenium")
        if not all(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromedriver")):
            pytest.skip("Chromium and chromium-driver are not installed")
    env = GraphCreditWrapper(gym.make(env_id), group_size=2)
    try:
        assert_passes_check_env(env)
    finally:
        env.close()


@pytest.mark.parametrize("method", ["grpo", "gigpo", "graph", "rtmc", "toy"])
def test_check_env_with_every_method(method, toy):
    env = CreditWrapper(gym.make("agentenvs/SokobanDiscrete-v0"), group_size=3, method=method)
    assert_passes_check_env(env)


SPEC_CASES = [
    (OutcomeCreditWrapper, {}),
    (GiGPOCreditWrapper, {"group_size": 3}),
    (GraphCreditWrapper, {"config": GraphGPOConfig(distance_discount=0.8)}),
    (RolloutTreeCreditWrapper, {"config": RTMCConfig(alpha=1.0)}),
    (CreditWrapper, {"method": "graph", "group_size": 5}),
    (CreditWrapper, {"method": "toy", "config": ToyConfig(scale=3.0)}),
]


@pytest.mark.parametrize(("cls", "kwargs"), SPEC_CASES)
def test_spec_round_trip(cls, kwargs, toy):
    env = cls(gym.make(ENV_ID, action_format="plain", max_steps=7), **kwargs)
    [*_, recorded] = env.spec.additional_wrappers
    assert recorded.entry_point == f"agentenvs.wrappers.base:{cls.__name__}"
    again = gym.make(env.spec)
    assert type(again) is cls
    assert (again.method, again.group_size, again.config) == (
        env.method,
        env.group_size,
        env.config,
    )
    assert again.credit_method is env.credit_method
    assert again.spec.kwargs == env.spec.kwargs  # the inner env's own options came back too
    assert again.env.unwrapped.max_steps == 7
    (obs_a, info_a), (obs_b, info_b) = env.reset(seed=3), again.reset(seed=3)
    assert obs_a == obs_b and info_a["task_id"] == info_b["task_id"]
    assert env.step("left")[0] == again.step("left")[0]


def test_wrappers_are_generic_and_record_their_arguments():
    assert issubclass(CreditWrapper, gym.Wrapper)
    assert issubclass(GraphCreditWrapper, gym.utils.RecordConstructorArgs)
    assert CreditWrapper[str, str] is not None  # generic in (ObsType, ActType)
    assert issubclass(VectorCreditWrapper, gym.vector.VectorWrapper)
    hints = CreditWrapper.step.__annotations__
    assert "return" in hints and "return" in CreditWrapper.reset.__annotations__
