"""Serving a viewer page on 127.0.0.1 with the standard library's ``http.server``.

This module holds :func:`make_server` and :func:`serve`.

Only the page itself is served (at ``/`` and at its file name; anything else is 404), read from
disk on every request, so the run directory's other files (checkpoints, configs) never are, and
a page written again shows on reload. ``serve`` runs until Ctrl-C.

>>> import tempfile, threading, urllib.request, pathlib
>>> page = pathlib.Path(tempfile.mkdtemp()) / "view.html"
>>> _ = page.write_text("<p>hi</p>")
>>> server = make_server(page, port=0)
>>> thread = threading.Thread(target=server.serve_forever, daemon=True); thread.start()
>>> url = f"http://127.0.0.1:{server.server_address[1]}/"
>>> urllib.request.urlopen(url).read()
b'<p>hi</p>'
>>> server.shutdown(); server.server_close()
"""

from __future__ import annotations

import os
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["make_server", "serve"]


def make_server(
    page: str | os.PathLike, port: int = 8000, host: str = "127.0.0.1"
) -> ThreadingHTTPServer:
    """An HTTP server (not yet started) that serves the file ``page``; ``port=0`` picks a free one.

    Raises:
        ValueError: ``page`` is not a file.
        OSError: the port is taken.
    """
    path = Path(page).resolve()
    if not path.is_file():
        raise ValueError(f"no page to serve at {path}")

    class PageHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] not in ("/", f"/{path.name}"):
                self.send_error(HTTPStatus.NOT_FOUND, "only the viewer page is served here")
                return
            body = path.read_bytes()
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet: one line per request
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    return ThreadingHTTPServer((host, port), PageHandler)


def serve(page: str | os.PathLike, port: int = 8000, host: str = "127.0.0.1") -> int:
    """Serve ``page`` at ``http://host:port/`` until Ctrl-C; returns 0.

    Raises:
        ValueError: ``page`` is not a file, or the port cannot be bound (the message says which).
    """
    try:
        server = make_server(page, port, host)
    except OSError as exc:
        raise ValueError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    url = f"http://{host}:{server.server_address[1]}/"
    print(f"serving {Path(page)} at {url} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        server.server_close()
    return 0
