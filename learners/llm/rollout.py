"""The rollout engine: one LLM sample per environment step, batched over every active sub-env.

This module holds:

* :class:`RolloutStats` - counts and wall-clock split (generation vs environment) of a rollout.
* :func:`run_episodes` - play one episode in each of a list of envs, each on a given task id;
  finished envs drop out of the batch (no tokens are generated for them).
* :func:`collect_groups` - the grouped form: block ``b`` of a :class:`~agentenvs.GroupedVectorEnv`
  plays ``block_tasks[b]`` with all its ``group_size`` members; returns one group
  (list of :class:`~agentenvs.Trajectory`) per block, ready for ``wrappers.assign_advantages``.
* :func:`sub_envs` - the individual sub-envs of a synchronous (grouped) vector env.

The env receives the builder's ``response_prefix`` followed by the sampled text (``Step.action``
holds that full text); the prefix tokens belong to ``prompt_ids``. Every :class:`~agentenvs.Step` keeps what the learner needs in ``extras``: ``prompt_ids``
(int32 array), ``response_ids`` (int32 array, ending with the stop token when the model stopped)
and ``logprobs`` (float32 array, sampling policy, same length as ``response_ids``).
Episodes are started with an explicit ``options={"task_id": ...}``, so what the learner plays is
decided by its task cursor alone and a resumed run replays the same tasks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentenvs.core.trajectory import Step, Trajectory
from learners.llm.policy import Policy
from learners.llm.prompts import EpisodeMemory, PromptBuilder

__all__ = ["RolloutStats", "run_episodes", "collect_groups", "sub_envs"]


@dataclass
class RolloutStats:
    """What a rollout cost. Times in seconds, tokens are generated response tokens."""

    generate_s: float = 0.0
    env_s: float = 0.0
    tokens: int = 0
    steps: int = 0
    valid_steps: int = 0

    def add(self, other: RolloutStats) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def sub_envs(vector_env: Any) -> list[Any]:
    """The sub-envs of a synchronous vector env (grouped or not), in index order.

    Raises:
        TypeError: for vector envs that do not expose their sub-envs (e.g. ``AsyncVectorEnv``); the
            engine steps only the active sub-envs, which the batched vector API cannot do.
    """
    envs = getattr(vector_env.unwrapped, "envs", None)
    if envs is None:
        raise TypeError(
            f"{type(vector_env.unwrapped).__name__} does not expose its sub-envs; the LLM rollout "
            "needs vectorization_mode='sync' (generation, not env stepping, is the bottleneck)"
        )
    return list(envs)


def run_episodes(
    envs: Sequence[Any],
    task_ids: Sequence[str],
    policy: Policy,
    generator: Any,
    prompt: PromptBuilder,
    *,
    greedy: bool = False,
) -> tuple[list[Trajectory], RolloutStats]:
    """Play one episode of ``task_ids[i]`` in ``envs[i]`` for every ``i``; return them in order.

    Each turn renders the prompt of every still-running env, generates all responses in one
    batched call, then steps those envs with the raw response text.
    """
    if len(envs) != len(task_ids):
        raise ValueError(f"{len(envs)} envs but {len(task_ids)} task ids")
    stats = RolloutStats()
    t0 = time.perf_counter()
    obs, infos = [], []
    for env, task in zip(envs, task_ids, strict=True):
        o, info = env.reset(options={"task_id": task})
        obs.append(o)
        infos.append(info)
    stats.env_s += time.perf_counter() - t0
    memories = [EpisodeMemory() for _ in envs]
    trajs = [Trajectory(task_id=str(info["task_id"]), group_id="") for info in infos]
    active = list(range(len(envs)))
    prefix = prompt.response_prefix
    while active:
        prompts = [
            policy.chat_ids(prompt.prompt(memories[i], obs[i], infos[i]), prompt.examples, prefix)
            for i in active
        ]
        t0 = time.perf_counter()
        samples = generator.generate(prompts, greedy=greedy)
        stats.generate_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        still = []
        for i, ids, sample in zip(active, prompts, samples, strict=True):
            text = prefix + sample.text
            o, reward, terminated, truncated, info = envs[i].step(text)
            trajs[i].steps.append(
                Step(
                    observation=obs[i],
                    action=text,
                    reward=float(reward),
                    terminated=bool(terminated),
                    truncated=bool(truncated),
                    state_key=infos[i].get("state_key"),
                    next_state_key=info.get("state_key"),
                    action_valid=bool(info.get("action_valid", True)),
                    extras={
                        "prompt_ids": np.asarray(ids, dtype=np.int32),
                        "response_ids": np.asarray(sample.token_ids, dtype=np.int32),
                        "logprobs": np.asarray(sample.logprobs, dtype=np.float32),
                    },
                )
            )
            memories[i].record(obs[i], prompt.project(text))
            stats.tokens += len(sample.token_ids)
            stats.steps += 1
            stats.valid_steps += int(bool(info.get("action_valid", True)))
            obs[i], infos[i] = o, info
            if terminated or truncated:
                trajs[i].success = bool(info.get("won", False))
            else:
                still.append(i)
        stats.env_s += time.perf_counter() - t0
        active = still
    return trajs, stats


def collect_groups(
    vector_env: Any,
    block_tasks: Sequence[str],
    policy: Policy,
    generator: Any,
    prompt: PromptBuilder,
    *,
    group_tag: str = "",
    greedy: bool = False,
) -> tuple[list[list[Trajectory]], RolloutStats]:
    """One group per block: every member of block ``b`` plays ``block_tasks[b]`` once.

    ``len(block_tasks)`` may be smaller than the number of blocks (the rest stay idle). Group ids
    are ``f"{group_tag}{b}"``; trajectory ids are the member index inside the block.
    """
    size = vector_env.group_size
    envs = sub_envs(vector_env)
    if len(block_tasks) * size > len(envs):
        raise ValueError(f"{len(block_tasks)} tasks need {len(block_tasks)} blocks of {size} envs")
    tasks = [t for t in block_tasks for _ in range(size)]
    trajs, stats = run_episodes(envs[: len(tasks)], tasks, policy, generator, prompt, greedy=greedy)
    groups = []
    for b in range(len(block_tasks)):
        group = trajs[b * size : (b + 1) * size]
        for member, traj in enumerate(group):
            traj.group_id, traj.traj_id = f"{group_tag}{b}", str(member)
        groups.append(group)
    return groups, stats
