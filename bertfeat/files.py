"""Featurizing files: stream CSV/parquet in bounded chunks, embed each, write parquet with provenance, resume.

``embed_file`` reads the input in chunks of ``chunk_rows`` rows, runs each through an
:class:`~bertfeat.arrow.ArrowFeaturizer`, and writes each chunk's features as its own parquet part (temp file +
atomic rename) in ``<out>.partial/``. A re-run of the same command after a crash skips the parts already written.
At the end the parts are joined, one row group each, into ``<out>`` (written under a temp name, then renamed), and
``<out>.manifest.json`` records the provenance, counts and timing. Memory stays bounded by one chunk.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat.encode import EncodeStats
from bertfeat.exceptions import TruncationWarning

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".tsv", ".tsv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
STATE_VERSION = 1
CSV_NULLS = ["", "NA", "N/A", "NaN", "nan", "NULL", "null", "None", "<NA>"]


# -- input ------------------------------------------------------------------------------------------------------


def resolve_input(path: str) -> tuple[str, list[Path]]:
    """``("csv" | "parquet", files)`` for a CSV file, a parquet file, or a directory or glob of parquet files."""
    p = Path(path)
    if any(ch in path for ch in "*?["):
        files = sorted(Path(f) for f in glob.glob(path, recursive=True) if Path(f).is_file())
        if not files:
            raise FileNotFoundError(f"input {path!r} matches no files.")
    elif p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.name.lower().endswith(PARQUET_SUFFIXES))
        if not files:
            raise FileNotFoundError(f"input directory {path!r} holds no parquet files (*.parquet).")
    elif p.is_file():
        files = [p]
    else:
        raise FileNotFoundError(f"input {path!r} does not exist.")
    kinds = {_kind(f) for f in files}
    if kinds == {"csv"} and len(files) == 1:
        return "csv", files
    if kinds == {"parquet"}:
        return "parquet", files
    raise ValueError(
        f"input {path!r}: expected one CSV file ({', '.join(CSV_SUFFIXES)}) or parquet files "
        f"({', '.join(PARQUET_SUFFIXES)}), got {sorted(str(f.name) for f in files)[:5]}."
    )


def _kind(f: Path) -> str | None:
    name = f.name.lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    return None


class _CountingFile:
    """A read-only file wrapper that counts bytes read, for a progress fraction on CSV input."""

    def __init__(self, path: Path):
        self._fh = open(path, "rb")
        self.size = os.fstat(self._fh.fileno()).st_size
        self.read_bytes = 0
        self.closed = False

    def read(self, n=-1):
        data = self._fh.read(n)
        self.read_bytes += len(data)
        return data

    def readable(self):
        return True

    def seekable(self):
        return False

    def close(self):
        self.closed = True
        self._fh.close()


class InputReader:
    """Record batches of the needed columns, re-cut to exactly ``chunk_rows`` rows (the last may be shorter)."""

    def __init__(self, path: str, columns: list[str], chunk_rows: int, text_cols: list[str]):
        self.path = path
        self.kind, self.files = resolve_input(path)
        self.columns = list(dict.fromkeys(columns))
        self.chunk_rows = chunk_rows
        self.text_cols = text_cols
        self.total_rows: int | None = None
        self._counting: _CountingFile | None = None
        if self.kind == "parquet":
            self.schema = self._parquet_schema()
            self.total_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in self.files)
        else:
            self.schema = self._csv_schema()

    def fingerprint(self) -> dict:
        return {"path": str(Path(self.path).resolve()) if not any(c in self.path for c in "*?[") else self.path,
                "files": [[str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns] for f in self.files]}

    def fraction_done(self) -> float | None:
        if self._counting is not None and self._counting.size:
            return min(1.0, self._counting.read_bytes / self._counting.size)
        return None

    def _parquet_schema(self) -> pa.Schema:
        schema = pq.read_schema(self.files[0])
        for f in self.files[1:]:
            other = pq.read_schema(f)
            if other.names != schema.names:
                raise ValueError(f"parquet file {f} has columns {other.names}, unlike {self.files[0]} ({schema.names}).")
        self._check_columns(schema)
        return pa.schema([schema.field(c) for c in self.columns])

    def _check_columns(self, schema: pa.Schema):
        absent = [c for c in self.columns if c not in schema.names]
        if absent:
            raise ValueError(f"column(s) {absent} not found in {self.path}; it has columns {schema.names}.")

    def _csv_options(self):
        import pyarrow.csv as pcsv

        delimiter = "\t" if ".tsv" in self.files[0].name.lower() else ","
        read = pcsv.ReadOptions(block_size=1 << 20)
        parse = pcsv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
        # Text columns are read as text whatever they look like (a column of "1", "2" is still text to embed).
        # Missing: an unquoted empty field or NA marker (as pandas and R write them); a quoted value is always text,
        # so R's write.csv keeps the string "NA" (quoted) apart from a missing NA (unquoted).
        convert = pcsv.ConvertOptions(include_columns=self.columns,
                                      column_types={c: pa.string() for c in self.text_cols},
                                      null_values=CSV_NULLS, strings_can_be_null=True,
                                      quoted_strings_can_be_null=False)
        return read, parse, convert

    def _open_csv(self):
        import pyarrow.csv as pcsv

        self._counting = _CountingFile(self.files[0])
        stream = pa.PythonFile(self._counting, mode="r")
        name = self.files[0].name.lower()
        for suffix, codec in ((".gz", "gzip"), (".bz2", "bz2"), (".zst", "zstd")):
            if name.endswith(suffix):
                stream = pa.CompressedInputStream(stream, codec)
        read, parse, convert = self._csv_options()
        return pcsv.open_csv(stream, read_options=read, parse_options=parse, convert_options=convert)

    def _csv_schema(self) -> pa.Schema:
        header = self._csv_header()
        self._check_columns(pa.schema([(c, pa.string()) for c in header]))
        try:
            schema = self._open_csv().schema
        except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
            raise ValueError(self._csv_problem(exc)) from None
        finally:
            self._counting.close()
        return schema

    def _csv_header(self) -> list[str]:
        import csv
        import gzip
        import io

        name = self.files[0].name.lower()
        opener = gzip.open if name.endswith(".gz") else open
        try:
            with opener(self.files[0], "rb") as fh:
                first = io.TextIOWrapper(fh, encoding="utf-8", newline="").readline()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {self.path} as UTF-8 CSV: {exc}") from None
        if not first.strip():
            raise ValueError(f"{self.path} is empty: no header line.")
        return next(csv.reader([first], delimiter="\t" if ".tsv" in name else ","))

    def _csv_problem(self, exc: Exception) -> str:
        """Turn a pyarrow CSV error into a message with the line number, found by re-reading with Python's csv."""
        import csv
        import gzip
        import io

        name = self.files[0].name.lower()
        delimiter = "\t" if ".tsv" in name else ","
        opener = gzip.open if name.endswith(".gz") else open
        line = None
        try:
            with opener(self.files[0], "rb") as fh:
                reader = csv.reader(io.TextIOWrapper(fh, encoding="utf-8", newline=""), delimiter=delimiter)
                width = None
                for row in reader:
                    if width is None:
                        width = len(row)
                    elif len(row) != width and row:
                        line = reader.line_num
                        break
        except (UnicodeDecodeError, csv.Error) as scan_exc:
            return f"{self.path} is not a readable UTF-8 CSV file: {scan_exc}"
        where = f" at line {line}" if line else ""
        return f"{self.path} is malformed{where}: {str(exc).splitlines()[0]}"

    def batches(self):
        """Yield record batches of exactly ``chunk_rows`` rows (the last one shorter)."""
        pending: list[pa.RecordBatch] = []
        n_pending = 0
        for batch in self._raw_batches():
            pending.append(batch)
            n_pending += batch.num_rows
            while n_pending >= self.chunk_rows:
                table = pa.Table.from_batches(pending, schema=batch.schema)
                yield _as_batch(table.slice(0, self.chunk_rows))
                rest = table.slice(self.chunk_rows)
                pending, n_pending = rest.to_batches(), rest.num_rows
        if n_pending:
            yield _as_batch(pa.Table.from_batches(pending, schema=self.schema))

    def _raw_batches(self):
        if self.kind == "parquet":
            for f in self.files:
                # pre_buffer (pyarrow's default) keeps whole column chunks cached while iterating, so memory would
                # grow with the file; a small read buffer streams it instead.
                with pq.ParquetFile(f, pre_buffer=False, buffer_size=1 << 20) as pf:
                    yield from (b.select(self.columns) for b in
                                pf.iter_batches(batch_size=min(self.chunk_rows, 65536), columns=self.columns))
            return
        reader = self._open_csv()
        try:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
                    raise ValueError(self._csv_problem(exc)) from None
                yield batch.select(self.columns)
        finally:
            self._counting.close()


