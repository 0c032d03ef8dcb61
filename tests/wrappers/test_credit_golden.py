"""Golden vectors: the worked examples of docs/credit.md, section 9, where each value is derived by
hand (GraphGPO, GiGPO and GRPO in 9.1-9.6, RTMC in 9.8)."""

from __future__ import annotations

import numpy as np
import pytest
from agentenvs.wrappers import gigpo, graphgpo, grpo, rtmc
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.gigpo import GiGPOConfig
from agentenvs.wrappers.graphgpo import GraphGPOConfig
from agentenvs.wrappers.grpo import GRPOConfig
from agentenvs.wrappers.registry import METHODS
from agentenvs.wrappers.rtmc import RTMCConfig
from credit_builders import path_traj, toy_group

TOL = 1e-6


def flat(arrays):
    return np.concatenate(arrays)


# -- GraphGPO toy group (docs/credit.md 9.1) --------------------------------------------------------
TOY_TOTALS = [
    [0.683451, 1.443376, 1.443376],
    [-0.229420, 0.866025, 0.683451, 1.443376, 1.443376],
    [-1.048600, -2.020726, -0.866025, -0.866025, -0.866025],
    [0.777142, -2.020726, -0.866025, -0.866025, -0.866025],
]
TOY_GRAPH_ADV = [
    [-0.1825742, 0.5773503, 0.5773503],
    [-1.0954451, 0.0, -0.1825742, 0.5773503, 0.5773503],
    [-0.1825742, -1.1547005, 0.0, 0.0, 0.0],
    [1.6431677, -1.1547005, 0.0, 0.0, 0.0],
]


def toy_cfg(**kw):
    return GraphGPOConfig(distance_discount=0.5, eps=0.0, **kw)


def test_toy_distances_and_rewards():
    cfg = toy_cfg()
    batch = StepBatch.from_trajectories(toy_group())
    graph = graphgpo.build_graph(batch, cfg)
    dist = graphgpo.distances(graph)
    by_state = {batch.state_keys[c]: int(dist[graph.src[i]]) for i, c in enumerate(batch.state)}
    assert by_state == {"A": 2, "B": 2, "C": 1, "D": 3, "X": 4}
    assert dist[graph.sinks[0]] == 0
    rewards = graphgpo.graph_rewards(batch, graph, dist, cfg)
    assert rewards[:3].tolist() == [1.25, 2.5, 5.0]
    assert rewards[3:5].tolist() == [0.625, 1.25]
    assert rewards[9] == 0.3125  # tau3 B->X


def test_toy_diagnostics():
    diag = graphgpo.diagnostics(StepBatch.from_trajectories(toy_group()), toy_cfg())
    assert diag["d_max"].tolist() == [3] and diag["has_success"].tolist() == [True]
    assert diag["nodes"].tolist() == [5]  # A, B, C, D, X (the sink is not a state)
    assert diag["distance"][:3].tolist() == [2, 2, 1] and diag["next_distance"][:3].tolist() == [
        2,
        1,
        0,
    ]
    np.testing.assert_allclose(diag["graph_advantage"], flat(TOY_GRAPH_ADV), atol=TOL)
    np.testing.assert_allclose(diag["episode_advantage"][[0, 8]], [0.866025, -0.866025], atol=TOL)
    assert diag["singleton"][4] and not diag["singleton"][0]  # D->A is the only edge out of D


def test_toy_totals_paper():
    out = METHODS["graphgpo"].estimate(toy_group(), toy_cfg())
    assert [len(a) for a in out] == [3, 5, 5, 5]
    np.testing.assert_allclose(flat(out), flat(TOY_TOTALS), atol=TOL)
    batch = StepBatch.from_trajectories(toy_group())
    np.testing.assert_allclose(
        graphgpo.graph_advantages(batch, toy_cfg()), flat(TOY_GRAPH_ADV), atol=TOL
    )


def test_toy_default_eps_and_reference_convention():
    np.testing.assert_allclose(
        flat(METHODS["graphgpo"].estimate(toy_group(), GraphGPOConfig(distance_discount=0.5))),
        flat(TOY_TOTALS),
        atol=1e-5,
    )
    np.testing.assert_allclose(
        flat(METHODS["graphgpo"].estimate(toy_group(), toy_cfg(reward_convention="reference"))),
        flat(TOY_TOTALS),
        atol=TOL,
    )


