"""``agentenvs serve`` under abuse (docs/integrations.md, "Threat model"; run in the reach venv
by scripts/test_reach.sh), on loopback addresses only: the server listens on 127.0.0.1, the
victim connects from 127.0.0.1, the abusers (tests/serve_abusers.py, a process of their own)
from 127.0.0.2 and up.

While the abusers hoard sessions, try to hijack them, send huge bodies and messages, malformed
JSON, 200 slowloris connections, a metadata flood and whole sessions one after another, a
victim plays Sokoban over ``make_remote``: its episodes equal the in-process ones, its p99 step
latency stays within :data:`LATENCY_RATIO` of its p99 unloaded (plus the machine's scheduling
jitter, :data:`JITTER_S`) and its median within :data:`LATENCY_RATIO` (plus
:data:`MEDIAN_JITTER_S`), no abuser ever sees a 5xx or
gets past a check, and the server's RSS grows by at most :data:`RSS_BOUND_MB`. The quick run
abuses for 12 s (past the 10 s head deadline) with 100 sequential sessions; ``slow`` for 40 s with 1,000.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.reach
pytest.importorskip("openenv")
psutil = pytest.importorskip("psutil")

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.serve.guard import Limits  # noqa: E402
from agentenvs.serve.openenv import make_remote, serve_in_subprocess  # noqa: E402

ENV = "agentenvs/Sokoban-v0"
KWARGS = {"action_format": "plain"}
ACTIONS = ["up", "down", "left", "right", "jump"]
ABUSERS = Path(__file__).resolve().parents[2] / "serve_abusers.py"
#: The server's limits: each abuser address may hold 4 of the 12 sessions and 32 connections.
LIMITS = Limits(max_sessions_per_client=4, max_connections_per_client=32, idle_timeout_s=2.0)
SLOWLORIS = 200
EPISODES = 12  # per round of the victim; Sokoban's step limit (15) ends each
UNLOADED_S = 3.0  # seconds of unloaded play the p99 is measured over
#: The victim's p99 step latency under abuse over its p99 unloaded (the issue's bar), plus
#: :data:`JITTER_S`: on the shared 2-core machine the victim's p99 with no abuse at all varied
#: 7-17 ms between 3-s windows (median 0.5-1.5 ms), as other jobs took the cores.
LATENCY_RATIO = 3.0
JITTER_S = 0.025
#: The median's share of that jitter: at load 7 on 2 cores the victim's median went 0.96 ->
#: 4.4 ms under abuse (the abusers' own process takes a core); a starved server is seconds.
MEDIAN_JITTER_S = 0.005
#: The server's RSS growth from before the abuse to after it, in MiB.
RSS_BOUND_MB = 32


def play(env: gym.Env, seed: int) -> tuple[list, list[float]]:
    """:data:`EPISODES` episodes of seeded actions: the steps ``(obs, reward, terminated,
    truncated)`` and each ``step``'s wall time in seconds."""
    rng = np.random.default_rng(seed)
    steps, seconds = [], []
    for episode in range(EPISODES):
        obs, _ = env.reset(seed=episode)
        steps.append(obs)
        done = False
        while not done:
            action = ACTIONS[int(rng.integers(len(ACTIONS)))]
            started = time.perf_counter()
            result = env.step(action)
            seconds.append(time.perf_counter() - started)
            steps.append(result[:4])
            done = result[2] or result[3]
    return steps, seconds


def p99(seconds: list[float]) -> float:
    return float(np.quantile(seconds, 0.99))


@pytest.mark.parametrize(
    ("seconds", "sequential"), [(12, 100), pytest.param(40, 1000, marks=pytest.mark.slow)]
)
def test_a_victim_plays_on_through_abuse(seconds, sequential):
    baseline, _ = play(gym.make(ENV, **KWARGS), seed=0)
    with serve_in_subprocess(ENV, max_sessions=12, limits=LIMITS, **KWARGS) as (url, proc):
        server = psutil.Process(proc.pid)
        victim = make_remote(url)
        try:
            play(victim, seed=0)  # warm-up
            unloaded: list[float] = []
            started = time.monotonic()
            while time.monotonic() < started + UNLOADED_S:
                steps, latencies = play(victim, seed=0)
                assert steps == baseline
                unloaded += latencies
            rss_before = server.memory_info().rss
            abuse = subprocess.Popen(
                [sys.executable, str(ABUSERS), url, str(seconds), str(sequential), str(SLOWLORIS)],
                stdout=subprocess.PIPE,
                text=True,
            )
            loaded: list[float] = []
            rounds = 0
            while abuse.poll() is None:
                steps, latencies = play(victim, seed=0)
                assert steps == baseline, f"round {rounds} under abuse differs from in-process"
                loaded += latencies
                rounds += 1
            report = json.loads(abuse.communicate(timeout=120)[0])
        finally:
            victim.close()
        time.sleep(LIMITS.idle_timeout_s + 5.5)  # the reaper's period is 5 s
        rss_after = server.memory_info().rss
    growth = (rss_after - rss_before) / 2**20
    ratio = p99(loaded) / p99(unloaded)
    print(
        f"\nvictim: {rounds} rounds of {EPISODES} episodes under abuse, equal to in-process; "
        f"p99 step {p99(unloaded) * 1e3:.2f} ms unloaded ({len(unloaded)} steps), "
        f"{p99(loaded) * 1e3:.2f} ms under abuse ({len(loaded)} steps): {ratio:.2f}x; "
        f"median {np.median(unloaded) * 1e3:.2f} / {np.median(loaded) * 1e3:.2f} ms; "
        f"server RSS {rss_before / 2**20:.0f} -> {rss_after / 2**20:.0f} MiB ({growth:+.1f})"
    )
    for kind, outcome in report.items():
        print(f"  {kind}: {outcome['seen']}")
    assert {kind: o["bad"] for kind, o in report.items() if o["bad"]} == {}
    assert not [kind for kind, o in report.items() if "5xx" in o["seen"]]
    assert report["sequential"]["seen"].get("ws-observation") == 2 * sequential
    assert report["hoard"]["seen"].get("429") or report["hoard"]["seen"].get("mcp-refused")
    assert report["slowloris"]["seen"].get("closed-by-server", 0) > 0
    assert rounds >= 1 and growth <= RSS_BOUND_MB
    assert p99(loaded) <= LATENCY_RATIO * p99(unloaded) + JITTER_S
    assert np.median(loaded) <= LATENCY_RATIO * np.median(unloaded) + MEDIAN_JITTER_S
