"""The web shop's logic: one catalogue, its search engine and goals, and the shoppers' sessions.

This module holds :class:`Shop` (read-only and shared: catalogue, goals, search index, title
nouns; :meth:`Shop.load` caches one per data set and process), :class:`Session` (one shopper's
state machine: which page, which search, which product and options, the purchase and its score)
and :func:`parse_command` (WebShop's ``search[...]`` / ``click[...]`` syntax).

Navigation (docs/webshop.md, "Pages"): ``search[query]`` works from every page and opens results
page 1; on a results page ``click[next >]``, ``click[< prev]`` (page > 1), ``click[back to search]``
and ``click[<asin>]`` (an asin shown on the page); on an item page an option value, the
``description`` / ``features`` / ``reviews`` (and ``attributes`` when shown) sub-pages,
``< prev`` (back to the results, forgetting the options), ``back to search`` and ``buy now``
(scores the purchase and ends the session); on a sub-page ``< prev`` (back to the item, options
kept) and ``back to search``. Anything else is refused and changes nothing.

>>> shop = Shop.load("embedded")
>>> session = shop.new_session(0)
>>> session.act("search[" + shop.goals[0].query + "]")
(True, '')
>>> session.act("click[buy now]")
(False, "'buy now' is not clickable on the results page")
"""

from __future__ import annotations

import os
import random
import string
import threading
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from agentenvs.webshop.catalog import Catalog, Product, load_catalog, search_text
from agentenvs.webshop.goals import Goal, canonical_goals
from agentenvs.webshop.pages import (
    PRODUCT_WINDOW,
    SUB_PAGES,
    Node,
    PageView,
    clickables,
    page_nodes,
    to_text,
)
from agentenvs.webshop.score import TitleNouns, purchase_score
from agentenvs.webshop.search import BM25Search

__all__ = ["SEARCH_RETURN_N", "MAX_QUERY_CHARS", "Shop", "Session", "parse_command"]

#: Hits a search returns (WebShop's ``SEARCH_RETURN_N``).
SEARCH_RETURN_N = 50
#: Characters of a search query that are kept (longer queries are cut; WebShop has no limit).
MAX_QUERY_CHARS = 2000


def parse_command(action: str) -> tuple[str, str | None]:
    """WebShop's action syntax: ``(name, argument)``; the argument is lower-cased, the name too.

    Anchored at the start, greedy, so text after the last ``]`` is ignored and an argument needs
    at least one character (``search[]`` has no argument).

    >>> parse_command("search[Red Shoes] please"), parse_command("click[]")
    (('search', 'red shoes'), ('click[]', None))
    """
    # WebShop's ``re.match(r"(.+)\[(.+)\]", action)`` (dot matching newlines) computed in linear
    # time (the regex backtracks quadratically on a long run of ``[``): the last ``]``, then the
    # last ``[`` at least two characters before it.
    close = action.rfind("]")
    start = action.rfind("[", 1, close - 1) if close > 0 else -1
    if start < 1:
        return action.strip().lower(), None
    return action[:start].strip().lower(), action[start + 1 : close].lower()


