"""TRIAGE: the GRPO outcome advantage plus a small role-typed correction from a judge.

Every step (segment) of a rollout is shown to a judge in a local window (never the outcome); the
judge names its role, D(ecisive), E(xploration), N(o-progress) or R(egression); the step's raw
advantage is ``A_i + lam * r(role)``, and the raw advantages are whitened over the batch. The
maths, the defaults, the judge window, the prompt, the oracle's rules and the golden example are
in docs/triage.md.

This module holds :class:`TriageConfig`, the pure maths (:func:`outcome_advantages`,
:func:`process_rewards`, :func:`whiten`), :func:`judge_batch` (requests -> results, through the
cache, one judge call per group) and :func:`estimate_batch` (trajectories: :func:`agentenvs.wrappers.estimate`).

>>> from agentenvs.wrappers import estimate
>>> from agentenvs.core import Step, Trajectory
>>> def traj(keys, won, progress):
...     steps = [Step("o", a, 0.0, state_key=s, next_state_key=t, progress=p)
...              for (s, a, t), p in zip(keys, progress)]
...     return Trajectory("t", "g", steps, success=won, final_observation="end")
>>> win = traj([("A", "up", "B"), ("B", "up", "C")], True, [0.0, 1.0])   # E, then D
>>> lose = traj([("A", "up", "B"), ("B", "down", "A")], False, [0.0, 0.0])  # E, then N
>>> cfg = TriageConfig(whiten_scope="none", eps=0.0)
>>> [a.round(3).tolist() for a in estimate([win, lose], "triage", cfg)]
[[1.1, 1.2], [-0.9, -1.02]]
>>> win.steps[1].extras["triage"]["role"], lose.info["credit"]["judge_segments"]
('D', 2.0)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.models.judges.cache import JudgeCache
from agentenvs.wrappers.models.judges.factory import check_judge_spec, make_judge
from agentenvs.wrappers.models.judges.request import (
    MODES,
    Judge,
    JudgeRequest,
    JudgeResult,
    build_requests,
)
from agentenvs.wrappers.models.judges.roles import ROLE_REWARDS, Role, parse_role
from agentenvs.wrappers.registry import env_preset

__all__ = [
    "TriageConfig",
    "WHITEN_SCOPES",
    "TriageState",
    "BATCH_COLUMNS",
    "outcome_advantages",
    "process_rewards",
    "whiten",
    "judge_batch",
    "estimate_batch",
]

#: Over which steps the raw advantages are whitened (docs/triage.md, section 2).
WHITEN_SCOPES = ("batch", "group", "none")
#: The :class:`~agentenvs.wrappers.batch.StepBatch` columns :func:`estimate_batch` reads: none (it reads
#: ``StepBatch.trajectories``).
BATCH_COLUMNS: tuple[str, ...] = ()


@dataclass(frozen=True)
class TriageConfig:
    """TRIAGE (docs/triage.md). Defaults: the paper's ALFWorld / WebShop settings, the oracle judge.

    ``judge`` is a judge object (anything with ``judge(requests)``) or a text spec: ``"oracle"``
    (the default: privileged rules, no model, works offline), a local Hugging Face model
    directory, or the http(s) URL of an OpenAI-compatible server (vLLM). A text spec is checked
    when the config is built; the judge is made from it, with the result cache, by the online
    state (:class:`TriageState`) on the first group credited, in the wrapper's
    :class:`~agentenvs.wrappers.state.CreditState` (shared by the wrappers given that state).
    """

    lam: float = 0.2
    """Weight of the role term (the paper: 0.2 ALFWorld and WebShop, 0.4 Search-QA)."""
    role_rewards: dict[str, float] = field(
        default_factory=lambda: {r.value: v for r, v in ROLE_REWARDS.items()}
    )
    """Process reward of each role, keyed by letter: D 1.0, E 0.5, N -0.1, R -0.5."""
    window_prev: int = 5
    """Earlier steps shown to the judge (at most)."""
    window_future: int = 5
    """Later steps shown to the judge (at most)."""
    whiten_scope: str = "batch"
    """``"batch"`` (the paper): mean and std over every step credited in one call (one call of
    :func:`~agentenvs.wrappers.assign_advantages`; in the wrappers, the groups completed by one ``step``,
    docs/triage.md, section 2); ``"group"``: per group; ``"none"``: raw ``A + lam * r``."""
    std_ddof: int = 0
    """Degrees of freedom of the group std in the outcome advantage (0: population; verl uses 1)."""
    eps: float = 1e-6
    """Added to both stds before dividing."""
    fallback_reward: float = 0.0
    """Process reward of a step the judge could not label (it then keeps its GRPO credit)."""
    require_evidence: bool = True
    """The prompt asks for an evidence phrase per label (the paper's default)."""
    cache: bool = True
    """Reuse judge results for equal requests (an LRU of ``cache_size``)."""
    cache_size: int = 100_000
    """Most results the cache keeps."""
    mode: str = "roles"
    """``"roles"`` (TRIAGE) or ``"scalar"``: the judge gives a score ``s`` in [-1, 1] and the raw
    advantage is ``A + lam * s`` (the paper's scalar process-reward baseline)."""
    filter_uniform_groups: bool = False
    """Groups whose rollouts all succeeded or all failed get 0 and are left out of the whitening
    statistics and of judging (the paper does not filter)."""
    judge: Any = "oracle"
    """A judge object or a text spec (see the class docstring)."""
    judge_max_error_fraction: float = 0.5
    """For a judge given as an http(s) URL: the share of failed requests past which judging raises
    ``RuntimeError`` (:class:`~agentenvs.wrappers.models.judges.HTTPJudge`'s ``max_error_fraction``; 1.0 never)."""

    #: Fields where the paper's training stack differs from the defaults: verl's GRPO group std is
    #: the sample std.
    REFERENCE_FIELDS: ClassVar[dict[str, Any]] = {"std_ddof": 1}

    @classmethod
    def reference(cls, env: Any = None, **overrides: Any) -> TriageConfig:
        """The paper's settings: ``std_ddof=1`` (verl's GRPO) and, for ``env`` (an env, env class
        or registered id), the values the env declares for TRIAGE
        (:func:`~agentenvs.wrappers.registry.env_preset`: ALFWorld and WebShop ``lam=0.2``, SearchQA 0.4,
        docs/triage.md, section 8); then ``overrides``. ``ValueError`` for an env that declares
        none.

        >>> TriageConfig.reference("agentenvs/SearchQA-v0").lam, TriageConfig.reference().std_ddof
        (0.4, 1)
        """
        fields = dict(cls.REFERENCE_FIELDS)
        if env is not None:
            preset = env_preset(env, "triage")
            if not preset:
                raise ValueError(
                    f"env {env!r} declares no TRIAGE preset (metadata['credit_presets']"
                    "['triage'], docs/custom-env.md)"
                )
            fields.update(preset)
        return cls(**{**fields, **overrides})

    def __post_init__(self) -> None:
        if self.whiten_scope not in WHITEN_SCOPES:
            raise ValueError(
                f"whiten_scope must be one of {WHITEN_SCOPES}, got {self.whiten_scope!r}"
            )
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        for name in ("window_prev", "window_future", "std_ddof"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if not (np.isfinite(self.lam) and np.isfinite(self.fallback_reward)):
            raise ValueError("lam and fallback_reward must be finite numbers")
        if not self.eps >= 0 or self.cache_size < 1:
            raise ValueError("eps must be >= 0 and cache_size >= 1")
        if not isinstance(self.role_rewards, dict):
            raise ValueError(
                f"role_rewards must be a dict of role -> reward, got {self.role_rewards!r}"
            )
        rewards: dict[str, float] = {}
        for key, value in self.role_rewards.items():
            role = parse_role(key)
            if role is None:
                raise ValueError(f"role_rewards: unknown role {key!r}; roles are D, E, N, R")
            rewards[role.value] = float(value)
        missing = [r.value for r in Role if r.value not in rewards]
        if missing:
            raise ValueError(f"role_rewards lacks roles {missing}")
        object.__setattr__(self, "role_rewards", rewards)
        check_judge_spec(self.judge)
        if not 0.0 <= self.judge_max_error_fraction <= 1.0:
            raise ValueError(
                f"judge_max_error_fraction must be in [0, 1], got {self.judge_max_error_fraction}"
            )


class TriageState:
    """TRIAGE's online state for one config: ``judge`` (made from ``config.judge``) and ``cache``
    (a :class:`~agentenvs.wrappers.models.judges.JudgeCache` of ``config.cache_size``; ``None`` with
    ``cache=False``). The registry makes it in the wrapper's
    :class:`~agentenvs.wrappers.state.CreditState` on the first group credited; its saved state
    is the cache (the judge learns nothing)."""

    def __init__(self, config: TriageConfig) -> None:
        served = isinstance(config.judge, str) and config.judge.startswith(("http://", "https://"))
        options = {"max_error_fraction": config.judge_max_error_fraction} if served else {}
        self.judge: Judge = make_judge(config.judge, **options)
        self.cache = JudgeCache(config.cache_size) if config.cache else None

    def state_dict(self) -> dict[str, Any]:
        """The cached judge results (``None`` without a cache)."""
        return {"cache": None if self.cache is None else self.cache.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.cache is not None and state.get("cache") is not None:
            self.cache.load_state_dict(state["cache"])

    def __repr__(self) -> str:
        cached = "off" if self.cache is None else len(self.cache)
        return f"TriageState(judge={type(self.judge).__name__}, cached={cached})"


# -- pure maths --------------------------------------------------------------------------------------
def outcome_advantages(
    success: np.ndarray, traj_group: np.ndarray, ddof: int = 0, eps: float = 1e-6
) -> np.ndarray:
    """GRPO outcome advantage of each trajectory, float64 ``(m,)``.

    ``A_i = (R_i - mean_g R) / (std_g R + eps)`` over the trajectories of ``i``'s group ``g``, with
    ``R`` the success flags as 0/1 and ``std`` with ``ddof`` degrees of freedom. A group with at
    most ``ddof`` members, or whose outcomes are all equal, gets 0.

    >>> outcome_advantages(np.array([1, 1, 0, 0]), np.zeros(4, int), eps=0.0).tolist()
    [1.0, 1.0, -1.0, -1.0]
    """
    x = np.asarray(success, np.float64).reshape(-1)
    g = np.asarray(traj_group, np.int64).reshape(-1)
    if len(x) != len(g):
        raise ValueError("success and traj_group must have one entry per trajectory")
    if len(x) == 0:
        return np.zeros(0)
    counts = np.bincount(g).astype(np.float64)
    mean = np.bincount(g, weights=x) / np.maximum(counts, 1)
    centred = x - mean[g]
    dof = counts - ddof
    var = np.bincount(g, weights=centred**2, minlength=len(counts)) / np.maximum(dof, 1)
    std = np.sqrt(var)
    ok = (dof > 0) & (std > 0)
    denom = np.where(ok, std + eps, 1.0)
    return np.where(ok[g], centred / denom[g], 0.0)


def process_rewards(
    results: Sequence[JudgeResult],
    role_rewards: dict[str, float],
    fallback: float = 0.0,
    mode: str = "roles",
) -> np.ndarray:
    """float64 ``(n,)``: ``role_rewards[role]`` of each result (``"roles"``) or its score
    (``"scalar"``); ``fallback`` where the judge gave none."""
    if mode == "scalar":
        values = [fallback if r.score is None else r.score for r in results]
    else:
        values = [fallback if r.role is None else role_rewards[r.role.value] for r in results]
    return np.array(values, np.float64).reshape(-1)


def whiten(
    values: np.ndarray, scope: str = "batch", groups: np.ndarray | None = None, eps: float = 1e-6
) -> np.ndarray:
    """Whiten ``values`` (float64 ``(n,)``): ``(x - mean) / (std + eps)`` with population std,
    over all values (``"batch"``), per code of ``groups`` (``"group"``) or not at all
    (``"none"``). Where the std is below ``eps`` (or 0), the values are only centred.

    >>> whiten(np.array([1.0, 3.0]), eps=0.0).tolist(), whiten(np.array([2.0, 2.0])).tolist()
    ([-1.0, 1.0], [0.0, 0.0])
    """
    x = np.asarray(values, np.float64).reshape(-1)
    if scope == "none" or len(x) == 0:
        return x.copy()
    if scope == "batch":
        g = np.zeros(len(x), np.int64)
    elif scope == "group":
        if groups is None or len(groups) != len(x):
            raise ValueError("whiten_scope='group' needs one group code per value")
        g = np.asarray(groups, np.int64)
    else:
        raise ValueError(f"scope must be one of {WHITEN_SCOPES}, got {scope!r}")
    counts = np.bincount(g).astype(np.float64)
    mean = np.bincount(g, weights=x) / np.maximum(counts, 1)
    centred = x - mean[g]
    std = np.sqrt(np.bincount(g, weights=centred**2, minlength=len(counts)) / np.maximum(counts, 1))
    flat = (std < eps) | (std == 0)
    scale = np.where(flat, 1.0, std + eps)
    return centred / scale[g]


# -- judging -----------------------------------------------------------------------------------------
def judge_batch(
    requests: Sequence[JudgeRequest], judge: Judge, cache: JudgeCache | None = None
) -> tuple[list[JudgeResult], list[bool], float]:
    """Results for ``requests`` (in order): cached ones from ``cache``, the others from ONE call
    ``judge.judge(missing)``. Returns ``(results, judged, seconds)``: ``judged[k]`` is True where
    request ``k`` went to the judge, ``seconds`` the wall time of that call (0 when none). Usable
    results (a role or a score) are stored in the cache; failures are not, so they are retried.
    """
    results: list[JudgeResult | None] = [None] * len(requests)
    if cache is not None:
        results = [cache.get(r) for r in requests]
    missing = [k for k, r in enumerate(results) if r is None]
    seconds = 0.0
    if missing:
        start = time.perf_counter()
        fresh = list(judge.judge([requests[k] for k in missing]))
        seconds = time.perf_counter() - start
        if len(fresh) != len(missing) or not all(isinstance(r, JudgeResult) for r in fresh):
            raise ValueError(
                f"judge {judge!r} returned {len(fresh)} results for {len(missing)} requests; "
                "it must return one JudgeResult per request"
            )
        for k, result in zip(missing, fresh, strict=True):
            results[k] = result
            if cache is not None and (result.role is not None or result.score is not None):
                cache.put(requests[k], result)
    judged = [False] * len(requests)
    for k in missing:
        judged[k] = True
    return results, judged, seconds  # type: ignore[return-value]


def _usable(result: JudgeResult, mode: str) -> bool:
    return (result.score if mode == "scalar" else result.role) is not None


def estimate_batch(
    batch: StepBatch, config: TriageConfig | None = None, online: TriageState | None = None
) -> np.ndarray:
    """TRIAGE advantages of a flat batch, float64 ``(n,)``; reads ``batch.trajectories``.

    ``online``: the judge and cache to use (the registry passes the wrapper's state; ``None``: a
    fresh one, dropped after the call).

    Per group: the requests of every step of its trajectories go to the judge in one call
    (:func:`judge_batch`). Writes ``step.extras["triage"]`` (``role``, ``evidence``, ``reward``,
    ``raw_advantage``; ``score`` in scalar mode) and adds the trajectory's share of the judging
    costs to ``traj.info["credit"]`` (docs/triage.md, section 9).
    """
    config = config or TriageConfig()
    trajectories = batch.trajectories
    if trajectories is None:
        raise ValueError(
            "TRIAGE reads the trajectories (StepBatch.from_trajectories), not bare arrays"
        )
    outcome = outcome_advantages(batch.success, batch.traj_group, config.std_ddof, config.eps)
    steps_outcome = np.repeat(outcome, batch.lengths)
    group_success = np.bincount(batch.traj_group, weights=batch.success.astype(np.float64))
    group_size = np.bincount(batch.traj_group)
    uniform = (group_success == 0) | (group_success == group_size)
    keep_traj = (
        ~uniform[batch.traj_group]
        if config.filter_uniform_groups
        else np.ones(batch.n_trajectories, bool)
    )

    state = online if online is not None else TriageState(config)
    judge, cache = state.judge, state.cache
    results: list[JudgeResult | None] = [None] * batch.n_steps
    costs = [_new_costs() for _ in trajectories]
    offsets = batch.offsets.tolist()
    for g in range(batch.n_groups):
        members = [i for i in np.flatnonzero(batch.traj_group == g).tolist() if keep_traj[i]]
        requests, where = [], []
        for i in members:
            reqs = build_requests(
                trajectories[i],
                config.window_prev,
                config.window_future,
                mode=config.mode,
                require_evidence=config.require_evidence,
            )
            requests += reqs
            where += [(i, offsets[i] + k) for k in range(len(reqs))]
        if not requests:
            continue
        group_results, judged, seconds = judge_batch(requests, judge, cache)
        n_judged = sum(judged)
        for (i, pos), result, fresh in zip(where, group_results, judged, strict=True):
            results[pos] = result
            c = costs[i]
            c["judge_segments"] += fresh
            c["judge_cache_hits"] += not fresh
            if fresh:
                c["judge_calls"] += 1.0 / n_judged
                c["judge_seconds"] += seconds / n_judged
                c["judge_tokens"] += result.tokens
            if not _usable(result, config.mode):
                c["judge_fallbacks"] += 1
            elif result.role is not None:
                c[f"role_{result.role.value}"] += 1

    kept = np.repeat(keep_traj, batch.lengths)
    filled = [r if r is not None else JudgeResult(None) for r in results]
    rewards = process_rewards(filled, config.role_rewards, config.fallback_reward, config.mode)
    raw = steps_outcome + config.lam * rewards
    advantages = np.zeros(batch.n_steps)
    advantages[kept] = whiten(raw[kept], config.whiten_scope, batch.step_group[kept], config.eps)
    for i, traj in enumerate(trajectories):
        for k, step in enumerate(traj.steps):
            pos = offsets[i] + k
            if not kept[pos]:
                continue
            result = filled[pos]
            extra = {
                "role": None if result.role is None else result.role.value,
                "evidence": result.evidence,
                "reward": float(rewards[pos]),
                "raw_advantage": float(raw[pos]),
            }
            if config.mode == "scalar":
                extra["score"] = result.score
            step.extras["triage"] = extra
        traj.info["credit"] = {**traj.info.get("credit", {}), **costs[i]}
    return advantages


def _new_costs() -> dict[str, float]:
    keys = ("judge_calls", "judge_segments", "judge_cache_hits", "judge_tokens", "judge_seconds")
    roles = tuple(f"role_{r.value}" for r in Role)
    return dict.fromkeys((*keys, "judge_fallbacks", *roles), 0.0)
