"""Advisory locks on a lock file, the same calls on every OS: ``flock`` on POSIX, ``msvcrt.locking`` on Windows; and
Windows' refusal to rename or remove a file held open, tried again (:func:`retried`).

The job's lock on ``--out`` (:func:`bertfeat.output.job_lock`) and the cache's locks (:func:`bertfeat.shards._flock`)
take them. Windows differs in three ways, each handled here:

- it locks a range of bytes, not the file, and a range another process holds cannot be read: the range locked is
  one byte far past what a lock file holds, so a refused job still reads the holder's line;
- it locks exclusively only (``msvcrt`` has no shared lock): a shared lock is taken exclusive there, so readers
  listing one cache namespace take turns (each holds it for one ``listdir``);
- it cannot remove a file any process holds open: :func:`release` lets go first and then removes the file, where
  POSIX removes it first (a waiter then finds the file it locked gone, and locks the new one).

Both release a lock when its holder dies. A child forked while a lock file is open here (``multiprocessing``'s fork,
a web server's workers) gets a copy of its descriptor, and a flock lock is let go only once every copy is closed: so
the child closes its copies as it starts (:func:`open_lock_file`), never holding the parent's locks for its life.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time

from bertfeat.sources import file_id

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
try:
    import msvcrt
except ImportError:  # POSIX
    msvcrt = None

# what flock raises on a filesystem that does not lock (Lustre mounted without -o flock, NFS without its lock
# daemon, some FUSE filesystems): there, as where no lock call exists, nothing is locked
UNSUPPORTED = frozenset({errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOLCK})
# the byte Windows locks: past any holder's line, and below 2 GiB, which the C runtime's _locking can seek to
WINDOWS_LOCKED_BYTE = 1 << 30
_WAIT_SECONDS = 0.05  # between tries on Windows, whose C runtime waits at most 10 s (then fails) for a lock
# Windows refuses to rename or remove a file another process holds open (a job reading a shard or an output, an
# antivirus scanning a new file): such a refusal is tried again for this long before it stands. POSIX refuses for
# want of rights only, which waiting does not change.
HELD_OPEN_SECONDS = 3.0
WINDOWS = sys.platform == "win32"  # (read at each call, so that tests may set it)


# the lock files this process holds open, by descriptor (open_lock_file to close): a forked child closes its copies
_OPEN_HERE: set[int] = set()
# those a forked child closed as it started: the parent's, which the child never lets go of or removes (close, release)
_CLOSED_AT_FORK: set[int] = set()


def open_lock_file(path) -> int:
    """Open the lock file ``path`` (created where missing) for :func:`lock`; give it back with :func:`release` or
    :func:`close`.

    A child forked while it is open closes its copy as it starts: flock's lock belongs to the open file, which the
    child shared, so a lock the parent's thread let go of stayed held while the child lived (a fork pool's workers
    started while a thread compacted a cache or listed its shards: every later compaction, or every process's listing,
    waited for them to end; a job's out= lock outlived the job killed, refusing the next job as "another bertfeat job
    ... is writing" while none was). (A fork in another thread between the open and the next line is not covered: a
    moment.)"""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    _CLOSED_AT_FORK.discard(fd)  # a number the child's fork closed, open again: this one is the child's own
    _OPEN_HERE.add(fd)
    return fd


def close(fd: int) -> None:
    """Close a lock file from :func:`open_lock_file` (letting go of its lock, where no other copy holds it); in a
    forked child, one of the parent's, already closed as the child started, is left."""
    _OPEN_HERE.discard(fd)
    if fd in _CLOSED_AT_FORK:
        _CLOSED_AT_FORK.discard(fd)
        return
    os.close(fd)


def closed_at_fork(fd: int) -> bool:
    """Whether ``fd`` is a lock file of the parent's that this forked child closed as it started: its number may
    name a file of the child's own since, so nothing is written through it (``shards._flock``'s holder line)."""
    return fd in _CLOSED_AT_FORK


