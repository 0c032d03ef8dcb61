"""The WebShop web app (Flask): many shoppers' sessions served from one process.

This module holds :class:`SessionRegistry` (thread-safe ``session id -> Session``, oldest dropped
past ``max_sessions``) and :func:`create_app`.

Routes (``<sid>`` is a session id; ``fixed_<n>`` opens goal ``n``, WebShop's convention):

* ``GET /`` - a new session on a random goal, redirected to its page;
* ``GET /<sid>`` - the session's current page;
* ``POST /<sid>/act`` (form field ``action``, or ``search_query``: the search box's text) and
  ``GET /<sid>/act?action=...`` - apply the action, then redirect (303) to the page; a refused
  action re-renders the page unchanged with the reason in the ``X-WebShop-Invalid`` header and
  the body's ``data-invalid`` attribute (never in the page's text);
* ``GET /<sid>/state.json`` - page kind, done, score, score parts, available actions, goal index;
* ``POST /<sid>/close`` or ``DELETE /<sid>`` - end the session;
* ``GET /images/<asin>.svg`` - a generated placeholder picture (no network).

Bad input gets a 4xx answer, never a 500.

>>> app = create_app()
>>> client = app.test_client()
>>> client.get("/fixed_0").status_code, client.post("/fixed_0/act", data={"action": "x"}).status_code
(200, 200)
>>> client.get("/no-such-session").status_code
404
"""

from __future__ import annotations

import random
import re
import threading
import uuid
from collections import OrderedDict
from html import escape
from typing import TYPE_CHECKING

from flask import Flask, Response, abort, jsonify, redirect, request
from werkzeug.exceptions import HTTPException

if TYPE_CHECKING:
    from flask.typing import ResponseReturnValue

from agentenvs.webshop.html import render_page
from agentenvs.webshop.shop import Session, Shop

__all__ = ["SessionRegistry", "create_app"]

_FIXED = re.compile(r"fixed_(\d{1,9})")
_COLORS = {
    "beauty": "#f4a6c0",
    "fashion": "#9db7f5",
    "garden": "#9fd89a",
    "electronics": "#b9b9c9",
    "grocery": "#f6cf8f",
}


class SessionRegistry:
    """Sessions by id; thread-safe; the least recently used is dropped past ``max_sessions``."""

    def __init__(self, shop: Shop, max_sessions: int = 10_000) -> None:
        self.shop = shop
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self._random = random.Random(0)

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, sid: str) -> Session | None:
        """The session ``sid`` (``fixed_<n>`` is created on first use), or ``None``."""
        with self._lock:
            session = self._sessions.get(sid)
            if session is not None:
                self._sessions.move_to_end(sid)
                return session
        match = _FIXED.fullmatch(sid)
        if match is None or int(match.group(1)) >= len(self.shop.goals):
            return None
        return self.put(sid, self.shop.new_session(int(match.group(1))))

    def put(self, sid: str, session: Session) -> Session:
        """Register ``session`` as ``sid`` (replacing any session of that id)."""
        with self._lock:
            self._sessions[sid] = session
            self._sessions.move_to_end(sid)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        return session

    def new(self) -> str:
        """A new session on a random goal; its id."""
        with self._lock:
            goal = self._random.randrange(len(self.shop.goals))
        sid = uuid.uuid4().hex
        self.put(sid, self.shop.new_session(goal))
        return sid

    def close(self, sid: str) -> bool:
        """End session ``sid``; whether it existed."""
        with self._lock:
            return self._sessions.pop(sid, None) is not None


def _placeholder(asin: str, shop: Shop) -> str:
    product = shop.catalog.by_asin.get(asin)
    category = product.category if product else "unknown"
    color = _COLORS.get(category, "#dddddd")
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="320" height="320" viewBox="0 0 320 320">'
        f'<rect width="320" height="320" fill="{color}"/>'
        f'<text x="160" y="150" font-size="28" text-anchor="middle" font-family="sans-serif">'
        f"{escape(category)}</text>"
        f'<text x="160" y="190" font-size="18" text-anchor="middle" font-family="monospace">'
        f"{escape(asin)}</text></svg>"
    )


def create_app(shop: Shop | None = None, *, max_sessions: int = 10_000) -> Flask:
    """The web shop for ``shop`` (default: the embedded catalogue), as a Flask app.

    ``app.config["WEBSHOP_SHOP"]`` and ``app.config["WEBSHOP_SESSIONS"]`` (the
    :class:`SessionRegistry`) let in-process code share sessions with the app.
    """
    shop = shop or Shop.load()
    registry = SessionRegistry(shop, max_sessions)
    app = Flask(__name__)
    app.config.update(WEBSHOP_SHOP=shop, WEBSHOP_SESSIONS=registry, MAX_CONTENT_LENGTH=1 << 20)

    def session_or_404(sid: str) -> Session:
        session = registry.get(sid)
        if session is None:
            abort(404, description=f"no session {sid!r}")
        return session

    def page(sid: str, session: Session, invalid: str = "") -> Response:
        with session.lock:
            view = session.view()
        html = render_page(view, session_id=sid, base_url="", invalid=invalid)
        response = Response(html, mimetype="text/html")
        if invalid:
            response.headers["X-WebShop-Invalid"] = invalid.encode("ascii", "replace").decode()
        return response

    @app.get("/")
    def index() -> ResponseReturnValue:
        return redirect(f"/{registry.new()}", code=303)

    @app.get("/<sid>")
    def show(sid: str) -> ResponseReturnValue:
        return page(sid, session_or_404(sid))

    @app.route("/<sid>/act", methods=["GET", "POST"])
    def act(sid: str) -> ResponseReturnValue:
        session = session_or_404(sid)
        values = request.values
        action, query = values.get("action"), values.get("search_query")
        if action is None and query is None:
            abort(400, description="send an action (or a search_query)")
        with session.lock:
            if action is not None:
                valid, reason = session.act(action)
            else:
                assert query is not None  # aborted above otherwise
                valid, reason = session.search_box(query)
        if not valid:
            return page(sid, session, invalid=reason)
        return redirect(f"/{sid}", code=303)

    @app.get("/<sid>/state.json")
    def state(sid: str) -> ResponseReturnValue:
        session = session_or_404(sid)
        with session.lock:
            return jsonify(
                page=session.kind,
                done=session.done,
                score=session.score,
                score_parts=session.score_parts,
                available_actions=session.available_actions(),
                goal_index=session.goal_index,
            )

    @app.route("/<sid>/close", methods=["POST"])
    @app.route("/<sid>", methods=["DELETE"])
    def close(sid: str) -> ResponseReturnValue:
        if not registry.close(sid):
            abort(404, description=f"no session {sid!r}")
        return jsonify(closed=sid)

    @app.get("/images/<asin>.svg")
    def image(asin: str) -> ResponseReturnValue:
        response = Response(_placeholder(asin[:10], shop), mimetype="image/svg+xml")
        response.cache_control.max_age = 3600  # the picture of an asin never changes
        return response

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> ResponseReturnValue:
        body = f"<html><body><h1>{error.code} {escape(error.name)}</h1></body></html>"
        return Response(body, status=error.code, mimetype="text/html")

    return app
