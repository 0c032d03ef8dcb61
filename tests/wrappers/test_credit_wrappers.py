"""The credit wrappers on a real env (agentenvs/Sokoban-v0): single-env and grouped vector forms."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import (
    CreditWrapper,
    GiGPOCreditWrapper,
    GraphCreditWrapper,
    OutcomeCreditWrapper,
    RolloutTreeCreditWrapper,
    VectorCreditWrapper,
    credited_groups,
)
from agentenvs.wrappers.registry import METHODS

import agentenvs
from agentenvs.core import Step

ENV_ID = "agentenvs/Sokoban-v0"
MOVES = ["up", "down", "left", "right"]


def tagged(move: str) -> str:
    return f"<think>try {move}</think><action>{move}</action>"


def check_group(group, group_size):
    assert len(group) == group_size
    assert len({t.task_id for t in group}) == 1
    assert len({t.group_id for t in group}) == 1
    assert len({t.steps[0].state_key for t in group}) == 1  # same task => same initial state
    for traj in group:
        assert traj.steps[-1].terminated or traj.steps[-1].truncated
        assert not any(s.terminated or s.truncated for s in traj.steps[:-1])
        assert traj.success == traj.steps[-1].terminated
        for a, b in zip(traj.steps, traj.steps[1:], strict=False):
            assert a.next_state_key == b.state_key
        assert all(isinstance(s.advantage, float) and np.isfinite(s.advantage) for s in traj.steps)


@pytest.mark.parametrize(
    "wrapper",
    [OutcomeCreditWrapper, GiGPOCreditWrapper, GraphCreditWrapper, RolloutTreeCreditWrapper],
)
def test_single_env_group_of_eight(wrapper):
    env = wrapper(gym.make(ENV_ID), group_size=8)
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=3)
    credits, lengths, steps, invalid_seen = [], [], 0, False
    while len(credits) < 2:
        valid = rng.random() > 0.1
        action = tagged(rng.choice(MOVES)) if valid else "no tags here"
        obs, reward, terminated, truncated, info = env.step(action)
        invalid_seen |= not info["action_valid"]
        steps += 1
        if terminated or truncated:
            lengths.append(steps)
            steps = 0
            if "credit" in info:
                credits.append(info["credit"])
                assert len(lengths) == 8 * len(credits)
            obs, info = env.reset()
        else:
            assert "credit" not in info
    for k, group in enumerate(credits):
        check_group(group, 8)
        assert [len(t) for t in group] == lengths[8 * k : 8 * k + 8]
    assert (
        credits[0][0].task_id != credits[1][0].task_id
        or credits[0][0].group_id != credits[1][0].group_id
    )
    assert env.pop_groups() == credits and env.pop_groups() == []
    assert invalid_seen
    assert any(not s.action_valid for g in credits for t in g for s in t.steps)


USER_SNIPPET = """
import gymnasium as gym
import agentenvs                                  # registers the agentenvs/* ids
from agentenvs.wrappers import GraphCreditWrapper

env = GraphCreditWrapper(gym.make("agentenvs/ALFWorld-v0"), group_size=8)
obs, info = env.reset(seed=0)
for _ in range(10_000):
    obs, reward, terminated, truncated, info = env.step(policy(obs))   # policy returns text
    if terminated or truncated:
        for trajectory in info.get("credit", []):  # the whole group, once its last episode ends
            learn_from(trajectory)                   # every Step carries .advantage
        obs, info = env.reset()
