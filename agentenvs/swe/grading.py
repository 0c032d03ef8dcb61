"""Running a task's tests and deciding whether it is resolved (docs/swe.md, "Grading").

This module holds:

* :data:`DEFAULT_TEST_COMMAND` - the pytest command a task runs unless it names its own.
* :func:`parse_statuses` - per-test outcomes from the ``-rA`` summary of a pytest log.
* :func:`is_pass` - which outcomes count as passing (``PASSED``, ``XFAIL``).
* :class:`TestRun` / :func:`run_tests` - one test run in a sandbox.
* :class:`Grade` / :func:`grade` - the SWE-bench "FULL" rule: resolved iff every FAIL_TO_PASS and
  every PASS_TO_PASS test passes.

A runner is any ``(command, workspace, timeout) -> CommandResult`` callable, e.g.
``lambda c, w, t: sandbox.run(c, w, timeout=t, merge_stderr=True)``.

>>> log = '''PASSED tests/t.py::test_a
... FAILED tests/t.py::test_b[1-2] - assert 1 == 2
... ERROR tests/u.py - ImportError: no module named x'''
>>> parse_statuses(log)
{'tests/t.py::test_a': 'PASSED', 'tests/t.py::test_b[1-2]': 'FAILED', 'tests/u.py': 'ERROR'}
>>> is_pass("XFAIL"), is_pass("SKIPPED"), is_pass(None)
(True, False, False)
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentenvs.swe.calls import CommandResult

__all__ = [
    "DEFAULT_TEST_COMMAND",
    "Runner",
    "parse_statuses",
    "is_pass",
    "TestRun",
    "run_tests",
    "Grade",
    "grade",
]

#: The test command of a task that names none; the node ids to run are appended.
DEFAULT_TEST_COMMAND = "python -m pytest -rA -p no:cacheprovider -q"

#: ``(command, workspace directory, timeout in seconds) -> CommandResult``.
Runner = Callable[[str, Path, float], CommandResult]

_STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
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


@dataclass(frozen=True)
class Grade:
    """A graded submission.

    Attributes:
        resolved: every FAIL_TO_PASS and PASS_TO_PASS test passed.
        tests: node id -> outcome for every graded id (``"MISSING"`` when the log has none).
        n_f2p_passed / n_p2p_passed: how many of each list passed.
        n_f2p / n_p2p: the list sizes.
        timed_out: the test run hit its timeout (resolved is then False).
        log: the test run's output.
    """

    resolved: bool
    tests: dict[str, str] = field(default_factory=dict)
    n_f2p_passed: int = 0
    n_p2p_passed: int = 0
    n_f2p: int = 0
    n_p2p: int = 0
    timed_out: bool = False
    log: str = ""


def grade(
    run: Runner,
    workspace: Path,
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str],
    *,
    hidden: Mapping[str, bytes] | None = None,
    command: str = DEFAULT_TEST_COMMAND,
    timeout: float = 120.0,
) -> Grade:
    """Restore the ``hidden`` test files (repo-relative path -> content, overwriting the agent's
    version) in ``workspace`` and run the FAIL_TO_PASS and PASS_TO_PASS ids.

    ``workspace`` must be a disposable copy: grading writes into it. Applying a ``test_patch``
    (SWE-bench) is the caller's job, before this call.
    """
    for rel, content in (hidden or {}).items():
        target = workspace / rel
        if target.is_symlink() or target.is_dir():
            _remove(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    ids = list(dict.fromkeys([*fail_to_pass, *pass_to_pass]))
    result = run_tests(run, workspace, ids, command=command, timeout=timeout)
    tests = {i: result.statuses.get(i, "MISSING") for i in ids}
    f2p = sum(is_pass(tests[i]) for i in fail_to_pass)
    p2p = sum(is_pass(tests[i]) for i in pass_to_pass)
    return Grade(
        resolved=not result.timed_out and f2p == len(fail_to_pass) and p2p == len(pass_to_pass),
        tests=tests,
        n_f2p_passed=f2p,
        n_p2p_passed=p2p,
        n_f2p=len(fail_to_pass),
        n_p2p=len(pass_to_pass),
        timed_out=result.timed_out,
        log=result.log,
    )


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
