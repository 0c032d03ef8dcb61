"""What the trainer needs from its envs, typed: groups, prompts, task panel, credit method name.

This module holds:

* :data:`EnvSource` - what a :class:`~agentenvs.learners.llm.trainer.Trainer` is given: env factories (or
  envs), each a single-env credit wrapper, or a vector credit wrapper over a grouped vector env.
* :class:`TaskSplits` - the part of an env's task panel the trainer reads (``splits``, ``ids``).
* :class:`TrainerEnvs` - the protocol the trainer works against: play one credited group per
  env (or block) on given tasks, the agent prompts, the eval envs, the task panel, the name
  of the credit method and the wrappers' credit states (what a checkpoint saves).
* :class:`CreditedEnvs` - that protocol over an :data:`EnvSource` (the only place the trainer's
  package probes envs with ``get_wrapper_attr``).
* :func:`choose_tasks` - the training task ids and the evaluated splits, from the config or the
  panel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import gymnasium as gym
from agentenvs.learners.llm.config import TrainConfig
from agentenvs.learners.llm.rollout import (
    Sampler,
    block_size,
    collect_parallel,
    collect_sequential,
    prompts_of,
)

from agentenvs.core import AgentPrompt, Trajectory
from agentenvs.vector import group_size_of

__all__ = ["EnvSource", "TaskSplits", "TrainerEnvs", "CreditedEnvs", "choose_tasks", "spread"]

#: What the trainer is given: env factories / envs (single credit wrappers) or a vector credit
#: wrapper.
EnvSource = Sequence[Callable[[], gym.Env] | gym.Env] | gym.vector.VectorEnv


class TaskSplits(Protocol):
    """An env's named splits of task ids (:class:`agentenvs.core.tasks.TaskPanel` is one)."""

    @property
    def splits(self) -> Sequence[str]: ...

    def ids(self, split: str) -> Sequence[str]: ...


class TrainerEnvs(Protocol):
    """What the trainer needs from its envs.

    Attributes:
        num_groups: credited groups one :meth:`play_groups` call hands out (envs or blocks).
        prompts: the agent prompt of each training env (of each sub-env of a vector env).
        eval_envs: uncredited single envs for evaluation (``None``: none available).
        eval_prompts: the agent prompt of each eval env.
    """

    num_groups: int
    prompts: list[AgentPrompt]
    eval_envs: list[gym.Env] | None
    eval_prompts: list[AgentPrompt]

    def play_groups(
        self, tasks: Sequence[str], sample: Sampler
    ) -> tuple[list[list[Trajectory]], int]:
        """Play one group per task id; the complete credited groups and how many were dropped."""
        ...

    def episodes_per_call(self) -> int:
        """Episodes one :meth:`play_groups` call plays (for its progress bar)."""
        ...

    def task_panel(self) -> TaskSplits | None:
        """The env's task panel, ``None`` without one."""
        ...

    def credit_method_name(self) -> str | None:
        """The canonical name of the credit method the wrappers apply, ``None`` if unknown."""
        ...

    def credit_states(self) -> list[Any]:
        """The credit wrappers' states (:class:`agentenvs.wrappers.CreditState`), each once, in
        env order: what a checkpoint saves and restores through their ``state_dict()`` /
        ``load_state_dict()``."""
        ...

    def close(self) -> None:
        """Close every env this object opened or was given to own."""
        ...


def _make(env: Callable[[], gym.Env] | gym.Env) -> gym.Env:
    return env if isinstance(env, gym.Env) else env()


def _credit_method_name(env: gym.Env | gym.vector.VectorEnv) -> str | None:
    """The canonical name of the credit method ``env``'s wrapper applies; ``None`` if unknown."""
    try:
        entry = env.get_wrapper_attr("credit_method") if isinstance(env, gym.Env) else None
    except AttributeError:
        entry = None
    entry = entry or getattr(env, "credit_method", None)
    return getattr(entry, "name", None)


def _credit_state(env: gym.Env | gym.vector.VectorEnv) -> Any:
    """The credit state of ``env``'s wrapper; ``None`` when it has none."""
    if isinstance(env, gym.Env):
        try:
            return env.get_wrapper_attr("credit_state")
        except AttributeError:
            return None
    return getattr(env, "credit_state", None)


def _task_panel(env: gym.Env | gym.vector.VectorEnv) -> Any:
    try:
        if isinstance(env, gym.vector.VectorEnv):
            # every vector env we build has get_attr (gymnasium's, ours); the base class has none
            return env.unwrapped.get_attr("tasks")[0]  # type: ignore[attr-defined]
        return env.get_wrapper_attr("tasks")
    except AttributeError:
        return None


