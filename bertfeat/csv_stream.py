"""A CSV file's bytes as bertfeat reads them: decompressed (gzip, bz2, zstd by suffix), counted for a progress
fraction, and watched on their way to pyarrow (a quote left open or closed early, a run of NUL bytes, a later line
``sep=;`` of files joined with ``cat``: :class:`_CountingFile`), a lone CR in a value kept from pyarrow's line ends
(:class:`LoneCR`); the delimiter a first line ``sep=;`` declares as
Excel reads it; and the lines Python's csv module, which reads the header and finds a problem's line, is given (no
field size limit, NUL escaped before Python 3.11). :class:`bertfeat.readers.InputReader` reads through these.
"""

from __future__ import annotations

import bz2
import contextlib
import csv
import gzip
import io
import os
import re
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from bertfeat.escapes import EscapedBytes
from bertfeat.line_ends import LineEnds
from bertfeat.quotes import HeaderEnd, QuoteScanner, lone_lf
from bertfeat.sources import _codec

# A run of NUL bytes this long is no text but a file not written whole: a download preallocated at its full size and
# cut short (aria2's default, torrent clients), a write cut by a crash, leave zeros where the rest belongs. A NUL
# here and there is a character (of no text a tokenizer keeps), and read as one.
NUL_RUN = 64
ZEROS = b"\0" * NUL_RUN


_LATER_SEP_LINE = re.compile(rb"[\r\n](?:\xef\xbb\xbf)?sep=")  # a joined file's own, a line after the first
_SEP_LINE = re.compile(rb"(?:\xef\xbb\xbf)?sep=([\x01-\x7f])(?:\r|\n|\Z)")


def excel_sep_line(path: Path) -> str | None:
    """The delimiter a CSV file declares on its first line as Excel reads it (``sep=;``, after a UTF-8 BOM or not),
    or None. Exports made for Excel write it; read as the header it hid every column (``['sep=;']``)."""
    try:
        with open_decompressed(path) as fh:
            head = fh.read(9)  # a BOM, sep=, the delimiter and what ends the line (CRLF, LF or an old Mac's CR)
    except (OSError, EOFError, zlib.error):  # a damaged or cut file: the header's read says so
        return None
    found = _SEP_LINE.match(head)
    if found is None or found[1] in b'"\r\n':
        return None
    return found[1].decode()


