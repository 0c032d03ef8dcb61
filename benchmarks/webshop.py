"""WebShop speed: env step and reset, search, the browser mode and the web app under load.

    python benchmarks/webshop.py                 # everything (the browser part needs Chromium)
    python benchmarks/webshop.py --skip-browser

The references need ``pip install -e ".[bench]"`` (BeautifulSoup, rank_bm25; part of ``all``).

Figures, each with a ratio against a reference timed in the same run on the same work:
* text-mode ``step`` / ``reset`` of ``agentenvs/WebShop-v0`` on the embedded catalogue (target: a
  step under 5 ms), against a re-implementation of the original WebShop text env's per-step path
  (render the page's HTML from templates, then BeautifulSoup ``html.parser`` -> ``[SEP]`` text, as
  WebShop's ``WebAgentTextEnv`` does every step), producing the same observation string;
* search latency on 1k and 100k generated products, against ``rank_bm25`` (``BM25Okapi``, the
  pure-Python BM25 WebShop's requirements list) ranking the same token lists for the same top 50;
* browser-mode step latency (Selenium + headless Chromium), as a multiple of the text step;
* sessions per second through the Flask app over HTTP with 8 concurrent clients (a full scripted
  episode each: open, search, open a product, buy), against 1 client.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym

if not __package__:  # run as a script: make the repository's packages (benchmarks/) importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentenvs  # noqa: F401
from agentenvs.webshop.catalog import Catalog, process_raw_product, search_text
from agentenvs.webshop.generate import generate_catalog
from agentenvs.webshop.search import BM25Search, tokenize
from benchmarks.envs import per_call

N_QUERIES = 200


def text_env(steps: int) -> tuple[float, float, float]:
    """(step, reset, reference step) seconds on the embedded catalogue."""
    from bs4 import BeautifulSoup
    from bs4.element import Comment

    from agentenvs.webshop.html import render_page

    env = gym.make("agentenvs/WebShop-v0", action_format="plain", max_steps=10**9)
    rng = random.Random(0)
    env.reset(options={"task_id": "goal-0"})
    actions: list[str] = []
    for _ in range(steps):  # a fixed random walk over admissible actions, replayed by both sides
        admissible = env.unwrapped._admissible_actions()
        action = rng.choice(admissible).replace("<your query>", env.unwrapped.session.goal.query)
        if action == "click[buy now]":
            action = "click[< prev]"
        actions.append(action)
        env.step(action)

    def run(step: Callable[[str], object]) -> float:
        """Best of 3 replays of the walk from its start, seconds per ``step(action)``."""
        best = float("inf")
        for _ in range(3):
            env.reset(options={"task_id": "goal-0"})
            start = time.perf_counter()
            for action in actions:
                step(action)
            best = min(best, (time.perf_counter() - start) / len(actions))
        return best

    def visible(t) -> bool:
        return t.parent.name not in ("style", "script", "head", "title", "meta", "[document]") and (
            not isinstance(t, Comment)
        )

    def reference_step(action: str) -> str:
        """WebShop's per-step path: apply the action, render the page's HTML from templates,
        then BeautifulSoup ``html.parser`` -> the ``[SEP]`` text."""
        env.unwrapped.session.act(action)
        html = render_page(env.unwrapped.session.view())
        texts = BeautifulSoup(html, "html.parser").find_all(string=True)
        return " [SEP] ".join(t.strip() for t in texts if visible(t) and t.strip())

    t_ref = run(reference_step)
    t_step = run(env.step)
    env.reset(options={"task_id": "goal-0"})
    for action in actions:  # same work, same output
        assert reference_step(action) == env.unwrapped.page_text()
    ids = env.unwrapped.tasks.ids("train")
    t_reset = per_call(lambda i: env.reset(options={"task_id": ids[i % len(ids)]}), 500)
    return t_step, t_reset, t_ref


def search_latency(num_products: int) -> tuple[float, float, float]:
    """(ours per query, rank_bm25 per query, index build seconds) on a generated catalogue."""
    from rank_bm25 import BM25Okapi

    raw, ins, nouns = generate_catalog(num_products, seed=1)
    products = [process_raw_product(r, ins) for r in raw]
    catalog = Catalog(products, nouns)
    texts = [search_text(p) for p in catalog.products]
    start = time.perf_counter()
    engine = BM25Search([p.asin for p in catalog.products], texts)
    build = time.perf_counter() - start
    rng = random.Random(0)
    queries = [
        " ".join(rng.sample(texts[rng.randrange(len(texts))].split()[:12], 3))
        for _ in range(N_QUERIES)
    ]
    t_ours = per_call(lambda i: engine.search(queries[i], 50), len(queries))
    reference = BM25Okapi([tokenize(t) for t in texts], k1=0.9, b=0.4)
    n_ref = max(5, len(queries) * 1000 // num_products)

    def ref(i: int) -> None:
        scores = reference.get_scores(tokenize(queries[i]))
        sorted(range(len(scores)), key=lambda j: -scores[j])[:50]

    t_ref = per_call(ref, n_ref, repeats=1)
    return t_ours, t_ref, build


def browser_step(steps: int) -> float | None:
    """Seconds per browser-mode step, or ``None`` without Chromium."""
    try:
        env = gym.make("agentenvs/WebShopBrowser-v0", action_format="plain", max_steps=10**9)
        env.reset(seed=0)
    except (ImportError, RuntimeError, OSError) as exc:
        print(f"(browser mode skipped: {exc})")
        return None
    try:
        query = env.unwrapped.session.goal.query
        cycle = [f"search[{query}]", "click[next >]", "click[< prev]", "click[back to search]"]
        return per_call(lambda i: env.step(cycle[i % len(cycle)]), steps, repeats=1)
    finally:
        env.close()


def sessions_per_second(clients: int, episodes: int) -> float:
    """Full scripted episodes per second through the Flask app over HTTP with ``clients`` threads."""
    from agentenvs.webshop.app import create_app
    from agentenvs.webshop.serve import ShopServer

    with ShopServer(create_app()) as server:
        shop = server.app.config["WEBSHOP_SHOP"]
        opener = urllib.request.build_opener()

        def post(sid: str, action: str) -> None:
            data = urllib.parse.urlencode({"action": action}).encode()
            opener.open(f"{server.url}/{sid}/act", data=data).read()

        def episode(k: int) -> None:
            goal = k % len(shop.goals)
            sid = f"fixed_{goal}"
            opener.open(f"{server.url}/{sid}").read()
            post(sid, f"search[{shop.goals[goal].query}]")
            post(sid, "click[next >]")
            post(sid, "click[< prev]")
            opener.open(f"{server.url}/{sid}/state.json").read()

        counter = iter(range(10**9))
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    k = next(counter)
                if k >= episodes:
                    return
                episode(k)

        start = time.perf_counter()
        threads = [threading.Thread(target=worker) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return episodes / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=2_000, help="text-mode steps per measurement")
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--skip-100k", action="store_true", help="skip the 100k-product search")
    args = parser.parse_args(argv)

    t_step, t_reset, t_ref = text_env(args.steps)
    print("\n## WebShop (embedded catalogue, 5,000 products), one process\n")
    print("| measure | per call | ratio |")
    print("|---|---:|---:|")
    print(f"| text-mode step (gym.make, plain action) | {t_step * 1e3:.3f} ms | target < 5 ms |")
    print(f"| reset | {t_reset * 1e3:.3f} ms | |")
    print(
        f"| reference per-step path (template HTML + BeautifulSoup text, re-implemented) | "
        f"{t_ref * 1e3:.3f} ms | step is {t_ref / t_step:.1f}x faster |"
    )
    sizes = [1_000] + ([] if args.skip_100k else [100_000])
    for n in sizes:
        ours, ref, build = search_latency(n)
        print(
            f"| search, {n:,} products (index built in {build:.2f} s) | {ours * 1e3:.3f} ms | "
            f"{ref / ours:.0f}x faster than rank_bm25 ({ref * 1e3:.1f} ms) |"
        )
    if not args.skip_browser:
        t_browser = browser_step(40)
        if t_browser is not None:
            print(
                f"| browser-mode step (Selenium + headless Chromium) | {t_browser * 1e3:.1f} ms | "
                f"{t_browser / t_step:.0f}x the text step |"
            )
    one = sessions_per_second(1, 40)
    eight = sessions_per_second(8, 160)
    print(
        f"| Flask app over HTTP, 8 concurrent clients | {eight:.1f} sessions/s | "
        f"{eight / one:.2f}x one client ({one:.1f}/s) |"
    )


if __name__ == "__main__":
    main()
