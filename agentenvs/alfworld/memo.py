"""Memoised pure parts of the textworld engine, switched on only inside our env's engine calls.

A bare ALFWorld step spends almost all its time re-parsing the same grammar strings with tatsu and
deep-copying derivation contexts, and a reset spends it translating the same PDDL problem twice.
:func:`engine_memos` swaps, for the duration of a ``with`` block, these functions for memoised
equivalents that return the same results (docs/alfworld.md, *Speed*):

* the text grammar's parser of derivation strings (``textworld.envs.pddl.textgen``): memoised per
  string; every call hands out a fresh copy of the parsed symbols, which the derivation mutates;
* the text grammar's ``deepcopy`` of symbols and contexts: a structural copy (symbols copied with
  their nested symbols, context dicts copied one level: the derivation only ever re-assigns a copied
  symbol's context and updates a copied dict, never mutates the entities and variables inside);
* ``textworld.logic.Rule.parse_conjunctive_query``: memoised per expression (the rule is only read);
* ``fast_downward.pddl2sas``: memoised per (domain, problem, options) (the translated task is only
  read), so a reset and a reload of a known game skip the PDDL translation;
* the domain + grammar parse of a game's ``GameLogic``: memoised per game text (its actions and
  production rules are only read).

Outside the block the engine is untouched: a bare engine in the same process runs unmodified.
The swaps target textworld 1.7.0 (what the ``alfworld`` extra pins); under another version the
block changes nothing. The memoised functions compute what the originals compute, so another
thread that runs the engine while a block is open gets the same results.

This module holds :func:`engine_memos`, :func:`memos_active` and :func:`clear_memos`.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

__all__ = ["engine_memos", "memos_active", "clear_memos", "SUPPORTED_TEXTWORLD", "GAMES_KEPT"]

#: The textworld version whose internals the swaps target.
SUPPORTED_TEXTWORLD = "1.7.0"
#: Games whose translation and parsed logic stay cached (least recently used first out; ~1 MB each).
GAMES_KEPT = 64

_lock = threading.Lock()
_depth = 0
_saved: list[tuple[Any, str, Any]] = []


def _copy_symbol(symbol: Any) -> Any:
    """A copy of a grammar symbol and of the symbols nested in it (its context is shared: every
    caller re-assigns the copy's context before reading it)."""
    from textworld.envs.pddl.textgen import Symbol

    out = copy.copy(symbol)
    for name in ("expression", "symbol"):
        inner = getattr(out, name, None)
        if isinstance(inner, Symbol):
            setattr(out, name, _copy_symbol(inner))
    return out


def _structural_copy(value: Any) -> Any:
    """What ``textgen`` deep-copies: a context dict (copied one level), a list of symbols or one
    symbol; anything else falls back to :func:`copy.deepcopy`."""
    from textworld.envs.pddl.textgen import Symbol

    if type(value) is dict:
        return dict(value)
    if type(value) is list:
        return [_copy_symbol(s) if isinstance(s, Symbol) else copy.deepcopy(s) for s in value]
    if isinstance(value, Symbol):
        return _copy_symbol(value)
    return copy.deepcopy(value)


def _memoised_functions() -> list[tuple[Any, str, Any]]:
    """``(owner, attribute, replacement)`` for every swap (call it while no swap is in place: the
    replacements wrap the functions found now)."""
    import fast_downward
    import textworld.envs.pddl.logic as pddl_logic
    import textworld.envs.pddl.textgen as textgen
    from textworld.logic import Rule

    parse_text = lru_cache(maxsize=4096)(textgen._parse_and_convert)
    parse_query = lru_cache(maxsize=4096)(Rule.parse_conjunctive_query)

    def symbols(text: str, rule_name: str = "symbols", trace: bool = False) -> list:
        # a fresh copy of the cached parse: the derivation mutates its symbols
        return [_copy_symbol(s) for s in parse_text(text, rule_name=rule_name)]

    def query(cls: type, expr: str) -> Any:
        return parse_query(expr)

    return [
        (textgen, "_parse_and_convert", symbols),
        (textgen, "deepcopy", _structural_copy),
        (Rule, "parse_conjunctive_query", classmethod(query)),
        # two translations per game (play and replanning)
        (fast_downward, "pddl2sas", lru_cache(maxsize=2 * GAMES_KEPT)(fast_downward.pddl2sas)),
        (
            pddl_logic,
            "_parse_and_convert",
            lru_cache(maxsize=GAMES_KEPT)(pddl_logic._parse_and_convert),
        ),
    ]


@lru_cache(maxsize=1)
def _swaps() -> tuple[tuple[Any, str, Any], ...]:
    try:
        import textworld
    except ImportError:
        return ()
    if textworld.__version__ != SUPPORTED_TEXTWORLD:
        return ()
    return tuple(_memoised_functions())


def clear_memos() -> None:
    """Forget every memoised result (the next block starts cold)."""
    _swaps.cache_clear()


def memos_active() -> bool:
    """Whether an :func:`engine_memos` block is open."""
    return _depth > 0


@contextlib.contextmanager
def engine_memos() -> Iterator[None]:
    """Run the engine with its memoised pure functions for the duration of the block (re-entrant).

    >>> with engine_memos():
    ...     memos_active()
    True
    >>> memos_active()
    False
    """
    global _depth
    with _lock:
        if _depth == 0:
            swaps = _swaps()
            _saved[:] = [(owner, name, owner.__dict__[name]) for owner, name, _ in swaps]
            for owner, name, new in swaps:
                setattr(owner, name, new)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for owner, name, old in _saved:
                    setattr(owner, name, old)
                _saved.clear()