def open_decompressed(path: Path, raw=None):
    """A binary file object over the decompressed bytes of ``path`` (gzip, bz2 and zstd by suffix), read from the
    open file ``raw`` when given."""
    codec = _codec(path)
    raw = raw if raw is not None else open(path, "rb")
    if codec == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if codec == "bz2":
        return bz2.BZ2File(raw, "rb")
    if codec == "zstd":  # the standard library has no zstd before Python 3.14; pyarrow has
        return io.BufferedReader(pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd"))
    return raw


# A lone CR (no LF after it) in a file whose lines end with LF or CRLF is a value's own: Python's csv module and pandas'
# to_csv quote a value holding a character of their line terminator, and "\n" holds no CR, so they write a text's lone
# CR unquoted, where pyarrow (which takes a lone CR for a line end everywhere) would end the row. It reaches pyarrow as
# a pair of noncharacters no text holds (U+FDD0 U+FDD2; a U+FDD0 of the file's own as U+FDD0 U+FDD1), and each value
# holding one is read back by restore().
_MARK = "\ufdd0".encode()
_AS_MARK, _AS_CR = _MARK + "\ufdd1".encode(), _MARK + "\ufdd2".encode()
_LONE_CR = re.compile(rb"\r(?=[^\n])")  # a CR ending a piece ends the file (or a one-byte read): a line end
# the first byte of U+FDD0 in UTF-8: a piece without it holds no mark of its own. Looking for it is one memchr; looking
# for the three bytes of _MARK in every piece cost 0.03 s a 50 MB file, an eighth of reading one (session 14's review)
_MARK_LEAD = _MARK[:1]


class LoneCR:
    """Rewrites a CSV stream (``quoting`` csv or none: ``quotes``, whether ``"`` quotes a value), fed in pieces none of
    which ends with a CR while more follows, so that a lone CR is no line end for pyarrow where the stream's first line
    (the header: a line break inside a quoted name is no line end) ends with LF or CRLF; a file whose lines end with a
    lone CR (Excel for Mac's) is passed as it is. :func:`restore` reads the values back."""

    def __init__(self, quotes: bool = True):
        self._header = HeaderEnd(quotes)  # until the header's end is seen (a line break in a quoted name is none)
        self._lines_end_with_lf: bool | None = None  # until the header's end is seen
        self.crlf = False  # whether the header's line ends with CRLF
        self.marked = False  # whether any value may hold a pair to read back
        self._tail = b""  # the last two bytes rewritten, where a mark of the file's own may have begun

    @property
    def lines_end_with_lf(self) -> bool:
        """Whether the stream's first line ends with LF or CRLF (so far as seen), and so a lone CR is a value's own."""
        return bool(self._lines_end_with_lf)

    @property
    def lines_end_with_cr(self) -> bool:
        """Whether the stream's first line ends with a lone CR (seen so): a line feed ends no line of the file's."""
        return self._lines_end_with_lf is False

    def rewrite(self, data: bytes) -> bytes:
        if self._lines_end_with_lf is None:
            first = self._header.find(data)
            if first is None:
                return data
            if first + 1 == len(data) and data[first] == 0x0D:  # a one-byte piece: the next byte tells
                return data
            self.crlf = data[first] == 0x0D and data[first + 1:first + 2] == b"\n"
            self._lines_end_with_lf = data[first] == 0x0A or self.crlf
            if not self._lines_end_with_lf:
                return data
            head, data = data[:first + 1], data[first + 1:]
            return head + self.rewrite(data)
        if not self._lines_end_with_lf:
            return data
        # a mark of the file's own split between two pieces (its first bytes already given): escaped after its end,
        # here, as a whole one is, else a U+FDD0 U+FDD2 of the text came back as a CR (pieces are pyarrow's blocks)
        split = (self._tail + data[:2]).find(_MARK)
        end = split + len(_MARK) - len(self._tail)  # where in data the mark ends
        self._tail = (self._tail + data)[-2:]
        if 0 <= split and end <= 2:
            self.marked = True
            return data[:end] + _AS_MARK[len(_MARK):] + self._rewrite(data[end:])
        return self._rewrite(data)

    def _rewrite(self, data: bytes) -> bytes:
        """``data`` with the file's own marks and its lone CRs marked (the stream's line ends are known)."""
        marks = _MARK_LEAD in data and _MARK in data
        if not marks and b"\r" not in data:
            return data
        out = _LONE_CR.sub(_AS_CR, data.replace(_MARK, _AS_MARK) if marks else data)
        self.marked = self.marked or out != data
        return out


def restore(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with each text value :class:`LoneCR` marked read back as the file wrote it."""
    columns = []
    for column in batch.columns:
        if pa.types.is_string(column.type) and pc.any(pc.match_substring(column, "\ufdd0")).as_py():
            column = pc.replace_substring(pc.replace_substring(column, "\ufdd0\ufdd2", "\r"), "\ufdd0\ufdd1", "\ufdd0")
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def shown_as_written(said: str) -> str:
    """pyarrow's words ``said`` of a row :class:`LoneCR` marked, with each lone CR shown as ``\\r``."""
    return said.replace("\ufdd0\ufdd2", "\\r").replace("\ufdd0\ufdd1", "\ufdd0")


class _CountingFile:
    """A read-only file wrapper over the decompressed stream that counts the compressed bytes read (for a progress
    fraction), and follows whether the stream has ended, whether it ends inside a quoted value, and where a run of
    :data:`NUL_RUN` NUL bytes starts.

    No piece it returns ends with ``\r`` while more follows (the ``\r`` waits for the next piece): pyarrow drops a
    ``\n`` that starts a read piece after one that ended with ``\r``, taking the two for a line break split in two
    even inside a quoted value, so a value's CRLF split by the 1 MB read block lost its ``\n`` (apache/arrow#51368);
    an escaped export's piece may, where :class:`~bertfeat.escapes.EscapedBytes` holds back the next byte, a CR.
    With ``lone_cr``, a lone CR in a file whose lines end with LF reaches pyarrow marked (:class:`LoneCR`; the watchers
    see the bytes as written): a piece may then be longer than asked, as an escaped export's may, which pyarrow takes,
    and a piece where no record can end is read on to one where it may (a long value's: :meth:`_to_a_record_end`).
    """

    def __init__(self, path: Path, delimiter: str, quoting: str = "csv", watch_rows: bool = False,
                 lone_cr: bool = False, watch_escapes: bool = False):
        self._raw = open(path, "rb")
        self.size = os.fstat(self._raw.fileno()).st_size
        self._fh = open_decompressed(path, self._raw)
        quoted = quoting in ("csv", "csv-backslash")
        # (an escaped export's bytes as rewritten, an escaped quote no quote)
        self.quotes = QuoteScanner(delimiter, watch_rows, watch_escapes) if quoted else _NoQuotes()
        # a backslash-escaped export: rewritten so that no escaped delimiter, line break or quote ends a value
        # (escapes.py)
        escaped = quoting in ("backslash", "csv-backslash")
        self.escapes = EscapedBytes(delimiter, quoted) if escaped else None
        # with lone_cr, a lone CR in a value is kept from pyarrow's line ends (escaped exports: EscapedBytes keeps it)
        self.lone_cr = LoneCR(quoting == "csv") if lone_cr and not escaped else None
        self.eof = False
        self.closed = False
        self._held = b""  # a trailing b"\r" kept back for the next piece
        self.zeros_at: int | None = None  # where the first run of NUL_RUN NUL bytes starts in the stream
        self._fed = 0  # bytes given so far
        self._tail = b""  # the last bytes given, where a run may have begun
        self.sep_seen = False  # whether a line after the first starts as Excel's "sep=;" (files joined with cat)
        self._line_tail = b""  # the last bytes given, where such a line may have begun

    @property
    def read_bytes(self) -> int:
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return 0

    def read(self, n=-1):
        if n == 0:
            return b""
        if n is None or n < 0:
            data = self._held + self._next(-1)
        else:  # n bytes, or more where they hold no line end; a one-byte read gives back the held b"\r" alone
            data = self._held + (self._next(n - len(self._held)) if n > len(self._held) else b"")
            if n > 1 and data:
                data = self._to_a_record_end(data, n)
        self._held = b""
        # never a lone b"\r": an empty piece would read as the end. An escaped export's rewriting holds back a CR
        # that a LF may follow itself, and held here too, a header's CR before a blank line ('t\r\r', a file of one
        # column and a missing row) left pyarrow a first piece with no line end to skip the header at
        if len(data) > 1 and data.endswith(b"\r") and self.escapes is None:
            data, self._held = data[:-1], b"\r"
        if not data:
            self.eof = True
        given = data if self.lone_cr is None else self.lone_cr.rewrite(data)  # deciding the file's line ends first
        if self.lone_cr is not None and self.lone_cr.lines_end_with_lf:
            self.quotes.lone_cr_in_values()
        elif self.lone_cr is not None and self.lone_cr.lines_end_with_cr:
            self.quotes.lf_ends_no_line()
        self.quotes.feed(data)
        if self.zeros_at is None and data:
            seen = self._tail + data
            at = seen.find(ZEROS)
            if at >= 0:
                self.zeros_at = self._fed - len(self._tail) + at
            self._tail = seen[-(NUL_RUN - 1):]
            self._fed += len(data)
        if not self.sep_seen and data:
            seen = self._line_tail + data
            self.sep_seen = _LATER_SEP_LINE.search(seen) is not None
            self._line_tail = seen[-7:]
        return given  # watched as written, the offsets the file's

    def _to_a_record_end(self, data: bytes, n: int) -> bytes:
        """``data``, and where no record can end in it, what follows it up to a piece where one may (or the end):
        pyarrow refuses a record across three pieces, so a long value made the read start again with a block 8 times
        bigger, for the rest of the file, which pyarrow reads 32 blocks ahead (a 25 MB text: 64 MB blocks, memory
        that grew with the file after it). No record ends in a piece without a line end, nor in one inside a quoted
        value that holds no quote."""
        pieces, inside = [data], self.quotes.ends_open  # where the piece starts (the quotes are fed up to it)
        while True:
            last = pieces[-1]
            inside = inside and b'"' not in last
            if not last or (not inside and (b"\n" in last or b"\r" in last)):
                return b"".join(pieces) if len(pieces) > 1 else data
            pieces.append(self._next(n))

    def _next(self, n: int) -> bytes:
        """Up to ``n`` (-1: all the) decompressed bytes, an escaped export's rewritten; b"" only at the end."""
        if self.escapes is None:
            return self._fh.read(n)
        if n < 0:
            return self.escapes.rewrite(self._fh.read()) + self.escapes.rewrite(b"")
        while True:  # a piece that is one backslash waits for the byte it escapes: read on, never b"" before the end
            data = self._fh.read(max(1, n - len(self.escapes.held)))
            out = self.escapes.rewrite(data)
            if out or not data:
                return out

    def readable(self):
        return True

    def seekable(self):
        return False

    def close(self):
        self.closed = True
        self._fh.close()
        self._raw.close()


class _NoQuotes:
    """The quotes of a file read without quoting (``quoting='none'`` or ``'backslash'``): none ever opens, so every
    line feed is outside a quoted value (:meth:`bertfeat.quotes.QuoteScanner.lf_ends_no_line`)."""
    ends_open = False
    closed_early = None
    rows_joined = None
    escaped_quote = None
    lone_lf = None
    _watch_lf = False
    _offset = 0  # bytes fed before the current piece, a UTF-8 BOM excluded (as QuoteScanner's offsets)

    def feed(self, data: bytes) -> None:
        if not self._offset and data.startswith(b"\xef\xbb\xbf"):
            self._offset = -3
        if self._watch_lf and self.lone_lf is None and b"\n" in data:
            at = lone_lf(data, 0, len(data))
            self.lone_lf = self._offset + at if at >= 0 else None
        self._offset += len(data)

    def lone_cr_in_values(self) -> None:
        pass

    def lf_ends_no_line(self) -> None:
        self._watch_lf = True


@contextlib.contextmanager
def _no_field_limit():
    """Python's csv module refuses fields over 128 KiB by default; pyarrow reads them, so the re-reads that look for
    the line of a problem must too (or they report the limit instead of the problem)."""
    before = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(before)


# Python's csv module, which finds a problem's line and reads the header, refuses a NUL character before 3.11 ("line
# contains NUL"), where pyarrow reads it as any other: there it is given lines with NUL escaped (into private-use
# characters, none of them a delimiter, quote or line end, so the records and their lines are the same) and the
# header's names are unescaped.
_CSV_TAKES_NUL = sys.version_info >= (3, 11)
_ESC, _ESC_ESC, _ESC_NUL, _ESC_CR = "\ue000", "\ue000\ue001", "\ue000\ue002", "\ue000\ue003"
_UNESCAPE = re.compile("\ue000([\ue001\ue002\ue003])")
_UNESCAPED = {"\ue001": _ESC, "\ue002": "\0", "\ue003": "\r"}
_INNER_CR = re.compile("\r(?=[^\n])")  # a lone CR inside a joined line (one ending the file ends a line)


def _first_lines(fh, n: int) -> list[str]:
    """The first ``n`` lines of the text file ``fh`` that are not blank, line ends removed (64 KiB of each at most)."""
    lines = []
    for _ in range(100):  # blank lines before the header, as pyarrow skips them
        line = fh.readline(1 << 16)
        if not line or len(lines) == n:
            break
        if line.strip("\r\n"):
            lines.append(line.rstrip("\r\n"))
    return lines


def _csv_lines(fh, ends: LineEnds = LineEnds()):
    """The lines of the text file ``fh`` (read with ``newline=""``) as Python's csv module is given them: NUL escaped
    before Python 3.11; split as the reader splits them (``ends``, :mod:`bertfeat.line_ends`): joined at a lone CR of a
    value's, that CR escaped (Python's csv module refuses it in a value not quoted), and a value's LF escaped with a
    backslash, so that the records are the reader's (a record "sep=,<CR>,x" is no Excel sep= line) and their lines
    an editor's."""
    if ends.cr_in_values:
        lines = (_INNER_CR.sub(_ESC_CR, _escaped(line)) for line in ends.lines(fh))
    else:
        lines = fh if _CSV_TAKES_NUL else (_escaped(line) for line in fh)
    return _continued_but_last(lines, ends) if ends.lf_in_values else lines


def _continued_but_last(lines, ends: LineEnds):
    """``lines``, each carried on past a value's line end (:meth:`bertfeat.line_ends.LineEnds.continued`) but the
    file's last: the end of the file ends its record, as the reader ends it (carried on into nothing, Python's csv
    module said "unexpected end of data", read as a quote left open, in a file that may hold none)."""
    held = None
    for line in lines:
        if held is not None:
            yield ends.continued(held)
        held = line
    if held is not None:
        yield held


def _escaped(line: str) -> str:
    line = line.replace(_ESC, _ESC_ESC)
    return line if _CSV_TAKES_NUL else line.replace("\0", _ESC_NUL)


def _csv_field(field: str, lone_cr: bool = False) -> str:
    """A field of a record read from :func:`_csv_lines` (``lone_cr``: its ends' ``cr_in_values``), as the file holds
    it."""
    if _CSV_TAKES_NUL and not lone_cr:
        return field
    return _UNESCAPE.sub(lambda m: _UNESCAPED[m[1]], field)
