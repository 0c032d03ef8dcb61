"""The viewer's single self-contained HTML page.

This module holds :func:`render_page` (a :class:`~agentenvs.viewer.run.RunData` to HTML text),
:func:`write_page` (a run directory to ``view.html``), :func:`line_chart` and :func:`excerpt`.

The page has no external reference (CSS, JS and SVG are inline), so it works offline from
``file://``. From top to bottom:

* a header: the run, its credit method, how many groups, trajectories and steps are shown (and
  how many the store holds), and the advantage colour legend;
* the learning curves from ``metrics.csv`` (inline SVG line charts over the iteration): success
  rate (training and every ``eval/<mode>/success_rate`` column), loss, valid-action rate; missing
  columns are skipped;
* filters (task, iteration, success) in a few lines of vanilla JS: "won" keeps only the successful
  trajectories of each group and hides groups left with none ("lost" likewise);
* the groups, newest first, each a ``<section class="group">``: its trajectories side by side
  (``<div class="traj">``: success badge, return; one CSS grid, so that row ``k`` is step ``k``
  of every trajectory), one ``<div class="step">`` per step with the
  action (the parsed command in bold when the action is tagged), an observation excerpt
  (:data:`EXCERPT_CHARS` characters; the full text in a ``<details>``), the reward and the
  advantage, as a number and as the cell's colour; then the "methods" table (the group's
  advantages under each method of :mod:`agentenvs.viewer.compare`, one strip of coloured squares
  per trajectory) and GraphGPO's state graph (:mod:`agentenvs.viewer.graph`).

Colours (:mod:`agentenvs.viewer.colors`): red for negative, white for 0, green for positive
advantages, scaled per group by its largest ``|advantage|`` (per method in the methods table).
Every text that comes from an env or a model is escaped.

>>> from agentenvs.core import Step, Trajectory
>>> from agentenvs.core.store import StoredGroup
>>> from agentenvs.viewer.run import RunData
>>> g = StoredGroup("demo", 1, "grpo", "t#0", "t", 0.0, [
...     Trajectory("t", "t#0", [Step("<b>&", "up", 10.0, state_key="A", advantage=1.0)], success=True),
...     Trajectory("t", "t#0", [Step("<b>&", "down", 0.0, state_key="A", advantage=-1.0)])])
>>> page = render_page(RunData(path=".", name="demo", groups=[g], total_groups=1, methods={"grpo": 1}))
>>> page.count('<section class="group"'), page.count('<div class="step'), "<b>&" in page
(1, 2, False)
"""

from __future__ import annotations

import html
import math
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentenvs.core import Trajectory, parse_action
from agentenvs.core.store import StoredGroup
from agentenvs.viewer.colors import NEGATIVE, POSITIVE, advantage_color, group_scale
from agentenvs.viewer.compare import (
    STRUCTURAL_METHODS,
    MethodAdvantages,
    compare_methods,
    parse_methods,
)
from agentenvs.viewer.graph import graph_svg, state_graph
from agentenvs.viewer.run import RunData, load_run

__all__ = ["render_page", "write_page", "line_chart", "excerpt", "EXCERPT_CHARS", "CHARTS"]

#: Characters of an observation (and of a long action) shown in a step cell.
EXCERPT_CHARS = 160

#: The learning-curve charts: title -> patterns of the metrics.csv columns each plots.
CHARTS: dict[str, tuple[str, ...]] = {
    "success rate": (r"success_rate", r"eval/[^/]+/success(?:_rate)?"),
    "loss": (r"loss",),
    "valid action rate": (r"valid_action_rate", r"eval/[^/]+/valid_action_rate"),
}

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")

