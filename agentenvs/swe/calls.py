"""The records the SWE environment's parts exchange.

This module holds:

* :class:`CommandResult` - what one sandboxed shell command did (exit code, output, timing).
* :class:`FileChange` - one workspace file that a command created, modified or deleted.
* :class:`ToolCall` - one parsed agent action with its result (RTMC's ``ToolCall``, see
  docs/swe.md), the input of the state and action signatures.

>>> ToolCall("file_editor", {"command": "view", "path": "/testbed/a.py"}).valid
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CommandResult", "FileChange", "ToolCall", "TIMEOUT_EXIT_CODE"]

#: Exit code reported for a command killed by the wall timeout (GNU ``timeout``'s convention).
TIMEOUT_EXIT_CODE = 124


@dataclass(frozen=True)
class CommandResult:
    """One shell command run in a sandbox.

    Attributes:
        exit_code: the command's exit status; :data:`TIMEOUT_EXIT_CODE` when the wall timeout
            killed it; ``128 + n`` when signal ``n`` killed it.
        stdout: standard output (UTF-8, invalid bytes replaced, ANSI colour codes and ``\\r``
            removed), capped at the sandbox's per-stream limit; with ``merge_stderr`` both streams.
        stderr: standard error, same rules; empty when the streams were merged.
        timed_out: the wall timeout expired and the command's process group was killed.
        truncated: a stream exceeded the cap; its text ends with the truncation marker.
        seconds: wall time of the command, seconds.
        refused: set when the sandbox refused to run the command (e.g. the workspace is over its
            size cap); ``stderr`` says why.
    """

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    truncated: bool = False
    seconds: float = 0.0
    refused: bool = False

    @property
    def output(self) -> str:
        """``stdout`` followed by ``stderr`` (one newline between when both are non-empty)."""
        if self.stdout and self.stderr:
            return f"{self.stdout.rstrip(chr(10))}\n{self.stderr}"
        return self.stdout or self.stderr


@dataclass(frozen=True)
class FileChange:
    """A workspace file changed by one command.

    Attributes:
        path: repository-relative POSIX path.
        kind: ``"created"``, ``"modified"`` or ``"deleted"``.
        before_sha1: SHA-1 hex digest of the content before (``None`` when created).
        after_sha1: SHA-1 hex digest of the content after (``None`` when deleted).
    """

    path: str
    kind: str
    before_sha1: str | None
    after_sha1: str | None


@dataclass(frozen=True)
class ToolCall:
    """One agent action, parsed, with its result.

    Attributes:
        name: canonical tool name: ``file_editor``, ``search``, ``execute_bash``, ``think``,
            ``finish``; the raw name (or ``""``) for a call that did not parse.
        arguments: the call's parameters as parsed (strings; ``view_range`` as given).
        result: the tool's output text (before the observation wrapper).
        valid: the call parsed and named a known tool with the parameters it needs.
        exit_code: the shell exit code for ``execute_bash``; ``None`` otherwise.
        fs_changes: workspace files the call changed (bash commands; file_editor edits).
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: str = ""
    valid: bool = True
    exit_code: int | None = None
    fs_changes: tuple[FileChange, ...] = ()
