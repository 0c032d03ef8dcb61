"""TRL's ``GRPOTrainer`` on agentenvs envs, with our per-step credit (extra ``trl``; tested with
trl 1.16.0).

:class:`CreditGRPOTrainer` is a ``GRPOTrainer`` whose rollouts go through TRL's multi-turn hook,
``rollout_func``, and whose advantages are the ones our credit wrappers wrote, token by token:

* **Rollout.** The training dataset is a ``prompt`` column: task ids, or prompts (plain text or
  chat messages) that a ``task_from_prompt`` hook maps onto task ids
  (:meth:`CreditGRPOTrainer.task_of`). TRL's sampler repeats each prompt ``num_generations``
  times in a row; each block of identical prompts is one *group*: a credit-wrapped env
  (``env_fn()``, e.g. ``GraphCreditWrapper(env, group_size=G)``, with ``G`` =
  ``num_generations``) plays ``G`` episodes of that task (``options={"task_id": ...}``) with the
  trainer's model, through our learner's rollout loop (:class:`~agentenvs.learners.llm.env_source.CreditedEnvs`,
  :class:`~agentenvs.learners.llm.rollout.Sampler`): the env's own agent prompt, action syntax and stop
  strings. The wrapper hands the credited group back in ``info["credit"]``.
* **One TRL row per episode.** Each step is sampled after the whole episode so far
  (:class:`EpisodeSampler`): step 1's prompt, its response, step 2's prompt (the env's full
  prompt of that step, chat template included), its response, ... So one episode is one token
  sequence, sampled exactly as TRL scores it: TRL's ``prompt_ids`` are step 1's prompt, its
  ``completion_ids`` the rest, and ``env_mask`` (TRL's name for it) is 1 on response tokens, 0
  on the env's prompt tokens (no loss there). The sequence grows with the episode: a small
  ``history_length`` (the env's prompt repeats recent turns) or a short ``max_steps`` keeps it
  inside the model's context.
* **Per-token advantages.** TRL computes its group-normalised trajectory advantage (one value
  per row, from the episode return that :func:`episode_return` reports) and logs it;
  :meth:`CreditGRPOTrainer._generate_and_score_completions` then replaces it by a
  ``(rows, completion tokens)`` tensor: each step's response tokens carry that step's advantage
  (``Step.advantage``, as the wrapper wrote it), env tokens 0. TRL's loss accepts such a tensor
  (``advantages`` of shape ``(B, T)``). No estimator is called here: the wrapper's method decides
  (``grpo`` through this path reproduces TRL's own advantages: :data:`TRL_GRPO`).

Refused at init, each with a one-line ``ValueError`` saying what to do instead: ``reward_funcs``
(the advantages come from the env's rewards: shape them in ``env_fn``), ``environment_factory``
(TRL's tool loop has no per-step credit), ``use_vllm``, ``mask_truncated_completions`` and more
than one process (TRL's sampler may split a group across processes). This module holds:
:data:`Prompt`, :data:`TRL_GRPO`, :class:`EpisodeSampler`, :func:`episode_row`,
:func:`episode_return`, :func:`task_dataset`, :class:`CreditGRPOTrainer`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any

import gymnasium as gym
import torch
from agentenvs.learners.llm.env_source import CreditedEnvs
from agentenvs.learners.llm.generation import HFGenerator
from agentenvs.learners.llm.policy import Policy
from agentenvs.learners.llm.rollout import Sampler
from agentenvs.wrappers.grpo import GRPOConfig as CreditGRPOConfig
from datasets import Dataset, IterableDataset
from trl import GRPOConfig, GRPOTrainer

from agentenvs.core import AgentPrompt, EpisodeMemory, Trajectory
from agentenvs.vector import group_size_of

__all__ = [
    "Prompt",
    "TRL_GRPO",
    "EpisodeSampler",
    "episode_row",
    "episode_return",
    "task_dataset",
    "CreditGRPOTrainer",
]

#: A row's ``prompt``: a string (a task id, or text), or chat messages (``{"role", "content"}`` dicts).
Prompt = str | list[dict[str, Any]]

#: Our ``grpo`` config that equals TRL's GRPO advantage (``scale_rewards="group"``): the episode
#: return z-scored in its group with the sample std plus 1e-4.
TRL_GRPO = CreditGRPOConfig(episode_norm="trajectory", norm="mean_std", ddof=1, eps=1e-4)


class EpisodeSampler(Sampler):
    """A :class:`~agentenvs.learners.llm.rollout.Sampler` that samples each step after its episode's
    earlier steps (prompts and responses), so a step's ``Response.prompt_ids`` is the whole
    episode so far followed by the step's own prompt."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._so_far: dict[int, tuple[EpisodeMemory, list[int]]] = {}  # id(memory) -> tokens

    def context_ids(
        self, prompt: AgentPrompt, memory: EpisodeMemory, observation: Any, info: dict
    ) -> list[int]:
        before = self._so_far.get(id(memory), (memory, []))[1]
        return before + super().context_ids(prompt, memory, observation, info)

    def __call__(self, requests: Sequence[tuple]) -> list:
        responses = super().__call__(requests)
        for (_, memory, *_), r in zip(requests, responses, strict=True):
            # the memory is kept alive with its tokens, so its id names one episode
            self._so_far[id(memory)] = (memory, [*r.prompt_ids, *r.response_ids])
        return responses


