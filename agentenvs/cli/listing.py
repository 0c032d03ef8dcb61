"""``agentenvs list``: the registered env ids and credit methods, one line each.

This module holds :func:`env_rows`, :func:`method_rows`, :func:`format_listing` and the subcommand's
:func:`add_parser` / :func:`run`.

An env's line is the first sentence of its entry point's docstring plus the keyword arguments it
is registered with (so ``SokobanVisual-v0`` reads "Sokoban with text actions. [visual=True]"); a
method's line is the first sentence of its estimator module's docstring, with its aliases.

>>> rows = dict(env_rows())
>>> rows["agentenvs/Sokoban-v0"]
'Sokoban with text actions.'
>>> [(name, aliases) for name, aliases, _ in method_rows() if aliases]
[('graphgpo', ('graph',))]
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

import gymnasium as gym

__all__ = ["env_rows", "method_rows", "format_listing", "add_parser", "run"]


def _first_sentence(doc: str | None, limit: int = 100) -> str:
    """The docstring's first sentence (or paragraph) without reST markup, at most ``limit`` chars."""
    if not doc:
        return ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    paragraph = re.sub(r":\w+:`~?(?:[\w.]+\.)?([\w]+)`", r"\1", paragraph)  # :class:`~a.B` -> B
    paragraph = paragraph.replace("``", "")
    paragraph = re.sub(r"\s*\((?:see )?(?:the )?module doc\)", "", paragraph)
    end = paragraph.find(". ")
    sentence = paragraph if end < 0 else paragraph[: end + 1]
    return sentence if len(sentence) <= limit else sentence[: limit - 3].rstrip() + "..."


def env_rows() -> list[tuple[str, str]]:
    """``(env id, description)`` of every registered ``agentenvs/*`` id, sorted by id."""
    import agentenvs  # noqa: F401  (registers the ids)

    rows = []
    for env_id in sorted(k for k in gym.registry if k.startswith("agentenvs/")):
        spec = gym.registry[env_id]
        entry = spec.entry_point
        try:
            if isinstance(entry, str):
                module, _, attr = entry.partition(":")
                entry = getattr(importlib.import_module(module), attr)
            text = _first_sentence(entry.__doc__)
        except Exception as exc:  # an optional dependency missing: say so, list the id anyway
            text = f"(cannot import its entry point: {type(exc).__name__}: {exc})"
        if spec.kwargs:
            text += " [" + ", ".join(f"{k}={v!r}" for k, v in spec.kwargs.items()) + "]"
        rows.append((env_id, text))
    return rows


def method_rows() -> list[tuple[str, tuple[str, ...], str]]:
    """``(canonical name, aliases, description)`` of every credit method in ``agentenvs.wrappers.registry.METHODS``."""
    from agentenvs.wrappers.registry import METHODS, method_names

    rows = []
    for name in method_names():
        entry = METHODS[name]
        module = sys.modules.get(entry.estimate_batch.__module__)
        rows.append((name, tuple(entry.aliases), _first_sentence(getattr(module, "__doc__", ""))))
    return rows


def format_listing() -> str:
    """The text ``agentenvs list`` prints: an env table, then a credit method table."""
    envs = env_rows()
    methods = method_rows()
    width = max(len(env_id) for env_id, _ in envs)
    lines = ["Environments (gym.make(ID) after `import agentenvs`):"]
    lines += [f"  {env_id:<{width}}  {text}" for env_id, text in envs]
    lines += ["", "Credit methods (agentenvs.wrappers.registry.METHODS; aliases in brackets):"]
    names = [name + (f" [{', '.join(aliases)}]" if aliases else "") for name, aliases, _ in methods]
    width = max(map(len, names))
    lines += [f"  {n:<{width}}  {text}" for n, (_, _, text) in zip(names, methods, strict=True)]
    return "\n".join(lines)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    subparsers.add_parser(
        "list",
        help="the registered env ids and credit methods",
        description="The registered env ids and credit methods, one line each.",
    )


def run(args: argparse.Namespace) -> int:
    print(format_listing())
    return 0
