"""wrappers: credit assignment for groups of rollouts of one task.

Each method is an estimator module registered in one open registry (the structural ones pure
numpy; the model-based ones, TRIAGE, HISR and SPA, consult a model held by their config):

* :mod:`wrappers.grpo` - GRPO outcome advantage (:class:`GRPOConfig`), method ``"grpo"``.
* :mod:`wrappers.gigpo` - GiGPO anchor-state step groups (:class:`GiGPOConfig`), ``"gigpo"``.
* :mod:`wrappers.graphgpo` - GraphGPO distance-to-success graph credit (:class:`GraphGPOConfig`),
  ``"graphgpo"`` (alias ``"graph"``).
* :mod:`wrappers.rtmc` - RTMC rollout-tree Monte Carlo (:class:`RTMCConfig`), ``"rtmc"``.
* :mod:`wrappers.triage` - TRIAGE role-typed credit from a judge (:class:`TriageConfig`),
  ``"triage"``; its judges are in :mod:`wrappers.models.judges`.
* :mod:`wrappers.hisr` - HISR hindsight-modulated segmental process rewards (:class:`HISRConfig`),
  ``"hisr"``; its segmenters are in :mod:`wrappers.segments`, its scorers in
  :mod:`wrappers.models.hindsight`.
* :mod:`wrappers.spa` - SPA stepwise progress attribution (:class:`SPAConfig`), ``"spa"``; its
  progress estimators (shared with HISR) are in :mod:`wrappers.models.progress`.

Each has ``estimate(trajectories, config) -> list[np.ndarray]`` and the flat-array
``estimate_batch(StepBatch, config) -> np.ndarray``. The rest of the package:

* :mod:`wrappers.registry` - :data:`METHODS` (names and aliases -> :class:`CreditMethod`),
  :data:`ALIASES`, :func:`register_method`, :func:`get_method`, :func:`assign_advantages`.
* :mod:`wrappers.base` - the single-env wrappers: :class:`CreditWrapper` (any method by name) and
  :class:`OutcomeCreditWrapper`, :class:`GiGPOCreditWrapper`, :class:`GraphCreditWrapper`,
  :class:`RolloutTreeCreditWrapper`, :class:`RoleCreditWrapper`, :class:`HindsightCreditWrapper`,
  :class:`ProgressCreditWrapper`.
* :mod:`wrappers.vector` - :class:`VectorCreditWrapper` over a grouped vector env.
* :mod:`wrappers.grouping` - the group assembly both wrapper forms share (:func:`group_id`).
* :mod:`wrappers.recorder` - Gymnasium transitions -> :class:`~agentenvs.core.Trajectory`.
* :mod:`wrappers.batch`, :mod:`wrappers.stats`, :mod:`wrappers.matching` - estimator internals.
* :mod:`wrappers.rewards` - grounding and critic-free advantages from step rewards (SPA, HISR).
* :mod:`wrappers.models.hf` - loading a local Hugging Face causal LM (the model-based methods).

The wrappers repeat a task for a group, record the steps and emit credited trajectories in
``info["credit"]``; :func:`assign_advantages` credits groups a learner already has.

>>> sorted(METHODS), method_names()
(['gigpo', 'graph', 'graphgpo', 'grpo', 'hisr', 'rtmc', 'spa', 'triage'], ['gigpo', 'graphgpo', 'grpo', 'hisr', 'rtmc', 'spa', 'triage'])
>>> get_method("graph")[0].wrapper is GraphCreditWrapper
True
"""

from wrappers import methods  # noqa: F401  (registers the built-ins before anything resolves a name)
from wrappers.base import (
    CreditWrapper,
    GiGPOCreditWrapper,
    GraphCreditWrapper,
    HindsightCreditWrapper,
    OutcomeCreditWrapper,
    ProgressCreditWrapper,
    RoleCreditWrapper,
    RolloutTreeCreditWrapper,
)
from wrappers.batch import StepBatch
from wrappers.gigpo import GiGPOConfig
from wrappers.graphgpo import GraphGPOConfig
from wrappers.grouping import group_id
from wrappers.grpo import GRPOConfig
from wrappers.hisr import HISRConfig
from wrappers.registry import (
    ALIASES,
    METHODS,
    CreditMethod,
    MissingStateKeyWarning,
    assign_advantages,
    canonical_name,
    config_signature,
    env_preset,
    estimate,
    get_method,
    make_config,
    method_names,
    register_method,
    registered_methods,
    states_only,
    unregister_method,
)
from wrappers.rtmc import RTMCConfig
from wrappers.spa import SPAConfig
from wrappers.triage import TriageConfig
from wrappers.vector import VectorCreditWrapper

__all__ = [
    "CreditWrapper",
    "OutcomeCreditWrapper",
    "GiGPOCreditWrapper",
    "GraphCreditWrapper",
    "RolloutTreeCreditWrapper",
    "RoleCreditWrapper",
    "HindsightCreditWrapper",
    "ProgressCreditWrapper",
    "VectorCreditWrapper",
    "StepBatch",
    "GRPOConfig",
    "GiGPOConfig",
    "GraphGPOConfig",
    "RTMCConfig",
    "TriageConfig",
    "HISRConfig",
    "SPAConfig",
    "METHODS",
    "ALIASES",
    "CreditMethod",
    "MissingStateKeyWarning",
    "register_method",
    "registered_methods",
    "unregister_method",
    "method_names",
    "canonical_name",
    "get_method",
    "assign_advantages",
    "estimate",
    "make_config",
    "config_signature",
    "env_preset",
    "states_only",
    "group_id",
]
