"""Cost of the reach adapters, each as a ratio against our native path measured in the same run.

Usage (in the reach venv, scripts/test_reach.sh: it needs verl and openenv)::

    PYTHONPATH=. .reach-venv/bin/python benchmarks/reach.py [--steps 100000] [--env-steps 2000]

Two markdown tables:

1. **verl adapter vs native, per 1M steps.** Groups of :func:`benchmarks.credit.synthetic_batch`
   (groups of 8 trajectories of 5-50 steps, recurring states) as
   :func:`benchmarks.credit.trajectories` builds them. Native: ``assign_advantages(groups,
   "graphgpo")`` (our wrappers' call, batch building included). verl: the same steps as one
   ``DataProto`` (one row per step, 4 response tokens, the reward at the last one, the columns of
   ``agentenvs.learners.verl.step_columns``: built before timing), then ``attach_step_uids`` and the
   estimator ``get_adv_estimator_fn("agentenvs_graphgpo")``, each timed. Best of ``--repeats``
   after a warm-up; the two must agree (the max difference is printed).
2. **OpenEnv round trip per step vs in-process.** For Sokoban (plain actions) and SearchQA (BM25
   searches, tagged answers): the server is ``agentenvs.serve.openenv.serve`` in a subprocess on
   127.0.0.1; the client ``agentenvs.make_remote``. The same seeded actions, invalid ones
   included, go to the remote and to an in-process ``gym.make`` env; only ``step`` calls are
   timed (resets are not), ``--env-steps`` steps each.

Timing: ``time.perf_counter``; torch on one thread. Server and client share the machine's cores.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

if not __package__:  # run as a script: make the repository's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentenvs.wrappers import assign_advantages

import agentenvs
from benchmarks.credit import synthetic_batch, trajectories

__all__ = ["verl_section", "openenv_section", "main"]

#: Env id, make kwargs and the actions drawn from (the last of each list is invalid).
ENVS: dict[str, tuple[str, dict, list[str]]] = {
    "Sokoban": ("agentenvs/Sokoban-v0", {"action_format": "plain"}, ["up", "left", "jump"]),
    "SearchQA": (
        "agentenvs/SearchQA-v0",
        {},
        ["<search>capital of france</search>", "<search>river nile</search>", "no tags"],
    ),
}


def _best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Seconds of the fastest of ``repeats`` calls after one warm-up, and its result."""
    out = fn()
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def verl_section(n_steps: int, repeats: int) -> None:
    """Table 1: GraphGPO through verl's estimator registry vs our native call."""
    import agentenvs.learners.verl as credit
    import torch
    from tensordict import TensorDict
    from verl import DataProto
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    torch.set_num_threads(1)
    groups = trajectories(synthetic_batch(n_steps))
    flat = [t for g in groups for t in g]
    n = sum(len(t.steps) for t in flat)
    rewards = torch.tensor([s.reward for t in flat for s in t.steps], dtype=torch.float32)
    mask = torch.ones(n, 4, dtype=torch.int64)
    token_rewards = torch.zeros(n, 4)
    token_rewards[:, -1] = rewards
    columns = credit.step_columns(flat)
    tensors = TensorDict({"response_mask": mask, "token_level_rewards": token_rewards}, [n])
    estimator = get_adv_estimator_fn("agentenvs_graphgpo")

    def native() -> np.ndarray:
        assign_advantages(groups, "graphgpo")
        return np.array([s.advantage for t in flat for s in t.steps])

    def attach() -> DataProto:
        data = DataProto(batch=tensors, non_tensor_batch=dict(columns))
        return credit.attach_step_uids(data)

    data = attach()

    def through_verl() -> np.ndarray:
        adv, _ = estimator(
            token_level_rewards=token_rewards,
            response_mask=mask,
            index=data.non_tensor_batch["uid"],
        )
        return adv[:, 0].double().numpy()

    t_native, want = _best(native, repeats)
    t_attach, _ = _best(attach, repeats)
    t_verl, got = _best(through_verl, repeats)
    per_m = 1e6 / n
    print(f"\n### verl adapter vs native ({n:,} steps, GraphGPO, best of {repeats})\n")
    print("| path | s per 1M steps | ratio to native |\n| --- | --- | --- |")
    print(f"| native `assign_advantages` | {t_native * per_m:.2f} | 1.0 |")
    print(f"| verl estimator | {t_verl * per_m:.2f} | {t_verl / t_native:.1f} |")
    print(f"| `attach_step_uids` | {t_attach * per_m:.2f} | {t_attach / t_native:.1f} |")
    print(f"\nmax |verl - native| = {np.abs(got - want).max():.2e}")


def _time_steps(env: gym.Env, actions: Sequence[str], seed: int) -> float:
    """Seconds spent in ``env.step`` over ``actions`` (reset, untimed, whenever an episode ends)."""
    env.reset(seed=seed)
    total, episode = 0.0, 0
    for action in actions:
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        total += time.perf_counter() - start
        if terminated or truncated:
            episode += 1
            env.reset(seed=seed + episode)
    return total


def openenv_section(n_steps: int) -> None:
    """Table 2: one step over OpenEnv's WebSocket vs the same step in-process."""
    from agentenvs.serve.openenv import serve_in_subprocess

    print(f"\n### OpenEnv round trip per step vs in-process ({n_steps} steps each)\n")
    print("| env | in-process us/step | OpenEnv us/step | ratio |\n| --- | --- | --- | --- |")
    for name, (env_id, kwargs, choices) in ENVS.items():
        rng = np.random.default_rng(0)
        actions = [choices[int(i)] for i in rng.integers(len(choices), size=n_steps)]
        with serve_in_subprocess(env_id, max_sessions=2, **kwargs) as (url, _):
            remote = agentenvs.make_remote(url)
            local = gym.make(env_id, **kwargs)
            _time_steps(local, actions[:50], 0)  # warm-up: caches, indexes
            _time_steps(remote, actions[:50], 0)
            t_local = _time_steps(local, actions, 1)
            t_remote = _time_steps(remote, actions, 1)
            remote.close()
        us = 1e6 / n_steps
        print(f"| {name} | {t_local * us:.0f} | {t_remote * us:.0f} | {t_remote / t_local:.0f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000, help="verl table: steps (approx.)")
    parser.add_argument("--repeats", type=int, default=3, help="verl table: timed repeats")
    parser.add_argument("--env-steps", type=int, default=2000, help="OpenEnv table: steps per env")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {len(os.sched_getaffinity(0))} cores")
    verl_section(args.steps, args.repeats)
    openenv_section(args.env_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
