"""Capacity check of the tiny model: supervised on the main job's task, how many steps to 0.9?

The main job (``examples/train_llm.py``) plays Sokoban rooms solvable in 2-4 moves. Before RL can
be blamed for anything, the model must be able to *represent* the task: this script trains tiny
models of a few sizes by cross-entropy on the BFS solver's move (:func:`expert_states`: every
state along the solver's path through each training room, with the prompt the learner shows
there) and measures, every ``--eval-every`` steps, the **held-out move accuracy**: on the states
of validation rooms never trained on, the share where the model's most likely answer among the
four moves (the full response, ``<think>...</think><action>m</action>`` + EOS, scored) is the
solver's move. It prints one row per size: parameters, seconds per step, the first evaluated
step with accuracy >= ``--target`` (0.9) and the accuracy at the end. docs/learner-capacity.md
records the table and the choice of the default it led to.

Rooms: the main job's env options (``max_solution_steps`` 4, ``min_solution_steps`` 2), the first
256 train-split rooms for training, the next 64 train-split rooms for validation (the test split
is never read here).

    python benchmarks/learner_capacity.py                         # 3 sizes, ~10 CPU-minutes
    python benchmarks/learner_capacity.py --sizes 64x2 --steps 600 --threads 1
    python benchmarks/learner_capacity.py --observation offsets --sizes 64x2 --lr 3e-3 --steps 1000

``--observation offsets`` trains on the env's offsets observation (``box R C target R C``) and
its prompt instead of the grid; ``--observation image`` trains the tiny vision-language model
(:mod:`agentenvs.learners.llm.tiny_vl`, decoder and vision tower of the size's width) on
``agentenvs/SokobanVisual-v0``'s board image and its compact prompt (docs/visual-agents.md), the
image resized to ``--image-side`` pixels (84: 9 image tokens, one per 2x2 tiles; 168: 36, one per
tile).

    python benchmarks/learner_capacity.py --observation image --sizes 64x2 --image-side 168
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

import gymnasium as gym
import numpy as np
import torch
from agentenvs.learners.llm.loss import token_logprobs
from agentenvs.learners.llm.policy import Policy, collate, response_logits
from agentenvs.learners.llm.rollout import prompt_ids
from agentenvs.learners.llm.tiny import build_tiny_model, build_tiny_tokenizer
from agentenvs.learners.llm.tiny_vl import (
    build_tiny_image_processor,
    build_tiny_vl_model,
    build_tiny_vl_tokenizer,
)
from agentenvs.learners.llm.vision import ImageInputs

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core import EpisodeMemory
from agentenvs.core.prompting import agent_prompt_for
from agentenvs.sokoban.solver import solve

__all__ = ["expert_states", "move_accuracy", "train_size", "main"]

MOVES = ("up", "down", "left", "right")


def _solver_move(env: gym.Env) -> str:
    """The BFS solver's first move from the env's current state (player-on-target code 6 -> 5)."""
    game = env.unwrapped.game
    state = game.codes().astype(np.int64)
    state[state == 6] = 5
    fixed = np.array(game.fixed, dtype=np.int64).reshape(state.shape)
    return solve(fixed, state)[0]


#: One training or held-out state: prompt ids, the prompt's images (none for text), solver move.
State = tuple[list[int], tuple, str]


def expert_states(
    policy: Policy, env: gym.Env, tasks: Sequence[str], history_length: int | None = 0
) -> list[State]:
    """(prompt ids, images, solver move) at every state of the solver's path through each of
    ``tasks``, with the compact prompt the learner shows there (history ``history_length``)."""
    prompt = agent_prompt_for(env, "compact", history_length)
    out = []
    for task in tasks:
        obs, info = env.reset(options={"task_id": task})
        memory = EpisodeMemory()
        done = False
        while not done:
            move = _solver_move(env)
            images = tuple(prompt.images(memory, obs, info))
            out.append((prompt_ids(policy, prompt, memory, obs, info), images, move))
            action = prompt.response_prefix + prompt.answer(move)
            new_obs, _, terminated, truncated, info = env.step(action)
            memory.record(obs, prompt.project(action))
            obs, done = new_obs, terminated or truncated
    return out


def _answers(policy: Policy, env: gym.Env) -> dict[str, list[int]]:
    prompt = agent_prompt_for(env, "compact", 0)
    tok = policy.tokenizer
    return {
        m: tok.encode(prompt.answer(m), add_special_tokens=False) + [tok.eos_token_id]
        for m in MOVES
    }


@torch.no_grad()
def move_accuracy(policy: Policy, states: Sequence[State], answers: dict[str, list[int]]) -> float:
    """Share of ``states`` where the most likely of the four full answers is the solver's move."""
    policy.model.eval()
    right = 0
    for start in range(0, len(states), 32):
        chunk = states[start : start + 32]
        prompts = [p for p, _, _ in chunk for _ in MOVES]
        responses = [answers[m] for _ in chunk for m in MOVES]
        pixels = policy.pixels([images for _, images, _ in chunk for _ in MOVES])
        batch = collate(prompts, responses, policy.pad_id, pixels=pixels)
        logp = token_logprobs(response_logits(policy.model, batch), batch.response_ids)
        total = (logp * batch.response_mask).sum(-1).view(len(chunk), len(MOVES))
        best = total.argmax(-1).tolist()
        right += sum(MOVES[b] == m for b, (_, _, m) in zip(best, chunk, strict=True))
    return right / len(states)


