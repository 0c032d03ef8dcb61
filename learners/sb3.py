"""stable-baselines3 PPO whose advantages come from a credit wrapper instead of GAE.

This module holds:

* :class:`CreditPPO` - :class:`stable_baselines3.PPO` that, when its sub-envs are wrapped in a
  :class:`agentenvs.wrappers.CreditWrapper`, fills its rollout buffer with the wrapper's per-step advantages
  (GRPO, GiGPO, GraphGPO, RTMC, ...); on unwrapped envs it *is* plain PPO with GAE.
* :class:`CreditRolloutBuffer` - a :class:`~stable_baselines3.common.buffers.RolloutBuffer` filled
  once per rollout with a variable number of credited steps.
* :func:`make_credit_vec_env` - an SB3 ``VecEnv`` of ``n_envs`` sub-envs, each wrapped in the
  credit wrapper of a method (``"gae"``: no wrapper).
* :class:`RayVecEnv` - an SB3 ``VecEnv`` whose sub-envs (credit wrappers included) live in Ray
  actors (:class:`agentenvs.RayVectorEnv`): ``make_credit_vec_env(..., vec_env_cls=RayVecEnv)``.
* :func:`discounted_returns` - reward-to-go, the value head's regression target under credit.
* :func:`evaluate_success` - greedy success rate of a model on a fixed list of task ids.

How a credited rollout is built. Each sub-env's :class:`~agentenvs.wrappers.CreditWrapper` plays
``group_size`` consecutive episodes of one task and, on the group's last step, puts the credited
:class:`~agentenvs.core.Trajectory` objects into ``info["credit"]``. :class:`CreditPPO` keeps, per
sub-env, the observation, action, value and log-probability of every step it took (computed by the
policy at collection time) and, when the group's credit arrives, pairs them one to one with the
group's steps (checking the actions agree). Only such credited steps enter the buffer: the rollout
ends once at least ``n_steps * n_envs`` of them are ready, so the buffer holds *all* steps of the
groups finished so far and nothing else. Steps of groups still open at that moment stay pending and
enter the next rollout with the log-probabilities of the policy that sampled them (PPO's clipped
ratio treats them as slightly off-policy samples; ``credit/stale_fraction`` logs their share).

Advantages are the wrapper's, unchanged: ``normalize_advantage`` defaults to ``False`` under credit
(the methods already normalise per group; SB3's per-minibatch re-centring would change them) and to
SB3's ``True`` otherwise. The value head is still trained (``vf_coef``) on the discounted
Monte-Carlo return-to-go of the env rewards (:func:`discounted_returns`, ``gamma``); it does not
enter the advantages, so ``vf_coef=0`` turns it off at no cost to the policy.

Rewards instead of advantages. A wrapper whose config has ``advantage="rewards"`` (SPA and HISR,
e.g. :func:`agentenvs.wrappers.offline.frozen_config`: the papers' pipeline) hands out each step's dense
*reward* ``r_t``. :class:`CreditPPO` then runs GAE with its critic on those rewards, per episode
(:func:`agentenvs.wrappers.stats.gae`: ``gamma``, ``gae_lambda``, the values the policy gave at collection time,
``V = 0`` after a terminal step and the critic's value of the final observation after a time-limit
truncation, as SB3 does); the value head regresses on ``A + V`` and ``normalize_advantage`` defaults
to ``True``, as in plain PPO. The buffer's ``rewards`` column holds the rewards used (the env's
rewards when the wrapper gives advantages).

>>> import gymnasium as gym, agentenvs
>>> env = make_credit_vec_env("agentenvs/SokobanDiscrete-v0", "graph", n_envs=2, group_size=2, seed=0)
>>> model = CreditPPO("MlpPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0)
>>> model.credit, model.learn(64).num_timesteps >= 64, model.rollout_buffer.buffer_size >= 64
('graph', True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

try:
    import torch as th
    from gymnasium import spaces
    from stable_baselines3 import PPO
    from stable_baselines3.common.buffers import RolloutBuffer
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.utils import obs_as_tensor
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "agentenvs.learners.sb3 needs stable-baselines3 and torch: pip install 'agentenvs[sb3]'"
    ) from err

from agentenvs.wrappers import CreditState, CreditWrapper
from agentenvs.wrappers.registry import METHODS
from agentenvs.wrappers.rewards import reward_to_go
from agentenvs.wrappers.stats import gae

from agentenvs.core import Trajectory, episode_success
from agentenvs.ray_vector import RayVectorEnv
from agentenvs.vector import DEFAULT_GROUP_SIZE, sub_info

__all__ = [
    "CreditPPO",
    "CreditRolloutBuffer",
    "make_credit_vec_env",
    "RayVecEnv",
    "discounted_returns",
    "evaluate_success",
]


def discounted_returns(rewards: Sequence[float] | np.ndarray, gamma: float) -> np.ndarray:
    """Reward-to-go ``G_t = sum_k gamma**(k - t) r_k`` of one episode, float64 ``(len(rewards),)``.

    >>> discounted_returns([1.0, 0.0, 10.0], 0.5).tolist()
    [3.5, 5.0, 10.0]
    """
    return reward_to_go(rewards, gamma)


class CreditRolloutBuffer(RolloutBuffer):
    """A rollout buffer refilled each rollout with exactly the credited steps (any number of them).

    :meth:`fill` resizes the buffer to the number of steps given (as one env column, so ``get``
    yields ``ceil(n / batch_size)`` minibatches) and stores the advantages and returns as given;
    :meth:`compute_returns_and_advantage` (GAE) is never used.
    """

    def fill(
        self,
        observations: np.ndarray,
        actions: np.ndarray,
        values: np.ndarray,
        log_probs: np.ndarray,
        advantages: np.ndarray,
        returns: np.ndarray,
        episode_starts: np.ndarray,
        rewards: np.ndarray | None = None,
    ) -> None:
        """Store ``n`` steps; every array has the step axis first (``observations``: ``(n, *obs_shape)``)."""
        n = len(advantages)
        if n == 0:
            raise ValueError("a credited rollout needs at least one step")
        self.buffer_size, self.n_envs = n, 1
        self.reset()
        self.observations[:] = np.asarray(observations).reshape(self.observations.shape)
        self.actions[:] = np.asarray(actions).reshape(self.actions.shape)
        for name, column in (
            ("values", values),
            ("log_probs", log_probs),
            ("advantages", advantages),
            ("returns", returns),
            ("episode_starts", episode_starts),
            ("rewards", np.zeros(n) if rewards is None else rewards),
        ):
            getattr(self, name)[:, 0] = np.asarray(column, dtype=np.float32)
        self.pos, self.full = n, True


class _PendingSteps:
    """Per sub-env record of the policy's outputs for steps whose group is not yet credited.

    A record is ``(obs, action, value, log_prob, episode_start, rollout_index, bootstrap)``, where
    ``bootstrap`` is the critic's value of the final observation on a truncated episode's last step,
    else 0. ``episodes[i]``
    holds sub-env ``i``'s finished episodes of its open group, ``current[i]`` its running episode.
    """

    def __init__(self, num_envs: int) -> None:
        self.episodes: list[list[list[tuple]]] = [[] for _ in range(num_envs)]
        self.current: list[list[tuple]] = [[] for _ in range(num_envs)]

    def drop_running_episodes(self) -> None:
        """Forget the running episodes (the env was reset; credit wrappers abandon them too)."""
        self.current = [[] for _ in self.current]

    def add(self, env_index: int, record: tuple, done: bool) -> None:
        self.current[env_index].append(record)
        if done:
            self.episodes[env_index].append(self.current[env_index])
            self.current[env_index] = []

    def pop_group(self, env_index: int, group: Sequence[Trajectory]) -> list[tuple]:
        """Pair the credited ``group`` with sub-env ``env_index``'s records, step by step.

        Returns ``(record, step)`` pairs. Raises ``RuntimeError`` if the group does not match what
        was played (another consumer reset the env, or the wrapper is not the outermost credit one).
        """
        episodes, self.episodes[env_index] = self.episodes[env_index], []
        lengths = [len(t.steps) for t in group]
        if [len(e) for e in episodes] != lengths:
            raise RuntimeError(
                f"sub-env {env_index}: credited episode lengths {lengths} do not match the "
                f"episodes played {[len(e) for e in episodes]}"
            )
        pairs = [
            (r, s)
            for e, t in zip(episodes, group, strict=True)
            for r, s in zip(e, t.steps, strict=True)
        ]
        for record, step in pairs:
            if not np.array_equal(np.asarray(record[1]).ravel(), np.asarray(step.action).ravel()):
                raise RuntimeError(
                    f"sub-env {env_index}: credited step action differs from the one played"
                )
        return pairs


class CreditPPO(PPO):
    """PPO with per-step advantages from the credit wrappers around its sub-envs.

    Args:
        policy, env: as :class:`stable_baselines3.PPO`. If ``env``'s sub-envs are wrapped in a
            :class:`agentenvs.wrappers.CreditWrapper` (see :func:`make_credit_vec_env`), advantages come from
            it; otherwise this is plain PPO with GAE, step for step.
        normalize_advantage: ``None`` (default) = ``False`` under credit advantages, ``True`` (SB3's
            default) with GAE, on the env's rewards or on a wrapper's (``advantage="rewards"``).
        **kwargs: any :class:`stable_baselines3.PPO` argument. ``n_steps * n_envs`` is the minimum
            number of credited steps per rollout; ``gamma`` discounts the value head's target.

    Attributes:
        credit: the credit method of the sub-envs' wrappers (e.g. ``"graph"``), or ``"gae"``.
        credit_rewards: the wrappers hand out rewards (their config's ``advantage="rewards"``),
            which GAE with the critic turns into advantages (module docstring).
    """

    def __init__(
        self,
        policy: str | type,
        env: gym.Env | VecEnv | str,
        normalize_advantage: bool | None = None,
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(policy, env, _init_setup_model=False, **kwargs)
        vec_env = self.env
        self.credit = "gae" if vec_env is None else _credit_method(vec_env)
        self.credit_rewards = (
            vec_env is not None and self.credit != "gae" and _gives_rewards(vec_env)
        )
        if self.credit != "gae":
            if isinstance(self.observation_space, spaces.Dict):
                raise ValueError("CreditPPO supports Box/Discrete observations, not Dict spaces")
            self.rollout_buffer_class = CreditRolloutBuffer
        self.normalize_advantage = (
            self.credit == "gae" or self.credit_rewards
            if normalize_advantage is None
            else normalize_advantage
        )
        self._pending: _PendingSteps | None = None
        self._ready: list[tuple] = []
        self._rollouts = 0
        if _init_setup_model:
            self._setup_model()

    def _excluded_save_params(self) -> list[str]:
        """Pending steps belong to the envs' open groups; they are not saved."""
        return [*super()._excluded_save_params(), "_pending", "_ready"]

    def set_env(self, env: gym.Env | VecEnv, force_reset: bool = True) -> None:
        """Switch to ``env`` (same credit method); pending steps of the old env are dropped."""
        super().set_env(env, force_reset)
        assert self.env is not None  # super().set_env wraps and sets it
        credit = _credit_method(self.env)
        rewards = credit != "gae" and _gives_rewards(self.env)
        if credit != self.credit or rewards != self.credit_rewards:
            raise ValueError(
                f"the model trains with credit {self.credit!r} (rewards: {self.credit_rewards}), "
                f"the env gives {credit!r} (rewards: {rewards})"
            )
        self._pending, self._ready = None, []

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: Any = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        env_reset = reset_num_timesteps or self._last_obs is None
        result = super()._setup_learn(
            total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar
        )
        if self.credit != "gae":
            if self._pending is None:
                assert self.env is not None  # learn() needs an env
                self._pending = _PendingSteps(self.env.num_envs)
            elif env_reset:
                self._pending.drop_running_episodes()
        return result

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: RolloutBuffer,
        n_rollout_steps: int,
    ) -> bool:
        """Step ``env`` until ``n_rollout_steps * num_envs`` credited steps are ready; fill the buffer.

        With ``credit == "gae"`` this is :meth:`stable_baselines3.PPO.collect_rollouts`.
        """
        if self.credit == "gae":
            return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)
        assert self._last_obs is not None and self._pending is not None, "call learn()"
        self.policy.set_training_mode(False)
        callback.on_rollout_start()
        target = n_rollout_steps * env.num_envs
        while len(self._ready) < target:
            obs = self._last_obs
            assert isinstance(obs, np.ndarray)  # Box/Discrete observations (Dict is refused)
            with th.no_grad():
                actions, values, log_probs = self.policy(obs_as_tensor(obs, self.device))
            actions = actions.cpu().numpy()
            env_actions = actions
            if isinstance(self.action_space, spaces.Box):
                env_actions = np.clip(actions, self.action_space.low, self.action_space.high)
            new_obs, _, dones, infos = env.step(env_actions)
            self.num_timesteps += env.num_envs
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
            self._record(env, obs, actions, values, log_probs, dones, infos)
            self._last_obs, self._last_episode_starts = new_obs, dones  # type: ignore[assignment]  # SB3 types _last_obs without VecEnv's tuple observations, as its own PPO does
        self._fill(rollout_buffer)
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    # -- internals -----------------------------------------------------------------------------------
    def _record(
        self,
        env: VecEnv,
        obs: np.ndarray,
        actions: np.ndarray,
        values: th.Tensor,
        log_probs: th.Tensor,
        dones: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """Store this step's policy outputs per sub-env; move credited groups to ``_ready``."""
        value_of = values.flatten().cpu().numpy()
        log_prob_of = log_probs.cpu().numpy()
        starts, pending = self._last_episode_starts, self._pending
        assert starts is not None and pending is not None
        for i, info in enumerate(infos):
            record = (
                obs[i],
                actions[i],
                value_of[i],
                log_prob_of[i],
                bool(starts[i]),
                self._rollouts,
                self._bootstrap(info) if dones[i] and self.credit_rewards else 0.0,
            )
            pending.add(i, record, bool(dones[i]))
            group = info.get("credit")
            if group is None:
                continue
            if not isinstance(group, _SharedGroup):  # a user-built env: free the wrapper's copy
                env.env_method("pop_groups", indices=[i])
            pairs = pending.pop_group(i, group)
            if self.credit_rewards:
                self._ready += self._gae_steps(pairs, group)
                continue
            returns = np.concatenate(
                [discounted_returns([s.reward for s in t.steps], self.gamma) for t in group]
            )
            for (record, step), ret in zip(pairs, returns, strict=True):
                if step.advantage is not None:
                    self._ready.append(
                        (*record[:5], float(step.advantage), float(ret), record[5], step.reward)
                    )

    def _bootstrap(self, info: dict[str, Any]) -> float:
        """The critic's value of a truncated episode's final observation (0 when it terminated)."""
        if not info.get("TimeLimit.truncated") or "terminal_observation" not in info:
            return 0.0
        obs = self.policy.obs_to_tensor(info["terminal_observation"])[0]
        with th.no_grad():
            return float(self.policy.predict_values(obs)[0, 0])

    def _gae_steps(self, pairs: list[tuple], group: Sequence[Trajectory]) -> list[tuple]:
        """Ready steps of a group whose steps carry rewards: GAE per episode with the critic."""
        out, start = [], 0
        for traj in group:
            chunk = pairs[start : start + len(traj.steps)]
            start += len(traj.steps)
            if any(step.advantage is None for _, step in chunk):
                continue
            rewards = [float(step.advantage) for _, step in chunk]
            values = [float(record[2]) for record, _ in chunk]
            adv = gae(rewards, self.gamma, self.gae_lambda, values, bootstrap=chunk[-1][0][6])
            for (record, _), a, v, r in zip(chunk, adv, values, rewards, strict=True):
                out.append((*record[:5], float(a), float(a + v), record[5], r))
        return out

    def _fill(self, rollout_buffer: RolloutBuffer) -> None:
        """Move every ready step into the buffer and log the rollout's credit statistics."""
        assert isinstance(rollout_buffer, CreditRolloutBuffer)  # set when credit is not "gae"
        ready, self._ready = self._ready, []
        obs, actions, values, log_probs, starts, advantages, returns, born, rewards = zip(
            *ready, strict=True
        )
        rollout_buffer.fill(
            observations=np.stack(obs),
            actions=np.stack(actions),
            values=np.asarray(values),
            log_probs=np.asarray(log_probs),
            advantages=np.asarray(advantages),
            returns=np.asarray(returns),
            episode_starts=np.asarray(starts),
            rewards=np.asarray(rewards),
        )
        adv = np.asarray(advantages)
        self.logger.record("credit/steps", len(ready))
        self.logger.record(
            "credit/stale_fraction", float(np.mean(np.asarray(born) < self._rollouts))
        )
        self.logger.record("credit/adv_mean", float(adv.mean()))
        self.logger.record("credit/adv_std", float(adv.std()))
        self._rollouts += 1


class _SharedGroup(list):
    """A credited group that ``copy.deepcopy`` shares instead of copying (SB3 deep-copies infos)."""

    def __deepcopy__(self, memo: dict) -> _SharedGroup:
        return self


class _HandOverCredit(gym.Wrapper):
    """Outside a :class:`~agentenvs.wrappers.CreditWrapper`: pass ``info["credit"]`` on uncopied and empty the
    wrapper's :meth:`~agentenvs.wrappers.CreditWrapper.pop_groups` store (the learner consumes the groups)."""

    def __init__(self, env: CreditWrapper) -> None:
        super().__init__(env)
        self._credit = env

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if "credit" in info:
            info["credit"] = _SharedGroup(info["credit"])
            self._credit.pop_groups()
        return obs, reward, terminated, truncated, info


def _credit_env(
    env: gym.Env, group_size: int, config: Any, method: str, state: CreditState | None = None
) -> gym.Env:
    """``env`` in the credit wrapper of ``method``, handing its groups over uncopied."""
    return _HandOverCredit(
        CreditWrapper(env, group_size=group_size, config=config, method=method, state=state)
    )


def _credit_method(env: VecEnv) -> str:
    """The method of the credit wrappers around ``env``'s sub-envs, or ``"gae"`` if none."""
    wrapped = env.env_is_wrapped(CreditWrapper)
    if not any(wrapped):
        return "gae"
    if not all(wrapped):
        raise ValueError("either all sub-envs or none must be wrapped in a CreditWrapper")
    methods = set(env.get_attr("method"))
    if len(methods) != 1:
        raise ValueError(f"sub-envs use different credit methods: {sorted(methods)}")
    return methods.pop()


def _gives_rewards(env: VecEnv) -> bool:
    """Whether the credit wrappers around ``env``'s sub-envs hand out rewards
    (``config.advantage == "rewards"``) rather than advantages."""
    kinds = {getattr(c, "advantage", None) == "rewards" for c in env.get_attr("config")}
    if len(kinds) != 1:
        raise ValueError("sub-envs mix credit configs that give rewards and advantages")
    return kinds.pop()


def make_credit_vec_env(
    env_id: str | Callable[..., gym.Env],
    credit: str,
    n_envs: int = 8,
    group_size: int = DEFAULT_GROUP_SIZE,
    config: Any = None,
    seed: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    vec_env_cls: type[VecEnv] | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
    state: CreditState | None = None,
) -> VecEnv:
    """``n_envs`` sub-envs (``Monitor`` inside), each in the credit wrapper of method ``credit``.

    Args:
        env_id: a registered id (e.g. ``"agentenvs/SokobanDiscrete-v0"``) or an env factory.
        credit: a key of :data:`agentenvs.wrappers.registry.METHODS` (``"grpo"``, ``"gigpo"``, ``"graph"``,
            ``"rtmc"``) or ``"gae"`` for no wrapper (plain PPO).
        n_envs: sub-envs; each plays its own groups of ``group_size`` episodes of one task.
        group_size: episodes per group (M; default :data:`agentenvs.vector.DEFAULT_GROUP_SIZE`).
        config: the method's config (``None``: its defaults).
        seed: sub-env ``i`` is first reset with ``seed + i`` (distinct task streams).
        env_kwargs: keyword arguments for the env.
        vec_env_cls: SB3 ``VecEnv`` class (default ``DummyVecEnv``; :class:`RayVecEnv` for Ray).
        vec_env_kwargs: its keyword arguments (e.g. ``{"num_workers": 8}``).
        state: the :class:`~agentenvs.wrappers.CreditState` every sub-env's wrapper credits with
            (``None``: one fresh state for all of them), so that a model-backed method trains one
            estimator on every sub-env's groups. Sub-envs in other processes (Ray, subprocess)
            each get their own copy.
    """
    if credit != "gae" and credit not in METHODS:
        raise ValueError(f"unknown credit {credit!r}; choose 'gae' or one of {sorted(METHODS)}")
    wrapper = None if credit == "gae" else _credit_env
    wrapper_kwargs = None
    if credit != "gae":
        shared = state if state is not None else CreditState()
        wrapper_kwargs = {
            "group_size": group_size,
            "config": config,
            "method": credit,
            "state": shared,
        }
    return make_vec_env(
        env_id,
        n_envs=n_envs,
        seed=seed,
        env_kwargs=env_kwargs,
        # SB3 annotates these narrower than it runs them: any VecEnv class, a wrapper factory
        # that takes wrapper_kwargs.
        vec_env_cls=vec_env_cls,  # type: ignore[arg-type]
        vec_env_kwargs=vec_env_kwargs,
        wrapper_class=wrapper,  # type: ignore[arg-type]
        wrapper_kwargs=wrapper_kwargs,
    )


class RayVecEnv(VecEnv):
    """SB3's ``VecEnv`` over :class:`agentenvs.RayVectorEnv` (``SAME_STEP`` autoreset): each
    sub-env, with its wrappers (a credit wrapper included), runs in a Ray actor.

    A dead worker is replaced and its sub-envs rebuilt as in :class:`~agentenvs.RayVectorEnv`: a
    credit wrapper's open group is replayed with them (its ``rng_state`` is ``None`` while the group
    has finished episodes), so :class:`CreditPPO` sees the same groups as without the crash. An
    episode that cannot be rebuilt (a non-deterministic env) raises ``RuntimeError``: SB3's rollout
    cannot drop the open group's pending steps.

    Args:
        env_fns: one picklable factory per sub-env (as SB3's ``make_vec_env`` builds them).
        **kwargs: :class:`~agentenvs.RayVectorEnv` options (``num_workers``, ``timeout``, ...).
    """

    def __init__(self, env_fns: list[Callable[[], gym.Env]], **kwargs: Any) -> None:
        self.envs = RayVectorEnv(
            env_fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP, **kwargs
        )
        super().__init__(
            len(env_fns), self.envs.single_observation_space, self.envs.single_action_space
        )
        self._actions: Any = None

    def reset(self) -> VecEnvObs:
        obs, infos = self.envs.reset(seed=self._seeds, options=self._options[0] or None)
        self.reset_infos = [sub_info(infos, i) for i in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, infos = self.envs.step(self._actions)
        dones = terminated | truncated
        out = []
        for i in range(self.num_envs):
            info = sub_info({k: v for k, v in infos.items() if "final_" not in k}, i)
            if dones[i]:
                final = sub_info(infos, i, ("final_obs", "final_info"))
                if final["final_info"].get("infra_failure"):
                    raise RuntimeError(
                        f"sub-env {i}'s episode was lost with its worker and could not be "
                        "rebuilt (a non-deterministic env); CreditPPO cannot drop its group"
                    )
                info = {**final["final_info"], "terminal_observation": final["final_obs"]}
                info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            out.append(info)
        return obs, rewards.astype(np.float32), dones, out

    def close(self) -> None:
        self.envs.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return self.envs.call_at(list(self._get_indices(indices)), attr_name)

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        self.envs.set_attr(attr_name, value, list(self._get_indices(indices)))

    def env_method(
        self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any
    ) -> list[Any]:
        return self.envs.call_at(list(self._get_indices(indices)), method_name, *args, **kwargs)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: Any = None) -> list[bool]:
        return self.envs.wrapped(wrapper_class, list(self._get_indices(indices)))


def evaluate_success(
    model: Any,
    make_env: Callable[[], gym.Env],
    task_ids: Sequence[str],
    deterministic: bool = True,
    batch: int = 64,
) -> np.ndarray:
    """Play each task once with ``model.predict`` and return the env's ``won`` flag per task.

    Args:
        model: anything with SB3's ``predict(obs_batch, deterministic=...)``.
        make_env: builds one env (e.g. ``lambda: gym.make(id, split="test")``); ``batch`` of them
            are stepped in lockstep.
        task_ids: the tasks, each played from ``reset(options={"task_id": ...})``.
        deterministic: greedy actions (default) or samples.

    Returns:
        bool array ``(len(task_ids),)``.
    """
    if len(task_ids) == 0:
        return np.zeros(0, dtype=bool)
    envs = [make_env() for _ in range(min(batch, len(task_ids)))]
    won = np.zeros(len(task_ids), dtype=bool)
    try:
        for start in range(0, len(task_ids), len(envs)):
            chunk = list(range(start, min(start + len(envs), len(task_ids))))
            obs = [envs[j].reset(options={"task_id": task_ids[i]})[0] for j, i in enumerate(chunk)]
            active = list(range(len(chunk)))
            while active:
                actions, _ = model.predict(
                    np.stack([obs[j] for j in active]), deterministic=deterministic
                )
                still = []
                for j, action in zip(active, actions, strict=True):
                    obs[j], _, terminated, truncated, info = envs[j].step(action)
                    if terminated or truncated:
                        won[chunk[j]] = episode_success(info, terminated)
                    else:
                        still.append(j)
                active = still
    finally:
        for env in envs:
            env.close()
    return won
