"""The second grading path: FAIL_TO_PASS tests run in a process that never imports pytest
(docs/swe.md, "Grading", 6).

Grading copies this file (as ``agentenvs_plain_runner.py``) next to
:mod:`agentenvs.swe.grade_launcher`, which loads it in ``plain`` mode and writes what :func:`run`
returns into the authenticated report. A patch of pytest's machinery (reports, hooks, the
runner) does nothing here: the real ``pytest`` is never imported. Test files see a stand-in
``pytest`` module (:func:`stand_in`) with ``raises``, ``fail``, ``param`` and
``mark.parametrize``; anything else it is asked for makes the test ``UNSUPPORTED``.

A node id ``path::[Class::]name[params]`` runs as pytest's default ``prepend`` import mode
would import it (the first directory above the file without ``__init__.py`` first on
``sys.path``). Outcomes: ``PASSED`` (the call returned), ``FAILED`` (it raised), or
``UNSUPPORTED`` (a fixture argument, another mark, a ``conftest.py`` above the file, a setup
method, a parametrisation id this module does not derive as pytest does, a stand-in attribute
it lacks, a coroutine): grading then cannot compare that test. It imports nothing from
``agentenvs``.

This module holds :class:`Unsupported`, :func:`stand_in`, :func:`param_ids`, :func:`run_one` and
:func:`run`.

>>> param_ids(["a, b"], [[(1, "x"), (2.5, None)]], ["a", "b"])
['1-x', '2.5-None']
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
import types
from typing import Any

__all__ = ["Unsupported", "stand_in", "param_ids", "run_one", "run"]


class Unsupported(Exception):
    """The test uses something this runner does not do as pytest does."""


class _Param:
    def __init__(self, values: tuple[Any, ...], id: str | None, marks: Any) -> None:
        self.values, self.id, self.marks = values, id, marks


class _Raises:
    """``pytest.raises(kind, match=...)`` as a context manager (``.value``, ``.type``)."""

    def __init__(self, kind: Any, match: str | None) -> None:
        self.kind, self.match, self.value, self.type = kind, match, None, None

    def __enter__(self) -> _Raises:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if kind is None:
            raise AssertionError(f"DID NOT RAISE {self.kind}")
        if not issubclass(kind, self.kind):
            return False
        if self.match is not None and not re.search(self.match, str(value)):
            raise AssertionError(f"{self.match!r} does not match {str(value)!r}")
        self.value, self.type = value, kind
        return True


def _raises(kind: Any, *args: Any, match: str | None = None, **kwargs: Any) -> Any:
    if args:  # the call form: pytest.raises(E, func, *args, **kwargs)
        with _Raises(kind, match) as info:
            args[0](*args[1:], **kwargs)
        return info
    if kwargs:
        raise Unsupported(f"pytest.raises() options {sorted(kwargs)}")
    return _Raises(kind, match)


def _fail(reason: str = "", pytrace: bool = True) -> None:
    raise AssertionError(reason)


class _Mark:
    """``pytest.mark``: ``parametrize`` records its arguments on the function; any other mark
    records its name (the test is then unsupported)."""

    def parametrize(self, argnames: Any, argvalues: Any, ids: Any = None, **kwargs: Any) -> Any:
        def apply(func: Any) -> Any:
            func.__dict__.setdefault("_plain_params", []).append((argnames, argvalues, ids))
            if kwargs:
                func.__dict__.setdefault("_plain_marks", []).append("parametrize options")
            return func

        return apply

    def __getattr__(self, name: str) -> Any:
        def mark(*args: Any, **kwargs: Any) -> Any:
            if len(args) == 1 and callable(args[0]) and not kwargs:
                args[0].__dict__.setdefault("_plain_marks", []).append(name)
                return args[0]
            return lambda func: mark(func)

        return mark


def stand_in() -> types.ModuleType:
    """A module to install as ``sys.modules["pytest"]`` (see the module doc)."""
    module = types.ModuleType("pytest", "stand-in for pytest without pytest (agentenvs)")
    module.raises = _raises  # type: ignore[attr-defined]
    module.fail = _fail  # type: ignore[attr-defined]
    module.param = lambda *values, id=None, marks=(): _Param(values, id, marks)  # type: ignore[attr-defined]
    module.mark = _Mark()  # type: ignore[attr-defined]

    def missing(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise Unsupported(f"pytest.{name}")

    module.__getattr__ = missing  # type: ignore[method-assign]  # a module's PEP 562 hook
    return module


def _idval(value: Any, argname: str, index: int) -> str:
    """pytest's id of one parameter value (``argname`` + ``index`` for other types)."""
    if isinstance(value, (str, bytes)):
        text = value.decode("ascii", "backslashreplace") if isinstance(value, bytes) else value
        return text.encode("unicode_escape").decode("ascii")
    if value is None or isinstance(value, (float, int, bool, complex)):
        return str(value)
    if isinstance(value, re.Pattern):
        return _idval(value.pattern, argname, index)
    if isinstance(getattr(value, "__name__", None), str) and not isinstance(value, _Param):
        return value.__name__
    return f"{argname}{index}"


