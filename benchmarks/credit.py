"""Speed of the credit estimators (GRPO, GiGPO, GraphGPO, RTMC), led by verl-agent's own GiGPO.

Usage::

    taskset -c 0 python benchmarks/credit.py [--verl-agent PATH] [--sizes 1000 100000 1000000]

Three sections, printed as markdown tables:

1. **verl-agent's GiGPO, side by side.** With ``--verl-agent PATH`` (a checkout of
   github.com/langfengQ/verl-agent that the user provides, with its requirements installed), the
   file ``PATH/gigpo/core_gigpo.py`` is loaded as it is (importlib, from its path; its
   ``from verl import DataProto`` resolves to the checkout's ``verl`` package, whose package init
   needs verl-agent's requirements: ray, tensordict, pandas, ...). Nothing of it is copied here and
   nothing is stubbed. It is called in the trainer's order on the same groups as ours:
   ``compute_step_discounted_returns`` (timed), the trainer's invalid-action penalty (applied with
   vectorised torch ops, not timed), then ``compute_gigpo_outcome_advantage`` with
   ``mode="mean_std_norm"`` (timed), on a real ``DataProto`` holding float64 tensors, one row per
   step, rows trajectory by trajectory as verl-agent's rollout loop gathers them, uuid strings as
   group and trajectory ids. Its inputs are built before timing starts (favouring it). Ours is
   ``agentenvs.wrappers.estimate(trajectories, "gigpo", GiGPOConfig.reference())`` on the same Trajectory objects,
   end to end (batch building included). The advantages must agree to 1e-6. verl-agent's
   ``compute_step_discounted_returns`` casts rewards to float32 itself; its output is converted to
   float64 before the advantage step. Without the path, or when the file cannot be loaded, the
   section says why and is skipped.
2. **Every method at each size:** ``estimate_batch`` on a flat :class:`~agentenvs.wrappers.batch.StepBatch`
   built from arrays, and :func:`agentenvs.wrappers.estimate` on :class:`~agentenvs.core.Trajectory` objects
   (text state keys shared between a step's next state and the next step's state, as the episode
   recorder stores them; tagged LLM answers with the action key their env reports; key
   factorisation included). Both must agree.
3. **Cross-check against re-implementations** (small sizes): per-step loop re-implementations of
   the same maths written below in the style of the reference code. They are *not* the reference
   code and are used only to check agreement; their times are printed for information.

Timing: best of ``--repeats`` runs after one warm-up run, ``gc.collect()`` before each (verl-agent's
calls: one warm-up on a small batch, then best of ``--repeats`` where a run takes under 5 s, else
one run), torch on one thread; pin the process to one core with ``taskset -c 0`` (the header says how many cores the
process may use). Data: groups of 8 trajectories of 5-50 steps over a pool of 24 states per group
(states recur within and across trajectories), ~40% successes, 5% invalid steps (never a
success's last step), every step costing 1.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import heapq
import importlib.util
import io
import math
import os
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from agentenvs.wrappers import (
    GiGPOConfig,
    GraphGPOConfig,
    GRPOConfig,
    RTMCConfig,
    estimate,
    gigpo,
    graphgpo,
    grpo,
    rtmc,
)
from agentenvs.wrappers.batch import StepBatch

from agentenvs.core import Step, Trajectory

__all__ = [
    "synthetic_batch",
    "trajectories",
    "load_verl_agent_gigpo",
    "verl_agent_inputs",
    "run_verl_agent_gigpo",
    "METHODS",
    "main",
]

GROUP_SIZE = 8
STATE_POOL = 24
PENALTY = 0.1

#: method -> (module, config of the timed runs). The episode term uses cross-steps statistics and
#: the other fields their defaults (section 2 times the defaults' cost; conventions do not change it).
METHODS: dict[str, tuple[ModuleType, Any]] = {
    "grpo": (grpo, GRPOConfig(episode_norm="cross_steps")),
    "gigpo": (gigpo, GiGPOConfig(episode_norm="cross_steps")),
    "graphgpo": (graphgpo, GraphGPOConfig(episode_norm="cross_steps")),
    "rtmc": (rtmc, RTMCConfig()),
}


# -- data -------------------------------------------------------------------------------------------
def synthetic_batch(n_steps: int, seed: int = 0) -> StepBatch:
    """About ``n_steps`` steps in groups of 8; trajectories of 5-50 steps; recurring states."""
    rng = np.random.default_rng(seed)
    n_traj = max(GROUP_SIZE, int(round(n_steps / 27.5 / GROUP_SIZE)) * GROUP_SIZE)
    lengths = rng.integers(5, 51, n_traj)
    group = np.arange(n_traj) // GROUP_SIZE
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    step_group = np.repeat(group, lengths)
    local = rng.integers(0, STATE_POOL, n)
    local[offsets[:-1]] = 0  # every trajectory starts in its group's start state
    state = step_group * STATE_POOL + local
    next_state = np.roll(state, -1)
    last = offsets[1:] - 1
    next_state[last] = step_group[last] * STATE_POOL + rng.integers(0, STATE_POOL, n_traj)
    success = rng.random(n_traj) < 0.4
    valid = rng.random(n) >= 0.05
    valid[last[success]] = True  # an invalid answer does not win
    reward = np.where(valid, 0.0, -PENALTY)
    reward[last[success]] += 10.0
    action = np.where(valid, rng.integers(0, 4, n), 4)  # code 4: every invalid answer
    return StepBatch.from_arrays(lengths, group, success, reward, state, next_state, action, valid)


def trajectories(batch: StepBatch) -> list[list[Trajectory]]:
    """The batch as groups of :class:`Trajectory` objects, built as the episode recorder builds
    them: one text key per observation, so a step's ``next_state_key`` is the very object the next
    step has as ``state_key``; LLM answers with reasoning and an ``<action>`` tag (invalid ones
    without the tag), each valid one with the ``action_key`` its env reports (the parsed command)."""
    state, next_state = batch.state.tolist(), batch.next_state.tolist()
    action, valid, reward = batch.action.tolist(), batch.valid.tolist(), batch.reward.tolist()
    groups: dict[int, list[Trajectory]] = defaultdict(list)
    for i, (a, b) in enumerate(
        zip(batch.offsets[:-1].tolist(), batch.offsets[1:].tolist(), strict=True)
    ):
        keys = [f"state {state[k]}" for k in range(a, b)]
        keys.append(f"state {next_state[b - 1]}")
        steps = [
            Step(
                observation=f"obs {state[k]}",
                action=f"<think>step {k}</think><action>a{action[k]}</action>"
                if valid[k]
                else f"garbled {k}",
                reward=reward[k],
                state_key=keys[k - a],
                next_state_key=keys[k - a + 1]
                if k + 1 == b or next_state[k] == state[k + 1]
                else f"state {next_state[k]}",
                action_valid=valid[k],
                action_key=f"a{action[k]}" if valid[k] else None,
            )
            for k in range(a, b)
        ]
        group = int(batch.traj_group[i])
        groups[group].append(Trajectory("task", str(group), steps, bool(batch.success[i])))
    return [groups[g] for g in sorted(groups)]


def _flat(groups: list[list[Trajectory]]) -> list[Trajectory]:
    return [t for g in groups for t in g]


def _best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Best wall time of ``repeats`` runs after one warm-up run, ``gc.collect()`` before each."""
    out = fn()
    best = math.inf
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


