"""Our credit methods as verl advantage estimators.

:func:`make_estimator` wraps one method of :mod:`agentenvs.wrappers.registry` in verl's estimator
signature; :func:`register` registers every method with verl's ``register_adv_est`` as
``agentenvs_<name>`` (:data:`PREFIX`). The step's env reward is its row of
``token_level_rewards`` summed over the response (verl's reward managers put the scalar at the
last response token). An estimator returns ``(advantages, returns)``, both the step's advantage
broadcast over its row of ``response_mask`` (float32, ``(batch, response_length)``), like verl's
outcome estimators.

This module holds: :data:`PREFIX`, :func:`row_advantages`, :func:`make_estimator`,
:func:`register`, :func:`configure`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from agentenvs.learners.verl.columns import StepUid, step_uids, trajectories_of
from agentenvs.wrappers.registry import get_method, make_config, method_names
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

__all__ = ["PREFIX", "row_advantages", "make_estimator", "register", "configure"]

#: verl's name of method ``m`` is ``PREFIX + m``.
PREFIX = "agentenvs_"

_configs: dict[str, Any] = {}


def _as_step_uids(index: np.ndarray | None, non_tensor_batch: Mapping | None) -> np.ndarray:
    if non_tensor_batch is not None:
        return step_uids(non_tensor_batch)
    if index is None or not all(isinstance(u, StepUid) for u in index):
        raise ValueError(
            "agentenvs estimators need each row's trajectory id and state key: call "
            "agentenvs.learners.verl.attach_step_uids(batch) before compute_advantage (or pass "
            "non_tensor_batch=); see agentenvs.learners.verl.columns for the columns"
        )
    return index


def row_advantages(
    method: str, uids: Sequence[Any] | np.ndarray, step_rewards: np.ndarray, config: Any = None
) -> np.ndarray:
    """``method``'s advantage of each row (float64, one per row) from the rows' :class:`StepUid`
    objects and env rewards (``step_rewards``, one per row)."""
    entry, config = get_method(method, config)
    if len(uids) == 0:
        return np.zeros(0, np.float64)
    trajectories, rows = trajectories_of(uids, np.asarray(step_rewards, np.float64))
    batch = entry.batch(trajectories, config, groups=[g for g, _ in rows])
    values = entry.run(batch, config)
    out = np.empty(len(uids), np.float64)
    for (_, members), adv in zip(rows, batch.split(values), strict=True):
        out[members] = adv
    return out


def make_estimator(method: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """A verl advantage estimator running our ``method`` (its :func:`configure` d config)."""

    def estimator(
        token_level_rewards: torch.Tensor,
        response_mask: torch.Tensor,
        index: np.ndarray | None = None,
        config: Any = None,
        non_tensor_batch: Mapping[str, np.ndarray] | None = None,
        **_: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        uids = _as_step_uids(index, non_tensor_batch)
        rewards = token_level_rewards.detach().sum(dim=-1).double().cpu().numpy()
        adv = row_advantages(method, uids, rewards, _configs.get(method))
        mask = response_mask.to(token_level_rewards.dtype)
        scores = torch.as_tensor(adv, dtype=mask.dtype, device=mask.device).unsqueeze(-1) * mask
        return scores, scores.clone()

    estimator.__name__ = estimator.__qualname__ = f"{PREFIX}{method}"
    estimator.__doc__ = f"verl advantage estimator: agentenvs credit method {method!r}."
    return estimator


def register(prefix: str = PREFIX) -> list[str]:
    """Register every method of our registry not yet in verl's (as ``prefix + name``); returns
    the verl names of all our methods."""
    names = []
    for method in method_names():
        name = prefix + method
        if name not in ADV_ESTIMATOR_REGISTRY:
            register_adv_est(name)(make_estimator(method))
        names.append(name)
    return names


def configure(method: str, **options: Any) -> Any:
    """Set the options ``method`` (name or alias) runs with in verl; returns its config.

    >>> configure("graph", distance_discount=0.8).distance_discount
    0.8
    >>> configure("graph").distance_discount  # no options: back to the defaults
    0.1
    """
    name = get_method(method)[0].name
    _configs[name] = make_config(name, **options)
    return _configs[name]
