"""HISR (wrappers/hisr.py, wrappers/segments.py, wrappers/models/hindsight.py): the golden vectors of
docs/hisr.md section 7, the properties of section 8, the scorers, and the method end to end."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import (
    HindsightCreditWrapper,
    HISRConfig,
    VectorCreditWrapper,
    assign_advantages,
    credited_groups,
    make_config,
)
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.hisr import (
    HISRState,
    action_log_importance,
    estimate_batch,
    fuse,
    hisr_rewards,
    modulate,
    place,
    segment_importance,
    trajectory_rewards,
)
from agentenvs.wrappers.models.hindsight import (
    FeatureScorer,
    TurnRequest,
    cloze_messages,
    make_scorer,
    train_hindsight,
    turn_requests,
)
from agentenvs.wrappers.models.progress import TabularProgressEstimator
from agentenvs.wrappers.registry import METHODS
from agentenvs.wrappers.rewards import reward_to_go
from agentenvs.wrappers.segments import (
    FixedLengthSegmenter,
    is_partition,
    make_segmenter,
    parse_segments_text,
    progress_segments,
    repair_segments,
)
from agentenvs.wrappers.state import CreditState

import agentenvs
from agentenvs.core import Step, Trajectory

estimate = METHODS["hisr"].estimate  # the registry's one path, bound to hisr

SEGS_71 = [(0, 0), (1, 2), (3, 3), (4, 4)]
R_HAT_71 = np.array([0.10, 0.20, 0.10, 0.60])
MEAN_LOG_RATIO_71 = np.array([-0.03, 0.06, 0.03, -0.06, 0.0])


# -- helpers ---------------------------------------------------------------------------------------
class TableScorer:
    """A scorer returning prescribed (sum log-prob, units) per (trajectory id, turn)."""

    def __init__(self, view: str, table: dict, unit: str = "token", trained: bool = True):
        self.view, self.unit, self.trained, self.table = view, unit, trained, table
        self.calls = 0

    def score(self, requests):
        self.calls += len(requests)
        return [self.table[(r.trajectory.traj_id, r.turn)] for r in requests]

    def fit(self, requests, **train):
        raise AssertionError("a table scorer is not trained")


class FixedSPRM:
    """A trained progress estimator returning prescribed segment rewards per trajectory id."""

    trained = True

    def __init__(self, table: dict):
        self.table = table

    def contributions(self, trajectories, ends=None):
        out = []
        for t, e in zip(trajectories, ends, strict=True):
            r = np.asarray(self.table[t.traj_id], np.float64)
            assert len(r) == len(e)
            out.append(r)
        return out

    def fit(self, trajectories, targets, ends=None):
        raise AssertionError("not trained here")

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass

    def save(self, path):
        pass


def _traj(tid: str, n: int, success: bool = True, invalid=(), **kw) -> Trajectory:
    steps = [Step(f"o{k}", f"a{k}", 0.0, action_valid=k not in invalid) for k in range(n)]
    return Trajectory(
        "task", "g", steps, success=success, traj_id=tid, final_observation="end", **kw
    )


def _config(segments, r_hat, hind, pol=None, **options) -> HISRConfig:
    """A config with a fixed segmentation, SPRM and scorers (nothing trained online) and the
    paper's indicator grounding unless ``options`` say otherwise."""
    options = {"grounding_mode": "indicator", **options}
    return HISRConfig(
        segmenter=lambda t: segments[t.traj_id],
        sprm=FixedSPRM(r_hat),
        hindsight=TableScorer("hindsight", hind),
        policy_scorer=TableScorer("policy", pol or {}),
        online=False,
        advantage="rewards",
        **options,
    )


def _extras(traj: Trajectory, key: str) -> list:
    return [s.extras["hisr"][key] for s in traj.steps]


