"""The grading entry point inside the sandbox (docs/swe.md, "Grading", 4, 6 and 7).

Grading copies this file (as ``agentenvs_grade.py``), :mod:`agentenvs.swe.report_plugin` and
:mod:`agentenvs.swe.plain_runner` into a private read-only directory of the sandbox and runs::

    python -I agentenvs_grade.py MODE REPORT_DIR ARGS...

``MODE`` is ``pytest`` (``ARGS`` are pytest's: options, then node ids) or ``plain`` (``ARGS`` are
node ids, run without pytest by :mod:`~agentenvs.swe.plain_runner`). ``-I`` keeps ``/testbed``,
``PYTHON*`` variables and the user site off ``sys.path``; this file then, before any code of the
tree runs:

1. reads the per-grading nonce from ``REPORT_DIR/nonce`` and deletes it, and creates
   ``REPORT_DIR/report.json`` (``O_EXCL``), keeping its descriptor;
2. imports the runner (pytest, every ``_pytest`` module, pluggy) and the standard modules the
   report path uses, and records each module object and each of their functions, classes and
   code objects (:func:`snapshot`);
3. only then puts the working directory (and the command's ``PYTHONPATH``) on ``sys.path``.

After the run it checks (:func:`problems`) that every recorded object is still in place, that no
module named like a standard or runner module was loaded from the tree, that no pytest hook came
from a file of the tree other than a ``conftest.py``, that no trace/profile function is set and
no other thread is still running, that nothing else wrote into the report file and that pytest
did not stop with an internal error. It then writes ``{"body": ..., "mac": HMAC-SHA256(nonce,
body)}`` with the descriptor from step 1 (the body also names the file each recorded module came
from) and leaves with ``os._exit``: no ``atexit`` handler or finalizer of the tree runs after the
report. It imports nothing from ``agentenvs``.

This module holds :data:`PROTECTED`, :func:`snapshot`, :func:`problems`, :func:`write_report` and
:func:`main`.

>>> taken = snapshot(["json"])
>>> [p for p in problems(taken, "/nonexistent") if p.startswith("json")]
[]
>>> saved, json.dumps = json.dumps, lambda obj: "{}"
>>> [p.split(" from ")[0] for p in problems(taken, "/nonexistent") if p.startswith("json")]
['json.dumps was replaced']
>>> json.dumps = saved
"""

from __future__ import annotations

import os
import sys

# Bound before any code of the tree runs:
_exit, _pwrite, _close, _ftruncate, _fstat = os._exit, os.pwrite, os.close, os.ftruncate, os.fstat

import atexit  # noqa: E402, F401 (standard modules the report path uses, imported before the tree)
import hashlib  # noqa: E402
import hmac  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402, F401
import threading  # noqa: E402
import types  # noqa: E402
from typing import Any  # noqa: E402

__all__ = ["PROTECTED", "snapshot", "problems", "write_report", "main"]

#: Modules whose objects must be the ones loaded here when the report is written: the standard
#: modules the report path uses (plus every ``pytest``/``_pytest``/``pluggy`` module in pytest
#: mode, and the report plugin).
PROTECTED = (
    "builtins",
    "os",
    "posix",
    "io",
    "_io",
    "json",
    "json.encoder",
    "json.decoder",
    "hmac",
    "hashlib",
    "_hashlib",
    "atexit",
    "threading",
    "importlib",
    "importlib.util",
    "pathlib",
    "types",
)
#: Standard modules that pytest may import lazily during a run, imported before the tree.
_EAGER = ("ast", "difflib", "inspect", "pprint", "tokenize", "traceback", "warnings", "decimal")
_RUNNER_TOPS = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py")
_here = os.path.dirname(os.path.abspath(__file__))
_hmac_new, _sha256, _dumps = hmac.new, hashlib.sha256, json.dumps
_enumerate, _current, _main_thread = (
    threading.enumerate,
    threading.current_thread,
    threading.main_thread,
)


def _members(value: Any) -> dict[str, Any]:
    """The objects whose identity stands for ``value``: itself (key ``""``), a function's code
    object (``"."``), and for a class each function, method wrapper and property of its own
    namespace with its code object (``name``, ``name.``)."""
    found = {"": value}
    code = getattr(value, "__code__", None)
    if isinstance(code, types.CodeType):
        found["."] = code
    if isinstance(value, type):
        for key, member in list(vars(value).items()):
            inner = (
                member.fget if isinstance(member, property) else getattr(member, "__func__", member)
            )
            code = getattr(inner, "__code__", None)
            if isinstance(code, types.CodeType):
                found[key], found[key + "."] = member, code
    return found


def _origin(value: Any) -> str | None:
    """The file the code of ``value`` (code, a function, method, property or class) comes from."""
    if isinstance(value, types.CodeType):
        return value.co_filename
    inner = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
    code = getattr(inner, "__code__", None)
    if isinstance(code, types.CodeType):
        return code.co_filename
    module = sys.modules.get(getattr(value, "__module__", None) or "")
    return getattr(module, "__file__", None) if isinstance(value, type) else None


def snapshot(names: list[str]) -> dict[str, tuple[Any, dict[str, dict[str, Any]]]]:
    """Module name -> (the module object, attribute name -> :func:`_members` of each function
    and class it holds) for every loaded module in ``names``."""
    taken: dict[str, tuple[Any, dict[str, dict[str, Any]]]] = {}
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        attrs = {}
        for key, value in list(vars(module).items()):
            if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
                attrs[key] = _members(value)
        taken[name] = (module, attrs)
    return taken


