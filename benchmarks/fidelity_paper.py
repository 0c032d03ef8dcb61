"""The paper protocol of SPA and HISR in miniature, for ``benchmarks/fidelity_sokoban.py``.

This module holds the steps that run once before the paper-protocol rows (docs/fidelity_sokoban.md,
"The paper protocol"):

* :func:`solver_demos` and :func:`behaviour_cloning` - the warm start: a policy network (SB3
  ``MlpPolicy``, 64x64) trained by cross-entropy on the shortest solutions of
  :func:`agentenvs.sokoban.solver.solve` on training rooms.
* :func:`prepare` - warm start, ``M`` rollouts per training room with it into the trajectory store,
  the offline fits of SPA and HISR (:mod:`agentenvs.wrappers.offline`), saved under one directory with a
  ``paper.json`` of their costs and quality.
* :func:`quality_report` / :func:`estimator_quality` - on held-out rooms (test-split rooms after the evaluation rooms): the
  sum-MSE of each model and the Spearman correlation of its per-step rewards with the solver's
  reduction of the distance to the goal.
* :func:`m_sweep` - that quality as a function of ``M`` (no RL), as a markdown table; run it with
  ``python -m benchmarks.fidelity_paper --m-sweep 5 10 20 40``.

Room sets (all disjoint): demonstrations ``seed-60000 ...`` and collection ``seed-50000 ...`` from
the train split; quality rooms right after the evaluation rooms in the test split.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "solver_demos",
    "behaviour_cloning",
    "prepare",
    "estimator_quality",
    "quality_report",
    "room_distance",
    "load_warm_start",
    "m_sweep",
    "main",
]

ENV_ID = "agentenvs/SokobanDiscrete-v0"
DEMO_START, COLLECT_START = 60_000, 50_000
_MOVES = ("up", "down", "left", "right")  # the Discrete(4) order of SokobanDiscrete-v0
_UNSOLVED = 31  # distance given to a state the solver cannot finish within 30 steps


def _make_env():
    import gymnasium as gym

    import agentenvs  # noqa: F401

    return gym.make(ENV_ID)


def solver_demos(n_rooms: int, start: int = DEMO_START) -> tuple[np.ndarray, np.ndarray]:
    """Observations ``(k, 144)`` and actions ``(k,)`` of the solver's shortest solution of train
    rooms ``seed-start ...`` (``n_rooms`` of them; unsolvable rooms skipped)."""
    from agentenvs.sokoban.env import room_for_task
    from agentenvs.sokoban.solver import solve

    env = _make_env()
    obs_out, act_out = [], []
    for i in range(n_rooms):
        task = f"seed-{start + i}"
        room = room_for_task(task)
        plan = solve(room.fixed, room.state)
        if not plan:
            continue
        obs, _ = env.reset(options={"task_id": task})
        for name in plan:
            obs_out.append(obs)
            act_out.append(_MOVES.index(name))
            obs, *_ = env.step(_MOVES.index(name))
    env.close()
    return np.stack(obs_out), np.array(act_out, np.int64)


def behaviour_cloning(
    obs: np.ndarray, actions: np.ndarray, epochs: int, seed: int = 0, lr: float = 1e-3
) -> dict[str, Any]:
    """The state dict of an SB3 ``MlpPolicy`` (64x64, seed ``seed``) whose action head was trained
    by cross-entropy on ``(obs, actions)`` for ``epochs`` passes (Adam, batches of 64); the value
    head is left at its initialisation."""
    import torch
    from stable_baselines3 import PPO

    torch.manual_seed(seed)
    model = PPO("MlpPolicy", _make_env(), seed=seed, device="cpu")
    policy = model.policy
    optim = torch.optim.Adam(policy.parameters(), lr=lr)
    x, y = torch.as_tensor(obs), torch.as_tensor(actions)
    rng = np.random.default_rng(seed)
    policy.set_training_mode(True)
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for lo in range(0, len(x), 64):
            rows = torch.as_tensor(order[lo : lo + 64])
            _, logp, _ = policy.evaluate_actions(x[rows], y[rows])
            loss = -logp.mean()
            optim.zero_grad()
            loss.backward()
            optim.step()
    policy.set_training_mode(False)
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


def load_warm_start(model: Any, path: Path) -> None:
    """Put the warm-start policy weights saved at ``path`` into an SB3 model."""
    import torch

    model.policy.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))


def _planes_to_room(obs: np.ndarray, rows: int = 6, cols: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """``(fixed, state)`` codes of the solver from SokobanDiscrete's one-hot planes."""
    wall, target, box, player = np.asarray(obs).reshape(4, rows, cols) > 0.5
    fixed = np.where(wall, 0, np.where(target, 2, 1)).astype(np.int8)
    state = fixed.copy()
    state[box & target], state[box & ~target], state[player] = 3, 4, 5
    return fixed, state


