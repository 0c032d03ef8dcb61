"""A format-only supervised warm start: teach a policy the env's action syntax, not its task.

This module holds :func:`format_warm_start`.

A randomly initialised model (such as the tiny test model) never produces a parseable action, so
every episode earns the same invalid-action reward and RL has no signal. The warm start fixes the
*format* only: for the first observation of random training tasks it trains the model, by
cross-entropy on the response tokens, to answer with a **uniformly random** admissible action in
the env's syntax (:meth:`~agentenvs.core.AgentPrompt.answer`, then the EOS token). The target
carries no knowledge of which action is right, so whatever success rises above chance afterwards
is learned by RL. Nothing here is env-specific: the prompt, the syntax and the admissible actions
(``info["admissible_actions"]``) come from the env.

>>> import gymnasium as gym, agentenvs
>>> from learners.llm.policy import Policy
>>> from learners.llm.tiny import build_tiny_model, build_tiny_tokenizer
>>> tok = build_tiny_tokenizer()
>>> policy = Policy(build_tiny_model(tok), tok)
>>> env = gym.make("agentenvs/Sokoban-v0", max_solution_steps=1)
>>> losses = format_warm_start(policy, env, env.unwrapped.tasks.ids("train")[:8], steps=10)
>>> len(losses), losses[-1] < losses[0]
(10, True)
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import gymnasium as gym
import torch

from agentenvs.core import EpisodeMemory
from agentenvs.core.prompting import agent_prompt_for
from learners.llm.loss import token_logprobs
from learners.llm.policy import Policy, collate, response_logits

__all__ = ["format_warm_start"]


def format_warm_start(
    policy: Policy,
    env: gym.Env,
    tasks: Sequence[str],
    *,
    steps: int = 200,
    batch_size: int = 16,
    lr: float = 1e-2,
    prompt_style: str = "compact",
    history_length: int | None = None,
    seed: int = 0,
) -> list[float]:
    """Train ``policy`` for ``steps`` AdamW steps (``lr``) on ``batch_size`` random (task, action)
    pairs each: the first-turn prompt of a task of ``tasks`` in ``env`` (its ``agent_prompt`` in
    ``prompt_style``) -> a uniformly random admissible action written in the env's syntax + EOS.

    Returns the mean negative log-likelihood per response token of each step (nats). The model is
    left in eval mode. Raises ``ValueError`` when the env lists no admissible actions.
    """
    prompt = agent_prompt_for(env, prompt_style, history_length)
    tok = policy.tokenizer
    firsts = []
    for task_id in tasks:
        observation, info = env.reset(options={"task_id": task_id})
        actions = list(info.get("admissible_actions") or [])
        if not actions:
            raise ValueError(f"task {task_id!r}: the env lists no admissible_actions to imitate")
        messages = prompt.messages(EpisodeMemory(), observation, info)
        firsts.append((policy.chat_ids(messages, prompt.response_prefix), actions))
    rng = random.Random(seed)
    params = [p for p in policy.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    policy.model.train()
    losses = []
    for _ in range(steps):
        picks = [firsts[rng.randrange(len(firsts))] for _ in range(batch_size)]
        answers = [
            tok.encode(prompt.answer(rng.choice(actions)), add_special_tokens=False)
            + [tok.eos_token_id]
            for _, actions in picks
        ]
        batch = collate([ids for ids, _ in picks], answers, policy.pad_id).to(policy.device)
        logp = token_logprobs(response_logits(policy.model, batch), batch.response_ids)
        loss = -(logp * batch.response_mask).sum() / batch.response_mask.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    policy.model.eval()
    return losses
