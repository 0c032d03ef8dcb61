"""The rollout engine: one LLM sample per env step, batched over every env still playing.

This module holds:

* :class:`Response` - the text sent to an env (a ``str``) that carries the sample behind it
  (``prompt_ids``, ``response_ids``, ``logprobs``, ``truncated``, and the prompt's ``images``).
  Credit wrappers record the action object they are given as ``Step.action``, so the learner
  finds its token ids again in the credited groups.
* :class:`Sampler` - renders each env's prompt (the env's own :class:`~agentenvs.core.AgentPrompt`),
  applies the chat template, generates all responses of a turn in one batched call that stops
  each response after its prompt's stop string (``AgentPrompt.stop``, e.g. ``"</action>"``);
  an optional ``progress`` callback hears of every finished episode (a tqdm bar's ``update``).
* :func:`prompt_ids` - the token ids of one step's prompt, as the learner shows it (chat template
  and response prefix included; a VLM's image tokens expanded).
* :func:`prompts_of` - the env's prompt (its ``agent_prompt`` hook, or the generic prompt).
* :func:`collect_sequential` - single credit-wrapped envs: env ``i`` plays ``tasks[i]`` until its
  wrapper hands out a credited group in ``info["credit"]`` (``group_size`` episodes in a row).
* :func:`collect_parallel` - a grouped vector env under a vector credit wrapper: every sub-env
  plays one episode, block ``b`` on ``tasks[b]``; a group arrives in the ``info["credit"]`` of the
  sub-env whose episode completed it (Gymnasium's per-sub-env ``infos`` layout).
* :func:`play_episodes` - evaluation: one uncredited episode per task on plain envs.
* :func:`drive` - the loop under all three: envs play their tasks, one batched sample per turn,
  each env's :class:`~agentenvs.core.EpisodeMemory` (its history) kept as the prompt shows it.
* :func:`take_samples` - move each credited step's sample from its :class:`Response` action into
  ``Step.extras`` (``prompt_ids`` int32, ``response_ids`` int32, ``logprobs`` float32,
  ``truncated`` bool: the response hit the token budget without stopping; not the episode's
  ``Step.truncated``; ``images``, a tuple of uint8 ``(H, W, 3)`` arrays, where the prompt had any).
* :class:`RolloutStats` - counts and the generation / environment time split.

The learner never computes credit: advantages are what the wrappers wrote into the steps.
Episodes start from explicit ``options={"task_id": ...}``, so what is played is decided by the
learner's task cursor alone and a resumed run replays the same tasks.

Gymnasium's vector API steps every sub-env at once, so in :func:`collect_parallel` a sub-env
whose episode is over is stepped on with the empty string (no tokens are generated for it): the
vector env autoresets it (``NEXT_STEP``), agentenvs envs reject ``""`` as an invalid action
without touching their engine, and the next iteration's reset drops that unfinished episode. A
group holding any step the learner did not sample is dropped and counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from agentenvs.learners.llm.policy import Policy

from agentenvs.core import AgentPrompt, EpisodeMemory, Trajectory, episode_success
from agentenvs.core.prompting import agent_prompt_for
from agentenvs.core.trajectory import Step
from agentenvs.vector import group_size_of, sub_info, sub_observation

__all__ = [
    "Response",
    "Sampler",
    "RolloutStats",
    "prompts_of",
    "collect_sequential",
    "collect_parallel",
    "play_episodes",
    "drive",
    "prompt_ids",
    "take_samples",
    "as_groups",
    "block_size",
]


class Response(str):
    """A response text (what the env receives) with its sample: token ids and log-probs.

    ``truncated``: the response hit the token budget without a stop token or stop string.

    >>> r = Response("<think>x</think><action>up</action>", [1, 2], [3, 4], [-0.5, -0.1])
    >>> r == "<think>x</think><action>up</action>", r.response_ids.tolist(), r.truncated
    (True, [3, 4], False)
    """

    prompt_ids: np.ndarray
    response_ids: np.ndarray
    logprobs: np.ndarray
    truncated: bool
    images: tuple[np.ndarray, ...]

    def __new__(
        cls,
        text: str,
        prompt_ids: Sequence[int],
        response_ids: Sequence[int],
        logprobs: Sequence[float],
        truncated: bool = False,
        images: Sequence[np.ndarray] = (),
    ) -> Response:
        self = super().__new__(cls, text)
        self.prompt_ids = np.asarray(prompt_ids, dtype=np.int32)
        self.response_ids = np.asarray(response_ids, dtype=np.int32)
        self.logprobs = np.asarray(logprobs, dtype=np.float32)
        self.truncated = bool(truncated)
        self.images = tuple(images)
        return self

    def __reduce__(self) -> tuple[type[Response], tuple[Any, ...]]:  # pickles into workers
        args = (
            str(self),
            self.prompt_ids,
            self.response_ids,
            self.logprobs,
            self.truncated,
            self.images,
        )
        return (Response, args)


@dataclass
class RolloutStats:
    """What a rollout cost. Times in seconds; tokens are generated response tokens."""

    generate_s: float = 0.0
    env_s: float = 0.0
    tokens: int = 0
    steps: int = 0
    valid_steps: int = 0
    episodes: int = 0

    def add(self, other: RolloutStats) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Sampler:
    """Turns (prompt, memory, observation, info) requests into :class:`Response` s, one batch a turn.

    Args:
        policy: the model and tokenizer (the chat template is the only formatting applied here).
        generator: a sampling backend with ``generate(prompt_ids, greedy=..., stop=...) ->
            [Sample]`` (``stop``: strings after which a response ends; ``()`` for none), and
            ``images=`` (each prompt's images) where the prompts have images.
        greedy: greedy decoding (evaluation) instead of sampling.
        stop_at_action_end: pass each prompt's stop strings (``AgentPrompt.stop``) to the
            generator, so a response ends right after its closing action tag. Requests whose
            prompts declare different stop strings (envs of different kinds in one batch) are
            generated in one call per distinct tuple of stop strings, so no response stops on
            another env's string; in practice every request of a call shares them: one call.
        progress: called with ``1`` whenever an episode this sampler plays ends (e.g. a tqdm
            bar's ``update``); ``None``: nothing is reported.
    """

    def __init__(
        self,
        policy: Policy,
        generator: Any,
        *,
        greedy: bool = False,
        stop_at_action_end: bool = True,
        progress: Callable[[int], Any] | None = None,
    ) -> None:
        self.policy, self.generator, self.greedy = policy, generator, greedy
        self.stop_at_action_end = stop_at_action_end
        self.progress = progress
        self.stats = RolloutStats()

    def __call__(
        self, requests: Sequence[tuple[AgentPrompt, EpisodeMemory, Any, dict[str, Any]]]
    ) -> list[Response]:
        ids = [self.context_ids(*request) for request in requests]
        images = [prompt.images(*rest) for prompt, *rest in requests]
        t0 = time.perf_counter()
        by_stop: dict[tuple[str, ...], list[int]] = {}
        for i, (p, *_) in enumerate(requests):
            by_stop.setdefault(tuple(p.stop) if self.stop_at_action_end else (), []).append(i)
        samples: list[Any] = [None] * len(requests)
        for stop, rows in by_stop.items():
            seen = [images[i] for i in rows]
            extra = {"images": seen} if any(seen) else {}
            got = self.generator.generate(
                [ids[i] for i in rows], greedy=self.greedy, stop=stop, **extra
            )
            for i, s in zip(rows, got, strict=True):
                samples[i] = s
        self.stats.generate_s += time.perf_counter() - t0
        self.stats.tokens += sum(len(s.token_ids) for s in samples)
        return [
            Response(
                p.response_prefix + s.text,
                ids_of_prompt,
                s.token_ids,
                s.logprobs,
                s.truncated,
                shown,
            )
            for (p, *_), ids_of_prompt, s, shown in zip(requests, ids, samples, images, strict=True)
        ]

    def context_ids(
        self, prompt: AgentPrompt, memory: EpisodeMemory, observation: Any, info: dict
    ) -> list[int]:
        """The token ids a request's response is sampled after (its :class:`Response`'s
        ``prompt_ids``): the step's prompt (:func:`prompt_ids`). A subclass may prepend the
        episode's earlier turns (``agentenvs.learners.trl`` does: one token sequence per episode)."""
        return prompt_ids(self.policy, prompt, memory, observation, info)

    def episode_done(self) -> None:
        """Count an episode that ended and report it to ``progress``."""
        self.stats.episodes += 1
        if self.progress is not None:
            self.progress(1)


def prompt_ids(
    policy: Policy, prompt: AgentPrompt, memory: EpisodeMemory, observation: Any, info: dict
) -> list[int]:
    """The prompt tokens of one step: ``prompt``'s chat for (``memory``, ``observation``,
    ``info``) under the policy's chat template, ending with the prompt's response prefix, its
    images' tokens in place (a VLM; ``prompt.images``)."""
    messages = prompt.messages(memory, observation, info)
    images = prompt.images(memory, observation, info)
    return policy.chat_ids(messages, prompt.response_prefix, images)


def prompts_of(
    env: gym.Env | gym.vector.VectorEnv, style: str, history_length: int | None = None
) -> list[AgentPrompt]:
    """The env's agent prompt (its ``agent_prompt`` hook, else the generic prompt of ``style``),
    one per sub-env for a vector env."""
    prompt = agent_prompt_for(env, style, history_length)
    return [prompt] * (env.num_envs if isinstance(env, gym.vector.VectorEnv) else 1)


def as_groups(credit: Any) -> list[list[Trajectory]]:
    """``info["credit"]`` as a list of groups: one group (a list of trajectories) or many."""
    if not credit:
        return []
    if isinstance(credit[0], Trajectory):
        return [list(credit)]
    return [list(g) for g in credit]


def take_samples(group: Sequence[Trajectory]) -> bool:
    """Move every step's sample from its :class:`Response` action into ``Step.extras``.

    Returns ``False`` (and changes nothing) when some step's action is not a :class:`Response`,
    i.e. the learner did not sample it.
    """
    if not all(isinstance(s.action, Response) for t in group for s in t.steps):
        return False
    for traj in group:
        for step in traj.steps:
            r: Response = step.action
            step.extras.update(
                prompt_ids=r.prompt_ids,
                response_ids=r.response_ids,
                logprobs=r.logprobs,
                truncated=r.truncated,
            )
            if r.images:
                step.extras["images"] = r.images
            step.action = str(r)
    return True


def _record(
    stats: RolloutStats,
    memory: EpisodeMemory,
    prompt: AgentPrompt,
    obs: Any,
    action: str,
    info: dict[str, Any],
) -> None:
    memory.record(obs, prompt.project(action))
    stats.steps += 1
    stats.valid_steps += int(bool(info.get("action_valid", True)))


def drive(
    envs: Sequence[gym.Env],
    tasks: Sequence[str],
    prompts: Sequence[AgentPrompt],
    sample: Sampler,
    on_step: Callable[[int, Any, Response, float, bool, bool, dict[str, Any]], bool],
) -> None:
    """Play ``tasks[i]`` in ``envs[i]`` for every ``i``, one batched generation call per turn.

    After each step ``on_step(i, observation_before, action, reward, terminated, truncated, info)``
    says whether env ``i`` keeps playing; one that does and whose episode ended is reset on its
    task (``options={"task_id": tasks[i]}``) for another episode. ``sample`` is a :class:`Sampler`
    (or one with its interface: ``stats``, ``episode_done``, called with the turn's requests).
    """
    stats = sample.stats
    t0 = time.perf_counter()
    state = [env.reset(options={"task_id": task}) for env, task in zip(envs, tasks, strict=True)]
    memories = [EpisodeMemory() for _ in envs]
    stats.env_s += time.perf_counter() - t0
    active = list(range(len(envs)))
    while active:
        responses = sample([(prompts[i], memories[i], *state[i]) for i in active])
        t0 = time.perf_counter()
        still = []
        for i, action in zip(active, responses, strict=True):
            before = state[i][0]
            obs, reward, terminated, truncated, info = envs[i].step(action)
            _record(stats, memories[i], prompts[i], before, action, info)
            state[i] = (obs, info)
            if terminated or truncated:
                sample.episode_done()
            if not on_step(i, before, action, float(reward), terminated, truncated, info):
                continue
            still.append(i)
            if terminated or truncated:
                state[i] = envs[i].reset(options={"task_id": tasks[i]})
                memories[i] = EpisodeMemory()
        stats.env_s += time.perf_counter() - t0
        active = still


def collect_sequential(
    envs: Sequence[gym.Env],
    tasks: Sequence[str],
    prompts: Sequence[AgentPrompt],
    sample: Sampler,
) -> list[list[Trajectory]]:
    """Env ``i`` plays ``tasks[i]`` episode after episode until it hands out one credited group.

    Every reset passes ``options={"task_id": tasks[i]}``. All envs run at once: each turn samples
    the responses of every env still playing in one batch.

    Raises:
        ValueError: an env has no credit wrapper (:func:`agentenvs.vector.group_size_of`).
        RuntimeError: an env played its ``group_size`` episodes without handing out a group in
            ``info["credit"]``, or handed out steps the learner did not sample (a wrapper must
            record the action object it is given).
    """
    limits = [group_size_of(env) for env in envs]
    episodes = [0] * len(envs)
    groups: list[list[Trajectory] | None] = [None] * len(envs)

    def on_step(
        i: int,
        _obs: Any,
        _action: Response,
        _reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> bool:
        if not (terminated or truncated):
            return True
        handed = as_groups(info.get("credit"))
        if handed:
            _drain(envs[i])
            if len(handed) != 1 or not take_samples(handed[0]):
                raise RuntimeError(
                    f"env {i} handed out {len(handed)} group(s) with steps the learner did not "
                    "sample; a credit wrapper must hand out one group per info['credit'] and "
                    "record the action object it was given as Step.action"
                )
            groups[i] = handed[0]
            return False
        episodes[i] += 1
        if episodes[i] >= limits[i]:
            raise RuntimeError(
                f"env {i} played {episodes[i]} episodes of {tasks[i]!r} without handing out a "
                "credited group in info['credit']; wrap it in a credit wrapper"
            )
        return True

    drive(envs, tasks, prompts, sample, on_step)
    return [g for g in groups if g is not None]


def _drain(env: gym.Env) -> None:
    """Empty the wrapper's ``pop_groups()`` outbox (its groups were read from ``info``)."""
    try:
        env.get_wrapper_attr("pop_groups")()
    except AttributeError:
        pass


def _unbatch(infos: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Per-sub-env info dicts from a vector ``infos`` (Gymnasium's layout, ``_key`` masks)."""
    return [sub_info(infos, i) for i in range(n)]


def block_size(envs: gym.vector.VectorEnv) -> int:
    """The group size of a vector credit wrapper over a grouped vector env
    (:func:`agentenvs.vector.group_size_of`); ``TypeError`` for any other vector env."""
    try:
        size = group_size_of(envs)
    except ValueError:
        size = 0
    if not size or envs.num_envs % size:
        raise TypeError(
            "a vector env must be a vector credit wrapper over a grouped vector env (group_size "
            "dividing num_envs), e.g. VectorCreditWrapper(agentenvs.make_group_vec_env(...), ...)"
        )
    return size


def collect_parallel(
    envs: gym.vector.VectorEnv,
    tasks: Sequence[str],
    prompts: Sequence[AgentPrompt],
    sample: Sampler,
) -> tuple[list[list[Trajectory]], int]:
    """Every sub-env plays one episode; block ``b`` (``group_size`` sub-envs) plays ``tasks[b]``.

    ``envs`` is a vector credit wrapper over a grouped vector env (``group_size`` attribute,
    ``NEXT_STEP`` autoreset, Gymnasium's ``reset_mask`` partial resets). Returns the credited
    groups and the number dropped: groups holding steps the learner did not sample, and groups the
    wrapper dropped after an infrastructure failure (a sub-env's ``info["credit_dropped"]``).
    """
    stats = sample.stats
    n, size = envs.num_envs, block_size(envs)
    if len(tasks) * size != n:
        raise ValueError(
            f"{n} sub-envs in blocks of {size} need {n // size} tasks, got {len(tasks)}"
        )
    t0 = time.perf_counter()
    # Gymnasium batches a Dict space (a visual env's text and image) from every sub-env's last
    # observation, which a sub-env not yet reset lacks: there the first block's reset is a full one.
    full_first = isinstance(envs.single_observation_space, gym.spaces.Dict)
    obs: list[Any] = [None] * n
    infos: list[dict[str, Any]] = [{} for _ in range(n)]
    for b, task in enumerate(tasks):
        mask = np.zeros(n, bool)
        mask[b * size : (b + 1) * size] = True
        options = (
            {"task_id": task} if full_first and b == 0 else {"task_id": task, "reset_mask": mask}
        )
        batch, batch_infos = envs.reset(options=options)
        block_infos = _unbatch(batch_infos, n)
        for i in np.flatnonzero(mask):
            obs[i], infos[i] = sub_observation(batch, int(i)), block_infos[i]
    stats.env_s += time.perf_counter() - t0
    memories = [EpisodeMemory() for _ in range(n)]
    active = np.ones(n, bool)
    groups: list[list[Trajectory]] = []
    dropped = 0
    while active.any():
        idx = np.flatnonzero(active).tolist()
        responses = sample([(prompts[i], memories[i], obs[i], infos[i]) for i in idx])
        actions: list[str] = [""] * n
        for i, r in zip(idx, responses, strict=True):
            actions[i] = r
        t0 = time.perf_counter()
        batch, _, terminated, truncated, batch_infos = envs.step(actions)
        step_infos = _unbatch(batch_infos, n)
        for info in step_infos:
            dropped += int(info.get("credit_dropped", False))  # lost to infrastructure failures
            for group in as_groups(info.get("credit")):
                if take_samples(group):
                    groups.append(group)
                else:
                    dropped += 1
        for i in idx:
            _record(stats, memories[i], prompts[i], obs[i], actions[i], step_infos[i])
            obs[i], infos[i] = sub_observation(batch, i), step_infos[i]
            if terminated[i] or truncated[i]:
                active[i] = False
                sample.episode_done()
        stats.env_s += time.perf_counter() - t0
    if hasattr(envs, "pop_groups"):
        envs.pop_groups()  # its groups were read from infos["credit"]
    return groups, dropped


def play_episodes(
    envs: Sequence[gym.Env],
    tasks: Sequence[str],
    prompts: Sequence[AgentPrompt],
    sample: Sampler,
) -> list[Trajectory]:
    """One episode of ``tasks[i]`` in ``envs[i]`` for every ``i`` (no credit; for evaluation;
    an env's ``info["goal_directed"]`` goes to ``Step.extras``)."""
    trajs = [Trajectory(task_id=str(task), group_id="eval") for task in tasks]

    def on_step(
        i: int,
        obs: Any,
        action: Response,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> bool:
        valid = bool(info.get("action_valid", True))
        step = Step(obs, str(action), reward, bool(terminated), bool(truncated), action_valid=valid)
        if "goal_directed" in info:
            step.extras["goal_directed"] = bool(info["goal_directed"])
        trajs[i].steps.append(step)
        if terminated or truncated:
            trajs[i].success = episode_success(info, terminated)
            return False
        return True

    drive(envs, tasks, prompts, sample, on_step)
    return trajs


def episode_bar(total: int, desc: str, enabled: bool = True) -> Any:
    """A tqdm bar of ``total`` episodes on stderr, removed when done (a no-op when not
    ``enabled``): pass its ``update`` as a :class:`Sampler`'s ``progress``."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="episode", leave=False, disable=not enabled)
