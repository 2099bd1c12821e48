"""Reading input files: CSV/TSV (optionally compressed) and parquet, streamed as record batches of bounded size
(which files an input names is :mod:`bertfeat.sources`; a CSV file's byte stream, :mod:`bertfeat.csv_stream`; the
refusals of a CSV file's problems, :mod:`bertfeat.csv_problems`).

:class:`InputReader` resolves the input (a file, a directory or a glob), checks everything that can be checked
before any work (header, duplicate or absent columns, parquet schemas that disagree), and yields record batches of
the needed columns re-cut into chunks of at most ``chunk_rows`` rows and ``chunk_chars`` text characters.

CSV policy (docs/cli.md lists it for users): the delimiter is the one declared (``,``, or tab for ``.tsv``, or
``delimiter=``, or a first line ``sep=;`` as Excel reads it); a UTF-8 byte order mark is skipped; every column is
read as text unless ``infer_types=True``; an unquoted empty field or NA marker is missing, a quoted one is text
(under ``quoting='backslash'``: an empty field, ``\\N`` and ``NULL`` only, a database's NULL); a blank line
in a file of one column is a row whose value is missing (elsewhere skipped); a
quote left open at the end of the file, and a quoted value with more text after its closing quote, are errors naming
their lines; a carriage return no line feed follows is part of its value where the header's line ends with LF or
CRLF (Python's csv module writes it unquoted); where the quoting is not declared, a quote after a backslash in a
value not quoted (pandas' to_csv with an escapechar and doublequote off) is refused. Parquet string values must be
valid UTF-8 (an error names the file, column and row).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import sys
import zlib
from pathlib import Path
from typing import NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bertfeat import exports, joined
from bertfeat.csv_problems import CsvProblems, _long_window
from bertfeat.csv_stream import (  # noqa: F401  (NUL_RUN, ZEROS: readers' public names since before the split)
    NUL_RUN,
    ZEROS,
    _CountingFile,
    _csv_field,
    _csv_lines,
    _first_lines,
    _no_field_limit,
    excel_sep_line,
    open_decompressed,
    restore,
)
from bertfeat.escapes import checked, decode, decode_quoted
from bertfeat.schemas import lost_value, may_lose, roomy, widened
from bertfeat.schemas import refusal as schema_refusal
from bertfeat.sources import (  # noqa: F401  (readers' public names since before the split)
    CSV_SUFFIXES, PARQUET_SUFFIXES, _codec, _kind, input_path, is_pattern, path_text, recorded_name,
    resolve_input,
)
from bertfeat.links import link_docs
from bertfeat.sniff import HEAD, not_csv_text, not_its_compression, not_parquet
from bertfeat.utf8 import invalid_values

__doc__ = link_docs(__doc__)  # its docs as addresses: an installed bertfeat has no docs/ folder

# \N is the NULL of database text exports: PostgreSQL's COPY text format (\copy t TO 'f.tsv'), MySQL's SELECT ... INTO
# OUTFILE (quoted CSV too), Hive's text tables, Snowflake's unloads; read as text it was embedded as the text "\N".
CSV_NULLS = ["", "NA", "N/A", "NaN", "nan", "NULL", "null", "None", "<NA>", "\\N"]
# Under quoting='backslash' a file's writer has a NULL of its own and writes every other value as its text (PostgreSQL's
# COPY text format: \N, and 'NA', 'None' or 'N/A' are texts, a country code or a survey's answer): \N, the word NULL
# (mysql --batch writes NULL so) and an empty field (Redshift's UNLOAD ... ESCAPE) are missing there, no other marker.
ESCAPED_NULLS = ["", "NULL", "\\N"]
# Windows' st_ctime is a file's creation time, not its change time, and a file renamed over another, or created
# where one was just removed, takes that one's creation time (tunnelling): there a file's identity adds its id
# (st_ino, NTFS's file index, stable and not made up per mount as on FUSE)
CTIME_IS_CREATION = sys.platform == "win32"
# pyarrow parses a CSV in blocks and cannot parse a record across more than two: a long value is given whole in one
# piece where the stream can tell no record ends in it (csv_stream._CountingFile: no line end, or quoted and no
# quote), else the block grows and the read restarts (skipping the rows already delivered) until the longest field
# fits, up to this bound.
BLOCK_BYTES = 1 << 20
MAX_BLOCK_BYTES = 1 << 31


class InputReader(CsvProblems):
    """Record batches of the needed columns, re-cut into chunks of ``chunk_rows`` rows (the last may be shorter),
    cut earlier where the chunk's texts would exceed ``chunk_chars`` characters (a bound on a chunk's work). A CSV's
    columns are read as written, as text, unless ``infer_types=True`` (then types are guessed from the first block,
    and a zip code "01234" becomes 1234). The refusals of a CSV file's problems are :class:`CsvProblems`'."""

    def __init__(self, path, columns: list[str], chunk_rows: int, text_cols: list[str], *,
                 chunk_chars: int | None = None, delimiter: str | None = None, infer_types: bool = False,
                 quoting: str | None = None, exclude=()):
        self.path = path = input_path(path)
        self.kind, self.files = resolve_input(path, exclude)
        self.columns = list(dict.fromkeys(columns))
        self.chunk_rows = chunk_rows
        self.chunk_chars = chunk_chars
        self.text_cols = text_cols
        self.infer_types = infer_types
        self.total_rows: int | None = None
        self._counting: _CountingFile | None = None
        self._as_written: list[str] = []  # kept columns read as text under infer_types (_integers_past_int64)
        if self.kind == "parquet":
            if delimiter is not None:
                raise ValueError(f"delimiter={delimiter!r} applies to CSV input only, and {path!r} is parquet.")
            if infer_types:  # else recorded in a job's manifest (`reading`) as if types had been guessed
                raise ValueError(f"infer_types=True applies to CSV input only, and {path!r} is parquet, whose columns "
                                 "have their types; drop infer_types.")
            if quoting is not None:
                raise ValueError(f"quoting={quoting!r} applies to CSV input only, and {path!r} is parquet; drop "
                                 "quoting.")
            self.schema = self._parquet_schema()
            self.total_rows = 0
            for f in self.files:
                with _naming_parquet_file(f):
                    self.total_rows += pq.ParquetFile(f).metadata.num_rows
            self.has_rows = self.total_rows > 0  # as a CSV says it (_csv_header): an empty input is refused early
        else:
            self._header_may_repeat = True  # until a row that may repeat it is found to be no header
            self._header_watch = None  # the rows made sure of so far (joined.Watch), where one may repeat it
            self.quoting = checked(quoting)
            # a TSV whose quoting was not declared: a quoted value holding a tab after a line break is refused
            self._watch_rows = quoting is None
            # a file whose quoting was not declared: a quote after a backslash in a value not quoted is refused
            self._watch_quote_escapes = quoting is None
            self._watch_escapes = quoting is None  # until a text shows the file is no backslash-escaped export
            self.sep_line = excel_sep_line(self.files[0])
            self.delimiter = self._delimiter(delimiter)
            self.schema = self._csv_schema()

    def reading(self) -> dict:
        """How the input is read, as a job records it: a CSV's delimiter (None for parquet), and whether a CSV's kept
        columns' types are guessed."""
        return {"delimiter": getattr(self, "delimiter", None), "infer_types": self.infer_types,
                "quoting": getattr(self, "quoting", None)}

    def fingerprint(self) -> dict:
        """The input as a job records it: each file's path, size and modification time (what the manifest reports),
        and its change time, which tells the same file from another put at its path with the same size and
        modification time (``cp -p``, ``rsync -t``, ``touch -r``, a rename over it): no tool sets a change time, and
        it stays while a file is only read, also seen from another host of a shared filesystem. Not the inode: FUSE
        mounts of object stores (s3fs, gcsfuse, /dbfs), and SMB without server inode numbers, make inode numbers up
        per mount, or anew once the kernel forgets the file, so the same untouched file would lose its resume after
        a remount, or fail the job as "changed while read". On Windows, whose st_ctime is the creation time, which a
        file put at the path keeps, the identity is the file's id and that time (:data:`CTIME_IS_CREATION`): a file
        renamed over it is told apart, one rewritten in place with its size and modification time set back is not. Where
        the fingerprint cannot tell two files apart (there; on sshfs and gcsfuse, whose change time is the modification
        time), a resumed job's parts are told apart by their rows (:func:`bertfeat.resume.rows_digest`)."""
        stats = [(f, f.stat()) for f in self.files]
        # a pattern made absolute, as the manifest's other paths (named from any folder), but not resolved: a * may
        # match a link, which resolving would make another path
        path = os.path.abspath(self.path) if is_pattern(self.path) else Path(self.path).resolve()
        return {"path": recorded_name(path),
                "files": [[recorded_name(f.resolve()), st.st_size, st.st_mtime_ns] for f, st in stats],
                "identity": [[st.st_ino, st.st_ctime_ns] if CTIME_IS_CREATION else st.st_ctime_ns for _, st in stats]}

    def check_unchanged(self, fingerprint: dict) -> None:
        """Refuse an input whose :meth:`fingerprint` is no longer ``fingerprint`` (taken before reading it): a file
        still being copied or written was read up to where it had got (a cut last line read as a whole row), or
        part from one version and part from another."""
        try:
            same = self.fingerprint() == fingerprint
        except FileNotFoundError as exc:  # a file of it is gone (it was read whole through its open handle)
            raise ValueError(
                f"input file {os.fsdecode(exc.filename or self.path)!r} was removed or renamed while the job read it; "
                "nothing was written. Put it back (or name it where it is now), then run the command again."
            ) from None
        if not same:
            raise ValueError(
                f"input {self.path!r} changed while the job read it (a file's size, modification or change time is "
                "not what it was at the start: is it still being copied or written?), so the rows read are of no one "
                "version of it; nothing was written. Once it is complete, run the same command again."
            )

    def fraction_done(self) -> float | None:
        """The fraction of a CSV file's (compressed) bytes read so far; None for parquet (``total_rows`` is known)."""
        if self._counting is not None and self._counting.size:
            if self._counting.eof:  # all read (and maybe closed already, before the last chunk is delivered)
                return 1.0
            return min(1.0, self._counting.read_bytes / self._counting.size)
        return None

    # -- parquet ---------------------------------------------------------------------------------------------------

    def _parquet_schema(self) -> pa.Schema:
        schemas = {}
        for f in self.files:
            with _naming_parquet_file(f):
                schemas[f] = pq.read_schema(f)
        self._refuse_other_jobs_output(schemas)
        first = schemas[self.files[0]]
        _refuse_duplicates(first.names, str(self.files[0]))
        self._check_columns(first)
        types = {self.files[0]: {c: first.field(c).type for c in self.columns}}  # each file's, of the columns read
        wanted = dict(types[self.files[0]])
        for f in self.files[1:]:
            other = schemas[f]
            _refuse_duplicates(other.names, str(f))
            if _compared(other.names, self.columns) != _compared(first.names, self.columns):
                raise ValueError(f"parquet file {f} has columns {other.names}, unlike {self.files[0]} ({first.names}).")
            types[f] = {c: other.field(c).type for c in self.columns}
            for c in self.columns:
                wider = widened(wanted[c], types[f][c])
                if wider is None:  # the file where the type read so far first came, and this one
                    raise ValueError(schema_refusal(c, types[f][c], f, wanted[c], _first_with(types, c, wanted[c])))
                wanted[c] = wider
        for f, of_file in types.items():  # every value of a widened column as it will be read, before any work
            for c, t in of_file.items():
                if may_lose(t, wanted[c]):
                    with _naming_parquet_file(f):
                        lost = lost_value(f, c, t, wanted[c])
                    if lost is not None:
                        differs = _widening_file(types, c, t, wanted[c])
                        raise ValueError(schema_refusal(c, t, f, types[differs][c], differs, lost, wanted[c]))
        return pa.schema([pa.field(c, roomy(wanted[c])) for c in self.columns])

    def _refuse_other_jobs_output(self, schemas: dict) -> None:
        """Refuse a folder or glob input that holds, beside the files to embed, what bertfeat wrote there (read from
        the files' metadata): an earlier job's out= in the folder, the parts of one writing there now, or the shards
        of a cache whose cache_dir is in the folder. A second job on the same input folder (another model, another
        pooling), or the same command run again over a cache in its input folder, was refused "column(s) 'text' not
        found ...; it has columns 'id', 'text_cls_00', ..." (or 'key', 'n_tokens', 'vector'), or "has columns [...],
        unlike ...", nothing said of why or what to do. (A job leaves out its own out=, parts and cache_dir; an input
        of such files only is read as any other.)"""
        made = [f for f, schema in schemas.items()
                if {b"bertfeat", b"bertfeat.fingerprint"} & set(schema.metadata or {})]
        if not made or len(made) == len(schemas):
            return
        f = made[0]
        partial = next((p for p in f.parents if p.name.endswith(".partial")), None)
        if b"bertfeat.fingerprint" in (schemas[f].metadata or {}):
            what = f"a shard of the bertfeat cache {str(f.parent.parent)!r} (a cache_dir= in the input folder)"
            to_do = "Put each job's cache_dir= outside its input folder"
        elif partial is not None:
            what = (f"a part of the unfinished bertfeat job writing {str(partial.with_suffix(''))!r} (its .partial "
                    "folder), whose output will land there too")
            to_do = "Write each job's out= outside its input folder"
        else:
            what = "the features a bertfeat job wrote there (its out=)"
            to_do = "Write each job's out= outside its input folder"
        more = f" (and {len(made) - 1} more such file{'s' if len(made) > 2 else ''})" if len(made) > 1 else ""
        raise ValueError(
            f"input {self.path!r} holds {str(f)!r}{more}, {what}, beside the files to embed; it is no input, and its "
            f"columns are another job's. {to_do}, and move what is there out of it; or name the input files alone "
            "with a glob."
        )

    def _check_columns(self, schema: pa.Schema):
        absent = [c for c in self.columns if c not in schema.names]
        if absent:
            raise ValueError(f"column(s) {absent} not found in {self.path}; it has columns {schema.names}."
                             f"{self._why_not_found(absent, schema.names)}")

    def _why_not_found(self, absent: list[str], names: list[str]) -> str:
        """What to do, where the header shows why a column is not found: a name written in another Unicode form, with
        spaces around it or in other case, or a CSV header read as one column because the file has another
        delimiter."""
        from bertfeat.inputs import unicode_form_hint

        same_text = unicode_form_hint(absent, names)
        if same_text:
            return same_text
        partitions = self._partition_folders(absent)
        if partitions:
            return (f" {', '.join(repr(c) for c in partitions)} {'is' if len(partitions) == 1 else 'are'} in the "
                    f"names of folders ({partitions[next(iter(partitions))]}), not in the files: a hive-partitioned "
                    "dataset's folder names are read as no column (on every engine); write the column into the files "
                    "(pandas.read_parquet of the folder reads it as one, then to_parquet), or keep an id column to "
                    "join it back on.")

        def loose(name):
            return name.strip().casefold()

        near = [n for n in names if any(loose(n) == loose(a) for a in absent)]
        if near:
            return (" Names must match as written, spaces and case included: "
                    f"{', '.join(repr(n) for n in near)} {'is the name' if len(near) == 1 else 'are the names'} of "
                    f"{'that column' if len(near) == 1 else 'those columns'}.")
        if self.kind == "csv" and len(names) == 1:
            other = [d for d in (";", "\t", ",", "|") if d != self.delimiter and d in names[0]]
            if other:
                # a tab named in words, not as '\t': the command line's word for it is `tab` (delimiter='\t' below)
                held, by = ("a tab", "tabs") if other[0] == "\t" else (repr(other[0]), repr(other[0]))
                return (f" The header reads as one column holding {held}: if the file is separated by {by}, pass "
                        f"delimiter={other[0]!r}.")
        if self.kind == "csv" and any(n == "\\N" or _NUMBER.fullmatch(n.strip()) for n in names):
            return exports.no_header(self.files[0], self.delimiter, len(names))
        return ""

    def _partition_folders(self, absent: list[str]) -> dict[str, str]:
        """The ``absent`` columns that name hive partition folders (``year=2024/``) the input's files lie in, each
        with one such folder as its path shows it."""
        found: dict[str, str] = {}
        for f in self.files:
            for part in f.parent.parts:
                name, eq, _ = part.partition("=")
                if eq and name in absent and name not in found:
                    found[name] = part + "/"
        return found

    # -- CSV -------------------------------------------------------------------------------------------------------

    def _delimiter(self, declared: str | None) -> str:
        if self.sep_line is not None:  # the file's own declaration, as Excel reads it
            if declared is not None and declared != self.sep_line:
                raise ValueError(f"{self.path} declares its delimiter on its first line, 'sep={self.sep_line}' (as "
                                 f"Excel reads it), but delimiter={declared!r} was passed; drop delimiter= "
                                 "to read it as the file says, or remove that line.")
            return self.sep_line
        if declared is None:
            name = self.files[0].name.lower()
            stem = name[:name.rfind(".")] if _codec(self.files[0]) else name
            return "\t" if stem.endswith(".tsv") else ","
        if not isinstance(declared, str) or len(declared) != 1 or declared in '"\r\n' or not declared.isascii():
            raise ValueError(f"delimiter={declared!r} is not valid: expected one ASCII character other than a quote "
                             "or a line break (',' or ';', or delimiter='\\t' for a tab).")
        return declared

    def _csv_options(self, block_size: int = BLOCK_BYTES):
        import pyarrow.csv as pcsv

        # The header is read (by Python's csv, BOM skipped) and checked before pyarrow sees the file, so pyarrow is
        # told the names and skips that row: a duplicate name is refused rather than collapsed.
        read = pcsv.ReadOptions(block_size=block_size, column_names=self.header, skip_rows=self.header_lines)
        # In a file of one column a blank line after the header is a row whose value is missing: polars' and pyarrow's
        # write_csv, PostgreSQL's COPY (CSV and text) and psql -A write a null (COPY's text format and psql an empty
        # text too) so, and skipping it moved every later row's features onto the row before, silently.
        parse = pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=True,
                                  quote_char='"' if self.quoting in ("csv", "csv-backslash") else False,
                                  ignore_empty_lines=len(self.header) != 1)
        # Text columns are read as text whatever they look like (a column of "1", "2" is still text to embed), and so
        # are kept columns unless asked otherwise: an id "007" or a zip code "02134" must come out as written, and a
        # column that looks numeric for a megabyte must not fail when "A123" comes.
        # Missing: an unquoted empty field or NA marker (as pandas and R write them); a quoted value is always text,
        # so R's write.csv keeps the string "NA" (quoted) apart from a missing NA (unquoted); under quoting='backslash'
        # the export's own NULL only (ESCAPED_NULLS).
        as_text = [*self.text_cols, *self._as_written] if self.infer_types else self.columns
        convert = pcsv.ConvertOptions(include_columns=self.columns,
                                      column_types={c: pa.string() for c in as_text},
                                      null_values=ESCAPED_NULLS if self.quoting == "backslash" else CSV_NULLS,
                                      strings_can_be_null=True,
                                      quoted_strings_can_be_null=False)
        return read, parse, convert

    def _open_csv(self, block_size: int = BLOCK_BYTES):
        import pyarrow.csv as pcsv

        self._counting = _CountingFile(self.files[0], self.delimiter, self.quoting,
                                       self._watch_rows and self.delimiter == "\t", lone_cr=True,
                                       watch_escapes=self._watch_quote_escapes)
        read, parse, convert = self._csv_options(block_size)
        return pcsv.open_csv(pa.PythonFile(self._counting, mode="r"), read_options=read, parse_options=parse,
                             convert_options=convert)

    def _csv_schema(self) -> pa.Schema:
        self.header = self._csv_header()
        # header cells left empty (an Excel export's blank columns at the right: ",,") are no name used twice, unless
        # the job reads the column of no name (pandas' index)
        _refuse_duplicates([n if n or "" in self.columns else None for n in self.header], self.path)
        self._check_columns(pa.schema([(c, pa.string()) for c in self.header]))
        if not self.has_rows:  # pyarrow refuses a header with no line break after it ("could not skip initial rows")
            as_text = set(self.text_cols if self.infer_types else self.columns)
            return pa.schema([(c, pa.string() if c in as_text else pa.null()) for c in self.columns])
        block = BLOCK_BYTES
        while True:
            try:
                schema = self._open_csv(block).schema
                if self._counting.zeros_at is not None:  # in the first block: refused before any work
                    raise ValueError(self._zeros())
                self._refuse_what_the_stream_saw()  # in the first block: refused before any work
                if self.infer_types:
                    self._counting.close()
                    self._as_written = self._integers_past_int64(schema, block)
                    if self._as_written:
                        schema = self._open_csv(block).schema
                return schema
            except pa.ArrowInvalid as exc:
                if self._counting.zeros_at is not None:
                    raise ValueError(self._zeros()) from None
                if "straddl" in str(exc) and block < MAX_BLOCK_BYTES:
                    block *= 8
                    continue
                self._refuse_unparsed(exc)
            except (EOFError, OSError, zlib.error) as exc:  # the decompressor's, within the first block
                raise ValueError(self._damaged(exc, 0)) from None
            finally:
                self._counting.close()

    def _integers_past_int64(self, schema: pa.Schema, block: int) -> list[str]:
        """The columns pyarrow inferred as floats whose first block holds only integers, so integers past int64
        (else it infers int64): a float would change their digits (18446744073709551617 read as 1.8446744073709552e+19),
        so they are read as written, as text."""
        floats = [c for c in self.columns if c not in self.text_cols and pa.types.is_floating(schema.field(c).type)]
        if not floats:
            return []
        self._as_written = floats
        try:
            first = self._open_csv(block).read_next_batch()
        except StopIteration:
            return []
        finally:
            self._as_written = []
            self._counting.close()
        return [c for c in floats if pc.all(pc.match_substring_regex(first.column(c), r"^\s*[+-]?[0-9]+\s*$")).as_py()]

    def _dialect(self) -> dict:
        """How Python's csv module reads the file (its header, the line of a problem) as pyarrow reads it: its
        delimiter, and quotes, none, or none and backslash escapes (``quoting``)."""
        if self.quoting == "csv":
            return {"delimiter": self.delimiter, "strict": True}
        if self.quoting == "csv-backslash":
            return {"delimiter": self.delimiter, "strict": True, "escapechar": "\\"}
        return {"delimiter": self.delimiter, "quoting": csv.QUOTE_NONE,
                "escapechar": "\\" if self.quoting == "backslash" else None}

    def _text(self):
        return io.TextIOWrapper(open_decompressed(self.files[0]), encoding="utf-8-sig", newline="")

    def _csv_header(self) -> list[str]:
        first = None
        self.has_rows = False
        try:  # no text at all (a .gz saved as .csv, a workbook renamed): named as what it is, before any reading
            with open_decompressed(self.files[0]) as fh:
                said = not_csv_text(self.path, fh.read(HEAD))
        except (OSError, EOFError, zlib.error):  # not of its compression, or else damaged: the reading below says so
            try:
                with open(self.files[0], "rb") as raw:
                    said = not_its_compression(self.path, raw.read(HEAD))
            except OSError:
                said = None
        if said:
            raise ValueError(said)
        try:
            with self._text() as fh:  # a table drawn for the terminal (psql, mysql, sqlite3, DuckDB) or a page
                said = exports.drawn_table(self.path, _first_lines(fh, 2))
            if said:
                raise ValueError(said)
            with self._text() as fh, _no_field_limit():
                reader = csv.reader(_csv_lines(fh), **self._dialect())
                if self.sep_line is not None:
                    next(reader)  # Excel's "sep=;": it declared the delimiter, and is counted as the line it is
                for first in reader:
                    if first:  # blank lines before the header are skipped, as pyarrow skips them
                        break
                # pyarrow's skip_rows counts physical lines, and a quoted header name may span several
                self.header_lines = reader.line_num
                # a blank line after the header of a file of one column is a row whose value is missing (polars'
                # write_csv of a column of nulls writes only such lines), elsewhere no row
                self.has_rows = _more_than_line_ends(fh) if len(first or ()) != 1 else fh.read(1) != ""
        except csv.Error as exc:
            raise ValueError(f"{self.path} has a malformed header: {exc}.") from None
        except (EOFError, zlib.error) as exc:  # a compressed file cut short or damaged
            raise ValueError(self._damaged(exc, 0)) from None
        except UnicodeDecodeError as exc:
            raise ValueError(self._not_utf8() or f"cannot read {self.path} as UTF-8 CSV: {exc}") from None
        except (OSError, pa.ArrowException) as exc:
            raise ValueError(_long_window(self.path, exc)
                             or f"cannot read {self.path} as UTF-8 CSV: {str(exc).splitlines()[0]}") from None
        if not first:
            raise ValueError(f"{self.path} is empty: no header line.")
        first = [_csv_field(name) for name in first]
        if not "".join(first).strip():
            raise ValueError(f"{self.path} is malformed: line {self.header_lines}, where the header belongs, names no "
                             "columns (it holds only delimiters or spaces); remove that line so the header comes "
                             "first.")
        return first

    # -- batches ---------------------------------------------------------------------------------------------------

    def batches(self):
        """Yield record batches of at most ``chunk_rows`` rows and ``chunk_chars`` text characters (a single row
        longer than ``chunk_chars`` is a chunk of its own).

        Each raw batch's text lengths are counted once; the chunks are cut from their running sum, so a raw batch
        holding many chunks (a CSV block of short rows) costs one pass, not one pass per chunk; and the pending rows
        are joined only once they hold a full chunk, so many small raw batches (row groups of one row, a folder of
        one-row files from a streaming job) cost one pass too, not one per batch over every batch pending."""
        pending: list[pa.RecordBatch] = []
        pieces: list[np.ndarray] = []  # the text characters of each pending row, batch by batch
        rows = chars_sum = 0
        for batch in self._raw_batches():
            pending.append(batch)
            pieces.append(self._chars(batch))
            rows += batch.num_rows
            chars_sum += int(pieces[-1].sum())
            if rows < self.chunk_rows and (self.chunk_chars is None or chars_sum <= self.chunk_chars):
                continue  # no full chunk yet (what _cut would find)
            table = _table(pending, self.schema)
            chars = np.concatenate(pieces)
            total = np.cumsum(chars)
            start = 0
            while True:
                cut = self._cut(total, start)
                if cut is None:
                    break
                yield _as_batch(table.slice(start, cut))
                start += cut
            if start:
                rest = table.slice(start)
                pending, pieces = rest.to_batches(), [chars[start:]]
                rows, chars_sum = len(chars) - start, int(total[-1] - total[start - 1])
        if rows:
            yield _as_batch(_table(pending, self.schema))

    def _chars(self, batch: pa.RecordBatch) -> np.ndarray:
        """The text characters of each row of ``batch`` (all its text columns; a missing text counts 0)."""
        chars = np.zeros(batch.num_rows, dtype=np.int64)
        if self.chunk_chars is not None:
            for c in self.text_cols:
                chars += pc.fill_null(pc.utf8_length(batch.column(c).cast(pa.string())), 0).to_numpy(
                    zero_copy_only=False)
        return chars

    def _cut(self, total: np.ndarray, start: int) -> int | None:
        """Rows of the next full chunk from row ``start`` of the pending rows, whose running sum of text characters
        is ``total``, or None when more rows are needed to decide."""
        n = len(total) - start
        cut = self.chunk_rows if n >= self.chunk_rows else None
        if self.chunk_chars is not None and n:
            before = int(total[start - 1]) if start else 0
            # the first row whose running sum passes the bound: the rows before it are the chunk (at least one row)
            over = int(np.searchsorted(total, before + self.chunk_chars, side="right")) - start
            if over < n:
                by_chars = max(1, over)
                cut = by_chars if cut is None else min(cut, by_chars)
        return cut

    def _raw_batches(self):
        if self.kind == "parquet":
            for f in self.files:
                # pre_buffer (pyarrow's default) keeps whole column chunks cached while iterating, so memory would
                # grow with the file; a small read buffer streams it instead.
                rows = 0
                with _naming_parquet_file(f), pq.ParquetFile(f, pre_buffer=False, buffer_size=1 << 20) as pf:
                    for group in range(pf.num_row_groups):
                        for b in pf.iter_batches(batch_size=self._parquet_batch_rows(pf.metadata.row_group(group)),
                                                 row_groups=[group], columns=self.columns):
                            b = b.select(self.columns)
                            problem = invalid_values(b)
                            if problem:
                                column, row, detail = problem
                                # counted from 0, as every row bertfeat names (docs/cli.md), here of that file
                                at = f" at row {rows + row:,} of that file" if row is not None else ""
                                raise ValueError(f"parquet file {f}: column {column!r}{at} {detail}")
                            rows += b.num_rows
                            yield b if b.schema.equals(self.schema) else _cast_batch(b, self.schema)
            return
        try:
            yield from self._csv_batches()
        finally:
            if self._header_watch is not None:  # read as far as the rows delivered: a next read starts again
                self._header_watch.close()
                self._header_watch = None

    def _refuse_what_the_stream_saw(self) -> None:
        """Refuse what the stream's watchers (:class:`bertfeat.csv_stream._CountingFile`) found in the bytes read so
        far, before the rows it would have read wrong are delivered: a quoted value closed early (rows read into one
        value), rows joined in a TSV that quotes nothing, a quote escaped with a backslash in a value not quoted (a
        text that would keep the backslash), a run of NUL bytes (rows of zeros), and in a file of one column a line
        feed alone where lines end with a CR (one text cut in two: no ragged row tells)."""
        quotes = self._counting.quotes
        if quotes.closed_early is not None:
            raise ValueError(self._csv_problem(None))
        if quotes.rows_joined is not None:
            self._refuse_rows_joined()
        if quotes.escaped_quote is not None:
            raise ValueError(self._escaped_quote())
        if self._counting.zeros_at is not None:
            raise ValueError(self._zeros())
        if quotes.lone_lf is not None and len(self.header) == 1:
            raise ValueError(self._lone_lf())

    def _refuse_unparsed(self, exc: pa.ArrowInvalid) -> NoReturn:
        """Refuse a record pyarrow could not parse (``exc``; its block was big enough), saying why where the stream
        knows: a row cut at a value's line feed, Excel's ``sep=;`` line of files joined (too few fields for a row)."""
        if self._counting.quotes.lone_lf is not None:
            raise ValueError(self._lone_lf()) from None
        if self._header_may_repeat and self._counting.sep_seen:
            self._refuse_repeated_header()
        raise ValueError(self._csv_problem(exc)) from None

    def _parquet_batch_rows(self, group) -> int:
        """Rows to read at a time from row group ``group`` (its metadata): ``chunk_rows``, fewer where its text
        columns' bytes per row (uncompressed) say that many rows would hold more than ``chunk_chars`` characters,
        so a file of long texts is read a chunk's worth at a time rather than ``chunk_rows`` texts at once."""
        rows = min(self.chunk_rows, 65536)
        if self.chunk_chars is None or not group.num_rows:
            return rows
        wanted = set(self.text_cols)
        text_bytes = sum(group.column(i).total_uncompressed_size for i in range(group.num_columns)
                         if group.column(i).path_in_schema in wanted)
        per_row = text_bytes / group.num_rows
        return max(1, min(rows, int(self.chunk_chars / per_row) if per_row else rows))

    def _csv_batches(self):
        if not self.has_rows:
            return
        delivered, block = 0, BLOCK_BYTES
        while True:
            skip = delivered
            try:
                reader = self._open_csv(block)
                while True:
                    try:
                        batch = reader.read_next_batch()
                    except StopIteration:
                        break
                    if skip:
                        if batch.num_rows <= skip:
                            skip -= batch.num_rows
                            continue
                        batch, skip = batch.slice(skip), 0
                    if self._counting.eof and self._counting.quotes.ends_open:
                        raise ValueError(self._csv_problem(None))  # before the last rows, which hold the rest
                    if self._counting.eof and self._ends_with_value_lf():
                        raise ValueError(self._last_line_run_on())  # before the last row, which holds those lines
                    self._refuse_what_the_stream_saw()  # before the rows it would have read wrong are delivered
                    batch = batch.select(self.columns)
                    if self._counting.lone_cr is not None and self._counting.lone_cr.marked:
                        batch = restore(batch)
                    if self.quoting in ("backslash", "csv-backslash"):
                        batch = _unescaped(batch, self.delimiter, self.path, delivered, self.quoting)
                    if self._watch_escapes:  # a database's text export, read as written?
                        self._refuse_escapes(batch, delivered)
                    if len(self.header) == 1:  # psql's "(3 rows)": a row of a file of one column, not a ragged one
                        self._refuse_footer(batch, delivered)
                    if self._header_may_repeat and (self._counting.sep_seen
                                                    or joined.may_hold_header(batch, self.header)):
                        self._refuse_repeated_header(delivered + batch.num_rows)  # before they are delivered
                    delivered += batch.num_rows
                    yield batch
                if self._counting.zeros_at is not None:
                    raise ValueError(self._zeros())
                if self._counting.quotes.ends_open:
                    raise ValueError(self._csv_problem(None))
                if self._ends_with_value_lf():
                    raise ValueError(self._last_line_run_on())
                return
            except pa.ArrowInvalid as exc:
                if self._counting.zeros_at is not None:  # a row of zeros, too few fields: the zeros are why
                    raise ValueError(self._zeros()) from None
                if "straddl" in str(exc) and block < MAX_BLOCK_BYTES:
                    block *= 8
                    continue
                self._refuse_unparsed(exc)
            except (EOFError, OSError, zlib.error) as exc:  # the decompressor's: pyarrow passes them through
                raise ValueError(self._damaged(exc, delivered)) from None
            finally:
                if self._counting is not None:
                    self._counting.close()


