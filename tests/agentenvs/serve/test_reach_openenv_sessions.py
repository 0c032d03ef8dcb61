"""The sessions and limits of ``agentenvs serve`` (agentenvs.serve.sessions, agentenvs.serve.guard;
docs/integrations.md, "Threat model"), against real uvicorn servers and OpenEnv's own clients
(run in the reach venv by scripts/test_reach.sh). Servers listen on 127.0.0.1; a client at
another address binds its socket to 127.0.0.2 and up (loopback).

HTTP ``/reset`` and ``/step`` on a session; the 4xx answers without one; sessions capped per
client; idle sessions closed; session ids bound to their creator; the token; body and message
caps; metadata and state without an env; slow request heads; connections and requests per
client; one session's slow step and the others.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
import pytest

pytestmark = pytest.mark.reach
pytest.importorskip("openenv")
httpx = pytest.importorskip("httpx")
requests = pytest.importorskip("requests")

from openenv.core import GenericEnvClient  # noqa: E402
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.serve import guard  # noqa: E402
from agentenvs.serve.guard import Limits  # noqa: E402
from agentenvs.serve.openenv import make_remote, make_server  # noqa: E402

ENV = "agentenvs/Sokoban-v0"
KWARGS = {"action_format": "plain"}
OTHER = "127.0.0.2"  # another client's address (loopback)
SWE_CALL = "<function=execute_bash>\n<parameter=cmd>ls</parameter>\n</function>"


class SlowEcho(gym.Env):
    """Echoes its action; ``"slow"`` sleeps 2 s first (a slow step)."""

    def __init__(self) -> None:
        self.observation_space = self.action_space = gym.spaces.Text(64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "ready", {}

    def step(self, action):
        if action == "slow":
            time.sleep(2.0)
        return action, 0.0, False, False, {}


gym.register("test/SlowEcho-v0", entry_point=SlowEcho, disable_env_checker=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(env_id: str = ENV, max_sessions: int = 4, **limits: Any) -> Iterator[tuple[str, Any]]:
    """``make_server`` of ``env_id`` in a thread on 127.0.0.1 with ``Limits(**limits)``; yields
    the URL and the :class:`~agentenvs.serve.sessions.SessionServer`."""
    kwargs = KWARGS if env_id == ENV else {}
    server = make_server(
        env_id, port=free_port(), max_sessions=max_sessions, limits=Limits(**limits), **kwargs
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}", server.config.app.app.state.sessions
    finally:
        server.should_exit = True
        thread.join(10)


def from_other(url: str, address: str = OTHER, **kwargs: Any) -> httpx.Client:
    """An HTTP client whose connections come from ``address``."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=url, transport=transport, timeout=10, **kwargs)


def ws_url(url: str, query: str = "") -> str:
    return url.replace("http://", "ws://") + "/ws" + query


def mcp(method: str, **params: Any) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def test_http_reset_and_step_on_a_session_equal_in_process():
    """A ``requests.Session`` (the cookie) and a bare client (the header) each play their own
    HTTP session; every answer equals the in-process env's."""
    local = gym.make(ENV, **KWARGS)
    with serving() as (url, _):
        session = requests.Session()
        header_client = httpx.Client(base_url=url, timeout=10)
        first = session.post(f"{url}/reset", json={"seed": 4})
        second = header_client.post("/reset", json={"seed": 5})
        assert first.status_code == second.status_code == 200
        sid = second.headers["X-Session-Id"]
        assert sid != first.headers["X-Session-Id"]
        assert first.json()["observation"]["text"] == local.reset(seed=4)[0]
        for action in ["up", "left", "jump", "down"]:
            got = session.post(f"{url}/step", json={"action": {"action": action}}).json()
            obs, reward, terminated, truncated, _ = local.step(action)
            assert (got["observation"]["text"], got["reward"], got["done"]) == (
                obs,
                reward,
                terminated or truncated,
            )
        assert session.get(f"{url}/state").json()["step_count"] == 4
        local.reset(seed=5)
        got = header_client.post(
            "/step", json={"action": {"action": "up"}}, headers={"X-Session-Id": sid}
        )
        assert got.json()["observation"]["text"] == local.step("up")[0]