# -- golden vectors (docs/hisr.md, section 7) --------------------------------------------------------
def test_golden_71_turn_importance_from_token_log_probs():
    hind = np.array([-1.00, -0.50, -2.00])
    pol = np.array([-0.97, -0.47, -1.97])
    u = action_log_importance(hind.sum(), 3, pol.sum(), 3, beta=0.3)
    assert np.exp(u) == pytest.approx(0.904837, abs=1e-6)
    log_z = action_log_importance(MEAN_LOG_RATIO_71, np.ones(5), np.zeros(5), np.ones(5))
    np.testing.assert_allclose(
        np.exp(log_z), [0.904837, 1.221403, 1.105171, 0.818731, 1.0], atol=1e-6
    )


def test_golden_71_segment_importance_modulation_placement_fusion():
    log_z = MEAN_LOG_RATIO_71 / 0.3
    z_hat = segment_importance(log_z, SEGS_71, "sum")
    np.testing.assert_allclose(z_hat, [0.179171, 0.460695, 0.162120, 0.198014], atol=1e-6)
    r_him = modulate(R_HAT_71, z_hat)
    np.testing.assert_allclose(r_him, [0.073108, 0.375960, 0.066151, 0.484781], atol=1e-6)
    assert r_him.sum() == pytest.approx(1.0)
    end = place(r_him, SEGS_71, 5, "segment_end")
    np.testing.assert_allclose(end, [0.073108, 0, 0.375960, 0.066151, 0.484781], atol=1e-6)
    spread = place(r_him, SEGS_71, 5, "spread_uniform")
    np.testing.assert_allclose(
        spread, [0.073108, 0.187980, 0.187980, 0.066151, 0.484781], atol=1e-6
    )
    g = np.array([1.0, 1.0, 0.0, 1.0, 1.0])
    r = fuse(end, g, 0.3)
    np.testing.assert_allclose(r, [0.351176, 0.3, 0.263172, 0.346306, 0.639347], atol=1e-6)
    assert r.sum() == pytest.approx(1.9)
    # GAE with V = 0 is reward-to-go at gamma * lambda; lambda = 1 gives the discounted returns
    gae = reward_to_go(r, 0.99 * 0.95)
    np.testing.assert_allclose(gae, [1.654439, 1.385714, 1.154400, 0.947611, 0.639347], atol=2e-6)
    ret = reward_to_go(r, 0.99)
    np.testing.assert_allclose(ret, [1.856284, 1.520312, 1.232638, 0.979259, 0.639347], atol=2e-6)


def test_golden_71_neutral_hindsight_sum_is_length_biased_mean_is_neutral():
    zero = np.zeros(5)
    z_sum = segment_importance(zero, SEGS_71, "sum")
    np.testing.assert_allclose(z_sum, [0.2, 0.4, 0.2, 0.2])
    np.testing.assert_allclose(
        modulate(R_HAT_71, z_sum), [0.083333, 0.333333, 0.083333, 0.5], atol=1e-6
    )
    z_mean = segment_importance(zero, SEGS_71, "mean")
    np.testing.assert_allclose(z_mean, [0.25] * 4)
    np.testing.assert_allclose(modulate(R_HAT_71, z_mean), R_HAT_71, atol=1e-15)
    z_real = segment_importance(MEAN_LOG_RATIO_71 / 0.3, SEGS_71, "mean")
    np.testing.assert_allclose(z_real, [0.232794, 0.299287, 0.210641, 0.257277], atol=1e-6)
    np.testing.assert_allclose(
        modulate(R_HAT_71, z_real), [0.090032, 0.231497, 0.081465, 0.597006], atol=1e-6
    )


