"""Tests of the retrieval server (agentenvs.searchqa.serve) and its client (agentenvs.searchqa.remote)."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("bm25s")

from agentenvs.searchqa import serve_http  # noqa: E402
from agentenvs.searchqa.bm25 import BM25Retriever  # noqa: E402
from agentenvs.searchqa.corpus import Corpus  # noqa: E402
from agentenvs.searchqa.remote import RemoteRetriever  # noqa: E402
from agentenvs.searchqa.retrieval import MAX_TOPK, Hit, parse_response  # noqa: E402
from agentenvs.searchqa.serve import MAX_BODY_BYTES, RetrievalServer  # noqa: E402

REPO = Path(__file__).resolve().parents[3]

PASSAGES = [
    ("Tea", "A hot drink made by pouring boiling water over cured leaves of the tea plant."),
    ("Coffee", "A brewed drink prepared from roasted coffee beans, the seeds of berries."),
    ("Mug", "A cup with a handle, used for hot drinks such as tea or coffee."),
    ("Pacific Ocean", "The largest and deepest of Earth's five oceanic divisions, salt water."),
    ("Atlantic Ocean", "The second-largest ocean, between the Americas and Europe and Africa."),
    ("Mount Everest", "Earth's highest mountain above sea level, in the Himalayas."),
    ("K2", "The second-highest mountain on Earth, in the Karakoram range."),
    ("Paris", "The capital and most populous city of France, on the Seine river."),
    ("Berlin", "The capital and largest city of Germany, on the Spree river."),
    ("Rome", "The capital city of Italy, founded according to legend by Romulus."),
    ("Albert Einstein", "German-born theoretical physicist who developed relativity theory."),
    ("Isaac Newton", "English mathematician and physicist, laws of motion and gravitation."),
    ("Marie Curie", "Polish-French physicist and chemist who researched radioactivity."),
    ("Python (programming language)", "A high-level programming language by Guido van Rossum."),
    ("C (programming language)", "A general-purpose programming language by Dennis Ritchie."),
    ("Jupiter", "The fifth planet from the Sun and the largest in the Solar System, a gas giant."),
    ("Mars", "The fourth planet from the Sun, called the Red Planet for its iron oxide dust."),
    ("Moon", "Earth's only natural satellite, orbiting at about 384,400 km."),
    ("Piano", "A keyboard musical instrument whose strings are struck by hammers."),
    ("Violin", "A bowed string instrument with four strings tuned in perfect fifths."),
    ("Football", "A team sport played with a ball between two teams of eleven players."),
    ("Chess", "A board strategy game for two players on a checkered board of 64 squares."),
    ("Amazon River", "The largest river by discharge volume of water, in South America."),
    ("Nile", "A major north-flowing river in northeastern Africa, flowing to the Mediterranean."),
    ("Sahara", "A desert spanning North Africa, the largest hot desert in the world."),
    ("Antarctica", "Earth's southernmost continent, containing the geographic South Pole."),
    ("Photosynthesis", "The process by which plants use light to turn carbon dioxide into sugar."),
    ("DNA", "A molecule of two polynucleotide chains carrying genetic instructions."),
    ("Shakespeare", "English playwright and poet, author of Hamlet and Romeo and Juliet."),
    ("Mozart", "Prolific Austrian composer of the Classical period, wrote The Magic Flute."),
]
QUERIES = [
    "hot drink",
    "highest mountain",
    "capital of France",
    "physicist relativity",
    "programming language",
    "planet from the Sun",
    "river in Africa",
    "string instrument",
    "board game",
    "largest desert",
    "genetic molecule",
    "playwright Hamlet",
    "ocean salt water",
    "composer",
    "zzz no such word",
]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    contents = tuple(f'"{title}"\n{text}' for title, text in PASSAGES)
    return Corpus(tuple(f"doc{i}" for i in range(len(contents))), contents, name="server-test")


@pytest.fixture(scope="module")
def bm25(corpus) -> BM25Retriever:
    return BM25Retriever(corpus, cache_dir=None)


@pytest.fixture(scope="module")
def server(bm25):
    with RetrievalServer(bm25) as srv:
        yield srv


class Counting:
    """A retriever wrapper that counts calls (and the queries of each), sleeping ``delay`` s."""

    def __init__(self, inner, delay: float = 0.0) -> None:
        self.inner, self.delay = inner, delay
        self.calls: list[int] = []
        self.lock = threading.Lock()

    def retrieve(self, queries, topk):
        with self.lock:
            self.calls.append(len(queries))
        if self.delay:
            time.sleep(self.delay)
        return self.inner.retrieve(queries, topk)


class Failing:
    """Raises for the query "boom", else answers like ``inner``."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def retrieve(self, queries, topk):
        if "boom" in queries:
            raise RuntimeError("index on fire")
        return self.inner.retrieve(queries, topk)


