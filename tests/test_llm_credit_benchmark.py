"""The statistics and the page of benchmarks/llm_credit.py (docs/llm_credit.md) on synthetic run
directories with known outcomes; the learner is not run (the benchmark measures, tests check)."""

from __future__ import annotations

import csv
import doctest
import json
from pathlib import Path

import pytest
from agentenvs.learners.llm.intervals import tango_paired

from benchmarks import llm_credit
from benchmarks.llm_credit import (
    MARKER,
    QUICK,
    curves,
    learner_argv,
    read_run,
    render_doc,
    run_state,
    success_rows,
    success_table,
    wall_rows,
    wall_table,
)

TASKS = ["a", "b", "c", "d"]
#: (method, seed) -> {(iteration, mode): successes of tasks a-d}. Iteration 0 is the evaluation
#: after the warm start (the same for both methods of a seed), 1 an intermediate one that the
#: statistics must ignore, 2 the last.
OUTCOMES = {
    ("grpo", 0): {(0, "greedy"): [1, 0, 0, 0], (1, "greedy"): [1, 1, 1, 1],
                  (2, "greedy"): [1, 0, 0, 0], (0, "sampled"): [0, 1, 0, 0],
                  (2, "sampled"): [1, 1, 0, 0]},
    ("grpo", 1): {(0, "greedy"): [0, 0, 0, 0], (2, "greedy"): [0, 0, 0, 0],
                  (0, "sampled"): [0, 0, 0, 0], (2, "sampled"): [0, 0, 0, 0]},
    ("gigpo", 0): {(0, "greedy"): [1, 0, 0, 0], (1, "greedy"): [0, 0, 0, 0],
                   (2, "greedy"): [1, 1, 1, 0], (0, "sampled"): [0, 1, 0, 0],
                   (2, "sampled"): [0, 1, 0, 0]},
    ("gigpo", 1): {(0, "greedy"): [0, 0, 0, 0], (2, "greedy"): [1, 0, 0, 0],
                   (0, "sampled"): [0, 0, 0, 0], (2, "sampled"): [0, 0, 0, 0]},
}  # fmt: skip
#: Training success_rate of iterations 1 and 2, and the marker's wall seconds.
CURVES = {("grpo", 0): [0.1, 0.3], ("grpo", 1): [0.3, 0.5],
          ("gigpo", 0): [0.2, 0.6], ("gigpo", 1): [0.4, 0.8]}  # fmt: skip
WALLS = {("grpo", 0): 10.0, ("grpo", 1): 20.0, ("gigpo", 0): 30.0, ("gigpo", 1): 50.0}


