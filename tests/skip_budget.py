"""A pytest plugin: fail a run that skips more tests than ``$AGENTENVS_MAX_SKIPS`` allows.

CI runs the fast suite as ``AGENTENVS_MAX_SKIPS=<n> python -m pytest -rs``: a test that starts
skipping on a clean machine (a fixture file gone missing, a package no longer installed) then
fails the job instead of passing silently. Unset, the plugin does nothing. Over the budget, the
run's exit status becomes 1 (unless it already failed) and the summary lists every skip reason
with its count. ``tests/conftest.py`` registers it (``-p skip_budget`` loads it elsewhere); :func:`skip_limit` and :func:`skip_verdict`
hold the logic, the two hooks only read the counts and print.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

__all__ = [
    "ENV",
    "skip_limit",
    "skip_verdict",
    "pytest_configure",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]

#: The environment variable holding the largest number of skipped tests a run may have.
ENV = "AGENTENVS_MAX_SKIPS"
_LIMIT = pytest.StashKey[int | None]()
_VERDICT = pytest.StashKey[str]()


def skip_limit(value: str | None) -> int | None:
    """The skip budget from the variable's ``value`` (``None`` or empty: no check).

    >>> skip_limit("12"), skip_limit(None), skip_limit("")
    (12, None, None)
    """
    if value is None or not value.strip():
        return None
    try:
        limit = int(value)
    except ValueError:
        limit = -1
    if limit < 0:
        raise pytest.UsageError(f"${ENV} must be a count of tests >= 0, got {value!r}")
    return limit


def skip_verdict(reasons: list[str], limit: int) -> str | None:
    """The failure message when ``len(reasons)`` skips exceed ``limit``, else ``None``.

    >>> skip_verdict(["no GPU"], 1) is None
    True
    >>> print(skip_verdict(["no GPU", "no GPU", "no Docker"], 2))
    3 tests skipped, more than the 2 that $AGENTENVS_MAX_SKIPS allows:
      2 x no GPU
      1 x no Docker
    """
    if len(reasons) <= limit:
        return None
    lines = [f"{len(reasons)} tests skipped, more than the {limit} that ${ENV} allows:"]
    lines += [f"  {count} x {reason}" for reason, count in Counter(reasons).most_common()]
    return "\n".join(lines)


def _reason(report: pytest.TestReport | pytest.CollectReport, start: str) -> str:
    """Where and why ``report`` skipped (``path:line: reason``, the path relative to ``start``)."""
    if isinstance(report.longrepr, tuple):
        path, line, reason = report.longrepr
        return f"{os.path.relpath(path, start)}:{line}: {reason.removeprefix('Skipped: ')}"
    return str(report.longrepr)


def pytest_configure(config: pytest.Config) -> None:
    """Read the budget up front: a malformed ``$AGENTENVS_MAX_SKIPS`` stops the run at once."""
    config.stash[_LIMIT] = skip_limit(os.environ.get(ENV))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Count the run's skips; over the budget, fail the run (the summary prints why)."""
    limit = session.config.stash.get(_LIMIT, None)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if limit is None or reporter is None:
        return
    start = str(session.config.invocation_params.dir)
    verdict = skip_verdict([_reason(r, start) for r in reporter.stats.get("skipped", [])], limit)
    if verdict is not None:
        session.config.stash[_VERDICT] = verdict
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """Print the skip-budget failure, if any, at the end of the summary."""
    verdict = config.stash.get(_VERDICT, None)
    if verdict is not None:
        terminalreporter.write_sep("=", "skip budget exceeded", red=True)
        terminalreporter.write_line(verdict)
