"""``agentenvs/WebShopBrowser-v0``: WebShop through the real web app and a headless Chromium.

This module holds :class:`WebShopBrowserEnv`. The episode logic is
:class:`~agentenvs.webshop.env.WebShopEnv`'s (same tasks, validity, score and rewards), but every
step goes through the web: the env serves the Flask app on 127.0.0.1
(:class:`~agentenvs.webshop.serve.ShopServer`), starts Chromium through Selenium, and performs
each action on the page the browser shows (it clicks the button, the product link or the option's
label, types the query into the search box); the app applies it to the session. The observation
is read from the HTML the browser then holds (:func:`~agentenvs.webshop.html.html_nodes`), which
equals the text env's on the same trajectory.
``observation_mode="screenshot"`` returns ``{"text": ..., "image": (H, W, 3) uint8}``, the page at
a fixed ``viewport`` (width, height; default 1280 x 800), for vision-language policies.

Needs ``pip install 'agentenvs[webshop]'`` and Debian's ``chromium`` and ``chromium-driver``
(``apt-get install chromium chromium-driver``). :meth:`WebShopBrowserEnv.close` quits the browser
and its driver and stops the server; garbage collection does the same for an env never closed.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import urllib.parse
import uuid
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from agentenvs.core.prompting import AgentPrompt, check_prompt_style
from agentenvs.webshop.env import WebShopEnv
from agentenvs.webshop.html import html_nodes
from agentenvs.webshop.pages import to_text, to_text_rich
from agentenvs.webshop.prompts import CompactScreenshotWebShopPrompt, ScreenshotWebShopPrompt
from agentenvs.webshop.shop import MAX_QUERY_CHARS

if TYPE_CHECKING:  # selenium is the webshop extra's; imported where the browser starts
    from selenium.webdriver.chrome.webdriver import WebDriver

__all__ = ["WebShopBrowserEnv", "CHROMIUM", "CHROMEDRIVER"]

CHROMIUM = os.environ.get("WEBSHOP_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("WEBSHOP_CHROMEDRIVER", "/usr/bin/chromedriver")
_WAIT_S = 10.0  # seconds a page may take to load
_POLL_S = 0.005  # seconds between checks while waiting
_NEW_PAGE_LOADED = "return !window.__webshopOld && document.readyState === 'complete';"
_FIND_CLICKABLE = """
const label = arguments[0];
for (const selector of ["button.btn", "a.product-link"])
  for (const el of document.querySelectorAll(selector))
    if (el.textContent.trim().toLowerCase() === label) return el;
for (const el of document.querySelectorAll("input[type=radio]"))
  if (el.value === label && !el.checked) return el;
return null;  // e.g. an option already selected: clicking it again changes nothing
"""


class _Browser:
    """The server, the driver and the profile directory of one env (closed together, once)."""

    def __init__(self, app: Any, viewport: tuple[int, int]) -> None:
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
        except ImportError as exc:
            raise ImportError(
                "agentenvs/WebShopBrowser-v0 drives Chromium with Selenium: "
                "pip install 'agentenvs[webshop]'"
            ) from exc
        for path in (CHROMIUM, CHROMEDRIVER):
            if not os.path.exists(path):
                raise RuntimeError(
                    f"{path} not found: agentenvs/WebShopBrowser-v0 needs Chromium and its driver "
                    "(apt-get install chromium chromium-driver)"
                )
        from agentenvs.webshop.serve import ShopServer

        os.environ.setdefault("SE_AVOID_STATS", "true")
        self.profile = tempfile.mkdtemp(prefix="webshop-chromium-")
        self.server = ShopServer(app)
        self.driver: WebDriver | None = None
        try:
            options = webdriver.ChromeOptions()
            options.binary_location = CHROMIUM
            for flag in (
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--hide-scrollbars", f"--user-data-dir={self.profile}",
                f"--window-size={viewport[0]},{viewport[1]}",
            ):  # fmt: skip
                options.add_argument(flag)
            self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        except BaseException:
            self.close()
            raise

    @property
    def live(self) -> WebDriver:
        """The driver, from construction until :meth:`close`."""
        if self.driver is None:
            raise RuntimeError("the browser is closed")
        return self.driver

    def close(self) -> None:
        if self.driver is not None:
            try:
                self.driver.quit()
            finally:
                self.driver = None
        self.server.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def _typeable(text: str) -> bool:
    """Whether a person (and ChromeDriver, which types only the Basic Multilingual Plane) can type
    ``text`` into the search box; other queries go through the form's URL."""
    return len(text) <= 500 and all(c.isprintable() and ord(c) < 0x10000 for c in text)