def test_http_step_without_a_session_is_a_4xx_naming_the_websocket_route():
    """No session: 400 naming ``/ws``; an unknown id: 404; a session never reset: 409; a bad
    action, or options the env refuses: 422. None is a 5xx."""
    with serving() as (url, _):
        bare = requests.post(f"{url}/step", json={"action": {"action": "up"}})
        assert bare.status_code == 400 and "/ws" in bare.json()["detail"]
        state = requests.get(f"{url}/state")
        assert state.status_code == 400 and "/ws" in state.json()["detail"]
        unknown = requests.post(
            f"{url}/step",
            json={"action": {"action": "up"}},
            headers={"X-Session-Id": str(uuid.uuid4())},
        )
        assert unknown.status_code == 404 and "/ws" in unknown.json()["detail"]
        sid = requests.post(f"{url}/mcp", json=mcp("openenv/session/create")).json()["result"]
        never_reset = requests.post(
            f"{url}/step",
            json={"action": {"action": "up"}},
            headers={"X-Session-Id": sid["session_id"]},
        )
        assert never_reset.status_code == 409 and "reset" in never_reset.json()["detail"]
        bad = requests.post(
            f"{url}/step", json={"action": {"move": 3}}, headers={"X-Session-Id": sid["session_id"]}
        )
        assert bad.status_code == 422
        refused = requests.post(f"{url}/reset", json={"options": {"task_id": "no such task"}})
        assert refused.status_code == 422 and "refused" in refused.json()["detail"]


def test_sessions_are_capped_per_client_address():
    """A client at another address takes its 2 sessions (MCP, ``/reset``); its third is
    refused on every route; the victim at 127.0.0.1 still plays."""
    with serving(max_sessions=4, max_sessions_per_client=2) as (url, _):
        with from_other(url) as hoarder:
            assert "result" in hoarder.post("/mcp", json=mcp("openenv/session/create")).json()
            assert hoarder.post("/reset", json={}).status_code == 200
            refused = hoarder.post("/mcp", json=mcp("openenv/session/create")).json()
            assert "2/2 sessions" in refused["error"]["message"]
            assert hoarder.post("/reset", json={}).status_code == 200  # its cookie: the same one
            hoarder.cookies.clear()
            assert hoarder.post("/reset", json={}).status_code == 429
            with connect(ws_url(url), source_address=(OTHER, 0)) as ws:  # refused at once
                assert json.loads(ws.recv(10))["data"]["code"] == "CAPACITY_REACHED"
            victim = make_remote(url)
            try:
                assert victim.reset(seed=0)[0] == gym.make(ENV, **KWARGS).reset(seed=0)[0]
            finally:
                victim.close()


def test_idle_sessions_are_closed_and_their_slots_freed():
    """``idle_timeout_s=1``: an idle WebSocket is closed (1008) after about 1 s, an idle HTTP
    session within the reaper's 5 s period after; both slots are free again."""
    with serving(max_sessions=2, idle_timeout_s=1.0) as (url, sessions):
        http = requests.Session()
        assert http.post(f"{url}/reset", json={}).status_code == 200
        with connect(ws_url(url)) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            ws.recv(10)
            started = time.monotonic()
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(10)
            assert closed.value.rcvd.code == 1008 and time.monotonic() - started < 3
        deadline = time.monotonic() + 10
        while sessions.active_sessions and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sessions.active_sessions == 0
        assert http.post(f"{url}/step", json={"action": {"action": "up"}}).status_code == 404
        assert http.post(f"{url}/reset", json={}).status_code == 200  # a new session


def test_session_ids_are_bound_to_their_creator():
    """Another address holding a client's HTTP session id can neither step, read, attach to nor
    close it; nobody can attach to a session opened over a WebSocket (it is its connection's);
    the owner plays on."""
    with serving() as (url, sessions):
        owner = requests.Session()
        owner.post(f"{url}/reset", json={"seed": 1})
        sid = owner.cookies["session_id"]
        with from_other(url) as thief:
            headers = {"X-Session-Id": sid}
            assert (
                thief.post("/step", json={"action": {"action": "up"}}, headers=headers).status_code
                == 404
            )
            assert thief.get("/state", headers=headers).status_code == 404
            assert thief.post("/reset", json={}, headers=headers).headers["X-Session-Id"] != sid
            for method in ("openenv/session/close", "tools/list"):
                answer = thief.post("/mcp", json=mcp(method, session_id=sid)).json()
                assert "Unknown session_id" in answer["error"]["message"]
        with pytest.raises(InvalidStatus) as refused:
            connect(ws_url(url, f"?session_id={sid}"), source_address=(OTHER, 0))
        assert refused.value.response.status_code == 403
        with connect(ws_url(url, f"?session_id={sid}")) as own:  # the owner may attach
            own.send(json.dumps({"type": "step", "data": {"action": "up"}}))
            assert json.loads(own.recv(10))["type"] == "observation"
        assert owner.post(f"{url}/step", json={"action": {"action": "up"}}).status_code == 200
        with connect(ws_url(url)) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            ws.recv(10)
            (ws_sid,) = [s for s, (_, kind) in sessions._owners.items() if kind == "websocket"]
            with pytest.raises(InvalidStatus):
                connect(ws_url(url, f"?session_id={ws_sid}"))  # even from its own address


