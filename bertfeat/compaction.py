"""Compaction of a cache namespace: its shards merged into one, keeping the first copy of each key (the copy of the
shard of the oldest name), dropping corrupt shards and dead writers' temporary files. Called by
:meth:`bertfeat.cache.Cache.compact` on a namespace's index (:class:`bertfeat.namespace._Namespace`); see docs/cache.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat.namespace import (
    _COMPACT_LOCK_FILE, _LOCK_FILE, _STALE_TMP_SECONDS, _TMP_RE, SWAP_FILE, _write_atomic,
)
from bertfeat import locks
from bertfeat.exceptions import CacheError
from bertfeat.flush import file_to_disk
from bertfeat.shards import (
    _HOST, _flock, _fsync_dir, _NotRemoved, _pid_alive, _remove_all, _row_group_rows, _RowGroupWriter, _shard_time,
    _shard_name, _TempShard, _Unreadable, being_written,
)


@dataclass
class CompactResult:
    """What :meth:`Cache.compact` did to one namespace."""

    fingerprint: str
    shards_before: int
    shards_after: int
    rows: int
    duplicates_dropped: int
    corrupt_removed: list[str]
    temp_removed: int
    bytes_before: int
    bytes_after: int

    def to_dict(self) -> dict:
        return asdict(self)



def compact(ns, unlocked=None) -> CompactResult:
    """Merge the namespace ``ns``'s shards into one; ``unlocked`` is called where the filesystem takes no lock."""
    with ns._said_after():  # the shards set aside are said once the work is done (never stopping it)
        return _compact(ns, unlocked)


