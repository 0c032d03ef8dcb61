"""A multi-turn agent loop for plain verl: our envs, one verl row per step (verl 0.9.1, V1 trainer).

:class:`EnvAgentLoop` is a verl ``AgentLoop`` (verl's extension point for rollouts), registered as
:data:`AGENT_NAME` (``"agentenvs"``). Each of verl's sessions (``actor_rollout_ref.rollout.n`` of
them per dataset row: one group) plays one episode of the row's env and task, turn by turn with
verl's rollout server, exactly as our own learner plays it (:mod:`agentenvs.learners.llm.rollout`):
the env's :class:`~agentenvs.core.AgentPrompt` (``prompt_style``), its chat under the model's chat
template with the response prefix appended (:func:`step_prompt_ids`), one response per step that
stops after the prompt's stop string, ``response_prefix + response text`` sent to the env, and the
episode's :class:`~agentenvs.core.EpisodeMemory`. It returns one ``AgentLoopOutput`` per step
(verl's V1 ``AgentLoopWorkerTQ`` stores them under ``{uid}_{session_id}_{step}``): the step's
prompt and sampled response tokens (and log-probs), and in ``extra_fields[EXTRA_KEY]`` the step's
env columns (:func:`~agentenvs.learners.verl.columns.step_columns`, recorded as our credit
wrappers record them) and its own env reward under ``"reward"``. The last step's
``reward_score`` is the episode's return, which verl's worker copies onto every step (what verl's
own estimators then see); our estimators need the trainer of
:mod:`agentenvs.learners.verl.trainer`, which puts each step's own reward and columns back.

A dataset row names the env and the task in ``extra_info`` (:func:`task_rows`,
:func:`write_dataset`): ``env_id``, ``task_id``, ``env_kwargs`` (a JSON object, as text) and
``seed`` (``None``: reset with the task id alone, as our learner does). Every session of a row
resets on that task, so a group shares its task and initial state. Defaults of the loop
(``env_id``, ``env_kwargs``, ``prompt_style``, ``history_length``, ``max_turns``,
``max_new_tokens``) may be set in verl's agent-loop YAML (:data:`CONFIG_FILE` is the plain one).

The verl config (the V1 trainer, verl's default; :mod:`agentenvs.learners.verl.trainer`)::

    data:
      train_files: sokoban_train.parquet     # write_dataset(...)
      val_files: sokoban_val.parquet
    actor_rollout_ref:
      rollout:
        n: 8                                 # the group size
        prompt_length: 2048                  # per step
        response_length: 512                 # per step
        agent:
          agent_loop_config_path: <CONFIG_FILE>   # or a YAML of one's own (options above)
    algorithm:
      adv_estimator: agentenvs_graphgpo
    trainer:
      use_v1: true
      v1:
        trainer_mode: agentenvs              # the step-credit trainer

Importing this module registers :data:`AGENT_NAME` in verl's agent-loop registry (with its
defaults); our ``verl.plugins`` entry point imports it in every verl process. Options go in an
agent-loop YAML of one's own (``agent_loop_config_path``) under another name, which the dataset's
rows carry (``write_dataset(..., agent_name=...)``): importing this module would replace an entry
named :data:`AGENT_NAME`. Env steps run in the
event loop's thread pool; a finished session's env goes back to a per-process pool for the next.
Text observations only (no multi-modal inputs); no MoE router replay (``routed_experts``).

This module holds: :data:`AGENT_NAME`, :data:`EXTRA_KEY`, :data:`CONFIG_FILE`,
:func:`step_prompt_ids`, :func:`task_rows`, :func:`write_dataset`, :class:`EnvAgentLoop`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any
from uuid import uuid4

import gymnasium as gym
from agentenvs.learners.llm.generation import response_end
from agentenvs.learners.verl.columns import step_columns
from agentenvs.wrappers.recorder import EpisodeRecorder
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

import agentenvs  # noqa: F401  (registers the agentenvs/* ids)
from agentenvs.core import AgentPrompt, EpisodeMemory, Trajectory
from agentenvs.core.prompting import agent_prompt_for

__all__ = [
    "AGENT_NAME",
    "EXTRA_KEY",
    "CONFIG_FILE",
    "step_prompt_ids",
    "task_rows",
    "write_dataset",
    "EnvAgentLoop",
]

#: verl's name of :class:`EnvAgentLoop` (a dataset row's ``agent_name``).
AGENT_NAME = "agentenvs"

#: The ``extra_fields`` key of a step's env columns and reward.
EXTRA_KEY = "agentenvs"

#: verl's agent-loop YAML naming :class:`EnvAgentLoop` (``rollout.agent.agent_loop_config_path``).
CONFIG_FILE = str(Path(__file__).with_name("agent_loop.yaml"))

_POOL: dict[str, list[gym.Env]] = {}  # (env id, kwargs) -> idle envs of this process


def step_prompt_ids(
    tokenizer: Any,
    prompt: AgentPrompt,
    memory: EpisodeMemory,
    observation: Any,
    info: dict[str, Any],
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> list[int]:
    """The token ids of one step's prompt: ``prompt``'s chat under the tokenizer's chat template
    (generation prompt added, ``chat_template_kwargs`` passed on), then the response prefix; with
    no kwargs exactly :func:`agentenvs.learners.llm.rollout.prompt_ids`."""
    ids = tokenizer.apply_chat_template(
        prompt.messages(memory, observation, info),
        add_generation_prompt=True,
        tokenize=True,
        **dict(chat_template_kwargs or {}),
    )
    if hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding
        ids = ids["input_ids"]
    prefix = prompt.response_prefix
    tail = tokenizer.encode(prefix, add_special_tokens=False) if prefix else []
    return [int(i) for i in ids] + [int(i) for i in tail]


def task_rows(
    env_id: str,
    task_ids: Sequence[str],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int | None = None,
    prompt_style: str = "reference",
    agent_name: str = AGENT_NAME,
) -> list[dict[str, Any]]:
    """verl dataset rows, one per task: ``prompt`` (the task's first-turn chat, for verl's length
    filter and logs; the loop renders every turn itself), ``agent_name`` (:data:`AGENT_NAME`, or
    the name an agent-loop YAML of one's own gives :class:`EnvAgentLoop` with its options),
    ``data_source`` (``env_id``), ``reward_model`` (``{"style": "env"}``) and ``extra_info``
    (``index``, ``env_id``, ``task_id``, ``env_kwargs`` as JSON text, ``seed``)."""
    kwargs = dict(env_kwargs or {})
    env = gym.make(env_id, **kwargs)
    try:
        prompt = agent_prompt_for(env, prompt_style)
        rows = []
        for index, task_id in enumerate(task_ids):
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            rows.append(
                {
                    "prompt": prompt.messages(EpisodeMemory(), observation, info),
                    "agent_name": agent_name,
                    "data_source": env_id,
                    "reward_model": {"style": "env", "ground_truth": ""},
                    "extra_info": {
                        "index": index,
                        "env_id": env_id,
                        "task_id": str(task_id),
                        "env_kwargs": json.dumps(kwargs, sort_keys=True),
                        "seed": seed,
                    },
                }
            )
        return rows
    finally:
        env.close()


def write_dataset(path: str | Path, env_id: str, task_ids: Sequence[str], **options: Any) -> Path:
    """Write :func:`task_rows` (``options`` passed on) as a parquet file verl's ``RLHFDataset``
    reads (``data.train_files``); returns ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(task_rows(env_id, task_ids, **options)), path)
    return path