def test_a_token_guards_every_route():
    """With a token: every route (``/health`` too, and ``/ws``) refuses a client without it;
    ``make_remote(token=...)`` and OpenEnv's client with the header play."""
    with serving(token="s3cret") as (url, _):
        for path in ("/health", "/metadata", "/schema", "/state"):
            assert requests.get(f"{url}{path}").status_code == 401
        assert requests.post(f"{url}/reset", json={}).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert requests.get(f"{url}/health", headers=wrong).status_code == 401
        with pytest.raises(ConnectionError):
            make_remote(url)
        env = make_remote(url, token="s3cret")
        try:
            assert env.reset(seed=0)[0] == gym.make(ENV, **KWARGS).reset(seed=0)[0]
        finally:
            env.close()
        auth = {"Authorization": "Bearer s3cret"}
        with GenericEnvClient(base_url=url, headers=auth).sync() as client:
            assert client.step({"action": "up"}) if client.reset(seed=0) else False
        assert requests.post(f"{url}/reset", json={}, headers=auth).status_code == 200


def test_huge_bodies_and_messages_are_refused_unread():
    """A 200 MB ``Content-Length`` is answered 413 at once (nothing sent after the head); a
    streamed body is cut at the cap; a 2 MiB WebSocket message closes it with 1009; a body
    just under the cap is read."""
    with serving() as (url, _):
        port = int(url.rsplit(":", 1)[1])
        head = b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        for tail in [
            b"Content-Length: %d\r\n\r\n" % (200 << 20),
            b"Transfer-Encoding: chunked\r\n\r\n" + b"10000\r\n" + b" " * (1 << 16) + b"\r\n",
        ]:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                started = time.monotonic()
                sock.sendall(head + tail * (1 if b"Length" in tail else 1))
                if b"chunked" in tail:
                    sock.sendall((b"10000\r\n" + b" " * (1 << 16) + b"\r\n") * 16)
                assert sock.recv(4096).startswith(b"HTTP/1.1 413")
                assert time.monotonic() - started < 2
        with connect(ws_url(url), max_size=None) as ws:
            ws.send("x" * (2 << 20))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(10)
            assert closed.value.rcvd.code == 1009
        padded = json.dumps({"action": {"action": "up"}, "pad": " " * ((1 << 20) - 100)})
        json_type = {"Content-Type": "application/json"}
        read = requests.post(f"{url}/step", data=padded, headers=json_type)
        assert read.status_code == 400 and "no session" in read.json()["detail"]


def test_metadata_state_and_other_routes_build_no_env(monkeypatch):
    """``/metadata``, ``/state``, ``/schema``, ``/health``, the task routes and MCP
    ``tools/list`` build no env (``GymEnvironment`` makes its env only at a reset; the server
    makes one at its start, to check the env's options)."""
    made = []
    make = gym.make
    monkeypatch.setattr(gym, "make", lambda *a, **k: made.append(a) or make(*a, **k))
    with serving() as (url, _):
        assert made == [(ENV,)]  # the options' check, before the server listens
        made.clear()
        with httpx.Client(base_url=url, timeout=10) as client:
            started = time.monotonic()
            for _ in range(25):
                assert client.get("/metadata").json()["name"] == ENV
                assert client.get("/state").status_code == 400
                assert client.get("/schema").status_code == client.get("/health").status_code == 200
                assert client.post("/mcp", json=mcp("tools/list")).json()["error"]
                assert client.get(f"/{ENV.replace('/', '%2F')}/splits").status_code in (404, 501)
            elapsed = time.monotonic() - started
            assert made == [] and elapsed < 10
            assert client.post("/reset", json={}).status_code == 200
        assert made == [(ENV,)]  # a reset makes one


