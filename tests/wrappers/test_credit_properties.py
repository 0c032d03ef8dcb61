"""Properties of the credit estimators and their helpers (the claims of docs/credit.md, sections 1-6)."""

from __future__ import annotations

import dataclasses
import math
from collections import deque

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import (
    GiGPOConfig,
    GraphGPOConfig,
    GRPOConfig,
    RTMCConfig,
    assign_advantages,
    gigpo,
    graphgpo,
    grpo,
    rtmc,
)
from agentenvs.wrappers.batch import (
    INVALID_ACTION,
    StepBatch,
    action_signature,
    action_signatures,
    default_signature,
    factorise,
    hashable_key,
    state_signature,
)
from agentenvs.wrappers.matching import similarity_codes
from agentenvs.wrappers.registry import METHODS
from agentenvs.wrappers.stats import (
    dense_codes,
    dense_rank,
    discounted_returns,
    group_zscore,
    radix_argsort,
)
from credit_builders import path_traj
from hypothesis import given, settings
from hypothesis import strategies as st

import agentenvs  # noqa: F401  (registers the ids)
from agentenvs.core import Step, Trajectory, read_trajectories, write_trajectories

MODULES = {"grpo": grpo, "gigpo": gigpo, "graphgpo": graphgpo, "rtmc": rtmc}

FAST = settings(max_examples=60, deadline=None)


@st.composite
def groups(draw, alphabet: str = "ABCDE", max_groups: int = 3, max_size: int = 5, min_len: int = 0):
    """Trajectories of up to ``max_groups`` groups over a small state alphabet (states recur)."""
    trajs = []
    for g in range(draw(st.integers(1, max_groups))):
        for _ in range(draw(st.integers(1, max_size))):
            path = draw(st.text(alphabet, min_size=min_len + 1, max_size=7))
            success = draw(st.booleans()) and len(path) > 1
            n = len(path) - 1
            invalid = [t for t in range(n) if draw(st.booleans()) and draw(st.booleans())]
            if success:
                invalid = [t for t in invalid if t != n - 1]
            trajs.append(path_traj(path, success, group=f"g{g}", invalid=invalid))
    return trajs


def unique_keys(trajs: list[Trajectory]) -> list[Trajectory]:
    """Copies where every state and next state is unique (no state ever repeats)."""
    out = []
    for i, t in enumerate(trajs):
        steps = [
            dataclasses.replace(s, state_key=("s", i, k), next_state_key=("n", i, k))
            for k, s in enumerate(t.steps)
        ]
        out.append(dataclasses.replace(t, steps=steps))
    return out


def flat(arrays):
    return np.concatenate(arrays) if arrays else np.zeros(0)


# -- reductions ------------------------------------------------------------------------------------
@FAST
@given(
    groups(), st.sampled_from(["trajectory", "cross_steps"]), st.sampled_from(["mean_std", "mean"])
)
def test_graph_and_gigpo_reduce_to_grpo_without_repeats(trajs, episode_norm, norm):
    trajs = unique_keys(trajs)
    base = dict(episode_norm=episode_norm, norm=norm)
    expected = flat(METHODS["grpo"].estimate(trajs, GRPOConfig(**base)))
    np.testing.assert_allclose(
        flat(METHODS["graphgpo"].estimate(trajs, GraphGPOConfig(**base))), expected, atol=1e-12
    )
    np.testing.assert_allclose(
        flat(METHODS["gigpo"].estimate(trajs, GiGPOConfig(**base))), expected, atol=1e-12
    )


@FAST
@given(groups(min_len=1), st.sampled_from([0.0, 0.5, 2.0]))
def test_rtmc_reduces_to_grpo_with_distinct_signatures(trajs, alpha):
    """All signatures distinct, terminal 0/1 reward, gamma 1: A = alpha/(1+alpha) (R - p), i.e. GRPO
    without std normalisation, scaled (docs/credit.md, section 6.2)."""
    trajs = [
        dataclasses.replace(
            t,
            steps=[
                dataclasses.replace(s, reward=float(t.success and k == len(t) - 1))
                for k, s in enumerate(t.steps)
            ],
        )
        for t in unique_keys(trajs)
    ]
    cfg = RTMCConfig(gamma=1.0, alpha=alpha, normalize="none")
    expected = alpha / (1 + alpha) * flat(METHODS["grpo"].estimate(trajs, GRPOConfig(norm="mean")))
    np.testing.assert_allclose(flat(METHODS["rtmc"].estimate(trajs, cfg)), expected, atol=1e-12)