def test_toy_ddof0():
    batch = StepBatch.from_trajectories(toy_group())
    ag = graphgpo.graph_advantages(batch, toy_cfg(ddof=0))
    np.testing.assert_allclose(ag[[0, 3, 13]], [-0.204124, -1.224745, 1.837117], atol=TOL)
    np.testing.assert_allclose(
        ag[[1, 9, 2, 14]], [0.707107, -1.414214, 0.707107, -1.414214], atol=TOL
    )
    ae = grpo.episode_advantages(batch, toy_cfg(ddof=0))
    np.testing.assert_allclose(ae, [1.0] * 8 + [-1.0] * 10, atol=TOL)


def test_toy_cross_steps():
    out = flat(METHODS["graphgpo"].estimate(toy_group(), toy_cfg(episode_norm="cross_steps")))
    np.testing.assert_allclose(
        out[[0, 3, 13, 9, 10]], [0.903960, -0.008911, 0.773941, -2.023928, -0.869227], atol=TOL
    )
    ae = METHODS["grpo"].estimate(toy_group(), GRPOConfig(episode_norm="cross_steps", eps=0.0))
    np.testing.assert_allclose(flat(ae), [1.086534] * 8 + [-0.869227] * 10, atol=TOL)


# -- the paper's figure example (docs/credit.md 9.2) ------------------------------------------------
def fig2_group():
    return [
        path_traj(["s1", "s21", "s2", "s41", "s2", "G"], True),
        path_traj(["s1", "s2", "s32"], False),
    ]


def test_paper_figure_example():
    cfg = GraphGPOConfig(distance_discount=0.1, eps=0.0)
    out = METHODS["graphgpo"].estimate(fig2_group(), cfg)
    np.testing.assert_allclose(out[0], [0.0, 0.707107, 0.137611, 0.707107, 1.861772], atol=TOL)
    np.testing.assert_allclose(out[1], [0.0, -1.292276], atol=TOL)
    batch = StepBatch.from_trajectories(fig2_group())
    ag = graphgpo.graph_advantages(batch, cfg)
    np.testing.assert_allclose(
        ag, [-0.707107, 0.0, -0.569495, 0.0, 1.154665, 0.707107, -0.585170], atol=TOL
    )
    ae = grpo.episode_advantages(batch, GRPOConfig(episode_norm="cross_steps", eps=0.0))
    np.testing.assert_allclose(ae, [0.585540] * 5 + [-1.463850] * 2, atol=TOL)


# -- GiGPO on the toy group (docs/credit.md 9.3) ----------------------------------------------------
GIGPO_TOTALS = [
    [1.655428, 1.443376, 1.443376],
    [1.471956, 0.866025, 1.655428, 1.443376, 1.443376],
    [-1.958393, -2.020726, -0.866025, -0.866025, -0.866025],
    [-1.958393, -2.020726, -0.866025, -0.866025, -0.866025],
]


def test_gigpo_toy():
    out = METHODS["gigpo"].estimate(toy_group(), GiGPOConfig(gamma=0.95, eps=0.0))
    np.testing.assert_allclose(flat(out), flat(GIGPO_TOTALS), atol=TOL)
    batch = StepBatch.from_trajectories(toy_group())
    ret = gigpo.step_returns(batch, GiGPOConfig())
    np.testing.assert_allclose(
        ret[:8], [9.025, 9.5, 10, 8.1450625, 8.57375, 9.025, 9.5, 10], atol=1e-12
    )
    a_s = gigpo.step_advantages(batch, GiGPOConfig(eps=0.0))
    np.testing.assert_allclose(
        a_s[[0, 3, 5, 8, 13]], [0.789403, 0.605930, 0.789403, -1.092368, -1.092368], atol=TOL
    )
    np.testing.assert_allclose(
        flat(METHODS["gigpo"].estimate(toy_group())), flat(GIGPO_TOTALS), atol=1e-5
    )


