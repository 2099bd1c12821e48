"""The advisory locks (bertfeat/locks.py) as Windows takes them, through conftest's ``windows_locks``: no ``fcntl``,
``msvcrt.locking`` on one byte, and files held open that cannot be removed. POSIX's flock is tested through whole
operations in test_cache.py (other processes blocked in /proc/locks) and test_output.py."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import threading
import time
import warnings

import pytest

from bertfeat import locks
from bertfeat.cache import Cache
from bertfeat.output import OutputPaths, job_lock
from tests import _cache_workers as workers
from tests.conftest import make_recipe

LOCKED = locks.WINDOWS_LOCKED_BYTE


def held_by_another(fake, path) -> bool:
    """Whether another open file holds the Windows lock of ``path`` (tried through a new one, as a second job does)."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.lseek(fd, LOCKED, os.SEEK_SET)
        try:
            fake.locking(fd, fake.LK_NBLCK, 1)
        except PermissionError:
            return True
        fake.locking(fd, fake.LK_UNLCK, 1)
        return False
    finally:
        os.close(fd)


def test_on_windows_a_second_job_on_the_same_out_is_refused_while_the_first_holds_the_lock(tmp_path, windows_locks):
    """Windows has no flock: two jobs on one --out ran unlocked, their parts interleaved. The job now holds
    msvcrt's lock on a byte past its line (a locked byte cannot be read by another process), lets go of it at its
    end and then removes the file (Windows cannot remove a file held open)."""
    fake = windows_locks
    paths = OutputPaths(tmp_path / "f.parquet")
    holder = f"pid {os.getpid()} on {socket.gethostname()}"
    with job_lock(paths):
        assert held_by_another(fake, paths.lock)
        assert [at for _, mode, at, n in fake.calls if mode == fake.LK_NBLCK] == [LOCKED, LOCKED]
        assert paths.lock.read_text() == holder  # written at the start of the file, not at the locked byte
        with pytest.raises(FileExistsError) as info, job_lock(paths):
            pass
        assert str(info.value) == (
            f"another bertfeat job ({holder}) is writing out={str(paths.out)!r} (it holds {str(paths.lock)!r}); "
            "wait for it to finish, or choose another out=.")
        assert paths.lock.read_text() == holder  # the refused job neither truncated nor removed it
    assert fake.held == {} and [mode for _, mode, _, _ in fake.calls][-1] == fake.LK_UNLCK
    assert not paths.lock.exists()
    with job_lock(paths):  # free again
        assert paths.lock.read_text() == holder
    assert not paths.lock.exists()


def test_on_windows_a_job_ending_while_another_has_its_lock_file_open_leaves_the_file(tmp_path, windows_locks):
    """Another job that opened the lock file as this one ended (to be refused, or to take the lock after it) keeps
    the file: Windows refuses to remove it, and the end of the job is not failed for that."""
    paths = OutputPaths(tmp_path / "f.parquet")
    with job_lock(paths):
        other = os.open(paths.lock, os.O_RDWR)
    try:
        assert paths.lock.exists() and windows_locks.held == {}
        with job_lock(paths):  # the lock is free, on the file that stayed
            assert held_by_another(windows_locks, paths.lock)
    finally:
        os.close(other)


def recipe_and_cache(root):
    recipe = make_recipe(hidden_size=workers.N_FEATURES)
    cache = Cache(root)
    cache.store(recipe, *workers.rows(range(0, 10)))
    cache.store(recipe, *workers.rows(range(5, 15)))  # two shards, overlapping: compaction has work to do
    return recipe, cache


