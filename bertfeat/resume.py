"""The resume protocol: ``<out>.partial/`` holds the finished parts of a job and a ``state.json`` naming the job.

A job is its input's fingerprint (paths, sizes, mtimes and change times), its chunking and every option.
A rerun of the same job reuses every part that is complete (its features, stats and text hashes all present, and the
parquet, the stats and the hashes readable) and made of the rows the rerun reads at its place
(:func:`rows_digest`); a ``.partial`` folder of any other job (other input, options or chunking) is
discarded, so a part is never reused at another row offset. A run that put its output in place and was stopped
before writing its manifest is finished by the next run of the same job from ``finished.json``
(:func:`mark_finished`, :func:`finished_output`), which knows the output by its inode, or where a rename copied it
(s3fs, gcsfuse) by its bytes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat.model_hashes import read_sha256
from bertfeat.output import OutputPaths, atomic_write_bytes

STATE_VERSION = 2


# a part's parquet metadata key: the digest of the rows it was made of (rows_digest)
ROWS_KEY = b"bertfeat.rows_sha256"


def prepare_partial(paths: OutputPaths, state: dict, quiet: bool = True) -> dict[int, str | None]:
    """The parts an interrupted run of the same job finished, each index with the digest of the rows it was made of
    (:func:`rows_digest`; None for a part an older bertfeat wrote); the folder is (re)started otherwise."""
    state_file = paths.partial / "state.json"
    if paths.partial.exists():
        try:
            old = json.loads(state_file.read_text())
        except (OSError, ValueError):
            old = None
        if _as_written_now(old) == json.loads(json.dumps(state)):
            return finished_parts(paths)
        if not quiet and sys.stderr is not None:  # None: standard error closed
            print(f"bertfeat embed: {paths.partial} holds parts of another job ({_difference(old, state)}); "
                  "starting over.", file=sys.stderr)
        shutil.rmtree(paths.partial)
    paths.partial.mkdir(parents=True)
    atomic_write_bytes(state_file, json.dumps(state, indent=1).encode())
    return {}


def _as_written_now(old):
    """A job's state as this bertfeat writes it. One written before ``reading`` recorded ``quoting`` (before
    2026-11-27) read a CSV with quotes, as the default reads one now, and a parquet input has none: so it is the
    same job as a run with that quoting, and its parts are resumed rather than embedded again."""
    reading = old.get("reading") if isinstance(old, dict) else None
    if not isinstance(reading, dict) or "quoting" in reading:
        return old
    return {**old, "reading": {**reading, "quoting": "csv" if reading.get("delimiter") is not None else None}}


def finished_parts(paths: OutputPaths) -> dict[int, str | None]:
    """Each finished part's index and the digest of its rows (:func:`prepare_partial`)."""
    done = {}
    for f in paths.partial.glob("part-*.json"):
        try:
            k = int(f.name[5:11])
        except ValueError:
            continue
        if not (_readable_stats(f) and _readable_hashes(paths.part_hashes(k))):
            continue
        try:
            written = pq.ParquetFile(paths.part(k)).metadata.metadata or {}
        except Exception:  # not readable: embedded again
            continue
        done[k] = written[ROWS_KEY].decode("ascii", "replace") if ROWS_KEY in written else None
    return done


def rows_digest(batch) -> str:
    """What a part is made of: the SHA-256 of the rows of ``batch`` (a chunk of the input as read: each column's
    name, type and values). A rerun reads every chunk again, the finished ones too, so it tells the rows a part was
    made of from others at its place without any more reading: where a file system cannot tell two files apart (sshfs
    and gcsfuse give the modification time as the change time, so another file put at the input's path with its
    size and mtime has its fingerprint), a part of other rows is embedded again, never joined to the new rows."""
    # As Arrow's stream format writes the rows taken afresh: it writes a text column sliced from its first row with
    # its whole data buffer, the reader's rows after the chunk too (an id changed in row 7 changed chunk 0's digest),
    # and a slice, a chunk joined from pieces and a column built anew give the same bytes once taken. Python objects of
    # each value took 3.3 s for a chunk of 10k rows with a 384-float vector kept beside its texts, this 62 ms
    rows = batch.take(pa.array(np.arange(batch.num_rows)))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_batch(rows)
    return hashlib.sha256(sink.getvalue()).hexdigest()


def _readable_hashes(path: Path) -> bool:
    """Whether a part's text hashes can be read: one cut short (a copy, or a power cut on a file system that did not
    flush it) would fail the job as it joins the parts, at every rerun."""
    try:
        hashes = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return False
    return hashes.ndim == 1 and hashes.dtype == np.uint64


