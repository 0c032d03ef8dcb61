"""Env workers that can be rebuilt after a crash: the worker itself and the log that rebuilds it.

This module holds:

* :class:`EnvWorker` - a few sub-envs in one process with Gymnasium's ``NEXT_STEP`` autoreset (a
  sub-env whose episode ended is reset by its next ``step`` call, which returns the reset's
  observation with reward 0). :class:`agentenvs.RayVectorEnv` runs one per Ray actor; nothing here
  imports Ray, so the worker is tested in-process too.
* :class:`Journal` - what the driver remembers of one sub-env to rebuild it in a fresh worker: the
  calls since the last episode boundary it can restart from.
* :func:`rng_state_of` - an env's ``rng_state`` (``None`` when it has none).
* :func:`same_observation` - equality of two observations (text, arrays, dicts, tuples).

How a sub-env is rebuilt. Its journal is replayed in a fresh worker: ``set_attr`` calls, resets and
the actions since. An env with an ``rng_state`` attribute (every :class:`~agentenvs.core.TextAgentEnv`:
its ``np_random`` and task-stream states) and a ``task_id`` in its reset info starts a fresh journal
at every reset: the last value of each attribute set so far, ``reset(options={"task_id": ...})`` (the
same task id always gives the same initial state) and the ``rng_state`` the reset left, so a replay
costs at most one episode.
An env without them keeps its whole history, which replays exactly when the env is deterministic
given the seeds it was reset with. The replay's last observation must equal the one the driver
handed out; otherwise the episode cannot be rebuilt (the driver reports an infrastructure failure).

>>> import gymnasium as gym, agentenvs
>>> make = lambda: gym.make("agentenvs/Sokoban-v0", action_format="plain")
>>> worker, journal = EnvWorker([make]), Journal()
>>> (obs, info, snapshot), = worker.reset([(0, 5, None)])
>>> journal.on_reset(5, None, info, snapshot)
>>> for action in ["up", "left"]:
...     (obs, reward, terminated, truncated, info, *_), = worker.step([(0, action)])
...     journal.on_step(action)
>>> fresh = EnvWorker([make])
>>> same_observation(fresh.restore(0, journal.entries), obs)
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["EnvWorker", "Journal", "rng_state_of", "same_observation"]

#: One journal entry: ``("set_attr", name, value)``, ``("reset", seed, options)``,
#: ``("rng", state)`` or ``("step", action)``.
Entry = tuple[Any, ...]


def rng_state_of(env: gym.Env) -> Any:
    """``env``'s ``rng_state`` (through its wrappers), or ``None`` if it has none."""
    try:
        return env.get_wrapper_attr("rng_state")
    except AttributeError:
        return None


