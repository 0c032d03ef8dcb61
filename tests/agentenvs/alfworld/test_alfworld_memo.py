"""The memoised engine (agentenvs/alfworld/memo.py) gives exactly the bare engine's results.

Our env runs the engine inside :func:`engine_memos`; a bare engine in the same process runs outside
it. Both play the same commands (random admissible ones, unknown text, and walkthrough stretches that
win) and must agree on every observation, admissible command list, reward, ``won`` flag and PDDL
fact set (docs/alfworld.md, *Speed*).
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("alfworld")
textworld = pytest.importorskip("textworld")

from agentenvs.alfworld import TASK_TYPE_NAMES  # noqa: E402
from agentenvs.alfworld.engine import keep_argv, make_engine  # noqa: E402
from agentenvs.alfworld.env import ALFWorldEnv  # noqa: E402
from agentenvs.alfworld.memo import clear_memos, engine_memos, memos_active  # noqa: E402
from agentenvs.alfworld.panel import default_panel  # noqa: E402


def games_of(task_type: str, n: int) -> list[str]:
    return [r["id"] for r in default_panel() if r["task_type"] == task_type][:n]


def facts_of(state) -> list[str]:
    return sorted(str(f) for f in state["_facts"])


def play_both(task_type: str, steps: int, games: int = 2) -> int:
    """Play ``steps`` commands on our env and on a bare engine over ``games`` games of the type;
    assert equal results step by step; return the number of wins seen."""
    rng = random.Random(task_type)
    env = ALFWorldEnv(data_path="embedded", action_format="plain", max_steps=10**9)
    engine = make_engine(textworld.EnvInfos(won=True, admissible_commands=True))
    ids, wins, episodes = games_of(task_type, games), 0, 0
    try:
        for k in range(steps):
            if k % (steps // games or 1) == 0 or k == 0:  # next game (a load on both sides)
                task = ids[(k * games // steps) % len(ids)]
                with keep_argv():
                    engine.load(env.games.game(task))
                    state = engine.reset()
                obs, info = env.reset(options={"task_id": task})
                plan, episodes = iter(env.walkthrough()), episodes + 1
                assert obs == state.feedback
            # every other episode follows the walkthrough (and wins), the others walk at random
            command = next(plan, None) if episodes % 2 else None
            if command is None:
                command = rng.choice([*state["admissible_commands"], "jump over the moon"])
            assert not memos_active()
            with keep_argv():
                state, score, done = engine.step(command)
            obs, reward, terminated, truncated, info = env.step(command)
            admissible = [c for c in state["admissible_commands"] if c != "help"]
            assert obs == state.feedback, (task, k, command)
            assert info["admissible_actions"] == admissible, (task, k, command)
            assert (reward, terminated) == (env.win_reward * score, state["won"])
            assert facts_of(env._state) == facts_of(state)
            if done:
                wins += 1
                with keep_argv():
                    state = engine.reset()
                obs, info = env.reset(options={"task_id": task})
                plan, episodes = iter(env.walkthrough()), episodes + 1
                assert obs == state.feedback
    finally:
        env.close()
        engine.close()
    return wins


@pytest.mark.parametrize("task_type", TASK_TYPE_NAMES)
def test_memoised_env_equals_the_bare_engine(task_type):
    assert play_both(task_type, steps=24, games=1) >= 1


@pytest.mark.slow
@pytest.mark.long  # 2-4 minutes per type on 2 cores; the default run plays 24 steps of each
@pytest.mark.parametrize("task_type", TASK_TYPE_NAMES)
def test_thousand_random_steps_per_type_equal_the_bare_engine(task_type):
    assert play_both(task_type, steps=1000, games=5) >= 5


def test_swaps_live_only_inside_the_block():
    import fast_downward
    import textworld.envs.pddl.textgen as textgen
    from textworld.logic import Rule

    originals = (textgen._parse_and_convert, textgen.deepcopy, fast_downward.pddl2sas)
    query = Rule.__dict__["parse_conjunctive_query"]
    with pytest.raises(RuntimeError), engine_memos():
        with engine_memos():  # re-entrant: the inner exit keeps the swaps
            pass
        assert memos_active()
        assert textgen._parse_and_convert is not originals[0]
        assert Rule.__dict__["parse_conjunctive_query"] is not query
        raise RuntimeError("restored on error too")
    assert (textgen._parse_and_convert, textgen.deepcopy, fast_downward.pddl2sas) == originals
    assert Rule.__dict__["parse_conjunctive_query"] is query


def test_another_textworld_version_runs_the_plain_engine(monkeypatch):
    import textworld.envs.pddl.textgen as textgen

    original = textgen._parse_and_convert
    monkeypatch.setattr(textworld, "__version__", "99.0")
    clear_memos()
    try:
        with engine_memos():
            assert textgen._parse_and_convert is original
    finally:
        monkeypatch.undo()
        clear_memos()
    with engine_memos():
        assert textgen._parse_and_convert is not original
