"""The served env's options (``agentenvs.serve``; the real OpenEnv in the reach venv): the agent
prompt on the wire equals the in-process prompt turn by turn, ``agentenvs serve --env-kwargs``
and ``--prompt`` reach every session and are printed at start, a bad option is a one-line error
before the port is bound, and the docs' OpenEnv snippet shows a credited group with non-zero
advantages. Servers listen on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.reach
pytest.importorskip("openenv")
pytest.importorskip("uvicorn")

from openenv.core import GenericEnvClient  # noqa: E402

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.core import EpisodeMemory, agent_prompt_for  # noqa: E402
from agentenvs.serve.openenv import make_remote, make_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
ENV = "agentenvs/Sokoban-v0"
ACTIONS = ["up", "down", "left", "right", "jump"]  # "jump": an invalid action


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(env_id: str, **kwargs: Any) -> Iterator[str]:
    """``make_server(env_id, **kwargs)`` (uvicorn in a thread) on a free port; yields its URL."""
    server = make_server(env_id, port=free_port(), max_sessions=4, **kwargs)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(10)


def without_progress(info: dict) -> dict:
    return {k: v for k, v in info.items() if k != "progress"}  # privileged: not sent


def tagged(move: str) -> str:
    return f"<think>try {move}</think><action>{move}</action>"


@pytest.mark.parametrize(("style", "history"), [("reference", None), ("compact", 0)])
def test_the_prompt_on_the_wire_equals_the_in_process_prompt(style, history):
    """``--prompt STYLE``: over 5 episodes of seeded actions (invalid ones included) the remote
    chat ``agent_prompt_for(make_remote(url)).messages(...)`` equals the local env's, the first
    one (examples and the first user turn) and every later turn; the prompt's fields match."""
    rng = np.random.default_rng(0)
    local = gym.make(ENV)
    mine = agent_prompt_for(local, style, history)
    with serving(ENV, prompt=style, prompt_history_length=history) as url:
        remote = make_remote(url)
        theirs = agent_prompt_for(remote, style, history)
        try:
            for seed in range(5):
                obs, info = local.reset(seed=seed)
                remote_obs, remote_info = remote.reset(seed=seed)
                memory = EpisodeMemory()
                assert theirs.messages(EpisodeMemory(), remote_obs, remote_info) == mine.messages(
                    memory, obs, info
                )
                for attr in ("examples", "response_prefix", "stop", "max_new_tokens"):
                    assert getattr(theirs, attr) == getattr(mine, attr)
                done = False
                while not done:
                    action = tagged(ACTIONS[int(rng.integers(len(ACTIONS)))])
                    memory.record(obs, mine.project(action))
                    obs, _, terminated, truncated, info = local.step(action)
                    remote_obs, *_ = remote.step(action)
                    assert remote_obs == obs
                    assert theirs.render(memory, obs, info) == mine.render(memory, obs, info)
                    done = terminated or truncated
        finally:
            remote.close()


def test_the_prompt_is_in_openenv_metadata_once_per_episode():
    """Any OpenEnv client reads it: the reset's ``metadata["prompt"]`` holds the whole prompt,
    each step's only the next turn; without ``prompt`` there is none and ``render`` says how to
    get one; a client asking another style than the server's is told so."""
    with serving(ENV, prompt="compact") as url:
        with GenericEnvClient(base_url=url).sync() as client:
            first = client.reset(seed=0).observation["metadata"]["prompt"]
            assert first["style"] == "compact" and first["turn"].startswith("Sokoban grid")
            assert set(first) == {
                "style", "history_length", "examples", "response_prefix", "stop",
                "max_new_tokens", "turn",
            }  # fmt: skip
            after = client.step({"action": tagged("up")}).observation["metadata"]["prompt"]
            assert set(after) == {"turn"}
        remote = make_remote(url)
        try:
            remote.agent_prompt("reference")
            with pytest.raises(ValueError, match="renders the 'compact' prompt"):
                remote.reset(seed=0)
        finally:
            remote.close()
    with serving(ENV) as url:
        remote = make_remote(url)
        try:
            obs, info = remote.reset(seed=0)
            assert "prompt" not in info
            with pytest.raises(ValueError, match="--prompt"):
                agent_prompt_for(remote).render(EpisodeMemory(), obs, info)
        finally:
            remote.close()