def test_golden_72_failed_trajectory_keeps_signs_and_mass():
    r_hat = np.array([0.05, -0.10, 0.05])
    z_hat = segment_importance(np.array([0.0, 0.03, -0.03]) / 0.3, [(0, 0), (1, 1), (2, 2)])
    np.testing.assert_allclose(z_hat, [0.332225, 0.367165, 0.300610], atol=1e-6)
    mass = modulate(r_hat, z_hat, "mass_preserving")
    np.testing.assert_allclose(mass, [0.048601, -0.107424, 0.043976], atol=1e-6)
    assert np.abs(mass).sum() == pytest.approx(0.2)
    np.testing.assert_allclose(
        modulate(r_hat, z_hat, "paper_l1"), [0.243003, -0.537119, 0.219878], atol=1e-6
    )
    np.testing.assert_allclose(modulate(r_hat, z_hat, "none"), r_hat * z_hat * 3)


CASE_STUDIES = [  # (R_hat, z_hat, the paper's R_him): docs/hisr.md, section 7.3
    ([0.069, 0.118, 0.132, 0.681], [0.127, 0.392, 0.286, 0.195], [0.039, 0.205, 0.167, 0.589]),
    (
        [0.030, 0.092, 0.045, 0.016, 0.818],
        [0.220, 0.291, 0.240, 0.110, 0.139],
        [0.041, 0.168, 0.068, 0.011, 0.712],
    ),
    (
        [0.415, 0.209, 0.135, 0.113, 0.128],
        [0.125, 0.299, 0.227, 0.120, 0.229],
        [0.275, 0.332, 0.164, 0.073, 0.156],
    ),
    (
        [0.027, 0.065, 0.063, 0.013, 0.832],
        [0.122, 0.146, 0.389, 0.214, 0.129],
        [0.022, 0.064, 0.165, 0.018, 0.730],
    ),
    ([0.039, 0.063, 0.058, 0.841], [0.209, 0.249, 0.409, 0.134], [0.051, 0.097, 0.147, 0.705]),
]


@pytest.mark.parametrize("normalisation", ["paper_l1", "mass_preserving"])
@pytest.mark.parametrize(("r_hat", "z_hat", "r_him"), CASE_STUDIES)
def test_golden_73_case_studies(r_hat, z_hat, r_him, normalisation):
    out = modulate(np.array(r_hat), np.array(z_hat), normalisation)
    np.testing.assert_allclose(out, r_him, atol=0.0025)


def test_golden_73_bowl_to_four_decimals():
    out = modulate(np.array(CASE_STUDIES[0][0]), np.array(CASE_STUDIES[0][1]), "paper_l1")
    np.testing.assert_allclose(out, [0.0388, 0.2051, 0.1674, 0.5887], atol=6e-5)


# -- properties (docs/hisr.md, section 8) ------------------------------------------------------------
def test_case_study_behaviour_end_to_end():
    """The 7.1 trajectory through trajectory_rewards: the endorsed segment gains, the extras
    carry every stage, importance > 1 exactly where hindsight found the turn more likely."""
    t = _traj("a", 5, invalid=(2,))
    hind = {("a", k): (float(v), 1) for k, v in enumerate(MEAN_LOG_RATIO_71)}
    pol = {("a", k): (0.0, 1) for k in range(5)}
    config = _config({"a": SEGS_71}, {"a": R_HAT_71}, hind, pol, policy_source="scorer")
    (r,) = trajectory_rewards([t], config)
    np.testing.assert_allclose(r, [0.351176, 0.3, 0.263172, 0.346306, 0.639347], atol=1e-6)
    assert _extras(t, "segment") == [0, 1, 1, 2, 3]
    assert [z > 1 for z in _extras(t, "importance")] == [False, True, True, False, False]
    assert _extras(t, "modulated")[1] > _extras(t, "segment_reward")[1]
    assert _extras(t, "grounding") == [1.0, 1.0, 0.0, 1.0, 1.0]
    assert _extras(t, "reward") == pytest.approx(r.tolist())
    credit = t.info["credit"]
    assert credit["scorer_tokens"] == 10 and credit["sprm_fallbacks"] == 0


