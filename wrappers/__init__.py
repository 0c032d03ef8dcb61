"""wrappers: credit assignment for groups of rollouts of one task.

Each method is a pure estimator module (numpy only) plus a thin Gymnasium wrapper:

* :mod:`wrappers.grpo` - GRPO outcome advantage (:class:`GRPOConfig`).
* :mod:`wrappers.gigpo` - GiGPO anchor-state step groups (:class:`GiGPOConfig`).
* :mod:`wrappers.graphgpo` - GraphGPO distance-to-success graph credit (:class:`GraphGPOConfig`).
* :mod:`wrappers.rtmc` - RTMC rollout-tree Monte Carlo (:class:`RTMCConfig`).

Each has ``estimate(trajectories, config) -> list[np.ndarray]`` and the flat-array
``estimate_batch(StepBatch, config) -> np.ndarray``. The wrappers (:class:`OutcomeCreditWrapper`,
:class:`GiGPOCreditWrapper`, :class:`GraphCreditWrapper`, :class:`RolloutTreeCreditWrapper`,
:class:`VectorCreditWrapper`) repeat a task for a group, record the steps and emit credited
trajectories in ``info["credit"]``; :func:`assign_advantages` credits groups a learner already has.

>>> sorted(METHODS)
['gigpo', 'graph', 'grpo', 'rtmc']
"""

from wrappers.base import (
    CreditWrapper,
    GiGPOCreditWrapper,
    GraphCreditWrapper,
    OutcomeCreditWrapper,
    RolloutTreeCreditWrapper,
)
from wrappers.batch import StepBatch
from wrappers.gigpo import GiGPOConfig
from wrappers.graphgpo import GraphGPOConfig
from wrappers.grpo import GRPOConfig
from wrappers.registry import METHODS, CreditMethod, assign_advantages, get_method
from wrappers.rtmc import RTMCConfig
from wrappers.vector import VectorCreditWrapper

__all__ = [
    "CreditWrapper",
    "OutcomeCreditWrapper",
    "GiGPOCreditWrapper",
    "GraphCreditWrapper",
    "RolloutTreeCreditWrapper",
    "VectorCreditWrapper",
    "StepBatch",
    "GRPOConfig",
    "GiGPOConfig",
    "GraphGPOConfig",
    "RTMCConfig",
    "METHODS",
    "CreditMethod",
    "get_method",
    "assign_advantages",
]
