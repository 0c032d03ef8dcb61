"""SWE tasks: the task record, where its repository comes from, and the loaders (docs/swe.md).

This module holds:

* :class:`SWETask` - one task: the ``task.json`` fields (SWE-bench names) plus where its buggy
  snapshot and hidden tests come from (:class:`RepoSource`).
* :class:`RepoSource` - how to build the buggy snapshot: a seed repo + bug patch (the embedded
  panel), a task directory (``repo/`` or ``repo.tar.gz``, ``hidden_tests.tar.gz``), or a local git
  repository at a commit (SWE-bench / SWE-smith instances).
* :class:`Prepared` - a task made ready: the snapshot directory (with ``.git``; HEAD = the buggy
  commit) and the hidden test files restored at grading.
* :func:`prepare` - build (once, cached) and return a task's :class:`Prepared`.
* :func:`load_task_dir`, :func:`write_task_dir` - the task directory format.
* :func:`load_swebench` - SWE-bench-format instances (JSON / JSONL) over the user's local repos.
* :func:`load_swesmith` - SWE-smith-style instances (``patch`` is the bug) over local repos.
* :func:`embedded_tasks` - the generated panel shipped in the package.

>>> t = SWETask.from_dict({"instance_id": "x", "repo": "r", "problem_statement": "p",
...                         "FAIL_TO_PASS": '["tests/t.py::a"]', "PASS_TO_PASS": []})
>>> t.FAIL_TO_PASS, t.test_command
(['tests/t.py::a'], 'python -m pytest -rA -p no:cacheprovider -q')
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

from agentenvs.swe import snapshot
from agentenvs.swe.grading import DEFAULT_TEST_COMMAND

__all__ = [
    "SWETask",
    "RepoSource",
    "Prepared",
    "prepare",
    "cache_dir",
    "load_task_dir",
    "write_task_dir",
    "load_swebench",
    "load_swesmith",
    "embedded_tasks",
    "PANEL_PATH",
]

#: The generated panel shipped with the package (``python -m agentenvs.swe.generate`` rebuilds it).
PANEL_PATH = Path(__file__).parent / "data" / "tasks.jsonl.gz"


@dataclass(frozen=True)
class RepoSource:
    """Where a task's buggy snapshot comes from.

    Attributes:
        kind: ``"seed"`` (an embedded seed repo, ``location`` = its name, the task's
            ``bug_patch`` applied), ``"dir"`` (a repository directory or ``.tar.gz`` holding the
            buggy state), ``"git"`` (a local git repository, ``location`` = its path, checked out
            at ``commit``; the task's ``bug_patch`` applied on top where it has one).
        location: the seed name or a filesystem path.
        commit: for ``"git"``: the commit to check out.
        hidden: where hidden test files come from: ``"seed"`` (the seed's own files),
            ``"tar"`` (``hidden_archive``), ``"git"`` (the files at ``commit``), or ``""`` (none;
            a ``test_patch`` restores the tests at grading).
        hidden_archive: path of a ``hidden_tests.tar.gz``.
    """

    kind: str
    location: str
    commit: str = ""
    hidden: str = ""
    hidden_archive: str = ""


@dataclass
class SWETask:
    """One SWE task: the ``task.json`` fields (docs/swe.md, "Task format").

    ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` are pytest node ids; ``patch`` is the gold fix,
    ``bug_patch`` the change that introduced the bug (generated and SWE-smith tasks), ``test_patch``
    a diff applied over the agent's tree at grading (SWE-bench), ``test_files_hidden`` the
    repo-relative files withheld from the agent and restored at grading.
    """

    instance_id: str
    repo: str
    problem_statement: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    base_commit: str = ""
    patch: str = ""
    test_patch: str = ""
    bug_patch: str = ""
    test_command: str = DEFAULT_TEST_COMMAND
    test_files_hidden: list[str] = field(default_factory=list)
    python: str = "3.11"
    mutation: dict[str, Any] = field(default_factory=dict)
    difficulty: dict[str, Any] = field(default_factory=dict)
    split: str = "train"
    source: RepoSource | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: RepoSource | None = None) -> SWETask:
        """A task from a ``task.json`` / SWE-bench row; unknown keys are ignored, JSON-encoded
        test lists (SWE-bench's parquet/HF form) are decoded.

        Raises:
            ValueError: a required field (instance_id, problem_statement, FAIL_TO_PASS) is missing.
        """
        missing = [k for k in ("instance_id", "problem_statement", "FAIL_TO_PASS") if k not in data]
        if missing:
            raise ValueError(f"task record lacks {missing} (has {sorted(data)})")
        known = {f.name for f in fields(cls)} - {"source"}
        values = {k: v for k, v in data.items() if k in known and v is not None}
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS", "test_files_hidden"):
            value = values.get(key, [])
            values[key] = list(json.loads(value) if isinstance(value, str) else value)
        values.setdefault("repo", str(data.get("repo", "")))
        values.setdefault("PASS_TO_PASS", [])
        if not values.get("test_command"):
            values["test_command"] = DEFAULT_TEST_COMMAND
        return cls(**values, source=source)

    def to_dict(self) -> dict[str, Any]:
        """The ``task.json`` record (without ``source``)."""
        data = asdict(self)
        data.pop("source")
        return data


@dataclass(frozen=True)
class Prepared:
    """A task ready to play: ``snapshot`` (a git repository, HEAD = the buggy state, hidden files
    absent) and ``hidden`` (repo-relative path -> content, restored at grading)."""

    snapshot: Path
    hidden: dict[str, bytes]


def cache_dir() -> Path:
    """``$AGENTENVS_CACHE/swe`` (default ``~/.cache/agentenvs/swe``): built snapshots."""
    root = os.environ.get("AGENTENVS_CACHE") or Path.home() / ".cache" / "agentenvs"
    return Path(root) / "swe"


def _key(task: SWETask) -> str:
    blob = json.dumps(
        [task.to_dict(), asdict(task.source) if task.source else None], sort_keys=True
    )
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def prepare(task: SWETask, root: Path | None = None) -> Prepared:
    """Build ``task``'s snapshot under ``root`` (default :func:`cache_dir`) once, atomically, and
    return it with the hidden files. Later calls (any process) reuse the built snapshot."""
    if task.source is None:
        raise ValueError(f"task {task.instance_id} has no repository source")
    target = (root or cache_dir()) / f"{task.instance_id}-{_key(task)}"
    hidden = _hidden_files(task)
    if (target / "repo").is_dir():
        return Prepared(target / "repo", hidden)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        _build(task, staging / "repo")
        try:
            os.rename(staging, target)
        except OSError:  # another process won the race
            if not (target / "repo").is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Prepared(target / "repo", hidden)


def _build(task: SWETask, dest: Path) -> None:
    src = task.source
    assert src is not None
    if src.kind == "seed":
        snapshot.build_snapshot(
            snapshot.SEEDS_DIR / src.location,
            dest,
            bug_patch=task.bug_patch,
            hide=task.test_files_hidden,
        )
    elif src.kind == "dir":
        with tempfile.TemporaryDirectory() as tmp:
            snapshot.build_snapshot(
                _unpacked(Path(src.location), Path(tmp)), dest, hide=task.test_files_hidden
            )
    elif src.kind == "git":
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "tree"
            _export_commit(Path(src.location), src.commit, tree)
            snapshot.build_snapshot(
                tree, dest, bug_patch=task.bug_patch, hide=task.test_files_hidden
            )
    else:
        raise ValueError(f"unknown repository source kind {src.kind!r}")


def _unpacked(location: Path, tmp: Path) -> Path:
    """A directory holding the repository at ``location`` (a directory, or a ``.tar.gz`` unpacked
    into ``tmp``; an archive with one top-level directory is entered)."""
    if location.is_dir():
        return location
    if not location.is_file():
        raise FileNotFoundError(f"repository {location} does not exist")
    with tarfile.open(location) as archive:
        archive.extractall(tmp, filter="data")
    entries = list(tmp.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp


def _export_commit(repo: Path, commit: str, dest: Path) -> None:
    """The tree of ``commit`` in the git repository ``repo``, written to ``dest`` (no history: the
    agent cannot read the fix from later commits)."""
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        raise FileNotFoundError(f"{repo} is not a git repository (clone the task's repo there)")
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", commit or "HEAD"],
        capture_output=True,
        check=False,
    )
    if archive.returncode:
        raise RuntimeError(
            f"git archive {commit} in {repo} failed: {archive.stderr.decode(errors='replace')}"
        )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")


def _hidden_files(task: SWETask) -> dict[str, bytes]:
    src = task.source
    if src is None or not task.test_files_hidden or not src.hidden:
        return {}
    return _hidden_cached(src, tuple(task.test_files_hidden))


@cache
def _hidden_cached(src: RepoSource, paths: tuple[str, ...]) -> dict[str, bytes]:
    if src.hidden == "seed":
        base = snapshot.SEEDS_DIR / src.location
        return {p: (base / p).read_bytes() for p in paths}
    if src.hidden == "tar":
        with tarfile.open(src.hidden_archive) as archive:
            members = {m.name.removeprefix("./"): m for m in archive.getmembers() if m.isfile()}
            missing = [p for p in paths if p not in members]
            if missing:
                raise ValueError(f"{src.hidden_archive} lacks the hidden test files {missing}")
            return {p: archive.extractfile(members[p]).read() for p in paths}  # type: ignore[union-attr]
    if src.hidden == "git":
        return {
            p: subprocess.run(
                ["git", "-C", src.location, "show", f"{src.commit or 'HEAD'}:{p}"],
                capture_output=True,
                check=True,
            ).stdout
            for p in paths
        }
    raise ValueError(f"unknown hidden-test source {src.hidden!r}")


# -- task directories ---------------------------------------------------------------------------
def load_task_dir(path: str | os.PathLike[str]) -> SWETask:
    """A task directory: ``task.json`` + ``repo/`` or ``repo.tar.gz`` (the buggy snapshot) +
    optional ``hidden_tests.tar.gz`` (the ``test_files_hidden`` files, repo-relative)."""
    path = Path(path)
    record = json.loads((path / "task.json").read_text(encoding="utf-8"))
    repo = path / "repo" if (path / "repo").is_dir() else path / "repo.tar.gz"
    archive = path / "hidden_tests.tar.gz"
    source = RepoSource(
        "dir",
        str(repo),
        hidden="tar" if archive.exists() else "",
        hidden_archive=str(archive) if archive.exists() else "",
    )
    task = SWETask.from_dict(record, source)
    if task.test_files_hidden and not archive.exists():
        raise ValueError(f"{path}: test_files_hidden is set but hidden_tests.tar.gz is missing")
    return task


def write_task_dir(task: SWETask, path: str | os.PathLike[str]) -> Path:
    """Write ``task`` as a task directory (``task.json``, ``repo.tar.gz`` of the snapshot with its
    ``.git``, ``hidden_tests.tar.gz``); :func:`load_task_dir` reads it back."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    ready = prepare(task)
    (path / "task.json").write_text(json.dumps(task.to_dict(), indent=1, sort_keys=True) + "\n")
    with tarfile.open(path / "repo.tar.gz", "w:gz") as tar:
        tar.add(ready.snapshot, arcname="repo")
    if ready.hidden:
        with tarfile.open(path / "hidden_tests.tar.gz", "w:gz") as tar:
            for rel, content in sorted(ready.hidden.items()):
                info = tarfile.TarInfo(rel)
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return path


# -- SWE-bench and SWE-smith instances ------------------------------------------------------------
def _rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a JSON list or JSON-lines file (``.gz`` accepted)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("["):
        return list(json.loads(text))
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{lineno}: not a JSON object: {err}") from None
    return rows


def _local_repo(repos_dir: Path, repo: str) -> Path:
    """The user's clone of ``repo`` ("owner/name") under ``repos_dir``: ``owner__name``, then
    ``name``, then ``owner/name``."""
    owner, _, name = repo.rpartition("/")
    for candidate in (f"{owner}__{name}", name, repo):
        if candidate and (repos_dir / candidate).is_dir():
            return repos_dir / candidate
    raise FileNotFoundError(
        f"no local clone of {repo!r} under {repos_dir} (tried {owner}__{name}, {name}, {repo})"
    )


def load_swebench(
    path: str | os.PathLike[str], repos_dir: str | os.PathLike[str], split: str = "test"
) -> list[SWETask]:
    """SWE-bench-format instances (JSON list or JSONL): each row's ``repo`` is found under
    ``repos_dir`` (a clone per repository) and checked out at ``base_commit``; the row's
    ``test_patch`` restores the tests at grading. Nothing is downloaded."""
    repos = Path(repos_dir)
    tasks = []
    for row in _rows(path):
        task = SWETask.from_dict({**row, "split": split})
        local = _local_repo(repos, task.repo)
        task.source = RepoSource("git", str(local), commit=task.base_commit)
        tasks.append(task)
    return tasks


def load_swesmith(
    path: str | os.PathLike[str], repos_dir: str | os.PathLike[str], split: str = "train"
) -> list[SWETask]:
    """SWE-smith-style instances: the row's ``patch`` *introduces* the bug into the clean repo
    (``repo`` like ``"swesmith/owner__name.commit"`` or ``"owner/name"``; the clone under
    ``repos_dir`` checked out at the row's ``base_commit``, else at the commit after the last
    ``.`` of ``repo``, else HEAD). The files holding FAIL_TO_PASS tests are hidden from the agent
    and restored from the clean commit at grading; the gold fix is the reverse of the bug."""
    repos = Path(repos_dir)
    tasks = []
    for row in _rows(path):
        task = SWETask.from_dict(
            {**row, "bug_patch": row.get("patch", ""), "patch": "", "split": split}
        )
        name, _, commit = task.repo.removeprefix("swesmith/").partition(".")
        local = _local_repo(repos, name.replace("__", "/"))
        commit = task.base_commit or commit or "HEAD"
        task.test_files_hidden = sorted({i.split("::")[0] for i in task.FAIL_TO_PASS})
        task.source = RepoSource("git", str(local), commit=commit, hidden="git")
        tasks.append(task)
    return tasks


def embedded_tasks(split: str | None = None) -> list[SWETask]:
    """The shipped generated panel (sorted by id), optionally one split (``"train"`` / ``"test"``).
    Train and test tasks come from different seed repositories."""
    tasks = [t for t in _embedded() if split is None or t.split == split]
    if split is not None and not tasks:
        raise ValueError(f"no embedded SWE tasks in split {split!r} (splits: train, test)")
    return tasks


@cache
def _embedded() -> tuple[SWETask, ...]:
    tasks = []
    for row in _rows(PANEL_PATH):
        source = RepoSource("seed", row["repo"], hidden="seed")
        tasks.append(SWETask.from_dict(row, source))
    return tuple(sorted(tasks, key=lambda t: t.instance_id))
