"""What the Spark engine reads: the input's parquet files in input order, with their row counts, in types Spark
can read (a CSV, or parquet Spark cannot read as it is, streamed by the local engine's reader into parquet that
Spark can), and their paths as Hadoop and Spark's file URLs spell them. Imports pyspark only inside the functions
that need a session; :mod:`bertfeat.spark` runs the job."""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bertfeat.files import InputReader


def _parquet_files(reader: InputReader, staged: Path) -> tuple[list[Path], list[int]]:
    """The parquet files Spark reads, in input order, and their row counts: the input's own, or a CSV streamed into
    one file per ``chunk_rows`` rows by the local engine's reader."""
    if reader.kind == "parquet":
        return list(reader.files), [pq.ParquetFile(f).metadata.num_rows for f in reader.files]
    return _stage(reader, staged)


def _stage(reader: InputReader, staged: Path) -> tuple[list[Path], list[int]]:
    """The input's needed columns streamed by the local engine's reader (its parsing, its one type per column) into
    one parquet file per ``chunk_rows`` rows, in types Spark reads: a type Spark has none for goes as the numbers
    it holds (float16 as float32, a time of day as its integer), and each task casts it back to the input's type."""
    if not _hadoop_readable(staged):
        raise ValueError(
            f"the Spark engine stages this input under {str(staged)!r}, and Spark (Hadoop) reads no path with ':' in "
            "a folder or file name ('Relative path in absolute URI'): pass an out= whose path has no ':', or use "
            "the local engine."
        )
    staged.mkdir(parents=True)
    files, counts = [], []
    try:
        for k, batch in enumerate(reader.batches()):
            path = staged / f"rows-{k:06d}.parquet"
            table = pa.Table.from_batches([batch])
            table = table.cast(pa.schema([pa.field(f.name, _spark_readable(f.type)) for f in table.schema]))
            pq.write_table(table, path, row_group_size=max(1, batch.num_rows))
            files.append(path)
            counts.append(batch.num_rows)
    except (ValueError, TypeError):
        # a mistake in the input (a malformed line, a header repeated, a string not UTF-8) found past the rows
        # staged so far: as on the local engine, it leaves nothing beside --out (the staged rows, as big as the input,
        # and the job's folder where nothing else is in it)
        shutil.rmtree(staged, ignore_errors=True)
        with contextlib.suppress(OSError):
            staged.parent.rmdir()
        raise
    return files, counts


def _spark_readable(t: pa.DataType) -> pa.DataType:
    """The type a staged column is written in: ``t``, or the numbers of a type Spark has none for."""
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_time64(t):
        return pa.int64()
    return t


# The parquet codecs Spark's own reader decompresses (parquet-mr with Hadoop's codecs): BROTLI and LZO need codec
# jars Spark does not ship, so a file pyarrow or pandas wrote with compression="brotli" failed the job in its tasks
# (ClassNotFoundException: org.apache.hadoop.io.compress.BrotliCodec), where the local engine reads it.
SPARK_CODECS = frozenset({"UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD", "LZ4", "LZ4_RAW"})


def _spark_codecs(metadata) -> bool:
    """Whether every column chunk of a parquet file (its ``metadata``) is compressed with a codec Spark reads."""
    return all(metadata.row_group(g).column(c).compression in SPARK_CODECS
               for g in range(metadata.num_row_groups) for c in range(metadata.num_columns))


