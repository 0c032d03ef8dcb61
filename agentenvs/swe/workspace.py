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


#: Longest path handed to one system call when walking a tree, bytes: deeper directories are
#: reached in hops of at most this many bytes from an open directory (Linux's ``PATH_MAX`` is 4096).
_HOP_BYTES = 2048
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


#: A directory below a walked tree's top: its relative path cut at ``/`` into pieces ("hops") of
#: at most :data:`_HOP_BYTES` bytes each (``()`` is the top itself).
Hops = tuple[str, ...]


def _child(hops: Hops, name: str) -> Hops:
    """The hops of the entry ``name`` of the directory ``hops``."""
    if hops and len(os.fsencode(hops[-1])) + 1 + len(os.fsencode(name)) <= _HOP_BYTES:
        return (*hops[:-1], f"{hops[-1]}/{name}")
    return (*hops, name)


def _open_dir(top: str, hops: Hops) -> int:
    """A file descriptor of the directory ``top/hops``, opened one hop at a time so that any
    depth works without ``ENAMETOOLONG``; the last component of each hop is not followed if it
    is a link.

    The env walks a workspace only between commands, when no process of the agent is left to
    swap a directory for a link mid-walk."""
    fd = os.open(top, _DIR_FLAGS)
    try:
        for hop in hops:
            next_fd = os.open(hop, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _scan(
    top: str, exclude: Iterable[str] = ()
) -> Iterator[tuple[Hops, int, list[os.DirEntry[str]]]]:
    """Yield ``(directory hops, its open fd, its entries)`` for every directory under ``top``
    (``top`` itself first, as ``()``), parents before children, without recursion or following
    symbolic links. The fd is valid until the next item is requested; unreadable directories are
    skipped; top-level names in ``exclude`` are left out."""
    skip = set(exclude)
    stack: list[Hops] = [()]
    while stack:
        hops = stack.pop()
        try:
            fd = _open_dir(top, hops)
        except OSError:
            continue
        try:
            with os.scandir(fd) as listing:
                entries = [e for e in listing if hops or e.name not in skip]
        except OSError:
            os.close(fd)
            continue
        try:
            yield hops, fd, entries
        finally:
            os.close(fd)
        stack.extend(_child(hops, e.name) for e in entries if _is_dir(e))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _walk(top: str, exclude: Iterable[str] = ()) -> Iterator[tuple[str, int, os.DirEntry[str]]]:
    """Yield ``(relative POSIX path, parent directory fd, entry)`` for every non-directory under
    ``top`` (see :func:`_scan`); the fd is valid until the next item is requested.

    Names are ``os.fsdecode``'d (bytes that are not UTF-8 become lone surrogates, which
    ``os.fsencode`` turns back into the same bytes)."""
    for hops, fd, entries in _scan(top, exclude):
        prefix = "/".join((*hops, ""))
        for entry in entries:
            if not _is_dir(entry):
                yield prefix + entry.name, fd, entry


def tree_bytes(top: str | os.PathLike[str]) -> int:
    """Sum of the sizes of the regular files and symbolic links (``lstat``) under ``top``, bytes."""
    total = 0
    for _, _, entry in _walk(os.fspath(top)):
        try:
            total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


def _sha1_file(name: str, dir_fd: int) -> str:
    """SHA-1 hex digest of the regular file ``name`` in ``dir_fd`` (opened without blocking or
    following a link, so a file swapped for a FIFO or link meanwhile raises ``OSError``)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{name!r} is not a regular file")
        digest = hashlib.sha1()
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _copy_tree(source: str, dest: str) -> None:
    """Copy the directories, regular files and symbolic links (as links) under ``source`` into
    the existing directory ``dest``, keeping file modes and modification times; FIFOs, sockets,
    device files and entries that cannot be read are skipped. Works at any depth. Directory modes
    are applied last (deepest first), so a ``0o000`` directory is filled before it is closed."""
    modes: list[tuple[Hops, str, int]] = []
    for hops, src_fd, entries in _scan(source):
        dst_fd = _open_dir(dest, hops)
        try:
            for entry in entries:
                try:
                    mode = _copy_entry(entry, src_fd, dst_fd)
                except OSError:
                    continue
                if stat.S_ISDIR(mode):
                    modes.append((hops, entry.name, mode))
        finally:
            os.close(dst_fd)
    for hops, name, mode in reversed(modes):
        try:
            fd = _open_dir(dest, hops)
            try:
                os.chmod(name, stat.S_IMODE(mode), dir_fd=fd)
            finally:
                os.close(fd)
        except OSError:
            continue


def _copy_entry(entry: os.DirEntry[str], src_fd: int, dst_fd: int) -> int:
    """Copy one directory (empty), symbolic link or regular file from ``src_fd`` to ``dst_fd``
    (anything else is skipped); its ``st_mode``."""
    name = entry.name
    st = entry.stat(follow_symlinks=False)
    if stat.S_ISDIR(st.st_mode):
        os.mkdir(name, 0o700, dir_fd=dst_fd)
    elif stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dst_fd)
    elif stat.S_ISREG(st.st_mode):
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        with open(os.open(name, flags, dir_fd=src_fd), "rb") as src:
            if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
                return 0
            out = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=dst_fd
            )
            with open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
                os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
                os.chmod(out, stat.S_IMODE(st.st_mode))
    return st.st_mode


def _remove_tree(path: str) -> None:
    """Remove ``path`` and everything under it, at any depth and whatever the modes the agent set
    (directories are made ``rwx`` for the owner before they are emptied); entries that still
    cannot be removed are left (nothing raises)."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)
            return
        os.chmod(path, stat.S_IRWXU)
    except OSError:
        return
    stack: list[tuple[Hops, str, bool]] = [((), "", False)]  # (parent, name, emptied)
    while stack:
        parent, name, emptied = stack.pop()
        if not emptied:  # first visit: empty it, then come back once its subdirectories are gone
            stack.append((parent, name, True))
            hops = _child(parent, name) if name else ()
            stack.extend((hops, sub, False) for sub in _empty_dir(path, hops))
            continue
        try:
            if not name:
                os.rmdir(path)
                continue
            fd = _open_dir(path, parent)
            try:
                os.rmdir(name, dir_fd=fd)
            finally:
                os.close(fd)
        except OSError:
            continue


def _empty_dir(top: str, hops: Hops) -> list[str]:
    """Unlink every non-directory in ``top/hops`` and make its subdirectories ``rwx`` for the
    owner; their names (none when the directory is gone or unreadable)."""
    try:
        fd = _open_dir(top, hops)
    except OSError:
        return []
    subdirs = []
    try:
        with os.scandir(fd) as entries:
            names = [(e.name, _is_dir(e)) for e in entries]
        for name, is_dir in names:
            try:
                if is_dir:
                    os.chmod(name, stat.S_IRWXU, dir_fd=fd)
                    subdirs.append(name)
                else:
                    os.unlink(name, dir_fd=fd)
            except OSError:
                continue
    except OSError:
        pass
    finally:
        os.close(fd)
    return subdirs


class Workspace:
    """A writable, independent copy of a repository directory, removed when no longer used.

    ``Workspace(source)`` copies ``source`` (directories, regular files and symbolic links as
    links, ``.git`` included, file modes and modification times kept; FIFOs, sockets and device
    files are left out, at any depth) into ``tempfile.mkdtemp(prefix="agentenvs-swe-", dir=parent)``.
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
            _copy_tree(str(self.source), root)
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
        for rel, dir_fd, entry in _walk(str(self.path), exclude):
            try:
                st = entry.stat(follow_symlinks=False)
                stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
                cached = self._hash_cache.get(rel)
                if cached is not None and cached[0] == stamp:
                    digest = cached[1]
                elif entry.is_symlink():
                    target = os.readlink(entry.name, dir_fd=dir_fd)
                    digest = hashlib.sha1(os.fsencode(target)).hexdigest()
                elif entry.is_file(follow_symlinks=False):
                    digest = _sha1_file(entry.name, dir_fd)
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
        """A new independent workspace holding the current state (e.g. for grading): its
        directories, regular files and links, never blocking on a FIFO the agent made.

        ``parent`` defaults to this workspace's ``parent``.
        """
        return Workspace(
            self.path, parent=self.parent if parent is None else parent, max_bytes=self.max_bytes
        )

    def cleanup(self) -> None:
        """Remove the copy from disk (idempotent), whatever it holds: read-only files, ``0o000``
        directories, FIFOs and sockets, trees of any depth."""
        self._finalizer()
