"""The crash-safe trajectory store (agentenvs/core/store.py): round trips in both formats, the
filters, torn records, a writer killed with SIGKILL mid-write, truncation, the credit wrappers'
``store=`` and the LLM learner's store (iterations, resume)."""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from agentenvs.wrappers import CreditWrapper, VectorCreditWrapper, credited_groups

import agentenvs
from agentenvs.core import Step, StoredGroup, Trajectory, TrajectoryStore, list_runs, read_groups

ENV_ID = "agentenvs/Sokoban-v0"
ROOT = Path(__file__).resolve().parents[2]
FORMATS = ["jsonl", "parquet"]


def sokoban_group(seed: int = 0, size: int = 8) -> list[Trajectory]:
    """A credited GraphGPO group of ``size`` random-policy Sokoban episodes, with an array and
    bytes in every step's extras and a credit diagnostic in each trajectory's info."""
    env = CreditWrapper(
        gym.make(ENV_ID, action_format="plain", max_steps=4),
        group_size=size,
        method="graph",
    )
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    while True:
        _, _, terminated, truncated, info = env.step(
            str(rng.choice(["up", "down", "left", "right"]))
        )
        if terminated or truncated:
            if "credit" in info:
                group = info["credit"]
                break
            env.reset()
    for k, traj in enumerate(group):
        traj.info["credit"] = {"judge_calls": k, "judge_seconds": 0.5 * k}
        for j, step in enumerate(traj.steps):
            step.extras.update(
                logprobs=np.linspace(-1, 0, 3 + j, dtype=np.float32),
                raw=bytes([k, j]),
                truncated=bool(j % 2),
            )
    return group


def traj(task: str, success: bool, tag: str = "") -> Trajectory:
    return Trajectory(
        task, f"{task}#0", [Step(f"obs {tag}", "up", float(success), advantage=1.0)], success
    )


def fill(root, fmt: str = "jsonl") -> None:
    """Two runs: iterations 1-3 x tasks a/b, methods grpo/graphgpo, mixed successes."""
    with TrajectoryStore(root, run="r1", fmt=fmt, sync=False) as store:
        for it in (1, 2, 3):
            store.append([traj("a", True), traj("a", False)], method="grpo", iteration=it)
            store.append([traj("b", False), traj("b", False)], method="graphgpo", iteration=it)
    with TrajectoryStore(root, run="r2", fmt=fmt, sync=False) as store:
        store.append([traj("a", True), traj("a", True)], method="grpo")


def keys(groups) -> list[tuple]:
    return [(g.run, g.iteration, g.method, g.task_id, len(g.trajectories)) for g in groups]


# -- round trips -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_keeps_every_field(tmp_path, fmt):
    group = sokoban_group(seed=1)
    before = time.time()
    with TrajectoryStore(tmp_path, run="exp", fmt=fmt) as store:
        store.append(group, method="graphgpo", iteration=7)
        store.append(group[:3])
        assert store.count == 2
    [first, second] = read_groups(tmp_path)
    assert isinstance(first, StoredGroup)
    assert (first.run, first.iteration, first.method) == ("exp", 7, "graphgpo")
    assert (first.group_id, first.task_id) == (group[0].group_id, group[0].task_id)
    assert before <= first.time <= time.time()
    assert first.trajectories == group  # every Step field, extras arrays and bytes, info
    back = first.trajectories[2].steps[-1]
    assert isinstance(back.extras["logprobs"], np.ndarray) and back.extras["raw"] == bytes(
        [2, len(group[2]) - 1]
    )
    assert [s.advantage for t in first.trajectories for s in t.steps] == [
        s.advantage for t in group for s in t.steps
    ]
    assert first.trajectories[0].steps[0].state_key == group[0].steps[0].state_key is not None
    assert first.trajectories[3].info["credit"] == {"judge_calls": 3, "judge_seconds": 1.5}
    assert (second.iteration, second.method, second.trajectories) == (None, None, group[:3])
    assert list_runs(tmp_path) == ["exp"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_drop_extras_leaves_the_caller_s_trajectories_alone(tmp_path, fmt):
    group = sokoban_group(seed=2, size=2)
    with TrajectoryStore(tmp_path, fmt=fmt, drop_extras=("logprobs", "raw")) as store:
        store.append(group)
    [stored] = read_groups(tmp_path)
    assert all(set(s.extras) == {"truncated"} for t in stored.trajectories for s in t.steps)
    assert all("logprobs" in s.extras for t in group for s in t.steps)  # not changed
    assert [s.advantage for s in stored.trajectories[0].steps] == [
        s.advantage for s in group[0].steps
    ]


def test_an_existing_run_is_appended_to_in_both_formats(tmp_path):
    for fmt in FORMATS:
        for it in (1, 2):
            with TrajectoryStore(tmp_path, run="r", fmt=fmt) as store:
                store.append([traj("a", True, fmt)], iteration=it)
    got = [(g.iteration, g.trajectories[0].steps[0].observation) for g in read_groups(tmp_path)]
    assert got == [(1, "obs jsonl"), (2, "obs jsonl"), (1, "obs parquet"), (2, "obs parquet")]
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "part-000000.parquet",
        "part-000001.parquet",
    ]


