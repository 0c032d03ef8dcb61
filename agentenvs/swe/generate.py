"""The embedded SWE task panel: bugs injected into the seed repositories, verified (docs/swe.md).

This module holds :func:`evaluate` (one mutant -> a verified task record or a rejection reason),
:func:`generate_repo` (the tasks of one seed repository), :func:`build_panel` (all of them),
:func:`panel_bytes` / :func:`load_panel` (the shipped file), :func:`make_runner` (a sandboxed test
runner) and the command ``python -m agentenvs.swe.generate [--out PATH] [--check] [--per-repo N]
[--seed S] [--jobs J]`` that rebuilds ``agentenvs/swe/data/tasks.jsonl.gz`` byte for byte
(``--check``: exit 1 with a summary when the shipped file differs).

Per seed repository (sorted): the clean suite must pass entirely (else the repository is skipped);
the mutation candidates of its non-test modules (:func:`agentenvs.swe.mutate.candidates`) are
shuffled per operator with ``random.Random(f"{seed}:{repo}")`` and interleaved operator by
operator; each mutant in that order is tried until ``per_repo`` tasks are kept. A mutant is kept
iff ``1 <= |FAIL_TO_PASS| <= 10`` (ids passing clean and failing buggy; PASS_TO_PASS = passing in
both), no run times out (30 s each), its ``bug_patch`` is new, hiding the test files that hold
FAIL_TO_PASS tests leaves at least one test file, and on the built snapshot with the hidden files
restored the FAIL_TO_PASS and PASS_TO_PASS ids do not all pass, while after ``git apply`` of the
gold ``patch`` they all do. Splits are by repository: :data:`TEST_REPOS` are ``test``, the others
``train``. Rows are sorted by ``instance_id``, one JSON object (sorted keys) a line, gzip with a
zero timestamp.

>>> task_id("textkit", "diff --git a/x b/x\\n", "off_by_one", 7)
'textkit.f9bac4.func_pm_off_by_one__902b'
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentenvs.swe.calls import CommandResult
from agentenvs.swe.grading import DEFAULT_TEST_COMMAND, is_pass, run_tests
from agentenvs.swe.mutate import OPERATORS, Mutation, apply, candidates, is_test_file
from agentenvs.swe.snapshot import SEEDS_DIR, build_snapshot, seed_names, unified_diff
from agentenvs.swe.statements import COMMAND, write_statement
from agentenvs.swe.task import PANEL_PATH

__all__ = [
    "MAX_F2P",
    "PANEL_PATH",
    "PER_REPO",
    "TEST_REPOS",
    "RepoResult",
    "build_panel",
    "evaluate",
    "generate_repo",
    "load_panel",
    "main",
    "make_runner",
    "panel_bytes",
    "task_id",
]

#: Held-out repositories (split ``test``); every other seed is ``train``.
TEST_REPOS = ("cachebox", "pathget", "unitkit")
#: Tasks kept per repository at most.
PER_REPO = 25
#: Most FAIL_TO_PASS tests a kept task may have.
MAX_F2P = 10
#: Wall timeout of one test run while generating, seconds.
RUN_TIMEOUT = 30.0
#: Mutants tried per repository at most, as a multiple of ``per_repo``.
_TRIES_PER_TASK = 6
#: Plugins (e.g. hypothesis) are not loaded while generating: a 10x faster pytest start.
_FAST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 "

Runner = Callable[[str, Path, float], CommandResult]


def make_runner(kind: str = "auto") -> Runner:
    """A runner over :func:`agentenvs.swe.sandbox.make_sandbox` (``kind``, default ``auto``)
    that merges stderr and disables pytest plugin autoloading."""
    from agentenvs.swe.sandbox import make_sandbox

    sandbox = make_sandbox(kind)

    def run(command: str, workspace: Path, timeout: float) -> CommandResult:
        return sandbox.run(_FAST + command, workspace, timeout=timeout, merge_stderr=True)

    return run


def task_id(repo: str, bug_patch: str, operator: str, seed: int) -> str:
    """``{repo}.{sha1(bug_patch)[:6]}.func_pm_{operator}__{sha1(str(seed))[:4]}``."""
    patch_hash = hashlib.sha1(bug_patch.encode()).hexdigest()[:6]
    seed_hash = hashlib.sha1(str(seed).encode()).hexdigest()[:4]
    return f"{repo}.{patch_hash}.func_pm_{operator}__{seed_hash}"


def _copy(source: Path, dest: Path) -> None:
    shutil.copytree(
        source, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".git")
    )


def _files(repo: Path) -> list[str]:
    """Repo-relative POSIX paths of the ``.py`` files under ``repo`` (no caches, no dot-dirs)."""
    out = []
    for path in sorted(repo.rglob("*.py")):
        rel = path.relative_to(repo).as_posix()
        if not any(p.startswith(".") or p == "__pycache__" for p in rel.split("/")):
            out.append(rel)
    return out


def _tree(repo: Path) -> dict[str, bytes]:
    """Repo-relative path -> content of every file outside ``.git`` and caches."""
    return {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in repo.rglob("*")
        if p.is_file()
        and not {".git", "__pycache__", ".pytest_cache"} & set(p.relative_to(repo).parts)
    }


def _changed_lines(patch: str) -> list[str]:
    """The stripped ``+``/``-`` lines of a patch (headers excluded), 5 characters or longer."""
    lines = []
    for line in patch.splitlines():
        if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")):
            text = line[1:].strip()
            if len(text) >= 5:
                lines.append(text)
    return lines


def evaluate(
    run: Runner,
    repo_dir: Path,
    mutation: Mutation,
    clean: dict[str, str],
    *,
    seed: int,
    split: str = "train",
    timeout: float = RUN_TIMEOUT,
    allow_all_hidden: bool = False,
) -> dict[str, Any] | str:
    """Verify one mutant of the repository at ``repo_dir`` (``clean``: its suite's statuses).

    Args:
        seed: the task's seed (statement level and phrasing; part of the id).
        allow_all_hidden: keep a task even when hiding its FAIL_TO_PASS files hides every test
            file (for one-file repositories such as the docs' ``textkit`` example).

    Returns:
        The task record (the ``task.json`` fields plus ``split``), or why it was rejected:
        ``equivalent`` (no test fails), ``too many failing tests``, ``timeout``, ``hides every
        test file``, ``buggy snapshot passes``, ``gold patch does not apply``, ``gold patch
        fails``.
    """
    repo = repo_dir.name
    old = (repo_dir / mutation.file).read_text()
    new = apply(old, mutation)
    bug_patch = unified_diff(old, new, mutation.file)
    patch = unified_diff(new, old, mutation.file)
    ids = [i for i, status in clean.items() if is_pass(status)]
    with tempfile.TemporaryDirectory(prefix="swegen-") as tmp:
        work = Path(tmp) / "work"
        _copy(repo_dir, work)
        (work / mutation.file).write_text(new)
        buggy = run_tests(run, work, command=COMMAND, timeout=timeout)
        if buggy.timed_out:
            return "timeout"
        f2p = [i for i in ids if not is_pass(buggy.statuses.get(i))]
        p2p = [i for i in ids if is_pass(buggy.statuses.get(i))]
        if not f2p:
            return "equivalent"
        if len(f2p) > MAX_F2P:
            return "too many failing tests"
        hidden = sorted({i.split("::")[0] for i in f2p})
        tests = [f for f in _files(repo_dir) if is_test_file(f) and "/test_" in f"/{f}"]
        if not allow_all_hidden and not set(tests) - set(hidden):
            return "hides every test file"
        snap = Path(tmp) / "snapshot"
        base_commit = build_snapshot(repo_dir, snap, bug_patch=bug_patch, hide=hidden)
        for rel in hidden:
            (snap / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repo_dir / rel, snap / rel)
        if _tree(snap) != _tree(work):
            return "snapshot differs from the mutant"
        statement, level = write_statement(
            run, snap, f2p[0], seed=seed, avoid=_changed_lines(bug_patch), log=buggy.log
        )
        applied = subprocess.run(
            ["git", "apply"], input=patch, cwd=snap, capture_output=True, text=True, check=False
        )
        if applied.returncode:
            return "gold patch does not apply"
        after = run_tests(run, snap, [*f2p, *p2p], timeout=timeout)
        if after.timed_out:
            return "timeout"
        if not all(is_pass(after.statuses.get(i)) for i in [*f2p, *p2p]):
            return "gold patch fails"
    return {
        "instance_id": task_id(repo, bug_patch, mutation.operator, seed),
        "repo": repo,
        "base_commit": base_commit,
        "problem_statement": statement,
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
        "patch": patch,
        "test_patch": "",
        "bug_patch": bug_patch,
        "test_command": _FAST + DEFAULT_TEST_COMMAND,  # the seeds need no pytest plugin
        "test_files_hidden": hidden,
        "python": "3.11",
        "mutation": {
            "operator": mutation.operator,
            "file": mutation.file,
            "lineno": mutation.lineno,
            "seed": seed,
        },
        "difficulty": {"n_f2p": len(f2p), "statement_level": level},
        "split": split,
    }


@dataclass
class RepoResult:
    """One repository's generation outcome.

    Attributes:
        repo: the seed's name.
        tasks: the kept task records, in the order they were found.
        rejected: rejection reason -> count (``clean suite fails`` when the repo was skipped).
        tried: mutants tried.
        seconds: wall time.
    """

    repo: str
    tasks: list[dict[str, Any]] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    tried: int = 0
    seconds: float = 0.0


def _order(mutations: Sequence[Mutation], rng: random.Random) -> list[Mutation]:
    """Shuffle each operator's candidates, then interleave them operator by operator."""
    queues: list[list[Mutation]] = []
    for operator in OPERATORS:
        queue = [m for m in mutations if m.operator == operator]
        rng.shuffle(queue)
        queues.append(queue)
    order: list[Mutation] = []
    for i in range(max((len(q) for q in queues), default=0)):
        order.extend(q[i] for q in queues if i < len(q))
    return order


def generate_repo(
    run: Runner,
    repo_dir: Path,
    *,
    per_repo: int = PER_REPO,
    seed: int = 0,
    split: str = "train",
    timeout: float = RUN_TIMEOUT,
    allow_all_hidden: bool = False,
) -> RepoResult:
    """The verified tasks of one repository (at most ``per_repo``; default :data:`PER_REPO`),
    trying at most ``6 * per_repo`` mutants in the seeded order (see the module docstring)."""
    start = time.perf_counter()
    result = RepoResult(repo_dir.name)
    with tempfile.TemporaryDirectory(prefix="swegen-") as tmp:
        work = Path(tmp) / "clean"
        _copy(repo_dir, work)
        clean = run_tests(run, work, timeout=timeout)
    if not clean.statuses or not all(is_pass(s) for s in clean.statuses.values()):
        failing = sorted(i for i, s in clean.statuses.items() if not is_pass(s))
        print(f"{result.repo}: clean suite fails ({failing[:3] or 'no tests'}); skipped",
              file=sys.stderr)  # fmt: skip
        result.rejected["clean suite fails"] += 1
        return result
    mutations = []
    for rel in _files(repo_dir):
        if not is_test_file(rel):
            mutations += candidates((repo_dir / rel).read_text(), rel)
    rng = random.Random(f"{seed}:{result.repo}")
    order = _order(mutations, rng)
    seeds = [rng.getrandbits(32) for _ in order]
    seen: set[str] = set()
    for mutation, task_seed in zip(order, seeds, strict=True):
        if len(result.tasks) >= per_repo or result.tried >= _TRIES_PER_TASK * per_repo:
            break
        old = (repo_dir / mutation.file).read_text()
        digest = hashlib.sha1(unified_diff(old, apply(old, mutation), mutation.file).encode())
        if digest.hexdigest() in seen:
            result.rejected["duplicate"] += 1
            continue
        seen.add(digest.hexdigest())
        result.tried += 1
        outcome = evaluate(
            run,
            repo_dir,
            mutation,
            clean.statuses,
            seed=task_seed,
            split=split,
            timeout=timeout,
            allow_all_hidden=allow_all_hidden,
        )
        if isinstance(outcome, str):
            result.rejected[outcome] += 1
        else:
            result.tasks.append(outcome)
    result.seconds = time.perf_counter() - start
    return result


def _repo_job(args: tuple[str, str, int, int, str]) -> RepoResult:
    repo_dir, runner_kind, per_repo, seed, split = args
    return generate_repo(
        make_runner(runner_kind), Path(repo_dir), per_repo=per_repo, seed=seed, split=split
    )


def build_panel(
    *,
    seeds_dir: Path = SEEDS_DIR,
    per_repo: int = PER_REPO,
    seed: int = 0,
    jobs: int = 1,
    runner: str = "auto",
) -> list[RepoResult]:
    """Generate every seed repository under ``seeds_dir`` (sorted) with ``jobs`` processes (the
    results do not depend on ``jobs``); ``runner`` is the sandbox kind."""
    names = seed_names() if seeds_dir == SEEDS_DIR else sorted(
        p.name for p in seeds_dir.iterdir() if p.is_dir()
    )  # fmt: skip
    jobs_args = [
        (str(seeds_dir / n), runner, per_repo, seed, "test" if n in TEST_REPOS else "train")
        for n in names
    ]
    if jobs <= 1:
        return [_repo_job(a) for a in jobs_args]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_repo_job, jobs_args))


