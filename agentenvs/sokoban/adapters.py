"""Sokoban for ordinary RL libraries: discrete actions and numeric observations.

This module holds :class:`SokobanPlanes` (one-hot planes observation), :class:`SokobanImage`
(RGB image observation) and :func:`make_sokoban_discrete`, the entry point of
``agentenvs/SokobanDiscrete-v0``: ``Discrete(4)`` actions (up, down, left, right) and a flat float32
vector of 4 one-hot planes (wall, target, box, player) of the room, so that stable-baselines3's
``PPO("MlpPolicy", env)`` trains on it directly. ``agentenvs/SokobanDiscreteVisual-v0``
(``make_sokoban_discrete(visual=True)``) has the same actions and observes the
``SokobanVisual-v0`` image alone, uint8 ``(rows*16, cols*16, 3)`` channel-last, for
``PPO("CnnPolicy", env)``. ``info`` keeps the text env's keys (``state_key``: the text grid, never
pixels; ``won``, ``task_id``, ...), so credit wrappers work on both unchanged.

>>> env = make_sokoban_discrete()
>>> obs, info = env.reset(options={"task_id": "seed-42"})
>>> obs.shape, obs.dtype, env.action_space
((144,), dtype('float32'), Discrete(4))
>>> env.step(3)[1:3]   # right, right
(-0.1, False)
>>> env.step(3)[1:3]
(10.9, True)
>>> visual = make_sokoban_discrete(visual=True)
>>> image, info = visual.reset(options={"task_id": "seed-42"})
>>> image.shape, image.dtype, visual.observation_space.shape
((96, 96, 3), dtype('uint8'), (96, 96, 3))
>>> info["state_key"] == env.reset(options={"task_id": "seed-42"})[1]["state_key"]
True
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from agentenvs.adapters import DiscreteActions
from agentenvs.sokoban.env import ACTIONS, SokobanEnv

__all__ = ["SokobanImage", "SokobanPlanes", "make_sokoban_discrete"]

# state code -> (wall, target, box, player) plane memberships
_PLANES = np.array(
    [
        [1, 0, 0, 0],  # wall
        [0, 0, 0, 0],  # floor
        [0, 1, 0, 0],  # empty target
        [0, 1, 1, 0],  # box on target
        [0, 0, 1, 0],  # box
        [0, 0, 0, 1],  # player
        [0, 1, 0, 1],  # player on target
    ],
    dtype=np.float32,
)


class SokobanPlanes(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Replace the text observation by flat one-hot planes, shape ``(4 * rows * cols,)``, float32.

    It records its (no) arguments (``gym.make(env.spec)`` rebuilds the wrapped env)."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        rows, cols = env.unwrapped.dim_room  # type: ignore[attr-defined]  # a Sokoban env's
        self.observation_space = gym.spaces.Box(0.0, 1.0, (4 * rows * cols,), np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        codes = self.env.unwrapped.game.codes()  # type: ignore[attr-defined]  # a Sokoban env's
        return np.ascontiguousarray(_PLANES[codes].transpose(2, 0, 1)).ravel()


class SokobanImage(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Replace a visual Sokoban env's ``{"text", "image"}`` observation by its image alone:
    uint8 ``(rows * 16, cols * 16, 3)``, channel-last (SB3's ``CnnPolicy`` transposes it).

    It records its (no) arguments (``gym.make(env.spec)`` rebuilds the wrapped env)."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Dict) or "image" not in space.spaces:
            raise ValueError("SokobanImage needs a visual Sokoban env (SokobanEnv(visual=True))")
        self.observation_space = space["image"]

    def observation(self, observation: Any) -> np.ndarray:
        return observation["image"]


def make_sokoban_discrete(visual: bool = False, **kwargs: Any) -> gym.Env:
    """A :class:`~agentenvs.sokoban.env.SokobanEnv` with ``Discrete(4)`` actions and plane observations
    (with ``visual=True``, RGB image observations).

    Args:
        visual: observe the uint8 RGB image ``(rows * 16, cols * 16, 3)`` (:class:`SokobanImage`,
            ``agentenvs/SokobanDiscreteVisual-v0``) instead of the one-hot planes
            (:class:`SokobanPlanes`).
        **kwargs: :class:`~agentenvs.sokoban.env.SokobanEnv` options (``action_format`` is forced
            to ``"plain"``).
    """
    kwargs["action_format"] = "plain"
    env = DiscreteActions(SokobanEnv(visual=visual, **kwargs), list(ACTIONS))
    return SokobanImage(env) if visual else SokobanPlanes(env)
