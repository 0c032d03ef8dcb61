"""GraphGPO: graph-based step credit from shortest distances to success in the group's state graph.

Per group, every step is an edge occurrence ``state -> next_state`` (the last step of a successful
trajectory points to the group's SUCCESS sink). A reverse BFS from the sinks gives each node its
distance ``d`` to success (unit costs); unreachable nodes get ``d_max + 1``. Each edge is rewarded
``R^G = success_reward * distance_discount ** (d(s') + 1)`` (paper) or ``** d(s')`` (reference),
minus ``invalid_penalty`` on invalid steps when ``invalid_penalty_on_graph``; edges leaving the same
state are normalised against each other (singleton: 0), and
``A = graph_weight * A^G + episode_weight * A^E``. Formulas: specs/graphgpo.md §2 and §7.

This module holds :class:`GraphGPOConfig`, :func:`build_graph`, :func:`distances`,
:func:`graph_rewards`, :func:`graph_advantages`, :func:`diagnostics`, :func:`estimate_batch` and
:func:`estimate`. All groups are solved at once: one multi-source BFS over the union of the group
graphs (their nodes are (group, state) pairs, so graphs never mix); the reverse adjacency is built
with a radix sort and each BFS level costs O(edges into the frontier).

>>> from agentenvs.core import Step, Trajectory
>>> def traj(path, won):
...     steps = [Step("o", "a", 0.0, state_key=u, next_state_key=v) for u, v in zip(path, path[1:])]
...     steps[-1].reward = 10.0 if won else 0.0
...     return Trajectory("t", "g", steps, success=won)
>>> adv = estimate([traj("ABG", True), traj("ACC", False)], GraphGPOConfig(eps=0.0))
>>> [a.round(4).tolist() for a in adv]
[[1.4142, 0.7071], [-1.4142, -0.7071]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from agentenvs.core import Trajectory
from wrappers.batch import StepBatch, estimate_trajectories
from wrappers.grpo import GRPOConfig, _check_choice, episode_advantages
from wrappers.matching import similarity_codes
from wrappers.stats import dense_codes, group_zscore, radix_argsort

__all__ = [
    "GraphGPOConfig",
    "REWARD_CONVENTIONS",
    "GroupGraph",
    "build_graph",
    "distances",
    "graph_rewards",
    "graph_advantages",
    "diagnostics",
    "estimate_batch",
    "estimate",
]

#: ``"paper"``: exponent ``d(s') + c`` (Eq. 4); ``"reference"``: exponent ``d(s')`` (the code).
REWARD_CONVENTIONS = ("paper", "reference")


@dataclass
class GraphGPOConfig(GRPOConfig):
    """GraphGPO. Inherits the episode-term fields of :class:`~wrappers.grpo.GRPOConfig`; ``norm``,
    ``ddof`` and ``eps`` also apply to the per-source-state graph groups (specs/graphgpo.md §2.11)."""

    distance_discount: float = 0.1
    """specs/graphgpo.md §2.5 / §2.11 (ω; reference ``algorithm.gamma``): per-hop discount of the
    edge reward, in (0, 1). Paper values: ALFWorld 0.1, WebShop 0.2, Sokoban 0.8."""
    success_reward: float = 10.0
    """specs/graphgpo.md §2.5 (r_succ): scale of the edge reward."""
    graph_weight: float = 1.0
    """specs/graphgpo.md §2.8 (β^G): weight of the graph advantage ``A^G``."""
    episode_weight: float = 1.0
    """specs/graphgpo.md §2.8 (β^E): weight of the episode advantage ``A^E`` (0 = "-A^E" ablation)."""
    reward_convention: str = "paper"
    """specs/graphgpo.md §2.5 / §2.13.1 [AMBIG]: ``"paper"`` uses ``ω^(d(s')+1)``, ``"reference"``
    ``ω^d(s')``; identical ``A^G`` under ``"mean_std"`` without the graph penalty."""
    invalid_penalty_on_graph: bool = True
    """specs/graphgpo.md §2.5 [C] / §2.11: subtract ``invalid_penalty`` from ``R^G`` of invalid steps
    (the reference does; ``R^G`` holds no env reward, so this is not a double count)."""
    zero_graph_adv_if_no_success: bool = True
    """specs/graphgpo.md §2.4 / §2.11: ``A^G = 0`` in groups with no success. ``False`` is the
    reference path (every ``d = 1``, so only the graph penalty separates edges)."""
    similarity_threshold: float | None = None
    """specs/graphgpo.md §2.2 / App. D.3: ``None`` = exact state matching; e.g. 0.95 merges text
    states whose ``SequenceMatcher`` ratio reaches it (graph nodes use the merged states)."""
    raw_state_groups: bool = False
    """specs/graphgpo.md §2.2 [C] quirk: with similarity matching, form the per-source-state step
    groups from the exact raw states (the reference) instead of the merged ones (default)."""

    REFERENCE_FIELDS: ClassVar[dict[str, Any]] = {
        "reward_convention": "reference",
        "zero_graph_adv_if_no_success": False,
        "raw_state_groups": True,
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_choice("reward_convention", self.reward_convention, REWARD_CONVENTIONS)
        if not 0.0 < self.distance_discount < 1.0:
            raise ValueError(f"distance_discount must be in (0, 1), got {self.distance_discount}")
        if self.success_reward <= 0:
            raise ValueError(f"success_reward must be > 0, got {self.success_reward}")


@dataclass(frozen=True)
class GroupGraph:
    """The union of the group graphs of a batch (one edge occurrence per step).

    Attributes:
        src: int64 ``(n,)`` node of the state each step was taken in.
        dst: int64 ``(n,)`` node it led to (a SUCCESS sink for the last step of a success).
        node_group: int64 ``(k,)`` group of each node; nodes ``sink0..`` are the sinks.
        sinks: int64 ``(n_groups,)`` sink node of each group (used only where the group has a success).
        has_success: bool ``(n_groups,)``.
    """

    src: np.ndarray
    dst: np.ndarray
    node_group: np.ndarray
    sinks: np.ndarray
    has_success: np.ndarray

    @property
    def n_nodes(self) -> int:
        return len(self.node_group)


def build_graph(batch: StepBatch, config: GraphGPOConfig) -> GroupGraph:
    """Nodes are (group, state) pairs plus one SUCCESS sink per group (specs/graphgpo.md §2.3)."""
    state, next_state = batch.state, batch.next_state
    if config.similarity_threshold is not None:
        state, next_state = similarity_codes(batch, config.similarity_threshold)
    n = batch.n_steps
    group = batch.step_group
    codes, n_pairs = dense_codes(
        np.concatenate([group, group]), np.concatenate([state, next_state])
    )
    src, dst = codes[:n], codes[n:].copy()
    node_group = np.zeros(n_pairs + batch.n_groups, np.int64)
    node_group[codes] = np.concatenate([group, group])
    sinks = n_pairs + np.arange(batch.n_groups, dtype=np.int64)
    node_group[sinks] = np.arange(batch.n_groups)
    won_last = batch.is_last & np.repeat(batch.success, batch.lengths)
    dst[won_last] = sinks[group[won_last]]
    has_success = np.bincount(group[won_last], minlength=batch.n_groups) > 0
    return GroupGraph(src, dst, node_group, sinks, has_success)


def _reverse_bfs(graph: GroupGraph) -> np.ndarray:
    """Hop count of every node to its group's sink, -1 where unreachable (int64 ``(k,)``)."""
    k = graph.n_nodes
    dist = np.full(k, -1, np.int64)
    frontier = graph.sinks[graph.has_success]
    dist[frontier] = 0
    if graph.src.size == 0:
        return dist
    order = radix_argsort(graph.dst)
    preds_sorted = graph.src[order]
    indeg = np.bincount(graph.dst, minlength=k)
    start = np.concatenate([[0], np.cumsum(indeg)[:-1]])
    slot = np.empty(k, np.int64)
    level = 0
    while frontier.size:
        cnt = indeg[frontier]
        total = int(cnt.sum())
        if total == 0:
            break
        first = np.repeat(start[frontier] - np.cumsum(cnt) + cnt, cnt)
        preds = preds_sorted[first + np.arange(total)]
        preds = preds[dist[preds] < 0]
        slot[preds] = np.arange(len(preds))  # keep one copy of each node
        preds = preds[slot[preds] == np.arange(len(preds))]
        level += 1
        dist[preds] = level
        frontier = preds
    return dist


def _group_d_max(graph: GroupGraph, raw: np.ndarray) -> np.ndarray:
    """Largest finite distance per group (0 when nothing reaches a sink), int64 ``(n_groups,)``."""
    d_max = np.zeros(len(graph.sinks), np.int64)
    reached = raw >= 0
    np.maximum.at(d_max, graph.node_group[reached], raw[reached])
    return d_max


def distances(graph: GroupGraph) -> np.ndarray:
    """Shortest unit-cost distance of every node to its group's sink, int64 ``(k,)``.

    Multi-source reverse BFS from the sinks of successful groups; a node that cannot reach its
    sink gets ``d_max + 1`` where ``d_max`` is the group's largest finite distance (0 with no
    success, so every node then gets 1), specs/graphgpo.md §2.4.
    """
    raw = _reverse_bfs(graph)
    return np.where(raw >= 0, raw, _group_d_max(graph, raw)[graph.node_group] + 1)


def graph_rewards(
    batch: StepBatch, graph: GroupGraph, dist: np.ndarray, config: GraphGPOConfig
) -> np.ndarray:
    """Edge rewards ``R^G`` per step, float64 ``(n,)`` (specs/graphgpo.md §2.5)."""
    exponent = dist[graph.dst] + (1 if config.reward_convention == "paper" else 0)
    rewards = config.success_reward * np.power(
        config.distance_discount, exponent.astype(np.float64)
    )
    if config.invalid_penalty_on_graph:
        rewards = rewards - config.invalid_penalty * ~batch.valid
    return rewards


def graph_advantages(batch: StepBatch, config: GraphGPOConfig) -> np.ndarray:
    """The graph advantage ``A^G`` per step, float64 ``(n,)`` (specs/graphgpo.md §2.6)."""
    if batch.n_steps == 0:
        return np.zeros(0, np.float64)
    graph = build_graph(batch, config)
    rewards = graph_rewards(batch, graph, distances(graph), config)
    if config.raw_state_groups and config.similarity_threshold is not None:
        sources, n_sources = dense_codes(batch.step_group, batch.state)
    else:
        sources, n_sources = graph.src, graph.n_nodes
    adv = group_zscore(
        rewards,
        sources,
        n_sources,
        norm=config.norm,
        ddof=config.ddof,
        eps=config.eps,
        singleton="zero",
    )
    if config.zero_graph_adv_if_no_success:
        adv[~graph.has_success[batch.step_group]] = 0.0
    return adv


def diagnostics(batch: StepBatch, config: GraphGPOConfig | None = None) -> dict[str, np.ndarray]:
    """Per-step and per-group quantities for tests and logging (specs/graphgpo.md §6.1).

    Returns a dict of arrays: per step ``distance`` (d of the source state), ``next_distance``
    (d of the destination, 0 for a success edge), ``graph_reward`` (R^G), ``graph_advantage`` (A^G),
    ``episode_advantage`` (A^E), ``singleton`` (the step is alone in its source-state group); per
    group ``has_success``, ``d_max`` (largest finite distance) and ``nodes`` (states in its graph).
    """
    config = config or GraphGPOConfig()
    graph = build_graph(batch, config)
    dist = distances(graph)
    out_degree = np.bincount(graph.src, minlength=graph.n_nodes)
    used = np.zeros(graph.n_nodes, bool)  # nodes exist only through edges
    used[graph.src] = used[graph.dst] = True
    used[graph.sinks] = False
    return {
        "distance": dist[graph.src],
        "next_distance": dist[graph.dst],
        "graph_reward": graph_rewards(batch, graph, dist, config),
        "graph_advantage": graph_advantages(batch, config),
        "episode_advantage": episode_advantages(batch, config),
        "singleton": out_degree[graph.src] == 1,
        "has_success": graph.has_success,
        "d_max": _group_d_max(graph, _reverse_bfs(graph)),
        "nodes": np.bincount(graph.node_group[used], minlength=batch.n_groups),
    }


def estimate_batch(batch: StepBatch, config: GraphGPOConfig | None = None) -> np.ndarray:
    """GraphGPO advantages of a flat batch, float64 ``(n,)``."""
    config = config or GraphGPOConfig()
    out = config.graph_weight * graph_advantages(batch, config)
    if config.episode_weight:
        out += config.episode_weight * episode_advantages(batch, config)
    return out


def estimate(
    trajectories: Sequence[Trajectory], config: GraphGPOConfig | None = None
) -> list[np.ndarray]:
    """GraphGPO advantages, one float64 array per trajectory (same order); groups by ``group_id``."""
    return estimate_trajectories(trajectories, estimate_batch, config or GraphGPOConfig())
