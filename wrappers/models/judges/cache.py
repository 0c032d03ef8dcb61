"""A bounded, thread-safe least-recently-used cache of judge results, keyed on the request.

This module holds :class:`JudgeCache`. A :class:`~agentenvs.wrappers.models.judges.request.JudgeRequest` is frozen
and hashable and holds everything that shapes the prompt, so equal requests get the stored result:
re-runs are deterministic and cost no judge calls.

>>> from agentenvs.wrappers.models.judges.request import JudgeRequest, JudgeResult, StepView
>>> cache = JudgeCache(maxsize=1)
>>> a = JudgeRequest("t", (), StepView("up", "o"), ())
>>> cache.put(a, JudgeResult(None))
>>> cache.get(a), len(cache)
(JudgeResult(role=None, evidence=None, score=None, aux={}, raw=None, tokens=0), 1)
>>> cache.put(JudgeRequest("t", (), StepView("down", "o"), ()), JudgeResult(None))
>>> cache.get(a) is None  # evicted
True
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from agentenvs.wrappers.models.judges.request import JudgeRequest, JudgeResult

__all__ = ["JudgeCache"]


class JudgeCache:
    """At most ``maxsize`` (default 100,000) request -> result pairs; the least recently used
    pair is dropped first."""

    def __init__(self, maxsize: int = 100_000) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._data: OrderedDict[JudgeRequest, JudgeResult] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, request: JudgeRequest) -> JudgeResult | None:
        """The stored result (marked as recently used), or ``None``."""
        with self._lock:
            result = self._data.get(request)
            if result is not None:
                self._data.move_to_end(request)
            return result

    def put(self, request: JudgeRequest, result: JudgeResult) -> None:
        with self._lock:
            self._data[request] = result
            self._data.move_to_end(request)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def state_dict(self) -> list[tuple[JudgeRequest, JudgeResult]]:
        """The stored pairs, least recently used first (what :meth:`load_state_dict` restores)."""
        with self._lock:
            return list(self._data.items())

    def load_state_dict(self, pairs: list[tuple[JudgeRequest, JudgeResult]]) -> None:
        """Replace the contents with ``pairs`` (least recently used first; at most ``maxsize``
        kept, the newest)."""
        with self._lock:
            self._data.clear()
        for request, result in pairs:
            self.put(request, result)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
