"""Tests of the SWE-v0 agent toolsets (agentenvs/swe/r2e.py, agentenvs/swe/mini.py): exact strings."""

from __future__ import annotations

import os
import random
import subprocess

import pytest
from swe_golden import BUGGY_CORE as CORE

from agentenvs.swe import mini, r2e
from agentenvs.swe.calls import CommandResult
from agentenvs.swe.mini import (
    FORMAT_ERROR,
    LONG_OUTPUT_WARNING,
    MiniTools,
    is_submission,
    output_observation,
    parse_bash,
)
from agentenvs.swe.r2e import (
    CLIP_NOTE,
    CONTINUE_MESSAGE,
    FINISHED,
    FileEditor,
    R2ETools,
    bash_output,
    blocked,
    observation,
    parse_call,
    search,
)

CORE_PATH = "/testbed/textkit/core.py"


class FakeRunner:
    """Returns canned results and records the commands."""

    def __init__(self, *results: CommandResult) -> None:
        self.results = list(results)
        self.calls: list[tuple[str, float]] = []

    def __call__(self, command: str, timeout: float) -> CommandResult:
        self.calls.append((command, timeout))
        return self.results.pop(0) if self.results else CommandResult(0, "ok\n")


def call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"Let me act.\n<function={name}>\n{body}</function>"


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "textkit").mkdir()
    (tmp_path / "textkit" / "__init__.py").write_text("from .core import chunk, clamp\n")
    (tmp_path / "textkit" / "core.py").write_text(CORE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_core.py").write_text("from textkit import chunk\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return tmp_path


@pytest.fixture
def editor(repo):
    return FileEditor(repo)


def numbered_tab(lines: list[str], first: int = 1) -> str:
    return "\n".join(f"{first + i:6}\t{line}" for i, line in enumerate(lines))


# ------------------------------------------------------------------------------------ parsing


def test_parse_call_multiline_first_call_only():
    response = (
        "Thought.\n<function=file_editor>\n<parameter=command>create</parameter>\n"
        "<parameter=path>/testbed/a.py</parameter>\n<parameter=file_text>\n"
        "def f():\n    return 1\n\n</parameter>\n</function>\n"
        "<function=execute_bash>\n<parameter=cmd>ls</parameter>\n</function>"
    )
    name, params = parse_call(response)
    assert name == "file_editor"
    assert params == {
        "command": "create",
        "path": "/testbed/a.py",
        "file_text": "def f():\n    return 1\n",
    }
    # R2E strips every value fully and collects the parameters of every call.
    name, params = parse_call(response, compat=True)
    assert params["file_text"] == "def f():\n    return 1"
    assert params["cmd"] == "ls"


def test_parse_call_names_aliases_and_failures():
    assert parse_call("<function = bash >\n<parameter= cmd >ls</parameter></function>") == (
        "execute_bash",
        {"cmd": "ls"},
    )
    assert parse_call("<function=submit></function>") == ("finish", {})
    assert parse_call("<function=str_replace_editor>")[0] == "file_editor"
    assert parse_call("I am done, no call.") is None
    assert parse_call("<function= >") is None
    assert parse_call("<parameter=cmd>ls</parameter>") is None
    assert parse_call("  <parameter=x>\n  spaced  \n</parameter><function=think>") == ("think", {})
    assert parse_call("<function=think><parameter=thought>\n  keep  \n</parameter>") == (
        "think",
        {"thought": "  keep  "},
    )


def test_parse_call_json():
    assert parse_call('{"name": "execute_bash", "arguments": {"cmd": "ls"}}') == (
        "execute_bash",
        {"cmd": "ls"},
    )
    tool_calls = (
        '{"tool_calls": [{"type": "function", "function": {"name": "str_replace_editor", '
        '"arguments": "{\\"command\\": \\"view\\", \\"view_range\\": [1, 2], \\"concise\\": true}"}},'
        ' {"function": {"name": "finish", "arguments": "{}"}}]}'
    )
    assert parse_call(tool_calls) == (
        "file_editor",
        {"command": "view", "view_range": "[1, 2]", "concise": "true"},
    )
    assert parse_call('{"name": "bash", "arguments": "not json"}') == ("execute_bash", {})
    assert parse_call('{"answer": 42}') is None
    assert parse_call('{"name": 3}') is None
    assert parse_call("{" * 5000 + "}" * 5000) is None


def test_step_without_call_and_unknown_tool(repo):
    tools = R2ETools(repo, FakeRunner())
    step = tools.step("I think the bug is in chunk.")
    assert step.observation == (
        "\nYou forgot to use a function call in your response. \n"
        "YOU MUST USE A FUNCTION CALL IN EACH RESPONSE.\n\n"
        "IMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n"
    )
    assert step.observation == CONTINUE_MESSAGE
    assert step.call.name == "" and not step.call.valid and not step.finished
    step = tools.step(call("open_file", path="x"))
    assert not step.call.valid
    assert step.observation == (
        "Execution output of [open_file]:\nERROR: Unknown tool 'open_file'. "
        "Available tools: file_editor, search, execute_bash, think, finish.\n"
    )


def test_step_missing_parameters_are_invalid(repo):
    tools = R2ETools(repo, FakeRunner())
    cases = {
        call("file_editor", path=CORE_PATH): "Missing required parameter 'command' for "
        "'file_editor'.",
        call("file_editor", command="view"): "Missing required parameter 'path' for 'view'.",
        call("file_editor", command="delete", path=CORE_PATH): "Unrecognized command 'delete'. "
        "Allowed commands: view, create, str_replace, insert, undo_edit.",
        call("file_editor", command="create", path="/testbed/n.py"): "Cannot create file without "
        "'file_text' parameter.",
        call("file_editor", command="str_replace", path=CORE_PATH): "Missing required parameter "
        "'old_str' for 'str_replace'.",
        call("file_editor", command="insert", path=CORE_PATH, insert_line="1"): "Missing required "
        "parameter 'new_str' for 'insert'.",
        call("file_editor", command="insert", path=CORE_PATH, new_str="x"): "Missing required "
        "parameter 'insert_line' for 'insert'.",
        call("file_editor", command="insert", path=CORE_PATH, new_str="x", insert_line="two"): (
            "Invalid insert_line 'two'. Must be an integer."
        ),
        call("file_editor", command="view", path=CORE_PATH, view_range="1"): "Invalid view_range "
        "'1'. Expected two integers, e.g. [10, 20].",
        call("search", path="/testbed"): "Missing required parameter 'search_term' for 'search'.",
    }
    for response, message in cases.items():
        step = tools.step(response)
        assert not step.call.valid, response
        tool = step.call.name
        assert step.observation == f"Execution output of [{tool}]:\nERROR: {message}\n"
    step = tools.step(call("execute_bash", cmd="  "))
    assert not step.call.valid
    assert step.observation.endswith(
        "ERROR: Missing required parameter 'cmd' for 'execute_bash'.\n"
    )


def test_think_and_finish(repo):
    tools = R2ETools(repo, FakeRunner())
    step = tools.step(call("think", thought="the range starts at 1"))
    assert step.call.valid and step.call.result == "Your thought has been logged."
    assert step.observation == "Execution output of [think]:\nYour thought has been logged."
    step = tools.step(call("finish", command="submit"))
    assert step.finished and step.call.name == "finish" and step.call.valid
    assert step.observation == FINISHED == "<<< Finished >>>"


# ------------------------------------------------------------------------ golden example §8


def test_golden_episode(repo):
    runner = FakeRunner(
        CommandResult(1, "..FF..\n2 failed, 4 passed in 0.02s\n", ""),
        CommandResult(0, "......\n6 passed in 0.01s\n", ""),
    )
    tools = R2ETools(repo, runner)
    step = tools.step(call("file_editor", command="view", path=CORE_PATH))
    lines = step.observation.split("\n")
    assert lines[:3] == [
        "Execution output of [file_editor]:",
        "Here's the result of running `cat -n` on the file: /testbed/textkit/core.py:",
        "     1 def clamp(x, lo, hi):",
    ]
    assert step.call.result == (
        "Here's the result of running `cat -n` on the file: /testbed/textkit/core.py:\n"
        + "\n".join(f"{n:6d} {line}" for n, line in enumerate(CORE.splitlines(), 1))
        + "\n"
    )
    assert lines[-2] == "    14     return [seq[i:i + n] for i in range(1, len(seq), n)]"

    step = tools.step(call("search", search_term="range", path="/testbed/textkit"))
    assert step.call.result == (
        'Found 1 matches for "range" in /testbed/textkit:\n'
        "./textkit/core.py (1 matches)\n"
        'End of matches for "range" in /testbed/textkit\n'
    )
    assert step.observation == "Execution output of [search]:\n" + step.call.result

    step = tools.step(call("execute_bash", cmd="python -m pytest -q tests"))
    assert runner.calls == [("python -m pytest -q tests", 60.0)]
    assert step.call.exit_code == 1
    assert step.observation == (
        "Exit code: 1\nExecution output of [execute_bash]:\nError executing command:\n\n"
        "[STDOUT]\n\n..FF..\n2 failed, 4 passed in 0.02s \n\n[STDERR]\n\n\n"
    )

    step = tools.step(
        call(
            "file_editor",
            command="str_replace",
            path=CORE_PATH,
            old_str="range(1, len(seq), n)",
            new_str="range(0, len(seq), n)",
        )
    )
    assert step.call.result == (
        "The file /testbed/textkit/core.py has been edited. Here's the result of running `cat -n` "
        "on a snippet of /testbed/textkit/core.py:\n"
        "    10\tdef chunk(seq, n):\n"
        '    11\t    """Split seq into consecutive pieces of length n (the last may be shorter)."""\n'
        "    12\t    if n <= 0:\n"
        '    13\t        raise ValueError("n must be positive")\n'
        "    14\t    return [seq[i:i + n] for i in range(0, len(seq), n)]\n"
        "    15\t\n"
        "Review the changes and make sure they are as expected. Edit the file again if necessary.\n"
    )
    assert tools.editor.changed == ("textkit/core.py",)
    assert (repo / "textkit" / "core.py").read_text() == CORE.replace("range(1,", "range(0,")

    step = tools.step(call("execute_bash", cmd="python -m pytest -q tests"))
    assert step.observation.startswith(
        "Exit code: 0\nExecution output of [execute_bash]:\n[STDOUT]"
    )
    step = tools.step(call("finish", command="submit"))
    assert step.finished and step.observation == "<<< Finished >>>"


# --------------------------------------------------------------------------------- file_editor


def test_view_ranges(editor):
    out, ok = editor({"command": "view", "path": CORE_PATH, "view_range": "[10, 11]"})
    assert ok and out == (
        "Here's the result of running `cat -n` on the file: /testbed/textkit/core.py:\n"
        "    10 def chunk(seq, n):\n"
        '    11     """Split seq into consecutive pieces of length n (the last may be shorter)."""\n'
    )
    for raw in ("10,11", "(10 11)", " [10,11] "):
        assert editor({"command": "view", "path": CORE_PATH, "view_range": raw})[0] == out
    out, _ = editor({"command": "view", "path": "textkit/core.py", "view_range": "[13, -1]"})
    assert out.splitlines()[1:] == [
        '    13         raise ValueError("n must be positive")',
        "    14     return [seq[i:i + n] for i in range(1, len(seq), n)]",
    ]
    assert out.startswith("Here's the result of running `cat -n` on the file: textkit/core.py:\n")
    assert editor({"command": "view", "path": CORE_PATH, "view_range": "[0, 3]"}) == (
        "ERROR: Invalid view_range [0, 3]: start line must be in [1, 14]\n",
        False,
    )
    assert editor({"command": "view", "path": CORE_PATH, "view_range": "[5, 15]"}) == (
        "ERROR: Invalid view_range [5, 15]: end must be >= start and <= 14, "
        "or -1 to view until end.\n",
        False,
    )
    assert editor({"command": "view", "path": CORE_PATH, "view_range": "[5, 4]"})[1] is False
    # view_range is ignored for directories
    out, ok = editor({"command": "view", "path": "/testbed/tests", "view_range": "[1, 2]"})
    assert ok and out.startswith("Here's the files and directories")


def test_directory_listing(repo, editor):
    (repo / "textkit" / "sub").mkdir()
    (repo / "textkit" / "sub" / "deep.py").write_text("")
    (repo / "textkit" / ".hidden.py").write_text("")
    (repo / "README.md").write_text("# textkit\n")
    (repo / "pyproject.toml").write_text("")
    out, ok = editor({"command": "view", "path": "/testbed/"})
    assert ok and out == (
        "Here's the files and directories up to 2 levels deep in /testbed, excluding hidden:\n"
        "/testbed\n"
        "/testbed/README.md\n"
        "/testbed/pyproject.toml\n"
        "/testbed/tests\n"
        "/testbed/tests/test_core.py\n"
        "/testbed/textkit\n"
        "/testbed/textkit/__init__.py\n"
        "/testbed/textkit/core.py\n"
        "/testbed/textkit/sub\n"
        "\n"
    )
    python_only = FileEditor(repo, python_only=True)
    out, _ = python_only({"command": "view", "path": "."})
    assert out.split("\n")[1:-2] == [
        ".",
        "./tests",
        "./tests/test_core.py",
        "./textkit",
        "./textkit/__init__.py",
        "./textkit/core.py",
        "./textkit/sub",
    ]
    assert python_only({"command": "view", "path": "/testbed/README.md"}) == (
        "ERROR: Viewing non-Python files is disallowed for saving context. "
        "File 'README.md' is not a .py file.\n",
        False,
    )
    out, _ = editor({"command": "view", "path": "/testbed/.git"})
    assert out == (
        "Here's the files and directories up to 2 levels deep in /testbed/.git, excluding hidden:\n"
        "\n"
    )


def test_create(editor, repo):
    assert editor({"command": "create", "path": CORE_PATH, "file_text": "x"}) == (
        "ERROR: File already exists at: /testbed/textkit/core.py. Cannot overwrite with 'create'.\n",
        False,
    )
    out, ok = editor(
        {"command": "create", "path": "/testbed/repro.py", "file_text": "import textkit\n\tx = 1"}
    )
    assert ok and out == (
        "File created at /testbed/repro.py. Here's the result of running `cat -n` on "
        "/testbed/repro.py:\n"
        "     1\timport textkit\n"
        "     2\t        x = 1\n"
        "Review the file and make sure that it is as expected. Edit the file if necessary.\n"
    )
    assert (repo / "repro.py").read_text() == "import textkit\n\tx = 1"
    assert editor.changed == ("repro.py",)
    out, ok = editor({"command": "create", "path": "/testbed/no/such/dir.py", "file_text": ""})
    assert not ok and out == (
        "ERROR: Error creating file at /testbed/no/such/dir.py: [Errno 2] No such file or directory: "
        "'/testbed/no/such/dir.py'\n"
    )
    assert str(repo) not in out


def test_str_replace_errors(editor):
    assert editor(
        {"command": "str_replace", "path": CORE_PATH, "old_str": "range(2,", "new_str": "x"}
    ) == (
        "ERROR: No occurrences of 'range(2,' found in /testbed/textkit/core.py for replacement.\n",
        False,
    )
    assert editor({"command": "str_replace", "path": CORE_PATH, "old_str": "return"}) == (
        "ERROR: Multiple occurrences of 'return' found in /testbed/textkit/core.py. "
        "Please ensure it is unique before using str_replace.\n",
        False,
    )
    assert editor({"command": "str_replace", "path": "/testbed/textkit", "old_str": "a"}) == (
        "ERROR: The path '/testbed/textkit' is a directory. Only 'view' can be used on "
        "directories.\n",
        False,
    )
    assert editor({"command": "view", "path": "/testbed/missing.py"}) == (
        "ERROR: The path '/testbed/missing.py' does not exist.\n",
        False,
    )
    assert editor.changed == ()


def test_str_replace_deletes_and_keeps_tabs(repo):
    (repo / "Makefile").write_text("all:\n\techo hi\n\techo bye\n")
    editor = FileEditor(repo)
    out, ok = editor({"command": "str_replace", "path": "/testbed/Makefile", "old_str": "hi\n"})
    assert ok and (repo / "Makefile").read_text() == "all:\n\techo \techo bye\n"
    assert numbered_tab(["all:", "\techo \techo bye".expandtabs(), ""]) in out
    compat = FileEditor(repo, compat=True)
    compat(
        {"command": "str_replace", "path": "/testbed/Makefile", "old_str": "bye", "new_str": "b"}
    )
    assert (repo / "Makefile").read_text() == "all:\n        echo    echo b\n"


def test_insert_bounds_and_snippet(editor, repo):
    n = len(CORE.split("\n"))
    assert n == 15
    assert editor(
        {"command": "insert", "path": CORE_PATH, "insert_line": "16", "new_str": "x"}
    ) == (
        "ERROR: Invalid insert_line 16. Must be in [0, 15].\n",
        False,
    )
    assert editor({"command": "insert", "path": CORE_PATH, "insert_line": "-1", "new_str": "x"})[
        0
    ] == ("ERROR: Invalid insert_line -1. Must be in [0, 15].\n")
    out, ok = editor(
        {"command": "insert", "path": CORE_PATH, "insert_line": "9", "new_str": "# chunking\n"}
    )
    lines = CORE.split("\n")
    assert ok and out == (
        "The file /testbed/textkit/core.py has been edited. Here's the result of running `cat -n` "
        "on a snippet of the edited file:\n"
        + numbered_tab(lines[5:9] + ["# chunking", ""] + lines[9:13], 6)
        + "\nReview the changes and make sure they are as expected (correct indentation, no "
        "duplicate lines, etc). Edit the file again if necessary.\n"
    )
    assert (repo / "textkit" / "core.py").read_text().split("\n")[9:11] == ["# chunking", ""]
    out, ok = editor({"command": "insert", "path": CORE_PATH, "insert_line": "0", "new_str": "#!"})
    assert ok and "on a snippet of the edited file:\n     1\t#!\n     2\tdef clamp" in out
    editor({"command": "insert", "path": CORE_PATH, "insert_line": "17", "new_str": "# end"})
    assert (repo / "textkit" / "core.py").read_text().endswith("\n# end\n")


def test_undo_stack(editor, repo):
    core = repo / "textkit" / "core.py"
    assert editor({"command": "undo_edit", "path": CORE_PATH}) == (
        "ERROR: No previous edits found for /testbed/textkit/core.py to undo.\n",
        False,
    )
    editor({"command": "str_replace", "path": CORE_PATH, "old_str": "range(1,", "new_str": "r(0,"})
    editor({"command": "str_replace", "path": CORE_PATH, "old_str": "r(0,", "new_str": "range(0,"})
    first = CORE.replace("range(1,", "r(0,")
    out, ok = editor({"command": "undo_edit", "path": "textkit/core.py"})
    assert ok and core.read_text() == first
    assert out == (
        "Last edit to textkit/core.py undone successfully. Here's the result of running `cat -n` "
        "on textkit/core.py:\n" + numbered_tab(first.split("\n")) + "\n\n"
    )
    editor({"command": "undo_edit", "path": CORE_PATH})
    assert core.read_text() == CORE
    assert editor({"command": "undo_edit", "path": CORE_PATH})[1] is False
    editor({"command": "create", "path": "/testbed/new.py", "file_text": "x = 1\n"})
    editor({"command": "undo_edit", "path": "/testbed/new.py"})
    assert (repo / "new.py").read_text() == ""  # R2E restores the empty "previous content"


def test_clipping(repo):
    (repo / "big.py").write_text("".join(f"value_{i} = {i}\n" for i in range(2000)))
    editor = FileEditor(repo)
    out, ok = editor({"command": "view", "path": "/testbed/big.py"})
    assert ok and len(out) == 10_000 + len(CLIP_NOTE) + 1
    assert out.endswith(
        "<response clipped><NOTE>To save on context only part of this file has been shown to you. "
        "You should retry this tool after you have searched inside the file with `grep -n` in "
        "order to find the line numbers of what you are looking for.</NOTE>\n"
    )
    text = "a" * 10_005
    out, _ = editor({"command": "create", "path": "/testbed/long.txt", "file_text": text})
    assert f"     1\t{'a' * 10_000}{CLIP_NOTE}\nReview the file" in out


def test_concise_view(repo):
    body = "".join(f"    x{i} = {i}\n" for i in range(120))
    (repo / "long.py").write_text(f"def f():\n{body}    return x0\n\n\ndef g():\n    return 1\n")
    header = "Here is a condensed view for file: /testbed/long.py; [Note: Useful for understanding"
    out, _ = FileEditor(repo, auto_concise=True)({"command": "view", "path": "/testbed/long.py"})
    assert out.startswith(header)
    assert out.split("\n")[1:5] == [
        "     1 def f():",
        "     2 ... eliding lines 2-122 ...",
        "   123 ",
        "   124 ",
    ]
    out, _ = FileEditor(repo)({"command": "view", "path": "/testbed/long.py"})
    assert out.startswith("Here's the result of running `cat -n`")
    out, _ = FileEditor(repo)({"command": "view", "path": "/testbed/long.py", "concise": "True"})
    assert out.startswith(header)
    (repo / "broken.py").write_text("def f(:\n")
    out, ok = FileEditor(repo)({"command": "view", "path": "/testbed/broken.py", "concise": "true"})
    assert not ok and out.startswith("ERROR: Syntax error for file /testbed/broken.py: ")


# ------------------------------------------------------------------------------ confinement


def test_symlink_and_path_escapes(repo, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text("TOKEN = 1\n")
    os.symlink("/etc/passwd", repo / "x")
    os.symlink(outside, repo / "linkdir")
    os.symlink("../../" + outside.name, repo / "textkit" / "rel")
    editor = FileEditor(repo)
    refused = "is outside the repository. File tools only work on paths under /testbed.\n"
    for path in (
        "/testbed/x",
        "x",
        "/testbed/linkdir/secret.py",
        "/testbed/../etc/passwd",
        "../etc/passwd",
        "textkit/../../etc/passwd",
        "/etc/passwd",
        "/testbedx/a.py",
        "/",
    ):
        for command in ("view", "str_replace", "undo_edit"):
            out, ok = editor({"command": command, "path": path, "old_str": "a", "new_str": "b"})
            assert not ok and out.startswith("ERROR: The path ") and out.endswith(refused), path
    out, ok = editor({"command": "create", "path": "/testbed/linkdir/new.py", "file_text": "x"})
    assert not ok and out.endswith(refused)
    assert not (outside / "new.py").exists()
    out, ok = editor(
        {"command": "insert", "path": "linkdir/secret.py", "insert_line": "0", "new_str": "x"}
    )
    assert not ok and (outside / "secret.py").read_text() == "TOKEN = 1\n"
    out, _ = editor({"command": "view", "path": "/testbed"})
    assert "/testbed/linkdir\n" in out and "secret.py" not in out
    out, ok = search(repo, {"search_term": "TOKEN"})
    assert ok and out == 'No matches found for "TOKEN" in /testbed\n'
    out, ok = search(repo, {"search_term": "root", "path": "/testbed/x"})
    assert not ok and out.endswith(refused)
    assert search(repo, {"search_term": "a", "path": "/tmp"})[1] is False
    # a symlink that stays inside the workspace is followed
    os.symlink("textkit/core.py", repo / "alias.py")
    out, ok = editor({"command": "view", "path": "/testbed/alias.py", "view_range": "[1, 1]"})
    assert ok and out.endswith("     1 def clamp(x, lo, hi):\n")


def test_non_utf8_and_special_files(repo):
    (repo / "latin.py").write_bytes(b"name = 'caf\xe9'\n")
    editor = FileEditor(repo)
    out, ok = editor({"command": "view", "path": "/testbed/latin.py"})
    assert ok and out.endswith("     1 name = 'caf\ufffd'\n")
    out, ok = editor(
        {"command": "str_replace", "path": "/testbed/latin.py", "old_str": "name", "new_str": "n"}
    )
    assert not ok and out == (
        "ERROR: The file /testbed/latin.py is not a UTF-8 text file; file_editor cannot edit it. "
        "Use execute_bash instead.\n"
    )
    assert (repo / "latin.py").read_bytes() == b"name = 'caf\xe9'\n"
    out, ok = search(repo, {"search_term": "caf", "path": "/testbed/latin.py"})
    assert ok and out == "Matches for \"caf\" in /testbed/latin.py:\n1:name = 'caf\ufffd'\n"
    (repo / "crlf.py").write_bytes(b"a = 1\r\nb = 2\r\n")
    editor(
        {"command": "str_replace", "path": "/testbed/crlf.py", "old_str": "1\nb", "new_str": "3\nb"}
    )
    assert (repo / "crlf.py").read_bytes() == b"a = 3\nb = 2\n"
    os.mkfifo(repo / "pipe")  # opening a FIFO would block: it must be refused
    out, ok = editor({"command": "view", "path": "/testbed/pipe"})
    assert out == "ERROR: The path '/testbed/pipe' is not a regular file.\n" and not ok
    assert search(repo, {"search_term": "x", "path": "/testbed/pipe"})[1] is False
    assert search(repo, {"search_term": "caf"})[0].startswith('Found 1 matches for "caf"')


# ------------------------------------------------------------------------------------ search


def test_search_modes(repo):
    (repo / "textkit" / ".cache.py").write_text("range\n")
    (repo / "notes.txt").write_text("range range\nno\nrange\n")
    out, ok = search(repo, {"search_term": "range"})
    assert ok and out == (
        'Found 3 matches for "range" in /testbed:\n'
        "./notes.txt (2 matches)\n"
        "./textkit/core.py (1 matches)\n"
        'End of matches for "range" in /testbed\n'
    )
    out, _ = search(repo, {"search_term": "range", "path": "."}, python_only=True)
    assert out.splitlines()[1:2] == ["./textkit/core.py (1 matches)"]
    out, ok = search(repo, {"search_term": "return", "path": "textkit/core.py"})
    assert ok and out == (
        'Matches for "return" in /testbed/textkit/core.py:\n'
        "4:        return lo\n"
        "6:        return hi\n"
        "7:    return x\n"
        "14:    return [seq[i:i + n] for i in range(1, len(seq), n)]\n"
    )
    assert search(repo, {"search_term": "zebra", "path": CORE_PATH}) == (
        'No matches found for "zebra" in /testbed/textkit/core.py\n',
        True,
    )
    assert search(repo, {"search_term": "zebra"}) == (
        'No matches found for "zebra" in /testbed\n',
        True,
    )
    assert search(repo, {"search_term": "a", "path": "/testbed/nope"}) == (
        "Directory '/testbed/nope' not found or not a directory.\n",
        False,
    )
    assert search(repo, {"search_term": "x[0]", "path": CORE_PATH})[0].startswith("No matches")


def test_search_more_than_100_files(tmp_path):
    for i in range(101):
        (tmp_path / f"m{i:03d}.py").write_text("needle\n")
    assert search(tmp_path, {"search_term": "needle", "path": "/testbed"}) == (
        'More than 101 files matched for "needle" in /testbed. Please narrow your search.\n',
        True,
    )
    (tmp_path / "m000.py").write_text("")
    out, _ = search(tmp_path, {"search_term": "needle"})
    assert out.startswith('Found 100 matches for "needle" in /testbed:\n./m001.py (1 matches)\n')


# ------------------------------------------------------------------------------ execute_bash


def test_bash_output_layout():
    assert bash_output(CommandResult(0, "  a\nb\n\n", "warn\n")) == (
        "[STDOUT]\n\na\nb \n\n[STDERR]\n\nwarn\n"
    )
    assert bash_output(CommandResult(127, "", "bash: foo: command not found\n")) == (
        "Error executing command:\n\n[STDOUT]\n\n \n\n[STDERR]\n\nbash: foo: command not found\n"
    )
    timed_out = CommandResult(124, "partial", timed_out=True, seconds=60.2)
    assert bash_output(timed_out, timeout=60.0) == "The command took too long to execute (>60s)"
    assert bash_output(timed_out, timeout=0.5) == "The command took too long to execute (>0.5s)"
    # R2E reads exit status 124 as its timeout wrapper firing
    exit_124 = CommandResult(124, "x")
    assert bash_output(exit_124, timeout=120).startswith("Error executing command:")
    assert bash_output(exit_124, compat=True, timeout=120) == (
        "The command took too long to execute (>120s)"
    )


def test_blocked_commands(repo):
    refusal = "Bash command '{}' is not allowed. Please use a different command or tool."
    for word in ("ipython", "jupyter", "pip", "nohup"):
        assert blocked(f"  {word} x") == refusal.format(word)
        assert blocked(word, compat=True) == refusal.format(word)
    assert blocked("cd /testbed && ls") is None
    assert blocked("cd /testbed && ls", compat=True) == refusal.format("cd")
    assert blocked("pip3 install x") is None and blocked("python -m pip install x") is None
    runner = FakeRunner()
    step = R2ETools(repo, runner).step(call("execute_bash", cmd="pip install numpy"))
    assert runner.calls == [] and step.call.valid and step.call.exit_code == 1
    assert step.observation == (
        "Exit code: 1\nExecution output of [execute_bash]:\n" + refusal.format("pip") + "\n"
    )
    step = R2ETools(repo, runner, compat=True).step(call("bash", command="cd src"))
    assert step.observation == (
        "Exit code: Error: Exit code 1\nExecution output of [execute_bash]:\n"
        + refusal.format("cd")
        + "\n"
    )
    assert runner.calls == []
    R2ETools(repo, runner).step(call("bash", command="cd textkit && ls"))
    assert runner.calls == [("cd textkit && ls", 60.0)]


def test_observation_truncation_and_codes():
    output = "".join(f"line {i}\n" for i in range(100))
    text = observation("execute_bash", output, exit_code=0)
    marker = "-" * 50 + "\n<Observation truncated in middle for saving context>\n" + "-" * 50
    assert text == (
        "Exit code: 0\nExecution output of [execute_bash]:\n"
        + "\n".join(f"line {i}" for i in range(40))
        + "\n"
        + marker
        + "\n"
        + "\n".join(f"line {i}" for i in range(60, 100))
    )
    exactly_80 = "".join(f"l{i}\n" for i in range(80))
    assert observation("execute_bash", exactly_80, exit_code=3).endswith("]:\n" + exactly_80)
    assert observation("execute_bash", "x", exit_code=0, compat=True).startswith("Exit code: 0\n")
    assert observation("execute_bash", "x", exit_code=124, timed_out=True, compat=True).startswith(
        "Exit code: -1\n"
    )
    assert observation("execute_bash", "x", exit_code=124, timed_out=True).startswith(
        "Exit code: 124\n"
    )
    assert observation("search", output) == "Execution output of [search]:\n" + output
    assert observation("finish", "<<<Finished>>>\n") == "<<< Finished >>>"


def test_timeout_step(repo):
    runner = FakeRunner(CommandResult(124, "", "", timed_out=True, seconds=5.0))
    step = R2ETools(repo, runner, timeout=5, compat=True).step(call("execute_bash", cmd="sleep 9"))
    assert step.timed_out and step.call.exit_code == 124
    assert step.observation == (
        "Exit code: -1\nExecution output of [execute_bash]:\n"
        "The command took too long to execute (>5s)"
    )


def test_real_subprocess_runner(repo):
    def run(command: str, timeout: float) -> CommandResult:
        done = subprocess.run(
            ["bash", "-c", command], cwd=repo, capture_output=True, text=True, timeout=timeout
        )
        return CommandResult(done.returncode, done.stdout, done.stderr)

    tools = R2ETools(repo, run)
    step = tools.step(call("execute_bash", cmd="ls textkit; echo oops >&2; exit 3"))
    assert step.observation == (
        "Exit code: 3\nExecution output of [execute_bash]:\nError executing command:\n\n"
        "[STDOUT]\n\n__init__.py\ncore.py \n\n[STDERR]\n\noops\n"
    )
    step = MiniTools(run).step("```bash\ncat textkit/__init__.py\n```")
    assert step.observation == (
        "<returncode>0</returncode>\n<output>\nfrom .core import chunk, clamp\n</output>"
    )
    step = MiniTools(run).step(
        "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git --version >/dev/null\n```"
    )
    assert step.finished and step.call.name == "finish"


# -------------------------------------------------------------------------------------- mini


def test_parse_bash_block_counts():
    assert parse_bash("THOUGHT: none") == (None, 0)
    assert parse_bash("```bash\n  ls -la  \n```") == ("ls -la", 1)
    assert parse_bash("```bash   \ncat a\nb\n```\nthen") == ("cat a\nb", 1)
    assert parse_bash("```bash\nls\n```\n```bash\npwd\n```") == (None, 2)
    assert parse_bash("```python\nprint(1)\n```") == (None, 0)
    assert parse_bash("```bash ls```") == (None, 0)


def test_mini_format_error(repo):
    runner = FakeRunner()
    step = MiniTools(runner).step("```bash\nls\n```\n```bash\npwd\n```")
    assert runner.calls == [] and not step.call.valid and step.call.name == ""
    assert step.observation == (
        "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.\n\n"
        "Please format your action in triple backticks as shown in <response_example>.\n\n"
        "<response_example>\nHere are some thoughts about why you want to perform the action.\n\n"
        "```bash\n<action>\n```\n</response_example>\n\n"
        "If you have completed your assignment, please consult the first message about how to\n"
        "submit your solution (you will not be able to continue working on this task after that)."
    )
    assert MiniTools(runner).step("no block").observation == FORMAT_ERROR.format(n=0)


def test_mini_output_layouts():
    assert output_observation(CommandResult(1, "boom\n", "trace\n")) == (
        "<returncode>1</returncode>\n<output>\nboom\ntrace\n</output>"
    )
    assert (
        output_observation(CommandResult(0, ""))
        == "<returncode>0</returncode>\n<output>\n</output>"
    )
    long = "h" * 5000 + "m" * 2345 + "t" * 5000
    assert output_observation(CommandResult(0, long)) == (
        "<returncode>0</returncode>\n<warning>\n"
        "The output of your last command was too long.\n"
        "Please try a different command that produces less output.\n"
        "If you're looking at a file you can try use head, tail or sed to view a smaller number of "
        "lines selectively.\n"
        "If you're using grep or find and it produced too much output, you can use a more "
        "selective search pattern.\n"
        "If you really need to see something from the full command's output, you can redirect "
        "output to a file and then search in that file.\n"
        "</warning><output_head>\n" + "h" * 5000 + "\n</output_head>\n"
        "<elided_chars>\n2345 characters elided\n</elided_chars>\n"
        "<output_tail>\n" + "t" * 5000 + "\n</output_tail>"
    )
    assert "<elided_chars>\n0 characters elided\n" in output_observation(
        CommandResult(0, "x" * 10_000)
    )
    assert "<output>" in output_observation(CommandResult(0, "x" * 9_999))
    assert LONG_OUTPUT_WARNING.count("\n") == 4
    timed_out = CommandResult(124, "partial\n", timed_out=True)
    assert output_observation(timed_out, command="sleep 100") == (
        "The last command <command>sleep 100</command> timed out and has been killed.\n"
        "The output of the command was:\n<output>\npartial\n\n</output>\n"
        "Please try another command and make sure to avoid those requiring interactive input."
    )
    long_timeout = output_observation(CommandResult(124, "y" * 10_001, timed_out=True), command="c")
    assert "<warning>Output was too long and has been truncated.</warning>\n<output_head>\n" in (
        long_timeout
    )
    assert "\n</output_head>\n<elided_chars>1 characters elided</elided_chars>\n" in long_timeout


def test_mini_templates_match_jinja():
    """The constants equal SkyRL's swebench.yaml templates rendered by Jinja."""
    jinja2 = pytest.importorskip("jinja2")
    observation_template = (
        "<returncode>{{output.returncode}}</returncode>\n"
        "{% if output.output | length < 10000 -%}\n<output>\n{{ output.output -}}\n</output>\n"
        "{%- else -%}\n<warning>\n" + LONG_OUTPUT_WARNING + "\n</warning>\n"
        "{%- set elided_chars = output.output | length - 10000 -%}\n"
        "<output_head>\n{{ output.output[:5000] }}\n</output_head>\n"
        "<elided_chars>\n{{ elided_chars }} characters elided\n</elided_chars>\n"
        "<output_tail>\n{{ output.output[-5000:] }}\n</output_tail>\n{%- endif -%}\n"
    )
    for text in ("", "ok\n", "x" * 9_999, "ab" * 6_000):
        rendered = jinja2.Template(observation_template).render(
            output={"output": text, "returncode": 2}
        )
        assert output_observation(CommandResult(2, text)) == rendered
    format_template = FORMAT_ERROR.replace("{n}", "{{actions|length}}") + "\n"
    assert jinja2.Template(format_template).render(actions=[1, 2, 3]) == FORMAT_ERROR.format(n=3)


def test_submission_detection(repo):
    assert is_submission("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff --git a/x b/x\n")
    assert is_submission("\n\n   MINI_SWE_AGENT_FINAL_OUTPUT   \n")
    assert not is_submission("")
    assert not is_submission("done\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n")
    assert not is_submission("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT extra\n")
    runner = FakeRunner(
        CommandResult(0, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ndiff --git a/x b/x\n"),
        CommandResult(1, "", "error: no repo\n"),
    )
    tools = MiniTools(runner, timeout=180)
    submit = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```"
    step = tools.step(submit)
    assert step.finished and step.call.name == "finish" and step.call.valid
    assert step.call.arguments == {
        "cmd": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
    }
    assert runner.calls[0][1] == 180
    step = tools.step("```bash\ngit status\n```")
    assert not step.finished and step.call.name == "execute_bash" and step.call.exit_code == 1
    assert step.observation == "<returncode>1</returncode>\n<output>\nerror: no repo\n</output>"


def test_mini_timeout_step(repo):
    runner = FakeRunner(
        CommandResult(124, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n", timed_out=True)
    )
    step = MiniTools(runner).step("```bash\nsleep 100\n```")
    assert step.timed_out and not step.finished
    assert step.observation.startswith("The last command <command>sleep 100</command> timed out")


# -------------------------------------------------------------------------------------- fuzz


FRAGMENTS = [
    "<function=",
    "<function=file_editor>",
    "<function=execute_bash>",
    "<function=search>",
    "<function=finish>",
    "<function=think>",
    "<function=bash>",
    "</function>",
    "<parameter=",
    "<parameter=command>",
    "<parameter=path>",
    "<parameter=cmd>",
    "<parameter=view_range>",
    "<parameter=insert_line>",
    "<parameter=old_str>",
    "<parameter=new_str>",
    "<parameter=file_text>",
    "<parameter=search_term>",
    "</parameter>",
    "view",
    "create",
    "str_replace",
    "insert",
    "undo_edit",
    "/testbed",
    "/testbed/textkit/core.py",
    "fuzz.py",
    "../",
    "/etc/passwd",
    "[1, -1]",
    "[0, 99]",
    "3",
    "-7",
    "range",
    "\x00",
    "\n",
    " ",
    ">",
    "{",
    "}",
    '{"name": "bash", "arguments": {"cmd": "ls"}}',
    '"tool_calls"',
    "```bash\n",
    "\n```",
    "```",
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "é",
    "\udcff",
]


def test_fuzz_parsers_and_steps(repo):
    rng = random.Random(1234)
    r2e_tools = R2ETools(repo, FakeRunner())
    compat_tools = R2ETools(repo, FakeRunner(), compat=True)
    mini_tools = MiniTools(FakeRunner())
    for _ in range(2000):
        response = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 14)))
        for compat in (False, True):
            parsed = parse_call(response, compat=compat)
            assert parsed is None or (isinstance(parsed[0], str) and isinstance(parsed[1], dict))
        command, blocks = parse_bash(response)
        assert (command is None) == (blocks != 1)
        for tools in (r2e_tools, compat_tools, mini_tools):
            step = tools.step(response)
            assert isinstance(step.observation, str)
    assert not (repo.parent / "fuzz.py").exists()
    assert "root:" not in (repo / "textkit" / "core.py").read_text()


def test_module_exports():
    for module in (r2e, mini):
        for name in module.__all__:
            assert hasattr(module, name)
