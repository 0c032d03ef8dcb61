"""Any registered env behind OpenEnv's server, and a ``gymnasium.Env`` client for it (tested
with openenv 0.10.0).

The server is OpenEnv's own routes and WebSocket sessions (one env per session, at most
``max_sessions`` at once, each closed when its client disconnects), around
:class:`GymEnvironment`, an OpenEnv ``Environment`` running one ``gymnasium.make(env_id)``
(made at its first reset), behind the session binding of :mod:`agentenvs.serve.sessions` (HTTP
``/reset`` and ``/step`` on a session, sessions bound to their creator and capped per client)
and the limits of :mod:`agentenvs.serve.guard` (token, body caps, timeouts, connections per
client); :func:`make_server` is the uvicorn server with all of them.
Wire types: :class:`TextAction` (``action``: the text the agent sends) and
:class:`TextObservation` (``text``: the env's observation); the observation's ``metadata`` holds
our ``info`` (``state_key``, ``task_id``, ``won``, ``action_valid``, ...; ``progress`` only with
``privileged=True``: it is the env's privileged task progress) encoded exactly
(:func:`agentenvs.core.encode`: tuples, bytes, arrays survive), plus ``terminated`` and
``truncated``; with ``prompt=STYLE``, ``metadata["prompt"]`` carries the env's agent prompt
(:mod:`agentenvs.serve.prompt`: its instructions at each reset, the next user turn at each step).
Any OpenEnv client can play it (``GenericEnvClient``: ``step({"action": ...})``).

:class:`AgentEnvClient` is the typed OpenEnv ``EnvClient``; :class:`RemoteEnv` (what
:func:`make_remote` returns) turns it into a ``gymnasium.Env`` with the env's own ``reset`` /
``step`` results, so the credit wrappers work across the network, and whose ``agent_prompt``
is the server's prompt (so a learner, SkyRL-gym or verifiers shows a remote policy what a local
one sees). :func:`serve_in_subprocess` runs a server in a child process for as long as a
``with`` block lasts.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
from fastapi import FastAPI
from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server import Action, Environment, Observation, State
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata

from agentenvs import __version__
from agentenvs.core.prompting import agent_prompt_for, check_prompt_style
from agentenvs.core.trajectory import decode, encode
from agentenvs.serve.guard import Guard, Limits, guarded_h11
from agentenvs.serve.prompt import EpisodePrompt, WirePrompt
from agentenvs.serve.sessions import SessionServer

__all__ = [
    "TextAction",
    "TextObservation",
    "GymEnvironment",
    "create_server_app",
    "make_server",
    "SWITCH_INTERVAL_S",
    "prepare_to_serve",
    "check_env_options",
    "run_server",
    "serve",
    "serve_in_subprocess",
    "AgentEnvClient",
    "RemoteEnv",
    "make_remote",
]

#: ``info`` keys not sent unless ``privileged=True``.
PRIVILEGED = ("progress",)


class TextAction(Action):
    """The agent's action: the text sent to ``env.step``."""

    action: str


class TextObservation(Observation):
    """The env's observation text (``done``, ``reward``, ``metadata``: OpenEnv's fields)."""

    text: str = ""


