"""Credit compared where it matters: the LLM learner's recipe with each credit method, several seeds.

For each env (:data:`ENVS`: multi-step Sokoban, the main job's recipe; ALFWorld with ``--model
tiny``, its recipe), each credit method (default :data:`METHODS`: grpo, gigpo, graphgpo, rtmc) and
each seed (default :data:`SEEDS`) it runs ``examples/train_llm.py ENV --credit M --seed S --out
DIR --no-progress --export none`` as a subprocess (the env's recipe otherwise unchanged; ``--jobs``
of them at once), then reads every run directory back and prints, per env, the held-out success
after the warm start and after RL (the last evaluation), greedy and sampled, averaged over seeds
and tasks; the paired difference of each method against GRPO over the same ``(seed, split,
task)`` episodes of the last evaluation with its 95% interval
(:func:`agentenvs.learners.llm.intervals.paired_difference`: Tango's score interval for 0/1
outcomes); and each method's wall time. It writes the page ``--doc`` (default
docs/llm_credit.md) with the tables, the command, a "what it shows" paragraph built from the
numbers, and the learning curves beside it (``docs/llm_credit.png``: training ``success_rate``
per iteration, mean over seeds, one line per method, one panel per env).

    python benchmarks/llm_credit.py                                  # the benchmark, both envs
    python benchmarks/llm_credit.py --envs sokoban --jobs 2          # the Sokoban part
    python benchmarks/llm_credit.py --envs sokoban --methods grpo graphgpo --seeds 0 --quick \\
        --jobs 1 --doc /tmp/llm_credit_smoke.md --out /tmp/llm_credit_smoke    # smoke, ~1 minute

Runs land in ``--out/<env>/<method>-s<seed>`` (default ``runs/llm_credit``). A run that finished
with the same learner flags (the marker :data:`MARKER` in its directory, written when the learner
exits 0) is read back, not run again, so an interrupted benchmark resumes; ``--rerun`` runs it
anew. A directory holding an unfinished run is overwritten; one holding a finished run with other
flags is refused (pass ``--rerun`` or another ``--out``).

This module holds :data:`ENVS`, :data:`METHODS`, :data:`SEEDS`, :data:`QUICK`, :data:`MODES`,
:data:`BASELINE`, :data:`MARKER`; the records :class:`Run`, :class:`SuccessRow`,
:class:`WallRow`; the pure functions :func:`learner_argv`, :func:`run_state`, :func:`read_run`,
:func:`pair_values`, :func:`success_rows`, :func:`wall_rows`, :func:`curves`,
:func:`success_table`, :func:`wall_table`, :func:`what_it_shows`, :func:`budget_note` and
:func:`render_doc`; and the side-effecting :func:`launch`, :func:`run_all`, :func:`plot_curves`
and :func:`main`. docs/llm_credit.md is its output.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "train_llm.py"

#: Short env name -> (env id, learner flags that select its recipe).
ENVS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sokoban": ("agentenvs/Sokoban-v0", ("--model", "tiny")),
    "alfworld": ("agentenvs/ALFWorld-v0", ("--model", "tiny")),
}
#: Short env name -> its section title on the page.
TITLES = {"sokoban": "Sokoban", "alfworld": "ALFWorld"}
#: The credit methods compared (names of ``agentenvs.wrappers.registry.METHODS``).
METHODS = ("grpo", "gigpo", "graphgpo", "rtmc")
#: The seeds of every (env, method).
SEEDS = (0, 1, 2)
#: ``--quick``'s smoke budget, passed through to the learner (100 demonstration steps: the
#: smallest warm start that writes valid moves, docs/getting-started.md).
QUICK = ("--iterations", "1", "--warm-start-steps", "100", "--eval-tasks", "4")
#: The decodings of the held-out evaluation.
MODES = ("greedy", "sampled")
#: The method every other one is paired against.
BASELINE = "grpo"
#: The file a finished run's directory gets: the learner flags, exit status and wall seconds.
MARKER = "llm_credit.json"


@dataclasses.dataclass
class Run:
    """One (env, method, seed) run read back from its directory.

    ``outcomes``: the rows of ``eval_outcomes.jsonl``; ``curve``: ``(iteration, success_rate)``
    of the training rows of ``metrics.csv``; ``wall_s``: the learner's wall seconds (the marker's;
    ``nan`` when it has none)."""

    env: str
    method: str
    seed: int
    outcomes: list[dict[str, Any]]
    curve: list[tuple[int, float]]
    wall_s: float

    @property
    def first(self) -> int:
        """The first evaluated iteration (0: after the warm start)."""
        return min(int(r["iteration"]) for r in self.outcomes)

    @property
    def last(self) -> int:
        """The last evaluated iteration (after RL)."""
        return max(int(r["iteration"]) for r in self.outcomes)


@dataclasses.dataclass
class SuccessRow:
    """One method and decoding of one env's success table. ``diff``/``low``/``high``/``pairs``:
    the paired difference against :data:`BASELINE` (``None`` for the baseline itself or without
    one)."""

    env: str
    method: str
    mode: str
    seeds: int
    tasks: int
    warm: float
    final: float
    per_seed: list[float]
    diff: float | None = None
    low: float | None = None
    high: float | None = None
    pairs: int | None = None


@dataclasses.dataclass
class WallRow:
    """One method's wall time on one env: the sum over its runs and the mean per run (seconds)."""

    env: str
    method: str
    runs: int
    total_s: float
    per_run_s: float


