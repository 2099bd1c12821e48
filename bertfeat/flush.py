"""A written file flushed to disk before it is renamed into place, where the file system can flush one.

Every file bertfeat renames into place (a job's parts, checkpoints and output, a cache shard) is flushed first, so a
power cut leaves the whole file or none. Some file systems cannot flush a file and say so: an SMB/CIFS mount, a
VirtualBox shared folder and FUSE file systems without a flush answer ``fsync`` with EINVAL ("does not support
synchronization"), or EOPNOTSUPP or ENOSYS. The bytes written went through, so the file is written unflushed there,
as a folder's flush is skipped where it cannot be made (:func:`bertfeat.shards._fsync_dir`). Any other failure
stands, naming the file: EIO (the bytes did not reach the disk), and a full disk or quota, which NFS reports at the
flush rather than at the write. A failure of the write itself names the file too (:func:`naming`). A small file
(a manifest, a part's stats, a job's state, the cache's marker and ``recipe.json``) is written so by
:func:`atomic_write_bytes`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid

from bertfeat import locks

# what fsync answers where the file system cannot flush a file (the bytes written stand)
CANNOT_FLUSH = frozenset({errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS})


def to_disk(fd: int, path) -> None:
    """``os.fsync(fd)`` of the file ``path``, skipped where the file system cannot flush one (:data:`CANNOT_FLUSH`);
    a failure raised names ``path``, which fsync's OSError does not."""
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno in CANNOT_FLUSH:
            return
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
        raise


def file_to_disk(path) -> None:
    """Flush the written file ``path`` (:func:`to_disk`) through a handle that may write it: Windows flushes a file
    only so (FlushFileBuffers), and refuses a read-only one ([Errno 9] Bad file descriptor); POSIX takes either."""
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        to_disk(fd, path)
    finally:
        os.close(fd)


@contextlib.contextmanager
def naming(path):
    """Name ``path`` in an OSError raised inside that names no file, as a write's and pyarrow's do not: a full disk
    ("Error writing bytes to file. Detail: [errno 28] No space left on device") is then said of the file being
    written, so of its disk (the output's, the cache's), not of "a file" (:func:`bertfeat.output.os_error_message`)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(path)) from exc


def atomic_write_bytes(path, data: bytes, *, keep_mode: bool = False) -> None:
    """Put ``data`` at ``path`` whole or not at all: written under a temp name beside it
    (``.<name>.tmp-<pid>-<id>``: two threads of one process write apart), flushed (:func:`to_disk`), renamed into
    place (on Windows tried again while an antivirus reads the new file: :func:`bertfeat.locks.retried`). Where a
    step fails the old file stays and the temp file is removed. ``keep_mode``: the file replaced keeps its
    permissions (a user's own file, group-writable, which the new file would else take from the umask)."""
    path = os.fspath(path)
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with naming(tmp), open(tmp, "wb") as fh:
            if keep_mode:
                with contextlib.suppress(OSError):  # none there yet (the umask's), or a mode this user may not give
                    os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
            fh.write(data)
            fh.flush()
            to_disk(fh.fileno(), tmp)
        locks.retried(os.replace, tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