class GymEnvironment(Environment[TextAction, TextObservation, State]):
    """One ``gymnasium.make(env_id, **make_kwargs)`` as an OpenEnv ``Environment``, made at the
    first :meth:`reset` (so building one, as OpenEnv does for some requests, costs nothing).

    ``prompt``: a prompt style (``"reference"``, ``"compact"``) to send the env's
    ``agent_prompt(prompt, prompt_history_length)`` in ``metadata["prompt"]`` (``None``: none;
    ``prompt_history_length=None``: the prompt's default history)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str,
        privileged: bool = False,
        prompt: str | None = None,
        prompt_history_length: int | None = None,
        **make_kwargs: Any,
    ) -> None:
        super().__init__()
        self.env_id, self.make_kwargs = env_id, make_kwargs
        self.env: gym.Env | None = None
        self.privileged = privileged
        self.prompt_style = None if prompt is None else check_prompt_style(prompt)
        self.prompt_history_length = prompt_history_length
        self.prompt: EpisodePrompt | None = None
        self._state = State(episode_id=None, step_count=0)

    def _observation(
        self, obs: Any, info: dict, reward: float | None, done: bool, **flags: Any
    ) -> TextObservation:
        info = {k: v for k, v in info.items() if self.privileged or k not in PRIVILEGED}
        metadata = {"info": encode(info), **flags}
        return TextObservation(text=str(obs), reward=reward, done=done, metadata=metadata)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> TextObservation:
        """``env.reset(seed=seed, options=kwargs.get("options"))``."""
        if self.env is None:
            self.env = gym.make(self.env_id, **self.make_kwargs)
            if self.prompt_style is not None:
                style, length = self.prompt_style, self.prompt_history_length
                self.prompt = EpisodePrompt(agent_prompt_for(self.env, style, length), style)
        obs, info = self.env.reset(seed=seed, options=kwargs.get("options"))
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        observation = self._observation(obs, info, None, False, terminated=False, truncated=False)
        if self.prompt is not None:
            observation.metadata["prompt"] = self.prompt.first(obs, info)
        return observation

    def step(
        self, action: TextAction, timeout_s: float | None = None, **kwargs: Any
    ) -> TextObservation:
        """``env.step(action.action)``; ``done`` = terminated or truncated; before the first
        reset, ``gymnasium.error.ResetNeeded``."""
        if self.env is None:
            raise gym.error.ResetNeeded("Cannot call step() before calling reset()")
        obs, reward, terminated, truncated, info = self.env.step(action.action)
        self._state.step_count += 1
        done = bool(terminated or truncated)
        observation = self._observation(
            obs, info, float(reward), done, terminated=bool(terminated), truncated=bool(truncated)
        )
        if self.prompt is not None:
            observation.metadata["prompt"] = self.prompt.next(action.action, obs, info)
        return observation

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        if self.env is not None:
            self.env.close()


def check_env_options(
    env_id: str,
    prompt: str | None = None,
    prompt_history_length: int | None = None,
    **make_kwargs: Any,
) -> None:
    """Make (and close) ``gym.make(env_id, **make_kwargs)`` once, and check the prompt options:
    a bad id, keyword, value or style raises a one-line ``ValueError`` (what the server would
    otherwise meet at its first session)."""
    gym.spec(env_id)  # an unknown id: gymnasium's own error
    if prompt is not None:
        check_prompt_style(prompt)
    if prompt_history_length is not None and prompt_history_length < 0:
        raise ValueError(f"prompt_history_length must be >= 0, not {prompt_history_length}")
    try:
        gym.make(env_id, **make_kwargs).close()
    except Exception as err:  # noqa: BLE001 - any refusal of the operator's options
        detail = " ".join(f"{type(err).__name__}: {err}".split())
        raise ValueError(f"{env_id} refuses env kwargs {make_kwargs}: {detail}") from None


def create_server_app(
    env_id: str,
    max_sessions: int = 16,
    privileged: bool = False,
    limits: Limits | None = None,
    prompt: str | None = None,
    prompt_history_length: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    **make_kwargs: Any,
) -> Guard:
    """The ASGI app serving ``env_id``: OpenEnv's routes with :class:`SessionServer`'s session
    binding (``.app.state.sessions``), behind a :class:`~agentenvs.serve.guard.Guard`; at most
    ``max_sessions`` sessions at once (another is refused with OpenEnv's capacity error).
    ``limits`` defaults to ``Limits.from_env()`` (the token from ``$AGENTENVS_SERVE_TOKEN``).
    ``prompt``, ``prompt_history_length``: :class:`GymEnvironment`'s; ``env_kwargs`` and
    ``make_kwargs`` (on top): every session's ``gym.make`` keyword arguments (the operator's: no
    client can set them), checked first by :func:`check_env_options`."""
    make_kwargs = {**(env_kwargs or {}), **make_kwargs}
    check_env_options(env_id, prompt, prompt_history_length, **make_kwargs)
    limits = Limits.from_env() if limits is None else limits
    app = FastAPI(title=f"agentenvs: {env_id} over OpenEnv", version=__version__)
    factory = functools.partial(
        GymEnvironment,
        env_id,
        privileged=privileged,
        prompt=prompt,
        prompt_history_length=prompt_history_length,
        **make_kwargs,
    )
    server = SessionServer(
        factory,
        TextAction,
        TextObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=max_sessions, session_timeout=limits.idle_timeout_s
        ),
        env_name=env_id,
        metadata=EnvironmentMetadata(
            name=env_id, description=f"{env_id}, served by agentenvs", version=__version__
        ),
        limits=limits,
    )
    server.register_routes(app)
    app.state.sessions = server
    return Guard(app, limits)


def make_server(
    env_id: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 16,
    limits: Limits | None = None,
    **kwargs: Any,
) -> Any:
    """A ``uvicorn.Server`` of :func:`create_server_app` on ``host:port``, with
    :func:`~agentenvs.serve.guard.guarded_h11` (connections per client, request-head deadline)
    and WebSocket frames capped at ``limits.max_body_bytes``; run it with ``.run()``."""
    import uvicorn

    limits = Limits.from_env() if limits is None else limits
    app = create_server_app(env_id, max_sessions, limits=limits, **kwargs)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        http=guarded_h11(limits),
        ws_max_size=limits.max_body_bytes,
    )
    return uvicorn.Server(config)


#: The interpreter's GIL switch interval while serving (seconds; Python's default is 0.005): a
#: session whose step is ready waits at most about this long per hand-over behind another
#: session's CPU-bound step (each session's env runs on a thread of its own).
SWITCH_INTERVAL_S = 0.001


def prepare_to_serve() -> None:
    """Tune a serving process: its GIL switch interval at :data:`SWITCH_INTERVAL_S`, and every
    object alive now (the imported libraries: OpenEnv's pull in Gradio, about 100 MiB) moved out
    of the garbage collector's reach (``gc.freeze``), so a full collection scans only what
    sessions allocate (a full collection of the heap OpenEnv's imports leave took 228 ms, 107 ms
    without Gradio: pauses every session would wait out)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    gc.collect()
    gc.freeze()


def run_server(server: Any) -> None:
    """Run a :func:`make_server` server until interrupted (:func:`prepare_to_serve` first)."""
    prepare_to_serve()
    server.run()


def serve(
    env_id: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 16,
    workers: int = 1,
    **kwargs: Any,
) -> None:
    """Serve ``env_id`` (:func:`make_server`; ``kwargs``: its and :func:`create_server_app`'s)
    on ``host:port`` until interrupted (:func:`run_server`); ``workers > 1``: that many server
    processes behind the port (:func:`agentenvs.serve.workers.serve_workers`)."""
    if workers > 1:
        from agentenvs.serve.workers import serve_workers

        serve_workers(env_id, workers, host, port, max_sessions, **kwargs)
    else:
        run_server(make_server(env_id, host, port, max_sessions, **kwargs))


@contextmanager
def serve_in_subprocess(
    env_id: str, max_sessions: int = 16, timeout: float = 120.0, **kwargs: Any
) -> Iterator[tuple[str, subprocess.Popen]]:
    """:func:`serve` ``env_id`` in a child Python process on a free port of 127.0.0.1; yields
    the server's URL, once a client has connected, and the process (terminated on exit).
    ``timeout``: seconds to wait for the server (a process that dies or never answers raises
    ``RuntimeError``). ``kwargs``: :func:`serve`'s (``limits`` included)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    limits = kwargs.pop("limits", None) or Limits.from_env()
    code = (
        "from agentenvs.serve.openenv import serve; from agentenvs.serve.guard import Limits; "
        f"serve({env_id!r}, port={port}, max_sessions={max_sessions}, "
        f"limits=Limits(**{dataclasses.asdict(limits)!r}), **{kwargs!r})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                make_remote(url, token=limits.token).close()
                break
            except Exception as error:  # not listening yet
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the {env_id} server at {url} never answered") from error
                time.sleep(0.2)
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(30)


class AgentEnvClient(EnvClient[TextAction, TextObservation, State]):
    """OpenEnv's WebSocket client, typed for :class:`GymEnvironment`: ``reset(seed=...,
    options=...)`` and ``step(TextAction(action=...))`` give ``StepResult[TextObservation]``
    (``.observation.text``, ``.observation.metadata``: ``info`` encoded, ``terminated``,
    ``truncated``, ``prompt``), ``state()`` OpenEnv's ``State``. Async by default; ``.sync()``
    for a blocking one. ``AutoEnv.from_env("agentenvs-sokoban", ...)`` returns one (a subclass
    per env, from the ``openenv-agentenvs-*`` packages)."""

    def _step_payload(self, action: TextAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TextObservation]:
        obs = TextObservation(
            **payload.get("observation", {}),
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
        )
        return StepResult(
            observation=obs, reward=payload.get("reward"), done=bool(payload.get("done", False))
        )

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


class RemoteEnv(gym.Env):
    """A ``gymnasium.Env`` whose ``reset`` / ``step`` run on an OpenEnv server of ours (one
    session, opened on construction, closed by :meth:`close`). Observations are text; ``info``
    is the served env's, decoded exactly. ``token``: the server's shared secret (sent as
    ``Authorization: Bearer``); ``client_kwargs``: OpenEnv's ``EnvClient``'s.

    :meth:`agent_prompt` is the server's prompt (``agentenvs serve --prompt STYLE``), a
    :class:`~agentenvs.serve.prompt.WirePrompt` updated by every ``reset`` and ``step``, so
    ``agent_prompt_for(env)`` over the network gives the chat a local env gives."""

    metadata = {"render_modes": []}

    def __init__(self, url: str, token: str | None = None, **client_kwargs: Any) -> None:
        if token is not None:
            headers = client_kwargs.pop("headers", None) or {}
            client_kwargs["headers"] = {**headers, "Authorization": f"Bearer {token}"}
        self.client = AgentEnvClient(base_url=url, **client_kwargs).sync()
        self.client.connect()
        self.url = url
        self.prompt = WirePrompt()
        self._asked: tuple[str, int | None] | None = None  # agent_prompt's style and history
        self.observation_space = gym.spaces.Text(1 << 20)
        self.action_space = gym.spaces.Text(1 << 20)

    def _unpack(self, result: StepResult[TextObservation]) -> tuple[str, dict, dict]:
        meta = result.observation.metadata
        self.prompt.load(meta.get("prompt"))
        self._check_prompt()
        return result.observation.text, decode(meta.get("info", {})), meta

    def _check_prompt(self) -> None:
        p = self.prompt
        if self._asked is None or p.turn is None:
            return
        style, history_length = self._asked
        if style != p.style or history_length not in (None, p.history_length):
            raise ValueError(
                f"the server at {self.url} renders the {p.style!r} prompt with history "
                f"{p.history_length}; asked for {style!r} with history {history_length} (serve "
                "it with --prompt STYLE --prompt-history N)"
            )

    def agent_prompt(
        self, style: str = "reference", history_length: int | None = None
    ) -> WirePrompt:
        """The server's prompt (:class:`~agentenvs.serve.prompt.WirePrompt`); a ``style`` or
        ``history_length`` (``None``: any) other than the server's raises ``ValueError``, here
        or at the next reset."""
        self._asked = (check_prompt_style(style), history_length)
        self._check_prompt()
        return self.prompt

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        kwargs = {"seed": seed} if options is None else {"seed": seed, "options": options}
        obs, info, _ = self._unpack(self.client.reset(**kwargs))
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        result = self.client.step(TextAction(action=action))
        obs, info, meta = self._unpack(result)
        return (
            obs,
            float(result.reward or 0.0),
            bool(meta.get("terminated")),
            bool(meta.get("truncated")),
            info,
        )

    def close(self) -> None:
        self.client.close()


def make_remote(url: str, token: str | None = None, **client_kwargs: Any) -> RemoteEnv:
    """A ``gymnasium.Env`` playing the env served at ``url`` (``http://`` or ``ws://``);
    ``token``: the server's shared secret, if it has one."""
    return RemoteEnv(url, token=token, **client_kwargs)
