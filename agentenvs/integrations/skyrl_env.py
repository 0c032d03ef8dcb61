"""Any registered env as a SkyRL-gym text env (extra ``skyrl``; tested with skyrl-gym 0.4.0).

:class:`SkyRLTextEnv` is a ``skyrl_gym.envs.base_text_env.BaseTextEnv`` running one
``gymnasium.make(env_id)``; :func:`register` adds every ``agentenvs/*`` id to SkyRL-gym's
registry, so ``skyrl_gym.make("agentenvs/Sokoban-v0", env_config=..., extras=...)`` (what
SkyRL's generator calls, with the dataset row's fields as ``extras``) gives one.

SkyRL-gym's contract, as this class fills it:

* ``init(prompt)`` resets the env and returns ``(prompt + [{"role": "user", "content":
  observation}], {"info": info})``. ``extras`` may name the task (``task_id``), the reset seed
  (``seed``) and ``gym.make`` keyword arguments (``env_kwargs``).
* ``step(response)`` sends the response text to ``env.step`` and returns a
  ``BaseTextEnvStepOutput``: ``observations`` (the next observation as one user message; empty
  once done), ``reward`` (the env's, per turn), ``done`` (terminated or truncated) and
  ``metadata``: ``info`` (the env's ``info``: ``state_key``, ``won``, ``action_valid``, ...,
  what our credit methods need per turn), ``terminated``, ``truncated``.
* ``max_turns`` is the env's ``max_steps`` where it has one (the env truncates there itself).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from skyrl_gym.envs import registration
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

__all__ = ["SkyRLTextEnv", "register"]


class SkyRLTextEnv(BaseTextEnv):
    """One agentenvs env behind SkyRL-gym's ``BaseTextEnv`` (see the module docstring).

    Args:
        env_config: SkyRL's per-env config (read: ``env_kwargs``, a dict of ``gym.make`` kwargs).
        extras: the dataset row's fields: ``task_id``, ``seed``, ``env_kwargs`` (all optional).
        env_id: the registered id (:func:`register` sets it per SkyRL id).
    """

    def __init__(
        self, env_config: Any = None, extras: dict[str, Any] | None = None, env_id: str = ""
    ) -> None:
        super().__init__()
        if not env_id:
            raise ValueError("SkyRLTextEnv needs env_id (skyrl_gym.make an agentenvs/* id)")
        extras = dict(extras or {})
        kwargs = {**dict((env_config or {}).get("env_kwargs", {})), **extras.get("env_kwargs", {})}
        self.env = gym.make(env_id, **kwargs)
        self.task_id = extras.get("task_id")
        self.seed = extras.get("seed")
        self.max_turns = int(getattr(self.env.unwrapped, "max_steps", 0) or 1 << 30)

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """Reset (``extras``' task and seed); the first observation follows ``prompt``."""
        options = None if self.task_id is None else {"task_id": self.task_id}
        obs, info = self.env.reset(seed=self.seed, options=options)
        self.turns = 0
        return [*(prompt or []), {"role": "user", "content": str(obs)}], {"info": info}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One turn: ``env.step(action)``; see the module docstring for the fields."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        done = bool(terminated or truncated)
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": str(obs)}],
            reward=float(reward),
            done=done,
            metadata={"info": info, "terminated": bool(terminated), "truncated": bool(truncated)},
        )

    def close(self) -> None:
        self.env.close()


def register() -> list[str]:
    """Add every ``agentenvs/*`` Gymnasium id to SkyRL-gym's registry (idempotent); returns them."""
    import agentenvs.registration

    ids = list(agentenvs.registration.ENV_IDS)
    for env_id in ids:
        if env_id not in registration.registry:
            registration.register(
                id=env_id, entry_point=f"{__name__}:SkyRLTextEnv", kwargs={"env_id": env_id}
            )
    return ids
