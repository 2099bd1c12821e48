"""A chunk's finished forward passes, saved as they finish, so that a killed job loses seconds of work, not a chunk.

``bertfeat embed`` resumes a killed job chunk by chunk (:mod:`bertfeat.resume`); a chunk can hold many minutes of
work (long texts, a big model, a CPU). While a chunk runs, :func:`bertfeat.encode.encode` hands every batch's
pooled output to the :class:`BatchJournal` in use (:func:`use`), which saves what has finished every ``every``
seconds of work, as one ``.npz`` file written under a temp name and renamed. A rerun plans the chunk's batches
exactly as before (the plan depends on the chunk's texts only) and takes each batch the journal holds instead of
running it, so its features are the very bytes the killed run computed, and the output stays byte-identical to an
uninterrupted run's. A batch is keyed by its token ids and what is pooled, never by its position: a batch the
journal does not hold exactly is run again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import zipfile
from contextvars import ContextVar
from pathlib import Path

import numpy as np

from bertfeat import locks
from bertfeat.flush import naming, to_disk

_CURRENT: ContextVar["BatchJournal | None"] = ContextVar("bertfeat_batch_journal", default=None)


def current() -> "BatchJournal | None":
    """The journal of the chunk being embedded in this thread, if any."""
    return _CURRENT.get()


@contextlib.contextmanager
def use(journal: "BatchJournal"):
    """Journal the forward passes run inside the block."""
    token = _CURRENT.set(journal)
    try:
        yield journal
    finally:
        _CURRENT.reset(token)


def batch_key(ids, pooling, layer_groups) -> str:
    """A batch's identity: its sequences' token ids (in order) and what the forward pass pools from them."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((tuple(pooling), [list(g) for g in layer_groups])).encode())
    h.update(np.asarray(ids.length, dtype=np.int64).tobytes())
    for start, length in zip(ids.start.tolist(), ids.length.tolist()):
        h.update(ids.flat[start:start + length].tobytes())
    return "b" + h.hexdigest()


class BatchJournal:
    """The finished batches of one chunk, in ``folder``: loaded when it exists, added to every ``every`` seconds.

    ``every=0`` saves after every batch (tests); ``reused`` counts the batches a rerun took from the journal.
    """

    def __init__(self, folder: Path, every: float):
        if not every >= 0:
            raise ValueError(f"checkpoint interval {every!r} is not valid: expected seconds >= 0.")
        self.folder = Path(folder)
        self.every = float(every)
        self.reused = 0
        self.saved = 0  # batches saved by this run
        self._done: dict[str, np.ndarray] = {}
        self._new: dict[str, np.ndarray] = {}
        self._since = time.monotonic()
        self._files = 0
        if self.folder.is_dir():
            for f in sorted(self.folder.glob("*.npz")):
                self._files += 1
                try:
                    with np.load(f, allow_pickle=False) as saved:
                        self._done.update({k: saved[k] for k in saved.files})
                except (OSError, ValueError, EOFError, zipfile.BadZipFile):
                    continue  # renamed into place only when whole, so a damaged file is a damaged disk: redo it

    def get(self, key: str) -> np.ndarray | None:
        result = self._done.pop(key, None)  # each saved batch answers once: a rerun holds no more than it needs
        if result is not None:
            self.reused += 1
        return result

    def put(self, key: str, result: np.ndarray) -> None:
        self._new[key] = np.asarray(result)
        if time.monotonic() - self._since >= self.every:
            self.flush()

    def flush(self) -> None:
        """Save the batches finished since the last save (all or none of them)."""
        self._since = time.monotonic()
        if not self._new:
            return
        # not parents=True: the job's folder (and --out's) removed while it runs must fail the job, not be made again
        # to fill with the rest of its parts while the first are gone
        self.folder.mkdir(exist_ok=True)
        self._files += 1
        final = self.folder / f"{self._files:06d}-{os.getpid()}.npz"
        tmp = self.folder / f".{final.name}.tmp"
        try:
            with naming(tmp), open(tmp, "wb") as f:
                np.savez(f, **self._new)
                f.flush()
                to_disk(f.fileno(), tmp)
            locks.retried(os.replace, tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        self.saved += len(self._new)
        self._new.clear()
