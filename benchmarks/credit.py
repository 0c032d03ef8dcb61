"""Speed of the credit estimators (GRPO, GiGPO, GraphGPO, RTMC) against per-step reference code.

Usage: ``python benchmarks/credit.py [--sizes 1000 14000 57000 100000 1000000] [--ref-max 60000]``

The fast side is each module's ``estimate_batch`` on a flat :class:`wrappers.batch.StepBatch`,
with the configs in :data:`REFERENCES` (defaults, except that the episode term uses the reference
stack's cross-steps statistics so both sides compute the same numbers). The reference side,
written below, is a per-step implementation of the same maths shaped like the reference stack
(verl-agent): step rows, torch scalars normalised in per-row Python loops, per-trajectory returns
found with ``np.where`` over the whole batch and recombined row by row (quadratic, so it runs only
up to ``--ref-max`` steps); GraphGPO adds the recipe's dict-of-lists graph and heap Dijkstra. RTMC
has no public code, so its reference is a lean per-group dict implementation of the paper. A third
column times ``assign_advantages`` on :class:`~agentenvs.core.Trajectory` objects (text keys and
tagged LLM answers: key factorisation and action parsing included). Every pair that runs is
asserted allclose.

Data: groups of 8 trajectories of 5-50 steps over a pool of 24 states per group (so states recur
within and across trajectories), ~40% successes, 5% invalid steps. Prints a markdown table; the
default sizes take well under a minute on one core (the reference needs torch).
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import math
import sys
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from agentenvs.core import Step, Trajectory
from wrappers import (
    GiGPOConfig,
    GraphGPOConfig,
    GRPOConfig,
    RTMCConfig,
    assign_advantages,
    gigpo,
    graphgpo,
    grpo,
    rtmc,
)
from wrappers.batch import StepBatch

__all__ = ["synthetic_batch", "REFERENCES", "main"]

GROUP_SIZE = 8
STATE_POOL = 24


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
    next_state[offsets[1:] - 1] = step_group[offsets[1:] - 1] * STATE_POOL + rng.integers(
        0, STATE_POOL, n_traj
    )
    success = rng.random(n_traj) < 0.4
    valid = rng.random(n) >= 0.05
    reward = np.where(valid, 0.0, -0.1)
    reward[offsets[1:][success] - 1] += 10.0
    action = np.where(valid, rng.integers(0, 4, n), 4)  # code 4: every invalid answer
    return StepBatch.from_arrays(lengths, group, success, reward, state, next_state, action, valid)


# -- reference implementations ---------------------------------------------------------------------
# GRPO, GiGPO and GraphGPO follow the reference stack (verl-agent ``core_algos.py`` /
# ``gigpo/core_gigpo.py`` and the GraphGPO recipe): rows are step-samples, scores are torch scalars
# normalised in per-row Python loops, and per-trajectory returns are located with ``np.where`` (the
# recombination loop is per row, hence quadratic). They run in float64 so the comparison is exact.
# RTMC has no public code; its reference is a plain per-group dict implementation of the paper.
def _records(batch: StepBatch) -> list[list[dict]]:
    """Groups of trajectory records (lists of Python values), as a reference rollout buffer holds."""
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
    """Flatten groups into step rows: uid (group), traj_uid, anchor, reward, episode score."""
    rows: dict[str, list] = defaultdict(list)
    traj_uid = 0
    for g, group in enumerate(groups):
        for traj in group:
            score = sum(traj["rewards"])
            for s, r in zip(traj["states"], traj["rewards"], strict=True):
                rows["uid"].append(g)
                rows["traj_uid"].append(traj_uid)
                rows["anchor"].append(s)
                rows["reward"].append(r)
                rows["score"].append(score)
            traj_uid += 1
    return rows


def _torch_norm(
    scores: list[float], index: list, singleton_raw: bool, eps: float = 1e-6
) -> np.ndarray:
    """verl-agent's per-row group normalisation (``compute_grpo_outcome_advantage`` cross-steps /
    ``step_norm_reward``): a singleton group gets mean 0 and std 1 (raw) or its own mean (zero)."""
    import torch

    scores_t = torch.tensor(scores, dtype=torch.float64)
    id2score: dict = defaultdict(list)
    id2mean, id2std = {}, {}
    with torch.no_grad():
        bsz = scores_t.shape[0]
        for i in range(bsz):
            id2score[index[i]].append(scores_t[i])
        for idx, members in id2score.items():
            if len(members) == 1:
                id2mean[idx] = (
                    torch.tensor(0.0, dtype=torch.float64) if singleton_raw else members[0]
                )
                id2std[idx] = torch.tensor(1.0, dtype=torch.float64)
            else:
                id2mean[idx] = torch.mean(torch.tensor(members, dtype=torch.float64))
                id2std[idx] = torch.std(torch.tensor([members], dtype=torch.float64))
        for i in range(bsz):
            scores_t[i] = (scores_t[i] - id2mean[index[i]]) / (id2std[index[i]] + eps)
    return scores_t.numpy()


def _discounted_returns(rewards: list[float], traj_uids: np.ndarray, gamma: float) -> np.ndarray:
    """``compute_step_discounted_returns``: per-trajectory backward pass, then per-row recombination."""
    returns_by_traj = {}
    for uid in np.unique(traj_uids):
        traj_indices = np.where(traj_uids == uid)[0]
        running, traj_returns = 0.0, np.zeros(len(traj_indices))
        for t in reversed(range(len(traj_indices))):
            running = rewards[traj_indices[t]] + gamma * running
            traj_returns[t] = running
        returns_by_traj[uid] = traj_returns
    all_returns = np.zeros(len(rewards))
    for i, uid in enumerate(traj_uids):
        traj_indices = np.where(traj_uids == uid)[0]
        all_returns[i] = returns_by_traj[uid][np.where(traj_indices == i)[0][0]]
    return all_returns


def _step_groups(uids: np.ndarray, anchors: list) -> list:
    """``build_step_group``: per uid, cluster rows by exact anchor equality."""
    step_group = [None] * len(anchors)
    for uid in np.unique(uids):
        clusters: dict = defaultdict(list)
        for i in np.where(uids == uid)[0]:
            clusters[anchors[i]].append(i)
        for key, members in clusters.items():
            for i in members:
                step_group[i] = (int(uid), key)
    return step_group


def ref_grpo(groups: list[list[dict]]) -> np.ndarray:
    rows = _rows(groups)
    return _torch_norm(rows["score"], rows["uid"], singleton_raw=True)


def ref_gigpo(groups: list[list[dict]], gamma: float = 0.95) -> np.ndarray:
    rows = _rows(groups)
    uids, traj_uids = np.asarray(rows["uid"]), np.asarray(rows["traj_uid"])
    episode = _torch_norm(rows["score"], rows["uid"], singleton_raw=True)
    returns = _discounted_returns(rows["reward"], traj_uids, gamma)
    step = _torch_norm(returns.tolist(), _step_groups(uids, rows["anchor"]), singleton_raw=False)
    return episode + step


def ref_graph(
    groups: list[list[dict]], omega: float = 0.1, r_succ: float = 10.0, penalty: float = 0.1
) -> np.ndarray:
    """The GraphGPO recipe: per-group dict-of-lists graph, heap Dijkstra from the sink, edge
    rewards per row, then GiGPO's row normaliser over source-state groups."""
    graph_rewards, src_groups, has_success = [], [], []
    for g, group in enumerate(groups):
        graph: dict = defaultdict(lambda: defaultdict(list))
        for m, traj in enumerate(group):
            n = len(traj["states"])
            for t in range(n):
                dst = "success" if traj["success"] and t == n - 1 else traj["next_states"][t]
                graph[traj["states"][t]][dst].append({"traj": m, "t": t, "weight": 1.0})
        reverse: dict = defaultdict(list)
        for u, targets in graph.items():
            for v, occurrences in targets.items():
                for occ in occurrences:
                    reverse[v].append((u, occ["weight"]))
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
                graph_rewards.append(reward - penalty * (not traj["valid"][t]))
                src_groups.append((g, traj["states"][t]))
                has_success.append(success)
    rows = _rows(groups)
    episode = _torch_norm(rows["score"], rows["uid"], singleton_raw=True)
    graph_adv = _torch_norm(graph_rewards, src_groups, singleton_raw=False)
    return episode + np.where(has_success, graph_adv, 0.0)


