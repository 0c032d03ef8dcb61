"""The papers' pipeline for SPA and HISR: rollouts of a reference policy, models fitted offline,
then frozen models that label every step for a learner with its own critic.

SPA and HISR (docs/spa.md and docs/hisr.md, section "The paper pipeline") both (1) warm-start a
policy, (2) collect ``M`` rollouts per training task with it, (3) fit their models once on those
rollouts, (4) label every step with the frozen models and (5) train PPO + GAE with a learned critic
on the fused per-step rewards. This module holds steps 2 to 4:

* :func:`collect_rollouts` - play ``m`` episodes of every task with a policy, as groups, into a
  :class:`~agentenvs.core.TrajectoryStore` (read them back with
  :func:`~agentenvs.core.read_groups`).
* :func:`fit_offline` - fit a method's models on stored groups (:func:`fit_spa`: the progress
  estimator on the sum-of-contributions MSE; :func:`fit_hisr`: the segment reward model on the
  same loss per segment, the hindsight scorer on every turn of successes and failures, the policy
  scorer by behaviour cloning). Returns :class:`SPAModels` or :class:`HISRModels`.
* :func:`save_models` / :func:`load_models` - one ``torch.save`` file per fit.
* :func:`frozen_config` - the method's config with the fitted models, ``online=False`` and
  ``advantage="rewards"``: the wrapper emits the fused rewards ``r_t`` as each step's value, which
  :class:`agentenvs.learners.sb3.CreditPPO` turns into advantages by GAE with its critic.
* :func:`step_rewards` - the fused rewards the frozen models give some trajectories.

torch is imported only inside the functions that fit, save or load.

>>> import gymnasium as gym, agentenvs
>>> class Right:  # a policy: SB3's predict(obs_batch, deterministic) -> (actions, state)
...     def predict(self, obs, deterministic=False):
...         return np.full(len(obs), 3), None
>>> groups = collect_rollouts(lambda: gym.make("agentenvs/SokobanDiscrete-v0"), Right(),
...                           ["seed-42"], m=2)
>>> [[len(t.steps) for t in g] for g in groups], groups[0][0].success
([[2, 2]], True)
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from agentenvs.wrappers.grouping import group_id
from agentenvs.wrappers.hisr import HISRConfig, trajectory_rewards
from agentenvs.wrappers.models.fit import FitReport
from agentenvs.wrappers.models.hindsight import FeatureScorer, train_hindsight, trajectory_outcome
from agentenvs.wrappers.models.progress import make_estimator
from agentenvs.wrappers.recorder import EpisodeRecorder
from agentenvs.wrappers.segments import make_segmenter, segment, segment_ends
from agentenvs.wrappers.spa import SPAConfig, estimate_batch, outcomes

from agentenvs.core import Trajectory, TrajectoryStore

__all__ = [
    "collect_rollouts",
    "SPAModels",
    "HISRModels",
    "fit_spa",
    "fit_hisr",
    "fit_offline",
    "save_models",
    "load_models",
    "frozen_config",
    "step_rewards",
]

#: The method the store records for reference-policy rollouts (they carry no credit).
ROLLOUT_METHOD = "reference"


def collect_rollouts(
    make_env: Callable[[], gym.Env],
    policy: Any,
    task_ids: Sequence[str],
    m: int = 10,
    store: TrajectoryStore | None = None,
    *,
    deterministic: bool = False,
) -> list[list[Trajectory]]:
    """Play ``m`` episodes of each task with ``policy`` (its ``m`` episodes in lockstep).

    Args:
        make_env: builds one env whose ``reset(options={"task_id": ...})`` plays a task.
        policy: anything with SB3's ``predict(obs_batch, deterministic=...) -> (actions, _)``;
            sampled actions by default (the papers' exploratory rollouts; an LLM policy samples at
            its temperature).
        task_ids: the training tasks. m: rollouts per task (the papers' M = 10).
        store: gets every group (method ``"reference"``, no iteration); ``None``: none.
        deterministic: greedy actions instead.

    Returns:
        one group per task: ``m`` trajectories with ``group_id = f"{task_id}#{i}"`` (``i`` the
        task's index) and ``traj_id`` the episode index.
    """
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    envs = [make_env() for _ in range(m)]
    groups = []
    try:
        for serial, task in enumerate(task_ids):
            group = _play_group(envs, policy, task, deterministic)
            for j, traj in enumerate(group):
                traj.group_id, traj.traj_id = group_id(task, serial), str(j)
            if store is not None:
                store.append(group, method=ROLLOUT_METHOD)
            groups.append(group)
    finally:
        for env in envs:
            env.close()
    return groups


def _play_group(
    envs: Sequence[gym.Env], policy: Any, task: str, deterministic: bool
) -> list[Trajectory]:
    """One episode of ``task`` per env, stepped together; the trajectories in env order."""
    recorders = [EpisodeRecorder() for _ in envs]
    obs = []
    for env, rec in zip(envs, recorders, strict=True):
        o, info = env.reset(options={"task_id": task})
        rec.begin(o, info)
        obs.append(o)
    done: dict[int, Trajectory] = {}
    while len(done) < len(envs):
        active = [i for i in range(len(envs)) if i not in done]
        actions, _ = policy.predict(np.stack([obs[i] for i in active]), deterministic=deterministic)
        for i, action in zip(active, np.asarray(actions).tolist(), strict=True):
            obs[i], reward, terminated, truncated, info = envs[i].step(action)
            traj = recorders[i].record(action, obs[i], reward, terminated, truncated, info)
            if traj is not None:
                done[i] = traj
    return [done[i] for i in range(len(envs))]


# -- the fitted models -------------------------------------------------------------------------------
@dataclass
class SPAModels:
    """SPA's offline fit: the progress ``estimator`` and its :class:`FitReport` (``report``:
    mean squared error of each trajectory's summed contributions against its outcome, before and
    after), with the ``outcome`` it was fitted to."""

    estimator: Any
    report: FitReport
    outcome: str = "success"
    method: str = "spa"


@dataclass
class HISRModels:
    """HISR's offline fit: the segment reward model ``sprm`` (a progress estimator read per
    segment), the ``hindsight`` scorer (cloze view, fitted on successes and failures) and the
    ``policy_scorer`` (the reference policy by behaviour cloning), with one :class:`FitReport`
    each in ``reports`` (keys ``"sprm"``, ``"hindsight"``, ``"policy"``), the ``segmenter`` spec
    and the ``outcome`` they were fitted with."""

    sprm: Any
    hindsight: Any
    policy_scorer: Any
    reports: dict[str, FitReport]
    segmenter: str = "progress"
    outcome: str = "success"
    method: str = "hisr"


def _trajectories(groups: Sequence[Any]) -> list[Trajectory]:
    """The non-empty trajectories of ``groups`` (lists of trajectories or stored groups)."""
    out = [t for g in groups for t in getattr(g, "trajectories", g) if t.steps]
    if not out:
        raise ValueError("an offline fit needs at least one trajectory with steps")
    return out


def fit_spa(
    groups: Sequence[Any], estimator: Any = "features", outcome: str = "success", **options: Any
) -> SPAModels:
    """Fit SPA's progress estimator once on ``groups`` (lists of trajectories or
    :class:`~agentenvs.core.StoredGroup`): the sum-of-contributions MSE against each trajectory's
    outcome (docs/spa.md, section 3), the estimator's own epochs. ``estimator`` and ``options`` as
    :func:`agentenvs.wrappers.models.progress.make_estimator` (an object is fitted in place)."""
    trajs = _trajectories(groups)
    model = make_estimator(estimator, **options)
    report = model.fit(trajs, outcomes(trajs, outcome).tolist())
    return SPAModels(model, report, outcome)


def fit_hisr(
    groups: Sequence[Any],
    segmenter: str = "progress",
    sprm: Any = "features",
    outcome: str = "success",
    **scorer_options: Any,
) -> HISRModels:
    """Fit HISR's models once on ``groups``: the SPRM on the per-segment sum MSE (segments from
    ``segmenter``), the hindsight :class:`FeatureScorer` on every turn of every trajectory
    (successes and failures, each with its outcome ``R``), and the policy scorer on the same turns
    by behaviour cloning. ``scorer_options`` go to both scorers (``epochs``, ``hidden``, ...)."""
    trajs = _trajectories(groups)
    cut = make_segmenter(segmenter)
    ends = [segment_ends(segment(t, cut)) for t in trajs]
    targets = [trajectory_outcome(t, outcome) for t in trajs]
    model = make_estimator(sprm)
    reports = {"sprm": model.fit(trajs, targets, ends)}
    scorers = {}
    for view in ("hindsight", "policy"):
        scorers[view] = FeatureScorer(view, **scorer_options)
        reports[view] = train_hindsight(scorers[view], [trajs], outcome)
    return HISRModels(model, scorers["hindsight"], scorers["policy"], reports, segmenter, outcome)


def fit_offline(method: str, groups: Sequence[Any], **options: Any) -> SPAModels | HISRModels:
    """:func:`fit_spa` (``method="spa"``) or :func:`fit_hisr` (``"hisr"``) on ``groups``, e.g.
    ``fit_offline("spa", read_groups(root, run="reference"))``."""
    fits: dict[str, Callable[..., SPAModels | HISRModels]] = {"spa": fit_spa, "hisr": fit_hisr}
    if method not in fits:
        raise ValueError(f"offline fits exist for {sorted(fits)}, got {method!r}")
    return fits[method](list(groups), **options)


# -- save and load -----------------------------------------------------------------------------------
def _scorer_state(scorer: FeatureScorer) -> dict[str, Any]:
    options = {k: getattr(scorer, k) for k in ("text_dim", "hidden", "epochs", "lr", "seed")}
    return {"options": json.dumps(options), "state": scorer.state_dict()}


def _scorer_from(saved: dict[str, Any], view: str) -> FeatureScorer:
    scorer = FeatureScorer(view, **json.loads(saved["options"]))
    scorer.load_state_dict(saved["state"])
    return scorer


def _estimator_state(estimator: Any) -> dict[str, Any]:
    """The dict ``estimator.save`` writes (kind, options, state), read back into memory."""
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        estimator.save(Path(tmp) / "estimator.pt")
        return torch.load(Path(tmp) / "estimator.pt", map_location="cpu", weights_only=True)


def _estimator_from(saved: dict[str, Any]) -> Any:
    """The estimator of a dict :func:`_estimator_state` gave."""
    import torch
    from agentenvs.wrappers.models.progress import load_estimator

    with tempfile.TemporaryDirectory() as tmp:
        torch.save(saved, Path(tmp) / "estimator.pt")
        return load_estimator(Path(tmp) / "estimator.pt")


def _report(report: FitReport) -> list[float]:
    return [report.loss_before, report.loss_after, report.epochs, report.seconds]


def save_models(models: SPAModels | HISRModels, path: str | Path) -> None:
    """Write ``models`` (their states, options and fit reports) to ``path`` with ``torch.save``."""
    import torch

    if isinstance(models, SPAModels):
        saved = {"estimator": _estimator_state(models.estimator), "report": _report(models.report)}
    else:
        saved = {
            "sprm": _estimator_state(models.sprm),
            "hindsight": _scorer_state(models.hindsight),
            "policy": _scorer_state(models.policy_scorer),
            "reports": {k: _report(r) for k, r in models.reports.items()},
            "segmenter": models.segmenter,
        }
    torch.save({"method": models.method, "outcome": models.outcome, **saved}, Path(path))


def load_models(path: str | Path) -> SPAModels | HISRModels:
    """The models :func:`save_models` wrote; ``ValueError`` for any other file."""
    import torch

    saved = torch.load(Path(path), map_location="cpu", weights_only=True)
    method = saved.get("method") if isinstance(saved, dict) else None
    if method == "spa":
        before, after, epochs, seconds = saved["report"][:4]
        report = FitReport(before, after, int(epochs), seconds)
        return SPAModels(_estimator_from(saved["estimator"]), report, saved["outcome"])
    if method == "hisr":
        reports = {k: FitReport(r[0], r[1], int(r[2]), r[3]) for k, r in saved["reports"].items()}
        return HISRModels(
            _estimator_from(saved["sprm"]),
            _scorer_from(saved["hindsight"], "hindsight"),
            _scorer_from(saved["policy"], "policy"),
            reports,
            saved["segmenter"],
            saved["outcome"],
        )
    raise ValueError(f"{path} holds no models saved by save_models")


# -- frozen use --------------------------------------------------------------------------------------
def frozen_config(models: SPAModels | HISRModels, **options: Any) -> SPAConfig | HISRConfig:
    """The method's config that labels steps with the fitted ``models`` and never refits them:
    ``online=False``, ``advantage="rewards"`` (the fused rewards, for a learner with a critic),
    the fit's outcome, an untrained model never silently replaced (SPA: ``untrained="raise"``).
    ``options`` override any other field (e.g. ``alpha``, ``beta``, ``grounding_mode``)."""
    common = {"online": False, "advantage": "rewards", "outcome": models.outcome}
    if isinstance(models, SPAModels):
        return SPAConfig(
            **{**common, "estimator": models.estimator, "untrained": "raise", **options}
        )
    return HISRConfig(
        **{
            **common,
            "segmenter": models.segmenter,
            "sprm": models.sprm,
            "hindsight": models.hindsight,
            "policy_scorer": models.policy_scorer,
            "policy_source": "scorer",
            **options,
        }
    )


def step_rewards(
    trajectories: Sequence[Trajectory], config: SPAConfig | HISRConfig
) -> list[np.ndarray]:
    """The fused per-step rewards ``config`` gives ``trajectories`` (one float64 array each), as
    the wrapper emits them under ``advantage="rewards"``; writes the per-step diagnostics
    (``step.extras["spa"]`` / ``["hisr"]``)."""
    if isinstance(config, HISRConfig):
        return trajectory_rewards(trajectories, replace(config, online=False))
    from agentenvs.wrappers.batch import StepBatch

    frozen = replace(config, online=False, advantage="rewards")
    flat = estimate_batch(StepBatch.from_trajectories(list(trajectories)), frozen)
    cut = np.cumsum([0] + [len(t.steps) for t in trajectories])
    return [flat[a:b] for a, b in zip(cut[:-1], cut[1:], strict=True)]