@FAST
@given(groups(min_len=1), st.sampled_from([0.0, 2.0]))
def test_rtmc_root_signature_is_grpo(trajs, alpha):
    """One root state and one action key per rollout: A = R_i - mean(R) for any alpha."""
    trajs = [
        dataclasses.replace(
            t,
            steps=[
                dataclasses.replace(s, reward=float(t.success and k == len(t) - 1))
                for k, s in enumerate(t.steps)
            ],
        )
        for t in trajs
    ]
    cfg = RTMCConfig(
        gamma=1.0, alpha=alpha, normalize="none", signature=lambda steps, t: ("root", id(steps))
    )
    expected = flat(METHODS["grpo"].estimate(trajs, GRPOConfig(norm="mean")))
    np.testing.assert_allclose(flat(METHODS["rtmc"].estimate(trajs, cfg)), expected, atol=1e-12)


def test_rtmc_pools_llm_answers_by_their_command():
    """Different reasoning, same <action>: the env reports one action key (info["action_key"]), so
    one (state, action) key; invalid answers pool together."""
    answers = [
        "<think>box left</think><action>up</action>",
        "<think>hmm</think><action>up</action>",
    ]
    env = gym.make("agentenvs/Sokoban-v0")
    env.reset(seed=0)
    keys = [env.step(answer)[4]["action_key"] for answer in answers]
    assert keys == ["up", "up"]
    win = path_traj("AB", True, actions=answers[:1], rewards=[1.0])
    lose = path_traj("AC", False, actions=answers[1:], rewards=[0.0])
    win.steps[0].action_key, lose.steps[0].action_key = keys  # as the recorder stores them
    bad = path_traj("AD", False, actions=["up!!"], invalid=(0,), rewards=[-0.1])
    worse = path_traj("AE", False, actions=["no idea"], invalid=(0,), rewards=[-0.1])
    adv = METHODS["rtmc"].estimate([win, lose, bad, worse], RTMCConfig(gamma=1.0, normalize="none"))
    assert adv[0][0] == adv[1][0] > adv[2][0] == adv[3][0]


def test_rtmc_cumulative_set_signature_merges_reordered_histories():
    """Two rollouts that did the same things in another order share a state (branch discrimination)."""
    group = [
        path_traj("ABCD", True, actions=["look", "open", "take"], rewards=[0, 0, 1]),
        path_traj("AEFG", False, actions=["open", "look", "drop"], rewards=[0, 0, 0]),
    ]
    cfg = RTMCConfig(gamma=1.0, normalize="none", signature=rtmc.cumulative_set_signature)
    adv = METHODS["rtmc"].estimate(group, cfg)
    assert adv[0][2] > 0 > adv[1][2]  # same state {look, open}: take beats drop
    assert adv[0][2] == pytest.approx(1 - (1 + 2 * 0.5) / 4)


# -- graph structure -------------------------------------------------------------------------------
def brute_distances(trajs: list[Trajectory]) -> dict:
    """Plain BFS on one group (state keys as nodes, "SUCC" as the sink)."""
    preds: dict = {}
    nodes = set()
    for t in trajs:
        for k, s in enumerate(t.steps):
            dst = "SUCC" if t.success and k == len(t) - 1 else s.next_state_key
            preds.setdefault(dst, []).append(s.state_key)
            nodes.update((s.state_key, dst))
    dist = {}
    if "SUCC" in nodes:
        dist["SUCC"] = 0
        queue = deque(["SUCC"])
        while queue:
            v = queue.popleft()
            for u in preds.get(v, []):
                if u not in dist:
                    dist[u] = dist[v] + 1
                    queue.append(u)
    d_max = max(dist.values(), default=0)
    return {v: dist.get(v, d_max + 1) for v in nodes}


@FAST
@given(groups(max_groups=1, max_size=6, min_len=1))
def test_distances_match_brute_force_bfs(trajs):
    batch = StepBatch.from_trajectories(trajs)
    graph = graphgpo.build_graph(batch, GraphGPOConfig())
    dist = graphgpo.distances(graph)
    expected = brute_distances(trajs)
    for i, code in enumerate(batch.state.tolist()):
        assert dist[graph.src[i]] == expected[batch.state_keys[code]]
    for i in range(batch.n_steps):  # Bellman: d(u) <= 1 + d(v) for reachable u
        if graph.has_success[0] and dist[graph.src[i]] <= max(expected.values()) - 1:
            assert dist[graph.src[i]] <= 1 + dist[graph.dst[i]]


