"""SPA (``agentenvs.wrappers.spa``) and the progress estimators (``agentenvs.wrappers.models.progress``).

Golden vectors are worked by hand in docs/spa.md, section 8; the properties are those of
docs/spa.md, section 9. Tolerances: golden vectors 1e-6 (closed form) or 1e-3 (gradient descent);
trained sums: mean squared sum error < 1e-3 and |sum - R| < 0.05 per trajectory.
"""

import time
import warnings

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import (
    ProgressCreditWrapper,
    SPAConfig,
    VectorCreditWrapper,
    assign_advantages,
    credited_groups,
    make_config,
)
from agentenvs.wrappers.models.progress import (
    FeatureProgressEstimator,
    ProgressEstimator,
    TabularProgressEstimator,
    load_estimator,
    make_estimator,
    sum_loss,
)
from agentenvs.wrappers.registry import METHODS
from agentenvs.wrappers.rewards import reward_to_go
from agentenvs.wrappers.spa import SPAState, fuse, gae
from agentenvs.wrappers.state import CreditState

import agentenvs
from agentenvs.core import Step, Trajectory

estimate = METHODS["spa"].estimate  # the registry's one path, bound to spa


class FixedEstimator:
    """A trained estimator that returns given contributions (one array per trajectory, by id)."""

    trained = True

    def __init__(self, table):
        self.table = table

    def contributions(self, trajectories, ends=None):
        return [np.asarray(self.table[t.traj_id], np.float64) for t in trajectories]

    def fit(self, trajectories, targets, ends=None):
        raise AssertionError("a fixed estimator is never fitted")


def fixed(table, **options):
    """A config whose contributions are ``table[traj_id]`` (no online fitting; the paper's
    indicator grounding unless ``options`` say otherwise)."""
    options = {"grounding_mode": "indicator", **options}
    return SPAConfig(estimator=FixedEstimator(table), online=False, **options)


def traj(actions, after, success=False, traj_id="", rewards=None):
    """A trajectory whose step ``t`` led to observation ``after[t]`` (a "Nothing happens." step
    flagged not executed, as the ALFWorld env's ``info["action_executed"]`` does)."""
    obs = ["start", *after[:-1]]
    rewards = rewards or [0.0] * len(actions)
    steps = [Step(o, a, r) for o, a, r in zip(obs, actions, rewards, strict=True)]
    for step, seen in zip(steps, after, strict=True):  # as ALFWorld reports an ignored command
        if seen.startswith("Nothing happens"):
            step.extras["action_executed"] = False
    return Trajectory(
        "t", "g", steps, success=success, traj_id=traj_id, final_observation=after[-1]
    )


# -- golden vectors (docs/spa.md 8.1-8.4) -----------------------------------------------------------
def test_golden_success_trajectory():
    after = [
        "You pick up the bowl 1.",
        "Nothing happens.",
        "You put the bowl 1 in/on the fridge 1.",
    ]
    t = traj(["take", "open", "put"], after, success=True, traj_id="0")
    config = fixed({"0": [0.2, 0.3, 0.5]}, advantage="rewards")
    (r,) = estimate([t], config)
    np.testing.assert_allclose(r, [0.7, 0.3, 1.0], atol=1e-12)
    assert [s.extras["spa"]["grounding"] for s in t.steps] == [1.0, 0.0, 1.0]
    np.testing.assert_allclose(gae(r, 0.99, 0.95), [1.866690, 1.2405, 1.0], atol=1e-6)
    np.testing.assert_allclose(gae(r, 0.99, 1.0), [1.9771, 1.29, 1.0], atol=1e-9)
    values = np.array([0.5, 0.6, 0.8])
    a = gae(r, 0.99, 0.95, values)
    np.testing.assert_allclose(a, [1.433634, 0.680100, 0.2], atol=1e-6)
    np.testing.assert_allclose(a + values, [1.933634, 1.280100, 1.0], atol=1e-6)
    sparse = np.array([0.0, 0.0, 1.0])
    np.testing.assert_allclose(gae(sparse, 0.99, 0.95), [0.88454, 0.9405, 1.0], atol=1e-5)
    np.testing.assert_allclose(gae(sparse, 0.99, 0.95, values), [0.451484, 0.3801, 0.2], atol=1e-6)


def test_golden_failed_trajectory():
    r = fuse(np.array([0.10, -0.05, 0.05, -0.10]), np.array([1.0, 1.0, 0.0, 1.0]))
    np.testing.assert_allclose(r, [0.60, 0.45, 0.05, 0.40], atol=1e-12)
    assert r.sum() == pytest.approx(1.5)  # the grounding caveat: a failure collects reward
    np.testing.assert_allclose(gae(r, 0.99, 0.95), [1.400216, 0.850841, 0.4262, 0.4], atol=1e-6)


