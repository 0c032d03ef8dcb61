"""GraphGPO's state graph of one group, drawn as inline SVG.

This module holds :class:`StateGraph`, :func:`state_graph` and :func:`graph_svg`.

The graph is GraphGPO's own (:func:`agentenvs.wrappers.graphgpo.build_graph`): one node per distinct state
key of the group (``Step.state_key``, and ``Step.next_state_key`` of every step but the last step
of a won trajectory), plus one SUCCESS node that every won trajectory's last step leads to; one
edge per distinct transition, with the number of steps that took it. Each node carries GraphGPO's
distance to success ``d(s)`` (:func:`agentenvs.wrappers.graphgpo.distances`: hops, or total cost with
non-unit step costs; a state that cannot reach SUCCESS gets the group's largest distance plus one
step's cost).

Layout: layered by breadth-first depth from the initial state (left to right); within a layer,
nodes are ordered by the mean position of their predecessors (one barycentre sweep), which keeps
most edges short and uncrossed. Forward edges that skip layers and backward edges are curved; a
step that left the state unchanged (an invalid or blocked move) is a small loop. Edge width grows
with the traversal count (printed when above 1); given the steps' advantages, each edge is
coloured by the mean advantage of its traversals (:mod:`agentenvs.viewer.colors`).

>>> from agentenvs.core import Step, Trajectory
>>> def traj(path, won):
...     steps = [Step("o", "a", 0.0, state_key=u, next_state_key=v) for u, v in zip(path, path[1:])]
...     return Trajectory("t", "g", steps, success=won)
>>> g = state_graph([traj("ABG", True), traj("ACC", False)])
>>> g.keys, g.depth.tolist(), g.distance.tolist(), g.edges
(['A', 'B', None, 'C'], [0, 1, 2, 1], [2.0, 1.0, 0.0, 3.0], [(0, 1, 1), (1, 2, 1), (0, 3, 1), (3, 3, 1)])
>>> svg = graph_svg(g)
>>> svg.count('class="node state'), svg.count('class="node sink'), svg.count('class="edge"')
(3, 1, 4)
"""

from __future__ import annotations

import html
import math
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from agentenvs.core import Trajectory
from agentenvs.viewer.colors import advantage_color, group_scale
from agentenvs.wrappers.batch import StepBatch, state_signature
from agentenvs.wrappers.graphgpo import BATCH_COLUMNS, GraphGPOConfig, build_graph, distances

__all__ = ["StateGraph", "state_graph", "graph_svg", "MAX_NODES"]

#: Graphs with more nodes are not drawn (a note says so): the SVG would be unreadable and heavy.
MAX_NODES = 400

_DX, _DY, _R, _PAD = 84, 46, 13, 36  # layer spacing, row spacing, node radius, margin (px)


@dataclass(frozen=True)
class StateGraph:
    """GraphGPO's graph of one group, nodes numbered in order of first occurrence.

    Attributes:
        keys: the state key of each node; ``None`` for the SUCCESS node.
        depth: int64 ``(k,)``, breadth-first hops from the initial state (the layer).
        distance: float64 ``(k,)``, GraphGPO's ``d(s)`` (0 for SUCCESS).
        visits: int64 ``(k,)``, steps taken in each state (0 for SUCCESS).
        sink: the SUCCESS node, ``None`` when no trajectory won.
        edges: ``(src, dst, count)`` per distinct transition, in order of first occurrence.
        step_edges: per trajectory, per step, the index into ``edges`` of the step's transition.
    """

    keys: list[Hashable | None]
    depth: np.ndarray
    distance: np.ndarray
    visits: np.ndarray
    sink: int | None
    edges: list[tuple[int, int, int]]
    step_edges: list[list[int]]

    @property
    def n_nodes(self) -> int:
        return len(self.keys)

    def step_nodes(self, traj: int, step: int) -> tuple[int, int]:
        """``(src, dst)`` nodes of step ``step`` of trajectory ``traj``."""
        src, dst, _ = self.edges[self.step_edges[traj][step]]
        return src, dst