def test_gigpo_mean_norm():
    cfg = GiGPOConfig(norm="mean", eps=0.0)
    batch = StepBatch.from_trajectories(toy_group())
    a_s = gigpo.step_advantages(batch, cfg)
    np.testing.assert_allclose(
        a_s[[0, 3, 5, 8, 13]], [3.785988, 2.906050, 3.785988, -5.239013, -5.239013], atol=TOL
    )
    np.testing.assert_allclose(a_s[[1, 6, 9]], [3.166667, 3.166667, -6.333333], atol=TOL)
    np.testing.assert_allclose(a_s[[2, 7, 14]], [3.333333, 3.333333, -6.666667], atol=TOL)
    total = gigpo.estimate_batch(batch, cfg)
    np.testing.assert_allclose(total[[0, 14]], [8.785988, -11.666667], atol=TOL)


def test_graph_and_gigpo_disagree_on_detour_and_shortcut():
    """GiGPO rewards tau2's detour and punishes tau4's shortcut; GraphGPO does the reverse."""
    gi = METHODS["gigpo"].estimate(toy_group(), GiGPOConfig())
    gr = METHODS["graphgpo"].estimate(toy_group(), toy_cfg())
    assert gi[1][0] > 0 > gr[1][0]
    assert gi[3][0] < 0 < gr[3][0]


# -- reference preset and an invalid action (docs/credit.md 8 and 9.4) ------------------------------
def test_reference_preset():
    cfg = GraphGPOConfig.reference(distance_discount=0.5, eps=0.0)
    assert (cfg.episode_norm, cfg.penalty_scope, cfg.reward_convention) == (
        "cross_steps",
        "step",
        "reference",
    )
    assert (
        not cfg.zero_graph_adv_if_no_success
        and cfg.raw_state_groups
        and cfg.distance_discount == 0.5
    )
    assert (
        GiGPOConfig.reference().episode_norm == "cross_steps"
        and GiGPOConfig.reference().gamma == 0.95
    )


def test_invalid_reference_semantics():
    cfg = GraphGPOConfig.reference(distance_discount=0.5, eps=0.0)
    batch = StepBatch.from_trajectories(toy_group(invalid_tau3_t3=True))
    ag = graphgpo.graph_advantages(batch, cfg)
    x_steps = [10, 11, 12, 15, 16, 17]
    np.testing.assert_allclose(
        ag[x_steps], [-2.041241, 0.408248, 0.408248, 0.408248, 0.408248, 0.408248], atol=TOL
    )
    ae = grpo.episode_advantages(batch, cfg)
    np.testing.assert_allclose(ae[10], -0.886802, atol=TOL)
    np.testing.assert_allclose(ae[[8, 9, 11, 12, 13]], [-0.867264] * 5, atol=TOL)
    np.testing.assert_allclose(ae[:8], [1.086523] * 8, atol=TOL)
    np.testing.assert_allclose(graphgpo.estimate_batch(batch, cfg)[10], -2.928044, atol=TOL)


def test_invalid_paper_semantics():
    cfg = toy_cfg()
    batch = StepBatch.from_trajectories(toy_group(invalid_tau3_t3=True))
    ag = graphgpo.graph_advantages(batch, cfg)
    np.testing.assert_allclose(ag[[10, 11]], [-2.041241, 0.408248], atol=TOL)
    ae = grpo.episode_advantages(batch, cfg)
    np.testing.assert_allclose(
        ae[[0, 3, 8, 13]], [0.866004, 0.866004, -0.874621, -0.857387], atol=TOL
    )


def test_invalid_penalty_off_graph():
    batch = StepBatch.from_trajectories(toy_group(invalid_tau3_t3=True))
    ag = graphgpo.graph_advantages(batch, toy_cfg(invalid_penalty_on_graph=False))
    np.testing.assert_allclose(ag, flat(TOY_GRAPH_ADV), atol=TOL)


