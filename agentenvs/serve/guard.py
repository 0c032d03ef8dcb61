"""The limits of ``agentenvs serve`` below the OpenEnv routes (docs/integrations.md, "Threat
model"): what every connection and request passes before OpenEnv's code sees it.

This module holds:

* :class:`Limits`: the server's bounds (sessions and connections per client address, the idle
  timeout, the body and message cap, the shared-secret token) and their defaults;
* :data:`CLIENT`: the client address of the request or WebSocket being served, and which of
  the two it is (a context variable the session code reads to bind sessions to their creator);
* :class:`Guard`: the ASGI middleware checking the token on every route, capping request bodies
  (never reading more than the cap) and WebSocket messages, timing out slow bodies and idle
  WebSockets;
* :func:`guarded_h11`: uvicorn's HTTP/1.1 protocol with a cap on open connections per client
  address and a deadline on each request head, so idle or half-sent connections cost nothing.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from agentenvs.serve import TOKEN_ENV

__all__ = [
    "BODY_TIMEOUT_S",
    "HEAD_TIMEOUT_S",
    "TOKEN_ENV",
    "CLIENT",
    "Limits",
    "RateLimit",
    "Guard",
    "guarded_h11",
]

#: Seconds a connection may take to send a whole request head (from its first byte, or from
#: its opening); a connection past it is closed.
HEAD_TIMEOUT_S = 10.0
#: Seconds a request may take to send its body (408 past it).
BODY_TIMEOUT_S = 10.0

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: ``(client address, "http" | "websocket")`` of what is being served; ``None`` outside one.
CLIENT: ContextVar[tuple[str, str] | None] = ContextVar("agentenvs_serve_client", default=None)


@dataclass(frozen=True)
class Limits:
    """The bounds of one server.

    Args:
        max_sessions_per_client: sessions one client address may hold at once (``None``: only
            the server's ``max_sessions``).
        max_connections_per_client: TCP connections (HTTP or WebSocket) one client address may
            hold open at once; one more is answered 429 and closed.
        idle_timeout_s: seconds a session may sit idle: an HTTP session with no request, a
            WebSocket with no message; it is then closed and its slot freed (``None``: never).
        max_body_bytes: the largest HTTP request body and WebSocket message, in bytes (413, or
            WebSocket close code 1009, past it; a body past it is never read).
        max_requests_per_second_per_client: HTTP requests and WebSocket openings one client
            address may make per second, in bursts of as many (429 past it; ``None``: no
            bound); a WebSocket's messages are not counted (its session answers them in turn).
        token: the shared secret every route asks for, as ``Authorization: Bearer <token>``
            (``None``: no token; :meth:`from_env` reads :data:`TOKEN_ENV`).

    >>> Limits().max_body_bytes
    1048576
    >>> Limits(token="s3cret").authorized({"authorization": "Bearer s3cret"})
    True
    >>> Limits(token="s3cret").authorized({})
    False
    """

    max_sessions_per_client: int | None = None
    max_connections_per_client: int = 64
    idle_timeout_s: float | None = 600.0
    max_body_bytes: int = 1 << 20
    max_requests_per_second_per_client: float | None = 200.0
    token: str | None = None

    def __post_init__(self) -> None:
        for name in ("max_sessions_per_client", "max_connections_per_client", "max_body_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        rate = self.max_requests_per_second_per_client
        if rate is not None and rate <= 0:
            raise ValueError(f"max_requests_per_second_per_client must be > 0, not {rate}")
        if self.idle_timeout_s is not None and self.idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0 or None, not {self.idle_timeout_s}")
        if self.token == "":
            raise ValueError("an empty token protects nothing; pass None for no token")

    @classmethod
    def from_env(cls, token: str | None = None, **kwargs: Any) -> Limits:
        """These limits with ``token``, else ``$AGENTENVS_SERVE_TOKEN`` when set and not empty."""
        return cls(token=token or os.environ.get(TOKEN_ENV) or None, **kwargs)

    def authorized(self, headers: MutableMapping[str, str]) -> bool:
        """Whether ``headers`` (lower-case names) carry the token (always, without one)."""
        if self.token is None:
            return True
        scheme, _, given = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.encode(), self.token.encode()
        )


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


async def _respond(
    send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class RateLimit:
    """A token bucket per client address: ``rate`` requests a second, bursts of ``rate``.

    >>> bucket = RateLimit(2.0)
    >>> [bucket.take("a", now=0.0) for _ in range(3)], bucket.take("a", now=0.5)
    ([True, True, False], True)
    """

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, when)

    def take(self, client: str, now: float | None = None) -> bool:
        """Whether ``client`` may make one more request now (taking a token if so)."""
        now = time.monotonic() if now is None else now
        if len(self.buckets) > 4096:  # forget clients whose buckets have refilled
            self.buckets = {
                c: (t, w)
                for c, (t, w) in self.buckets.items()
                if t + (now - w) * self.rate < self.rate
            }
        tokens, when = self.buckets.get(client, (self.rate, now))
        tokens = min(self.rate, tokens + (now - when) * self.rate)
        self.buckets[client] = (tokens - 1 if tokens >= 1 else tokens, now)
        return tokens >= 1


class Guard:
    """ASGI middleware applying :class:`Limits` to every HTTP request and WebSocket.

    Both: 429 past ``max_requests_per_second_per_client`` (:class:`RateLimit`). HTTP: 401
    without the token; 413 for a ``Content-Length`` past ``max_body_bytes`` (nothing
    read) or a streamed body passing it (reading stops there); 408 for a body not sent within
    :data:`BODY_TIMEOUT_S`; else the app gets the whole body at once. WebSocket: refused (HTTP
    403) without the token; closed with code 1009 on a message past ``max_body_bytes`` and with
    1008 after ``idle_timeout_s`` with no message from the client (time spent answering it does
    not count); the app then sees a disconnect. :data:`CLIENT` is set for the app.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], limits: Limits):
        self.app = app
        self.limits = limits
        rate = limits.max_requests_per_second_per_client
        self.rate_limit = None if rate is None else RateLimit(rate)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("unknown", 0))[0]
        CLIENT.set((client, scope["type"]))
        if self.rate_limit is not None and not self.rate_limit.take(client):
            detail = f"more than {self.rate_limit.rate:g} requests a second from {client}"
            if scope["type"] == "http":
                await _respond(send, 429, detail, {"retry-after": "1"})
            else:
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008, "reason": detail})
            return
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        else:
            await self._websocket(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        if not self.limits.authorized(headers):
            await _respond(send, 401, "a token is required: send 'Authorization: Bearer <token>'",
                           {"www-authenticate": "Bearer"})  # fmt: skip
            return
        cap = self.limits.max_body_bytes
        length = headers.get("content-length", "0")
        if not length.isdigit():
            await _respond(send, 400, f"bad Content-Length: {length!r}")
            return
        if int(length) > cap:
            await _respond(send, 413, f"the body is {length} bytes; at most {cap} allowed")
            return
        chunks: list[bytes] = []

        async def read() -> int | None:  # the status ending the request early, if any
            size, more = 0, True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return 0
                chunks.append(message.get("body", b""))
                size += len(chunks[-1])
                more = message.get("more_body", False)
                if size > cap:
                    return 413
            return None

        try:
            status = await asyncio.wait_for(read(), BODY_TIMEOUT_S)
        except asyncio.TimeoutError:
            status = 408
        if status is not None:
            if status:
                detail = {413: f"the body passes {cap} bytes"}.get(
                    status, f"the body did not arrive within {BODY_TIMEOUT_S:g} s"
                )
                await _respond(send, status, detail)
            return
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.limits.authorized(_headers(scope)):
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": "token required"})
            return
        closed = False
        idle, cap = self.limits.idle_timeout_s, self.limits.max_body_bytes

        async def close(code: int, reason: str) -> Message:
            nonlocal closed
            closed = True
            await send({"type": "websocket.close", "code": code, "reason": reason})
            return {"type": "websocket.disconnect", "code": code}

        async def guarded_receive() -> Message:
            try:
                message = await asyncio.wait_for(receive(), idle)
            except asyncio.TimeoutError:
                return await close(1008, f"idle for {idle:g} s")
            if message["type"] == "websocket.receive":
                data = message.get("text") or message.get("bytes") or b""
                if len(data) > cap:
                    return await close(1009, f"a message passes {cap} bytes")
            return message

        async def guarded_send(message: Message) -> None:
            if not closed:  # after our close the app's own close has nothing left to close
                await send(message)

        await self.app(scope, guarded_receive, guarded_send)


def guarded_h11(limits: Limits) -> type[H11Protocol]:
    """uvicorn's ``H11Protocol`` (pass it as ``uvicorn.Config(http=...)``) with at most
    ``limits.max_connections_per_client`` open connections per client address (one more gets a
    429 and is closed), and :data:`HEAD_TIMEOUT_S` for each request head: a connection that has
    not sent a whole head that long after opening, or after the first byte following a
    response, is closed (a WebSocket, once upgraded, is the Guard's)."""
    cap = limits.max_connections_per_client
    open_by_client: dict[str, set[asyncio.Transport]] = {}

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            for other, transports in list(open_by_client.items()):
                live = {t for t in transports if not t.is_closing()}
                if live:
                    open_by_client[other] = live
                else:
                    del open_by_client[other]
            host = self.client[0] if self.client else "unknown"
            live = open_by_client.get(host, set())
            if len(live) >= cap:
                body = json.dumps({"detail": f"at most {cap} connections per client"}).encode()
                transport.write(
                    b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
                    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
                )
                transport.close()
            else:
                open_by_client[host] = live | {transport}
                self._arm()

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:
                self._arm()
            super().data_received(data)

        def _arm(self) -> None:
            if self._deadline is None:
                started = self.cycle
                self._deadline = self.loop.call_later(HEAD_TIMEOUT_S, self._expire, started)

        def _expire(self, started: Any) -> None:
            self._deadline = None
            if self.transport.get_protocol() is not self or self.transport.is_closing():
                return  # upgraded to a WebSocket, or gone
            if self.cycle is not started and self.cycle is not None:
                return  # a head arrived in time
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            super().connection_lost(exc)

    return GuardedH11Protocol
