"""A cache shard on disk: its parquet schema and format version, reading its key and vector columns, writing it
in row groups of a fixed size, and the file plumbing the cache's writers share (a temporary shard renamed into place,
fsync, advisory locks). :mod:`bertfeat.namespace` builds a recipe's namespace and its key index,
and :mod:`bertfeat.compaction` the merge, on these; nothing here knows about recipes or lookups.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import time
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat import locks

CACHE_FORMAT = 1
KEY_BYTES = 16
# Row groups are the unit a lookup reads, so they are kept small: about 256 KiB of vectors (170 rows at 384 floats).
_ROW_GROUP_BYTES = 256 * 1024
_WRITE_OPTIONS = dict(
    compression={"key": "none", "n_tokens": "zstd", "vector": "none"},  # random bytes and floats barely compress
    use_dictionary=False,
    write_statistics=False,  # min/max of hashes prune nothing; the key index does that
    write_page_checksum=True,  # so a flipped bit in a data page is caught on read, not returned as a vector
)
# how long a writer tries for the lock on its new temp file, which a compaction's look may hold for a moment
_TEMP_LOCK_SECONDS = 2.0
_HOST = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname()) or "host"


# -- shard files ------------------------------------------------------------------------------------------------


def _row_group_rows(n_features: int, override: int | None) -> int:
    if override:
        return int(override)
    return int(min(65536, max(16, _ROW_GROUP_BYTES // (4 * max(1, n_features)))))


def _schema(fingerprint: str, n_features: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("key", pa.binary(KEY_BYTES), nullable=False),
            pa.field("n_tokens", pa.int64(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), n_features), nullable=False),
        ],
        metadata={"bertfeat.fingerprint": fingerprint, "bertfeat.cache_format": str(CACHE_FORMAT)},
    )


def _shard_table(keys: np.ndarray, vectors: np.ndarray, n_tokens: np.ndarray, fingerprint: str) -> pa.Table:
    n, n_features = vectors.shape
    key_array = pa.FixedSizeBinaryArray.from_buffers(pa.binary(KEY_BYTES), n, [None, pa.py_buffer(keys.tobytes())])
    vector_array = pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(vectors).reshape(-1)), n_features)
    return pa.Table.from_arrays([key_array, pa.array(n_tokens, pa.int64()), vector_array],
                                schema=_schema(fingerprint, n_features))


def _key_array(keys) -> np.ndarray:
    keys = list(keys)
    bad = [k for k in keys if not isinstance(k, bytes) or len(k) != KEY_BYTES][:1]  # a list: the bad key may be None
    if bad:
        raise ValueError(f"cache keys must be {KEY_BYTES} bytes (bertfeat.encode.text_key); got {bad[0]!r}.")
    return np.frombuffer(b"".join(keys), dtype=f"S{KEY_BYTES}").copy() if keys else np.empty(0, f"S{KEY_BYTES}")


def _keys_from_column(column) -> np.ndarray:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.null_count:
        raise ValueError("null keys")
    buf = arr.buffers()[1]
    return np.frombuffer(buf, dtype=f"S{KEY_BYTES}", count=len(arr), offset=arr.offset * KEY_BYTES).copy()


def _vectors_from_column(column, n_features: int) -> np.ndarray:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = arr.flatten().to_numpy(zero_copy_only=False)
    return values.reshape(len(arr), n_features)


class _Unreadable(Exception):
    """A shard that cannot be read (its cause says why), as opposed to a merged shard that cannot be written;
    ``rows_copied``: its rows before the row group that failed, copied already."""

    def __init__(self, rows_copied: int = 0):
        super().__init__(rows_copied)
        self.rows_copied = rows_copied


class _RowGroupWriter:
    """Writes tables of any size as row groups of exactly ``rows`` rows (the last one excepted)."""

    def __init__(self, sink, fingerprint: str, n_features: int, rows: int):
        self.rows = rows
        self.pending: list[pa.Table] = []
        self.n_pending = 0
        self.n_rows = 0
        self.writer = pq.ParquetWriter(sink, _schema(fingerprint, n_features), **_WRITE_OPTIONS)

    def write(self, table: pa.Table) -> None:
        self.n_rows += table.num_rows
        self.pending.append(table)
        self.n_pending += table.num_rows
        if self.n_pending >= self.rows:
            merged = pa.concat_tables(self.pending)
            full = (merged.num_rows // self.rows) * self.rows
            self.writer.write_table(merged.slice(0, full), row_group_size=self.rows)
            rest = merged.slice(full)
            self.pending, self.n_pending = [rest], rest.num_rows

    def close(self) -> None:
        if self.n_pending:
            self.writer.write_table(pa.concat_tables(self.pending), row_group_size=self.rows)
        self.writer.close()

    def abort(self) -> None:
        """Let go of the file after a failed write (the caller removes it); a second failure is no news."""
        with contextlib.suppress(OSError, pa.ArrowException):
            self.writer.close()


class _TempShard:
    """A temporary shard file in ``directory``, renamed into place by :meth:`commit` or removed on exit."""

    def __init__(self, directory: str):
        self.dir = directory
        self.path = os.path.join(directory, f".tmp-{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:12]}.parquet")
        self.committed = False
        self._fd = None

    def __enter__(self) -> "_TempShard":
        self._fd = _held_by_its_writer(self.path)
        return self

    def commit(self, time_ns: int | None = None, *, name: str | None = None) -> str:
        """Rename the shard into place as ``shard-<time>-<id>.parquet``; ``time_ns`` (default: now) is the time its
        name gives it, which decides which copy of a key answers (the oldest name). The id keeps names unique.
        ``name``: one :func:`_shard_name` gave beforehand (a compaction notes it before its swap)."""
        if name is None:
            name = _shard_name(time_ns)
        # atomic: readers see the whole shard or none of it (Windows: tried again while an antivirus reads it)
        locks.retried(os.replace, self.path, os.path.join(self.dir, name))
        self.committed = True
        self._let_go()
        _fsync_dir(self.dir)
        return name

    def __exit__(self, *exc) -> None:
        try:
            if not self.committed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
        finally:
            self._let_go()

    def _let_go(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                locks.close(fd)


def _held_by_its_writer(path: str) -> int | None:
    """Create the temp file ``path`` locked by its writer (the descriptor, closed at commit or exit; None where no
    lock is taken). Its name's host and pid tell a compaction whether its writer is gone, but containers run with
    ``--network host`` share the hostname and not their process ids: the lock tells across them
    (:func:`being_written`). POSIX only: Windows locks a byte of the file, which the writer's own writes could meet,
    and its process ids are the machine's."""
    if locks.fcntl is None:  # Windows (msvcrt): no lock on temp files, and a file held open cannot be renamed
        return None
    try:
        fd = locks.open_lock_file(path)
    except OSError:
        return None  # the write that follows says why
    # tried again for a while: a compaction asking whether the file is being written (being_written) holds its lock
    # for a moment, and a writer refused it then wrote on unlocked, its file deleted under it by a later compaction
    # that cannot see its process. Not waited for without end: a fork of the compacting process in that moment
    # holds its copy of the probe's lock while the child lives.
    deadline = time.monotonic() + _TEMP_LOCK_SECONDS
    with contextlib.suppress(OSError):  # a filesystem that does not lock: the name alone tells, as before
        while not locks.lock(fd, exclusive=True, wait=False) and time.monotonic() < deadline:
            time.sleep(0.01)
    return fd


