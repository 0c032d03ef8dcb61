"""Rollout throughput: the local vector env against Ray workers, and the DDP learner's update.

    python benchmarks/rollout.py                       # Sokoban and ALFWorld, 1/2/8 Ray workers
    python benchmarks/rollout.py --envs sokoban --steps 200
    python benchmarks/rollout.py --no-ddp              # skip benchmarks/ddp_update.py

For each env: ``agentenvs.make_group_vec_env(id, 2, 4, mode)`` (8 sub-envs, 2 groups of 4) under
:class:`agentenvs.wrappers.VectorCreditWrapper` (GraphGPO) plays the same random walk over each sub-env's
admissible actions, with ``vectorization_mode="sync"`` (Gymnasium's ``SyncVectorEnv``, in this
process) and ``"ray"`` with 1, 2 and 8 workers (one local Ray instance). Printed: sub-env steps/s
and each Ray figure as a ratio of the local one, with a check that every run credited the same
groups. Ray's per-step cost is a round trip to every worker (about a millisecond each), so it pays
off when a step costs more than that and there are cores (or machines) to spread it over; on a
2-core machine it measures the overhead. The DDP part runs ``benchmarks/ddp_update.py`` (the LLM
learner's update, 1 vs 2 processes) when present.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

if not __package__:  # run as a script: make the repository's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentenvs.wrappers import VectorCreditWrapper, credited_groups

import agentenvs

ENVS = {
    "sokoban": ("agentenvs/Sokoban-v0", {"action_format": "plain", "max_steps": 20}),
    "alfworld": ("agentenvs/ALFWorld-v0", {"action_format": "plain", "max_steps": 20}),
}


def walk(env_id: str, kwargs: dict, mode: str, steps: int, workers: int | None) -> tuple:
    """Steps/s of a seeded random walk over admissible actions, and the credited groups."""
    vector_kwargs = {"num_workers": workers} if mode == "ray" else None
    envs = VectorCreditWrapper(
        agentenvs.make_group_vec_env(env_id, 2, 4, mode, vector_kwargs=vector_kwargs, **kwargs),
        "graph",
    )
    _, infos = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    groups = []
    start = time.perf_counter()
    for _ in range(steps):
        actions = [str(rng.choice(list(a) or ["look"])) for a in infos["admissible_actions"]]
        *_, infos = envs.step(actions)
        groups += credited_groups(infos)
    seconds = time.perf_counter() - start
    envs.close()
    return steps * envs.num_envs / seconds, groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", default="sokoban,alfworld")
    parser.add_argument("--steps", type=int, default=300, help="vector steps per run")
    parser.add_argument("--workers", default="1,2,8")
    parser.add_argument("--no-ddp", action="store_true")
    args = parser.parse_args()
    import ray

    ray.init(include_dashboard=False, log_to_driver=False)
    print(f"Ray {ray.__version__}, {int(ray.cluster_resources()['CPU'])} CPUs; 8 sub-envs")
    for name in args.envs.split(","):
        env_id, kwargs = ENVS[name]
        local, reference = walk(env_id, kwargs, "sync", args.steps, None)
        print(f"{name:9s} local sync        {local:9.0f} steps/s   1.00x")
        for workers in map(int, args.workers.split(",")):
            rate, groups = walk(env_id, kwargs, "ray", args.steps, workers)
            same = "same groups" if groups == reference else "DIFFERENT GROUPS"
            print(
                f"{name:9s} ray {workers} worker(s) {rate:9.0f} steps/s  {rate / local:5.2f}x  {same}"
            )
    ray.shutdown()
    ddp = Path(__file__).with_name("ddp_update.py")
    if not args.no_ddp and ddp.exists():
        subprocess.run([sys.executable, str(ddp)], check=True)


if __name__ == "__main__":
    main()
