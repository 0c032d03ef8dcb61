"""Cost of the reach adapters, each as a ratio to a baseline measured in the same run.

Usage (in the reach venv, scripts/test_reach.sh: it needs verl and openenv)::

    PYTHONPATH=. .reach-venv/bin/python benchmarks/reach.py [--steps 100000] [--repeats 3] \\
        [--env-steps 2000] [--sections verl openenv]

Two markdown tables:

1. **The verl path vs verl's own GRPO, per 1M steps.** Groups of
   :func:`benchmarks.credit.synthetic_batch` (groups of 8 trajectories of 5-50 steps, recurring
   states) as :func:`benchmarks.credit.trajectories` builds them, as one ``DataProto`` (one row per
   step, 4 response tokens, the reward at the last one; the columns of
   ``agentenvs.learners.verl.step_columns`` built before timing). The baseline is verl's own
   estimator ``get_adv_estimator_fn("grpo")`` on the batch's plain uids. Ours, timed as one call
   each: ``attach_step_uids`` then ``get_adv_estimator_fn("agentenvs_<m>")``, both with the same
   ``token_level_rewards``, ``response_mask`` and ``AlgoConfig`` (estimator functions called
   directly, as verl's ``compute_advantage`` calls them), for GRPO, GiGPO on verl-agent's columns
   only (``uid``, ``traj_uid``, ``anchor_obs``, ``is_action_valid``, ``won``: step indexes and next
   states derived from the row order), GraphGPO and RTMC; ``attach_step_uids`` alone; and our native
   ``assign_advantages(groups, "graphgpo")`` (batch building included). The ratio is to verl's
   GRPO, measured in the same run: rounds of one call each, interleaved, best of ``--repeats``
   after a warm-up. GraphGPO through verl must agree with native (the max difference is printed).
2. **OpenEnv round trip per step vs in-process.** For Sokoban (plain actions) and SearchQA (BM25
   searches, tagged answers): the server is ``agentenvs.serve.openenv.serve`` in a subprocess on
   127.0.0.1; the client ``agentenvs.make_remote``. The same seeded actions, invalid ones
   included, go to the remote and to an in-process ``gym.make`` env; only ``step`` calls are
   timed (resets are not), ``--env-steps`` steps each. Then (with the ``openenv`` section)
   :func:`benchmarks.serve_scaling.scaling_section`'s table: steps/s of 1, 4 and 16 clients
   served by 1, 2 and 4 worker processes vs as many in-process envs.

Timing: ``time.perf_counter``; torch on one thread. Server and client share the machine's cores.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

if not __package__:  # run as a script: make the repository's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentenvs.wrappers import assign_advantages

import agentenvs
from benchmarks.credit import synthetic_batch, trajectories

__all__ = ["VERL_AGENT_COLUMNS", "verl_section", "openenv_section", "main"]

#: Env id, make kwargs and the actions drawn from (the last of each list is invalid).
ENVS: dict[str, tuple[str, dict, list[str]]] = {
    "Sokoban": ("agentenvs/Sokoban-v0", {"action_format": "plain"}, ["up", "left", "jump"]),
    "SearchQA": (
        "agentenvs/SearchQA-v0",
        {},
        ["<search>capital of france</search>", "<search>river nile</search>", "no tags"],
    ),
}


def _race(fns: Mapping[str, Callable[[], Any]], repeats: int) -> dict[str, tuple[float, Any]]:
    """Per name, the seconds of the fastest of ``repeats`` calls and its result: one warm-up call
    each, then ``repeats`` rounds calling each once (interleaved, so load on the machine hits all
    alike), ``gc.collect()`` before every call."""
    out = {name: (float("inf"), fn()) for name, fn in fns.items()}
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            start = time.perf_counter()
            result = fn()
            seconds = time.perf_counter() - start
            if seconds < out[name][0]:
                out[name] = (seconds, result)
    return out


#: verl-agent's names of the columns its rollout fills (``won`` added by the user), ours -> its.
VERL_AGENT_COLUMNS = {
    "uid": "uid",
    "traj_uid": "traj_uid",
    "state_key": "anchor_obs",
    "action_valid": "is_action_valid",
    "won": "won",
}


def verl_section(n_steps: int, repeats: int) -> None:
    """Table 1: our estimators through verl (``attach_step_uids`` included) vs verl's GRPO."""
    import agentenvs.learners.verl as credit
    import torch
    from tensordict import TensorDict
    from verl import DataProto
    from verl.trainer.config import AlgoConfig
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
    verl_agent = {theirs: columns[ours] for ours, theirs in VERL_AGENT_COLUMNS.items()}
    tensors = TensorDict({"response_mask": mask, "token_level_rewards": token_rewards}, [n])
    config = AlgoConfig()
    plain_uids = columns["uid"].copy()

    def verl_grpo() -> Any:
        return get_adv_estimator_fn("grpo")(
            token_level_rewards=token_rewards, response_mask=mask, index=plain_uids, config=config
        )[0]

    def ours(method: str, cols: Mapping[str, np.ndarray]) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            data = DataProto(batch=tensors, non_tensor_batch=dict(cols))
            credit.attach_step_uids(data)
            adv, _ = get_adv_estimator_fn(f"agentenvs_{method}")(
                token_level_rewards=token_rewards,
                response_mask=mask,
                index=data.non_tensor_batch["uid"],
                config=config,
            )
            return adv[:, 0].double().numpy()

        return run

    def native() -> np.ndarray:
        assign_advantages(groups, "graphgpo")
        return np.array([s.advantage for t in flat for s in t.steps])

    rows = {
        "verl's `grpo` (plain uids)": verl_grpo,
        "`attach_step_uids` + `agentenvs_grpo`": ours("grpo", columns),
        "`attach_step_uids` + `agentenvs_gigpo`, verl-agent's columns": ours("gigpo", verl_agent),
        "`attach_step_uids` + `agentenvs_graphgpo`": ours("graphgpo", columns),
        "`attach_step_uids` + `agentenvs_rtmc`": ours("rtmc", columns),
        "`attach_step_uids` alone": lambda: credit.attach_step_uids(
            DataProto(batch=tensors, non_tensor_batch=dict(columns))
        ),
        'native `assign_advantages(groups, "graphgpo")`': native,
    }
    times = _race(rows, repeats)
    base = times["verl's `grpo` (plain uids)"][0]
    per_m = 1e6 / n
    print(f"\n### Our estimators through verl vs verl's GRPO ({n:,} steps, best of {repeats})\n")
    print("| path | s per 1M steps | ratio to verl's GRPO |\n| --- | --- | --- |")
    for name, (seconds, _) in times.items():
        print(f"| {name} | {seconds * per_m:.2f} | {seconds / base:.2f} |")
    got = times["`attach_step_uids` + `agentenvs_graphgpo`"][1]
    want = times['native `assign_advantages(groups, "graphgpo")`'][1]
    print(f"\nmax |verl GraphGPO - native| = {np.abs(got - want).max():.2e}")


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
    parser.add_argument(
        "--sections", nargs="+", choices=("verl", "openenv"), default=["verl", "openenv"]
    )
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {len(os.sched_getaffinity(0))} cores")
    if "verl" in args.sections:
        verl_section(args.steps, args.repeats)
    if "openenv" in args.sections:
        openenv_section(args.env_steps)
        from benchmarks.serve_scaling import scaling_section  # it imports this module's ENVS

        scaling_section()
    return 0


if __name__ == "__main__":
    sys.exit(main())
