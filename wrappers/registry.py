"""The open registry of credit methods, and the one path from trajectories to advantages.

This module is the mechanism only: it imports no estimator (the built-ins are registered by
:mod:`agentenvs.wrappers.methods`, which the package imports first) and no wrapper (:mod:`agentenvs.wrappers.base`
hands it the generic wrapper class), so nothing here points back at its importers. It holds:

* :class:`CreditMethod` - one registry entry: everything a method needs (its flat-array estimator,
  config class, signature rule, aliases, ``needs_model`` flag and optional named wrapper class).
  :meth:`CreditMethod.estimate` and :meth:`CreditMethod.assign` share the one path batch -> run
  (checked) -> split.
* :func:`register_method` - add a method (the built-ins are registered through it).
* :data:`METHODS` - a live read-only mapping, name -> :class:`CreditMethod`, for canonical names
  *and* aliases: it lists what a command line should accept (``choices=sorted(METHODS)`` takes
  ``--credit graph`` as well as ``--credit graphgpo``). Iterate :func:`method_names` for each
  method once.
* :data:`ALIASES` - a live read-only mapping, alias -> canonical name.
* :func:`canonical_name`, :func:`get_method` - resolve a name (or alias).
* :func:`assign_advantages` - the entry point learners call; :func:`estimate` - the same
  advantages returned instead of written.
* :func:`registered_methods` - the entries in registration order, filtered by ``needs_model``.
* :func:`env_preset` - the config values an env declares for a method (``metadata["credit_presets"]``).
* :func:`make_config` - a method's config from keyword options (what a command line gives).
* :func:`config_signature`, :func:`states_only` - the two signature rules the built-ins use.

A model-backed method also registers an ``online_state`` factory, ``(config) -> state object``:
its estimator is then called ``estimate_batch(batch, config, online)`` with the object a
:class:`~agentenvs.wrappers.state.CreditState` holds for it (the wrapper's, or the ``state=``
given to :func:`estimate` / :func:`assign_advantages`; a fresh one per call when none is given).

Built-in methods (canonical name = module name), their aliases and ``needs_model``:

============  ==================================  ==================  =========  ===========
name          estimator                           config              aliases    needs_model
============  ==================================  ==================  =========  ===========
``grpo``      :mod:`agentenvs.wrappers.grpo`      ``GRPOConfig``                 no
``gigpo``     :mod:`agentenvs.wrappers.gigpo`     ``GiGPOConfig``                no
``graphgpo``  :mod:`agentenvs.wrappers.graphgpo`  ``GraphGPOConfig``  ``graph``  no
``rtmc``      :mod:`agentenvs.wrappers.rtmc`      ``RTMCConfig``                 no
``triage``    :mod:`agentenvs.wrappers.triage`    ``TriageConfig``               yes
``hisr``      :mod:`agentenvs.wrappers.hisr`      ``HISRConfig``                 yes
``spa``       :mod:`agentenvs.wrappers.spa`       ``SPAConfig``                  yes
============  ==================================  ==================  =========  ===========

A method is a flat-array estimator ``estimate_batch(StepBatch, config) -> np.ndarray`` (one float
per step), a config class (a dataclass whose no-argument call gives the defaults) and a *signature
rule* ``signature(config) -> Signature``: the :data:`~agentenvs.wrappers.batch.Signature` that codes each
step's ``(state, action)`` into ``StepBatch.state`` / ``StepBatch.action``. Registering one gives at
once :func:`assign_advantages` (``assign_advantages(groups, "name")``), the wrappers
(``CreditWrapper(env, method="name")``, ``VectorCreditWrapper(envs, "name")``, or a named subclass in
one line: ``class MyWrapper(CreditWrapper, method="name"): ...``) and a place in :data:`METHODS`.

>>> from agentenvs.core import Step, Trajectory
>>> g = [Trajectory("t", "g", [Step("o", "a", 10.0)], success=True),
...      Trajectory("t", "g", [Step("o", "b", 0.0)], success=False)]
>>> assign_advantages([g], "grpo", METHODS["grpo"].config(eps=0.0))
>>> [round(t.steps[0].advantage, 4) for t in g]
[0.7071, -0.7071]
>>> sorted(METHODS), dict(ALIASES), get_method("graph")[0].name
(['gigpo', 'graph', 'graphgpo', 'grpo', 'hisr', 'rtmc', 'spa', 'triage'], {'graph': 'graphgpo'}, 'graphgpo')

A method of one's own (here: every step gets its trajectory's success, 0 or 1; ``columns=()``: it
reads none of the optional columns, so it needs no state keys):

>>> import dataclasses, numpy as np
>>> @dataclasses.dataclass
... class SuccessConfig:
...     scale: float = 1.0
>>> def success_batch(batch, config):
...     return config.scale * np.repeat(batch.success, batch.lengths).astype(np.float64)
>>> entry = register_method("success", success_batch, SuccessConfig, aliases=("won",), columns=())
>>> assign_advantages([g], "won", SuccessConfig(scale=2.0))
>>> [t.steps[0].advantage for t in g], "success" in METHODS, ALIASES["won"]
([2.0, 0.0], True, 'success')
>>> unregister_method("success")
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
from agentenvs.wrappers.batch import (
    COLUMNS,
    Signature,
    StepBatch,
    default_signature,
    state_signature,
)
from agentenvs.wrappers.state import CreditState

from agentenvs.core import Trajectory
from agentenvs.vector import DEFAULT_GROUP_SIZE

if TYPE_CHECKING:  # the wrapper classes import this module
    import gymnasium as gym

__all__ = [
    "CreditMethod",
    "SignatureRule",
    "BatchEstimator",
    "METHODS",
    "ALIASES",
    "register_method",
    "unregister_method",
    "method_names",
    "canonical_name",
    "get_method",
    "assign_advantages",
    "estimate",
    "env_preset",
    "registered_methods",
    "make_config",
    "config_signature",
    "states_only",
    "STATE_KEY_POLICIES",
    "STEP_FACTS",
    "MissingStateKeyWarning",
]

#: What a method may read of a step besides its reward (:attr:`CreditMethod.reads`): the
#: :class:`~agentenvs.core.Step` fields of these names, ``won`` (the trajectory's success) and
#: ``next_observation`` (the observation after the step; the trajectory's final one on its last).
STEP_FACTS = (
    "state_key",
    "next_state_key",
    "action_key",
    "action_valid",
    "won",
    "cost",
    "progress",
    "observation",
    "action",
    "next_observation",
)

#: ``estimate_batch(batch, config) -> float64 (n_steps,)``: a method's flat-array estimator.
BatchEstimator = Callable[[StepBatch, Any], np.ndarray]

#: ``signature(config) -> Signature``: how a method codes each step's ``(state, action)``.
SignatureRule = Callable[[Any], Signature]


#: The values of the ``state_keys`` option (:func:`assign_advantages`, the credit wrappers).
STATE_KEY_POLICIES = ("required", "none")

_NO_STATE_KEYS = (
    "credit method {name!r} matches states (its columns include 'state'), but no step has a "
    "state key: every state would be unique and GiGPO, GraphGPO and RTMC silently give GRPO's "
    "advantages. Make the env report info['state_key'] (a hashable summary of the state, at "
    "reset and every step; docs/custom-env.md), or pass state_keys='none' to run it anyway (a "
    "method that never reads StepBatch.state: register it with columns excluding 'state')"
)


class MissingStateKeyWarning(UserWarning):
    """A state-matching credit method ran on steps without state keys (``state_keys="none"``)."""


def _no_state_keys(batch: StepBatch) -> bool:
    """The batch has steps and every one's state key is ``None`` (each then has its own code)."""
    keys = batch.state_keys
    if batch.n_steps == 0 or keys is None or len(keys) < batch.n_steps:
        return False  # a repeated code means a repeated (so non-None) key
    return all(k is None for k in keys)


