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

:class:`FileEditor`, :func:`search` and the editor's limits live in
:mod:`~agentenvs.swe.r2e_files` (with the path confinement they share) and are re-exported here.

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

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentenvs.swe.calls import TIMEOUT_EXIT_CODE, CommandResult, ToolCall
from agentenvs.swe.r2e_files import (
    CLIP_NOTE,
    MAX_EDITOR_CHARS,
    SNIPPET_LINES,
    FileEditor,
    editor_usage_error,
    error_result,
    search,
)

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
#: First tokens ``execute_bash`` refuses (R2E's list; ``cd`` is allowed unless ``compat``).
BLOCKED = ("cd", "ipython", "jupyter", "pip", "nohup")

_DEFAULT_BLOCKED = tuple(word for word in BLOCKED if word != "cd")
# Names stop at ``<`` and values are searched only up to the last ``</parameter>``: the scans
# stay linear in the response's length (R2E's ``[^>]+`` names took seconds on 100 kB of
# unclosed tags).
_FUNCTION = re.compile(r"<function\s*=\s*([^<>]+)>", re.DOTALL)
_PARAMETER = re.compile(r"<parameter\s*=\s*([^<>]+)>(.*?)</parameter>", re.DOTALL)
_PARAMETER_END = "</parameter>"
_BASH_KEPT_LINES = 40
_DIVIDER = "-" * 50
_THOUGHT_LOGGED = "Your thought has been logged."
_FINISH_OUTPUT = "<<<Finished>>>\n"


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
            valid = editor_usage_error(params) is None
        elif name == "search":
            output, _ = search(
                self.root, params, repo_root=self.repo_root, python_only=self.python_only
            )
            valid = bool(params.get("search_term"))
        else:
            output, valid = error_result(
                f"Unknown tool '{name}'. Available tools: {', '.join(TOOLS)}."
            )
        return ToolStep(ToolCall(name, params, output, valid=valid), observation(name, output))

    def _bash(self, params: dict[str, str]) -> ToolStep:
        cmd = params.get("cmd", params.get("command", ""))
        if not cmd.strip():
            output, _ = error_result("Missing required parameter 'cmd' for 'execute_bash'.")
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