def panel_bytes(tasks: Sequence[dict[str, Any]]) -> bytes:
    """The shipped file's bytes: rows sorted by ``instance_id``, JSON with sorted keys, gzip
    (level 9) with a zero timestamp and no file name."""
    ids = [t["instance_id"] for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate instance ids")
    text = "".join(
        json.dumps(t, sort_keys=True, ensure_ascii=False) + "\n"
        for t in sorted(tasks, key=lambda t: t["instance_id"])
    )
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
        gz.write(text.encode())
    return buffer.getvalue()


def load_panel(path: Path = PANEL_PATH) -> list[dict[str, Any]]:
    """The task records of a panel file (default: the shipped one), in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _summary(results: Sequence[RepoResult], seconds: float) -> str:
    tasks = [t for r in results for t in r.tasks]
    rejected: Counter[str] = Counter()
    for r in results:
        rejected.update(r.rejected)
    lines = [f"{len(tasks)} tasks in {seconds:.0f} s"]
    for r in results:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(r.rejected.items()))
        lines.append(f"  {r.repo}: {len(r.tasks)} kept of {r.tried} tried ({r.seconds:.0f} s)"
                     f"{'; rejected: ' + reasons if reasons else ''}")  # fmt: skip
    for key, name in (
        (lambda t: t["split"], "split"),
        (lambda t: t["mutation"]["operator"], "operator"),
        (lambda t: t["difficulty"]["statement_level"], "statement level"),
        (lambda t: t["difficulty"]["n_f2p"], "n_f2p"),
    ):
        counts = Counter(key(t) for t in tasks)
        lines.append(f"  by {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    lines.append("  rejected: " + ", ".join(f"{k} {v}" for k, v in sorted(rejected.items())))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Rebuild (or ``--check``) the shipped panel; prints a summary to stderr."""
    parser = argparse.ArgumentParser(prog="python -m agentenvs.swe.generate", description=__doc__)
    parser.add_argument("--out", type=Path, default=PANEL_PATH)
    parser.add_argument("--check", action="store_true", help="exit 1 if --out differs")
    parser.add_argument("--per-repo", type=int, default=PER_REPO)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--runner", default="auto", help="sandbox kind (auto, bwrap, local)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = build_panel(per_repo=args.per_repo, seed=args.seed, jobs=args.jobs,
                          runner=args.runner)  # fmt: skip
    tasks = [t for r in results for t in r.tasks]
    data = panel_bytes(tasks)
    print(_summary(results, time.perf_counter() - start), file=sys.stderr)
    if args.check:
        if args.out.is_file() and args.out.read_bytes() == data:
            print(f"{args.out} is up to date", file=sys.stderr)
            return 0
        old = {t["instance_id"]: t for t in load_panel(args.out)} if args.out.is_file() else {}
        new = {t["instance_id"]: t for t in tasks}
        changed = sum(old[i] != new[i] for i in set(old) & set(new))
        print(f"{args.out} differs: {len(set(new) - set(old))} new, {len(set(old) - set(new))} "
              f"gone, {changed} changed tasks", file=sys.stderr)  # fmt: skip
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(f"wrote {len(tasks)} tasks to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