def _as_batch(table: pa.Table) -> pa.RecordBatch:
    table = table.combine_chunks()
    batches = table.to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


# -- distinct texts ----------------------------------------------------------------------------------------------


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
    """64-bit hashes of the distinct non-missing texts in ``values``."""
    distinct = {v for v in values if isinstance(v, str)}
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(v.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
         for v in distinct), dtype=np.uint64, count=len(distinct))


# -- progress ----------------------------------------------------------------------------------------------------


class Progress:
    """A progress bar with rows/s and ETA on a terminal; otherwise a log line every ``every`` seconds."""

    def __init__(self, total: int | None, quiet: bool, every: float = 10.0, stream=None):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.total = total
        self.every = every
        self.done = 0
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.bar = None
        if not quiet and self.stream.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="rows", unit_scale=True, desc="bertfeat embed", file=self.stream,
                            dynamic_ncols=True)

    def update(self, rows: int, fraction: float | None = None) -> None:
        self.done += rows
        if self.quiet:
            return
        total = self.total
        if total is None and fraction and fraction < 1.0:  # CSV: estimate from bytes read (known only mid-file)
            total = int(self.done / fraction)
        if self.bar is not None:
            if total and self.bar.total != total:
                self.bar.total = total
            self.bar.update(rows)
            return
        now = time.perf_counter()
        if now - self.last >= self.every:
            self.last = now
            rate = self.done / max(now - self.t0, 1e-9)
            eta = f", ETA {_duration((total - self.done) / rate)}" if total and rate else ""
            pct = f" / {total:,} ({100 * self.done / total:.1f}%)" if total else ""
            print(f"bertfeat embed: {self.done:,}{pct} rows, {rate:,.0f} rows/s{eta}", file=self.stream, flush=True)

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