def test_neutral_hindsight_under_mass_preserving():
    t = _traj("a", 5)
    same = {("a", k): (-1.7 * (k + 1), 2) for k in range(5)}
    for aggregation, neutral in (("mean", True), ("sum", False)):
        config = _config(
            {"a": SEGS_71}, {"a": R_HAT_71}, same, same, policy_source="scorer",
            segment_aggregation=aggregation,
        )  # fmt: skip
        trajectory_rewards([t], config)
        seg_rewards = np.array(_extras(t, "modulated"))[[0, 1, 3, 4]]
        assert np.allclose(seg_rewards, R_HAT_71) == neutral
    # equal segments (per turn): neutral whatever the aggregation
    trajectory_rewards([t], _config({"a": SEGS_71}, {"a": np.arange(5.0)}, same, same,
                                    policy_source="scorer", use_segments=False))  # fmt: skip
    np.testing.assert_allclose(_extras(t, "modulated"), np.arange(5.0))


def test_scale_invariance_and_temperature_limits():
    log_z = np.array([0.3, -1.2, 2.0, 0.1])
    segs = [(0, 1), (2, 2), (3, 3)]
    base = segment_importance(log_z, segs)
    np.testing.assert_allclose(segment_importance(log_z + 123.4, segs), base, atol=1e-12)
    ratios = np.array([0.3, -1.2, 2.0, 0.1])
    hot = segment_importance(ratios / 1e9, segs)
    np.testing.assert_allclose(hot, [0.5, 0.25, 0.25], atol=1e-8)  # only length remains
    cold = segment_importance(ratios / 1e-4, segs)
    np.testing.assert_allclose(cold, [0.0, 1.0, 0.0], atol=1e-12)


def test_log_space_is_stable_with_huge_likelihood_gaps():
    t = _traj("a", 3)
    hind = {("a", 0): (-1e6, 1), ("a", 1): (0.0, 1), ("a", 2): (-3e5, 1)}
    pol = {("a", k): (-1e-3, 1) for k in range(3)}
    config = _config({"a": [(0, 0), (1, 1), (2, 2)]}, {"a": [0.2, 0.3, 0.5]}, hind, pol,
                     policy_source="scorer")  # fmt: skip
    (r,) = trajectory_rewards([t], config)
    assert np.all(np.isfinite(r)) and np.all(np.isfinite(_extras(t, "importance")))
    np.testing.assert_allclose(_extras(t, "modulated"), [0.0, 1.0, 0.0], atol=1e-12)
    config = dataclasses.replace(config, logratio_clip=1.0)  # a clamp keeps every turn in play
    trajectory_rewards([t], config)
    assert min(_extras(t, "modulated")) > 0.0


def test_monotonic_in_hindsight_likelihood():
    t = _traj("a", 3)
    pol = {("a", k): (-1.0, 1) for k in range(3)}
    prev = None
    for boost in (-0.5, 0.0, 0.5, 1.0):
        hind = {("a", 0): (-1.0, 1), ("a", 1): (-1.0 + boost, 1), ("a", 2): (-1.0, 1)}
        config = _config({"a": [(0, 0), (1, 1), (2, 2)]}, {"a": [0.2, 0.3, 0.5]}, hind, pol,
                         policy_source="scorer")  # fmt: skip
        trajectory_rewards([t], config)
        now = np.array(_extras(t, "modulated"))
        if prev is not None:
            assert now[1] > prev[1] and now[0] < prev[0] and now[2] < prev[2]
        prev = now