def room_distance(obs: np.ndarray) -> int:
    """Shortest number of steps to solve the room an observation shows (31 when the solver finds
    none within 30: a box stuck in a corner)."""
    from agentenvs.sokoban.solver import solve

    plan = solve(*_planes_to_room(obs), max_depth=_UNSOLVED - 1)
    return _UNSOLVED if plan is None else len(plan)


def _distance_reductions(traj: Any) -> np.ndarray:
    """Per step ``d(s_t) - d(s_{t+1})`` of the solver distance (positive: closer to the goal)."""
    frames = [s.observation for s in traj.steps] + [traj.final_observation]
    d = np.array([room_distance(o) for o in frames], np.float64)
    return d[:-1] - d[1:]


def estimator_quality(
    trajectories: list[Any], spa_models: Any, hisr_models: Any
) -> dict[str, float]:
    """Sum-MSE and Spearman correlations of the fitted models on held-out ``trajectories``.

    Keys: ``spa_sum_mse``, ``hisr_sum_mse`` (the SPRM's segment sums against ``R``),
    ``spa_spearman`` (SPA's contributions ``c_t``), ``hisr_spearman`` (HISR's placed, modulated
    ``r_him`` per step), ``env_spearman`` (the env's shaped reward, for scale), each against the
    solver's distance reduction, over all steps; ``steps``, ``trajectories``, ``success``; and the
    mean summed fused reward of successes and of failures (``spa_won``, ``spa_lost``,
    ``hisr_won``, ``hisr_lost``, and ``hisr_flat_*`` without the hindsight modulation): what a
    critic learns to expect from a success and from a failure.
    """
    from agentenvs.wrappers.models.progress import sum_loss
    from agentenvs.wrappers.offline import frozen_config, step_rewards
    from agentenvs.wrappers.segments import make_segmenter, segment, segment_ends
    from agentenvs.wrappers.spa import outcomes
    from scipy.stats import spearmanr

    targets = outcomes(trajectories)
    spa_c = spa_models.estimator.contributions(trajectories)
    cut = make_segmenter(hisr_models.segmenter)
    ends = [segment_ends(segment(t, cut)) for t in trajectories]
    sprm = hisr_models.sprm.contributions(trajectories, ends)
    spa_r = step_rewards(trajectories, frozen_config(spa_models))
    flat_r = step_rewards(trajectories, frozen_config(hisr_models, use_hindsight=False))
    hisr_r = step_rewards(trajectories, frozen_config(hisr_models))
    hisr_p = np.array([s.extras["hisr"]["modulated"] if _seg_end(t, k) else 0.0
                       for t in trajectories for k, s in enumerate(t.steps)])  # fmt: skip
    truth = np.concatenate([_distance_reductions(t) for t in trajectories])
    env_r = np.array([s.reward for t in trajectories for s in t.steps])
    won = targets > 0.5
    sums = {k: np.array([r.sum() for r in v])
            for k, v in (("spa", spa_r), ("hisr", hisr_r), ("hisr_flat", flat_r))}  # fmt: skip
    return {
        **{
            f"{k}_{o}": float(v[w].mean())
            for k, v in sums.items()
            for o, w in (("won", won), ("lost", ~won))
        },  # fmt: skip
        "trajectories": len(trajectories),
        "steps": int(truth.size),
        "success": float(targets.mean()),
        "spa_sum_mse": float(sum_loss(spa_c, targets)),
        "hisr_sum_mse": float(sum_loss(sprm, targets)),
        "spa_spearman": float(spearmanr(np.concatenate(spa_c), truth).statistic),
        "hisr_spearman": float(spearmanr(hisr_p, truth).statistic),
        "env_spearman": float(spearmanr(env_r, truth).statistic),
    }