def learner_argv(
    env: str, method: str, seed: int, out: str | Path, budget: Sequence[str] = ()
) -> list[str]:
    """The flags of ``examples/train_llm.py`` for one run: the env's recipe, ``--credit``,
    ``--seed``, the ``budget`` flags (``--quick``'s :data:`QUICK`, or ``--iterations N``) and the
    output flags (no progress bar, no exported policy: the benchmark reads the metrics only).

    >>> learner_argv("sokoban", "rtmc", 2, "runs/x", ["--iterations", "3"])[:6]
    ['agentenvs/Sokoban-v0', '--model', 'tiny', '--credit', 'rtmc', '--seed']
    >>> learner_argv("sokoban", "rtmc", 2, "runs/x", ["--iterations", "3"])[6:]
    ['2', '--iterations', '3', '--out', 'runs/x', '--no-progress', '--export', 'none']
    """
    env_id, recipe = ENVS[env]
    return [env_id, *recipe, "--credit", method, "--seed", str(seed), *budget,
            "--out", str(out), "--no-progress", "--export", "none"]  # fmt: skip


def run_state(run_dir: str | Path, argv: Sequence[str]) -> str:
    """What ``run_dir`` holds for a run of ``argv``: ``"finished"`` (its marker names ``argv`` and
    exit status 0), ``"other"`` (a finished run of other flags), ``"partial"`` (a run without a
    finished marker: interrupted or failed) or ``"empty"``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     empty = run_state(d, ["a"])
    ...     _ = (Path(d) / MARKER).write_text(json.dumps({"argv": ["a"], "rc": 0, "wall_s": 1.0}))
    ...     empty, run_state(d, ["a"]), run_state(d, ["b"])
    ('empty', 'finished', 'other')
    """
    run_dir = Path(run_dir)
    marker = run_dir / MARKER
    if marker.exists():
        done = json.loads(marker.read_text())
        if done.get("rc") == 0:
            return "finished" if list(done["argv"]) == list(argv) else "other"
        return "partial"
    return "partial" if (run_dir / "metrics.csv").exists() else "empty"


def read_run(run_dir: str | Path, env: str, method: str, seed: int) -> Run:
    """Read one run directory: ``eval_outcomes.jsonl``, the training ``success_rate`` of
    ``metrics.csv`` (rows without it, such as row 0, the evaluation after the warm start, are
    left out of the curve) and the wall seconds of :data:`MARKER`."""
    run_dir = Path(run_dir)
    with (run_dir / "eval_outcomes.jsonl").open() as f:
        outcomes = [json.loads(line) for line in f if line.strip()]
    with (run_dir / "metrics.csv").open() as f:
        curve = [
            (int(float(r["iteration"])), float(r["success_rate"]))
            for r in csv.DictReader(f)
            if r.get("success_rate") not in (None, "")
        ]
    marker = run_dir / MARKER
    wall = json.loads(marker.read_text()).get("wall_s", math.nan) if marker.exists() else math.nan
    return Run(env, method, seed, outcomes, curve, float(wall))


