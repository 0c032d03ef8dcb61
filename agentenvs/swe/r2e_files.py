"""The file tools of the ``r2e`` toolset (re-exported by :mod:`agentenvs.swe.r2e`).

This module holds:

* :class:`FileEditor` - ``file_editor`` (``view``, ``create``, ``str_replace``, ``insert``,
  ``undo_edit``), done in Python on the workspace directory and confined to it.
* :func:`search` - the ``search`` tool.
* the path confinement both share (``/testbed`` names, symlinks resolved inside the root, no
  FIFOs or devices opened) and the editor's limits (:data:`MAX_EDITOR_CHARS` with
  :data:`CLIP_NOTE`, :data:`SNIPPET_LINES`, :data:`MAX_EDITOR_FILE_BYTES`,
  :data:`MAX_UNDO_BYTES`).

The rules and the R2E-Gym fidelity notes are in :mod:`agentenvs.swe.r2e` and docs/swe.md.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import posixpath
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from agentenvs.swe.workspace import adopt

__all__ = [
    "CLIP_NOTE",
    "MAX_EDITOR_CHARS",
    "MAX_EDITOR_FILE_BYTES",
    "MAX_UNDO_BYTES",
    "SNIPPET_LINES",
    "FileEditor",
    "search",
]

#: Appended to a ``file_editor`` output cut at :data:`MAX_EDITOR_CHARS`.
CLIP_NOTE = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. "
    "You should retry this tool after you have searched inside the file with `grep -n` in order "
    "to find the line numbers of what you are looking for.</NOTE>"
)
MAX_EDITOR_CHARS = 10_000
#: Lines of context around an edit in the ``str_replace``/``insert`` snippet.
SNIPPET_LINES = 4
#: Largest file ``view``, ``str_replace`` and ``insert`` read, bytes (8 MiB): a bigger one is an
#: ``ERROR`` pointing to ``execute_bash`` (the host process holds a few copies of it meanwhile).
MAX_EDITOR_FILE_BYTES = 8 * 2**20
#: Bytes the undo history keeps over all files, oldest edits dropped first (32 MiB).
MAX_UNDO_BYTES = 32 * 2**20
#: ``search`` in one file stops collecting matching lines past this many characters (4 MiB, more
#: than an observation holds), so a huge file's matches never sit in host memory at once.
_SEARCH_OUTPUT_CHARS = 4 * 2**20
_EDITOR_COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")
#: Characters ``os.fsencode`` cannot turn into bytes (it maps only ``\\udc80``-``\\udcff`` back).
_UNENCODABLE = re.compile("[\ud800-\udc7f]")
_AUTO_CONCISE_LINES = 110
_CONCISE_HEADER = (
    "Here is a condensed view for file: {p}; [Note: Useful for understanding file structure in a "
    "concise manner. Please use specific view_range without concise cmd if you want to explore "
    "further into the relevant parts.]\n"
)


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


def _too_large(real: str) -> bool:
    """Whether the file ``real`` is over :data:`MAX_EDITOR_FILE_BYTES`."""
    try:
        return os.stat(real).st_size > MAX_EDITOR_FILE_BYTES
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


def error_result(message: str) -> tuple[str, bool]:
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


def editor_usage_error(params: Mapping[str, str]) -> str | None:
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
    history is one stack per file, kept for the editor's lifetime up to :data:`MAX_UNDO_BYTES` in
    all (the oldest edits of any file are forgotten first); files over
    :data:`MAX_EDITOR_FILE_BYTES` are refused. ``compat`` expands tabs in edited files as R2E
    does.
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
        self.history: list[tuple[str, bytes]] = []  # (real path, content before), oldest first
        self._history_bytes = 0
        self.changed: tuple[str, ...] = ()

    def __call__(self, params: Mapping[str, str]) -> tuple[str, bool]:
        self.changed = ()
        usage = editor_usage_error(params)
        if usage is not None:
            return error_result(usage)
        command = params["command"].strip()
        given = params["path"].strip()
        shown = str(PurePosixPath(given))
        real = self.workspace.locate(given)
        if real is None:
            return error_result(self.workspace.outside(shown))
        try:
            return self._run(command, real, shown, params)
        except Exception as exc:  # R2E reports any failure as an ERROR line
            return error_result(self.workspace.sanitize(f"Unhandled exception: {exc}"))

    def _run(
        self, command: str, real: str, shown: str, params: Mapping[str, str]
    ) -> tuple[str, bool]:
        exists = os.path.exists(real)
        if command == "create" and exists:
            return error_result(f"File already exists at: {shown}. Cannot overwrite with 'create'.")
        if command != "create" and not exists:
            return error_result(f"The path '{shown}' does not exist.")
        if os.path.isdir(real):
            if command != "view":
                return error_result(
                    f"The path '{shown}' is a directory. Only 'view' can be used on directories."
                )
            return self._listing(real, shown)
        if exists and not _is_regular(real):
            return error_result(f"The path '{shown}' is not a regular file.")
        if command in ("view", "str_replace", "insert") and _too_large(real):
            return error_result(
                f"The file {shown} is larger than {MAX_EDITOR_FILE_BYTES // 2**20} MiB; "
                "file_editor cannot open it. Use execute_bash instead (e.g. grep -n, sed -n)."
            )
        if command == "view":
            return self._view(real, shown, params)
        if command == "create":
            return self._create(real, shown, params["file_text"])
        if command == "undo_edit":
            return self._undo(real, shown)
        text = _decode(Path(real).read_bytes(), strict=True)
        if text is None:
            return error_result(
                f"The file {shown} is not a UTF-8 text file; file_editor cannot edit it. "
                "Use execute_bash instead."
            )
        if self.compat:
            text = text.expandtabs()
        if command == "str_replace":
            return self._str_replace(real, shown, text, params["old_str"], params.get("new_str"))
        insert_line = _parse_int(params["insert_line"])
        assert insert_line is not None  # checked by editor_usage_error
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
            if is_dir and target is not None and depth < 2:
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
            return error_result(
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
                return error_result(lines)
        else:
            lines = list(enumerate(text.splitlines()))
        if view_range:
            start, end = view_range
            total = len(lines)
            if not 1 <= start <= total:
                return error_result(
                    f"Invalid view_range {view_range}: start line must be in [1, {total}]"
                )
            if end != -1 and (end < start or end > total):
                return error_result(
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
            return error_result(f"Error creating file at {shown}: {reason}")
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
            return error_result(f"No occurrences of '{old}' found in {shown} for replacement.")
        if occurrences > 1:
            return error_result(
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
            return error_result(f"Invalid insert_line {insert_line}. Must be in [0, {len(lines)}].")
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
        last = next(
            (i for i in reversed(range(len(self.history))) if self.history[i][0] == real), None
        )
        if last is None:
            return error_result(f"No previous edits found for {shown} to undo.")
        data = self.history.pop(last)[1]
        self._history_bytes -= len(data)
        previous = data.decode("utf-8", errors="replace")
        Path(real).write_bytes(data)
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
        data = previous.encode("utf-8", errors="replace")
        self.history.append((real, data))
        self._history_bytes += len(data)
        while self._history_bytes > MAX_UNDO_BYTES:
            self._history_bytes -= len(self.history.pop(0)[1])
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
        return error_result("Missing required parameter 'search_term' for 'search'.")
    given = params.get("path", "").strip() or "."
    real = workspace.locate(given)
    if real is None:
        return error_result(workspace.outside(str(PurePosixPath(given))))
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
            count = _count_matching_lines(target, term)
        except OSError:
            continue
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


def _count_matching_lines(path: str, term: str) -> int:
    """How many lines of the file ``path`` (UTF-8, undecodable bytes dropped, universal newlines)
    hold ``term``; read line by line, so a big file costs no more memory than its longest line."""
    with open(path, encoding="utf-8", errors="ignore", newline=None) as handle:
        return sum(term in line for line in handle)


def _search_file(real: str, shown: str, term: str) -> str:
    """``grep -n``-style rows of the lines (split at ``\\n``, decoded with replacement) holding
    ``term``, read line by line; rows stop past :data:`_SEARCH_OUTPUT_CHARS` characters."""
    rows, size = [], 0
    with open(real, "rb") as handle:
        for n, raw in enumerate(handle, 1):
            line = raw[:-1] if raw.endswith(b"\n") else raw
            text = line.decode("utf-8", errors="replace")
            if term in text:
                rows.append(f"{n}:{text}")
                size += len(rows[-1]) + 1
                if size > _SEARCH_OUTPUT_CHARS:
                    break
    if not rows:
        return f'No matches found for "{term}" in {shown}\n'
    return f'Matches for "{term}" in {shown}:\n' + "\n".join(rows).strip() + "\n"