def test_ablation_switches():
    t = _traj("a", 5, invalid=(2,))
    hind = {("a", k): (float(v), 1) for k, v in enumerate(MEAN_LOG_RATIO_71)}
    pol = {("a", k): (0.0, 1) for k in range(5)}
    kw = {"policy_source": "scorer"}
    # w/o HIM: the SPRM's rewards unchanged and the scorers never consulted
    config = _config({"a": SEGS_71}, {"a": R_HAT_71}, hind, pol, use_hindsight=False, **kw)
    trajectory_rewards([t], config)
    assert _extras(t, "modulated") == _extras(t, "segment_reward") and config.hindsight.calls == 0
    # w/o SPR: every turn its own segment (the SPRM is asked for 5 rewards)
    r5 = np.array([0.1, 0.1, 0.1, 0.1, 0.6])
    config = _config({"a": SEGS_71}, {"a": r5}, hind, pol, use_segments=False, **kw)
    trajectory_rewards([t], config)
    assert _extras(t, "segment") == [0, 1, 2, 3, 4]
    # w/o AGS: the reward is the placed modulated reward
    config = _config({"a": SEGS_71}, {"a": R_HAT_71}, hind, pol, use_grounding=False, **kw)
    (r,) = trajectory_rewards([t], config)
    np.testing.assert_allclose(r, [0.073108, 0, 0.375960, 0.066151, 0.484781], atol=1e-6)
    # both off: turn-level rewards fused with grounding (SPA-like, weights 0.7 / 0.3)
    config = _config({"a": SEGS_71}, {"a": r5}, hind, pol, use_segments=False,
                     use_hindsight=False, **kw)  # fmt: skip
    (r,) = trajectory_rewards([t], config)
    np.testing.assert_allclose(r, 0.7 * r5 + 0.3 * np.array([1, 1, 0, 1, 1]))


def test_fusion_bounds_and_mass():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 8))
        segs = repair_segments([tuple(sorted(rng.integers(0, n, 2))) for _ in range(3)], n)
        r_hat = rng.random(len(segs))
        log_z = rng.normal(size=n) * 5
        g = np.ones(n)
        parts = hisr_rewards(r_hat, log_z, segs, g, alpha=0.3)
        assert parts["modulated"].sum() == pytest.approx(r_hat.sum())
        assert parts["reward"].sum() == pytest.approx(0.7 * r_hat.sum() + 0.3 * n)
        assert np.array_equal(hisr_rewards(r_hat, log_z, segs, g, alpha=1.0)["reward"], g)
        no_g = hisr_rewards(r_hat, log_z, segs, g, alpha=0.0)
        np.testing.assert_allclose(no_g["reward"], no_g["progress"])
        signed = rng.normal(size=len(segs))
        out = modulate(signed, parts["z_hat"])
        assert np.abs(out).sum() == pytest.approx(np.abs(signed).sum())
        assert np.all(np.sign(out) == np.sign(signed))
        assert np.abs(modulate(signed, parts["z_hat"], "paper_l1")).sum() == pytest.approx(1.0)


def test_empty_single_step_and_failed_trajectories():
    empty = Trajectory("task", "g", [], success=False, traj_id="e")
    one = _traj("o", 1)
    failed = _traj("f", 3, success=False)
    hind = {("f", k): (-float(k), 1) for k in range(3)}
    pol = {("f", k): (-1.0, 1) for k in range(3)}
    config = _config(
        {"o": [(0, 0)], "f": [(0, 0), (1, 1), (2, 2)]},
        {"o": [1.0], "f": [0.05, -0.10, 0.05]},
        hind,
        pol,
        policy_source="scorer",
    )
    r_empty, r_one, r_failed = trajectory_rewards([empty, one, failed], config)
    assert r_empty.shape == (0,) and "credit" not in empty.info
    assert r_one.tolist() == pytest.approx([0.7 + 0.3])  # one segment: no scoring needed
    assert config.hindsight.calls == 3
    seg_rewards = np.array(_extras(failed, "modulated"))
    assert np.sign(seg_rewards).tolist() == [1, -1, 1]
    assert np.abs(seg_rewards).sum() == pytest.approx(0.2)
    config = dataclasses.replace(config, advantage="group_relative")
    batch = StepBatch.from_trajectories([empty, one, failed], groups=[0, 0, 0], columns=())
    adv = estimate_batch(batch, config)
    assert adv.shape == (4,) and np.all(np.isfinite(adv)) and abs(adv.mean()) < 1e-9


