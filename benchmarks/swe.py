"""SWE: sandbox overhead, reset, test runs and concurrency, against bare processes in the same run.

    python benchmarks/swe.py                 # every figure (bubblewrap when installed)
    python benchmarks/swe.py --commands 100  # fewer repetitions

Figures (medians; each row names what it is compared with):
* per-command overhead: ``bash -c true`` through :class:`BwrapSandbox` (and the local fallback,
  and Docker when an engine answers) against the same command as a bare ``subprocess.run``; the
  target is an overhead under 10 ms;
* ``SWE-v0`` reset (a fresh workspace copy of the task's snapshot, cached) against a bare
  ``shutil.copytree`` of the same snapshot, and the first reset of a task (snapshot build);
* a task's graded test run (its FAIL_TO_PASS and PASS_TO_PASS tests, its own test command) in the
  sandbox against the same pytest command as a bare subprocess in a copy of the workspace;
* env steps: ``execute_bash`` and a file_editor ``view`` through ``SWEEnv.step``;
* grading one submission (the gold patch, a task with a withheld test file): today's way (a clean
  snapshot copy, the agent's diff applied, infrastructure and withheld files from the snapshot,
  outcomes from the report plugin) against the way before issue 23 (a copy of the agent's
  workspace, the withheld file written over it, outcomes parsed from the ``-rA`` log); target
  ratio at most 1.5x;
* 8 concurrent sandboxes (threads, one workspace each, the test run above): throughput against
  running the same 8 runs one after the other;
* ``--compare-grading PATH``: grading the same gold patch with this checkout against another
  checkout of agentenvs at ``PATH`` (e.g. ``main`` in a ``git worktree``), one worker process
  each, gradings alternating between them so both see the same load; target ratio at most 1.5x.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if not __package__:  # run as a script: make the repository's packages (benchmarks/) importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentenvs.swe.env import SWEEnv
from agentenvs.swe.grading import run_tests
from agentenvs.swe.sandbox import Sandbox, bwrap_available, make_sandbox
from agentenvs.swe.task import embedded_tasks, prepare
from agentenvs.swe.workspace import Workspace


def median_ms(fn: Callable[[], object], n: int) -> float:
    """Median wall time of ``fn()`` over ``n`` calls, milliseconds (one warm-up call first)."""
    fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def row(name: str, ms: float, ref_name: str, ref_ms: float) -> None:
    print(f"  {name:<44} {ms:9.2f} ms   {ref_name:<30} {ref_ms:9.2f} ms   {ms / ref_ms:6.2f}x")


def sandboxes() -> list[Sandbox]:
    found = [make_sandbox("bwrap")] if bwrap_available() else []
    found.append(make_sandbox("local"))
    try:
        found.append(make_sandbox("docker"))
    except Exception as exc:  # no SDK or no engine: say so and go on
        print(f"  (Docker: {type(exc).__name__}: {str(exc)[:80]}; skipped)")
    return found


def command_overhead(n: int) -> None:
    print("Per-command cost of `bash -c true` (target: overhead < 10 ms)")
    with tempfile.TemporaryDirectory() as tmp:
        bare = median_ms(lambda: subprocess.run(["bash", "-c", "true"], cwd=tmp, check=True), n)
        for box in sandboxes():
            ms = median_ms(lambda box=box: box.run("true", Path(tmp), timeout=30), n)
            row(f"{box.kind} sandbox", ms, "bare subprocess", bare)
            print(f"  {'':<44} overhead {ms - bare:.2f} ms")
            box.close()


def resets(n: int) -> None:
    print("\nSWE-v0 reset (embedded test split)")
    tasks = embedded_tasks("test")
    env = SWEEnv(tasks, split="test", max_steps=10**6)
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        prepare(tasks[0], Path(cache))
        first = 1000 * (time.perf_counter() - start)
    snapshot = prepare(tasks[0]).snapshot
    ids = [t.instance_id for t in tasks]
    k = iter(range(10**9))

    def reset() -> None:
        env.reset(options={"task_id": ids[next(k) % len(ids)]})

    def copy() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(snapshot, Path(tmp) / "repo", symlinks=True)

    row(
        "reset (snapshot cached)",
        median_ms(reset, n),
        "shutil.copytree of snapshot",
        median_ms(copy, n),
    )
    print(f"  {'first reset of a task (builds its snapshot)':<44} {first:9.2f} ms")

    env.reset(options={"task_id": ids[0]})
    bash = "<function=execute_bash>\n<parameter=cmd>true</parameter>\n</function>"
    view_path = next(p for p in sorted(snapshot.rglob("*.py")) if "tests" not in p.parts)
    rel = view_path.relative_to(snapshot).as_posix()
    view = (
        "<function=file_editor>\n<parameter=command>view</parameter>\n"
        f"<parameter=path>/testbed/{rel}</parameter>\n</function>"
    )
    box = env.sandbox
    with tempfile.TemporaryDirectory() as tmp:
        alone = median_ms(lambda: box.run("true", Path(tmp), timeout=30), n)
    row(
        "step: execute_bash `true`",
        median_ms(lambda: env.step(bash), n),
        "the sandbox command alone",
        alone,
    )
    print(f"  {'step: file_editor view':<44} {median_ms(lambda: env.step(view), n):9.2f} ms")
    env.close()


def grading(n: int) -> None:
    task = next(t for t in embedded_tasks("test") if t.test_files_hidden)
    env = SWEEnv([task], split="test", sandbox="auto", max_steps=10**6)
    env.reset()
    apply = f"git apply <<'EOF'\n{task.patch}EOF"
    obs, *_ = env.step(f"<function=execute_bash>\n<parameter=cmd>{apply}</parameter>\n</function>")
    assert obs.startswith("Exit code: 0"), obs
    ready = prepare(task)
    ids = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    run = lambda c, w, t: env.sandbox.run(c, w, timeout=t, merge_stderr=True)  # noqa: E731
    print(f"\nGrading the gold patch of {task.instance_id} ({len(ids)} tests, {env.sandbox.kind})")

    def before() -> None:  # copy the workspace, restore the withheld files, parse the -rA log
        with env._workspace.copy() as copy:  # type: ignore[union-attr]
            for rel, content in ready.hidden.items():
                (copy.path / rel).write_bytes(content)
            statuses = run_tests(run, copy.path, ids, command=task.test_command).statuses
        assert all(statuses.get(i) == "PASSED" for i in ids)

    def now() -> None:  # clean snapshot + the agent's diff + restore + the plugin's report
        assert env._grade_copy(task.FAIL_TO_PASS, task.PASS_TO_PASS).resolved

    old_ms, new_ms = median_ms(before, n), median_ms(now, n)
    row("clean copy + diff + plugin report", new_ms, "workspace copy + -rA log", old_ms)
    print(f"  grading time ratio new/old: {new_ms / old_ms:.2f}x (target <= 1.5x)")
    env.close()


#: A grading worker: with the checkout under test on ``PYTHONPATH``, it grades the gold patch of
#: the first withheld-test task once per line read, and prints the milliseconds it took.
_GRADING_WORKER = """
import sys, time
from agentenvs.swe.env import SWEEnv
from agentenvs.swe.task import embedded_tasks
task = next(t for t in embedded_tasks("test") if t.test_files_hidden)
env = SWEEnv([task], split="test", sandbox="bwrap", max_steps=10**6)
env.reset()
apply = "git apply <<'EOF'\\n" + task.patch + "EOF"
obs, *_ = env.step("<function=execute_bash>\\n<parameter=cmd>" + apply + "</parameter>\\n</function>")
assert obs.startswith("Exit code: 0"), obs
print("ready", flush=True)
for _ in sys.stdin:
    start = time.perf_counter()
    assert env._grade_copy(task.FAIL_TO_PASS, task.PASS_TO_PASS).resolved
    print(1000 * (time.perf_counter() - start), flush=True)
