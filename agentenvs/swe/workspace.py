"""Per-episode writable copies of a task repository (the sandbox's ``/testbed``, see docs/swe.md).

This module holds:

* :class:`Workspace` - an independent copy of a repository directory (``.git`` included) in a
  fresh temporary directory (its own size-capped tmpfs where the host lets us mount one), owned by
  the sandbox user, with size accounting, content hashing and robust removal.
* :func:`walk_files`, :func:`read_regular` - every non-directory of a tree at any depth, through
  directory file descriptors and without following links, and the bytes of one regular file.
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
from typing import BinaryIO

from agentenvs.swe.calls import FileChange
from agentenvs.swe.reclaim import mount_source

__all__ = [
    "Workspace",
    "walk_files",
    "read_regular",
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
_MS_NOSUID, _MS_NODEV, MNT_DETACH = 2, 4, 2


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


def walk_files(
    top: str, exclude: Iterable[str] = ()
) -> Iterator[tuple[str, int, os.DirEntry[str]]]:
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
    """Disk use of the tree under ``top`` (``top`` itself excluded), bytes: every file, directory
    and link counts once per inode (hard links are not counted twice), as the largest of its
    apparent size, its allocated blocks (``st_blocks * 512``) and :data:`INODE_BYTES`, so that
    sparse files, directories and empty files all count. Links are not followed; unreadable
    directories are skipped.
    """
    total, seen = 0, set()
    for _, _, entries in _scan(os.fspath(top)):
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                if st.st_ino in seen:
                    continue
                seen.add(st.st_ino)
            total += max(st.st_size, st.st_blocks * 512, INODE_BYTES)
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
    """Give ``top`` (mode 0700) and every entry under it, at any depth, to ``owner`` (``None``:
    keep owners) and clear the setuid/setgid bits of files, so that no workspace file is a setuid
    program of another user. Entries that vanish or cannot be changed are skipped."""
    top = os.fspath(top)
    os.chmod(top, stat.S_IRWXU)
    if owner is not None:
        os.lchown(top, *owner)
    for _, dir_fd, entries in _scan(top):
        for entry in entries:
            with contextlib.suppress(OSError):
                _own_entry(entry, dir_fd, owner)


def _own_entry(entry: os.DirEntry[str], dir_fd: int, owner: tuple[int, int] | None) -> None:
    st = entry.stat(follow_symlinks=False)
    if owner is not None and (st.st_uid, st.st_gid) != owner:
        # also clears setuid/setgid bits of files
        os.chown(entry.name, *owner, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        os.chmod(
            entry.name, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID), dir_fd=dir_fd
        )


@functools.lru_cache(maxsize=1)
def libc() -> ctypes.CDLL:
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
        mounted = libc().mount(
            mount_source().encode(),
            os.fsencode(root),
            b"tmpfs",
            _MS_NOSUID | _MS_NODEV,
            options.encode(),
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
    libc().umount2(os.fsencode(root), MNT_DETACH)


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
    remove_tree(root)


def _open_regular(name: str, dir_fd: int) -> BinaryIO:
    """The regular file ``name`` in ``dir_fd``, opened for reading without blocking or following a
    link (a file swapped for a FIFO or a link meanwhile raises ``OSError``)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    handle = open(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        raise OSError(f"{name!r} is not a regular file")
    return handle


def read_regular(name: str, dir_fd: int) -> bytes:
    """The bytes of the regular file ``name`` in ``dir_fd`` (see :func:`walk_files`).

    Raises:
        OSError: it is not a regular file (any more), or cannot be read.
    """
    with _open_regular(name, dir_fd) as handle:
        return handle.read()


def _sha1_file(name: str, dir_fd: int) -> str:
    """SHA-1 hex digest of the regular file ``name`` in ``dir_fd``."""
    digest = hashlib.sha1()
    with _open_regular(name, dir_fd) as handle:
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


def remove_tree(path: str) -> None:
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
    links, ``.git`` included, file modes and modification times kept, setuid/setgid bits cleared;
    FIFOs, sockets and device files are left out, at any depth) into
    ``tempfile.mkdtemp(prefix="agentenvs-swe-", dir=parent)``. Where the host lets this process
    mount (root), that directory is its own tmpfs of ``max_bytes`` bytes and ``max_bytes //
    INODE_BYTES`` inodes (``nosuid``, ``nodev``), so the kernel enforces the disk cap on blocks and
    inodes (:attr:`tmpfs`); otherwise only the sandbox's watchdog does. The directory has mode
    0700 and, with everything in it, belongs to ``owner``. The copy shares no inode with
    ``source``. It is removed (and unmounted) by :meth:`cleanup`, on leaving a ``with`` block,
    when the object is garbage-collected, or at interpreter exit; the tmpfs's source names its
    owner (:func:`~agentenvs.swe.reclaim.mount_source`), so that a new env reclaims it once a
    killed owner left it.
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
            _copy_tree(str(self.source), root)
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
        for rel, dir_fd, entry in walk_files(str(self.path), exclude):
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
            self.path,
            parent=self.parent if parent is None else parent,
            max_bytes=self.max_bytes,
            owner=self.owner,
        )

    def cleanup(self) -> None:
        """Remove the copy from disk (idempotent; a tmpfs is unmounted first), whatever it holds:
        read-only files, ``0o000`` directories, FIFOs and sockets, trees of any depth."""
        self._finalizer()
