"""A screenshot of a run's viewer page in headless Chromium.

    python -m agentenvs.viewer.screenshot RUN_DIR OUT.png [--width 1400] [--height 1800]
        [--max-groups 50] [--task TASK_ID]

This module holds :func:`open_browser` (headless Chromium through Selenium and the system's
chromedriver, as the WebShop browser env starts it; the binaries are ``$WEBSHOP_CHROMIUM`` and
``$WEBSHOP_CHROMEDRIVER``, default ``/usr/bin/chromium`` and ``/usr/bin/chromedriver``, with the
browser console log enabled), :func:`screenshot` and :func:`main`.

The page is written to ``RUN_DIR/view.html`` first (as ``agentenvs view`` does), loaded from
``file://`` in a window of fixed size, and the visible part saved as PNG. ``--task`` sets the
page's task filter first (to show one chosen group under the learning curves). Needs selenium
(``pip install 'agentenvs[webshop]'``) and ``apt-get install chromium chromium-driver``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentenvs.viewer.compare import STRUCTURAL_METHODS
from agentenvs.viewer.page import write_page

__all__ = ["CHROMIUM", "CHROMEDRIVER", "open_browser", "screenshot", "main"]

CHROMIUM = os.environ.get("WEBSHOP_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("WEBSHOP_CHROMEDRIVER", "/usr/bin/chromedriver")


@contextmanager
def open_browser(width: int = 1400, height: int = 1800) -> Iterator[Any]:
    """A headless Chromium WebDriver with a ``width`` x ``height`` window (px) and the browser
    console log readable through ``driver.get_log("browser")``; quit on exit.

    Raises:
        RuntimeError: selenium, Chromium or chromedriver is missing (the message says what).
    """
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        raise RuntimeError(
            "the screenshot needs selenium: pip install 'agentenvs[webshop]'"
        ) from exc
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            raise RuntimeError(f"{path} not found: apt-get install chromium chromium-driver")
    os.environ.setdefault("SE_AVOID_STATS", "true")
    profile = tempfile.mkdtemp(prefix="viewer-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--hide-scrollbars", "--force-device-scale-factor=1",
        f"--user-data-dir={profile}", f"--window-size={width},{height}",
    ):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = None
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        yield driver
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(
    run_dir: str | os.PathLike,
    out: str | os.PathLike,
    width: int = 1400,
    height: int = 1800,
    max_groups: int = 50,
    methods: Sequence[str] = STRUCTURAL_METHODS,
    task: str | None = None,
) -> Path:
    """Write ``run_dir``'s page and save a ``width`` x ``height`` screenshot of it to ``out``
    (with the page's task filter set to ``task`` when given).

    Raises:
        ValueError: ``task`` is not among the page's groups (or ``write_page``'s errors).
        RuntimeError: no browser (see :func:`open_browser`).
    """
    page = write_page(run_dir, methods=methods, max_groups=max_groups)
    with open_browser(width, height) as driver:
        driver.get(page.resolve().as_uri())
        if task is not None:
            from selenium.common.exceptions import NoSuchElementException
            from selenium.webdriver.common.by import By
            from selenium.webdriver.support.ui import Select

            try:
                Select(driver.find_element(By.ID, "f-task")).select_by_value(task)
            except NoSuchElementException:
                raise ValueError(f"no group of task {task!r} on the page") from None
        driver.save_screenshot(os.fspath(out))
    return Path(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m agentenvs.viewer.screenshot", description=__doc__.split("\n")[0]
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("out", metavar="OUT.png")
    p.add_argument("--width", type=int, default=1400)
    p.add_argument("--height", type=int, default=1800)
    p.add_argument("--max-groups", type=int, default=50)
    p.add_argument("--task", default=None, help="show only this task's groups")
    args = p.parse_args(argv)
    try:
        path = screenshot(
            args.run_dir, args.out, args.width, args.height, args.max_groups, task=args.task
        )
    except (ValueError, RuntimeError) as exc:
        print(f"agentenvs.viewer.screenshot: error: {exc}", file=sys.stderr)
        return 2
    print(f"{path} ({path.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
