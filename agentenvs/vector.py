"""Group-structured vector envs: blocks of ``group_size`` sub-envs that share one task per episode.

This module holds :class:`GroupedVectorEnv`, :func:`make_group_vec_env`, :func:`sub_observation`, :func:`sub_info`
(one sub-env's info from a vector env's batched ``infos``), :func:`check_group_size`,
:data:`DEFAULT_GROUP_SIZE`, the one default of every ``group_size`` in the project (the credit
wrappers, :func:`make_group_vec_env`, the learners' env builders), and :func:`group_size_of`, the
one way to read an env's group size.

Sub-env ``i`` belongs to block ``i // group_size``. All members of a block get the same
``task_stream_seed``, so their k-th episodes play the same task from the same initial state, whatever
order they finish in (Gymnasium's per-sub-env autoreset included). Group ``k`` of block ``b`` is
therefore the k-th episode of every member of block ``b``: the unit every credit method needs.

>>> import agentenvs
>>> envs = make_group_vec_env("agentenvs/Sokoban-v0", num_groups=2, group_size=3)
>>> _, infos = envs.reset(seed=0)
>>> ids = list(infos["task_id"])
>>> ids[0] == ids[1] == ids[2], ids[3] == ids[4] == ids[5]
(True, True)
>>> envs.close()
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = [
    "GroupedVectorEnv",
    "make_group_vec_env",
    "sub_observation",
    "sub_info",
    "check_group_size",
    "group_size_of",
    "DEFAULT_GROUP_SIZE",
]

#: Episodes (or sub-envs) per group wherever a group size is not given: 8, a common GRPO group.
DEFAULT_GROUP_SIZE = 8


def check_group_size(group_size: Any, name: str = "group_size") -> int:
    """``group_size`` if it is an int >= 1 (episodes or sub-envs per group).

    >>> check_group_size(2.5)
    Traceback (most recent call last):
    ...
    TypeError: group_size must be an int >= 1, got 2.5 (float)
    """
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)):
        raise TypeError(
            f"{name} must be an int >= 1, got {group_size!r} ({type(group_size).__name__})"
        )
    if group_size < 1:
        raise ValueError(f"{name} must be an int >= 1, got {group_size}")
    return int(group_size)


def group_size_of(env: gym.Env | gym.vector.VectorEnv) -> int:
    """The group size of ``env``: the ``group_size`` of the outermost layer of its wrapper chain
    that has one. A :class:`~agentenvs.wrappers.CreditWrapper` or
    :class:`~agentenvs.wrappers.VectorCreditWrapper` (its assembler's), a
    :class:`~agentenvs.GroupedVectorEnv` (its block size), or a credit wrapper of one's own that
    declares an int ``group_size`` (what the learners need of a wrapper that hands out groups in
    ``info["credit"]``).

    Every part of the project that needs a group size reads it here; there is no fallback. Where
    a group size is not given, the one default is :data:`agentenvs.vector.DEFAULT_GROUP_SIZE`
    (8), which the wrappers and env builders use.

    Raises:
        ValueError: ``env`` has neither (an env without credit has no group size).

    >>> import gymnasium as gym, agentenvs
    >>> envs = make_group_vec_env("agentenvs/Sokoban-v0", num_groups=1, group_size=3)
    >>> group_size_of(envs), DEFAULT_GROUP_SIZE
    (3, 8)
    >>> envs.close()
    >>> group_size_of(gym.make("agentenvs/Sokoban-v0"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: OrderEnforcing has no group size: ...
    """
    inner: Any = env
    while True:
        declared = getattr(inner, "group_size", None)  # wrappers do not forward attributes
        if declared is not None:
            return check_group_size(declared)
        if not isinstance(inner, (gym.Wrapper, gym.vector.VectorWrapper)):
            break
        inner = inner.env
    raise ValueError(
        f"{type(env).__name__} has no group size: wrap the env in a credit wrapper "
        "(agentenvs.wrappers.CreditWrapper(env, group_size=...), default "
        f"agentenvs.vector.DEFAULT_GROUP_SIZE = {DEFAULT_GROUP_SIZE}), or build a grouped "
        "vector env (agentenvs.make_group_vec_env) under a VectorCreditWrapper"
    )


class GroupedVectorEnv(gym.vector.VectorWrapper):
    """Give each block of ``group_size`` consecutive sub-envs one shared task sequence.

    Args:
        env: a vector env whose sub-envs are :class:`~agentenvs.core.TextAgentEnv` (or expose a
            ``task_stream_seed`` attribute with the same meaning).
        group_size: sub-envs per block; must divide ``env.num_envs``.
    """

    def __init__(self, env: gym.vector.VectorEnv, group_size: int) -> None:
        super().__init__(env)
        group_size = check_group_size(group_size)
        if env.num_envs % group_size:
            raise ValueError(f"group_size {group_size} must divide num_envs {env.num_envs}")
        self.group_size = group_size
        self.num_groups = env.num_envs // group_size
        self._streams_set = False

    def block_of(self, env_index: int) -> int:
        """The block (group slot) of sub-env ``env_index``."""
        return env_index // self.group_size

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs; a ``seed`` (or the first reset) deals new task streams to the blocks."""
        if seed is not None or not self._streams_set:
            block_seeds = np.random.SeedSequence(seed).generate_state(
                self.num_groups, dtype=np.uint64
            )
            per_env = [int(block_seeds[self.block_of(i)]) for i in range(self.num_envs)]
            if not self._streams_set:
                self._check_task_streams()
            self.env.set_attr("task_stream_seed", per_env)  # type: ignore[attr-defined]  # checked above
            self._streams_set = True
        return self.env.reset(seed=seed, options=options)

    def _check_task_streams(self) -> None:
        """``TypeError`` unless the sub-envs have a ``task_stream_seed`` attribute (without it the
        members of a block would draw different tasks)."""
        try:
            # Gymnasium's sync, async and our vector envs have get_attr; the base class has none.
            self.env.get_attr("task_stream_seed")  # type: ignore[attr-defined]
        except AttributeError:
            raise TypeError(
                "the sub-envs of a grouped vector env need a task_stream_seed attribute (an int "
                "seed, or None, of the generator that draws each reset's task), so that every "
                "member of a block plays the same task: subclass agentenvs.core.TextAgentEnv, or "
                "add the attribute (docs/custom-env.md)"
            ) from None


def make_group_vec_env(
    env_id: str,
    num_groups: int,
    group_size: int = DEFAULT_GROUP_SIZE,
    vectorization_mode: str = "sync",
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> GroupedVectorEnv:
    """``gym.make_vec`` with ``num_groups * group_size`` sub-envs, grouped in blocks.

    Args:
        env_id: a registered id, e.g. ``"agentenvs/Sokoban-v0"``.
        num_groups: number of blocks (distinct tasks played at once).
        group_size: sub-envs per block (rollouts per task; default :data:`DEFAULT_GROUP_SIZE`).
        vectorization_mode: ``"sync"``, ``"async"`` (Gymnasium's) or ``"ray"``
            (:class:`~agentenvs.ray_vector.RayVectorEnv`: sub-envs in Ray actors).
        vector_kwargs: keyword arguments of the vector env (for ``"ray"``: ``num_workers``,
            ``max_restarts``, ``timeout``, ``worker_options``, ``address``).
        env_kwargs: forwarded to every sub-env.

    Raises:
        TypeError / ValueError: ``num_groups`` or ``group_size`` not an int >= 1.
    """
    num_envs = check_group_size(num_groups, "num_groups") * check_group_size(group_size)
    if vectorization_mode == "ray":
        from agentenvs.ray_vector import RayVectorEnv, make_env

        factory = functools.partial(make_env, env_id, **env_kwargs)
        envs: gym.vector.VectorEnv = RayVectorEnv([factory] * num_envs, **(vector_kwargs or {}))
    elif vectorization_mode in ("sync", "async"):
        envs = gym.make_vec(
            env_id,
            num_envs=num_envs,
            vectorization_mode=vectorization_mode,
            vector_kwargs=vector_kwargs,
            **env_kwargs,
        )
    else:
        raise ValueError(
            f"vectorization_mode must be 'sync', 'async' or 'ray', got {vectorization_mode!r}"
        )
    return GroupedVectorEnv(envs, group_size)


def sub_observation(observations: Any, i: int) -> Any:
    """The observation of sub-env ``i`` from a vector env's batched observations: a ``Dict``
    space's dict of batches (a visual env's ``{"text", "image"}``) gives a dict of each key's
    ``i``-th entry; any other batch its ``i``-th entry.

    >>> sub_observation({"text": ("a", "b"), "image": [[0], [1]]}, 1)
    {'text': 'b', 'image': [1]}
    >>> sub_observation(("room 1", "room 2"), 0)
    'room 1'
    """
    if isinstance(observations, dict):
        return {key: sub_observation(value, i) for key, value in observations.items()}
    return observations[i]


def sub_info(infos: dict[str, Any], i: int, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The info of sub-env ``i`` from a vector env's batched ``infos``.

    Each key's ``i``-th entry, without the keys Gymnasium marks absent for ``i``
    (``infos["_key"][i]`` false) and without the mask entries themselves; ``keys`` limits it to
    those keys. Every value of ``infos`` read must be per sub-env; a dict-valued info entry (which
    Gymnasium batches as a dict of batches) is unbatched the same way.

    >>> sub_info({"won": [True, False], "_won": [True, True], "x": [1, 0], "_x": [False, True]}, 0)
    {'won': True}
    >>> sub_info({"goal": {"asin": ["A", "B"], "_asin": [True, True]}, "_goal": [True, True]}, 1)
    {'goal': {'asin': 'B'}}
    """
    out = {}
    for key in infos if keys is None else keys:
        if key.startswith("_") or key not in infos:
            continue
        present = infos.get(f"_{key}")
        if present is None or present[i]:
            value = infos[key]
            out[key] = sub_info(value, i) if isinstance(value, dict) else value[i]
    return out