@dataclass
class _Paths:
    out: Path

    @property
    def partial(self) -> Path:
        return self.out.with_name(self.out.name + ".partial")

    @property
    def manifest(self) -> Path:
        return self.out.with_name(self.out.name + ".manifest.json")

    def part(self, k: int) -> Path:
        return self.partial / f"part-{k:06d}.parquet"

    def part_stats(self, k: int) -> Path:
        return self.partial / f"part-{k:06d}.json"

    def part_hashes(self, k: int) -> Path:
        return self.partial / f"part-{k:06d}.hashes.npy"


def check_output(paths: _Paths, reader: InputReader, overwrite: bool) -> None:
    """``--out`` is neither an input file nor a folder holding one, its folder exists, and an existing output is
    replaced only with ``overwrite`` (both engines)."""
    out, partial = paths.out.resolve(), paths.partial.resolve()
    for f in reader.files:
        f = f.resolve()
        if f == out:
            raise ValueError(f"--out {str(paths.out)!r} is the input file; write the features to another path.")
        if out in f.parents or partial in f.parents:
            raise ValueError(f"--out {str(paths.out)!r} holds the input file {str(f)!r}; write the features elsewhere.")
    if not paths.out.parent.exists():
        raise FileNotFoundError(f"the folder of --out {str(paths.out)!r} does not exist; create it first.")
    if paths.out.exists() and not overwrite:
        raise FileExistsError(f"output {str(paths.out)!r} exists; pass --overwrite (overwrite=True) to replace it.")


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def embed_file(
    input: str,
    out: str,
    text_cols,
    *,
    keep_cols=(),
    layout: str = "columns",
    overwrite: bool = False,
    chunk_rows: int = 10_000,
    quiet: bool = False,
    progress_every: float = 10.0,
    **params,
) -> dict:
    """Embed the text columns of a CSV/parquet file (or directory/glob of parquet) into a features parquet file.

    Returns the manifest (also written to ``<out>.manifest.json``). ``params`` are BertEmbedder parameters
    (model, pooling, layers, cache_dir, ...). See the module docstring for the resume protocol.
    """
    from bertfeat.arrow import ArrowFeaturizer

    t0 = time.perf_counter()
    text_cols = [text_cols] if isinstance(text_cols, str) else list(text_cols)
    keep_cols = [keep_cols] if isinstance(keep_cols, str) else list(keep_cols)
    if not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise ValueError(f"chunk_rows={chunk_rows!r} is not valid: expected a positive number of rows.")
    paths = _Paths(Path(out))
    reader = InputReader(input, keep_cols + text_cols, chunk_rows, text_cols)
    check_output(paths, reader, overwrite)
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
        "provenance": featurizer.provenance(),
        "schema": schema.to_string(show_schema_metadata=False),
    }
    resumed = _prepare_partial(paths, state)

    progress = Progress(reader.total_rows, quiet, every=progress_every)
    resumed_rows = 0
    k = -1
    try:
        for k, batch in enumerate(reader.batches()):
            if k in resumed:
                resumed_rows += batch.num_rows
                progress.update(batch.num_rows, reader.fraction_done())
                continue
            with warnings.catch_warnings():
                # one summary at the end instead of a truncation warning per chunk
                warnings.simplefilter("ignore", TruncationWarning)
                result = featurizer(batch)
            chunk_stats = featurizer.embedder.stats_.to_dict()
            np.save(paths.part_hashes(k).with_suffix(".tmp.npy"),
                    np.concatenate([text_hashes(batch.column(c).to_pylist()) for c in text_cols]))
            os.replace(paths.part_hashes(k).with_suffix(".tmp.npy"), paths.part_hashes(k))
            _write_part(paths.part(k), result)
            _atomic_write_bytes(paths.part_stats(k), json.dumps(chunk_stats).encode())
            progress.update(batch.num_rows, reader.fraction_done())
    finally:
        progress.close()
    n_parts = k + 1
    if n_parts == 0:
        shutil.rmtree(paths.partial, ignore_errors=True)
        raise ValueError(f"input {input!r} has no rows to embed.")
    manifest = _finish(paths, n_parts, schema, featurizer, state, resumed_rows, t0, user_cache)
    if not quiet:
        print_summary(manifest)
    return manifest


