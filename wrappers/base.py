"""Credit wrappers for a single Gymnasium env: repeat a task for a group, credit the group.

This module holds :class:`CreditWrapper` (any registered method, by name) and its named forms
:class:`OutcomeCreditWrapper` (GRPO), :class:`GiGPOCreditWrapper`, :class:`GraphCreditWrapper`
(GraphGPO), :class:`RolloutTreeCreditWrapper` (RTMC), :class:`RoleCreditWrapper` (TRIAGE),
:class:`HindsightCreditWrapper` (HISR) and :class:`ProgressCreditWrapper` (SPA).

The wrapper plays ``group_size`` consecutive episodes of one task: the first reset of a group picks
a task as the env does, resets 2..group_size pass ``options={"task_id": <that task>}``. It records
every step (``Step.action`` is the very object given to :meth:`~CreditWrapper.step`); when the
group's last episode ends it credits the group (:mod:`agentenvs.wrappers.grouping`: ids
``f"{task_id}#{serial}"``, ``traj_id`` = episode index) and puts the credited trajectories, in
episode order and each ``Step.advantage`` set, into ``info["credit"]`` of that final step, and keeps
them for :meth:`CreditWrapper.pop_groups`.

The wrappers follow Gymnasium's wrapper protocol: they are generic ``gym.Wrapper`` subclasses that
record their constructor arguments (``gymnasium.utils.RecordConstructorArgs``), so
``env.spec.additional_wrappers`` lists them and ``gym.make(env.spec)`` rebuilds the wrapped env.
The recorded ``config`` is the config object itself, not a copy (a config may hold a model).
The wrapper's :class:`~agentenvs.wrappers.state.CreditState` (``credit_state``: the online state of
a model-backed method) is never recorded: ``gym.make(env.spec)`` rebuilds the wrapper with a fresh
one, and wrappers share one only when it is passed to each as ``state=``.

>>> import gymnasium as gym, agentenvs
>>> env = GraphCreditWrapper(gym.make("agentenvs/Sokoban-v0", action_format="plain"), group_size=2)
>>> obs, info = env.reset(seed=0)
>>> credited = []
>>> while not credited:
...     obs, reward, terminated, truncated, info = env.step("up")
...     if terminated or truncated:
...         credited = info.get("credit", [])
...         obs, info = env.reset()
>>> len(credited), credited[0].task_id == credited[1].task_id, credited[0].steps[0].advantage
(2, True, 0.0)
>>> credited[0].group_id == f"{credited[0].task_id}#0", [t.traj_id for t in credited]
(True, ['0', '1'])
>>> again = gym.make(env.spec)
>>> type(again).__name__, again.method, again.group_size, again.config == env.config
('GraphCreditWrapper', 'graphgpo', 2, True)
>>> again.credit_state is env.credit_state, env.credit_state
(False, CreditState('graphgpo'))

Any registered method, by name or alias, and a named wrapper of one's own in one line:

>>> CreditWrapper(gym.make("agentenvs/Sokoban-v0"), group_size=4, method="graph").credit_method.name
'graphgpo'
>>> class MyGraphWrapper(CreditWrapper, method="graph"): ...
>>> type(MyGraphWrapper(gym.make("agentenvs/Sokoban-v0")).config).__name__
'GraphGPOConfig'
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
from agentenvs.wrappers.grouping import GroupAssembler
from agentenvs.wrappers.recorder import EpisodeRecorder
from agentenvs.wrappers.registry import bind_wrapper, canonical_name, generic_wrapper, get_method
from agentenvs.wrappers.state import CreditState
from gymnasium.core import ActType, ObsType

from agentenvs.core import Trajectory, TrajectoryStore
from agentenvs.vector import DEFAULT_GROUP_SIZE
from agentenvs.workers import rng_state_of

__all__ = [
    "CreditWrapper",
    "refuse_double_credit",
    "OutcomeCreditWrapper",
    "GiGPOCreditWrapper",
    "GraphCreditWrapper",
    "RolloutTreeCreditWrapper",
    "RoleCreditWrapper",
    "HindsightCreditWrapper",
    "ProgressCreditWrapper",
]

_SLOT = "group"  # the single wrapper's one open-group slot


class CreditWrapper(
    gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs
):
    """Group episodes of one task and hand out per-step advantages at the group's end.

    Args:
        env: an env whose ``reset`` accepts ``options={"task_id": ...}`` and whose ``info`` carries
            ``task_id``, ``state_key``, ``won`` and ``action_valid`` (every agentenvs env does).
        method: a name or alias in :data:`agentenvs.wrappers.registry.METHODS`; ``None`` takes the class's
            ``method`` (the named subclasses fix it; :class:`CreditWrapper` itself defaults to
            ``"grpo"``, which needs nothing from the env but the outcome, as does
            :class:`~agentenvs.wrappers.VectorCreditWrapper`).
        config: the method's config (default config when ``None``).
        group_size: episodes per group (M), >= 1, default
            :data:`~agentenvs.vector.DEFAULT_GROUP_SIZE` (8) (keyword-only, like every option after
            ``config``: the signature is :class:`~agentenvs.wrappers.VectorCreditWrapper`'s, which takes its
            group size from the grouped vector env).
        store: a :class:`~agentenvs.core.TrajectoryStore` that gets every credited group right
            after it is credited (method: the canonical name; no iteration); ``None``: none. The
            wrapper does not close it.
        state_keys: ``"required"`` (default): a method that matches states (GiGPO, GraphGPO,
            RTMC) raises ``ValueError`` on a group whose steps have no ``info["state_key"]``;
            ``"none"``: run it anyway, with a warning (it then gives GRPO's advantages).
        state: the :class:`~agentenvs.wrappers.state.CreditState` to credit with (the online
            state of TRIAGE, HISR and SPA: models, buffers, caches); ``None`` (default): a fresh
            one. Pass one state to several wrappers (same method and config) to train one
            estimator on all their groups.

    Raises:
        ValueError: ``env`` already has a credit wrapper (both would write ``info["credit"]``).

    Attributes:
        method: the method name as given (an alias stays an alias);
            ``credit_method`` is the registry entry, resolved once here and kept
            (``credit_method.name`` the canonical name).
        config: the method's config in use. group_size: episodes per group (read-only).
        credit_state: the :class:`~agentenvs.wrappers.state.CreditState` in use (in ``repr``).

    Resetting in the middle of an episode abandons that episode (it is not part of any group); once
    a group has a finished episode, every reset replays its task. An explicit
    ``options["task_id"]`` equal to the group's task is accepted, a different one raises
    ``ValueError``.

    A named wrapper for a method is a subclass with the ``method`` class keyword; the first one
    declared for a method becomes its ``CreditMethod.wrapper``::

        class MyCreditWrapper(CreditWrapper, method="mine"): ...
    """

    method: str = "grpo"

    def __init_subclass__(cls, method: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if method is not None:
            cls.method = canonical_name(method)
            bind_wrapper(cls.method, cls)

    def __init__(
        self,
        env: gym.Env[ObsType, ActType],
        method: str | None = None,
        config: Any = None,
        *,
        group_size: int = DEFAULT_GROUP_SIZE,
        store: TrajectoryStore | None = None,
        state_keys: str = "required",
        state: CreditState | None = None,
    ) -> None:
        method = method or type(self).method
        self.credit_method, config = get_method(method, config)
        refuse_double_credit(env, type(self).__name__)
        gym.utils.RecordConstructorArgs.__init__(
            self,
            group_size=group_size,
            config=config,
            method=method,
            store=store,
            state_keys=state_keys,
            _disable_deepcopy=True,
        )
        gym.Wrapper.__init__(self, env)
        self._assembler = GroupAssembler(
            group_size, self.credit_method, config, store=store, state_keys=state_keys, state=state
        )
        self.method = method
        self.config = config
        self.credit_state = self._assembler.state
        self._recorder = EpisodeRecorder()
        self._group_task: str | None = None

    @property
    def group_size(self) -> int:
        """Episodes per group (kept by the wrapper's group assembler; read-only)."""
        return self._assembler.group_size

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__}{self.env} method={self.credit_method.name!r} "
            f"group_size={self.group_size} state={self.credit_state!r}>"
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        options = dict(options or {})
        played = len(self._assembler.members(_SLOT))
        if played:
            asked = options.get("task_id")
            if asked is not None and asked != self._group_task:
                raise ValueError(
                    f"task_id {asked!r} conflicts with the group's task {self._group_task!r}; "
                    f"the group needs {self.group_size - played} more episodes"
                )
            options["task_id"] = self._group_task
        obs, info = self.env.reset(seed=seed, options=options or None)
        task = info.get("task_id")
        if task is None:
            raise ValueError(
                "the env must report info['task_id'] (and accept options={'task_id': ...}) "
                "so that a group replays one task"
            )
        if not played:
            self._group_task = task
        elif task != self._group_task:
            raise RuntimeError(
                f"the env ignored options['task_id']={self._group_task!r} and played {task!r}"
            )
        self._recorder.begin(obs, info)
        return obs, info

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        traj = self._recorder.record(action, obs, reward, terminated, truncated, info)
        if traj is not None:
            member = len(self._assembler.members(_SLOT))
            group = self._assembler.add(_SLOT, member, traj)
            if group is not None:
                info = {**info, "credit": group}
        return obs, reward, terminated, truncated, info

    def pop_groups(self) -> list[list[Trajectory]]:
        """The credited groups finished since the last call (oldest first); clears the list."""
        return self._assembler.pop_groups()

    @property
    def rng_state(self) -> Any:
        """The inner env's ``rng_state`` between groups; ``None`` while a group has finished
        episodes, which a remote worker must then replay too (:mod:`agentenvs.workers`)."""
        return None if self._assembler.members(_SLOT) else rng_state_of(self.env)

    @rng_state.setter
    def rng_state(self, state: Any) -> None:
        self.env.set_wrapper_attr("rng_state", state)


def refuse_double_credit(env: gym.Env | gym.vector.VectorEnv, wrapper: str) -> None:
    """``ValueError`` when ``env`` (or an env it wraps) is already a credit wrapper."""
    inner: Any = env
    while isinstance(inner, (gym.Wrapper, gym.vector.VectorWrapper)):
        if isinstance(vars(inner).get("_assembler"), GroupAssembler):  # a credit wrapper
            credit: Any = inner
            raise ValueError(
                f"{wrapper}: the env is already wrapped by {type(inner).__name__} (method "
                f"{credit.credit_method.name!r}); two credit wrappers both write info['credit'] "
                "and one overwrites the other's groups: wrap the env once"
            )
        inner = inner.env
    return None


generic_wrapper.append(CreditWrapper)  # CreditMethod.wrap's wrapper for a method with no named one


class OutcomeCreditWrapper(CreditWrapper, method="grpo"):
    """GRPO: every step gets its trajectory's group-normalised outcome (:mod:`agentenvs.wrappers.grpo`)."""


class GiGPOCreditWrapper(CreditWrapper, method="gigpo"):
    """GiGPO: episode advantage plus anchor-state step advantage (:mod:`agentenvs.wrappers.gigpo`)."""


class GraphCreditWrapper(CreditWrapper, method="graphgpo"):
    """GraphGPO: episode advantage plus graph distance-to-success advantage (:mod:`agentenvs.wrappers.graphgpo`)."""


class RolloutTreeCreditWrapper(CreditWrapper, method="rtmc"):
    """RTMC: first-visit rollout-tree Monte Carlo advantages (:mod:`agentenvs.wrappers.rtmc`)."""


class RoleCreditWrapper(CreditWrapper, method="triage"):
    """TRIAGE: GRPO outcome advantage plus a judge's role-typed step correction
    (:mod:`agentenvs.wrappers.triage`; the judge is the config's, default the oracle)."""


class HindsightCreditWrapper(CreditWrapper, method="hisr"):
    """HISR: segment process rewards re-weighted by hindsight importance, fused with grounding
    (:mod:`agentenvs.wrappers.hisr`; its models train online from the groups it credits)."""


class ProgressCreditWrapper(CreditWrapper, method="spa"):
    """SPA: a progress estimator's per-step contributions fused with grounding, trained online on
    the groups it credits (:mod:`agentenvs.wrappers.spa`; the estimator is the config's, default
    ``"features"``)."""
