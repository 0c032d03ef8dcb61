"""docs/integrations.md as a user reads it: every Python snippet runs as written in a venv of its
section's extra alone, and every install line pins torch and names our extras.

The snippets are found, not listed: every fenced block tagged ``python``, and every untagged one
that parses as Python with an import, so a new snippet is covered by the next run. One that
cannot run as written (a fragment) goes into :data:`NOT_RUN` with its reason, which ``-rs``
prints; an entry that matches no block fails. The OpenEnv client snippets get the server the
page starts them against (``agentenvs serve agentenvs/Sokoban-v0``), on a free port in place of
the page's 8000.

"A venv of its section's extra alone": the reach venv (scripts/test_reach.sh) holds every extra,
so each snippet runs in a fresh interpreter that hides every installed distribution outside the
dependency closure of ``pip install torch==2.13.0 -e ".[<extra>]"`` (the extra the page's table
names for the section's trainer): its modules cannot be imported or found (``find_spec`` gives
None) and its metadata is gone, as in a venv where pip never installed it. So an optional import
falls back as it would there, and a missing requirement fails as the user's would
(``ModuleNotFoundError: No module named 'cachetools'``). Ray workers a snippet starts would not
inherit the hiding; none of today's snippets starts one. Each extra alone also imports what its
framework's trainer or server imports on CPU (:data:`ENTRY_MODULES`). The interpreters run
:data:`WORKERS` at a time (``AGENTENVS_SNIPPET_WORKERS``, default 2)."""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.reach

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "integrations.md"
PYPROJECT = ROOT / "pyproject.toml"
REACH_SCRIPT = ROOT / "scripts" / "test_reach.sh"
TORCH_PIN = "torch==2.13.0"

#: Blocks that are not run, each found by a string it holds: (section, marker) -> why.
NOT_RUN = {
    ("TRL", "GRPOConfig(num_generations=8"): (
        "a fragment: `...` stands for the rest of GRPOConfig, and model and tokenizer are the "
        "reader's (the TRL snippet of docs/learner.md runs in full: tests/test_readme.py)"
    ),
    ("TRL", "task_from_prompt=levels.__getitem__"): (
        "a fragment: model, env_fn, args and tokenizer are the reader's (the tests train on "
        "mapped prompts: tests/learners/test_reach_trl.py)"
    ),
}
#: In every venv (``python -m venv`` seeds them); our own distribution.
SEED = ("pip", "setuptools", "agentenvs")


@dataclass(frozen=True)
class Block:
    section: str  # the ``## `` heading it sits under
    line: int  # the line of its opening fence (1-based)
    lang: str  # the fence's info string ("" when untagged)
    code: str

    @property
    def label(self) -> str:
        return f"docs/integrations.md:{self.line}"


def blocks() -> list[Block]:
    """Every fenced block of the page, with its section."""
    found, section, fence = [], "", None
    for n, line in enumerate(PAGE.read_text(encoding="utf-8").splitlines(), 1):
        if fence is None:
            if line.startswith("## "):
                section = line[3:].strip()
            elif m := re.match(r"^(`{3,})(.*)$", line):
                fence, start, lang, body = m.group(1), n, m.group(2).strip(), []
        elif line.startswith(fence) and not line.strip("`"):
            found.append(Block(section, start, lang, "\n".join(body) + "\n"))
            fence = None
        else:
            body.append(line)
    return found


def is_python(block: Block) -> bool:
    """Tagged ``python``, or untagged and valid Python with an import (not a command or URL)."""
    if block.lang.split()[:1] == ["python"]:
        return True
    if block.lang:
        return False
    try:
        tree = ast.parse(block.code)
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Import | ast.ImportFrom) for node in tree.body)


PYTHON = [b for b in blocks() if is_python(b)]


def not_run_reason(block: Block) -> str | None:
    reasons = [r for (s, m), r in NOT_RUN.items() if s == block.section and m in block.code]
    return reasons[0] if reasons else None