# -- filters ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_filter_and_their_combinations(tmp_path, fmt):
    fill(tmp_path, fmt)
    assert list_runs(tmp_path) == ["r1", "r2"]
    assert len(list(read_groups(tmp_path))) == 7
    assert {g.run for g in read_groups(tmp_path, run="r2")} == {"r2"}
    assert len(list(read_groups(tmp_path, run=["r1", "r2"]))) == 7
    assert [g.iteration for g in read_groups(tmp_path, iteration=2)] == [2, 2]
    assert [g.iteration for g in read_groups(tmp_path, iteration=range(2, 4))] == [2, 2, 3, 3]
    assert [g.run for g in read_groups(tmp_path, iteration=[None])] == ["r2"]
    assert {g.task_id for g in read_groups(tmp_path, task="b")} == {"b"}
    assert len(list(read_groups(tmp_path, task={"a", "b"}))) == 7
    assert [g.method for g in read_groups(tmp_path, method="graphgpo")] == ["graphgpo"] * 3
    # success=True keeps the successful members only and drops the groups left empty
    won = list(read_groups(tmp_path, success=True))
    assert keys(won) == [
        ("r1", 1, "grpo", "a", 1),
        ("r1", 2, "grpo", "a", 1),
        ("r1", 3, "grpo", "a", 1),
        ("r2", None, "grpo", "a", 2),
    ]
    assert all(t.success for g in won for t in g.trajectories)
    lost = list(read_groups(tmp_path, success=False))
    assert [len(g.trajectories) for g in lost] == [1, 2, 1, 2, 1, 2]
    assert not any(t.success for g in lost for t in g.trajectories)
    both = read_groups(tmp_path, run="r1", iteration=[1, 3], task="a", method="grpo", success=False)
    assert keys(both) == [("r1", 1, "grpo", "a", 1), ("r1", 3, "grpo", "a", 1)]
    assert list(read_groups(tmp_path, method="grpo", task="b")) == []


def test_bad_reader_arguments_raise_clear_errors(tmp_path):
    fill(tmp_path)
    with pytest.raises(ValueError, match="no trajectory store"):
        read_groups(tmp_path / "missing")
    with pytest.raises(ValueError, match="no trajectory store"):
        list_runs(tmp_path / "r1.jsonl")
    with pytest.raises(ValueError, match=r"no run \['nope'\].*stored runs: \['r1', 'r2'\]"):
        read_groups(tmp_path, run="nope")
    with pytest.raises(ValueError, match="iteration takes int"):
        read_groups(tmp_path, iteration="1")
    with pytest.raises(ValueError, match="task takes str"):
        read_groups(tmp_path, task=3)
    with pytest.raises(ValueError, match="success must be"):
        read_groups(tmp_path, success="yes")
    with pytest.raises(ValueError, match="a value or a collection"):
        read_groups(tmp_path, method=object())
    (tmp_path / "other.jsonl").write_text('{"task_id": "a"}\n')  # not a store file
    reader = read_groups(tmp_path, run="other")
    assert list(reader) == [] and reader.skipped_at == [f"{tmp_path / 'other.jsonl'}:1"]


