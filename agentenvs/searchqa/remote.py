"""A retriever that asks a running ``/retrieve`` server: ours (:mod:`agentenvs.searchqa.serve`) or
Search-R1's (``retrieval_server.py``, which SkyRL / verl-agent also use).

This module holds :class:`RemoteRetriever`. Each :meth:`~RemoteRetriever.retrieve` call is one
HTTP ``POST`` of ``{"queries": [...], "topk": k, "return_scores": true}`` (stdlib
:mod:`http.client`, the layer under :mod:`urllib`; no extra dependency); the response is read
with :func:`~agentenvs.searchqa.retrieval.parse_response`. Several URLs are used round-robin, one
per call (as verl-agent spreads its search calls). Every failure (connection refused, an HTTP
error status, no complete answer within ``timeout`` seconds, a body that is not the
``/retrieve`` shape) raises ``RuntimeError("search server <url>: <reason>")``, which the env
reports to the agent as a search error. ``timeout`` bounds the whole call, not each socket read:
a watchdog shuts the socket down when it expires.

>>> retriever = RemoteRetriever(["http://127.0.0.1:8000/retrieve", "http://127.0.0.1:8001/retrieve"])
>>> retriever
RemoteRetriever(['http://127.0.0.1:8000/retrieve', 'http://127.0.0.1:8001/retrieve'], timeout=60.0)
"""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import threading
import urllib.parse
from collections.abc import Sequence

from agentenvs.searchqa.retrieval import Hit, parse_response

__all__ = ["RemoteRetriever"]


class RemoteRetriever:
    """A :class:`~agentenvs.searchqa.retrieval.Retriever` backed by ``POST /retrieve`` servers.

    Args:
        url: the full endpoint (``http://host:port/retrieve``), or a sequence of them used
            round-robin.
        timeout: the most seconds one call may take (connecting, sending, reading the answer).

    Thread-safe: concurrent calls each pick the next URL.
    """

    def __init__(self, url: str | Sequence[str], *, timeout: float = 60.0) -> None:
        urls = [url] if isinstance(url, str) else list(url)
        if not urls or not all(isinstance(u, str) and u for u in urls):
            raise ValueError("RemoteRetriever needs at least one URL (a non-empty string)")
        for u in urls:
            if not u.startswith(("http://", "https://")):
                raise ValueError(f"not an http(s) URL: {u!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self.urls: tuple[str, ...] = tuple(urls)
        self.timeout = float(timeout)
        self._next = itertools.cycle(self.urls)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        shown = self.urls[0] if len(self.urls) == 1 else list(self.urls)
        return f"RemoteRetriever({shown!r}, timeout={self.timeout})"

    def _pick(self) -> str:
        with self._lock:
            return next(self._next)

    def _post(self, url: str, body: bytes) -> tuple[int, bytes]:
        """``(status, body)`` of ``POST url``, within ``timeout`` seconds in all."""
        parts = urllib.parse.urlsplit(url)
        connection_class = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        expired = threading.Event()
        try:
            connection = connection_class(parts.hostname or "", parts.port, timeout=self.timeout)
        except (ValueError, http.client.HTTPException) as err:
            raise RuntimeError(f"search server {url}: {err}") from None

        def abort() -> None:
            expired.set()
            sock = connection.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        watchdog = threading.Timer(self.timeout, abort)
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.request(
                "POST",
                path,
                body=body,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
            )
            response = connection.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as err:
            if expired.is_set() or isinstance(err, TimeoutError):
                reason = f"no answer within {self.timeout:g} s"
            else:
                reason = str(getattr(err, "strerror", None) or err) or type(err).__name__
            raise RuntimeError(f"search server {url}: {reason}") from None
        finally:
            watchdog.cancel()
            connection.close()
            watchdog.join()  # leaves no timer thread behind

    def retrieve(self, queries: Sequence[str], topk: int) -> list[list[Hit]]:
        """The server's ``topk`` best passages of each query, best first, with scores."""
        queries = list(queries)
        if not queries:
            return []
        url = self._pick()
        payload = {"queries": queries, "topk": int(topk), "return_scores": True}
        status, raw = self._post(url, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        if status != 200:
            raise RuntimeError(f"search server {url}: HTTP {status} {_error_text(raw)}")
        try:
            results = parse_response(json.loads(raw))
        except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise RuntimeError(f"search server {url}: malformed response ({err})") from None
        if len(results) != len(queries):
            raise RuntimeError(
                f"search server {url}: {len(results)} result lists for {len(queries)} queries"
            )
        return results


def _error_text(raw: bytes) -> str:
    """The ``error`` of a JSON error body, else its first 200 characters."""
    try:
        message = json.loads(raw).get("error")
        if isinstance(message, str):
            return message
    except (ValueError, AttributeError):
        pass
    return raw[:200].decode("utf-8", "replace").strip()
