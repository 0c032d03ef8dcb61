"""WebShop's web app under a long run: 1,000 episodes through one app over HTTP, with the process's
resident memory, open files and threads measured before and after (and printed)."""

from __future__ import annotations

import gc
import threading
import urllib.parse
import urllib.request

import pytest

psutil = pytest.importorskip("psutil")
pytest.importorskip("flask")

from agentenvs.webshop.app import create_app  # noqa: E402
from agentenvs.webshop.serve import ShopServer  # noqa: E402
from agentenvs.webshop.shop import Shop  # noqa: E402


def _usage() -> tuple[float, int, int]:
    process = psutil.Process()
    return process.memory_info().rss / 2**20, len(process.open_files()), threading.active_count()


@pytest.mark.integration
def test_one_thousand_episodes_through_one_app():
    shop = Shop.load("embedded")
    opener = urllib.request.build_opener()
    with ShopServer(create_app(shop, max_sessions=256)) as server:

        def episode(k: int) -> None:
            goal = shop.goals[k % len(shop.goals)]
            sid = f"fixed_{k % len(shop.goals)}"
            opener.open(f"{server.url}/{sid}").read()
            for action in (f"search[{goal.query}]", "click[next >]", "click[back to search]"):
                data = urllib.parse.urlencode({"action": action}).encode()
                opener.open(f"{server.url}/{sid}/act", data=data).read()
            opener.open(f"{server.url}/{sid}/close", data=b"").read()

        for k in range(100):  # warm up: caches, the search index, the thread pool
            episode(k)
        gc.collect()
        rss0, files0, threads0 = _usage()
        for k in range(100, 1_100):
            episode(k)
        gc.collect()
        rss1, files1, threads1 = _usage()
    print(
        f"\n1,000 episodes: RSS {rss0:.1f} -> {rss1:.1f} MiB, open files {files0} -> {files1}, "
        f"threads {threads0} -> {threads1}"
    )
    assert rss1 - rss0 < 40, "resident memory grew by more than 40 MiB over 1,000 episodes"
    assert files1 <= files0 and threads1 <= threads0 + 1
    assert threading.active_count() <= threads0  # the server thread is gone after close