def episode_row(traj: Trajectory) -> dict[str, list]:
    """One TRL row of a credited episode sampled by :class:`EpisodeSampler`.

    Returns ``prompt_ids`` (step 1's prompt), ``completion_ids`` (the rest of the sequence),
    and, one per completion token, ``logprobs`` (the sampling log-probs; 0 on env tokens),
    ``env_mask`` (1 on response tokens) and ``token_advantages`` (the step's advantage on its
    response tokens, 0 on env tokens).
    """
    first, last = traj.steps[0].extras, traj.steps[-1].extras
    start = len(first["prompt_ids"])
    sequence = [*last["prompt_ids"], *last["response_ids"]]
    n = len(sequence) - start
    logprobs, mask, advantages = [0.0] * n, [0] * n, [0.0] * n
    for step in traj.steps:
        lo = len(step.extras["prompt_ids"]) - start
        hi = lo + len(step.extras["response_ids"])
        if sequence[start + lo : start + hi] != step.extras["response_ids"].tolist():
            raise ValueError("the episode's steps were not sampled by an EpisodeSampler")
        logprobs[lo:hi] = step.extras["logprobs"].tolist()
        mask[lo:hi] = [1] * (hi - lo)
        if step.advantage is None:
            raise ValueError("the episode's steps carry no advantages: credit them first")
        advantages[lo:hi] = [float(step.advantage)] * (hi - lo)
    return {
        "prompt_ids": sequence[:start],
        "completion_ids": sequence[start:],
        "logprobs": logprobs,
        "env_mask": mask,
        "token_advantages": advantages,
    }


def episode_return(prompts: list, completions: list, episode_return: list, **_: Any) -> list:
    """TRL reward function: each row's episode return (sum of env rewards), reported by the
    rollout. TRL logs it and builds its own trajectory advantage from it (then replaced)."""
    return list(episode_return)


def task_dataset(task_ids: Sequence[str]) -> Dataset:
    """The training dataset: one row per task id (column ``prompt``)."""
    return Dataset.from_dict({"prompt": [str(t) for t in task_ids]})


