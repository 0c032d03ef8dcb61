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


# -- VectorCreditWrapper: resets, partial resets ---------------------------------------------------
class Act(str):
    """A distinct action object per (sub-env, step), so recorded steps can be traced back."""


def _step(envs, moves):
    from agentenvs.wrappers import credited_groups

    actions = [Act(m) for m in moves]
    obs, rewards, term, trunc, infos = envs.step(actions)
    return actions, term | trunc, credited_groups(infos)


def _credit_envs(mode, max_steps=4):
    from agentenvs.wrappers import VectorCreditWrapper

    grouped = make_group_vec_env(
        "agentenvs/Sokoban-v0",
        num_groups=2,
        group_size=2,
        vectorization_mode=mode,
        action_format="plain",
        max_steps=max_steps,
    )
    return VectorCreditWrapper(grouped, "grpo")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_partial_reset_touches_only_the_masked_blocks(mode):
    """On "seed-1" two pushes up win; "down" never does (episodes of max_steps=4)."""
    envs = _credit_envs(mode)
    envs.reset(seed=0, options={"task_id": "seed-1"})
    a1, done, credit = _step(envs, ["up", "down", "down", "down"])
    a2, done, credit = _step(envs, ["up", "down", "down", "down"])
    assert done.tolist() == [True, False, False, False] and not credit  # block 0: one member done
    # restart sub-env 2 (block 1): block 0's pending group survives, sub-env 3 keeps recording
    options = {"reset_mask": np.array([False, False, True, False]), "task_id": "seed-1"}
    _, infos = envs.reset(options=options)
    assert "reset_mask" in options  # the caller's dict is left alone
    assert infos["_task_id"].tolist() == [False, False, True, False]
    a3, done, credit = _step(envs, ["x", "down", "down", "down"])  # sub-env 0 autoresets
    a4, done, credit = _step(envs, ["down", "down", "down", "down"])
    assert done.tolist() == [False, True, False, True]
    [group] = credit  # block 0: sub-env 0's won episode and sub-env 1's truncated one
    assert [t.success for t in group] == [True, False] and group[0].group_id == "seed-1#0"
    assert [[id(s.action) for s in t.steps] for t in group] == [
        [id(a1[0]), id(a2[0])],
        [id(a[1]) for a in (a1, a2, a3, a4)],
    ]
    # sub-env 3's episode (all four steps, the reset of sub-env 2 did not cut it) waits in block
    # 1's pending group; a reset of block 1 drops it
    _, infos = envs.reset(
        options={"reset_mask": np.array([False, False, True, True]), "task_id": "seed-1"}
    )
    later = [_step(envs, ["down"] * 4) for _ in range(4)]
    groups = [g for _, _, credit in later for g in credit]
    [block1] = [g for g in groups if g[0].steps[0].action is later[0][0][2]]
    for j, traj in enumerate(block1):
        assert [s.action for s in traj.steps] == [actions[2 + j] for actions, _, _ in later]
        assert all(
            s.action is actions[2 + j] for s, (actions, _, _) in zip(traj.steps, later, strict=True)
        )
    assert not any(s.action is a4[3] for g in groups for t in g for s in t.steps)
    ids = [t.group_id for g in [group, *groups] for t in g]
    assert len(set(ids)) == len(groups) + 1  # unique across resets
    assert envs.pop_groups() == [group, *groups]
    envs.close()


def test_full_reset_drops_pending_groups_and_ids_stay_unique():
    envs = _credit_envs("sync")
    envs.reset(seed=0, options={"task_id": "seed-1"})
    _step(envs, ["up", "down", "up", "down"])
    before, done, _ = _step(envs, ["up", "down", "up", "down"])
    assert done.tolist() == [True, False, True, False]  # two pending groups
    envs.reset(options={"task_id": "seed-1"})
    steps = [_step(envs, ["up", "up", "up", "up"]) for _ in range(2)]
    groups = steps[-1][2]
    assert len(groups) == 2 and all(len(t) == 2 and t.success for g in groups for t in g)
    assert not any(s.action is a for g in groups for t in g for s in t.steps for a in before)
    assert [g[0].group_id for g in groups] == ["seed-1#0", "seed-1#1"]
    envs.reset(options={"task_id": "seed-1"})
    groups = [_step(envs, ["up", "up", "up", "up"]) for _ in range(2)][-1][2]
    assert [g[0].group_id for g in groups] == ["seed-1#2", "seed-1#3"]
    envs.close()


def test_partial_reset_of_part_of_a_block_with_another_task_is_caught():
    envs = _credit_envs("sync")
    envs.reset(seed=0, options={"task_id": "seed-1"})
    envs.reset(options={"reset_mask": np.array([True, False, False, False]), "task_id": "seed-2"})
    with pytest.raises(RuntimeError, match="different tasks"):
        for _ in range(4):
            _step(envs, ["down"] * 4)
    envs.close()