@contextlib.contextmanager
def _naming_parquet_file(path: Path):
    """A parquet file pyarrow cannot read (cut short, damaged, not parquet) is an error naming it."""
    try:
        yield
    except (pa.ArrowException, OSError) as exc:
        try:
            with open(path, "rb") as raw:
                said = not_parquet(path, raw.read(HEAD))  # text, a compressed file, a Git LFS pointer, a web page
        except OSError:
            said = None
        if said:
            raise ValueError(said) from None
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"cannot read parquet file {path}: {first}. The file is damaged, cut short or not parquet; "
                         "write it again, or move it out of the input.") from None


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # a header's "name" that is a row's value
_PANDAS_INDEX = re.compile(r"__index_level_\d+__")


def _compared(names: list[str], read: list[str]) -> set[str]:
    """The column names two files of one input must share, in any order (every engine reads columns by name):
    all but pandas' index columns the job does not read. pandas writes a frame's index as ``__index_level_0__``
    where it is not a plain range (a filtered frame) and not where it is (a fresh one), so files of one dataset
    written on different days differ by it."""
    return {n for n in names if n in read or not _PANDAS_INDEX.fullmatch(n)}


def _first_with(types: dict, column: str, type_: pa.DataType) -> Path:
    """The first file whose ``column`` is ``type_`` (``types``: each file's types), or else the first typed one (a
    type widened from two files is no one file's)."""
    typed = [f for f, of_file in types.items() if not pa.types.is_null(of_file[column])]
    return next((f for f in typed if types[f][column] == type_), typed[0] if typed else next(iter(types)))


