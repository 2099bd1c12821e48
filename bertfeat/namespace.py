"""One recipe's namespace of the cache: its shards and the in-memory index over them (sorted keys -> shard, row),
the lookups and stores it answers, the shards it sets aside (unreadable, or not this user's to read), the token
counts noted in its ``recipe.json``, its info and its clearing.

Each process keeps, per namespace, a sorted array of keys with the (shard, row) holding each one; it reads only
the key column of a shard it has not seen, and a lookup reads only the row groups holding the keys it found.
:mod:`bertfeat.cache` holds the cache directory (:func:`~bertfeat.cache.open_cache`, :class:`~bertfeat.cache.Cache`)
and finds a namespace by its recipe's fingerprint; a shard file's format and plumbing are :mod:`bertfeat.shards`,
merging a namespace's shards :mod:`bertfeat.compaction`. See docs/cache.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import threading
import warnings
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat import locks
from bertfeat.exceptions import CacheError, CacheWarning, notice, user_stacklevel
from bertfeat.flush import atomic_write_bytes, file_to_disk
from bertfeat.fork_safe import ForkSafeLock
from bertfeat.shards import (
    _WRITE_OPTIONS, KEY_BYTES, _flock, _keys_from_column, _NotRemoved, _remove_all, _row_group_rows, _shard_table,
    _TempShard, _fsync_dir, _vectors_from_column,
)

if TYPE_CHECKING:  # compaction imports this module's names: imported when compact is called
    from bertfeat.compaction import CompactResult


RECIPE_FILE = "recipe.json"
# token counts a run with the tokenizer keeps in recipe.json for runs without it (Cache.note_tokens)
_NOTED = ("n_special", "prefix_tokens")
_LOCK_FILE = ".lock"
_COMPACT_LOCK_FILE = ".compact.lock"
# A clear notes itself here before it touches a file, and removes it last: a clear killed half way (SIGKILL, a power
# loss) would else leave the namespace half cleared, answering for some of its texts and not others. While it is
# there every reader sees no shard, and the next store, compact, info or clear ends the removal (_finish_clear).
CLEARING_FILE = "clearing.json"
# A compaction notes its swap here (the merged shard, the shards it replaces) before the merged shard goes in place,
# and removes it once they are gone: a compaction killed in its swap would else leave the merged shard beside the
# old ones, every row twice. Where the merged shard is in place, readers leave the shards it replaces out
# (_replaced), and the next compact removes them.
SWAP_FILE = "compacting.json"
_SHARD_RE = re.compile(r"^shard-\d{20}-[0-9a-f]{12}\.parquet$")
_TMP_RE = re.compile(r"^\.tmp-(?P<host>.*)-(?P<pid>\d+)-[0-9a-f]{12}\.parquet$")
# what a writer killed while writing recipe.json, clearing.json or compacting.json leaves (_write_atomic; the last
# name, an older bertfeat's): no host in its name, so only its age tells
_RECIPE_TMP_RE = re.compile(
    r"^(\.(recipe|clearing|compacting)\.json\.tmp-\d+-[0-9a-f]{8}|recipe\.json\.\d+-[0-9a-f]{8}\.tmp)$")
# A temporary shard older than this is a dead writer's leftover even when its owner cannot be checked (other host).
_STALE_TMP_SECONDS = 3600
# Rows of keys read at a time when a shard is indexed (1 MiB of keys).
_KEY_BATCH_ROWS = 65536


def _write_atomic(path: str, text: str) -> None:
    """Write the cache's small text file ``path`` (its marker, a ``recipe.json``) whole or not at all, flushed."""
    atomic_write_bytes(path, text.encode("utf-8"))


@dataclass
class NamespaceInfo:
    """What one recipe's namespace holds. ``rows`` counts distinct texts; ``stored_rows`` includes duplicates."""

    fingerprint: str
    recipe: dict | None
    n_features: int | None
    rows: int
    stored_rows: int
    shards: int
    bytes: int
    corrupt: list[str] = field(default_factory=list)
    temp_files: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Shard:
    name: str
    path: str
    metadata: object  # pyarrow FileMetaData, kept so a lookup does not parse the footer again
    rg_starts: np.ndarray  # first row of each row group, plus the row count at the end