@FAST
@given(groups(max_groups=2, max_size=6, min_len=1), st.sampled_from([0.1, 0.5, 0.8]))
def test_monotone_within_source_groups(trajs, omega):
    """The paper's Proposition 4.1: in a source-state group, a closer destination never gets a
    lower A^G."""
    trajs = [
        dataclasses.replace(t, steps=[dataclasses.replace(s, action_valid=True) for s in t.steps])
        for t in trajs
    ]
    cfg = GraphGPOConfig(distance_discount=omega)
    batch = StepBatch.from_trajectories(trajs)
    graph = graphgpo.build_graph(batch, cfg)
    dist = graphgpo.distances(graph)
    adv = graphgpo.graph_advantages(batch, cfg)
    d_next = dist[graph.dst]
    for src in np.unique(graph.src):
        idx = np.flatnonzero(graph.src == src)
        for i in idx:
            for j in idx:
                if d_next[i] < d_next[j]:
                    assert adv[i] >= adv[j]
                elif d_next[i] == d_next[j]:
                    assert adv[i] == pytest.approx(adv[j])


@FAST
@given(groups(max_groups=2, max_size=5, min_len=1), st.floats(0.2, 0.95), st.floats(0.5, 20.0))
def test_graph_advantage_scale_and_convention_invariance(trajs, omega, r_succ):
    """With unit costs and no graph penalty, A^G ignores r_succ and the reward convention."""
    base = GraphGPOConfig(distance_discount=omega, invalid_penalty_on_graph=False, eps=0.0)
    batch = StepBatch.from_trajectories(trajs)
    expected = graphgpo.graph_advantages(batch, base)
    for cfg in (
        dataclasses.replace(base, success_reward=r_succ),
        dataclasses.replace(base, reward_convention="reference"),
    ):
        np.testing.assert_allclose(graphgpo.graph_advantages(batch, cfg), expected, atol=1e-9)


def test_goal_beats_loop():
    group = [path_traj("SG", True), path_traj("STS", False), path_traj("STSG", True)]
    adv = METHODS["graphgpo"].estimate(group, GraphGPOConfig())
    assert adv[0][0] > adv[1][0]  # S->G over S->T (T leads only back to S)
    assert adv[2][2] > adv[2][0]
    a_g = graphgpo.graph_advantages(StepBatch.from_trajectories(group), GraphGPOConfig())
    assert a_g[0] > 0 > a_g[1]


def test_good_step_in_failed_trajectory_gets_positive_credit():
    """On the toy group: tau4's shortcut A->C tops G(A) and its total is positive."""
    from credit_builders import toy_group

    adv = METHODS["graphgpo"].estimate(toy_group(), GraphGPOConfig(distance_discount=0.5))
    assert adv[3][0] > 0 and adv[3][0] > adv[0][0]


@FAST
@given(groups(), st.sampled_from(sorted(MODULES)))
def test_no_success_gives_zero(trajs, method):
    trajs = [
        dataclasses.replace(
            t,
            success=False,
            steps=[dataclasses.replace(s, reward=0.0, action_valid=True) for s in t.steps],
        )
        for t in trajs
    ]
    assert not np.any(flat(METHODS[method].estimate(trajs)))


# -- robustness, equivariance, locality ------------------------------------------------------------
CONFIGS = [
    GRPOConfig(),
    GRPOConfig(episode_norm="cross_steps", penalty_scope="step", ddof=0),
    GiGPOConfig(),
    GiGPOConfig(norm="mean", episode_norm="cross_steps"),
    GraphGPOConfig(),
    GraphGPOConfig(reward_convention="reference", zero_graph_adv_if_no_success=False),
    RTMCConfig(),
    RTMCConfig(
        alpha=0.0, prior="mean_return", visit_mode="every_visit", filter_uniform_groups=False
    ),
]
ESTIMATE = {
    GRPOConfig: METHODS["grpo"].estimate,
    GiGPOConfig: METHODS["gigpo"].estimate,
    GraphGPOConfig: METHODS["graphgpo"].estimate,
    RTMCConfig: METHODS["rtmc"].estimate,
}


