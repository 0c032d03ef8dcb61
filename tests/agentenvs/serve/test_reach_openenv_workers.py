"""``agentenvs serve --workers N`` (agentenvs.serve.workers, agentenvs.serve.ledger): several
server processes behind one port, against real worker processes and OpenEnv's clients (run in
the reach venv by scripts/test_reach.sh). The router runs in a thread of the test, so the tests
read its ledger (which worker holds each session); a client at another address binds its socket
to 127.0.0.2 and up (loopback).

Sessions spread over the workers and stay on theirs (WebSocket: its connection; HTTP: across new
connections), equal to in-process; forged, foreign and malformed requests reach no other
session and leave the router serving; the session caps hold over all workers and closed
sessions free their slots; a worker that dies frees its sessions; the command line's
``--workers`` with a token.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
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

from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import agentenvs  # noqa: E402,F401  (registers the envs)
from agentenvs.serve.guard import Limits  # noqa: E402
from agentenvs.serve.workers import Router  # noqa: E402

ENV = "agentenvs/Sokoban-v0"
KWARGS = {"action_format": "plain"}
ACTIONS = ["up", "left", "jump", "down", "right"]


@contextmanager
def routing(workers: int = 2, max_sessions: int = 6, **limits: Any) -> Iterator[tuple]:
    """A :class:`Router` of ``workers`` processes on a free port of 127.0.0.1, in a thread;
    yields the URL and the router."""
    router = Router(
        ENV, workers, port=0, max_sessions=max_sessions, limits=Limits(**limits), **KWARGS
    )
    started = threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(router.serve(started.set)), daemon=True)
    thread.start()
    assert started.wait(240), "the workers never became ready"
    try:
        yield f"http://127.0.0.1:{router.port}", router
    finally:
        router.stop()
        thread.join(60)
        assert all(w.proc.poll() is not None for w in router.workers)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple]:
    with routing(max_sessions=6, max_sessions_per_client=4) as out:
        yield out


def ws_url(url: str, query: str = "") -> str:
    return url.replace("http://", "ws://") + "/ws" + query


def wait_for(predicate: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(predicate())


def fresh(method: str, url: str, **kwargs: Any) -> Any:
    """One request on a connection of its own (closed after it)."""
    headers = {**kwargs.pop("headers", {}), "Connection": "close"}
    return requests.request(method, url, headers=headers, timeout=10, **kwargs)


def test_websocket_sessions_spread_over_workers_and_equal_in_process(served):
    """4 ``make_remote`` clients: 2 sessions on each worker; 3 seeded episodes each equal
    in-process; closing them frees every slot (each env closed on disconnect)."""
    url, router = served
    remotes = [agentenvs.make_remote(url) for _ in range(4)]
    try:
        assert wait_for(lambda: router.ledger.total == 4)
        assert [router.ledger.load(w) for w in range(2)] == [2, 2]
        for i, remote in enumerate(remotes):
            local = gym.make(ENV, **KWARGS)
            for episode in range(3):
                seed = 10 * i + episode
                assert remote.reset(seed=seed)[0] == local.reset(seed=seed)[0]
                for t in range(6):
                    want, got = local.step(ACTIONS[(t + i) % 5]), remote.step(ACTIONS[(t + i) % 5])
                    assert got[:4] == want[:4]
                    if want[2] or want[3]:
                        break
    finally:
        for remote in remotes:
            remote.close()
    assert wait_for(lambda: router.ledger.total == 0)


def test_http_sessions_stay_on_their_worker_across_connections(served):
    """Two HTTP sessions, opened and stepped each request on a new connection, land on
    different workers and every step is answered by the session's own (equal to in-process);
    a ``requests.Session`` (its cookie, keep-alive) plays too."""
    url, router = served
    sids, locals_ = [], []
    for seed in (3, 4):
        answer = fresh("POST", f"{url}/reset", json={"seed": seed})
        assert answer.status_code == 200
        sids.append(answer.headers["X-Session-Id"])
        locals_.append(gym.make(ENV, **KWARGS))
        assert answer.json()["observation"]["text"] == locals_[-1].reset(seed=seed)[0]
    assert {router.ledger.worker_of(s) for s in sids} == {0, 1}
    for t in range(8):
        for sid, local in zip(sids, locals_, strict=True):
            answer = fresh(
                "POST", f"{url}/step", json={"action": {"action": ACTIONS[t % 5]}},
                headers={"X-Session-Id": sid},
            )  # fmt: skip
            obs, reward, *_ = local.step(ACTIONS[t % 5])
            assert answer.status_code == 200
            assert (answer.json()["observation"]["text"], answer.json()["reward"]) == (obs, reward)
    with requests.Session() as http:
        assert http.post(f"{url}/reset", json={"seed": 5}).status_code == 200
        for _ in range(3):
            assert http.post(f"{url}/step", json={"action": {"action": "up"}}).status_code == 200
        close = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close"}
        for sid in [*sids, http.cookies["session_id"]]:
            close["params"] = {"session_id": sid}
            assert fresh("POST", f"{url}/mcp", json=close).json()["result"]["closed"]
    assert wait_for(lambda: router.ledger.total == 0)  # MCP's close reported to the ledger


def test_forged_foreign_and_malformed_requests_reach_no_session(served):
    """Random, huge and another address's session ids are unknown (404, WebSocket attach 403,
    MCP "Unknown session_id"); garbage and oversized heads get a 4xx or a close; the router
    serves on, and the owner plays on."""
    url, router = served
    owner = requests.Session()
    assert owner.post(f"{url}/reset", json={"seed": 1}).status_code == 200
    sid = owner.cookies["session_id"]
    step = {"action": {"action": "up"}}
    for forged in (str(uuid.uuid4()), "x" * 4000, "../../" + sid, sid[:-1]):
        answer = fresh("POST", f"{url}/step", json=step, headers={"X-Session-Id": forged})
        assert answer.status_code in (400, 404)
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=url, transport=transport, timeout=10) as thief:
        assert thief.post("/step", json=step, headers={"X-Session-Id": sid}).status_code == 404
        assert thief.get("/state", headers={"Cookie": f"session_id={sid}"}).status_code == 404
        answer = thief.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"session_id": sid}},
        )
        assert "Unknown session_id" in answer.json()["error"]["message"]
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url(url, f"?session_id={sid}"), source_address=("127.0.0.2", 0))
    assert refused.value.response.status_code == 403
    port = int(url.rsplit(":", 1)[1])
    for junk in (b"\x00\xff garbage\r\n\r\n", b"GET / HTTP/1.1\r\nX: " + b"a" * 70_000, b"GET"):
        with socket.create_connection(("127.0.0.1", port), timeout=15) as raw:
            raw.sendall(junk)
            raw.shutdown(socket.SHUT_WR)
            reply = raw.recv(64)
        assert reply == b"" or reply.startswith(b"HTTP/1.1 4")
    assert fresh("GET", f"{url}/health").status_code == 200
    assert owner.post(f"{url}/step", json=step).status_code == 200
    close = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close"}
    assert owner.post(f"{url}/mcp", json={**close, "params": {"session_id": sid}}).json()["result"]
    owner.close()
    assert wait_for(lambda: router.ledger.total == 0)


def test_session_caps_hold_over_all_workers(served):
    """``max_sessions_per_client=4``: another address's 4 WebSockets span both workers and its
    fifth is refused; ``max_sessions=6``: with 127.0.0.1's 2 more, a third address is refused;
    a closed session's slot is free again."""
    url, router = served
    hoard = [connect(ws_url(url), source_address=("127.0.0.2", 0)) for _ in range(4)]
    try:
        for ws in hoard:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(ws.recv(10))["type"] == "observation"
        assert {w for w, c in router.ledger.sessions.values() if c == "127.0.0.2"} == {0, 1}
        with connect(ws_url(url), source_address=("127.0.0.2", 0)) as fifth:
            assert json.loads(fifth.recv(10))["data"]["code"] == "CAPACITY_REACHED"
        mine = [agentenvs.make_remote(url) for _ in range(2)]
        with connect(ws_url(url), source_address=("127.0.0.3", 0)) as seventh:
            assert json.loads(seventh.recv(10))["data"]["code"] == "CAPACITY_REACHED"
        mine.pop().close()
        assert wait_for(lambda: router.ledger.total == 5)
        with connect(ws_url(url), source_address=("127.0.0.3", 0)) as sixth:
            sixth.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(sixth.recv(10))["type"] == "observation"
        mine.pop().close()
    finally:
        for ws in hoard:
            ws.close()
    assert wait_for(lambda: router.ledger.total == 0)


