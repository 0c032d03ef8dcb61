"""What each WebShop page shows, and the agent's text views of it.

This module holds :class:`PageView` (the data of one page: its kind, the instruction, the results,
the product, the selected options, the purchase), :class:`Node` (one visible text node of the page,
with the role its HTML element gives it), :func:`page_nodes` (the nodes in page order),
:func:`clickables` (the labels an agent may click, in WebShop's order), and the observation
formats :func:`to_text` (``text``: nodes joined by `` [SEP] ``) and :func:`to_text_rich`
(``text_rich``: one line per node with ``[button]`` marks).

The Flask app renders the same :class:`PageView` as HTML (:mod:`agentenvs.webshop.html`); reading
the visible text back from that HTML gives the same nodes (tests check it page by page), so the
text env, the web shop and the browser agree.

>>> view = PageView("search", "Find me a mug")
>>> to_text(page_nodes(view))
'WebShop [SEP] Instruction: [SEP] Find me a mug [SEP] Search'
>>> clickables(page_nodes(view))
['search']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentenvs.webshop.catalog import Product

__all__ = [
    "PAGE_KINDS",
    "SUB_PAGES",
    "PRODUCT_WINDOW",
    "PageView",
    "Node",
    "page_nodes",
    "option_marked",
    "clickables",
    "to_text",
    "to_text_rich",
]

#: Page kinds, in the order an episode meets them.
PAGE_KINDS = ("search", "results", "item", "item_sub_page", "done")
#: Item sub-pages (``attributes`` only when the shop shows attributes).
SUB_PAGES = ("description", "features", "reviews", "attributes")
#: Products per results page.
PRODUCT_WINDOW = 10


@dataclass(frozen=True)
class Node:
    """One visible text node: ``role`` is ``text``, ``button``, ``label`` (an option value) or
    ``link`` (a product asin); ``marked`` is a selected option value or a visited product."""

    text: str
    role: str = "text"
    marked: bool = False


@dataclass(frozen=True)
class PageView:
    """The data one page shows (``kind`` is one of :data:`PAGE_KINDS`).

    ``page`` counts from 1; ``results`` are the products of the shown results page; ``total`` the
    number of hits of the search; ``options`` the selected option name -> value (click order);
    ``visited`` the asins opened since the last search-page visit; ``score`` the purchase score.
    """

    kind: str
    instruction: str
    page: int = 1
    total: int = 0
    results: tuple[Product, ...] = ()
    product: Product | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub_page: str | None = None
    visited: frozenset[str] = frozenset()
    show_attrs: bool = False
    score: float | None = None


def _header(view: PageView) -> list[Node]:
    return [
        Node("Instruction:"),
        Node(view.instruction),
        Node("Back to Search", "button"),
    ]


def option_marked(view: PageView, value: str) -> bool:
    """Whether an option value shows as clicked: WebShop's test, ``"<value>"`` (quoted) occurs in
    the JSON of the selected options (so a value selected in one option marks it everywhere)."""
    return f'"{value}"' in json.dumps(view.options)


def _item(view: PageView, product: Product) -> list[Node]:
    nodes = [*_header(view), Node("< Prev", "button")]
    for name, values in product.options.items():
        nodes.append(Node(name))
        nodes.extend(Node(v, "label", option_marked(view, v)) for v in values)
    nodes += [
        Node(product.title),
        Node(f"Price: {product.price_text}"),
        Node(f"Rating: {product.rating}"),
        Node("Description", "button"),
        Node("Features", "button"),
        Node("Reviews", "button"),
    ]
    if view.show_attrs:
        nodes.append(Node("Attributes", "button"))
    nodes.append(Node("Buy Now", "button"))
    return nodes


def _sub_page(view: PageView, product: Product) -> list[Node]:
    nodes = [*_header(view), Node("< Prev", "button")]
    if view.sub_page == "description":
        if product.description:
            nodes.append(Node(product.description))
    elif view.sub_page == "features":
        nodes.extend(Node(b.strip()) for b in product.bullet_points if b.strip())
    elif view.sub_page == "attributes":
        nodes.extend(Node(a) for a in product.attributes)
        nodes += [Node(product.category), Node(product.query), Node(product.product_category)]
    return nodes  # reviews: WebShop ships no reviews


def _done(view: PageView, product: Product) -> list[Node]:
    options = json.dumps(view.options, sort_keys=True)
    texts = [
        "Thank you for shopping with us!", "Your code:", "None",
        "(Paste it in your MTurk interface.)", "Purchased", "asin", product.asin,
        "options", options, "attrs", "None", "category", "None", "query", "None",
        "product category", "None", "Target", "asin", "options", "attrs", "price upper",
        "instuction text", "category", "product category", "query", "Goal", "None", "Reward",
        "Your score (min 0.0, max 1.0)", str(view.score), "Reward Details", "None",
    ]  # fmt: skip
    return [Node(t) for t in texts]


def page_nodes(view: PageView) -> list[Node]:
    """The visible text nodes of the page, in page order (empty texts are not nodes)."""
    if view.kind == "search":
        nodes = [
            Node("WebShop"),
            Node("Instruction: "),
            Node(view.instruction),
            Node("Search", "button"),
        ]
    elif view.kind == "results":
        nodes = [*_header(view), Node(f"Page {view.page} (Total results: {view.total})")]
        if view.page > 1:
            nodes.append(Node("< Prev", "button"))
        nodes.append(Node("Next >", "button"))
        for p in view.results:
            nodes += [
                Node(p.asin, "link", p.asin in view.visited),
                Node(p.title),
                Node(p.price_text),
            ]
    elif view.kind == "item":
        nodes = _item(view, _product(view))
    elif view.kind == "item_sub_page":
        nodes = _sub_page(view, _product(view))
    elif view.kind == "done":
        nodes = _done(view, _product(view))
    else:
        raise ValueError(f"unknown page kind {view.kind!r}")
    return [n for n in nodes if n.text.strip()]


def _product(view: PageView) -> Product:
    if view.product is None:
        raise ValueError(f"a {view.kind} page needs a product")
    return view.product


def clickables(nodes: Sequence[Node]) -> list[str]:
    """What ``click[...]`` accepts on a page of ``nodes``: buttons, then product links, then option
    values (lower-cased labels; a value equal to a button label is one clickable)."""
    keys = [n.text.lower() for n in nodes if n.role == "button"]
    keys += [n.text.lower() for n in nodes if n.role == "link"]
    keys += [n.text for n in nodes if n.role == "label"]
    return list(dict.fromkeys(keys))


def to_text(nodes: Sequence[Node]) -> str:
    """The ``text`` observation: the stripped node texts joined by ``" [SEP] "``."""
    return " [SEP] ".join(n.text.strip() for n in nodes)


def to_text_rich(nodes: Sequence[Node]) -> str:
    """The ``text_rich`` observation: one line per node, clickables marked ``[button] .. [button_]``
    (``[clicked button]`` for a selected option or a visited product), and a
    ``You have clicked <value>.`` line in front for each selected option value."""
    lines: list[str] = []
    clicked: list[str] = []
    for n in nodes:
        if n.role == "button":
            lines.append(f"[button] {n.text} [button_]")
        elif n.role == "label":
            mark = "clicked button" if n.marked else "button"
            lines.append(f"  [{mark}] {n.text} [{mark}_]")
            if n.marked:
                clicked.insert(0, f"You have clicked {n.text}.\n")
        elif n.role == "link":
            mark = "clicked button" if n.marked else "button"
            lines.append(f"\n[{mark}] {n.text} [{mark}_]")
        else:
            lines.append(n.text)
    return "".join(clicked) + "".join(f"{line}\n" for line in lines)