def _spark_schema(spark, files, columns: list[str], widened: pa.Schema | None = None):
    """The Spark schema of ``columns`` that reads every one of ``files``, or None where there is none: a file Spark
    cannot read (a column of a type Spark has none for, float16 or a time of day, even a column the job does not
    read; a codec Spark cannot decompress, brotli; a path Hadoop cannot read, :func:`_hadoop_readable`), or files
    whose columns Spark reads as different types that its reader cannot read in the local engine's wider type
    (``widened``: a column all null in one file, written as parquet's null type; millisecond beside nanosecond
    times). Read with it, Spark never looks at the other columns. One file of each parquet schema is asked."""
    from pyspark.errors import AnalysisException
    from pyspark.sql.types import StructType

    if not all(_hadoop_readable(f) for f in files):
        return None
    kinds = []  # (parquet schema, its first file)
    for f in files:
        pf = pq.ParquetFile(f)
        if not _spark_codecs(pf.metadata):
            return None
        schema = pf.schema
        if not any(schema.equals(known) for known, _ in kinds):
            kinds.append((schema, f))
    read = []
    for _, f in kinds:
        try:
            inferred = spark.read.parquet(_hadoop_literal(str(f.resolve()))).schema
        except AnalysisException:  # PARQUET_TYPE_ILLEGAL, UNSUPPORTED_TIME_TYPE, ...
            return None
        read.append(StructType([inferred[c] for c in columns]))
    if all(schema == read[0] for schema in read):
        return read[0]
    return None if widened is None else _widened_schema(read, widened, columns)


def _widened_schema(read, widened: pa.Schema, columns: list[str]):
    """The Spark schema of ``columns`` in the local engine's wider types (``widened``), where Spark's parquet reader
    reads each file's type (``read``: a Spark schema per kind of file) as that wider one: int32 ids beside int64
    ones, float32 beside float64, decimals of other precisions. Those files were staged through the driver, every
    row read and written again by one machine, where Spark reads them itself. None for any other difference."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    fields = []
    for c in columns:
        try:
            want = from_arrow_type(widened.field(c).type)
        except (TypeError, KeyError):  # a type Spark has none for
            return None
        if not all(_spark_widens(schema[c].dataType, want) for schema in read):
            return None
        fields.append(StructField(c, want, nullable=True))
    return StructType(fields)


def _spark_widens(have, want) -> bool:
    """Whether Spark's parquet reader reads a column it infers as ``have`` in type ``want`` (Spark 4's type
    widening, SPARK-40876): the same type, an int as a long or a double, a float as a double, a decimal as one with
    as many digits before and after the point."""
    from pyspark.sql.types import DecimalType, DoubleType, FloatType, IntegerType, LongType

    if have == want:
        return True
    if isinstance(have, IntegerType):
        return isinstance(want, (LongType, DoubleType))
    if isinstance(have, FloatType):
        return isinstance(want, DoubleType)
    if isinstance(have, DecimalType) and isinstance(want, DecimalType):
        return want.scale >= have.scale and want.precision - want.scale >= have.precision - have.scale
    return False


def _hadoop_readable(path: Path) -> bool:
    """Whether Spark can read ``path``: Hadoop takes a ``:`` in a folder or file name (a time in it,
    ``2024-01-01T00:00:00.parquet``) for a URI's scheme, and the job failed with a Java traceback ('Relative path in
    absolute URI') where the local engine reads the file."""
    return ":" not in str(Path(path).resolve())


def _check_visible(files) -> None:
    """Refuse input files Spark would skip without a word."""
    hidden = [str(f) for f in files if f.name.startswith(("_", "."))]
    if hidden:
        raise ValueError(
            f"Spark skips input file(s) {hidden[:3]} (names starting with '_' or '.' are hidden from Spark); rename "
            "them, or use the local engine."
        )


def _first_rows(files, counts):
    """A Spark map: each input file's local path -> the input row number of its first row."""
    from pyspark.sql import functions as F

    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist()
    return F.create_map(*[F.lit(x) for f, start in zip(files, starts) for x in (str(f.resolve()), int(start))])


def _hadoop_literal(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped: Spark reads a path as a pattern, so ``reviews[1].parquet``
    would read ``reviews1.parquet``, and a folder named with braces would not be found."""
    return re.sub(r"([\\*?\[\]{}])", r"\\\1", path)


def _local_path(url):
    """The local path of Spark's file URL (``file:///a%20b/x.parquet`` -> ``/a b/x.parquet``), computed by Spark, so
    that no job has to list the names Spark gives the files. A ``+`` is a plus in a path, not a space."""
    from pyspark.sql import functions as F

    path = F.regexp_extract(url, r"^[A-Za-z][A-Za-z0-9+.-]*:(?://[^/]*)?(/.*)$", 1)
    return F.url_decode(F.regexp_replace(path, r"\+", "%2B"))