@pytest.mark.parametrize("operation, lock_file", [
    ("lookup", ".lock"),  # a reader's listing waits for a compaction's swap
    ("compact", ".lock"),  # the swap waits for readers' listings
    ("compact", ".compact.lock"),  # one compaction at a time
    ("clear", ".compact.lock"),  # no clear under a running compaction
    ("clear", ".lock"),
])
def test_on_windows_cache_operations_wait_for_the_lock(tmp_path, windows_locks, operation, lock_file):
    """Windows has no flock: a compaction's swap, a reader's listing and a clear ran unserialised. They now wait on
    msvcrt's lock (taken exclusive for a listing too: msvcrt has no shared lock) and run once it is let go."""
    fake = windows_locks
    recipe, cache = recipe_and_cache(tmp_path)
    path = tmp_path / recipe.fingerprint() / lock_file
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    os.lseek(fd, LOCKED, os.SEEK_SET)
    fake.locking(fd, fake.LK_NBLCK, 1)
    done = {}

    def run():
        other = Cache(tmp_path)
        if operation == "lookup":
            done["found"] = int(other.lookup(recipe, workers.rows(range(15))[0])[0].sum())
        elif operation == "compact":
            done["shards_after"] = [r.shards_after for r in other.compact()]
        else:
            done["cleared"] = len(other.clear())

    thread = threading.Thread(target=run)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            thread.start()
            time.sleep(0.5)
            assert thread.is_alive() and not done, f"{operation} ran while {lock_file} was held on Windows"
            assert any(f != fd and at == LOCKED for f, _, at, _ in fake.calls)  # it is trying the lock
        finally:
            fake.locking(fd, fake.LK_UNLCK, 1)
            os.close(fd)
            thread.join(30)
    assert done == {"lookup": {"found": 15}, "compact": {"shards_after": [1]}, "clear": {"cleared": 1}}[operation]
    assert fake.held == {}  # every lock let go
    # a compaction or clear waiting for .compact.lock says so (the holder wrote no line here: "another process")
    said = [str(w.message).split(" (it holds")[0] for w in caught]
    assert said == ([f"bertfeat cache: another process is compacting or clearing {path.parent}"]
                    if lock_file == ".compact.lock" else [])


def test_on_windows_clear_removes_its_lock_files_after_letting_go_of_them(tmp_path, windows_locks):
    """Windows cannot remove a file held open: `clear` removes the lock files once it has let go of them (on POSIX
    while holding them), and the namespace's folder with them."""
    recipe, cache = recipe_and_cache(tmp_path)
    cache.compact()  # leaves .compact.lock beside .lock
    ns = tmp_path / recipe.fingerprint()
    assert {p.name for p in ns.glob(".*lock")} == {".lock", ".compact.lock"}
    assert cache.clear() == [recipe.fingerprint()]
    assert not ns.exists() and windows_locks.held == {}
    assert cache.store(recipe, *workers.rows(range(3))) == 3  # a cleared cache takes new rows, locking afresh
    assert not Cache(tmp_path).lookup(recipe, workers.rows(range(3, 5))[0])[0].any()


# -- still_held: is the lock file at this path still the one this process holds? -----------------------------------

def _stat_of(st: os.stat_result, **changed) -> os.stat_result:
    fields = list(st)
    for name, value in changed.items():
        fields[["st_mode", "st_ino", "st_dev"].index(name)] = value
    return os.stat_result(fields)


def test_still_held_compares_device_and_inode_and_says_false_where_the_file_is_gone(tmp_path, monkeypatch):
    """The `--out` job lock and the cache's locks asked this each in its own way (inode only; one caught a missing
    file, the other any error). One answer now: the same device and inode; gone (removed, or ESTALE: removed by
    another NFS client) is not held; any other failure is the caller's to decide."""
    path = tmp_path / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        assert locks.still_held(fd, path)
        real_stat = os.stat

        def on_another_device(p, *a, **kw):  # the same inode number on another file system is another file
            st = real_stat(p, *a, **kw)
            return _stat_of(st, st_dev=st.st_dev + 1) if os.fspath(p) == str(path) else st

        monkeypatch.setattr(os, "stat", on_another_device)
        assert not locks.still_held(fd, path)
        monkeypatch.undo()

        def failing(err):
            def stat(p, *a, **kw):
                if os.fspath(p) == str(path):
                    raise OSError(err, os.strerror(err), str(p))
                return real_stat(p, *a, **kw)
            return stat

        monkeypatch.setattr(os, "stat", failing(errno.ESTALE))
        assert not locks.still_held(fd, path)
        monkeypatch.setattr(os, "stat", failing(errno.EACCES))
        with pytest.raises(PermissionError):
            locks.still_held(fd, path)
        monkeypatch.undo()

        os.unlink(path)
        assert not locks.still_held(fd, path)
        path.write_text("")  # a later caller's new file
        assert not locks.still_held(fd, path)
    finally:
        os.close(fd)


