"""Thread locks that a forked child gets afresh. A child forked while another thread holds a plain
``threading.Lock`` (``multiprocessing``'s fork, a web server's workers, R's ``parallel::mclapply``) holds a copy of
it, held, that no thread there will release: the child's first call that takes it waits forever (a model's load
holds the backends' lock for seconds). Every lock of bertfeat is a :class:`ForkSafeLock`, which the child gets
unheld, and, where its owner says what else the child must forget (the calls of the parent's threads it counted),
that is done then too. bertfeat never forks while holding one of them. (The file locks a child would share with its
parent, the cache's and a job's, it closes as it starts: :func:`bertfeat.locks.open_lock_file`.)
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Callable

# every ForkSafeLock alive, renewed in a forked child
_ALL: "weakref.WeakSet[ForkSafeLock]" = weakref.WeakSet()

# Whether this process is a child forked after torch was imported in its parent (or an ancestor), known from the hook
# below once anything imported bertfeat (``from bertfeat import BertEmbedder``): the parent's own torch work may have
# started OpenMP's threads, which a forked child cannot use (:func:`bertfeat.hardware.one_thread_in_a_forked_child`).
forked_after_torch = False


class ForkSafeLock:
    """A ``threading.Lock`` (``threading.RLock`` with ``reentrant=True``), used as one (``with lock:``,
    ``acquire``/``release``), that a forked child finds unheld; ``in_child()`` is called there after it is renewed.

    Examples
    --------
    >>> lock = ForkSafeLock()
    >>> with lock:
    ...     lock.acquire(blocking=False)  # held: another taker waits
    False
    """

    __slots__ = ("_lock", "_reentrant", "_in_child", "__weakref__")

    def __init__(self, *, reentrant: bool = False, in_child: Callable[[], None] | None = None):
        self._reentrant, self._in_child = reentrant, in_child
        self._lock = threading.RLock() if reentrant else threading.Lock()
        _ALL.add(self)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc) -> None:
        self._lock.release()

    def _renew(self) -> None:
        self._lock = threading.RLock() if self._reentrant else threading.Lock()
        if self._in_child is not None:
            self._in_child()


def _renew_in_forked_child() -> None:
    global forked_after_torch
    forked_after_torch = forked_after_torch or "torch" in sys.modules
    for lock in list(_ALL):
        lock._renew()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_in_forked_child)