def section_extras() -> dict[str, str]:
    """The page's table: trainer (its section's heading) -> our extra."""
    table = PAGE.read_text(encoding="utf-8").split("\n## ", 1)[0]
    return dict(re.findall(r"^\| ([^|]+?) \| [^|]+ \| `([\w-]+)` \|", table, flags=re.M))


def declared_extras() -> set[str]:
    import tomllib

    return set(
        tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    )


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def installed() -> dict[str, md.Distribution]:
    """What pip installed in this venv (its site-packages only: a package that puts folders of
    its own on ``sys.path`` at import, as Ray does with its vendored colorama and psutil, adds no
    distribution)."""
    site = list(dict.fromkeys(sysconfig.get_path(p) for p in ("purelib", "platlib")))
    return {canon(d.metadata["Name"]): d for d in md.distributions(path=site)}


@cache
def closure(roots: tuple[str, ...]) -> frozenset[str]:
    """The installed distributions that ``pip install ROOTS`` requires, transitively (canonical
    names; requirements whose markers are false here are left out)."""
    from packaging.requirements import Requirement

    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        key = (canon(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        for text in installed()[canon(req.name)].requires or []:
            dep = Requirement(text)
            wanted = ["", *sorted(req.extras)]
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in wanted):
                todo.append(dep)
    return frozenset(name for name, _ in seen)


@cache
def hidden_outside(roots: tuple[str, ...]) -> dict:
    """What a venv of ``pip install ROOTS`` alone would lack: the installed distributions outside
    their closure, and every file those installed (resolved paths)."""
    keep = closure(roots) | set(SEED)
    dists = {name: d for name, d in installed().items() if name not in keep}
    files = {str(Path(d.locate_file(f)).resolve()) for d in dists.values() for f in d.files or []}
    return {"dists": sorted(dists), "files": sorted(files)}


#: Runs argv[1] as ``__main__`` in a fresh interpreter in which the distributions and files of
#: the JSON argv[2] are not installed: ``import`` and ``find_spec`` do not find their modules and
#: ``importlib.metadata`` does not list them (a filter on the path finder, which finds both).
RUNNER = """\
import json, os, re, runpy, sys
from importlib.machinery import PathFinder

with open(sys.argv[2]) as f:
    hidden = json.load(f)
files, dists = set(hidden["files"]), set(hidden["dists"])


class ExtraAlone(PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        spec = PathFinder.find_spec(name, path, target)
        origin = spec and spec.has_location and spec.origin
        return None if origin and os.path.realpath(origin) in files else spec

    @classmethod
    def find_distributions(cls, *args, **kwargs):
        for dist in PathFinder.find_distributions(*args, **kwargs):
            if re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower() not in dists:
                yield dist


sys.meta_path[sys.meta_path.index(PathFinder)] = ExtraAlone
sys.argv = sys.argv[1:2]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_with_extra_alone(
    code: str, roots: tuple[str, ...], label: str, workdir: Path, timeout: float = 600
) -> subprocess.CompletedProcess:
    """``code`` as a script in the empty directory ``workdir``, in a fresh interpreter of this
    venv that sees only what ``pip install ROOTS`` installs."""
    script = workdir / (re.sub(r"\W+", "_", label) + ".py")
    script.write_text(code, encoding="utf-8")
    (workdir / "_runner.py").write_text(RUNNER, encoding="utf-8")
    (workdir / "_hidden.json").write_text(json.dumps(hidden_outside(roots)), encoding="utf-8")
    argv = [sys.executable, str(workdir / "_runner.py"), str(script), str(workdir / "_hidden.json")]
    environ = {**os.environ, "RAY_ADDRESS": "local", "PYTHONPATH": ""}
    return subprocess.run(
        argv, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=environ
    )


def assert_ran(proc: subprocess.CompletedProcess, label: str) -> None:
    """A failure shows the snippet's traceback."""
    assert proc.returncode == 0, f"{label} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"


def extra_roots(extra: str) -> tuple[str, ...]:
    return (f"agentenvs[{extra}]", TORCH_PIN)


@contextmanager
def served_sokoban() -> Iterator[int]:
    """The page's server, ``agentenvs serve agentenvs/Sokoban-v0 --port P`` (the console
    script of this venv), on a free port P; yields P."""
    import requests

    command = "agentenvs serve agentenvs/Sokoban-v0 --port 8000"
    assert f"`{command}`" in PAGE.read_text(encoding="utf-8")  # the page's own command
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = shlex.split(command.replace("8000", str(port)))
    argv[0] = str(Path(sys.executable).with_name(argv[0]))
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": ""})
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=5).ok:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the server never answered"
            time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(30)