def _compact(ns, unlocked=None) -> CompactResult:
    # The namespace's thread lock is held to read the index at the start and for the swap at the end, not while the
    # shards are merged: the lookups and stores of this process's other threads (a service compacting in a thread of
    # its own) run beside the merge, as another process's do; the flock on .compact.lock keeps the rest out.
    with _flock(os.path.join(ns.dir, _COMPACT_LOCK_FILE), exclusive=True, waiting=ns._waiting("compaction"),
               unlocked=unlocked):
        with ns._lock:
            ns._finish_clear()  # a clear stopped half way: ended first, so nothing it meant to remove is merged
            _finish_swap(ns)
            temp_removed = _remove_stale_temp_files(ns)
            ns._learn_width(ns._read_recipe())
            ns.bad.clear()  # look again: a shard is only deleted as corrupt if it still cannot be read
            ns.denied.clear()
            ns.refresh()
            old = dict(ns.shards)
            bad = ns._present_bad()
            bytes_before = ns._bytes([s.name for s in old.values()] + bad)
            result = dict(fingerprint=ns.fingerprint, shards_before=len(old) + len(bad), temp_removed=temp_removed,
                          bytes_before=bytes_before)
            canonical = np.ones(len(ns.keys), dtype=bool)
            canonical[1:] = ns.keys[1:] != ns.keys[:-1]
            duplicates = int(len(ns.keys) - canonical.sum())
            if len(old) <= 1 and not duplicates and not bad:
                return CompactResult(**result, shards_after=len(old), rows=len(ns.keys), duplicates_dropped=0,
                                     corrupt_removed=[], bytes_after=bytes_before)
            # The first copy of each key (older shards first) is kept; shards are copied in age order, rows in
            # their order, so texts written together stay together and lookups keep reading few row groups. A key
            # counts as kept only once its row is copied: where its first copy's shard turns out unreadable, its
            # next copy (in a newer shard, copied later) is kept instead, not deleted with the shard it duplicated.
            # (the index as it is now, copied: other threads change ns's index while the shards are merged, and a
            # shard found unreadable below is dropped from it as it goes)
            key_id = np.cumsum(canonical) - 1  # the index is sorted by key: one id per distinct key
            kept = np.zeros(int(canonical.sum()), dtype=bool)
            by_shard = np.argsort(ns.shard_of, kind="stable")  # within a shard, in key order
            sorted_sid, row_of = ns.shard_of[by_shard], ns.row_of.copy()
        duplicates = 0  # counted again below: rows of shards read whole whose key was kept from another row
        # the shards this compaction finds unreadable, or may not read, as it merges: only its own findings decide
        # what it deletes as corrupt (other threads' lookups run beside the merge, and a moment's error there marks
        # a shard for the process, not for deletion)
        found_bad, found_denied = set(bad), set()
        with _TempShard(ns.dir) as tmp:
            writer = _RowGroupWriter(tmp.path, ns.fingerprint, ns.n_features,
                                     _row_group_rows(ns.n_features, ns.row_group_rows)) if old else None
            try:
                for sid, shard in sorted(old.items(), key=lambda item: item[1].name):
                    lo, hi = np.searchsorted(sorted_sid, [sid, sid + 1])
                    at = by_shard[lo:hi]
                    ids, rows_at = key_id[at], row_of[at]
                    first = np.ones(len(at), dtype=bool)  # a key twice in one shard: its first row (index order)
                    first[1:] = ids[1:] != ids[:-1]
                    wanted = first & ~kept[ids]
                    keep = np.zeros(int(shard.rg_starts[-1]), dtype=bool)
                    keep[rows_at[wanted]] = True
                    try:
                        _copy_rows(shard, keep, writer)
                        copied = int(shard.rg_starts[-1])
                    except FileNotFoundError:  # cannot happen while we hold the compaction lock; be safe anyway
                        raise CacheError(f"{shard.path} vanished during compaction; run compact again.") from None
                    except _Unreadable as exc:  # the shard's fault; a failed write is not (below)
                        with ns._lock:
                            ns._mark_bad(shard.name, exc.__cause__)
                        found_bad.add(shard.name)
                        copied = exc.rows_copied
                    except PermissionError as exc:  # not corrupt: kept, whatever of it was copied
                        with ns._lock:
                            ns._deny(shard.name, exc)
                        found_denied.add(shard.name)
                        copied = getattr(exc, "rows_copied", 0)
                    kept[ids[wanted & (rows_at < copied)]] = True
                    if copied == int(shard.rg_starts[-1]):
                        duplicates += int(len(at) - np.count_nonzero(wanted))
                rows = 0
                if writer is not None:
                    writer.close()
                    rows = writer.n_rows
                    file_to_disk(tmp.path)
            except (OSError, pa.ArrowException) as exc:  # the merged shard cannot be written: a full disk
                if writer is not None:
                    writer.abort()
                raise CacheError(
                    f"compacting {ns.dir} could not write the merged shard ({type(exc).__name__}: {exc}); no "
                    "shard was removed and the cache is as it was. Free some space on its disk (the merged shard "
                    f"needs up to {bytes_before:,} bytes) and run compact again."
                ) from None
            with ns._lock:  # the swap, and the index brought up to date
                bad = sorted(n for n in found_bad if os.path.exists(os.path.join(ns.dir, n)))
                dead = [s.name for s in old.values() if s.name not in found_bad and s.name not in found_denied] + bad
                with _flock(os.path.join(ns.dir, _LOCK_FILE), exclusive=True, unlocked=unlocked):
                    swap = os.path.join(ns.dir, SWAP_FILE)
                    if rows:
                        # Named with the time of the oldest shard it replaces, not now: a differing copy of a key
                        # written while the merge ran must still count as newer than the copy kept here (the copy
                        # of the oldest shard), in this process, in those that listed the old shards and in new ones.
                        name = _shard_name(min(_shard_time(s.name) for s in old.values()))
                        # noted before the merged shard goes in place: killed from then on (SIGKILL, a power loss),
                        # readers that find it leave the old shards out, and the next compaction removes them
                        _write_atomic(swap, json.dumps({"merged": name, "replaces": dead}) + "\n")
                        _fsync_dir(ns.dir)
                    try:
                        if rows:
                            tmp.commit(name=name)
                        _remove_all(ns.dir, dead)
                    except BaseException as exc:
                        # nothing removed (_remove_all put back what it had renamed): take the merged shard back (no
                        # reader has listed it: the lock is held), so the cache is as it was, not half compacted (its
                        # rows twice); where an old shard is not back, the merged shard and the note stay
                        back = all(os.path.exists(os.path.join(ns.dir, n)) for n in dead)
                        if rows and back and (not isinstance(exc, _NotRemoved) or exc.put_back):
                            with contextlib.suppress(FileNotFoundError):
                                locks.retried(os.unlink, os.path.join(ns.dir, name))
                        if not (rows and os.path.exists(os.path.join(ns.dir, name))):
                            with contextlib.suppress(OSError):
                                locks.retried(os.unlink, swap)
                        if not isinstance(exc, _NotRemoved):
                            raise
                        raise CacheError(
                            f"compacting {ns.dir} could not remove the shards it merged: {exc.why()}. No shard was "
                            f"removed and every cached row is kept; {exc.what_to_do('compact')}"
                        ) from None
                    if rows:
                        with contextlib.suppress(FileNotFoundError):
                            locks.retried(os.unlink, swap)
                ns._forget([sid for sid in old if sid in ns.shards])
                ns.bad.difference_update(bad)
                ns.refresh()
                return CompactResult(
                    **result, shards_after=len(ns.shards), rows=rows, duplicates_dropped=duplicates,
                    corrupt_removed=bad, bytes_after=ns._bytes([s.name for s in ns.shards.values()]),
                )


