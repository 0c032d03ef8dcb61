"""Judges for TRIAGE: who labels each environment step with a role (docs/triage.md).

* :mod:`agentenvs.wrappers.models.judges.roles` - :class:`Role` and the default role rewards.
* :mod:`agentenvs.wrappers.models.judges.request` - :class:`StepView`, :class:`StepFacts`, :class:`JudgeRequest`,
  :class:`JudgeResult`, :class:`JudgeUsage`, the :class:`Judge` protocol, :func:`build_requests`.
* :mod:`agentenvs.wrappers.models.judges.prompt` - :func:`build_judge_prompt`, :func:`parse_judge_output`.
* :mod:`agentenvs.wrappers.models.judges.oracle` - :class:`OracleJudge` (privileged rules, no model).
* :mod:`agentenvs.wrappers.models.judges.hf` - :class:`HFJudge` (a local transformers model; torch loaded lazily).
* :mod:`agentenvs.wrappers.models.judges.http` - :class:`HTTPJudge` (an OpenAI-compatible server, e.g. vLLM).
* :mod:`agentenvs.wrappers.models.judges.cache` - :class:`JudgeCache` (LRU, keyed on the request).
* :mod:`agentenvs.wrappers.models.judges.factory` - :func:`make_judge` (``"oracle"``, a model dir, a URL).

What it may import: the standard library, numpy, :mod:`agentenvs.core`, :mod:`agentenvs.wrappers.batch`,
:mod:`agentenvs.wrappers.rewards` and :mod:`agentenvs.wrappers.models.hf`; torch and transformers only inside
:class:`HFJudge` when it loads its model. Built by :class:`agentenvs.wrappers.triage.TriageState`.
"""

from agentenvs.wrappers.models.judges.cache import JudgeCache
from agentenvs.wrappers.models.judges.factory import check_judge_spec, make_judge
from agentenvs.wrappers.models.judges.hf import HFJudge
from agentenvs.wrappers.models.judges.http import HTTPJudge, JudgeFallbackWarning
from agentenvs.wrappers.models.judges.oracle import OracleJudge, oracle_role
from agentenvs.wrappers.models.judges.prompt import (
    build_judge_prompt,
    judge_messages,
    parse_judge_output,
)
from agentenvs.wrappers.models.judges.request import (
    Judge,
    JudgeRequest,
    JudgeResult,
    JudgeUsage,
    StepFacts,
    StepView,
    build_requests,
)
from agentenvs.wrappers.models.judges.roles import ROLE_REWARDS, Role, parse_role

__all__ = [
    "Role",
    "ROLE_REWARDS",
    "parse_role",
    "StepView",
    "StepFacts",
    "JudgeRequest",
    "JudgeResult",
    "JudgeUsage",
    "Judge",
    "build_requests",
    "build_judge_prompt",
    "judge_messages",
    "parse_judge_output",
    "OracleJudge",
    "oracle_role",
    "HFJudge",
    "HTTPJudge",
    "JudgeFallbackWarning",
    "JudgeCache",
    "make_judge",
    "check_judge_spec",
]
