"""Per-episode writable copies of a task repository (the sandbox's ``/testbed``, see docs/swe.md).

This module holds:

* :class:`Workspace` - an independent copy of a repository directory (``.git`` included) in a
  fresh temporary directory, with size accounting, content hashing and robust removal.
* :func:`tree_bytes` - the byte size of a directory tree, as the sandboxes' disk watchdog measures it.

>>> Workspace.changes({"a.py": "1", "b.py": "2"}, {"a.py": "3", "c.py": "4"})[0]
FileChange(path='a.py', kind='modified', before_sha1='1', after_sha1='3')
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

from agentenvs.swe.calls import FileChange

__all__ = ["Workspace", "tree_bytes"]

#: Default workspace size cap, bytes (256 MiB).
DEFAULT_MAX_BYTES = 256 * 2**20


def _walk(top: str, exclude: Iterable[str] = ()) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield ``(relative POSIX path, entry)`` for every non-directory under ``top``.

    Symbolic links are yielded, never followed; unreadable directories are skipped; top-level
    names in ``exclude`` are left out.
    """
    skip = set(exclude)
    stack = [("", top)]
    while stack:
        prefix, directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    rel = prefix + entry.name
                    if not prefix and entry.name in skip:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((rel + "/", entry.path))
                    else:
                        yield rel, entry
        except OSError:
            continue


def tree_bytes(top: str | os.PathLike[str]) -> int:
    """Sum of the sizes of the regular files and symbolic links (``lstat``) under ``top``, bytes."""
    total = 0
    for _, entry in _walk(os.fspath(top)):
        try:
            total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


def _sha1_file(path: str) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _make_writable(top: str) -> None:
    """Give the owner ``rwx`` on every directory under ``top`` (so its entries can be removed)."""
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            os.chmod(directory, stat.S_IRWXU)
            with os.scandir(directory) as entries:
                stack.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue


def _remove_tree(path: str) -> None:
    """Remove ``path`` recursively, repairing permissions the agent may have taken away."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError:
        _make_writable(path)
        shutil.rmtree(path, ignore_errors=True)


class Workspace:
    """A writable, independent copy of a repository directory, removed when no longer used.

    ``Workspace(source)`` copies ``source`` (symbolic links as links, ``.git`` included, file modes
    and modification times kept) into ``tempfile.mkdtemp(prefix="agentenvs-swe-", dir=parent)``.
    The copy shares no inode with ``source``. It is removed by :meth:`cleanup`, on leaving a
    ``with`` block, when the object is garbage-collected, or at interpreter exit.
    A workspace is path-like (``os.fspath(ws) == str(ws.path)``), so it can be passed to a
    sandbox's ``run`` directly.

    Args:
        source: the repository directory to copy.
        parent: directory to create the copy in; the system temporary directory by default.
        max_bytes: size cap used by :meth:`over_limit`, bytes (default 256 MiB).
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        parent: str | os.PathLike[str] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.source = Path(source)
        if not self.source.is_dir():
            raise NotADirectoryError(f"workspace source is not a directory: {self.source}")
        self.parent = Path(parent) if parent is not None else None
        self.max_bytes = max_bytes
        root = tempfile.mkdtemp(prefix="agentenvs-swe-", dir=parent)
        self._finalizer = weakref.finalize(self, _remove_tree, root)
        self.path = Path(root)
        self._hash_cache: dict[str, tuple[tuple[int, ...], str]] = {}
        try:
            shutil.copytree(self.source, root, symlinks=True, dirs_exist_ok=True)
        except BaseException:
            self.cleanup()
            raise

    def __fspath__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"Workspace({str(self.source)!r} -> {str(self.path)!r})"

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cleanup()

    @property
    def closed(self) -> bool:
        """Whether :meth:`cleanup` has removed the copy."""
        return not self._finalizer.alive

    def size_bytes(self) -> int:
        """Total size of the copy's files and links, bytes (links are not followed)."""
        return tree_bytes(self.path)

    def over_limit(self) -> bool:
        """Whether :meth:`size_bytes` exceeds ``max_bytes``."""
        return self.size_bytes() > self.max_bytes

    def file_hashes(self, exclude: Iterable[str] = (".git",)) -> dict[str, str]:
        """SHA-1 hex digest of every file, keyed by repository-relative POSIX path.

        Regular files are hashed by content, symbolic links by their target string; other file
        types (FIFOs, sockets) and unreadable files are left out, as are top-level names in
        ``exclude`` (default: ``.git``). A file whose inode, size, modification and change times
        and mode are those of the previous call is not read again (the change time cannot be set
        back by a process, so a rewrite is always seen).
        """
        hashes: dict[str, str] = {}
        seen: dict[str, tuple[tuple[int, ...], str]] = {}
        for rel, entry in _walk(str(self.path), exclude):
            try:
                st = entry.stat(follow_symlinks=False)
                stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
                cached = self._hash_cache.get(rel)
                if cached is not None and cached[0] == stamp:
                    digest = cached[1]
                elif entry.is_symlink():
                    digest = hashlib.sha1(os.fsencode(os.readlink(entry.path))).hexdigest()
                elif entry.is_file(follow_symlinks=False):
                    digest = _sha1_file(entry.path)
                else:
                    continue
            except OSError:
                continue
            hashes[rel] = digest
            seen[rel] = (stamp, digest)
        self._hash_cache = seen
        return hashes

    @staticmethod
    def changes(before: dict[str, str], after: dict[str, str]) -> tuple[FileChange, ...]:
        """The files that differ between two :meth:`file_hashes` results, sorted by path."""
        found = []
        for path in sorted(before.keys() | after.keys()):
            old, new = before.get(path), after.get(path)
            if old == new:
                continue
            kind = "created" if old is None else "deleted" if new is None else "modified"
            found.append(FileChange(path, kind, old, new))
        return tuple(found)

    def copy(self, parent: str | os.PathLike[str] | None = None) -> Workspace:
        """A new independent workspace holding the current state (e.g. for grading).

        ``parent`` defaults to this workspace's ``parent``.
        """
        return Workspace(
            self.path, parent=self.parent if parent is None else parent, max_bytes=self.max_bytes
        )

    def cleanup(self) -> None:
        """Remove the copy from disk (idempotent), even if the agent made files read-only."""
        self._finalizer()