def same_observation(a: Any, b: Any) -> bool:
    """Whether two observations are equal: strings, numbers, arrays, and dicts/tuples of them.

    >>> same_observation({"text": "a", "image": np.zeros(2)}, {"text": "a", "image": np.zeros(2)})
    True
    >>> same_observation(("a", np.ones(1)), ("a", np.zeros(1)))
    False
    """
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same_observation(a[k], b[k]) for k in a)
        )
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same_observation(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


class Journal:
    """The calls that rebuild one sub-env's current state in a fresh worker (see the module doc)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def on_set_attr(self, name: str, value: Any) -> None:
        self.entries.append(("set_attr", name, value))

    def on_reset(
        self, seed: int | None, options: dict[str, Any] | None, info: dict[str, Any], snapshot: Any
    ) -> None:
        """After a reset (explicit or autoreset) that returned ``info``, with the env's
        ``rng_state`` just after it (``snapshot``, ``None`` if the env has none)."""
        if snapshot is not None and "task_id" in info:
            options = {**(options or {}), "task_id": info["task_id"]}
            attrs = {e[1]: e for e in self.entries if e[0] == "set_attr"}  # the last value each
            self.entries = [*attrs.values(), ("reset", seed, options), ("rng", snapshot)]
        else:
            self.entries.append(("reset", seed, options))

    def on_step(self, action: Any) -> None:
        self.entries.append(("step", action))


class EnvWorker:
    """Sub-envs built from ``env_fns`` in this process, with Gymnasium's ``NEXT_STEP`` autoreset
    (or ``SAME_STEP`` with ``same_step=True``: a step that ends an episode resets it at once).

    Requests and results are per sub-env, addressed by the index in ``env_fns``; a reset's result
    carries the env's ``rng_state`` after it, for the driver's :class:`Journal`.
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], same_step: bool = False) -> None:
        self.envs = [fn() for fn in env_fns]
        self.same_step = same_step
        self._autoreset = [False] * len(self.envs)

    def spaces(self) -> dict[str, Any]:
        """The first env's spaces, metadata, render mode and spec (for the vector env)."""
        env = self.envs[0]
        return {
            "observation_space": env.observation_space,
            "action_space": env.action_space,
            "metadata": env.metadata,
            "render_mode": env.render_mode,
            "spec": env.spec,
        }

    def reset(self, requests: Sequence[tuple[int, int | None, dict[str, Any] | None]]) -> list:
        """``env.reset(seed=seed, options=options)`` for each ``(index, seed, options)``; returns
        ``(obs, info, rng_state)`` each."""
        out = []
        for i, seed, options in requests:
            obs, info = self.envs[i].reset(seed=seed, options=options)
            self._autoreset[i] = False
            out.append((obs, info, rng_state_of(self.envs[i])))
        return out

    def step(self, requests: Sequence[tuple[int, Any]]) -> list:
        """Step each ``(index, action)``; returns ``(obs, reward, terminated, truncated, info,
        was_reset, rng_state, final)`` each. ``NEXT_STEP``: a sub-env whose episode ended is reset
        instead (``was_reset``; reward 0, not terminated or truncated). ``SAME_STEP``: a step that
        ends the episode also resets it (``was_reset``; ``obs`` and ``info`` are the reset's,
        ``final`` the episode's last ``(obs, info)``). ``rng_state`` is the env's after a reset
        (``None`` otherwise); ``final`` is ``None`` unless ``SAME_STEP`` reset."""
        out = []
        for i, action in requests:
            env = self.envs[i]
            if self._autoreset[i]:
                obs, info = env.reset()
                self._autoreset[i] = False
                out.append((obs, 0.0, False, False, info, True, rng_state_of(env), None))
                continue
            obs, reward, terminated, truncated, info = env.step(action)
            done = bool(terminated or truncated)
            result = [
                obs,
                float(reward),
                bool(terminated),
                bool(truncated),
                info,
                False,
                None,
                None,
            ]
            if done and self.same_step:
                result[7] = (obs, info)
                result[0], result[4] = env.reset()
                result[5], result[6] = True, rng_state_of(env)
            else:
                self._autoreset[i] = done
            out.append(tuple(result))
        return out

    def restore(self, index: int, entries: Sequence[Entry]) -> Any:
        """Replay a :class:`Journal`'s ``entries`` on sub-env ``index``; return the last
        observation (``None`` if the journal holds no reset or step)."""
        env, obs = self.envs[index], None
        for kind, *args in entries:
            if kind == "set_attr":
                env.set_wrapper_attr(args[0], args[1])
            elif kind == "rng":
                env.set_wrapper_attr("rng_state", args[0])
            elif kind == "reset":
                obs, _ = env.reset(seed=args[0], options=args[1])
                self._autoreset[index] = False
            else:
                obs, _, terminated, truncated, _ = env.step(args[0])
                self._autoreset[index] = bool(terminated or truncated)
        return obs

    def abandon(self, index: int) -> tuple | None:
        """Give up sub-env ``index``'s episode: ``NEXT_STEP``: its next ``step`` resets it (returns
        ``None``); ``SAME_STEP``: reset it now (returns ``(obs, info, rng_state)``)."""
        if not self.same_step:
            self._autoreset[index] = True
            return None
        return self.reset([(index, None, None)])[0]

    def wrapped(self, indices: Sequence[int], wrapper_class: type) -> list[bool]:
        """Whether each sub-env has a ``wrapper_class`` wrapper in its stack."""
        out = []
        for i in indices:
            env, found = self.envs[i], False
            while isinstance(env, gym.Wrapper) and not found:
                found, env = isinstance(env, wrapper_class), env.env
            out.append(found)
        return out

    def call(self, indices: Sequence[int], name: str, args: tuple, kwargs: dict) -> list:
        """``env.get_wrapper_attr(name)(*args, **kwargs)`` (or the attribute) per sub-env."""
        out = []
        for i in indices:
            value = self.envs[i].get_wrapper_attr(name)
            out.append(value(*args, **kwargs) if callable(value) else value)
        return out

    def set_attr(self, values: Sequence[tuple[int, Any]], name: str) -> None:
        """``env.set_wrapper_attr(name, value)`` for each ``(index, value)``."""
        for i, value in values:
            self.envs[i].set_wrapper_attr(name, value)

    def close(self) -> None:
        for env in self.envs:
            env.close()