def config_signature(config: Any) -> Signature:
    """The config's own ``signature`` field when it has one that is set, else
    :func:`~agentenvs.wrappers.batch.default_signature` (``Step.state_key`` and the action's signature).

    The default rule of :func:`register_method`; RTMC uses it (``RTMCConfig.signature``).
    """
    return getattr(config, "signature", None) or default_signature


def states_only(config: Any) -> Signature:
    """:func:`~agentenvs.wrappers.batch.state_signature` whatever the config: the estimator never looks at
    ``StepBatch.action`` (cheaper to build). GRPO, GiGPO and GraphGPO use it."""
    return state_signature


@dataclass(frozen=True)
class CreditMethod:
    """One credit method of the registry (see the module docstring; made by :func:`register_method`).

    Attributes:
        name: the canonical name.
        estimate_batch: ``(StepBatch, config) -> np.ndarray``, one float per step.
        config: the config class; ``config()`` gives the defaults.
        signature: the signature rule, ``(config) -> Signature``.
        aliases: other names that resolve to this method.
        wrapper: the method's named wrapper class (e.g. :class:`~agentenvs.wrappers.GraphCreditWrapper`) or
            ``None``; set by :func:`register_method` or by declaring
            ``class X(CreditWrapper, method=name)``.
        columns: the per-step :class:`StepBatch` columns the estimator reads (a subset of
            :data:`~agentenvs.wrappers.batch.COLUMNS`; the others are not built, which saves time).
        needs_model: the method consults a model or judge (TRIAGE, HISR, SPA); ``False`` for a
            pure function of the group's states, actions and rewards (what a viewer may re-run).
        online_state: ``(config) -> object`` building the method's online state (an object with
            ``state_dict()`` / ``load_state_dict()``), kept in a
            :class:`~agentenvs.wrappers.state.CreditState` and passed to the estimator as its
            third argument; ``None`` (the structural methods): the estimator takes two.
        reads: the step facts (:data:`STEP_FACTS`) the method reads besides the rewards, so an
            adapter that rebuilds steps from a trainer's partial columns (verl's, verl-agent's)
            can name what is missing instead of filling in a default; ``None``: not declared
            (nothing is checked).
        success_sink: after a won trajectory's last step the method reads no next state (it
            ends in the method's success node: GraphGPO's).

    An entry unpacks as the pair ``(estimate, config)`` (``estimate, Config = METHODS["grpo"]``).
    """

    name: str
    estimate_batch: BatchEstimator
    config: type
    signature: SignatureRule = config_signature
    aliases: tuple[str, ...] = ()
    wrapper: type | None = None
    columns: tuple[str, ...] = COLUMNS
    needs_model: bool = False
    online_state: Callable[[Any], Any] | None = None
    reads: tuple[str, ...] | None = None
    success_sink: bool = False

    def check_config(self, config: Any = None) -> Any:
        """``config``, or the default config when ``None``; ``TypeError`` for another class."""
        if config is None:
            return self.config()
        if not isinstance(config, self.config):
            raise TypeError(
                f"method {self.name!r} needs a {self.config.__name__}, got {type(config).__name__}"
            )
        return config

    def estimate(
        self,
        trajectories: Sequence[Trajectory],
        config: Any = None,
        *,
        state_keys: str = "required",
        state: CreditState | None = None,
    ) -> list[np.ndarray]:
        """Advantages of ``trajectories`` (grouped by ``group_id``), one float64 array each, in
        order; the trajectories are not changed. ``state``: see :func:`estimate`."""
        config = self.check_config(config)
        return self._advantages(list(trajectories), config, None, state_keys, state)

    def assign(
        self,
        groups: Sequence[Sequence[Trajectory]],
        config: Any = None,
        *,
        state_keys: str = "required",
        state: CreditState | None = None,
    ) -> None:
        """Write ``step.advantage`` into every step of ``groups`` (each inner sequence one group,
        whatever its ``group_id``), in place; see :func:`assign_advantages`."""
        config = self.check_config(config)
        if any(isinstance(g, Trajectory) for g in groups):
            raise TypeError(
                "groups must be a sequence of groups (each a sequence of Trajectory), "
                "e.g. [[traj1, traj2, ...]]"
            )
        trajectories = [t for g in groups for t in g]
        index = [i for i, g in enumerate(groups) for _ in g]
        advantages = self._advantages(trajectories, config, index, state_keys, state)
        for traj, adv in zip(trajectories, advantages, strict=True):
            for step, a in zip(traj.steps, adv.tolist(), strict=True):
                step.advantage = a

    def _advantages(
        self,
        trajectories: list[Trajectory],
        config: Any,
        groups: Sequence[int] | None,
        state_keys: str,
        state: CreditState | None,
    ) -> list[np.ndarray]:
        """The one path from trajectories to advantages: batch, run (checked), split."""
        if not trajectories:
            return []
        batch = self.batch(trajectories, config, groups)
        return batch.split(self.run(batch, config, state_keys=state_keys, state=state))

    def run(
        self,
        batch: StepBatch,
        config: Any,
        *,
        state_keys: str = "required",
        state: CreditState | None = None,
    ) -> np.ndarray:
        """The estimator's float64 ``(batch.n_steps,)`` advantages, checked.

        A method with an ``online_state`` gets ``state``'s part for it (``None``: a fresh
        :class:`~agentenvs.wrappers.state.CreditState`, dropped after the call); the others do not
        use ``state``. A given ``state`` is bound to this method and config (``ValueError`` when
        it serves another).

        Raises:
            ValueError: the method reads ``StepBatch.state`` (``"state"`` in :attr:`columns`) but
                no step of the batch has a state key, unless ``state_keys="none"`` (then a
                :class:`MissingStateKeyWarning`); or the estimator returned the wrong number of
                values, or NaN / inf.
        """
        if state_keys not in STATE_KEY_POLICIES:
            raise ValueError(f"state_keys must be one of {STATE_KEY_POLICIES}, got {state_keys!r}")
        if "state" in self.columns and _no_state_keys(batch):
            if state_keys == "required":
                raise ValueError(_NO_STATE_KEYS.format(name=self.name))
            warnings.warn(
                f"credit method {self.name!r} runs without state keys (state_keys='none'): every "
                "state is unique, so its state-matching term is 0",
                MissingStateKeyWarning,
                stacklevel=3,
            )
        if self.online_state is None:
            if state is not None:
                state.bind(self, config)  # unused, but it serves this method alone
            values = self.estimate_batch(batch, config)
        else:
            online = (state if state is not None else CreditState()).get(self, config)
            values = self.estimate_batch(batch, config, online)  # type: ignore[call-arg]
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (batch.n_steps,):
            raise ValueError(
                f"credit method {self.name!r} returned advantages of shape {values.shape} for a "
                f"batch of {batch.n_steps} steps; its estimator must return one float per step"
            )
        if not np.all(np.isfinite(values)):
            bad = int(np.count_nonzero(~np.isfinite(values)))
            raise ValueError(
                f"credit method {self.name!r} returned {bad} non-finite advantages (NaN or inf) "
                f"out of {batch.n_steps}"
            )
        return values

    def batch(
        self, trajectories: Sequence[Trajectory], config: Any, groups: Sequence[int] | None = None
    ) -> StepBatch:
        """The :class:`StepBatch` this method's estimator reads, built with its signature rule."""
        return StepBatch.from_trajectories(
            trajectories, signature=self.signature(config), groups=groups, columns=self.columns
        )

    def wrap(
        self, env: gym.Env, group_size: int = DEFAULT_GROUP_SIZE, config: Any = None
    ) -> gym.Env:
        """``env`` in this method's wrapper (its named class, else :class:`~agentenvs.wrappers.CreditWrapper`),
        with a fresh :class:`~agentenvs.wrappers.state.CreditState`."""
        wrapper = self.wrapper or generic_wrapper[0]
        return wrapper(env, group_size=group_size, config=config, method=self.name)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.estimate, self.config))


