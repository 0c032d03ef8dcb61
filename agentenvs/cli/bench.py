"""``agentenvs bench``: random-walk throughput of grouped vector envs.

This module holds :class:`BenchResult`, :func:`bench_env`, :func:`format_table` and the
subcommand's :func:`add_parser` / :func:`run`.

Each env runs as ``agentenvs.make_group_vec_env(env_id, groups, group_size,
vectorization_mode=...)``: ``--groups`` groups of ``--group-size`` sub-envs, named as in
``agentenvs train``. The policy is a random walk: each sub-env plays a uniformly drawn
admissible action (``info["admissible_actions"]``, wrapped in ``<think></think><action>...</action>``
for tagged envs), or a sample of the action space where there is no such list (``Discrete`` envs;
a text env without admissible actions then sends short random text, mostly invalid). Measured, after one
untimed warm-up reset:

* ``steps/s``: sub-env steps per second over ``--steps`` sub-env steps (autoresets included);
* ``resets/s``: sub-env resets per second over 3 full ``reset()`` calls (one reset per sub-env
  each);
* ``episodes`` and ``won``: episodes finished during the walk and their success share.

>>> r = bench_env("agentenvs/Sokoban-v0", steps=16, groups=2, group_size=2)
>>> r.steps, r.groups, r.group_size, r.steps_per_s > 0, r.resets_per_s > 0
(16, 2, 2, True, True)
"""

from __future__ import annotations

import argparse
import math
import string
import sys
import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from agentenvs.cli.errors import CLIError, check_env_id, parse_env_kwargs
from agentenvs.cli.play import wrap_action
from agentenvs.vector import DEFAULT_GROUP_SIZE

__all__ = ["BenchResult", "bench_env", "format_table", "add_parser", "run"]

_CHARS = string.ascii_letters + string.digits + " []<>/"
#: Full ``reset()`` calls timed per env.
RESET_CALLS = 3


@dataclass(frozen=True)
class BenchResult:
    """One env's measurement (see the module docstring for what each number means)."""

    env_id: str
    mode: str
    groups: int
    group_size: int
    steps: int
    steps_per_s: float
    resets_per_s: float
    episodes: int
    won: float
    actions: str  # "admissible" or "sampled"

    @property
    def num_envs(self) -> int:
        """Sub-envs: ``groups * group_size``."""
        return self.groups * self.group_size


def _random_text(rng: np.random.Generator, max_chars: int = 20) -> str:
    """A short random printable string (a text space's own ``sample()`` may be a megabyte long)."""
    return "".join(rng.choice(list(_CHARS), size=int(rng.integers(1, max_chars + 1))))


def _action_formats(envs: Any, env_id: str, env_kwargs: dict[str, Any] | None) -> list[Any]:
    """Each sub-env's ``action_format`` (``None`` where it has none): asked of the vector env, or,
    where it cannot say, of one env made for the purpose."""
    try:
        return list(envs.env.get_attr("action_format"))
    except AttributeError:
        probe = gym.make(env_id, **(env_kwargs or {}))
        try:
            fmt = probe.get_wrapper_attr("action_format")
        except AttributeError:
            fmt = None
        finally:
            probe.close()
        return [fmt] * envs.num_envs


