"""The pytest plugin that records test outcomes for the SWE grader (docs/swe.md, "Grading").

Grading copies this file, alone with :mod:`agentenvs.swe.grade_launcher` (which loads it and
writes the report) and :mod:`agentenvs.swe.plain_runner`, into a private read-only directory of
the sandbox (the ``agentenvs`` package itself is hidden there). :func:`run` runs
``pytest.main(args)`` with this module as a plugin and returns::

    ({"outcomes": {node id: outcome}, "exitstatus": int}, problems, config)

Outcomes are those of the ``-rA`` summary: ``PASSED``, ``FAILED``, ``ERROR`` (a failing setup or
teardown, also after a passed call), ``SKIPPED``, ``XFAIL``, ``XPASS``; a file that fails to
collect is ``ERROR`` under its own id and its tests are missing. The test command's standard
output is never read. ``problems`` is non-empty when the outcomes the hooks recorded differ
from those in pytest's terminal reporter (two records a forger has to change alike). The file
imports nothing from ``agentenvs``.

This module holds the hooks :func:`pytest_configure`, :func:`pytest_runtest_logreport` and
:func:`pytest_collectreport`, :func:`outcome` (the outcome one report stands for),
:func:`summary_outcomes` (the same from a terminal reporter's ``stats``) and :func:`run`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "outcome",
    "summary_outcomes",
    "pytest_configure",
    "pytest_collectreport",
    "pytest_runtest_logreport",
    "run",
]

_OUTCOMES: dict[str, str] = {}
_CONFIGS: list[Any] = []
_PHASES = {"setup": 0, "call": 1, "teardown": 2}


def outcome(report: Any) -> str | None:
    """The summary outcome ``report`` (a ``TestReport``) sets, or ``None`` (a passing setup or
    teardown: it changes nothing).

    >>> from types import SimpleNamespace as R
    >>> outcome(R(when="call", outcome="passed")), outcome(R(when="teardown", outcome="failed"))
    ('PASSED', 'ERROR')
    >>> outcome(R(when="call", outcome="skipped", wasxfail="")), outcome(R(when="setup", outcome="passed"))
    ('XFAIL', None)
    """
    xfail = hasattr(report, "wasxfail")
    if report.outcome == "skipped":
        return "XFAIL" if xfail else "SKIPPED"
    if report.outcome == "failed":
        return "FAILED" if report.when == "call" else "ERROR"
    if report.when != "call":
        return None
    return "XPASS" if xfail else "PASSED"


def pytest_runtest_logreport(report: Any) -> None:
    """Record the outcome of one phase; a later phase's outcome wins (teardown errors)."""
    status = outcome(report)
    if status is not None:
        _OUTCOMES[report.nodeid] = status


def pytest_collectreport(report: Any) -> None:
    """A file (or class) that failed to collect is ``ERROR`` under its own id."""
    if report.failed:
        _OUTCOMES[report.nodeid] = "ERROR"


def pytest_configure(config: Any) -> None:
    """Keep the run's config (its plugin manager and terminal reporter are checked after)."""
    _CONFIGS.append(config)


def summary_outcomes(stats: dict[str, list[Any]]) -> dict[str, str]:
    """The outcomes a terminal reporter's ``stats`` (category -> reports) stands for, by the
    rules of :func:`outcome` (a later phase wins; a failed collection is ``ERROR``).

    >>> from types import SimpleNamespace as R
    >>> call = R(nodeid="t::a", when="call", outcome="passed")
    >>> down = R(nodeid="t::a", when="teardown", outcome="failed")
    >>> summary_outcomes({"error": [down], "passed": [call]})
    {'t::a': 'ERROR'}
    """
    latest: dict[str, tuple[int, str]] = {}
    for reports in stats.values():
        for report in reports:
            when = getattr(report, "when", None)
            if when == "collect" or when is None:
                if getattr(report, "failed", False):
                    latest[report.nodeid] = (3, "ERROR")
                continue
            status = outcome(report)
            phase = _PHASES.get(when, 1)
            if status is not None and phase >= latest.get(report.nodeid, (-1, ""))[0]:
                latest[report.nodeid] = (phase, status)
    return {nodeid: status for nodeid, (_, status) in latest.items()}


def run(args: list[str]) -> tuple[dict[str, Any], list[str], Any]:
    """Run ``pytest.main(args)`` with this module as a plugin: the report body, the problems
    found (hooks and terminal summary disagree) and the run's config (``None`` if it never got
    one)."""
    import sys

    import pytest

    exitstatus = pytest.main(args, plugins=[sys.modules[__name__]])
    config = _CONFIGS[0] if _CONFIGS else None
    found = []
    reporter = config.pluginmanager.get_plugin("terminalreporter") if config else None
    if reporter is not None and summary_outcomes(reporter.stats) != _OUTCOMES:
        found.append("the outcomes recorded by the report plugin and by pytest's terminal differ")
    body = {"outcomes": dict(_OUTCOMES), "exitstatus": int(exitstatus)}
    return body, found, config
