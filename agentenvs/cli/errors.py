"""What the subcommands share: their error type and checked env construction.

This module holds :class:`CLIError` (a usage error: ``agentenvs`` prints its message and exits
with status 2), :func:`parse_env_kwargs` (the ``--env-kwargs`` JSON), :func:`check_env_id` and
:func:`make_env` (``gym.make`` with a bad id or keyword reported as a :class:`CLIError`).

>>> parse_env_kwargs('{"max_steps": 3}')
{'max_steps': 3}
>>> parse_env_kwargs("[1]")
Traceback (most recent call last):
...
agentenvs.cli.errors.CLIError: --env-kwargs must be a JSON object, e.g. '{"max_steps": 5}', got '[1]'
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

__all__ = ["CLIError", "parse_env_kwargs", "check_env_id", "make_env"]


class CLIError(Exception):
    """A usage error: a bad id, option or file. The command prints it and exits with 2."""


def parse_env_kwargs(text: str | None) -> dict[str, Any]:
    """The keyword arguments in ``text`` (a JSON object); ``{}`` for ``None`` or empty text."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(f"--env-kwargs is not valid JSON ({exc.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise CLIError(
            f"--env-kwargs must be a JSON object, e.g. '{{\"max_steps\": 5}}', got {text!r}"
        )
    return value


def check_env_id(env_id: str) -> str:
    """``env_id`` if Gymnasium knows it (after ``import agentenvs``), else :class:`CLIError`."""
    import agentenvs  # noqa: F401  (registers the agentenvs/* ids)

    if env_id not in gym.registry:
        ours = sorted(k for k in gym.registry if k.startswith("agentenvs/"))
        raise CLIError(
            f"unknown env id {env_id!r}; registered agentenvs ids: {', '.join(ours)} "
            "(`agentenvs list` describes them)"
        )
    return env_id


def make_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)``; an unknown id or keyword raises :class:`CLIError`."""
    check_env_id(env_id)
    try:
        return gym.make(env_id, **kwargs)
    except TypeError as exc:  # an unknown or badly typed keyword of the env's constructor
        raise CLIError(f"{env_id}: bad --env-kwargs {kwargs}: {exc}") from None