_lock = threading.RLock()
_entries: dict[str, CreditMethod] = {}  # canonical name -> entry
_aliases: dict[str, str] = {}  # alias -> canonical name
_names: dict[str, CreditMethod] = {}  # canonical names and aliases -> entry
generic_wrapper: list[
    type
] = []  # [CreditWrapper], set by agentenvs.wrappers.base (which imports this)

#: name or alias -> :class:`CreditMethod` (live, read-only; change it with :func:`register_method`).
METHODS: Mapping[str, CreditMethod] = MappingProxyType(_names)
#: alias -> canonical name (live, read-only).
ALIASES: Mapping[str, str] = MappingProxyType(_aliases)


def _rebuild() -> None:
    """Bring :data:`METHODS` in line with the entries and aliases (changing only what changed)."""
    names = {**_entries, **{alias: _entries[name] for alias, name in _aliases.items()}}
    for gone in set(_names) - set(names):
        del _names[gone]
    _names.update(names)


def register_method(
    name: str,
    estimate_batch: BatchEstimator,
    config: type,
    *,
    signature: SignatureRule = config_signature,
    aliases: Iterable[str] = (),
    wrapper: type | None = None,
    columns: Iterable[str] = COLUMNS,
    needs_model: bool = False,
    online_state: Callable[[Any], Any] | None = None,
    reads: Iterable[str] | None = None,
    success_sink: bool = False,
    replace: bool = False,
) -> CreditMethod:
    """Add a credit method to the registry and return its entry.

    Args:
        name: the canonical name (what :class:`CreditMethod.name` and error messages say).
        estimate_batch: ``(StepBatch, config) -> np.ndarray``, one float per step of the batch.
        config: the config class; ``config()`` must give the defaults.
        signature: ``(config) -> Signature``, how steps are coded into ``StepBatch.state`` and
            ``StepBatch.action``; default :func:`config_signature`. Pass :func:`states_only` when
            the estimator never reads ``StepBatch.action``.
        aliases: other names for the method (e.g. what users type on a command line).
        wrapper: the method's named wrapper class, if any (a ``CreditWrapper`` subclass declared
            with ``method=name`` binds itself when none is set).
        columns: the :class:`StepBatch` columns the estimator reads (default: all of
            :data:`~agentenvs.wrappers.batch.COLUMNS`).
        needs_model: the method consults a model or judge (:attr:`CreditMethod.needs_model`).
        online_state: ``(config) -> object``, the method's online state (its models, buffers,
            caches), kept in the wrapper's :class:`~agentenvs.wrappers.state.CreditState`; the
            estimator is then called ``estimate_batch(batch, config, online)``
            (:attr:`CreditMethod.online_state`).
        reads: the step facts the method reads (:attr:`CreditMethod.reads`; names of
            :data:`STEP_FACTS`); ``None``: not declared.
        success_sink: :attr:`CreditMethod.success_sink`.
        replace: free the names (``name`` and ``aliases``) that are already taken first: an alias
            alone, a canonical name with its whole method. Without it a taken name raises
            ``ValueError``.
    """
    aliases = tuple(aliases)
    if not isinstance(name, str) or not name:
        raise ValueError(f"a method name must be a non-empty string, got {name!r}")
    if not callable(estimate_batch) or not callable(signature):
        raise TypeError("estimate_batch and signature must be callables")
    if online_state is not None and not callable(online_state):
        raise TypeError("online_state must be a callable (config) -> state object, or None")
    if not isinstance(config, type):
        raise TypeError(f"config must be a class, got {config!r}")
    if name in aliases or len(set(aliases)) != len(aliases):
        raise ValueError(f"aliases {aliases} repeat a name")
    with _lock:
        taken = [n for n in (name, *aliases) if n in _names]
        if taken and not replace:
            raise ValueError(
                f"credit method name(s) {taken} already registered; pass replace=True to replace"
            )
        for n in taken:
            _remove_name(n)
        unknown = set(columns) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown batch columns {sorted(unknown)}; choose from {COLUMNS}")
        if reads is not None and set(reads) - set(STEP_FACTS):
            odd = sorted(set(reads) - set(STEP_FACTS))
            raise ValueError(f"unknown step facts {odd}; choose from {STEP_FACTS}")
        entry = CreditMethod(
            name,
            estimate_batch,
            config,
            signature,
            aliases,
            wrapper,
            tuple(columns),
            needs_model,
            online_state,
            None if reads is None else tuple(reads),
            success_sink,
        )
        _entries[name] = entry
        _aliases.update(dict.fromkeys(aliases, name))
        _rebuild()
    return entry


