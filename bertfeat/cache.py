"""The persistent embedding cache: append-only parquet shards per recipe, found through a compact key index.

Layout of a cache directory::

    DIR/bertfeat-cache.json                      marks DIR as a bertfeat cache (and its format version)
    DIR/<fingerprint>/recipe.json                the recipe of this namespace, in human terms
    DIR/<fingerprint>/shard-<time>-<id>.parquet  immutable shards: key (16 bytes), n_tokens, vector (float32[F])
    DIR/<fingerprint>/.tmp-<host>-<pid>-<id>.parquet   a shard being written (never read)
    DIR/<fingerprint>/.lock, .compact.lock       advisory lock files (flock)

A namespace is a :meth:`Recipe.fingerprint`, so rows of one recipe can never answer for another. A text's key is
:func:`bertfeat.encode.text_key`. Writers never modify a file: each ``store`` writes a new shard to a temporary name
and renames it into place, so readers see whole shards or nothing, and several processes can share one cache.
Each process keeps, per namespace, a sorted array of keys with the (shard, row) holding each one; it reads only
the key column of a shard it has not seen, and a lookup reads only the row groups holding the keys it found.
A shard that cannot be read is reported with a :class:`~bertfeat.exceptions.CacheWarning` naming the file and
ignored, so its texts are recomputed; ``compact`` removes it. See docs/cache.md.

This module is the cache directory: :func:`open_cache`, :class:`Cache` and the directory's own checks (its marker
and format, a writable or read-only root). One recipe's namespace (its shards' index, lookups, stores, the shards
it sets aside, the token counts noted, info, clear) is :mod:`bertfeat.namespace`; a shard file's format and
plumbing :mod:`bertfeat.shards`; merging a namespace's shards :mod:`bertfeat.compaction`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shlex
import warnings
import weakref
from typing import TYPE_CHECKING

import numpy as np

from bertfeat.exceptions import CacheError, CacheWarning, NoLockWarning, notice, user_stacklevel
from bertfeat.fork_safe import ForkSafeLock
from bertfeat.links import link_docs
from bertfeat.namespace import (  # noqa: F401  (a namespace's names, this module's before the split)
    _COMPACT_LOCK_FILE, _KEY_BATCH_ROWS, _LOCK_FILE, _NOTED, _RECIPE_TMP_RE, _SHARD_RE, _STALE_TMP_SECONDS, _TMP_RE,
    RECIPE_FILE, NamespaceInfo, _Namespace, _Shard, _write_atomic,
)
from bertfeat.recent import keep_recent
from bertfeat.shards import (  # noqa: F401  (the cache's names for its shard format since before the split)
    _HOST, _WRITE_OPTIONS, CACHE_FORMAT, KEY_BYTES, _flock, _fsync_dir, _key_array, _keys_from_column,
    _NotRemoved, _pid_alive, _remove_all, _row_group_rows, _RowGroupWriter, _schema, _shard_table, _shard_time,
    _TempShard, _Unreadable, _vectors_from_column,
)
from bertfeat.sources import absolute, is_url, locale_refusal
from bertfeat.spelling import PICKLED_NOTE, SET_PARAMS_ASIDE

__doc__ = link_docs(__doc__)  # its docs as addresses: an installed bertfeat has no docs/ folder

if TYPE_CHECKING:  # compaction is imported when compact is called
    from bertfeat.compaction import CompactResult

MARKER = "bertfeat-cache.json"
_NAMESPACE_RE = re.compile(r"^[0-9a-f]{32}$")


def open_cache(path, *, create: bool = True) -> "Cache":
    """The cache in directory ``path``, shared by every caller in this process (the :data:`CACHES_KEPT` used last
    stay open, and any one a caller holds).

    With ``create=True`` (what ``BertEmbedder(cache_dir=...)`` uses) a missing directory is created, parents
    included; if that is impossible, for example because a pickled pipeline names a path of another machine, a
    :class:`~bertfeat.exceptions.CacheError` says which path and what to do. With ``create=False`` (the CLI) the
    directory must already be a bertfeat cache.

    Examples
    --------
    >>> import tempfile
    >>> cache = open_cache(tempfile.mkdtemp())
    >>> cache.info()
    []
    """
    shown = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else path
    if isinstance(shown, str) and shown.strip() == "":
        # abspath("") is the current directory: an empty setting must not turn wherever the job runs into a cache
        raise CacheError(f"cache_dir={shown!r} is empty; pass a directory path, or cache_dir=None for no cache.")
    if is_url(shown):
        # abspath would make 's3://bucket/cache' the local folder ./s3:/bucket/cache: a cache no other worker sees
        raise CacheError(
            f"cache_dir={shown!r} is a URL, but the cache is a directory of files read and written with ordinary file "
            "calls. Pass a path: a local directory, or a shared filesystem mounted at the same path on every worker "
            "(an object store mounted with s3fs, gcsfuse or blobfuse; /dbfs/... on Databricks)."
        )
    root = absolute(os.path.expanduser(os.fsdecode(path)))  # a `..` after a link as the system reads it
    refusal = locale_refusal(root, "cache_dir")
    if refusal:
        raise CacheError(refusal)
    try:  # a name in another encoding (Latin-1 from a Windows zip) comes surrogate-escaped: pyarrow cannot take it
        root.encode("utf-8")
    except UnicodeEncodeError:
        raise CacheError(f"cache_dir={shown!r} ({os.fsencode(root)!r}) is not a UTF-8 name, and the cache's parquet "
                         "shards are written with pyarrow, which takes UTF-8 paths only; rename it (convmv -f latin1 -t "
                         "utf8 renames folders from Latin-1) or pass another directory.") from None
    what_to_do = f"Pass a writable directory on this machine{SET_PARAMS_ASIDE}, or cache_dir=None to run without a cache."
    if not os.path.isdir(root):
        if os.path.lexists(root):
            raise CacheError(f"cache_dir={shown!r} ({root}) exists but is not a directory. {what_to_do}")
        if not create:
            raise CacheError(f"{root} does not exist, so it holds no bertfeat cache.")
        try:
            os.makedirs(root, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"cache_dir={shown!r} ({root}) does not exist and cannot be created ({exc.strerror or exc})"
                + (_full_disk(exc) or f". {PICKLED_NOTE}{what_to_do}")
            ) from None
    marker = os.path.join(root, MARKER)
    # a cache this user may not write to (a team's cache on a read-only mount) is read, not added to (store)
    unwritable = None if os.access(root, os.W_OK | os.X_OK) else _unwritable(root)
    if create and not unwritable and _empty(marker):
        # renamed unflushed by an older bertfeat before a power cut, it says no format; written again where it can
        # be, else it still marks a cache (_check_cache_format)
        with contextlib.suppress(OSError):
            _write_atomic(marker, json.dumps({"bertfeat_cache_format": CACHE_FORMAT}) + "\n")
    if create and not os.path.exists(marker):
        if unwritable:
            raise CacheError(f"cache_dir={shown!r} ({root}) {unwritable}. {what_to_do}")
        try:
            _write_atomic(marker, json.dumps({"bertfeat_cache_format": CACHE_FORMAT}) + "\n")
        except OSError as exc:  # a read-only filesystem, or a full disk, passes the access check
            raise CacheError(f"cache_dir={shown!r} ({root}) cannot be written ({exc.strerror or exc})"
                             + (_full_disk(exc) or f". {what_to_do}")) from None
    elif not os.path.exists(marker):
        raise CacheError(f"{root} is not a bertfeat cache (it has no {MARKER}); point at the cache_dir you used.")
    _check_cache_format(marker, root)
    global _OPEN_PID
    with _OPEN_LOCK:
        if _OPEN_PID != os.getpid():  # a forked child (R's fork too, which no Python fork hook sees) opens its own
            _OPEN.clear()
            _RECENT.clear()
            _OPEN_PID = os.getpid()
        # keyed by the folder itself: a cache reached by two names (a linked ~/.cache, a relative link) is one
        # cache, one index in memory and one set of thread locks, as the docstring promises
        key = os.path.realpath(root)
        cache = _OPEN.get(key)
        if cache is None:
            cache = _OPEN[key] = Cache(root)
        cache.read_only = f"cache_dir={shown!r} ({root}) {unwritable}" if unwritable else None  # as it is now
        keep_recent(_RECENT, cache, CACHES_KEPT)
    return cache


def _unlocked_once(root: str, done: str):
    """What ``compact`` and ``clear`` call where the filesystem refuses ``flock`` (:func:`bertfeat.shards._flock`):
    they then run beside whatever else uses the cache, which docs/cache.md asks them not to, so a
    :class:`NoLockWarning` says so once a call (before any work: where warnings are errors it stops the call), as a
    job on such a filesystem warns of its ``out=``."""
    said = []

    def unlocked(why: str) -> None:
        if not said:
            said.append(why)
            warnings.warn(f"the filesystem of the cache {root} does not support flock locks ({why}), so no lock keeps "
                          f"other jobs off it while it is {done}: run this only while no other job or session uses "
                          "the cache.", NoLockWarning, stacklevel=user_stacklevel())
    return unlocked


def _empty(path: str) -> bool:
    try:
        return os.path.getsize(path) == 0
    except OSError:
        return False


def _full_disk(exc: OSError) -> str | None:
    """What to do where ``exc`` says the cache's disk is full (or its quota spent): free space there, which another
    directory only avoids; None otherwise."""
    if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    full = "its disk is full" if exc.errno == errno.ENOSPC else "its disk quota is exceeded"
    return (f": {full}. Free some space there, or pass another directory{SET_PARAMS_ASIDE}, or cache_dir=None to run "
            "without a cache.")


def _unwritable(root: str) -> str:
    """Why this user may not write to the folder ``root`` (which ``os.access`` said): a read-only mount, or its
    permissions."""
    try:
        read_only = bool(os.statvfs(root).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):  # Windows has no statvfs
        read_only = False
    return "is on a read-only file system" if read_only else "is not writable by this user"


# Python's ways to another cache path, in the refusals above: the R package drops them (bertfeat._r.r_advice), where
# a recipe step carries its own cache_dir and bf_embed() takes one per call

# Every open cache, while anything holds it: the caches used last (_RECENT) or a call using one, so that all callers
# of one folder share one index and one set of thread locks. Holding every cache ever opened, a long-lived process
# (a service, a notebook) that opened a cache per job kept each one's index (24 bytes a row) after its folder was gone.
_OPEN: "weakref.WeakValueDictionary[str, Cache]" = weakref.WeakValueDictionary()
_OPEN_LOCK = ForkSafeLock()
_OPEN_PID: int | None = None
# Caches kept open though no call holds one: a cache dropped is indexed again from its shards' key columns when used
CACHES_KEPT = 4
_RECENT: list = []  # least recently used first


def _check_cache_format(marker: str, root: str) -> None:
    """Refuse a cache written in a newer layout: this version would read its shards wrongly or, finding them
    unreadable, delete them as corrupt at the next compact. A marker that cannot be read still marks a cache."""
    try:
        with open(marker, encoding="utf-8") as f:
            found = json.load(f).get("bertfeat_cache_format")
    except (OSError, ValueError, AttributeError):
        return
    if isinstance(found, int) and not isinstance(found, bool) and found > CACHE_FORMAT:
        raise CacheError(
            f"{root} is a bertfeat cache of format {found} ({MARKER}), written by a newer bertfeat; this one reads "
            f"format {CACHE_FORMAT} and would misread or delete its shards. Upgrade bertfeat in this environment "
            "(the R package uses the Python one it is pointed at), or use another cache_dir."
        )


class Cache:
    """A cache directory: one :class:`_Namespace` per recipe fingerprint. Get one with :func:`open_cache`.

    ``row_group_rows`` overrides the rows per parquet row group of new shards (tests use it to make many groups).
    """

    def __init__(self, root, *, row_group_rows: int | None = None):
        self.root = absolute(os.fsdecode(root))
        self.row_group_rows = row_group_rows
        self._namespaces: dict[str, _Namespace] = {}
        self._lock = ForkSafeLock()
        # why this user may not write to the cache, where open_cache found so (a read-only mount): then lookups are
        # answered and store writes nothing, saying so once (_said_read_only)
        self.read_only: str | None = None
        self._said_read_only: str | None = None

    def __repr__(self) -> str:
        return f"Cache({self.root!r})"

    # -- the interface of bertfeat.encode.encode ------------------------------------------------------------------

    def lookup(self, recipe, keys) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Find ``keys`` under ``recipe``: (found mask, float32 vectors of the found keys in order, their n_tokens)."""
        q = _key_array(keys)
        return self._namespace(recipe.fingerprint(), recipe.n_features).lookup(q)

    def tokens_noted(self, recipe) -> dict:
        """What a run that had the tokenizer noted beside ``recipe``'s namespace (:meth:`note_tokens`), or {}."""
        return self._namespace(recipe.fingerprint(), recipe.n_features).tokens_noted()

    def note_tokens(self, recipe, *, n_special: int, prefix_tokens: int) -> None:
        """Keep the token counts only the tokenizer tells (``n_special``, ``prefix_tokens``) in the recipe.json of
        ``recipe``'s namespace, where it exists, so a run the cache answers whole need not load the model to learn
        them; a namespace that cannot be written is left as it is (they are learnt again)."""
        counts = {"n_special": n_special, "prefix_tokens": prefix_tokens}
        self._namespace(recipe.fingerprint(), recipe.n_features).note_tokens(recipe, counts)

    def store(self, recipe, keys, vectors, n_tokens) -> int:
        """Append the rows whose keys are not stored yet; returns how many rows were written."""
        q = _key_array(keys)
        vectors = np.asarray(vectors)
        n_tokens = np.asarray(n_tokens)
        n_features = recipe.n_features
        if vectors.dtype != np.float32 or vectors.shape != (len(q), n_features):
            raise ValueError(
                f"vectors must be float32 of shape ({len(q)}, {n_features}) for this recipe; got {vectors.dtype} "
                f"{vectors.shape}."
            )
        if n_tokens.shape != (len(q),) or n_tokens.dtype.kind not in "iu":
            raise ValueError(f"n_tokens must be {len(q)} integers; got {n_tokens.dtype} {n_tokens.shape}.")
        if not len(q):
            return 0
        read_only = self.read_only
        if read_only is not None:
            if self._said_read_only != read_only:
                self._said_read_only = read_only
                notice(f"bertfeat cache: {read_only}: the vectors it holds are used, and those of texts it does not "
                       "hold are computed and not stored. To keep them, pass a folder this user may write to as "
                       "cache_dir= (a copy of this one keeps its vectors).", CacheWarning)
            return 0
        ns = self._namespace(recipe.fingerprint(), n_features)
        try:
            return ns.store(q, vectors, n_tokens.astype(np.int64, copy=False), recipe)
        except OSError as exc:  # the vectors are already computed: a failed cache write must not lose them (a
            # notice: where warnings are errors, raised it would)
            notice(f"bertfeat cache: could not write new rows to {ns.dir} ({exc}); they are not cached. Check the free "
                   "space and permissions of the cache directory.", CacheWarning)
            return 0

    # -- maintenance (the `bertfeat cache` command) ---------------------------------------------------------------

    def fingerprints(self) -> list[str]:
        """The namespaces present on disk, sorted."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if _NAMESPACE_RE.match(n) and os.path.isdir(os.path.join(self.root, n)))

    def resolve(self, prefix: str) -> str:
        """The one fingerprint starting with ``prefix`` (at least 6 characters), or a CacheError."""
        matches = [fp for fp in self.fingerprints() if fp.startswith(prefix.lower())]
        if len(prefix) < 6 or len(matches) != 1:
            why = ("is too short (give at least 6 characters)" if len(prefix) < 6
                   else "matches no namespace" if not matches else f"matches {len(matches)} namespaces")
            raise CacheError(
                f"fingerprint {prefix!r} {why} in {self.root}; `bertfeat cache info {shlex.quote(self.root)}` lists "
                "them."
            )
        return matches[0]

    def info(self) -> list[NamespaceInfo]:
        """One :class:`NamespaceInfo` per namespace (this reads every shard's key column). A folder that holds nothing
        of one (no shard, no recipe.json: what a clear stopped half way leaves once it is ended) is left out, as the
        folder a clear removes is."""
        infos = (self._namespace(fp).info() for fp in self.fingerprints())
        return [i for i in infos if i.shards or i.corrupt or i.recipe is not None]

    def compact(self, fingerprint: str | None = None) -> list["CompactResult"]:
        """Merge each namespace's shards into one, dropping duplicates, corrupt shards and dead writers' temp files.

        Safe while other processes read and write: new shards that appear meanwhile are left alone, and the swap
        of old shards for the merged one happens under a short exclusive lock.
        """
        fps = [fingerprint] if fingerprint else self.fingerprints()
        unlocked = _unlocked_once(self.root, "compacted")
        return [self._namespace(fp).compact(unlocked) for fp in fps]

    def clear(self, fingerprint: str | None = None) -> list[str]:
        """Delete one namespace, or all of them; returns the fingerprints deleted. The directory stays a cache."""
        fps = [fingerprint] if fingerprint else self.fingerprints()
        unlocked = _unlocked_once(self.root, "cleared")
        for fp in fps:
            self._namespace(fp).clear(unlocked)
            with self._lock:
                self._namespaces.pop(fp, None)
        return fps

    # -- internals ------------------------------------------------------------------------------------------------

    def _namespace(self, fingerprint: str, n_features: int | None = None) -> "_Namespace":
        with self._lock:
            ns = self._namespaces.get(fingerprint)
            if ns is None:
                ns = self._namespaces[fingerprint] = _Namespace(self.root, fingerprint, n_features)
            elif ns.n_features is None and n_features is not None:
                ns.n_features = n_features
            ns.row_group_rows = self.row_group_rows
            return ns