def being_written(path: str) -> bool:
    """Whether a writer holds the temp file ``path`` (:class:`_TempShard`) now, which its name's host and pid cannot
    tell where they are another container's: its lock is held, or the file is empty (created, not yet locked or
    written: a dead writer's empty file waits for the hour that removes any temp file). False where this cannot be
    told (no flock, as on Windows; a filesystem that does not lock, a file this user may not open to lock), where the
    name decides."""
    if locks.fcntl is None:  # Windows (msvcrt): no lock on temp files, and a file held open cannot be renamed
        return False
    try:
        fd = os.open(path, os.O_RDWR)  # NFS locks a file open for writing only
    except OSError:
        return False
    try:
        try:
            if not locks.lock(fd, exclusive=True, wait=False):
                return True
        except OSError:
            return False
        return os.fstat(fd).st_size == 0
    finally:
        os.close(fd)


class _NotRemoved(Exception):
    """What :func:`_remove_all` could not remove (``path``, the PermissionError as ``__cause__``), every file it was
    given left where it was."""

    def __init__(self, path: str, put_back: bool):
        super().__init__(path)
        self.path, self.put_back = path, put_back

    def why(self) -> str:
        exc = self.__cause__
        name = os.path.basename(self.path)
        if locks.WINDOWS:
            return (f"{name} is held open by another process ({exc.strerror or exc}): Windows cannot remove a file "
                    "in use, and a job or session reading or writing this cache holds its files open")
        return (f"this user may not remove {name} ({exc.strerror or exc}): the folder's permissions, or its sticky "
                "bit where another user wrote the file, keep it")

    def what_to_do(self, command: str) -> str:
        if locks.WINDOWS:
            return f"run {command} again once the other jobs using this cache have ended."
        return f"run {command} as the user who wrote the cache's files, or one who may write to its folder."