def _refuse(args: GRPOConfig, reward_funcs: Any, kwargs: dict[str, Any]) -> None:
    """Raise ``ValueError`` on what :class:`CreditGRPOTrainer` does not compose with."""
    if reward_funcs is not None:
        raise ValueError(
            "reward_funcs would be ignored: the advantages are the credit wrapper's, from the env's "
            "rewards; shape rewards in env_fn (a gymnasium.RewardWrapper inside the credit wrapper)"
        )
    if kwargs.get("environment_factory") is not None:
        raise ValueError(
            "environment_factory does not compose: agentenvs envs are played through rollout_func, "
            "one credited group per task, and TRL's tool loop has no per-step credit; pass env_fn"
        )
    if args.use_vllm:
        raise ValueError(
            "use_vllm is not supported: rollouts are sampled with HF generate on the trainer's "
            "model, in the env's own prompts and stop strings; set use_vllm=False"
        )
    if args.world_size != 1:
        raise ValueError(
            f"CreditGRPOTrainer runs in one process, not {args.world_size}: TRL's sampler may "
            "split a group's rows across processes; launch a single process"
        )
    if args.mask_truncated_completions:
        raise ValueError(
            "mask_truncated_completions would mask whole episodes: a step's response ends "
            "at the env's stop string, which TRL reads as truncation"
        )


class CreditGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` over credit-wrapped agentenvs envs, per-step advantages (module docstring).

    Args:
        model: a causal LM (a ``PreTrainedModel``) or a model id / path, as for ``GRPOTrainer``.
        env_fn: makes one credit-wrapped env whose ``group_size`` equals
            ``args.num_generations`` (``GraphCreditWrapper(gym.make(...), group_size=G)``).
        args: TRL's ``GRPOConfig``; ``max_completion_length`` is the response budget of each
            *step* (tokens); ``temperature`` and ``top_p`` are the sampling settings.
        processing_class: the tokenizer (its chat template renders the env's prompts).
        train_dataset: a ``prompt`` column (a ``Dataset`` or ``IterableDataset``): task ids
            (:func:`task_dataset`), or prompts ``task_from_prompt`` maps; default: the env's
            ``train`` split. Its first 8 rows are checked here (:meth:`task_of`).
        prompt_style, history_length: which agent prompt the env renders (its ``agent_prompt``
            hook; ``history_length=None`` keeps the env's default).
        task_from_prompt: maps a dataset prompt (a string, or a list of chat messages) onto a
            task id; default: the env's own ``task_from_prompt`` method (on ``env.unwrapped``)
            if it has one.
        reward_funcs: refused (``ValueError``): TRL logs its reward from :func:`episode_return`;
            shape rewards in the env (a ``gymnasium.RewardWrapper`` inside the credit wrapper).
        kwargs: passed to ``GRPOTrainer`` (``environment_factory`` is refused).

    Attributes:
        envs: the training envs (one per group of a generation batch), a
            :class:`~agentenvs.learners.llm.env_source.CreditedEnvs`; ``trainer.envs.close()`` closes them.
        last_groups: the credited groups of the last rollout, in row order.
        task_from_prompt: the prompt -> task id hook in use (the argument, else the env's
            method, else ``None``).
    """

    def __init__(
        self,
        model: Any,
        env_fn: Callable[[], gym.Env],
        args: GRPOConfig,
        *,
        processing_class: Any,
        train_dataset: Dataset | IterableDataset | None = None,
        prompt_style: str = "reference",
        history_length: int | None = None,
        task_from_prompt: Callable[[Prompt], str] | None = None,
        reward_funcs: Any = None,
        **kwargs: Any,
    ) -> None:
        _refuse(args, reward_funcs, kwargs)
        per_call = args.per_device_train_batch_size * args.steps_per_generation
        if per_call % args.num_generations:
            raise ValueError(
                f"{per_call} rows per generation are not whole groups of {args.num_generations}"
            )
        self.envs = CreditedEnvs(
            [env_fn] * (per_call // args.num_generations), None, prompt_style, history_length
        )
        sizes = {group_size_of(env) for env in self.envs.envs}
        if sizes != {args.num_generations}:
            raise ValueError(
                f"env_fn must make a credit wrapper with group_size={args.num_generations} "
                f"(num_generations), got group sizes {sorted(sizes)}"
            )
        if train_dataset is None:
            panel = self.envs.task_panel()
            if panel is None:
                raise ValueError("the env has no task panel: pass train_dataset=task_dataset(ids)")
            train_dataset = task_dataset(panel.ids("train"))
        self.task_from_prompt = task_from_prompt or getattr(
            self.envs.envs[0].unwrapped, "task_from_prompt", None
        )
        if isinstance(train_dataset, Dataset | IterableDataset):
            for row in islice(iter(train_dataset), 8):  # a bad prompt fails here, not at step 1
                self.task_of(row["prompt"])
        self.last_groups: list[list[Trajectory]] = []
        super().__init__(
            model=model,
            reward_funcs=episode_return,
            args=args,
            train_dataset=train_dataset,
            processing_class=processing_class,
            rollout_func=self.rollout,
            **kwargs,
        )

    def task_of(self, prompt: Prompt) -> str:
        """The task id of a dataset prompt: the prompt itself when it is one of the env's task
        ids, else ``task_from_prompt(prompt)`` (checked against the env's tasks), else (an env
        with no task panel) a string prompt as it is. Raises a one-line ``ValueError`` otherwise."""
        panel = self.envs.task_panel()

        def known(task: str) -> bool:
            return panel is not None and any(task in panel.ids(s) for s in panel.splits)

        if isinstance(prompt, str) and known(prompt):
            return prompt
        shown = repr(prompt) if len(repr(prompt)) <= 80 else repr(prompt)[:77] + "..."
        if self.task_from_prompt is not None:
            task = str(self.task_from_prompt(prompt))
            if panel is not None and not known(task):
                raise ValueError(
                    f"task_from_prompt maps {shown} to {task!r}, not a task id of the env"
                )
            return task
        if isinstance(prompt, str) and panel is None:
            return prompt
        raise ValueError(
            f"prompt {shown} is not a task id of the env: pass train_dataset=task_dataset(ids) or "
            "task_from_prompt=<prompt -> task id> (or give the env a task_from_prompt method)"
        )

    def rollout(self, prompts: list[Prompt], trainer: GRPOTrainer) -> dict[str, list]:
        """TRL's ``rollout_func``: one credited group per block of ``num_generations`` identical
        prompts (each mapped by :meth:`task_of`); one row per episode (:func:`episode_row`) plus
        each row's ``episode_return``."""
        g = self.num_generations
        if any(p != prompts[i - i % g] for i, p in enumerate(prompts)):
            raise ValueError(f"prompts must come in blocks of {g} identical prompts")
        tasks = [self.task_of(p) for p in prompts[::g]]
        policy = Policy(self.accelerator.unwrap_model(self.model), self.processing_class)
        generator = HFGenerator(
            policy,
            max_new_tokens=self.args.max_completion_length,
            temperature=self.args.temperature,
            top_p=self.args.top_p,
        )
        groups, _ = self.envs.play_groups(tasks, EpisodeSampler(policy, generator))
        self.last_groups = groups
        rows = [episode_row(t) for group in groups for t in group]
        out: dict[str, list[Any]] = {key: [row[key] for row in rows] for key in rows[0]}
        out["episode_return"] = [t.total_return for group in groups for t in group]
        return out

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's batch, its ``advantages`` replaced by the rows' per-token step advantages
        (``(rows, completion tokens)``, float32; padding 0)."""
        output = super()._generate_and_score_completions(inputs)
        ids = output["completion_ids"]
        advantages = torch.zeros(ids.shape, dtype=torch.float32)
        for i, x in enumerate(inputs):  # TRL merged the rollout's fields into the inputs
            values = x["token_advantages"]
            advantages[i, : len(values)] = torch.tensor(values, dtype=torch.float32)
        output["advantages"] = advantages.to(ids.device)
        return output