env.close()
"""


def compare_grading(other: Path, n: int) -> None:
    """Median grading time of this checkout against the checkout at ``other``, alternating."""
    here = Path(__file__).resolve().parents[1]
    workers = {}
    for name, root in (("other", other.resolve()), ("this", here)):
        env = {**os.environ, "PYTHONPATH": str(root)}
        workers[name] = subprocess.Popen(
            [sys.executable, "-c", _GRADING_WORKER],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    times: dict[str, list[float]] = {"other": [], "this": []}
    try:
        for proc in workers.values():
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for k in range(n + 1):  # the first round warms up
            for name, proc in workers.items():
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write("\n")
                proc.stdin.flush()
                ms = float(proc.stdout.readline())
                if k:
                    times[name].append(ms)
    finally:
        for proc in workers.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=60)
    this, that = statistics.median(times["this"]), statistics.median(times["other"])
    print(f"\nGrading the gold patch: this checkout against {other} ({n} alternating runs each)")
    row("this checkout", this, "the other checkout", that)
    print(f"  grading time ratio this/other: {this / that:.2f}x (target <= 1.5x)")


def test_runs(n: int, workers: int) -> None:
    tasks = embedded_tasks("test")
    task = tasks[0]
    ready = prepare(task)
    box = make_sandbox("auto")
    ids = [*task.FAIL_TO_PASS, *task.PASS_TO_PASS]
    print(f"\nGraded test run ({len(ids)} tests of {task.instance_id}, {box.kind} sandbox)")

    def sandboxed(ws: Workspace) -> None:
        run = lambda c, w, t: box.run(c, w, timeout=t, merge_stderr=True)  # noqa: E731
        run_tests(run, ws.path, ids, command=task.test_command)

    def bare(ws: Workspace) -> None:
        run_tests(_bare_runner, ws.path, ids, command=task.test_command)

    with Workspace(ready.snapshot) as ws:
        row(
            "pytest in the sandbox",
            median_ms(lambda: sandboxed(ws), n),
            "the same pytest, bare",
            median_ms(lambda: bare(ws), n),
        )
    spaces = [Workspace(ready.snapshot) for _ in range(workers)]
    try:
        start = time.perf_counter()
        for ws in spaces:
            sandboxed(ws)
        serial = time.perf_counter() - start
        with ThreadPoolExecutor(workers) as pool:
            start = time.perf_counter()
            list(pool.map(sandboxed, spaces))
            parallel = time.perf_counter() - start
    finally:
        for ws in spaces:
            ws.cleanup()
    print(
        f"  {workers} concurrent sandboxes: {workers / parallel:.1f} runs/s vs {workers / serial:.1f} "
        f"runs/s one after another ({serial / parallel:.2f}x)"
    )
    box.close()


def _bare_runner(command: str, workspace: Path, timeout: float):
    from agentenvs.swe.calls import CommandResult

    done = subprocess.run(
        ["bash", "-c", command], cwd=workspace, capture_output=True, text=True, timeout=timeout
    )
    return CommandResult(done.returncode, done.stdout + done.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--commands", type=int, default=200, help="repetitions per command figure")
    parser.add_argument("--resets", type=int, default=50)
    parser.add_argument("--test-runs", type=int, default=10)
    parser.add_argument("--gradings", type=int, default=10, help="repetitions per grading figure")
    parser.add_argument(
        "--only-grading", action="store_true", help="print the grading figure alone"
    )
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--compare-grading",
        type=Path,
        metavar="PATH",
        help="print only this checkout's grading time against the checkout at PATH",
    )
    args = parser.parse_args(argv)
    print("\n== SWE ==")
    if args.compare_grading is not None:
        compare_grading(args.compare_grading, args.gradings)
        return
    if args.only_grading:
        grading(args.gradings)
        return
    command_overhead(args.commands)
    resets(args.resets)
    grading(args.gradings)
    test_runs(args.test_runs, args.workers)


if __name__ == "__main__":
    main()