def _two_step_task():
    return [traj(list(p), ["o", "o"], traj_id=p) for p in ("gg", "gb", "bg", "bb")]


def test_golden_min_norm_additive():
    trajs = _two_step_task()
    est = TabularProgressEstimator(lr=0.1, iterations=5000)
    report = est.fit(trajs, [1.0, 0.5, 0.5, 0.0])
    c = dict(zip(("gg", "gb", "bg", "bb"), est.contributions(trajs), strict=True))
    np.testing.assert_allclose(c["gb"], [0.5, 0.0], atol=1e-3)
    np.testing.assert_allclose(c["bg"], [0.0, 0.5], atol=1e-3)
    assert report.loss_after < 1e-6 and report.epochs == 5000


def test_golden_min_norm_and_without_history():
    trajs = _two_step_task()
    est = TabularProgressEstimator(lr=0.1, iterations=5000)
    report = est.fit(trajs, [1.0, 0.0, 0.0, 0.0])
    c = dict(zip(("gg", "gb", "bg", "bb"), est.contributions(trajs), strict=True))
    np.testing.assert_allclose(c["gb"], [0.375, -0.125], atol=1e-3)
    np.testing.assert_allclose(c["bg"], [-0.125, 0.375], atol=1e-3)
    np.testing.assert_allclose([c[k].sum() for k in c], [0.75, 0.25, 0.25, -0.25], atol=1e-3)
    assert report.loss_after == pytest.approx(0.0625, abs=1e-3)


def test_golden_min_norm_and_with_history():
    trajs = _two_step_task()
    est = TabularProgressEstimator(lr=0.1, iterations=5000, history=1)
    est.fit(trajs, [1.0, 0.0, 0.0, 0.0])
    c = dict(zip(("gg", "gb", "bg", "bb"), est.contributions(trajs), strict=True))
    np.testing.assert_allclose(c["gg"], [1 / 3, 2 / 3], atol=1e-3)
    np.testing.assert_allclose(c["gb"], [1 / 3, -1 / 3], atol=1e-3)
    np.testing.assert_allclose(c["bg"], [0.0, 0.0], atol=1e-3)
    np.testing.assert_allclose(c["bb"], [0.0, 0.0], atol=1e-3)


def test_golden_potential():
    phi = np.array([0.0, 0.2, 0.5, 1.0])
    c = np.diff(phi)
    np.testing.assert_allclose(reward_to_go(c, 1.0), [1.0, 0.8, 0.5], atol=1e-12)


# -- properties (docs/spa.md 9) ----------------------------------------------------------------------
def _random_group(rng, m=4):
    trajs, table = [], {}
    for i in range(m):
        n = int(rng.integers(1, 6))
        after = [str(rng.choice(["ok", "Nothing happens."])) for _ in range(n)]
        t = traj([f"a{k}" for k in range(n)], after, success=bool(rng.integers(2)), traj_id=str(i))
        c = rng.normal(size=n)
        table[str(i)] = c - c.mean() + float(t.success) / n  # sums exactly to R
        trajs.append(t)
    return trajs, table


def test_redistribution_preserves_outcome_and_grounding_is_additive():
    rng = np.random.default_rng(0)
    for _ in range(20):
        trajs, table = _random_group(rng)
        perfect = fixed(table, beta=0.0, advantage="rewards")
        for t, r in zip(trajs, estimate(trajs, perfect), strict=True):
            assert r.sum() == pytest.approx(float(t.success), abs=1e-9)
        alpha, beta = 0.7, 0.5
        fused = fixed(table, alpha=alpha, beta=beta, advantage="rewards")
        for t, r in zip(trajs, estimate(trajs, fused), strict=True):
            extra = r - alpha * table[t.traj_id]
            assert np.all(np.isclose(extra, 0.0) | np.isclose(extra, beta))
        penalty = fixed(table, grounding_mode="penalty", advantage="rewards")
        for t, r in zip(trajs, estimate(trajs, penalty), strict=True):
            extra = r - table[t.traj_id]
            assert np.all(np.isclose(extra, 0.0) | np.isclose(extra, -0.5))


