"""Abusive clients of ``agentenvs serve`` (docs/integrations.md, "Threat model"), for
tests/agentenvs/serve/test_reach_openenv_abuse.py, run as a process of their own so their load
does not share the victim's interpreter:

    python tests/serve_abusers.py URL SECONDS SEQUENTIAL_SESSIONS SLOWLORIS [KIND,KIND...]

Each kind of abuse runs in threads from its own loopback address (127.0.0.2 ...; the server
listens on 127.0.0.1 and the victim connects from there), bounded in count, in rate and in time
(``SECONDS``; ``KIND,...`` picks some kinds, all by default); the process prints one JSON line:
per kind, the HTTP statuses and WebSocket outcomes it saw (``"5xx"`` would be a server fault)
and the checks that failed (``"bad"``).

Kinds: ``hoard`` (sessions over MCP, ``/reset`` and WebSockets, kept busy, until refused),
``hijack`` (the hoarder's session ids from another address: HTTP step, WebSocket attach, MCP
close), ``huge`` (a 200 MB ``Content-Length``, a streamed body past the cap, a 2 MiB WebSocket
message), ``malformed`` (bad JSON and shapes over HTTP and WebSocket), ``slowloris`` (connections
sending a request head a byte a second), ``flood`` (``/metadata``, ``/state``, ``/health``,
``/schema``) and ``sequential`` (whole sessions one after another: open, reset, step, close).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from urllib.parse import urlparse

import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

ADDRESSES = {
    "hoard": "127.0.0.2",
    "hijack": "127.0.0.3",
    "huge": "127.0.0.4",
    "malformed": "127.0.0.5",
    "flood": "127.0.0.7",
    "sequential": "127.0.0.8",
}
#: The slowloris connections come from these addresses, a share each.
SLOWLORIS_ADDRESSES = [f"127.0.0.{i}" for i in range(10, 18)]
BAD_BODIES = [b"{not json", b"[1, 2]", b'{"action": 5}', b'{"action": {"action": 7}}', b"[" * 50_000,
              b'{"seed": -3}', b"\xff\xfe", b"null", b'{"action": {}}']  # fmt: skip
MCP = {"jsonrpc": "2.0", "id": 1}


class Report:
    """Outcomes of one kind (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()
        self.bad: list[str] = []

    def status(self, code: int | str) -> None:
        with self.lock:
            self.seen["5xx" if isinstance(code, int) and code >= 500 else str(code)] += 1

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            with self.lock:
                if len(self.bad) < 20:
                    self.bad.append(what)


class Abuse:
    def __init__(self, url: str, seconds: float, sequential: int, slowloris: int) -> None:
        self.url = url
        parsed = urlparse(url)
        self.host, self.port = parsed.hostname, parsed.port
        self.ws = f"ws://{self.host}:{self.port}/ws"
        self.stop = time.monotonic() + seconds
        self.sequential, self.slowloris = sequential, slowloris
        self.reports = {k: Report() for k in [*ADDRESSES, "slowloris"]}
        self.hoarded: list[str] = []  # the hoarder's HTTP session ids, for the hijacker
        self.hoarded_ready = threading.Event()

    def http(self, kind: str) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=ADDRESSES[kind])
        return httpx.Client(base_url=self.url, transport=transport, timeout=30)

    def websocket(self, kind: str, query: str = ""):
        return connect(self.ws + query, source_address=(ADDRESSES[kind], 0), open_timeout=30,
                       max_size=None)  # fmt: skip

    def live(self) -> bool:
        return time.monotonic() < self.stop

    def pace(self, started: float, period: float) -> None:
        """Sleep out ``period`` seconds from ``started``: each kind's rate is bounded."""
        time.sleep(max(0.0, started + period - time.monotonic()))

    # -- kinds ---------------------------------------------------------------------------

    def hoard(self) -> None:
        report = self.reports["hoard"]
        with self.http("hoard") as client:
            for _ in range(20):  # MCP sessions, then /reset ones, until refused
                r = client.post(
                    "/mcp", json={**MCP, "method": "openenv/session/create", "params": {}}
                )
                report.status(r.status_code)
                if "error" in r.json():
                    report.status("mcp-refused")
                    break
                self.hoarded.append(r.json()["result"]["session_id"])
            for _ in range(20):
                r = client.post("/reset", json={})
                report.status(r.status_code)
                if r.status_code != 200:
                    report.check(r.status_code == 429, f"/reset past the cap: {r.status_code}")
                    break
                self.hoarded.append(r.headers["x-session-id"])
            self.hoarded_ready.set()
            for _ in range(4):  # WebSockets past the cap: refused at once
                with self.websocket("hoard") as ws:
                    code = json.loads(ws.recv(30)).get("data", {}).get("code")
                    report.status(code)
                    report.check(code == "CAPACITY_REACHED", f"a WebSocket past the cap: {code}")
            while self.live():  # keep the hoard busy: never idle
                for sid in self.hoarded:
                    r = client.get("/state", headers={"X-Session-Id": sid})
                    report.status(r.status_code)
                time.sleep(0.5)
            for sid in self.hoarded:
                client.post("/mcp", json={**MCP, "method": "openenv/session/close",
                                          "params": {"session_id": sid}})  # fmt: skip

    def hijack(self) -> None:
        report = self.reports["hijack"]
        self.hoarded_ready.wait(60)
        report.check(bool(self.hoarded), "the hoarder got no session")
        with self.http("hijack") as client:
            while self.live():
                started = time.monotonic()
                for sid in [*self.hoarded, str(uuid.uuid4())]:
                    r = client.post("/step", json={"action": {"action": "up"}},
                                    headers={"X-Session-Id": sid})  # fmt: skip
                    report.status(r.status_code)
                    report.check(
                        r.status_code == 404, f"step on another's session: {r.status_code}"
                    )
                    r = client.get("/state", cookies={"session_id": sid})
                    report.check(
                        r.status_code == 404, f"state of another's session: {r.status_code}"
                    )
                    for method in ("openenv/session/close", "tools/list"):
                        r = client.post("/mcp", json={**MCP, "method": method,
                                                      "params": {"session_id": sid}})  # fmt: skip
                        report.status(r.status_code)
                        report.check("Unknown session_id" in r.json()["error"]["message"],
                                     f"{method} on another's session: {r.text[:80]}")  # fmt: skip
                    try:
                        with self.websocket("hijack", f"?session_id={sid}") as ws:
                            ws.send(json.dumps({"type": "step", "data": {"action": "up"}}))
                            report.check(False, f"attached to another's session: {ws.recv(5)[:80]}")
                    except InvalidStatus as err:
                        report.status(f"ws-{err.response.status_code}")
                self.pace(started, 0.5)

    def raw(self, kind: str, data: bytes, half_close: bool = False) -> int | None:
        """Send ``data`` from ``kind``'s address; the answer's status (``None``: none)."""
        with socket.create_connection((self.host, self.port), timeout=30,
                                      source_address=(ADDRESSES[kind], 0)) as sock:  # fmt: skip
            try:
                sock.sendall(data)
                if half_close:
                    sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # answered and closed before reading all
            reply = b""
            try:
                while len(reply) < 64 and (chunk := sock.recv(4096)):
                    reply += chunk
            except OSError:
                pass
        return int(reply[9:12]) if reply.startswith(b"HTTP/1.1 ") else None

    def huge(self) -> None:
        report = self.reports["huge"]
        head = b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        chunked_head = head + b"Transfer-Encoding: chunked\r\n\r\n"
        chunk = b"%x\r\n%s\r\n" % (1 << 16, b" " * (1 << 16))
        while self.live():
            started = time.monotonic()
            status = self.raw("huge", head + b"Content-Length: %d\r\n\r\n" % (200 << 20))
            report.status(status)
            report.check(status == 413 and time.monotonic() - started < 5, f"200 MB body: {status}")
            status = self.raw("huge", chunked_head + chunk * 17)  # just past 1 MiB, no end
            report.status(status)
            report.check(status == 413, f"streamed body past the cap: {status}")
            try:
                with self.websocket("huge") as ws:
                    ws.send("x" * (2 << 20))
                    ws.recv(30)
                    report.check(False, "a 2 MiB message was answered")
            except ConnectionClosed as err:
                report.status(f"ws-close-{err.rcvd.code if err.rcvd else None}")
                report.check(
                    err.rcvd is not None and err.rcvd.code == 1009, f"2 MiB message: {err}"
                )
            self.pace(started, 0.2)

    def malformed(self) -> None:
        report = self.reports["malformed"]
        with self.http("malformed") as client:
            while self.live():
                started = time.monotonic()
                for path in ("/reset", "/step", "/mcp"):
                    for body in BAD_BODIES:
                        r = client.post(
                            path, content=body, headers={"Content-Type": "application/json"}
                        )
                        report.status(r.status_code)
                        report.check(r.status_code < 500, f"{path} {body[:20]!r}: {r.status_code}")
                with self.websocket("malformed") as ws:
                    for message in ["{bad", "[]", '{"type": "step"}', '{"type": "step", "data": 5}',
                                    '{"type": "nope"}', "[" * 100_000, '{"type": "reset", "data": {"seed": "x"}}']:  # fmt: skip
                        try:
                            ws.send(message)
                            answer = json.loads(ws.recv(30))
                            report.status(f"ws-{answer['type']}")
                        except ConnectionClosed as err:
                            report.status(f"ws-closed-{err.rcvd.code if err.rcvd else None}")
                            break
                self.pace(started, 0.5)

    def slowloris_one(self, address: str) -> None:
        report = self.reports["slowloris"]
        head = b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Pad: "
        while self.live():
            opened = time.monotonic()
            try:
                with socket.create_connection((self.host, self.port), timeout=30,
                                              source_address=(address, 0)) as sock:  # fmt: skip
                    sock.sendall(head)
                    while self.live():
                        sock.sendall(b"a")
                        time.sleep(1.0)
                    report.status("held-to-the-end")
                    return
            except OSError:
                report.status("closed-by-server")
                report.check(time.monotonic() - opened < 30, "a slow head was held past 30 s")

    def flood(self) -> None:
        report = self.reports["flood"]
        with self.http("flood") as client:
            while self.live():
                started = time.monotonic()
                for path in ("/metadata", "/state", "/health", "/schema", "/metadata"):
                    r = client.get(path)
                    report.status(r.status_code)
                self.pace(started, 0.025)  # at most 200 requests a second

    def sequential_sessions(self) -> None:
        report = self.reports["sequential"]
        for _ in range(self.sequential):
            started = time.monotonic()
            with self.websocket("sequential") as ws:
                ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
                report.status(f"ws-{json.loads(ws.recv(30))['type']}")
                ws.send(json.dumps({"type": "step", "data": {"action": "up"}}))
                report.status(f"ws-{json.loads(ws.recv(30))['type']}")
            self.pace(started, 0.02)

    def run(self, kinds: set[str]) -> dict:
        targets = {"hoard": self.hoard, "hijack": self.hijack, "huge": self.huge,
                   "malformed": self.malformed, "flood": self.flood,
                   "sequential": self.sequential_sessions}  # fmt: skip
        if "hijack" in kinds and "hoard" not in kinds:
            self.hoarded_ready.set()
        threads = [threading.Thread(target=t) for k, t in targets.items() if k in kinds]
        threads += [
            threading.Thread(target=self.slowloris_one, args=(SLOWLORIS_ADDRESSES[i % 8],))
            for i in range(self.slowloris if "slowloris" in kinds else 0)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {k: {"seen": dict(r.seen), "bad": r.bad} for k, r in self.reports.items()}


if __name__ == "__main__":
    url, seconds, sequential, slowloris = (
        sys.argv[1],
        float(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
    )
    kinds = set(sys.argv[5].split(",")) if len(sys.argv) > 5 else {*ADDRESSES, "slowloris"}
    print(json.dumps(Abuse(url, seconds, sequential, slowloris).run(kinds)), flush=True)