def test_still_held_where_the_file_system_gives_no_file_ids_keeps_the_lock_it_has(tmp_path, monkeypatch):
    """sshfs-win, Google Drive for desktop: `st_ino` is 0 for every file (sources.file_id), so no answer tells two
    files apart; False there would make a waiter let go and lock again for ever."""
    path = tmp_path / ".lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    real_stat, real_fstat = os.stat, os.fstat
    monkeypatch.setattr(os, "stat", lambda p, *a, **kw: _stat_of(real_stat(p, *a, **kw), st_ino=0))
    monkeypatch.setattr(os, "fstat", lambda f: _stat_of(real_fstat(f), st_ino=0))
    try:
        assert locks.still_held(fd, path)
    finally:
        monkeypatch.undo()
        os.close(fd)


# -- POSIX's flock, called directly (the cache's and the job's locks take it through these calls) ---------------

posix_only = pytest.mark.skipif(locks.fcntl is None, reason="flock is POSIX")


def _open(path):
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)


@posix_only
def test_shared_locks_are_held_together_and_an_exclusive_one_is_refused_while_they_are(tmp_path):
    """Readers listing one cache namespace hold shared locks side by side; a compaction's swap (exclusive) waits
    for them all. Each open file is one holder, as for two processes."""
    path = tmp_path / ".lock"
    a, b, c = _open(path), _open(path), _open(path)
    try:
        assert locks.lock(a, exclusive=False) is True
        assert locks.lock(b, exclusive=False, wait=False) is True  # a second reader is not kept waiting
        assert locks.lock(c, exclusive=True, wait=False) is False  # a writer is, while any reader holds it
        locks.release(a)
        assert locks.lock(c, exclusive=True, wait=False) is False
        locks.release(b)
        assert locks.lock(c, exclusive=True, wait=False) is True
        d = _open(path)
        try:
            assert locks.lock(d, exclusive=False, wait=False) is False  # and a reader, while a writer holds it
        finally:
            os.close(d)
    finally:
        locks.release(c)


@posix_only
def test_a_lock_waited_for_is_taken_once_its_holder_lets_go(tmp_path):
    path = tmp_path / ".lock"
    holder, waiter = _open(path), _open(path)
    assert locks.lock(holder)
    got = {}
    # a daemon: a holder that never lets go fails the test, not the run's exit
    thread = threading.Thread(target=lambda: got.setdefault("taken", locks.lock(waiter)), daemon=True)
    thread.start()
    try:
        time.sleep(0.3)
        assert thread.is_alive() and not got  # waiting, not refused
    finally:
        locks.release(holder)
        thread.join(10)
    assert got == {"taken": True}
    locks.release(waiter)


@posix_only
def test_a_lock_file_removed_while_its_job_runs_ends_the_job_without_an_error(tmp_path):
    """Someone removed `<out>.lock` during the job (a clean-up of the folder): the job's end, which removes it,
    finds it gone and ends as any other, its lock let go; the next job locks afresh."""
    paths = OutputPaths(tmp_path / "f.parquet")
    with job_lock(paths):
        os.unlink(paths.lock)
    assert not paths.lock.exists()
    with job_lock(paths):
        assert paths.lock.exists()
    assert not paths.lock.exists()


