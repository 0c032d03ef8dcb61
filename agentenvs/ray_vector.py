"""A Gymnasium vector env whose sub-envs live in Ray actors, and survive them.

This module holds :class:`RayVectorEnv` and :func:`make_env` (``gym.make`` after registering the
agentenvs ids: the factory a worker on another machine runs).

:class:`RayVectorEnv` behaves like Gymnasium's ``SyncVectorEnv`` (``NEXT_STEP`` autoreset,
``reset_mask`` partial resets, ``call`` / ``get_attr`` / ``set_attr``, the same batched
observations and infos), so :func:`agentenvs.make_group_vec_env` (``vectorization_mode="ray"``),
:class:`agentenvs.wrappers.VectorCreditWrapper` and the LLM learner run on it unchanged. Its ``num_envs``
sub-envs are split into ``num_workers`` contiguous slices, one :class:`~agentenvs.workers.EnvWorker`
actor each; a step sends every actor its slice's actions at once and waits for all of them.

A dead worker (its process killed, its node lost, or no answer within ``timeout`` seconds) is
replaced by a fresh actor, which rebuilds each of its sub-envs from the driver's
:class:`~agentenvs.workers.Journal` (the sub-env's current episode replayed from the same task with
the same actions), and the interrupted call is sent again: a finished episode is never lost and
the in-flight one continues as if nothing happened. A sub-env whose replay does not reproduce the
observation it had handed out (a non-deterministic env) cannot continue its episode: that step
returns it ``truncated`` with ``info["infra_failure"] = True`` (in ``final_info`` under ``SAME_STEP``), and
:class:`~agentenvs.wrappers.VectorCreditWrapper` drops that episode's group whole instead of crediting a
failure the agent did not cause. A worker that dies ``max_restarts`` times in a row raises
``RuntimeError``. ``restarts`` and ``infra_failures`` count what happened.

Ray is started with ``ray.init(address=address)`` when it is not running yet (``None``: a local
instance; ``"auto"`` or ``"ray://host:10001"``: a cluster, whose nodes need agentenvs installed).

>>> import agentenvs                                      # doctest: +SKIP
>>> envs = agentenvs.make_group_vec_env("agentenvs/Sokoban-v0", num_groups=2, group_size=4,
...     vectorization_mode="ray", vector_kwargs={"num_workers": 2})   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from agentenvs.workers import EnvWorker, Journal, same_observation

__all__ = ["RayVectorEnv", "make_env"]


def make_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)`` with the agentenvs ids registered (in any process)."""
    import agentenvs  # noqa: F401  (registers the ids in a fresh worker process)

    return gym.make(env_id, **kwargs)


def _ray() -> Any:  # the ray module
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            "vectorization_mode='ray' needs Ray: pip install 'agentenvs[ray]'"
        ) from err
    return ray