class WebShopBrowserEnv(WebShopEnv):
    """WebShop through the Flask app and headless Chromium (see the module doc).

    Args:
        observation_mode: ``"text"``, ``"text_rich"`` or ``"screenshot"`` (text and image).
        viewport: the browser's (width, height) in pixels, the screenshot's size.
        **kwargs: as :class:`~agentenvs.webshop.env.WebShopEnv`.
    """

    def __init__(
        self,
        *,
        observation_mode: str = "text",
        viewport: tuple[int, int] = (1280, 800),
        **kwargs: Any,
    ) -> None:
        if observation_mode not in ("text", "text_rich", "screenshot"):
            raise ValueError(
                "observation_mode must be 'text', 'text_rich' or 'screenshot', "
                f"got {observation_mode!r}"
            )
        super().__init__(
            observation_mode="text_rich" if observation_mode == "text_rich" else "text", **kwargs
        )
        self.observation_mode = observation_mode
        self.viewport = (int(viewport[0]), int(viewport[1]))
        if observation_mode == "screenshot":
            width, height = self.viewport
            self.observation_space = spaces.Dict(
                {
                    "text": self.observation_space,
                    "image": spaces.Box(0, 255, (height, width, 3), np.uint8),
                }
            )
        self._browser: _Browser | None = None
        self._finalizer: weakref.finalize | None = None
        self._sid = ""

    def agent_prompt(
        self, style: str = "reference", history_length: int | None = None
    ) -> AgentPrompt:
        """As :meth:`WebShopEnv.agent_prompt <agentenvs.webshop.env.WebShopEnv.agent_prompt>`; in
        the screenshot mode :class:`~agentenvs.webshop.prompts.ScreenshotWebShopPrompt` or
        :class:`~agentenvs.webshop.prompts.CompactScreenshotWebShopPrompt`: the page is its
        screenshot (docs/visual-agents.md)."""
        if self.observation_mode != "screenshot":
            return super().agent_prompt(style, history_length)
        reference = check_prompt_style(style) == "reference"
        cls = ScreenshotWebShopPrompt if reference else CompactScreenshotWebShopPrompt
        return cls() if history_length is None else cls(history_length=history_length)

    # -- the browser ---------------------------------------------------------------------------------
    def _ensure_browser(self) -> _Browser:
        if self._browser is None:
            from agentenvs.webshop.app import create_app

            self._browser = _Browser(create_app(self.shop), self.viewport)
            self._finalizer = weakref.finalize(self, self._browser.close)
        return self._browser

    def close(self) -> None:
        """Quit the browser and its driver, stop the server (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()
        self._browser, self._finalizer = None, None
        super().close()

    def _url(self, action: str | None = None) -> str:
        base = f"{self._ensure_browser().server.url}/{self._sid}"
        return base if action is None else f"{base}/act?action={urllib.parse.quote(action)}"

    def _navigate(self, do: Any) -> None:
        """Run ``do()`` (a click or a ``get``) and wait until the browser shows the next page: the
        old page's window carries a mark that a freshly loaded page does not have. While the page
        changes, the driver may answer with errors about the old document; they are waited out."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support.ui import WebDriverWait

        driver = self._ensure_browser().live
        driver.execute_script("window.__webshopOld = true;")
        do()
        WebDriverWait(
            driver, _WAIT_S, poll_frequency=_POLL_S, ignored_exceptions=(WebDriverException,)
        ).until(lambda d: d.execute_script(_NEW_PAGE_LOADED))

    # -- base-class hooks ----------------------------------------------------------------------------
    def _load_task(self, task_id: str) -> None:
        super()._load_task(task_id)
        browser = self._ensure_browser()
        registry = browser.server.app.config["WEBSHOP_SESSIONS"]
        if self._sid:
            registry.close(self._sid)
        self._sid = uuid.uuid4().hex
        assert self.session is not None
        registry.put(self._sid, self.session)
        browser.live.get(self._url())

    def _apply(self, command: tuple[str, str]) -> tuple[float, bool]:
        name, arg = command
        if name != "noop":
            self._perform(name, arg)
        return super()._apply(("noop", ""))  # the app has applied the action to the session

    def _perform(self, name: str, arg: str) -> None:
        driver = self._ensure_browser().live
        by_css = "css selector"
        assert self.session is not None
        if name == "search" and self.session.kind == "search" and _typeable(arg):
            box = driver.find_element(by_css, "#search_input")
            box.clear()
            box.send_keys(arg)
            button = driver.find_element(by_css, "button.btn")
            self._navigate(button.click)
            return
        if name == "click":
            target = self._clickable(arg)
            if target is not None:
                self._navigate(target.click)
                return
        action = f"{name}[{arg[:MAX_QUERY_CHARS]}]"  # the shop reads no further
        self._navigate(lambda: driver.get(self._url(action)))

    def _clickable(self, label: str) -> Any:
        """The element a person would click for ``label`` (a button, a product link, or an option
        not yet selected), or ``None`` to use the act URL; one script call finds it."""
        return self._ensure_browser().live.execute_script(_FIND_CLICKABLE, label)

    def _observation(self, feedback: str) -> Any:
        driver = self._ensure_browser().live
        nodes = html_nodes(driver.page_source)
        if self.observation_mode == "text_rich":
            page = to_text_rich(nodes)
            return f"{feedback}\n{page}" if feedback else page
        text = to_text(nodes)
        text = f"{text} [SEP] {feedback}" if feedback else text
        if self.observation_mode != "screenshot":
            return text
        return {"text": text, "image": self._screenshot()}

    def _screenshot(self) -> np.ndarray:
        from PIL import Image

        png = self._ensure_browser().live.get_screenshot_as_png()
        image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        width, height = self.viewport
        out = np.full((height, width, 3), 255, np.uint8)  # pad or crop to the fixed viewport
        h, w = min(height, image.shape[0]), min(width, image.shape[1])
        out[:h, :w] = image[:h, :w]
        return out
