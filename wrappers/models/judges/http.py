"""A judge served over HTTP by an OpenAI-compatible chat-completions server (e.g. vLLM).

This module holds :class:`HTTPJudge` and :func:`chat_completions_url`. Only the standard library is
used (``urllib.request``, a small thread pool). A request that still fails after its retries gives
``role=None`` (its segment keeps GRPO credit) and is counted; the first such failure warns
(:class:`JudgeFallbackWarning`), and once failures pass ``max_error_fraction`` of the requests
sent (at least :attr:`HTTPJudge.MIN_REQUESTS` of them) :meth:`HTTPJudge.judge` raises
``RuntimeError`` instead of silently turning TRIAGE into GRPO (docs/triage.md, section 5).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentenvs.wrappers.models.judges.prompt import judge_messages, parse_judge_output
from agentenvs.wrappers.models.judges.request import JudgeRequest, JudgeResult, JudgeUsage

__all__ = ["HTTPJudge", "JudgeFallbackWarning", "chat_completions_url"]


class JudgeFallbackWarning(UserWarning):
    """A judge request failed; its segment falls back to GRPO credit."""


def chat_completions_url(url: str) -> str:
    """The ``/v1/chat/completions`` endpoint of a server given by its base URL, its ``/v1`` URL
    or the endpoint itself.

    >>> chat_completions_url("http://localhost:8000"), chat_completions_url("https://h/v1/")
    ('http://localhost:8000/v1/chat/completions', 'https://h/v1/chat/completions')
    """
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"a judge URL must start with http:// or https://, got {url!r}")
    url = url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if url.endswith("/v1"):
        return f"{url}/chat/completions"
    return f"{url}/v1/chat/completions"


class HTTPJudge:
    """Label requests with a model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        url: the server (base URL, ``.../v1`` or the endpoint).
        model: the served model name; ``None`` asks ``GET /v1/models`` once and takes the first.
        timeout: seconds per HTTP request (default 120).
        retries: extra tries of a failed request (default 1).
        max_workers: requests in flight at once (default 8).
        max_tokens: generation budget per request (default 2048: thinking judges reason first).
        temperature: default 0 (greedy).
        api_key: sent as a bearer token when given.
        extra_body: more JSON fields for every request (e.g. ``{"chat_template_kwargs":
            {"enable_thinking": True}}`` for a Qwen3 judge on vLLM).
        max_error_fraction: the share of failed requests (HTTP or transport, after retries), over
            all requests sent, past which :meth:`judge` raises ``RuntimeError`` (default 0.5;
            checked from :attr:`MIN_REQUESTS` requests on; 1.0 never raises). The first failure
            warns.

    Each result counts the server's ``usage.total_tokens``. :attr:`usage` keeps the totals
    (``failures``: requests with no usable role, HTTP errors and bad answers alike;
    ``errors``: the HTTP or transport failures alone).
    """

    def __init__(
        self,
        url: str,
        model: str | None = None,
        *,
        timeout: float = 120.0,
        retries: int = 1,
        max_workers: int = 8,
        max_tokens: int = 2048,
        temperature: float = 0.0,
        api_key: str | None = None,
        extra_body: dict[str, Any] | None = None,
        max_error_fraction: float = 0.5,
    ) -> None:
        if timeout <= 0 or retries < 0 or max_workers < 1 or max_tokens < 1:
            raise ValueError("timeout > 0, retries >= 0, max_workers >= 1, max_tokens >= 1 needed")
        if not 0.0 <= max_error_fraction <= 1.0:
            raise ValueError(f"max_error_fraction must be in [0, 1], got {max_error_fraction}")
        self.max_error_fraction = max_error_fraction
        self.requests = 0
        self.url = chat_completions_url(url)
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.max_workers = max_workers
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.api_key = api_key
        self.extra_body = dict(extra_body or {})
        self.usage = JudgeUsage()
        self.errors = 0
        self._first = ""  # the first failure's reason
        self._lock = threading.Lock()

    #: Requests sent before ``max_error_fraction`` is enforced (one early failure is no verdict).
    MIN_REQUESTS = 10

    def _post(self, url: str, payload: dict[str, Any] | None) -> dict[str, Any]:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(url, data=data, headers=headers)
        with urllib.request.urlopen(req, timeout=self.timeout) as response:
            return json.loads(response.read().decode("utf-8"))

    def served_model(self) -> str:
        """The model name sent with each request (asked from the server when not given)."""
        if self.model is None:
            listing = self._post(self.url.removesuffix("/chat/completions") + "/models", None)
            self.model = str(listing["data"][0]["id"])
        return self.model

    def _one(self, request: JudgeRequest) -> JudgeResult:
        error: Exception | None = None
        for _ in range(self.retries + 1):
            try:
                payload = {
                    "model": self.served_model(),
                    "messages": judge_messages(request),
                    "max_tokens": self.max_tokens,
                    "temperature": self.temperature,
                    **self.extra_body,
                }
                body = self._post(self.url, payload)
                text = body["choices"][0]["message"].get("content") or ""
                result = parse_judge_output(text, request.current_index)
                result.tokens = int((body.get("usage") or {}).get("total_tokens") or 0)
                return result
            except (
                OSError,
                urllib.error.URLError,
                ValueError,
                KeyError,
                IndexError,
                TypeError,
            ) as e:
                error = e  # timeouts are OSErrors; bad JSON ValueErrors; bad shapes Key/Index/Type
        reason = f"{type(error).__name__}: {error}"
        with self._lock:
            self.errors += 1
            self._first = self._first or reason
        return JudgeResult(None, raw=f"request failed: {reason}")

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        """One result per request (see the class docstring for failures)."""
        start, errors_before = time.perf_counter(), self.errors
        if len(requests) <= 1:
            results = [self._one(r) for r in requests]
        else:
            with ThreadPoolExecutor(min(self.max_workers, len(requests))) as pool:
                results = list(pool.map(self._one, requests))
        mode = requests[0].mode if requests else "roles"
        self.usage.add(results, time.perf_counter() - start, mode)
        self._check_errors(len(requests), self.errors - errors_before)
        return results

    def _check_errors(self, sent: int, failed: int) -> None:
        """Warn on the first failure; ``RuntimeError`` past ``max_error_fraction``."""
        first = failed and self.errors == failed  # this call made the first failures
        self.requests += sent
        if first:
            warnings.warn(
                f"judge {self.url}: {failed} of {sent} requests failed (first: {self._first}); "
                "their segments fall back to GRPO credit",
                JudgeFallbackWarning,
                stacklevel=4,
            )
        if self.requests >= self.MIN_REQUESTS and self.errors > (
            self.max_error_fraction * self.requests
        ):
            raise RuntimeError(
                f"judge {self.url}: {self.errors} of {self.requests} requests failed (more than "
                f"max_error_fraction={self.max_error_fraction}; first: {self._first}); is the "
                "server up? TRIAGE would silently become GRPO"
            )

    def __repr__(self) -> str:
        return f"HTTPJudge({self.url!r}, model={self.model!r})"