def unregister_method(name: str) -> None:
    """Remove a method (given by name or alias) and all its aliases; ``ValueError`` if unknown."""
    with _lock:
        _remove_name(canonical_name(name))
        _rebuild()


def _canonical(name: str) -> str:
    return _aliases.get(name, name)


def _remove_name(name: str) -> None:
    """Drop ``name``: an alias alone (its method stays), or a canonical name with its aliases."""
    if name in _aliases:
        owner = _entries[_aliases.pop(name)]
        _entries[owner.name] = dataclasses.replace(
            owner, aliases=tuple(a for a in owner.aliases if a != name)
        )
        return
    _entries.pop(name, None)
    for alias in [a for a, n in _aliases.items() if n == name]:
        del _aliases[alias]


def bind_wrapper(name: str, wrapper: type) -> None:
    """Make ``wrapper`` the named wrapper of method ``name`` unless it has one already."""
    with _lock:
        entry = get_method(name)[0]
        if entry.wrapper is None:
            _entries[entry.name] = dataclasses.replace(entry, wrapper=wrapper)
            _rebuild()


def method_names() -> list[str]:
    """The canonical names, sorted (each method once; :data:`METHODS` also lists aliases)."""
    return sorted(_entries)


def registered_methods(*, needs_model: bool | None = None) -> tuple[CreditMethod, ...]:
    """The entries in registration order (built-ins first), each once; ``needs_model=False``: only
    the pure ones (GRPO, GiGPO, GraphGPO, RTMC and any pure method of one's own), ``True``: only
    the model-backed ones.

    >>> [m.name for m in registered_methods(needs_model=False)][:4]
    ['grpo', 'gigpo', 'graphgpo', 'rtmc']
    """
    return tuple(
        e for e in _entries.values() if needs_model is None or e.needs_model == needs_model
    )


