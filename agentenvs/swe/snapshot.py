"""Buggy repository snapshots and git-format diffs for SWE tasks (docs/swe.md).

This module holds:

* :data:`SEEDS_DIR` / :func:`seed_names` - the embedded seed repositories.
* :func:`unified_diff` - a ``git diff``-format patch between two versions of one file.
* :func:`build_snapshot` - copy a repository, apply a bug patch, drop hidden files and commit the
  result with a fixed identity and date, so its HEAD sha is the same on every machine.
* :func:`git_diff` - a workspace's changes against HEAD, untracked files included.

>>> print(unified_diff("a = 1\\nb = 2\\n", "a = 1\\nb = 3\\n", "pkg/m.py"), end="")
diff --git a/pkg/m.py b/pkg/m.py
--- a/pkg/m.py
+++ b/pkg/m.py
@@ -1,2 +1,2 @@
 a = 1
-b = 2
+b = 3
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "SEEDS_DIR",
    "build_snapshot",
    "git_diff",
    "seed_names",
    "unified_diff",
]

#: The embedded seed repositories, one directory each.
SEEDS_DIR = Path(__file__).with_name("seeds")

_IGNORED = ("__pycache__", ".pytest_cache", ".git", "*.pyc")
#: Pathspecs that keep interpreter and pytest caches out of :func:`git_diff`.
_CACHE_SPECS = (
    ":(exclude,glob)**/__pycache__/**",
    ":(exclude,glob)**/*.pyc",
    ":(exclude,glob)**/.pytest_cache/**",
)
_FUNCNAME = re.compile(r"[A-Za-z_$]")
_DATE = "2024-01-01T00:00:00+0000"
_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "agentenvs",
    "GIT_AUTHOR_EMAIL": "agentenvs@example.invalid",
    "GIT_COMMITTER_NAME": "agentenvs",
    "GIT_COMMITTER_EMAIL": "agentenvs@example.invalid",
    "GIT_AUTHOR_DATE": _DATE,
    "GIT_COMMITTER_DATE": _DATE,
    "GIT_TERMINAL_PROMPT": "0",
}
_GIT_FLAGS = (
    "-c",
    "init.defaultBranch=main",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.quotepath=false",
)


def seed_names() -> list[str]:
    """The seed repositories' names (directories under :data:`SEEDS_DIR`), sorted."""
    if not SEEDS_DIR.is_dir():
        return []
    return sorted(
        p.name for p in SEEDS_DIR.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
    )


def unified_diff(old: str, new: str, path: str) -> str:
    """The ``git diff`` of one file's change from ``old`` to ``new`` (``diff --git`` header, three
    lines of context, git's default hunk function headers); ``""`` when they are equal."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    lines = [f"diff --git a/{path} b/{path}\n"]
    for i, line in enumerate(difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=3)):
        if i < 2:
            lines.append(line.rstrip("\n") + "\n")
        elif line.startswith("@@"):
            lines.append(_hunk_header(line, a))
        else:
            lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines) if len(lines) > 1 else ""


def _hunk_header(line: str, old: list[str]) -> str:
    """``line`` with git's default function context: the last line before the hunk that starts
    with a letter, ``_`` or ``$`` (at most 80 bytes, trailing space dropped)."""
    start = int(re.match(r"@@ -(\d+)", line).group(1))  # type: ignore[union-attr]
    end = start - 1 if ",0 " not in line.split("+")[0] else start
    for text in reversed(old[: max(end, 0)]):
        if _FUNCNAME.match(text):
            context = text.encode()[:80].decode(errors="ignore").rstrip()
            return f"{line.rstrip()} {context}\n"
    return line


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", *_GIT_FLAGS, *args],
        cwd=repo,
        env={**os.environ, **_GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    if result.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}: {result.stderr.strip()}")
    return result.stdout


def build_snapshot(
    source: Path, dest: Path, *, bug_patch: str = "", hide: Sequence[str] = ()
) -> str:
    """Copy ``source`` to ``dest`` (without caches or ``.git``; file modes not kept), apply
    ``bug_patch`` with ``git apply``, delete the ``hide`` paths, and commit everything as one
    commit with a fixed author, committer and date on branch ``main``.

    Returns:
        The HEAD commit sha (equal on every machine for equal inputs).

    Raises:
        RuntimeError: the patch does not apply (the message holds git's reason).
    """
    shutil.copytree(
        source, dest, ignore=shutil.ignore_patterns(*_IGNORED), copy_function=shutil.copyfile
    )
    _git(dest, "init", "-q", "--template=")  # no sample hooks: fewer files to copy per reset
    if bug_patch:
        with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as handle:
            handle.write(bug_patch)
        try:
            _git(dest, "apply", "--whitespace=nowarn", handle.name)
        finally:
            os.unlink(handle.name)
    for rel in hide:
        target = dest / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "--allow-empty", "--no-verify", "-m", "Initial commit")
    return _git(dest, "rev-parse", "HEAD").strip()


def git_diff(repo: Path, exclude: Sequence[str] = ()) -> str:
    """``repo``'s changes against its HEAD, untracked files included (staged into a temporary
    index, so the repository's own index is untouched), leaving out the ``exclude`` paths and
    Python/pytest caches; ``""`` when ``repo`` is not a git repository (e.g. ``.git`` deleted)
    or has no HEAD."""
    if not (repo / ".git").exists():
        return ""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        try:
            _git(repo, "read-tree", "HEAD", env=env)
            specs = [f":(exclude,literal){p}" for p in exclude]
            _git(repo, "add", "-A", "--", ".", *_CACHE_SPECS, *specs, env=env)
            return _git(
                repo, "diff", "--cached", "--no-color", "--no-ext-diff", "--binary", "HEAD", env=env
            )
        except RuntimeError:
            return ""
