"""The WebShop Flask app: the page flow, isolated concurrent sessions, bad requests answered with
4xx (never 5xx) and refused actions leaving the page as it was."""

from __future__ import annotations

import random
import re
import threading

import pytest

pytest.importorskip("flask")

from agentenvs.webshop.app import create_app  # noqa: E402
from agentenvs.webshop.html import html_nodes  # noqa: E402
from agentenvs.webshop.pages import to_text  # noqa: E402
from agentenvs.webshop.shop import Shop  # noqa: E402

DRESS_QUERY = "shein women's sexy one shoulder sleeveless cutout mini club pencil bodycon dress"


@pytest.fixture(scope="module")
def app(webshop_fixture_dir):
    return create_app(Shop.load(webshop_fixture_dir), max_sessions=64)


def text_of(client, sid: str) -> str:
    response = client.get(f"/{sid}")
    assert response.status_code == 200
    return to_text(html_nodes(response.get_data(as_text=True)))


def test_page_flow_to_a_perfect_purchase(app):
    client = app.test_client()
    assert text_of(client, "fixed_404").startswith(
        "WebShop [SEP] Instruction: [SEP] Find me women's"
    )
    response = client.post("/fixed_404/act", data={"search_query": DRESS_QUERY})
    assert response.status_code == 303 and response.headers["Location"] == "/fixed_404"
    assert "B08ZRR3DZT" in text_of(client, "fixed_404")
    for action in ("click[b08zrr3dzt]", "click[black]", "click[small]"):
        assert client.get("/fixed_404/act", query_string={"action": action}).status_code == 303
    assert client.post("/fixed_404/act", data={"action": "click[buy now]"}).status_code == 303
    assert "Your score (min 0.0, max 1.0) [SEP] 1.0" in text_of(client, "fixed_404")
    state = client.get("/fixed_404/state.json").get_json()
    assert state["done"] and state["score"] == 1.0 and state["page"] == "done"
    assert state["score_parts"]["r_option"] == 1.0 and state["goal_index"] == 404


def test_index_opens_a_new_session_and_images_are_served(app):
    client = app.test_client()
    response = client.get("/")
    assert response.status_code == 303
    assert text_of(client, response.headers["Location"].lstrip("/")).startswith("WebShop")
    image = client.get("/images/B08ZRR3DZT.svg")
    assert image.status_code == 200 and image.mimetype == "image/svg+xml"


def test_refused_action_keeps_the_page_and_says_why(app):
    client = app.test_client()
    before = text_of(client, "fixed_3")
    response = client.post("/fixed_3/act", data={"action": "click[buy now]"})
    assert response.status_code == 200
    assert "not clickable" in response.headers["X-WebShop-Invalid"]
    assert (
        to_text(html_nodes(response.get_data(as_text=True))) == before == text_of(client, "fixed_3")
    )


def test_concurrent_sessions_are_isolated(app):
    client_errors: list[BaseException] = []
    registry = app.config["WEBSHOP_SESSIONS"]
    goals = list(range(50))

    def shopper(goal: int) -> None:
        client = app.test_client()
        sid = f"fixed_{goal}"
        try:
            query = registry.shop.goals[goal].query
            for _ in range(3):
                client.post(f"/{sid}/act", data={"search_query": query})
                client.post(f"/{sid}/act", data={"action": "click[next >]"})
            state = client.get(f"/{sid}/state.json").get_json()
            assert state["goal_index"] == goal and state["page"] == "results"
            assert registry.get(sid).page == 2 and registry.get(sid).search.keywords == query
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            client_errors.append(exc)

    threads = [threading.Thread(target=shopper, args=(g,)) for g in goals]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert client_errors == []


def test_close_and_eviction(webshop_fixture_dir):
    app = create_app(Shop.load(webshop_fixture_dir), max_sessions=3)
    client = app.test_client()
    for goal in range(5):
        client.get(f"/fixed_{goal}")
    registry = app.config["WEBSHOP_SESSIONS"]
    assert len(registry) == 3
    assert client.post("/fixed_4/close").status_code == 200 and len(registry) == 2
    assert client.delete("/fixed_3").status_code == 200 and len(registry) == 1
    assert client.post("/nobody/close").status_code == 404


def test_two_thousand_bad_requests_get_4xx_and_change_nothing(app):
    client = app.test_client()
    rng = random.Random(0)
    client.post("/fixed_7/act", data={"search_query": "dress"})
    pieces = ["click[", "]", "search[", "next >", "\u2603", "\U0001f600", "<script>", "%00", " "]
    for i in range(2_000):
        kind = i % 5
        before = text_of(client, "fixed_7")
        junk = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        if kind == 0:
            response = client.post("/fixed_7/act", data={"action": f"click[{junk}]"})
        elif kind == 1:
            response = client.post("/fixed_7/act", data={"action": "x" * 100_000 + junk})
        elif kind == 2:
            response = client.get(f"/{junk or 'x'}/act", query_string={"action": junk})
        elif kind == 3:
            response = client.put("/fixed_7/act", data={"action": junk})
        else:
            response = client.post("/fixed_7/act", data={"other": junk})
        assert response.status_code < 500, (kind, junk, response.status_code)
        if kind in (0, 1) and response.status_code == 200:
            assert text_of(client, "fixed_7") == before
    assert client.post("/fixed_7/act", data={"action": "x" * (2 << 20)}).status_code == 413


def test_a_long_run_of_brackets_is_refused_quickly(app):
    """The action syntax is parsed in linear time: 100 kB of ``[`` (quadratic for the regex
    ``(.+)\\[(.+)\\]``, about 30 s) is refused at once, and the page stays as it was."""
    import time

    from agentenvs.webshop.shop import parse_command

    client = app.test_client()
    before = text_of(client, "fixed_9")
    start = time.perf_counter()
    for junk in ("[" * 100_000, "click" + "[" * 50_000 + "]" * 50_000, "search[" * 20_000):
        assert client.post("/fixed_9/act", data={"action": junk}).status_code == 200
    assert time.perf_counter() - start < 5.0
    assert text_of(client, "fixed_9") == before
    rng = random.Random(0)  # the same answers as the regex's greedy match
    for _ in range(3_000):
        text = "".join(rng.choice("[]a \n") for _ in range(rng.randint(0, 12)))
        match = re.match(r"(.+)\[(.+)\]", text, re.DOTALL)
        expected = (
            (text.strip().lower(), None)
            if match is None
            else (match.group(1).strip().lower(), match.group(2).lower())
        )
        assert parse_command(text) == expected, text


def test_the_search_box_takes_any_text(app):
    client = app.test_client()
    assert client.post("/fixed_11/act", data={"search_query": "usb [type c]"}).status_code == 303
    assert app.config["WEBSHOP_SESSIONS"].get("fixed_11").search.keywords == "usb [type c]"
    response = client.post("/fixed_11/act", data={"search_query": "   "})
    assert response.status_code == 200 and "needs a query" in response.headers["X-WebShop-Invalid"]
