"""The ``r2e`` toolset of SWE-v0: R2E-Gym's agent tools, reproduced on a host directory.

This module holds:

* :func:`parse_call` - R2E's ``<function=NAME><parameter=KEY>VALUE</parameter></function>`` call
  format (and OpenAI-style JSON calls), with :data:`ALIASES` and :data:`TOOLS`.
* :class:`FileEditor` - ``file_editor`` (``view``, ``create``, ``str_replace``, ``insert``,
  ``undo_edit``), done in Python on the workspace directory and confined to it.
* :func:`search` - the ``search`` tool.
* :func:`blocked` and :func:`bash_output` - ``execute_bash``'s refusal and output layout.
* :func:`observation` - the wrapper that turns a tool's output into what the agent reads next.
* :class:`R2ETools` and :class:`ToolStep` - one model response in, one observation out.
* the agent-visible strings (:data:`CONTINUE_MESSAGE`, :data:`FINISHED`, :data:`CLIP_NOTE`) and
  limits (:data:`MAX_EDITOR_CHARS`, :data:`SNIPPET_LINES`, :data:`BLOCKED`), and the
  :data:`Runner` type of the shell callable.

Every output is R2E-Gym's text byte for byte (docs/swe.md); a tool output ends with the newline
that R2E's ``print`` adds. The agent sees the workspace as ``/testbed``: ``/testbed/x`` and a
relative ``x`` name ``root/x``; a path that resolves (symlinks followed) outside ``root`` is
refused and nothing outside ``root`` is ever read or written.

SDK choices that ``compat=True`` turns back into R2E's behaviour:

* parameter values lose one leading and one trailing newline (R2E: ``strip()``), and only the
  parameters of the first call count (R2E: every ``<parameter=...>`` of the response);
* ``cd`` is not blocked (R2E blocks ``cd, ipython, jupyter, pip, nohup``);
* ``python_only`` (no non-``.py`` views, directory listings and searches restricted to ``.py``)
  and ``auto_concise`` (condensed view of ``.py`` files over 110 lines) are off;
* ``str_replace``/``insert`` keep tabs (R2E expands every tab of the edited file);
* the ``execute_bash`` exit code is the integer (R2E: ``0``, ``Error: Exit code N``, ``-1`` when
  timed out, where an exit status of 124 also counts as a timeout).

SDK choices in both modes: directory listings and search results are sorted by name (R2E prints
``find``'s and ``os.walk``'s directory order, which depends on the file system); ``search``
matches the term as a fixed substring (R2E's single-file mode runs ``grep`` with a basic regular
expression); errors are ``ERROR: {message}`` without R2E's occasional leading empty line; missing
or garbled parameters get explicit errors where R2E's scripts would crash.
Function and parameter names end at ``<`` (R2E: at ``>``), which keeps parsing linear in the
response's length.

Odd input never raises: file names and contents that are not UTF-8 are shown with U+FFFD for
each invalid byte (``errors="replace"``; the edit commands refuse such files, ``view`` and
``search`` show them); a path holding a NUL byte, a name the file system cannot encode or a link
chain too long to resolve is an ``ERROR:`` line; FIFOs, sockets and device files are never
opened (``view`` and edits refuse them, ``search`` skips them); listings and searches walk trees of
any depth.

>>> parse_call("I look first.\\n<function=str_replace_editor>\\n"
...            "<parameter=command>view</parameter>\\n<parameter=path>/testbed</parameter>\\n</function>")
('file_editor', {'command': 'view', 'path': '/testbed'})
>>> observation("execute_bash", bash_output(CommandResult(0, "hi\\n")), exit_code=0)
'Exit code: 0\\nExecution output of [execute_bash]:\\n[STDOUT]\\n\\nhi \\n\\n[STDERR]\\n\\n\\n'
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agentenvs.swe.calls import TIMEOUT_EXIT_CODE, CommandResult, ToolCall
from agentenvs.swe.workspace import adopt

__all__ = [
    "ALIASES",
    "BLOCKED",
    "CLIP_NOTE",
    "CONTINUE_MESSAGE",
    "FINISHED",
    "MAX_EDITOR_CHARS",
    "SNIPPET_LINES",
    "TOOLS",
    "FileEditor",
    "R2ETools",
    "Runner",
    "ToolStep",
    "bash_output",
    "blocked",
    "observation",
    "parse_call",
    "search",
]

#: Runs one shell command in ``/testbed`` with a timeout in seconds (the sandbox's ``run``).
Runner = Callable[[str, float], CommandResult]

#: Canonical tool names.
TOOLS = ("file_editor", "search", "execute_bash", "think", "finish")
#: Other scaffolds' names for the same tools (OpenHands, SWE-agent).
ALIASES = {"str_replace_editor": "file_editor", "bash": "execute_bash", "submit": "finish"}

#: The observation when a response holds no function call (R2E's ``CONTINUE_MSG``).
CONTINUE_MESSAGE = (
    "\nYou forgot to use a function call in your response. \n"
    "YOU MUST USE A FUNCTION CALL IN EACH RESPONSE.\n\n"
    "IMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n"
)
#: The observation after ``finish``.
FINISHED = "<<< Finished >>>"
#: Appended to a ``file_editor`` output cut at :data:`MAX_EDITOR_CHARS`.
CLIP_NOTE = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. "
    "You should retry this tool after you have searched inside the file with `grep -n` in order "
    "to find the line numbers of what you are looking for.</NOTE>"
)
MAX_EDITOR_CHARS = 10_000
#: Lines of context around an edit in the ``str_replace``/``insert`` snippet.
SNIPPET_LINES = 4
#: First tokens ``execute_bash`` refuses (R2E's list; ``cd`` is allowed unless ``compat``).
BLOCKED = ("cd", "ipython", "jupyter", "pip", "nohup")

_DEFAULT_BLOCKED = tuple(word for word in BLOCKED if word != "cd")
_EDITOR_COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")
# Names stop at ``<`` and values are searched only up to the last ``</parameter>``: the scans
# stay linear in the response's length (R2E's ``[^>]+`` names took seconds on 100 kB of
# unclosed tags).
_FUNCTION = re.compile(r"<function\s*=\s*([^<>]+)>", re.DOTALL)
_PARAMETER = re.compile(r"<parameter\s*=\s*([^<>]+)>(.*?)</parameter>", re.DOTALL)
_PARAMETER_END = "</parameter>"
#: Characters ``os.fsencode`` cannot turn into bytes (it maps only ``\\udc80``-``\\udcff`` back).
_UNENCODABLE = re.compile("[\ud800-\udc7f]")
_BASH_KEPT_LINES = 40
_DIVIDER = "-" * 50
_AUTO_CONCISE_LINES = 110
_THOUGHT_LOGGED = "Your thought has been logged."
_FINISH_OUTPUT = "<<<Finished>>>\n"
_CONCISE_HEADER = (
    "Here is a condensed view for file: {p}; [Note: Useful for understanding file structure in a "
    "concise manner. Please use specific view_range without concise cmd if you want to explore "
    "further into the relevant parts.]\n"
)


@dataclass(frozen=True)
class ToolStep:
    """The outcome of one model response.

    Attributes:
        call: the parsed call with the raw tool output as ``result`` (``ToolCall("", valid=False)``
            when no call parsed).
        observation: what the agent reads next.
        finished: the response ended the episode (``finish``, or mini's submit marker).
        timed_out: the shell command hit its timeout.
    """

    call: ToolCall
    observation: str
    finished: bool = False
    timed_out: bool = False


# --------------------------------------------------------------------------------- parsing


def parse_call(response: str, *, compat: bool = False) -> tuple[str, dict[str, str]] | None:
    """Parse the first tool call of ``response``: ``(canonical name, parameters)`` or ``None``.

    A response that is (once stripped) a JSON object is read as an OpenAI-style call,
    ``{"name", "arguments"}`` or ``{"tool_calls": [{"function": {...}}]}``; non-string argument
    values become their JSON text. Otherwise R2E's XML-like format is used.

    >>> parse_call("<function=execute_bash>\\n<parameter=cmd>\\nls -a\\n</parameter>\\n</function>")
    ('execute_bash', {'cmd': 'ls -a'})
    >>> parse_call('{"name": "bash", "arguments": "{\\\\"cmd\\\\": \\\\"ls\\\\"}"}')
    ('execute_bash', {'cmd': 'ls'})
    >>> parse_call("no call here") is None
    True
    """
    json_call = _parse_json_call(response)
    if json_call is not None:
        return json_call
    function = _FUNCTION.search(response)
    if function is None or not function.group(1).strip():
        return None
    name = function.group(1).strip()
    params: dict[str, str] = {}
    end = response.rfind(_PARAMETER_END) + len(_PARAMETER_END)
    if compat:
        for key, value in _PARAMETER.findall(response, 0, end):
            params[key.strip()] = value.strip()
    else:
        pos = function.end()
        while (match := _PARAMETER.search(response, pos, end)) is not None:
            gap = response[pos : match.start()]
            if "</function>" in gap or _FUNCTION.search(gap):
                break
            params[match.group(1).strip()] = _trim_newline(match.group(2))
            pos = match.end()
    return ALIASES.get(name, name), params


def _trim_newline(value: str) -> str:
    """Drop one leading and one trailing newline."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value


def _parse_json_call(response: str) -> tuple[str, dict[str, str]] | None:
    text = response.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        call = json.loads(text)
        calls = call.get("tool_calls") if isinstance(call, dict) else None
        if isinstance(calls, list) and calls:
            call = calls[0]
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            call = call["function"]
        if not isinstance(call, dict):
            return None
        name = call.get("name")
        if not isinstance(name, str) or not name.strip():
            return None
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = {}
        if not isinstance(arguments, dict):
            arguments = {}
        params = {
            str(key): value if isinstance(value, str) else json.dumps(value)
            for key, value in arguments.items()
        }
    except (ValueError, TypeError, RecursionError):
        return None
    return ALIASES.get(name.strip(), name.strip()), params


# --------------------------------------------------------------------------- path handling


class _Workspace:
    """Maps agent paths (``/testbed/...`` or relative to it) to real paths inside ``root``."""

    def __init__(self, root: Path, repo_root: str) -> None:
        self.root = os.path.realpath(root)
        self.repo_root = posixpath.normpath(repo_root)

    def locate(self, given: str) -> str | None:
        """The real host path of ``given``, or ``None`` when it lies outside the workspace or
        cannot be resolved (see :func:`_realpath`)."""
        if "\x00" in given:
            return None
        full = posixpath.normpath(posixpath.join(self.repo_root, given))
        if full != self.repo_root and not full.startswith(self.repo_root.rstrip("/") + "/"):
            return None
        real = _realpath(os.path.join(self.root, posixpath.relpath(full, self.repo_root)))
        return real if real is not None and self.inside(real) else None

    def inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root.rstrip(os.sep) + os.sep)

    def agent_path(self, real: str) -> str:
        """The ``/testbed`` path of a real path inside the workspace."""
        rel = os.path.relpath(real, self.root)
        return self.repo_root if rel == "." else posixpath.join(self.repo_root, *rel.split(os.sep))

    def outside(self, given: str) -> str:
        if "\x00" in given:
            return "The path holds a NUL byte, which no file name can contain."
        if _UNENCODABLE.search(given):
            return "The path holds characters that no file name can hold (lone surrogates)."
        return (
            f"The path '{given}' is outside the repository. "
            f"File tools only work on paths under {self.repo_root}."
        )

    def sanitize(self, message: str) -> str:
        """Replace the host root by the agent's view of it."""
        return message.replace(self.root, self.repo_root)