# -- no success (docs/credit.md 9.5) ----------------------------------------------------------------
@pytest.mark.parametrize("zero_flag", [True, False])
def test_no_success_group(zero_flag):
    group = [path_traj("ABC", False), path_traj("ACC", False)]
    out = METHODS["graphgpo"].estimate(
        group, GraphGPOConfig(zero_graph_adv_if_no_success=zero_flag)
    )
    assert flat(out).tolist() == [0.0] * 4


# -- non-unit step costs (docs/credit.md 9.6) -------------------------------------------------------
def cost_group():
    """tau1 A-(1)->B-(1)->G, tau2 A-(3)->C-(1)->G, tau3 A-(0.5)->D-(1)->D (failed); costs in ()."""
    return [
        path_traj("ABG", True, costs=[1, 1]),
        path_traj("ACG", True, costs=[3, 1]),
        path_traj("ADD", False, costs=[0.5, 1]),
    ]


def test_weighted_distances_and_rewards():
    cfg = GraphGPOConfig(distance_discount=0.5, eps=0.0)
    batch = StepBatch.from_trajectories(cost_group())
    assert not batch.unit_cost and batch.cost.tolist() == [1, 1, 3, 1, 0.5, 1]
    graph = graphgpo.build_graph(batch, cfg)
    dist = graphgpo.distances(graph)
    by_state = {batch.state_keys[c]: float(dist[graph.src[i]]) for i, c in enumerate(batch.state)}
    # d(B) = d(C) = 1, d(A) = min(1 + 1, 3 + 1, 0.5 + inf) = 2; D: d_max + c_max = 2 + 3
    assert by_state == {"A": 2.0, "B": 1.0, "C": 1.0, "D": 5.0}
    rewards = graphgpo.graph_rewards(batch, graph, dist, cfg)
    np.testing.assert_allclose(
        rewards, [2.5, 5.0, 0.625, 5.0, 10 * 0.5**5.5, 10 * 0.5**6], rtol=1e-12
    )
    ag = graphgpo.graph_advantages(batch, cfg)
    np.testing.assert_allclose(ag, [1.1386562, 0, -0.4032062, 0, -0.7354501, 0], atol=TOL)
    out = METHODS["graphgpo"].estimate(cost_group(), cfg)
    np.testing.assert_allclose(
        flat(out), [1.716006, 0.577350, 0.174144, 0.577350, -1.890151, -1.154701], atol=TOL
    )
    reference = GraphGPOConfig(distance_discount=0.5, eps=0.0, reward_convention="reference")
    np.testing.assert_allclose(graphgpo.graph_rewards(batch, graph, dist, reference), 2 * rewards)
    np.testing.assert_allclose(graphgpo.graph_advantages(batch, reference), ag, atol=1e-12)


def test_weighted_dead_end_ranks_below_every_reachable_edge():
    """With d_max + 1 the dead end A->D (exponent 3.5) would beat A->C (exponent 4)."""
    ag = graphgpo.graph_advantages(
        StepBatch.from_trajectories(cost_group()), GraphGPOConfig(distance_discount=0.5)
    )
    assert ag[0] > ag[2] > ag[4]


def test_unit_costs_in_any_form_take_the_unit_path():
    group = toy_group()
    for traj in group:
        for step in traj.steps:
            step.cost = np.float32(1.0)
    batch = StepBatch.from_trajectories(group)
    assert batch.unit_cost and batch.cost.dtype == np.float64
    np.testing.assert_allclose(
        flat(METHODS["graphgpo"].estimate(group, toy_cfg())), flat(TOY_TOTALS), atol=TOL
    )


# -- RTMC (docs/credit.md 9.8) ----------------------------------------------------------------------
def rtmc_group(beta: float = 0.0):
    """Terminal reward 1 on success; ``beta`` on test steps after an edit."""
    return [
        path_traj(["s0", "s1", "s2", "s3", "end"], True, actions="abdf", rewards=[0, 0, beta, 1]),
        path_traj(["s0", "s1", "s2", "end"], True, actions="abf", rewards=[0, 0, 1]),
        path_traj(
            ["s0", "s1", "s2'", "s3'", "end"], False, actions="acef", rewards=[0, 0, beta, 0]
        ),
        path_traj(["s0", "u1", "u2", "u3", "end"], False, actions="gacf", rewards=[0, 0, 0, 0]),
    ]


