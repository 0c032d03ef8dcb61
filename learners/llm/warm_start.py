"""Supervised warm starts before RL: the env's action syntax (``format``) or its expert (``demo``).

This module holds :func:`supervised_warm_start`, :func:`collect_states` (walks through the env that
keep every state's prompt and its targets), :func:`expert_of` (an env's expert, the
``expert_action`` hook of docs/custom-env.md), :data:`TEACHERS`, :class:`WarmState` (one state)
and :class:`Walker` (the rollout sampler that plays the walks).

A randomly initialised model (such as the tiny test model) never produces a parseable action, so
every episode earns the same invalid-action reward and RL has no signal. A warm start trains the
model on states at every turn of an episode, with one of two teachers:

* ``"format"``: the walks step a **uniformly random** admissible action
  (``info["admissible_actions"]``), and the target at a state is a uniformly random admissible
  action of it, drawn afresh each time the state is picked. The target carries no knowledge of
  which action is right, so whatever success rises above chance afterwards is learned by RL.
* ``"demo"``: the walks step the env's **expert** (``env.expert_action()``: the expert's next
  command from the current state), and the target is the expert's command at that state. A
  demonstration the env rejects (``info["action_valid"]`` False) raises ``RuntimeError`` naming
  the env, the task, the turn and the action; an env without the hook raises ``ValueError``
  naming it (:func:`expert_of`).

1. :func:`collect_states` plays the walks: for training tasks in a seeded random order, each
   episode steps the teacher's action until the env ends it (its step limit or a win),
   ``max_turns`` or ``max_states`` states in all (or, for the expert, until it has no move). The
   episodes run through the rollout engine's own loop (:func:`~agentenvs.learners.llm.rollout.drive`), so
   each state's prompt is exactly the one the learner shows at that turn: the env's
   ``agent_prompt(prompt_style, history_length)``, the :class:`~agentenvs.core.EpisodeMemory`
   history of the walk so far, the chat template and the response prefix
   (:func:`~agentenvs.learners.llm.rollout.prompt_ids`).
2. :func:`supervised_warm_start` trains the model, by cross-entropy on the response tokens, to
   answer a state's prompt with one of its targets in the env's syntax
   (:meth:`~agentenvs.core.AgentPrompt.answer`, then the EOS token). The states are collected once
   and reused by every step.

Nothing here is env-specific: the prompt, the syntax, the admissible actions and the expert come
from the env. Cost: at most ``max_states`` env steps (and expert calls) plus one reset per walk,
then ``steps`` forward/backward passes of ``batch_size`` prompts.

>>> import gymnasium as gym, agentenvs
>>> from agentenvs.learners.llm.policy import Policy
>>> from agentenvs.learners.llm.tiny import build_tiny_model, build_tiny_tokenizer
>>> tok = build_tiny_tokenizer()
>>> policy = Policy(build_tiny_model(tok), tok)
>>> env = gym.make("agentenvs/Sokoban-v0", max_solution_steps=1, max_steps=3)
>>> tasks = env.unwrapped.tasks.ids("train")
>>> states = collect_states(policy, env, tasks, max_states=12)
>>> len(states), sorted({s.turn for s in states})
(12, [1, 2, 3])
>>> demos = collect_states(policy, env, tasks, "demo", max_states=3)  # one-push rooms: 1 turn
>>> [(s.turn, s.actions) for s in demos]
[(1, ('left',)), (1, ('left',)), (1, ('left',))]
>>> losses = supervised_warm_start(policy, env, tasks, "demo", steps=10, batch_size=4)
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
from agentenvs.learners.llm.loss import token_logprobs
from agentenvs.learners.llm.policy import Policy, collate, response_logits
from agentenvs.learners.llm.rollout import Response, Sampler, drive, prompt_ids

from agentenvs.core import AgentPrompt, EpisodeMemory
from agentenvs.core.prompting import agent_prompt_for

__all__ = [
    "TEACHERS",
    "EXPERT_HOOK",
    "supervised_warm_start",
    "collect_states",
    "expert_of",
    "WarmState",
    "Walker",
]

#: The warm starts' teachers: uniformly random admissible actions, or the env's expert.
TEACHERS = ("format", "demo")

#: The env hook that declares an expert (docs/custom-env.md).
EXPERT_HOOK = "expert_action"

#: What a teacher gives at a state (its ``info``): the action the walk takes (``None``: the walk
#: ends here) and the state's targets.
Teacher = Callable[[dict[str, Any]], tuple[str | None, tuple[str, ...]]]


@dataclass(frozen=True)
class WarmState:
    """One state of a walk: its prompt tokens as the learner shows them, the targets to imitate
    there (the admissible actions, or the expert's command), its turn in the episode
    (1-based) and its prompt's images (a visual env's; ``()`` for text)."""

    prompt_ids: list[int]
    actions: tuple[str, ...]
    turn: int
    images: tuple[Any, ...] = ()


def _env_name(env: gym.Env) -> str:
    """``env``'s registered id, else its class name (for error messages)."""
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped).__name__


