"""Throughput of ``agentenvs serve`` for 1, 4 and 16 clients against as many in-process envs.

Usage (in the reach venv; :mod:`benchmarks.reach` prints it too)::

    PYTHONPATH=. .reach-venv/bin/python benchmarks/serve_scaling.py [--seconds 3] \\
        [--clients 1 4 16] [--workers 1 2 4] [--envs Sokoban SearchQA]

For each env (:data:`benchmarks.reach.ENVS`: Sokoban with plain actions, SearchQA's BM25
searches) and each client count N, N client processes (forked), each playing seeded episodes of
the env's random actions (invalid ones included; a reset whenever an episode ends), start
together after a warm-up and step for ``--seconds``; the table gives their total steps per
second (resets included in the time, not in the count). Each client cycles through
:data:`SEEDS` seeds of its own, all played in the warm-up, so Sokoban's room cache answers the
timed resets (a new room costs about 14 ms here, which would swamp a 25 us step):

* in-process: each client its own ``gym.make``;
* over OpenEnv: each client ``agentenvs.make_remote`` (a WebSocket session) to
  ``serve_in_subprocess(..., workers=W)`` (``W = 1``: the one-process server; more: the router
  and W worker processes of :mod:`agentenvs.serve.workers`), for each ``--workers`` W.

The ratio is to in-process with the same N, in the same run. CPU per step: the CPU time (user +
system) over the timed window, divided by the steps, of the server's processes (and of the
router alone: what the hop costs), and of the clients (all their threads). Server plus client
CPU per step is the per-step cost floor: clients and server share the machine's cores, so the
total is at most ``cores / floor`` steps per second however many workers serve.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

if not __package__:  # run as a script: make the repository's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentenvs
from benchmarks.reach import ENVS

__all__ = ["CLIENTS", "WORKERS", "SEEDS", "scaling_section", "main"]

#: Client counts and server worker counts measured by default.
CLIENTS = (1, 4, 16)
WORKERS = (1, 2, 4)
#: Seeds each client cycles through (its episodes' tasks).
SEEDS = 8


def _client(
    url: str | None, name: str, seed: int, seconds: float, start: Any, steps: Any, cpu: Any
) -> None:
    """One client process: warm up (an episode of each of its seeds), wait at ``start`` (a
    barrier), step for ``seconds``; adds its steps to ``steps`` and its CPU seconds (all its
    threads) to ``cpu``."""
    env_id, kwargs, choices = ENVS[name]
    env = gym.make(env_id, **kwargs) if url is None else agentenvs.make_remote(url)
    rng = np.random.default_rng(seed)
    episodes = 0
    env.reset(seed=seed)

    def play(until_episodes: float, until: float) -> int:
        nonlocal episodes
        done = 0
        while episodes < until_episodes and time.perf_counter() < until:
            _, _, terminated, truncated, _ = env.step(choices[int(rng.integers(len(choices)))])
            done += 1
            if terminated or truncated:
                episodes += 1
                env.reset(seed=seed + episodes % SEEDS)
        return done

    play(SEEDS, float("inf"))
    start.wait()
    used = time.process_time()
    n = play(float("inf"), time.perf_counter() + seconds)
    used = time.process_time() - used
    with steps.get_lock():
        steps.value += n
        cpu.value += used
    env.close()


def _cpu_seconds(pid: int | None) -> np.ndarray:
    """CPU seconds (user + system) of process ``pid``, and of it with all its descendants."""
    if pid is None:
        return np.zeros(2)
    import psutil

    root = psutil.Process(pid)
    procs = [root, *root.children(recursive=True)]
    times = [sum(p.cpu_times()[:2]) for p in procs if p.is_running()]
    return np.array([times[0], sum(times)])


def _measure(url: str | None, pid: int | None, name: str, n: int, seconds: float) -> tuple:
    """``(steps per second, (router, server, client) CPU seconds per step)`` of ``n`` clients
    at once (the router: the server's first process; with one worker, the server itself)."""
    ctx = mp.get_context("fork")
    start, steps, client_cpu = ctx.Barrier(n + 1), ctx.Value("l", 0), ctx.Value("d", 0.0)
    procs = [
        ctx.Process(target=_client, args=(url, name, 1000 * i, seconds, start, steps, client_cpu))
        for i in range(n)
    ]
    for proc in procs:
        proc.start()
    start.wait()
    cpu = _cpu_seconds(pid)
    time.sleep(seconds)
    cpu = _cpu_seconds(pid) - cpu
    for proc in procs:
        proc.join()
    total = max(steps.value, 1)
    return total / seconds, (cpu[0] / total, cpu[1] / total, client_cpu.value / total)


def scaling_section(
    seconds: float = 3.0,
    clients: tuple[int, ...] = CLIENTS,
    workers: tuple[int, ...] = WORKERS,
    envs: tuple[str, ...] = tuple(ENVS),
) -> None:
    """Print the table: steps/s of ``clients`` clients in-process and over each server."""
    from agentenvs.serve.openenv import serve_in_subprocess

    cores = len(os.sched_getaffinity(0))
    print(f"\n### Served steps/s for {', '.join(map(str, clients))} clients ({cores} cores)\n")
    heads = " | ".join(f"{w} worker{'s' * (w > 1)}: steps/s (ratio)" for w in workers)
    print(f"| env | clients | in-process steps/s | {heads} |")
    print("| --- | --- | --- |" + " --- |" * len(workers))
    notes = []
    for name in envs:
        env_id, kwargs, _ = ENVS[name]
        local = {n: _measure(None, None, name, n, seconds)[0] for n in clients}
        served: dict[int, dict[int, tuple[float, tuple]]] = {}
        for w in workers:
            with serve_in_subprocess(env_id, max(clients), workers=w, **kwargs) as (url, proc):
                served[w] = {n: _measure(url, proc.pid, name, n, seconds) for n in clients}
        for n in clients:
            cells = " | ".join(
                f"{served[w][n][0]:,.0f} ({served[w][n][0] / local[n]:.2f})" for w in workers
            )
            print(f"| {name} | {n} | {local[n]:,.0f} | {cells} |")
        costs = []
        for w in workers:
            router, server, client = np.median([c for _, c in served[w].values()], axis=0) * 1e6
            costs.append(
                f"{w} worker{'s' * (w > 1)}: server {server:,.0f} (router {router:,.0f}), "
                f"client {client:,.0f}"
            )
        one = clients[0]
        notes.append(
            f"{name}: CPU us per step (median over client counts) {'; '.join(costs)}; with "
            f"{one} client a step takes {1e6 / served[workers[0]][one][0]:,.0f} us served, "
            f"{1e6 / local[one]:,.0f} us in-process"
        )
    print("\n" + "\n".join(f"- {note}" for note in notes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per cell")
    parser.add_argument("--clients", type=int, nargs="+", default=list(CLIENTS))
    parser.add_argument("--workers", type=int, nargs="+", default=list(WORKERS))
    parser.add_argument("--envs", nargs="+", choices=tuple(ENVS), default=list(ENVS))
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {len(os.sched_getaffinity(0))} cores")
    scaling_section(args.seconds, tuple(args.clients), tuple(args.workers), tuple(args.envs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
