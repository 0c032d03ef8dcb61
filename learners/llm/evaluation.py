"""Evaluation: uncredited episodes on each test split's tasks, and the before/after gains.

This module holds :class:`Evaluator` (one episode per task of a split and decoding mode, batched
over the eval envs, shared out across ``torchrun`` ranks, every outcome logged) and
:func:`outcome_gains` (the per-task change of success, valid-action share and goal-directed
episodes since the first evaluation, with its 95% interval).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import torch
from agentenvs.learners.llm.config import TrainConfig
from agentenvs.learners.llm.distributed import Distributed
from agentenvs.learners.llm.intervals import paired_difference
from agentenvs.learners.llm.metrics import MetricsLogger, eval_label, rollout_metrics
from agentenvs.learners.llm.policy import Policy
from agentenvs.learners.llm.rollout import Sampler, episode_bar, play_episodes

from agentenvs.core import AgentPrompt
from agentenvs.core.trajectory import Step, Trajectory

__all__ = ["Evaluator", "outcome_gains", "GAIN_FIELDS"]


def _goal_mark(extras: Mapping[str, Any]) -> dict[str, Any]:
    return {"goal_directed": extras["goal_directed"]} if "goal_directed" in extras else {}


def _outcome(traj: Trajectory) -> Trajectory:
    """What evaluation logs of an episode (no observations, actions or extras but the
    goal-directed mark): cheap to gather."""
    steps = [
        Step(None, None, s.reward, action_valid=s.action_valid, extras=_goal_mark(s.extras))
        for s in traj.steps
    ]
    return Trajectory(traj.task_id, traj.group_id, steps, traj.success, traj.traj_id)


class Evaluator:
    """Plays evaluation episodes with ``policy`` through ``generator`` on ``eval_envs``.

    Args:
        config: the run configuration (``eval_modes``, ``stop_at_action_end``).
        policy, generator: the trained policy and its sampling backend.
        dist: this process's place in a ``torchrun`` job.
        eval_envs, eval_prompts: uncredited single envs and their agent prompts.
        full_weights: a context in which every rank holds the whole model (FSDP; see
            :func:`agentenvs.learners.llm.parallel.full_weights`).
        progress: draw a tqdm bar of episodes per split and decoding on stderr.
    """

    def __init__(
        self,
        config: TrainConfig,
        policy: Policy,
        generator: Any,
        dist: Distributed,
        eval_envs: Sequence[gym.Env] | None,
        eval_prompts: Sequence[AgentPrompt],
        full_weights: Callable[[], contextlib.AbstractContextManager[None]],
        *,
        progress: bool = False,
    ) -> None:
        self.progress = progress
        self.config = config
        self.policy = policy
        self.generator = generator
        self.dist = dist
        self.eval_envs = eval_envs
        self.eval_prompts = eval_prompts
        self.full_weights = full_weights

    def evaluate(
        self,
        splits: Mapping[str, Sequence[str]],
        iteration: int,
        logger: MetricsLogger | None,
    ) -> dict[str, float]:
        """One episode per task of each split and decoding mode (``config.eval_modes``); each
        outcome goes to ``logger`` (``eval_outcomes.jsonl``) under ``iteration``, split and mode.
        Sampling here never disturbs the training RNG stream. Returns ``eval/<label>/``-prefixed
        metrics, one label per split and mode (:func:`~agentenvs.learners.llm.metrics.eval_label`).

        Under world size > 1 (call on every rank) each rank plays its contiguous share of each
        split's tasks; every rank returns the metrics of all of them (``time``: the slowest
        rank's)."""
        metrics: dict[str, float] = {}
        for split, tasks in splits.items():
            if tasks:
                metrics.update(self._evaluate_split(split, list(tasks), iteration, logger))
        return metrics

    def _evaluate_split(
        self, split: str, tasks: list[str], iteration: int, logger: MetricsLogger | None
    ) -> dict[str, float]:
        """:meth:`evaluate` on one split's tasks, every decoding mode."""
        metrics: dict[str, float] = {}
        mine = self.dist.shard(tasks)
        envs = self.eval_envs
        assert envs is not None  # built with the eval tasks
        cuda = [torch.cuda.current_device()] if self.policy.device.startswith("cuda") else []
        for mode in self.config.eval_modes:
            bar = episode_bar(len(mine), f"eval {eval_label(split, mode)}", self.progress)
            sample = Sampler(
                self.policy,
                self.generator,
                greedy=mode == "greedy",
                stop_at_action_end=self.config.stop_at_action_end,
                progress=bar.update,
            )
            trajs = []
            with bar, torch.random.fork_rng(devices=cuda), self.full_weights():
                for i in range(0, len(mine), len(envs)):
                    chunk = mine[i : i + len(envs)]
                    trajs += play_episodes(envs[: len(chunk)], chunk, self.eval_prompts, sample)
            seconds = sample.stats.generate_s + sample.stats.env_s
            if self.dist.enabled:  # every rank's episodes, in task order
                trajs = [t for part in self.dist.gather([_outcome(t) for t in trajs]) for t in part]
                seconds = self.dist.max([seconds])[0]
            if logger is not None:
                logger.log_outcomes(iteration, split, mode, trajs)
            label = eval_label(split, mode)
            metrics.update(rollout_metrics([trajs], prefix=f"eval/{label}/"))
            metrics[f"eval/{label}/time"] = seconds
        return metrics


#: The per-episode outcomes whose change :func:`outcome_gains` reports: outcome field -> the
#: name in its metric ``eval/<label>/<name>_gain``.
GAIN_FIELDS = {"success": "success", "valid": "valid_action", "goal_directed": "goal_directed"}


def outcome_gains(
    logger: MetricsLogger | None,
    iteration: int,
    splits: Iterable[str],
    modes: Sequence[str],
    *,
    baseline: MetricsLogger | None = None,
) -> dict[str, float]:
    """Per split and decoding mode, the mean per-task change from the first evaluation
    (iteration 0) of ``baseline`` (default: ``logger`` itself) to the one at ``iteration`` in
    ``logger`` of each outcome in :data:`GAIN_FIELDS` (success; the episode's valid-action share;
    whether it took a goal-directed step, where the env marks them), with its 95% interval (see
    :func:`~agentenvs.learners.llm.intervals.paired_difference`): ``eval/<label>/<name>_gain``, ``..._low``,
    ``..._high``. Nothing for a split and mode without both evaluations (nor without a logger:
    ranks other than 0 keep no outcomes)."""
    out: dict[str, float] = {}
    baseline = logger if baseline is None else baseline
    if logger is None or baseline is None or (baseline is logger and iteration == 0):
        return out
    for split in splits:
        for mode in modes:
            for field, name in GAIN_FIELDS.items():
                before = baseline.outcome_values(0, split, mode, field)
                after = logger.outcome_values(iteration, split, mode, field)
                if not before or not after:
                    continue
                gain, low, high, _ = paired_difference(before, after)
                key = f"eval/{eval_label(split, mode)}/{name}_gain"
                out.update({key: gain, f"{key}_low": low, f"{key}_high": high})
    return out