def request(url: str, body=None, *, method: str = "POST", path: str | None = None, raw=None):
    """``(status, decoded JSON body, headers)`` of one HTTP request to ``url``'s host."""
    parsed = http.client.urlsplit(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    headers = {"Content-Type": "application/json"} if data is not None else {}
    try:
        connection.request(method, path or parsed.path, body=data, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        return response.status, json.loads(payload), dict(response.getheaders())
    finally:
        connection.close()


def ids(results: list[list[Hit]]) -> list[list[str]]:
    return [[hit.id for hit in hits] for hits in results]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the wire format ----------------------------------------------------------------------------


@pytest.mark.parametrize("return_scores", [True, False])
def test_batch_form_equals_in_process(server, bm25, return_scores):
    status, body, headers = request(
        server.url, {"queries": QUERIES, "topk": 4, "return_scores": return_scores}
    )
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    expected = bm25.retrieve(QUERIES, 4)
    assert len(body["result"]) == len(QUERIES)
    for row, hits in zip(body["result"], expected, strict=True):
        if return_scores:
            assert row == [
                {"document": {"id": h.id, "contents": h.contents}, "score": h.score} for h in hits
            ]
        else:
            assert row == [{"id": h.id, "contents": h.contents} for h in hits]
    assert ids(parse_response(body)) == ids(expected)
    assert expected[0] and expected[-1] == []  # a real ranking, and a query matching nothing


@pytest.mark.parametrize("return_scores", [True, False])
def test_single_form_equals_in_process(server, bm25, return_scores):
    status, body, _ = request(
        server.url, {"query": "capital city", "topk": 2, "return_scores": return_scores}
    )
    assert status == 200
    (hits,) = bm25.retrieve(["capital city"], 2)
    assert [h.id for h in hits] == [h.id for h in parse_response(body)[0]]
    assert len(body["result"]) == 1 and len(body["result"][0]) == 2
    assert ("score" in body["result"][0][0]) is return_scores


def test_defaults_and_empty_batch(server, bm25):
    status, body, _ = request(server.url, {"query": "the largest planet"})
    assert status == 200
    assert body["result"] == [[h.document() for h in bm25.retrieve(["the largest planet"], 3)[0]]]
    assert len(body["result"][0]) == 3  # topk defaults to 3, scores off
    status, body, _ = request(server.url, {"queries": [], "topk": 2})
    assert (status, body) == (200, {"result": []})


def test_health(server):
    status, body, _ = request(server.url, method="GET", path="/health")
    assert status == 200
    assert body["status"] == "ok" and body["retriever"] == "BM25Retriever"


# --- the client ---------------------------------------------------------------------------------


def test_remote_equals_in_process(server, bm25):
    remote = RemoteRetriever(server.url, timeout=10)
    for topk in (1, 3, 50):
        got, expected = remote.retrieve(QUERIES, topk), bm25.retrieve(QUERIES, topk)
        assert got == [[Hit(h.id, h.contents, h.score) for h in hits] for hits in expected]
    assert remote.retrieve([], 3) == []


def test_round_robin_over_two_servers(bm25):
    first, second = Counting(bm25), Counting(bm25)
    with RetrievalServer(first) as a, RetrievalServer(second) as b:
        remote = RemoteRetriever([a.url, b.url])
        for query in QUERIES[:6]:
            assert ids(remote.retrieve([query], 2)) == ids(bm25.retrieve([query], 2))
    assert first.calls == [1, 1, 1] and second.calls == [1, 1, 1]


def test_concurrent_clients_are_batched(corpus, bm25):
    counting = Counting(bm25, delay=0.03)
    expected = {(q, k): ids(bm25.retrieve([q], k)) for q in QUERIES for k in (1, 2, 5)}
    errors: list[BaseException] = []
    wrong: list[tuple] = []
    with RetrievalServer(counting, max_batch=64, max_wait_s=0.01) as srv:
        remote = RemoteRetriever(srv.url, timeout=30)
        start = threading.Barrier(16)

        def client(n: int) -> None:
            try:
                start.wait()
                for j in range(4):
                    query, topk = QUERIES[(n + j) % len(QUERIES)], (1, 2, 5)[(n + j) % 3]
                    got = ids(remote.retrieve([query], topk))
                    if got != expected[(query, topk)]:
                        wrong.append((query, topk, got))
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert srv.requests == 64
    assert not errors and not wrong
    assert sum(counting.calls) == 64
    assert len(counting.calls) < 64 and max(counting.calls) > 1  # requests were merged


def test_waits_for_arriving_requests_but_not_for_a_lone_client(bm25):
    counting = Counting(bm25)
    with RetrievalServer(counting, max_wait_s=2.0) as srv:
        remote = RemoteRetriever(srv.url, timeout=10)
        for query in QUERIES[:3]:  # alone: answered at once, not after max_wait_s
            started = time.monotonic()
            assert ids(remote.retrieve([query], 2)) == ids(bm25.retrieve([query], 2))
            assert time.monotonic() - started < 1.0
        assert counting.calls == [1, 1, 1]
        # A second request is on its way in (headers sent, body not yet): the first waits for it.
        body = json.dumps({"query": "chess", "topk": 2}).encode()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as slow:
            slow.sendall(b"POST /retrieve HTTP/1.0\r\nContent-Length: %d\r\n\r\n" % len(body))
            time.sleep(0.2)
            answer: dict[str, list[list[str]]] = {}
            fast = threading.Thread(
                target=lambda: answer.setdefault("tea", ids(remote.retrieve(["tea"], 2)))
            )
            started = time.monotonic()
            fast.start()
            time.sleep(0.3)
            assert fast.is_alive()  # held back for the arriving request
            slow.sendall(body)
            fast.join(5)
            waited = time.monotonic() - started
            reply = b""
            while chunk := slow.recv(65536):
                reply += chunk
        assert 0.3 <= waited < 1.9
        assert answer["tea"] == ids(bm25.retrieve(["tea"], 2))
        payload = json.loads(reply.partition(b"\r\n\r\n")[2])
        assert [d["id"] for d in payload["result"][0]] == ids(bm25.retrieve(["chess"], 2))[0]
    assert counting.calls == [1, 1, 1, 2]  # the two were answered by one call


def test_max_batch_bounds_each_call(bm25):
    counting = Counting(bm25, delay=0.02)
    with RetrievalServer(counting, max_batch=4, max_wait_s=0.05) as srv:
        remote = RemoteRetriever(srv.url)
        results: dict[int, list[list[str]]] = {}

        def client(n: int) -> None:
            results[n] = ids(remote.retrieve(QUERIES[n : n + 3], 2))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        # A request bigger than max_batch is answered in max_batch chunks.
        before = len(counting.calls)
        assert ids(remote.retrieve(QUERIES, 1)) == ids(bm25.retrieve(QUERIES, 1))
    assert results == {n: ids(bm25.retrieve(QUERIES[n : n + 3], 2)) for n in range(6)}
    assert max(counting.calls) <= 4 and counting.calls[before:] == [4, 4, 4, 3]


def test_a_small_query_does_not_wait_behind_a_large_batch(bm25):
    counting = Counting(bm25, delay=0.05)  # 50 ms a call: the 400-query batch takes 50 calls
    with RetrievalServer(counting, max_batch=8) as srv:
        remote = RemoteRetriever(srv.url, timeout=60)
        big: dict[str, list[list[str]]] = {}
        batch = QUERIES * 27  # 405 queries
        thread = threading.Thread(
            target=lambda: big.setdefault("ids", ids(remote.retrieve(batch, 2)))
        )
        thread.start()
        while len(counting.calls) < 3:  # the batch is being served
            time.sleep(0.01)
        started = time.monotonic()
        assert ids(remote.retrieve(["tea"], 2)) == ids(bm25.retrieve(["tea"], 2))
        waited = time.monotonic() - started
        assert thread.is_alive()  # answered while the batch is still going
        thread.join(60)
    assert waited < 0.5  # one or two calls, not the ~2.5 s of the whole batch
    assert big["ids"] == ids(bm25.retrieve(batch, 2))
    assert 5 in counting.calls  # the small query shared a call: 4 of the batch's (8 // 2), itself


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "raw", "status"),
    [
        ("POST", "/retrieve", b"{not json", 400),
        ("POST", "/retrieve", b"\xff\xfe", 400),
        ("POST", "/retrieve", b"[1, 2]", 400),
        ("POST", "/retrieve", b'{"topk": 3}', 400),
        ("POST", "/retrieve", b'{"queries": "tea"}', 400),
        ("POST", "/retrieve", b'{"queries": ["tea", 5]}', 400),
        ("POST", "/retrieve", b'{"query": null}', 400),
        ("POST", "/retrieve", b'{"query": "tea", "topk": 0}', 400),
        ("POST", "/retrieve", b'{"query": "tea", "topk": -2}', 400),
        ("POST", "/retrieve", json.dumps({"query": "tea", "topk": MAX_TOPK + 1}).encode(), 400),
        ("POST", "/retrieve", b'{"query": "tea", "topk": true}', 400),
        ("POST", "/retrieve", b'{"query": "tea", "topk": 2.5}', 400),
        ("POST", "/search", b'{"query": "tea"}', 404),
        ("GET", "/", None, 404),
        ("GET", "/retrieve", None, 405),
        ("PUT", "/retrieve", b'{"query": "tea"}', 405),
        ("DELETE", "/retrieve", None, 405),
        ("POST", "/health", b"{}", 405),
    ],
)
def test_bad_requests_get_json_errors(server, bm25, method, path, raw, status):
    got, body, headers = request(server.url, method=method, path=path, raw=raw)
    assert got == status
    assert isinstance(body["error"], str) and body["error"]
    if status == 405:
        assert headers["Allow"] in ("GET", "POST")
    # ... and the server keeps serving.
    assert ids(RemoteRetriever(server.url).retrieve(["tea"], 2)) == ids(bm25.retrieve(["tea"], 2))


