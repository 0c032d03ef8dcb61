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


def test_m_sweep_prints_a_row_per_m_on_one_held_out_set() -> None:
    import io

    from benchmarks.fidelity_paper import m_sweep
    from benchmarks.fidelity_sokoban import Settings

    settings = Settings(bc_rooms=10, bc_epochs=1, paper_rooms=2, quality_rooms=2)
    out = io.StringIO()
    rows = m_sweep([1, 2], settings, out=out)
    assert [r["m"] for r in rows] == [1, 2]
    for r in rows:  # every episode of 2 rooms x M takes 1 to 15 steps
        assert 2 * r["m"] <= r["collect_steps"] <= 15 * 2 * r["m"]
        assert r["trajectories"] == 4 * 2 and r["spa_sum_mse"] >= 0
    assert rows[0]["steps"] == rows[1]["steps"]  # the same held-out rollouts for every M
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[2].startswith("| 1 | ") and lines[3].startswith("| 2 | ")
    with pytest.raises(ValueError, match="M values >= 1"):
        m_sweep([0], settings)
