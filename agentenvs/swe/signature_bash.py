"""How a bash command is read for the SWE signatures (re-exported by
:mod:`agentenvs.swe.signature`).

This module holds:

* a small POSIX-style lexer (``_lex``: quotes, escapes, ``$(...)``, comments, operators, heredoc
  bodies) that never raises;
* the cut into simple commands (``split_segments``: lists, pipelines, ``cd``, wrappers, ``bash -c``);
* the per-command readers (install and test arguments, search targets, view spans) and
  :func:`classify_command`, which puts a bash command string into an action category.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import NamedTuple

__all__ = ["classify_command"]

#: Precedence of the bash categories (higher wins); ``execute`` is the fallback.
_RANK = {"execute": 0, "view": 1, "search": 2, "fileop": 3, "test": 4, "install": 5}


# ----------------------------------------------------------------------------- bash lexer

_OPERATORS = (
    "<<<", "<<-", "&>>", "&&", "||", ";;", "|&", ">>", "<<", ">&", "<&", "&>", ">|", "<>",
    ";", "&", "|", "<", ">", "(", ")", "\n",
)  # fmt: skip
_REDIRECTIONS = frozenset({"<<<", "<<-", "&>>", ">>", "<<", ">&", "<&", "&>", ">|", "<>", "<", ">"})
_PIPES = frozenset({"|", "|&"})


def _closing_paren(text: str, i: int) -> int:
    """Index after the ``)`` matching the ``(`` at ``i`` (or the end of ``text``)."""
    depth = 0
    for j in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j + 1
    return len(text)


def _skip_heredocs(text: str, i: int, delimiters: list[str]) -> int:
    """Index after the bodies of the pending heredocs, which start at ``i``."""
    for delimiter in delimiters:
        while i < len(text):
            j = text.find("\n", i)
            line, i = (text[i:], len(text)) if j < 0 else (text[i:j], j + 1)
            if line.strip() == delimiter:
                break
    return i


def _lex(cmd: str) -> list[tuple[str, bool]]:
    """Shell tokens of ``cmd`` as ``(text, is_operator)``; quotes removed, heredocs skipped."""
    tokens: list[tuple[str, bool]] = []
    word: list[str] = []
    in_word = False
    heredocs: list[str] = []
    i, n = 0, len(cmd)

    def flush() -> None:
        nonlocal in_word
        if in_word:
            if tokens and tokens[-1] in (("<<", True), ("<<-", True)):
                heredocs.append("".join(word))
            tokens.append(("".join(word), False))
            word.clear()
            in_word = False

    while i < n:
        c = cmd[i]
        if c in " \t\r":
            flush()
            i += 1
        elif c == "#" and not in_word:
            j = cmd.find("\n", i)
            i = n if j < 0 else j
        elif c in "\n;&|<>()":
            op = next(o for o in _OPERATORS if cmd.startswith(o, i))
            if op in _REDIRECTIONS and in_word and "".join(word).isdigit():
                word.clear()  # a file-descriptor number such as the 2 of 2>&1
                in_word = False
            flush()
            tokens.append((op, True))
            i += len(op)
            if op == "\n" and heredocs:
                i = _skip_heredocs(cmd, i, heredocs)
                heredocs.clear()
        elif cmd.startswith("\\\n", i):
            i += 2  # line continuation
        else:
            in_word = True
            if c == "\\":
                word.append(cmd[i + 1 : i + 2])
                i += 2
            elif c == "'":
                j = cmd.find("'", i + 1)
                j = n if j < 0 else j
                word.append(cmd[i + 1 : j])
                i = j + 1
            elif c == '"':
                i += 1
                while i < n and cmd[i] != '"':
                    if cmd[i] == "\\" and cmd[i + 1 : i + 2] in ('"', "\\", "$", "`", "\n"):
                        i += 1
                    word.append(cmd[i : i + 1])
                    i += 1
                i += 1
            elif cmd.startswith("$(", i):
                j = _closing_paren(cmd, i + 1)
                word.append(cmd[i:j])
                i = j
            elif c == "`":
                j = cmd.find("`", i + 1)
                j = n if j < 0 else j + 1
                word.append(cmd[i:j])
                i = j
            else:
                word.append(c)
                i += 1
    flush()
    return tokens


# ----------------------------------------------------------------------------- simple commands


class _Seg(NamedTuple):
    """One simple command: its words (wrappers removed), directory and pipeline position."""

    words: tuple[str, ...]
    cwd: str
    downstream: bool


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
#: Wrapper commands, with the options that take a value and the positional arguments they consume.
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-C", "-D"}), 0),
    "env": (frozenset({"-u", "-C", "--unset", "--chdir"}), 0),
    "time": (frozenset(), 0),
    "nohup": (frozenset(), 0),
    "nice": (frozenset({"-n"}), 0),
    "command": (frozenset(), 0),
    "exec": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "xargs": (frozenset({"-I", "-n", "-P", "-d", "-L", "-E", "-s", "-a"}), 0),
}
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*")
_MAX_DEPTH = 3


def base_name(word: str) -> str:
    return posixpath.basename(word)


def _strip_wrappers(words: Sequence[str]) -> tuple[str, ...]:
    """``words`` without leading ``VAR=x`` assignments and wrapper commands."""
    words = tuple(words)
    i = 0
    while i < len(words):
        name = base_name(words[i])
        if _ASSIGNMENT.match(words[i]):
            i += 1
        elif name in _RUNNERS and words[i + 1 : i + 2] == ("run",):
            i += 2
        elif name in _WRAPPERS:
            value_opts, positionals = _WRAPPERS[name]
            i += 1
            while i < len(words) and words[i].startswith("-") and words[i] != "-":
                i += 2 if words[i] in value_opts else 1
            i += positionals
        else:
            break
    return words[i:]


def split_segments(cmd: str, cwd: str = ".", depth: int = 0) -> list[_Seg]:
    """The simple commands of ``cmd`` in order (``cd`` applied and dropped, ``bash -c`` opened)."""
    segs: list[_Seg] = []
    words: list[str] = []
    downstream = skip = False
    for text, is_op in [*_lex(cmd), (";", True)]:
        if not is_op:
            if not skip:
                words.append(text)
            skip = False
            continue
        if text in _REDIRECTIONS:
            skip = True  # the next word is the redirection's target, not an argument
            continue
        stripped = _strip_wrappers(words)
        if stripped and stripped[0] == "cd":
            target = stripped[1] if len(stripped) > 1 and stripped[1] != "-" else "."
            cwd = posixpath.normpath(posixpath.join(cwd, target))
        elif stripped and base_name(stripped[0]) in SHELLS and "-c" in stripped[1:-1]:
            inner = stripped[stripped.index("-c", 1) + 1]
            if depth < _MAX_DEPTH:
                for seg in split_segments(inner, cwd, depth + 1):
                    segs.append(seg._replace(downstream=seg.downstream or downstream))
        elif stripped:
            segs.append(_Seg(stripped, cwd, downstream))
        words = []
        downstream = text in _PIPES
        skip = False
    return segs


def positional_args(args: Sequence[str], value_opts: Iterable[str] = ()) -> list[str]:
    """Operands of ``args``: options (and the values of ``value_opts``) skipped, ``--`` honoured."""
    value_opts = frozenset(value_opts)
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i + 1 :])
            break
        if arg.startswith("-") and arg != "-":
            i += 2 if arg in value_opts else 1
            continue
        out.append(arg)
        i += 1
    return out


def python_call(args: Sequence[str]) -> tuple[str, str, tuple[str, ...]]:
    """``(kind, value, rest)`` of interpreter arguments; kind: module, code, script or repl."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-m"):
            name = arg[2:] or (args[i + 1] if i + 1 < len(args) else "")
            return "module", name, tuple(args[i + (1 if arg[2:] else 2) :])
        if arg.startswith("-c"):
            return "code", "", ()
        if arg in ("-W", "-X"):
            i += 2
        elif arg.startswith("-") and arg != "-":
            i += 1
        else:
            return "script", arg, tuple(args[i + 1 :])
    return "repl", "", ()