def _realpath(path: str) -> str | None:
    """``os.path.realpath``, or ``None`` for a path it cannot resolve: a name the file system
    cannot encode (a lone high surrogate) or a chain of links deeper than Python's recursion
    limit (``realpath`` follows links recursively)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError, RecursionError):
        return None


def _is_regular(real: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(real).st_mode)
    except (OSError, ValueError):
        return False


def _decode(data: bytes, *, strict: bool) -> str | None:
    """UTF-8 text with universal newlines (as ``Path.read_text``); ``None`` if ``strict`` and the
    bytes are not NUL-free UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if strict:
            return None
        text = data.decode("utf-8", errors="replace")
    if strict and "\x00" in text:
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _clip(text: str) -> str:
    return text if len(text) <= MAX_EDITOR_CHARS else text[:MAX_EDITOR_CHARS] + CLIP_NOTE


def _error(message: str) -> tuple[str, bool]:
    return f"ERROR: {message}\n", False


# ------------------------------------------------------------------------------ file_editor


def _parse_view_range(raw: str) -> list[int] | None:
    """``"[10, 20]"``, ``"10,20"``, ``"(10 20)"`` -> ``[10, 20]``; ``None`` if not two integers."""
    parts = raw.strip().strip("[]()").replace(",", " ").split()
    try:
        return [int(parts[0]), int(parts[1])] if len(parts) == 2 else None
    except ValueError:
        return None