class CreditedEnvs:
    """:class:`TrainerEnvs` over an :data:`EnvSource`: make the training envs (and the eval envs)
    and ask each for its prompt (``prompt_style``, ``history_length``: see
    :class:`~agentenvs.learners.llm.config.TrainConfig`).

    Eval envs default to the base envs (``env.unwrapped``) of the training envs (of a synchronous
    vector env's sub-envs); eval envs given here are owned (closed) too.
    """

    def __init__(
        self,
        envs: EnvSource,
        eval_envs: Sequence[Callable[[], gym.Env] | gym.Env] | None,
        prompt_style: str,
        history_length: int | None,
    ) -> None:
        style, history = prompt_style, history_length
        if isinstance(envs, gym.vector.VectorEnv):
            self.vector_env: gym.vector.VectorEnv | None = envs
            self.envs: list[gym.Env] = []
            self.num_groups = envs.num_envs // block_size(envs)
            self.prompts = prompts_of(envs, style, history)
            subs = getattr(envs.unwrapped, "envs", None)  # a synchronous vector env's sub-envs
            default_eval = None if subs is None else [e.unwrapped for e in subs]
        else:
            self.vector_env = None
            self.envs = [_make(e) for e in envs]
            if not self.envs:
                raise ValueError("the trainer needs at least one env")
            self.num_groups = len(self.envs)
            self.prompts = [p for e in self.envs for p in prompts_of(e, style, history)]
            default_eval = [e.unwrapped for e in self.envs]
        self._own_eval = eval_envs is not None
        self.eval_envs = [_make(e) for e in eval_envs] if eval_envs is not None else default_eval
        self.eval_prompts = [p for e in self.eval_envs or [] for p in prompts_of(e, style, history)]

    @property
    def _source(self) -> gym.Env | gym.vector.VectorEnv:
        return self.vector_env if self.vector_env is not None else self.envs[0]

    def play_groups(
        self, tasks: Sequence[str], sample: Sampler
    ) -> tuple[list[list[Trajectory]], int]:
        """:func:`~agentenvs.learners.llm.rollout.collect_parallel` on the vector env, else
        :func:`~agentenvs.learners.llm.rollout.collect_sequential` (which drops no group)."""
        if self.vector_env is not None:
            return collect_parallel(self.vector_env, tasks, self.prompts, sample)
        return collect_sequential(self.envs, tasks, self.prompts, sample), 0

    def episodes_per_call(self) -> int:
        if self.vector_env is not None:
            return self.vector_env.num_envs
        return sum(group_size_of(env) for env in self.envs)

    def task_panel(self) -> TaskSplits | None:
        return _task_panel(self._source)

    def credit_method_name(self) -> str | None:
        return _credit_method_name(self._source)

    def credit_states(self) -> list[Any]:
        envs = [self.vector_env] if self.vector_env is not None else self.envs
        found = [_credit_state(env) for env in envs]
        distinct = {id(s): s for s in found if s is not None}  # a shared state counts once
        return list(distinct.values())

    def close(self) -> None:
        for env in [*self.envs, *(self.eval_envs if self._own_eval and self.eval_envs else [])]:
            env.close()
        if self.vector_env is not None:
            self.vector_env.close()


def spread(ids: Sequence[str], n: int) -> list[str]:
    """``n`` of ``ids`` evenly spaced in their order (all of them when ``n >= len(ids)``): a fixed
    sample that covers a panel sorted by task type.

    >>> spread("abcdefgh", 3), spread("abc", 5)
    (['a', 'c', 'f'], ['a', 'b', 'c'])
    """
    if n >= len(ids):
        return list(ids)
    return [ids[i * len(ids) // n] for i in range(n)]


def choose_tasks(
    config: TrainConfig, envs: TrainerEnvs
) -> tuple[Sequence[str], dict[str, list[str]]]:
    """The training task ids and the evaluated splits (split -> ``eval_tasks`` of its ids, evenly
    spaced in the panel's order, :func:`spread`; splits left empty are dropped), from the config
    or the panel."""
    panel = envs.task_panel()
    train_ids = config.train_tasks or (panel.ids("train") if panel is not None else None)
    if not train_ids:
        raise ValueError(
            "no training tasks: the env has no task panel (env.unwrapped.tasks); pass "
            "TrainConfig(train_tasks=[...])"
        )
    if config.test_tasks is not None:
        chosen = {"test": list(config.test_tasks)}
    else:
        names: Sequence[str] | None = config.eval_splits
        if names is None:
            have = panel.splits if panel is not None else []
            names = [s for s in have if s == "test" or s.startswith("test_")]
        elif panel is None:
            raise ValueError("eval_splits needs the env's task panel (env.unwrapped.tasks)")
        # without a panel, names is empty
        chosen = {s: spread(panel.ids(s), config.eval_tasks) for s in names} if panel else {}
    eval_splits = {s: ids for s, ids in chosen.items() if ids}
    if eval_splits and not envs.eval_envs:
        raise ValueError(
            "evaluation needs single envs: pass eval_envs=[...] (an asynchronous vector env "
            "does not expose its sub-envs), or TrainConfig(eval_tasks=0)"
        )
    return train_ids, eval_splits
