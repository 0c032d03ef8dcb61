"""The HTTP side of the retrieval server of :mod:`agentenvs.searchqa.serve` (docs/searchqa.md):
the size limits, the request being answered, the listening server and the request handler.

This module holds:

* the limits :data:`LOOPBACK_HOSTS`, :data:`MAX_BODY_BYTES`, :data:`MAX_RESULTS`,
  :data:`MAX_QUERY_CHARS`, :data:`CALL_COST`, :data:`HIT_COST`, :data:`MAX_RESPONSE_BYTES`,
  :data:`MAX_CONNECTIONS`, :data:`MAX_WAITING`, :data:`MAX_WAITING_BYTES` and
  :data:`REQUEST_TIMEOUT_S` (their meaning:
  :mod:`agentenvs.searchqa.serve`);
* private pieces of :class:`~agentenvs.searchqa.serve.RetrievalServer`: the HTTP error, one
  pending request with its encoded rows, the gate that accepts connections and reads each
  request whole without a thread (so idle or half-sent connections cost a socket and their
  bytes, nothing more), the HTTP server (IPv4 and IPv6) that answers whole requests on at most
  :data:`MAX_CONNECTIONS` threads and lingers before closing, the request handler and the
  request size check.
"""

from __future__ import annotations

import http.server
import io
import json
import re
import selectors
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentenvs.searchqa.retrieval import Hit, to_response

if TYPE_CHECKING:
    from agentenvs.searchqa.serve import RetrievalServer

__all__ = [
    "LOOPBACK_HOSTS",
    "MAX_BODY_BYTES",
    "CALL_COST",
    "HIT_COST",
    "MAX_CONNECTIONS",
    "MAX_QUERY_CHARS",
    "MAX_RESPONSE_BYTES",
    "MAX_RESULTS",
    "MAX_WAITING",
    "MAX_WAITING_BYTES",
    "REQUEST_TIMEOUT_S",
]

#: The hosts a :class:`RetrievalServer` may bind to.
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
#: The largest request body accepted (bytes); larger ones get 413.
MAX_BODY_BYTES = 1 << 20
#: The most passages one request may ask for (``len(queries) * topk``); more get 413.
MAX_RESULTS = 10_000
#: The longest query (characters); longer get 413.
MAX_QUERY_CHARS = 4096
#: The work of one ``retrieve`` call and its encoding: query characters + HIT_COST per passage.
CALL_COST = 2048
#: The cost of one passage asked for (retrieving and encoding it cost far more than a character).
HIT_COST = 4
#: The largest response body (bytes); a response that would be larger gets 413 instead.
MAX_RESPONSE_BYTES = 8 << 20
#: Whole requests answered at once (one thread each); further whole ones wait their turn.
MAX_CONNECTIONS = 64
#: Connections whose request is still arriving, at most; one more closes the oldest (408).
MAX_WAITING = 512
#: The bytes those connections' requests may hold together; past it the oldest are closed (408).
MAX_WAITING_BYTES = 64 << 20
#: Seconds a client has, from connecting, to send its whole request (head and body); 408 past it.
REQUEST_TIMEOUT_S = 10.0
_DRAIN_LIMIT = 16 << 20  # an oversize body up to this size is read and dropped before the 413
_HEAD_LIMIT = 1 << 17  # a head not ended within this many bytes is handed on as it is (414, 431)
_HEAD_END = re.compile(rb"\n\r?\n")
_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*([^\r\n]*?)[ \t]*\r?$")
_LINGER_S = 0.5  # after answering, how long unread input is drained before the socket closes
_LINGER_BYTES = 1 << 20
_HEAD, _TAIL = b'{"result": [', b"]}"
_SEND_BYTES = 1 << 18  # a response is sent in pieces of about this size


class RequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(eq=False)  # compared by identity: the queue holds each request once
class Pending:
    """One request being answered by the worker: ``queries[:cursor]`` are handed out, ``rows``
    holds the JSON of each answered query's row (``size`` bytes in all)."""

    queries: list[str]
    topk: int
    return_scores: bool
    arrived: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    cursor: int = 0
    served: int = 0  # work handed out: query characters + HIT_COST x topk per query
    rows: list[bytes] = field(default_factory=list)
    size: int = 0
    error: RequestError | None = None

    def add_row(self, hits: Sequence[Hit]) -> None:
        """Encode one query's row; past :data:`MAX_RESPONSE_BYTES`, the request fails with 413."""
        row = to_response([list(hits)[: self.topk]], self.return_scores)["result"][0]
        self.rows.append(json.dumps(row, ensure_ascii=False).encode("utf-8"))
        self.size += len(self.rows[-1]) + 2
        if self.size + len(_HEAD) + len(_TAIL) > MAX_RESPONSE_BYTES:
            self.error = RequestError(
                413,
                f"the response passes {MAX_RESPONSE_BYTES} bytes at query {len(self.rows)} of "
                f"{len(self.queries)} (long passages); ask fewer queries or a smaller topk",
            )

    def body(self) -> list[bytes]:
        """The response body, as :func:`~agentenvs.searchqa.retrieval.to_response` in JSON, in
        pieces of about :data:`_SEND_BYTES` (never one copy of the whole body)."""
        pieces, block, size = [_HEAD], [], 0
        for i, row in enumerate(self.rows):
            block.append(b", " + row if i else row)
            size += len(block[-1])
            if size >= _SEND_BYTES:
                pieces.append(b"".join(block))
                block, size = [], 0
        pieces += [b"".join(block), _TAIL]
        return pieces

    @property
    def left(self) -> int:
        """Queries not yet handed to the retriever."""
        return len(self.queries) - self.cursor


@dataclass(eq=False)
class _Arrival:
    """A connection whose request is still arriving, read by the gate (``data``: the request
    so far; an oversize body is not kept, only counted off in ``drain``)."""

    sock: socket.socket
    address: Any
    deadline: float
    data: bytearray = field(default_factory=bytearray)
    need: int | None = None  # len(data) that makes the request whole; None: the head goes on
    drain: int = 0  # oversize body bytes still to read and drop
    oversize: bool = False
    arriving: bool = False  # counted in RetrievalServer._arriving (its head has ended)

    def feed(self, chunk: bytes) -> bool:
        """Take ``chunk``; whether the request is now whole (or will not become so: its head
        passed :data:`_HEAD_LIMIT`, or it has no usable ``Content-Length``)."""
        if self.oversize:
            self.drain -= min(self.drain, len(chunk))
            return self.drain == 0
        searched = max(0, len(self.data) - 3)
        self.data += chunk
        if self.need is None:
            end = _HEAD_END.search(self.data, searched)
            if end is None:
                return len(self.data) >= _HEAD_LIMIT
            length = _LENGTH.search(self.data, 0, end.end())
            digits = length.group(1) if length else b""
            if not digits.isdigit():
                return True  # the handler answers 411 or 400
            if int(digits) > MAX_BODY_BYTES:  # drop the body (up to _DRAIN_LIMIT), answer 413
                self.oversize = True
                body = len(self.data) - end.end()
                del self.data[end.end() :]
                self.drain = max(0, int(digits) - body) if int(digits) <= _DRAIN_LIMIT else 0
                return self.drain == 0
            self.need = end.end() + int(digits)
        if len(self.data) >= self.need:
            del self.data[self.need :]
            return True
        return False