class RayVectorEnv(gym.vector.VectorEnv):
    """Sub-envs in Ray actors, with ``NEXT_STEP`` autoreset and crash recovery (see module doc).

    Args:
        env_fns: one factory per sub-env (picklable: e.g. ``functools.partial(make_env, id)``).
        num_workers: actors (default: ``min(num_envs, CPUs of the Ray cluster)``); sub-env ``i``
            lives in actor ``i * num_workers // num_envs``.
        max_restarts: consecutive restarts of one worker before giving up (``RuntimeError``).
        timeout: seconds to wait for a worker's answer before treating it as dead (``None``:
            wait forever; set it above your slowest env step).
        worker_options: Ray actor options (default ``num_cpus``: the cluster's CPUs shared out,
            at most 1 per worker).
        address: ``ray.init`` address when Ray is not running yet.
        copy: return a copy of the batched observations (as ``SyncVectorEnv`` does).
        autoreset_mode: ``NEXT_STEP`` (default) or ``SAME_STEP`` (a step that ends an episode
            resets it and puts ``final_obs`` / ``final_info`` in the infos, as Gymnasium does).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        num_workers: int | None = None,
        *,
        max_restarts: int = 3,
        timeout: float | None = None,
        worker_options: dict[str, Any] | None = None,
        address: str | None = None,
        copy: bool = True,
        autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
    ) -> None:
        ray = self._ray = _ray()
        if not env_fns:
            raise ValueError("RayVectorEnv needs at least one env factory")
        if not ray.is_initialized():
            ray.init(address=address, log_to_driver=False)
        self.env_fns = list(env_fns)
        self.num_envs = len(self.env_fns)
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        num_workers = num_workers or max(1, min(self.num_envs, int(cpus)))
        if not 1 <= num_workers <= self.num_envs:
            raise ValueError(f"num_workers must be in [1, {self.num_envs}], got {num_workers}")
        self.num_workers = num_workers
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {autoreset_mode}")
        self._same_step = autoreset_mode == AutoresetMode.SAME_STEP
        self.max_restarts, self.timeout, self.copy = max_restarts, timeout, copy
        self._slices = [list(s) for s in np.array_split(np.arange(self.num_envs), num_workers)]
        self._where = [(w, j) for w, s in enumerate(self._slices) for j in range(len(s))]
        options = {"num_cpus": min(1.0, cpus / num_workers), "max_restarts": 0}
        self._actor_class = ray.remote(EnvWorker).options(**{**options, **(worker_options or {})})
        self._actors = [self._spawn(w) for w in range(num_workers)]
        spec = self._get(self._actors[0].spaces.remote())
        self.single_observation_space = spec["observation_space"]
        self.single_action_space = spec["action_space"]
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**spec["metadata"], "autoreset_mode": autoreset_mode}
        self.render_mode, self.spec = spec["render_mode"], spec["spec"]
        self._observations = create_empty_array(self.single_observation_space, self.num_envs)
        self._obs: list[Any] = [None] * self.num_envs  # the last observation handed out
        self._info: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._done = np.zeros(self.num_envs, bool)  # episode over: the next step autoresets
        self._journals = [Journal() for _ in range(self.num_envs)]
        self.restarts = 0
        self.infra_failures = 0

    # -- workers -------------------------------------------------------------------------------
    def _spawn(self, w: int) -> Any:  # a Ray actor handle
        return self._actor_class.remote([self.env_fns[i] for i in self._slices[w]], self._same_step)

    def _get(self, future: Any) -> Any:
        return self._ray.get(future, timeout=self.timeout)

    def _dead(self) -> tuple[type[BaseException], ...]:
        errors = self._ray.exceptions
        return (errors.RayActorError, errors.GetTimeoutError)

    def _call(self, method: str, requests: dict[int, Any], *extra: Any) -> dict[int, Any]:
        """``worker.method(requests[w], *extra)`` on every worker ``w`` of ``requests`` at once;
        a worker that died is replaced and rebuilt, and its request sent again."""
        futures = {
            w: getattr(self._actors[w], method).remote(r, *extra) for w, r in requests.items()
        }
        out = {}
        for w, future in futures.items():
            try:
                out[w] = self._get(future)
            except self._dead():
                out[w] = self._recover(w, method, requests[w], *extra)
        return out

    def _recover(self, w: int, method: str, request: Any, *extra: Any) -> Any:
        """Replace worker ``w``, rebuild its sub-envs, and run the interrupted call again."""
        for _ in range(self.max_restarts):
            self.restarts += 1
            self._ray.kill(self._actors[w], no_restart=True)
            self._actors[w] = actor = self._spawn(w)
            try:
                resetting = {j for j, *_ in request} if method == "reset" else set()
                lost = self._rebuild(w, skip=resetting)
                if method != "step":
                    return self._get(getattr(actor, method).remote(request, *extra))
                live = [(j, a) for j, a in request if j not in lost]
                done = iter(self._get(actor.step.remote(live)))
                return [
                    self._infra_failure(w, j, lost[j]) if j in lost else next(done)
                    for j, _ in request
                ]
            except self._dead():
                continue
        raise RuntimeError(
            f"env worker {w} (sub-envs {self._slices[w]}) died {self.max_restarts} times in a row"
        )

    def _rebuild(self, w: int, skip: set[int]) -> dict[int, Any]:
        """Replay each journal of worker ``w`` (but the sub-envs in ``skip``) in its new actor;
        return the sub-envs (local indices) whose running episode could not be rebuilt, each with
        its worker's ``abandon`` result."""
        actor, lost = self._actors[w], {}
        for j, i in enumerate(self._slices[w]):
            entries = self._journals[i].entries
            if j in skip or not entries:
                continue
            try:
                obs = self._get(actor.restore.remote(j, entries))
                rebuilt = same_observation(obs, self._obs[i])
            except self._ray.exceptions.RayTaskError:  # the env raised during the replay
                rebuilt = False
            if not rebuilt:
                abandoned = self._get(actor.abandon.remote(j))
                if not self._done[i]:  # a finished episode was already handed out whole
                    lost[j] = abandoned
        return lost

    def _infra_failure(self, w: int, j: int, abandoned: tuple | None) -> tuple:
        """The step result of a sub-env whose episode was lost with its worker: truncated, with
        ``infra_failure`` in its (final) info; ``SAME_STEP``: ``abandoned`` is its reset."""
        i = self._slices[w][j]
        self.infra_failures += 1
        last_info = {**self._info[i], "infra_failure": True}
        if abandoned is None:  # NEXT_STEP: the episode ends here; the next step resets it
            return (self._obs[i], 0.0, False, True, last_info, False, None, None)
        obs, info, snapshot = abandoned  # SAME_STEP: already reset
        return (obs, 0.0, False, True, info, True, snapshot, (self._obs[i], last_info))

    # -- Gymnasium API -------------------------------------------------------------------------
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset all sub-envs, or those of ``options["reset_mask"]`` (as ``SyncVectorEnv``)."""
        if seed is None or isinstance(seed, int):
            seed = [None if seed is None else seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"{len(seed)} seeds for {self.num_envs} sub-envs")
        mask = np.ones(self.num_envs, bool)
        if options is not None and "reset_mask" in options:
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
                raise TypeError("options['reset_mask'] must be a numpy bool array")
            if mask.shape != (self.num_envs,) or not mask.any():
                raise ValueError(f"options['reset_mask'] must be ({self.num_envs},) with a True")
        requests: dict[int, list] = {}
        for i in np.flatnonzero(mask):
            w, j = self._where[i]
            requests.setdefault(w, []).append((j, seed[i], options))
        results = self._call("reset", requests)
        infos: dict[str, Any] = {}
        for w, request in requests.items():
            for (j, s, _), (obs, info, snapshot) in zip(request, results[w], strict=True):
                i = self._slices[w][j]
                self._journals[i].on_reset(s, options, info, snapshot)
                self._obs[i], self._info[i], self._done[i] = obs, info, False
                infos = self._add_info(infos, info, i)
        return self._batched(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = list(iterate(self.action_space, actions))
        requests: dict[int, list] = {}
        for i, action in enumerate(actions):
            w, j = self._where[i]
            requests.setdefault(w, []).append((j, action))
        results = self._call("step", requests)
        rewards = np.zeros(self.num_envs)
        terminated = np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        infos: dict[str, Any] = {}
        for w, request in requests.items():
            for (j, action), result in zip(request, results[w], strict=True):
                i = self._slices[w][j]
                obs, rewards[i], terminated[i], truncated[i], info, was_reset, snap, final = result
                journal = self._journals[i]
                lost = (info if final is None else final[1]).get("infra_failure", False)
                if not lost and (final is not None or not was_reset):
                    journal.on_step(action)  # (a lost episode's journal ends where it broke)
                if was_reset:
                    journal.on_reset(None, None, info, snap)
                if final is not None:
                    infos = self._add_info(
                        infos, {"final_obs": final[0], "final_info": final[1]}, i
                    )
                self._obs[i], self._info[i] = obs, info
                self._done[i] = not self._same_step and (terminated[i] or truncated[i])
                infos = self._add_info(infos, info, i)
        return self._batched(), rewards, terminated, truncated, infos

    def _batched(self) -> Any:
        assert self._observations is not None  # made in __init__
        self._observations = concatenate(
            self.single_observation_space, self._obs, self._observations
        )
        return deepcopy(self._observations) if self.copy else self._observations

    def _by_worker(
        self, indices: Sequence[int], values: Sequence[Any] | None = None
    ) -> dict[int, list]:
        """``indices`` (and their ``values``) grouped per worker as local requests."""
        requests: dict[int, list] = {}
        for k, i in enumerate(indices):
            w, j = self._where[i]
            requests.setdefault(w, []).append(j if values is None else (j, values[k]))
        return requests

    def call_at(self, indices: Sequence[int], name: str, *args: Any, **kwargs: Any) -> list:
        """``name`` called (or read) on the sub-envs ``indices``, in that order."""
        results = self._call("call", self._by_worker(indices), name, args, kwargs)
        cursor = {w: iter(r) for w, r in results.items()}
        return [next(cursor[self._where[i][0]]) for i in indices]

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name`` called (or read) on every sub-env, in sub-env order."""
        return tuple(self.call_at(range(self.num_envs), name, *args, **kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def set_attr(self, name: str, values: Any, indices: Sequence[int] | None = None) -> None:
        """Set ``name`` on every sub-env (or those of ``indices``): one value each if ``values``
        is a list or tuple, else the same value."""
        indices = list(range(self.num_envs) if indices is None else indices)
        if not isinstance(values, list | tuple):
            values = [values] * len(indices)
        if len(values) != len(indices):
            raise ValueError(f"{len(values)} values for {len(indices)} sub-envs")
        for i, value in zip(indices, values, strict=True):
            self._journals[i].on_set_attr(name, value)
        self._call("set_attr", self._by_worker(indices, values), name)

    def wrapped(self, wrapper_class: type, indices: Sequence[int]) -> list[bool]:
        """Whether each sub-env of ``indices`` has a ``wrapper_class`` wrapper."""
        results = self._call("wrapped", self._by_worker(indices), wrapper_class)
        cursor = {w: iter(r) for w, r in results.items()}
        return [next(cursor[self._where[i][0]]) for i in indices]

    def render(self) -> tuple[Any, ...]:
        return self.call("render")

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env and stop the actors (Ray itself keeps running)."""
        futures = [a.close.remote() for a in self._actors]
        try:
            self._ray.get(futures, timeout=30)
        except Exception:  # noqa: BLE001 - a dead or stuck worker is stopped below anyway
            pass
        for actor in self._actors:
            self._ray.kill(actor, no_restart=True)