def _readable_stats(path: Path) -> bool:
    """Whether a part's stats (which the job's counts add up) can be read, each of them: one left empty or cut short
    (an older bertfeat's power cut, a copy) failed the job as it joined the parts, deleting every finished part."""
    from dataclasses import fields

    from bertfeat.encode import EncodeStats

    try:
        stats = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(stats, dict) and set(stats) == {f.name for f in fields(EncodeStats)}
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in stats.values()))


def _difference(old, new: dict) -> str:
    if not isinstance(old, dict):
        return "no readable state.json"
    changed = [k for k in new if old.get(k) != new[k]]
    if changed == ["input"] and _but_identity(old.get("input")) == _but_identity(new["input"]) is not None:
        # the same names, sizes and mtimes: what differs is the change time, which a user may not think of (on
        # Windows, the file's id and creation time: readers.CTIME_IS_CREATION)
        if any(isinstance(i, list) for i in new["input"].get("identity") or []):
            return ("other input: same names, sizes and modification times, but another file (another file put "
                    "there: renamed over it, robocopy)")
        return ("other input: same names, sizes and modification times, but another change time (another file put "
                "there, cp -p, rsync -t, touch -r; or chmod, chown, a new hard link)")
    return "other " + ", ".join(changed) if changed else "another state version"


def _but_identity(fingerprint) -> dict | None:
    """An input's fingerprint without its files' change times (``InputReader.fingerprint``)."""
    return {k: v for k, v in fingerprint.items() if k != "identity"} if isinstance(fingerprint, dict) else None


FINISHED = "finished.json"


def mark_finished(paths: OutputPaths, state: dict, manifest: dict, joined: Path, rows: list | None = None) -> None:
    """Record, before ``joined`` (the whole output, under its temp name) is renamed to ``--out``, the manifest that
    goes beside it and which file it is: its inode, size and mtime, which a rename keeps (and an earlier output,
    which exists beside the temp file, cannot share its inode); and its bytes' digest, for where a rename copies
    the file (s3fs and gcsfuse copy an object and remove the first: a new inode, a new mtime). ``rows``: the digest
    of each part's rows (:func:`rows_digest`), which :func:`finished_output` compares with the input's now."""
    st = joined.stat()
    marker = {"state": state, "manifest": manifest, "file": [st.st_ino, st.st_size, st.st_mtime_ns],
              "sha256": read_sha256(joined), "rows": rows}
    atomic_write_bytes(paths.partial / FINISHED, json.dumps(marker).encode())


def finished_output(paths: OutputPaths, state: dict, rows_now=None) -> dict | None:
    """The manifest of a run of this job stopped after its output was in place and before its manifest was written
    beside it; None when ``--out`` is not that run's file (or there was no such run). That file is the one renamed
    there (same inode, size and mtime) or, where they differ (a rename that copied it), one of its size and bytes:
    no other file is given a manifest. ``rows_now()`` (the digests of the input's chunks, read again) must give the
    rows that run's parts were made of: on sshfs and gcsfuse another file put at the input's path with its size and
    mtime has its fingerprint, and would get the first file's output as its own; None from it: one that cannot
    be read now."""
    try:
        marker = json.loads((paths.partial / FINISHED).read_text())
        st = paths.out.stat()
    except (OSError, ValueError):
        return None
    if (not isinstance(marker, dict) or _as_written_now(marker.get("state")) != json.loads(json.dumps(state))
            or not paths.out.is_file()):
        return None
    recorded = marker.get("file")
    if recorded != [st.st_ino, st.st_size, st.st_mtime_ns] and not _same_bytes(paths.out, st, marker):
        return None
    rows = marker.get("rows")
    if rows_now is not None and isinstance(rows, list):  # (a marker of an older bertfeat has none)
        now = rows_now()  # None: the input cannot be read now, so it is not the rows that run read
        if now is None or len(now) != len(rows) or any(r is not None and r != n for r, n in zip(rows, now)):
            return None
    return marker["manifest"]


def _same_bytes(path: Path, st, marker: dict) -> bool:
    """Whether ``path`` (``st``: its stat) has the size and digest ``marker`` recorded of the joined output."""
    recorded = marker.get("file")
    if not (isinstance(recorded, list) and len(recorded) == 3 and recorded[1] == st.st_size
            and isinstance(marker.get("sha256"), str)):
        return False
    try:
        return read_sha256(path) == marker["sha256"]
    except OSError:
        return False
