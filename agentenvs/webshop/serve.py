"""Serving the WebShop app: :class:`ShopServer` (a threaded werkzeug server in a background thread)
and the command line ``python -m agentenvs.webshop.serve`` for a person with a browser.

    python -m agentenvs.webshop.serve --port 3000             # the embedded catalogue
    python -m agentenvs.webshop.serve --data-path ~/webshop/data

Open the printed URL: ``/`` starts a session on a random goal, ``/fixed_<n>`` on goal ``n``.

>>> from agentenvs.webshop.app import create_app
>>> with ShopServer(create_app()) as server:
...     server.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import argparse
import threading

from flask import Flask
from werkzeug.serving import WSGIRequestHandler, make_server

from agentenvs.webshop.app import create_app
from agentenvs.webshop.shop import Shop

__all__ = ["ShopServer", "main"]


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args: object, **kwargs: object) -> None:  # one line per request: off
        pass


class ShopServer:
    """``app`` served on ``host:port`` (port 0: a free one) from a daemon thread until :meth:`close`.

    A context manager; :meth:`close` stops the server, joins its thread and is idempotent.
    """

    def __init__(
        self, app: Flask, host: str = "127.0.0.1", port: int = 0, log_requests: bool = False
    ) -> None:
        self.app = app
        handler = WSGIRequestHandler if log_requests else _QuietHandler
        self._server = make_server(host, port, app, threaded=True, request_handler=handler)
        self.url = f"http://{host}:{self._server.server_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="webshop-server", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
            self._server.server_close()

    def __enter__(self) -> ShopServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the WebShop app for a browser.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3000)
    parser.add_argument(
        "--data-path", default=None, help="official data directory (default: embedded)"
    )
    parser.add_argument("--show-attrs", action="store_true", help="offer the Attributes sub-page")
    args = parser.parse_args(argv)
    shop = Shop.load(args.data_path, None, False, args.show_attrs)
    server = ShopServer(create_app(shop), args.host, args.port, log_requests=True)
    print(
        f"WebShop: {len(shop.catalog)} products, {len(shop.goals)} goals at {server.url}/",
        flush=True,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