def test_a_dead_worker_frees_its_sessions_and_the_other_serves():
    """Killing one of 2 workers drops its sessions from the ledger; new sessions go to the
    other."""
    with routing(max_sessions=4) as (url, router):
        remotes = [agentenvs.make_remote(url) for _ in range(2)]
        assert wait_for(lambda: router.ledger.total == 2)
        router.workers[0].proc.kill()
        assert wait_for(lambda: router.ledger.load(0) == 0 and router.ledger.total == 1)
        for remote in remotes:
            try:
                remote.close()
            except Exception:
                pass  # the dead worker's connection
        again = agentenvs.make_remote(url)
        assert again.reset(seed=0)[0] == gym.make(ENV, **KWARGS).reset(seed=0)[0]
        assert router.ledger.worker_of(next(iter(router.ledger.sessions))) == 1
        again.close()


def test_the_command_line_serves_with_workers_and_a_token():
    """``agentenvs serve ENV --workers 2`` with ``$AGENTENVS_SERVE_TOKEN``: the start line names
    the workers; ``make_remote(token=...)`` plays, a client without it is refused (401); SIGTERM
    ends the router and its workers. ``--workers 0`` is a one-line error (exit status 2)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = "from agentenvs.cli.main import main; import sys; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "serve", ENV, "--env-kwargs", json.dumps(KWARGS)]
    bad = subprocess.run([*argv, "--workers", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "workers must be at least 1" in bad.stderr
    environ = {**os.environ, "AGENTENVS_SERVE_TOKEN": "s3cret"}
    proc = subprocess.Popen(
        [*argv, "--port", str(port), "--workers", "2"], stdout=subprocess.PIPE, text=True,
        env=environ,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        assert "workers 2; token set" in proc.stdout.readline()
        deadline = time.monotonic() + 240
        while True:
            try:
                remote = agentenvs.make_remote(url, token="s3cret")
                break
            except Exception:
                assert time.monotonic() < deadline, "the served env never answered"
                time.sleep(0.5)
        assert remote.reset(seed=0)[0] == gym.make(ENV, **KWARGS).reset(seed=0)[0]
        remote.close()
        assert fresh("GET", f"{url}/health").status_code == 401
    finally:
        proc.terminate()
        assert proc.wait(60) == 0