def _seg_end(traj: Any, k: int) -> bool:
    """Whether step ``k`` ends its HISR segment (where segment-end placement puts ``r_him``)."""
    steps = traj.steps
    return k == len(steps) - 1 or steps[k + 1].extras["hisr"]["segment"] != steps[k].extras[
        "hisr"]["segment"]  # fmt: skip


def prepare(directory: Path, settings: Any) -> dict[str, Any]:
    """Warm start, collection and offline fits, once: writes ``warm_start.pt``, ``store/``,
    ``spa.pt``, ``hisr.pt`` and ``paper.json`` (costs, collection steps, quality) under
    ``directory`` and returns ``paper.json``'s content; reuses it when present and made with the
    same settings."""
    import torch
    from agentenvs.learners.sb3 import evaluate_success
    from agentenvs.wrappers.offline import collect_rollouts, fit_offline, save_models

    from agentenvs.core import TrajectoryStore

    keys = ("bc_rooms", "bc_epochs", "paper_rooms", "paper_m", "quality_rooms", "test_rooms")
    wanted = {k: getattr(settings, k) for k in keys}
    meta_path = directory / "paper.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta["settings"] == wanted:
            return meta
    directory.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    meta: dict[str, Any] = {"settings": wanted}
    t0 = time.perf_counter()
    obs, actions = solver_demos(settings.bc_rooms)
    state = behaviour_cloning(obs, actions, settings.bc_epochs)
    torch.save(state, directory / "warm_start.pt")
    meta.update(demo_steps=int(len(actions)), warm_start_s=time.perf_counter() - t0)

    policy = _warm_policy(state)
    meta["warm_start_quality_success"] = float(
        evaluate_success(policy, _make_env, _quality_ids(settings)).mean()
    )
    t0 = time.perf_counter()
    rooms = [f"seed-{COLLECT_START + i}" for i in range(settings.paper_rooms)]
    store_dir = directory / "store"
    with TrajectoryStore(store_dir, run="reference") as store:
        groups = collect_rollouts(
            _make_env,
            policy,
            rooms,
            settings.paper_m,
            store,
        )
    trajs = [t for g in groups for t in g]
    meta.update(
        collect_steps=int(sum(len(t.steps) for t in trajs)),
        collect_success=float(np.mean([t.success for t in trajs])),
        collect_s=time.perf_counter() - t0,
    )
    from agentenvs.core import read_groups

    fits = {}
    for method in ("spa", "hisr"):
        t0 = time.perf_counter()
        fits[method] = fit_offline(method, read_groups(store_dir, run="reference"))
        save_models(fits[method], directory / f"{method}.pt")
        meta[f"{method}_fit_s"] = time.perf_counter() - t0
    meta["spa_fit"] = list(fits["spa"].report.__dict__.values())[:2]
    meta["hisr_fit"] = {k: [r.loss_before, r.loss_after] for k, r in fits["hisr"].reports.items()}
    meta["quality"] = quality_report(directory, settings)
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


def quality_report(directory: Path, settings: Any) -> dict[str, float]:
    """:func:`estimator_quality` of the models saved under ``directory`` on 4 sampled rollouts of
    the warm start (SB3 seed 0, so repeatable) per quality room."""
    from agentenvs.wrappers.offline import load_models
    from stable_baselines3 import PPO

    policy = PPO("MlpPolicy", _make_env(), seed=0, device="cpu")
    load_warm_start(policy, directory / "warm_start.pt")
    held_out = _held_out(policy, settings)
    return estimator_quality(
        held_out, load_models(directory / "spa.pt"), load_models(directory / "hisr.pt")
    )


def _quality_ids(settings: Any) -> list[str]:
    """The quality rooms: the ``settings.quality_rooms`` test-split rooms after the evaluation
    rooms."""
    test_ids = _make_env().unwrapped.tasks.ids("test")
    return [test_ids[settings.test_rooms + i] for i in range(settings.quality_rooms)]


