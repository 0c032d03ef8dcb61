"""GraphGPO: graph-based step credit from shortest distances to success in the group's state graph.

Per group, every step is an edge occurrence ``state -> next_state`` whose cost is ``Step.cost``
(the last step of a successful trajectory points to the group's SUCCESS sink). A reverse search
from the sinks gives each node its shortest distance ``d`` to success: breadth-first when every
cost is 1, Dijkstra otherwise; unreachable nodes get ``d_max + c_max`` (``d_max + 1`` with unit
costs). Each edge is rewarded ``R^G = success_reward * distance_discount ** (d(s') + c)`` (paper) or
``** (d(s') + c - 1)`` (reference), minus ``invalid_penalty`` on invalid steps when
``invalid_penalty_on_graph``; edges leaving the same state are normalised against each other
(singleton: 0), and ``A = graph_weight * A^G + episode_weight * A^E``. The equations, defaults and
worked examples are in docs/credit.md, section 5.

This module holds :class:`GraphGPOConfig`, :func:`build_graph`, :func:`distances`,
:func:`graph_rewards`, :func:`graph_advantages`, :func:`diagnostics`, :func:`estimate_batch` (trajectories:
:func:`agentenvs.wrappers.estimate`). All groups are solved at once: one multi-source search over the union of the
group graphs (their nodes are (group, state) pairs, so graphs never mix); the reverse adjacency is
built with a radix sort and each breadth-first level costs O(edges into the frontier).

>>> from agentenvs.wrappers import estimate
>>> from agentenvs.core import Step, Trajectory
>>> def traj(path, won):
...     steps = [Step("o", "a", 0.0, state_key=u, next_state_key=v) for u, v in zip(path, path[1:])]
...     steps[-1].reward = 10.0 if won else 0.0
...     return Trajectory("t", "g", steps, success=won)
>>> adv = estimate([traj("ABG", True), traj("ACC", False)], "graphgpo", GraphGPOConfig(eps=0.0))
>>> [a.round(4).tolist() for a in adv]
[[1.4142, 0.7071], [-1.4142, -0.7071]]
"""

from __future__ import annotations

from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Any, ClassVar

import numpy as np
from agentenvs.wrappers.batch import StepBatch
from agentenvs.wrappers.grpo import GRPOConfig, check_choice, episode_advantages
from agentenvs.wrappers.matching import similarity_codes
from agentenvs.wrappers.stats import dense_codes, group_zscore, radix_argsort

__all__ = [
    "GraphGPOConfig",
    "REWARD_CONVENTIONS",
    "BATCH_COLUMNS",
    "GroupGraph",
    "build_graph",
    "distances",
    "graph_rewards",
    "graph_advantages",
    "diagnostics",
    "estimate_batch",
]

#: ``"paper"``: exponent ``d(s') + c`` (the paper's Eq. 4); ``"reference"``: exponent
#: ``d(s') + c - 1``, the recipe's ``d(s') + weight - 1`` (``d(s')`` with unit costs).
REWARD_CONVENTIONS = ("paper", "reference")
#: The :class:`~agentenvs.wrappers.batch.StepBatch` columns :func:`estimate_batch` reads.
BATCH_COLUMNS = ("state", "next_state", "cost")


