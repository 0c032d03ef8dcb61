"""``agentenvs play ENV_ID``: a person plays an env in the terminal.

This module holds :func:`play` (the loop, on any text streams) and the subcommand's
:func:`add_parser` / :func:`run`.

Each turn prints the observation (a text env's text; ``obs["text"]`` of a visual env; for other
observations the env's ``ansi`` rendering) and the admissible actions, numbered from 1, when
``info["admissible_actions"]`` has them (a ``Discrete`` env: its action meanings). Then one line is
read (echoed when the input is not a terminal, so a piped session reads as a transcript):

* a number picks that admissible action (a ``Discrete`` env: that action);
* ``:r`` resets (the same ``--task`` when one was given, else the next drawn task), ``:q`` or the
  end of input quits (exit status 0);
* any other text is the action. A tagged env (``action_format="tagged"``) gets it wrapped as
  ``<think></think><action>TEXT</action>`` unless it already holds an ``<action>`` tag; envs with
  their own syntax (SearchQA's ``<search>``/``<answer>``) take it as typed.

After each step the reward, ``won`` and whether the episode is over are printed (and why an
action was invalid).

>>> import io
>>> out = io.StringIO()
>>> play("agentenvs/Sokoban-v0", task="seed-42", stdin=io.StringIO("4\\nright\\n"), stdout=out)
0
>>> [line for line in out.getvalue().splitlines() if "won" in line]
['reward -0.100  won False  done False', 'reward 10.900  won True  done True']
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

import gymnasium as gym

from agentenvs.cli.errors import CLIError, make_env, parse_env_kwargs

__all__ = ["play", "wrap_action", "add_parser", "run"]

#: Admissible actions listed per turn (a number still picks any of them).
MAX_LISTED = 40


def wrap_action(text: str, action_format: str | None) -> str:
    """``text`` in the ``<think>``/``<action>`` syntax of a tagged env, else unchanged.

    >>> wrap_action("up", "tagged"), wrap_action("up", "plain")
    ('<think></think><action>up</action>', 'up')
    """
    if action_format == "tagged" and "<action>" not in text.lower():
        return f"<think></think><action>{text}</action>"
    return text


def _text_of(env: gym.Env, obs: Any) -> str:
    """What a person reads of ``obs``."""
    if isinstance(obs, str):
        return obs
    if isinstance(obs, dict) and isinstance(obs.get("text"), str):
        return obs["text"]
    if getattr(env, "render_mode", None) == "ansi":
        return str(env.render())
    return repr(obs)


def _attr(env: gym.Env, name: str) -> Any:
    try:
        return env.get_wrapper_attr(name)
    except AttributeError:
        return None


def _make(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """The env; one whose observations are not text is made with ``render_mode="ansi"`` when it
    offers that rendering (so a person sees the board)."""
    env = make_env(env_id, **kwargs)
    if "render_mode" in kwargs or isinstance(env.observation_space, gym.spaces.Text):
        return env
    if isinstance(env.observation_space, gym.spaces.Dict) and "text" in env.observation_space:
        return env
    if "ansi" in env.metadata.get("render_modes", ()):
        env.close()
        return make_env(env_id, **kwargs, render_mode="ansi")
    return env


def play(
    env_id: str,
    task: str | None = None,
    seed: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Play ``env_id`` reading one action per line from ``stdin``; returns the exit status (0).

    Args:
        env_id: a registered id, e.g. ``"agentenvs/Sokoban-v0"``.
        task: the task id every reset plays (default: drawn by the env).
        seed: the first reset's seed.
        env_kwargs: forwarded to ``gym.make``.
        stdin, stdout: the streams (default ``sys.stdin`` / ``sys.stdout``).

    Raises:
        CLIError: unknown env id, bad keyword arguments or an unknown task id.
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    env = _make(env_id, dict(env_kwargs or {}))

    def say(text: str = "") -> None:
        stdout.write(text + "\n")

    space = env.action_space
    discrete = isinstance(space, gym.spaces.Discrete)
    # a discrete env's action names: its ``commands``, else the indices
    meanings: list[str] = list((_attr(env, "commands") if discrete else None) or [])
    if isinstance(space, gym.spaces.Discrete) and not meanings:
        meanings = [str(i) for i in range(int(space.n))]
    action_format = None if discrete else _attr(env, "action_format")
    options = {"task_id": task} if task is not None else None

    def reset(seed: int | None) -> tuple[Any, dict[str, Any]]:
        try:
            obs, info = env.reset(seed=seed, options=options)
        except ValueError as exc:  # e.g. an unknown task id
            raise CLIError(f"{env_id}: {exc}") from None
        say(f"=== {env_id}  task {info.get('task_id', '?')} ===")
        return obs, info

    try:
        obs, info = reset(seed)
        done, total = False, 0.0
        while True:
            if not done:
                say(_text_of(env, obs))
                choices: list[str] = (
                    meanings if discrete else list(info.get("admissible_actions") or [])
                )
                if choices:
                    listed = "  ".join(f"{i}) {a}" for i, a in enumerate(choices[:MAX_LISTED], 1))
                    more = len(choices) - MAX_LISTED
                    say("actions: " + listed + (f"  ... ({more} more)" if more > 0 else ""))
            stdout.write("> ")
            stdout.flush()
            line = stdin.readline()
            if line and not stdin.isatty():  # piped input: echo it so the transcript reads well
                stdout.write(line if line.endswith("\n") else line + "\n")
            if not line or line.strip() == ":q":
                say()
                return 0
            line = line.strip()
            if line == ":r":
                obs, info = reset(None)
                done, total = False, 0.0
                continue
            if not line:
                continue
            if done:
                say("the episode is over: :r plays again, :q quits")
                continue
            if line.isdigit():
                index = int(line) - 1
                if not 0 <= index < len(choices):
                    say(f"no action {line}: pick 1..{len(choices)} or type an action")
                    continue
                action: Any = index if discrete else choices[index]
            elif discrete:
                if line not in meanings:
                    say(f"unknown action {line!r}: pick 1..{len(meanings)} or one of {meanings}")
                    continue
                action = meanings.index(line)
            else:
                action = line
            if not discrete:
                action = wrap_action(action, action_format)
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            done = bool(terminated or truncated)
            status = f"reward {float(reward):.3f}  won {bool(info.get('won', False))}  done {done}"
            if info.get("action_valid") is False:
                status += f"  (invalid: {info.get('invalid_reason', '')})"
            say(status)
            if done:
                say(_text_of(env, obs))
                say(f"episode over: return {total:.3f}. :r plays again, :q quits")
    finally:
        env.close()


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "play",
        help="play an env in the terminal",
        description="Play an env: a number picks an admissible action, other text is the action, "
        ":r resets, :q or end of input quits.",
    )
    p.add_argument("env_id", metavar="ENV_ID", help="e.g. agentenvs/Sokoban-v0")
    p.add_argument("--task", default=None, help="task id every reset plays (e.g. seed-42)")
    p.add_argument("--seed", type=int, default=None, help="seed of the first reset")
    p.add_argument(
        "--env-kwargs", default=None, help="JSON keyword arguments, e.g. '{\"max_steps\": 5}'"
    )


def run(args: argparse.Namespace) -> int:
    return play(args.env_id, args.task, args.seed, parse_env_kwargs(args.env_kwargs))
