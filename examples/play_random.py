"""Play groups of Sokoban rollouts with a uniformly random policy; print success rate and speed.

    python examples/play_random.py [ENV_ID] --groups 64 --group-size 8

Each group is ``group_size`` sub-envs of a grouped vector env that play the same room; the script
reports the share of won episodes and env steps per second.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import agentenvs
from agentenvs.vector import DEFAULT_GROUP_SIZE


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("env", nargs="?", default="agentenvs/Sokoban-v0", metavar="ENV_ID")
    parser.add_argument("--env", dest="old_env", help=argparse.SUPPRESS)
    parser.add_argument("--groups", type=int, default=64, help="groups (tasks) to finish")
    parser.add_argument("--group-size", type=int, default=DEFAULT_GROUP_SIZE)
    parser.add_argument("--parallel-groups", type=int, default=4, help="blocks played at once")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.old_env is not None:
        parser.error("the env id is positional now: play_random.py ENV_ID [FLAGS]")

    envs = agentenvs.make_group_vec_env(
        args.env, num_groups=args.parallel_groups, group_size=args.group_size, action_format="plain"
    )
    rng = np.random.default_rng(args.seed)
    _, infos = envs.reset(seed=args.seed)
    episodes, wins, steps = 0, 0, 0
    target = args.groups * args.group_size
    start = time.perf_counter()
    while episodes < target:
        actions = [rng.choice(infos["admissible_actions"][i]) for i in range(envs.num_envs)]
        _, _, terminated, truncated, infos = envs.step(actions)
        steps += envs.num_envs
        done = terminated | truncated
        episodes += int(done.sum())
        wins += int((done & infos["won"]).sum())
    elapsed = time.perf_counter() - start
    envs.close()
    print(
        f"{args.env}: random policy, {episodes} episodes in {episodes // args.group_size} groups of {args.group_size}"
    )
    print(f"success rate {wins / episodes:.3f}   env steps/s {steps / elapsed:,.0f}")


if __name__ == "__main__":
    main()