def ref_rtmc(
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


#: method -> (config the fast side runs with, reference implementation of the same maths). The
#: episode term uses the reference stack's cross-steps statistics so both sides compute the same.
REFERENCES: dict[str, tuple[object, Callable[[list[list[dict]]], np.ndarray]]] = {
    "grpo": (GRPOConfig(episode_norm="cross_steps"), ref_grpo),
    "gigpo": (GiGPOConfig(episode_norm="cross_steps"), ref_gigpo),
    "graph": (GraphGPOConfig(episode_norm="cross_steps"), ref_graph),
    "rtmc": (RTMCConfig(), ref_rtmc),
}
FAST = {
    "grpo": grpo.estimate_batch,
    "gigpo": gigpo.estimate_batch,
    "graph": graphgpo.estimate_batch,
    "rtmc": rtmc.estimate_batch,
}


def _time_fast(method: str, batch: StepBatch, repeats: int) -> tuple[float, np.ndarray]:
    """Best of ``repeats`` runs, each on a fresh copy of ``batch`` (no cached derived arrays)."""
    config = REFERENCES[method][0]
    best, out = math.inf, None
    for _ in range(repeats):
        fresh = dataclasses.replace(batch)
        t0 = time.perf_counter()
        out = FAST[method](fresh, config)
        best = min(best, time.perf_counter() - t0)
    return best, out


def _trajectories(batch: StepBatch) -> list[list[Trajectory]]:
    """The batch as groups of :class:`Trajectory` objects (text state keys, tagged LLM answers)."""
    groups: dict[int, list[Trajectory]] = defaultdict(list)
    for i in range(batch.n_trajectories):
        steps = [
            Step(
                observation=f"obs {batch.state[k]}",
                action=f"<think>step {k}</think><action>a{batch.action[k]}</action>"
                if batch.valid[k]
                else f"garbled {k}",
                reward=float(batch.reward[k]),
                state_key=f"state {batch.state[k]}",
                next_state_key=f"state {batch.next_state[k]}",
                action_valid=bool(batch.valid[k]),
            )
            for k in range(int(batch.offsets[i]), int(batch.offsets[i + 1]))
        ]
        group = int(batch.traj_group[i])
        groups[group].append(Trajectory("task", str(group), steps, bool(batch.success[i])))
    return [groups[g] for g in sorted(groups)]


def _time_end_to_end(method: str, groups: list[list[Trajectory]]) -> tuple[float, np.ndarray]:
    """``assign_advantages`` on Trajectory objects (factorising keys and parsing actions included)."""
    t0 = time.perf_counter()
    assign_advantages(groups, method, REFERENCES[method][0])
    elapsed = time.perf_counter() - t0
    return elapsed, np.array([s.advantage for g in groups for t in g for s in t.steps])


def _sorted_by_group(batch: StepBatch, values: np.ndarray) -> np.ndarray:
    """Reorder per-step values group by group (the reference emits them in that order)."""
    order = np.argsort(batch.step_group, kind="stable")
    return values[order]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1_000, 14_000, 57_000, 100_000, 1_000_000]
    )
    parser.add_argument(
        "--ref-max", type=int, default=60_000, help="largest size the reference runs at"
    )
    parser.add_argument("--methods", nargs="+", default=list(REFERENCES), choices=list(REFERENCES))
    args = parser.parse_args(argv)

    try:  # warm-up: imports (torch) and first-call costs stay out of the table
        for _, ref_fn in REFERENCES.values():
            ref_fn(_records(synthetic_batch(100)))
    except ImportError:
        print(
            "The references need torch (pip install 'agentenvs[llm]'); timing the fast side only.\n"
        )
        args.ref_max = 0
    print(
        "| steps | method | fast (s) | fast steps/s | reference (s) | speed-up "
        "| from Trajectory objects (s) |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        batch = synthetic_batch(size)
        small = batch.n_steps <= args.ref_max
        records = _records(batch) if small else None
        objects = _trajectories(batch) if batch.n_steps <= 150_000 else None
        for method in args.methods:
            fast_s, fast = _time_fast(method, batch, 3 if batch.n_steps < 200_000 else 2)
            in_order = _sorted_by_group(batch, fast)
            ref_cell = ratio_cell = e2e_cell = "not run"
            if records is not None:
                t0 = time.perf_counter()
                ref = REFERENCES[method][1](records)
                ref_s = time.perf_counter() - t0
                np.testing.assert_allclose(in_order, ref, rtol=1e-7, atol=1e-7)
                ref_cell, ratio_cell = f"{ref_s:.3f}", f"{ref_s / fast_s:,.0f}x"
            if objects is not None:
                e2e_s, e2e = _time_end_to_end(method, objects)
                np.testing.assert_allclose(in_order, e2e, rtol=1e-9, atol=1e-9)
                e2e_cell = f"{e2e_s:.3f}"
            print(
                f"| {batch.n_steps:,} | {method} | {fast_s:.4f} | {batch.n_steps / fast_s:,.0f} | "
                f"{ref_cell} | {ratio_cell} | {e2e_cell} |",
                flush=True,
            )
    print(
        f"\nReference run only up to {args.ref_max:,} steps (its GiGPO grows quadratically); fast, "
        "reference and the Trajectory-object path (up to 150k steps) agree (allclose) wherever "
        "they ran."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
