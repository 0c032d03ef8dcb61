"""Adapters that let ordinary (non-LLM) RL code drive agentenvs' text envs.

This module holds :class:`DiscreteActions`, which maps ``Discrete(n)`` actions to fixed command
texts and plays them in ``action_format="plain"``.

>>> import gymnasium as gym, agentenvs
>>> env = DiscreteActions(gym.make("agentenvs/Sokoban-v0", action_format="plain"), ["up", "down", "left", "right"])
>>> env.action_space
Discrete(4)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["DiscreteActions"]


class DiscreteActions(gym.ActionWrapper, gym.utils.RecordConstructorArgs):
    """Expose ``Discrete(len(commands))``; action ``i`` sends ``commands[i]`` as plain text.

    It records its arguments (``gym.make(env.spec)`` rebuilds the wrapped env).

    Args:
        env: a text env created with ``action_format="plain"``.
        commands: the command texts, e.g. Sokoban's ``["up", "down", "left", "right"]``.
    """

    def __init__(self, env: gym.Env, commands: Sequence[str]) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, commands=list(commands))
        gym.ActionWrapper.__init__(self, env)
        if env.get_wrapper_attr("action_format") != "plain":
            raise ValueError("DiscreteActions needs an env made with action_format='plain'")
        if not commands:
            raise ValueError("commands must not be empty")
        self.commands = list(commands)
        self.action_space = gym.spaces.Discrete(len(self.commands))

    def action(self, action: Any) -> str:
        value = np.asarray(action)
        if value.size != 1 or not np.issubdtype(value.dtype, np.integer):
            raise TypeError(
                f"this env takes an integer action in Discrete({len(self.commands)}) "
                f"({', '.join(f'{i}: {c}' for i, c in enumerate(self.commands))}), got {action!r}; "
                "send text to the text env instead (e.g. agentenvs/Sokoban-v0)"
            )
        index = int(value.item())
        if not 0 <= index < len(self.commands):
            raise ValueError(f"action {index} outside Discrete({len(self.commands)})")
        return self.commands[index]