def param_ids(argnames: list[Any], argvalues: list[Any], names: list[str]) -> list[str]:
    """The ids pytest gives one ``parametrize(argnames[0], argvalues[0])`` (one mark only) whose
    argument names are ``names``; ``Unsupported`` for explicit or duplicate ids."""
    ids = []
    for index, values in enumerate(argvalues[0]):
        if isinstance(values, _Param):
            if values.id is not None:
                ids.append(values.id)
                continue
            values = values.values
        elif len(names) == 1:
            values = (values,)
        ids.append("-".join(_idval(v, n, index) for v, n in zip(values, names, strict=True)))
    if len(set(ids)) != len(ids):
        raise Unsupported("duplicate parametrisation ids")
    return ids


def _argnames(argnames: Any) -> list[str]:
    if isinstance(argnames, str):
        return [n.strip() for n in argnames.split(",") if n.strip()]
    return list(argnames)


def _module(path: str, cache: dict[str, Any]) -> Any:
    """Import the test file ``path`` (relative to the working directory) as pytest's
    ``prepend`` mode does; ``Unsupported`` when a ``conftest.py`` lies above it."""
    if path in cache:
        return cache[path]
    full = os.path.abspath(path)
    top, here = os.getcwd(), os.path.dirname(full)
    while True:
        if os.path.exists(os.path.join(here, "conftest.py")):
            raise Unsupported(f"a conftest.py above {path}")
        if here == top or os.path.dirname(here) == here:
            break
        here = os.path.dirname(here)
    base, parts = os.path.dirname(full), [os.path.splitext(os.path.basename(full))[0]]
    while os.path.exists(os.path.join(base, "__init__.py")):
        base, parts = os.path.dirname(base), [os.path.basename(base), *parts]
    if base not in sys.path:
        sys.path.insert(0, base)
    module = importlib.import_module(".".join(parts))
    if hasattr(module, "pytestmark") or hasattr(module, "pytest_plugins"):
        raise Unsupported("module-level pytestmark or pytest_plugins")
    cache[path] = module
    return module


def _target(nodeid: str, cache: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The callable for ``nodeid`` and its keyword arguments."""
    path, *names = nodeid.split("::")
    if not names:
        raise Unsupported("not a test id")
    obj = _module(path, cache)
    last, _, params = names[-1].partition("[")
    for name in names[:-1]:
        cls = getattr(obj, name)
        for hook in ("setup_method", "teardown_method", "setup_class", "setup", "teardown"):
            if hasattr(cls, hook):
                raise Unsupported(f"{name}.{hook}")
        if type(cls).__init__ is not type.__init__ or cls.__init__ is not object.__init__:
            raise Unsupported(f"{name} has an __init__")
        obj = cls()
    func = getattr(obj, last)
    raw = getattr(func, "__func__", func)
    if getattr(raw, "_plain_marks", None):
        raise Unsupported(f"marks {raw._plain_marks}")
    names_needed = [
        p
        for p in inspect.signature(func).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    marks = getattr(raw, "_plain_params", [])
    if len(marks) > 1 or (marks and marks[0][2] is not None):
        raise Unsupported("stacked parametrize or explicit ids")
    kwargs: dict[str, Any] = {}
    if marks:
        argnames = _argnames(marks[0][0])
        argvalues = list(marks[0][1])
        ids = param_ids([marks[0][0]], [argvalues], argnames)
        wanted = params[:-1] if params.endswith("]") else None
        if wanted not in ids:
            raise Unsupported(f"no parametrisation with id {wanted!r}")
        chosen = argvalues[ids.index(wanted)]
        values = chosen.values if isinstance(chosen, _Param) else chosen
        values = (values,) if len(argnames) == 1 and not isinstance(chosen, _Param) else values
        kwargs = dict(zip(argnames, values, strict=True))
    elif params:
        raise Unsupported("parametrised id without a parametrize mark")
    if {p.name for p in names_needed} - set(kwargs):
        raise Unsupported("fixture arguments")
    return func, kwargs


def run_one(nodeid: str, cache: dict[str, Any]) -> str:
    """``PASSED``, ``FAILED`` or ``UNSUPPORTED`` for one node id (see the module doc)."""
    try:
        func, kwargs = _target(nodeid, cache)
    except Unsupported:
        return "UNSUPPORTED"
    except BaseException:  # noqa: BLE001 (an import or lookup error: the test cannot pass)
        return "FAILED"
    try:
        result = func(**kwargs)
    except Unsupported:
        return "UNSUPPORTED"
    except BaseException:  # noqa: BLE001 (the test failed, whatever it raised)
        return "FAILED"
    return "UNSUPPORTED" if inspect.isawaitable(result) else "PASSED"


def run(ids: list[str]) -> tuple[dict[str, Any], list[str], None]:
    """Run ``ids`` in order with the stand-in ``pytest`` installed: the report body
    ``{"outcomes": {id: outcome}}``, the problems found (the real pytest got imported), and no
    config."""
    sys.modules["pytest"] = stand_in()
    cache: dict[str, Any] = {}
    outcomes = {nodeid: run_one(nodeid, cache) for nodeid in ids}
    real = [n for n in ("_pytest", "pluggy") if n in sys.modules]
    found = [f"the plain run imported {', '.join(real)}"] if real else []
    return {"outcomes": outcomes}, found, None