# -- section 1: verl-agent's own GiGPO --------------------------------------------------------------
def load_verl_agent_gigpo(path: str | os.PathLike) -> ModuleType:
    """``PATH/gigpo/core_gigpo.py`` loaded from its file, with ``PATH`` first on ``sys.path`` so its
    ``from verl import DataProto`` finds the checkout's ``verl`` package.

    Raises:
        FileNotFoundError: no such file. ImportError: its imports failed (verl-agent's
            requirements are not installed).
    """
    root = Path(path).resolve()
    file = root / "gigpo" / "core_gigpo.py"
    if not file.is_file():
        raise FileNotFoundError(f"{file} does not exist (is {root} a verl-agent checkout?)")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("verl_agent_core_gigpo", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def verl_agent_inputs(groups: list[list[Trajectory]], penalty: float = PENALTY) -> dict[str, Any]:
    """The per-row arrays verl-agent's rollout loop gathers for these groups (one row per step,
    trajectory by trajectory): uuid ``uid`` per group and ``traj_uid`` per trajectory, the
    ``anchor_obs`` (our state keys), the env ``rewards`` before the invalid-action penalty (our
    envs charge it in ``Step.reward``, verl-agent's trainer charges it later), ``episode_rewards``
    (their sum per trajectory), ``is_action_valid`` and ``active_masks``."""
    uid, traj_uid, anchor, rewards, valid, episode = [], [], [], [], [], []
    for group in groups:
        group_id = str(uuid.uuid4())
        for traj in group:
            traj_id = str(uuid.uuid4())
            r = [s.reward + (0.0 if s.action_valid else penalty) for s in traj.steps]
            total = sum(r)
            for step, r_t in zip(traj.steps, r, strict=True):
                uid.append(group_id)
                traj_uid.append(traj_id)
                anchor.append(step.state_key)
                rewards.append(r_t)
                valid.append(bool(step.action_valid))
                episode.append(total)
    obj = np.empty(len(anchor), dtype=object)
    obj[:] = anchor
    return {
        "uid": np.array(uid, dtype=object),
        "traj_uid": np.array(traj_uid, dtype=object),
        "anchor_obs": obj,
        "rewards": np.array(rewards, np.float64),
        "episode_rewards": np.array(episode, np.float64),
        "is_action_valid": np.array(valid, bool),
        "active_masks": np.ones(len(anchor), bool),
    }


def run_verl_agent_gigpo(
    module: ModuleType, inputs: dict[str, Any], gamma: float = 0.95, penalty: float = PENALTY
) -> tuple[np.ndarray, float, float]:
    """verl-agent's GiGPO in its trainer's order on ``inputs``: returns (advantage per row, seconds
    in ``compute_step_discounted_returns``, seconds in ``compute_gigpo_outcome_advantage``)."""
    import torch
    from verl import DataProto

    n = len(inputs["uid"])
    non_tensors = {k: v for k, v in inputs.items() if k != "episode_rewards"}
    data = DataProto.from_dict(
        tensors={"input_ids": torch.zeros((n, 1), dtype=torch.long)}, non_tensors=non_tensors
    )
    invalid = torch.tensor(~inputs["is_action_valid"], dtype=torch.float64)
    # the reward manager puts the episode reward on each row's last response token (one token here)
    token_level_scores = torch.tensor(inputs["episode_rewards"], dtype=torch.float64)[:, None]
    response_mask = torch.ones((n, 1), dtype=torch.float64)
    sink = io.StringIO()  # its build_step_group prints the average group size
    gc.collect()
    t0 = time.perf_counter()
    step_rewards = module.compute_step_discounted_returns(batch=data, gamma=gamma)
    t_returns = time.perf_counter() - t0
    step_rewards = step_rewards.to(torch.float64)
    # the trainer's apply_invalid_action_penalty, vectorised (not timed)
    token_level_scores[:, -1] -= penalty * invalid
    step_rewards -= penalty * invalid
    gc.collect()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sink):
        advantages, _ = module.compute_gigpo_outcome_advantage(
            token_level_rewards=token_level_scores,
            step_rewards=step_rewards,
            response_mask=response_mask,
            anchor_obs=inputs["anchor_obs"],
            index=inputs["uid"],
            traj_index=inputs["traj_uid"],
            epsilon=1e-6,
            step_advantage_w=1.0,
            mode="mean_std_norm",
        )
    t_adv = time.perf_counter() - t0
    return advantages[:, -1].numpy().astype(np.float64), t_returns, t_adv