def _parse_int(raw: str) -> int | None:
    try:
        return int(raw.strip())
    except ValueError:
        return None


def _editor_usage_error(params: Mapping[str, str]) -> str | None:
    """The message for a ``file_editor`` call that lacks or garbles a parameter, else ``None``."""
    command = params.get("command", "").strip()
    if not command:
        return "Missing required parameter 'command' for 'file_editor'."
    if command not in _EDITOR_COMMANDS:
        return (
            f"Unrecognized command '{command}'. "
            "Allowed commands: view, create, str_replace, insert, undo_edit."
        )
    if not params.get("path", "").strip():
        return f"Missing required parameter 'path' for '{command}'."
    if command == "create" and params.get("file_text") is None:
        return "Cannot create file without 'file_text' parameter."
    if command == "str_replace" and params.get("old_str") is None:
        return "Missing required parameter 'old_str' for 'str_replace'."
    if command == "insert":
        if params.get("new_str") is None:
            return "Missing required parameter 'new_str' for 'insert'."
        raw = params.get("insert_line")
        if raw is None or not raw.strip():
            return "Missing required parameter 'insert_line' for 'insert'."
        if _parse_int(raw) is None:
            return f"Invalid insert_line '{raw}'. Must be an integer."
    raw_range = params.get("view_range", "")
    if command == "view" and raw_range.strip() and _parse_view_range(raw_range) is None:
        return f"Invalid view_range '{raw_range}'. Expected two integers, e.g. [10, 20]."
    return None


