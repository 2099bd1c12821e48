"""Featurizing files: stream CSV/parquet in bounded chunks, embed each, write parquet with provenance, resume.

``embed_file`` reads the input in chunks (at most ``chunk_rows`` rows and ``chunk_chars`` text characters, so
memory stays bounded), runs each through an :class:`~bertfeat.arrow.ArrowFeaturizer`, and writes each chunk's
features as its own parquet part (temp file + atomic rename) in ``<out>.partial/``. A re-run of the same command
after a crash skips the parts already written (:mod:`bertfeat.resume`), and within the unfinished chunk the batches
a checkpoint saved (:mod:`bertfeat.journal`, every ``checkpoint_seconds``). At the end the parts are
joined, one row group each, into ``<out>`` (written under a temp name, then renamed), and
``<out>.manifest.json`` records the provenance, counts and timing. Memory stays bounded by one chunk.

Reading is :mod:`bertfeat.readers`; the output checks, atomic writes and the job lock are :mod:`bertfeat.output`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat import locks
from bertfeat.counts import DistinctCounter, job_counts, own_passes, text_hashes
from bertfeat.encode import EncodeStats, reporting
from bertfeat.flush import file_to_disk, naming
from bertfeat.inputs import column_names
from bertfeat.hardware import run_facts
from bertfeat.journal import BatchJournal
from bertfeat.journal import use as use_journal
from bertfeat.output import (
    OutputPaths, _atomic_write_bytes, _Paths, atomic_write_bytes, check_output, job_lock, job_os_error, own_files,
    remove_stale_temps, write_part,
)
from bertfeat.links import with_doc_links
from bertfeat.worker_recipe import libraries
from bertfeat.readers import CSV_NULLS, CSV_SUFFIXES, PARQUET_SUFFIXES, InputReader, resolve_input
from bertfeat.sources import FILE_OUTPUT, output_path, recorded_path
from bertfeat.resume import (
    FINISHED, ROWS_KEY, STATE_VERSION, finished_output, mark_finished, prepare_partial, rows_digest,
)

__all__ = [
    "CHECKPOINT_SECONDS", "CSV_NULLS", "CSV_SUFFIXES", "PARQUET_SUFFIXES", "STATE_VERSION", "DistinctCounter",
    "InputReader", "Progress", "_Paths", "_atomic_write_bytes", "check_output", "embed_file", "job_counts",
    "print_summary", "refuse_local_options", "resolve_input", "text_hashes",
]

# A chunk's text characters (with its rows) bound its memory: 1M characters is about 250k tokens. Characters, not
# measured seconds: chunk boundaries must depend on the input only, so a resumed run's output is byte-identical to an
# uninterrupted one. What a kill can lose is bounded in time instead, within a chunk (bertfeat.journal).
CHUNK_CHARS = 1_000_000
# finished batches of the running chunk are saved this often: about the most work a kill can lose
CHECKPOINT_SECONDS = 30.0


# embed_file's own options that are no BertEmbedder parameter: a job moved to the Ray or Spark engine's Python API
# keeps them, and they would reach BertEmbedder as "unexpected keyword argument" (see refuse_local_options)
_LOCAL_OPTIONS = {
    "chunk_rows": "{o}= is the local engine's name (bertfeat.files.embed_file): the {E} engine's is batch_rows=, rows "
                  "per batch sent to a worker; pass batch_rows={v!r}.",
    "chunk_chars": "{o}= bounds the local engine's chunks (bertfeat.files.embed_file): the {E} engine reads batches "
                   "of batch_rows= rows, so a smaller batch_rows= bounds a batch's memory; drop {o}=.",
    "checkpoint_seconds": "{o}= applies to the local engine (bertfeat.files.embed_file): the {E} engine resumes a "
                          "stopped job through its cache; drop {o}=.",
    "progress_every": "{o}= applies to the local engine (bertfeat.files.embed_file): the {E} engine shows {E}'s own "
                      "progress (quiet=True hides it); drop {o}=.",
}
_CSV_OPTIONS = ("delimiter", "infer_types", "quoting")


def refuse_local_options(params: dict, engine: str, reads: str = "csv", rows: str | None = None) -> None:
    """Refuse, by name and with what to do, the local file job's options given to the ``engine`` engine's job
    (whose other keyword arguments are BertEmbedder parameters); and the CSV options where it reads no CSV
    (``reads``: ``"csv"`` for a job that reads CSV files too, ``"parquet"``, or ``"dataset"`` for one given its data
    already). ``rows``: what sets the rows per batch where no ``batch_rows=`` does."""
    for option, value in params.items():
        says = _LOCAL_OPTIONS.get(option)
        if option == "chunk_rows" and rows is not None:
            says = "{o}= is the local engine's name (bertfeat.files.embed_file): " + rows
        elif option == "chunk_chars" and rows is not None:
            says = "{o}= bounds the local engine's chunks (bertfeat.files.embed_file); drop {o}=: " + rows
        if says is None and option in _CSV_OPTIONS and reads != "csv":
            says = ("{o}= applies to CSV input, and the {E} engine reads parquet only; drop {o}=." if reads == "parquet"
                    else "{o}= applies to reading a CSV file, and the data given to the {E} engine is read already; "
                         "drop {o}=.")
        if says is not None:
            raise TypeError(says.format(o=option, E=engine.capitalize(), v=value))


# -- progress ----------------------------------------------------------------------------------------------------


class Progress:
    """A progress bar with rows/s and ETA on a terminal; otherwise a log line every ``every`` seconds."""

    def __init__(self, total: int | None, quiet: bool, every: float = 10.0, stream=None):
        self.stream = stream or sys.stderr
        self.quiet = quiet or self.stream is None  # standard error closed (2>&-, a daemon, pythonw): nowhere to report
        self.total = total
        self.every = every
        self.done = 0  # rows of the finished chunks
        self.running = 0  # rows of the running chunk estimated done
        self.estimate = None  # a CSV's total rows, estimated from the bytes read
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.bar = None
        if not self.quiet and self.stream.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="rows", unit_scale=True, desc="bertfeat embed", file=self.stream,
                            dynamic_ncols=True)

    def update(self, rows: int, fraction: float | None = None) -> None:
        """A chunk of ``rows`` rows finished (``fraction``: of a CSV's bytes read so far)."""
        self.done += rows
        self.running = 0
        if self.quiet:
            return
        # CSV: the total estimated from the bytes read, known only mid-file
        self.estimate = int(self.done / fraction) if self.total is None and fraction and fraction < 1.0 else None
        self._show(self.done)

    def within(self, part: float, rows: int) -> None:
        """``part`` of the running chunk of ``rows`` rows done (its model passes so far): a chunk can take minutes
        on a CPU, and a log still gets a line every ``every`` seconds, a terminal's bar still moves. A chunk done
        whole is left to :meth:`update`, which shows it once, with the CSV total estimated again."""
        if self.quiet or part >= 1.0 or int(rows * part) <= self.running:  # the count never goes back or repeats
            return
        self.running = int(rows * part)
        self._show(self.done + self.running)

    def _show(self, done: int) -> None:
        total = self.total or self.estimate
        if self.bar is not None:
            if total and self.bar.total != total:
                self.bar.total = total
            self.bar.update(done - self.bar.n)
            return
        now = time.perf_counter()
        if now - self.last >= self.every:
            self.last = now
            rate = done / max(now - self.t0, 1e-9)
            eta = f", ETA {_duration((total - done) / rate)}" if total and rate else ""
            pct = f" / {total:,} ({100 * done / total:.1f}%)" if total else ""
            shown = f"{rate:,.0f}" if rate >= 10 else f"{rate:.2g}"  # a slow run's 0.2 rows/s is no "0 rows/s"
            print(f"bertfeat embed: {done:,}{pct} rows, {shown} rows/s{eta}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


# -- the job -----------------------------------------------------------------------------------------------------


_CLUSTER_OPTIONS = {  # a cluster engine's own option given to embed_file -> what to do instead
    "batch_rows": "the local engine's batch is chunk_rows=",
    "num_workers": "it is bertfeat.ray.embed_parquet's",
    "gpus_per_worker": "it is bertfeat.ray.embed_parquet's",
    "cpus_per_worker": "it is bertfeat.ray.embed_parquet's",
    "preserve_order": "it is bertfeat.ray.embed_parquet's; the local engine keeps the input's order",
    "master": "it is bertfeat.spark.embed_files'",
    "resource_profile": "it is bertfeat.spark.embed_dataframe's; the local engine runs on this machine, on the device= "
                        "it is given",
}


def refuse_cluster_options(params: dict) -> None:
    """Refuse a Ray or Spark option given to :func:`embed_file`: it reached the BertEmbedder as "unexpected keyword
    argument 'batch_rows'", which said neither whose option it is nor what the local engine takes."""
    given = [name for name in _CLUSTER_OPTIONS if name in params]
    if given:
        raise TypeError(f"{given[0]}= is not an option of the local engine (bertfeat.files.embed_file): "
                        f"{_CLUSTER_OPTIONS[given[0]]}.")


@with_doc_links
def embed_file(
    input: str,
    out: str,
    text_cols,
    *,
    keep_cols=(),
    layout: str = "columns",
    overwrite: bool = False,
    chunk_rows: int = 10_000,
    chunk_chars: int = CHUNK_CHARS,
    checkpoint_seconds: float = CHECKPOINT_SECONDS,
    delimiter: str | None = None,
    infer_types: bool = False,
    quoting: str | None = None,
    quiet: bool = False,
    progress_every: float = 10.0,
    **params,
) -> dict:
    """Embed the text columns of a CSV/parquet file (or directory/glob of parquet) into a features parquet file.

    Returns the manifest (also written to ``<out>.manifest.json``). ``params`` are BertEmbedder parameters (model,
    pooling, layers, cache_dir, ...). See the module docstring for the resume protocol; ``bertfeat embed`` is this
    function (docs/cli.md).

    Parameters
    ----------
    input : str or pathlib.Path
        A CSV file (``.csv``/``.tsv``, optionally ``.gz``/``.bz2``/``.zst``), a parquet file, or a folder or glob
        of parquet files.
    out : str or pathlib.Path
        The parquet file to write, put in place when complete, with ``<out>.manifest.json`` beside it.
    text_cols : str or list of str
        The column(s) to embed.
    keep_cols : str or list of str, default=()
        Columns copied into the output beside the features (an id, a label).
    layout : {"columns", "list"}, default="columns"
        One float32 column per feature, or one list column of features per text column.
    overwrite : bool, default=False
        Replace an existing output; without it an existing output is an error, and an unfinished job resumes.
    chunk_rows, chunk_chars : int
        Bound a chunk (the resume unit and the output's row group) by rows (default 10,000) and by the characters
        of its texts.
    checkpoint_seconds : float
        Within a chunk, finished batches are saved every this many seconds of work, so a kill loses about that
        much; 0 saves after every batch.
    delimiter : str, default=None
        Overrides the CSV delimiter the suffix implies (``,`` for .csv, a tab for .tsv).
    infer_types : bool, default=False
        Guess CSV kept columns' types from the first block; by default they are read as written, as text.
    quoting : {"csv", "none", "backslash", "csv-backslash"}, default=None
        How a CSV's values are quoted, which the file cannot tell: ``"`` quotes a value (RFC 4180; None too, and
        then a TSV holding what only an export that quotes nothing writes is refused, saying so); no quoting
        (every character as written, ``"`` too); no quoting and backslash escapes (``\\t``, ``\\n``,
        ``\\\\``, ``\\N`` missing), as PostgreSQL's COPY text format, MySQL's INTO OUTFILE and ``mysql --batch`` write;
        or ``"`` quoting and backslash escapes (``\\"``, ``\\\\``, ``\\N`` missing), as MySQL's INTO OUTFILE ...
        ENCLOSED BY '"' writes.
    quiet : bool, default=False
        No progress and no summary on stderr.
    progress_every : float, default=10.0
        Seconds between progress lines when stderr is not a terminal.
    """
    from bertfeat.arrow import ArrowFeaturizer

    refuse_cluster_options(params)
    t0 = time.perf_counter()
    text_cols = column_names(text_cols, "text_cols")
    keep_cols = column_names(keep_cols, "keep_cols")
    for name, value in (("chunk_rows", chunk_rows), ("chunk_chars", chunk_chars)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}={value!r} is not valid: expected a positive int.")
    if isinstance(checkpoint_seconds, bool) or not isinstance(checkpoint_seconds, (int, float)) or not (
            0 <= checkpoint_seconds < float("inf")):
        raise ValueError(f"checkpoint_seconds={checkpoint_seconds!r} is not valid: expected seconds >= 0 (0 saves "
                         "after every batch).")
    paths = OutputPaths.of(Path(output_path(out, "out", "the path of the parquet file to write", FILE_OUTPUT,
                                         one_file=True)))
    read_input = functools.partial(InputReader, input, keep_cols + text_cols, chunk_rows, text_cols,
                                   chunk_chars=chunk_chars, delimiter=delimiter, infer_types=infer_types,
                                   quoting=quoting, exclude=own_files(paths, params))
    reader = read_input()
    # checked before any work; an existing --out may be a stopped run's of this very job (decided below)
    check_output(paths, reader, overwrite or (paths.partial / FINISHED).exists(), file_output=True)
    if not reader.has_rows:  # before the model is resolved: torch's import, a hub model's download
        raise ValueError(f"input {reader.path!r} has no rows to embed.")
    # No run-private cache here: its index grows with the input (about 24 bytes a distinct text), and memory must
    # stay bounded by one chunk. Texts repeated across chunks are embedded once per chunk unless --cache-dir is given.
    user_cache = params.get("cache_dir")
    featurizer = ArrowFeaturizer(text_cols, keep_cols, layout=layout, **params)
    featurizer.check_schema(reader.schema)
    schema = featurizer.output_schema(reader.schema)
    state = {
        "version": STATE_VERSION,
        "input": reader.fingerprint(),
        "chunk_rows": chunk_rows,
        "chunk_chars": chunk_chars,
        "reading": reader.reading(),
        "provenance": featurizer.provenance(),
        "schema": schema.to_string(show_schema_metadata=False),
    }
    with job_lock(paths):
        remove_stale_temps(paths)  # what a killed run left beside --out
        # a reader of its own, as the job's: that reads the input once, from its start
        def rows_now() -> list[str] | None:
            try:
                return [rows_digest(batch) for batch in read_input().batches()]
            except (OSError, ValueError, TypeError, pa.ArrowException):
                # not the rows that run read (its reader read them all): --out is refused as any other run's, and
                # with overwrite the job's own reading says what is wrong with the input
                return None

        finished = finished_output(paths, state, rows_now)
        if not overwrite and finished is None:
            # --out is not a stopped run's of this job. Checked holding the lock: another job on this --out may have
            # finished since the check above, and its output is not ours to write over
            check_output(paths, reader, overwrite, file_output=True)
        if finished is not None:  # only the manifest and the cleanup were left to do
            atomic_write_bytes(paths.manifest, json.dumps(finished, indent=2).encode())
            shutil.rmtree(paths.partial, ignore_errors=True)
            if not quiet:
                print_summary(finished)
            return finished
        try:
            resumed = prepare_partial(paths, state, quiet)
            manifest = _run(paths, reader, featurizer, schema, state, resumed, text_cols, quiet, progress_every,
                            t0, user_cache, float(checkpoint_seconds))
        except (ValueError, TypeError):
            # a mistake in the data or options: a rerun of this job cannot succeed, so nothing is kept for one
            shutil.rmtree(paths.partial, ignore_errors=True)
            raise
        except OSError as exc:
            error = job_os_error(exc, paths)  # before the cleanup below: what was removed while the job ran
            if not _has_progress(paths):
                shutil.rmtree(paths.partial, ignore_errors=True)
            raise error from None
        except BaseException:
            if not _has_progress(paths):
                shutil.rmtree(paths.partial, ignore_errors=True)
            raise
    if not quiet:
        print_summary(manifest)
    return manifest


def _ran_on(featurizer) -> str:
    """The device the featurizer's model ran on: its ``device=`` resolved, as the model was loaded on it."""
    from bertfeat.devices import device_key, resolve_device

    return device_key(resolve_device(featurizer.embedder.device))


_NO_PART = object()  # no finished part of a stopped run at this chunk's number


def _run(paths, reader, featurizer, schema, state, resumed, text_cols, quiet, progress_every, t0, user_cache,
         checkpoint_seconds):
    progress = Progress(reader.total_rows, quiet, every=progress_every)
    resumed_rows = resumed_parts = batches_resumed = 0
    rows_of = []  # each part's rows' digest, as read by this run (None: an older bertfeat's part, trusted)
    other_rows = False  # a finished part found made of other rows (said once)
    this_run = EncodeStats()
    # one summary at the end instead of a truncation warning per chunk, asked of the featurizer, not of the process's
    # warnings filters: they are every thread's (catch_warnings puts back the whole list, another thread's changes too)
    featurizer.warn_truncation = False
    k = -1
    rows_read = 0  # rows of the chunks before this one: a mistake in the data names its row in the input
    # this job's own passes: not those of a job or a transform in another thread meanwhile
    with own_passes(featurizer.recipe) as passes, contextlib.closing(progress):
        for k, batch in enumerate(reader.batches()):
            first_row, rows_read = rows_read, rows_read + batch.num_rows
            digest = rows_digest(batch)
            # the digest of the rows a stopped run's finished part k holds: None for an older bertfeat's part
            # (trusted), _NO_PART where there is none
            held = resumed.get(k, _NO_PART)
            rows_of.append(None if held is None else digest)
            if held is None or held == digest:
                resumed_rows += batch.num_rows
                resumed_parts += 1
                progress.update(batch.num_rows, reader.fraction_done())
                continue
            if held is not _NO_PART:  # made of other rows: embedded again below, and written over
                paths.part_stats(k).unlink(missing_ok=True)  # no longer finished meanwhile
                if not other_rows and not quiet and sys.stderr is not None:
                    print(f"bertfeat embed: part {k} in {paths.partial} was made of other rows than the input holds "
                          "there now (another file put at its path with its size and times?); embedding such parts "
                          "again.", file=sys.stderr)
                other_rows = True
            journal = BatchJournal(paths.part_journal(k), every=checkpoint_seconds)
            try:
                with use_journal(journal), reporting(functools.partial(progress.within, rows=batch.num_rows)):
                    result = featurizer(batch, first_row)
            except (ValueError, TypeError):
                raise  # a mistake in the data: the job's folder goes, journal and all
            except BaseException:
                _save_journal(journal)  # stopped (Ctrl-C, SIGTERM, a failure): keep every batch that finished
                raise
            batches_resumed += journal.reused
            stats = featurizer.embedder.stats_
            this_run += stats
            hashes = featurizer.text_hashes(batch)
            _write_chunk(paths, k, result.replace_schema_metadata({**(result.schema.metadata or {}),
                                                                   ROWS_KEY: digest.encode()}), hashes, stats)
            shutil.rmtree(paths.part_journal(k), ignore_errors=True)  # the part holds it all now
            progress.update(batch.num_rows, reader.fraction_done())
    n_parts = k + 1
    if n_parts == 0:
        raise ValueError(f"input {reader.path!r} has no rows to embed.")
    reader.check_unchanged(state["input"])  # parts of one version of it
    return _finish(paths, n_parts, schema, featurizer, state, resumed_rows, resumed_parts, this_run, t0, user_cache,
                   batches_resumed, checkpoint_seconds, dict(passes), rows_of)


def _has_progress(paths: OutputPaths) -> bool:
    """Whether a stopped job leaves work a rerun can use: a finished part, or checkpointed batches of one."""
    return any(paths.partial.glob("part-*.json")) or any(paths.partial.glob("part-*.journal/*.npz"))


def _save_journal(journal: BatchJournal) -> None:
    """Save what a stopped chunk finished; a failure to (a full disk) must not hide why the job stopped."""
    try:
        journal.flush()
    except OSError:
        pass


def _write_chunk(paths: OutputPaths, k: int, result: pa.RecordBatch, hashes: np.ndarray, stats: EncodeStats):
    """Write part ``k``: all of it, or (when a write fails or the run is stopped) none of it."""
    tmp = paths.part_hashes(k).with_name(f".{paths.part_hashes(k).name}.tmp-{os.getpid()}.npy")
    try:
        with naming(tmp):
            np.save(tmp, hashes)
        file_to_disk(tmp)  # renamed unflushed, a power cut could leave it empty beside a part that is whole
        locks.retried(os.replace, tmp, paths.part_hashes(k))
        write_part(paths.part(k), result)
        # the stats file is written last: its presence marks the part finished (see resume.finished_parts)
        atomic_write_bytes(paths.part_stats(k), json.dumps(stats.to_dict()).encode())
    except BaseException:
        for f in (paths.part_stats(k), paths.part(k), paths.part_hashes(k)):
            f.unlink(missing_ok=True)
        raise
    finally:
        tmp.unlink(missing_ok=True)


SUMMARY_HEAD = "bertfeat embed: wrote "  # how the summary line starts (R gives it as a message: bertfeat._r.run_cli)


def print_summary(manifest: dict, stream=None) -> None:
    """The one-line summary of a finished job, on stderr: what this run did, and what it took from an earlier one."""
    c = manifest["counts"]
    run = manifest.get("this_run")
    head = (f"{SUMMARY_HEAD}{manifest['output']} ({c['rows']:,} rows x {manifest['provenance']['dims']} dims "
            f"per text column) in {_duration(manifest['timing']['seconds'])}; ")
    if run is None or not run["rows_resumed"]:
        body = f"{c['embedded']:,} texts embedded, {c['cache_hits']:,} from cache"
    else:
        body = (f"this run embedded {run['rows']:,} rows ({run['embedded']:,} texts embedded, {run['cache_hits']:,} "
                f"from cache) and resumed {run['rows_resumed']:,} rows ({run['chunks_resumed']:,} chunks) from an "
                "earlier run")
    batches = (run or {}).get("batches_resumed", 0)
    if batches:
        body += f"; {batches:,} batches of an unfinished chunk came from the killed run's checkpoint"
    stream = stream or sys.stderr
    if stream is not None:  # standard error closed: print(file=None) would put the summary on standard output
        # a chunk job truncates nothing: it says how many texts it cut into windows
        long = "chunked" if manifest["provenance"].get("long_text") == "chunk" else "truncated"
        print(f"{head}{body}, {c.get(long, 0):,} {long}, {c['missing']:,} missing", file=stream)


def _refuse_another_jobs_part(paths: OutputPaths, k: int, digest: str) -> None:
    """Refuse part ``k`` where its rows are not those this run read at its place: where the filesystem refuses flock
    (NoLockWarning) a job on another input and the same out= writes its parts into the same ``.partial`` folder, and
    joined they would put its rows in this output, silently. The parts stay: the rerun, alone, embeds again only
    those of other rows."""
    if (pq.read_metadata(paths.part(k)).metadata or {}).get(ROWS_KEY) != digest.encode():
        # an OSError naming the part: the job's one line (job_os_error), the parts kept for the rerun
        raise FileExistsError(
            errno.EEXIST, "another job's part, written while this one ran: its rows are not those this job read there "
            "(where the filesystem refuses flock no lock keeps a second job off one out=); nothing was put at "
            f"out={str(paths.out)!r}. Run one job per out= at a time, then run the same command again: only such "
            "parts are embedded again", str(paths.part(k)))


def _finish(paths: OutputPaths, n_parts: int, schema: pa.Schema, featurizer, state: dict, resumed_rows: int,
            resumed_parts: int, this_run: EncodeStats, t0: float, cache_dir, batches_resumed: int,
            checkpoint_seconds: float, forward_pass: dict | None = None, rows_of: list | None = None) -> dict:
    """Join the parts into the output, put it in place and write its manifest. ``rows_of``: the digest of each part's
    rows as this run read them; a part holding others is another job's (:func:`_refuse_another_jobs_part`)."""
    totals = EncodeStats()
    counter = DistinctCounter()
    slowest = 0.0
    tmp = paths.tmp(paths.out)
    try:
        with naming(tmp):  # opening writes too (parquet's magic bytes): a full disk fails there
            writer = pq.ParquetWriter(tmp, schema)
        with writer:
            for k in range(n_parts):
                if rows_of is not None and rows_of[k] is not None:
                    _refuse_another_jobs_part(paths, k, rows_of[k])
                part = pq.read_table(paths.part(k), schema=schema.remove_metadata())
                with naming(tmp):
                    writer.write_table(part.replace_schema_metadata(schema.metadata),
                                       row_group_size=max(1, part.num_rows))
                stats = EncodeStats(**json.loads(paths.part_stats(k).read_text()))
                totals += stats
                slowest = max(slowest, stats.seconds)
                counter.add(np.load(paths.part_hashes(k)))
        file_to_disk(tmp)
        n_text = len(featurizer.text_cols)
        manifest = {
            "output": recorded_path(paths.out),
            "engine": "local",
            "input": state["input"],
            "provenance": featurizer.provenance(),
            "counts": job_counts(totals, counter, n_text, resumed_rows, n_parts),
            "this_run": {"rows": this_run.rows // max(1, n_text), "embedded": this_run.unique - this_run.cache_hits,
                         "cache_hits": this_run.cache_hits, "chunks": n_parts - resumed_parts,
                         "rows_resumed": resumed_rows, "chunks_resumed": resumed_parts,
                         "batches_resumed": batches_resumed},
            "timing": {"seconds": round(time.perf_counter() - t0, 3), "embed_seconds": round(totals.seconds, 3),
                       "slowest_chunk_seconds": round(slowest, 3),
                       # finished batches are saved this often within a chunk: about the most work a kill can lose
                       "checkpoint_seconds": checkpoint_seconds,
                       # what the speed depends on, so a slow run's manifest can go into a bug report as it is
                       "machine": run_facts(*featurizer.product_shape()),
                       # which arrangement ran this run's batches, and how many each: the fused CPU pass on oneDNN's
                       # or plain torch kernels, or transformers' own pass ({} when every text came from the cache)
                       "forward_pass": forward_pass or {},
                       # where those passes ran (the machine entry is this host's CPU, also when a GPU ran them);
                       # None when every text came from the cache or a resumed run's parts
                       "device": _ran_on(featurizer) if forward_pass else None,
                       # the versions of what tokenized the texts and ran the model (another transformers or
                       # tokenizers can read the same tokenizer files into other ids, another torch give other last
                       # bits), as each Ray and Spark worker's entry records its own
                       "libraries": libraries()},
            "chunk_rows": state["chunk_rows"],
            "chunk_chars": state["chunk_chars"],
            "reading": state["reading"],  # how a CSV was parsed (delimiter, kept-column types): part of what was read
            "cache_dir": recorded_path(cache_dir),
        }
        mark_finished(paths, state, manifest, tmp, rows_of)  # a run stopped from here on is finished by the next
        paths.manifest.unlink(missing_ok=True)  # an earlier output's: never beside features it does not describe
        locks.retried(os.replace, tmp, paths.out)  # Windows: an antivirus may be reading the new file
    finally:
        tmp.unlink(missing_ok=True)
    atomic_write_bytes(paths.manifest, json.dumps(manifest, indent=2).encode())
    shutil.rmtree(paths.partial, ignore_errors=True)
    return manifest