_CSS = """
body{font:13px/1.35 system-ui,sans-serif;margin:0;padding:12px 18px;color:#222;background:#fafafa}
h1{font-size:19px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
.meta{color:#555}.meta b{color:#222}
.legend{display:inline-flex;align-items:center;gap:6px;margin-top:6px}
.legend .bar{width:160px;height:12px;border:1px solid #bbb;
 background:linear-gradient(90deg,rgb(NEG),#fff,rgb(POS))}
.charts{display:flex;flex-wrap:wrap;gap:10px}
.chart{background:#fff;border:1px solid #ddd}.chart text{font-size:10px;fill:#444}
.chart .title{font-size:12px;font-weight:600;fill:#222}
#filters{position:sticky;top:0;z-index:2;background:#fafafa;padding:6px 0;border-bottom:1px solid #ddd}
#filters label{margin-right:12px}#filters select{max-width:320px}
.group{background:#fff;border:1px solid #ccc;border-radius:4px;margin:12px 0;padding:8px}
.group h3{font-size:13px;margin:0 0 6px}.group h3 .id{color:#777;font-weight:normal}
.trajs{display:grid;grid-auto-columns:auto;justify-content:start;gap:0 6px;overflow-x:auto;padding-bottom:4px}
.traj{display:contents}
.traj-head,.step{width:210px;box-sizing:border-box;border:1px solid #ddd;border-width:0 1px}
.traj-head{padding:3px 5px;background:#f1f1f1;font-size:12px;border-top-width:1px}
.badge{display:inline-block;padding:0 5px;border-radius:3px;color:#fff;font-size:11px}
.badge.won{background:#2a8a3a}.badge.lost{background:#999}
.step{border-top:1px solid #e4e4e4;padding:3px 5px}
.step.last{border-bottom-width:1px}
.act{font-family:ui-monospace,monospace;font-size:11px;word-break:break-all}
.act .invalid{color:#a11}.act .raw{opacity:.7}
.obs{font:10px/1.2 ui-monospace,monospace;white-space:pre-wrap;tab-size:2;margin:2px 0;
 max-height:110px;overflow:hidden;word-break:break-all}
.step details summary{font-size:10px;color:#555;cursor:pointer}
.step details pre{font-size:10px;white-space:pre-wrap;tab-size:2;max-height:300px;overflow:auto}
.nums{font-size:11px;color:#333}.nums b{font-family:ui-monospace,monospace}
.extras{display:flex;flex-wrap:wrap;gap:16px;margin-top:8px;align-items:flex-start}
.methods{border-collapse:collapse;font-size:11px}
.methods th,.methods td{border:1px solid #e0e0e0;padding:2px 4px;text-align:left;vertical-align:middle}
.methods th small{color:#777;font-weight:normal}
.strip{display:flex;gap:1px}.strip i{display:block;width:9px;height:14px;border:1px solid #ccc}
.graph{display:inline-block;max-width:100%;overflow:auto;border:1px solid #eee}
.state-graph text{font-size:10px;font-family:system-ui,sans-serif}
.state-graph .count{font-size:9px;fill:#333}
.note{color:#777;font-size:11px}
[hidden]{display:none!important}
""".replace("NEG", ",".join(map(str, NEGATIVE))).replace("POS", ",".join(map(str, POSITIVE)))

_JS = """
function applyFilters(){
  const task=document.getElementById('f-task').value,
        iter=document.getElementById('f-iter').value,
        succ=document.getElementById('f-success').value;
  let shown=0;
  document.querySelectorAll('section.group').forEach(g=>{
    const ok=(!task||g.dataset.task===task)&&(!iter||g.dataset.iteration===iter);
    let left=0;
    g.querySelectorAll('[data-success]').forEach(el=>{
      const keep=!succ||el.dataset.success===succ;
      el.hidden=!keep;
      if(keep&&el.classList.contains('traj'))left++;
    });
    g.hidden=!(ok&&left>0);
    if(!g.hidden)shown++;
  });
  document.getElementById('shown').textContent=shown;
}
document.querySelectorAll('#filters select').forEach(s=>s.addEventListener('change',applyFilters));
applyFilters();
"""


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> tuple[str, bool]:
    """``(text, truncated)``: the first ``limit`` characters of what a person reads of ``value``
    (a text; a dict's ``"text"``; else a short description of an array or object).

    >>> excerpt("abcdef", 4), excerpt({"text": "hi", "image": None})
    (('abc…', True), ('hi', False))
    """
    text = _as_text(value)
    if len(text) <= limit:
        return text, False
    return text[: limit - 1] + "…", True


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    if isinstance(value, np.ndarray):
        return f"array {value.shape} {value.dtype}"
    return repr(value)


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(x: float | None, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:+.3g}" if signed else f"{x:.3g}"