def test_on_windows_a_release_the_os_refuses_to_unlock_still_closes_and_removes_the_file(tmp_path, windows_locks):
    """Closing the file lets go of its lock too: an unlock Windows refuses (the byte no longer held) fails neither
    the job's end nor the removal of its lock file."""
    path = tmp_path / "f.parquet.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)  # opened, its byte never locked: LK_UNLCK is refused
    locks.release(fd, path)
    assert [mode for _, mode, _, _ in windows_locks.calls] == [windows_locks.LK_UNLCK]
    assert not path.exists()
    with pytest.raises(OSError):  # closed
        os.fstat(fd)


def _lock_files_open_in(pid: int) -> list[str]:
    """The names of the lock files process ``pid`` holds open (Linux's /proc)."""
    names = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.endswith(".lock") or target.endswith(".lock (deleted)"):
                names.append(os.path.basename(target))
    return sorted(names)


def _forked_child(started, leave) -> None:
    started.set()
    leave.wait(60)


forks = pytest.mark.skipif(locks.fcntl is None or not hasattr(os, "register_at_fork")
                           or not os.path.isdir("/proc/self/fd"), reason="flock, fork and /proc")


@forks
@pytest.mark.parametrize("where, held", [("_copy_rows", [".compact.lock"]),  # the merge: compact's lock
                                         ("_remove_all", [".compact.lock", ".lock"])])  # the swap: readers' too
def test_a_child_forked_while_a_thread_compacts_holds_none_of_the_caches_locks(tmp_path, monkeypatch, where, held):
    """A flock lock belongs to the open file, which a forked child shares, and is let go only once every copy is
    closed: a fork pool's workers started while a thread compacted the cache held its locks for their lives, so every
    later compaction and clear (and, forked during the swap, every process's listing of the namespace: every
    lookup) waited for them to end. The child now closes its copies as it starts; the compaction goes on holding
    them, and lets go as it ends."""
    import multiprocessing

    import bertfeat.compaction

    recipe, cache = recipe_and_cache(tmp_path)
    folder = tmp_path / recipe.fingerprint()
    inside, go_on = threading.Event(), threading.Event()
    real = getattr(bertfeat.compaction, where)

    def paused(*args, **kwargs):
        inside.set()
        assert go_on.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(bertfeat.compaction, where, paused)
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("shards_after", [r.shards_after for r in cache.compact()]))
    thread.start()
    ctx = multiprocessing.get_context("fork")
    started, leave = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_forked_child, args=(started, leave), daemon=True)
    try:
        assert inside.wait(30)
        assert _lock_files_open_in(os.getpid()) == held  # the compaction holds them
        child.start()
        assert started.wait(30)
        in_child = _lock_files_open_in(child.pid)
        for name in held:  # still the compaction's, while it runs
            fd = _open(folder / name)
            assert not locks.lock(fd, wait=False), f"{name} let go in the parent by the child's start"
            locks.release(fd)
        go_on.set()
        thread.join(30)
        free = {}
        for name in held:  # the compaction ended: another compaction, a clear, a listing takes the lock at once
            fd = _open(folder / name)
            free[name] = locks.lock(fd, wait=False)
            locks.release(fd)
    finally:
        go_on.set()
        leave.set()
        thread.join(30)
        child.join(30)
    assert free == {name: True for name in held}
    assert in_child == []
    assert result == {"shards_after": [1]} and child.exitcode == 0
    assert int(cache.lookup(recipe, workers.rows(range(15))[0])[0].sum()) == 15


_KILLED_JOB = """
import multiprocessing, os, signal, sys, threading
from pathlib import Path
from bertfeat.output import OutputPaths, job_lock

def child(pipe):
    pipe.send(os.getpid())
    threading.Event().wait(60)

inside = threading.Event()

def job():
    with job_lock(OutputPaths(Path(sys.argv[1]))):
        inside.set()
        threading.Event().wait()

threading.Thread(target=job, daemon=True).start()
inside.wait()
ctx = multiprocessing.get_context("fork")
r, w = ctx.Pipe(duplex=False)
ctx.Process(target=child, args=(w,)).start()
print(r.recv(), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # the job's process killed (the OOM killer), its fork pool's worker left
"""


