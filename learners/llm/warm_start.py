"""A format-only supervised warm start: teach a policy the env's action syntax, not its task.

This module holds :func:`format_warm_start`, :func:`collect_states` (random walks through the env
that keep every state's prompt), :class:`WarmState` (one such state) and :class:`RandomWalker`
(the rollout sampler that plays them).

A randomly initialised model (such as the tiny test model) never produces a parseable action, so
every episode earns the same invalid-action reward and RL has no signal. The warm start fixes the
*format* only, at every turn of an episode:

1. :func:`collect_states` plays random walks: for training tasks in a seeded random order, each
   episode steps a **uniformly random** admissible action (``info["admissible_actions"]``) until
   the env ends it (its step limit), ``max_turns`` or ``max_states`` states in all. The episodes
   run through the rollout engine's own loop (:func:`~learners.llm.rollout.drive`), so each
   state's prompt is exactly the one the learner shows at that turn: the env's
   ``agent_prompt(prompt_style, history_length)``, the :class:`~agentenvs.core.EpisodeMemory`
   history of the walk so far, the chat template and the response prefix
   (:func:`~learners.llm.rollout.prompt_ids`).
2. :func:`format_warm_start` trains the model, by cross-entropy on the response tokens, to answer
   a state's prompt with a uniformly random admissible action of that state, drawn afresh each
   time the state is picked, in the env's syntax (:meth:`~agentenvs.core.AgentPrompt.answer`,
   then the EOS token). The states are collected once and reused by every step.

The target carries no knowledge of which action is right, so whatever success rises above chance
afterwards is learned by RL. Nothing here is env-specific: the prompt, the syntax and the
admissible actions come from the env. Cost: at most ``max_states`` env steps plus one reset per
walk, then ``steps`` forward/backward passes of ``batch_size`` prompts.

>>> import gymnasium as gym, agentenvs
>>> from learners.llm.policy import Policy
>>> from learners.llm.tiny import build_tiny_model, build_tiny_tokenizer
>>> tok = build_tiny_tokenizer()
>>> policy = Policy(build_tiny_model(tok), tok)
>>> env = gym.make("agentenvs/Sokoban-v0", max_solution_steps=1, max_steps=3)
>>> states = collect_states(policy, env, env.unwrapped.tasks.ids("train"), max_states=12)
>>> len(states), sorted({s.turn for s in states})
(12, [1, 2, 3])
>>> tasks = env.unwrapped.tasks.ids("train")
>>> losses = format_warm_start(policy, env, tasks, steps=10, batch_size=4, max_states=32)
>>> len(losses), losses[-1] < losses[0]
(10, True)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch

from agentenvs.core import AgentPrompt, EpisodeMemory
from agentenvs.core.prompting import agent_prompt_for
from learners.llm.loss import token_logprobs
from learners.llm.policy import Policy, collate, response_logits
from learners.llm.rollout import Sampler, drive, prompt_ids

__all__ = ["format_warm_start", "collect_states", "WarmState", "RandomWalker"]


@dataclass(frozen=True)
class WarmState:
    """One state of a random walk: its prompt tokens as the learner shows them, the admissible
    actions there, and its turn in the episode (1-based)."""

    prompt_ids: list[int]
    actions: tuple[str, ...]
    turn: int


class RandomWalker(Sampler):
    """A :class:`~learners.llm.rollout.Sampler` that answers each request with a uniformly random
    admissible action (``response_prefix + answer(action)``, what the env would get from a model
    writing it) and keeps every state it answered in :attr:`states`.

    Raises ``ValueError`` on a state whose info lists no ``admissible_actions``.
    """

    def __init__(
        self, policy: Policy, rng: random.Random, on_state: Callable[[int], Any] | None = None
    ) -> None:
        super().__init__(policy, generator=None)
        self.rng = rng
        self.states: list[WarmState] = []
        self.on_state = on_state  # called with 1 per state kept (e.g. a tqdm bar's update)

    def __call__(
        self, requests: Sequence[tuple[AgentPrompt, EpisodeMemory, Any, dict[str, Any]]]
    ) -> list[str]:
        out = []
        for prompt, memory, observation, info in requests:
            actions = tuple(info.get("admissible_actions") or ())
            if not actions:
                raise ValueError(
                    f"task {info.get('task_id')!r}: the env lists no admissible_actions to imitate"
                )
            ids = prompt_ids(self.policy, prompt, memory, observation, info)
            self.states.append(WarmState(ids, actions, len(memory) + 1))
            if self.on_state is not None:
                self.on_state(1)
            out.append(prompt.response_prefix + prompt.answer(self.rng.choice(actions)))
        return out


def collect_states(
    policy: Policy,
    env: gym.Env,
    tasks: Sequence[str],
    *,
    max_states: int = 512,
    max_turns: int | None = None,
    prompt_style: str = "compact",
    history_length: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> list[WarmState]:
    """Random walks through ``env`` on ``tasks`` (a seeded shuffle, cycled) until ``max_states``
    states: each walk steps uniformly random admissible actions from ``reset(options={"task_id":
    ...})`` until the env ends the episode or ``max_turns`` steps (``None``: the env's limit).
    Returns the states in the order visited, each with the prompt the learner shows there
    (``agent_prompt_for(env, prompt_style, history_length)``, history included). ``progress``:
    a tqdm bar of states on stderr.
    """
    from tqdm.auto import tqdm

    if max_states < 1 or not tasks:
        raise ValueError(f"need max_states >= 1 and some tasks, got {max_states} and {len(tasks)}")
    prompt = agent_prompt_for(env, prompt_style, history_length)
    rng = random.Random(seed)
    bar = tqdm(total=max_states, desc="warm start: states", unit="state", disable=not progress)
    walker = RandomWalker(policy, rng, on_state=bar.update)
    order = _task_stream(tasks, rng)

    def keep_walking(_i, _obs, _action, _reward, terminated, truncated, _info) -> bool:
        turns = walker.states[-1].turn
        ended = terminated or truncated or (max_turns is not None and turns >= max_turns)
        return not ended and len(walker.states) < max_states

    with bar:
        while len(walker.states) < max_states:
            drive([env], [next(order)], [prompt], walker, keep_walking)
    return walker.states[:max_states]


def _task_stream(tasks: Sequence[str], rng: random.Random) -> Iterator[str]:
    """``tasks`` in a fresh ``rng`` shuffle per pass, pass after pass."""
    while True:
        order = list(tasks)
        rng.shuffle(order)
        yield from order


def format_warm_start(
    policy: Policy,
    env: gym.Env,
    tasks: Sequence[str],
    *,
    steps: int = 200,
    batch_size: int = 16,
    lr: float = 3e-3,
    prompt_style: str = "compact",
    history_length: int | None = None,
    seed: int = 0,
    max_states: int = 512,
    max_turns: int | None = None,
    progress: bool = False,
) -> list[float]:
    """Train ``policy`` for ``steps`` AdamW steps (``lr``) on ``batch_size`` random (state,
    action) pairs each: a state of :func:`collect_states` (``max_states`` states from random walks
    on ``tasks``, at every turn, with the prompt of ``prompt_style`` / ``history_length`` the
    learner shows there) -> a uniformly random admissible action of that state in the env's syntax
    + EOS. ``progress``: tqdm bars (states, then steps with the loss) on stderr.

    Returns the mean negative log-likelihood per response token of each step (nats). The model is
    left in eval mode. Raises ``ValueError`` when the env lists no admissible actions. ``lr``:
    at 1e-2 the tiny model's loss spikes back up (docs/learner-warm-start.md).
    """
    from tqdm.auto import tqdm

    states = collect_states(
        policy,
        env,
        tasks,
        max_states=max_states,
        max_turns=max_turns,
        prompt_style=prompt_style,
        history_length=history_length,
        seed=seed,
        progress=progress,
    )
    prompt = agent_prompt_for(env, prompt_style, history_length)
    tok = policy.tokenizer
    rng = random.Random(seed)
    params = [p for p in policy.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    policy.model.train()
    losses = []
    bar = tqdm(range(steps), desc="warm start", unit="step", disable=not progress)
    for _ in bar:
        picks = [states[rng.randrange(len(states))] for _ in range(batch_size)]
        answers = [
            tok.encode(prompt.answer(rng.choice(s.actions)), add_special_tokens=False)
            + [tok.eos_token_id]
            for s in picks
        ]
        batch = collate([s.prompt_ids for s in picks], answers, policy.pad_id).to(policy.device)
        logp = token_logprobs(response_logits(policy.model, batch), batch.response_ids)
        loss = -(logp * batch.response_mask).sum() / batch.response_mask.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    policy.model.eval()
    return losses