def build_policy(hidden: int, layers: int, seed: int, image_side: int | None) -> Policy:
    """The tiny text model of ``hidden`` x ``layers``, or (``image_side``: the board's side after
    resizing, pixels) the tiny vision-language model of that decoder and vision width."""
    if image_side is None:
        tok = build_tiny_tokenizer()
        return Policy(build_tiny_model(tok, seed=seed, hidden_size=hidden, num_layers=layers), tok)
    tok = build_tiny_vl_tokenizer()
    processor = build_tiny_image_processor()
    processor.size = {"shortest_edge": image_side**2, "longest_edge": max(image_side**2, 224**2)}
    model = build_tiny_vl_model(
        tok, seed=seed, hidden_size=hidden, num_layers=layers, num_heads=max(2, hidden // 32)
    )
    return Policy(model, tok, images=ImageInputs(processor, tok))


def train_size(
    hidden: int,
    layers: int,
    train: Sequence[State],
    val: Sequence[State],
    answers: dict[str, list[int]],
    image_side: int | None,
    *,
    steps: int,
    eval_every: int,
    lr: float,
    batch_size: int,
    seed: int,
) -> tuple[int, float, list[tuple[int, float]]]:
    """Train one size; returns (parameters, seconds per step, [(step, held-out accuracy)])."""
    torch.manual_seed(seed)
    policy = build_policy(hidden, layers, seed, image_side)
    model = policy.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    rng = random.Random(seed)
    curve = [(0, move_accuracy(policy, val, answers))]
    spent = 0.0
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        model.train()
        picks = [train[rng.randrange(len(train))] for _ in range(batch_size)]
        batch = collate(
            [p for p, _, _ in picks],
            [answers[m] for _, _, m in picks],
            policy.pad_id,
            pixels=policy.pixels([images for _, images, _ in picks]),
        )
        logp = token_logprobs(response_logits(model, batch), batch.response_ids)
        loss = -(logp * batch.response_mask).sum() / batch.response_mask.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        spent += time.perf_counter() - t0
        if step % eval_every == 0:
            curve.append((step, move_accuracy(policy, val, answers)))
            print(f"  {hidden}x{layers} step {step}: loss {loss.item():.3f}, "
                  f"held-out accuracy {curve[-1][1]:.3f}", flush=True)  # fmt: skip
    return model.num_parameters(), spent / steps, curve


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="64x2,128x2,128x4", help="hidden x layers, comma-separated"
    )
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--min-solution-steps", type=int, default=2)
    parser.add_argument("--max-solution-steps", type=int, default=4)
    parser.add_argument(
        "--observation",
        default="grid",
        choices=("grid", "offsets", "image"),
        help="the env's option, or image: SokobanVisual and the tiny VLM",
    )
    parser.add_argument("--image-side", type=int, default=84, help="with image: board pixels")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    visual = args.observation == "image"
    env = gym.make(
        "agentenvs/SokobanVisual-v0" if visual else "agentenvs/Sokoban-v0",
        max_solution_steps=args.max_solution_steps,
        min_solution_steps=args.min_solution_steps,
        curriculum_size=(320, 64),
        max_steps=args.max_solution_steps,
        **({} if visual else {"observation": args.observation}),
    )
    ids = env.unwrapped.tasks.ids("train")
    image_side = args.image_side if visual else None
    probe = build_policy(64, 2, 0, image_side)
    train = expert_states(probe, env, ids[:256])
    val = expert_states(probe, env, ids[256:320])
    answers = _answers(probe, env)
    counts = {m: sum(x == m for _, _, x in val) for m in MOVES}
    print(f"{len(train)} training states (256 rooms), {len(val)} held-out states (64 rooms); "
          f"held-out moves {counts}; prompt {len(train[0][0])} tokens")  # fmt: skip
    rows = []
    for size in args.sizes.split(","):
        hidden, layers = (int(x) for x in size.split("x"))
        params, per_step, curve = train_size(
            hidden, layers, train, val, answers, image_side, steps=args.steps,
            eval_every=args.eval_every, lr=args.lr, batch_size=args.batch_size, seed=args.seed,
        )  # fmt: skip
        reach = next((s for s, a in curve if a >= args.target), None)
        rows.append((size, params, per_step, reach, curve[-1][1]))
    print(f"| size | parameters | s/step (batch {args.batch_size}) | steps to {args.target} | "
          f"accuracy at {args.steps} |")  # fmt: skip
    print("|---|---|---|---|---|")
    for size, params, per_step, reach, last in rows:
        print(f"| {size} | {params:,} | {per_step:.3f} | {reach or '> ' + str(args.steps)} | "
              f"{last:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