def test_bad_writer_arguments_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="fmt must be one of"):
        TrajectoryStore(tmp_path, fmt="csv")
    with pytest.raises(ValueError, match="run must be a file name"):
        TrajectoryStore(tmp_path, run="a/b")
    with pytest.raises(ValueError, match="drop_extras"):
        TrajectoryStore(tmp_path, drop_extras="logprobs")
    with pytest.raises(ValueError, match="flush_every applies to Parquet"):
        TrajectoryStore(tmp_path, flush_every=4)
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="not a directory"):
        TrajectoryStore(tmp_path / "file")
    store = TrajectoryStore(tmp_path)
    with pytest.raises(ValueError, match="not one Trajectory|sequence of Trajectory"):
        store.append(traj("a", True))
    with pytest.raises(ValueError, match="non-empty"):
        store.append([])
    with pytest.raises(ValueError, match="one task"):
        store.append([traj("a", True), traj("b", True)])
    with pytest.raises(ValueError, match="iteration must be"):
        store.append([traj("a", True)], iteration=-1)
    with pytest.raises(ValueError, match="method must be"):
        store.append([traj("a", True)], method=3)
    store.close()
    with pytest.raises(ValueError, match="closed"):
        store.append([traj("a", True)])
    assert list(read_groups(tmp_path)) == []  # nothing half-written by the refused appends


def test_parquet_without_pyarrow_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # an environment without pyarrow
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match="pip install pyarrow"):
        TrajectoryStore(tmp_path, fmt="parquet")


# -- torn records ----------------------------------------------------------------------------------
def test_a_torn_final_line_is_skipped_and_counted_and_the_next_writer_carries_on(tmp_path):
    with TrajectoryStore(tmp_path, run="r") as store:
        store.append([traj("a", True)], iteration=1)
        store.append([traj("a", False)], iteration=2)
    path = tmp_path / "r.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines(keepends=True)[0][:40])  # a killed writer's bytes
    reader = read_groups(tmp_path)
    assert [g.iteration for g in reader] == [1, 2]
    assert reader.skipped == 1 and reader.skipped_at == [f"{path}:3"]
    # a new writer ends the torn line; readers keep skipping it (now: a line that is not JSON)
    with TrajectoryStore(tmp_path, run="r") as store:
        store.append([traj("a", True)], iteration=3)
    reader = read_groups(tmp_path)
    assert [g.iteration for g in reader] == [1, 2, 3] and reader.skipped == 1
    # a complete-looking last record without its newline is also a torn write
    path.write_bytes(whole + whole.splitlines(keepends=True)[0].rstrip(b"\n"))
    reader = read_groups(tmp_path)
    assert [g.iteration for g in reader] == [1, 2] and reader.skipped == 1


def test_parquet_readers_ignore_temporary_parts_and_buffered_groups_wait_for_a_flush(tmp_path):
    store = TrajectoryStore(tmp_path, run="r", fmt="parquet", flush_every=3)
    store.append([traj("a", True)], iteration=1)
    store.append([traj("a", True)], iteration=2)
    assert list(read_groups(tmp_path)) == []  # buffered: not written yet
    (tmp_path / "r" / ".part-crashed.tmp").write_bytes(b"PAR1 half a part")
    store.append([traj("a", True)], iteration=3)  # the third: one part of three groups
    store.append([traj("a", True)], iteration=4)
    assert [g.iteration for g in read_groups(tmp_path)] == [1, 2, 3]
    store.close()  # writes the rest
    reader = read_groups(tmp_path)
    assert [g.iteration for g in reader] == [1, 2, 3, 4] and reader.skipped == 0
    (tmp_path / "r" / "part-000009.parquet").write_bytes(b"not parquet")
    reader = read_groups(tmp_path)
    with pytest.warns(UserWarning, match="unreadable Parquet part"):
        assert [g.iteration for g in reader] == [1, 2, 3, 4]
    assert reader.skipped == 1


# -- SIGKILL ---------------------------------------------------------------------------------------
def crash_group(i: int) -> list:
    """Group ``i`` of the SIGKILL test: 2 trajectories, one JSON line of ~8 MB (a write the kernel
    copies for several milliseconds, so that a kill can land inside it)."""
    import numpy as np

    from agentenvs.core import Step, Trajectory

    rng = np.random.default_rng(i)
    return [
        Trajectory(
            f"task-{i % 3}",
            f"task-{i % 3}#{i}",
            [
                Step(f"{i:07d}{k}" * 500_000, "up", 0.5, advantage=float(i - k)),
                Step("end", "down", 1.0, extras={"noise": rng.random(1000)}, advantage=0.0),
            ],
            success=bool(k),
            traj_id=str(k),
        )
        for k in range(2)
    ]