@FAST
@given(groups(max_groups=3, max_size=4), st.sampled_from(CONFIGS))
def test_finite_shapes_and_permutation_equivariance(trajs, config):
    estimate = ESTIMATE[type(config)]
    out = estimate(trajs, config)
    assert [len(a) for a in out] == [len(t) for t in trajs]
    assert all(a.dtype == np.float64 and np.all(np.isfinite(a)) for a in out)
    perm = np.random.default_rng(len(trajs)).permutation(len(trajs))
    shuffled = estimate([trajs[i] for i in perm], config)
    for k, i in enumerate(perm):
        np.testing.assert_allclose(shuffled[k], out[i], atol=1e-9)


@FAST
@given(groups(max_groups=1), groups(max_groups=1, alphabet="ABXY"), st.sampled_from(CONFIGS))
def test_other_groups_do_not_change_a_group(a, b, config):
    b = [dataclasses.replace(t, group_id="other") for t in b]
    estimate = ESTIMATE[type(config)]
    alone = estimate(a, config)
    mixed = estimate(a + b, config)
    for x, y in zip(alone, mixed[: len(a)], strict=True):
        np.testing.assert_allclose(x, y, atol=1e-12)


@pytest.mark.parametrize("config", CONFIGS)
def test_edge_inputs(config):
    estimate = ESTIMATE[type(config)]
    assert estimate([], config) == []
    empty = Trajectory("t", "g", [], success=False)
    assert [a.tolist() for a in estimate([empty], config)] == [[]]
    single = flat(estimate([path_traj("AB", True)], config))  # one one-step trajectory
    if getattr(config, "episode_norm", None) == "cross_steps":  # reference: a one-row group keeps R
        assert single[0] == pytest.approx(10.0, rel=1e-5)
    else:
        assert single.tolist() == [0.0]
    all_win = [path_traj("ABG", True), path_traj("ACG", True)]
    assert np.all(np.isfinite(flat(estimate(all_win, config))))


def test_all_success_different_routes_graph_prefers_shorter():
    """All succeed along different paths: A^E = 0 but the shorter route wins."""
    group = [path_traj("ABG", True), path_traj("ACDG", True)]
    adv = METHODS["graphgpo"].estimate(group, GraphGPOConfig())
    assert adv[0][0] > 0 > adv[1][0]


# -- similarity matching ---------------------------------------------------------------------------
def test_similarity_merges_noisy_anchors():
    noisy = [
        path_traj(["room one ad1", "room two"], True),
        path_traj(["room one ad2", "room three"], False),
    ]
    clean = [
        path_traj(["room one", "room two"], True),
        path_traj(["room one", "room three"], False),
    ]
    exact = flat(METHODS["gigpo"].estimate(clean, GiGPOConfig()))
    assert not np.allclose(flat(METHODS["gigpo"].estimate(noisy, GiGPOConfig())), exact)
    np.testing.assert_allclose(
        flat(METHODS["gigpo"].estimate(noisy, GiGPOConfig(similarity_threshold=0.8))), exact
    )
    np.testing.assert_allclose(
        flat(METHODS["graphgpo"].estimate(noisy, GraphGPOConfig(similarity_threshold=0.8))),
        flat(METHODS["graphgpo"].estimate(clean, GraphGPOConfig())),
    )


def test_similarity_raw_state_groups_quirk():
    """Merged states build the graph; with the quirk the step groups stay exact (no shared group)."""
    noisy = [
        path_traj(["room one ad1", "room two"], True),
        path_traj(["room one ad2", "room three"], False),
    ]
    merged = graphgpo.graph_advantages(
        StepBatch.from_trajectories(noisy), GraphGPOConfig(similarity_threshold=0.8)
    )
    quirk = GraphGPOConfig(similarity_threshold=0.8, raw_state_groups=True)
    raw = graphgpo.graph_advantages(StepBatch.from_trajectories(noisy), quirk)
    assert merged[0] > 0 > merged[1] and raw.tolist() == [0.0, 0.0]


def test_similarity_rejects_non_text_keys():
    group = [path_traj("AB", True)]
    group[0].steps[0].state_key = (1, 2)
    with pytest.raises(TypeError, match="text"):
        METHODS["gigpo"].estimate(group, GiGPOConfig(similarity_threshold=0.9))


