"""Running a task's tests and deciding whether it is resolved (docs/swe.md, "Grading").

This module holds:

* :data:`DEFAULT_TEST_COMMAND` - the pytest command a task runs unless it names its own.
* :func:`parse_statuses` - per-test outcomes from the ``-rA`` summary of a pytest log (task
  generation only: a log is whatever the tests printed, so grading never reads it).
* :func:`is_pass` - which outcomes count as passing (``PASSED``, ``XFAIL``).
* :class:`TestRun` / :func:`run_tests` - one test run through a runner, outcomes from its log.
* :data:`INFRASTRUCTURE_GLOBS` - the test-infrastructure files grading takes from the snapshot.
* :class:`UnsafePath` / :func:`write_nofollow` - writing a file with no symbolic link on the way.
* :func:`isolated_command` - a task's pytest command line as the isolated grading launcher
  (:mod:`agentenvs.swe.grade_launcher`) runs it.
* :func:`read_report` - the body of an authenticated report the launcher wrote.
* :class:`Grade` / :func:`grade` - one graded test run in a sandbox, outcomes from the launcher's
  report, the FAIL_TO_PASS tests run again without pytest (:mod:`agentenvs.swe.plain_runner`),
  and the SWE-bench "FULL" rule: resolved iff every FAIL_TO_PASS and every PASS_TO_PASS test
  passes.

A runner is any ``(command, workspace, timeout) -> CommandResult`` callable, e.g.
``lambda c, w, t: sandbox.run(c, w, timeout=t, merge_stderr=True)``.

>>> log = '''PASSED tests/t.py::test_a
... FAILED tests/t.py::test_b[1-2] - assert 1 == 2
... ERROR tests/u.py - ImportError: no module named x'''
>>> parse_statuses(log)
{'tests/t.py::test_a': 'PASSED', 'tests/t.py::test_b[1-2]': 'FAILED', 'tests/u.py': 'ERROR'}
>>> is_pass("XFAIL"), is_pass("SKIPPED"), is_pass(None)
(True, False, False)
>>> isolated_command("PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -rA -q")
('PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 ', 'python', ['-rA', '-q'])
"""

from __future__ import annotations

import hmac
import json
import os
import re
import secrets
import shlex
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentenvs.swe.calls import CommandResult
from agentenvs.swe.reclaim import tagged_prefix
from agentenvs.swe.sandbox import Bind, Sandbox
from agentenvs.swe.workspace import Workspace, own_tree

__all__ = [
    "DEFAULT_TEST_COMMAND",
    "Runner",
    "parse_statuses",
    "is_pass",
    "TestRun",
    "run_tests",
    "INFRASTRUCTURE_GLOBS",
    "UnsafePath",
    "write_nofollow",
    "isolated_command",
    "read_report",
    "Grade",
    "grade",
]

#: The test command of a task that names none; the node ids to run are appended.
DEFAULT_TEST_COMMAND = "python -m pytest -rA -p no:cacheprovider -q"

#: ``(command, workspace directory, timeout in seconds) -> CommandResult``.
Runner = Callable[[str, Path, float], CommandResult]

#: Files grading takes from the task snapshot whatever the agent did (git glob pathspecs): the
#: agent's versions are left out of the diff grading applies, so the snapshot's stay and files
#: the agent added are absent. pytest's configuration and hooks (``conftest.py``, every config
#: file pytest reads, whole ``pyproject.toml``/``setup.cfg``), interpreter start-up hooks,
#: installed-package metadata (a ``pytest11`` entry point would load a plugin), attributes, and
#: anything named like the report plugin at the top (it would shadow it on ``sys.path``).
INFRASTRUCTURE_GLOBS = (
    "**/conftest.py",
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/pytest.toml",
    "**/.pytest.toml",
    "**/tox.ini",
    "**/setup.cfg",
    "**/pyproject.toml",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "**/*.dist-info/**",
    "**/*.egg-info/**",
    "**/.gitattributes",
    "agentenvs_pytest_report*",
    "agentenvs_pytest_report*/**",
)
#: Module name of the report plugin inside the sandbox.
PLUGIN_MODULE = "agentenvs_pytest_report"
#: The files grading copies into the sandbox (name there -> file of this package).
GRADING_FILES = {
    "agentenvs_grade.py": "grade_launcher.py",
    f"{PLUGIN_MODULE}.py": "report_plugin.py",
    "agentenvs_plain_runner.py": "plain_runner.py",
}
#: Where grading runs see a fresh random directory holding ``plugin`` and ``report``.
GRADING_TARGET = "/run/agentenvs"
#: The largest report read, bytes.
MAX_REPORT_BYTES = 16 * 2**20

_STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS", "UNSUPPORTED")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_LINE = re.compile(rf"^({'|'.join(_STATUSES)}) (\S.*)$", re.MULTILINE)