CHILD = """
import sys
from agentenvs.core import TrajectoryStore
{source}
root, fmt, sync = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
store = TrajectoryStore(root, run="crash", fmt=fmt, sync=sync)
for i in range(10_000):
    store.append(crash_group(i), method="grpo", iteration=i)
    print(i, flush=True)  # group i is durable
"""


def _kill_mid_write(root: Path, fmt: str, sync: bool, after: int) -> list[int]:
    """Start a writer, wait until it reported ``after`` groups and has begun writing the next
    one (the JSON-lines file grows, or a Parquet temporary part exists), SIGKILL it; returns the
    groups it reported written."""
    script = CHILD.format(source=textwrap.dedent(inspect.getsource(crash_group)))
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(root), fmt, "1" if sync else "0"],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        for _ in range(after):
            line = child.stdout.readline()
            assert line, "the writer died before reporting its groups"
        path, run_dir = root / "crash.jsonl", root / "crash"
        size = path.stat().st_size if fmt == "jsonl" else 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and child.poll() is None:  # the next group is written
            if fmt == "jsonl" and path.stat().st_size > size:
                break
            if fmt == "parquet" and any(p.suffix == ".tmp" for p in run_dir.iterdir()):
                break
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    return list(range(after)) + [int(x) for x in rest.split()]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_writer_killed_mid_write_leaves_every_reported_group_readable(tmp_path, fmt):
    torn = 0
    for attempt in range(3):
        root = tmp_path / str(attempt)
        reported = _kill_mid_write(root, fmt, sync=attempt != 1, after=2 + attempt)
        assert reported == list(range(len(reported)))
        reader = read_groups(root)
        stored = list(reader)
        # every reported group is back, equal; the one being written is back whole or not at all
        assert len(reported) <= len(stored) <= len(reported) + 1
        for i, group in enumerate(stored):
            assert (group.iteration, group.method, group.task_id) == (i, "grpo", f"task-{i % 3}")
            assert group.trajectories == crash_group(i)
        torn += reader.skipped
        if fmt == "parquet":
            assert reader.skipped == 0  # parts appear whole or not at all
            torn += any(p.suffix == ".tmp" for p in (root / "crash").iterdir())
        else:
            assert reader.skipped <= 1
    assert torn >= 1, "no kill landed mid-write in three attempts"


# -- truncation (a resumed learner) ---------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_truncate_drops_the_iterations_after_a_checkpoint(tmp_path, fmt):
    with TrajectoryStore(tmp_path, run="r", fmt=fmt, flush_every=1) as store:
        store.append([traj("a", True)])  # no iteration: kept
        for it in (1, 2, 3):
            store.append([traj("a", True), traj("a", False)], iteration=it)
    if fmt == "jsonl":
        with (tmp_path / "r.jsonl").open("ab") as f:
            f.write(b'{"torn')
    with TrajectoryStore(tmp_path, run="r", fmt=fmt) as store:
        assert store.truncate(1) == 2
        assert store.truncate(1) == 0
        store.append([traj("a", False)], iteration=2)
    reader = read_groups(tmp_path)
    assert [g.iteration for g in reader] == [None, 1, 2] and reader.skipped == 0
    with TrajectoryStore(tmp_path, run="r", fmt=fmt) as store:
        assert store.truncate(-1) == 2
    assert [g.iteration for g in read_groups(tmp_path)] == [None]


# -- the credit wrappers ---------------------------------------------------------------------------
def test_credit_wrapper_stores_each_credited_group_once(tmp_path):
    store = TrajectoryStore(tmp_path, run="single")
    env = CreditWrapper(
        gym.make(ENV_ID, action_format="plain", max_steps=3), "graph", group_size=2, store=store
    )
    env.reset(seed=0)
    handed_out = []
    while len(handed_out) < 3:
        _, _, terminated, truncated, info = env.step("left")
        if terminated or truncated:
            handed_out += [info["credit"]] if "credit" in info else []
            env.reset()
    store.close()
    stored = list(read_groups(tmp_path))
    assert [g.trajectories for g in stored] == handed_out
    assert {(g.method, g.iteration, g.run) for g in stored} == {("graphgpo", None, "single")}
    assert [g.group_id for g in stored] == [f"{g[0].task_id}#{k}" for k, g in enumerate(handed_out)]
    again = gym.make(env.spec)  # the spec carries the store too
    assert again.get_wrapper_attr("_assembler").store is store


