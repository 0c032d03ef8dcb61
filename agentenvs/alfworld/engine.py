"""The alfworld/TextWorld PDDL engine, loaded the way ALFWorld's text env loads it.

This module holds :func:`make_engine` (``PddlEnv`` wrapped by ALFWorld's ``AlfredDemangler``, so
entity names, feedback and admissible commands are exactly ALFWorld's), :func:`load_game_data`
(read a ``game.tw-pddl`` file), :func:`replay` (play commands, report the step that first wins) and
:func:`plan` (the planner expert's plan, in a child process with a timeout). ``alfworld`` and
``textworld`` are imported inside the functions.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["make_engine", "load_game_data", "replay", "plan", "PlannerTimeout"]


class PlannerTimeout(RuntimeError):
    """The planner did not answer within its time limit."""


def make_engine(request_infos: Any = None) -> Any:
    """A ``textworld`` ``PddlEnv`` behind ALFWorld's demangler (load games with ``.load(data)``)."""
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
    from textworld.envs.pddl import PddlEnv

    infos = request_infos or textworld.EnvInfos(won=True, admissible_commands=True)
    return AlfredDemangler(shuffle=False)(PddlEnv(infos))


def load_game_data(path: str) -> dict:
    """The JSON object of a ``game.tw-pddl`` file."""
    with open(path) as f:
        return json.load(f)


def replay(engine: Any, game: Mapping, commands: Sequence[str]) -> int | None:
    """Load ``game`` into ``engine``, play ``commands``; the 1-based step that first wins, or None."""
    engine.load(dict(game))
    engine.reset()
    for t, command in enumerate(commands, 1):
        state, _, _ = engine.step(command)
        if state["won"]:
            return t
    return None


def _plan_child(game: Mapping, conn: Any) -> None:
    try:
        import textworld

        engine = make_engine(textworld.EnvInfos(won=True, policy_commands=True))
        engine.load(dict(game))
        conn.send(("ok", list(engine.reset()["policy_commands"])))
    except Exception as exc:  # reported to the parent, which raises
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def plan(game: Mapping, timeout: float = 30.0) -> list[str]:
    """The planner expert's plan (Fast Downward via textworld) for ``game`` at reset.

    Runs in a forked child so a slow search can be stopped: raises :class:`PlannerTimeout` after
    ``timeout`` seconds and ``RuntimeError`` if the planner fails. An empty list means no plan.
    """
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_plan_child, args=(dict(game), child), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise PlannerTimeout(f"planner gave no plan within {timeout:g} s")
        status, value = parent.recv()
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        parent.close()
    if status != "ok":
        raise RuntimeError(f"planner failed: {value}")
    return value
