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

Both release a lock when its holder dies.
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
    and that process then holds the lock on it)."""
    if fcntl is None and msvcrt is not None:
        try:
            with contextlib.suppress(OSError):  # closing lets go too, but Windows may take its time
                _at_locked_byte(fd, msvcrt.LK_UNLCK)
        finally:
            os.close(fd)
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return
    try:
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
    finally:
        os.close(fd)


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
