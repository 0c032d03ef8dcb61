"""wrappers: credit assignment for groups of rollouts of one task.

What it may import: numpy, gymnasium, the standard library and :mod:`agentenvs` (never the
learners, the viewer or the command). The structural modules import no torch or transformers;
:mod:`agentenvs.wrappers.models` imports them only inside the functions that build a model (a test imports
the package with torch blocked). No module imports this package's ``__init__``, and the import
graph has no cycle (tested).

Each method is an estimator module registered in one open registry (:mod:`agentenvs.wrappers.methods`
registers the built-ins; the structural ones are pure numpy; the model-based ones, TRIAGE, HISR
and SPA, have ``needs_model=True``: their frozen config names a model that their online state
builds and trains, from :mod:`agentenvs.wrappers.models`; the wrapper owns that state, a
:class:`CreditState`):

* :mod:`agentenvs.wrappers.grpo` - GRPO outcome advantage (:class:`GRPOConfig`), method ``"grpo"``.
* :mod:`agentenvs.wrappers.gigpo` - GiGPO anchor-state step groups (:class:`GiGPOConfig`), ``"gigpo"``.
* :mod:`agentenvs.wrappers.graphgpo` - GraphGPO distance-to-success graph credit (:class:`GraphGPOConfig`),
  ``"graphgpo"`` (alias ``"graph"``).
* :mod:`agentenvs.wrappers.rtmc` - RTMC rollout-tree Monte Carlo (:class:`RTMCConfig`), ``"rtmc"``.
* :mod:`agentenvs.wrappers.triage` - TRIAGE role-typed credit from a judge (:class:`TriageConfig`),
  ``"triage"``; its judges are in :mod:`agentenvs.wrappers.models.judges`.
* :mod:`agentenvs.wrappers.hisr` - HISR hindsight-modulated segmental process rewards (:class:`HISRConfig`),
  ``"hisr"``; its segmenters are in :mod:`agentenvs.wrappers.segments`, its scorers in
  :mod:`agentenvs.wrappers.models.hindsight`.
* :mod:`agentenvs.wrappers.spa` - SPA stepwise progress attribution (:class:`SPAConfig`), ``"spa"``; its
  progress estimators (shared with HISR) are in :mod:`agentenvs.wrappers.models.progress`.

Each has the flat-array ``estimate_batch(StepBatch, config) -> np.ndarray``; trajectories go
through the one path of the registry: :func:`estimate` returns advantages,
:func:`assign_advantages` writes them. The rest of the package:

* :mod:`agentenvs.wrappers.registry` - the registry: :class:`CreditMethod`, :func:`register_method`,
  :func:`get_method`, :func:`make_config`, :func:`estimate`, :func:`assign_advantages`,
  :func:`registered_methods` (and, for tools, its name tables ``METHODS`` and ``ALIASES``).
* :mod:`agentenvs.wrappers.base` - the single-env wrappers: :class:`CreditWrapper` (any method by name) and
  :class:`OutcomeCreditWrapper`, :class:`GiGPOCreditWrapper`, :class:`GraphCreditWrapper`,
  :class:`RolloutTreeCreditWrapper`, :class:`RoleCreditWrapper`, :class:`HindsightCreditWrapper`,
  :class:`ProgressCreditWrapper`.
* :mod:`agentenvs.wrappers.vector` - :class:`VectorCreditWrapper` over a grouped vector env, and
  :func:`credited_groups` (the groups in a step's ``infos``).
* :mod:`agentenvs.wrappers.state` - :class:`CreditState`, the online state a wrapper owns (fresh per
  wrapper unless passed in as ``state=``; ``state_dict()`` / ``load_state_dict()`` for checkpoints).
* :mod:`agentenvs.wrappers.grouping` - the group assembly both wrapper forms share (an env's group
  size is read with :func:`agentenvs.vector.group_size_of`).
* :mod:`agentenvs.wrappers.recorder` - Gymnasium transitions -> :class:`~agentenvs.core.Trajectory`.
* :mod:`agentenvs.wrappers.batch`, :mod:`agentenvs.wrappers.stats`, :mod:`agentenvs.wrappers.matching` - estimator internals.
* :mod:`agentenvs.wrappers.rewards` - grounding and critic-free advantages from step rewards (SPA, HISR).
* :mod:`agentenvs.wrappers.methods` - the registration of the built-ins.
* :mod:`agentenvs.wrappers.offline` - the SPA / HISR papers' pipeline: reference rollouts into the store,
  models fitted offline, saved, and frozen in a config that hands out rewards for a critic.
* :mod:`agentenvs.wrappers.models` - the model-backed parts (progress estimators, hindsight scorers,
  judges, the shared fit loop, loading a local Hugging Face causal LM).

The wrappers repeat a task for a group, record the steps and emit credited trajectories in
``info["credit"]``; :func:`assign_advantages` credits groups a learner already has.

The package exports what a user touches: the wrappers, their configs, :class:`CreditState`, the
registry's functions and :class:`StepBatch` (what a method of one's own estimates from).

>>> [m.name for m in registered_methods()]
['grpo', 'gigpo', 'graphgpo', 'rtmc', 'triage', 'hisr', 'spa']
>>> get_method("graph")[0].wrapper is GraphCreditWrapper
True
"""

if __name__ != "agentenvs.wrappers":  # the folder wrappers/ found on sys.path: one module, one name
    raise ImportError(f"import agentenvs.wrappers, not {__name__}")

from agentenvs.wrappers import methods  # noqa: F401  (registers the built-ins before anything resolves a name)
from agentenvs.wrappers.base import (
    CreditWrapper,
    GiGPOCreditWrapper,
    GraphCreditWrapper,
    HindsightCreditWrapper,
    OutcomeCreditWrapper,
    ProgressCreditWrapper,
    RoleCreditWrapper,
    RolloutTreeCreditWrapper,
)
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.gigpo import GiGPOConfig
from agentenvs.wrappers.graphgpo import GraphGPOConfig
from agentenvs.wrappers.grpo import GRPOConfig
from agentenvs.wrappers.hisr import HISRConfig
from agentenvs.wrappers.registry import (
    CreditMethod,
    assign_advantages,
    estimate,
    get_method,
    make_config,
    register_method,
    registered_methods,
    unregister_method,
)
from agentenvs.wrappers.rtmc import RTMCConfig
from agentenvs.wrappers.spa import SPAConfig
from agentenvs.wrappers.state import CreditState
from agentenvs.wrappers.triage import TriageConfig
from agentenvs.wrappers.vector import VectorCreditWrapper, credited_groups

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
    "credited_groups",
    "CreditState",
    "GRPOConfig",
    "GiGPOConfig",
    "GraphGPOConfig",
    "RTMCConfig",
    "TriageConfig",
    "HISRConfig",
    "SPAConfig",
    "CreditMethod",
    "register_method",
    "unregister_method",
    "registered_methods",
    "get_method",
    "make_config",
    "estimate",
    "assign_advantages",
    "StepBatch",
]
