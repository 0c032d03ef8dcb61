"""Our envs behind OpenEnv's real server and clients (``agentenvs.serve.openenv``; run in the
reach venv by scripts/test_reach.sh). The server listens on 127.0.0.1 only."""

from __future__ import annotations

import socket
import threading
import time

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.reach
pytest.importorskip("openenv")
uvicorn = pytest.importorskip("uvicorn")

from openenv.core import GenericEnvClient  # noqa: E402

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.serve.openenv import create_server_app, make_remote  # noqa: E402
from wrappers import GraphCreditWrapper  # noqa: E402

ENV = "agentenvs/Sokoban-v0"
KWARGS = {"action_format": "plain"}
ACTIONS = ["up", "down", "left", "right", "jump"]  # "jump": an invalid action
MAX_SESSIONS = 4


@pytest.fixture(scope="module")
def url():
    """An OpenEnv server of Sokoban on a free port of 127.0.0.1 (stopped after the module)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_server_app(ENV, max_sessions=MAX_SESSIONS, **KWARGS)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def without_privileged(info: dict) -> dict:
    return {k: v for k, v in info.items() if k != "progress"}


def test_openenv_generic_client_plays_100_episodes_like_in_process(url):
    """OpenEnv's own client, on the wire format alone: the observations, rewards, done flags and
    info (state_key, task_id, won, action_valid) of the in-process env, episode by episode."""
    rng = np.random.default_rng(0)
    local = gym.make(ENV, **KWARGS)
    with GenericEnvClient(base_url=url).sync() as client:
        for episode in range(100):
            remote = client.reset(seed=episode)
            obs, info = local.reset(seed=episode)
            assert remote.observation["text"] == obs
            meta = remote.observation["metadata"]["info"]
            assert meta["state_key"] == info["state_key"] and meta["task_id"] == info["task_id"]
            assert "progress" not in meta  # privileged: off by default
            for _ in range(int(rng.integers(1, 8))):
                action = ACTIONS[int(rng.integers(len(ACTIONS)))]
                remote = client.step({"action": action})
                obs, reward, terminated, truncated, info = local.step(action)
                assert remote.observation["text"] == obs and remote.reward == reward
                assert remote.done == (terminated or truncated)
                meta = remote.observation["metadata"]["info"]
                for key in ("state_key", "task_id", "won", "action_valid"):
                    assert meta[key] == info[key], key
                if remote.done:
                    break


def test_make_remote_is_a_gym_env_with_the_same_steps(url):
    local = gym.make(ENV, **KWARGS)
    env = make_remote(url)
    try:
        assert isinstance(env, gym.Env)
        obs, info = env.reset(seed=7)
        lobs, linfo = local.reset(seed=7)
        assert obs == lobs and info == without_privileged(linfo)
        for action in ["up", "left", "jump", "down", "right"]:
            got, want = env.step(action), local.step(action)
            assert got[:4] == want[:4] and got[4] == without_privileged(want[4])
    finally:
        env.close()


def play_groups(env: gym.Env, n_episodes: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    groups = []
    env.reset(seed=seed)
    for _ in range(n_episodes):
        terminated = truncated = False
        while not (terminated or truncated):  # Sokoban's step limit (15) ends every episode
            _, _, terminated, truncated, _ = env.step(ACTIONS[int(rng.integers(4))])
        groups += env.pop_groups()
        env.reset()
    return groups


def test_graph_credit_across_the_network_equals_in_process(url):
    """The credit wrapper over ``make_remote`` credits the same groups as over the local env."""
    local = GraphCreditWrapper(gym.make(ENV, **KWARGS), group_size=4)
    remote = GraphCreditWrapper(make_remote(url), group_size=4)
    try:
        want = play_groups(local, 8, seed=1)
        got = play_groups(remote, 8, seed=1)
    finally:
        remote.close()
    assert len(got) == len(want) >= 1
    for g, w in zip(got, want, strict=True):
        assert [t.task_id for t in g] == [t.task_id for t in w]
        assert [[s.state_key for s in t.steps] for t in g] == [
            [s.state_key for s in t.steps] for t in w
        ]
        np.testing.assert_allclose(
            np.concatenate([t.advantages for t in g]), np.concatenate([t.advantages for t in w])
        )


def test_sessions_are_bounded_and_freed_on_disconnect(url):
    clients = [make_remote(url) for _ in range(MAX_SESSIONS)]
    try:
        with pytest.raises(Exception, match="(?i)capacity|session"):
            extra = make_remote(url)
            extra.reset(seed=0)
    finally:
        for c in clients:
            c.close()
    time.sleep(0.5)
    again = make_remote(url)  # the closed sessions' slots are free again
    try:
        assert again.reset(seed=0)[0]
    finally:
        again.close()


def test_agentenvs_serve_command_serves_an_env(tmp_path):
    """``agentenvs serve ENV_ID --port P`` (the command line's entry point, in a subprocess)
    serves the env to ``agentenvs.make_remote``; it stops on SIGTERM."""
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = f"from agentenvs.cli.main import main; main(['serve', {ENV!r}, '--port', '{port}'])"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert "serving" in proc.stdout.readline()
        deadline = time.monotonic() + 60
        while True:
            try:
                env = agentenvs.make_remote(f"http://127.0.0.1:{port}")
                break
            except Exception:
                assert time.monotonic() < deadline, "the served env never answered"
                time.sleep(0.2)
        try:
            obs, info = env.reset(seed=0)
            assert obs == gym.make(ENV).reset(seed=0)[0] and "state_key" in info
        finally:
            env.close()
    finally:
        proc.terminate()
        proc.wait(30)


def test_16_concurrent_clients_without_errors():
    """16 clients, each in its own session, play at once for 10 s against a 16-session server:
    no errors, and every client's episodes match what its seeds give in-process."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_server_app(ENV, max_sessions=16, **KWARGS)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    errors, steps = [], []
    stop = time.monotonic() + 10

    def client(k: int) -> None:
        try:
            env, local = make_remote(f"http://127.0.0.1:{port}"), gym.make(ENV, **KWARGS)
            n, episode = 0, 0
            while time.monotonic() < stop:
                seed = 1000 * k + episode
                assert env.reset(seed=seed)[0] == local.reset(seed=seed)[0]
                for action in ACTIONS:
                    got, want = env.step(action), local.step(action)
                    assert got[:4] == want[:4]
                    n += 1
                    if got[2] or got[3]:
                        break
                episode += 1
            env.close()
            steps.append(n)
        except Exception as exc:  # noqa: BLE001  (reported below)
            errors.append(repr(exc))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    server.should_exit = True
    thread.join(10)
    assert errors == [] and len(steps) == 16 and min(steps) > 0