def test_oversize_body_is_413(server, bm25):
    big = json.dumps({"queries": ["tea " * 1000] * 300}).encode()
    assert len(big) > MAX_BODY_BYTES
    status, body, _ = request(server.url, raw=big)
    assert status == 413 and "at most" in body["error"]
    assert ids(RemoteRetriever(server.url).retrieve(["mug"], 1)) == ids(bm25.retrieve(["mug"], 1))


# --- idle and half-sent connections -------------------------------------------------------------


def test_200_slowloris_connections_leave_a_normal_query_its_latency(bm25):
    """200 connections hold still: 100 sent nothing, 100 half a request head. A normal query's
    median latency stays within 3x of (and 5 ms over) its median with none, every query under
    1 s (before the gate, 64 such connections made a query wait 60 s)."""
    with RetrievalServer(bm25) as srv:
        remote = RemoteRetriever(srv.url, timeout=10)

        def seconds() -> float:
            started = time.perf_counter()
            assert ids(remote.retrieve(["hot drink"], 2)) == ids(bm25.retrieve(["hot drink"], 2))
            return time.perf_counter() - started

        alone = sorted(seconds() for _ in range(30))
        idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=10) for _ in range(200)]
        try:
            for sock in idle[100:]:
                sock.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Le")
            loaded = sorted(seconds() for _ in range(30))
        finally:
            for sock in idle:
                sock.close()
    assert loaded[15] <= 3 * alone[15] + 0.005 and loaded[-1] < 1.0, (alone[15], loaded[15])