def state_graph(
    trajectories: Sequence[Trajectory], config: GraphGPOConfig | None = None
) -> StateGraph:
    """GraphGPO's graph of one group (``trajectories``, any ``group_id``); see the module docstring.

    ``config`` matters only through ``similarity_threshold`` (merged states share a node).

    Raises:
        ValueError: no trajectory has a step.
    """
    config = config or GraphGPOConfig()
    trajectories = list(trajectories)
    if not any(t.steps for t in trajectories):
        raise ValueError("a state graph needs at least one step")
    batch = StepBatch.from_trajectories(
        trajectories,
        signature=state_signature,
        groups=[0] * len(trajectories),
        columns=BATCH_COLUMNS,
    )
    graph = build_graph(batch, config)
    dist = distances(graph)
    src, dst = graph.src.tolist(), graph.dst.tolist()
    sink = int(graph.sinks[0])
    # renumber the nodes the steps use, in order of first occurrence
    number: dict[int, int] = {}
    keys: list[Hashable | None] = []
    for i, (u, v) in enumerate(zip(src, dst, strict=True)):
        for node, key in ((u, batch.state[i]), (v, batch.next_state[i])):
            if node not in number:
                number[node] = len(keys)
                keys.append(None if node == sink else _key(batch, int(key)))
    old = np.array(list(number), np.int64)
    edge_index: dict[tuple[int, int], int] = {}
    counts: list[int] = []
    flat_edges = []
    for u, v in zip(src, dst, strict=True):
        pair = (number[u], number[v])
        if pair not in edge_index:
            edge_index[pair] = len(counts)
            counts.append(0)
        counts[edge_index[pair]] += 1
        flat_edges.append(edge_index[pair])
    edges = [(u, v, counts[i]) for (u, v), i in edge_index.items()]
    lengths = np.cumsum([0] + [len(t.steps) for t in trajectories]).tolist()
    step_edges = [flat_edges[a:b] for a, b in zip(lengths, lengths[1:], strict=False)]
    visits = np.bincount([number[u] for u in src], minlength=len(keys)).astype(np.int64)
    start = number[src[0]]
    return StateGraph(
        keys=keys,
        depth=_bfs_depth(len(keys), edges, start),
        distance=dist[old].astype(np.float64),
        visits=visits,
        sink=number.get(sink),
        edges=edges,
        step_edges=step_edges,
    )


def _key(batch: StepBatch, code: int) -> Hashable:
    keys = batch.state_keys
    return keys[code] if keys is not None else code


def _bfs_depth(n: int, edges: list[tuple[int, int, int]], start: int) -> np.ndarray:
    """Hops from ``start`` along the edges; nodes it cannot reach go one layer past the last."""
    out: list[list[int]] = [[] for _ in range(n)]
    for u, v, _ in edges:
        out[u].append(v)
    depth = np.full(n, -1, np.int64)
    depth[start] = 0
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v in out[u]:
            if depth[v] < 0:
                depth[v] = depth[u] + 1
                queue.append(v)
    depth[depth < 0] = depth.max() + 1
    return depth


def _positions(graph: StateGraph) -> np.ndarray:
    """Row of each node inside its layer (barycentre of its predecessors' rows, one sweep)."""
    preds: list[list[int]] = [[] for _ in range(graph.n_nodes)]
    for u, v, _ in graph.edges:
        if graph.depth[u] < graph.depth[v]:
            preds[v].append(u)
    row = np.zeros(graph.n_nodes, np.float64)
    for layer in range(int(graph.depth.max()) + 1):
        members = [int(i) for i in np.flatnonzero(graph.depth == layer)]
        wanted = {i: (np.mean([row[p] for p in preds[i]]) if preds[i] else 0.0) for i in members}
        for r, i in enumerate(sorted(members, key=lambda i: (wanted[i], i))):
            row[i] = r
    return row


def _label(key: Hashable | None, limit: int = 80) -> str:
    text = "SUCCESS" if key is None else str(key)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2g}"


