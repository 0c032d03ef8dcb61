"""Per-episode writable copies of a task repository (the sandbox's ``/testbed``, see docs/swe.md).

This module holds:

* :class:`Workspace` - an independent copy of a repository directory (``.git`` included) in a
  fresh temporary directory (its own size-capped tmpfs where the host lets us mount one), owned by
  the sandbox user, with size accounting, content hashing and robust removal.
* :func:`tree_bytes` - the disk use of a directory tree (blocks and inodes), as the sandboxes'
  disk watchdog measures it; :func:`workspace_full` - whether a tmpfs workspace is full.
* :func:`sandbox_owner`, :func:`own_tree`, :func:`adopt`, :func:`tmpfs_available` - who owns
  workspaces, giving a tree or a file the host wrote to that owner, and whether workspaces get
  their own tmpfs.

>>> Workspace.changes({"a.py": "1", "b.py": "2"}, {"a.py": "3", "c.py": "4"})[0]
FileChange(path='a.py', kind='modified', before_sha1='1', after_sha1='3')
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import shutil
import stat
import sys
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

from agentenvs.swe.calls import FileChange

__all__ = [
    "Workspace",
    "tree_bytes",
    "workspace_full",
    "sandbox_owner",
    "adopt",
    "own_tree",
    "tmpfs_available",
    "SANDBOX_ID",
    "INODE_BYTES",
]

#: Default workspace size cap, bytes (256 MiB).
DEFAULT_MAX_BYTES = 256 * 2**20
#: Host uid and gid that own workspaces and run sandboxed commands when the host process is root
#: (an id no account in ``/etc/passwd`` uses).
SANDBOX_ID = 60999
#: Bytes every file, directory and link is charged at least (one page): the disk cap also caps
#: inodes, and a tmpfs workspace holds at most ``max_bytes // INODE_BYTES`` of them.
INODE_BYTES = 4096
#: Real paths of the workspaces mounted as their own tmpfs by this process.
_TMPFS_ROOTS: set[str] = set()
_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2


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
    """Disk use of the tree under ``top`` (``top`` itself excluded), bytes: every file, directory
    and link counts once per inode (hard links are not counted twice), as the largest of its
    apparent size, its allocated blocks (``st_blocks * 512``) and :data:`INODE_BYTES`, so that
    sparse files, directories and empty files all count. Links are not followed; unreadable
    directories are skipped.
    """
    total, seen, stack = 0, set(), [os.fspath(top)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
                    if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                        if st.st_ino in seen:
                            continue
                        seen.add(st.st_ino)
                    total += max(st.st_size, st.st_blocks * 512, INODE_BYTES)
        except OSError:
            continue
    return total


def workspace_full(top: str | os.PathLike[str]) -> bool:
    """Whether ``top`` is a workspace tmpfs of this process with no free block or inode left."""
    path = os.fspath(top)
    if path not in _TMPFS_ROOTS:
        return False
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail == 0 or st.f_favail == 0


def sandbox_owner() -> tuple[int, int] | None:
    """``(uid, gid)`` given to new workspaces: :data:`SANDBOX_ID` when this process is root (the
    sandbox drops to that id), else ``None`` (the caller's own ids, nothing to change)."""
    return (SANDBOX_ID, SANDBOX_ID) if os.geteuid() == 0 else None


def adopt(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> None:
    """Give ``path`` (a file or directory the host just wrote inside the workspace ``root``) the
    owner of ``root``, so that the sandbox user can still modify it; a no-op unless root.

    >>> adopt("/nonexistent/x", "/nonexistent")  # never raises
    """
    if os.geteuid() != 0:
        return
    try:
        st = os.stat(root)
        os.lchown(path, st.st_uid, st.st_gid)
    except OSError:
        pass


def own_tree(top: str | os.PathLike[str], owner: tuple[int, int] | None) -> None:
    """Give ``top`` (mode 0700) and every entry under it to ``owner`` (``None``: keep owners) and
    clear the setuid/setgid bits of files, so that no workspace file is a setuid program of
    another user. Entries that vanish or cannot be changed are skipped."""
    os.chmod(top, stat.S_IRWXU)
    if owner is not None:
        os.lchown(top, *owner)
    stack = [os.fspath(top)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        _own_entry(entry, owner, stack)
        except OSError:
            continue


def _own_entry(entry: os.DirEntry[str], owner: tuple[int, int] | None, stack: list[str]) -> None:
    st = entry.stat(follow_symlinks=False)
    if owner is not None and (st.st_uid, st.st_gid) != owner:
        os.lchown(entry.path, *owner)  # also clears setuid/setgid bits of files
    if stat.S_ISDIR(st.st_mode):
        stack.append(entry.path)
    elif stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        os.chmod(entry.path, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(root: str, size: int, owner: tuple[int, int] | None) -> bool:
    """Mount a fresh tmpfs of ``size`` bytes (and ``size // INODE_BYTES`` inodes; ``nosuid``,
    ``nodev``, mode 0700, owned by ``owner``) on ``root``; whether it worked (root only)."""
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return False
    uid, gid = owner or (0, 0)
    inodes = max(size // INODE_BYTES, 1)
    options = f"size={size},nr_inodes={inodes},mode=0700,uid={uid},gid={gid}"
    try:
        mounted = _libc().mount(
            b"agentenvs", os.fsencode(root), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode()
        )
    except (AttributeError, OSError):
        return False
    if mounted != 0:
        return False
    _TMPFS_ROOTS.add(os.path.realpath(root))
    return True


def _unmount(root: str) -> None:
    """Detach the tmpfs mounted on ``root`` (its memory is freed once nothing uses it)."""
    _TMPFS_ROOTS.discard(os.path.realpath(root))
    _libc().umount2(os.fsencode(root), _MNT_DETACH)


@functools.lru_cache(maxsize=1)
def tmpfs_available() -> bool:
    """Whether this process may mount workspace tmpfs file systems (probed once, cached)."""
    probe = tempfile.mkdtemp(prefix="agentenvs-swe-probe-")
    try:
        if not _mount_tmpfs(probe, 2**20, None):
            return False
        _unmount(probe)
        return True
    finally:
        os.rmdir(probe)


def _discard(root: str, mounted: bool) -> None:
    """Unmount (if it is a tmpfs of ours) and remove a workspace directory."""
    if mounted:
        _unmount(root)
    _remove_tree(root)


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
    and modification times kept, setuid/setgid bits cleared) into
    ``tempfile.mkdtemp(prefix="agentenvs-swe-", dir=parent)``. Where the host lets this process
    mount (root), that directory is its own tmpfs of ``max_bytes`` bytes and ``max_bytes //
    INODE_BYTES`` inodes (``nosuid``, ``nodev``), so the kernel enforces the disk cap on blocks and
    inodes (:attr:`tmpfs`); otherwise only the sandbox's watchdog does. The directory has mode
    0700 and, with everything in it, belongs to ``owner``. The copy shares no inode with
    ``source``. It is removed (and unmounted) by :meth:`cleanup`, on leaving a ``with`` block,
    when the object is garbage-collected, or at interpreter exit.
    A workspace is path-like (``os.fspath(ws) == str(ws.path)``), so it can be passed to a
    sandbox's ``run`` directly.

    Args:
        source: the repository directory to copy.
        parent: directory to create the copy in; the system temporary directory by default.
        max_bytes: size cap used by :meth:`over_limit` and the tmpfs, bytes (default 256 MiB).
        owner: ``(uid, gid)`` of the copy; :func:`sandbox_owner` by default (the unprivileged
            sandbox user when this process is root, else the caller).

    A source that does not fit in ``max_bytes`` is copied to a plain directory instead (then
    :meth:`over_limit` is true and the sandboxes refuse commands).
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        parent: str | os.PathLike[str] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        owner: tuple[int, int] | None = None,
    ) -> None:
        self.source = Path(source)
        if not self.source.is_dir():
            raise NotADirectoryError(f"workspace source is not a directory: {self.source}")
        self.parent = Path(parent) if parent is not None else None
        self.max_bytes = max_bytes
        self.owner = owner if owner is not None else sandbox_owner()
        root = tempfile.mkdtemp(prefix="agentenvs-swe-", dir=parent)
        self.tmpfs = tmpfs_available() and _mount_tmpfs(root, max_bytes, self.owner)
        self._finalizer = weakref.finalize(self, _discard, root, self.tmpfs)
        self.path = Path(root)
        self._hash_cache: dict[str, tuple[tuple[int, ...], str]] = {}
        try:
            self._fill(root)
            own_tree(root, self.owner)
        except BaseException:
            self.cleanup()
            raise

    def _fill(self, root: str) -> None:
        """Copy the source into ``root``; when it does not fit the tmpfs (an error, or the tmpfs
        left full), unmount it and copy into the plain directory instead."""
        try:
            shutil.copytree(self.source, root, symlinks=True, dirs_exist_ok=True)
            fits = not (self.tmpfs and workspace_full(root))
        except OSError:
            if not self.tmpfs:
                raise
            fits = False
        if not fits:
            self._finalizer.detach()
            _unmount(root)
            self.tmpfs = False
            self._finalizer = weakref.finalize(self, _discard, root, False)
            self._fill(root)

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

    def adopt(self, path: str | os.PathLike[str]) -> None:
        """Give ``path`` (written by the host inside the copy) to the workspace's owner."""
        adopt(path, self.path)

    def size_bytes(self) -> int:
        """Disk use of the copy (:func:`tree_bytes`: blocks and inodes), bytes."""
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
            self.path,
            parent=self.parent if parent is None else parent,
            max_bytes=self.max_bytes,
            owner=self.owner,
        )

    def cleanup(self) -> None:
        """Remove the copy from disk (idempotent; a tmpfs is unmounted first), even if the agent
        made files read-only."""
        self._finalizer()