#: What each extra's framework runs, imported as its trainer or server does on CPU (a GPU
#: engine, vLLM or SGLang, is no part of any extra), and every module of ours for it.
ENTRY_MODULES = {
    "verl": [
        "verl.trainer.main_ppo",  # the entry point; its TaskRunner imports the rest lazily
        "verl.trainer.main_ppo_v0",
        "verl.trainer.ppo.ray_trainer",
        "verl.trainer.ppo.core_algos",
        "verl.trainer.ppo.v1",  # the V1 trainers (the default) and AgentLoopManagerTQ
        "verl.trainer.ppo.v1.trainer_base",
        "verl.trainer.ppo.v1.trainer_sync",
        "verl.trainer.ppo.v1.agent_loop_tq",
        "verl.experimental.agent_loop.agent_loop",
        "verl.experimental.agent_loop.tool_agent_loop",
        "verl.single_controller.ray",
        "verl.workers.engine_workers",
        "verl.workers.config",
        "verl.utils.dataset.rl_dataset",
        "transfer_queue",
        "agentenvs.learners.verl.*",
    ],
    "trl": ["trl", "trl.trainer.grpo_trainer", "agentenvs.learners.trl"],
    "openenv": ["openenv.core.env_server", "openenv.core", "agentenvs.serve.*"],
    "skyrl": ["skyrl_gym", "agentenvs.integrations.skyrl_env"],
    "verifiers": ["verifiers", "agentenvs.integrations.verifiers_env"],
}
#: Imports the modules of argv, a package's every module for ``name.*``; prints how many.
IMPORTER = """\
import importlib, pkgutil
names = []
for name in {names!r}:
    if name.endswith(".*"):
        package = importlib.import_module(name[:-2])
        names += [name[:-2], *(m.name for m in pkgutil.walk_packages(package.__path__, name[:-1]))]
    else:
        names.append(name)
for name in names:
    importlib.import_module(name)
print("imported", len(names), "modules:", " ".join(names))
"""
#: The verl extra as it was (verl, tensordict, transformers; no verl-core).
OLD_VERL_EXTRA = ("verl==0.9.1", "tensordict==0.10.0", "transformers>=5.5.3,<5.11,!=5.6.0")
HIDING_CHECK = """\
import importlib.metadata as md, importlib.util as u
assert u.find_spec('trl') is None and u.find_spec('tensordict') is not None
try:
    md.version('trl')
except md.PackageNotFoundError:
    print('hidden')
"""
#: Interpreters at once (each mostly imports torch, transformers, Ray: one core apiece).
WORKERS = int(os.environ.get("AGENTENVS_SNIPPET_WORKERS", "2"))


def jobs() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every interpreter this file runs: key -> (code, roots)."""
    found = {
        b.label: (b.code, extra_roots(section_extras()[b.section]))
        for b in PYTHON
        if not_run_reason(b) is None
    }
    for extra, names in ENTRY_MODULES.items():
        found[f"imports of {extra}"] = (IMPORTER.format(names=names), extra_roots(extra))
    found["old verl extra"] = (
        "import verl.trainer.ppo.ray_trainer\n",
        ("agentenvs", *OLD_VERL_EXTRA, TORCH_PIN),
    )
    found["hiding"] = (HIDING_CHECK, extra_roots("verl"))
    return found


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Iterator[dict[str, Future]]:
    """Every job of :func:`jobs`, :data:`WORKERS` at a time, started at once (the OpenEnv client
    snippets against the page's server); key -> its future ``CompletedProcess``."""
    todo = jobs()
    with ExitStack() as stack:
        if any("127.0.0.1:8000" in code for code, _ in todo.values()):
            port = stack.enter_context(served_sokoban())
            todo = {
                k: (c.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), r)
                for k, (c, r) in todo.items()
            }
        for _, roots in todo.values():
            hidden_outside(roots)  # once each, before the threads
        pool = stack.enter_context(ThreadPoolExecutor(WORKERS))
        yield {
            key: pool.submit(run_with_extra_alone, code, roots, key, tmp_path_factory.mktemp("job"))
            for key, (code, roots) in todo.items()
        }