def test_a_request_not_sent_in_time_gets_408(bm25):
    with RetrievalServer(bm25, request_timeout_s=0.3) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
            started = time.monotonic()
            sock.sendall(b"POST /retrieve HTTP/1.0\r\nContent-Length: 50\r\n\r\n{")
            reply = sock.recv(4096)
            assert 0.25 < time.monotonic() - started < 2
        assert reply.startswith(b"HTTP/1.0 408") and b"0.3 s" in reply
        assert ids(RemoteRetriever(srv.url).retrieve(["tea"], 1)) == ids(bm25.retrieve(["tea"], 1))


@pytest.mark.parametrize("limit", ["MAX_WAITING", "MAX_WAITING_BYTES"])
def test_past_max_waiting_connections_the_oldest_is_closed(monkeypatch, bm25, limit):
    """5 connections send half a request of 100 KB each: past 4 waiting connections, or past
    400 KB held by them, the oldest is closed with a 408; a normal query is answered."""
    monkeypatch.setattr(serve_http, limit, 4 if limit == "MAX_WAITING" else 400_000)
    with RetrievalServer(bm25) as srv:
        socks = []
        try:
            for _ in range(5):
                socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
                socks[-1].sendall(b"POST /retrieve HTTP/1.0\r\nContent-Length: 200000\r\n\r\n")
                socks[-1].sendall(b" " * 100_000)
                time.sleep(0.05)  # read by the gate before the next one connects
            assert socks[0].recv(4096).startswith(b"HTTP/1.0 408")
            assert ids(RemoteRetriever(srv.url).retrieve(["mug"], 1)) == ids(
                bm25.retrieve(["mug"], 1)
            )
        finally:
            for sock in socks:
                sock.close()


