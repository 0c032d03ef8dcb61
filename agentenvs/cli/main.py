"""The ``agentenvs`` command: argparse with one subcommand per module.

This module holds :data:`SUBCOMMANDS`, :func:`build_parser` and :func:`main`.

=========  ============================  ====================================================
command    module                        what
=========  ============================  ====================================================
``list``   :mod:`agentenvs.cli.listing`  registered env ids and credit methods
``play``   :mod:`agentenvs.cli.play`     a person plays an env in the terminal
``view``   :mod:`agentenvs.cli.view`     the HTML credit viewer of a run directory
``bench``  :mod:`agentenvs.cli.bench`    random-walk throughput of grouped vector envs
``train``  :mod:`agentenvs.cli.train`    an LLM agent trained on credit-wrapped envs
=========  ============================  ====================================================

A subcommand whose parser sets the default ``passthrough=True`` (``train``) parses its own
arguments: everything after its name reaches its ``run`` as ``args.argv``.

Exit status: 0 on success; 2 for a usage error (bad arguments, an unknown env id, a directory
that is not a run), with a one-line message on stderr instead of a traceback; 130 on Ctrl-C; 1
when the output pipe closes early.

>>> main(["list"]) == 0  # doctest: +ELLIPSIS
Environments ...
True
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import ModuleType

import gymnasium as gym

from agentenvs.cli import bench, listing, play, train, view
from agentenvs.cli.errors import CLIError
from agentenvs.serve import cli as serve

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

#: name -> module with ``add_parser(subparsers)`` and ``run(args) -> int``.
SUBCOMMANDS: dict[str, ModuleType] = {
    "list": listing,
    "play": play,
    "view": view,
    "bench": bench,
    "train": train,
    "serve": serve,
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``agentenvs`` with every subcommand of :data:`SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="agentenvs",
        description="Gymnasium envs and credit assignment for LLM agents: list, play, view, bench, "
        "train, serve.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in SUBCOMMANDS.values():
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agentenvs`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    try:
        args, rest = parser.parse_known_args(argv)
        if rest and not getattr(args, "passthrough", False):
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
    except SystemExit as exc:  # --help (0) or a usage error (2): argparse printed the message
        return int(exc.code or 0)
    args.argv = rest
    try:
        return SUBCOMMANDS[args.command].run(args)
    except (CLIError, gym.error.Error, ValueError) as exc:
        print(f"agentenvs {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`agentenvs list | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