def _git(args: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """Git subcommand and its arguments (global options skipped)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree") else 1
    return (args[i], tuple(args[i + 1 :])) if i < len(args) else ("", ())


_TEST_MODULES = frozenset({"pytest", "py.test", "unittest", "tox", "nox"})
_TEST_COMMAND = re.compile(r"py\.?test(-?[0-9.]+)?|tox|nox")
_FILEOPS = frozenset({"cp", "mv", "rm", "mkdir", "touch", "rmdir", "ln", "chmod"})
_GREPS = frozenset({"grep", "egrep", "fgrep", "rg", "ag"})
_PAGERS = frozenset({"cat", "head", "tail", "less", "more", "nl"})
_NEUTRAL = frozenset(
    {"cat", "echo", "printf", "export", "source", ".", "set", "true", "false", ":"}
)


def install_args(words: tuple[str, ...]) -> tuple[str, ...] | None:
    """The arguments after the package manager (``pip``, ``uv pip``, ``conda install`` ...)."""
    name, args = base_name(words[0]), words[1:]
    if re.fullmatch(r"pip[0-9.]*", name):
        return args
    if PYTHON_NAME.fullmatch(name):
        kind, module, rest = python_call(args)
        return rest if kind == "module" and module == "pip" else None
    if name == "uv" and args[:1] == ("pip",):
        return args[1:]
    if name in ("conda", "apt-get") and "install" in positional_args(args)[:1]:
        return args
    return None


def test_args(words: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """``(runner, arguments)`` when the words run tests (pytest, unittest, tox, nox)."""
    name, args = base_name(words[0]), words[1:]
    if _TEST_COMMAND.fullmatch(name):
        return ("pytest" if name.startswith("py") else name), args
    if PYTHON_NAME.fullmatch(name) or name == "coverage":
        kind, module, rest = python_call(args[1:] if name == "coverage" else args)
        if kind == "module" and module in _TEST_MODULES:
            return ("pytest" if module == "py.test" else module), rest
    return None


_GREP_VALUE_OPTS = {
    "rg": frozenset("-e -f -m -A -B -C -g -t -T -j -M -r -E --glob --type --type-not".split()),
    "ag": frozenset("-A -B -C -G -g -m --ignore".split()),
}
_GREP_DEFAULT_OPTS = frozenset(
    "-e -f -m -A -B -C -d -D --regexp --file --max-count --after-context --before-context "
    "--context --include --exclude --exclude-dir --exclude-from --label --binary-files".split()
)
_FIND_EXPR = re.compile(r"[-(!)]")


def search_target(words: tuple[str, ...]) -> str | None:
    """The searched path of a search command (``.`` when none), ``None`` if not a search."""
    name, args = base_name(words[0]), words[1:]
    if name == "git":
        sub, args = _git(args)
        if sub != "grep":
            return None
        name = "grep"
    if name in _GREPS:
        operands = positional_args(args, _GREP_VALUE_OPTS.get(name, _GREP_DEFAULT_OPTS))
        explicit = any(
            a in ("-e", "-f", "--regexp", "--file") or a[:9] == "--regexp=" for a in args
        )
        paths = operands if explicit else operands[1:]
    elif name == "ls":
        paths = positional_args(args)
    elif name == "find":
        i = 0
        while i < len(args) and re.fullmatch(r"-[HLPD]|-O\d*", args[i]):
            i += 2 if args[i] == "-D" else 1
        paths = []
        for arg in args[i:]:
            if _FIND_EXPR.match(arg):
                break
            paths.append(arg)
    else:
        return None
    return paths[-1] if paths else "."


_SED_RANGE = re.compile(r"(\d+)(?:,(\d+|\$))?p")
_AWK_LINE = re.compile(r"\s*NR\s*==\s*(\d+)\s*")
_AWK_RANGE = re.compile(r"\s*NR\s*(>=?)\s*(\d+)\s*&&\s*NR\s*(<=?)\s*(\d+)\s*")
_HEAD_COUNT = re.compile(r"(?:-n|--lines=|-)(\d+)")
_PATHLIKE = re.compile(r".*(/|\.\w+$)")
_REV_RANGE = re.compile(r"[^./]\.\.")


def _head_span(args: Sequence[str]) -> tuple[int, int] | None:
    """Lines ``head`` prints: ``(1, N)``; ``None`` (full) for bytes or an "all but" count."""
    count = "10"
    for arg, following in pairwise((*args, "")):
        if arg in ("-n", "--lines"):
            count = following
        elif arg.startswith(("-c", "--bytes")):
            return None
        elif match := _HEAD_COUNT.fullmatch(arg):
            count = match.group(1)
    return (1, int(count)) if count.isdigit() and int(count) > 0 else None


def view_spec(words: tuple[str, ...]) -> tuple[str, tuple[int, int] | None] | None:
    """``(path, line range or None for full)`` of a view command, ``None`` if not a view.

    A range ``(start, -1)`` runs to the end of the file.
    """
    name, args = base_name(words[0]), words[1:]
    if name == "git":
        sub, args = _git(args)
        if sub not in ("show", "diff"):
            return None
        if "--" in args:
            paths = list(args[args.index("--") + 1 :])
        else:
            paths = [a.split(":", 1)[1] if ":" in a else a for a in positional_args(args)]
            paths = [p for p in paths if _PATHLIKE.match(p) and not _REV_RANGE.search(p)]
        return (paths[-1] if paths else "."), None
    if name in _PAGERS:
        operands = positional_args(args, {"-n", "-c"} if name in ("head", "tail") else ())
        if not operands:
            return None
        return operands[-1], _head_span(args) if name == "head" else None
    if name == "sed":
        quiet = any(
            a in ("--quiet", "--silent") or re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", a) for a in args
        )
        if not quiet or any(a.startswith(("-i", "--in-place")) for a in args):
            return None
        scripts = [b for a, b in pairwise(args) if a in ("-e", "--expression")]
        operands = positional_args(args, {"-e", "--expression", "-f", "--file"})
        files = operands if scripts else operands[1:]
        script = (scripts or operands or [""])[0]
        if not files:
            return None
        match = _SED_RANGE.fullmatch(script.strip())
        if not match:
            return files[-1], None
        start = int(match.group(1))
        stop = match.group(2) or match.group(1)
        return files[-1], (start, -1 if stop == "$" else int(stop))
    if name in ("awk", "gawk", "mawk"):
        operands = positional_args(args, {"-F", "-v", "-f"})
        if any(a.startswith("-f") for a in args) or len(operands) < 2:
            return None
        program = operands[0]
        if "print" not in program and "{" in program:
            return None
        single, between = _AWK_LINE.fullmatch(program), _AWK_RANGE.fullmatch(program)
        if single:
            return operands[-1], (int(single.group(1)),) * 2
        if between:
            lo = int(between.group(2)) + (between.group(1) == ">")
            hi = int(between.group(4)) - (between.group(3) == "<")
            return operands[-1], (lo, hi)
        return operands[-1], None
    return None


def _category(words: tuple[str, ...]) -> str:
    """Category of one simple command (precedence install > test > fileop > search > view)."""
    if install_args(words) is not None:
        return "install"
    if test_args(words) is not None:
        return "test"
    if base_name(words[0]) in _FILEOPS:
        return "fileop"
    if search_target(words) is not None:
        return "search"
    if view_spec(words) is not None:
        return "view"
    return "execute"


def decide(segs: Sequence[_Seg]) -> tuple[str, _Seg | None]:
    """Winning category of a command's simple commands and the first one that has it."""
    best, chosen = "execute", None
    for seg in segs:
        category = _category(seg.words)
        if seg.downstream and _RANK[category] < _RANK["fileop"]:
            continue  # a pipeline filter such as `| tail` or `| grep x`
        if chosen is None or _RANK[category] > _RANK[best]:
            best, chosen = category, seg
        elif category == best == "execute" and base_name(chosen.words[0]) in _NEUTRAL:
            if base_name(seg.words[0]) not in _NEUTRAL:
                chosen = seg  # the first real program, not echo/export
    return best, chosen


def classify_command(cmd: str) -> str:
    """RTMC category of a bash command string (rules in the module docstring).

    >>> [classify_command(c) for c in ("cd src && pytest -x", "pip install -e .", "sed -n 1,9p f")]
    ['test', 'install', 'view']
    >>> [classify_command(c) for c in ("mkdir x", "python repro.py 2>&1 | tail -5", "grep -rn x .")]
    ['fileop', 'execute', 'search']
    """
    return decide(split_segments(cmd))[0]