@forks
def test_a_job_killed_after_its_process_forked_leaves_its_out_to_the_next_job(tmp_path):
    """A job ran in a thread while its process forked a worker (a fork pool), and the process was killed: the worker
    held the job's lock file, so the next job on that out= was refused, "another bertfeat job (pid <the dead one>) is
    writing", for as long as the worker lived. The worker now closes it as it starts."""
    import signal
    import subprocess
    import sys

    paths = OutputPaths(tmp_path / "f.parquet")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    # the worker keeps the pipe of standard output open: its first line is read, not its end
    killed = subprocess.Popen([sys.executable, "-c", _KILLED_JOB, str(paths.out)], stdout=subprocess.PIPE, text=True,
                              env=env)
    worker = int(killed.stdout.readline() or 0)
    try:
        assert killed.wait(120) == -signal.SIGKILL and worker
        assert paths.lock.exists()  # left by the killed job
        with job_lock(paths):  # taken: no job runs
            assert paths.lock.read_text() == f"pid {os.getpid()} on {socket.gethostname()}"
        assert _lock_files_open_in(worker) == []
    finally:
        if worker:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker, signal.SIGKILL)
        killed.kill()
        killed.wait(30)
        killed.stdout.close()
    assert not paths.lock.exists()


@forks
def test_a_forked_child_leaves_the_parents_lock_and_its_file_to_the_parent(tmp_path):
    """In a child forked while its own thread held a lock (its `with` goes on there), the lock file's copy was closed
    as the child started: the child's release neither removes the parent's lock file nor closes a file of its own
    that took that descriptor's number since; the parent still holds the lock."""
    path = tmp_path / ".f.parquet.lock"
    fd = locks.open_lock_file(path)
    assert locks.lock(fd)
    pid = os.fork()
    if pid == 0:  # the child: only os._exit leaves it (never pytest's own exit)
        code = 1
        try:
            os.dup2(os.open(os.devnull, os.O_RDONLY), fd)  # another file of the child's takes that number
            locks.release(fd, path)
            code = 0 if os.path.samestat(os.fstat(fd), os.stat(os.devnull)) and path.exists() else 2
        finally:
            os._exit(code)
    assert os.waitpid(pid, 0)[1] == 0
    other = _open(path)
    try:
        assert not locks.lock(other, wait=False)  # still the parent's
    finally:
        os.close(other)
    locks.release(fd, path)
    assert not path.exists()


@pytest.mark.skipif(not hasattr(os, "fork") or locks.fcntl is None, reason="fork and flock are POSIX")
def test_a_child_forked_inside_a_held_lock_never_writes_through_its_closed_descriptor(tmp_path):
    """(found by a review of session 16's file work, 2026-11-27, session 16) A child forked while this process held
    .compact.lock (its line written there) closes its copy of the lock file as it starts (8d211ac); a child leaving
    the block then emptied 'its' line through that descriptor's number, which the child may have given to a file of
    its own meanwhile: that file was cut to nothing. The child leaves the parent's lock file alone, line and all."""
    from bertfeat.shards import _flock

    lock, victim = tmp_path / ".compact.lock", tmp_path / "precious.txt"
    victim.write_text("precious")

    def held_and_forked():
        with _flock(str(lock), exclusive=True, waiting=lambda holder: None):
            (lock_fd,) = [fd for fd in locks._OPEN_HERE]
            pid = os.fork()
            if pid == 0:  # the child opens files of its own: the lock's closed number comes back to one of them
                opened = [os.open(victim, os.O_RDWR) for _ in range(64)]
                if lock_fd not in opened:
                    os._exit(2)
            return pid

    pid = held_and_forked()
    if pid == 0:
        os._exit(0 if victim.read_text() == "precious" else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0 and victim.read_text() == "precious"
    assert lock.read_text() == ""  # the parent let go, emptying its own line