def _remove_all(directory: str, names) -> None:
    """Remove the files ``names`` of ``directory``, all or none: each is first renamed to a temporary shard's name
    (which no reader lists, and which compact removes once this process is gone); where one cannot be renamed
    (:func:`bertfeat.locks.retried`), those renamed are put back and :class:`_NotRemoved` raised, so nothing was
    removed. A file already gone is skipped. Stopped while it renames (Ctrl-C: KeyboardInterrupt, or any other
    exception), it puts those renamed back too before the exception goes on: removed, they would leave the namespace
    half cleared, serving some of its texts and not others."""
    aside = []  # (name, temporary name); noted before its rename, so an interrupt just after it still puts it back
    try:
        for name in names:
            path = os.path.join(directory, name)
            tmp = os.path.join(directory, f".tmp-{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:12]}.parquet")
            aside.append((path, tmp))
            try:
                locks.retried(os.replace, path, tmp)
            except FileNotFoundError:
                aside.pop()
                continue
            except PermissionError as exc:
                aside.pop()
                undo, aside = aside, []  # (a second interrupt out of the put-back: nothing left to remove below)
                raise _NotRemoved(path, _put_back(undo)) from exc
    except BaseException:
        undo, aside = aside, []
        _put_back(undo)
        raise
    finally:
        for _, tmp in aside:
            with contextlib.suppress(OSError):  # left as a temp file: compact removes it
                locks.retried(os.unlink, tmp)


def _put_back(aside) -> bool:
    """Rename the files :func:`_remove_all` set aside to their names again, last first; whether all of them were. A
    temporary name that is not there was never renamed to (the rename was stopped before it), or is back already.

    A second interrupt meanwhile (Ctrl-C again, where a namespace of thousands of shards on NFS takes seconds to put
    back, a round trip a rename) goes on once every file is back: stopped there, the files not yet put back were
    removed as cleared, the namespace half cleared after all."""
    put_back, stopped, todo = True, None, list(reversed(aside))
    while todo:
        path, tmp = todo[-1]
        try:
            locks.retried(os.replace, tmp, path)
        except FileNotFoundError:
            pass
        except OSError:
            put_back = False
        except KeyboardInterrupt as exc:  # before the rename or after it: tried again (after: not there, so done)
            stopped = exc
            continue
        todo.pop()
    if stopped is not None:
        raise stopped
    return put_back


def _shard_name(time_ns: int | None = None) -> str:
    """A new shard's name: ``shard-<time>-<id>.parquet``, ``time_ns`` defaulting to now, the id unique."""
    stamp = time.time_ns() if time_ns is None else int(time_ns)
    return f"shard-{stamp:020d}-{uuid.uuid4().hex[:12]}.parquet"


def _shard_time(name: str) -> int:
    """The time in a shard's name (``shard-<time>-<id>.parquet``), in nanoseconds."""
    return int(name.split("-")[1])


