"""The alfworld/TextWorld PDDL engine, loaded the way ALFWorld's text env loads it.

This module holds :func:`make_engine` (``PddlEnv`` wrapped by ALFWorld's ``AlfredDemangler``, so
entity names, feedback and admissible commands are exactly ALFWorld's), :func:`load_game_data`
(read a ``game.tw-pddl`` file), :func:`replay` (play commands, report the step that first wins),
:func:`solve` (the planner expert's plan and its replay, in a child process with a timeout) and
:func:`replan` (the planner's plan from the current state, the same way). ``alfworld`` and
``textworld`` are imported inside the functions.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "keep_argv",
    "make_engine",
    "load_game_data",
    "replay",
    "solve",
    "replan",
    "PlannerTimeout",
]


@contextlib.contextmanager
def keep_argv() -> Iterator[None]:
    """Restore ``sys.argv`` afterwards: fast_downward's PDDL translation overwrites it on every
    game load and reset."""
    saved = list(sys.argv)
    try:
        yield
    finally:
        sys.argv = saved


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


def replay(engine: Any, commands: Sequence[str]) -> int | None:
    """Reset the game loaded in ``engine``, play ``commands``; the 1-based step that first wins."""
    engine.reset()
    for t, command in enumerate(commands, 1):
        state, _, _ = engine.step(command)
        if state["won"]:
            return t
    return None


def _solve_child(engine: Any, game: Mapping, conn: Any) -> None:
    try:
        from textworld.core import GameState

        engine.load(dict(game))
        pddl = engine.unwrapped
        won_at_reset = bool(pddl._pddl_state.check_goal())
        walkthrough = list(pddl._pddl_state.replan(pddl._entity_infos))
        # PddlEnv.reset() minus its rebuild of the (still pristine) PDDL state: halves the cost
        pddl.prev_state, pddl.state, pddl._last_action, pddl._moves = None, GameState(), None, 0
        pddl._gather_infos()
        won_at = None
        for t, command in enumerate(walkthrough, 1):
            if engine.step(command)[0]["won"]:
                won_at = t
                break
        conn.send(("ok", (won_at_reset, walkthrough, won_at)))
    except Exception as exc:  # reported to the parent, which raises
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _replan_child(engine: Any, conn: Any) -> None:
    try:
        pddl = engine.unwrapped
        conn.send(("ok", list(pddl._pddl_state.replan(pddl._entity_infos))))
    except Exception as exc:  # reported to the parent, which raises
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _in_child(target: Any, args: tuple, timeout: float) -> Any:
    """``target(*args, conn)`` in a forked child; what it sends back through ``conn``. Raises
    :class:`PlannerTimeout` after ``timeout`` seconds (the child is killed) and ``RuntimeError``
    when it reports an error."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(*args, child), daemon=True)
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


def solve(engine: Any, game: Mapping, timeout: float = 30.0) -> tuple[bool, list[str], int | None]:
    """Ask the planner expert to solve ``game`` and replay its plan.

    Everything runs in a forked child (one game load, no reset) so a slow search can be stopped.
    Returns ``(won_at_reset, plan, won_at)`` with ``won_at`` the 1-based step of the plan that first
    wins (``None`` if none does); an empty plan means the planner found none. Raises
    :class:`PlannerTimeout` after ``timeout`` seconds and ``RuntimeError`` if the engine fails.
    ``engine`` (from :func:`make_engine`) is only read by the child.
    """
    return _in_child(_solve_child, (engine, dict(game)), timeout)


def replan(engine: Any, timeout: float = 30.0) -> list[str]:
    """The planner expert's plan from the current state of the game in play in ``engine`` (ALFWorld's
    command names; empty: no plan, or the goal already holds), computed in a forked child (the
    engine is only read). Raises :class:`PlannerTimeout` after ``timeout`` seconds and
    ``RuntimeError`` if the planner fails."""
    return _in_child(_replan_child, (engine,), timeout)