def test_potential_form_and_gae_identities():
    rng = np.random.default_rng(1)
    for n in (1, 2, 7):
        phi = np.concatenate([[0.0], rng.normal(size=n)])
        np.testing.assert_allclose(reward_to_go(np.diff(phi), 1.0), phi[-1] - phi[:-1], atol=1e-12)
        r = rng.normal(size=n)
        np.testing.assert_allclose(gae(r, 0.9, 1.0), reward_to_go(r, 0.9), atol=1e-12)
        assert gae(r, 1.0, 1.0)[0] == pytest.approx(r.sum())
    assert gae(np.zeros(0), 0.99, 0.95).shape == (0,)


def test_permutation_invariance_across_the_group():
    rng = np.random.default_rng(2)
    trajs, table = _random_group(rng, m=5)
    config = fixed(table)
    base = {t.traj_id: a for t, a in zip(trajs, estimate(trajs, config), strict=True)}
    order = rng.permutation(len(trajs))
    shuffled = [trajs[i] for i in order]
    for t, a in zip(shuffled, estimate(shuffled, config), strict=True):
        np.testing.assert_allclose(a, base[t.traj_id], atol=1e-12)


def test_sources_and_empty_trajectory():
    won = traj(["a", "b"], ["x", "y"], success=True, traj_id="0")
    empty = Trajectory("t", "g", [], traj_id="1")
    for source, expected in (("mean", [0.5, 0.5]), ("sparse", [0.0, 1.0])):
        config = SPAConfig(contribution_source=source, beta=0.0, advantage="rewards")
        out = estimate([won, empty], config)
        np.testing.assert_allclose(out[0], expected)
        assert out[1].shape == (0,)
    (random,) = estimate(
        [won], SPAConfig(contribution_source="random", beta=0.0, advantage="rewards")
    )
    assert np.all((random >= 0) & (random <= 1))
    clipped = fixed({"0": [5.0, -5.0]}, contribution_clip=1.0, advantage="rewards")
    np.testing.assert_allclose(estimate([won], clipped)[0], [1.5, -0.5])


def test_untrained_estimator_falls_back_or_raises():
    won = traj(["a", "b"], ["x", "y"], success=True, traj_id="0")
    config = SPAConfig(estimator="tabular", online=False, beta=0.0, advantage="rewards")
    np.testing.assert_allclose(estimate([won], config)[0], [0.0, 1.0])  # sparse, not random
    assert won.info["credit"]["estimator_fallbacks"] == 1.0
    with pytest.raises(RuntimeError, match="untrained"):
        estimate([won], SPAConfig(estimator="tabular", online=False, untrained="raise"))


def test_config_errors_are_clear():
    with pytest.raises(ValueError, match="outcome"):
        SPAConfig(outcome="score")
    with pytest.raises(ValueError, match="unknown progress estimator"):
        make_config("spa", estimator="nonsense")
    with pytest.raises(ValueError, match="has no option"):
        make_config("spa", judge="oracle")
    with pytest.raises(ValueError, match="segment ends"):
        TabularProgressEstimator().contributions(_two_step_task()[:1], ends=[[0]])
    with pytest.raises(ValueError, match="targets"):
        TabularProgressEstimator().fit(_two_step_task(), [1.0])
    assert isinstance(
        SPAState(make_config("spa", estimator="tabular")).estimator, ProgressEstimator
    )


# -- trained estimators --------------------------------------------------------------------------------
def _toy_task(rng, m=48):
    """Array observations (a one-hot cell), integer actions; R = sum of a fixed table over steps
    (realisable by an additive per-step model)."""
    value = rng.uniform(-0.3, 0.5, size=(4, 3))
    trajs, targets = [], []
    for i in range(m):
        n = int(rng.integers(1, 6))
        cells, actions = rng.integers(4, size=n), rng.integers(3, size=n)
        steps = [
            Step(np.eye(4, dtype=np.float32)[c], int(a), 0.0)
            for c, a in zip(cells, actions, strict=True)
        ]
        trajs.append(Trajectory("t", "g", steps, traj_id=str(i)))
        targets.append(float(value[cells, actions].sum()))
    return trajs, targets


def test_online_refits_continue_for_refit_epochs():
    """The first online fit runs the estimator's own epochs, later ones ``refit_epochs`` passes
    from the current weights (cheap), and the loss keeps falling."""
    trajs, _ = _toy_task(np.random.default_rng(4), m=8)
    config = SPAConfig(estimator_options={"epochs": 40, "seed": 0}, refit_every=1, refit_epochs=3)
    groups = [
        [Trajectory("t", str(g), t.steps, success=k % 2 == 0, traj_id=str(k)) for k, t in
         enumerate(trajs)]
        for g in range(3)
    ]  # fmt: skip
    reports, state = [], CreditState()
    for group in groups:
        assign_advantages([group], "spa", config, state=state)
        reports.append(state.value.buffer.last)
    assert [r.epochs for r in reports] == [40, 3, 3]
    assert reports[1].loss_before > 0 and reports[2].loss_after < reports[1].loss_before
    with pytest.raises(ValueError, match="refit_epochs"):
        SPAConfig(refit_epochs=0)


