"""ALFWorld (text) on the real alfworld/TextWorld engine, with an offline generated game panel.

Modules: :mod:`~agentenvs.alfworld.env` (``ALFWorldEnv``, registered as ``agentenvs/ALFWorld-v0``),
:mod:`~agentenvs.alfworld.games` (shipped panel / official data), :mod:`~agentenvs.alfworld.generate`
and :mod:`~agentenvs.alfworld.build_panel` (the game generator and the panel build),
:mod:`~agentenvs.alfworld.metrics` (success rate per task type), :mod:`~agentenvs.alfworld.tracker`
(GraphGPO state key) and :mod:`~agentenvs.alfworld.gcsr` (goal-condition success).

The engine needs ``pip install agentenvs[alfworld]``; importing this package does not.
Documentation: docs/alfworld.md.

>>> from agentenvs.alfworld import TASK_TYPE_NAMES
>>> len(TASK_TYPE_NAMES)
6
"""

from agentenvs.alfworld.constants import TASK_TYPE_NAMES, TASK_TYPES, task_type_of
from agentenvs.alfworld.metrics import success_by_task_type

__all__ = ["TASK_TYPES", "TASK_TYPE_NAMES", "task_type_of", "success_by_task_type", "ALFWorldEnv"]


def __getattr__(name: str) -> type:
    if name == "ALFWorldEnv":
        from agentenvs.alfworld.env import ALFWorldEnv

        return ALFWorldEnv
    raise AttributeError(name)
