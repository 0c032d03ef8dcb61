"""agentenvs.viewer: the HTML credit viewer of a run directory (``agentenvs view RUN_DIR``;
docs/viewer.md).

This package holds:

* :mod:`agentenvs.viewer.run` - :func:`load_run` (a run directory's stored groups and
  ``metrics.csv``), :class:`RunData`, :class:`NotARunError`.
* :mod:`agentenvs.viewer.page` - :func:`render_page` and :func:`write_page`: the single
  self-contained HTML page (inline CSS, JS and SVG; works offline from ``file://``).
* :mod:`agentenvs.viewer.compare` - :func:`compare_methods`: one group's advantages under several
  credit methods (stored, or recomputed on a copy).
* :mod:`agentenvs.viewer.graph` - :func:`state_graph` and :func:`graph_svg`: GraphGPO's state
  graph of a group as inline SVG.
* :mod:`agentenvs.viewer.colors` - the diverging advantage colour scale.
* :mod:`agentenvs.viewer.serve` - serving the page on 127.0.0.1 (``http.server``).
* :mod:`agentenvs.viewer.screenshot` - headless Chromium and
  ``python -m agentenvs.viewer.screenshot RUN_DIR OUT.png``.

Layering: the viewer imports agentenvs and wrappers, never learners; only :mod:`agentenvs.cli`
imports it.
"""

from agentenvs.viewer.compare import (
    STRUCTURAL_METHODS,
    MethodAdvantages,
    compare_methods,
    parse_methods,
)
from agentenvs.viewer.graph import StateGraph, graph_svg, state_graph
from agentenvs.viewer.page import render_page, write_page
from agentenvs.viewer.run import NotARunError, RunData, load_run

__all__ = [
    "load_run",
    "RunData",
    "NotARunError",
    "render_page",
    "write_page",
    "compare_methods",
    "parse_methods",
    "MethodAdvantages",
    "STRUCTURAL_METHODS",
    "state_graph",
    "graph_svg",
    "StateGraph",
]