def test_behaviour_log_probs_feed_the_policy_side():
    class Act(str):
        pass

    t = _traj("a", 3)
    for k, step in enumerate(t.steps):
        step.action = Act(step.action)
        step.action.logprobs = np.full(2, -0.5 * (k + 1))
    hind = {("a", k): (-2.0, 2) for k in range(3)}
    config = _config({"a": [(0, 0), (1, 1), (2, 2)]}, {"a": [0.2, 0.3, 0.5]}, hind)
    trajectory_rewards([t], config)
    expected = np.exp((-1.0 - (-0.5 * np.arange(1, 4))) / 0.3)
    np.testing.assert_allclose(_extras(t, "importance"), expected)
    assert config.policy_scorer.calls == 0
    config.hindsight.unit = "class"  # class-level hindsight: behaviour tokens do not compare
    with pytest.raises(ValueError, match="same kind"):
        trajectory_rewards([t], config)
    config = dataclasses.replace(config, policy_source="behaviour")
    with pytest.raises(ValueError, match="carry no logprobs"):
        trajectory_rewards([_traj("a", 3)], config)


def test_untrained_models_fall_back_openly():
    g = [_traj(str(i), 4, success=i % 2 == 0) for i in range(4)]
    config = HISRConfig(online=False, advantage="rewards", grounding_mode="indicator")
    rewards = trajectory_rewards(g, config)
    for t, r in zip(g, rewards, strict=True):
        assert t.info["credit"]["sprm_fallbacks"] == 1
        # the whole outcome on the last segment, no modulation
        assert _extras(t, "importance") == [1.0] * 4
        np.testing.assert_allclose(r, [0.3, 0.3, 0.3, 0.3 + 0.7 * t.success])


def test_bad_configs_and_batches_fail_clearly():
    for bad in ({"beta": 0}, {"alpha": 1.5}, {"normalisation": "l2"}, {"placement": "x"},
                {"segmenter": "gpt"}, {"hindsight": "nonsense"}, {"refit_every": 0},
                {"segment_aggregation": "max"}):  # fmt: skip
        with pytest.raises(ValueError):
            make_config("hisr", **bad)
    with pytest.raises(ValueError, match="has no option"):
        make_config("hisr", judge="oracle")
    batch = StepBatch.from_arrays(
        lengths=[1], traj_group=[0], success=[True], reward=[1.0], state=[0], next_state=[1],
        action=[0],
    )  # fmt: skip
    with pytest.raises(ValueError, match="trajectories"):
        estimate_batch(batch, HISRConfig())
    with pytest.raises(ValueError, match="finite"):
        action_log_importance(np.array([np.nan]), [1], np.array([0.0]), [1])


# -- segmentation --------------------------------------------------------------------------------------
def test_repair_always_gives_a_partition():
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(0, 9))
        raw = [tuple(int(x) for x in rng.integers(-2, n + 3, int(rng.integers(1, 3))))
               for _ in range(int(rng.integers(0, 5)))]  # fmt: skip
        assert is_partition(repair_segments(raw, n), n), raw
    assert repair_segments([(0, 1), (2, 3)], 4) == [(0, 1), (2, 3)]  # a partition is kept
    assert repair_segments([(2, 3)], 4) == [(0, 3)]  # a leading gap joins the first segment
    assert repair_segments(None, 3) == [(0, 0), (1, 1), (2, 2)]


def test_segmenters():
    t = Trajectory("t", "g", [Step("o", "a", 0.0, progress=p) for p in (0, 0.2, -0.1, 0, 0.3)])
    assert progress_segments(t) == [(0, 1), (2, 4)]
    assert progress_segments(_traj("a", 3)) == [(0, 0), (1, 1), (2, 2)]  # no progress reported
    assert make_segmenter("fixed:2")(t) == FixedLengthSegmenter(2)(t) == [(0, 1), (2, 3), (4, 4)]
    answer = "Turn 4 starts a new stage.\nThe segmented results are: [(1, 3), (4), (5, 5)]"
    assert repair_segments(parse_segments_text(answer), 5) == [(0, 2), (3, 3), (4, 4)]
    with pytest.raises(ValueError):
        FixedLengthSegmenter(0)