def graph_svg(
    graph: StateGraph,
    advantages: Sequence[Sequence[float | None]] | None = None,
    id_prefix: str = "g",
) -> str:
    """The graph as one ``<svg>`` element (no script, no external reference).

    Args:
        graph: from :func:`state_graph`.
        advantages: per trajectory, per step, the advantage that colours the edges (mean over an
            edge's traversals, scaled by the group's largest ``|advantage|``); ``None``: grey edges.
        id_prefix: prefix of the SVG's element ids (its arrow marker), unique per page.

    Nodes are ``<g class="node state">`` (one per state key) and ``<g class="node sink">`` (the
    SUCCESS node); each shows ``d(s)`` and has a ``<title>`` with the node id, its visits and its
    state key (escaped). Edges are ``<path class="edge">``. A graph above :data:`MAX_NODES` nodes
    gives a ``<p class="graph-note">`` instead.
    """
    if graph.n_nodes > MAX_NODES:
        return (
            f'<p class="graph-note">state graph not drawn: {graph.n_nodes} nodes '
            f"(more than {MAX_NODES})</p>"
        )
    row = _positions(graph)
    x = _PAD + graph.depth * _DX + _R
    y = _PAD + row * _DY + _R
    width = int(x.max() + _R + _PAD)
    height = int(y.max() + _R + _PAD)
    edge_color = ["#888888"] * len(graph.edges)
    if advantages is not None:
        sums = np.zeros(len(graph.edges))
        seen = np.zeros(len(graph.edges))
        for t, row_adv in enumerate(advantages):
            for s, a in enumerate(row_adv):
                if a is not None and math.isfinite(a):
                    sums[graph.step_edges[t][s]] += a
                    seen[graph.step_edges[t][s]] += 1
        scale = group_scale(advantages)
        edge_color = [
            advantage_color(sums[i] / seen[i] if seen[i] else None, scale)
            for i in range(len(graph.edges))
        ]
    marker = f"{id_prefix}-arrow"
    parts = [
        f'<svg class="state-graph" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">',
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto"><path d="M0,0L10,5L0,10z" fill="#555"/>'
        "</marker></defs>",
    ]
    for i, (u, v, count) in enumerate(graph.edges):
        parts.append(_edge(x, y, u, v, count, graph, edge_color[i], marker))
    for i, key in enumerate(graph.keys):
        sink = key is None
        start = graph.depth[i] == 0
        title = html.escape(
            "SUCCESS (d = 0)"
            if sink
            else f"s{i}: d = {_fmt(graph.distance[i])}, {graph.visits[i]} visits\n{_label(key)}"
        )
        fill = "#c7e9c0" if sink else "#ffffff"
        stroke = "#2a7a3a" if sink else ("#222" if start else "#777")
        parts.append(
            f'<g class="node {"sink" if sink else "state"}" data-node="{i}"><title>{title}</title>'
            f'<circle cx="{x[i]:.0f}" cy="{y[i]:.0f}" r="{_R}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{2.5 if start or sink else 1.2}"/>'
            f'<text x="{x[i]:.0f}" y="{y[i] + 4:.0f}" text-anchor="middle">'
            f"{'&#10003;' if sink else _fmt(graph.distance[i])}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _edge(
    x: np.ndarray,
    y: np.ndarray,
    u: int,
    v: int,
    count: int,
    graph: StateGraph,
    color: str,
    marker: str,
) -> str:
    """One ``<path class="edge">``: straight to the next layer, curved otherwise, a loop for u == v."""
    width = 1.2 + 1.3 * math.log2(count)
    title = (
        f"<title>s{u} -> {'SUCCESS' if graph.keys[v] is None else f's{v}'}: {count} steps</title>"
    )
    if u == v:
        cx, cy = x[u], y[u] - _R
        d = f"M{cx - 6:.0f},{cy + 2:.0f}C{cx - 20:.0f},{cy - 26:.0f} {cx + 20:.0f},{cy - 26:.0f} {cx + 6:.0f},{cy + 2:.0f}"
        label_at = (cx, cy - 22)
    else:
        x0, y0, x1, y1 = x[u], y[u], x[v], y[v]
        length = math.hypot(x1 - x0, y1 - y0)
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        sx, sy, ex, ey = x0 + ux * _R, y0 + uy * _R, x1 - ux * _R, y1 - uy * _R
        if graph.depth[v] == graph.depth[u] + 1:
            d = f"M{sx:.0f},{sy:.0f}L{ex:.0f},{ey:.0f}"
            label_at = ((sx + ex) / 2, (sy + ey) / 2 - 4)
        else:  # skips layers or goes back: bow it so it does not run through other nodes
            bow = 0.25 * length + 18
            mx, my = (sx + ex) / 2 - uy * bow, (sy + ey) / 2 + ux * bow
            d = f"M{sx:.0f},{sy:.0f}Q{mx:.0f},{my:.0f} {ex:.0f},{ey:.0f}"
            label_at = ((sx + 2 * mx + ex) / 4, (sy + 2 * my + ey) / 4 - 4)
    label = (
        f'<text class="count" x="{label_at[0]:.0f}" y="{label_at[1]:.0f}" text-anchor="middle">{count}</text>'
        if count > 1
        else ""
    )
    # a faint grey outline under the coloured stroke keeps near-white (advantage ~ 0) edges visible
    outline = (
        f'<path d="{d}" fill="none" stroke="#555" stroke-width="{width + 1.6:.1f}" opacity="0.35"/>'
    )
    return (
        f'<g class="edge-group">{outline}<path class="edge" d="{d}" fill="none" stroke="{color}" '
        f'stroke-width="{width:.1f}" marker-end="url(#{marker})">{title}</path>{label}</g>'
    )