def run_cli(*argv: str, **popen: Any) -> subprocess.Popen:
    code = f"from agentenvs.cli.main import main; raise SystemExit(main({list(argv)!r}))"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "AGENTENVS_SERVE_TOKEN"},
        **popen,
    )


def test_agentenvs_serve_takes_env_kwargs_and_prompt_and_prints_them():
    """``agentenvs serve ENV --env-kwargs JSON --prompt compact``: the first line names the
    options; a remote client plays the plain actions those kwargs ask for and gets the compact
    prompt."""
    port = free_port()
    kwargs = {"action_format": "plain", "max_steps": 3}
    proc = run_cli("serve", ENV, "--port", str(port), "--env-kwargs", json.dumps(kwargs),
                   "--prompt", "compact")  # fmt: skip
    try:
        line = proc.stdout.readline()
        assert f"env kwargs {json.dumps(kwargs)}" in line and "prompt compact" in line, line
        deadline = time.monotonic() + 60
        while True:
            try:
                env = make_remote(f"http://127.0.0.1:{port}")
                break
            except Exception:
                assert time.monotonic() < deadline, "the served env never answered"
                time.sleep(0.2)
        try:
            local = gym.make(ENV, **kwargs)
            obs, info = env.reset(seed=3)
            local_obs, local_info = local.reset(seed=3)
            assert obs == local_obs and info == without_progress(local_info)
            _, reward, terminated, truncated, info = env.step("up")
            _, *local_step, local_info = local.step("up")
            assert [reward, terminated, truncated] == local_step
            assert info == without_progress(local_info) and info["action_valid"]  # plain: valid
            assert env.agent_prompt("compact").turn.startswith("Sokoban grid")
        finally:
            env.close()
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env-kwargs", '{"bogus": 1}'], "unexpected keyword argument 'bogus'"),
        (["--env-kwargs", '{"action_format": "xml"}'], "action_format must be"),
        (["--env-kwargs", "[1]"], "must be a JSON object"),
        (["--env-kwargs", "{"], "not valid JSON"),
        (["--prompt-history", "-1", "--prompt", "compact"], "must be >= 0"),
        (["--prompt", "verbose"], "invalid choice"),
    ],
)
def test_a_bad_serve_option_is_one_line_before_the_port_is_bound(argv, message):
    """Exit status 2, one line on stderr naming the problem, no "serving" line: the checks run
    before the bind (the test holds the port, so a server that got as far as binding would
    fail with "address already in use" instead)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        proc = run_cli("serve", ENV, "--port", str(port), *argv)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert message in lines[-1] and "Traceback" not in err
    if argv != ["--prompt", "verbose"]:  # argparse prints its usage before its error line
        assert len(lines) == 1, err


def test_environments_snippet_shows_a_credited_group_with_nonzero_advantages(
    monkeypatch, tmp_path, capsys
):
    """The OpenEnv snippet of docs/environments.md (run as written): its group of 4 episodes
    over the network holds differently credited steps, and it prints what its comment says."""
    page = (ROOT / "docs" / "environments.md").read_text(encoding="utf-8")
    (code,) = [
        c for c in re.findall(r"```python\n(.*?)```", page, flags=re.S) if "make_remote" in c
    ]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__snippet__"}
    exec(compile(code, "docs/environments.md OpenEnv block", "exec"), namespace)
    group = namespace["group"]
    assert len(group) == 4
    advantages = [s.advantage for t in group for s in t.steps]
    assert any(a != 0 for a in advantages) and len(set(advantages)) > 1
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert code.rstrip().endswith(f"# {printed}")