def print_summary(manifest: dict, stream=None) -> None:
    """The one-line summary of a finished job, on stderr."""
    c = manifest["counts"]
    print(
        f"bertfeat embed: wrote {manifest['output']} ({c['rows']:,} rows x {manifest['provenance']['dims']} dims per "
        f"text column) in {_duration(manifest['timing']['seconds'])}; {c['embedded']:,} texts embedded, "
        f"{c['cache_hits']:,} from cache, {c['rows_resumed']:,} rows resumed, {c['truncated']:,} truncated, "
        f"{c['missing']:,} missing",
        file=stream or sys.stderr,
    )


def _prepare_partial(paths: _Paths, state: dict) -> set[int]:
    """Reuse the parts of an interrupted run of the same job; start clean otherwise."""
    state_file = paths.partial / "state.json"
    if paths.partial.exists():
        try:
            same = json.loads(state_file.read_text()) == json.loads(json.dumps(state))
        except (OSError, ValueError):
            same = False
        if same:
            done = set()
            for f in paths.partial.glob("part-*.json"):
                k = int(f.name[5:11])
                if paths.part(k).exists() and paths.part_hashes(k).exists() and _readable(paths.part(k)):
                    done.add(k)
            return done
        shutil.rmtree(paths.partial)
    paths.partial.mkdir(parents=True)
    _atomic_write_bytes(state_file, json.dumps(state, indent=1).encode())
    return set()


def _readable(part: Path) -> bool:
    try:
        pq.ParquetFile(part).metadata
        return True
    except Exception:
        return False


def _write_part(path: Path, batch: pa.RecordBatch) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(pa.Table.from_batches([batch]), tmp, row_group_size=max(1, batch.num_rows))
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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


def _finish(paths: _Paths, n_parts: int, schema: pa.Schema, featurizer, state: dict, resumed_rows: int,
            t0: float, cache_dir) -> dict:
    totals = EncodeStats()
    counter = DistinctCounter()
    tmp = paths.out.with_name(f".{paths.out.name}.tmp-{os.getpid()}")
    with pq.ParquetWriter(tmp, schema) as writer:
        for k in range(n_parts):
            part = pq.read_table(paths.part(k), schema=schema.remove_metadata())
            writer.write_table(part.replace_schema_metadata(schema.metadata), row_group_size=max(1, part.num_rows))
            totals += EncodeStats(**json.loads(paths.part_stats(k).read_text()))
            counter.add(np.load(paths.part_hashes(k)))
    manifest = {
        "output": str(paths.out),
        "engine": "local",
        "input": state["input"],
        "provenance": featurizer.provenance(),
        "counts": job_counts(totals, counter, len(featurizer.text_cols), resumed_rows, n_parts),
        "timing": {"seconds": round(time.perf_counter() - t0, 3), "embed_seconds": round(totals.seconds, 3)},
        "chunk_rows": state["chunk_rows"],
        "cache_dir": None if cache_dir is None else str(cache_dir),
    }
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, paths.out)
    _atomic_write_bytes(paths.manifest, json.dumps(manifest, indent=2).encode())
    shutil.rmtree(paths.partial, ignore_errors=True)
    return manifest