"""


def test_user_loop_snippet_runs_word_for_word():
    """The user loop of README "Credit assignment" on ALFWorld, with the Sokoban id instead."""
    rng = np.random.default_rng(0)
    seen = []
    namespace = {"policy": lambda obs: tagged(rng.choice(MOVES)), "learn_from": seen.append}
    exec(USER_SNIPPET.replace("agentenvs/ALFWorld-v0", ENV_ID), namespace)
    assert len(seen) >= 8 * 40 and len(seen) % 8 == 0
    assert all(s.advantage is not None for t in seen for s in t.steps)
    assert any(s.advantage != 0.0 for t in seen for s in t.steps)


def test_mid_episode_reset_replays_the_task_and_conflicts_raise():
    env = OutcomeCreditWrapper(gym.make(ENV_ID, action_format="plain"), group_size=2)
    _, info = env.reset(seed=5)
    task = info["task_id"]
    for _ in range(16):
        _, _, term, trunc, info = env.step("left")
        if term or trunc:
            break
    _, info = env.reset()
    assert info["task_id"] == task
    env.step("up")
    _, info = env.reset()  # abandons the unfinished episode
    assert info["task_id"] == task
    with pytest.raises(ValueError, match="conflicts"):
        env.reset(options={"task_id": "seed-1" if task != "seed-1" else "seed-2"})
    done = False
    while not done:
        _, _, term, trunc, info = env.step("down")
        done = term or trunc
    assert len(info["credit"]) == 2
    assert all(len(t) > 0 for t in info["credit"])


def test_single_wrapper_contract_identity_order_ids_and_task_replay():
    """What the LLM learner relies on: the recorded action *is* the object it passed, the group
    arrives in ``info["credit"]`` (episode order) of the step ending its last episode, once."""
    env = GraphCreditWrapper(gym.make(ENV_ID, action_format="plain"), group_size=3)
    assert env.group_size == 3 and env.method == "graphgpo"
    _, info = env.reset(seed=4)
    task, passed, episodes, groups = info["task_id"], [], [], []
    moves = iter(MOVES * 1000)
    while len(groups) < 2:
        action = Act(next(moves))
        action.tokens = (len(passed),)
        passed.append(action)
        _, _, term, trunc, info = env.step(action)
        if not (term or trunc):
            assert "credit" not in info
            continue
        episodes.append(passed)
        passed = []
        if "credit" in info:
            groups.append(info["credit"])
            assert len(episodes) == 3 * len(groups)
            _, info = env.reset()
        else:  # within a group: the task replays, and asking for that very task is fine
            _, info = env.reset(options={"task_id": task} if len(episodes) % 2 else None)
            assert info["task_id"] == task
        task = info["task_id"]
    assert env.pop_groups() == groups and env.pop_groups() == []
    for k, group in enumerate(groups):
        check_group(group, 3)
        assert {t.group_id for t in group} == {f"{group[0].task_id}#{k}"}
        assert [t.traj_id for t in group] == ["0", "1", "2"]
        for traj, actions in zip(group, episodes[3 * k : 3 * k + 3], strict=True):
            assert [s.action for s in traj.steps] == actions
            assert all(s.action is a for s, a in zip(traj.steps, actions, strict=True))
            assert all(isinstance(s.action, Act) and s.action.tokens for s in traj.steps)


class _WithCost(gym.Wrapper):
    """Reports ``info["cost"]``: 1, 2, 3, ... within an episode."""

    def reset(self, **kwargs):
        self.n = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        self.n += 1
        return obs, reward, term, trunc, {**info, "cost": float(self.n)}


def test_info_cost_becomes_step_cost():
    if "cost" not in {f.name for f in dataclasses.fields(Step)}:
        pytest.skip("Step has no cost field")
    env = OutcomeCreditWrapper(
        _WithCost(gym.make(ENV_ID, action_format="plain", max_steps=3)), group_size=2
    )
    env.reset(seed=0)
    group = None
    while group is None:
        _, _, term, trunc, info = env.step("up")
        if term or trunc:
            group = info.get("credit")
            env.reset()
    assert [[s.cost for s in t.steps] for t in group] == [[1.0, 2.0, 3.0]] * 2
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env(
            ENV_ID, 1, 2, action_format="plain", max_steps=2, wrappers=[_WithCost]
        ),
        "grpo",
    )
    envs.reset(seed=0)
    envs.step(["up", "up"])
    [group] = credited_groups(envs.step(["up", "up"])[4])
    assert [[s.cost for s in t.steps] for t in group] == [[1.0, 2.0]] * 2
    with pytest.warns(UserWarning, match="group_size=1"):
        plain = OutcomeCreditWrapper(
            gym.make(ENV_ID, action_format="plain", max_steps=1), group_size=1
        )
    plain.reset(seed=0)
    assert plain.step("up")[4]["credit"][0].steps[0].cost == 1.0  # no info["cost"]: the default
    envs.close()


class _NoTaskIds(gym.Wrapper):
    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, {k: v for k, v in info.items() if k != "task_id"}


def test_wrapper_needs_task_ids():
    env = GraphCreditWrapper(_NoTaskIds(gym.make(ENV_ID)), group_size=2)
    with pytest.raises(ValueError, match="task_id"):
        env.reset(seed=0)


def test_wrapper_rejects_bad_arguments():
    with pytest.raises(ValueError, match="group_size"):
        GraphCreditWrapper(gym.make(ENV_ID), group_size=0)
    with pytest.raises(ValueError, match="unknown credit method"):
        CreditWrapper(gym.make(ENV_ID), method="nope")
    with pytest.raises(TypeError):
        GraphCreditWrapper(gym.make(ENV_ID), config=METHODS["rtmc"].config())


class Act(str):
    """A ``str`` subclass carrying extra data, as the LLM learner's actions do (token ids)."""

    tokens: tuple = ()


