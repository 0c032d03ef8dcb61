"""Slow ALFWorld checks: every shipped game is won by its walkthrough, 10k fuzzed actions, no
memory growth over 2,000 resets, and the planner re-solves a sample of games."""

from __future__ import annotations

import gc
import random

import pytest

pytest.importorskip("alfworld")
pytest.importorskip("textworld")
psutil = pytest.importorskip("psutil")

from agentenvs.alfworld.env import ALFWorldEnv  # noqa: E402
from agentenvs.alfworld.panel import default_panel  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.long  # about 11 minutes on 2 cores; the default run wins one game per type and split
def test_every_shipped_game_is_won_by_its_walkthrough():
    env = ALFWorldEnv(data_path="embedded", action_format="plain")
    assert {r["split"] for r in default_panel()} == {"train", "test_seen", "test_unseen"}
    failures = []
    for record in default_panel():
        _, info = env.reset(options={"task_id": record["id"]})
        assert not info["won"] and info["goal_condition_success_rate"] < 1.0
        for t, command in enumerate(record["walkthrough"], 1):
            _, reward, terminated, _, info = env.step(command)
            if terminated != (t == len(record["walkthrough"])):
                failures.append(record["id"])
                break
        else:
            if reward != 10.0 or info["goal_condition_success_rate"] != 1.0:
                failures.append(record["id"])
    assert failures == []


def test_ten_thousand_fuzzed_actions():
    env = ALFWorldEnv(data_path="embedded")
    rng = random.Random(1)
    junk = [
        "",
        "<action></action>",
        "<think>x</think><action>\n</action>",
        "\x00\x01",
        3.5,
        None,
        "<action>" * 5,
    ]
    obs, info = env.reset(seed=1)
    for i in range(10_000):
        u = rng.random()
        if u < 0.55 and info["admissible_actions"]:
            action = f"<think>t</think><action>{rng.choice(info['admissible_actions'])}</action>"
        elif u < 0.8:
            text = "".join(
                rng.choice("abcdefghij klmnop 0123456789<>/") for _ in range(rng.randint(0, 40))
            )
            action = f"<think>t</think><action>{text}</action>"
        else:
            action = rng.choice(junk)
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and env.observation_space.contains(obs)
        if terminated or truncated:
            obs, info = env.reset(
                options={"task_id": env.tasks.ids("train")[i % 7]} if i % 3 else None
            )


def test_two_thousand_resets_do_not_leak():
    env = ALFWorldEnv(data_path="embedded", action_format="plain")
    ids = list(env.tasks.ids("train"))[:4]
    for i in range(50):
        env.reset(options={"task_id": ids[(i // 10) % 4]})
        env.step("look")
    gc.collect()
    rss0 = psutil.Process().memory_info().rss
    for i in range(2_000):
        env.reset(options={"task_id": ids[(i // 25) % 4]})  # a game switch (load) every 25 resets
        env.step("look")
    gc.collect()
    growth_mb = (psutil.Process().memory_info().rss - rss0) / 2**20
    assert growth_mb < 50, growth_mb


def test_planner_resolves_a_sample_of_games():
    from agentenvs.alfworld.engine import make_engine, solve
    from agentenvs.alfworld.panel import record_to_game

    engine = make_engine()
    for record in default_panel()[::60]:
        won_at_reset, plan, won_at = solve(engine, record_to_game(record), timeout=120)
        assert not won_at_reset and plan == record["walkthrough"] and won_at == len(plan)
