"""Our credit methods inside verl (extra ``verl``; tested with verl 0.9.1).

Importing this package registers every method of :mod:`agentenvs.wrappers.registry` with verl's
``register_adv_est`` as ``agentenvs_<name>`` (:data:`PREFIX`; ``agentenvs_graphgpo``,
``agentenvs_gigpo``, ...), so a verl config selects one with
``algorithm.adv_estimator=agentenvs_graphgpo``. A method registered later is added by
:func:`register`.

Modules:

* :mod:`~agentenvs.learners.verl.columns` - the per-step ``non_tensor_batch`` columns (ours and
  verl-agent's names), :class:`StepUid` that carries them through verl's ``compute_advantage``,
  and their rows as our trajectories;
* :mod:`~agentenvs.learners.verl.estimators` - the estimators and their registration.

verl imports this package in every process by itself: our distribution declares it as a
``verl.plugins`` entry point, which ``import verl`` loads (unless ``VERL_USE_EXTERNAL_PLUGINS`` is
``none`` or names others), so the estimators exist in the driver and in every Ray actor (verl's
``TaskRunner`` computes advantages there) without an import in the user's script.

Method options come from verl's config: ``algorithm.agentenvs`` holds the options of the
method ``algorithm.adv_estimator`` selects (:func:`~agentenvs.learners.verl.estimators.method_config`);
the method's defaults otherwise.
"""

from __future__ import annotations

from agentenvs.learners.verl.columns import (
    KEYS,
    StepUid,
    attach_step_uids,
    info_columns,
    step_columns,
    step_uids,
    trajectories_of,
)
from agentenvs.learners.verl.estimators import (
    OPTIONS_KEY,
    PREFIX,
    make_estimator,
    method_config,
    options_of,
    register,
    row_advantages,
)

__all__ = [
    "PREFIX",
    "OPTIONS_KEY",
    "KEYS",
    "StepUid",
    "step_columns",
    "info_columns",
    "step_uids",
    "attach_step_uids",
    "trajectories_of",
    "row_advantages",
    "make_estimator",
    "options_of",
    "method_config",
    "register",
]

register()
