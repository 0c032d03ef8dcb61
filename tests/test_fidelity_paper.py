"""The paper-protocol pieces of the Sokoban fidelity benchmark (benchmarks/fidelity_paper.py and
the pairing in benchmarks/fidelity_sokoban.py; docs/fidelity_sokoban.md)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import agentenvs  # noqa: E402, F401
from benchmarks.fidelity_paper import room_distance, solver_demos  # noqa: E402
from benchmarks.fidelity_sokoban import summarise  # noqa: E402


def test_room_distance_reads_the_planes_and_falls_with_a_good_move() -> None:
    env = gym.make("agentenvs/SokobanDiscrete-v0")
    obs, _ = env.reset(options={"task_id": "seed-42"})  # solved by right, right
    assert room_distance(obs) == 2
    obs, *_ = env.step(3)
    assert room_distance(obs) == 1
    obs, *_ = env.step(2)  # left: away again
    assert room_distance(obs) == 2


def test_solver_demos_replay_to_success() -> None:
    from agentenvs.sokoban.env import room_for_task
    from agentenvs.sokoban.solver import solve

    obs, actions = solver_demos(4, start=40)
    assert obs.shape == (len(actions), 144) and set(actions.tolist()) <= {0, 1, 2, 3}
    room = room_for_task("seed-40")
    n = len(solve(room.fixed, room.state))  # the first room's demonstration
    env = gym.make("agentenvs/SokobanDiscrete-v0")
    env.reset(options={"task_id": "seed-40"})
    outcomes = [env.step(int(a))[2:5:2] for a in actions[:n]]
    assert [t for t, _ in outcomes] == [False] * (n - 1) + [True] and outcomes[-1][1]["won"]
    assert [room_distance(o) for o in obs[:n]] == list(range(n, 0, -1))


def _run(method: str, seed: int, success: list[float], checkpoints: list[int]) -> dict:
    return {"method": method, "seed": seed, "success": success, "checkpoints": checkpoints,
            "wall_s": 1.0}  # fmt: skip


def test_paper_rows_pair_with_warm_gae_at_both_budgets() -> None:
    runs = [_run("gae_warm", s, [0.3, 0.4, v], [0, 10, 15]) for s, v in enumerate([0.5, 0.6])] + [
        _run("spa_paper", s, [0.3, v], [0, 10]) for s, v in enumerate([0.45, 0.5])
    ]
    rows = {r["method"]: r for r in summarise(runs, ["gae_warm", "spa_paper"], steps=10)}
    assert rows["gae_warm"]["mean"] == pytest.approx(0.4) and rows["gae_warm"]["baseline"] is None
    spa = rows["spa_paper"]
    assert spa["baseline"] == "gae_warm"
    assert spa["d"] == pytest.approx(0.075)  # vs GAE at the same RL steps
    assert spa["d_budget"] == pytest.approx(-0.075)  # vs GAE given the collection steps too
    assert np.isfinite(spa["d_ci"])