class FileEditor:
    """R2E-Gym's ``file_editor`` on the workspace ``root`` (seen by the agent as ``repo_root``).

    ``editor(params)`` returns ``(output, ok)``; ``ok`` is false for an ``ERROR: ...`` output.
    After each call :attr:`changed` holds the repository-relative paths the call wrote. The undo
    history is one stack per file, kept for the editor's lifetime. ``compat`` expands tabs in
    edited files as R2E does.
    """

    def __init__(
        self,
        root: Path,
        *,
        repo_root: str = "/testbed",
        python_only: bool = False,
        auto_concise: bool = False,
        compat: bool = False,
    ) -> None:
        self.workspace = _Workspace(root, repo_root)
        self.python_only = python_only
        self.auto_concise = auto_concise
        self.compat = compat
        self.history: dict[str, list[str]] = {}
        self.changed: tuple[str, ...] = ()

    def __call__(self, params: Mapping[str, str]) -> tuple[str, bool]:
        self.changed = ()
        usage = _editor_usage_error(params)
        if usage is not None:
            return _error(usage)
        command = params["command"].strip()
        given = params["path"].strip()
        shown = str(PurePosixPath(given))
        real = self.workspace.locate(given)
        if real is None:
            return _error(self.workspace.outside(shown))
        try:
            return self._run(command, real, shown, params)
        except Exception as exc:  # R2E reports any failure as an ERROR line
            return _error(self.workspace.sanitize(f"Unhandled exception: {exc}"))

    def _run(
        self, command: str, real: str, shown: str, params: Mapping[str, str]
    ) -> tuple[str, bool]:
        exists = os.path.exists(real)
        if command == "create" and exists:
            return _error(f"File already exists at: {shown}. Cannot overwrite with 'create'.")
        if command != "create" and not exists:
            return _error(f"The path '{shown}' does not exist.")
        if os.path.isdir(real):
            if command != "view":
                return _error(
                    f"The path '{shown}' is a directory. Only 'view' can be used on directories."
                )
            return self._listing(real, shown)
        if exists and not _is_regular(real):
            return _error(f"The path '{shown}' is not a regular file.")
        if command == "view":
            return self._view(real, shown, params)
        if command == "create":
            return self._create(real, shown, params["file_text"])
        if command == "undo_edit":
            return self._undo(real, shown)
        text = _decode(Path(real).read_bytes(), strict=True)
        if text is None:
            return _error(
                f"The file {shown} is not a UTF-8 text file; file_editor cannot edit it. "
                "Use execute_bash instead."
            )
        if self.compat:
            text = text.expandtabs()
        if command == "str_replace":
            return self._str_replace(real, shown, text, params["old_str"], params.get("new_str"))
        insert_line = _parse_int(params["insert_line"])
        assert insert_line is not None  # checked by _editor_usage_error
        return self._insert(real, shown, text, insert_line, params["new_str"])

    # -- commands

    def _listing(self, real: str, shown: str) -> tuple[str, bool]:
        """``find -L {p} -maxdepth 2 -not -path '*/.*'`` (``python_only``: ``\\( -type d -o
        -name '*.py' \\)``) in pre-order, entries of a directory sorted by name."""
        found: list[str] = []

        def visit(name: str, path: str, depth: int) -> None:
            if "/." in name:  # -not -path '*/.*' (everything below a hidden path is hidden too)
                return
            target = _realpath(path)
            is_dir = target is not None and self.workspace.inside(target) and os.path.isdir(target)
            base = posixpath.basename(name)
            if not self.python_only or is_dir or fnmatch.fnmatchcase(base, "*.py"):
                found.append(name)
            if is_dir and depth < 2:
                try:
                    entries = sorted(os.listdir(target))
                except OSError:
                    return
                for entry in entries:
                    visit(f"{name}/{entry}", os.path.join(target, entry), depth + 1)

        visit(shown, real, 0)
        message = (
            f"Here's the files and directories up to 2 levels deep in {shown}, excluding hidden:\n"
            + "".join(f"{line}\n" for line in found)
        )
        return _clip(message) + "\n", True

    def _view(self, real: str, shown: str, params: Mapping[str, str]) -> tuple[str, bool]:
        path = PurePosixPath(shown)
        if self.python_only and path.suffix != ".py":
            return _error(
                "Viewing non-Python files is disallowed for saving context. "
                f"File '{path.name}' is not a .py file."
            )
        raw_range = params.get("view_range", "")
        view_range = _parse_view_range(raw_range) if raw_range.strip() else None
        concise = params.get("concise", "").strip().lower() in ("true", "1", "yes")
        text = _decode(Path(real).read_bytes(), strict=False) or ""
        is_python = path.suffix == ".py"
        if is_python and self.auto_concise and not view_range and not concise:
            concise = len(text.splitlines()) > _AUTO_CONCISE_LINES
        if is_python and concise:
            lines = _elided_lines(text, shown)
            if isinstance(lines, str):
                return _error(lines)
        else:
            lines = list(enumerate(text.splitlines()))
        if view_range:
            start, end = view_range
            total = len(lines)
            if not 1 <= start <= total:
                return _error(
                    f"Invalid view_range {view_range}: start line must be in [1, {total}]"
                )
            if end != -1 and (end < start or end > total):
                return _error(
                    f"Invalid view_range {view_range}: end must be >= start and <= {total}, "
                    "or -1 to view until end."
                )
            lines = [(i, t) for i, t in lines if i + 1 >= start and (end == -1 or i + 1 <= end)]
        if concise:
            header = _CONCISE_HEADER.format(p=shown)
        else:
            header = f"Here's the result of running `cat -n` on the file: {shown}:\n"
        body = "\n".join(f"{i + 1:6d} {line}" for i, line in lines)
        return _clip(header + body) + "\n", True

    def _create(self, real: str, shown: str, file_text: str) -> tuple[str, bool]:
        try:
            Path(real).write_bytes(file_text.encode("utf-8", errors="replace"))
        except OSError as exc:
            reason = f"[Errno {exc.errno}] {exc.strerror}: '{shown}'"
            return _error(f"Error creating file at {shown}: {reason}")
        self._record(real, "")
        return (
            f"File created at {shown}. "
            + _numbered(file_text, shown)
            + "Review the file and make sure that it is as expected. Edit the file if necessary.\n",
            True,
        )

    def _str_replace(
        self, real: str, shown: str, text: str, old: str, new: str | None
    ) -> tuple[str, bool]:
        new = new or ""
        if self.compat:
            old, new = old.expandtabs(), new.expandtabs()
        occurrences = text.count(old)
        if occurrences == 0:
            return _error(f"No occurrences of '{old}' found in {shown} for replacement.")
        if occurrences > 1:
            return _error(
                f"Multiple occurrences of '{old}' found in {shown}. "
                "Please ensure it is unique before using str_replace."
            )
        updated = text.replace(old, new)
        self._write(real, updated, previous=text)
        line = text[: text.find(old)].count("\n")
        start = max(0, line - SNIPPET_LINES)
        end = line + SNIPPET_LINES + new.count("\n")
        snippet = "\n".join(updated.split("\n")[start : end + 1])
        return (
            f"The file {shown} has been edited. "
            + _numbered(snippet, f"a snippet of {shown}", start + 1)
            + "Review the changes and make sure they are as expected. "
            "Edit the file again if necessary.\n",
            True,
        )

    def _insert(
        self, real: str, shown: str, text: str, insert_line: int, new: str
    ) -> tuple[str, bool]:
        if self.compat:
            new = new.expandtabs()
        lines = text.split("\n")
        if not 0 <= insert_line <= len(lines):
            return _error(f"Invalid insert_line {insert_line}. Must be in [0, {len(lines)}].")
        new_lines = new.split("\n")
        updated = "\n".join(lines[:insert_line] + new_lines + lines[insert_line:])
        self._write(real, updated, previous=text)
        snippet = "\n".join(
            lines[max(0, insert_line - SNIPPET_LINES) : insert_line]
            + new_lines
            + lines[insert_line : insert_line + SNIPPET_LINES]
        )
        return (
            f"The file {shown} has been edited. "
            + _numbered(
                snippet, "a snippet of the edited file", max(1, insert_line - SNIPPET_LINES + 1)
            )
            + "Review the changes and make sure they are as expected (correct indentation, "
            "no duplicate lines, etc). Edit the file again if necessary.\n",
            True,
        )

    def _undo(self, real: str, shown: str) -> tuple[str, bool]:
        stack = self.history.get(real)
        if not stack:
            return _error(f"No previous edits found for {shown} to undo.")
        previous = stack.pop()
        Path(real).write_bytes(previous.encode("utf-8", errors="replace"))
        adopt(real, self.workspace.root)  # a re-created file stays the sandbox user's
        self.changed = (self._relative(real),)
        output = f"Last edit to {shown} undone successfully. " + _numbered(previous, shown)
        return output + "\n", True

    # -- helpers

    def _write(self, real: str, text: str, *, previous: str) -> None:
        Path(real).write_bytes(text.encode("utf-8", errors="replace"))
        self._record(real, previous)

    def _record(self, real: str, previous: str) -> None:
        adopt(real, self.workspace.root)  # a file the host created stays the sandbox user's
        self.history.setdefault(real, []).append(previous)
        self.changed = (self._relative(real),)

    def _relative(self, real: str) -> str:
        return Path(os.path.relpath(real, self.workspace.root)).as_posix()