def _fsync_dir(path: str) -> None:
    # Makes the rename durable across a power cut; not every platform can open a directory (Windows cannot).
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host may still be running (a temp file's writer): True unless the system
    says there is no such process, or that it has exited."""
    if sys.platform == "win32":
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)  # signal 0: a check, nothing delivered
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Windows has no signal 0: os.kill(pid, 0) sends CTRL_C_EVENT (which is 0) to the console process group `pid`, a
# Ctrl-C for the jobs of that console (the compacting one too), and any other signal terminates the process. So the
# process is opened for waiting only, and asked whether it has exited.
_SYNCHRONIZE = 0x00100000
_ERROR_INVALID_PARAMETER = 87  # OpenProcess's answer for a pid no process has
_WAIT_OBJECT_0 = 0


def _windows_pid_alive(pid: int) -> bool:
    import _winapi

    try:
        handle = _winapi.OpenProcess(_SYNCHRONIZE, False, pid)
    except OverflowError:  # no Windows pid is this large
        return False
    except OSError as exc:  # access denied: another user's process, which may be a writer
        return getattr(exc, "winerror", None) != _ERROR_INVALID_PARAMETER
    try:
        return _winapi.WaitForSingleObject(handle, 0) != _WAIT_OBJECT_0  # signalled: it has exited
    finally:
        _winapi.CloseHandle(handle)


@contextlib.contextmanager
def _flock(path: str, *, exclusive: bool, waiting=None, unlocked=None):
    """An advisory lock on ``path`` (:mod:`bertfeat.locks`; a shared one is exclusive on Windows), waited for; a no-op
    where the OS has no lock call or the filesystem refuses it, or the lock file cannot be created. Where the
    filesystem refuses it, ``unlocked`` (if given) is called with its reason first: the maintenance that must run
    alone says so.

    ``waiting`` (for the locks held long: a compaction's, a clear's): called once, with the holder's line ("pid 12 on
    host", or "another process"), where another holds the lock, before this one waits for it; the lock's holder
    then writes its own line in the file, and empties it as it lets go. (Waited for without a word, a clear or a
    second compaction looked hung while a compaction ran in another terminal.)"""
    fd = None
    if locks.available():
        with contextlib.suppress(OSError):
            fd = locks.open_lock_file(path)
    if fd is None:
        yield
        return
    tells = waiting is not None  # a lock held long: its holder writes its line in the file
    says = unsupported = False  # says: this caller holds the lock and wrote its line (never before it holds it)
    try:
        while True:
            try:
                if waiting is None or not locks.lock(fd, exclusive=exclusive, wait=False):
                    if waiting is not None:
                        waiting(_holder(fd))
                        waiting = None  # said once
                    locks.lock(fd, exclusive=exclusive)
            except OSError as exc:
                if exc.errno not in locks.UNSUPPORTED:
                    raise
                unsupported = True
                if unlocked is not None:
                    unlocked(exc.strerror or str(exc))
                break  # this filesystem does not lock: docs/cache.md says what stays safe
            try:
                if locks.still_held(fd, path):
                    break
            except OSError:
                # unsure whether the file is still the lock others take (a permission lost, an I/O error): keep the
                # lock held; letting go and opening again ran unlocked where the open failed, and looped where not
                break
            # `clear` removed the file while we waited: lock the one a later caller will open, if any
            locks.release(fd)
            fd = None
            with contextlib.suppress(OSError):
                fd = locks.open_lock_file(path)
            if fd is None:  # the namespace itself is gone: there is nothing left to guard
                break
        if fd is not None and tells and not unsupported:
            # held: the line is this caller's now (a waiter stopped before it held the lock, Ctrl-C at the notice,
            # emptied the holder's line as it went)
            says = True
            _write_holder(fd, f"pid {os.getpid()} on {socket.gethostname()}")
        yield
    finally:
        if fd is not None:
            if says and not locks.closed_at_fork(fd):  # a forked child's: the parent's line, in the parent's file
                _write_holder(fd, "")  # let go: the next holder's line, or none, never this one's
            locks.release(fd)


def _holder(fd: int) -> str:
    """The line the holder of the lock file ``fd`` wrote in it (``_flock``), or "another process"."""
    with contextlib.suppress(OSError):
        os.lseek(fd, 0, os.SEEK_SET)
        line = os.read(fd, 200).decode("utf-8", "replace").strip()
        if line:
            return line
    return "another process"


def _write_holder(fd: int, line: str) -> None:
    with contextlib.suppress(OSError):  # a full disk: the line is a courtesy to the next waiter
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, line.encode())
