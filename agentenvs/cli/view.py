"""``agentenvs view RUN_DIR``: write (and optionally serve) the run's HTML credit viewer page.

This module holds the subcommand's :func:`add_parser` / :func:`run`; the page itself is
:mod:`agentenvs.viewer` (:func:`~agentenvs.viewer.page.write_page`,
:func:`~agentenvs.viewer.serve.serve`).

    agentenvs view runs/sokoban                      # writes runs/sokoban/view.html
    agentenvs view runs/sokoban --serve --port 8000  # and serves it on http://127.0.0.1:8000/
    agentenvs view runs/sokoban --methods grpo,graphgpo --max-groups 20 --out /tmp/page.html

A directory that is not a run (no ``trajectories/`` and no ``metrics.csv``) is a usage error
(exit status 2).
"""

from __future__ import annotations

import argparse

from agentenvs.cli.errors import CLIError
from agentenvs.viewer.compare import STRUCTURAL_METHODS, parse_methods

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "view",
        help="write (and serve) the HTML credit viewer of a run directory",
        description="Write RUN_DIR's credit viewer page: groups with per-step advantages, the "
        "same group under several credit methods, GraphGPO's state graph, the learning curves.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a learner's --out directory")
    p.add_argument("--out", default=None, help="the page (default RUN_DIR/view.html)")
    p.add_argument(
        "--serve", action="store_true", help="serve the page on 127.0.0.1 after writing it"
    )
    p.add_argument("--port", type=int, default=8000, help="port for --serve (default 8000)")
    p.add_argument(
        "--methods",
        default=",".join(STRUCTURAL_METHODS),
        help="credit methods to compare per group, comma-separated (default %(default)s)",
    )
    p.add_argument("--max-groups", type=int, default=50, help="newest groups shown (default 50)")


def run(args: argparse.Namespace) -> int:
    from agentenvs.viewer.page import write_page
    from agentenvs.viewer.serve import serve

    methods = parse_methods(args.methods)
    try:
        path = write_page(args.run_dir, args.out, methods=methods, max_groups=args.max_groups)
    except OSError as exc:  # e.g. --out names a directory or an unwritable place
        raise CLIError(f"cannot write the page: {exc}") from None
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)", flush=True)
    if args.serve:
        return serve(path, args.port)
    return 0
