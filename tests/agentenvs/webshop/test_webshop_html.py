"""WebShop's HTML pages: rendering a page and reading its visible text back gives the text env's
observation, for every page kind (docs/webshop.md, "Pages and actions")."""

from __future__ import annotations

import random

import pytest

from agentenvs.webshop.html import html_clickables, html_nodes, render_page
from agentenvs.webshop.pages import PageView, to_text, to_text_rich
from agentenvs.webshop.shop import Shop

DRESS_QUERY = "shein women's sexy one shoulder sleeveless cutout mini club pencil bodycon dress"


@pytest.fixture(scope="module")
def shop(webshop_fixture_dir):
    return Shop.load(webshop_fixture_dir, None, False, True)  # with the Attributes sub-page


def views_of_every_kind(shop) -> dict[str, PageView]:
    session = shop.new_session(404)
    views = {"search": session.view()}
    session.act(f"search[{DRESS_QUERY}]")
    views["results page 1"] = session.view()
    session.act("click[next >]")
    views["results page 2"] = session.view()
    session.act("click[< prev]")
    session.act("click[b08zrr3dzt]")
    views["item"] = session.view()
    session.act("click[black]")
    views["item, black selected"] = session.view()
    for sub_page in ("description", "features", "reviews", "attributes"):
        session.act(f"click[{sub_page}]")
        views[sub_page] = session.view()
        session.act("click[< prev]")
    session.act("click[small]")
    session.act("click[buy now]")
    views["done"] = session.view()
    return views


@pytest.mark.parametrize(
    "kind",
    ["search", "results page 1", "results page 2", "item", "item, black selected", "description",
     "features", "reviews", "attributes", "done"],
)  # fmt: skip
def test_html_reads_back_as_the_text_observation(shop, kind):
    from agentenvs.webshop.pages import clickables, page_nodes

    view = views_of_every_kind(shop)[kind]
    html = render_page(view, session_id="s1")
    nodes = page_nodes(view)
    assert html_nodes(html) == nodes
    assert to_text(html_nodes(html)) == to_text(nodes)
    assert to_text_rich(html_nodes(html)) == to_text_rich(nodes)
    assert html_clickables(html) == clickables(nodes)


def test_dom_hooks(shop):
    views = views_of_every_kind(shop)
    search = render_page(views["search"])
    assert 'id="search_input" name="search_query"' in search and "<h2>WebShop</h2>" in search
    assert 'id="instruction-text"><h4>Instruction: <br>Find me' in search
    results = render_page(views["results page 1"], session_id="s1")
    assert (
        '<a class="product-link" href="/s1/act?action=click%5Bb08zrr3dzt%5D">B08ZRR3DZT</a>'
        in results
    )
    item = render_page(views["item, black selected"], session_id="s1")
    assert 'type="radio"' in item and 'value="black" checked' in item
    assert 'id="product-image"' in item


def test_random_walks_agree_on_every_page(shop):
    rng = random.Random(0)
    pages = 0
    for _ in range(40):
        session = shop.new_session(rng.randrange(len(shop.goals)))
        while not session.done and pages < 600:
            html = render_page(session.view())
            assert to_text(html_nodes(html)) == to_text(session.nodes())
            assert to_text_rich(html_nodes(html)) == to_text_rich(session.nodes())
            assert html_clickables(html) == session.clickables()
            pages += 1
            actions = [f"click[{c}]" for c in session.clickables() if c != "search"]
            actions += [f"search[{rng.choice(['dress', session.goal.query, 'red shoes'])}]"]
            session.act(rng.choice(actions))
            if rng.random() < 0.07:
                break
    assert pages > 300


def test_markup_in_product_text_is_escaped_and_read_back():
    from agentenvs.webshop.catalog import Product

    product = Product(
        "B0ESCAPE01", "Mug <b>&amp; 'Cup' \"X\"</b>", "<script>alert(1)</script> text", (" a < b ",),
        "$1.0", (1.0,), {"size": ["<small>"]}, ("x",), "c", "q", "p",
    )  # fmt: skip
    for view in (
        PageView("item", "find <i>", product=product, options={"size": "<small>"}),
        PageView("item_sub_page", "i", product=product, sub_page="description"),
        PageView("item_sub_page", "i", product=product, sub_page="features"),
    ):
        from agentenvs.webshop.pages import page_nodes

        html = render_page(view)
        assert "<script>alert" not in html
        assert html_nodes(html) == page_nodes(view)


def test_the_env_html_mode_is_the_rendered_page(webshop_fixture_dir):
    from agentenvs.webshop.env import WebShopEnv

    env = WebShopEnv(data_path=webshop_fixture_dir, observation_mode="html", action_format="plain")
    obs, _ = env.reset(options={"task_id": "goal-404"})
    obs, *_ = env.step("search[dress]")
    assert obs.startswith("<!DOCTYPE html>") and to_text(html_nodes(obs)) == env.page_text()