def _verl_agent_section(path: str | None, sizes: Sequence[int], repeats: int) -> None:
    print("## verl-agent's GiGPO (its own gigpo/core_gigpo.py) and ours, same groups\n")
    if not path:
        print(
            "Skipped: pass --verl-agent PATH (a checkout of github.com/langfengQ/verl-agent with "
            "its requirements installed).\n"
        )
        return
    try:
        module = load_verl_agent_gigpo(path)
        import torch

        torch.set_num_threads(1)
    except OSError as err:
        print(f"Skipped: {err}.\n")
        return
    except ImportError as err:
        print(
            f"Skipped: could not load {Path(path) / 'gigpo' / 'core_gigpo.py'}: "
            f"{type(err).__name__}: {err}. The file imports torch and `from verl import "
            "DataProto`; importing the checkout's verl package needs verl-agent's requirements "
            "(ray, tensordict, pandas, ...).\n"
        )
        return
    config = GiGPOConfig.reference()
    print(
        'Ours: `estimate(trajectories, "gigpo", GiGPOConfig.reference())` from Trajectory objects '
        "(end to end) and `gigpo.estimate_batch` on a built batch (advantage step). verl-agent: "
        "`compute_step_discounted_returns` + `compute_gigpo_outcome_advantage` (end to end; its "
        "inputs built beforehand) and `compute_gigpo_outcome_advantage` alone (advantage step), "
        "with its trainer's invalid-action penalty between them re-implemented here as vectorised "
        "torch ops (not timed). Advantages asserted equal to 1e-6.\n"
    )
    print(
        "| steps | verl-agent end to end (s) | ours end to end (s) | ratio "
        "| verl-agent advantage step (s) | ours advantage step (s) | ratio | max abs diff |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    run_verl_agent_gigpo(module, verl_agent_inputs(trajectories(synthetic_batch(200))))  # warm-up
    for size in sizes:
        groups = trajectories(synthetic_batch(size))
        flat = _flat(groups)
        inputs = verl_agent_inputs(groups)
        theirs, t_returns, t_adv = run_verl_agent_gigpo(module, inputs, config.gamma)
        for _ in range(repeats - 1 if t_returns + t_adv < 5.0 else 0):  # best of, when cheap
            _, t_r, t_a = run_verl_agent_gigpo(module, inputs, config.gamma)
            t_returns, t_adv = min(t_returns, t_r), min(t_adv, t_a)
        ours_e2e, ours = _best(lambda f=flat: estimate(f, "gigpo", config), repeats)
        batch = StepBatch.from_trajectories(flat, columns=gigpo.BATCH_COLUMNS)
        ours_adv, _ = _best(
            lambda b=batch: gigpo.estimate_batch(dataclasses.replace(b), config), repeats
        )
        ours = np.concatenate(ours)
        diff = float(np.max(np.abs(ours - theirs))) if len(ours) else 0.0
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
        total = t_returns + t_adv
        print(
            f"| {len(ours):,} | {total:.3f} | {ours_e2e:.4f} | {total / ours_e2e:,.0f}x "
            f"| {t_adv:.3f} | {ours_adv:.4f} | {t_adv / ours_adv:,.0f}x | {diff:.1e} |",
            flush=True,
        )
    print()


# -- section 2: every method --------------------------------------------------------------------------
def _methods_section(
    sizes: Sequence[int], methods: Sequence[str], repeats: int
) -> dict[tuple[int, str], np.ndarray]:
    print("## Every method: from flat arrays and end to end from Trajectory objects\n")
    print("| steps | method | from arrays (s) | from Trajectory objects (s) | steps/s end to end |")
    print("|---:|---|---:|---:|---:|")
    results: dict[tuple[int, str], np.ndarray] = {}
    for size in sizes:
        batch = synthetic_batch(size)
        flat = _flat(trajectories(batch))
        for name in methods:
            module, config = METHODS[name]
            fast_s, fast = _best(
                lambda m=module, c=config, b=batch: m.estimate_batch(dataclasses.replace(b), c),
                repeats,
            )
            e2e_s, e2e = _best(lambda n=name, c=config, f=flat: estimate(f, n, c), repeats)
            np.testing.assert_allclose(np.concatenate(e2e), fast, rtol=1e-9, atol=1e-9)
            results[(size, name)] = fast
            print(
                f"| {batch.n_steps:,} | {name} | {fast_s:.4f} | {e2e_s:.3f} "
                f"| {batch.n_steps / e2e_s:,.0f} |",
                flush=True,
            )
    print()
    return results


# -- section 3: re-implementations for cross-checking ---------------------------------------------
# Per-step loops over step rows, written here in the style of the reference code (verl-agent's
# normalisers, the GraphGPO recipe's dict-of-lists graph and heap Dijkstra); RTMC has no public
# code, so its loop follows the paper. They are re-implementations, used only to check agreement.
def _records(batch: StepBatch) -> list[list[dict]]:
    """Groups of trajectory records (lists of Python values)."""
    groups: dict[int, list[dict]] = defaultdict(list)
    for i in range(batch.n_trajectories):
        a, b = int(batch.offsets[i]), int(batch.offsets[i + 1])
        groups[int(batch.traj_group[i])].append(
            {
                "states": batch.state[a:b].tolist(),
                "next_states": batch.next_state[a:b].tolist(),
                "actions": batch.action[a:b].tolist(),
                "rewards": batch.reward[a:b].tolist(),
                "valid": batch.valid[a:b].tolist(),
                "success": bool(batch.success[i]),
            }
        )
    return [groups[g] for g in sorted(groups)]


def _rows(groups: list[list[dict]]) -> dict[str, list]:
    rows: dict[str, list] = defaultdict(list)
    for g, group in enumerate(groups):
        for traj in group:
            score = sum(traj["rewards"])
            for s, r in zip(traj["states"], traj["rewards"], strict=True):
                rows["uid"].append(g)
                rows["anchor"].append(s)
                rows["reward"].append(r)
                rows["score"].append(score)
    return rows


def _norm(scores: list[float], index: list, singleton_raw: bool, eps: float = 1e-6) -> np.ndarray:
    """Group normalisation row by row (a one-row group: mean 0 and std 1, or its own mean)."""
    members: dict = defaultdict(list)
    for i, key in enumerate(index):
        members[key].append(scores[i])
    stats = {}
    for key, vals in members.items():
        if len(vals) == 1:
            stats[key] = (0.0 if singleton_raw else vals[0], 1.0)
        else:
            mean = sum(vals) / len(vals)
            std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
            stats[key] = (mean, std)
    return np.array(
        [(x - stats[k][0]) / (stats[k][1] + eps) for x, k in zip(scores, index, strict=True)]
    )


def reimpl_grpo(groups: list[list[dict]]) -> np.ndarray:
    rows = _rows(groups)
    return _norm(rows["score"], rows["uid"], singleton_raw=True)


def reimpl_gigpo(groups: list[list[dict]], gamma: float = 0.95) -> np.ndarray:
    rows = _rows(groups)
    returns = []
    for group in groups:
        for traj in group:
            g, out = 0.0, []
            for r in reversed(traj["rewards"]):
                g = r + gamma * g
                out.append(g)
            returns.extend(reversed(out))
    anchors = list(zip(rows["uid"], rows["anchor"], strict=True))
    return _norm(rows["score"], rows["uid"], True) + _norm(returns, anchors, False)


def reimpl_graphgpo(
    groups: list[list[dict]], omega: float = 0.1, r_succ: float = 10.0, penalty: float = PENALTY
) -> np.ndarray:
    rewards, sources, has_success = [], [], []
    for g, group in enumerate(groups):
        reverse: dict = defaultdict(list)
        for traj in group:
            n = len(traj["states"])
            for t in range(n):
                dst = "success" if traj["success"] and t == n - 1 else traj["next_states"][t]
                reverse[dst].append((traj["states"][t], 1.0))
        dist = {"success": 0.0}
        heap = [(0.0, "success")]
        while heap:
            d, v = heapq.heappop(heap)
            if d > dist[v]:
                continue
            for u, w in reverse[v]:
                if d + w < dist.get(u, math.inf):
                    dist[u] = d + w
                    heapq.heappush(heap, (d + w, u))
        d_max = max(dist.values())
        success = any(t["success"] for t in group)
        for traj in group:
            n = len(traj["states"])
            for t in range(n):
                dst = "success" if traj["success"] and t == n - 1 else traj["next_states"][t]
                reward = r_succ * omega ** (dist.get(dst, d_max + 1) + 1)
                rewards.append(reward - penalty * (not traj["valid"][t]))
                sources.append((g, traj["states"][t]))
                has_success.append(success)
    rows = _rows(groups)
    graph = _norm(rewards, sources, False)
    return _norm(rows["score"], rows["uid"], True) + np.where(has_success, graph, 0.0)


def reimpl_rtmc(
    groups: list[list[dict]], gamma: float = 0.99, alpha: float = 2.0, eps: float = 1e-6
) -> np.ndarray:
    out = []
    for group in groups:
        n_sa: dict = defaultdict(int)
        w_sa: dict = defaultdict(float)
        n_s: dict = defaultdict(int)
        w_s: dict = defaultdict(float)
        for traj in group:
            g, ret = 0.0, []
            for r in reversed(traj["rewards"]):
                g = r + gamma * g
                ret.append(g)
            ret.reverse()
            seen = set()
            for s, a, g_t in zip(traj["states"], traj["actions"], ret, strict=True):
                if (s, a) in seen:
                    continue
                seen.add((s, a))
                n_sa[(s, a)] += 1
                w_sa[(s, a)] += g_t
                n_s[s] += 1
                w_s[s] += g_t
        wins = sum(t["success"] for t in group)
        p = wins / len(group)
        adv = [
            w_sa[(s, a)] / n_sa[(s, a)] - (w_s[s] + alpha * p) / (n_s[s] + alpha)
            for traj in group
            for s, a in zip(traj["states"], traj["actions"], strict=True)
        ]
        if wins in (0, len(group)):
            adv = [0.0] * len(adv)
        else:
            mean = sum(adv) / len(adv)
            std = math.sqrt(sum((x - mean) ** 2 for x in adv) / len(adv))
            if std >= eps:
                adv = [x / (std + eps) for x in adv]
        out.extend(adv)
    return np.asarray(out)


REIMPLEMENTATIONS: dict[str, Callable[[list[list[dict]]], np.ndarray]] = {
    "grpo": reimpl_grpo,
    "gigpo": reimpl_gigpo,
    "graphgpo": reimpl_graphgpo,
    "rtmc": reimpl_rtmc,
}


def _cross_check_section(sizes: Sequence[int], methods: Sequence[str]) -> None:
    print("## Cross-check against per-step re-implementations (not the reference code)\n")
    print("| steps | method | re-implementation (s) | agrees |")
    print("|---:|---|---:|---|")
    for size in sizes:
        batch = synthetic_batch(size)
        records = _records(batch)
        order = np.argsort(batch.step_group, kind="stable")
        for name in methods:
            module, config = METHODS[name]
            ours = module.estimate_batch(batch, config)[order]
            t0 = time.perf_counter()
            theirs = REIMPLEMENTATIONS[name](records)
            elapsed = time.perf_counter() - t0
            np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-7)
            print(f"| {batch.n_steps:,} | {name} | {elapsed:.3f} | yes |", flush=True)
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--verl-agent", metavar="PATH", help="a verl-agent checkout (section 1)")
    parser.add_argument("--verl-sizes", type=int, nargs="+", default=[3_600, 14_500, 57_600])
    parser.add_argument("--check-sizes", type=int, nargs="*", default=[2_000, 14_000])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement")
    args = parser.parse_args(argv)

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"# Credit estimators: timings on {cores} core(s) (best of {args.repeats} runs)\n")
    _verl_agent_section(args.verl_agent, args.verl_sizes, args.repeats)
    _methods_section(args.sizes, args.methods, args.repeats)
    if args.check_sizes:
        _cross_check_section(args.check_sizes, args.methods)
    return 0


if __name__ == "__main__":
    sys.exit(main())
