"""The HTTP side of the retrieval server of :mod:`agentenvs.searchqa.serve` (docs/searchqa.md):
the size limits, the request being answered, the listening server and the request handler.

This module holds:

* the limits :data:`LOOPBACK_HOSTS`, :data:`MAX_BODY_BYTES`, :data:`MAX_RESULTS`,
  :data:`MAX_QUERY_CHARS`, :data:`CALL_COST`, :data:`HIT_COST`, :data:`MAX_RESPONSE_BYTES` and
  :data:`MAX_CONNECTIONS` (their meaning: :mod:`agentenvs.searchqa.serve`);
* private pieces of :class:`~agentenvs.searchqa.serve.RetrievalServer`: the HTTP error, one
  pending request with its encoded rows, the threading HTTP server (IPv4 and IPv6) that bounds
  its connections and lingers before closing, the request handler and the request size check.
"""

from __future__ import annotations

import http.server
import json
import socket
import socketserver
import threading
import time
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
#: Connections served at once; further ones wait in the listen backlog.
MAX_CONNECTIONS = 64
_DRAIN_LIMIT = 16 << 20  # an oversize body up to this size is read and dropped before the 413
_LINGER_S = 0.5  # after answering, how long unread input is drained before the socket closes
_LINGER_BYTES = 1 << 20
_HEAD, _TAIL = b'{"result": [', b"]}"
_SEND_BYTES = 1 << 18  # a response is sent in pieces of about this size


class _HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(eq=False)  # compared by identity: the queue holds each request once
class _Pending:
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
    error: _HTTPError | None = None

    def add_row(self, hits: Sequence[Hit]) -> None:
        """Encode one query's row; past :data:`MAX_RESPONSE_BYTES`, the request fails with 413."""
        row = to_response([list(hits)[: self.topk]], self.return_scores)["result"][0]
        self.rows.append(json.dumps(row, ensure_ascii=False).encode("utf-8"))
        self.size += len(self.rows[-1]) + 2
        if self.size + len(_HEAD) + len(_TAIL) > MAX_RESPONSE_BYTES:
            self.error = _HTTPError(
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


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    owner: RetrievalServer

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host name up (socket.getfqdn), which can stall.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        # At most MAX_CONNECTIONS at once: the accept loop waits here, the rest queue in the
        # listen backlog.
        while not self.owner._slots.acquire(timeout=0.05):
            if self.owner._stopped:
                self.shutdown_request(request)
                return
        thread = threading.Thread(
            target=self._serve_one,
            args=(request, client_address),
            name="retrieval-server-handler",
            daemon=True,
        )
        self.owner._track(thread)
        thread.start()

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

    def _serve_one(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            self.owner._slots.release()


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    timeout = 60  # seconds a client may take to send its request
    disable_nagle_algorithm = True  # headers and body go out as two writes: no delayed-ACK stall
    server_version = "agentenvs-retrieval/1"
    error_content_type = "application/json"
    arriving = False  # counted in RetrievalServer._arriving

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base signature
        pass

    def handle(self) -> None:
        # The connection counts as an arriving request until it is queued (or answered).
        self.arriving = True
        self.server.owner._arrival(self, +1)
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
                    raise _HTTPError(405, f"{method} not allowed on /retrieve; use POST")
                self._send(200, owner._answer(self._read_json(), self))
            elif path == "/health":
                if method != "GET":
                    raise _HTTPError(405, f"{method} not allowed on /health; use GET")
                self._send_json(200, owner.health())
            else:
                raise _HTTPError(404, f"no such path: {path}")
        except _HTTPError as err:
            allow = {"/retrieve": "POST", "/health": "GET"}.get(path)
            headers = [("Allow", allow)] if err.status == 405 and allow else []
            self._send_json(err.status, {"error": str(err)}, headers)
        except TimeoutError:
            self._send_json(408, {"error": f"the body did not arrive within {self.timeout} s"})
        except Exception as err:  # noqa: BLE001 - every request gets an answer
            self._send_json(500, {"error": f"internal error: {type(err).__name__}: {err}"})

    def _read_json(self) -> Any:
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            raise _HTTPError(411, "a Content-Length header is required")
        try:
            length = int(length_header)
            if length < 0:
                raise ValueError
        except ValueError:
            raise _HTTPError(400, f"bad Content-Length: {length_header!r}") from None
        if length > MAX_BODY_BYTES:
            if length <= _DRAIN_LIMIT:  # read it, so the client sees the 413 and not a reset
                remaining = length
                while remaining > 0:
                    chunk = self.rfile.read(min(remaining, 1 << 16))
                    if not chunk:
                        break
                    remaining -= len(chunk)
            raise _HTTPError(413, f"the body is {length} bytes; at most {MAX_BODY_BYTES} allowed")
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
            raise _HTTPError(400, f"the body is not JSON: {err}") from None
        except RecursionError:
            raise _HTTPError(400, "the body is not JSON we read: nested too deeply") from None

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


def _check_size(queries: list[str], topk: int) -> None:
    """400 for a query that is not valid Unicode; 413 for a request past the size limits."""
    try:
        "".join(queries).encode("utf-8")
    except UnicodeEncodeError:
        raise _HTTPError(400, "every query must be valid Unicode (no lone surrogates)") from None
    if len(queries) * topk > MAX_RESULTS:
        raise _HTTPError(
            413,
            f"{len(queries)} queries x topk {topk} = {len(queries) * topk} passages; "
            f"at most {MAX_RESULTS} per request (split the batch)",
        )
    longest = max(map(len, queries), default=0)
    if longest > MAX_QUERY_CHARS:
        raise _HTTPError(413, f"a query of {longest} characters; at most {MAX_QUERY_CHARS}")
