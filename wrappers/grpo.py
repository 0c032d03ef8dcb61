"""GRPO outcome advantages: every step of a trajectory gets its group-normalised episode score.

This module holds :class:`GRPOConfig` (also the base of the GiGPO and GraphGPO configs, whose
episode term is this one), :func:`step_scores` (per-step scores under the penalty-placement
convention), :func:`episode_advantages` / :func:`estimate_batch` (flat arrays; trajectories go through
:func:`agentenvs.wrappers.estimate`). The equations, defaults and worked examples are in docs/credit.md, sections 1 and 3.

>>> from agentenvs.wrappers import estimate
>>> from agentenvs.core import Step, Trajectory
>>> win = Trajectory("t", "g", [Step("o", "a", 0.0), Step("o", "b", 10.0)], success=True)
>>> lose = Trajectory("t", "g", [Step("o", "c", 0.0)], success=False)
>>> [a.round(6).tolist() for a in estimate([win, lose], "grpo", GRPOConfig(eps=0.0))]
[[0.707107, 0.707107], [-0.707107]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.stats import NORMS, group_zscore

__all__ = [
    "GRPOConfig",
    "EPISODE_NORMS",
    "PENALTY_SCOPES",
    "step_scores",
    "episode_advantages",
    "BATCH_COLUMNS",
    "estimate_batch",
]

#: ``"trajectory"``: one score per trajectory (paper Eq. 2); ``"cross_steps"``: one per step row.
EPISODE_NORMS = ("trajectory", "cross_steps")
#: Where the env-charged invalid-action penalty counts: the whole ``"episode"`` return, or only the
#: invalid ``"step"`` (the reference stack, whose env does not charge it).
PENALTY_SCOPES = ("episode", "step")
#: The :class:`~agentenvs.wrappers.batch.StepBatch` columns :func:`estimate_batch` reads beyond rewards,
#: validity, lengths, groups and success: none.
BATCH_COLUMNS: tuple[str, ...] = ()


_Config = TypeVar("_Config", bound="GRPOConfig")


@dataclass(frozen=True)
class GRPOConfig:
    """GRPO outcome advantage; the fields are shared by the GiGPO and GraphGPO episode terms."""

    episode_norm: str = "trajectory"
    """``"trajectory"`` z-scores the M episode returns (the paper's Eq. 2; a one-trajectory group
    gets 0); ``"cross_steps"`` z-scores one score per step row, so long trajectories weigh more
    (verl-agent's ``compute_mean_std_cross_steps=True``; a one-row group gets its raw score)."""
    norm: str = "mean_std"
    """``"mean_std"`` divides by the group std, ``"mean"`` only subtracts the mean (verl-agent's
    ``norm_adv_by_std_in_grpo``). GiGPO and GraphGPO apply it to their step term too (GiGPO's
    ``mean_std_norm`` / ``mean_norm``)."""
    ddof: int = 1
    """Std degrees of freedom; 1 = the sample std, as verl-agent's ``torch.std``."""
    eps: float = 1e-6
    """Added to the std before dividing (verl-agent's ``epsilon``)."""
    penalty_scope: str = "episode"
    """``"episode"`` (default) scores a trajectory by its total env return, in which our envs
    already charge invalid actions once. ``"step"`` reproduces verl-agent: the episode score counts
    only valid steps' rewards and each invalid step's own row (and GiGPO step return) is docked
    ``invalid_penalty``. With ``episode_norm="trajectory"`` the docking has no row to land on, so
    the penalty then shows only in GiGPO step returns and GraphGPO edge rewards (docs/credit.md,
    section 3)."""
    invalid_penalty: float = 0.1
    """The per-invalid-step penalty used by ``penalty_scope="step"`` and by GraphGPO's
    ``invalid_penalty_on_graph`` (0.1 in the papers and verl-agent)."""

    #: Field values of the reference stack (verl-agent) that differ from the defaults; subclasses add
    #: theirs. See :meth:`reference`.
    REFERENCE_FIELDS: ClassVar[dict[str, Any]] = {
        "episode_norm": "cross_steps",
        "penalty_scope": "step",
    }

    @classmethod
    def reference(cls: type[_Config], **overrides: Any) -> _Config:
        """This config with the reference code's conventions (verl-agent for GRPO and GiGPO, the
        GraphGPO recipe for GraphGPO; docs/credit.md, section 8), e.g.
        ``GraphGPOConfig.reference(distance_discount=0.5)``.

        >>> GRPOConfig.reference().episode_norm
        'cross_steps'
        """
        fields: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            fields.update(vars(klass).get("REFERENCE_FIELDS", {}))
        return cls(**{**fields, **overrides})

    def __post_init__(self) -> None:
        check_choice("episode_norm", self.episode_norm, EPISODE_NORMS)
        check_choice("norm", self.norm, NORMS)
        check_choice("penalty_scope", self.penalty_scope, PENALTY_SCOPES)
        if self.ddof < 0 or self.eps < 0 or self.invalid_penalty < 0:
            raise ValueError("ddof, eps and invalid_penalty must be >= 0")


def check_choice(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


def step_scores(batch: StepBatch, config: GRPOConfig) -> tuple[np.ndarray, np.ndarray]:
    """Per-step rewards and per-trajectory returns under ``config.penalty_scope``.

    Returns ``(rewards, episode_return)``: float64 ``(n,)`` rewards with invalid steps' env rewards
    removed under ``"step"`` scope (unchanged under ``"episode"``), and float64 ``(m,)`` sums of them.
    The ``"step"`` penalty itself is added by the caller where the reference puts it.
    """
    rewards = batch.reward
    if config.penalty_scope == "step":
        rewards = np.where(batch.valid, rewards, 0.0)
    sums = np.bincount(batch.step_traj, weights=rewards, minlength=batch.n_trajectories)
    return rewards, sums


def episode_advantages(batch: StepBatch, config: GRPOConfig) -> np.ndarray:
    """The GRPO episode advantage ``A^E`` of every step, float64 ``(n,)``."""
    _, returns = step_scores(batch, config)
    norm, ddof, eps = config.norm, config.ddof, config.eps
    if config.episode_norm == "trajectory":
        per_traj = group_zscore(
            returns,
            batch.traj_group,
            batch.n_groups,
            norm=norm,
            ddof=ddof,
            eps=eps,
            singleton="zero",
        )
        return np.repeat(per_traj, batch.lengths)
    rows = np.repeat(returns, batch.lengths)
    if config.penalty_scope == "step":
        rows = rows - config.invalid_penalty * ~batch.valid
    return group_zscore(
        rows, batch.step_group, batch.n_groups, norm=norm, ddof=ddof, eps=eps, singleton="raw"
    )


def estimate_batch(batch: StepBatch, config: GRPOConfig | None = None) -> np.ndarray:
    """GRPO advantages of a flat batch, float64 ``(n,)``."""
    return episode_advantages(batch, config or GRPOConfig())
