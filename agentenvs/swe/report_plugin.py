"""The pytest plugin that reports test outcomes to the SWE grader (docs/swe.md, "Grading").

Grading copies this file, alone, into a private read-only directory of the sandbox (the
``agentenvs`` package itself is hidden there) and loads it with ``-p agentenvs_pytest_report``; it
writes one JSON object to the path in ``$AGENTENVS_REPORT`` (a directory outside ``/testbed``
that only grading runs see) when the session ends::

    {"outcomes": {node id: outcome}, "exitstatus": int}

Outcomes are those of the ``-rA`` summary: ``PASSED``, ``FAILED``, ``ERROR`` (a failing setup or
teardown, also after a passed call), ``SKIPPED``, ``XFAIL``, ``XPASS``; a file that fails to
collect is ``ERROR`` under its own id and its tests are missing. The test command's standard
output is never read. The file imports nothing from ``agentenvs``.

This module holds the hooks :func:`pytest_runtest_logreport`, :func:`pytest_collectreport` and
:func:`pytest_sessionfinish`, and :func:`outcome`, the outcome one report stands for.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["outcome", "pytest_collectreport", "pytest_runtest_logreport", "pytest_sessionfinish"]

#: Where the report goes, read once at import (before any test code runs).
_PATH = os.environ.get("AGENTENVS_REPORT", "")
_OUTCOMES: dict[str, str] = {}


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


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Write the report (nothing when ``$AGENTENVS_REPORT`` was not set)."""
    if _PATH:
        with open(_PATH, "w", encoding="utf-8") as handle:
            json.dump({"outcomes": _OUTCOMES, "exitstatus": int(exitstatus)}, handle)