def test_vector_credit_wrapper_stores_each_credited_group_once(tmp_path):
    grouped = agentenvs.make_group_vec_env(ENV_ID, 2, 2, action_format="plain", max_steps=2)
    with TrajectoryStore(tmp_path, run="vec", fmt="parquet") as store:
        envs = VectorCreditWrapper(grouped, "rtmc", store=store)
        envs.reset(seed=0)
        handed_out = []
        while len(handed_out) < 4:
            infos = envs.step(["up"] * 4)[-1]
            handed_out += credited_groups(infos)
        envs.close()
    stored = list(read_groups(tmp_path, run="vec"))
    assert [g.trajectories for g in stored] == handed_out
    assert {g.method for g in stored} == {"rtmc"}


# -- the LLM learner -------------------------------------------------------------------------------
@pytest.mark.integration
def test_the_learner_stores_each_iteration_once_across_a_resume(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from agentenvs.learners.llm.config import TrainConfig
    from agentenvs.learners.llm.trainer import Trainer
    from agentenvs.wrappers import GraphCreditWrapper
    from llm_fixtures import tiny_policy

    envs = [lambda: GraphCreditWrapper(gym.make(ENV_ID, max_steps=2), group_size=2)] * 2
    out = tmp_path / "run-a"
    small = dict(max_new_tokens=6, eval_tasks=0, micro_batch_size=4, torch_threads=1)
    threads = torch.get_num_threads()

    def trainer(iterations: int, **extra) -> Trainer:
        config = TrainConfig(iterations=iterations, **small, **extra)
        return Trainer(config, tiny_policy(seed=0), out, envs, tensorboard=False, progress=False)

    try:
        first = trainer(1)
        first.train()  # iteration 1, checkpointed
        first.train_iteration()  # iteration 2 stored, never checkpointed (a crash after it)
        first.close()
        stored = list(read_groups(out / "trajectories"))
        assert [(g.run, g.iteration, g.method) for g in stored] == [
            ("run-a", 1, "graphgpo")
        ] * 2 + [("run-a", 2, "graphgpo")] * 2
        step = stored[0].trajectories[0].steps[0]
        assert step.advantage is not None and set(step.extras) == {"truncated"}
        resumed = trainer(3, store_extras=True)
        resumed.load_checkpoint()
        resumed.train()  # iterations 2 and 3 again
        resumed.close()
    finally:
        torch.set_num_threads(threads)
    stored = list(read_groups(out / "trajectories"))
    assert [g.iteration for g in stored] == [1, 1, 2, 2, 3, 3]
    assert {"prompt_ids", "response_ids", "logprobs"} <= set(
        stored[-1].trajectories[0].steps[0].extras
    )
    rows = (out / "metrics.csv").read_text().splitlines()
    assert len(rows) == 1 + 4  # header, iterations 0 (eval) .. 3: the store matches the CSV
    assert json.loads((out / "config.json").read_text())["store"] == "jsonl"


# -- damaged records -------------------------------------------------------------------------------
def _pristine(root: Path, fmt: str, flush_every: int) -> list[StoredGroup]:
    """Twelve groups under ``root`` (run ``r``), as read back undamaged."""
    options = {"flush_every": flush_every} if fmt == "parquet" else {}
    with TrajectoryStore(root, run="r", fmt=fmt, sync=False, **options) as store:
        for i in range(12):
            group = [traj(f"t{i % 3}", i % 2 == 0, f"{i}-{k} caf\u00e9") for k in range(2)]
            store.append(group, method=("grpo", None)[i % 2], iteration=i if i % 4 else None)
    reader = read_groups(root)
    groups = list(reader)
    assert len(groups) == 12 and reader.skipped == 0
    return groups


def _subsequence(got: list, reference: list) -> bool:
    rest = iter(reference)
    return all(any(g == r for r in rest) for g in got)


def _damage_and_read(root: Path, fmt: str, flush_every: int, reference, rng) -> None:
    """One random single-byte change or truncation of one store file; ``read_groups`` must return
    only intact groups (in order) and count what it lost."""
    files = [root / "r.jsonl"] if fmt == "jsonl" else sorted((root / "r").glob("part-*.parquet"))
    path = files[rng.integers(len(files))]
    data = path.read_bytes()
    at = int(rng.integers(len(data)))
    truncate = rng.random() < 0.3
    if truncate:
        path.write_bytes(data[:at])
    else:
        damaged = bytearray(data)
        damaged[at] = (damaged[at] + int(rng.integers(1, 256))) % 256
        path.write_bytes(bytes(damaged))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unreadable-part warning
            reader = read_groups(root)
            got = list(reader)
        case = (fmt, path.name, at, "truncate" if truncate else "byte", reader.skipped_at)
        assert _subsequence(got, reference), case
        if fmt == "jsonl" and truncate:  # the complete lines before the cut, the torn one counted
            whole = data[:at].count(b"\n")
            assert got == reference[:whole], case
            assert reader.skipped == (0 if at == 0 or data[at - 1 : at] == b"\n" else 1), case
        elif fmt == "jsonl" or flush_every == 1:  # every lost group is counted
            assert len(got) + reader.skipped >= len(reference), case
        else:
            assert len(got) == len(reference) or reader.skipped >= 1, case
    finally:
        path.write_bytes(data)


@pytest.mark.parametrize(
    "cases", [100, pytest.param(1000, marks=pytest.mark.slow)], ids=["100", "1000"]
)
def test_random_damage_never_raises_and_returns_only_intact_groups(tmp_path, cases):
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(cases)
    stores = []
    for fmt, flush_every in (("jsonl", 1), ("parquet", 1), ("parquet", 3)):
        root = tmp_path / f"{fmt}-{flush_every}"
        stores.append((root, fmt, flush_every, _pristine(root, fmt, flush_every)))
    for case in range(cases):
        root, fmt, flush_every, reference = stores[(0, 0, 1, 2)[case % 4]]  # half JSON lines
        _damage_and_read(root, fmt, flush_every, reference, rng)


@pytest.mark.parametrize(
    "change",
    [
        (b'"task_id": "t1"', b'"task_id": "t2"'),  # a changed value
        (b'"task_id"', b'"task_ix"'),  # a one-byte key change
        (b'"iteration": 1', b'"iteration": "1"'),  # a wrong-typed value
        (b'"crc": "', b'"crc": "0'),  # a damaged checksum
    ],
)
def test_a_damaged_line_is_skipped_and_the_lines_after_it_are_read(tmp_path, change):
    reference = _pristine(tmp_path, "jsonl", 1)
    path = tmp_path / "r.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    assert change[0] in lines[1]
    lines[1] = lines[1].replace(change[0], change[1], 1)
    path.write_bytes(b"".join(lines))
    reader = read_groups(tmp_path)
    assert list(reader) == reference[:1] + reference[2:]
    assert reader.skipped == 1 and reader.skipped_at == [f"{path}:2"]


def test_version_1_records_without_checksums_are_still_read(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    record = {"v": 1, "run": "old", "iteration": 3, "method": "grpo", "group_id": "a#0",
              "task_id": "a", "time": 1.5, "trajectories": [traj("a", True).to_dict()]}  # fmt: skip
    (tmp_path / "old.jsonl").write_text(json.dumps(record) + "\n" + '{"v": 1, "run": 5}\n')
    (tmp_path / "old").mkdir()
    columns = {
        k: [record[k]] for k in ("run", "iteration", "method", "group_id", "task_id", "time")
    }
    columns["trajectories"] = [json.dumps(record["trajectories"])]
    table = pa.table(columns).replace_schema_metadata({b"agentenvs.store": b"1"})
    pq.write_table(table, tmp_path / "old" / "part-000000.parquet")
    reader = read_groups(tmp_path)
    groups = list(reader)
    assert [(g.run, g.iteration, g.trajectories) for g in groups] == [
        ("old", 3, [traj("a", True)]),
        ("old", 3, [traj("a", True)]),
    ]
    assert reader.skipped == 1  # the malformed version-1 line