def _finish_swap(ns) -> None:
    """End the swap of a compaction killed in it (compacting.json is there; called holding .compact.lock): where its
    merged shard is in place the shards it replaces are removed, and the note goes either way."""
    swap = os.path.join(ns.dir, SWAP_FILE)
    if not os.path.exists(swap):
        return
    with _flock(os.path.join(ns.dir, _LOCK_FILE), exclusive=True):
        try:
            names = set(os.listdir(ns.dir))
        except FileNotFoundError:
            return
        for name in ns._replaced(names):
            with contextlib.suppress(FileNotFoundError):
                locks.retried(os.unlink, os.path.join(ns.dir, name))
        _fsync_dir(ns.dir)
        with contextlib.suppress(FileNotFoundError):
            locks.retried(os.unlink, swap)
    ns.refresh()


def _copy_rows(shard, keep: np.ndarray, writer: _RowGroupWriter) -> None:
    """Copy the kept rows of a shard, one row group at a time (checksums verified, so copied rows are sound).
    A failure to read the shard raises :class:`_Unreadable` (or :class:`PermissionError`), its ``rows_copied``
    the shard's rows before the row group that failed (those were copied); a failure to write, what the writer
    raised."""
    try:
        pf = pq.ParquetFile(shard.path, metadata=shard.metadata, page_checksum_verification=True)
    except FileNotFoundError:
        raise
    except PermissionError as exc:
        exc.rows_copied = 0
        raise
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise _Unreadable(0) from exc
    with pf:
        for g in range(shard.metadata.num_row_groups):
            mask = keep[shard.rg_starts[g]: shard.rg_starts[g + 1]]
            if mask.any():
                try:
                    rows = pf.read_row_group(g, use_threads=False).filter(pa.array(mask))
                except FileNotFoundError:
                    raise
                except PermissionError as exc:
                    exc.rows_copied = int(shard.rg_starts[g])
                    raise
                except (OSError, pa.ArrowException, ValueError) as exc:
                    raise _Unreadable(int(shard.rg_starts[g])) from exc
                writer.write(rows)

def _remove_stale_temp_files(ns) -> int:
    removed = 0
    now = time.time()
    for name in ns._temp_files():
        path = os.path.join(ns.dir, name)
        m = _TMP_RE.match(name)
        try:
            old = now - os.path.getmtime(path) > _STALE_TMP_SECONDS
        except FileNotFoundError:
            continue
        # this host's name, no process of its pid here, and no writer's lock on it (another container of this
        # host's name: its pids are not this one's)
        dead_here = (m is not None and m["host"] == _HOST and not _pid_alive(int(m["pid"]))
                     and not being_written(path))
        if old or dead_here:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed += 1
    return removed