def _held_out(policy: Any, settings: Any) -> list[Any]:
    """4 sampled rollouts of ``policy`` per quality room (the trajectories quality is measured on)."""
    from agentenvs.wrappers.offline import collect_rollouts

    return [t for g in collect_rollouts(_make_env, policy, _quality_ids(settings), 4) for t in g]


def _warm_policy(state: dict[str, Any]) -> Any:
    """A fresh SB3 PPO (seed 0, which also seeds torch's sampling) holding the warm-start weights."""
    from stable_baselines3 import PPO

    policy = PPO("MlpPolicy", _make_env(), seed=0, device="cpu")
    policy.policy.load_state_dict(state)
    return policy


def m_sweep(ms: Sequence[int], settings: Any, out: Any = sys.stdout) -> list[dict[str, float]]:
    """Estimator quality against ``M``, rollouts per training room, without RL.

    For each ``M`` in ``ms``: the warm start of :func:`prepare` (same demos, epochs and seed),
    ``M`` sampled rollouts per room on the same ``settings.paper_rooms`` train rooms (policy seed
    0, so the prefix of room order and sampling is shared), the offline SPA and HISR fits, then
    :func:`estimator_quality` on one fixed held-out set (4 rollouts per quality room, never the
    evaluation rooms). Writes a markdown table to ``out``, a row as each ``M`` finishes, and
    returns the rows (``m``, ``collect_steps``, ``spa_fit_s``, ``hisr_fit_s`` and the quality keys).
    """
    import torch
    from agentenvs.wrappers.offline import collect_rollouts, fit_offline

    from agentenvs.core import TrajectoryStore, read_groups

    if not ms or min(ms) < 1:
        raise ValueError(f"m_sweep needs M values >= 1, got {list(ms)}")
    torch.set_num_threads(1)
    state = behaviour_cloning(*solver_demos(settings.bc_rooms), settings.bc_epochs)
    held_out = _held_out(_warm_policy(state), settings)
    rooms = [f"seed-{COLLECT_START + i}" for i in range(settings.paper_rooms)]
    print(
        "| M | collection steps | SPA sum-MSE | SPA Spearman | HISR sum-MSE (SPRM) "
        "| HISR Spearman | fit s (SPA + HISR) |\n|---|---|---|---|---|---|---|",
        file=out, flush=True,
    )  # fmt: skip
    rows = []
    for m in ms:
        with tempfile.TemporaryDirectory() as tmp:
            with TrajectoryStore(Path(tmp), run="reference") as store:
                groups = collect_rollouts(_make_env, _warm_policy(state), rooms, m, store)
            row: dict[str, float] = {
                "m": m, "collect_steps": sum(len(t.steps) for g in groups for t in g)
            }  # fmt: skip
            fits = {}
            for method in ("spa", "hisr"):
                t0 = time.perf_counter()
                fits[method] = fit_offline(method, read_groups(Path(tmp), run="reference"))
                row[f"{method}_fit_s"] = time.perf_counter() - t0
        row.update(estimator_quality(held_out, fits["spa"], fits["hisr"]))
        rows.append(row)
        print(
            f"| {m} | {row['collect_steps']:,} | {row['spa_sum_mse']:.4f} "
            f"| {row['spa_spearman']:.3f} | {row['hisr_sum_mse']:.4f} | {row['hisr_spearman']:.3f} "
            f"| {row['spa_fit_s']:.0f} + {row['hisr_fit_s']:.0f} |",
            file=out, flush=True,
        )  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> None:
    """``--m-sweep M [M ...]``: print :func:`m_sweep`'s table for the benchmark's settings."""
    from benchmarks.fidelity_sokoban import Settings

    parser = argparse.ArgumentParser(description="Offline SPA/HISR estimator quality against M.")
    parser.add_argument("--m-sweep", type=int, nargs="+", required=True, metavar="M")
    args = parser.parse_args(argv)
    if min(args.m_sweep) < 1:
        parser.error("every M must be >= 1")
    m_sweep(args.m_sweep, Settings())


if __name__ == "__main__":
    main()