# -- learning curves -------------------------------------------------------------------------------
def line_chart(
    title: str, series: dict[str, list[tuple[float, float]]], width: int = 360, height: int = 200
) -> str:
    """An inline SVG line chart (``<svg class="chart">``) of ``{name: [(x, y), ...]}``.

    Rates (every value in [0, 1]) get the y range [0, 1]; other series their own range. Each
    point has a ``<title>`` with its values; a legend lists the series.

    >>> svg = line_chart("loss", {"loss": [(1, 0.5), (2, 0.25)]})
    >>> svg.count("<circle"), svg.startswith('<svg class="chart"')
    (2, True)
    """
    points = [p for pts in series.values() for p in pts]
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    if min(ys) >= 0 and max(ys) <= 1:
        y0, y1 = 0.0, 1.0
    else:
        y0, y1 = min(ys), max(ys)
        pad = (y1 - y0) * 0.05 or abs(y0) * 0.05 or 1.0
        y0, y1 = y0 - pad, y1 + pad
    left, right, top, bottom = 56, 10, 22, 30 + 14 * len(series)
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (0.5 if x1 == x0 else (x - x0) / (x1 - x0)) * pw

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><text class="title" x="{left}" y="14">{_esc(title)}</text>',
        f'<path d="M{left},{top}V{top + ph}H{left + pw}" fill="none" stroke="#999"/>',
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{y1:.3g}</text>',
        f'<text x="{left - 4}" y="{top + ph}" text-anchor="end">{y0:.3g}</text>',
        f'<text x="{left}" y="{top + ph + 12}">{x0:g}</text>',
        f'<text x="{left + pw}" y="{top + ph + 12}" text-anchor="end">{x1:g}</text>',
        f'<text x="{left + pw / 2:.0f}" y="{top + ph + 12}" text-anchor="middle">iteration</text>',
    ]
    for k, (name, pts) in enumerate(series.items()):
        color = _PALETTE[k % len(_PALETTE)]
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.6"/>')
        for x, y in pts:
            out.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" fill="{color}">'
                f"<title>{_esc(name)} at iteration {x:g}: {y:.4g}</title></circle>"
            )
        ly = top + ph + 26 + 14 * k
        out.append(
            f'<rect x="{left}" y="{ly - 8}" width="10" height="3" fill="{color}"/>'
            f'<text x="{left + 14}" y="{ly - 4}">{_esc(name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _curves(metrics: list[dict[str, float]]) -> str:
    if not metrics:
        return '<p class="note">no metrics.csv in this run</p>'
    columns = list(dict.fromkeys(k for row in metrics for k in row))
    charts = []
    for title, patterns in CHARTS.items():
        series = {}
        for pattern in patterns:
            for col in columns:
                if re.fullmatch(pattern, col) and col not in series:
                    pts = [
                        (r["iteration"], r[col]) for r in metrics if "iteration" in r and col in r
                    ]
                    if pts:
                        series[col] = pts
        if series:
            charts.append(line_chart(title, series))
    if not charts:
        return '<p class="note">metrics.csv has none of the plotted columns</p>'
    return f'<div class="charts">{"".join(charts)}</div>'


# -- groups ----------------------------------------------------------------------------------------
def _action_html(action: Any) -> str:
    if not isinstance(action, str):
        return f"<b>{_esc(_as_text(action))}</b>"
    parsed = parse_action(action)
    raw, cut = excerpt(action)
    title = f' title="{_esc(action)}"' if cut else ""
    if parsed.valid and parsed.command is not None:
        if parsed.command.strip() == action.strip():
            return f"<b>{_esc(parsed.command)}</b>"
        return f'<b>{_esc(parsed.command)}</b> <span class="raw"{title}>{_esc(raw)}</span>'
    return f'<span class="raw"{title}>{_esc(raw)}</span>'


def _step_html(
    step: Any, scale: float, nodes: tuple[int, int] | None, sink: int | None, cell: str, last: bool
) -> str:
    adv = step.advantage
    color = advantage_color(adv, scale)
    obs, cut = excerpt(step.observation)
    full = (
        f"<details><summary>full observation</summary><pre>{_esc(_as_text(step.observation))}"
        "</pre></details>"
        if cut
        else ""
    )
    invalid = "" if step.action_valid else ' <span class="invalid">(invalid)</span>'
    where = ""
    if nodes is not None:
        dst = "SUCCESS" if nodes[1] == sink else f"s{nodes[1]}"
        where = f" · s{nodes[0]}→{dst}"
    return (
        f'<div class="step{" last" if last else ""}" style="{cell};background:{color}">'
        f'<div class="act">{_action_html(step.action)}{invalid}</div>'
        f'<pre class="obs">{_esc(obs)}</pre>{full}'
        f'<div class="nums">r {_num(step.reward, True)} · A <b>{_num(adv, True)}</b>{where}</div>'
        "</div>"
    )


def _badge(traj: Trajectory) -> str:
    return (
        '<span class="badge won">won</span>'
        if traj.success
        else '<span class="badge lost">lost</span>'
    )


def _methods_table(views: list[MethodAdvantages], trajectories: Sequence[Trajectory]) -> str:
    head = "".join(
        f"<th>{_esc(v.method)}<br><small>{_esc(v.source)}"
        + (f", max |A| {_num(group_scale(v.advantages))}" if v.advantages else "")
        + (f": {_esc(v.note)}" if v.note else "")
        + "</small></th>"
        for v in views
    )
    scales = [group_scale(v.advantages) for v in views]
    rows = []
    for t, traj in enumerate(trajectories):
        cells = []
        for v, scale in zip(views, scales, strict=True):
            if not v.advantages:
                cells.append("<td></td>")
                continue
            squares = "".join(  # step k is the k-th square; its title is the advantage
                f'<i style="background:{advantage_color(a, scale)}" title="{_num(a, True)}"></i>'
                for a in v.advantages[t]
            )
            cells.append(f'<td><span class="strip">{squares}</span></td>')
        rows.append(
            f'<tr data-success="{int(traj.success)}"><td>#{_esc(traj.traj_id or t)} '
            f"{_badge(traj)}</td>{''.join(cells)}</tr>"
        )
    return f'<table class="methods"><tr><th>trajectory</th>{head}</tr>{"".join(rows)}</table>'


def _group_html(index: int, group: StoredGroup, methods: Sequence[str]) -> str:
    trajs = group.trajectories
    stored = [[s.advantage for s in t.steps] for t in trajs]
    scale = group_scale(stored)
    try:
        graph = state_graph(trajs)
    except ValueError:
        graph = None
    columns = []  # one CSS grid: column t + 1 is trajectory t, row s + 2 its step s
    for t, traj in enumerate(trajs):
        steps = "".join(
            _step_html(
                step,
                scale,
                None if graph is None else graph.step_nodes(t, s),
                None if graph is None else graph.sink,
                f"grid-area:{s + 2}/{t + 1}",
                s == len(traj.steps) - 1,
            )
            for s, step in enumerate(traj.steps)
        )
        columns.append(
            f'<div class="traj" data-success="{int(traj.success)}">'
            f'<div class="traj-head" style="grid-area:1/{t + 1}">'
            f"#{_esc(traj.traj_id or t)} {_badge(traj)} return {_num(traj.total_return)} · "
            f"{len(traj.steps)} steps</div>{steps}</div>"
        )
    won = sum(t.success for t in trajs)
    iteration = "" if group.iteration is None else str(group.iteration)
    head = (
        f'task {_esc(group.task_id)} <span class="id">group {_esc(group.group_id)}'
        + (f" · iteration {iteration}" if iteration else "")
        + (f" · {_esc(group.method)}" if group.method else "")
        + f"</span> · {won}/{len(trajs)} won · max |A| {_num(scale)}"
    )
    views = compare_methods(trajs, methods, stored_method=group.method)
    if graph is None:
        graph_html = '<p class="note">no steps: no state graph</p>'
    else:
        graph_html = (
            f'<div class="graph">{graph_svg(graph, stored, id_prefix=f"g{index}")}</div>'
            '<p class="note">node: d(s), GraphGPO\'s steps to SUCCESS; thick ring: the initial '
            "state; edge colour: mean stored advantage; number: traversals</p>"
        )
    return (
        f'<section class="group" id="group-{index}" data-task="{_esc(group.task_id)}" '
        f'data-iteration="{iteration}" data-method="{_esc(group.method or "")}">'
        f"<h3>{head}</h3>"
        f'<div class="trajs">{"".join(columns)}</div>'
        '<div class="extras">'
        f"<details open><summary>methods</summary>{_methods_table(views, trajs)}</details>"
        f"<details open><summary>GraphGPO state graph ({0 if graph is None else graph.n_nodes} "
        f"nodes)</summary>{graph_html}</details>"
        "</div></section>"
    )


def _select(ident: str, label: str, values: list[tuple[str, str]]) -> str:
    options = "".join(f'<option value="{_esc(v)}">{_esc(text)}</option>' for v, text in values)
    return f'<label>{label} <select id="{ident}"><option value="">all</option>{options}</select></label>'


def render_page(run: RunData, methods: Sequence[str] = STRUCTURAL_METHODS) -> str:
    """The whole page of ``run`` as HTML text (see the module docstring).

    Args:
        run: from :func:`~agentenvs.viewer.run.load_run`.
        methods: the methods the per-group "methods" table re-credits (names or aliases).

    Raises:
        ValueError: an unknown method name.
    """
    methods = parse_methods(methods)  # an unknown name fails here, even with no groups
    groups = run.groups
    n_traj = sum(len(g.trajectories) for g in groups)
    n_steps = sum(len(t.steps) for g in groups for t in g.trajectories)
    n_won = sum(t.success for g in groups for t in g.trajectories)
    method_text = ", ".join(
        f"{m or 'unknown'} ({n} groups)"
        for m, n in sorted(run.methods.items(), key=lambda x: -x[1])
    )
    iterations = sorted({g.iteration for g in groups if g.iteration is not None})
    tasks = sorted({g.task_id for g in groups})
    meta = (
        f"credit method <b>{_esc(method_text or 'none stored')}</b> · showing <b>{len(groups)}</b> "
        f"of {run.total_groups} stored groups (newest first), <b>{n_traj}</b> trajectories "
        f"({n_won} won), <b>{n_steps}</b> steps"
        + (f" · iterations {iterations[0]}–{iterations[-1]}" if iterations else "")
        + (f" · {run.skipped} torn records skipped" if run.skipped else "")
    )
    filters = (
        '<div id="filters">'
        + _select("f-task", "task", [(t, t) for t in tasks])
        + _select("f-iter", "iteration", [(str(i), str(i)) for i in iterations])
        + _select("f-success", "trajectories", [("1", "won only"), ("0", "lost only")])
        + f'<span class="note">showing <b id="shown">{len(groups)}</b> of {len(groups)} groups'
        "</span></div>"
    )
    body = "".join(_group_html(i, g, methods) for i, g in enumerate(groups))
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(run.name)} · agentenvs credit viewer</title><style>{_CSS}</style></head>"
        f"<body><header><h1>{_esc(run.name)}</h1>"
        f'<div class="meta">{meta}</div>'
        f'<div class="meta">{_esc(os.fspath(run.path))} · generated {stamp}</div>'
        '<div class="legend">advantage <span>−max|A|</span><span class="bar"></span>'
        '<span>+max|A|</span><span class="note">(white = 0; scaled per group)</span></div>'
        f"</header><h2>Learning curves</h2>{_curves(run.metrics)}"
        f"<h2>Groups</h2>{filters}"
        + (body or '<p class="note">no stored groups in this run</p>')
        + f"<script>{_JS}</script></body></html>\n"
    )


def write_page(
    run_dir: str | os.PathLike,
    out: str | os.PathLike | None = None,
    methods: Sequence[str] = STRUCTURAL_METHODS,
    max_groups: int = 50,
) -> Path:
    """Render the run in ``run_dir`` to ``out`` (default ``run_dir/view.html``); returns its path.

    Raises:
        agentenvs.viewer.run.NotARunError: ``run_dir`` is not a run directory.
        ValueError: an unknown method or ``max_groups < 0``.
    """
    run = load_run(run_dir, max_groups=max_groups)
    page = render_page(run, methods)
    path = Path(out) if out is not None else Path(run_dir) / "view.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, path)  # a reader (or --serve) never sees half a page
    finally:
        tmp.unlink(missing_ok=True)
    return path
