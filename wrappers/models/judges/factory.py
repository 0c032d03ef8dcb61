"""Judges from text specs: ``"oracle"``, a local model directory, or a server URL.

This module holds :func:`make_judge` and :func:`check_judge_spec` (the cheap check a config runs
when it is built, before any model is loaded).

>>> make_judge("oracle")
OracleJudge()
>>> check_judge_spec("no-such-thing")
Traceback (most recent call last):
...
ValueError: judge 'no-such-thing' is not 'oracle', an http(s) URL or a model directory (a folder with config.json), nor an object with a judge(requests) method
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentenvs.wrappers.models.hf import is_model_dir
from agentenvs.wrappers.models.judges.request import Judge

__all__ = ["make_judge", "check_judge_spec", "JudgeSpec"]

#: A judge object, or its text spec.
JudgeSpec = Any


def check_judge_spec(spec: JudgeSpec) -> None:
    """``ValueError`` unless ``spec`` is a judge object (with ``judge(requests)``), ``"oracle"``,
    an ``http://`` / ``https://`` URL, or a directory holding ``config.json``."""
    if isinstance(spec, Judge):
        return
    if isinstance(spec, (str, Path)):
        text = str(spec)
        if text == "oracle" or text.startswith(("http://", "https://")):
            return
        if is_model_dir(text):
            return
    raise ValueError(
        f"judge {spec!r} is not 'oracle', an http(s) URL or a model directory (a folder with "
        "config.json), nor an object with a judge(requests) method"
    )


def make_judge(spec: JudgeSpec, **options: Any) -> Judge:
    """The judge ``spec`` names: a judge object as it is; ``"oracle"`` ->
    :class:`~agentenvs.wrappers.models.judges.oracle.OracleJudge`; an http(s) URL ->
    :class:`~agentenvs.wrappers.models.judges.http.HTTPJudge`; a model directory ->
    :class:`~agentenvs.wrappers.models.judges.hf.HFJudge` (loads the model). ``options`` go to the judge's
    constructor."""
    check_judge_spec(spec)
    if isinstance(spec, Judge):
        return spec
    text = str(spec)
    if text == "oracle":
        from agentenvs.wrappers.models.judges.oracle import OracleJudge

        return OracleJudge(**options)
    if text.startswith(("http://", "https://")):
        from agentenvs.wrappers.models.judges.http import HTTPJudge

        return HTTPJudge(text, **options)
    from agentenvs.wrappers.models.judges.hf import HFJudge

    return HFJudge(Path(text).expanduser(), **options)
