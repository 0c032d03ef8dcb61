"""Buggy repository snapshots and git-format diffs for SWE tasks (docs/swe.md).

This module holds:

* :data:`SEEDS_DIR` / :func:`seed_names` - the embedded seed repositories.
* :func:`unified_diff` - a ``git diff``-format patch between two versions of one file.
* :func:`build_snapshot` - copy a repository, apply a bug patch, drop hidden files and commit the
  result with a fixed identity and date, so its HEAD sha is the same on every machine.
* :func:`tree_diff` - a workspace's changes against a host-owned snapshot's HEAD, as a binary-safe
  ``git diff`` built without running git over the workspace (its ``.git`` is never read), refused
  past :data:`MAX_DIFF_BYTES` (:class:`DiffTooLarge`).
* :func:`apply_diff` - ``git apply`` a diff to a host-owned tree with every repository-controlled
  git knob (config, hooks, attributes, fsmonitor) off.

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
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from agentenvs.swe.reclaim import tagged_prefix
from agentenvs.swe.workspace import read_regular, walk_files

__all__ = [
    "SEEDS_DIR",
    "MAX_DIFF_BYTES",
    "DiffTooLarge",
    "apply_diff",
    "build_snapshot",
    "seed_names",
    "tree_diff",
    "unified_diff",
]

#: The embedded seed repositories, one directory each.
SEEDS_DIR = Path(__file__).with_name("seeds")
#: :func:`tree_diff`'s default cap, bytes (16 MiB): on the content of the files that differ from
#: the base (new and changed files, whole), and on the diff itself.
MAX_DIFF_BYTES = 16 * 2**20

_IGNORED = ("__pycache__", ".pytest_cache", ".git", "*.pyc")
#: Pathspecs that keep interpreter and pytest caches out of :func:`tree_diff`.
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


#: The environment of every host-side git call over a tree the agent wrote: no system or global
#: config, no system attributes, no replace refs, no prompts, no optional locks.
_SAFE_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "LC_ALL": "C",
}
#: Repository knobs forced off on top of the (host-owned) repository's own config.
_SAFE_FLAGS = tuple(
    arg
    for setting in (
        "core.fsmonitor=false",
        "core.hooksPath=/dev/null",
        "core.attributesFile=/dev/null",
        "core.untrackedCache=false",
        "core.splitIndex=false",
        "core.autocrlf=false",
        "core.safecrlf=false",
        "core.symlinks=true",
        "core.protectNTFS=false",
        "core.quotepath=false",
        "diff.noprefix=false",
        "diff.mnemonicPrefix=false",
        "diff.relative=false",
    )
    for arg in ("-c", setting)
)


def _safe_git(
    git_dir: Path | None, work_tree: Path, *args: str, input: bytes = b"", **env: str
) -> bytes:
    """Run git with :data:`_SAFE_ENV` and :data:`_SAFE_FLAGS` in ``work_tree``, on the explicit
    ``git_dir`` (``None``: no repository; discovery stops at ``work_tree``'s parent); standard
    output as bytes.

    Raises:
        RuntimeError: git failed (the message holds its standard error).
    """
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    where = (
        {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(work_tree)}
        if git_dir is not None
        else {"GIT_CEILING_DIRECTORIES": str(work_tree.parent)}
    )
    done = subprocess.run(
        ["git", *_SAFE_FLAGS, *args],
        cwd=work_tree,
        env={**base, **_SAFE_ENV, **where, **env},
        input=input,
        capture_output=True,
        check=False,
    )
    if done.returncode:
        message = done.stderr.decode(errors="replace").strip()
        raise RuntimeError(f"git {args[0]} failed: {message}")
    return done.stdout


class DiffTooLarge(ValueError):
    """A tree's changes, or their diff, are over :func:`tree_diff`'s cap (``max_bytes``)."""


def _store_blob(objects: Path, known: Path, raw: bytes, sha: str) -> None:
    """Write the blob ``raw`` (header included) with id ``sha`` as a loose object under
    ``objects`` unless ``known`` (an object directory) already holds it loose."""
    name = f"{sha[:2]}/{sha[2:]}"
    if not (known / name).exists() and not (objects / name).exists():
        (objects / sha[:2]).mkdir(exist_ok=True)
        partial = objects / f"{name}.tmp"
        partial.write_bytes(zlib.compress(raw, 1))
        partial.rename(objects / name)


def _head_blobs(git_dir: Path) -> dict[bytes, str]:
    """Repository-relative path -> blob id of every file in the HEAD commit of ``git_dir``."""
    listing = _safe_git(git_dir, git_dir.parent, "ls-tree", "-r", "-z", "--full-tree", "HEAD")
    blobs = {}
    for record in listing.split(b"\0"):
        meta, _, path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == b"blob":
            blobs[path] = fields[2].decode()
    return blobs


def _index_lines(
    tree: Path, objects: Path, known: Path, head: dict[bytes, str], max_bytes: int | None
) -> Iterator[bytes]:
    """``git update-index -z --index-info`` lines for every regular file (mode 100644 or 100755)
    and symlink (120000, its target as content) under ``tree``, walked at any depth without
    following links (:func:`~agentenvs.swe.workspace.walk_files`); ``.git`` entries (any case, any
    depth) and other file types are skipped.

    Raises:
        DiffTooLarge: the files whose blob is not ``head``'s (path -> blob id) hold more than
            ``max_bytes`` bytes (``None``: no cap), checked before each is stored (and before a
            new file that would pass it is even read).
    """
    changed = 0
    for rel, dir_fd, entry in walk_files(os.fspath(tree), exclude=(".git",)):
        if any(part.lower() == ".git" for part in rel.split("/")):
            continue
        path = os.fsencode(rel)
        try:
            st = entry.stat(follow_symlinks=False)
            mode = st.st_mode
            if max_bytes is not None and path not in head and not _is_cache(rel):
                if changed + st.st_size > max_bytes:
                    raise DiffTooLarge(f"the changed files hold over {_mib(max_bytes)} MiB")
            if stat.S_ISLNK(mode):
                data, kind = os.readlink(os.fsencode(entry.name), dir_fd=dir_fd), b"120000"
            elif stat.S_ISREG(mode):
                data = read_regular(entry.name, dir_fd)
                kind = b"100755" if mode & stat.S_IXUSR else b"100644"
            else:
                continue
        except OSError:
            continue
        raw = b"blob %d\0" % len(data) + data
        sha = hashlib.sha1(raw).hexdigest()
        if max_bytes is not None and head.get(path) != sha and not _is_cache(rel):
            changed += len(data)
            if changed > max_bytes:
                raise DiffTooLarge(f"the changed files hold over {_mib(max_bytes)} MiB")
        _store_blob(objects, known, raw, sha)
        yield kind + b" " + sha.encode() + b"\t" + path + b"\0"


def _is_cache(rel: str) -> bool:
    """Whether ``rel`` is an interpreter or pytest cache file (:data:`_CACHE_SPECS`).

    >>> _is_cache("pkg/__pycache__/m.cpython-312.pyc"), _is_cache("pkg/m.py")
    (True, False)
    """
    parts = rel.split("/")
    return rel.endswith(".pyc") or "__pycache__" in parts[:-1] or ".pytest_cache" in parts[:-1]


def _mib(size: int) -> str:
    """``size`` bytes in MiB, as few digits as needed.

    >>> _mib(16 * 2**20), _mib(2**19)
    ('16', '0.5')
    """
    return f"{size / 2**20:g}"


def tree_diff(
    base: Path,
    tree: Path,
    *,
    exclude: Sequence[str] = (),
    exclude_globs: Sequence[str] = (),
    max_bytes: int | None = MAX_DIFF_BYTES,
) -> bytes:
    """The binary-safe ``git diff`` (``--binary --full-index``, no renames) from the HEAD commit
    of the host-owned repository ``base`` to the files under ``tree``, untracked files included.

    Git never reads ``tree``: Python walks it without following links, hashes each file into a
    private object directory (``base``'s objects as an alternate, so ``base`` is not written) and
    a temporary index, and ``git diff-index --cached`` compares that index with HEAD. So nothing
    in ``tree`` (its ``.git``: config, fsmonitor, hooks, ``core.worktree``, a ``gitdir:`` file;
    its ``.gitattributes`` filters) is read or run. Left out: ``.git`` entries, FIFOs, sockets
    and devices, Python/pytest caches, the ``exclude`` paths (literal, repository-relative; a
    directory excludes what is under it) and the ``exclude_globs`` (git glob pathspecs, ``**``
    for any directories).

    ``max_bytes`` (default :data:`MAX_DIFF_BYTES`; ``None``: no cap) bounds both the content of
    the files that differ from HEAD (counted whole, the ``exclude`` ones too, caches not; a tree
    over it is refused after reading about that much) and the diff's length.

    Raises:
        ValueError: ``base`` has no ``.git`` directory.
        DiffTooLarge: the changes or the diff are over ``max_bytes``.
        RuntimeError: git failed.
    """
    git_dir = base / ".git"
    if not (git_dir / "HEAD").is_file():
        raise ValueError(f"{base} is not a git repository with a .git directory")
    with tempfile.TemporaryDirectory(prefix=tagged_prefix("diff")) as tmp:
        objects, empty = Path(tmp) / "objects", Path(tmp) / "tree"
        objects.mkdir()
        empty.mkdir()
        env = {
            "GIT_INDEX_FILE": str(Path(tmp) / "index"),
            "GIT_OBJECT_DIRECTORY": str(objects),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(git_dir / "objects"),
        }
        head = _head_blobs(git_dir) if max_bytes is not None else {}
        lines = b"".join(_index_lines(tree, objects, git_dir / "objects", head, max_bytes))
        _safe_git(git_dir, empty, "update-index", "-z", "--index-info", input=lines, **env)
        specs = [
            *_CACHE_SPECS,
            *(f":(exclude,literal){p}" for p in exclude),
            *(f":(exclude,glob){g}" for g in exclude_globs),
        ]
        flags = ("--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv")
        diff = _safe_git(
            git_dir, empty, "diff-index", "--cached", *flags, "--no-renames", "HEAD", "--",
            *specs, input=b"", **env,
        )  # fmt: skip
    if max_bytes is not None and len(diff) > max_bytes:
        raise DiffTooLarge(f"the diff is over {_mib(max_bytes)} MiB")
    return diff


def apply_diff(tree: Path, patch: bytes) -> str:
    """``git apply`` ``patch`` to the host-owned ``tree`` (its own ``.git`` if it has one, whose
    config is trusted; the hardened flags of :func:`tree_diff`); ``""`` when it applied, else
    git's reason. Git refuses paths outside ``tree`` and writes beyond a symbolic link."""
    if not patch:
        return ""
    git_dir = tree / ".git" if (tree / ".git" / "HEAD").is_file() else None
    try:
        _safe_git(git_dir, tree, "apply", "--whitespace=nowarn", "-", input=patch)
    except RuntimeError as error:
        return str(error)
    return ""