@dataclass(frozen=True)
class GraphGPOConfig(GRPOConfig):
    """GraphGPO (docs/credit.md, section 5). Inherits the episode-term fields of
    :class:`~agentenvs.wrappers.grpo.GRPOConfig`; ``norm``, ``ddof`` and ``eps`` also apply to the
    per-source-state graph groups."""

    distance_discount: float = 0.1
    """omega, the per-unit-of-cost discount of the edge reward, in (0, 1) (the recipe's
    ``algorithm.gamma``). The paper's values: ALFWorld 0.1 (the default), WebShop 0.2, Sokoban 0.8."""
    success_reward: float = 10.0
    """r_succ, the scale of the edge reward (10 in the paper and the recipe)."""
    graph_weight: float = 1.0
    """beta^G, the weight of the graph advantage ``A^G``."""
    episode_weight: float = 1.0
    """beta^E, the weight of the episode advantage ``A^E`` (0 = the paper's "-A^E" ablation)."""
    reward_convention: str = "paper"
    """``"paper"``: ``R^G = r_succ * omega^(d(s') + c)``; ``"reference"``: ``r_succ *
    omega^(d(s') + c - 1)``, i.e. the paper's value divided by omega (docs/credit.md, section 5.3):
    identical ``A^G`` under ``norm="mean_std"`` unless the graph penalty applies."""
    invalid_penalty_on_graph: bool = True
    """Subtract ``invalid_penalty`` from ``R^G`` of invalid steps, as the recipe does (``R^G`` holds
    no env reward, so this is not a double count)."""
    zero_graph_adv_if_no_success: bool = True
    """``A^G = 0`` in groups with no success. ``False`` is the recipe's path: every node gets
    ``d = c_max`` (1 with unit costs), so only costs and the graph penalty separate edges."""
    similarity_threshold: float | None = None
    """``None`` = exact state matching; e.g. 0.95 merges text states whose ``SequenceMatcher``
    ratio reaches it (the paper's noisy-WebShop study; graph nodes use the merged states;
    docs/credit.md, section 5.6)."""
    raw_state_groups: bool = False
    """With similarity matching, form the per-source-state step groups from the exact raw states
    (the recipe) instead of the merged ones (the default)."""

    REFERENCE_FIELDS: ClassVar[dict[str, Any]] = {
        "reward_convention": "reference",
        "zero_graph_adv_if_no_success": False,
        "raw_state_groups": True,
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("reward_convention", self.reward_convention, REWARD_CONVENTIONS)
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
        cost: float64 ``(n,)`` cost of each edge occurrence (``Step.cost``).
        node_group: int64 ``(k,)`` group of each node; nodes ``sink0..`` are the sinks.
        sinks: int64 ``(n_groups,)`` sink node of each group (used only where the group has a success).
        has_success: bool ``(n_groups,)``.
        unit_cost: every edge costs exactly 1 (distances are then hop counts, found breadth-first).
    """

    src: np.ndarray
    dst: np.ndarray
    cost: np.ndarray
    node_group: np.ndarray
    sinks: np.ndarray
    has_success: np.ndarray
    unit_cost: bool = True

    @property
    def n_nodes(self) -> int:
        return len(self.node_group)


def build_graph(batch: StepBatch, config: GraphGPOConfig) -> GroupGraph:
    """Nodes are (group, state) pairs plus one SUCCESS sink per group (docs/credit.md, section 5.1).

    The destination of a successful trajectory's last step is the sink, never that step's
    ``next_state``: with similarity matching that observation is not matched against other states
    either (the recipe writes the literal ``'success'`` there).
    """
    group = batch.step_group
    won_last = batch.is_last & np.repeat(batch.success, batch.lengths)
    state, next_state = batch.state, batch.next_state
    if config.similarity_threshold is not None:
        state, next_state = similarity_codes(
            batch, config.similarity_threshold, sink_steps=won_last
        )
    n = batch.n_steps
    codes, n_pairs = dense_codes(
        np.concatenate([group, group]), np.concatenate([state, next_state])
    )
    src, dst = codes[:n], codes[n:].copy()
    node_group = np.zeros(n_pairs + batch.n_groups, np.int64)
    node_group[codes] = np.concatenate([group, group])
    sinks = n_pairs + np.arange(batch.n_groups, dtype=np.int64)
    node_group[sinks] = np.arange(batch.n_groups)
    dst[won_last] = sinks[group[won_last]]
    has_success = np.bincount(group[won_last], minlength=batch.n_groups) > 0
    assert batch.cost is not None  # StepBatch fills unit costs at construction
    return GroupGraph(src, dst, batch.cost, node_group, sinks, has_success, batch.unit_cost)


def _reverse_adjacency(graph: GroupGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge occurrences sorted by destination: ``(order, indegree, start)``."""
    order = radix_argsort(graph.dst)
    indeg = np.bincount(graph.dst, minlength=graph.n_nodes)
    start = np.concatenate([[0], np.cumsum(indeg)])
    return order, indeg, start


def _reverse_bfs(graph: GroupGraph) -> np.ndarray:
    """Hop count of every node to its group's sink, inf where unreachable (float64 ``(k,)``)."""
    k = graph.n_nodes
    dist = np.full(k, -1, np.int64)
    frontier = graph.sinks[graph.has_success]
    dist[frontier] = 0
    if graph.src.size:
        order, indeg, start = _reverse_adjacency(graph)
        preds_sorted = graph.src[order]
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
    return np.where(dist >= 0, dist.astype(np.float64), np.inf)


def _reverse_dijkstra(graph: GroupGraph) -> np.ndarray:
    """Least total cost of every node to its group's sink, inf where unreachable (float64 ``(k,)``).

    One heap over all groups (their graphs are disjoint), lazy deletion: a node's distance is
    final when it leaves the heap. Each relaxation computes ``d(u) = c(u -> v) + d(v)``.
    """
    dist = [np.inf] * graph.n_nodes
    heap: list[tuple[float, int]] = []
    for sink in graph.sinks[graph.has_success].tolist():
        dist[sink] = 0.0
        heap.append((0.0, sink))
    if graph.src.size == 0:
        return np.asarray(dist, np.float64)
    order, _, start = _reverse_adjacency(graph)
    preds = graph.src[order].tolist()
    costs = graph.cost[order].tolist()
    start = start.tolist()
    while heap:
        d_v, v = heappop(heap)
        if d_v > dist[v]:
            continue
        for j in range(start[v], start[v + 1]):
            d_u = costs[j] + d_v
            u = preds[j]
            if d_u < dist[u]:
                dist[u] = d_u
                heappush(heap, (d_u, u))
    return np.asarray(dist, np.float64)


def _shortest(graph: GroupGraph) -> np.ndarray:
    return _reverse_bfs(graph) if graph.unit_cost else _reverse_dijkstra(graph)


def _group_d_max(graph: GroupGraph, raw: np.ndarray) -> np.ndarray:
    """Largest finite distance per group (0 when nothing reaches a sink), float64 ``(n_groups,)``."""
    d_max = np.zeros(len(graph.sinks), np.float64)
    reached = np.isfinite(raw)
    np.maximum.at(d_max, graph.node_group[reached], raw[reached])
    return d_max


def _group_c_max(graph: GroupGraph) -> np.ndarray:
    """Largest edge cost per group (1 with unit costs), float64 ``(n_groups,)``."""
    c_max = np.ones(len(graph.sinks), np.float64)
    if not graph.unit_cost and graph.src.size:
        c_max[:] = 0.0
        np.maximum.at(c_max, graph.node_group[graph.src], graph.cost)
    return c_max


def distances(graph: GroupGraph) -> np.ndarray:
    """Shortest distance (total cost) of every node to its group's sink, float64 ``(k,)``.

    Breadth-first when every cost is 1 (hop counts), Dijkstra otherwise. A node that cannot reach
    its sink gets ``d_max + c_max``: ``d_max`` is the group's largest finite distance (0 with no
    success) and ``c_max`` its largest step cost, so ``d_max + 1`` with unit costs
    (docs/credit.md, section 5.2).
    """
    raw = _shortest(graph)
    fallback = _group_d_max(graph, raw) + _group_c_max(graph)
    return np.where(np.isfinite(raw), raw, fallback[graph.node_group])


def graph_rewards(
    batch: StepBatch, graph: GroupGraph, dist: np.ndarray, config: GraphGPOConfig
) -> np.ndarray:
    """Edge rewards ``R^G`` per step, float64 ``(n,)`` (docs/credit.md, section 5.3)."""
    exponent = dist[graph.dst] + graph.cost
    if config.reward_convention == "reference":
        exponent = exponent - 1.0
    rewards = config.success_reward * np.power(config.distance_discount, exponent)
    if config.invalid_penalty_on_graph:
        rewards = rewards - config.invalid_penalty * ~batch.valid
    return rewards


def graph_advantages(batch: StepBatch, config: GraphGPOConfig) -> np.ndarray:
    """The graph advantage ``A^G`` per step, float64 ``(n,)`` (docs/credit.md, section 5.4)."""
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
    """Per-step and per-group quantities for tests and logging.

    Returns a dict of arrays: per step ``distance`` (d of the source state), ``next_distance``
    (d of the destination, 0 for a success edge), ``cost`` (c), ``graph_reward`` (R^G),
    ``graph_advantage`` (A^G), ``episode_advantage`` (A^E), ``singleton`` (the step is alone in its
    source-state group); per group ``has_success``, ``d_max`` (largest finite distance) and
    ``nodes`` (states in its graph).
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
        "cost": graph.cost,
        "graph_reward": graph_rewards(batch, graph, dist, config),
        "graph_advantage": graph_advantages(batch, config),
        "episode_advantage": episode_advantages(batch, config),
        "singleton": out_degree[graph.src] == 1,
        "has_success": graph.has_success,
        "d_max": _group_d_max(graph, _shortest(graph)),
        "nodes": np.bincount(graph.node_group[used], minlength=batch.n_groups),
    }


def estimate_batch(batch: StepBatch, config: GraphGPOConfig | None = None) -> np.ndarray:
    """GraphGPO advantages of a flat batch, float64 ``(n,)``."""
    config = config or GraphGPOConfig()
    out = config.graph_weight * graph_advantages(batch, config)
    if config.episode_weight:
        out += config.episode_weight * episode_advantages(batch, config)
    return out