def _plain(value: Any) -> Any:
    """``value`` without OmegaConf containers (YAML options arrive as them)."""
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def _kwargs_of(value: Any) -> dict[str, Any]:
    value = _plain(value)
    if value is None or value == "":
        return {}
    return dict(json.loads(value) if isinstance(value, str) else value)


class EnvAgentLoop(AgentLoopBase):
    """Plays one episode of the row's env per session and returns one ``AgentLoopOutput`` per step.

    Its keyword arguments come after verl's own; all are optional (e.g. from the agent-loop YAML).

    Args:
        env_id: the env when a row's ``extra_info`` names none.
        env_kwargs: ``gym.make`` kwargs under a row's own (a mapping or JSON text).
        prompt_style: ``"reference"`` (default) or ``"compact"`` (:func:`agent_prompt_for`).
        history_length: turns the prompt shows; ``None``: the env prompt's default.
        max_turns: at most this many steps per episode (``None``: until the env ends it; an
            episode cut short ends unsuccessful, like a truncation).
        max_new_tokens: response budget per step (``None``: the env prompt's ``max_new_tokens``),
            always capped by ``rollout.response_length``.
        stop_at_action_end: send the prompt's stop strings (``AgentPrompt.stop``) to the server
            and cut each response after the first one (default ``True``, as our learner).
    """

    def __init__(
        self,
        *args: Any,
        env_id: str | None = None,
        env_kwargs: Any = None,
        prompt_style: str = "reference",
        history_length: int | None = None,
        max_turns: int | None = None,
        max_new_tokens: int | None = None,
        stop_at_action_end: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if not self.config.trainer.get("use_v1", True):
            raise ValueError(
                "EnvAgentLoop returns one output per step, which only verl's V1 trainer stores: "
                "set trainer.use_v1=true"
            )
        self.env_id = env_id
        self.env_kwargs = _kwargs_of(env_kwargs)
        self.prompt_style = prompt_style
        self.history_length = history_length
        self.max_turns = max_turns
        self.max_new_tokens = max_new_tokens
        self.stop_at_action_end = stop_at_action_end
        self.response_length = int(self.rollout_config.response_length)
        eos = self.tokenizer.eos_token_id
        self.stop_ids = [] if eos is None else [int(eos)]

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:
        """Play the episode of ``kwargs["extra_info"]`` (a verl dataset row's fields); one output
        per step, in step order."""
        extra = dict(_plain(kwargs.get("extra_info")) or {})
        env_id = extra.get("env_id") or self.env_id
        if not env_id:
            raise ValueError("no env: give the row's extra_info an env_id (task_rows) or env_id=")
        env_kwargs = {**self.env_kwargs, **_kwargs_of(extra.get("env_kwargs"))}
        pool_key = json.dumps([env_id, env_kwargs], sort_keys=True, default=repr)
        env = _POOL.get(pool_key, []).pop() if _POOL.get(pool_key) else None
        loop = asyncio.get_running_loop()
        if env is None:
            env = await loop.run_in_executor(None, lambda: gym.make(env_id, **env_kwargs))
        try:
            outputs = await self._play(env, extra, dict(sampling_params))
        except BaseException:
            env.close()
            raise
        _POOL.setdefault(pool_key, []).append(env)
        return outputs

    async def _play(
        self, env: gym.Env, extra: dict[str, Any], sampling_params: dict[str, Any]
    ) -> list[AgentLoopOutput]:
        loop = asyncio.get_running_loop()
        prompt = agent_prompt_for(env, self.prompt_style, self.history_length)
        budget = self.max_new_tokens or prompt.max_new_tokens
        sampling_params["max_tokens"] = max(1, min(int(budget), self.response_length))
        stop = tuple(prompt.stop) if self.stop_at_action_end else ()
        if stop:
            sampling_params["stop"] = list(stop)
        task_id, seed = extra.get("task_id"), extra.get("seed")
        options = None if task_id is None else {"task_id": str(task_id)}
        observation, info = await loop.run_in_executor(
            None, lambda: env.reset(seed=seed, options=options)
        )
        recorder, memory = EpisodeRecorder(), EpisodeMemory()
        recorder.begin(observation, info)
        samples: list[tuple[list[int], list[int], list[float] | None, dict[str, Any]]] = []
        trajectory: Trajectory | None = None
        request_id = uuid4().hex  # sticky: every turn of a session goes to the same server
        while trajectory is None:
            render = partial(step_prompt_ids, self.tokenizer, prompt, memory, observation, info)
            ids = await loop.run_in_executor(None, render, self.apply_chat_template_kwargs)
            ids = self._cap_text_prompt_length(ids)
            start = time.perf_counter()
            out = await self.server_manager.generate(
                request_id=request_id, prompt_ids=ids, sampling_params=sampling_params
            )
            seconds = time.perf_counter() - start
            response, logprobs = self._cut(out.token_ids, out.log_probs, stop)
            if not response:
                raise RuntimeError(f"the rollout server returned no tokens ({out.stop_reason})")
            text = prompt.response_prefix + self.tokenizer.decode(
                response, skip_special_tokens=True
            )
            before = observation
            step = await loop.run_in_executor(None, env.step, text)
            observation, reward, terminated, truncated, info = step
            memory.record(before, prompt.project(text))
            trajectory = recorder.record(text, observation, reward, terminated, truncated, info)
            extra_fields = {
                "min_global_steps": out.extra_fields.get("min_global_steps"),
                "max_global_steps": out.extra_fields.get("max_global_steps"),
                "generate_seconds": seconds,
                "num_preempted": out.num_preempted,
            }
            samples.append((ids, response, logprobs, extra_fields))
            if trajectory is None and self.max_turns is not None and len(samples) >= self.max_turns:
                trajectory = Trajectory(
                    task_id=str(recorder.task_id),
                    group_id="",
                    steps=recorder.steps,
                    success=False,
                    final_observation=observation,
                )
        return self._outputs(trajectory, samples)

    def _cut(
        self, token_ids: Sequence[int], log_probs: Sequence[float] | None, stop: tuple[str, ...]
    ) -> tuple[list[int], list[float] | None]:
        """The response through its first stop token or stop string (a server may run past it),
        at most ``response_length`` tokens, and its log-probs."""
        ids = [int(t) for t in token_ids]

        def decode(row: list[int]) -> str:
            return str(self.tokenizer.decode(row, skip_special_tokens=True))

        end = response_end(ids, self.stop_ids, stop, decode)
        end = min(len(ids) if end is None else end, self.response_length)
        return ids[:end], None if log_probs is None else [float(x) for x in log_probs[:end]]

    def _outputs(
        self,
        trajectory: Trajectory,
        samples: list[tuple[list[int], list[int], list[float] | None, dict[str, Any]]],
    ) -> list[AgentLoopOutput]:
        columns = step_columns([trajectory])
        names = [k for k in columns if k not in ("uid", "traj_uid")]
        outputs = []
        last = len(samples) - 1
        for t, (ids, response, logprobs, info) in enumerate(samples):
            row = {k: _scalar(columns[k][t]) for k in names}
            row["reward"] = float(trajectory.steps[t].reward)
            num_preempted = info.pop("num_preempted")
            metrics = AgentLoopMetrics(
                generate_sequences=info.pop("generate_seconds"),
                num_preempted=-1 if num_preempted is None else int(num_preempted),
            )
            outputs.append(
                AgentLoopOutput(
                    prompt_ids=ids,
                    response_ids=response,
                    response_mask=[1] * len(response),
                    response_logprobs=logprobs,
                    reward_score=trajectory.total_return if t == last else None,
                    num_turns=2 * (t + 1),
                    metrics=metrics,
                    extra_fields={
                        EXTRA_KEY: row,
                        "reward_extra_info": {},
                        "turn_scores": [],
                        "tool_rewards": [],
                        **info,
                    },
                )
            )
        return outputs


register(AGENT_NAME)(EnvAgentLoop)


def _scalar(value: Any) -> Any:
    """A numpy scalar as its Python value (what pickles and prints plainly)."""
    return value.item() if hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value