# -- bad input -------------------------------------------------------------------------------------
def test_bad_inputs_raise_clear_errors():
    t = path_traj("AB", True)
    t.steps[0].reward = math.nan
    with pytest.raises(ValueError, match="finite"):
        METHODS["grpo"].estimate([t])
    with pytest.raises(ValueError, match="episode_norm"):
        GRPOConfig(episode_norm="nope")
    with pytest.raises(ValueError, match="distance_discount"):
        GraphGPOConfig(distance_discount=1.0)
    with pytest.raises(ValueError, match="columns"):
        StepBatch.from_trajectories([path_traj("AB", True)], columns=("states",))


def test_explicit_groups_and_array_keys():
    """Explicit group indices override ``group_id`` (ids may collide); numpy-array keys work."""
    g1 = [path_traj("AB", True, group="same"), path_traj("AC", False, group="same")]
    g2 = [path_traj("AB", False, group="same"), path_traj("AB", False, group="same")]
    for t in g1 + g2:
        for s in t.steps:
            s.state_key = np.frombuffer(s.state_key.encode(), np.uint8)
            s.next_state_key = np.frombuffer(s.next_state_key.encode(), np.uint8)
    batch = StepBatch.from_trajectories(g1 + g2, groups=[0, 0, 1, 1])
    assert batch.n_groups == 2 and batch.state.tolist() == [0, 0, 0, 0]
    adv = gigpo.estimate_batch(batch)
    assert adv[2:].tolist() == [0.0, 0.0] and adv[0] > 0 > adv[1]


def test_assign_advantages_matches_estimate():
    """The registry's in-place route gives every method's ``estimate`` values."""
    group = [path_traj("ABCG", True), path_traj("ABXX", False), path_traj("ACG", True)]
    for name in MODULES:
        expected = flat(METHODS[name].estimate(group))
        assign_advantages([group], name)
        np.testing.assert_allclose([s.advantage for t in group for s in t.steps], expected)


# -- helpers ---------------------------------------------------------------------------------------
@FAST
@given(st.lists(st.lists(st.floats(-10, 10), max_size=6), max_size=6), st.floats(0, 1))
def test_discounted_returns_match_loop(rewards, gamma):
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rewards])]).astype(np.int64)
    expected = []
    for r in rewards:
        acc, out = 0.0, []
        for x in reversed(r):
            acc = x + gamma * acc
            out.append(acc)
        expected.extend(reversed(out))
    got = discounted_returns(np.asarray([x for r in rewards for x in r], float), offsets, gamma)
    np.testing.assert_allclose(got, expected, atol=1e-9)


@FAST
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 10**12)), min_size=1, max_size=40))
def test_dense_codes_are_a_factorisation(rows):
    a, b = (np.asarray(c, np.int64) for c in zip(*rows, strict=True))
    codes, k = dense_codes(a, b)
    assert k == len(set(rows))
    assert sorted(set(codes.tolist())) == list(range(k))
    pairs = {}
    for row, c in zip(rows, codes.tolist(), strict=True):
        assert pairs.setdefault(row, c) == c
    assert len(set(pairs.values())) == k


@FAST
@given(st.lists(st.integers(0, 2**20), max_size=50))
def test_radix_argsort_is_stable_argsort(values):
    x = np.asarray(values, np.int64)
    assert radix_argsort(x).tolist() == np.argsort(x, kind="stable").tolist()


def test_group_zscore_invariants():
    values = np.array([1.0, 2.0, 4.0, 8.0, 5.0])
    groups = np.array([0, 0, 0, 1, 1])
    z = group_zscore(values, groups, 2, eps=0.0)
    assert z[:3].sum() == pytest.approx(0.0) and np.var(z[:3], ddof=1) == pytest.approx(1.0)
    raw = group_zscore(np.array([3.0]), np.array([0]), 1, singleton="raw", eps=0.0)
    assert raw.tolist() == [3.0]


def test_step_batch_from_arrays_matches_trajectories():
    trajs = [path_traj("ABC", True), path_traj("AC", False, group="h")]
    from_trajs = StepBatch.from_trajectories(trajs)
    arrays = StepBatch.from_arrays(
        [2, 1],
        [0, 1],
        [True, False],
        from_trajs.reward,
        from_trajs.state,
        from_trajs.next_state,
        from_trajs.action,
        from_trajs.valid,
    )
    for module in MODULES.values():
        np.testing.assert_array_equal(
            module.estimate_batch(from_trajs), module.estimate_batch(arrays)
        )
    with pytest.raises(ValueError, match="offsets"):
        dataclasses.replace(arrays, offsets=np.array([0, 1, 2]))