def _node_id(rest: str) -> str:
    """The node id at the start of a summary line's tail (``id - message`` or ``id``).

    A parametrised id may hold spaces and `` - `` inside its brackets: when a ``[`` comes before
    the first `` - ``, the id ends at the first ``] - `` (or the end of the line)."""
    bracket, sep = rest.find("["), rest.find(" - ")
    if 0 <= bracket and (sep < 0 or bracket < sep):
        cut = rest.find("] - ", bracket)
        return rest if cut < 0 else rest[: cut + 1]
    return rest if sep < 0 else rest[:sep]


def parse_statuses(log: str) -> dict[str, str]:
    """Node id -> outcome (``PASSED``, ``FAILED``, ``ERROR``, ``SKIPPED``, ``XFAIL``, ``XPASS``).

    Reads the short test summary that ``pytest -rA`` prints, one ``STATUS node-id[ - message]``
    line per outcome. A collection error is reported under the file's path (every test of that
    file is then missing). ``SKIPPED`` lines carry a location, not a node id, so skipped tests
    are missing too; missing ids fail (:func:`is_pass`). A later line for the same id wins (a
    test that passed and then errored in teardown ends ``ERROR``).
    """
    statuses: dict[str, str] = {}
    for status, rest in _LINE.findall(log):
        if status == "SKIPPED" and rest.startswith("["):
            continue
        statuses[_node_id(rest)] = status
    return statuses


def is_pass(status: str | None) -> bool:
    """``PASSED`` and ``XFAIL`` pass; ``FAILED``, ``ERROR``, ``XPASS`` (strict), ``SKIPPED`` and a
    missing outcome (``None``) fail."""
    return status in ("PASSED", "XFAIL")


@dataclass(frozen=True)
class TestRun:
    """One test command's outcome.

    Attributes:
        statuses: node id -> outcome, from :func:`parse_statuses`.
        log: the command's merged output (capped by the sandbox).
        timed_out: the wall timeout killed the run (every status is then missing).
        seconds: wall time, seconds.
    """

    __test__ = False  # not a pytest test class

    statuses: dict[str, str]
    log: str
    timed_out: bool
    seconds: float


def run_tests(
    run: Runner,
    workspace: Path,
    ids: Sequence[str] | None = None,
    *,
    command: str = DEFAULT_TEST_COMMAND,
    timeout: float = 120.0,
) -> TestRun:
    """Run ``command`` in ``workspace`` with the node ``ids`` appended (shell-quoted; ``None`` =
    the whole suite) and parse the outcomes."""
    line = command if not ids else f"{command} {' '.join(shlex.quote(i) for i in ids)}"
    result = run(line, workspace, timeout)
    statuses = {} if result.timed_out else parse_statuses(result.output)
    return TestRun(statuses, result.output, result.timed_out, result.seconds)


class UnsafePath(ValueError):
    """A path grading must write goes through a symbolic link (or a non-directory)."""


