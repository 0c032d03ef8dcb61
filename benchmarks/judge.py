"""Throughput of TRIAGE's judges, and the share of an LLM training iteration spent judging.

Usage::

    python benchmarks/judge.py [--groups 16] [--hf-segments 32] [--max-new-tokens 32]

Printed as markdown tables:

1. **Segments judged per second**, on real Sokoban groups (random moves, ``max_steps=10``, groups
   of 4): the oracle through :func:`agentenvs.wrappers.estimate` (cache off, batch building and
   whitening included), and the HF judge on the project's tiny model (``resolve_model("tiny")``,
   greedy, ``--max-new-tokens``) batched (8 requests per ``generate``) and one request at a time.
   Ratios are against the one-at-a-time HF judge, measured in the same run.
2. **Judging's share of a training iteration**: ``examples/train_llm.py`` on the main job (tiny
   model, Sokoban, 2 iterations of 4 groups x 4 rollouts, a 20-step format warm start) with
   ``--credit triage`` and ``--judge oracle``, then ``--judge <tiny model dir>`` (HFJudge defaults:
   512 new tokens); the table gives ``credit_time_share`` (judge seconds / iteration seconds) and
   ``credit/judge_seconds`` per iteration from ``metrics.csv``.

Timing: best of ``--repeats`` runs after a warm-up, torch on one thread. Shared 2-core VM: expect
+-30%.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
from agentenvs.wrappers import CreditWrapper, TriageConfig, estimate
from agentenvs.wrappers.models.judges import HFJudge, build_requests

import agentenvs  # noqa: F401 - registers the envs
from agentenvs.core import Trajectory

ROOT = Path(__file__).resolve().parents[1]


def sokoban_groups(n_groups: int, seed: int = 0) -> list[Trajectory]:
    """``n_groups`` groups of 4 random-move Sokoban episodes (at most 10 steps each)."""
    env = CreditWrapper(
        gym.make("agentenvs/Sokoban-v0", action_format="plain", max_steps=10), group_size=4
    )
    rng = np.random.default_rng(seed)
    groups: list[list[Trajectory]] = []
    env.reset(seed=seed)
    while len(groups) < n_groups:
        *_, terminated, truncated, info = env.step(str(rng.choice(["up", "down", "left", "right"])))
        if terminated or truncated:
            groups += [info["credit"]] if info.get("credit") else []
            env.reset()
    return [t for g in groups for t in g]


def best_of(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def throughput(args: argparse.Namespace) -> None:
    import torch
    from agentenvs.learners.llm.models import resolve_model

    torch.set_num_threads(1)
    trajectories = sokoban_groups(args.groups)
    n_segments = sum(len(t) for t in trajectories)
    oracle = best_of(
        lambda: estimate(trajectories, "triage", TriageConfig(cache=False)), args.repeats
    )

    model_dir = resolve_model("tiny")
    requests = [r for t in trajectories for r in build_requests(t)][: args.hf_segments]
    rows = []
    for batch_size in (8, 1):
        judge = HFJudge(model_dir, max_new_tokens=args.max_new_tokens, batch_size=batch_size)
        seconds = best_of(lambda j=judge: j.judge(requests), args.repeats)
        rows.append((batch_size, seconds, judge.usage.tokens / judge.usage.calls / len(requests)))
    single = len(requests) / rows[1][1]

    print(f"## Segments judged per second ({n_segments} Sokoban segments, one thread)\n")
    print("| judge | segments | time (s) | segments/s | vs HF one at a time |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| oracle (`estimate`, cache off) | {n_segments} | {oracle:.4f} | "
        f"{n_segments / oracle:,.0f} | {n_segments / oracle / single:,.0f}x |"
    )
    for batch_size, seconds, tokens in rows:
        rate = len(requests) / seconds
        print(
            f"| HF tiny, {args.max_new_tokens} new tokens, batch {batch_size} "
            f"(~{tokens:.0f} tokens/segment) | {len(requests)} | {seconds:.3f} | {rate:.1f} | "
            f"{rate / single:.2f}x |"
        )
    print()


def training_share(args: argparse.Namespace) -> None:
    from agentenvs.learners.llm.models import resolve_model

    judges = {"oracle": "oracle", "HF tiny (512 new tokens)": str(resolve_model("tiny"))}
    print("## Judging's share of a training iteration (tiny policy on Sokoban)\n")
    print("| judge | iteration | iteration time (s) | judge seconds | credit_time_share |")
    print("|---|---:|---:|---:|---:|")
    for name, spec in judges.items():
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, "examples/train_llm.py", "--credit", "triage", "--judge", spec,
                   "--iterations", "2", "--groups", "4", "--group-size", "4",
                   "--warm-start", "format", "--warm-start-steps", "20", "--eval-tasks", "4", "--eval-every", "100",
                   "--threads", "1", "--export", "none", "--out", out]  # fmt: skip
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"| {name} | failed: {done.stderr[-300:]!r} | | | |")
                continue
            with (Path(out) / "metrics.csv").open() as f:
                rows = [r for r in csv.DictReader(f) if r.get("credit_time_share")]
            for r in rows:
                print(
                    f"| {name} | {r['iteration']} | {float(r['time_iteration']):.2f} | "
                    f"{float(r['credit/judge_seconds']):.3f} | "
                    f"{float(r['credit_time_share']):.3f} |"
                )
    print()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=16, help="Sokoban groups of 4 for throughput")
    p.add_argument("--hf-segments", type=int, default=32, help="segments the HF judge labels")
    p.add_argument("--max-new-tokens", type=int, default=32, help="HF judge generation budget")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-training", action="store_true", help="only the throughput table")
    args = p.parse_args()
    throughput(args)
    if not args.skip_training:
        training_share(args)


if __name__ == "__main__":
    main()
