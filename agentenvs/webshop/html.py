"""WebShop's pages as HTML, and the visible text read back from HTML.

This module holds :func:`render_page` (a :class:`~agentenvs.webshop.pages.PageView` as a full HTML
page, from the Jinja templates in ``templates/``), :func:`html_nodes` (the visible text nodes of
any HTML with the roles their elements give them) and :func:`html_clickables` (WebShop's
clickables, read from the DOM).

Visible text: every text node outside ``head``, ``title``, ``style``, ``script`` and ``meta``,
comments excluded, whitespace-only nodes dropped. Roles: text inside a ``<button>`` is a button,
inside a ``<label>`` an option value (marked when the radio input before it is ``checked``),
inside ``<a class="product-link">`` a product (marked when it carries ``data-visited``). So
``to_text(html_nodes(render_page(view))) == to_text(page_nodes(view))`` for every page (tests check
it), and the browser mode reads the text env's observation from the HTML Chromium holds.

>>> from agentenvs.webshop.pages import PageView, page_nodes
>>> view = PageView("search", "Find me a red mug")
>>> html_nodes(render_page(view)) == page_nodes(view)
True
>>> html_clickables(render_page(view))
['search']
"""

from __future__ import annotations

from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from agentenvs.webshop.pages import Node, PageView, option_marked, page_nodes

__all__ = ["render_page", "html_nodes", "html_clickables"]

_TEMPLATES = {
    "search": "search.html",
    "results": "results.html",
    "item": "item.html",
    "item_sub_page": "sub_page.html",
    "done": "done.html",
}
_INVISIBLE = frozenset({"head", "title", "style", "script", "meta"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "wbr"}
)


def _text(value: object) -> object:
    """Every ``{{ }}`` output: escaped, with carriage returns as ``&#13;`` (a browser turns a raw
    one into a line feed, so the text it shows would differ from the text env's)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return Markup(str(escape(value)).replace("\r", "&#13;"))
    return value


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=select_autoescape(["html"]),
        finalize=_text,
    )


def render_page(
    view: PageView, *, session_id: str = "", base_url: str = "", invalid: str = ""
) -> str:
    """The page as HTML; its forms and links act on session ``session_id`` at ``base_url``;
    ``invalid`` (why the last action was refused) goes in an attribute, never in the text."""
    buttons = ["Description", "Features", "Reviews"]
    buttons += ["Attributes"] if view.show_attrs else []
    template = _environment().get_template(_TEMPLATES[view.kind])
    return template.render(
        view=view,
        act_url=f"{base_url}/{session_id}/act",
        base_url=base_url,
        buttons=[*buttons, "Buy Now"],
        marked=lambda value: option_marked(view, value),
        nodes=page_nodes(view) if view.kind == "done" else (),
        invalid=invalid,
    )


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str | None]]] = []
        self.nodes: list[Node] = []
        self.buttons: list[str] = []
        self.links: list[str] = []
        self.radios: list[str] = []
        self._checked = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "input" and (attributes.get("type") or "").lower() == "radio":
            self._checked = "checked" in attributes
            self.radios.append(attributes.get("value") or "")
        if tag not in _VOID:
            self.stack.append((tag, attributes))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):  # tolerate unclosed inner elements
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if not data.strip() or any(tag in _INVISIBLE for tag, _ in self.stack):
            return
        tag, attributes = self.stack[-1] if self.stack else ("", {})
        classes = (attributes.get("class") or "").split()
        if any("btn" in (a.get("class") or "").split() for _, a in self.stack):
            self.buttons.append(data.strip().lower())
        if tag == "button":
            self.nodes.append(Node(data, "button"))
        elif tag == "label":
            self.nodes.append(Node(data, "label", self._checked))
        elif tag == "a" and classes == ["product-link"]:
            self.nodes.append(Node(data, "link", "data-visited" in attributes))
            self.links.append(data.strip().lower())
        else:
            self.nodes.append(Node(data))


def _read(html: str) -> _Reader:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return reader


def html_nodes(html: str) -> list[Node]:
    """The visible text nodes of ``html`` with their roles (see the module doc)."""
    return _read(html).nodes


def html_clickables(html: str) -> list[str]:
    """WebShop's clickables from the DOM: the texts of ``.btn`` elements, then product links
    (lower-cased), then radio values, each once, in that order."""
    reader = _read(html)
    return list(dict.fromkeys(reader.buttons + reader.links + reader.radios))
