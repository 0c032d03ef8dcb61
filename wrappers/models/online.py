"""Online state of the model-backed credit methods, kept apart from their configs.

A config (:class:`~agentenvs.wrappers.SPAConfig`, :class:`~agentenvs.wrappers.HISRConfig`,
:class:`~agentenvs.wrappers.TriageConfig`) is a frozen value: it names its models (a spec or an object) and
never builds or trains one. What a method builds and trains from it - models resolved from their
specs, training buffers, a judge and its cache - is the method's *online state*, made by the
method's ``State`` class on the first group credited with that config object and shared by every
wrapper and call holding the same object (a new config object starts afresh). This module holds
:class:`OnlineStates`, the map from config objects to their state.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Config:
...     size: int = 2
>>> states = OnlineStates(lambda config: [0] * config.size)
>>> config = Config()
>>> states(config) is states(config), states(Config()) is states(config), len(states)
(True, False, 1)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["OnlineStates"]

C = TypeVar("C")
S = TypeVar("S")


class OnlineStates(Generic[C, S]):
    """``states(config)``: the state ``build(config)`` made for this very config object (by
    identity, not equality), built on first use and dropped when the config is garbage-collected."""

    def __init__(self, build: Callable[[C], S]) -> None:
        self._build = build
        self._states: dict[int, S] = {}
        self._lock = threading.Lock()

    def __call__(self, config: C) -> S:
        key = id(config)
        with self._lock:
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = self._build(config)
                weakref.finalize(config, self._drop, key)
            return state

    def _drop(self, key: int) -> None:
        with self._lock:
            self._states.pop(key, None)

    def __len__(self) -> int:
        return len(self._states)

    def __repr__(self) -> str:
        return f"OnlineStates({getattr(self._build, '__name__', self._build)!r}, held={len(self)})"