def write_nofollow(root: Path, rel: str, content: bytes) -> None:
    """Write ``content`` to ``root / rel``, creating missing directories, opening every
    component with ``O_NOFOLLOW`` (relative to the previous one's descriptor), so nothing is
    ever written through a link.

    Raises:
        UnsafePath: a component is a symbolic link or not a directory, or the file itself is a
            link or a directory.
    """
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise UnsafePath(f"{rel!r} is not a relative path inside the tree")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            except OSError as error:
                raise UnsafePath(f"cannot create {'/'.join(parts[: i + 1])}: {error}") from None
            try:
                nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                raise UnsafePath(
                    f"{'/'.join(parts[: i + 1])} is a symbolic link or not a directory"
                ) from None
            os.close(fd)
            fd = nxt
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            out = os.open(parts[-1], flags, 0o644, dir_fd=fd)
        except OSError as error:
            raise UnsafePath(f"cannot write {rel}: {error.strerror}") from None
        try:
            if not stat.S_ISREG(os.fstat(out).st_mode):
                raise UnsafePath(f"{rel} is not a regular file")
            with os.fdopen(out, "wb", closefd=False) as handle:
                handle.write(content)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def isolated_command(command: str) -> tuple[str, str, list[str]] | None:
    """``(environment assignments, interpreter, pytest arguments)`` of a test command of the
    form ``[VAR=value ...] python -m pytest ARGS`` or ``[VAR=value ...] pytest ARGS``; ``None``
    for any other form (grading cannot run it isolated)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    k = 0
    while k < len(words) and _ASSIGNMENT.match(words[k]):
        k += 1
    prefix = "".join(f"{shlex.quote(w)} " for w in words[:k])
    rest = words[k:]
    if rest[:1] == ["pytest"]:
        return prefix, "python", rest[1:]
    if (
        len(rest) >= 3
        and re.fullmatch(r"(.*/)?python3?(\.\d+)?", rest[0])
        and rest[1:3]
        == [
            "-m",
            "pytest",
        ]
    ):
        return prefix, rest[0], rest[3:]
    return None


def read_report(path: Path, nonce: bytes) -> dict[str, Any] | None:
    """The body of the launcher's report at ``path`` (``outcomes``: node id -> known outcome,
    ``problems``: list of reasons, ``exitstatus``), or ``None`` when it is missing, not a regular
    file (never followed if a link), over :data:`MAX_REPORT_BYTES`, malformed, or not
    authenticated by HMAC-SHA256 with ``nonce``. Outcome entries that are not ``str -> known
    outcome`` are dropped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_REPORT_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = json.loads(handle.read(MAX_REPORT_BYTES))
        text, mac = data["body"], data["mac"]
        expected = hmac.new(nonce, text.encode(), "sha256").hexdigest()
        if not isinstance(mac, str) or not hmac.compare_digest(mac, expected):
            return None
        body = json.loads(text)
        outcomes = body["outcomes"]
        body["outcomes"] = {
            k: v for k, v in outcomes.items() if isinstance(k, str) and v in _STATUSES
        }
        body["problems"] = [str(p) for p in body.get("problems", [])]
        return body
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Grade:
    """A graded submission.

    Attributes:
        resolved: every FAIL_TO_PASS and PASS_TO_PASS test passed.
        tests: node id -> outcome for every graded id (``"MISSING"`` when the report has none).
        n_f2p_passed / n_p2p_passed: how many of each list passed.
        n_f2p / n_p2p: the list sizes.
        timed_out: the test run hit its timeout (resolved is then False).
        log: the test run's output (for people: never parsed).
        invalid: why the submission could not be graded (``""`` when it was), e.g. a symbolic
            link on the way to a withheld test file, a diff that does not apply, no authentic
            report, a sign of tampering with the runner, or a FAIL_TO_PASS test that passed
            under pytest and failed in the run without it.
        unchecked: FAIL_TO_PASS ids of a resolved submission the run without pytest could not
            run (``UNSUPPORTED``: fixtures, marks, ...), so only pytest's outcome counts.
    """

    resolved: bool
    tests: dict[str, str] = field(default_factory=dict)
    n_f2p_passed: int = 0
    n_p2p_passed: int = 0
    n_f2p: int = 0
    n_p2p: int = 0
    timed_out: bool = False
    log: str = ""
    invalid: str = ""
    unchecked: tuple[str, ...] = ()

    @classmethod
    def ungraded(
        cls, fail_to_pass: Sequence[str], pass_to_pass: Sequence[str], reason: str
    ) -> Grade:
        """An invalid submission: not resolved, every id ``"MISSING"``, ``invalid=reason``."""
        ids = dict.fromkeys([*fail_to_pass, *pass_to_pass], "MISSING")
        return cls(False, ids, n_f2p=len(fail_to_pass), n_p2p=len(pass_to_pass), invalid=reason)

    def invalidated(self, reason: str) -> Grade:
        """This grade as an invalid submission: not resolved, ``invalid=reason``, log kept."""
        return replace(self, resolved=False, invalid=reason)


def grade(
    sandbox: Sandbox,
    tree: Path,
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str],
    *,
    hidden: Mapping[str, bytes] | None = None,
    command: str = DEFAULT_TEST_COMMAND,
    timeout: float = 120.0,
) -> Grade:
    """Write the ``hidden`` files (repo-relative path -> content) into ``tree`` with
    :func:`write_nofollow`, run the FAIL_TO_PASS and PASS_TO_PASS ids with ``command`` (a pytest
    command line, see :func:`isolated_command`) in ``sandbox`` through the isolated launcher, and
    grade its authenticated report; a submission pytest calls resolved has its FAIL_TO_PASS ids
    run again in a fresh sandbox run without pytest, and one that fails there is invalid.

    ``tree`` must be a disposable grading tree (grading writes into it): the task's clean
    snapshot with the agent's diff applied (infrastructure files left out of that diff, see
    :data:`INFRASTRUCTURE_GLOBS`) and the ``test_patch`` (SWE-bench). A symbolic link on the way
    to a hidden file, a report that is missing or not authentic, or a problem the launcher found
    (a replaced runner or standard-library object, a shadowing module, a foreign hook, a thread
    left running) makes the submission invalid (reward 0, :attr:`Grade.invalid`); the launcher
    runs from a private read-only directory and writes to a fresh private one, both outside
    ``tree``.
    """
    try:
        for rel, content in (hidden or {}).items():
            write_nofollow(tree, rel, content)
    except UnsafePath as error:
        return Grade.ungraded(fail_to_pass, pass_to_pass, f"invalid submission: {error}")
    parsed = isolated_command(command)
    if parsed is None:
        reason = f"the test command is not `[VAR=value ...] python -m pytest ...`: {command!r}"
        return Grade.ungraded(fail_to_pass, pass_to_pass, reason)
    prefix, python, args = parsed
    ids = list(dict.fromkeys([*fail_to_pass, *pass_to_pass]))
    launch = f"{prefix}{python} -I"
    body, result = _run_isolated(sandbox, tree, launch, "pytest", [*args, *ids], timeout)
    statuses = None if body is None or result.timed_out else body["outcomes"]
    tests = {i: (statuses or {}).get(i, "MISSING") for i in ids}
    f2p = sum(is_pass(tests[i]) for i in fail_to_pass)
    p2p = sum(is_pass(tests[i]) for i in pass_to_pass)
    graded = Grade(
        resolved=statuses is not None and f2p == len(fail_to_pass) and p2p == len(pass_to_pass),
        tests=tests,
        n_f2p_passed=f2p,
        n_p2p_passed=p2p,
        n_f2p=len(fail_to_pass),
        n_p2p=len(pass_to_pass),
        timed_out=result.timed_out,
        log=result.output,
        invalid=""
        if body is not None or result.timed_out
        else "the test run wrote no authentic report",
    )
    if body is not None and body["problems"]:
        return graded.invalidated("invalid submission: " + "; ".join(body["problems"][:5]))
    if not graded.resolved:
        return graded
    return _cross_check(graded, sandbox, tree, launch, fail_to_pass, timeout)