def _under(path: object, root: str) -> bool:
    """Whether ``path`` is an absolute path inside ``root`` (after resolving links)."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return False
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip("/") + "/")


def _trusted(value: Any, tree: str) -> bool:
    """Whether ``value`` replacing a recorded object is the environment's own code (an installed
    pytest plugin's patch): its code comes from a file outside ``tree``."""
    origin = _origin(value)
    return isinstance(origin, str) and os.path.isabs(origin) and not _under(origin, tree)


def problems(taken: dict[str, tuple[Any, dict[str, dict[str, Any]]]], tree: str) -> list[str]:
    """Why the run cannot be trusted (empty when it can): a module of ``taken`` replaced, one of
    its recorded objects replaced by code that is not from a file outside ``tree``, a standard or
    runner module loaded from ``tree``, a trace or profile function, a thread other than this
    one still alive."""
    found = []
    for name, (module, attrs) in taken.items():
        if sys.modules.get(name) is not module:
            found.append(f"module {name} was replaced")
            continue
        for key, members in attrs.items():
            now = _members(vars(module).get(key))
            for part in set(members) | set(now):
                new = now.get(part)
                if new is not members.get(part) and not _trusted(new, tree):
                    where = f"{name}.{key}" + (f".{part.rstrip('.')}" if part else "")
                    found.append(f"{where} was replaced from {_origin(new) or 'unknown code'}")
                    break
    tops = set(sys.stdlib_module_names) | set(_RUNNER_TOPS)
    for name, module in list(sys.modules.items()):
        try:
            filename = vars(module).get("__file__")
        except TypeError:  # not a module object: it has no file
            continue
        if name.split(".")[0] in tops and _under(filename, tree):
            found.append(f"module {name} was loaded from the tree ({filename})")
    if sys.gettrace() is not None or sys.getprofile() is not None:
        found.append("a trace or profile function is set")
    others = [t for t in _enumerate() if t is not _current() and t.is_alive()]
    for thread in others:
        thread.join(0.5)
    if any(t.is_alive() for t in others):
        found.append("a thread started by the code under test outlived the tests")
    return found


def _hook_problems(config: Any, tree: str) -> list[str]:
    """Hooks registered from anything but a file outside ``tree`` or a ``conftest.py`` in it."""
    found = []
    for caller in list(vars(config.pluginmanager.hook).values()):
        for impl in getattr(caller, "get_hookimpls", list)():
            filename = _origin(impl.function)
            conftest = _under(filename, tree) and os.path.basename(filename or "") == "conftest.py"
            if not conftest and not _trusted(impl.function, tree):
                found.append(f"a pytest hook was registered from {filename or 'unknown code'}")
    return sorted(set(found))


def write_report(fd: int, nonce: bytes, body: dict[str, Any]) -> None:
    """Write ``{"body": body, "mac": HMAC-SHA256(nonce, canonical body)}`` to ``fd``."""
    text = _dumps(body, sort_keys=True, separators=(",", ":"))
    mac = _hmac_new(nonce, text.encode(), _sha256).hexdigest()
    data = _dumps({"body": text, "mac": mac}).encode()
    _ftruncate(fd, 0)
    done = 0
    while done < len(data):
        done += _pwrite(fd, data[done:], done)
    _close(fd)


def _load(name: str) -> types.ModuleType:
    """Load the sibling file ``name.py`` (the plugin or the plain runner) as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_here, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _import_runner() -> list[str]:
    """Import pytest with every ``_pytest`` and ``pluggy`` module; their names."""
    import pkgutil

    import _pytest
    import pluggy
    import pytest  # noqa: F401

    for package in (_pytest, pluggy):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.startswith("_pytest.") or info.name.startswith("pluggy."):
                try:
                    importlib.import_module(info.name)
                except ImportError:  # optional parts (e.g. a missing extra)
                    pass
    return [n for n in sys.modules if n.split(".")[0] in _RUNNER_TOPS]


def main(argv: list[str]) -> None:
    """Run one grading (see the module doc) and exit."""
    mode, report_dir, args = argv[0], argv[1], argv[2:]
    nonce_path = os.path.join(report_dir, "nonce")
    with open(nonce_path, "rb") as handle:
        nonce = handle.read()
    os.unlink(nonce_path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(os.path.join(report_dir, "report.json"), flags, 0o600)
    sys.dont_write_bytecode = True
    for name in _EAGER:
        importlib.import_module(name)
    names = list(PROTECTED)
    if mode == "pytest":
        names += _import_runner()
        worker = _load("agentenvs_pytest_report")
    else:
        worker = _load("agentenvs_plain_runner")
    names += [worker.__name__, __name__]
    taken = snapshot(names)
    tree = os.getcwd()
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:0] = [tree, *(os.path.join(tree, p) for p in extra)]
    try:
        body, found, config = worker.run(args)
    except BaseException as error:  # noqa: BLE001 (SystemExit, KeyboardInterrupt from the tree)
        body, found, config = {}, [f"the run raised {type(error).__name__}"], None
    found += problems(taken, tree)
    if _fstat(fd).st_size:
        found.append("the code under test wrote into the report file")
    if body.get("exitstatus") == 3:
        found.append("pytest stopped with an internal error (the code under test raised out of it)")
    if config is not None:
        found += _hook_problems(config, tree)
    body["problems"] = found
    body["origins"] = {name: vars(module).get("__file__") for name, (module, _) in taken.items()}
    write_report(fd, nonce, body)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
