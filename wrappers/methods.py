"""The built-in credit methods, registered in :mod:`agentenvs.wrappers.registry` (in this order).

This module holds no code of its own: it imports each estimator module and registers it through
:func:`~agentenvs.wrappers.registry.register_method`. The structural methods (GRPO, GiGPO, GraphGPO, RTMC)
are pure numpy; TRIAGE, HISR and SPA consult a model or judge (``needs_model=True``), whose
implementations live in :mod:`agentenvs.wrappers.models` and import torch only when a model is built;
each registers its online-state class (``online_state=``), which the wrapper's
:class:`~agentenvs.wrappers.state.CreditState` holds.
``wrappers/__init__`` imports this module, so any ``import agentenvs.wrappers...`` registers them.

>>> from agentenvs.wrappers.registry import METHODS
>>> METHODS["graph"].name, METHODS["spa"].needs_model, METHODS["rtmc"].needs_model
('graphgpo', True, False)
"""

from __future__ import annotations

from agentenvs.wrappers import gigpo, graphgpo, grpo, hisr, rtmc, spa, triage
from agentenvs.wrappers.registry import config_signature, register_method, states_only

__all__: list[str] = []

#: The step facts each method reads besides the rewards (``CreditMethod.reads``).
_TEXTS = ("observation", "action", "next_observation")
READS = {
    "grpo": ("action_valid",),
    "gigpo": ("state_key", "action_valid"),
    "graphgpo": ("state_key", "next_state_key", "won", "action_valid"),
    "rtmc": ("state_key", "action_key", "won", "action_valid"),
    "spa": ("won", "action_valid", *_TEXTS),
    "triage": ("state_key", "next_state_key", "won", "action_valid", "progress", *_TEXTS),
    "hisr": ("won", "action_valid", "progress", *_TEXTS),
}

register_method(
    "grpo",
    grpo.estimate_batch,
    grpo.GRPOConfig,
    signature=states_only,
    columns=grpo.BATCH_COLUMNS,
    reads=READS["grpo"],
)
register_method(
    "gigpo",
    gigpo.estimate_batch,
    gigpo.GiGPOConfig,
    signature=states_only,
    columns=gigpo.BATCH_COLUMNS,
    reads=READS["gigpo"],
)
register_method(
    "graphgpo",
    graphgpo.estimate_batch,
    graphgpo.GraphGPOConfig,
    signature=states_only,
    aliases=("graph",),
    columns=graphgpo.BATCH_COLUMNS,
    reads=READS["graphgpo"],
    success_sink=True,
)
register_method(
    "rtmc",
    rtmc.estimate_batch,
    rtmc.RTMCConfig,
    signature=config_signature,
    columns=rtmc.BATCH_COLUMNS,
    reads=READS["rtmc"],
)
for _module, _config, _state in (
    (triage, triage.TriageConfig, triage.TriageState),
    (hisr, hisr.HISRConfig, hisr.HISRState),
    (spa, spa.SPAConfig, spa.SPAState),
):
    register_method(
        _module.__name__.rsplit(".", 1)[1],
        _module.estimate_batch,
        _config,
        signature=states_only,
        columns=_module.BATCH_COLUMNS,
        needs_model=True,
        online_state=_state,
        reads=READS[_module.__name__.rsplit(".", 1)[1]],
    )