def expert_of(env: gym.Env) -> Callable[[], str | None]:
    """The expert ``env`` declares: its ``expert_action`` hook, seen through any wrappers (called
    with no argument, it returns the expert's next command from the current state, ``None`` for
    no move). Raises ``ValueError`` naming the env and the hook when there is none.

    >>> import gymnasium as gym, agentenvs
    >>> expert_of(gym.make("agentenvs/Sokoban-v0")).__name__
    'expert_action'
    """
    try:
        hook = env.get_wrapper_attr(EXPERT_HOOK)
    except AttributeError:
        hook = None
    if not callable(hook):
        raise ValueError(
            f"{_env_name(env)} has no expert to demonstrate: it lacks the {EXPERT_HOOK}() hook "
            "(docs/custom-env.md)"
        )
    return hook


def _random_teacher(rng: random.Random) -> Teacher:
    """A uniformly random admissible action; every admissible action is a target."""

    def teach(info: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        actions = tuple(info.get("admissible_actions") or ())
        if not actions:
            raise ValueError(
                f"task {info.get('task_id')!r}: the env lists no admissible_actions to imitate"
            )
        return rng.choice(actions), actions

    return teach


def _expert_teacher(env: gym.Env) -> Teacher:
    """The env's expert move (:func:`expert_of`), the only target."""
    expert = expert_of(env)

    def teach(_info: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
        action = expert()
        return action, () if action is None else (action,)

    return teach


class Walker(Sampler):
    """A :class:`~agentenvs.learners.llm.rollout.Sampler` that answers each request with its teacher's
    action (``response_prefix + answer(action)``, what the env would get from a model writing it)
    and keeps every state it answered, with the teacher's targets, in :attr:`states`. Where the
    teacher has no action it answers ``""`` and sets :attr:`stopped` (the walk ends there; the
    state is not kept).
    """

    def __init__(
        self, policy: Policy, teacher: Teacher, on_state: Callable[[int], Any] | None = None
    ) -> None:
        super().__init__(policy, generator=None)
        self.teacher = teacher
        self.states: list[WarmState] = []
        self.stopped = False
        self.on_state = on_state  # called with 1 per state kept (e.g. a tqdm bar's update)

    # The teacher's plain text, not sampled Responses: the play loops read actions as str.
    def __call__(  # type: ignore[override]
        self, requests: Sequence[tuple[AgentPrompt, EpisodeMemory, Any, dict[str, Any]]]
    ) -> list[str]:
        out = []
        for prompt, memory, observation, info in requests:
            action, targets = self.teacher(info)
            self.stopped = action is None
            if action is None:
                out.append("")
                continue
            ids = prompt_ids(self.policy, prompt, memory, observation, info)
            images = tuple(prompt.images(memory, observation, info))
            self.states.append(WarmState(ids, targets, len(memory) + 1, images))
            if self.on_state is not None:
                self.on_state(1)
            out.append(prompt.response_prefix + prompt.answer(action))
        return out


def collect_states(
    policy: Policy,
    env: gym.Env,
    tasks: Sequence[str],
    teacher: str = "format",
    *,
    max_states: int = 512,
    max_turns: int | None = None,
    prompt_style: str = "compact",
    history_length: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> list[WarmState]:
    """Walks through ``env`` on ``tasks`` (a seeded shuffle, cycled) until ``max_states`` states:
    each walk steps the ``teacher``'s actions (:data:`TEACHERS`: ``"format"``, uniformly random
    admissible ones; ``"demo"``, the env's expert's) from ``reset(options={"task_id": ...})``
    until the env ends the episode, ``max_turns`` steps (``None``: the env's limit) or the expert
    has no move. Returns the states in the order visited, each with the prompt the learner shows
    there (``agent_prompt_for(env, prompt_style, history_length)``, history included) and its
    targets. ``progress``: a tqdm bar of states on stderr.

    Raises ``ValueError`` for an unknown teacher, an env without admissible actions (format) or
    without an expert (demo), and an expert with no move at the start of every task of a pass;
    ``RuntimeError`` when the env rejects a demonstration as invalid.
    """
    from tqdm.auto import tqdm

    if max_states < 1 or not tasks:
        raise ValueError(f"need max_states >= 1 and some tasks, got {max_states} and {len(tasks)}")
    if teacher not in TEACHERS:
        raise ValueError(f"teacher must be one of {TEACHERS}, got {teacher!r}")
    prompt = agent_prompt_for(env, prompt_style, history_length)
    rng = random.Random(seed)
    teach = _random_teacher(rng) if teacher == "format" else _expert_teacher(env)
    bar = tqdm(total=max_states, desc="warm start: states", unit="state", disable=not progress)
    walker = Walker(policy, teach, on_state=bar.update)
    order = _task_stream(tasks, rng)
    turn = 0

    def keep_walking(
        _i: int,
        _obs: Any,
        action: Response,
        _reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> bool:
        nonlocal turn
        turn += 1
        if walker.stopped:
            return False
        if teacher == "demo" and not info.get("action_valid", True):
            raise RuntimeError(
                f"{_env_name(env)} rejected its expert's demonstration on task "
                f"{info.get('task_id')!r} at turn {turn}: {str(action)!r} "
                f"({info.get('invalid_reason') or 'invalid action'})"
            )
        ended = terminated or truncated or (max_turns is not None and turn >= max_turns)
        return not ended and len(walker.states) < max_states

    idle = 0  # walks in a row that kept no state
    with bar:
        while len(walker.states) < max_states:
            before, turn = len(walker.states), 0
            drive([env], [next(order)], [prompt], walker, keep_walking)
            idle = 0 if len(walker.states) > before else idle + 1
            if idle >= len(tasks):
                raise ValueError(
                    f"{_env_name(env)}: the expert gave no move at the start of {idle} tasks in a "
                    "row"
                )
    return walker.states[:max_states]


def _task_stream(tasks: Sequence[str], rng: random.Random) -> Iterator[str]:
    """``tasks`` in a fresh ``rng`` shuffle per pass, pass after pass."""
    while True:
        order = list(tasks)
        rng.shuffle(order)
        yield from order


def supervised_warm_start(
    policy: Policy,
    env: gym.Env,
    tasks: Sequence[str],
    teacher: str = "format",
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
    """Train ``policy`` for ``steps`` AdamW steps (``lr``) on ``batch_size`` (state, target)
    pairs each: a state of :func:`collect_states` (``max_states`` states from the ``teacher``'s
    walks on ``tasks``, at every turn, with the prompt of ``prompt_style`` / ``history_length``
    the learner shows there) -> one of its targets in the env's syntax + EOS (``"format"``: a
    uniformly random admissible action, drawn afresh each time; ``"demo"``: the expert's command).
    ``progress``: tqdm bars (states, then steps with the loss) on stderr.

    Returns the mean negative log-likelihood per response token of each step (nats). The model is
    left in eval mode. Raises as :func:`collect_states`. ``lr``: at 1e-2 the tiny model's loss
    spikes back up (docs/learner-warm-start.md).
    """
    from tqdm.auto import tqdm

    states = collect_states(
        policy,
        env,
        tasks,
        teacher,
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
        pixels = policy.pixels([s.images for s in picks])
        batch = collate([s.prompt_ids for s in picks], answers, policy.pad_id, pixels=pixels)
        batch = batch.to(policy.device)
        logp = token_logprobs(response_logits(policy.model, batch), batch.response_ids)
        loss = -(logp * batch.response_mask).sum() / batch.response_mask.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    policy.model.eval()
    return losses