def canonical_name(method: str) -> str:
    """The canonical name of ``method`` (a name or an alias); ``ValueError`` if unknown."""
    if method not in _names:
        raise ValueError(f"unknown credit method {method!r}; choose from {sorted(_names)}")
    return _canonical(method)


def get_method(method: str, config: Any = None) -> tuple[CreditMethod, Any]:
    """Look ``method`` (a name or an alias) up and return its entry with ``config`` (default config
    when ``None``).

    Raises:
        ValueError: unknown name. TypeError: a config of another method's class.
    """
    entry = _names.get(method) if isinstance(method, str) else None
    if entry is None:
        raise ValueError(f"unknown credit method {method!r}; choose from {sorted(_names)}")
    return entry, entry.check_config(config)


def make_config(method: str, **options: Any) -> Any:
    """The config of ``method`` (a name or alias) with ``options`` set on top of its defaults.

    This is how a command line builds a config (``--credit-config '{"lam": 0.4}'``,
    ``--judge oracle``); a model-based method's config takes its model here, given as an object
    or as the text spec its config documents.

    >>> make_config("graph", distance_discount=0.8).distance_discount
    0.8
    >>> make_config("grpo", lam=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: credit method 'grpo' has no option 'lam'; its options: episode_norm, norm, ...
    """
    entry = get_method(method)[0]
    if dataclasses.is_dataclass(entry.config):
        known = [f.name for f in dataclasses.fields(entry.config) if f.init]
        unknown = [k for k in options if k not in known]
        if unknown:
            raise ValueError(
                f"credit method {method!r} has no option {unknown[0]!r}; "
                f"its options: {', '.join(known) or '(none)'}"
            )
    return entry.config(**options)