def test_missing_content_length_is_411(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"POST /retrieve HTTP/1.0\r\nHost: x\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 411") and "error" in json.loads(payload)


def test_retriever_error_is_500_and_server_survives(bm25):
    with RetrievalServer(Failing(bm25), max_wait_s=0) as srv:
        status, body, _ = request(srv.url, {"queries": ["tea", "boom"]})
        assert status == 500 and "index on fire" in body["error"]
        remote = RemoteRetriever(srv.url)
        with pytest.raises(RuntimeError, match=r"HTTP 500 .*index on fire"):
            remote.retrieve(["boom"], 1)
        assert ids(remote.retrieve(["tea"], 2)) == ids(bm25.retrieve(["tea"], 2))
        assert srv.health()["batches"] == 3


def test_retriever_returning_too_few_lists_is_500(bm25):
    class Short:
        def retrieve(self, queries, topk):
            return bm25.retrieve(queries[:-1], topk)

    with RetrievalServer(Short()) as srv:
        status, body, _ = request(srv.url, {"queries": ["a", "b"]})
    assert status == 500 and "1 result lists for 2 queries" in body["error"]


def test_remote_to_closed_port_fails_fast():
    url = f"http://127.0.0.1:{free_port()}/retrieve"
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=re.escape(f"search server {url}: ")):
        RemoteRetriever(url, timeout=30).retrieve(["tea"], 3)
    assert time.monotonic() - started < 2


def test_remote_times_out_on_a_silent_server():
    # A listening socket that never accepts: the connection succeeds, no answer ever comes.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/retrieve"
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=r"no answer within 0.5 s"):
            RemoteRetriever(url, timeout=0.5).retrieve(["tea"], 3)
        assert 0.4 < time.monotonic() - started < 3


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"not json", "malformed response"),
        (b'{"results": []}', "malformed response"),
        (b'{"result": [[{"id": "1"}]]}', "malformed response"),
        (b'{"result": []}', "0 result lists for 1 queries"),
    ],
)
def test_remote_rejects_malformed_bodies(payload, match):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    with http.server.HTTPServer(("127.0.0.1", 0), Handler) as stub:
        thread = threading.Thread(target=stub.handle_request)
        thread.start()
        url = f"http://127.0.0.1:{stub.server_address[1]}/retrieve"
        with pytest.raises(RuntimeError, match=f"search server {re.escape(url)}: {match}"):
            RemoteRetriever(url, timeout=5).retrieve(["tea"], 1)
        thread.join(5)


