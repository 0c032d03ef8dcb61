"""Train stable-baselines3 PPO on Sokoban with GraphGPO credit instead of GAE, in a few CPU minutes.

Usage: ``python examples/sb3_sokoban.py [--credit graph] [--steps 100000] [--seed 0]``

Each of the ``--n-envs`` sub-envs is ``agentenvs/SokobanDiscrete-v0`` (6x6 rooms, one box, 15 steps,
``Discrete(4)`` actions, one-hot planes) inside a credit wrapper (``GraphCreditWrapper`` by default):
the wrapper plays ``--group-size`` episodes of one room, builds the group's state graph and writes a
per-step advantage into every step; :class:`agentenvs.learners.sb3.CreditPPO` puts exactly those advantages
into its rollout buffer. ``--credit gae`` trains plain PPO for comparison. The script prints the
greedy success rate on held-out test rooms before and after training. Measured on a shared 2-core
machine with the defaults (seed 0, 100k steps, 200 rooms): GraphGPO 2.5% -> 44.0% in 51 s of
training; ``--credit gae`` 2.5% -> 29.0% in 75 s.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import torch
from agentenvs.learners.sb3 import CreditPPO, evaluate_success
from agentenvs.wrappers import (
    GiGPOCreditWrapper,
    GraphCreditWrapper,
    GraphGPOConfig,
    OutcomeCreditWrapper,
    RolloutTreeCreditWrapper,
)
from stable_baselines3.common.env_util import make_vec_env

import agentenvs  # noqa: F401  (registers the agentenvs/* ids)
from agentenvs.vector import DEFAULT_GROUP_SIZE

ENV_ID = "agentenvs/SokobanDiscrete-v0"
WRAPPERS = {
    "graph": GraphCreditWrapper,
    "grpo": OutcomeCreditWrapper,
    "gigpo": GiGPOCreditWrapper,
    "rtmc": RolloutTreeCreditWrapper,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--credit", default="graph", choices=[*WRAPPERS, "gae"])
    parser.add_argument("--steps", type=int, default=100_000, help="env steps of training")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument(
        "--group-size", type=int, default=DEFAULT_GROUP_SIZE, help="episodes per task (M)"
    )
    parser.add_argument("--test-rooms", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    def make_env() -> gym.Env:
        env = gym.make(ENV_ID)
        if args.credit == "gae":
            return env
        # GraphGPO with the paper's Sokoban distance discount; other methods use their defaults
        config = GraphGPOConfig(distance_discount=0.8) if args.credit == "graph" else None
        return WRAPPERS[args.credit](env, group_size=args.group_size, config=config)

    env = make_vec_env(make_env, n_envs=args.n_envs, seed=args.seed)
    model = CreditPPO(
        "MlpPolicy", env, n_steps=256, batch_size=256, learning_rate=3e-4, ent_coef=0.01,
        seed=args.seed, device="cpu",
    )  # fmt: skip
    test_ids = gym.make(ENV_ID).unwrapped.tasks.ids("test")[: args.test_rooms]

    def success() -> float:
        return float(
            evaluate_success(model, lambda: gym.make(ENV_ID, split="test"), test_ids).mean()
        )

    print(
        f"credit={model.credit}  test rooms={len(test_ids)}  greedy success before: {success():.3f}"
    )
    start = time.perf_counter()
    model.learn(args.steps)
    print(
        f"trained {model.num_timesteps} env steps in {time.perf_counter() - start:.0f} s; "
        f"greedy success after: {success():.3f}"
    )
    env.close()


if __name__ == "__main__":
    main()
