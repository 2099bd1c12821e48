"""A child forked while another thread holds one of bertfeat's locks (``multiprocessing``'s fork, a web server's
workers, R's ``parallel::mclapply``) finds it free: a plain ``threading.Lock`` is copied into the child held, and no
thread there releases it, so the child's first call that takes it waited forever (found by a leftovers hunt,
2026-11-27, session 12: every module-level lock but three had no fork hook; backend's load lock among them, held for
the seconds of a model's load)."""

import importlib
import os
import re
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

from bertfeat import BertEmbedder
from bertfeat.fork_safe import ForkSafeLock

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")

# every lock of the process that is not an object's own, by where it lives ("module:attribute.attribute")
PROCESS_LOCKS = [
    "bertfeat.backend:_LOCK", "bertfeat.batch_runner:_PASSES_LOCK", "bertfeat.model_files:_TOKENIZERS_LOCK",
    "bertfeat.model_files:_QUIET.lock", "bertfeat.cache:_OPEN_LOCK", "bertfeat.cli:_FORMAT.lock",
    "bertfeat.gpu:_HELD_LOCK", "bertfeat.hardware:_SHARED_LOCK", "bertfeat.prompts:_NOTED_LOCK",
    "bertfeat.ray_session:_STARTED_RAY.lock", "bertfeat.spark_session:_LAUNCHING", "bertfeat.spark_session:_STARTED.lock",
]


def _found(where: str):
    module, names = where.split(":")
    found = importlib.import_module(module)
    for name in names.split("."):
        found = getattr(found, name)
    return found


def _in_a_child_forked_while_held(lock, child) -> int:
    """Fork while another thread holds ``lock``; run ``child()`` there (killed by an alarm after 10 s: a wait on the
    copied lock never ends), its exit code 0 where it returned True. Returns that exit code (-14 for the alarm)."""
    taken, go = threading.Event(), threading.Event()

    def hold():
        with lock:
            taken.set()
            go.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(30)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.alarm(10)
                code = 0 if child() else 1
            finally:
                os._exit(code)
    finally:
        go.set()
        holder.join(30)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize("where", PROCESS_LOCKS)
def test_a_child_forked_while_another_thread_held_a_process_lock_takes_it_at_once(where):
    # looked up again in the child: a module may give it a new lock there
    assert _in_a_child_forked_while_held(_found(where), lambda: _found(where).acquire(timeout=5)) == 0


def test_every_lock_in_bertfeat_is_renewed_in_a_forked_child():
    """A lock made with ``threading.Lock()`` or ``RLock()`` anywhere in bertfeat (a module's, or an object's: a cache
    namespace, a backend's fallback, a job's pass counter, a GPU memory cap) would be copied held into a child forked
    while a thread held it. bertfeat.fork_safe is the one place that makes them."""
    made = sorted(f"{path.relative_to(ROOT)}:{n}" for path in (ROOT / "bertfeat").rglob("*.py")
                  if path.name != "fork_safe.py"
                  for n, line in enumerate(path.read_text().splitlines(), 1)
                  if re.search(r"\b(threading\.|_thread\.)?(R?Lock|allocate_lock)\(\)", line))
    assert made == []


def test_a_child_forked_during_a_models_load_in_another_thread_embeds_as_the_parent(tiny_bert, monkeypatch):
    """A service that loads its model in a thread and forks its workers meanwhile: the child's fit waited forever
    on the backends' lock the load held."""
    from bertfeat import backend

    backend.clear_backends()
    want = BertEmbedder(tiny_bert, dtype="float32").fit_transform(["a cat sat", "on the mat"])
    backend.clear_backends()
    inside, go = threading.Event(), threading.Event()
    real = backend.TorchBackend.__init__

    def slow_load(self, *args, **kwargs):
        inside.set()
        assert go.wait(30)  # the load runs on past the fork
        real(self, *args, **kwargs)

    monkeypatch.setattr(backend.TorchBackend, "__init__", slow_load)
    load = threading.Thread(target=lambda: BertEmbedder(tiny_bert, dtype="float32").fit_transform(["x"]))
    load.start()
    try:
        assert inside.wait(30)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.alarm(20)
                monkeypatch.setattr(backend.TorchBackend, "__init__", real)
                got = {}
                # in a thread of its own: a thread that ran torch's products in the parent finds its OpenMP threads
                # gone in the child (libgomp), whatever bertfeat does; bertfeat's own batches run in new threads
                fit = threading.Thread(target=lambda: got.update(x=BertEmbedder(tiny_bert, dtype="float32")
                                                                 .fit_transform(["a cat sat", "on the mat"])))
                fit.start()
                fit.join()
                os.write(write, got["x"].tobytes())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            sent = pipe.read()
        _, status = os.waitpid(pid, 0)
    finally:
        go.set()
        load.join(30)
        backend.clear_backends()
    assert os.waitstatus_to_exitcode(status) == 0
    np.testing.assert_array_equal(np.frombuffer(sent, dtype=np.float32).reshape(want.shape), want)


def test_a_fork_safe_lock_is_a_lock_and_the_child_alone_forgets_what_its_owner_says():
    forgotten = []
    lock = ForkSafeLock(in_child=lambda: forgotten.append(os.getpid()))
    reentrant = ForkSafeLock(reentrant=True)

    def child():
        with reentrant, reentrant:  # reentrant still
            pass
        return lock.acquire(timeout=5) and forgotten == [os.getpid()]

    assert _in_a_child_forked_while_held(lock, child) == 0
    assert forgotten == []  # the parent forgets nothing
    with lock:
        assert not lock.acquire(blocking=False)  # a plain lock: held, even by its own thread


def test_a_child_forked_after_torch_was_imported_is_marked_so_by_the_hook_bertfeats_import_registers():
    """(review of session 12) the mark that makes a forked child run torch on one thread where its parent may have
    used OpenMP's threads (bertfeat.hardware.one_thread_in_a_forked_child) was made by a hook of bertfeat.hardware,
    which ``from bertfeat import BertEmbedder`` does not import: a child forked after the caller's own torch work
    waited for ever in its first transform (tests/test_perf_paths.py runs that end to end)."""
    pytest.importorskip("torch")
    from bertfeat import fork_safe

    pid = os.fork()
    if pid == 0:
        os._exit(0 if fork_safe.forked_after_torch is True else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
