"""HISR: hindsight-modulated segmental process rewards, as a critic-free credit method.

A trajectory's outcome ``R`` is split over its segments by a segment process-reward model (SPRM,
a :mod:`agentenvs.wrappers.models.progress` estimator read per segment); each segment's share is re-weighted by how
much more likely a hindsight model (which sees the future and ``R``) finds the segment's actions
than the policy did; the re-weighted reward goes on the segment's last step and is fused with an
action-grounding reward; group-relative reward-to-go turns the step rewards into advantages. The
maths, defaults and worked examples are in docs/hisr.md (sections cited below).

This module holds:

* :class:`HISRConfig` - every option (paper defaults beta = alpha = 0.3), the models, online
  training.
* The pure stages: :func:`action_log_importance` (section 4.1), :func:`segment_importance` (4.2),
  :func:`modulate` (4.3), :func:`place` (4.4), :func:`fuse` (4.5) and :func:`hisr_rewards` (all of
  them for one trajectory).
* :func:`behaviour_loglik` - a learner action's behaviour log-likelihood total and token count.
* :func:`trajectory_rewards` - the per-step fused rewards of trajectories (models consulted,
  diagnostics and costs written); :func:`estimate_batch` - advantages (trajectories: :func:`agentenvs.wrappers.estimate`).
* :class:`OnlineTrainer` - the bounded buffer and refits behind ``HISRConfig.online``;
  :class:`HISRState` - the online state of a config (its models and trainer), kept in the
  wrapper's :class:`~agentenvs.wrappers.state.CreditState`.

>>> import numpy as np
>>> out = hisr_rewards(np.array([0.1, 0.2, 0.1, 0.6]), np.log([0.904837, 1.221403, 1.105171,
...                    0.818731, 1.0]), [(0, 0), (1, 2), (3, 3), (4, 4)], np.array([1, 1, 0, 1, 1.]))
>>> out["modulated"].round(6).tolist()
[0.073108, 0.37596, 0.066151, 0.484781]
>>> out["reward"].round(6).tolist()
[0.351176, 0.3, 0.263172, 0.346306, 0.639347]
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.models.hindsight import (
    OUTCOMES,
    TurnRequest,
    check_scorer_spec,
    make_scorer,
    trajectory_outcome,
    turn_requests,
)
from agentenvs.wrappers.models.progress import check_estimator_spec, make_estimator
from agentenvs.wrappers.rewards import grounding, group_relative_returns
from agentenvs.wrappers.segments import Segments, make_segmenter, per_turn, segment, segment_ends

from agentenvs.core import Trajectory

__all__ = [
    "HISRConfig",
    "AGGREGATIONS",
    "NORMALISATIONS",
    "PLACEMENTS",
    "ADVANTAGES",
    "GROUNDING_MODES",
    "POLICY_SOURCES",
    "BATCH_COLUMNS",
    "action_log_importance",
    "segment_importance",
    "modulate",
    "place",
    "fuse",
    "hisr_rewards",
    "behaviour_loglik",
    "trajectory_rewards",
    "OnlineTrainer",
    "HISRState",
    "estimate_batch",
]

#: How turn importances combine into a segment's: the paper's plain ``"sum"``, or ``"mean"``.
AGGREGATIONS = ("sum", "mean")
#: How modulated segment rewards are rescaled (docs/hisr.md, section 4.3).
NORMALISATIONS = ("mass_preserving", "paper_l1", "none")
#: Where a segment's reward goes: its last step, or spread evenly over its steps.
PLACEMENTS = ("segment_end", "spread_uniform")
#: What :func:`estimate_batch` returns: group-relative reward-to-go, or the fused rewards.
ADVANTAGES = ("group_relative", "rewards")
#: The grounding term: ``g`` in {0, 1} (the paper) or ``g - 1`` in {-1, 0} (docs/hisr.md, 4.5).
GROUNDING_MODES = ("indicator", "penalty")
#: Where the policy log-likelihood comes from (docs/hisr.md, section 3.3).
POLICY_SOURCES = ("auto", "behaviour", "scorer")
#: HISR reads no state or action codes, only ``StepBatch.trajectories``.
BATCH_COLUMNS: tuple[str, ...] = ()

_LOG_MAX = 700.0  # exp() of more overflows float64: the importance written to diagnostics


def _choice(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


@dataclass(frozen=True)
class HISRConfig:
    """HISR's options (docs/hisr.md, section 6 lists the defaults and where they come from).

    Models may be given as objects or as text specs, resolved when the config is made:
    ``segmenter`` (:func:`agentenvs.wrappers.segments.make_segmenter`), ``sprm``
    (:func:`agentenvs.wrappers.models.progress.make_estimator`), ``hindsight`` and ``policy_scorer``
    (:func:`agentenvs.wrappers.models.hindsight.make_scorer`). A spec is checked here; the models are built,
    and trained online, by the method's online state (:class:`HISRState`, in the wrapper's
    :class:`~agentenvs.wrappers.state.CreditState`).
    """

    beta: float = 0.3
    """Importance temperature (paper): ``z = exp(mean token log-ratio / beta)``."""
    alpha: float = 0.3
    """Grounding weight (paper): ``r = (1 - alpha) r_him + alpha g``."""
    segment_aggregation: str = "sum"
    """``"sum"`` (paper) or ``"mean"`` of the turn importances of a segment."""
    normalisation: str = "mass_preserving"
    """``"mass_preserving"`` (default), ``"paper_l1"`` or ``"none"`` (section 4.3)."""
    placement: str = "segment_end"
    """``"segment_end"`` (default) or ``"spread_uniform"`` (section 4.4)."""
    use_hindsight: bool = True
    """``False``: no modulation (the paper's "w/o HIM"; uniform segment importance)."""
    use_segments: bool = True
    """``False``: every step its own segment (the paper's "w/o SPR")."""
    use_grounding: bool = True
    """``False``: ``alpha`` taken as 0 (the paper's "w/o AGS")."""
    grounding_mode: str = "penalty"
    """``"penalty"`` (default): the grounding term is ``g - 1`` (0 for an executable action, -1
    otherwise); ``"indicator"`` (the paper): ``g``. Under the critic-free reward-to-go a constant
    reward per executable step is a bonus for long episodes (docs/hisr.md, section 4.5)."""
    logratio_clip: float | None = None
    """Clamp on a turn's mean log-ratio (nats per unit) before dividing by ``beta``; ``None``: off."""
    segmenter: Any = "progress"
    """``"progress"`` (a segment ends where ``Step.progress > 0``), ``"per_turn"``,
    ``"fixed:<k>"`` or a callable ``(Trajectory) -> [(start, end), ...]`` (section 2)."""
    sprm: Any = "features"
    """The segment process-reward model: a progress estimator or its spec (section 5)."""
    hindsight: Any = "features"
    """The hindsight scorer (cloze view): a scorer or spec (``"features"``, ``"hf:<dir>"`` or a
    local HF model directory)."""
    policy_scorer: Any = "features"
    """The policy-view scorer, used where behaviour log-probs are not (``policy_source``)."""
    policy_source: str = "auto"
    """``"auto"``: the learner's behaviour log-probs when the hindsight scorer counts tokens and
    every scored action carries them, else ``policy_scorer``; ``"behaviour"`` or ``"scorer"``
    force one."""
    outcome: str = "success"
    """``R``: ``"success"`` (1/0 from the won flag) or ``"return"`` (total env reward)."""
    use_action_valid: bool = True
    """Count ``Step.action_valid = False`` as not executed (grounding 0); an env's
    ``info["action_executed"] = False`` always counts (:func:`agentenvs.wrappers.rewards.executed`)."""
    online: bool = True
    """Refit the SPRM and the scorers from the trajectories credited so far (section 5.2)."""
    refit_every: int = 4
    """Refit after every this many credited groups."""
    refit_epochs: int | None = 10
    """Passes of every refit after the first, which continue from the models' current weights
    (``None``: each model's own setting, e.g. 200 for the ``"features"`` SPRM: seconds per refit)."""
    buffer_size: int = 256
    """Most recent trajectories kept for refits."""
    advantage: str = "group_relative"
    """``"group_relative"``: reward-to-go normalised over the group's steps; ``"rewards"``: the
    fused step rewards themselves (for learners that run their own GAE)."""
    gamma: float = 1.0
    """Discount of the critic-free reward-to-go."""
    eps: float = 1e-6
    """Added to the group std of the critic-free advantage."""

    def __post_init__(self) -> None:
        _choice("segment_aggregation", self.segment_aggregation, AGGREGATIONS)
        _choice("normalisation", self.normalisation, NORMALISATIONS)
        _choice("placement", self.placement, PLACEMENTS)
        _choice("policy_source", self.policy_source, POLICY_SOURCES)
        _choice("outcome", self.outcome, OUTCOMES)
        _choice("advantage", self.advantage, ADVANTAGES)
        _choice("grounding_mode", self.grounding_mode, GROUNDING_MODES)
        if not self.beta > 0:
            raise ValueError(f"beta must be > 0, got {self.beta}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {self.alpha}")
        if self.logratio_clip is not None and not self.logratio_clip > 0:
            raise ValueError("logratio_clip must be > 0 or None")
        if self.refit_every < 1 or self.buffer_size < 1:
            raise ValueError("refit_every and buffer_size must be >= 1")
        if self.refit_epochs is not None and self.refit_epochs < 1:
            raise ValueError("refit_epochs must be >= 1 or None")
        if not 0.0 <= self.gamma <= 1.0 or self.eps < 0:
            raise ValueError("gamma must lie in [0, 1] and eps be >= 0")
        make_segmenter(self.segmenter)  # checks the spec (a segmenter is a plain function)
        check_estimator_spec(self.sprm)
        check_scorer_spec(self.hindsight, "hindsight")
        check_scorer_spec(self.policy_scorer, "policy")


# -- the pure stages ---------------------------------------------------------------------------------
def action_log_importance(
    ll_hind: np.ndarray,
    n_hind: np.ndarray,
    ll_pol: np.ndarray,
    n_pol: np.ndarray,
    beta: float = 0.3,
    clip: float | None = None,
) -> np.ndarray:
    """``log z(a_k)`` per turn, float64 ``(m,)`` (docs/hisr.md, section 4.1).

    ``(ll_hind / n_hind - ll_pol / n_pol) / beta``: the mean per-unit log-ratio of the hindsight
    and policy likelihood totals over ``beta`` (with equal counts: ``(LL_h - LL_p) / (beta n)``).
    A turn with no unit on either side gets 0 (``z = 1``). ``clip`` clamps the mean log-ratio.

    >>> action_log_importance(np.array([-3.5]), np.array([3]), np.array([-3.41]), np.array([3]))
    array([-0.1])
    """
    ll_hind, ll_pol = np.asarray(ll_hind, np.float64), np.asarray(ll_pol, np.float64)
    n_hind, n_pol = np.asarray(n_hind, np.float64), np.asarray(n_pol, np.float64)
    ok = (n_hind > 0) & (n_pol > 0)
    ratio = np.zeros(ll_hind.shape, np.float64)
    ratio[ok] = ll_hind[ok] / n_hind[ok] - ll_pol[ok] / n_pol[ok]
    if clip is not None:
        ratio = np.clip(ratio, -clip, clip)
    if not np.all(np.isfinite(ratio)):
        raise ValueError("log-likelihoods must be finite")
    return ratio / beta


def segment_importance(
    log_z: np.ndarray, segments: Sequence[tuple[int, int]], aggregation: str = "sum"
) -> np.ndarray:
    """``z_hat``, float64 ``(n_segments,)`` summing to 1 (docs/hisr.md, section 4.2).

    A segment's importance is the sum (``"sum"``) or mean (``"mean"``) of ``exp(log_z)`` over its
    turns; computed in log space (log-sum-exp, then a softmax over segments), so any size of
    ``log_z`` is safe and adding a constant to all of it changes nothing.

    >>> segment_importance(np.zeros(5), [(0, 0), (1, 2), (3, 3), (4, 4)]).tolist()
    [0.2, 0.4, 0.2, 0.2]
    """
    _choice("aggregation", aggregation, AGGREGATIONS)
    log_z = np.asarray(log_z, np.float64)
    if not segments:
        return np.zeros(0)
    per = np.empty(len(segments))
    for i, (a, b) in enumerate(segments):
        part = log_z[a : b + 1]
        top = part.max()
        per[i] = top + np.log(np.exp(part - top).sum())
        if aggregation == "mean":
            per[i] -= np.log(len(part))
    weights = np.exp(per - per.max())
    return weights / weights.sum()


def modulate(
    r_hat: np.ndarray,
    z_hat: np.ndarray,
    normalisation: str = "mass_preserving",
    eps: float = 1e-8,
) -> np.ndarray:
    """``R_him``, the segment rewards re-weighted by importance (docs/hisr.md, section 4.3).

    With ``p = r_hat * z_hat``: ``"mass_preserving"`` gives ``p * sum|r_hat| / sum|p|``,
    ``"paper_l1"`` gives ``p / sum|p|``, ``"none"`` gives ``p * n``. If ``sum|p| < eps`` the
    rewards come back unchanged.

    >>> modulate(np.array([0.05, -0.10, 0.05]), np.array([0.332225, 0.367165, 0.300610])).round(6)
    array([ 0.048601, -0.107424,  0.043976])
    """
    _choice("normalisation", normalisation, NORMALISATIONS)
    r_hat = np.asarray(r_hat, np.float64)
    p = r_hat * np.asarray(z_hat, np.float64)
    mass = np.abs(p).sum()
    if mass < eps:
        return r_hat.copy()
    if normalisation == "mass_preserving":
        return p * (np.abs(r_hat).sum() / mass)
    if normalisation == "paper_l1":
        return p / mass
    return p * len(p)


def place(
    values: np.ndarray,
    segments: Sequence[tuple[int, int]],
    n_steps: int,
    placement: str = "segment_end",
) -> np.ndarray:
    """Per-step rewards, float64 ``(n_steps,)``, from per-segment ones (docs/hisr.md, section 4.4):
    on each segment's last step (``"segment_end"``) or split evenly over its steps.

    >>> place(np.array([1.0, 2.0]), [(0, 1), (2, 2)], 3).tolist()
    [0.0, 1.0, 2.0]
    >>> place(np.array([1.0, 2.0]), [(0, 1), (2, 2)], 3, "spread_uniform").tolist()
    [0.5, 0.5, 2.0]
    """
    _choice("placement", placement, PLACEMENTS)
    out = np.zeros(n_steps, np.float64)
    for value, (a, b) in zip(np.asarray(values, np.float64), segments, strict=True):
        if placement == "segment_end":
            out[b] += value
        else:
            out[a : b + 1] += value / (b - a + 1)
    return out


def fuse(progress: np.ndarray, ground: np.ndarray, alpha: float = 0.3) -> np.ndarray:
    """``(1 - alpha) * progress + alpha * ground`` per step (docs/hisr.md, section 4.5)."""
    return (1.0 - alpha) * np.asarray(progress, np.float64) + alpha * np.asarray(ground, np.float64)


def hisr_rewards(
    r_hat: np.ndarray,
    log_z: np.ndarray | None,
    segments: Sequence[tuple[int, int]],
    ground: np.ndarray,
    *,
    alpha: float = 0.3,
    aggregation: str = "sum",
    normalisation: str = "mass_preserving",
    placement: str = "segment_end",
) -> dict[str, np.ndarray]:
    """All stages for one trajectory, from the SPRM's segment rewards ``r_hat`` (per segment), the
    turn importances ``log_z`` (per step; ``None``: no modulation, uniform ``z_hat``) and the
    grounding ``ground`` (per step).

    Returns float64 arrays: ``z_hat`` and ``modulated`` (per segment), ``progress`` (placed) and
    ``reward`` (fused), per step.
    """
    if log_z is None:
        z_hat = np.full(len(segments), 1.0 / max(len(segments), 1))
    else:
        z_hat = segment_importance(log_z, segments, aggregation)
    modulated = modulate(r_hat, z_hat, normalisation)
    progress = place(modulated, segments, len(ground), placement)
    return {
        "z_hat": z_hat,
        "modulated": modulated,
        "progress": progress,
        "reward": fuse(progress, ground, alpha),
    }


# -- the models ----------------------------------------------------------------------------------------
def behaviour_loglik(step: Any) -> tuple[float, int] | None:
    """``(sum, count)`` of the behaviour log-probs an LLM learner's action carries
    (``step.action.logprobs``), or ``None`` when it carries none."""
    logprobs = getattr(step.action, "logprobs", None)
    if logprobs is None:
        return None
    values = np.asarray(logprobs, np.float64).ravel()
    return float(values.sum()), int(values.size)


def _segments_of(trajectory: Trajectory, config: HISRConfig, models: HISRState) -> Segments:
    if not config.use_segments:
        return per_turn(trajectory)
    return segment(trajectory, models.segmenter)


def _sprm_rewards(
    trajs: Sequence[Trajectory], segs: Sequence[Segments], config: HISRConfig, models: HISRState
) -> tuple[list[np.ndarray], bool]:
    """Segment rewards per trajectory, and whether the untrained fallback gave them (the whole
    outcome on the last segment)."""
    sprm = models.sprm
    if not sprm.trained:
        out = []
        for t, s in zip(trajs, segs, strict=True):
            r = np.zeros(len(s))
            r[-1] = trajectory_outcome(t, config.outcome)
            out.append(r)
        return out, True
    ends = [segment_ends(s) for s in segs]
    return [np.asarray(c, np.float64) for c in sprm.contributions(trajs, ends)], False


def _policy_side(requests: Sequence[TurnRequest], config: HISRConfig, models: HISRState) -> str:
    """``"behaviour"`` or ``"scorer"``: where the policy likelihoods of ``requests`` come from."""
    carried = all(behaviour_loglik(r.trajectory.steps[r.turn]) is not None for r in requests)
    hindsight, policy = models.hindsight.unit, models.policy_scorer.unit
    source = config.policy_source
    if source == "auto":
        source = "behaviour" if carried and hindsight == "token" else "scorer"
    if source == "behaviour" and not carried:
        raise ValueError("policy_source='behaviour' but some actions carry no logprobs")
    if source == "scorer" and policy != hindsight:
        raise ValueError(
            f"the hindsight scorer counts {hindsight}s, the policy scorer "
            f"{policy}s: give scorers of the same kind (docs/hisr.md, 3.3)"
        )
    return source


def _log_importance(
    requests: Sequence[TurnRequest], config: HISRConfig, models: HISRState
) -> tuple[np.ndarray | None, str, float, int]:
    """``log z`` of each request (``None`` when a needed scorer is untrained), the policy side,
    the scoring seconds and the units scored."""
    start = time.perf_counter()
    side = _policy_side(requests, config, models)
    if not models.hindsight.trained or (side == "scorer" and not models.policy_scorer.trained):
        return None, side, 0.0, 0
    hind = np.array(models.hindsight.score(requests), np.float64).reshape(-1, 2)
    if side == "behaviour":
        scored = [behaviour_loglik(r.trajectory.steps[r.turn]) for r in requests]
    else:
        scored = models.policy_scorer.score(requests)
    pol = np.array(scored, np.float64).reshape(-1, 2)
    log_z = action_log_importance(
        hind[:, 0], hind[:, 1], pol[:, 0], pol[:, 1], config.beta, config.logratio_clip
    )
    units = int(hind[:, 1].sum() + (pol[:, 1].sum() if side == "scorer" else 0))
    return log_z, side, time.perf_counter() - start, units


def trajectory_rewards(
    trajectories: Sequence[Trajectory],
    config: HISRConfig | None = None,
    online: HISRState | None = None,
) -> list[np.ndarray]:
    """HISR's fused per-step rewards, one float64 array per trajectory, with the models of
    ``online`` (``None``: a fresh :class:`HISRState` of ``config``; models given to the config
    as objects are those objects).

    Writes ``step.extras["hisr"]`` (``segment``, ``importance`` = ``z(a_k)``, ``segment_reward``
    = the SPRM's ``R_hat_i``, ``modulated`` = ``R_him_i``, ``grounding``, ``reward``) and adds
    its share of the costs to ``trajectory.info["credit"]`` (``scorer_seconds``,
    ``scorer_tokens``, ``sprm_seconds``, ``sprm_fallbacks``, ``hindsight_fallbacks``).
    """
    config = config or HISRConfig()
    models = online if online is not None else HISRState(config)
    trajs = [t for t in trajectories if t.steps]
    segs = [_segments_of(t, config, models) for t in trajs]
    start = time.perf_counter()
    r_hats, sprm_fallback = _sprm_rewards(trajs, segs, config, models)
    sprm_seconds = (time.perf_counter() - start) / max(len(trajs), 1)
    # turn importances, for trajectories of more than one segment only (one segment: z_hat = [1])
    modulated = [i for i, s in enumerate(segs) if config.use_hindsight and len(s) > 1]
    requests = [
        TurnRequest(trajs[i], k, trajectory_outcome(trajs[i], config.outcome))
        for i in modulated
        for k in range(len(trajs[i].steps))
    ]
    log_z_all, seconds, units = None, 0.0, 0
    if requests:
        log_z_all, _, seconds, units = _log_importance(requests, config, models)
    share = seconds / max(len(modulated), 1)
    log_z: dict[int, np.ndarray] = {}
    if log_z_all is not None:
        cut = np.cumsum([0] + [len(trajs[i].steps) for i in modulated])
        log_z = {i: log_z_all[cut[j] : cut[j + 1]] for j, i in enumerate(modulated)}
    out: dict[int, np.ndarray] = {}
    for i, (traj, s, r_hat) in enumerate(zip(trajs, segs, r_hats, strict=True)):
        g = grounding(traj, config.use_action_valid)
        lz = log_z.get(i)
        parts = hisr_rewards(
            r_hat,
            lz,
            s,
            g - 1.0 if config.grounding_mode == "penalty" else g,
            alpha=config.alpha if config.use_grounding else 0.0,
            aggregation=config.segment_aggregation,
            normalisation=config.normalisation,
            placement=config.placement,
        )
        seg_of = np.repeat(np.arange(len(s)), [b - a + 1 for a, b in s])
        for k, step in enumerate(traj.steps):
            j = int(seg_of[k])
            step.extras["hisr"] = {
                "segment": j,
                "importance": float(np.exp(min(lz[k], _LOG_MAX))) if lz is not None else 1.0,
                "segment_reward": float(r_hat[j]),
                "modulated": float(parts["modulated"][j]),
                "grounding": float(g[k]),
                "reward": float(parts["reward"][k]),
            }
        costs = traj.info.setdefault("credit", {})
        needs_z = i in modulated
        costs["scorer_seconds"] = costs.get("scorer_seconds", 0.0) + (share if needs_z else 0.0)
        costs["scorer_tokens"] = costs.get("scorer_tokens", 0.0) + (
            units / len(modulated) if needs_z else 0.0
        )
        costs["sprm_seconds"] = costs.get("sprm_seconds", 0.0) + sprm_seconds
        costs["sprm_fallbacks"] = costs.get("sprm_fallbacks", 0) + int(sprm_fallback)
        costs["hindsight_fallbacks"] = costs.get("hindsight_fallbacks", 0) + int(
            needs_z and lz is None
        )
        out[id(traj)] = parts["reward"]
    return [out.get(id(t), np.zeros(0)) for t in trajectories]


# -- online training -----------------------------------------------------------------------------------
class OnlineTrainer:
    """The bounded buffer of credited trajectories and the refits of HISR's models
    (docs/hisr.md, section 5.2).

    :meth:`observe` adds a batch's trajectories and, every ``refit_every`` groups, refits the SPRM
    (segment rewards summing to ``R``), the hindsight scorer (cloze) and, when the policy side
    came from it, the policy scorer (behaviour cloning), on the whole buffer.
    """

    def __init__(self, buffer_size: int) -> None:
        self.buffer: deque[Trajectory] = deque(maxlen=buffer_size)
        self.groups = 0
        self.fits = 0

    def observe(
        self,
        trajectories: Sequence[Trajectory],
        n_groups: int,
        config: HISRConfig,
        models: HISRState,
    ) -> dict[str, float]:
        """Buffer ``trajectories`` (``n_groups`` groups); refit ``models`` when due. Returns the
        fit losses (after the fit) and seconds, empty when nothing was fitted."""
        self.buffer.extend(t for t in trajectories if t.steps)
        before = self.groups // config.refit_every
        self.groups += n_groups
        if self.groups // config.refit_every == before or not self.buffer:
            return {}
        start = time.perf_counter()
        data = list(self.buffer)
        report: dict[str, float] = {}
        targets = [trajectory_outcome(t, config.outcome) for t in data]
        ends = [segment_ends(_segments_of(t, config, models)) for t in data]
        passes = config.refit_epochs if self.fits else None  # the first fit: the models' own
        report["sprm_loss"] = models.sprm.fit(data, targets, ends, epochs=passes).loss_after
        if config.use_hindsight:
            requests = turn_requests(data, config.outcome)
            report["hindsight_loss"] = models.hindsight.fit(requests, epochs=passes).loss_after
            if _policy_side(requests, config, models) == "scorer":
                fitted = models.policy_scorer.fit(requests, epochs=passes)
                report["policy_loss"] = fitted.loss_after
        report["fit_seconds"] = time.perf_counter() - start
        self.fits += 1
        return report

    def state_dict(self) -> dict[str, Any]:
        """The buffered trajectories and the counts."""
        return {"buffer": list(self.buffer), "groups": self.groups, "fits": self.fits}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.buffer.clear()
        self.buffer.extend(state["buffer"])
        self.groups, self.fits = int(state["groups"]), int(state["fits"])


#: The trained models of :class:`HISRState`, in the order its saved state lists them.
_MODELS = ("sprm", "hindsight", "policy_scorer")


class HISRState:
    """HISR's online state for one config: its models built from their specs (``segmenter``,
    ``sprm``, ``hindsight``, ``policy_scorer``) and ``trainer`` (an :class:`OnlineTrainer` of
    ``config.buffer_size``). The registry makes it in the wrapper's
    :class:`~agentenvs.wrappers.state.CreditState` on the first group credited; its saved state
    is the trained models' weights and the trainer's buffer (a segmenter is a plain function)."""

    def __init__(self, config: HISRConfig) -> None:
        self.segmenter = make_segmenter(config.segmenter)
        self.sprm = make_estimator(config.sprm)
        self.hindsight = make_scorer(config.hindsight, "hindsight")
        self.policy_scorer = make_scorer(config.policy_scorer, "policy")
        self.trainer = OnlineTrainer(config.buffer_size)

    def state_dict(self) -> dict[str, Any]:
        """Each trained model's ``state_dict()`` (``None`` while untrained) and the trainer's.

        Raises:
            TypeError: a trained model has no ``state_dict`` (it cannot be saved).
        """
        state: dict[str, Any] = {"trainer": self.trainer.state_dict()}
        for name in _MODELS:
            model = getattr(self, name)
            if not model.trained:
                state[name] = None
            elif not callable(getattr(model, "state_dict", None)):
                raise TypeError(f"HISR's {name} {model!r} is trained but has no state_dict()")
            else:
                state[name] = model.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name in _MODELS:
            if state.get(name) is not None:
                getattr(self, name).load_state_dict(state[name])
        self.trainer.load_state_dict(state["trainer"])

    def __repr__(self) -> str:
        trained = [name for name in _MODELS if getattr(self, name).trained]
        return (
            f"HISRState(trained={trained}, buffered={len(self.trainer.buffer)}, "
            f"fits={self.trainer.fits})"
        )


# -- advantages ----------------------------------------------------------------------------------------
def estimate_batch(
    batch: StepBatch, config: HISRConfig | None = None, online: HISRState | None = None
) -> np.ndarray:
    """HISR advantages of a batch, float64 ``(n_steps,)`` (docs/hisr.md, section 4.6), with the
    models of ``online`` (the registry passes the wrapper's state; ``None``: a fresh one).

    Needs ``batch.trajectories``. Rewards come from :func:`trajectory_rewards`; with
    ``advantage="group_relative"`` each group's reward-to-go (``gamma``) is normalised over its
    steps (:func:`agentenvs.wrappers.rewards.group_relative_returns`). With ``online`` the batch then joins
    the training buffer; a refit's losses and seconds go to the batch's first trajectory's
    ``info["credit"]``.
    """
    config = config or HISRConfig()
    trajs = batch.trajectories
    if trajs is None:
        raise ValueError("HISR reads the trajectories of a batch: build it with from_trajectories")
    models = online if online is not None else HISRState(config)
    rewards = trajectory_rewards(trajs, config, models)
    if config.advantage == "rewards":
        values = rewards
    else:
        values = [np.zeros(0)] * len(trajs)
        groups = batch.traj_group.tolist()
        for g in sorted(set(groups)):
            members = [i for i, code in enumerate(groups) if code == g]
            normed = group_relative_returns([rewards[i] for i in members], config.gamma, config.eps)
            for i, adv in zip(members, normed, strict=True):
                values[i] = adv
    if config.online and trajs:
        fitted = models.trainer.observe(trajs, batch.n_groups, config, models)
        costs = trajs[0].info.setdefault("credit", {})
        for key, value in fitted.items():
            costs[key] = costs.get(key, 0.0) + value
    out = np.concatenate(values) if values else np.zeros(0)
    return out.astype(np.float64)