def write_run(root: Path, method: str, seed: int) -> Path:
    """A finished --quick Sokoban run directory as the learner and the benchmark leave it."""
    run_dir = root / "sokoban" / f"{method}-s{seed}"
    run_dir.mkdir(parents=True)
    with (run_dir / "eval_outcomes.jsonl").open("w") as f:
        for (iteration, mode), successes in OUTCOMES[method, seed].items():
            for task, ok in zip(TASKS, successes, strict=True):
                row = {"iteration": iteration, "split": "test", "mode": mode, "task_id": task,
                       "success": bool(ok), "return": float(ok), "length": 3, "valid": 1.0}  # fmt: skip
                f.write(json.dumps(row) + "\n")
    with (run_dir / "metrics.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["iteration", "eval/greedy/success_rate", "success_rate"])
        writer.writerow([0.0, 0.25, ""])  # row 0: the evaluation after the warm start only
        for it, value in enumerate(CURVES[method, seed], start=1):
            writer.writerow([float(it), "", value])
    argv = learner_argv("sokoban", method, seed, run_dir, QUICK)
    marker = {"argv": argv, "rc": 0, "wall_s": WALLS[method, seed]}
    (run_dir / MARKER).write_text(json.dumps(marker))
    return run_dir


@pytest.fixture
def runs(tmp_path: Path) -> list[llm_credit.Run]:
    return [
        read_run(write_run(tmp_path, m, s), "sokoban", m, s)
        for m in ("grpo", "gigpo")
        for s in (0, 1)
    ]


def test_rows_are_the_hand_computed_means_and_paired_differences(runs):
    rows = {(r.method, r.mode): r for r in success_rows(runs, ["grpo", "gigpo"])}
    assert list(rows) == [("grpo", "greedy"), ("gigpo", "greedy"), ("grpo", "sampled"),
                          ("gigpo", "sampled")]  # fmt: skip
    g, h = rows["grpo", "greedy"], rows["gigpo", "greedy"]
    assert (g.seeds, g.tasks, g.warm, g.final, g.per_seed) == (2, 4, 0.125, 0.125, [0.25, 0.0])
    assert (h.warm, h.final, h.per_seed) == (0.125, 0.5, [0.75, 0.25])  # iteration 1 ignored
    assert g.diff is None and g.pairs is None  # the baseline
    # gigpo - grpo over the 8 (seed, split, task) pairs of iteration 2: b, c gained in seed 0 and
    # a in seed 1, none lost: +3/8 with Tango's interval.
    assert (h.diff, h.low, h.high, h.pairs) == pytest.approx((*tango_paired(0, 3, 8), 8))
    assert h.diff == 0.375 and -0.072 < h.low < 0 < 0.694 < h.high < 0.695  # 3 of 8: wide
    s, t = rows["grpo", "sampled"], rows["gigpo", "sampled"]
    assert (s.warm, s.final, t.final) == (0.125, 0.25, 0.125)
    assert (t.diff, t.low, t.high, t.pairs) == pytest.approx((*tango_paired(1, 0, 8), 8))


def test_wall_rows_and_curves(runs):
    assert [
        (w.method, w.runs, w.total_s, w.per_run_s) for w in wall_rows(runs, ["grpo", "gigpo"])
    ] == [
        ("grpo", 2, 30.0, 15.0),
        ("gigpo", 2, 80.0, 40.0),
    ]
    got = curves(runs)["sokoban"]
    assert [it for it, _ in got["grpo"]] == [1, 2] == [it for it, _ in got["gigpo"]]
    assert [v for _, v in got["grpo"]] == pytest.approx([0.2, 0.4])
    assert [v for _, v in got["gigpo"]] == pytest.approx([0.3, 0.7])


def test_run_state_tells_finished_runs_from_others(tmp_path):
    run_dir = write_run(tmp_path, "grpo", 0)
    assert run_state(run_dir, learner_argv("sokoban", "grpo", 0, run_dir, QUICK)) == "finished"
    assert run_state(run_dir, learner_argv("sokoban", "grpo", 0, run_dir)) == "other"  # full budget
    (run_dir / MARKER).unlink()
    assert run_state(run_dir, learner_argv("sokoban", "grpo", 0, run_dir, QUICK)) == "partial"
    assert run_state(tmp_path / "none", []) == "empty"


def test_tables_and_page_render_the_rows(runs):
    rows, walls = success_rows(runs, ["grpo", "gigpo"]), wall_rows(runs, ["grpo", "gigpo"])
    table = success_table(rows)
    h = next(r for r in rows if (r.method, r.mode) == ("gigpo", "greedy"))
    assert table[1 + 2] == (
        f"| gigpo | greedy | 2 | 4 | 0.125 | 0.500 | 0.750 / 0.250 | +0.375 ({h.low:+.3f} to "
        f"{h.high:+.3f}) | 8 |"
    )
    assert table[2] == "| grpo | greedy | 2 | 4 | 0.125 | 0.125 | 0.250 / 0.000 | (baseline) |  |"
    assert wall_table(walls)[2:] == ["| grpo | 2 | 30 | 15 |", "| gigpo | 2 | 80 | 40 |"]
    note = llm_credit.budget_note(list(QUICK), ["sokoban"], ["grpo", "gigpo"], [0, 1])
    page = render_doc(
        "python benchmarks/llm_credit.py --quick", note, rows, walls, "x.png", 1, 60.0
    )
    for line in table + wall_table(walls):
        assert line in page.splitlines()
    assert "**Smoke run, not the benchmark.**" in page and "seeds 0, 1" in page
    assert "env alfworld, methods graphgpo, rtmc and seed 2" in page
    assert "## ALFWorld\n\nNot run for this page" in page
    assert "```bash\npython benchmarks/llm_credit.py --quick\n```" in page
    assert "![training success per iteration, per method](x.png)" in page
    shows = page.split("What it shows: ", 1)[1].split("\n", 1)[0]
    # The ordering as measured; 3 of 8 pairs gained is not enough to exclude zero.
    assert shows.startswith(
        "Greedy after RL: gigpo 0.500 > grpo 0.125; every interval against grpo includes zero "
        "(gigpo +0.375), so no method is measured apart from grpo here."
    )
    assert (
        "Sampled after RL: grpo 0.250 > gigpo 0.125; every interval against grpo includes" in shows
    )
    assert "The warm start scores the same for every method" in shows
    assert "Wall time per run: grpo 15 s < gigpo 40 s." in shows


def test_what_it_shows_names_an_interval_that_excludes_zero():
    row = llm_credit.SuccessRow
    rows = [row("e", "grpo", "greedy", 3, 64, 0.2, 0.3, [0.3] * 3),
            row("e", "rtmc", "greedy", 3, 64, 0.2, 0.1, [0.1] * 3, -0.2, -0.3, -0.1, 192),
            row("e", "gigpo", "greedy", 3, 64, 0.2, 0.3, [0.3] * 3, 0.0, -0.1, 0.1, 192),
            row("e", "graphgpo", "greedy", 3, 64, 0.25, 0.6, [0.6] * 3, 0.3, 0.2, 0.4, 192)]  # fmt: skip
    assert llm_credit.what_it_shows(rows, []) == (
        "Greedy after RL: graphgpo 0.600 > grpo 0.300 = gigpo 0.300 > rtmc 0.100; interval "
        "excludes zero: graphgpo above grpo (+0.300, +0.200 to +0.400); rtmc below grpo "
        "(-0.200, -0.300 to -0.100); the others' include it (gigpo). The warm-start scores "
        "differ between methods (the same seed should give the same warm start): check the runs "
        "before reading the RL differences."
    )


def test_main_reads_finished_runs_back_and_writes_the_page(tmp_path, capsys, monkeypatch):
    for m in ("grpo", "gigpo"):
        for s in (0, 1):
            write_run(tmp_path / "runs", m, s)
    monkeypatch.setattr(llm_credit, "launch", lambda *a: pytest.fail("a finished run was rerun"))
    doc = tmp_path / "page.md"
    argv = ["--envs", "sokoban", "--methods", "grpo", "gigpo", "--seeds", "0", "1", "--quick",
            "--out", str(tmp_path / "runs"), "--doc", str(doc)]  # fmt: skip
    assert llm_credit.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("finished in") == 4
    assert "| gigpo | greedy | 2 | 4 | 0.125 | 0.500 | 0.750 / 0.250 | +0.375 (" in out
    page = doc.read_text()
    assert "| gigpo | greedy | 2 | 4 | 0.125 | 0.500 |" in page
    assert "python benchmarks/llm_credit.py --envs sokoban" in page
    if (tmp_path / "page.png").exists():  # with matplotlib
        assert "(page.png)" in page


def test_a_finished_run_of_other_flags_is_refused(tmp_path, capsys):
    write_run(tmp_path / "runs", "grpo", 0)
    argv = ["--envs", "sokoban", "--methods", "grpo", "--seeds", "0", "--iterations", "3",
            "--out", str(tmp_path / "runs"), "--doc", "none"]  # fmt: skip
    assert llm_credit.main(argv) == 1
    assert "holds a finished run with other flags: --rerun replaces it" in capsys.readouterr().err


def test_doctests():
    result = doctest.testmod(llm_credit, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 5 and result.failed == 0


@pytest.mark.slow
def test_quick_run_of_two_methods_on_sokoban(tmp_path, capsys):
    """The learner for real: ``--quick`` on grpo and graphgpo, seed 0 (about a minute)."""
    pytest.importorskip("torch")
    doc = tmp_path / "page.md"
    argv = ["--envs", "sokoban", "--methods", "grpo", "graphgpo", "--seeds", "0", "--quick",
            "--jobs", "1", "--out", str(tmp_path / "runs"), "--doc", str(doc)]  # fmt: skip
    assert llm_credit.main(argv) == 0
    out = capsys.readouterr().out
    assert "| graphgpo | greedy | 1 | 4 |" in out and "| graphgpo | 1 |" in out
    assert "**Smoke run, not the benchmark.**" in doc.read_text()