def test_the_page_has_its_snippets_and_each_section_an_extra():
    extras = section_extras()
    assert {"verl", "TRL", "OpenEnv", "verifiers", "SkyRL-gym"} <= set(extras)
    assert set(extras.values()) <= declared_extras()
    for block in PYTHON:
        assert block.section in extras, f"{block.label}: a snippet outside a trainer's section"
    assert any(b.section == "verl" and not_run_reason(b) is None for b in PYTHON)
    for section, marker in NOT_RUN:  # no stale entry
        hits = [b for b in PYTHON if b.section == section and marker in b.code]
        assert len(hits) == 1, f"NOT_RUN entry {(section, marker)} matches {len(hits)} blocks"


@pytest.mark.parametrize("block", PYTHON, ids=[f"{b.section}:{b.line}" for b in PYTHON])
def test_snippet_runs_as_written_with_its_extra_alone(block, request):
    reason = not_run_reason(block)
    if reason:
        pytest.skip(f"{block.label} is not run: {reason}")
    assert_ran(request.getfixturevalue("ran")[block.label].result(), block.label)


@pytest.mark.parametrize("extra", sorted(ENTRY_MODULES))
def test_each_extra_alone_imports_what_its_framework_imports(extra, ran):
    proc = ran[f"imports of {extra}"].result()
    assert_ran(proc, f"the imports of agentenvs[{extra}]")
    assert "imported" in proc.stdout


def test_the_hiding_catches_the_reported_failure(ran):
    """With the extra as it was, verl's trainer fails on cachetools, as the user's did; with
    the verl extra, a module of another extra is not found and its metadata is gone, while
    one inside is found."""
    proc = ran["old verl extra"].result()
    assert proc.returncode != 0 and "No module named 'cachetools'" in proc.stderr, proc.stderr
    proc = ran["hiding"].result()
    assert_ran(proc, "hiding")
    assert proc.stdout.strip() == "hidden"


def install_commands(text: str) -> list[str]:
    """Every ``pip install`` command of the text: in its fenced blocks and its code spans."""
    found = []
    for block, span in re.findall(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", text, flags=re.S):
        for line in (block or span).splitlines():
            for command in re.split(r"&&|;", line.split("#")[0]):
                if re.search(r"\bpip install\b", command):
                    found.append(command.strip())
    return found


def test_install_lines_pin_torch_and_name_our_extras():
    """Each install line of the page installs our package with extras we declare and that
    scripts/test_reach.sh installs; where they pull torch, the line pins it (the version tested;
    pip then takes no other build than the one asked for). Each section's extra has one."""
    declared = declared_extras()
    (reach,) = re.findall(r"^extras=(\S+)", REACH_SCRIPT.read_text(encoding="utf-8"), flags=re.M)
    named_on_page = set()
    for command in install_commands(PAGE.read_text(encoding="utf-8")):
        found = re.findall(r"""-e ["']?\.\[([\w,-]+)\]""", command)
        assert len(found) == 1, f"an install line that is not our package's: {command}"
        extras = set(found[0].split(","))
        named_on_page |= extras
        assert extras <= declared, f"{command}: unknown extras {extras - declared}"
        assert extras <= set(reach.split(",")), f"{command}: scripts/test_reach.sh lacks them"
        if "torch" in closure(tuple(f"agentenvs[{e}]" for e in sorted(extras))):
            assert TORCH_PIN in command.split(), f"{command}: pin {TORCH_PIN}"
    missing = set(section_extras().values()) - named_on_page
    assert not missing, f"no install line for the extras {missing}"