def test_remote_rejects_bad_arguments():
    with pytest.raises(ValueError):
        RemoteRetriever([])
    with pytest.raises(ValueError):
        RemoteRetriever("127.0.0.1:8000/retrieve")
    with pytest.raises(ValueError):
        RemoteRetriever("http://127.0.0.1:8000/retrieve", timeout=0)


# --- lifecycle ----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "", "::"])
def test_non_loopback_host_is_refused(bm25, host):
    with pytest.raises(ValueError, match="loopback"):
        RetrievalServer(bm25, host=host)


def test_localhost_and_ipv6_loopback(bm25):
    with RetrievalServer(bm25, host="localhost") as srv:
        assert srv.url == f"http://127.0.0.1:{srv.port}/retrieve"
        assert ids(RemoteRetriever(srv.url).retrieve(["tea"], 1)) == ids(bm25.retrieve(["tea"], 1))
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        srv6 = RetrievalServer(bm25, host="::1")
    except OSError:
        pytest.skip("::1 cannot be bound here")
    with srv6:
        assert srv6.url == f"http://[::1]:{srv6.port}/retrieve"
        assert ids(RemoteRetriever(srv6.url).retrieve(["tea"], 1)) == ids(bm25.retrieve(["tea"], 1))


def test_stop_leaves_no_thread_and_frees_the_port(bm25):
    before = set(threading.enumerate())
    srv = RetrievalServer(Counting(bm25, delay=0.01), max_wait_s=0.005).start()
    assert len(set(threading.enumerate()) - before) >= 2  # the accept loop and the worker
    remote = RemoteRetriever(srv.url)
    threads = [threading.Thread(target=remote.retrieve, args=(["tea"], 2)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    srv.stop()
    assert set(threading.enumerate()) - before == set()
    srv.stop()  # idempotent
    with pytest.raises(RuntimeError):
        srv.start()
    with pytest.raises(RuntimeError, match="search server"):
        remote.retrieve(["tea"], 2)
    with socket.socket() as sock:  # the port is free again
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", srv.port))


def test_stop_without_start_closes_the_socket(bm25):
    srv = RetrievalServer(bm25)
    srv.stop()
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", srv.port))


def test_no_request_log_lines(bm25, capfd):
    with RetrievalServer(bm25) as srv:
        request(srv.url, {"query": "tea"})
        request(srv.url, raw=b"{bad")
        request(srv.url, method="GET", path="/nowhere")
    out, err = capfd.readouterr()
    assert out == "" and err == ""


# --- the command line ---------------------------------------------------------------------------


def test_cli_serves_a_corpus_file(tmp_path, corpus, bm25):
    path = tmp_path / "corpus.jsonl"
    corpus.write_jsonl(path)
    port = free_port()
    env = {**os.environ, "AGENTENVS_CACHE": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agentenvs.searchqa.serve", "--corpus", str(path)]
        + ["--port", str(port), "--max-batch", "8"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()  # blocks until the server prints its URL (or dies)
        match = re.search(r"http://\S+/retrieve", line)
        assert match, (line, process.stderr.read() if process.poll() is not None else "")
        url = match.group(0)
        assert url == f"http://127.0.0.1:{port}/retrieve"
        assert RemoteRetriever(url, timeout=10).retrieve(QUERIES, 3) == bm25.retrieve(QUERIES, 3)
        status, body, _ = request(url, method="GET", path="/health")
        assert status == 200 and body["max_batch"] == 8
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 0  # SIGTERM stops it cleanly
    assert (tmp_path / "cache" / "searchqa").is_dir()  # the BM25 index was cached there
