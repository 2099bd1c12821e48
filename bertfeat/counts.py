"""A job's counts: distinct texts in bounded memory, and the manifest's counts from the summed per-chunk stats."""

from __future__ import annotations

import contextlib
import hashlib
from contextvars import ContextVar

import numpy as np

from bertfeat.encode import EncodeStats
from bertfeat.fork_safe import ForkSafeLock

class DistinctCounter:
    """Count distinct 64-bit text hashes: exact up to ``exact_limit``, then a HyperLogLog estimate.

    Memory stays bounded: at most ``exact_limit`` hashes (2 MB by default), then 2**14 one-byte registers
    (standard error about 0.8%).
    """

    P = 14

    def __init__(self, exact_limit: int = 250_000):
        self.exact_limit = exact_limit
        self.exact: np.ndarray | None = np.empty(0, dtype=np.uint64)
        self.registers = np.zeros(1 << self.P, dtype=np.uint8)

    def add(self, hashes: np.ndarray) -> None:
        hashes = np.asarray(hashes, dtype=np.uint64)
        self._hll_add(hashes)
        if self.exact is not None:
            self.exact = np.union1d(self.exact, hashes)
            if len(self.exact) > self.exact_limit:
                self.exact = None

    def _hll_add(self, h: np.ndarray) -> None:
        if not len(h):
            return
        idx = (h >> np.uint64(64 - self.P)).astype(np.int64)
        rest = h & np.uint64((1 << (64 - self.P)) - 1)
        bits = np.zeros(len(h), dtype=np.int64)
        nz = rest > 0
        bits[nz] = np.floor(np.log2(rest[nz].astype(np.float64))).astype(np.int64) + 1
        rank = (64 - self.P) - bits + 1
        np.maximum.at(self.registers, idx, rank.astype(np.uint8))

    def count(self) -> tuple[int, bool]:
        """``(count, exact)``."""
        if self.exact is not None:
            return int(len(self.exact)), True
        m = float(len(self.registers))
        estimate = 0.7213 / (1 + 1.079 / m) * m * m / np.sum(2.0 ** -self.registers.astype(np.float64))
        zeros = int((self.registers == 0).sum())
        if estimate <= 2.5 * m and zeros:
            estimate = m * np.log(m / zeros)
        return int(round(estimate)), False


def text_hashes(values) -> np.ndarray:
    """64-bit hashes of the distinct non-missing texts in ``values`` (a blank text is missing, as the core reads it:
    :func:`bertfeat.inputs.is_blank`)."""
    from bertfeat.inputs import is_blank

    distinct = {v for v in values if isinstance(v, str) and not is_blank(v)}
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(v.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
         for v in distinct), dtype=np.uint64, count=len(distinct))


def job_counts(totals: EncodeStats, distinct: DistinctCounter, n_text_cols: int, rows_resumed: int,
               chunks: int) -> dict:
    """The manifest's counts from the summed per-chunk stats and the distinct-text counter of a whole job."""
    unique, exact = distinct.count()
    return {
        "rows": totals.rows // max(1, n_text_cols),
        "texts": totals.rows,
        "unique_texts": unique,
        "unique_texts_exact": exact,
        "embedded": totals.unique - totals.cache_hits,
        "cache_hits": totals.cache_hits,
        "truncated": totals.truncated,
        "chunked": totals.chunked,
        "missing": totals.missing,
        "tokens": totals.tokens,
        "rows_resumed": rows_resumed,
        "chunks": chunks,
    }


def forward_passes(recipe) -> dict[str, int]:
    """Passes of ``recipe``'s model run in this process so far (one per batch; more where a batch was split), by the
    arrangement of the forward pass that ran them (:func:`bertfeat.backend.forward_passes`); a process that never
    imported the backend ran none."""
    import sys

    backend = sys.modules.get("bertfeat.backend")  # not imported for a run answered from the cache
    if backend is None:
        return {}
    return backend.forward_passes(recipe.weights_sha256, recipe.config_sha256, recipe.tokenizer_sha256, recipe.dtype)


def passes_since(before: dict[str, int], recipe) -> dict[str, int]:
    """The batches each arrangement ran since ``before`` (a :func:`forward_passes` taken earlier): a job's, a
    chunk's or a task's own, whatever ran in this process before it."""
    return {rung: n - before.get(rung, 0) for rung, n in forward_passes(recipe).items() if n > before.get(rung, 0)}