@pytest.mark.parametrize("method", sorted(METHODS))
def test_vector_form_over_group_vec_env(method):
    group_size, num_groups = 4, 2
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env(
            ENV_ID, num_groups=num_groups, group_size=group_size, vectorization_mode="sync"
        ),
        method,
    )
    rng = np.random.default_rng(2)
    obs, infos = envs.reset(seed=11)
    emitted = []
    ended = np.zeros(envs.num_envs, int)  # finished episodes per sub-env
    lengths: dict = {}
    played: dict = {}  # id(action object) -> (sub-env, episode)
    current = np.zeros(envs.num_envs, int)
    autoreset = np.zeros(envs.num_envs, bool)
    for _ in range(120):
        actions = [Act(tagged(rng.choice(MOVES))) for _ in range(envs.num_envs)]
        obs, rewards, terms, truncs, infos = envs.step(actions)
        for i in range(envs.num_envs):
            if autoreset[i]:  # NEXT_STEP autoreset: this step was a reset
                autoreset[i] = False
                continue
            played[id(actions[i])] = (i, ended[i])
            current[i] += 1
            if terms[i] or truncs[i]:
                lengths[(i, ended[i])] = current[i]
                ended[i] += 1
                current[i] = 0
                autoreset[i] = True
        emitted += credited_groups(infos)
        for group in credited_groups(infos):  # recorded actions are the objects passed in
            assert all(played[id(s.action)] for t in group for s in t.steps)
    complete = sum(min(ended[b * group_size : (b + 1) * group_size]) for b in range(num_groups))
    assert len(emitted) == complete >= num_groups
    assert envs.pop_groups() == emitted
    seen = set()
    for serial, group in enumerate(emitted):
        check_group(group, group_size)
        assert group[0].group_id == f"{group[0].task_id}#{serial}"
        where = [played[id(t.steps[0].action)] for t in group]
        block, episode = where[0][0] // group_size, where[0][1]
        assert where == [(block * group_size + j, episode) for j in range(group_size)]
        assert [t.traj_id for t in group] == [str(j) for j in range(group_size)]
        for j, traj in enumerate(group):
            assert len(traj) == lengths[(block * group_size + j, episode)]
            assert all(played[id(s.action)] == where[j] for s in traj.steps)
        seen.add((block, episode))
    assert len(seen) == len(emitted)
    envs.close()


def test_vector_wrapper_needs_a_grouped_env():
    plain = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync")
    with pytest.raises(ValueError, match="GroupedVectorEnv"):
        VectorCreditWrapper(plain, "grpo")
    plain.close()
    same_step = gym.make_vec(
        ENV_ID,
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
    )
    with pytest.raises(ValueError, match="NEXT_STEP"):
        VectorCreditWrapper(agentenvs.GroupedVectorEnv(same_step, 2), "grpo")
    same_step.close()


@pytest.mark.slow
def test_graph_wrapper_on_alfworld():
    """The snippet's env: a group of 8 ALFWorld episodes (short budget) replays one game."""
    pytest.importorskip("alfworld")
    rng = np.random.default_rng(0)
    env = GraphCreditWrapper(gym.make("agentenvs/ALFWorld-v0", max_steps=5), group_size=8)
    obs, info = env.reset(seed=0)
    group = None
    while group is None:
        action = tagged(str(rng.choice(info["admissible_actions"])))
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            group = info.get("credit")
            obs, info = env.reset()
    check_group(group, 8)
    assert all(len(t) <= 5 for t in group)


def test_outbox_is_bounded_and_warns_once():
    from agentenvs.wrappers.recorder import GroupOutbox

    box = GroupOutbox(capacity=2)
    box.put(["a"])
    box.put(["b"])
    with pytest.warns(UserWarning, match="pop_groups"):
        box.put(["c"])
    box.put(["d"])  # no second warning
    assert box.pop_all() == [["c"], ["d"]] and box.pop_all() == []
