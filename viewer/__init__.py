"""viewer: the HTML credit viewer of a run directory (``agentenvs view RUN_DIR``; docs/viewer.md).

This package holds:

* :mod:`viewer.run` - :func:`load_run` (a run directory's stored groups and ``metrics.csv``),
  :class:`RunData`, :class:`NotARunError`.
* :mod:`viewer.page` - :func:`render_page` and :func:`write_page`: the single self-contained HTML
  page (inline CSS, JS and SVG; works offline from ``file://``).
* :mod:`viewer.compare` - :func:`compare_methods`: one group's advantages under several credit
  methods (stored, or recomputed on a copy).
* :mod:`viewer.graph` - :func:`state_graph` and :func:`graph_svg`: GraphGPO's state graph of a
  group as inline SVG.
* :mod:`viewer.colors` - the diverging advantage colour scale.
* :mod:`viewer.serve` - serving the page on 127.0.0.1 (``http.server``).
* :mod:`viewer.screenshot` - headless Chromium and ``python -m viewer.screenshot RUN_DIR OUT.png``.

Layering: viewer imports agentenvs and wrappers, never learners; only cli imports viewer.
"""

from viewer.compare import STRUCTURAL_METHODS, MethodAdvantages, compare_methods, parse_methods
from viewer.graph import StateGraph, graph_svg, state_graph
from viewer.page import render_page, write_page
from viewer.run import NotARunError, RunData, load_run

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
