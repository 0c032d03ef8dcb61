"""RTMC state and action signatures for the SWE environment (rules in docs/swe.md).

This module holds:

* :data:`CATEGORIES` - the ten action categories, and :func:`classify` / :func:`classify_command`,
  which put a :class:`~agentenvs.swe.calls.ToolCall` or a bash command string into one of them.
* :func:`result_tag` - ``"ok"`` or ``"error"`` for a call's outcome.
* :func:`normalize_path`, :func:`view_buckets`, :func:`render_buckets`, :func:`hash4` - the pure
  rules the signatures are built from.
* :class:`SWESignature` - the signature function: ``action_signature(call)``,
  ``state_signature(history)`` and ``sig(history, call) -> (state, action)``.
* :class:`SignatureState` - the same state signature, updated one call at a time (at most
  :data:`MAX_STATE_OPS` operations held; the rest folded into a digest).

Action signatures read ``category:scope@target[:result]``; the state before a step is the sorted
per-file set of operation codes plus the think/test counters, built from the calls before it:

>>> from agentenvs.swe.calls import ToolCall
>>> sig = SWESignature()
>>> view = ToolCall("file_editor", {"command": "view", "path": "/testbed/src/core.py"})
>>> grep = ToolCall("execute_bash", {"cmd": 'grep -n "def parse" src/core.py'}, exit_code=0)
>>> sig([view], grep)
('src/core.py:Vf|FLAGS(think=0,test_pass=0,test_fail=0)', 'search@src/core.py')

Bash commands are read by a small POSIX-style lexer (quotes, escapes, ``$(...)``, comments,
operators, heredoc bodies) that never raises: an unclosed quote runs to the end of the string. The
command is cut into simple commands at ``;``, ``&&``, ``||``, ``&``, newlines and parentheses (a
list) and at ``|`` (a pipeline); ``cd DIR`` commands are dropped and move the directory later paths
are read against; wrappers (``sudo``, ``env``, ``time``, ``timeout N``, ``xargs``, ``uv run`` ...)
and ``VAR=x`` prefixes are skipped; ``bash -c '...'`` is read recursively. Each simple command gets
a category and the command's category is the highest one by precedence install > test > fileop >
search > view > execute, where a pipeline stage after the first counts only as install, test or
fileop (a ``| tail`` or ``| grep`` filters output; it is not a read of the repository). The
signature's target comes from the first simple command that has the winning category. That reading
lives in :mod:`~agentenvs.swe.signature_bash` (:func:`classify_command` is re-exported here).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, NamedTuple

from agentenvs.swe.calls import ToolCall
from agentenvs.swe.signature_bash import (
    PYTHON_NAME,
    SHELLS,
    base_name,
    classify_command,
    decide,
    install_args,
    positional_args,
    python_call,
    search_target,
    split_segments,
    test_args,
    view_spec,
)

__all__ = [
    "CATEGORIES",
    "MAX_STATE_OPS",
    "SWESignature",
    "SignatureState",
    "classify",
    "classify_command",
    "hash4",
    "normalize_path",
    "render_buckets",
    "result_tag",
    "view_buckets",
]

#: Most ``(path, operation)`` pairs a :class:`SignatureState` holds (about 35 MiB of host memory
#: at one path each); later new ones are folded, in order, into a digest that the key ends with.
MAX_STATE_OPS = 100_000

#: The RTMC action categories (Table 1 of the paper).
CATEGORIES = (
    "view",
    "search",
    "modify",
    "create",
    "execute",
    "test",
    "install",
    "fileop",
    "think",
    "finish",
)
_TOOLS = frozenset({"file_editor", "search", "execute_bash", "think", "finish"})
_ALIASES = {"str_replace_editor": "file_editor", "bash": "execute_bash", "submit": "finish"}
_EDITOR = {
    "view": "view",
    "create": "create",
    "str_replace": "modify",
    "insert": "modify",
    "undo_edit": "modify",
}
_INVALID = "invalid"

# ----------------------------------------------------------------------------- pure rules


def normalize_path(path: str, repo_root: str = "/testbed", cwd: str = ".") -> str:
    """Repository-relative POSIX form of ``path`` read from directory ``cwd``.

    Paths inside ``repo_root`` lose the root prefix (the root itself is ``.``); paths outside it
    keep their absolute normalised form.

    >>> [normalize_path(p) for p in ("/testbed/src/core.py", "./src/core.py", "src//x/../core.py")]
    ['src/core.py', 'src/core.py', 'src/core.py']
    >>> normalize_path("/testbed/"), normalize_path("../etc/hosts")
    ('.', '/etc/hosts')
    >>> normalize_path("a.py", cwd="src")
    'src/a.py'
    """
    root = posixpath.normpath(repo_root)
    full = posixpath.normpath(posixpath.join(root, cwd, path.strip()))
    if full == root:
        return "."
    prefix = root.rstrip("/") + "/"
    return full[len(prefix) :] if full.startswith(prefix) else full


def view_buckets(start: int, end: int, bucket_size: int = 100) -> tuple[int, ...]:
    """Buckets ``floor(line / bucket_size)`` covered by the displayed lines ``start..end``.

    A reversed range counts as its start line alone; negative lines count as 0.

    >>> view_buckets(100, 299), view_buckets(200, 299), view_buckets(1, 50)
    ((1, 2), (2,), (0,))
    """
    if bucket_size < 1:
        raise ValueError(f"bucket_size must be positive, got {bucket_size}")
    first = max(start, 0) // bucket_size
    return tuple(range(first, max(end, start, 0) // bucket_size + 1))


def render_buckets(buckets: Sequence[int]) -> str:
    """The action-signature form of contiguous buckets: ``[b]`` or ``[b1-b2]``.

    >>> render_buckets(view_buckets(100, 299)), render_buckets(view_buckets(200, 299))
    ('[1-2]', '[2]')
    """
    lo, hi = min(buckets), max(buckets)
    return f"[{lo}]" if lo == hi else f"[{lo}-{hi}]"


def _md5_prefix(text: str, length: int) -> str:
    # surrogatepass: an edit string may hold lone surrogates (bytes that are not UTF-8)
    return hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def hash4(old: str, new: str) -> str:
    """First four hex digits of ``md5(old + new)`` (UTF-8), the paper's edit hash.

    >>> hash4("x = 1", "x = 2")
    '6d95'
    """
    return _md5_prefix(old + new, 4)


_FAILED = re.compile(r"\b0*[1-9]\d* failed\b")
_ERROR_TEXT = re.compile(r"Traceback|Error\b|command not found")


def result_tag(call: ToolCall) -> str:
    """``"error"`` when the exit code is non-zero or the output reports a failure, else ``"ok"``.

    Failure text: ``N failed`` with N >= 1, ``Traceback``, a word ending in ``Error`` (``Error:``,
    ``AssertionError``, ...; case-sensitive) or ``command not found``.

    >>> result_tag(ToolCall("execute_bash", {"cmd": "pytest"}, "1 failed, 5 passed", exit_code=1))
    'error'
    >>> result_tag(ToolCall("execute_bash", {"cmd": "pytest"}, "0 failed, 6 passed", exit_code=0))
    'ok'
    """
    if call.exit_code not in (None, 0):
        return "error"
    return "error" if _FAILED.search(call.result) or _ERROR_TEXT.search(call.result) else "ok"


# ----------------------------------------------------------------------------- calls


def _tool(call: ToolCall) -> str:
    return _ALIASES.get(call.name, call.name)


def _bash_cmd(arguments: Mapping[str, Any]) -> str:
    cmd = arguments.get("cmd", arguments.get("command", ""))
    return cmd if isinstance(cmd, str) else ""


def _editor_command(call: ToolCall) -> str:
    command = call.arguments.get("command")
    return command if isinstance(command, str) else ""


def _is_invalid(call: ToolCall) -> bool:
    tool = _tool(call)
    return (
        not call.valid
        or tool not in _TOOLS
        or (tool == "file_editor" and _editor_command(call) not in _EDITOR)
    )


def _bash_edit_category(call: ToolCall, category: str) -> str:
    """The SDK extension: a bash command that changed files is an edit (or a creation)."""
    if call.fs_changes and category in ("execute", "view", "fileop"):
        return "create" if all(c.kind == "created" for c in call.fs_changes) else "modify"
    return category


def classify(call: ToolCall) -> str:
    """RTMC category of a call.

    The tool decides (``file_editor`` by its ``command``, ``execute_bash`` by
    :func:`classify_command` and the bash-edit rule); a call whose tool or editor command is unknown
    falls back to ``execute``. Invalid calls are classified the same way (their action signature
    is ``invalid``).

    >>> classify(ToolCall("file_editor", {"command": "insert", "path": "a.py"}))
    'modify'
    >>> classify(ToolCall("", valid=False))
    'execute'
    """
    tool = _tool(call)
    if tool == "file_editor":
        return _EDITOR.get(_editor_command(call), "execute")
    if tool == "execute_bash":
        return _bash_edit_category(call, classify_command(_bash_cmd(call.arguments)))
    return tool if tool in ("search", "think", "finish") else "execute"


_NUMBERED_LINE = re.compile(r"^ *(\d+)[ \t]", re.MULTILINE)
_DIR_VIEW = "Here's the files and directories"


def _parse_range(value: Any) -> tuple[int, int] | None:
    """``view_range`` as two ints (``"[120, 250]"``, ``[120, 250]``, ``"120,250"``) or ``None``."""
    if isinstance(value, str):
        numbers = re.findall(r"-?\d+", value)
    elif isinstance(value, (list, tuple)):
        numbers = [str(v).strip() for v in value]
    else:
        return None
    try:
        start, end = (int(v) for v in numbers)
    except ValueError:
        return None
    return start, end


def _editor_span(call: ToolCall) -> tuple[int, int] | None:
    """Line range of a file_editor view, ``None`` for a full view (rules in ``SWESignature``)."""
    span = _parse_range(call.arguments.get("view_range"))
    if span is None or call.result.startswith(_DIR_VIEW):
        return None
    start, end = span
    shown = [int(n) for n in _NUMBERED_LINE.findall(call.result)]
    last = max(shown) if shown and "<response clipped>" not in call.result else None
    if start <= 1 and (end == -1 or (last is not None and last < end)):
        return None
    if end == -1:
        end = last if last is not None else start
    return start, end


class _Effect(NamedTuple):
    """What one call means: its action signature, its state ops and the flag it counts."""

    action: str
    ops: tuple[tuple[str, str], ...] = ()
    flag: str = ""


@dataclass(frozen=True)
class SWESignature:
    """RTMC's SWE signature function: ``sig(history, call) -> (state, action)``.

    Attributes:
        repo_root: the sandbox repository root; paths under it are written relative to it.
        bucket_size: lines per view bucket.
        hash_len: hex digits kept of an edit's MD5.

    Rules beyond the paper (docs/swe.md):

    * a file_editor view is full without ``view_range``, on a directory, for ``[1, -1]``, or when
      its numbered output stops before the range's end; ``[k, -1]`` ends at the last numbered line
      shown (the start line when none is);
    * ``undo_edit`` is ``modify:undo:<h>@f`` with state op ``U:<h>`` (``<h>`` as for a bash edit);
    * a bash command whose ``fs_changes`` is non-empty and whose category is execute, view or fileop
      is ``modify:bash:<h>@<first changed path>`` (``M:<h>`` on every changed file), or
      ``create@<first path>`` (``C`` on each) when every change is a creation; ``<h>`` hashes the
      concatenated ``before_sha1 + after_sha1`` (``None`` as ``""``) of the changes in path order;
    * bash targets (paths read against the ``cd`` directory): ``test@`` the sorted, comma-joined
      pytest paths or node ids (unittest names), else the directory it ran in (``.``);
      ``install@`` the first package (PEP 503 name) or ``-e``/``-r``/local path, ``_`` when none;
      ``search@`` the last path operand of grep/rg/ag/git grep/ls, or find's last start path,
      else ``.``; views the last file operand (``head`` is lines ``1..N``, ``sed -n A,Bp`` and
      ``awk 'NR>=A && NR<=B'`` their range, the rest full); ``fileop:<op>@`` the first operand
      (chmod: after the mode); ``execute@`` a Python/shell script path, a ``-m`` module,
      ``python`` for ``-c``, a ``./program`` path, else the program name;
    * invalid calls are ``invalid`` and leave the state unchanged.

    >>> from agentenvs.swe.calls import ToolCall
    >>> sig = SWESignature()
    >>> view = {"command": "view", "path": "/testbed/src/core.py", "view_range": "[120, 250]"}
    >>> sig.action_signature(ToolCall("file_editor", view))
    'view:partial[1-2]@src/core.py'
    >>> sig.state_signature([])
    'FLAGS(think=0,test_pass=0,test_fail=0)'
    """

    repo_root: str = "/testbed"
    bucket_size: int = 100
    hash_len: int = 4

    def __post_init__(self) -> None:
        if self.bucket_size < 1:
            raise ValueError(f"bucket_size must be positive, got {self.bucket_size}")
        if not 1 <= self.hash_len <= 32:
            raise ValueError(f"hash_len must be in [1, 32], got {self.hash_len}")

    def classify(self, call: ToolCall) -> str:
        """Category of ``call`` (see :func:`classify`)."""
        return classify(call)

    def action_signature(self, call: ToolCall) -> str:
        """``category:scope@target[:result]`` of ``call``; ``invalid`` for an invalid call."""
        return self._effect(call).action

    def state_signature(self, history: Sequence[ToolCall]) -> str:
        """Canonical state after ``history`` (the calls before the current step)."""
        state = SignatureState(self)
        for call in history:
            state.update(call)
        return state.key()

    def __call__(self, history: Sequence[ToolCall], call: ToolCall) -> tuple[str, str]:
        """``(state_signature(history), action_signature(call))``."""
        return self.state_signature(history), self.action_signature(call)

    # -- internals

    def _path(self, path: Any, cwd: str = ".") -> str:
        return normalize_path(path if isinstance(path, str) else "", self.repo_root, cwd)

    def _view(self, path: str, span: tuple[int, int] | None) -> _Effect:
        if span is None:
            return _Effect(f"view:full@{path}", ((path, "Vf"),))
        buckets = view_buckets(span[0], span[1], self.bucket_size)
        ops = tuple((path, f"V[{b}]") for b in buckets)
        return _Effect(f"view:partial{render_buckets(buckets)}@{path}", ops)

    def _changes_hash(self, call: ToolCall) -> str:
        changes = sorted(call.fs_changes, key=lambda c: self._path(c.path))
        text = "".join((c.before_sha1 or "") + (c.after_sha1 or "") for c in changes)
        return _md5_prefix(text, self.hash_len)

    def _effect(self, call: ToolCall) -> _Effect:
        if _is_invalid(call):
            return _Effect(_INVALID)
        tool, args = _tool(call), call.arguments
        if tool in ("think", "finish"):
            return _Effect(tool, (), "think" if tool == "think" else "")
        if tool == "search":
            path = self._path(args.get("path") or ".")
            return _Effect(f"search@{path}", ((path, "S"),))
        if tool == "execute_bash":
            return self._bash(call)
        command, path = args["command"], self._path(args.get("path"))
        if command == "view":
            return self._view(path, _editor_span(call))
        if command == "create":
            return _Effect(f"create@{path}", ((path, "C"),))
        if command == "undo_edit":
            digest = self._changes_hash(call)
            return _Effect(f"modify:undo:{digest}@{path}", ((path, f"U:{digest}"),))
        old = str(args.get("old_str") or "") if command == "str_replace" else ""
        digest = _md5_prefix(old + str(args.get("new_str") or ""), self.hash_len)
        kind, code = ("replace", "M") if command == "str_replace" else ("insert", "I")
        return _Effect(f"modify:{kind}:{digest}@{path}", ((path, f"{code}:{digest}"),))

    def _bash(self, call: ToolCall) -> _Effect:
        segs = split_segments(_bash_cmd(call.arguments))
        category, seg = decide(segs)
        edit = _bash_edit_category(call, category)
        if edit != category:
            paths = sorted({self._path(c.path) for c in call.fs_changes})
            if edit == "create":
                return _Effect(f"create@{paths[0]}", tuple((p, "C") for p in paths))
            digest = self._changes_hash(call)
            return _Effect(
                f"modify:bash:{digest}@{paths[0]}", tuple((p, f"M:{digest}") for p in paths)
            )
        tag = result_tag(call)
        if seg is None:
            return _Effect(f"execute@_:{tag}")
        words, cwd = seg.words, seg.cwd
        if category == "search":
            path = self._path(search_target(words), cwd)
            return _Effect(f"search@{path}", ((path, "S"),))
        if category == "view":
            raw, span = view_spec(words)  # type: ignore[misc]
            return self._view(self._path(raw, cwd), span)
        if category == "fileop":
            op = base_name(words[0])
            operands = [*positional_args(words[1:])[1 if op == "chmod" else 0 :], "."]
            return _Effect(f"fileop:{op}@{self._path(operands[0], cwd)}")
        if category == "test":
            flag = "test_pass" if tag == "ok" else "test_fail"
            return _Effect(f"test@{self._test_target(words, cwd)}:{tag}", (), flag)
        if category == "install":
            return _Effect(f"install@{self._install_target(words, cwd)}:{tag}")
        return _Effect(f"execute@{self._execute_target(words, cwd)}:{tag}")

    def _test_target(self, words: tuple[str, ...], cwd: str) -> str:
        runner, args = test_args(words)  # type: ignore[misc]
        if runner == "pytest":
            targets = []
            for arg in positional_args(args, _PYTEST_VALUE_OPTS):
                path, sep, node = arg.partition("::")
                targets.append(self._path(path, cwd) + sep + node)
        elif runner == "unittest":
            names = [a for a in positional_args(args, {"-k", "-s", "-p", "-t"}) if a != "discover"]
            targets = [self._path(a, cwd) if "/" in a or a.endswith(".py") else a for a in names]
        else:
            targets = []
        return ",".join(sorted(set(targets))) or self._path(".", cwd)

    def _install_target(self, words: tuple[str, ...], cwd: str) -> str:
        args = install_args(words) or ()
        valued = [b for a, b in pairwise(args) if a in ("-e", "--editable", "-r", "--requirement")]
        operands = positional_args(args, _INSTALL_VALUE_OPTS)
        if operands[:1] not in (["install"], ["uninstall"], ["download"], ["wheel"]):
            return "_"
        targets = valued + operands[1:]
        if not targets:
            return "_"
        target = re.sub(r"\[[^\]]*\]$", "", targets[0])
        if "://" in target:
            return target
        if valued or target.startswith((".", "/", "~")) or "/" in target:
            return self._path(target, cwd)  # -e / -r values and local paths
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", target)
        return re.sub(r"[-_.]+", "-", name.group(0).lower()) if name else target

    def _execute_target(self, words: tuple[str, ...], cwd: str) -> str:
        name = base_name(words[0])
        if PYTHON_NAME.fullmatch(name) or name in SHELLS:
            kind, value, _ = python_call(words[1:])
            if kind == "script":
                return self._path(value, cwd)
            if kind == "module" and value:
                return value
            return "python" if PYTHON_NAME.fullmatch(name) else name
        if "/" in words[0]:
            return self._path(words[0], cwd)
        return name or "_"


_PYTEST_VALUE_OPTS = frozenset(
    "-k -m -p -c -o -n -W -r --rootdir --maxfail --deselect --ignore --ignore-glob --tb --junitxml "
    "--junit-xml --durations --confcutdir --basetemp --cov-report --log-level --log-cli-level "
    "--timeout --override-ini --config-file --import-mode --capture --dist --numprocesses "
    "--reruns".split()
)
_INSTALL_VALUE_OPTS = frozenset(
    "-e --editable -r --requirement -c --constraint -i --index-url --extra-index-url -f "
    "--find-links -t --target --prefix --root -n --name -p --channel".split()
)


@dataclass
class SignatureState:
    """The state signature, updated call by call (``key()`` after the calls so far).

    Folding :meth:`update` over a history gives ``SWESignature.state_signature(history)``. Past
    :data:`MAX_STATE_OPS` pairs (tens of thousands of files changed, step after step), each new
    pair is folded into :attr:`overflow` (a digest of the pairs in the order they came) instead
    of being held, so the memory stays bounded; such keys end ``|OVERFLOW(<digest>)``.

    >>> from agentenvs.swe.calls import ToolCall
    >>> state = SignatureState()
    >>> state.update(ToolCall("think", {"thought": "hmm"}))
    >>> state.key()
    'FLAGS(think=1,test_pass=0,test_fail=0)'
    """

    signature: SWESignature = field(default_factory=SWESignature)
    files: dict[str, set[str]] = field(default_factory=dict)
    think: int = 0
    test_pass: int = 0
    test_fail: int = 0
    overflow: str = ""
    _n_ops: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._n_ops = sum(len(ops) for ops in self.files.values())

    def update(self, call: ToolCall) -> None:
        """Add the effect of ``call`` (file ops, think or test counters)."""
        effect = self.signature._effect(call)
        for path, op in effect.ops:
            held = self.files.get(path)
            if held is not None and op in held:
                continue
            if self._n_ops < MAX_STATE_OPS:
                self.files.setdefault(path, set()).add(op)
                self._n_ops += 1
            else:
                pair = f"{self.overflow}\0{path}\0{op}".encode("utf-8", "surrogatepass")
                self.overflow = hashlib.sha256(pair).hexdigest()[:16]
        if effect.flag:
            setattr(self, effect.flag, getattr(self, effect.flag) + 1)

    def key(self) -> str:
        """The canonical string: ``f1:op,op|f2:op|FLAGS(think=K,test_pass=P,test_fail=F)``."""
        parts = [f"{path}:{','.join(sorted(ops))}" for path, ops in sorted(self.files.items())]
        flags = f"FLAGS(think={self.think},test_pass={self.test_pass},test_fail={self.test_fail})"
        overflow = [f"OVERFLOW({self.overflow})"] if self.overflow else []
        return "|".join([*parts, *overflow, flags])

    def copy(self) -> SignatureState:
        """An independent copy (same signature settings)."""
        return SignatureState(
            self.signature,
            {path: set(ops) for path, ops in self.files.items()},
            self.think,
            self.test_pass,
            self.test_fail,
            self.overflow,
        )