def test_feature_estimator_sums_regress_to_the_outcome():
    trajs, targets = _toy_task(np.random.default_rng(3), m=32)
    est = FeatureProgressEstimator(epochs=250, lr=2e-2, positions=0, seed=0)
    report = est.fit(trajs, targets)
    sums = np.array([c.sum() for c in est.contributions(trajs)])
    assert report.loss_after == pytest.approx(sum_loss(est.contributions(trajs), targets))
    assert report.loss_after < 1e-3 < report.loss_before
    assert np.max(np.abs(sums - targets)) < 0.05
    segments = [[len(t) - 1] for t in trajs]  # one segment: the sum of its steps (readout "sum")
    whole = est.contributions(trajs, ends=segments)
    np.testing.assert_allclose([w[0] for w in whole], sums, atol=1e-9)


def test_feature_estimator_is_deterministic_and_round_trips(tmp_path):
    trajs, targets = _toy_task(np.random.default_rng(4), m=16)
    runs = []
    for _ in range(2):
        est = FeatureProgressEstimator(epochs=20, batch_size=4, seed=7)
        est.fit(trajs, targets)
        runs.append(np.concatenate(est.contributions(trajs)))
    assert np.array_equal(runs[0], runs[1])  # bit-identical
    est.save(tmp_path / "est.pt")
    again = make_estimator(str(tmp_path / "est.pt"))
    assert again.trained and np.array_equal(np.concatenate(again.contributions(trajs)), runs[1])
    text = [Trajectory("t", "g", [Step("grid", "<action>up</action>", 0.0)])]
    with pytest.raises(ValueError, match="step features"):
        est.contributions(text)  # built for 4 + 16 + 32 values, text gives 256 + 256 + 32


def test_spa_is_deterministic():
    trajs, targets = _toy_task(np.random.default_rng(5), m=8)
    for t, r in zip(trajs, targets, strict=True):
        t.steps[-1].reward = r
    runs = []
    for _ in range(2):
        config = SPAConfig(outcome="return", estimator_options={"epochs": 10})
        copies = [Trajectory.from_dict(t.to_dict()) for t in trajs]
        assign_advantages([copies], "spa", config)
        runs.append(np.concatenate([c.advantages for c in copies]))
    assert np.array_equal(runs[0], runs[1])


# -- the HF estimator (tiny model) ---------------------------------------------------------------------
def _text_task(rng, m):
    words = ["go to desk 1", "take mug 1", "open drawer 2", "look"]
    trajs, targets = [], []
    for i in range(m):
        n = int(rng.integers(1, 5))
        acts = [words[int(k)] for k in rng.integers(4, size=n)]
        steps = [Step(f"You are in room {k}.", a, 0.0) for k, a in enumerate(acts)]
        trajs.append(Trajectory("t", "g", steps, traj_id=str(i)))
        targets.append(0.5 * sum(a == "take mug 1" for a in acts))
    return trajs, targets