def _raw_answer(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    return (
        f"HTTP/1.0 {status} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


class Gate:
    """The accept loop: accepts connections and reads each one's request (head, then
    ``Content-Length`` bytes of body) with one selector, no thread per connection; a whole
    request goes to :meth:`Server.dispatch`. A request not whole :data:`REQUEST_TIMEOUT_S`
    after connecting gets 408; past :data:`MAX_WAITING` waiting connections, or
    :data:`MAX_WAITING_BYTES` held by them, the oldest do."""

    def __init__(self, server: Server, request_timeout_s: float) -> None:
        self.server = server
        self.request_timeout_s = request_timeout_s
        self.selector = selectors.DefaultSelector()
        self.waiting: dict[socket.socket, _Arrival] = {}  # in arrival order: deadline order
        self.buffered = 0  # bytes held by the waiting requests
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = False

    def run(self) -> None:
        listener = self.server.socket
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ)
        self.selector.register(self._wake_r, selectors.EVENT_READ)
        while not self._stopping:
            timeout = None
            if self.waiting:
                timeout = max(0.0, next(iter(self.waiting.values())).deadline - time.monotonic())
            for key, _ in self.selector.select(timeout):
                if key.fileobj is listener:
                    self._accept(listener)
                elif key.fileobj is self._wake_r:
                    self._wake_r.recv(64)
                else:
                    self._read(key.data)
            now = time.monotonic()
            while self.waiting and next(iter(self.waiting.values())).deadline <= now:
                limit = f"{self.request_timeout_s:g} s"
                self._refuse(next(iter(self.waiting.values())), 408, "Request Timeout",
                             f"the request did not arrive within {limit} of connecting")  # fmt: skip
        for arrival in list(self.waiting.values()):
            self._refuse(arrival, 503, "Service Unavailable", "the server is stopping")

    def stop(self) -> None:
        """Make :meth:`run` answer the waiting connections 503 and return."""
        self._stopping = True
        self._wake_w.send(b"x")

    def close(self) -> None:
        self.selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def _accept(self, listener: socket.socket) -> None:
        for _ in range(64):
            try:
                sock, address = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # EMFILE and the like: leave it in the backlog for now
                return
            if len(self.waiting) >= MAX_WAITING:
                self._refuse(next(iter(self.waiting.values())), 408, "Request Timeout",
                             f"{MAX_WAITING} connections were waiting to send their requests")  # fmt: skip
            sock.setblocking(False)
            arrival = _Arrival(sock, address, time.monotonic() + self.request_timeout_s)
            self.waiting[sock] = arrival
            self.selector.register(sock, selectors.EVENT_READ, arrival)

    def _read(self, arrival: _Arrival) -> None:
        try:
            chunk = arrival.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # the client closed (or half-closed) its side
            if arrival.data or arrival.oversize:
                self._hand_on(arrival)
            else:
                self._drop(arrival)
            return
        held = len(arrival.data)
        whole = arrival.feed(chunk)
        self.buffered += len(arrival.data) - held
        if not arrival.arriving and (arrival.need is not None or arrival.oversize):
            arrival.arriving = True
            self.server.owner._arrival(arrival, +1)
        if whole:
            self._hand_on(arrival)
        while self.buffered > MAX_WAITING_BYTES:
            self._refuse(next(iter(self.waiting.values())), 408, "Request Timeout",
                         f"the waiting requests passed {MAX_WAITING_BYTES} bytes")  # fmt: skip

    def _forget(self, arrival: _Arrival) -> None:
        self.buffered -= len(arrival.data)
        del self.waiting[arrival.sock]
        self.selector.unregister(arrival.sock)

    def _drop(self, arrival: _Arrival) -> None:
        self._forget(arrival)
        self.server.owner._arrival(arrival, -1)
        arrival.sock.close()

    def _refuse(self, arrival: _Arrival, status: int, reason: str, message: str) -> None:
        try:
            arrival.sock.send(_raw_answer(status, reason, message))
            arrival.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self._drop(arrival)

    def _hand_on(self, arrival: _Arrival) -> None:
        self._forget(arrival)
        if not arrival.arriving:
            arrival.arriving = True
            self.server.owner._arrival(arrival, +1)
        arrival.sock.setblocking(True)
        self.server.dispatch(arrival)


class Server(http.server.HTTPServer):
    """The listening socket and the request threads: :class:`Gate` reads each request whole,
    :meth:`dispatch` answers it on a thread, at most :data:`MAX_CONNECTIONS` at once (the rest
    wait in arrival order)."""

    request_queue_size = 128
    owner: RetrievalServer

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host name up (socket.getfqdn), which can stall.
        socketserver.TCPServer.server_bind(self)
        host, self.server_port = self.server_address[:2]
        assert isinstance(host, str)  # an AF_INET or AF_INET6 address
        self.server_name = host
        self._busy = 0  # threads answering
        self._ready: deque[_Arrival] = deque()  # whole requests waiting for one
        self._ready_lock = threading.Lock()

    def dispatch(self, arrival: _Arrival) -> None:
        """Answer ``arrival`` (a whole request) on a thread, or queue it behind the busy ones."""
        with self._ready_lock:
            if self._busy >= MAX_CONNECTIONS:
                self._ready.append(arrival)
                return
            self._busy += 1
        thread = threading.Thread(
            target=self._serve, args=(arrival,), name="retrieval-server-handler", daemon=True
        )
        self.owner._track(thread)
        thread.start()

    def _serve(self, arrival: _Arrival | None) -> None:
        while arrival is not None:
            try:
                Handler(arrival, self)
            except Exception:  # noqa: BLE001 - as socketserver does: log and go on
                self.handle_error(arrival.sock, arrival.address)
            finally:
                self.shutdown_request(arrival.sock)
            with self._ready_lock:
                arrival = self._ready.popleft() if self._ready else None
                if arrival is None:
                    self._busy -= 1

    def shutdown_request(self, request: Any) -> None:
        # A lingering close: closing with unread input (the rest of a malformed request) sends
        # a reset, which can destroy the answer before the client reads it. Send FIN after the
        # answer, then drain what the client still sends for up to _LINGER_S.
        try:
            request.shutdown(socket.SHUT_WR)
            request.settimeout(_LINGER_S)
            deadline, drained = time.monotonic() + _LINGER_S, 0
            while drained < _LINGER_BYTES and time.monotonic() < deadline:
                chunk = request.recv(1 << 16)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass
        self.close_request(request)


class Server6(Server):
    address_family = socket.AF_INET6


class Handler(http.server.BaseHTTPRequestHandler):
    """Answers one whole request (read by the gate: ``rfile`` is its bytes, never the socket)."""

    server: Server
    timeout = 60  # seconds one write of the answer may block
    disable_nagle_algorithm = True  # headers and body go out as two writes: no delayed-ACK stall
    server_version = "agentenvs-retrieval/1"
    error_content_type = "application/json"

    def __init__(self, arrival: _Arrival, server: Server) -> None:
        self.data = bytes(arrival.data)
        self.arriving = arrival.arriving  # counted in RetrievalServer._arriving until queued
        super().__init__(arrival.sock, arrival.address, server)

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket's reader: the request is in self.data
        self.rfile = io.BytesIO(self.data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base signature
        pass

    def handle(self) -> None:
        # The request counts as arriving until it is queued (or answered).
        try:
            super().handle()
        finally:
            self.server.owner._arrival(self, -1)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # The base class's HTML error page, as JSON (used for malformed request lines too); an
        # unsupported HTTP version is the client's error like any malformed request line.
        text = message or self.responses.get(code, ("error",))[0]
        self._send_json(400 if code == 505 else code, {"error": text})

    def _send_json(self, status: int, body: Any, headers: Sequence[tuple[str, str]] = ()) -> None:
        self._send(status, json.dumps(body, ensure_ascii=False).encode("utf-8"), headers)

    def _send(
        self, status: int, data: bytes | list[bytes], headers: Sequence[tuple[str, str]] = ()
    ) -> None:
        pieces = [data] if isinstance(data, bytes) else data
        if self.request_version == "HTTP/0.9":  # an HTTP/0.9 or unparsed request line: the
            self.request_version = "HTTP/1.0"  # answer still gets a status line and headers
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(sum(map(len, pieces))))
            self.send_header("Connection", "close")
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            if getattr(self, "command", None) != "HEAD":
                for piece in pieces:
                    self.wfile.write(piece)
        except OSError:  # the client went away
            pass
        self.close_connection = True

    def _route(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        owner = self.server.owner
        try:
            if path == "/retrieve":
                if method != "POST":
                    raise RequestError(405, f"{method} not allowed on /retrieve; use POST")
                self._send(200, owner._answer(self._read_json(), self))
            elif path == "/health":
                if method != "GET":
                    raise RequestError(405, f"{method} not allowed on /health; use GET")
                self._send_json(200, owner.health())
            else:
                raise RequestError(404, f"no such path: {path}")
        except RequestError as err:
            allow = {"/retrieve": "POST", "/health": "GET"}.get(path)
            headers = [("Allow", allow)] if err.status == 405 and allow else []
            self._send_json(err.status, {"error": str(err)}, headers)
        except Exception as err:  # noqa: BLE001 - every request gets an answer
            self._send_json(500, {"error": f"internal error: {type(err).__name__}: {err}"})

    def _read_json(self) -> Any:
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            raise RequestError(411, "a Content-Length header is required")
        try:
            length = int(length_header)
            if length < 0:
                raise ValueError
        except ValueError:
            raise RequestError(400, f"bad Content-Length: {length_header!r}") from None
        if length > MAX_BODY_BYTES:  # the gate dropped the body (up to _DRAIN_LIMIT bytes)
            raise RequestError(413, f"the body is {length} bytes; at most {MAX_BODY_BYTES} allowed")
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
            raise RequestError(400, f"the body is not JSON: {err}") from None
        except RecursionError:
            raise RequestError(400, "the body is not JSON we read: nested too deeply") from None

    def do_GET(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler's naming
        self._route("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._route("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._route("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._route("DELETE")

    def do_PATCH(self) -> None:  # noqa: N802
        self._route("PATCH")


def check_size(queries: list[str], topk: int) -> None:
    """400 for a query that is not valid Unicode; 413 for a request past the size limits."""
    try:
        "".join(queries).encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError(400, "every query must be valid Unicode (no lone surrogates)") from None
    if len(queries) * topk > MAX_RESULTS:
        raise RequestError(
            413,
            f"{len(queries)} queries x topk {topk} = {len(queries) * topk} passages; "
            f"at most {MAX_RESULTS} per request (split the batch)",
        )
    longest = max(map(len, queries), default=0)
    if longest > MAX_QUERY_CHARS:
        raise RequestError(413, f"a query of {longest} characters; at most {MAX_QUERY_CHARS}")