def _numbered(content: str, descriptor: str, first_line: int = 1) -> str:
    """R2E's ``_make_output``: clipped, tabs expanded, ``cat -n``-numbered with a tab."""
    lines = _clip(content).expandtabs().split("\n")
    numbered = "\n".join(f"{i + first_line:6}\t{line}" for i, line in enumerate(lines))
    return f"Here's the result of running `cat -n` on {descriptor}:\n{numbered}\n"


def _elided_lines(text: str, shown: str) -> list[tuple[int, str]] | str:
    """R2E's concise view: ``(0-based line, text)`` rows with function bodies of four or more
    lines and class docstrings of five or more lines replaced by ``... eliding lines a-b ...``;
    an error message if the file does not parse."""
    try:
        tree = ast.parse(text, filename=shown)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"Syntax error for file {shown}: {exc}"
    ranges: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            body_start = node.body[0].lineno - 1
            body_end = (node.body[-1].end_lineno or node.body[-1].lineno) - 1
            if body_end - body_start >= 3:
                ranges.append((body_start, body_end))
        if isinstance(node, ast.ClassDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                doc_start, doc_end = first.lineno - 1, (first.end_lineno or first.lineno) - 1
                if doc_end - doc_start >= 4:
                    ranges.append((doc_start + 1, doc_end - 1))
    elided = {line for start, end in ranges for line in range(start, end + 1)}
    rows = [(start, f"... eliding lines {start + 1}-{end + 1} ...") for start, end in ranges]
    rows += [(i, line) for i, line in enumerate(text.splitlines()) if i not in elided]
    rows.sort(key=lambda row: row[0])
    return rows


# ----------------------------------------------------------------------------------- search


def search(
    root: Path,
    params: Mapping[str, str],
    *,
    repo_root: str = "/testbed",
    python_only: bool = False,
) -> tuple[str, bool]:
    """R2E-Gym's ``search`` tool: ``(output, ok)``.

    ``path`` (default ``.``) names a file (``grep -n``-style ``N:line`` rows) or a directory
    (matching-line counts per non-hidden file, recursively, paths relative to ``repo_root``;
    ``python_only`` restricts it to ``.py`` files, as R2E's tool does). The term is a fixed
    substring; files are visited in name order.
    """
    workspace = _Workspace(root, repo_root)
    term = params.get("search_term")
    if not term:
        return _error("Missing required parameter 'search_term' for 'search'.")
    given = params.get("path", "").strip() or "."
    real = workspace.locate(given)
    if real is None:
        return _error(workspace.outside(str(PurePosixPath(given))))
    shown = workspace.agent_path(real)
    if os.path.isfile(real):
        if not _is_regular(real):
            return f"File '{shown}' not found or is not a file.\n", False
        return _search_file(real, shown, term), True
    if not os.path.isdir(real):
        return f"Directory '{shown}' not found or not a directory.\n", False
    counts: dict[str, int] = {}
    for path in _tree_files(real):
        if python_only and not path.endswith(".py"):
            continue
        target = _realpath(path)
        if target is None or not workspace.inside(target) or not _is_regular(target):
            continue
        try:
            data = Path(target).read_bytes()
        except OSError:
            continue
        text = data.decode("utf-8", errors="ignore")
        if term in text:
            count = sum(term in line for line in _universal_lines(text))
            if count:
                counts[os.path.relpath(path, workspace.root)] = count
    if not counts:
        return f'No matches found for "{term}" in {shown}\n', True
    if len(counts) > 100:
        return (
            f'More than {len(counts)} files matched for "{term}" in {shown}. '
            "Please narrow your search.\n",
            True,
        )
    lines = [f'Found {sum(counts.values())} matches for "{term}" in {shown}:']
    lines += [f"./{Path(rel).as_posix()} ({count} matches)" for rel, count in counts.items()]
    lines.append(f'End of matches for "{term}" in {shown}')
    return "".join(f"{line}\n" for line in lines), True


def _tree_files(top: str) -> Iterator[str]:
    """The paths of the non-hidden non-directories under ``top`` in ``os.walk``'s order with
    sorted names (a directory's files, then its subdirectories; links to directories are yielded,
    not entered), without recursion, so any depth works; unreadable directories are skipped."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        subdirs = []
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                subdirs.append(path)
            else:
                yield path
        stack.extend(reversed(subdirs))


def _universal_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _search_file(real: str, shown: str, term: str) -> str:
    text = Path(real).read_bytes().decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows = [f"{n}:{line}" for n, line in enumerate(lines, 1) if term in line]
    if not rows:
        return f'No matches found for "{term}" in {shown}\n'
    return f'Matches for "{term}" in {shown}:\n' + "\n".join(rows).strip() + "\n"


# ------------------------------------------------------------------------------ execute_bash


def blocked(cmd: str, *, compat: bool = False) -> str | None:
    """The refusal text when the command's first token is blocked, else ``None``.

    >>> blocked("pip install numpy")
    "Bash command 'pip' is not allowed. Please use a different command or tool."
    >>> blocked("cd src && ls") is None, blocked("cd src && ls", compat=True) is None
    (True, False)
    """
    tokens = cmd.split()
    if tokens and tokens[0] in (BLOCKED if compat else _DEFAULT_BLOCKED):
        return f"Bash command '{tokens[0]}' is not allowed. Please use a different command or tool."
    return None


def _timed_out(exit_code: int | None, timed_out: bool, compat: bool) -> bool:
    """R2E takes exit status 124 for its ``timeout`` wrapper firing."""
    return timed_out or (compat and exit_code == TIMEOUT_EXIT_CODE)


def bash_output(
    result: CommandResult, *, compat: bool = False, timeout: float | None = None
) -> str:
    """The text R2E's ``execute_bash`` prints for ``result``.

    ``timeout`` (seconds; default ``result.seconds``) fills the timeout message.

    >>> bash_output(CommandResult(2, "", "ls: cannot access 'x'\\n"))
    "Error executing command:\\n\\n[STDOUT]\\n\\n \\n\\n[STDERR]\\n\\nls: cannot access 'x'\\n"
    """
    if _timed_out(result.exit_code, result.timed_out, compat):
        seconds = result.seconds if timeout is None else timeout
        return f"The command took too long to execute (>{seconds:g}s)"
    text = f"[STDOUT]\n\n{result.stdout.strip()} \n\n[STDERR]\n\n{result.stderr.strip()}\n"
    return text if result.exit_code == 0 else "Error executing command:\n\n" + text


def observation(
    tool: str,
    output: str,
    *,
    exit_code: int | None = None,
    compat: bool = False,
    timed_out: bool = False,
) -> str:
    """What the agent reads after ``tool`` printed ``output`` (R2E's ``Observation``).

    An ``execute_bash`` output of more than 80 lines keeps its first and last 40.

    >>> observation("", "")[:40]
    '\\nYou forgot to use a function call in yo'
    >>> observation("execute_bash", "boom", exit_code=2, compat=True)
    'Exit code: Error: Exit code 2\\nExecution output of [execute_bash]:\\nboom'
    """
    if not tool:
        return CONTINUE_MESSAGE
    if tool == "finish":
        return FINISHED
    if tool != "execute_bash":
        return f"Execution output of [{tool}]:\n{output}"
    code = 0 if exit_code is None else exit_code
    if compat:
        if _timed_out(exit_code, timed_out, compat):
            label = "-1"
        else:
            label = "0" if code == 0 else f"Error: Exit code {code}"
    else:
        label = str(code)
    lines = output.splitlines() if output else []
    if len(lines) > 2 * _BASH_KEPT_LINES:
        output = (
            "\n".join(lines[:_BASH_KEPT_LINES])
            + f"\n{_DIVIDER}\n<Observation truncated in middle for saving context>\n{_DIVIDER}\n"
            + "\n".join(lines[-_BASH_KEPT_LINES:])
        )
    return f"Exit code: {label}\nExecution output of [execute_bash]:\n{output}"


# ------------------------------------------------------------------------------------ tools


class R2ETools:
    """The ``r2e`` toolset over the workspace ``root``; shell commands go through ``run``.

    ``python_only`` and ``auto_concise`` default to ``compat`` (R2E turns both on).
    """

    def __init__(
        self,
        root: Path,
        run: Runner,
        *,
        timeout: float = 60.0,
        compat: bool = False,
        python_only: bool | None = None,
        auto_concise: bool | None = None,
        repo_root: str = "/testbed",
    ) -> None:
        self.root = Path(root)
        self.run = run
        self.timeout = timeout
        self.compat = compat
        self.repo_root = repo_root
        self.python_only = compat if python_only is None else python_only
        self.editor = FileEditor(
            self.root,
            repo_root=repo_root,
            python_only=self.python_only,
            auto_concise=compat if auto_concise is None else auto_concise,
            compat=compat,
        )

    def step(self, response: str) -> ToolStep:
        """Parse ``response``, run its first call and wrap the output."""
        self.editor.changed = ()
        parsed = parse_call(response, compat=self.compat)
        if parsed is None:
            return ToolStep(ToolCall("", {}, "", valid=False), CONTINUE_MESSAGE)
        name, params = parsed
        if name == "finish":
            return ToolStep(ToolCall(name, params, _FINISH_OUTPUT), FINISHED, finished=True)
        if name == "execute_bash":
            return self._bash(params)
        if name == "think":
            output, valid = _THOUGHT_LOGGED, True
        elif name == "file_editor":
            output, _ = self.editor(params)
            valid = _editor_usage_error(params) is None
        elif name == "search":
            output, _ = search(
                self.root, params, repo_root=self.repo_root, python_only=self.python_only
            )
            valid = bool(params.get("search_term"))
        else:
            output, valid = _error(f"Unknown tool '{name}'. Available tools: {', '.join(TOOLS)}.")
        return ToolStep(ToolCall(name, params, output, valid=valid), observation(name, output))

    def _bash(self, params: dict[str, str]) -> ToolStep:
        cmd = params.get("cmd", params.get("command", ""))
        if not cmd.strip():
            output, _ = _error("Missing required parameter 'cmd' for 'execute_bash'.")
            call = ToolCall("execute_bash", params, output, valid=False)
            return ToolStep(call, observation("execute_bash", output, exit_code=1))
        refusal = blocked(cmd, compat=self.compat)
        if refusal is not None:
            output, exit_code, timed_out = refusal + "\n", 1, False
        else:
            result = self.run(cmd, self.timeout)
            output = bash_output(result, compat=self.compat, timeout=self.timeout)
            exit_code, timed_out = result.exit_code, result.timed_out
        text = observation(
            "execute_bash", output, exit_code=exit_code, compat=self.compat, timed_out=timed_out
        )
        call = ToolCall("execute_bash", params, output, exit_code=exit_code)
        return ToolStep(call, text, timed_out=timed_out)