def env_preset(env: Any, method: str) -> dict[str, Any]:
    """The config values ``env`` declares for ``method`` (a name or alias): its
    ``metadata["credit_presets"][<canonical name>]`` (docs/custom-env.md), ``{}`` when it declares
    none. ``env`` is an env or a wrapper of one (its ``metadata``), an env class, or a registered
    id (the metadata of the class its entry point names).

    >>> env_preset("agentenvs/SearchQA-v0", "triage"), env_preset("agentenvs/Sokoban-v0", "triage")
    ({'lam': 0.4}, {})
    """
    if isinstance(env, str):
        from gymnasium.envs.registration import load_env_creator, spec

        entry = spec(env).entry_point
        env = load_env_creator(entry) if isinstance(entry, str) else entry
    presets = (getattr(env, "metadata", None) or {}).get("credit_presets", {})
    return dict(presets.get(canonical_name(method), {}))


def estimate(
    trajectories: Sequence[Trajectory],
    method: str,
    config: Any = None,
    *,
    state_keys: str = "required",
    state: CreditState | None = None,
) -> list[np.ndarray]:
    """Advantages of ``trajectories`` under ``method`` (a name or alias) and ``config`` (default
    when ``None``), one float64 array per trajectory in order, grouped by ``group_id``; the
    trajectories are not changed (:func:`assign_advantages` writes them). ``state_keys`` and
    ``state`` as in :func:`assign_advantages`.

    >>> from agentenvs.core import Step, Trajectory
    >>> g = [Trajectory("t", "g", [Step("o", "a", 1.0)], success=True),
    ...      Trajectory("t", "g", [Step("o", "b", 0.0)], success=False)]
    >>> [a.round(4).tolist() for a in estimate(g, "grpo")]
    [[0.7071], [-0.7071]]
    """
    entry, config = get_method(method, config)
    return entry.estimate(trajectories, config, state_keys=state_keys, state=state)


def assign_advantages(
    groups: Sequence[Sequence[Trajectory]],
    method: str,
    config: Any = None,
    *,
    state_keys: str = "required",
    state: CreditState | None = None,
) -> None:
    """Write ``step.advantage`` (a float) into every step of ``groups``, in place.

    Each inner sequence is one group (whatever its trajectories' ``group_id``). ``method`` is a key
    of :data:`METHODS` (a name or an alias); ``config`` its config (default when ``None``).
    ``state_keys``: ``"required"`` (default) raises ``ValueError`` when a method that matches
    states (GiGPO, GraphGPO, RTMC: ``"state"`` in its columns) gets steps that all lack
    ``Step.state_key``; ``"none"`` runs it anyway with a :class:`MissingStateKeyWarning` (it then
    gives what GRPO gives). The estimator's output is checked (:meth:`CreditMethod.run`).

    ``state``: the :class:`~agentenvs.wrappers.state.CreditState` a model-backed method (TRIAGE,
    HISR, SPA) keeps its models, buffers and caches in, so that calls given the same state train
    one estimator; ``None``: a fresh state for this call only. The structural methods ignore it.
    """
    entry, config = get_method(method, config)
    entry.assign(groups, config, state_keys=state_keys, state=state)