# -- scorers -----------------------------------------------------------------------------------------
@pytest.mark.usefixtures("one_torch_thread")
def test_feature_hindsight_favours_the_key_action_in_successes():
    """docs/hisr.md section 8 (hindsight sanity): the outcome is decided by the first action
    ("key" wins, "miss" loses); the second action is noise. Trained on outcome-conditioned turns,
    the hindsight model gives "key" a higher log-ratio in successes than the noise action."""
    rng = np.random.default_rng(0)
    trajs = []
    for i in range(64):
        first = "key" if rng.random() < 0.5 else "miss"
        steps = [Step("start", first, 0.0), Step("middle", str(rng.choice(["l", "r"])), 0.0)]
        trajs.append(Trajectory("t", "g", steps, success=first == "key", final_observation="end",
                                traj_id=str(i)))  # fmt: skip
    hind, pol = FeatureScorer("hindsight", lr=0.05), FeatureScorer("policy", lr=0.05)
    report = train_hindsight(hind, [trajs], epochs=200)
    train_hindsight(pol, [trajs], epochs=200)
    assert report.loss_after < report.loss_before
    wins = [t for t in trajs if t.success]
    reqs = turn_requests(wins)
    h, p = np.array(hind.score(reqs)), np.array(pol.score(reqs))
    ratio = (h[:, 0] - p[:, 0]).reshape(-1, 2)
    assert ratio[:, 0].mean() > ratio[:, 1].mean() + 0.3
    state = hind.state_dict()
    again = FeatureScorer("hindsight")
    again.load_state_dict(state)
    np.testing.assert_allclose(np.array(again.score(reqs)), h)