class Shop:
    """A catalogue with its goals and search index; shared by any number of sessions.

    Args:
        catalog: the processed products with their drawn prices.
        goals: the canonical goal list (index = task id).
        show_attrs: offer the ``Attributes`` sub-page (WebShop hides it).
        special_prefixes: WebShop's ``<r>`` (50 random products), ``<a>`` (by attribute),
            ``<c>`` (by category) and ``<q>`` (by scrape query) search prefixes; off by default.
        use_spacy: compute title nouns with spaCy when installed (for products without shipped
            noun lists); else the heuristic of :class:`~agentenvs.webshop.score.TitleNouns`.
    """

    def __init__(
        self,
        catalog: Catalog,
        goals: list[Goal],
        *,
        show_attrs: bool = False,
        special_prefixes: bool = False,
        use_spacy: bool = True,
    ) -> None:
        self.catalog = catalog
        self.goals = goals
        self.show_attrs = show_attrs
        self.special_prefixes = special_prefixes
        self.nouns = TitleNouns(catalog.title_nouns, use_spacy=use_spacy)
        self.engine = BM25Search(
            [p.asin for p in catalog.products], [search_text(p) for p in catalog.products]
        )
        self._random = random.Random(0)
        self._lock = threading.Lock()

    @staticmethod
    def load(
        data_path: str | None = None,
        num_products: int | None = None,
        human_goals: bool = False,
        show_attrs: bool = False,
        special_prefixes: bool = False,
    ) -> Shop:
        """The shop of a data set (see :func:`~agentenvs.webshop.catalog.load_catalog`), built once
        per process and argument set; ``None`` resolves ``$WEBSHOP_DATA`` before caching."""
        return _build(
            str(data_path or os.environ.get("WEBSHOP_DATA") or "embedded"),
            num_products,
            human_goals,
            show_attrs,
            special_prefixes,
        )

    def search(self, query: str) -> list[Product]:
        """The products a search returns, best first (at most :data:`SEARCH_RETURN_N`)."""
        query = query[:MAX_QUERY_CHARS]
        words = query.split(" ")
        if self.special_prefixes and words[0] in ("<r>", "<a>", "<c>", "<q>"):
            return self._special(words[0], " ".join(words[1:]).strip())
        return [self.catalog[a] for a in self.engine.search(query, SEARCH_RETURN_N)]

    def _special(self, prefix: str, rest: str) -> list[Product]:
        products = self.catalog.products
        if prefix == "<r>":
            with self._lock:
                return self._random.sample(products, min(SEARCH_RETURN_N, len(products)))
        field = {"<a>": "attributes", "<c>": "category", "<q>": "query"}[prefix]
        if field == "attributes":
            return [p for p in products if rest in p.attributes]
        return [p for p in products if getattr(p, field) == rest]

    def new_session(self, goal_index: int) -> Session:
        """A session on the search page for goal ``goal_index`` of :attr:`goals`."""
        if not 0 <= goal_index < len(self.goals):
            raise ValueError(f"goal index {goal_index} out of range 0..{len(self.goals) - 1}")
        return Session(self, goal_index)

    def score(self, goal: Goal, asin: str, options: dict[str, str]) -> tuple[float, dict[str, Any]]:
        """The purchase score of buying ``asin`` with ``options`` for ``goal``, and its parts."""
        product = self.catalog[asin]
        score, parts = purchase_score(
            product,
            goal,
            self.catalog.prices[asin],
            options,
            self.nouns.of(asin, product.title),
            self.nouns.of(goal.asin, goal.name),
        )
        return score, parts

    @cached_property
    def charset(self) -> str:
        """Every character the shop's pages can show beyond printable ASCII (one pass over the
        texts, no copy of them)."""
        chars: set[str] = set()
        for goal in self.goals:
            chars.update(goal.instruction_text)
        for p in self.catalog.products:
            for text in (p.title, p.description, p.price_text, p.category, p.query):
                chars.update(text)
            for texts in (p.bullet_points, p.attributes, p.options, *p.options.values()):
                for text in texts:
                    chars.update(text)
            chars.update(p.product_category)
        return "".join(sorted(chars - set(string.printable)))


@lru_cache(maxsize=8)
def _build(
    data_path: str, num_products: int | None, human: bool, show_attrs: bool, prefixes: bool
) -> Shop:
    catalog = load_catalog(data_path, num_products=num_products, human_goals=human)
    goals = canonical_goals(catalog, human=human)
    return Shop(catalog, goals, show_attrs=show_attrs, special_prefixes=prefixes)


@dataclass
class _Search:
    keywords: str
    results: list[Product]