def _close_in_forked_child() -> None:
    for fd in _OPEN_HERE:
        with contextlib.suppress(OSError):
            os.close(fd)  # the child's copy only: the parent's lock stays its own (no LOCK_UN, which would free it)
    _CLOSED_AT_FORK.update(_OPEN_HERE)
    _OPEN_HERE.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_forked_child)


def available() -> bool:
    """Whether this OS has a lock call bertfeat takes (flock or msvcrt.locking)."""
    return fcntl is not None or msvcrt is not None


def lock(fd: int, *, exclusive: bool = True, wait: bool = True) -> bool:
    """Lock the open file ``fd``: True once held; False, at once, where ``wait`` is False and another open file
    holds the lock. A filesystem that does not lock raises OSError (its errno in :data:`UNSUPPORTED`)."""
    if fcntl is not None:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True
    while True:
        try:
            _at_locked_byte(fd, msvcrt.LK_NBLCK)
            return True
        except OSError as exc:  # the C runtime's _locking says EACCES where another holds the byte
            if exc.errno != errno.EACCES:
                raise
        if not wait:
            return False
        time.sleep(_WAIT_SECONDS)


def release(fd: int, path=None) -> None:
    """Let go of the lock ``fd`` holds and close it, removing the lock file ``path`` where given: on POSIX before the
    lock is let go (a process that opened the file and waits for it then finds it gone, and locks afresh); on
    Windows after, as a file held open cannot be removed there (one another process holds open, waiting, is left,
    and that process then holds the lock on it). In a forked child, a lock file of the parent's (closed as the child
    started, :func:`open_lock_file`) is neither removed nor closed: it is the parent's."""
    if fd in _CLOSED_AT_FORK:
        close(fd)
        return
    if fcntl is None and msvcrt is not None:
        try:
            with contextlib.suppress(OSError):  # closing lets go too, but Windows may take its time
                _at_locked_byte(fd, msvcrt.LK_UNLCK)
        finally:
            close(fd)
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return
    try:
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
    finally:
        close(fd)


# what a stat of a lock file raises where the file is gone: removed (ENOENT), or, on NFS, removed by another client
# while this one held it open (ESTALE, "Stale file handle")
_GONE = frozenset({errno.ENOENT, getattr(errno, "ESTALE", errno.ENOENT)})


def still_held(fd: int, path) -> bool:
    """Whether the lock file ``path`` is still the file ``fd`` has open and locks: False where it is gone or is
    another file (a holder before removed it in :func:`release` while this process waited for the lock, and a later
    caller may have created a new one: lock that one instead). One file by device and inode
    (:func:`bertfeat.sources.file_id`); where the file system gives no file ids (``st_ino`` 0 for every file) it cannot
    tell, and says True: the lock this process holds is the best it has, where False would retry for ever. Raises
    the OSError of any other failure (a permission lost, an I/O error), for the caller to decide."""
    try:
        here, held = file_id(os.stat(path)), file_id(os.fstat(fd))
    except OSError as exc:
        if exc.errno in _GONE:
            return False
        raise
    return here is None or held is None or here == held


def removable_while_held() -> bool:
    """Whether a lock file can be removed while this process holds it open (POSIX: yes; Windows: no)."""
    return not (fcntl is None and msvcrt is not None)


def _at_locked_byte(fd: int, mode: int) -> None:
    # msvcrt.locking locks from the file's position: go there and come back, so the holder's line is read and
    # written where it is
    at = os.lseek(fd, 0, os.SEEK_CUR)
    os.lseek(fd, WINDOWS_LOCKED_BYTE, os.SEEK_SET)
    try:
        msvcrt.locking(fd, mode, 1)
    finally:
        os.lseek(fd, at, os.SEEK_SET)


def retried(call, *args):
    """``call(*args)`` (a rename or a removal), tried again for :data:`HELD_OPEN_SECONDS` on Windows while it raises
    PermissionError, which there means another process holds the file open, often for a moment."""
    deadline = time.monotonic() + (HELD_OPEN_SECONDS if WINDOWS else 0)
    while True:
        try:
            return call(*args)
        except PermissionError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(_WAIT_SECONDS)