def bench_env(
    env_id: str,
    steps: int = 2000,
    groups: int = 1,
    group_size: int = DEFAULT_GROUP_SIZE,
    vectorization: str = "sync",
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> BenchResult:
    """Random-walk ``groups`` x ``group_size`` sub-envs of ``env_id`` for ``steps`` sub-env steps
    (rounded up to whole vector steps).

    Raises:
        CLIError: unknown env id, bad sizes or bad keyword arguments.
        ValueError: an unknown ``vectorization`` mode (from Gymnasium).
    """
    check_env_id(env_id)
    if steps < 1 or groups < 1 or group_size < 1:
        raise CLIError(
            f"--steps, --groups and --group-size must be >= 1, got {steps}, {groups}, {group_size}"
        )
    num_envs = groups * group_size
    import agentenvs

    try:
        envs = agentenvs.make_group_vec_env(
            env_id,
            groups,
            group_size,
            vectorization_mode=vectorization,
            **(env_kwargs or {}),
        )
    except TypeError as exc:
        raise CLIError(f"{env_id}: bad --env-kwargs {env_kwargs}: {exc}") from None
    rng = np.random.default_rng(seed)
    try:
        envs.action_space.seed(seed)
        text = isinstance(envs.single_action_space, gym.spaces.Text)
        formats = _action_formats(envs, env_id, env_kwargs) if text else [None] * num_envs
        _, infos = envs.reset(seed=seed)
        vector_steps = math.ceil(steps / num_envs)
        episodes = wins = 0
        used_admissible = False
        start = time.perf_counter()
        for _ in range(vector_steps):
            admissible = infos.get("admissible_actions") if text else None
            if not text:
                actions: Any = envs.action_space.sample()
            else:
                actions = []
                for i in range(num_envs):
                    choices = admissible[i] if admissible is not None else None
                    if choices is not None and len(choices):
                        actions.append(wrap_action(str(rng.choice(choices)), formats[i]))
                        used_admissible = True
                    else:
                        actions.append(_random_text(rng))
            _, _, terminated, truncated, infos = envs.step(actions)
            done = np.asarray(terminated) | np.asarray(truncated)
            episodes += int(done.sum())
            won = np.asarray(infos.get("won", np.zeros(num_envs, bool)), bool)
            wins += int((done & won).sum())
        step_s = time.perf_counter() - start
        start = time.perf_counter()
        for k in range(RESET_CALLS):
            envs.reset(seed=seed + 1 + k)
        reset_s = time.perf_counter() - start
    finally:
        envs.close()
    return BenchResult(
        env_id=env_id,
        mode=vectorization,
        groups=groups,
        group_size=group_size,
        steps=vector_steps * num_envs,
        steps_per_s=vector_steps * num_envs / step_s,
        resets_per_s=RESET_CALLS * num_envs / reset_s,
        episodes=episodes,
        won=wins / episodes if episodes else math.nan,
        actions="admissible" if used_admissible else "sampled",
    )


def format_table(results: list[BenchResult]) -> str:
    """A fixed-width table, one row per env.

    >>> print(format_table([BenchResult("e", "sync", 2, 4, 2000, 12345.6, 789.0, 120, 0.05, "sampled")]))
    env  mode  groups  size  steps  steps/s  resets/s  episodes  won    actions
    e    sync       2     4   2000   12,346       789       120  0.050  sampled
    """
    head = (
        "env", "mode", "groups", "size", "steps", "steps/s", "resets/s", "episodes", "won",
        "actions",
    )  # fmt: skip
    rows = [
        (
            r.env_id,
            r.mode,
            str(r.groups),
            str(r.group_size),
            str(r.steps),
            f"{r.steps_per_s:,.0f}",
            f"{r.resets_per_s:,.0f}",
            str(r.episodes),
            f"{r.won:.3f}",
            r.actions,
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    left = {0, 1, 8, 9}

    def line(row: tuple[str, ...]) -> str:
        cells = [
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    return "\n".join(line(row) for row in [head, *rows])


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bench",
        help="random-walk throughput (steps/s, resets/s) of grouped vector envs",
        description="Random walk over admissible actions through agentenvs.make_group_vec_env.",
    )
    p.add_argument(
        "env_ids",
        nargs="*",
        metavar="ENV_ID",
        default=["agentenvs/Sokoban-v0"],
        help="envs to measure (default: agentenvs/Sokoban-v0)",
    )
    p.add_argument(
        "--steps", type=int, default=2000, help="sub-env steps per env (default: %(default)s)"
    )
    p.add_argument("--groups", type=int, default=1, help="groups (default: %(default)s)")
    p.add_argument(
        "--group-size",
        type=int,
        default=DEFAULT_GROUP_SIZE,
        help="sub-envs per group (default: %(default)s)",
    )
    p.add_argument(
        "--vectorization",
        choices=("sync", "async", "ray"),
        default="sync",
        help="where the sub-envs run (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed (default: %(default)s)")
    p.add_argument("--env-kwargs", default=None, help="JSON keyword arguments for every env")
    p.add_argument(
        "--num-envs", help=argparse.SUPPRESS
    )  # the old spelling: an error naming the new


def run(args: argparse.Namespace) -> int:
    if args.num_envs is not None:
        raise CLIError(
            "--num-envs is now --groups G --group-size M, G x M sub-envs (e.g. --num-envs 8 "
            "--group-size 4 is --groups 2 --group-size 4)"
        )
    kwargs = parse_env_kwargs(args.env_kwargs)
    results = []
    for env_id in args.env_ids:
        print(f"measuring {env_id} ...", file=sys.stderr, flush=True)
        results.append(
            bench_env(
                env_id,
                args.steps,
                args.groups,
                args.group_size,
                args.vectorization,
                args.seed,
                kwargs,
            )
        )
    print(format_table(results))
    return 0