def pair_values(run: Run, iteration: int, mode: str) -> dict[str, float]:
    """``{"<seed>/<split>/<task_id>": success}`` of ``run``'s evaluation at ``iteration`` in
    ``mode``: the pairing ids of :func:`success_rows` (the same tasks and seed in two methods'
    runs pair up).

    >>> rows = [{"iteration": 0, "split": "test", "mode": "greedy", "task_id": "t1",
    ...          "success": True}]
    >>> pair_values(Run("sokoban", "grpo", 3, rows, [], 1.0), 0, "greedy")
    {'3/test/t1': 1.0}
    """
    return {
        f"{run.seed}/{r.get('split', 'test')}/{r['task_id']}": float(r["success"])
        for r in run.outcomes
        if int(r["iteration"]) == iteration and r["mode"] == mode
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def success_rows(
    runs: Sequence[Run],
    methods: Sequence[str],
    modes: Sequence[str] = MODES,
    baseline: str = BASELINE,
) -> list[SuccessRow]:
    """One :class:`SuccessRow` per env, method (in ``methods`` order) and decoding: the success
    after the warm start (each run's first evaluation) and after RL (its last), averaged over
    every ``(seed, split, task)`` episode; the after-RL success of each seed; and the paired
    difference ``method - baseline`` over the ``(seed, split, task)`` ids both hold in their last
    evaluations, with its 95% interval (:func:`~agentenvs.learners.llm.intervals.paired_difference`).
    An (env, method) without runs gives no row; without a ``baseline`` run, no difference."""
    from agentenvs.learners.llm.intervals import paired_difference

    out: list[SuccessRow] = []
    for env in dict.fromkeys(r.env for r in runs):
        for mode in modes:
            finals: dict[str, dict[str, float]] = {}
            for method in methods:
                mine = sorted((r for r in runs if r.env == env and r.method == method),
                              key=lambda r: r.seed)  # fmt: skip
                if not mine:
                    continue
                warm: dict[str, float] = {}
                final: dict[str, float] = {}
                per_seed = []
                for run in mine:
                    warm |= pair_values(run, run.first, mode)
                    last = pair_values(run, run.last, mode)
                    final |= last
                    per_seed.append(_mean(list(last.values())))
                finals[method] = final
                tasks = len({k.split("/", 1)[1] for k in final})
                row = SuccessRow(env, method, mode, len(mine), tasks, _mean(list(warm.values())),
                                 _mean(list(final.values())), per_seed)  # fmt: skip
                out.append(row)
            for row in out:
                if row.env == env and row.mode == mode and row.method != baseline:
                    if baseline in finals:
                        d, lo, hi, n = paired_difference(finals[baseline], finals[row.method])
                        row.diff, row.low, row.high, row.pairs = d, lo, hi, n
    return out


def wall_rows(runs: Sequence[Run], methods: Sequence[str]) -> list[WallRow]:
    """One :class:`WallRow` per env and method: the sum of its runs' wall seconds and their mean.

    >>> runs = [Run("sokoban", "grpo", s, [], [], w) for s, w in [(0, 10.0), (1, 20.0)]]
    >>> wall_rows(runs, ["grpo"])
    [WallRow(env='sokoban', method='grpo', runs=2, total_s=30.0, per_run_s=15.0)]
    """
    out = []
    for env in dict.fromkeys(r.env for r in runs):
        for method in methods:
            walls = [r.wall_s for r in runs if r.env == env and r.method == method]
            if walls:
                out.append(WallRow(env, method, len(walls), sum(walls), sum(walls) / len(walls)))
    return out


def curves(runs: Sequence[Run]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """``{env: {method: [(iteration, mean training success_rate over the seeds that logged that
    iteration)]}}``, iterations ascending.

    >>> runs = [Run("e", "grpo", s, [], [(1, v), (2, v + 0.5)], 1.0) for s, v in [(0, 0.0), (1, 0.5)]]
    >>> curves(runs)
    {'e': {'grpo': [(1, 0.25), (2, 0.75)]}}
    """
    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for env in dict.fromkeys(r.env for r in runs):
        for method in dict.fromkeys(r.method for r in runs if r.env == env):
            by_it: dict[int, list[float]] = {}
            for run in runs:
                if run.env == env and run.method == method:
                    for it, v in run.curve:
                        by_it.setdefault(it, []).append(v)
            out.setdefault(env, {})[method] = [(it, _mean(v)) for it, v in sorted(by_it.items())]
    return out


def _signed(x: float | None) -> str:
    return "" if x is None or math.isnan(x) else f"{x:+.3f}"


def success_table(rows: Sequence[SuccessRow], baseline: str = BASELINE) -> list[str]:
    """Markdown lines of one env's :func:`success_rows`.

    >>> row = SuccessRow("sokoban", "gigpo", "greedy", 2, 4, 0.25, 0.5, [0.25, 0.75],
    ...                  0.125, -0.2, 0.4, 8)
    >>> success_table([row])[2]
    '| gigpo | greedy | 2 | 4 | 0.250 | 0.500 | 0.250 / 0.750 | +0.125 (-0.200 to +0.400) | 8 |'
    """
    lines = [
        f"| method | decoding | seeds | tasks per seed | after warm start | after RL | after RL per "
        f"seed | vs {baseline} (95% interval) | pairs |",
        "|---|---|---:|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        if r.method == baseline:
            vs = "(baseline)"
        elif r.diff is None:
            vs = "no baseline run"
        else:
            vs = f"{_signed(r.diff)} ({_signed(r.low)} to {_signed(r.high)})"
        seeds = " / ".join(f"{v:.3f}" for v in r.per_seed)
        lines.append(f"| {r.method} | {r.mode} | {r.seeds} | {r.tasks} | {r.warm:.3f} | "
                     f"{r.final:.3f} | {seeds} | {vs} | {r.pairs or ''} |")  # fmt: skip
    return lines


def wall_table(rows: Sequence[WallRow]) -> list[str]:
    """Markdown lines of one env's :func:`wall_rows`.

    >>> wall_table([WallRow("sokoban", "grpo", 2, 30.0, 15.0)])[2]
    '| grpo | 2 | 30 | 15 |'
    """
    lines = ["| method | runs | wall s, all runs | wall s per run |", "|---|---:|---:|---:|"]
    lines += [f"| {r.method} | {r.runs} | {r.total_s:.0f} | {r.per_run_s:.0f} |" for r in rows]
    return lines


def what_it_shows(
    rows: Sequence[SuccessRow], walls: Sequence[WallRow], baseline: str = BASELINE
) -> str:
    """A paragraph for one env stating what its rows measure: the after-RL ordering per decoding,
    which differences against ``baseline`` have an interval that excludes zero, whether the warm
    start is the same for every method, and the wall-time ordering. Built from the numbers only.

    >>> rows = [SuccessRow("e", "grpo", "greedy", 1, 4, 0.5, 0.5, [0.5]),
    ...         SuccessRow("e", "rtmc", "greedy", 1, 4, 0.5, 0.75, [0.75], 0.25, -0.1, 0.6, 4)]
    >>> what_it_shows(rows, [])  # doctest: +NORMALIZE_WHITESPACE
    'Greedy after RL: rtmc 0.750 > grpo 0.500; every interval against grpo includes zero (rtmc
    +0.250), so no method is measured apart from grpo here. The warm start scores the same for
    every method (0.500 greedy), as it should: the methods differ in RL only.'
    """
    parts = []
    for mode in dict.fromkeys(r.mode for r in rows):
        mine = sorted((r for r in rows if r.mode == mode), key=lambda r: -r.final)
        order = ""
        for i, r in enumerate(mine):
            sep = "" if i == 0 else (" = " if abs(r.final - mine[i - 1].final) < 5e-4 else " > ")
            order += f"{sep}{r.method} {r.final:.3f}"
        paired = [r for r in mine if r.diff is not None]
        above = [r for r in paired if r.low is not None and r.low > 0]
        below = [r for r in paired if r.high is not None and r.high < 0]
        text = f"{mode.capitalize()} after RL: {order}"
        if not paired:
            text += f" (no paired difference: no {baseline} run)."
        elif not above and not below:
            diffs = ", ".join(f"{r.method} {_signed(r.diff)}" for r in paired)
            text += (f"; every interval against {baseline} includes zero ({diffs}), so no method "
                     f"is measured apart from {baseline} here.")  # fmt: skip
        else:
            bits = [f"{r.method} above {baseline} ({_signed(r.diff)}, {_signed(r.low)} to "
                    f"{_signed(r.high)})" for r in above]  # fmt: skip
            bits += [f"{r.method} below {baseline} ({_signed(r.diff)}, {_signed(r.low)} to "
                     f"{_signed(r.high)})" for r in below]  # fmt: skip
            rest = [r.method for r in paired if r not in above and r not in below]
            text += "; interval excludes zero: " + "; ".join(bits)
            text += f"; the others' include it ({', '.join(rest)})." if rest else "."
        parts.append(text)
    warm = {(r.mode, round(r.warm, 6)) for r in rows}
    modes = list(dict.fromkeys(r.mode for r in rows))
    if len(warm) == len(modes):
        scores = ", ".join(f"{w:.3f} {m}" for m, w in sorted(warm, key=lambda x: modes.index(x[0])))
        parts.append(f"The warm start scores the same for every method ({scores}), as it should: "
                     "the methods differ in RL only.")  # fmt: skip
    else:
        parts.append("The warm-start scores differ between methods (the same seed should give "
                     "the same warm start): check the runs before reading the RL differences.")  # fmt: skip
    if walls:
        order = " < ".join(
            f"{w.method} {w.per_run_s:.0f} s" for w in sorted(walls, key=lambda w: w.per_run_s)
        )
        parts.append(f"Wall time per run: {order}.")
    return " ".join(parts)


def _names(word: str, items: Sequence[Any]) -> str:
    """``"seed 0"``, ``"seeds 0, 1"``."""
    return f"{word}{'s' if len(items) > 1 else ''} {', '.join(map(str, items))}"


def budget_note(
    budget: Sequence[str], envs: Sequence[str], methods: Sequence[str], seeds: Sequence[int]
) -> str:
    """The page's statement of what its rows are: the full benchmark (every default env, method
    and seed at the recipes' budgets), a subset of it, or a smoke run, naming what was not run.

    >>> print(budget_note([], list(ENVS), list(METHODS), list(SEEDS)))
    Every row is from the full benchmark: the recipes' budgets, every env, method and seed.
    >>> print(budget_note(list(QUICK), ["sokoban"], ["grpo"], [0]))  # doctest: +NORMALIZE_WHITESPACE
    **Smoke run, not the benchmark.** Every row on this page comes from a smoke run (learner
    flags `--iterations 1 --warm-start-steps 100 --eval-tasks 4` instead of the recipes' budgets)
    of env sokoban, method grpo, seed 0. The full benchmark has not been run: not run at all are
    env alfworld, methods gigpo, graphgpo, rtmc and seeds 1, 2. The numbers say nothing about the
    methods; they show that the pipeline runs.
    """
    missing = []
    for name, have, full in [
        ("env", envs, ENVS),
        ("method", methods, METHODS),
        ("seed", seeds, SEEDS),
    ]:
        lack = [x for x in full if x not in have]
        if lack:
            missing.append(_names(name, lack))
    ran = f"{_names('env', envs)}, {_names('method', methods)}, {_names('seed', seeds)}"
    lacking = ""
    if missing:
        lacking = (
            ": not run at all are "
            + (", ".join(missing[:-1]) + " and " if len(missing) > 1 else "")
            + missing[-1]
        )
    if budget:
        return (f"**Smoke run, not the benchmark.** Every row on this page comes from a smoke run "
                f"(learner flags `{' '.join(budget)}` instead of the recipes' budgets) of {ran}. "
                f"The full benchmark has not been run{lacking}. The numbers say nothing about the "
                "methods; they show that the pipeline runs.")  # fmt: skip
    if missing:
        return (f"Rows at the recipes' budgets for {ran}; part of the full benchmark has not been "
                f"run{lacking}.")  # fmt: skip
    return "Every row is from the full benchmark: the recipes' budgets, every env, method and seed."


def render_doc(
    command: str,
    note: str,
    rows: Sequence[SuccessRow],
    walls: Sequence[WallRow],
    plot: str | None,
    jobs: int,
    elapsed_s: float,
) -> str:
    """The page docs/llm_credit.md: what the benchmark runs, ``note`` (:func:`budget_note`), the
    command that made the page, one section per env (success table, wall-time table, what it
    shows), the learning-curve plot (``plot``: its file name beside the page, or ``None``)."""
    envs = list(dict.fromkeys(r.env for r in rows))
    out = [
        "# Credit compared on the LLM learner",
        "",
        "`benchmarks/llm_credit.py` trains the LLM learner with the same recipe and each credit "
        "method in turn (GRPO, GiGPO, GraphGPO, RTMC; [credit.md](credit.md)), several seeds "
        "each, on multi-step Sokoban (the main job's recipe: demonstration warm start, then 40 "
        "iterations; [learner-recipe.md](learner-recipe.md)) and on ALFWorld (`--model tiny`, its "
        "recipe: format warm start, 5 iterations; [alfworld.md](alfworld.md)), on CPU. Each run is "
        "`python examples/train_llm.py ENV --model tiny --credit M --seed S --out DIR "
        "--no-progress --export none`; nothing else of the recipe changes. The seed fixes the "
        "initial weights, the warm start and the task stream, so seed `s` of every method starts "
        "RL from the same policy.",
        "",
        "Held-out success is the last evaluation's (after RL) and the first's (after the warm "
        "start), on the env's test splits (Sokoban: `test`; ALFWorld: `test_seen` and "
        "`test_unseen`), greedy and sampled, averaged over every (seed, split, task) episode. "
        '"vs grpo" is the mean paired difference against GRPO over the same (seed, split, '
        "task) episodes of the last evaluation, with Tango's 95% score interval for paired 0/1 "
        "outcomes ([learner-report.md](learner-report.md)); the pairs are tasks within seeds, so "
        "the interval covers task-to-task and episode noise, and the per-seed column shows the "
        "seed-to-seed spread. Wall time is each learner process's, with "
        f"`--jobs {jobs}` of them at once; the runs' wall times sum to "
        f"{sum(w.total_s for w in walls) / 60:.1f} minutes, and the invocation that wrote this "
        f"page took {elapsed_s / 60:.1f} minutes (finished runs of an earlier invocation are read back, "
        "not run again).",
        "",
        note,
        "",
        "The command that made this page:",
        "",
        "```bash",
        command,
        "```",
        "",
        "`python benchmarks/llm_credit.py` runs the full benchmark (both envs, the four methods, "
        "seeds 0-2) and rewrites this page; finished runs in `runs/llm_credit/` are read back, "
        "not run again.",
    ]
    for env in envs:
        mine = [r for r in rows if r.env == env]
        out += ["", f"## {TITLES.get(env, env)}", "", f"`{ENVS[env][0]}`:", "", *success_table(mine),
                "", *wall_table([w for w in walls if w.env == env]), "",
                "What it shows: " + what_it_shows(mine, [w for w in walls if w.env == env])]  # fmt: skip
    not_run = [e for e in ENVS if e not in envs]
    for env in not_run:
        out += [
            "",
            f"## {TITLES.get(env, env)}",
            "",
            f"Not run for this page (`--envs {env}` runs it).",
        ]
    if plot:
        out += ["", "## Learning curves", "",
                "Training `success_rate` (the sampled rollouts of each iteration) per iteration, "
                "mean over seeds, one line per method, one panel per env:", "",
                f"![training success per iteration, per method]({plot})"]  # fmt: skip
    return "\n".join(out) + "\n"


def plot_curves(
    data: Mapping[str, Mapping[str, Sequence[tuple[int, float]]]], path: Path
) -> Path | None:
    """Plot :func:`curves`' output to ``path`` (one panel per env); ``None`` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return None
    fig, axes = plt.subplots(1, len(data), figsize=(5.5 * len(data), 3.8), squeeze=False)
    for ax, (env, methods) in zip(axes[0], data.items(), strict=True):
        for method, points in methods.items():
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                    label=method)  # fmt: skip
        ax.set_title(ENVS[env][0] if env in ENVS else env)
        ax.set_xlabel("iteration")
        ax.set_ylabel("training success rate (mean over seeds)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def launch(argv: Sequence[str], run_dir: Path, overwrite: bool) -> float:
    """Run the learner with ``argv`` (stdout and stderr to ``run_dir/train.log``), write
    :data:`MARKER` and return its wall seconds; raises :class:`RuntimeError` on a non-zero exit."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / MARKER).unlink(missing_ok=True)
    cmd = [sys.executable, str(TRAIN), *argv, *(["--overwrite"] if overwrite else [])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    with (run_dir / "train.log").open("w") as log:
        rc = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    wall = time.perf_counter() - start
    (run_dir / MARKER).write_text(json.dumps({"argv": list(argv), "rc": rc, "wall_s": wall}))
    if rc != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited {rc}: see {run_dir / 'train.log'}")
    return wall


def run_all(plan: Sequence[tuple[str, str, int, Path]], budget: Sequence[str], jobs: int,
            rerun: bool) -> list[str]:  # fmt: skip
    """Run every ``(env, method, seed, run_dir)`` of ``plan`` that is not finished (all with
    ``rerun``), ``jobs`` at once; returns the failures' messages."""
    todo = []
    for env, method, seed, run_dir in plan:
        argv = learner_argv(env, method, seed, run_dir, budget)
        state = run_state(run_dir, argv)
        if state == "finished" and not rerun:
            print(f"{env} {method} s{seed}: finished in {run_dir}, read back")
        elif state == "other" and not rerun:
            return [f"{run_dir} holds a finished run with other flags: --rerun replaces it"]
        else:
            todo.append((env, method, seed, run_dir, argv, state != "empty"))
    failures = []

    def one(item: tuple[str, str, int, Path, list[str], bool]) -> None:
        env, method, seed, run_dir, argv, overwrite = item
        try:
            wall = launch(argv, run_dir, overwrite)
            print(f"{env} {method} s{seed}: {wall:.0f} s", flush=True)
        except RuntimeError as exc:
            failures.append(str(exc))
            print(f"{env} {method} s{seed}: FAILED ({exc})", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, todo))
    return failures


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--envs", nargs="+", choices=list(ENVS), default=list(ENVS))
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    p.add_argument("--jobs", type=int, default=2, help="learner runs at once (default 2)")
    p.add_argument("--out", default="runs/llm_credit", help="runs go to OUT/<env>/<method>-s<seed>")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument(
        "--iterations", type=int, help="training iterations (default: the recipe's)"
    )
    budget.add_argument("--quick", action="store_true", help=f"smoke budget: {' '.join(QUICK)}")
    p.add_argument("--rerun", action="store_true", help="run finished runs again")
    p.add_argument("--doc", default="docs/llm_credit.md", help="the page to write, or none")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    from agentenvs.wrappers.registry import METHODS as REGISTRY

    unknown = [m for m in args.methods if m not in REGISTRY]
    if unknown:
        print(f"unknown credit method(s) {unknown}: `agentenvs list` names them", file=sys.stderr)
        return 2
    budget = (
        list(QUICK)
        if args.quick
        else (["--iterations", str(args.iterations)] if args.iterations else [])
    )
    out = Path(args.out)
    plan = [
        (e, m, s, out / e / f"{m}-s{s}")
        for e in args.envs
        for m in args.methods
        for s in args.seeds
    ]
    start = time.perf_counter()
    failures = run_all(plan, budget, args.jobs, args.rerun)
    runs = [read_run(d, e, m, s) for e, m, s, d in plan
            if run_state(d, learner_argv(e, m, s, d, budget)) == "finished"]  # fmt: skip
    elapsed = time.perf_counter() - start
    rows, walls = success_rows(runs, args.methods), wall_rows(runs, args.methods)
    for env in dict.fromkeys(r.env for r in runs):
        print(f"\n## {env} ({ENVS[env][0]})\n")
        print("\n".join(success_table([r for r in rows if r.env == env])))
        print()
        print("\n".join(wall_table([w for w in walls if w.env == env])))
    print(f"\nwall time of this invocation: {elapsed:.0f} s")
    if args.doc != "none" and runs:
        doc = Path(args.doc)
        doc.parent.mkdir(parents=True, exist_ok=True)
        png = plot_curves(curves(runs), doc.with_suffix(".png"))
        note = budget_note(
            budget, list(dict.fromkeys(r.env for r in runs)), args.methods, args.seeds
        )
        command = shlex.join(["python", "benchmarks/llm_credit.py", *argv])
        doc.write_text(
            render_doc(command, note, rows, walls, png.name if png else None, args.jobs, elapsed)
        )
        print(f"wrote {doc}" + (f" and {png}" if png else ""))
    for message in failures:
        print(f"failed: {message}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