class _OwnPasses:
    """The passes of one model counted for one call (:func:`own_passes`)."""

    def __init__(self, recipe):
        self.model = (recipe.weights_sha256, recipe.config_sha256, recipe.tokenizer_sha256, recipe.dtype)
        self.passes: dict[str, int] = {}
        self.lock = ForkSafeLock()  # the call's batches run in several worker threads at once


# the counts of the calls now counting their own passes, in the thread (and context) that counts them
_COUNTING: ContextVar[tuple] = ContextVar("bertfeat_own_passes", default=())


@contextlib.contextmanager
def own_passes(recipe):
    """Yield a dict that counts, by arrangement, the passes of ``recipe``'s model (:func:`forward_passes`) that the
    code inside the block runs: in this thread, and in the worker threads that run its batches (they run in a copy of
    its context, :meth:`bertfeat.backend.TorchBackend.forward_batches`), not another thread's. A count of the
    process's passes taken before and after a job counted those of every job running beside it (two jobs of one
    model in a notebook or a web service), and passes where a job the cache answered whole ran none."""
    counter = _OwnPasses(recipe)
    token = _COUNTING.set(_COUNTING.get() + (counter,))
    try:
        yield counter.passes
    finally:
        _COUNTING.reset(token)


def count_own_pass(model: tuple, rung: str) -> None:
    """One pass of ``model`` (weights, config and tokenizer sha256, dtype) by ``rung``, for each :func:`own_passes`
    of that model counting in this context."""
    for counter in _COUNTING.get():
        if counter.model == model:
            with counter.lock:
                counter.passes[rung] = counter.passes.get(rung, 0) + 1


def add_passes(total: dict[str, int], passes: dict[str, int]) -> dict[str, int]:
    """``total`` with ``passes`` added (the manifest's ``timing.forward_pass`` summed over batches or tasks)."""
    for rung, n in passes.items():
        total[rung] = total.get(rung, 0) + int(n)
    return total


def keep_machine(machines: dict[str, dict], host: str, facts: dict) -> None:
    """Keep ``facts`` (:func:`bertfeat.hardware.run_facts`) as ``host``'s, unless a report from a worker there that
    ran the model (torch loaded: its threads and measured product rates) is kept already: a worker whose batches all
    came from the cache never loads torch, and its facts lack the rates."""
    kept = machines.get(host)
    if kept is None or ("matmul_gflops" in facts and "matmul_gflops" not in kept):
        machines[host] = facts


def machines_facts(machines: dict[str, dict]) -> dict:
    """The manifest's ``timing.machine`` for a job whose workers ran on ``machines`` (host -> the facts of
    :func:`bertfeat.hardware.run_facts` one worker there measured): the facts themselves when every worker ran on
    one machine, as the local engine records them; by host name when several did; ``{}`` when none reported."""
    if len(machines) == 1:
        return next(iter(machines.values()))
    return dict(sorted(machines.items()))


def driver_says(category: type[Warning]) -> str | None:
    """The name under which a worker's warning of ``category`` is kept for the driver to say (:func:`keep_note`): a
    :class:`~bertfeat.exceptions.SlowDtypeWarning` (the dtype asked for runs slow there) or a
    :class:`~bertfeat.exceptions.CacheWarning` (a read-only cache answers and stores nothing; new vectors could not be
    written), which the local engine says to its user; None for any other, which the worker warns itself."""
    from bertfeat.exceptions import CacheWarning, SlowDtypeWarning

    for kind in (SlowDtypeWarning, CacheWarning):
        if issubclass(category, kind):
            return kind.__name__
    return None


def keep_note(notes: dict[tuple[str, str], str], host: str, message: str, kind: str = "SlowDtypeWarning") -> None:
    """Keep a worker's warning (``kind``: :func:`driver_says`) as ``host``'s, the first of its kind there (its
    workers measure the same CPU and open the same cache)."""
    notes.setdefault((host, kind), message)


def say_notes(notes: dict[tuple[str, str], str], worker: str) -> None:
    """Say on the driver what workers found (``(host, kind) -> message``), once per host and kind: a worker's own
    warning goes to its log (an executor's, or a quiet Ray job's, which no one reads), never to the user who chose
    the dtype or the cache."""
    import warnings

    from bertfeat import exceptions
    from bertfeat.exceptions import user_stacklevel

    for (host, kind), message in sorted(notes.items()):
        warnings.warn(f"{message} ({worker} on host {host!r})", getattr(exceptions, kind),
                      stacklevel=user_stacklevel())