class Session:
    """One shopper: the page state of WebShop's session (see the module doc for the moves).

    Attributes: ``goal`` and ``goal_index``; ``kind`` (the page kind); ``search`` (the last
    search and its hits); ``page``; ``asin`` (the open product); ``options`` (selected, click
    order); ``visited`` (asins opened since the search page); ``sub_page``; ``done``;
    ``score`` and ``score_parts`` (after ``buy now``); ``lock``, for callers that share the session
    between threads (the web app holds it while acting and rendering).
    """

    def __init__(self, shop: Shop, goal_index: int) -> None:
        self.lock = threading.Lock()
        self.shop = shop
        self.goal_index = goal_index
        self.goal = shop.goals[goal_index]
        self._back_to_search()
        self.done = False
        self.score: float | None = None
        self.score_parts: dict[str, Any] | None = None

    def _back_to_search(self) -> None:
        self.kind = "search"
        self.search: _Search | None = None
        self.page = 1
        self.asin: str | None = None
        self.options: dict[str, str] = {}
        self.visited: set[str] = set()
        self.sub_page: str | None = None
        self._cache: tuple[PageView, list[Node], list[str], str] | None = None

    # -- what the page shows ---------------------------------------------------------------------
    def _render(self) -> tuple[PageView, list[Node], list[str], str]:
        if self._cache is None:
            results: tuple[Product, ...] = ()
            total = 0
            if self.search is not None:
                total = len(self.search.results)
                start = (self.page - 1) * PRODUCT_WINDOW
                results = tuple(self.search.results[start : start + PRODUCT_WINDOW])
            view = PageView(
                kind=self.kind,
                instruction=self.goal.instruction_text,
                page=self.page,
                total=total,
                results=results,
                product=self.shop.catalog[self.asin] if self.asin else None,
                options=dict(self.options),
                sub_page=self.sub_page,
                visited=frozenset(self.visited),
                show_attrs=self.shop.show_attrs,
                score=self.score,
            )
            nodes = page_nodes(view)
            self._cache = (view, nodes, clickables(nodes), to_text(nodes))
        return self._cache

    def view(self) -> PageView:
        """The current page's data."""
        return self._render()[0]

    def nodes(self) -> list[Node]:
        """The current page's visible text nodes."""
        return self._render()[1]

    def clickables(self) -> list[str]:
        """What ``click[...]`` accepts on the current page (``search`` only via a query)."""
        return self._render()[2]

    def text(self) -> str:
        """The current page as WebShop's ``text`` observation."""
        return self._render()[3]

    def available_actions(self) -> dict[str, Any]:
        """WebShop's ``{"has_search_bar": bool, "clickables": [...]}`` for the current page."""
        return {"has_search_bar": self.kind == "search", "clickables": list(self.clickables())}

    # -- moves -----------------------------------------------------------------------------------
    def check(self, action: str) -> tuple[tuple[str, str] | None, str]:
        """``((name, argument), "")`` if ``action`` is a legal move now, else ``(None, reason)``."""
        if self.done:
            return None, "the purchase is done"
        if not isinstance(action, str):
            return None, f"the action must be text, got {type(action).__name__}"
        name, arg = parse_command(action)
        if name == "search":
            if arg is None or not arg.strip():
                return None, "search needs a query: search[your query]"
            return (name, arg), ""
        if name == "click":
            if arg is None:
                return None, "click needs a label: click[button]"
            if arg == "search":
                return None, "type a query instead: search[your query]"
            if arg not in self.clickables():
                shown = arg if len(arg) <= 60 else arg[:57] + "..."
                shown = "".join(c if c.isascii() and c.isprintable() else "?" for c in shown)
                return None, f"'{shown}' is not clickable on the {self.kind.replace('_', ' ')} page"
            return (name, arg), ""
        return None, "unknown action: use search[your query] or click[label]"

    def act(self, action: str) -> tuple[bool, str]:
        """Apply ``action`` if legal; ``(valid, reason)``. A refused action changes nothing."""
        command, reason = self.check(action)
        if command is None:
            return False, reason
        self.apply(command)
        return True, ""

    def search_box(self, query: str) -> tuple[bool, str]:
        """A query typed into the search box (any characters, brackets included): ``(valid,
        reason)`` as :meth:`act` for ``search[query]``."""
        if self.done:
            return False, "the purchase is done"
        if not query.strip():
            return False, "search needs a query: search[your query]"
        self.apply(("search", query.lower()))
        return True, ""

    def apply(self, command: tuple[str, str]) -> None:
        """Apply a command that :meth:`check` accepted."""
        name, arg = command
        self._cache = None
        if name == "search":
            self._open_results(_Search(arg, self.shop.search(arg)), page=1)
        elif arg == "back to search":
            self._back_to_search()
        elif arg == "buy now":
            self._buy()
        elif self.kind == "results":
            if arg == "next >":
                self.page += 1
            elif arg == "< prev":
                self.page -= 1
            else:
                self.kind, self.asin = "item", arg.upper()
                self.visited.add(self.asin)
        elif arg == "< prev":
            if self.kind == "item_sub_page":
                self.kind, self.sub_page = "item", None
            else:
                assert self.search is not None
                self._open_results(self.search, self.page)
        elif arg in SUB_PAGES:
            self.kind, self.sub_page = "item_sub_page", arg
        else:  # an option value; a value in several groups sets the last (WebShop's radios)
            assert self.asin is not None
            groups = self.shop.catalog[self.asin].options.items()
            option = [name for name, values in groups if arg in values][-1]
            self.options[option] = arg

    def _open_results(self, search: _Search, page: int) -> None:
        self.kind, self.search, self.page = "results", search, page
        self.asin, self.options, self.sub_page = None, {}, None

    def _buy(self) -> None:
        assert self.asin is not None
        self.score, self.score_parts = self.shop.score(self.goal, self.asin, self.options)
        self.kind, self.done = "done", True
