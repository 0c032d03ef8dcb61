"""The credit methods by name, and in-place credit assignment for groups of trajectories.

This module holds :data:`METHODS` (name -> ``(estimate, Config)``), :func:`get_method` and
:func:`assign_advantages` (the entry point learners call).

>>> from agentenvs.core import Step, Trajectory
>>> g = [Trajectory("t", "g", [Step("o", "a", 10.0)], success=True),
...      Trajectory("t", "g", [Step("o", "b", 0.0)], success=False)]
>>> assign_advantages([g], "grpo", METHODS["grpo"].config(eps=0.0))
>>> [round(t.steps[0].advantage, 4) for t in g]
[0.7071, -0.7071]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from agentenvs.core import Trajectory
from wrappers import gigpo, graphgpo, grpo, rtmc
from wrappers.batch import StepBatch, default_signature, state_signature

__all__ = ["CreditMethod", "METHODS", "get_method", "assign_advantages"]


class CreditMethod(NamedTuple):
    """A credit method: ``estimate(trajectories, config) -> list[np.ndarray]`` and its config class."""

    estimate: Callable[..., list[np.ndarray]]
    config: type


#: name -> (estimate, Config). ``"graph"`` is GraphGPO, ``"rtmc"`` the rollout-tree method.
METHODS: dict[str, CreditMethod] = {
    "grpo": CreditMethod(grpo.estimate, grpo.GRPOConfig),
    "gigpo": CreditMethod(gigpo.estimate, gigpo.GiGPOConfig),
    "graph": CreditMethod(graphgpo.estimate, graphgpo.GraphGPOConfig),
    "rtmc": CreditMethod(rtmc.estimate, rtmc.RTMCConfig),
}

_BATCH_ESTIMATORS: dict[str, Callable[[StepBatch, Any], np.ndarray]] = {
    "grpo": grpo.estimate_batch,
    "gigpo": gigpo.estimate_batch,
    "graph": graphgpo.estimate_batch,
    "rtmc": rtmc.estimate_batch,
}


def get_method(method: str, config: Any = None) -> tuple[CreditMethod, Any]:
    """Look ``method`` up and return it with ``config`` (default config when ``None``).

    Raises:
        ValueError: unknown name. TypeError: a config of another method's class.
    """
    if method not in METHODS:
        raise ValueError(f"unknown credit method {method!r}; choose from {sorted(METHODS)}")
    entry = METHODS[method]
    if config is None:
        config = entry.config()
    elif not isinstance(config, entry.config):
        raise TypeError(
            f"method {method!r} needs a {entry.config.__name__}, got {type(config).__name__}"
        )
    return entry, config


def assign_advantages(
    groups: Sequence[Sequence[Trajectory]], method: str, config: Any = None
) -> None:
    """Write ``step.advantage`` (a float) into every step of ``groups``, in place.

    Each inner sequence is one group (whatever its trajectories' ``group_id``). ``method`` is a key
    of :data:`METHODS`; ``config`` its config (default when ``None``).
    """
    _, config = get_method(method, config)
    if any(isinstance(g, Trajectory) for g in groups):
        raise TypeError(
            "groups must be a sequence of groups (each a sequence of Trajectory), "
            "e.g. [[traj1, traj2, ...]]"
        )
    trajectories = [t for g in groups for t in g]
    if not trajectories:
        return
    index = [i for i, g in enumerate(groups) for _ in g]
    signature = (config.signature or default_signature) if method == "rtmc" else state_signature
    batch = StepBatch.from_trajectories(trajectories, signature=signature, groups=index)
    advantages = _BATCH_ESTIMATORS[method](batch, config)
    for traj, adv in zip(trajectories, batch.split(advantages), strict=True):
        for step, a in zip(traj.steps, adv.tolist(), strict=True):
            step.advantage = a