def test_hf_estimator_is_causal_deterministic_and_truncates(tiny_dir, tmp_path):
    from agentenvs.wrappers.models.progress import HFProgressEstimator

    trajs, targets = _text_task(np.random.default_rng(6), 4)
    est = HFProgressEstimator(tiny_dir, epochs=2, seed=0)
    est.fit(trajs, targets)
    full = traj(["go to desk 1", "take mug 1", "look"], ["a", "b", "c"])
    changed = traj(["go to desk 1", "take mug 1", "open drawer 2 now"], ["a", "b", "z"])
    shorter = traj(["go to desk 1", "take mug 1"], ["a", "b"])
    c_full, c_changed, c_short = est.contributions([full, changed, shorter])
    np.testing.assert_allclose(c_changed[:2], c_full[:2], atol=1e-5)
    np.testing.assert_allclose(c_short, c_full[:2], atol=1e-5)
    assert not np.isclose(c_changed[2], c_full[2])
    (alone,) = est.contributions([full])  # (batched with padding, float32 sums differ slightly)
    est.save(tmp_path / "hf.pt")
    np.testing.assert_array_equal(
        load_estimator(tmp_path / "hf.pt").contributions([full])[0], alone
    )
    same = HFProgressEstimator(tiny_dir, epochs=2, seed=0)
    same.fit(trajs, targets)
    np.testing.assert_array_equal(same.contributions([full])[0], alone)
    ids, index = est.render(full)  # keep the tokens after step 0's read-out only
    short = HFProgressEstimator(tiny_dir, max_tokens=len(ids) - int(index[0]) - 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cut = short.contributions([full])[0]
    assert cut[0] == 0.0 and cut[2] != 0.0 and "left truncation" in str(caught[0].message)


def test_hf_estimator_sum_error_drops_tenfold(tiny_dir):
    from agentenvs.wrappers.models.progress import HFProgressEstimator

    trajs, targets = _text_task(np.random.default_rng(7), 32)
    est = HFProgressEstimator(tiny_dir, epochs=50, batch_size=8, lr=1e-3, seed=0)  # 200 steps
    start = time.perf_counter()
    report = est.fit(trajs, targets)
    assert report.loss_after * 10 < report.loss_before, report
    assert time.perf_counter() - start < 60


# -- wrappers and learners -----------------------------------------------------------------------------
def test_progress_wrapper_trains_online_on_sokoban_discrete():
    config = make_config(
        "spa", outcome="return", refit_every=1, refit_epochs=None,
        estimator_options={"epochs": 30, "hidden": 32, "seed": 0},
    )  # fmt: skip
    env = ProgressCreditWrapper(
        gym.make("agentenvs/SokobanDiscrete-v0", max_steps=10), group_size=4, config=config
    )
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    groups = []
    while len(groups) < 4:
        _, _, terminated, truncated, info = env.step(int(rng.integers(4)))
        if terminated or truncated:
            groups += [info["credit"]] if "credit" in info else []
            env.reset()
    reports = []
    for group in groups:
        credit = group[0].info["credit"]
        assert set(credit) >= {"estimator_loss", "estimator_fit_seconds", "estimator_seconds"}
        reports.append(sum(t.info["credit"]["estimator_loss_before"] for t in group))
        for t in group:
            assert all(
                set(s.extras["spa"]) == {"contribution", "grounding", "reward"} for s in t.steps
            )
            assert np.all(np.isfinite(t.advantages))
    online = env.credit_state.value  # the wrapper's own state, trained on its groups
    assert (
        online.buffer.fits == 4 and online.buffer.last.loss_after < online.buffer.last.loss_before
    )
    buffered = [t for t, _ in online.buffer.items]
    targets = [r for _, r in online.buffer.items]
    zero_loss = float(np.mean(np.square(targets)))  # what an untrained (all-zero) estimator scores
    assert sum_loss(online.estimator.contributions(buffered), targets) < 0.5 * zero_loss


def test_credit_ppo_learns_with_spa():
    pytest.importorskip("stable_baselines3")
    from agentenvs.learners.sb3 import CreditPPO, make_credit_vec_env

    config = make_config("spa", outcome="return", estimator_options={"epochs": 10, "hidden": 16})
    env = make_credit_vec_env(
        "agentenvs/SokobanDiscrete-v0", "spa", n_envs=2, group_size=2, config=config, seed=0,
        env_kwargs={"max_steps": 10},
    )  # fmt: skip
    model = CreditPPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=2, seed=0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(256)
    (shared,) = {id(s): s for s in env.get_attr("credit_state")}.values()  # one for all sub-envs
    assert model.num_timesteps >= 256 and shared.value.buffer.fits > 0
    assert np.all(np.isfinite(model.rollout_buffer.advantages))
    assert any(not (a == b).all() for a, b in zip(before, model.policy.parameters(), strict=True))


def test_vector_credit_wrapper_with_spa_on_text_sokoban():
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env(
            "agentenvs/Sokoban-v0", num_groups=1, group_size=2, action_format="plain", max_steps=6
        ),
        "spa",
        make_config("spa", estimator_options={"epochs": 5, "hash_dim": 64}),
    )
    envs.reset(seed=0)
    groups, rng = [], np.random.default_rng(0)
    moves = ["up", "down", "left", "right", "jump"]
    while len(groups) < 2:
        _, _, _, _, infos = envs.step([moves[i] for i in rng.integers(5, size=2)])
        groups += credited_groups(infos)
    envs.close()
    for group in groups:
        assert len(group) == 2
        for t in group:
            assert np.all(np.isfinite(t.advantages)) and "estimator_seconds" in t.info["credit"]
            invalid = [s.extras["spa"]["grounding"] for s in t.steps if s.action == "jump"]
            assert all(g == 0.0 for g in invalid)
