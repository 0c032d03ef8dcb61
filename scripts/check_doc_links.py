"""Check the internal links of the built docs site: every relative ``href``/``src`` of every HTML
page names a file that exists, and every ``#anchor`` names an id on its page.

    python scripts/check_doc_links.py build/docs/html

Links with a scheme (``https:``, ``mailto:``) are external and not checked (the build machines are
offline). Exit status 1 and one line per broken link when any is broken.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)
            elif key in ("href", "src") and value and tag in ("a", "img", "link", "script"):
                self.links.append(value)


def check(site: Path) -> list[str]:
    """The broken internal links under ``site``, as ``page: link (why)`` lines."""
    pages: dict[Path, _Page] = {}
    for path in sorted(site.rglob("*.html")):
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            where = f"{path.relative_to(site.resolve())}: {link}"
            if not target.exists():
                broken.append(f"{where} (no such file)")
            elif target.is_dir() and not (target / "index.html").exists():
                broken.append(f"{where} (a folder without index.html)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where} (no anchor #{parts.fragment})")
    return broken


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "build/docs/html")
    if not site.is_dir():
        print(f"{site}: no built site (run scripts/build_docs.sh)")
        return 1
    broken = check(site)
    for line in broken:
        print(line)
    count = sum(1 for _ in site.rglob("*.html"))
    print(f"{count} pages, {len(broken)} broken internal links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