class _Namespace:
    """One recipe's shards and the in-memory index over them: sorted keys -> (shard id, row).

    The index keeps every stored copy of a key (sorted stably, older shards first), so dropping a shard that was
    compacted away or found corrupt never hides a copy held by another shard.
    """

    def __init__(self, root: str, fingerprint: str, n_features: int | None):
        self.root = root
        self.fingerprint = fingerprint
        self.dir = os.path.join(root, fingerprint)
        self.n_features = n_features
        self.row_group_rows: int | None = None
        self.bad: set[str] = set()
        self.denied: set[str] = set()  # shards this user may not read: not corrupt, so never deleted
        self._warned: set[str] = set()
        self._held: dict[int, list[str]] = {}  # per thread, the notices of a compact or info in it (_said_after)
        self._noted: dict | None = None  # recipe.json's token counts (tokens_noted), once read or written
        self._next_id = 0
        self._empty_index()
        self._lock = ForkSafeLock(reentrant=True)

    def _empty_index(self) -> None:
        """No shard indexed: the next refresh reads every shard's keys."""
        self.shards: dict[int, _Shard] = {}
        self.ids: dict[str, int] = {}
        self.keys = np.empty(0, dtype=f"S{KEY_BYTES}")
        self.shard_of = np.empty(0, dtype=np.int32)
        self.row_of = np.empty(0, dtype=np.int32)

    # -- index ------------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Bring the index up to date with the shards on disk: read new shards' keys, forget vanished ones."""
        with self._lock:
            # A shard listed but gone when opened was compacted (or cleared) meanwhile: list again, or the rows now
            # in the merged shard would count as misses and be recomputed.
            for _ in range(4):
                names = self._list_shards()
                gone = [name for name in self.ids if name not in names]
                if gone:
                    self._forget([self.ids[name] for name in gone])
                new = [name for name in sorted(names)
                       if name not in self.ids and name not in self.bad and name not in self.denied]
                opened = [self._open(name) for name in new]
                settled = all(shard is not None or name in self.bad or name in self.denied
                              for name, shard in zip(new, opened))
                opened = [shard for shard in opened if shard is not None]
                with self._changing_index():
                    self._register(opened)  # empties the list, so each shard's keys are freed once copied
                if settled:
                    break

    def _list_shards(self) -> set[str]:
        # The shared lock only spans the listing, so that compaction's swap (new shard in, old ones out) is seen
        # whole; compaction holds the exclusive lock for a rename and a few unlinks.
        if not os.path.isdir(self.dir):
            return set()
        with _flock(os.path.join(self.dir, _LOCK_FILE), exclusive=False):
            try:
                listed = os.listdir(self.dir)
            except FileNotFoundError:
                return set()
            if CLEARING_FILE in listed:  # a clear stopped half way: cleared, for every reader
                return set()
            names = {name for name in listed if _SHARD_RE.match(name)}
            if SWAP_FILE in listed:
                names -= self._replaced(names)
            return names

    def _replaced(self, names) -> set[str]:
        """The shards a compaction killed in its swap replaced, where its merged shard is among ``names`` (in place):
        their rows are all in it. None where it is not (killed before the merged shard went in place: the old shards
        hold every row), or compacting.json cannot be read."""
        try:
            with open(os.path.join(self.dir, SWAP_FILE), encoding="utf-8") as f:
                swap = json.load(f)
            merged, replaced = swap["merged"], swap["replaces"]
        except (OSError, ValueError, TypeError, KeyError):
            return set()
        if not isinstance(merged, str) or merged not in names or not isinstance(replaced, list):
            return set()
        return {name for name in replaced if isinstance(name, str) and name != merged}

    def _finish_clear(self) -> None:
        """End the removal of a clear stopped half way (clearing.json is there): its shards, recipe.json and the
        note itself go; the temporary files (the dead clear's renamed files among them) are a compaction's to remove,
        as a live writer's may be among them. Called with the namespace's thread lock held. Where a file cannot be
        removed (a read-only cache) the note stays, and readers keep seeing the namespace cleared."""
        if not os.path.exists(os.path.join(self.dir, CLEARING_FILE)):
            return
        with _flock(os.path.join(self.dir, _LOCK_FILE), exclusive=True):
            try:
                listed = os.listdir(self.dir)
            except FileNotFoundError:
                return
            if CLEARING_FILE not in listed:
                return
            for name in listed:
                if _SHARD_RE.match(name) or name in (RECIPE_FILE, SWAP_FILE) or _RECIPE_TMP_RE.match(name):
                    with contextlib.suppress(FileNotFoundError):
                        locks.retried(os.unlink, os.path.join(self.dir, name))
            _fsync_dir(self.dir)  # the files are gone on disk before the note that says to remove them
            with contextlib.suppress(FileNotFoundError):
                locks.retried(os.unlink, os.path.join(self.dir, CLEARING_FILE))
        self._forget(list(self.shards))
        self.bad.clear()
        self._noted = None

    def _open(self, name: str):
        """Read a shard's footer and key column: returns (_Shard, keys), or None if it is gone or unreadable."""
        path = os.path.join(self.dir, name)
        try:
            with pq.ParquetFile(path, page_checksum_verification=True) as pf:
                self._check_schema(pf.schema_arrow)
                metadata = pf.metadata
                # read a batch at a time into the one array: the whole column read at once was held by arrow
                # beside its copy (a 1M-row shard: 16 MB twice, and arrow's allocator kept more)
                keys = np.empty(metadata.num_rows, dtype=f"S{KEY_BYTES}")
                got = 0
                for batch in pf.iter_batches(batch_size=_KEY_BATCH_ROWS, columns=["key"], use_threads=False):
                    some = _keys_from_column(batch.column(0))
                    if got + len(some) <= len(keys):
                        keys[got:got + len(some)] = some
                    got += len(some)
            if got != metadata.num_rows:
                raise ValueError(f"{got} keys for {metadata.num_rows} rows")
        except FileNotFoundError:  # compacted or cleared since the listing
            return None
        except PermissionError as exc:
            self._deny(name, exc)
            return None
        except (OSError, pa.ArrowException, ValueError) as exc:
            self._mark_bad(name, exc)
            return None
        counts = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
        rg_starts = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        return _Shard(name, path, metadata, rg_starts), keys

    def _check_schema(self, schema: pa.Schema) -> None:
        meta = schema.metadata or {}
        fingerprint = meta.get(b"bertfeat.fingerprint", b"").decode()
        if fingerprint != self.fingerprint:
            raise ValueError(f"it belongs to recipe {fingerprint or '(none)'!r}, not to {self.fingerprint!r}")
        names = schema.names
        if names != ["key", "n_tokens", "vector"]:
            raise ValueError(f"unexpected columns {names}")
        vector = schema.field("vector").type
        if (schema.field("key").type != pa.binary(KEY_BYTES) or schema.field("n_tokens").type != pa.int64()
                or not pa.types.is_fixed_size_list(vector) or vector.value_type != pa.float32()):
            raise ValueError("unexpected column types: " + ", ".join(f"{f.name} {f.type}" for f in schema))
        if self.n_features is None:
            self.n_features = vector.list_size
        elif vector.list_size != self.n_features:
            raise ValueError(f"vectors of {vector.list_size} floats where the recipe has {self.n_features}")

    def _register(self, opened: list) -> None:
        """Add shards to the index in one merge (one pass over the index however many shards are new).

        ``opened`` is emptied as its keys are copied. The new keys are gathered into one array, sorted once and,
        into an empty index (a process's first lookup), taken as the index itself: each shard's key column, an
        int64 permutation and a sorted copy are the only temporaries: a 1M-row index peaked at 48 MB of numpy
        allocations here where gathering lists and inserting into the empty index peaked at 96 MB (docs/cache.md).
        """
        if not opened:
            return
        newest = max((s.name for s in self.shards.values()), default="")
        named_older = any(shard.name < newest for shard, _ in opened)
        total = sum(len(keys) for _, keys in opened)
        keys = np.empty(total, dtype=f"S{KEY_BYTES}")
        sids = np.empty(total, dtype=np.int32)
        rows = np.empty(total, dtype=np.int32)
        at = 0
        opened.reverse()  # popped in the order given
        while opened:
            shard, shard_keys = opened.pop()
            sid = self._next_id
            self._next_id += 1
            self.shards[sid] = shard
            self.ids[shard.name] = sid
            n = len(shard_keys)
            keys[at:at + n] = shard_keys
            sids[at:at + n] = sid
            rows[at:at + n] = np.arange(n, dtype=np.int32)
            at += n
            del shard_keys
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        sids, rows = sids[order], rows[order]
        del order
        if not len(self.keys):
            self.keys, self.shard_of, self.row_of = keys, sids, rows
        else:
            # side="right" puts new copies after existing ones, so older shards answer first.
            at = np.searchsorted(self.keys, keys, side="right")
            self.keys = np.insert(self.keys, at, keys)
            self.shard_of = np.insert(self.shard_of, at, sids)
            self.row_of = np.insert(self.row_of, at, rows)
        if named_older:
            # A shard named older landed after a newer one was indexed (its writer paused, or another host's clock
            # is behind): order the new keys' copies by shard name again, as a process listing them together would.
            self._order_copies_by_name(keys)

    def _order_copies_by_name(self, keys: np.ndarray) -> None:
        """Put the copies of each of ``keys`` (sorted) in the order of their shards' names. Only keys held more
        than once move, so the cost is that of the new keys, not of the index (a cache on hosts whose clocks differ
        meets this at most refreshes, and sorting the whole index each time made every lookup cost O(N log N))."""
        lo = np.searchsorted(self.keys, keys, side="left")
        hi = np.searchsorted(self.keys, keys, side="right")
        several = hi - lo > 1
        lo, first = np.unique(lo[several], return_index=True)  # a key in two new shards: one range
        hi = hi[several][first]
        if not len(lo):
            return
        counts = hi - lo
        at = np.repeat(lo, counts) + np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        rank = np.zeros(self._next_id, dtype=np.int64)
        rank[sorted(self.shards, key=lambda sid: self.shards[sid].name)] = np.arange(len(self.shards))
        # the ranges are ascending and each holds one key, so sorting by key first leaves every range in place
        order = np.lexsort((self.row_of[at], rank[self.shard_of[at]], self.keys[at]))
        self.shard_of[at] = self.shard_of[at][order]
        self.row_of[at] = self.row_of[at][order]

    def _forget(self, sids) -> None:
        sids = list(sids)
        with self._changing_index():
            keep = ~np.isin(self.shard_of, sids)
            self.keys, self.shard_of, self.row_of = self.keys[keep], self.shard_of[keep], self.row_of[keep]
            for sid in sids:
                shard = self.shards.pop(sid)
                self.ids.pop(shard.name, None)

    @contextlib.contextmanager
    def _changing_index(self):
        """A change of the index that stops half-way (a MemoryError growing it, Ctrl-C in a notebook) drops the index
        whole, so that the next refresh reads every shard again: kept, it would hold a shard marked indexed without
        its keys (its rows missed, recomputed and stored again, for the rest of the process) or copies of a key out
        of their shards' order."""
        try:
            yield
        except BaseException:
            self._empty_index()
            raise

    @contextlib.contextmanager
    def _said_after(self):
        """Maintenance (compact, info) that reads every shard says the shards it sets aside when it is done, and
        never stops on its own notice: where warnings are errors (``python -W error``) a notice goes to the
        ``bertfeat`` logger instead, so compact still removes the corrupt shard it was called to remove (and lists
        it in its result, as info does). The caller's warnings filters are left as they are.

        A shard whose notice was only logged is not set aside for the process: the next lookup that meets it warns,
        and where warnings are errors stops, as it would have without the listing (docs/cache.md)."""
        if threading.get_ident() in self._held:  # within another: said when that one is done
            yield
            return
        held = self._held[threading.get_ident()] = []
        try:
            yield
        finally:
            del self._held[threading.get_ident()]
            for name, into, message in held:
                if not notice(message, CacheWarning):
                    with self._lock:
                        self._warned.discard(name)
                        into.discard(name)

    def _mark_bad(self, name: str, exc: BaseException) -> None:
        self._set_aside(name, self.bad,
                        f"bertfeat cache: ignoring unreadable shard {os.path.join(self.dir, name)} "
                        f"({type(exc).__name__}: {exc}); its texts will be recomputed. `bertfeat cache compact "
                        f"{shlex.quote(self.root)}` removes it.")

    def _deny(self, name: str, exc: BaseException) -> None:
        self._set_aside(name, self.denied,
                        f"bertfeat cache: cannot read shard {os.path.join(self.dir, name)} ({type(exc).__name__}: "
                        f"{exc}); its texts will be recomputed. It is not corrupt, and compact leaves it alone: give "
                        "this user read access to the cache's files.")

    def _set_aside(self, name: str, into: set, message: str) -> None:
        """Stop reading shard ``name`` (its rows leave the index; it joins ``into``), saying so once per process.

        The warning comes first: where warnings are errors (``-W error``) it raises, and the shard stays in the
        index, so every later call says it again instead of going on silently without it."""
        if name not in self._warned:
            held = self._held.get(threading.get_ident())
            if held is not None:
                held.append((name, into, message))
            else:
                warnings.warn(message, CacheWarning, stacklevel=user_stacklevel())
            self._warned.add(name)
        into.add(name)
        if name in self.ids:
            self._forget([self.ids[name]])

    # -- lookup and store ---------------------------------------------------------------------------------------

    def lookup(self, q: np.ndarray):
        n_features = self.n_features
        found = np.zeros(len(q), dtype=bool)
        vectors = np.empty((len(q), n_features), dtype=np.float32)
        n_tokens = np.zeros(len(q), dtype=np.int64)
        with self._lock:
            todo = np.arange(len(q))
            # A shard can vanish (compaction) or prove corrupt between the index and the read; the keys it held
            # are then looked up again, in the shards that remain.
            for _ in range(4):
                self.refresh()
                if not len(todo) or not len(self.keys):
                    break
                # A snapshot: dropping a failed shard below replaces the index arrays.
                keys, shard_of, row_of, shards = self.keys, self.shard_of, self.row_of, dict(self.shards)
                pos = np.searchsorted(keys, q[todo])
                hit = pos < len(keys)
                hit[hit] = keys[pos[hit]] == q[todo[hit]]
                todo, pos = todo[hit], pos[hit]
                sids = shard_of[pos]
                failed = []
                for sid in np.unique(sids):
                    sel = sids == sid
                    shard = shards[int(sid)]
                    try:
                        vecs, toks = self._read_rows(shard, row_of[pos[sel]])
                    except FileNotFoundError:
                        self._forget([int(sid)])
                        failed.append(todo[sel])
                    except PermissionError as exc:
                        self._deny(shard.name, exc)
                        failed.append(todo[sel])
                    except (OSError, pa.ArrowException, ValueError) as exc:
                        self._mark_bad(shard.name, exc)
                        failed.append(todo[sel])
                    else:
                        vectors[todo[sel]] = vecs
                        n_tokens[todo[sel]] = toks
                        found[todo[sel]] = True
                if not failed:
                    break
                todo = np.concatenate(failed)
        return found, vectors[found], n_tokens[found]

    def _read_rows(self, shard: _Shard, rows: np.ndarray):
        """Read the vectors and token counts of ``rows``: only the row groups that hold them are read."""
        groups_of_rows = np.searchsorted(shard.rg_starts, rows, side="right") - 1
        groups = np.unique(groups_of_rows)
        with pq.ParquetFile(shard.path, metadata=shard.metadata, page_checksum_verification=True) as pf:
            table = pf.read_row_groups(groups.tolist(), columns=["n_tokens", "vector"], use_threads=False)
        sizes = shard.rg_starts[groups + 1] - shard.rg_starts[groups]
        first_in_table = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        local = first_in_table[np.searchsorted(groups, groups_of_rows)] + rows - shard.rg_starts[groups_of_rows]
        vectors = _vectors_from_column(table.column("vector"), self.n_features)
        return vectors[local], table.column("n_tokens").to_numpy()[local]

    def store(self, q: np.ndarray, vectors: np.ndarray, n_tokens: np.ndarray, recipe) -> int:
        with self._lock:
            self.refresh()
            _, first = np.unique(q, return_index=True)
            first.sort()
            pos = np.searchsorted(self.keys, q[first])
            stored = pos < len(self.keys)
            stored[stored] = self.keys[pos[stored]] == q[first][stored]
            new = first[~stored]
            if not len(new):
                return 0
            table = _shard_table(q[new], vectors[new], n_tokens[new], self.fingerprint)
            try:
                self._write(table, recipe)
            except FileNotFoundError:  # the namespace was cleared while writing: recreate it, once
                self._write(table, recipe)
            # The next refresh indexes the new shard (reading its key column), like any other writer's.
            return len(new)

    def _write(self, table: pa.Table, recipe) -> str:
        os.makedirs(self.dir, exist_ok=True)
        self._finish_clear()  # a shard written before would be removed with the cleared ones
        recipe_path = os.path.join(self.dir, RECIPE_FILE)
        # written where there is none, or none that can be read (empty or cut short: renamed unflushed by an older
        # bertfeat before a power cut), which would else stay so: info would say it is missing for good, compact
        # take the width from a shard, and no token counts be noted in it
        if self._read_recipe() is None:
            # under the lock note_tokens writes it with, looking again: a writer that noted token counts in it
            # meanwhile would otherwise lose them to this plain copy
            with _flock(os.path.join(self.dir, _LOCK_FILE), exclusive=True):
                if self._read_recipe() is None:
                    d = recipe.to_dict()
                    d["n_features"] = recipe.n_features
                    _write_atomic(recipe_path, json.dumps(d, indent=2, sort_keys=True) + "\n")
        with _TempShard(self.dir) as tmp:
            pq.write_table(table, tmp.path, row_group_size=_row_group_rows(self.n_features, self.row_group_rows),
                           **_WRITE_OPTIONS)
            file_to_disk(tmp.path)
            return tmp.commit()

    # -- maintenance --------------------------------------------------------------------------------------------

    def _temp_files(self) -> list[str]:
        try:
            return [n for n in os.listdir(self.dir) if n.startswith(".tmp-") or _RECIPE_TMP_RE.match(n)]
        except FileNotFoundError:
            return []

    def tokens_noted(self) -> dict:
        with self._lock:
            if self._noted is None:
                recipe = self._read_recipe()
                if isinstance(recipe, dict) and recipe.get("fingerprint") == self.fingerprint:
                    counts = {k: recipe.get(k) for k in _NOTED}
                    if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
                        self._noted = counts
            return dict(self._noted or {})

    def note_tokens(self, recipe, counts: dict) -> None:
        counts = {k: int(counts[k]) for k in _NOTED}
        with self._lock:
            if self.tokens_noted() == counts:
                return
            if not os.path.isdir(self.dir):
                return  # no namespace yet (nothing stored)
            path = os.path.join(self.dir, RECIPE_FILE)
            # read and rewritten under the namespace's lock, as a first store writes it: no other writer's copy
            # lands between the two
            with _flock(os.path.join(self.dir, _LOCK_FILE), exclusive=True):
                old = self._read_recipe()
                if not isinstance(old, dict) or old.get("fingerprint") != self.fingerprint:
                    return  # no recipe.json yet, or one that is not this namespace's
                with contextlib.suppress(OSError):  # a read-only cache: another process learns them again
                    _write_atomic(path, json.dumps({**old, **counts}, indent=2, sort_keys=True) + "\n")
            self._noted = counts  # true in this process either way, and not written again for every call

    def _read_recipe(self) -> dict | None:
        """``recipe.json`` as written; None where there is none, or it cannot be read or is no JSON object."""
        try:
            with open(os.path.join(self.dir, RECIPE_FILE), encoding="utf-8") as f:
                recipe = json.load(f)
        except (OSError, ValueError):
            return None
        return recipe if isinstance(recipe, dict) else None

    def _present_bad(self) -> list[str]:
        return sorted(n for n in self.bad if os.path.exists(os.path.join(self.dir, n)))

    def _bytes(self, names) -> int:
        total = 0
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.path.getsize(os.path.join(self.dir, name))
        return total

    def _learn_width(self, recipe: dict | None) -> None:
        # Without it the first shard listed would set the width, and a damaged one would make every sound shard
        # look corrupt (compact would then delete them all). recipe.json is trusted only if it names this namespace.
        if (self.n_features is None and isinstance(recipe, dict) and recipe.get("fingerprint") == self.fingerprint
                and isinstance(recipe.get("n_features"), int) and recipe["n_features"] > 0):
            self.n_features = recipe["n_features"]

    def info(self) -> NamespaceInfo:
        with self._lock, contextlib.suppress(OSError):  # a read-only cache: seen cleared all the same
            self._finish_clear()
        recipe = self._read_recipe()
        self._learn_width(recipe)
        with self._said_after(), self._lock:
            self.refresh()
            distinct = int(np.count_nonzero(self.keys[1:] != self.keys[:-1])) + 1 if len(self.keys) else 0
            names = [s.name for s in self.shards.values()]
            return NamespaceInfo(
                fingerprint=self.fingerprint, recipe=recipe, n_features=self.n_features, rows=distinct,
                stored_rows=len(self.keys), shards=len(names), bytes=self._bytes(names + self._present_bad()),
                corrupt=self._present_bad(), temp_files=len(self._temp_files()),
            )

    def compact(self, unlocked=None) -> "CompactResult":
        """Merge this namespace's shards into one (:func:`bertfeat.compaction.compact`); ``unlocked``: said where the
        filesystem takes no lock (:func:`bertfeat.cache._unlocked_once`)."""
        from bertfeat.compaction import compact

        return compact(self, unlocked)

    def clear(self, unlocked=None) -> None:
        if not os.path.isdir(self.dir):
            return
        with _flock(os.path.join(self.dir, _COMPACT_LOCK_FILE), exclusive=True, waiting=self._waiting("clear"),
                    unlocked=unlocked), self._lock:
            with _flock(os.path.join(self.dir, _LOCK_FILE), exclusive=True, unlocked=unlocked):
                # all or none: a cache half cleared would answer for some texts of the recipe and not others. Stopped
                # by an exception, the files renamed aside are put back (_remove_all) and the note removed; killed
                # (SIGKILL, a power loss), the note stays, and the namespace reads as cleared (CLEARING_FILE).
                marker = os.path.join(self.dir, CLEARING_FILE)
                noted = not os.path.exists(marker)  # this clear's own note (else a stopped clear's, ended here)
                if noted:
                    _write_atomic(marker, json.dumps({"clearing": self.fingerprint}) + "\n")
                    _fsync_dir(self.dir)
                try:
                    _remove_all(self.dir, [name for name in os.listdir(self.dir)
                                           if _SHARD_RE.match(name) or name.startswith(".tmp-")
                                           or name in (RECIPE_FILE, SWAP_FILE) or _RECIPE_TMP_RE.match(name)])
                except _NotRemoved as exc:
                    if noted:
                        self._unnote(marker)
                    raise CacheError(
                        f"clearing {self.dir} could not remove its files: {exc.why()}. Nothing was removed; "
                        f"{exc.what_to_do('clear')}"
                    ) from None
                except BaseException:
                    if noted:
                        self._unnote(marker)
                    raise
                with contextlib.suppress(FileNotFoundError):
                    locks.retried(os.unlink, marker)
                # Removed while still held: a process waiting on them then finds them gone and locks afresh
                # (_flock). Removed after, a waiter would hold a lock file nobody else can see. Windows cannot
                # remove a file held open: there they go after (below), unless a waiter holds one open.
                if locks.removable_while_held():
                    self._remove_lock_files()
            self._forget(list(self.shards))
            self.bad.clear()
            self._noted = None
        if not locks.removable_while_held():
            self._remove_lock_files()
        with contextlib.suppress(OSError):  # left in place if something else was put there
            os.rmdir(self.dir)

    @staticmethod
    def _unnote(marker: str) -> None:
        """Remove a clear's note where the clear put every file back: left, it would hide them all."""
        with contextlib.suppress(FileNotFoundError):
            locks.retried(os.unlink, marker)

    def _waiting(self, what: str):
        """What a compaction or a clear says where another process holds ``.compact.lock`` (``_flock``'s
        ``waiting``): who, and that this one waits for it, rather than seem hung for the merge's length."""
        def say(holder: str) -> None:
            notice(f"bertfeat cache: {holder} is compacting or clearing {self.dir} (it holds {_COMPACT_LOCK_FILE}); "
                   f"this {what} waits for it to end.", CacheWarning)
        return say

    def _remove_lock_files(self) -> None:
        for name in (_LOCK_FILE, _COMPACT_LOCK_FILE):
            with contextlib.suppress(FileNotFoundError if locks.removable_while_held() else OSError):
                os.unlink(os.path.join(self.dir, name))