def test_step_extras_are_untouched_by_credit():
    step = Step("o", "a", 10.0, state_key="A", next_state_key="B", extras={"logp": [0.1]})
    assign_advantages([[Trajectory("t", "g", [step], success=True)]], "graph")
    assert step.extras == {"logp": [0.1]} and step.advantage == 0.0


# -- building a batch in bulk (docs/credit.md, section 2) ------------------------------------------
PIECES = ["<action>", "</action>", "<ACTION>", "</Action>", "<think>", "</think>", " ", "\t"]
PIECES += ["\n", "up", "Go To", "<", ">", "/", "\x1c", "\x00", "é", "中", "İ", "<a", "</a", "x"]
#: Answers made of tags, white space, ASCII and non-ASCII text (including ``\x00`` and CJK).
TAGGY = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)


@FAST
@given(st.lists(st.tuples(TAGGY | st.integers(0, 3), st.booleans()), max_size=12))
def test_action_signatures_equal_per_step(pairs):
    """The batch path gives :func:`action_signature` of every action without an env key: the text
    itself (stripped; tags are the env's to parse), the value, or the invalid marker."""
    actions = [a for a, _ in pairs]
    valid = [v for _, v in pairs]
    expected = [action_signature(Step("o", a, 0.0, action_valid=v)) for a, v in pairs]
    assert action_signatures(actions, valid) == expected
    assert all(e == INVALID_ACTION for e, v in zip(expected, valid, strict=True) if not v)


KEYS = st.sampled_from(["A", "B", "C", None, 1, 1.0, (1, "A")]) | st.builds(
    lambda v: np.array([v], np.uint8), st.integers(0, 2)
)


@FAST
@given(st.lists(st.lists(st.tuples(KEYS, KEYS), max_size=5), min_size=1, max_size=4))
def test_bulk_codes_equal_a_plain_codebook(paths):
    """State / next-state codes factorise the keys by ``hashable_key`` in one code space (``None``
    always fresh), whatever the signature path and the columns read; unread columns are unique."""
    trajs = [
        Trajectory("t", "g", [Step("o", "a", 0.0, state_key=s, next_state_key=n) for s, n in path])
        for path in paths
    ]
    steps = [s for t in trajs for s in t.steps]
    custom = lambda steps, t: default_signature(steps, t)  # noqa: E731 - the per-step path
    for columns in (("state", "next_state"), ("state",), ("next_state",)):
        for signature in (state_signature, default_signature, custom):
            b = StepBatch.from_trajectories(trajs, signature, columns=columns)
            read = []  # (code, key) of every key the batch read
            if "state" in columns:
                read += zip(b.state.tolist(), [s.state_key for s in steps], strict=True)
                for code, key in zip(b.state.tolist(), [s.state_key for s in steps], strict=True):
                    assert hashable_key(b.state_keys[code]) == hashable_key(key)
            else:
                assert len(set(b.state.tolist())) == b.n_steps
            if "next_state" in columns:
                read += zip(b.next_state.tolist(), [s.next_state_key for s in steps], strict=True)
            else:
                assert len(set(b.next_state.tolist())) == b.n_steps
            for i, (ci, ki) in enumerate(read):
                for cj, kj in read[i + 1 :]:
                    same = ki is not None and kj is not None
                    assert (ci == cj) == (same and hashable_key(ki) == hashable_key(kj))


def test_factorise_and_dense_rank():
    codes, uniq = factorise(["b", "a", "b", None, None, np.zeros(2)])
    assert codes.tolist() == [0, 1, 0, 2, 3, 4] and list(uniq)[:4] == ["b", "a", None, None]
    ranks, values = dense_rank(np.array([10**12, 5, 10**12]))
    assert ranks.tolist() == [1, 0, 1] and values.tolist() == [5, 10**12]


def test_columns_left_out_are_unknown_and_estimates_unchanged():
    group = [path_traj("ABCG", True), path_traj("ABXX", False), path_traj("ACG", True)]
    bare = StepBatch.from_trajectories(group, columns=())
    assert len(set(bare.state.tolist() + bare.next_state.tolist())) == 2 * bare.n_steps
    assert bare.action.tolist() == [0] * bare.n_steps and bare.unit_cost
    full = StepBatch.from_trajectories(group)
    for name, module in MODULES.items():
        np.testing.assert_array_equal(
            flat(METHODS[name].estimate(group)), module.estimate_batch(full)
        )


