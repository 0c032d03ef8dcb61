"""The papers' pipeline (wrappers/offline.py): rollouts into the store, offline fits on stored
groups, save/load, frozen use (docs/spa.md and docs/hisr.md, "The paper pipeline")."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch")

from agentenvs.wrappers import CreditWrapper  # noqa: E402
from agentenvs.wrappers.models.progress import make_estimator, sum_loss  # noqa: E402
from agentenvs.wrappers.offline import (  # noqa: E402
    HISRModels,
    SPAModels,
    collect_rollouts,
    fit_offline,
    frozen_config,
    load_models,
    save_models,
    step_rewards,
)
from agentenvs.wrappers.spa import outcomes  # noqa: E402

import agentenvs  # noqa: E402, F401
from agentenvs.core import TrajectoryStore, read_groups  # noqa: E402

ENV_ID = "agentenvs/SokobanDiscrete-v0"
TASKS = [f"seed-{i}" for i in range(12)]


class _Random:
    """A sampling policy with SB3's ``predict``."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def predict(self, obs: np.ndarray, deterministic: bool = False):
        return self.rng.integers(4, size=len(obs)), None


def _make_env() -> gym.Env:
    return gym.make(ENV_ID)


@pytest.fixture(scope="module")
def store_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    with TrajectoryStore(root, run="reference") as store:
        collect_rollouts(_make_env, _Random(), TASKS, m=6, store=store)
    return root


@pytest.fixture(scope="module")
def fitted(store_root) -> dict[str, SPAModels | HISRModels]:
    """Both methods fitted once on the stored rollouts (short fits: 40 epochs)."""
    groups = list(read_groups(store_root, run="reference"))
    return {
        "spa": fit_offline("spa", groups, epochs=40),
        "hisr": fit_offline("hisr", groups, sprm=make_estimator("features", epochs=40), epochs=40),
    }


def test_collect_stores_m_rollouts_per_task(store_root) -> None:
    groups = list(read_groups(store_root, run="reference"))
    assert [g.task_id for g in groups] == TASKS
    assert all(len(g.trajectories) == 6 and g.method == "reference" for g in groups)
    traj = groups[0].trajectories[0]
    assert traj.steps[0].observation.shape == (144,) and traj.group_id == "seed-0#0"
    assert 0 < np.mean([t.success for g in groups for t in g.trajectories]) < 1


def test_collect_rejects_m_below_one() -> None:
    with pytest.raises(ValueError, match="m must be"):
        collect_rollouts(_make_env, _Random(), TASKS, m=0)


@pytest.mark.parametrize("method", ["spa", "hisr"])
def test_fit_save_load_and_frozen_use(method: str, fitted, store_root, tmp_path) -> None:
    models = fitted[method]
    trajs = [t for g in read_groups(store_root, run="reference") for t in g.trajectories]
    report = models.report if method == "spa" else models.reports["sprm"]
    assert report.loss_after < 0.5 * report.loss_before  # the sum-of-contributions MSE
    if method == "spa":
        found = models.estimator.contributions(trajs)
        assert sum_loss(found, outcomes(trajs)) == pytest.approx(report.loss_after)
    else:  # the hindsight and policy scorers were fitted on successes and failures alike
        assert models.reports["hindsight"].loss_after < models.reports["hindsight"].loss_before
        assert models.reports["policy"].loss_after < models.reports["policy"].loss_before
    before = np.concatenate(step_rewards(trajs, frozen_config(models)))
    save_models(models, tmp_path / "models.pt")
    again = load_models(tmp_path / "models.pt")
    assert type(again) is type(models) and again.outcome == models.outcome
    config = frozen_config(again)
    assert not config.online and config.advantage == "rewards"
    after = np.concatenate(step_rewards(trajs, config))
    np.testing.assert_allclose(after, before, atol=1e-6)
    assert np.abs(after).max() > 0

    # frozen use in the wrapper: the emitted values are the fused rewards, the models never refit
    env = CreditWrapper(_make_env(), method=method, config=config, group_size=4)
    state = _main_model(again).state_dict()
    env.reset(seed=3)
    credited, rng = [], np.random.default_rng(0)
    while len(credited) < 3:
        _, _, terminated, truncated, info = env.step(int(rng.integers(4)))
        if terminated or truncated:
            credited += info.get("credit", [])
            env.reset()
    key = "spa" if method == "spa" else "hisr"
    emitted = [s.advantage for t in credited for s in t.steps]
    assert emitted == [s.extras[key]["reward"] for t in credited for s in t.steps]
    with warnings.catch_warnings():  # rewards need no group: one-episode groups do not warn
        warnings.simplefilter("error")
        CreditWrapper(_make_env(), method=method, config=config, group_size=1)
    now = _main_model(again).state_dict()
    assert now["fits"] == state["fits"] == 1
    assert all(np.array_equal(now[k], state[k]) for k in state if k.startswith("net."))


def _main_model(models: SPAModels | HISRModels):
    """The progress estimator of a fit (SPA's estimator, HISR's SPRM)."""
    return models.estimator if isinstance(models, SPAModels) else models.sprm


def test_hisr_frozen_modulates_with_the_fitted_scorers(fitted, store_root) -> None:
    models = fitted["hisr"]
    trajs = [t for g in read_groups(store_root, run="reference") for t in g.trajectories]
    step_rewards(trajs, frozen_config(models))
    importances = [s.extras["hisr"]["importance"] for t in trajs for s in t.steps]
    assert np.std(importances) > 0  # the hindsight / policy ratio is in use, not the fallback
    assert sum(t.info["credit"]["hindsight_fallbacks"] for t in trajs) == 0


def test_bad_inputs_fail_clearly(tmp_path) -> None:
    with pytest.raises(ValueError, match="offline fits exist"):
        fit_offline("grpo", [])
    with pytest.raises(ValueError, match="at least one trajectory"):
        fit_offline("spa", [])
    (tmp_path / "x.pt").write_bytes(b"")
    import torch

    torch.save({"method": "other"}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="no models saved"):
        load_models(tmp_path / "x.pt")
