"""``agentenvs train``: train an LLM agent with multi-turn PPO on credit-wrapped envs.

This module holds the subcommand's :func:`add_parser` / :func:`run`. The flags and the run are
:mod:`agentenvs.learners.llm.cli` (``agentenvs train --help`` lists every flag), imported only when the
command runs, so the other subcommands import neither the learner nor torch. ``agentenvs train``
with no flags is the README's main job, the same run as ``python examples/train_llm.py``.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train an LLM agent on credit-wrapped envs (the main job; --help: every flag)",
        add_help=False,  # --help is the learner's, with every flag
    )
    parser.set_defaults(passthrough=True)  # main() hands the rest of the line over as args.argv


def run(args: argparse.Namespace) -> int:
    from agentenvs.learners.llm.cli import main

    try:
        return main(args.argv, prog="agentenvs train")
    except SystemExit as exc:  # --help (0), a usage error (2, printed) or a one-line message
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return 1
        return int(exc.code or 0)
