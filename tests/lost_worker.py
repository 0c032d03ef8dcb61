"""A gym wrapper that plays a sub-env whose worker is lost at every episode end (tests' helper)."""

from __future__ import annotations

import gymnasium as gym

__all__ = ["LostWorker"]


class LostWorker(gym.Wrapper):
    """Ends every episode as a lost Ray worker would: ``info["infra_failure"]`` on its last step
    (:class:`~agentenvs.wrappers.VectorCreditWrapper` then drops the episode's group)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info = {**info, "infra_failure": True}
        return obs, reward, terminated, truncated, info