def test_rtmc_tree_alpha2():
    out = METHODS["rtmc"].estimate(rtmc_group(), RTMCConfig(gamma=1.0, normalize="none"))
    third = 1 / 3
    expected = [
        [1 / 6, 0.4, 0.25, third],
        [1 / 6, 0.4, 0.25],
        [1 / 6, -0.6, -third, -third],
        [-0.5, -third, -third, -third],
    ]
    np.testing.assert_allclose(flat(out), flat(expected), atol=TOL)


def test_rtmc_diagnostics():
    diag = rtmc.diagnostics(StepBatch.from_trajectories(rtmc_group()), RTMCConfig(gamma=1.0))
    assert diag["prior"].tolist() == [0.5] and diag["uniform"].tolist() == [False]
    assert diag["n_sa"][:4].tolist() == [3, 2, 1, 1] and diag["n_s"][:4].tolist() == [4, 3, 2, 1]
    np.testing.assert_allclose(diag["v"][:3], [0.5, 0.6, 0.75], atol=TOL)
    np.testing.assert_allclose(diag["q"][:3], [2 / 3, 1.0, 1.0], atol=TOL)


def test_rtmc_tree_alpha0():
    out = METHODS["rtmc"].estimate(rtmc_group(), RTMCConfig(gamma=1.0, alpha=0.0, normalize="none"))
    expected = [[1 / 6, 1 / 3, 0, 0], [1 / 6, 1 / 3, 0], [1 / 6, -2 / 3, 0, 0], [-0.5, 0, 0, 0]]
    np.testing.assert_allclose(flat(out), flat(expected), atol=TOL)


def test_rtmc_group_std_normalisation():
    out = METHODS["rtmc"].estimate(rtmc_group(), RTMCConfig(gamma=1.0, eps=0.0))
    expected = [
        [0.4841, 1.1617, 0.7261, 0.9681],
        [0.4841, 1.1617, 0.7261],
        [0.4841, -1.7426, -0.9681, -0.9681],
        [-1.4522, -0.9681, -0.9681, -0.9681],
    ]
    np.testing.assert_allclose(flat(out), flat(expected), atol=5e-5)
    raw = flat(METHODS["rtmc"].estimate(rtmc_group(), RTMCConfig(gamma=1.0, normalize="none")))
    assert np.std(raw) == pytest.approx(0.344312, abs=1e-6)


def test_rtmc_discount_penalty():
    out = METHODS["rtmc"].estimate(rtmc_group(0.0), RTMCConfig(gamma=0.9, normalize="none"))
    v0, v1, v2 = (1.539 + 1) / 6, (1.71 + 1) / 5, (1.9 + 1) / 4
    assert out[0][0] == pytest.approx(0.513 - v0, abs=TOL)  # 0.0898
    assert out[3][0] == pytest.approx(-v0, abs=TOL)  # -0.4232
    assert out[0][1] == pytest.approx(0.855 - v1, abs=TOL)  # 0.313
    assert out[2][1] == pytest.approx(-v1, abs=TOL)  # -0.542
    assert out[0][2] == pytest.approx(0.9 - v2, abs=TOL) == pytest.approx(0.175, abs=TOL)
    assert out[1][2] == pytest.approx(1.0 - v2, abs=TOL) == pytest.approx(0.275, abs=TOL)
    assert out[0][3] == pytest.approx(1 / 3, abs=TOL)
    assert out[2][2] == pytest.approx(-1 / 3, abs=TOL)


def test_rtmc_validation_bonus_removes_penalty():
    out = METHODS["rtmc"].estimate(rtmc_group(0.1), RTMCConfig(gamma=0.9, normalize="none"))
    assert out[0][2] == pytest.approx(0.25, abs=TOL) and out[1][2] == pytest.approx(0.25, abs=TOL)
    np.testing.assert_allclose(
        [out[0][0], out[3][0], out[0][1], out[2][1]], [0.1168, -0.4502, 0.322, -0.488], atol=5e-5
    )
    np.testing.assert_allclose(out[2][2:], [-0.2667, -1 / 3], atol=5e-5)