@pytest.mark.usefixtures("one_torch_thread")
def test_hf_scorer_matches_a_manual_token_by_token_computation(tiny_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t = Trajectory("t", "g", [Step("room one", "<action>up</action>", 0.0),
                              Step("room two", "<action>left</action>", 1.0)],
                   success=True, final_observation="solved")  # fmt: skip
    for view in ("hindsight", "policy"):
        scorer = make_scorer(f"hf:{tiny_dir}", view)
        (total, n), = scorer.score([TurnRequest(t, 1, 1.0)])  # fmt: skip
        tok = AutoTokenizer.from_pretrained(str(tiny_dir))
        model = AutoModelForCausalLM.from_pretrained(str(tiny_dir)).eval()
        context = scorer._context_ids(TurnRequest(t, 1, 1.0))
        target = tok.encode("<action>left</action>", add_special_tokens=False)
        manual = 0.0
        with torch.no_grad():
            for j, token in enumerate(target):
                logits = model(torch.tensor([context + target[:j]])).logits[0, -1]
                manual += float(torch.log_softmax(logits, -1)[token])
        assert n == len(target) and np.isfinite(total)
        assert total == pytest.approx(manual, abs=1e-4)
    text = tok.decode(scorer._context_ids(TurnRequest(t, 0, 1.0)))
    assert "room one" in text and "room two" not in text and "<action>" not in text  # the past
    cloze = [m["content"] for m in cloze_messages(TurnRequest(t, 0, 0.0))]
    assert cloze.count("___") == 1 and "<action>up</action>" not in cloze
    assert "reward for the above trajectory is: 0.0" in cloze[-1]


@pytest.mark.usefixtures("one_torch_thread")
def test_train_hindsight_lowers_the_cloze_loss_of_the_tiny_model(tiny_dir):
    trajs = [Trajectory("t", "g", [Step(f"room {i}", f"<action>{a}</action>", 0.0)
                                   for a in ("up", "left")], success=i % 2 == 0,
                        final_observation="end") for i in range(16)]  # fmt: skip
    scorer = make_scorer(f"hf:{tiny_dir}", "hindsight")
    scorer.batch_size = 16
    report = train_hindsight(scorer, [trajs], epochs=4, lr=5e-3)
    assert report.loss_after < 0.8 * report.loss_before


# -- the method end to end -----------------------------------------------------------------------------
def test_registered_and_named():
    assert METHODS["hisr"].wrapper is HindsightCreditWrapper
    assert METHODS["hisr"].config is HISRConfig
    config = make_config("hisr", segmenter="per_turn", sprm="tabular", beta=0.5)
    assert config.beta == 0.5 and isinstance(HISRState(config).sprm, TabularProgressEstimator)


@pytest.mark.usefixtures("one_torch_thread")
def test_wrapper_on_text_sokoban_trains_online_and_credits():
    config = make_config("hisr", refit_every=1)
    state = CreditState()
    state.get(METHODS["hisr"], config).sprm.options["epochs"] = 50  # the state holds the model
    env = HindsightCreditWrapper(
        gym.make("agentenvs/Sokoban-v0", action_format="plain", max_steps=5), group_size=3,
        config=config, state=state,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    groups = []
    while len(groups) < 3:
        _, _, term, trunc, info = env.step(str(rng.choice(["up", "down", "left", "right"])))
        if term or trunc:
            groups += [info["credit"]] if "credit" in info else []
            env.reset()
    assert groups[0][0].info["credit"]["sprm_fallbacks"] == 1
    assert "hindsight_loss" in groups[0][0].info["credit"]  # the first group's refit
    last = groups[-1]
    assert all(t.info["credit"]["sprm_fallbacks"] == 0 for t in last)
    for t in last:
        assert np.all(np.isfinite(t.advantages))
        assert {"segment", "importance", "segment_reward", "modulated", "grounding", "reward"} \
            <= set(t.steps[0].extras["hisr"])  # fmt: skip
    modulated = [t for t in last if len({s.extras["hisr"]["segment"] for s in t.steps}) > 1]
    assert any(t.info["credit"]["scorer_tokens"] > 0 for t in modulated)
    assert env.credit_state is state and state.value.trainer.fits == 3


def test_vector_wrapper_and_assign_advantages_agree():
    config = make_config("hisr", online=False)
    envs = VectorCreditWrapper(agentenvs.make_group_vec_env(
        "agentenvs/Sokoban-v0", num_groups=2, group_size=2, action_format="plain", max_steps=4),
        "hisr", config)  # fmt: skip
    envs.reset(seed=0)
    groups = []
    while len(groups) < 2:
        *_, infos = envs.step(["up", "left", "down", "right"])
        groups += credited_groups(infos)
    envs.close()
    for g in groups:
        before = [t.advantages.copy() for t in g]
        assign_advantages([g], "hisr", config)
        for t, a in zip(g, before, strict=True):
            np.testing.assert_allclose(t.advantages, a)
        np.testing.assert_allclose(
            np.concatenate(estimate(g, config)), np.concatenate(before), atol=1e-12
        )


@pytest.mark.usefixtures("one_torch_thread")
def test_credit_ppo_learns_with_hisr():
    pytest.importorskip("stable_baselines3")
    from agentenvs.learners.sb3 import CreditPPO, make_credit_vec_env

    config = make_config("hisr", refit_every=2, buffer_size=64)
    env = make_credit_vec_env("agentenvs/SokobanDiscrete-v0", "hisr", n_envs=2, group_size=4,
                              seed=0, config=config)  # fmt: skip
    model = CreditPPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=2, seed=0)
    model.learn(384)
    (shared,) = {id(s): s for s in env.get_attr("credit_state")}.values()  # one for all sub-envs
    assert model.num_timesteps >= 384 and shared.value.trainer.fits >= 1
    assert np.isfinite(model.logger.name_to_value["train/loss"])
