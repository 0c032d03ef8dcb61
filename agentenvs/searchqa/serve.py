"""The retrieval server: any :class:`~agentenvs.searchqa.retrieval.Retriever` behind Search-R1's
``POST /retrieve`` API, on a loopback port, with micro-batching.

This module holds :class:`RetrievalServer` and the command line
``python -m agentenvs.searchqa.serve [--corpus PATH] [--retriever bm25|dense] [--host 127.0.0.1]
[--port 8000] [--max-batch 64]``, which prints one line with the URL and serves until Ctrl-C
(or SIGTERM). The corpus defaults to :func:`~agentenvs.searchqa.corpus.load_corpus` (the
embedded Wikipedia passages unless ``$AGENTENVS_SEARCH_CORPUS`` names a JSONL file).

Endpoints (stdlib :mod:`http.server` handlers, HTTP/1.0, no per-request log lines). One accept
thread reads every connection's request with a selector (no thread per connection), so idle
or half-sent connections cost a socket and their bytes: a request must arrive whole within
``request_timeout_s`` (:data:`REQUEST_TIMEOUT_S`, 10 s) of connecting, and at most
:data:`MAX_WAITING` (512) connections holding at most :data:`MAX_WAITING_BYTES` (64 MiB) wait to
send theirs (past either, the oldest is closed with a 408).
Whole requests are answered on at most :data:`MAX_CONNECTIONS` (64) threads at once, the rest
in arrival order.

* ``POST /retrieve``: request ``{"queries": [str, ...], "topk": k, "return_scores": bool}`` or
  ``{"query": str, "topk": k, "return_scores": bool}`` (``topk`` defaults to 3, at most
  :data:`~agentenvs.searchqa.retrieval.MAX_TOPK`; ``return_scores`` to false). Response
  ``{"result": [[{"document": {"id": str, "contents": str}, "score": float}, ...], ...]}``, one
  list per query, best first; without scores each entry is the bare ``{"id", "contents"}``.
* ``GET /health``: ``{"status": "ok", "retriever": <class name>, "requests": n, "batches": n,
  "max_batch": n}``.
* Errors are JSON ``{"error": message}``, for every request the server can read a request line
  from: 400 bad JSON (nested too deeply included), a bad request shape or a malformed request
  line (an unsupported HTTP version included), 404 an unknown path, 405 a wrong method, 408 a
  request not sent whole within ``request_timeout_s`` of connecting, 411 no ``Content-Length``,
  413 too large (below), 500 when the retriever itself raises (the server keeps serving), 503
  while stopping.

Limits (each over-limit request gets a 413 naming the limit; split the batch):

* :data:`MAX_BODY_BYTES` (1 MiB): the request body.
* :data:`MAX_RESULTS` (10,000): ``len(queries) * topk`` of one request, checked before any
  retrieval.
* :data:`MAX_QUERY_CHARS` (4,096): one query (a single query cannot be split between calls).
* :data:`MAX_RESPONSE_BYTES` (8 MiB): the encoded response (long passages), checked while it is
  encoded, one query's row at a time, so no larger body is ever built.
* :data:`MAX_CONNECTIONS` (64): whole requests answered at once; more wait until one finishes
  (served in arrival order, not refused).
* :data:`MAX_WAITING` (512) and :data:`MAX_WAITING_BYTES` (64 MiB): connections still sending
  their requests, and the bytes they hold.

Together they bound the memory a burst of clients can pin (the abuse test in
``tests/agentenvs/searchqa/test_searchqa_server.py`` states the figure).

Micro-batching, fair between requests: handler threads queue their requests; one worker thread
takes the queue and, while other connections are still being read, waits for them up to
``max_wait_s`` after the oldest arrived (a lone client is answered at once). It then makes one
``retriever.retrieve(queries, largest_topk)`` call, and encodes the rows of its answers, for at
most ``max_batch`` queries and at most :data:`CALL_COST` units of work (the characters of its
queries plus :data:`HIT_COST` per passage asked for, ``largest_topk`` a query; the first query
always goes), least served first: the queued requests are taken in the order
of the work handed out to each so far (ties in arrival order), each giving up to
``max_batch // len(queue)`` (at least one) of its next queries. A large batch is thus answered
in chunks, and a small request that arrives meanwhile goes first in the next call: it waits for
one call, not for the whole batch (nor for every other client's next chunk). Each request gets
its own rows, cut to its own ``topk``. Concurrent env workers thus share one batched encode
(dense) or one pass (BM25) instead of queueing for the retriever one by one. The retriever is only ever called from the worker thread, so it need not
be thread-safe.

Only loopback addresses are served (``127.0.0.1``, ``::1``, ``localhost``): the API has no
authentication.

The limits and the HTTP server and handler live in :mod:`agentenvs.searchqa.serve_http`; this
module re-exports the limits.

>>> from agentenvs.searchqa.corpus import Corpus
>>> from agentenvs.searchqa.remote import RemoteRetriever
>>> from agentenvs.searchqa.retrieval import Hit
>>> class Echo:
...     def retrieve(self, queries, topk):
...         return [[Hit(str(i), f'"{q}"', 1.0 / (i + 1)) for i in range(topk)] for q in queries]
>>> with RetrievalServer(Echo()) as server:
...     hits = RemoteRetriever(server.url).retrieve(["tea", "mug"], topk=2)
>>> [[(h.id, h.contents, h.score) for h in row] for row in hits]
[[('0', '"tea"', 1.0), ('1', '"tea"', 0.5)], [('0', '"mug"', 1.0), ('1', '"mug"', 0.5)]]
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from agentenvs.searchqa.retrieval import Retriever, parse_request
from agentenvs.searchqa.serve_http import (
    CALL_COST,
    HIT_COST,
    LOOPBACK_HOSTS,
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    MAX_QUERY_CHARS,
    MAX_RESPONSE_BYTES,
    MAX_RESULTS,
    MAX_WAITING,
    MAX_WAITING_BYTES,
    REQUEST_TIMEOUT_S,
    Gate,
    Handler,
    Pending,
    RequestError,
    Server,
    Server6,
    check_size,
)

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
    "RetrievalServer",
    "main",
]

_HANDLER_JOIN_S = 5.0


class RetrievalServer:
    """``retriever`` behind ``POST /retrieve`` on ``host:port`` (see the module docstring).

    Args:
        retriever: any :class:`~agentenvs.searchqa.retrieval.Retriever`; it is called from one
            worker thread only.
        host: ``127.0.0.1`` (default), ``::1`` or ``localhost``; anything else is a ``ValueError``.
        port: the TCP port; 0 (default) picks a free one (see :attr:`port`, :attr:`url`).
        max_batch: the most queries merged into one ``retrieve`` call.
        max_wait_s: the longest (seconds) the worker waits after a request arrives for others
            to merge with it; it waits only while other requests are on their way in (their
            heads read, their bodies not yet).
        request_timeout_s: seconds a client has, from connecting, to send its whole request
            (408 past it).

    The socket is bound on construction; :meth:`start` serves in background threads,
    :meth:`stop` shuts everything down (also as a context manager). Attributes: ``retriever``,
    ``host``, ``port``, ``requests`` and ``batches`` (``/retrieve`` requests answered by the
    worker, and ``retrieve`` calls made).
    """

    def __init__(
        self,
        retriever: Retriever,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_batch: int = 64,
        max_wait_s: float = 0.002,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        if host not in LOOPBACK_HOSTS:
            raise ValueError(
                f"the retrieval server only binds loopback hosts {LOOPBACK_HOSTS}, not {host!r}"
            )
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        if max_wait_s < 0:
            raise ValueError(f"max_wait_s must be >= 0, not {max_wait_s}")
        if request_timeout_s <= 0:
            raise ValueError(f"request_timeout_s must be > 0, not {request_timeout_s}")
        self.retriever = retriever
        self.max_batch = int(max_batch)
        self.max_wait_s = float(max_wait_s)
        self.requests = 0
        self.batches = 0
        self._lock = threading.Lock()  # guards the state below and the counters
        self._ready = threading.Condition(self._lock)  # a request queued, or one less arriving
        self._pending: deque[Pending] = deque()
        self._arriving = 0  # requests whose head is read, not yet queued
        self._closing = False
        self._started = False
        self._stopped = False
        self._handlers: set[threading.Thread] = set()
        self._threads: list[threading.Thread] = []
        # The gate builds each Handler from an arrival itself; the server never calls the class.
        if host == "::1":
            self._httpd: Server = Server6(("::1", port), Handler, bind_and_activate=False)  # type: ignore[arg-type]
        else:
            self._httpd = Server(("127.0.0.1", port), Handler, bind_and_activate=False)  # type: ignore[arg-type]
        self._httpd.owner = self
        try:
            self._httpd.server_bind()
            self._httpd.server_activate()
        except BaseException:
            self._httpd.server_close()
            raise
        self._gate = Gate(self._httpd, float(request_timeout_s))
        self.host = "::1" if host == "::1" else "127.0.0.1"
        self.port: int = self._httpd.server_address[1]

    def __repr__(self) -> str:
        state = "serving" if self._started and not self._stopped else "stopped"
        return f"RetrievalServer({type(self.retriever).__name__}, {self.url}, {state})"

    @property
    def url(self) -> str:
        """The ``/retrieve`` endpoint, e.g. ``http://127.0.0.1:8000/retrieve``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/retrieve"

    def health(self) -> dict[str, Any]:
        """The ``GET /health`` body."""
        return {
            "status": "ok",
            "retriever": type(self.retriever).__name__,
            "requests": self.requests,
            "batches": self.batches,
            "max_batch": self.max_batch,
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> RetrievalServer:
        """Serve in background threads; returns ``self``."""
        with self._lock:
            if self._started or self._stopped:
                raise RuntimeError("a RetrievalServer can be started once")
            self._started = True
        self._threads = [
            threading.Thread(target=self._work, name="retrieval-server-worker", daemon=True),
            threading.Thread(target=self._gate.run, name="retrieval-server-accept", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, answer what was queued, join the threads, close the socket."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            started = self._started
        if started:
            self._gate.stop()  # no new connections; those still sending get 503
        with self._ready:
            self._closing = True  # requests still being read get 503; queued ones are answered
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()
        with self._lock:
            handlers = list(self._handlers)
        deadline = time.monotonic() + _HANDLER_JOIN_S
        for thread in handlers:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._httpd.server_close()
        self._gate.close()

    def __enter__(self) -> RetrievalServer:
        if not self._started:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self, thread: threading.Thread) -> None:
        with self._lock:
            self._handlers = {t for t in self._handlers if t.is_alive()}
            self._handlers.add(thread)

    # -- requests ----------------------------------------------------------------------------

    def _arrival(self, request: Any, change: int) -> None:
        """Count ``request`` (a gate arrival or a handler, with an ``arriving`` flag) in or out
        of the requests on their way in; out only once."""
        with self._ready:
            if change < 0:
                if not request.arriving:
                    return
                request.arriving = False
                self._ready.notify_all()
            self._arriving += change

    def _answer(self, body: Any, handler: Handler) -> list[bytes]:
        """The encoded response for a parsed ``/retrieve`` request (runs in a handler thread)."""
        try:
            queries, topk, return_scores = parse_request(body)
        except ValueError as err:
            raise RequestError(400, str(err)) from None
        check_size(queries, topk)
        pending = Pending(queries, topk, return_scores)
        if not queries:
            return pending.body()
        with self._ready:
            if self._closing:
                raise RequestError(503, "the server is stopping")
            self._pending.append(pending)
            if handler.arriving:
                handler.arriving = False
                self._arriving -= 1
            self._ready.notify_all()
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        return pending.body()

    def _next_batch(self) -> list[tuple[Pending, int, int]] | None:
        """The slices to answer in the next call (``None``: stopped and nothing left)."""
        with self._ready:
            while not self._pending:
                if self._closing:
                    return None
                self._ready.wait()
            # Wait for more only while other requests are on their way in, and not past
            # max_wait_s after the oldest arrived.
            deadline = self._pending[0].arrived + self.max_wait_s
            while (
                self._arriving > 0
                and not self._closing
                and sum(item.left for item in self._pending) < self.max_batch
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._ready.wait(remaining)
            return self._take_round()

    def _take_round(self) -> list[tuple[Pending, int, int]]:
        """``(request, start, stop)`` slices for one call (lock held): least served first.

        Requests are visited by the work handed out to them so far (ties: in arrival order); each
        gives up to ``max_batch // len(queue)`` (at least one) of its next queries, until
        ``max_batch`` queries or :data:`CALL_COST` (the first query always goes)."""
        share = max(1, self.max_batch // len(self._pending))
        batch: list[tuple[Pending, int, int]] = []
        size = chars = topk = 0
        for item in sorted(self._pending, key=lambda pending: pending.served):
            want = min(item.left, share)
            take = 0
            while take < want and size < self.max_batch:
                query = item.queries[item.cursor + take]
                top = max(topk, item.topk)
                if size and chars + len(query) + (size + 1) * top * HIT_COST > CALL_COST:
                    break
                size, chars, topk, take = size + 1, chars + len(query), top, take + 1
                item.served += len(query) + item.topk * HIT_COST
            if take:
                batch.append((item, item.cursor, item.cursor + take))
                item.cursor += take
                if not item.left:
                    self._pending.remove(item)
            if take < want:  # the call is full
                break
        return batch

    def _work(self) -> None:
        """The worker thread: answer batches until stopped and drained."""
        while (batch := self._next_batch()) is not None:
            self._run(batch)

    def _run(self, batch: list[tuple[Pending, int, int]]) -> None:
        """One ``retrieve`` call for ``batch``'s slices, their rows encoded here (all the heavy
        work stays in this thread, scheduled fairly); a request whose last slice this is (or
        that failed: its other slices are dropped) is answered."""
        queries = [q for item, start, stop in batch for q in item.queries[start:stop]]
        try:
            results = self.retriever.retrieve(queries, max(item.topk for item, _, _ in batch))
            if len(results) != len(queries):
                raise RuntimeError(f"{len(results)} result lists for {len(queries)} queries")
            offset = 0
            for item, start, stop in batch:
                for row in results[offset : offset + stop - start]:
                    if item.error is None:
                        item.add_row(row)
                offset += stop - start
        except Exception as err:  # noqa: BLE001 - any retriever failure becomes a 500
            error = RequestError(500, f"the retriever failed: {type(err).__name__}: {err}")
            for item, _, _ in batch:
                item.error = error
        finished = [
            item for item, _, _ in batch if item.error or len(item.rows) == len(item.queries)
        ]
        with self._lock:
            self.batches += 1
            self.requests += len(finished)
            for item in finished:
                if item in self._pending:  # a failed request's remaining slices
                    self._pending.remove(item)
        for item in finished:
            item.done.set()


# -- command line ----------------------------------------------------------------------------


def _make_retriever(kind: str, corpus_path: str | None, device: str | None) -> Retriever:
    from agentenvs.searchqa.corpus import load_corpus

    corpus = load_corpus(corpus_path)
    if kind == "dense":
        from agentenvs.searchqa.dense import DenseRetriever

        return DenseRetriever(corpus, device=device)
    from agentenvs.searchqa.bm25 import BM25Retriever

    return BM25Retriever(corpus)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentenvs.searchqa.serve``: serve a retriever until Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m agentenvs.searchqa.serve",
        description="Serve SearchQA retrieval over HTTP (Search-R1's POST /retrieve API).",
    )
    parser.add_argument(
        "--corpus", help="a JSONL corpus (default: $AGENTENVS_SEARCH_CORPUS or the embedded one)"
    )
    parser.add_argument("--retriever", choices=("bm25", "dense"), default="bm25")
    parser.add_argument("--host", default="127.0.0.1", choices=LOOPBACK_HOSTS)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-batch", type=int, default=64, help="queries per retrieve call")
    parser.add_argument("--device", default=None, help="torch device for --retriever dense")
    args = parser.parse_args(argv)
    retriever = _make_retriever(args.retriever, args.corpus, args.device)
    server = RetrievalServer(retriever, host=args.host, port=args.port, max_batch=args.max_batch)
    stopped = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    server.start()
    corpus = getattr(retriever, "corpus", None)
    print(f"serving {server.url} ({args.retriever} over {corpus!r})", flush=True)
    try:
        while not stopped.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
