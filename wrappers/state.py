"""The online state of a credit method, owned by the wrapper that credits with it.

A method's config (:class:`~agentenvs.wrappers.SPAConfig`, :class:`~agentenvs.wrappers.HISRConfig`,
:class:`~agentenvs.wrappers.TriageConfig`, ...) is a frozen value: it names its models (a spec or
an object) and never builds or trains one. What a model-backed method builds and trains from it
(models resolved from their specs, training buffers, a judge and its result cache) is its
*online state*. This module holds :class:`CreditState`, the one object that carries it.

Every credit wrapper owns one: :class:`~agentenvs.wrappers.CreditWrapper` and
:class:`~agentenvs.wrappers.VectorCreditWrapper` make a fresh one, or use the one given as
``state=``; ``wrapper.credit_state`` is it, and the wrapper's ``repr`` shows it. The registry's
path (:func:`~agentenvs.wrappers.estimate`, :func:`~agentenvs.wrappers.assign_advantages`) takes
it as ``state=`` and hands the method its part; a call without one credits with a fresh state
that is dropped after the call. The structural methods (GRPO, GiGPO, GraphGPO, RTMC) have no
online state and ignore it.

Sharing is explicit: ``gym.make(env.spec)`` rebuilds a wrapper with a fresh state (the spec never
records it), and two wrappers share training only when they are given the same state object.
A state serves one method with one config (equal configs count as one); using it with another
raises ``ValueError``. :meth:`CreditState.state_dict` and :meth:`CreditState.load_state_dict`
save and restore it (the LLM learner's checkpoint calls them, for every training env's state).

A model given to a config as an object (not as a spec) is the user's object: every state built
from that config uses that very model (a spec builds a new model for each state).

>>> from agentenvs.core import Step, Trajectory
>>> from agentenvs.wrappers import SPAConfig, assign_advantages
>>> group = [Trajectory("t", "g", [Step("o", "a", 1.0)], success=True),
...          Trajectory("t", "g", [Step("o", "b", 0.0)], success=False)]
>>> state = CreditState()
>>> config = SPAConfig(estimator="tabular", refit_every=1)
>>> assign_advantages([group], "spa", config, state=state)
>>> state
CreditState('spa', SPAState(estimator=TabularProgressEstimator, trained=True, buffered=2, fits=1))
>>> saved = state.state_dict()
>>> again = CreditState()
>>> again.load_state_dict(saved)
>>> assign_advantages([group], "spa", config, state=again)
>>> again.value.buffer.fits, len(again.value.buffer.items)
(2, 4)
>>> assign_advantages([group], "grpo", state=again)
Traceback (most recent call last):
...
ValueError: this CreditState serves credit method 'spa'; it cannot serve 'grpo' (one state serves one method and one config: give each wrapper its own)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["CreditState"]

_UNSET = object()


class CreditMethod(Protocol):
    """What a state reads of a :class:`~agentenvs.wrappers.registry.CreditMethod` (the registry
    imports this module, not the other way round)."""

    @property
    def name(self) -> str: ...

    @property
    def online_state(self) -> Callable[[Any], Any] | None: ...


class CreditState:
    """The online state of one credit method with one config (see the module docstring).

    Made empty; bound to a method and config by the first wrapper or call that credits with it;
    the method's own state object (e.g. :class:`~agentenvs.wrappers.spa.SPAState`) is built from
    the config on the first group credited and is :attr:`value` from then on (``None`` before,
    and always for a method without online state).

    Attributes:
        method: the canonical name of the method it serves (``None`` until bound).
        config: the config it serves (``None`` until bound).
    """

    def __init__(self) -> None:
        self.method: str | None = None
        self.config: Any = None
        self._value: Any = None
        self._pending: Any = _UNSET  # a loaded state waiting for the method's state to be built
        self._pending_method: str | None = None  # the method that saved it
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a factory that closes over a state goes to Ray or subprocess workers): the
        lock stays behind, and the copy each process gets is that process's own state."""
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    @property
    def value(self) -> Any:
        """The method's online state object, ``None`` until the first group is credited (and for
        a method without online state)."""
        return self._value

    def bind(self, method: CreditMethod, config: Any) -> CreditState:
        """Serve ``method`` with ``config`` (the first call) or check that they are the ones it
        serves; returns ``self``. ``ValueError`` for another method or an unequal config."""
        with self._lock:
            serves = self.method or self._pending_method
            if serves is not None and serves != method.name:
                raise ValueError(
                    f"this CreditState serves credit method {serves!r}; it cannot serve "
                    f"{method.name!r} (one state serves one method and one config: give each "
                    "wrapper its own)"
                )
            if self.method is None:
                self.method, self.config = method.name, config
            elif config is not self.config and config != self.config:
                raise ValueError(
                    f"this CreditState serves {self.method!r} with {self.config!r}; it cannot "
                    f"serve {config!r} (one state serves one method and one config: give each "
                    "wrapper its own)"
                )
            return self

    def get(self, method: CreditMethod, config: Any) -> Any:
        """The method's online state for ``config``, built on first use (what the registry hands
        the estimator); ``None`` for a method without online state."""
        with self._lock:
            self.bind(method, config)
            if self._value is None and method.online_state is not None:
                self._value = method.online_state(config)
                if self._pending is not _UNSET:
                    self._value.load_state_dict(self._pending)
                    self._pending = _UNSET
            return self._value

    def state_dict(self) -> dict[str, Any]:
        """``{"method": name or None, "state": the method state's own state_dict() or None}``:
        what :meth:`load_state_dict` restores (picklable; tensors stay tensors)."""
        with self._lock:
            if self._value is not None:
                state = self._value.state_dict()
            else:
                state = None if self._pending is _UNSET else self._pending
            return {"method": self.method or self._pending_method, "state": state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned. The method's state is rebuilt from this
        state's config and loaded at once when it is built already, else on the first group
        credited. ``ValueError`` when the saved state is another method's."""
        with self._lock:
            saved, inner = state.get("method"), state.get("state")
            if saved is not None and self.method is not None and saved != self.method:
                raise ValueError(
                    f"the saved credit state is method {saved!r}'s; this CreditState serves "
                    f"{self.method!r}"
                )
            if self.method is None:
                self._pending_method = saved
            if inner is None:
                self._value, self._pending = None, _UNSET
            elif self._value is not None:
                self._value.load_state_dict(inner)
            else:
                self._pending = inner

    def __repr__(self) -> str:
        if self.method is None:
            loaded = "" if self._pending_method is None else f"loaded {self._pending_method!r}"
            return f"CreditState({loaded})"
        if self._value is not None:
            return f"CreditState({self.method!r}, {self._value!r})"
        pending = ", loaded" if self._pending is not _UNSET else ""
        return f"CreditState({self.method!r}{pending})"