def _cross_check(
    graded: Grade,
    sandbox: Sandbox,
    tree: Path,
    launch: str,
    fail_to_pass: Sequence[str],
    timeout: float,
) -> Grade:
    """``graded`` (resolved) after running ``fail_to_pass`` again without pytest: invalid when
    that run wrote no authentic report, found a problem, or failed a test pytest passed."""
    ids = [i for i in dict.fromkeys(fail_to_pass) if graded.tests[i] == "PASSED"]
    if not ids:
        return graded
    body, result = _run_isolated(sandbox, tree, launch, "plain", ids, timeout)
    if body is None:
        why = "timed out" if result.timed_out else "wrote no authentic report"
        return graded.invalidated(f"the FAIL_TO_PASS run without pytest {why}")
    if body["problems"]:
        return graded.invalidated("invalid submission: " + "; ".join(body["problems"][:5]))
    outcomes = body["outcomes"]
    failed = [i for i in ids if outcomes.get(i) not in ("PASSED", "UNSUPPORTED")]
    if failed:
        return graded.invalidated(
            f"invalid submission: {failed[0]} passed under pytest but failed when run without"
            " pytest (the submission changes what pytest reports)"
        )
    unchecked = tuple(i for i in ids if outcomes.get(i) == "UNSUPPORTED")
    return replace(graded, unchecked=unchecked)


def _run_isolated(
    sandbox: Sandbox,
    tree: Path,
    launch: str,
    mode: str,
    args: Sequence[str],
    timeout: float,
) -> tuple[dict[str, Any] | None, CommandResult]:
    """Run the launcher (``launch`` = interpreter and its flags) in ``mode`` with ``args`` in
    ``tree``; its authenticated report's body (``None`` without one) and the command's result.

    The launcher's files and a fresh report directory (holding the run's random nonce) sit in a
    private directory of their own (a tmpfs where the host allows one, so no host path shows in
    the sandbox's ``/proc/self/mountinfo``), bound read-only and writable under a random
    directory of :data:`GRADING_TARGET`, and removed after."""
    nonce = secrets.token_bytes(32)
    with tempfile.TemporaryDirectory(prefix=tagged_prefix("grade")) as empty:
        private = Workspace(empty, max_bytes=MAX_REPORT_BYTES + 2**20)
    try:
        plugin, report = private.path / "plugin", private.path / "report"
        plugin.mkdir(mode=0o755)
        report.mkdir(mode=0o700)
        here = Path(__file__).parent
        for name, source in GRADING_FILES.items():
            (plugin / name).write_bytes((here / source).read_bytes())
        (report / "nonce").write_bytes(nonce)
        own_tree(private.path, private.owner)
        target = f"{GRADING_TARGET}/{secrets.token_hex(8)}"
        binds = [Bind(str(plugin), f"{target}/plugin"), Bind(str(report), f"{target}/report", True)]
        box, (plugin_dir, report_dir) = sandbox.bound(binds)
        words = [f"{plugin_dir}/agentenvs_grade.py", mode, report_dir, *args]
        line = f"{launch} {' '.join(shlex.quote(w) for w in words)}"
        try:
            result = box.run(line, tree, timeout=timeout, merge_stderr=True)
        finally:
            if box is not sandbox:
                box.close()
        return read_report(report / "report.json", nonce), result
    finally:
        private.cleanup()
