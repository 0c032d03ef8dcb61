"""Our credit methods as verl advantage estimators.

:func:`make_estimator` wraps one method of :mod:`agentenvs.wrappers.registry` in verl's estimator
signature; :func:`register` registers every method with verl's ``register_adv_est`` as
``agentenvs_<name>`` (:data:`PREFIX`). The step's env reward is its row of
``token_level_rewards`` summed over the response (verl's reward managers put the scalar at the
last response token). An estimator returns ``(advantages, returns)``, both the step's advantage
broadcast over its row of ``response_mask`` (float32, ``(batch, response_length)``), like verl's
outcome estimators.

Method options come from verl's own config: the ``algorithm`` section's :data:`OPTIONS_KEY` entry
holds the options of the selected method (verl passes that section to every estimator as
``config``), e.g. ``algorithm.agentenvs.distance_discount: 0.8`` beside
``algorithm.adv_estimator: agentenvs_graphgpo``; the method's defaults otherwise. An unknown
option is a ``ValueError`` naming the method's options.

This module holds: :data:`PREFIX`, :data:`OPTIONS_KEY`, :func:`row_advantages`,
:func:`options_of`, :func:`method_config`, :func:`make_estimator`, :func:`register`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from agentenvs.learners.verl.columns import StepUid, step_uids, trajectories_of
from agentenvs.wrappers.registry import get_method, make_config, method_names
from omegaconf import OmegaConf
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

__all__ = [
    "PREFIX",
    "OPTIONS_KEY",
    "row_advantages",
    "options_of",
    "method_config",
    "make_estimator",
    "register",
]

#: verl's name of method ``m`` is ``PREFIX + m``.
PREFIX = "agentenvs_"

#: The key of verl's ``algorithm`` config that holds the options of the selected method
#: (``algorithm.agentenvs.distance_discount: 0.8``).
OPTIONS_KEY = "agentenvs"

_configs: dict[tuple[str, str], Any] = {}  # (method, options) -> its config, kept across calls


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
    trajectories, rows = trajectories_of(
        uids, np.asarray(step_rewards, np.float64), method=entry.name
    )
    batch = entry.batch(trajectories, config, groups=[g for g, _ in rows])
    values = entry.run(batch, config)
    out = np.empty(len(uids), np.float64)
    for (_, members), adv in zip(rows, batch.split(values), strict=True):
        out[members] = adv
    return out


def options_of(config: Any) -> Any:
    """Our method options in verl's algorithm ``config`` (a ``DictConfig``, ``AlgoConfig``, dict
    or ``None``): its :data:`OPTIONS_KEY` entry, a mapping of options or a method config object;
    ``{}`` when absent.

    >>> options_of({"adv_estimator": "agentenvs_graphgpo", "agentenvs": {"distance_discount": 0.8}})
    {'distance_discount': 0.8}
    >>> options_of(None)
    {}
    """
    get = getattr(config, "get", None)
    options = get(OPTIONS_KEY) if callable(get) else None
    if OmegaConf.is_config(options):
        options = OmegaConf.to_container(options, resolve=True)
    if options is None:
        return {}
    return dict(options) if isinstance(options, Mapping) else options


def method_config(method: str, config: Any = None) -> Any:
    """The config ``method`` runs with under verl's algorithm ``config`` (:func:`options_of`): one
    object per method and distinct options in this process, kept across calls, so the state of an
    online method (SPA's, HISR's models) persists from one training step to the next.

    Raises:
        ValueError: an option ``method`` does not have (its message lists the options).
    """
    name = get_method(method)[0].name
    options = options_of(config)
    if not isinstance(options, Mapping):  # a method config object given in Python
        return get_method(name, options)[1]
    key = (name, repr(sorted(options.items())))
    if key not in _configs:
        _configs[key] = make_config(name, **options)
    return _configs[key]


def make_estimator(method: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """A verl advantage estimator running our ``method`` with the options of verl's ``config``
    (:func:`method_config`)."""

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
        adv = row_advantages(method, uids, rewards, method_config(method, config))
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