# -- step costs (docs/credit.md, sections 2 and 5.2) -----------------------------------------------
def brute_weighted(trajs: list[Trajectory]) -> dict:
    """Bellman-Ford on one group (costs from ``Step.cost``), unreachable: d_max + c_max."""
    edges = []
    for t in trajs:
        for k, s in enumerate(t.steps):
            dst = "SUCC" if t.success and k == len(t) - 1 else s.next_state_key
            edges.append((s.state_key, dst, s.cost))
    nodes = {u for u, _, _ in edges} | {v for _, v, _ in edges}
    dist = {v: math.inf for v in nodes}
    if "SUCC" in nodes:
        dist["SUCC"] = 0.0
    for _ in range(len(nodes)):
        for u, v, c in edges:
            dist[u] = min(dist[u], c + dist[v])
    finite = [d for d in dist.values() if d < math.inf]
    fallback = max(finite, default=0.0) + max(c for _, _, c in edges)
    return {v: d if d < math.inf else fallback for v, d in dist.items()}


COSTS = st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0])


@FAST
@given(groups(max_groups=1, max_size=6, min_len=1), st.data())
def test_weighted_distances_match_bellman_ford(trajs, data):
    for t in trajs:
        for s in t.steps:
            s.cost = data.draw(COSTS)
    batch = StepBatch.from_trajectories(trajs)
    graph = graphgpo.build_graph(batch, GraphGPOConfig())
    dist = graphgpo.distances(graph)
    expected = brute_weighted(trajs)
    for i, code in enumerate(batch.state.tolist()):
        assert dist[graph.src[i]] == pytest.approx(expected[batch.state_keys[code]])


@FAST
@given(groups(max_groups=3, max_size=6, min_len=1))
def test_dijkstra_equals_breadth_first_on_unit_costs(trajs):
    graph = graphgpo.build_graph(StepBatch.from_trajectories(trajs), GraphGPOConfig())
    np.testing.assert_array_equal(graphgpo._reverse_dijkstra(graph), graphgpo._reverse_bfs(graph))


@FAST
@given(groups(max_groups=2, max_size=6, min_len=1), st.data(), st.sampled_from([0.2, 0.5, 0.8]))
def test_weighted_monotone_within_source_groups(trajs, data, omega):
    """Proposition 4.1 with costs: a smaller d(s') + c never gets a lower A^G."""
    for t in trajs:
        for s in t.steps:
            s.cost = data.draw(COSTS)
            s.action_valid = True
    cfg = GraphGPOConfig(distance_discount=omega)
    batch = StepBatch.from_trajectories(trajs)
    graph = graphgpo.build_graph(batch, cfg)
    key = graphgpo.distances(graph)[graph.dst] + graph.cost
    adv = graphgpo.graph_advantages(batch, cfg)
    for src in np.unique(graph.src):
        idx = np.flatnonzero(graph.src == src)
        for i in idx:
            for j in idx:
                if key[i] < key[j] - 1e-12:
                    assert adv[i] >= adv[j]


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_invalid_costs_raise(bad):
    t = path_traj("ABC", True, costs=[1.0, bad])
    with pytest.raises(ValueError, match="costs must be finite and > 0"):
        METHODS["graphgpo"].estimate([t])
    with pytest.raises(ValueError, match="costs must be finite and > 0"):
        StepBatch.from_arrays([2], [0], [True], [0.0, 10.0], [0, 1], cost=[1.0, bad])


def test_cost_survives_jsonl_and_old_records_load(tmp_path):
    t = path_traj("ABC", True, costs=[0.5, 2.0])
    path = tmp_path / "run.jsonl"
    write_trajectories(path, [t])
    (back,) = read_trajectories(path)
    assert [s.cost for s in back.steps] == [0.5, 2.0] and back == t
    old = t.to_dict()
    for step in old["steps"]:
        del step["cost"]  # a record written before Step.cost existed
    path.write_text(__import__("json").dumps(old) + "\n")
    (back,) = read_trajectories(path)
    assert [s.cost for s in back.steps] == [1.0, 1.0]


