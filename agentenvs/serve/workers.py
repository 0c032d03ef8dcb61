"""``agentenvs serve ENV_ID --workers N``: N server processes behind one port, sessions sticky.

A router process owns the port. It reads each new connection's first request head (within
:data:`~agentenvs.serve.guard.HEAD_TIMEOUT_S`, at most :data:`MAX_HEAD_BYTES`) only to choose a
worker, then hands the connection itself to that worker (the socket passed with
``SCM_RIGHTS``, with the bytes already read) and forgets it: from then on the worker's uvicorn
serves it as if it had accepted it, with the client's real address, so the router costs nothing
per step. Each worker is a whole ``agentenvs serve`` app (:func:`~agentenvs.serve.openenv.
make_server`: the token, the body and message caps, the head deadline, the rate limit) in a
process of its own (``python -m agentenvs.serve.workers``).

The choice: a request naming a session (the ``X-Session-Id`` header, the ``session_id`` cookie,
``/ws?session_id=``, or ``params.session_id`` of a ``POST /mcp`` body) goes to the worker holding
it; any other (a new WebSocket, a first ``/reset``, an unknown or forged id) to the worker with
the fewest sessions (round robin among equals). So a WebSocket's session stays on its
connection's worker, and an HTTP session on its worker across connections. A forged id reaches
only the worker's own checks: an unknown id is answered as one, another client's id is refused
by its worker as with one process.

The session caps hold over all workers: the router's :class:`~agentenvs.serve.ledger.Ledger`
grants every session a worker creates (:class:`LedgerClient`) and learns when each ends. The
router bounds the connections per client address it holds and their openings per second (the
same ``Limits``); once handed over, connections and requests are bounded by each worker, so a
client may hold up to N times ``max_connections_per_client`` and make N times the request rate.
One keep-alive HTTP connection stays on one worker: a request on it naming a session of another
worker is answered 404 (use one connection per session, as a ``requests.Session`` per env does).
A worker that exits is no longer chosen and its sessions are freed; if all exit the router stops.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentenvs.serve.guard import BODY_TIMEOUT_S, HEAD_TIMEOUT_S, Limits, RateLimit
from agentenvs.serve.ledger import Ledger, Refusal
from agentenvs.serve.sessions import SESSION_COOKIE, SESSION_HEADER

__all__ = [
    "MAX_HEAD_BYTES",
    "LedgerClient",
    "Router",
    "run_router",
    "serve_workers",
    "session_hint",
]

#: The most bytes of a first request head the router reads (a longer head goes, unread, to
#: any worker, whose own parser refuses it).
MAX_HEAD_BYTES = 1 << 16
_LINE_LIMIT = 1 << 22  # ledger messages (a release lists ids)


def session_hint(head: bytes, body: bytes = b"") -> str | None:
    """The session a request names, read as :mod:`agentenvs.serve.sessions` reads it (header,
    cookie, ``/ws?session_id=``, a ``/mcp`` body's ``params.session_id``); ``None`` if none, or
    if ``head`` does not parse (the worker's own parser then answers it).

    >>> session_hint(b"POST /step HTTP/1.1\\r\\nX-Session-Id: abc\\r\\n\\r\\n")
    'abc'
    >>> session_hint(b"GET /ws?session_id=s1 HTTP/1.1\\r\\nCookie: a=1; session_id=s2\\r\\n\\r\\n")
    's2'
    >>> session_hint(b"\\x00garbage") is None
    True
    """
    try:
        lines = head.decode("latin-1").split("\r\n")
        target = lines[0].split(" ")[1]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers.setdefault(name.strip().lower(), value.strip())
        named = headers.get(SESSION_HEADER.lower())
        for crumb in headers.get("cookie", "").split(";"):
            key, _, value = crumb.partition("=")
            if not named and key.strip() == SESSION_COOKIE:
                named = value.strip()
        url = urlsplit(target)
        named = named or parse_qs(url.query).get("session_id", [""])[0]
        if not named and url.path == "/mcp" and body:
            params = json.loads(body).get("params")
            named = params.get("session_id") if isinstance(params, dict) else None
    except (IndexError, ValueError, AttributeError, RecursionError):
        return None
    return named if isinstance(named, str) and named else None


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value) if value.strip().isdigit() else None
    return None


class LedgerClient:
    """A worker's end of the router's :class:`~agentenvs.serve.ledger.Ledger` (newline-delimited
    JSON over a Unix socket pair); ``acquire`` waits for the answer, the others do not."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.lock = asyncio.Lock()

    def send(self, **message: Any) -> None:
        self.writer.write(json.dumps(message).encode() + b"\n")

    async def acquire(self, client: str) -> Refusal | None:
        """Ask for a session slot for ``client``; ``None`` if granted, else why not."""
        async with self.lock:
            self.send(op="acquire", client=client)
            answer = json.loads(await self.reader.readline())
        refusal = answer["refusal"]
        return None if refusal is None else (int(refusal[0]), int(refusal[1]), str(refusal[2]))

    def bind(self, session_id: str, client: str) -> None:
        self.send(op="bind", session=session_id, client=client)

    def cancel(self, client: str) -> None:
        self.send(op="cancel", client=client)

    def release(self, session_ids: list[str]) -> None:
        self.send(op="release", sessions=session_ids)


@dataclass
class _Worker:
    proc: subprocess.Popen
    handoff: socket.socket
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    alive: bool = True


class Router:
    """The port of ``agentenvs serve --workers N``: :meth:`serve` binds ``host:port``, starts
    ``workers`` worker processes, and routes connections to them until :meth:`stop`.

    Args:
        env_id, host, port, max_sessions, limits: :func:`~agentenvs.serve.openenv.make_server`'s
            (``max_sessions`` and ``limits.max_sessions_per_client`` over all workers).
        workers: worker processes (at least 1).
        **kwargs: :func:`~agentenvs.serve.openenv.create_server_app`'s (``env_kwargs``,
            ``prompt``, ...), for every worker; checked here (a ``ValueError``) by
            :func:`~agentenvs.serve.openenv.check_env_options`, before any port is bound.
    """

    def __init__(
        self,
        env_id: str,
        workers: int,
        host: str = "127.0.0.1",
        port: int = 8000,
        max_sessions: int = 16,
        limits: Limits | None = None,
        **kwargs: Any,
    ) -> None:
        from agentenvs.serve.openenv import check_env_options

        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        options = {**kwargs}
        style, history = options.pop("prompt", None), options.pop("prompt_history_length", None)
        options.pop("privileged", None)
        check_env_options(
            env_id, style, history, **{**(options.pop("env_kwargs", None) or {}), **options}
        )
        self.limits = Limits.from_env() if limits is None else limits
        self.n_workers, self.host, self.port = workers, host, port
        self.config = {"env_id": env_id, "max_sessions": max_sessions, "limits": self.limits}
        self.kwargs = kwargs
        self.ledger = Ledger(max_sessions, self.limits.max_sessions_per_client)
        rate = self.limits.max_requests_per_second_per_client
        self.rate_limit = None if rate is None else RateLimit(rate)
        self.workers: list[_Worker] = []
        self.holding: Counter[str] = Counter()  # connections the router holds, per client
        self.handed: Counter[int] = Counter()  # connections handed to each worker
        self._routing: set[asyncio.Task] = set()  # connections being routed
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle --------------------------------------------------------------------------

    async def serve(self, started: Callable[[], None] | None = None) -> None:
        """Serve until :meth:`stop` (or every worker has exited); ``started`` is called once
        every worker is ready and the port accepts."""
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        listener = socket.create_server((self.host, self.port), backlog=1024)
        listener.setblocking(False)
        self.port = listener.getsockname()[1]
        tasks: list[asyncio.Task] = []
        try:
            for index in range(self.n_workers):
                tasks.append(asyncio.create_task(self._spawn(index)))
            await self._await_ready()
            tasks.append(asyncio.create_task(self._accept(listener)))
            if started is not None:
                started()
            await self._stop.wait()
        finally:
            listener.close()
            for task in tasks:
                task.cancel()
            await asyncio.to_thread(self._end_workers)

    def stop(self) -> None:
        """Stop :meth:`serve` (from any thread)."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    async def _await_ready(self) -> None:
        while not all(w.ready.is_set() for w in self.workers) or len(self.workers) < self.n_workers:
            if any(not w.alive for w in self.workers):
                raise RuntimeError("a worker exited before it was ready")
            await asyncio.sleep(0.05)

    def _end_workers(self) -> None:
        for worker in self.workers:
            if worker.proc.poll() is None:
                worker.proc.terminate()
        for worker in self.workers:
            try:
                worker.proc.wait(30)
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                worker.proc.wait()
            worker.handoff.close()

    async def _spawn(self, index: int) -> None:
        handoff, handoff_child = socket.socketpair()
        ledger, ledger_child = socket.socketpair()
        fds = (handoff_child.fileno(), ledger_child.fileno())
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentenvs.serve.workers", *map(str, fds)],
            stdin=subprocess.PIPE,
            pass_fds=fds,
        )
        handoff_child.close()
        ledger_child.close()
        assert proc.stdin is not None
        proc.stdin.write(pickle.dumps((self.config, self.kwargs)))
        proc.stdin.close()
        worker = _Worker(proc, handoff)
        self.workers.append(worker)
        reader, writer = await asyncio.open_unix_connection(sock=ledger, limit=_LINE_LIMIT)
        try:
            await self._listen(index, worker, reader, writer)
        finally:
            worker.alive = False
            self.ledger.drop_worker(index)
            writer.close()
            if not any(w.alive for w in self.workers) and self._stop is not None:
                self._stop.set()

    async def _listen(
        self,
        index: int,
        worker: _Worker,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Answer ``index``'s ledger messages until it exits."""
        while line := await reader.readline():
            message = json.loads(line)
            op = message["op"]
            if op == "ready":
                worker.ready.set()
            elif op == "acquire":
                refusal = self.ledger.acquire(index, message["client"])
                writer.write(json.dumps({"refusal": refusal}).encode() + b"\n")
            elif op == "bind":
                self.ledger.bind(index, message["session"], message["client"])
            elif op == "cancel":
                self.ledger.cancel(index, message["client"])
            elif op == "release":
                self.ledger.release(index, message["sessions"])

    # -- connections ------------------------------------------------------------------------

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            sock, address = await loop.sock_accept(listener)
            task = asyncio.create_task(self._route(sock, address[0]))
            self._routing.add(task)
            task.add_done_callback(self._routing.discard)

    async def _refuse(self, sock: socket.socket, status: str, detail: str) -> None:
        body = json.dumps({"detail": detail}).encode()
        head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n"
        message = head.encode() + b"content-length: %d\r\n\r\n%s" % (len(body), body)
        await asyncio.get_running_loop().sock_sendall(sock, message)

    async def _route(self, sock: socket.socket, client: str) -> None:
        """Read ``sock``'s first request head (and a ``/mcp`` body), hand it to a worker."""
        cap = self.limits.max_connections_per_client
        try:
            if self.holding[client] >= cap:
                await self._refuse(
                    sock, "429 Too Many Requests", f"at most {cap} connections per client"
                )
                return
            if self.rate_limit is not None and not self.rate_limit.take(client):
                rate = self.rate_limit.rate
                await self._refuse(sock, "429 Too Many Requests", f"more than {rate:g} a second")
                return
            self.holding[client] += 1
            try:
                data = await asyncio.wait_for(self._read_head(sock), HEAD_TIMEOUT_S)
                head, _, rest = data.partition(b"\r\n\r\n")
                body = b""
                if data.startswith(b"POST /mcp") and self.limits.authorized(_headers(head)):
                    body = await asyncio.wait_for(self._read_body(sock, head, rest), BODY_TIMEOUT_S)
                    data = head + b"\r\n\r\n" + body
            finally:
                self.holding[client] -= 1
                if self.holding[client] <= 0:
                    del self.holding[client]
            if data:
                await self._hand_off(self._pick(session_hint(head, body)), sock, data)
        except (OSError, asyncio.TimeoutError, EOFError):
            pass
        finally:
            sock.close()

    async def _read_head(self, sock: socket.socket) -> bytes:
        loop, data = asyncio.get_running_loop(), b""
        while b"\r\n\r\n" not in data and len(data) < MAX_HEAD_BYTES:
            chunk = await loop.sock_recv(sock, MAX_HEAD_BYTES)
            if not chunk:
                raise EOFError
            data += chunk
        return data

    async def _read_body(self, sock: socket.socket, head: bytes, body: bytes) -> bytes:
        length = _content_length(head)
        if length is None or length > self.limits.max_body_bytes:
            return body  # the worker answers it (400, 413)
        loop = asyncio.get_running_loop()
        while len(body) < length:
            chunk = await loop.sock_recv(sock, length - len(body))
            if not chunk:
                raise EOFError
            body += chunk
        return body

    def _pick(self, session_id: str | None) -> int:
        alive = [i for i, w in enumerate(self.workers) if w.alive]
        if not alive:
            raise EOFError("no worker left")
        holder = self.ledger.worker_of(session_id)
        if holder is not None and self.workers[holder].alive:
            return holder
        return min(alive, key=lambda i: (self.ledger.load(i), self.handed[i]))

    async def _hand_off(self, index: int, sock: socket.socket, data: bytes) -> None:
        worker = self.workers[index]
        self.handed[index] += 1
        message = struct.pack("!I", len(data)) + data
        async with worker.lock:  # one message at a time on the worker's socket
            await asyncio.to_thread(socket.send_fds, worker.handoff, [message], [sock.fileno()])


def _headers(head: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        out.setdefault(name.strip().lower(), value.strip())
    return out


def serve_workers(
    env_id: str,
    workers: int,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 16,
    **kwargs: Any,
) -> None:
    """Run a :class:`Router` of ``workers`` processes on ``host:port`` until SIGINT or SIGTERM
    (``kwargs``: ``limits`` and :func:`~agentenvs.serve.openenv.create_server_app`'s)."""
    run_router(Router(env_id, workers, host, port, max_sessions, **kwargs))


def run_router(router: Router) -> None:
    """Run ``router`` until SIGINT or SIGTERM (its workers end with it)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, router.stop)
        await router.serve()

    asyncio.run(main())


# -- the worker process ---------------------------------------------------------------------


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _receive_handoffs(
    channel: socket.socket,
    loop: asyncio.AbstractEventLoop,
    adopt: Callable[[socket.socket, bytes], Coroutine[Any, Any, None]],
    stop: Callable[[], None],
) -> None:
    """The worker's thread taking connections from the router; ``stop`` when it is gone."""
    try:
        while True:
            size, fds, _, _ = socket.recv_fds(channel, 4, 1)
            if not size:
                break
            size += _recv_exact(channel, 4 - len(size))
            data = _recv_exact(channel, struct.unpack("!I", size)[0])
            for fd in fds:
                asyncio.run_coroutine_threadsafe(adopt(socket.socket(fileno=fd), data), loop)
    except (OSError, EOFError):
        pass
    finally:
        loop.call_soon_threadsafe(stop)


async def _worker(config: dict[str, Any], kwargs: dict[str, Any], fds: list[int]) -> None:
    from agentenvs.serve.openenv import make_server

    server = make_server(**config, **kwargs)
    handoff = socket.socket(fileno=fds[0])
    reader, writer = await asyncio.open_unix_connection(
        sock=socket.socket(fileno=fds[1]), limit=_LINE_LIMIT
    )
    ledger = LedgerClient(reader, writer)
    server.config.app.app.state.sessions.ledger = ledger
    serving = asyncio.create_task(server.serve(sockets=[]))
    while not server.started:
        if serving.done():
            return await serving
        await asyncio.sleep(0.01)
    base = server.config.http_protocol_class

    class Adopted(base):  # type: ignore[valid-type,misc]
        """uvicorn's protocol for a connection the router accepted and read the start of."""

        def __init__(self, pending: bytes) -> None:
            super().__init__(
                config=server.config, server_state=server.server_state,
                app_state=server.lifespan.state,
            )  # fmt: skip
            self.pending = pending

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            if self.pending and not transport.is_closing():
                self.data_received(self.pending)

    async def adopt(sock: socket.socket, data: bytes) -> None:
        try:
            await asyncio.get_running_loop().connect_accepted_socket(lambda: Adopted(data), sock)
        except OSError:
            sock.close()

    def stop() -> None:
        server.should_exit = True

    loop = asyncio.get_running_loop()
    threading.Thread(
        target=_receive_handoffs, args=(handoff, loop, adopt, stop), daemon=True
    ).start()
    ledger.send(op="ready", pid=os.getpid())
    await serving


if __name__ == "__main__":
    from agentenvs.serve.openenv import prepare_to_serve

    _config, _kwargs = pickle.load(sys.stdin.buffer)
    prepare_to_serve()
    asyncio.run(_worker(_config, _kwargs, [int(fd) for fd in sys.argv[1:3]]))