def test_slow_request_heads_and_extra_connections_are_closed(monkeypatch):
    """A connection that sends a head a byte at a time, or nothing, is closed after
    ``HEAD_TIMEOUT_S``; one connection past ``max_connections_per_client`` gets 429; a normal
    request meanwhile is answered at once."""
    monkeypatch.setattr(guard, "HEAD_TIMEOUT_S", 0.5)
    with serving(max_connections_per_client=3) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        slow = [
            socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(OTHER, 0))
            for _ in range(3)
        ]
        slow[0].sendall(b"GET /health HTTP/1.1\r\nHo")
        with socket.create_connection(
            ("127.0.0.1", port), timeout=5, source_address=(OTHER, 0)
        ) as extra:
            assert extra.recv(4096).startswith(b"HTTP/1.1 429")
        started = time.monotonic()
        assert requests.get(f"{url}/health", timeout=5).status_code == 200
        assert time.monotonic() - started < 0.5
        for sock in slow:
            assert sock.recv(4096) == b""  # closed by the server
            sock.close()
        assert time.monotonic() - started < 3
        with from_other(url) as client:  # the address's connections are free again
            assert client.get("/health").status_code == 200


def test_requests_per_client_are_rate_limited():
    with serving(max_requests_per_second_per_client=5) as (url, _):
        with from_other(url) as client:
            statuses = [client.get("/health").status_code for _ in range(8)]
        assert statuses[:5] == [200] * 5 and 429 in statuses[5:]
        assert requests.get(f"{url}/health").status_code == 200  # another address


def test_a_slow_step_delays_no_other_session():
    """While one session's step sleeps 2 s, another session's steps are answered in
    milliseconds (each session's env runs on a thread of its own)."""
    with serving("test/SlowEcho-v0") as (url, _):
        slow, quick = make_remote(url), make_remote(url)
        try:
            slow.reset()
            quick.reset()
            thread = threading.Thread(target=slow.step, args=("slow",))
            thread.start()
            time.sleep(0.2)
            started = time.monotonic()
            for i in range(10):
                assert quick.step(f"echo {i}")[0] == f"echo {i}"
            assert time.monotonic() - started < 1.0 and thread.is_alive()
            thread.join(10)
        finally:
            slow.close()
            quick.close()


#: What 4 flooding clients may add to a step's median by sharing the cores alone: on 2 cores
#: under CI's load the median went 10 -> 61 ms with the metadata cheap; one ``SWEEnv`` built
#: per request costs seconds.
FLOOD_SHARE_S = 0.25


def test_a_metadata_flood_does_not_slow_an_swe_session():
    """The issue's case: while 4 clients request ``/metadata``, ``/state`` and ``/schema`` of
    an SWE server (each used to build a whole ``SWEEnv``: a step went from 1 ms to 4 s), an SWE
    session's WebSocket steps keep a median within 3x (plus :data:`FLOOD_SHARE_S`) of unloaded."""
    call = SWE_CALL
    with serving("agentenvs/SWE-v0", max_sessions=2) as (url, _):
        env = make_remote(url)
        try:
            env.reset(seed=0)

            def steps() -> list[float]:
                seconds = []
                for _ in range(15):
                    started = time.perf_counter()
                    env.step(call)
                    seconds.append(time.perf_counter() - started)
                return sorted(seconds)

            alone = steps()
            stop = threading.Event()

            def flood() -> None:
                with httpx.Client(base_url=url, timeout=10) as client:
                    for _ in range(300):
                        if stop.is_set():
                            return
                        for path in ("/metadata", "/state", "/schema"):
                            assert client.get(path).status_code < 500

            floods = [threading.Thread(target=flood) for _ in range(4)]
            for thread in floods:
                thread.start()
            loaded = steps()
            stop.set()
            for thread in floods:
                thread.join(30)
        finally:
            env.close()
    print(
        f"\nSWE step median {alone[7] * 1e3:.1f} ms alone, {loaded[7] * 1e3:.1f} ms under the flood"
    )
    assert loaded[7] <= 3 * alone[7] + FLOOD_SHARE_S, (alone[7], loaded[7])