# -- similarity matching: argument order and the success sink (docs/credit.md 5.6, 9.7) -----------
ROOM = (
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 6, a cabinet 5, "
    "a cabinet 4, a cabinet 3, a cabinet 2, a cabinet 1, a coffeemachine 1, a countertop 3, a "
    "countertop 2, a countertop 1, a drawer 3, a drawer 2, a drawer 1, a fridge 1, a garbagecan 1, "
    "a microwave 1, a shelf 3, a shelf 2, a shelf 1, a sinkbasin 1, a stoveburner 4, a stoveburner "
    "3, a toaster 1."
)
ROOM_NO_M = ROOM.replace("room.", "roo.")  # one 'm' fewer
ROOM_MORE_G = ROOM.replace("Looking", "Loooking").replace("quickly", "quickgly")


def test_long_observations_make_the_ratio_order_dependent():
    from difflib import SequenceMatcher

    assert len(ROOM) >= 300
    # the upstream order: SequenceMatcher(None, new_key, representative)
    assert SequenceMatcher(None, ROOM_NO_M, ROOM).ratio() >= 0.95
    assert SequenceMatcher(None, ROOM, ROOM_NO_M).ratio() < 0.95  # the other order disagrees
    assert SequenceMatcher(None, ROOM_MORE_G, ROOM).ratio() < 0.95
    assert SequenceMatcher(None, ROOM, ROOM_MORE_G).ratio() >= 0.95


def test_similarity_follows_the_upstream_argument_order():
    """ROOM comes first, so it is the representative each later key is compared against."""
    group = [
        path_traj([ROOM, "next 1"], True),
        path_traj([ROOM_NO_M, "next 2"], False),
        path_traj([ROOM_MORE_G, "next 3"], False),
    ]
    batch = StepBatch.from_trajectories(group)
    state, _ = similarity_codes(batch, 0.95, include_next=False)
    assert state[0] == state[1] != state[2]
    a_s = gigpo.step_advantages(batch, GiGPOConfig(similarity_threshold=0.95, eps=0.0))
    np.testing.assert_allclose(a_s, [np.sqrt(0.5), -np.sqrt(0.5), 0.0], atol=1e-12)


def test_similarity_never_matches_the_final_observation_of_a_success():
    """The recipe writes 'success' in place of a success's final observation, so that observation
    never becomes a cluster representative: states similar to it are matched among themselves
    (here Y1 ~ F and Y2 ~ F but Y1 !~ Y2, so Y1 and Y2 stay apart)."""
    f, y1, y2 = "abcdefghijklmnopqrst", "XYcdefghijklmnopqrst", "abcdefghijklmnopqrXY"
    group = [
        path_traj(["S", f], True),  # F: the final observation of a success
        path_traj(["S", y1, "Z"], False),
        path_traj(["S", y2, "W"], False),
    ]
    batch = StepBatch.from_trajectories(group)
    cfg = GraphGPOConfig(similarity_threshold=0.9)
    graph = graphgpo.build_graph(batch, cfg)
    assert graph.dst[0] == graph.sinks[0]
    assert graph.src[2] != graph.src[4]  # Y1 and Y2 are different nodes
    merged, _ = similarity_codes(batch, 0.9)  # without the sink mask F would absorb both
    assert merged[2] == merged[4]


def test_a_state_named_success_is_not_the_sink():
    group = [path_traj("AG", True), path_traj(["A", "success", "success"], False)]
    diag = graphgpo.diagnostics(StepBatch.from_trajectories(group), GraphGPOConfig())
    assert diag["next_distance"].tolist() == [0.0, 2.0, 2.0]  # 'success' is a dead end: d_max + 1


def test_every_config_has_a_reference_preset():
    assert RTMCConfig.reference() == RTMCConfig() and RTMCConfig.reference(gamma=1.0).gamma == 1.0
    for config in (GRPOConfig, GiGPOConfig, GraphGPOConfig, RTMCConfig):
        assert isinstance(config.reference(), config)


@FAST
@given(groups(max_groups=3, max_size=5, min_len=1))
def test_rtmc_first_visits_table_and_sort_agree(trajs):
    batch = StepBatch.from_trajectories(trajs)
    sa, n_sa = dense_codes(batch.step_group, batch.state, batch.action)
    table = rtmc._first_visits(batch, sa, n_sa, table=True)
    np.testing.assert_array_equal(table, rtmc._first_visits(batch, sa, n_sa, table=False))
    for t in range(batch.n_trajectories):  # the first occurrence of each code in each rollout
        a, b = batch.offsets[t], batch.offsets[t + 1]
        seen = set()
        for i in range(a, b):
            assert table[i] == (sa[i] not in seen)
            seen.add(sa[i])
