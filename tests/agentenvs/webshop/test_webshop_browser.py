"""WebShopBrowser-v0: the same episodes through the Flask app and a headless Chromium; the text the
browser shows equals the text env's, screenshots have the fixed viewport, and nothing is left
running after close()."""

from __future__ import annotations

import gc
import os
import random
import time

import gymnasium as gym
import numpy as np
import pytest

import agentenvs  # noqa: F401
from agentenvs.webshop.env import WebShopEnv, task_id_of

pytest.importorskip("selenium")
psutil = pytest.importorskip("psutil")
if not all(os.path.exists(p) for p in ("/usr/bin/chromium", "/usr/bin/chromedriver")):
    pytest.skip("Chromium and chromium-driver are not installed", allow_module_level=True)


def browser_children() -> list[str]:
    names = []
    for child in psutil.Process().children(recursive=True):
        try:
            names.append(child.name())
        except psutil.NoSuchProcess:
            continue
    return [n for n in names if "chrom" in n]


def wait_for_no_browser(timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while browser_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    return browser_children()


def play_side_by_side(browser, text_env, task: int, rng: random.Random, steps: int = 15) -> int:
    """Play one random admissible trajectory in both envs; assert equal results; count steps."""
    obs_b, _ = browser.reset(options={"task_id": task_id_of(task)})
    obs_t, _ = text_env.reset(options={"task_id": task_id_of(task)})
    assert obs_b == obs_t
    for step in range(steps):
        actions = text_env._admissible_actions()
        action = rng.choice(actions).replace("<your query>", text_env.session.goal.query)
        if rng.random() < 0.1:
            action = "click[not a button]"  # refused: both add the same note
        out_b = browser.step(action)
        out_t = text_env.step(action)
        assert out_b[:4] == out_t[:4], (step, action)
        assert out_b[4]["state_key"] == out_t[4]["state_key"]
        if out_t[2] or out_t[3]:
            return step + 1
    return steps


@pytest.fixture
def pair(webshop_fixture_dir):
    browser = gym.make(
        "agentenvs/WebShopBrowser-v0", data_path=webshop_fixture_dir, action_format="plain"
    )
    text_env = WebShopEnv(data_path=webshop_fixture_dir, action_format="plain")
    yield browser, text_env
    browser.close()


def test_browser_episode_equals_the_text_env(pair):
    browser, text_env = pair
    rng = random.Random(0)
    assert sum(play_side_by_side(browser, text_env, 404, rng) for _ in range(2)) >= 10
    assert browser_children()  # Chromium and its driver are running
    browser.close()
    browser.close()  # idempotent
    assert wait_for_no_browser() == []


def test_scripted_purchase_in_the_browser(pair):
    browser, _ = pair
    browser.reset(options={"task_id": task_id_of(404)})
    browser.step(
        "search[shein women's sexy one shoulder sleeveless cutout mini club pencil bodycon dress]"
    )
    for action in ("click[b08zrr3dzt]", "click[black]", "click[black]", "click[small]"):
        obs, *_, info = browser.step(action)
    assert info["options"] == {"color": "black", "size": "small"}
    obs, reward, terminated, truncated, info = browser.step("click[buy now]")
    assert (reward, terminated, info["won"]) == (10.0, True, True)
    assert "Your score (min 0.0, max 1.0) [SEP] 1.0" in obs


def test_screenshot_mode_and_garbage_collection():
    env = gym.make(
        "agentenvs/WebShopBrowser-v0", observation_mode="screenshot", viewport=(640, 480)
    )
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["image"].shape == (480, 640, 3) and obs["image"].dtype == np.uint8
    assert obs["image"].std() > 5 and obs["text"].startswith("WebShop [SEP] Instruction:")
    del env, obs
    gc.collect()
    assert wait_for_no_browser() == []


@pytest.mark.slow
def test_text_equals_browser_on_fifty_trajectories(pair):
    browser, text_env = pair
    rng = random.Random(1)
    steps = sum(play_side_by_side(browser, text_env, rng.randrange(501), rng) for _ in range(50))
    assert steps > 200


@pytest.mark.slow
@pytest.mark.long  # about 6 minutes on 2 cores
def test_one_hundred_browser_episodes_leave_nothing_behind(webshop_fixture_dir):
    rng = random.Random(2)
    for episode in range(100):
        env = gym.make(
            "agentenvs/WebShopBrowser-v0", data_path=webshop_fixture_dir, action_format="plain"
        )
        env.reset(options={"task_id": task_id_of(rng.randrange(501))})
        env.step("search[dress]")
        if episode % 2:
            env.close()
        else:
            del env  # garbage collection cleans up too
            gc.collect()
    assert wait_for_no_browser() == []


def test_carriage_returns_in_product_text_survive_the_browser(tmp_path):
    """A browser reads a raw carriage return in HTML as a line feed; the pages write it as
    ``&#13;``, so the browser shows the text env's exact text."""
    import json

    raw = [{
        "asin": "B0CRTEST01", "name": "Mug\rTwo", "full_description": "One\r\nTwo\rthree",
        "small_description": ["a\r\nb "], "pricing": "$5", "category": "garden", "query": "mugs",
    }]  # fmt: skip
    (tmp_path / "items_shuffle.json").write_text(json.dumps(raw))
    ins = {"B0CRTEST01": {"attributes": ["mug"], "instruction": "Find me mugs",
                          "instruction_attributes": ["mug"]}}  # fmt: skip
    (tmp_path / "items_ins_v2.json").write_text(json.dumps(ins))
    kwargs = {"data_path": str(tmp_path), "action_format": "plain", "split": "test"}
    browser = gym.make("agentenvs/WebShopBrowser-v0", **kwargs)
    text_env = WebShopEnv(**kwargs)
    try:
        for env in (browser, text_env):
            env.reset(options={"task_id": "goal-0"})
        for action in ("search[mugs]", "click[b0crtest01]", "click[description]", "click[< prev]",
                       "click[features]"):  # fmt: skip
            assert browser.step(action)[0] == text_env.step(action)[0], action
        assert "\r" in text_env.page_text()
    finally:
        browser.close()