def _widening_file(types: dict, column: str, t: pa.DataType, wider: pa.DataType) -> Path:
    """The first file that makes ``column``, ``t`` in another file, read as ``wider``: one of that type, or else one
    of another kind (floating point beside integers) or another type."""
    others = [f for f, of_file in types.items() if of_file[column] != t and not pa.types.is_null(of_file[column])]
    kind = pa.types.is_integer(t)
    return next((f for f in others if types[f][column] == wider),
                next((f for f in others if pa.types.is_integer(types[f][column]) != kind), others[0]))


def _refuse_duplicates(names: list[str | None], where: str) -> None:
    """Refuse a name used twice (None: a column not compared)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name is None:
            continue
        if name in seen:
            raise ValueError(
                f"{where} has two columns named {name!r} (columns {seen[name] + 1} and {i + 1}); rename one so "
                "each column can be told apart."
            )
        seen[name] = i


def _more_than_line_ends(fh, piece: int = 1 << 16) -> bool:
    """Whether the text file ``fh`` holds, from where it stands (the header's end), a character that ends no line: a
    row, as only blank lines are no row (pyarrow skips them). Read a piece at a time: parsing the first record to
    tell held the whole of its first value (Python's csv module keeps a field at 4 bytes a character, beside its
    line: 1.2 GB for a first text of 200 MB)."""
    for text in iter(lambda: fh.read(piece), ""):
        if text.strip("\r\n"):
            return True
    return False


def _table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """The pending raw batches as one table (no copy)."""
    return pa.Table.from_batches(batches, schema=schema)


def _as_batch(table: pa.Table) -> pa.RecordBatch:
    """One record batch of a table of at least one row."""
    return table.combine_chunks().to_batches()[0]


def _unescaped(batch: pa.RecordBatch, delimiter: str, path, first_row: int,
               quoting: str = "backslash") -> pa.RecordBatch:
    """``batch`` (of the file ``path``, its first row ``first_row``) of a backslash-escaped export (``quoting``
    backslash or csv-backslash) with each text value read as its escapes say (:mod:`bertfeat.escapes`); only the
    values holding a backslash are decoded one by one. A ValueError names the row and column of escaped bytes that
    are no UTF-8."""
    read = decode_quoted if quoting == "csv-backslash" else decode
    columns = []
    for name, column in zip(batch.schema.names, batch.columns):
        if pa.types.is_string(column.type) and pc.any(pc.match_substring(column, "\\")).as_py():
            values = column.to_pylist()
            for i, v in enumerate(values):
                if v is not None and "\\" in v:
                    try:
                        values[i] = read(v, delimiter)
                    except ValueError as exc:
                        raise ValueError(
                            f"{path}: the text of row {first_row + i:,} in column {name!r} {exc}: under "
                            "quoting='backslash' an octal or hex escape is a byte of the file's UTF-8 text, as "
                            "PostgreSQL's COPY FROM reads it into a UTF-8 database, which refuses these too. Export "
                            "the texts again in UTF-8.") from None
            column = pa.array(values, column.type)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _cast_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` in ``schema`` (a null column -> the type another file gives it, a type widened as
    :mod:`bertfeat.schemas` says), column by column:
    ``RecordBatch.cast`` is pyarrow 16's, and pyarrow 15 (the floor) has only the columns' ``cast``."""
    return pa.RecordBatch.from_arrays([c.cast(f.type) for c, f in zip(batch.columns, schema)], schema=schema)
